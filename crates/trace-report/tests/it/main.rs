//! trace-report against what the real TraceLens wrote.

mod collective;
mod compare;
mod document;
mod run;

//! trace-report against what the real TraceLens wrote.

mod collective;
mod document;
mod run;

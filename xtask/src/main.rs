//! The workspace's automation entry point (`cargo xtask --help`).
fn main() {}

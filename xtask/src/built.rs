//! For tests, of xtask's own modules and of `xtask/tests/it` (which
//! includes this file): the `madengine` the workspace's test build made.

use std::path::PathBuf;

/// The madengine beside this test's directory (target/<profile>/madengine).
pub(crate) fn madengine() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().and_then(|deps| deps.parent()).unwrap().join("madengine");
    assert!(
        bin.is_file(),
        "{} is missing: build it with the workspace (`cargo test --workspace` or `cargo build -p madengine-cli`)",
        bin.display()
    );
    bin
}

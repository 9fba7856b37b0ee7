//! A command run to its end with its own peak memory, for tests that bound
//! what a hostile input may cost.
//!
//! The peak cannot be taken with `wait4` on a child of the test process:
//! Linux carries the high-water mark of the memory a process replaces at
//! `exec` into its `ru_maxrss`, and std spawns with `vfork`, so every child
//! would report at least the test process's own peak (140 MB when other
//! tests load traces beside it). A small Python process forks the command
//! instead and reports that child's `ru_maxrss` from `os.wait4`: the floor
//! is then Python's own few MB.

use std::{io::Read, process::Command};

/// How a measured command ended.
#[derive(Debug)]
pub struct Measured {
    /// Its exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// What it wrote on stdout.
    pub stdout: String,
    /// What it wrote on stderr.
    pub stderr: String,
    /// Its peak resident memory, in KiB.
    pub peak_kib: u64,
}

/// Forks argv[2:], waits for it, writes its ru_maxrss (KiB) to argv[1] and
/// ends as it did.
const TRAMPOLINE: &str = r#"
import os, signal, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as report:
    report.write(str(usage.ru_maxrss))
if os.WIFSIGNALED(status):
    signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
    os.kill(os.getpid(), os.WTERMSIG(status))
sys.exit(os.WEXITSTATUS(status))
"#;

/// Run `command` (its stdout and stderr captured) and measure it. Needs
/// `python3` on PATH.
pub fn run(command: Command) -> Measured {
    let report = tempfile_path();
    #[allow(clippy::disallowed_methods, reason = "tests measure real commands")]
    let mut outer = Command::new("python3");
    outer.arg("-c").arg(TRAMPOLINE).arg(&report).arg(command.get_program());
    outer.args(command.get_args());
    if let Some(dir) = command.get_current_dir() {
        outer.current_dir(dir);
    }
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => outer.env(key, value),
            None => outer.env_remove(key),
        };
    }
    outer.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = outer.spawn().expect("python3 starts (the measuring trampoline)");
    // Both pipes drained on threads: a full pipe would stall the child.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = pipe.read_to_end(&mut text);
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let status = child.wait().unwrap();
    let peak = std::fs::read_to_string(&report)
        .unwrap_or_else(|e| panic!("the trampoline reports {}: {e}", report.display()));
    let _ = std::fs::remove_file(&report);
    Measured {
        code: status.code(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        peak_kib: peak.trim().parse().expect("a KiB count"),
    }
}

/// A fresh path in the temp directory, unique to this process and call.
fn tempfile_path() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("measured-{}-{n}.peak", std::process::id()))
}

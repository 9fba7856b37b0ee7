//! The Kineto hook inside a real PyTorch: it marks the process `hooked` at
//! start and `stepped` after its first optimizer step (not before), which
//! is what the trigger waits for in an iteration window.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use dynolog_client::{RunState, Signals, hook_module};

use crate::required::torch_python;

const SCRIPT: &str = r#"
import os, sys
import torch

steps = sys.argv[1]
mark = lambda what: os.path.exists(os.path.join(steps, "%d.%s" % (os.getpid(), what)))
print("hooked" if mark("hooked") else "unhooked", "stepped" if mark("stepped") else "unstepped")
p = torch.nn.Parameter(torch.zeros(1))
opt = torch.optim.SGD([p], lr=0.1)
p.grad = torch.ones(1)
for _ in range(3):
    opt.step()
print("hooked" if mark("hooked") else "unhooked", "stepped" if mark("stepped") else "unstepped")
print(os.getpid())
"#;

/// A session under `dir`, and a directory whose `sitecustomize.py` is its
/// hook: an interpreter with it on PYTHONPATH runs the hook at start-up, as
/// from the hook's `.pth`.
fn hooked(dir: &Path) -> (RunState, PathBuf) {
    let state = RunState::create(dir.join("state")).unwrap();
    let modules = dir.join("modules");
    std::fs::create_dir(&modules).unwrap();
    std::fs::write(
        modules.join("sitecustomize.py"),
        hook_module(&state.steps_dir(), &state.ipc_dir()),
    )
    .unwrap();
    (state, modules)
}

/// The session's step marks, sorted.
fn marks(state: &RunState) -> Vec<String> {
    let mut marks: Vec<String> = std::fs::read_dir(state.steps_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    marks.sort();
    marks
}

#[test]
fn the_hook_marks_the_first_optimizer_step_in_real_pytorch() {
    let Some(python) = torch_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (state, modules) = hooked(dir.path());
    let run = |daemon: bool| {
        #[allow(clippy::disallowed_methods, reason = "the test runs python")]
        let mut cmd = Command::new(&python);
        cmd.arg("-c")
            .arg(SCRIPT)
            .arg(state.steps_dir())
            .env("PYTHONPATH", &modules)
            // Kineto's IPC client talks to no daemon but its own empty socket dir.
            .env("KINETO_IPC_SOCKET_DIR", state.ipc_dir())
            .env_remove("KINETO_USE_DAEMON")
            .env_remove("MADENGINE_KINETO_USE_DAEMON");
        if daemon {
            cmd.env("KINETO_USE_DAEMON", "1");
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
    };

    let (stdout, stderr) = run(true);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[..2], ["hooked unstepped", "hooked stepped"], "{stderr}");
    let pid: u32 = lines[2].parse().unwrap();
    assert!(stderr.contains(&format!("Kineto optimizer-step hook registered (pid {pid})")));
    let signals = Signals { steps_dir: Some(state.steps_dir()), ..Default::default() };
    assert_eq!(signals.unstepped(&[pid]), Vec::<u32>::new());
    std::fs::remove_file(state.steps_dir().join(format!("{pid}.stepped"))).unwrap();
    assert_eq!(signals.unstepped(&[pid]), [pid]);

    // Without KINETO_USE_DAEMON the hook does nothing at all.
    let (stdout, _) = run(false);
    assert!(stdout.starts_with("unhooked unstepped\nunhooked unstepped\n"), "{stdout}");
    assert_eq!(
        marks(&state),
        [format!("{pid}.hooked")],
        "only the first run's (one removed above)"
    );
}

/// `python -m torch.distributed.run`: the launcher (whose `sys.argv` at
/// start-up no longer names the module) stays off the daemon and unmarked;
/// its worker has the hook.
#[test]
fn the_torchrun_launcher_is_kept_off_the_daemon() {
    let Some(python) = torch_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (state, modules) = hooked(dir.path());
    std::fs::write(
        dir.path().join("worker.py"),
        "import os\nprint(os.getppid(), os.getpid(), os.environ.get('KINETO_USE_DAEMON'))\n",
    )
    .unwrap();
    #[allow(clippy::disallowed_methods, reason = "the test runs python")]
    let out = Command::new(&python)
        .args(["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1"])
        .arg(dir.path().join("worker.py"))
        .env("PYTHONPATH", &modules)
        .env("KINETO_IPC_SOCKET_DIR", state.ipc_dir())
        .env("KINETO_USE_DAEMON", "1")
        .env_remove("MADENGINE_KINETO_USE_DAEMON")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = stdout.split_whitespace().collect();
    let [launcher, worker, daemon] = fields[..] else { panic!("{stdout}") };
    assert_eq!(daemon, "1", "the worker gets KINETO_USE_DAEMON back");
    assert_eq!(marks(&state), [format!("{worker}.hooked")], "launcher {launcher}: {stderr}");
}

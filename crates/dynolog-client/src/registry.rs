//! Which PyTorch processes registered with the daemon, read from its log.

use std::path::Path;

use serde::Serialize;

/// One `Registered process (...)` line of the daemon's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Registration {
    /// The registrant first, then its ancestors.
    pub pids: Vec<u32>,
    /// The job id it registered under.
    pub job: String,
}

/// Every registration in the daemon's log text, e.g.
/// `... Registered process (5194, 5184, 5182) for job '0'. Leaf PID: 5194`.
pub fn parse_registrations(log: &str) -> Vec<Registration> {
    log.lines()
        .filter_map(|line| {
            let rest = &line[line.find("Registered process (")? + "Registered process (".len()..];
            let (list, after) = rest.split_once(')')?;
            let pids: Vec<u32> = list.split(',').filter_map(|p| p.trim().parse().ok()).collect();
            let job = after.split('\'').nth(1).unwrap_or("0").to_string();
            (!pids.is_empty()).then_some(Registration { pids, job })
        })
        .collect()
}

/// What the capture policy needs to know about a process.
pub trait Processes {
    /// The command line of a live, non-zombie process; `None` when it is
    /// gone, a zombie or unreadable.
    fn cmdline(&self, pid: u32) -> Option<String>;
}

/// Processes as Linux shows them in `/proc`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcFs;

impl Processes for ProcFs {
    fn cmdline(&self, pid: u32) -> Option<String> {
        let dir = Path::new("/proc").join(pid.to_string());
        let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
        // The state is the first field after the command's closing parenthesis.
        let state = stat.rsplit_once(") ")?.1.split_whitespace().next()?;
        if state == "Z" || state == "X" {
            return None;
        }
        let raw = std::fs::read(dir.join("cmdline")).ok()?;
        let text = raw
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(String::from_utf8_lossy)
            .collect::<Vec<_>>()
            .join(" ");
        (!text.is_empty()).then_some(text)
    }
}

/// The torchrun launcher and multiprocessing helpers: they register with the
/// daemon but run no kernels, and a trace request for them never completes.
pub fn is_launcher_or_helper(cmdline: &str) -> bool {
    const MARKERS: [&str; 5] = [
        "torch.distributed.run",
        "torch.distributed.elastic",
        "torch/distributed/run.py",
        "spawn_main",
        "multiprocessing.resource_tracker",
    ];
    if MARKERS.iter().any(|m| cmdline.contains(m)) {
        return true;
    }
    // `torchrun` as a word (its own argv[0] or a path ending in /torchrun).
    cmdline.split_whitespace().any(|word| word == "torchrun" || word.ends_with("/torchrun"))
}

/// The workload processes worth tracing now: registrants that are alive, not
/// zombies, not launchers or helpers, and not the ancestor of another such
/// registrant (a launcher whose command line does not give it away), with
/// their command lines. Unlike the original, a helper that registered (a
/// `spawn` DataLoader worker) does not hide the worker above it.
pub fn runnable(registrations: &[Registration], processes: &dyn Processes) -> Vec<(u32, String)> {
    let mut live: Vec<(u32, String)> = Vec::new();
    // A registration of no pid (built by hand; the log parser gives none)
    // names no process.
    for r in registrations {
        let Some(&pid) = r.pids.first() else { continue };
        if live.iter().any(|(p, _)| *p == pid) {
            continue;
        }
        if let Some(cmd) = processes.cmdline(pid).filter(|c| !is_launcher_or_helper(c)) {
            live.push((pid, cmd));
        }
    }
    let ancestors: std::collections::HashSet<u32> = registrations
        .iter()
        .filter(|r| live.iter().any(|(p, _)| r.pids.first() == Some(p)))
        .flat_map(|r| r.pids.iter().skip(1).copied())
        .collect();
    live.retain(|(pid, _)| !ancestors.contains(pid));
    live
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
I20260701 10:00:00.000001 1 Main.cpp:274] Starting dynolog, version = 0.6.0, build git-hash = 
I20260701 10:00:05.000001 1 LibkinetoConfigManager.cpp:238] Registered process (5184, 5182, 5177) for job '0'. Leaf PID: 5184
I20260701 10:00:05.100001 1 LibkinetoConfigManager.cpp:238] Registered process (5194, 5184, 5182, 5177) for job '0'. Leaf PID: 5194
I20260701 10:00:05.200001 1 LibkinetoConfigManager.cpp:238] Registered process (5195, 5184, 5182, 5177) for job '1234'. Leaf PID: 5195
I20260701 10:00:06.000001 1 LibkinetoConfigManager.cpp:238] Registered process (5194, 5184, 5182, 5177) for job '0'. Leaf PID: 5194
";

    #[test]
    fn registrations_and_leaves() {
        let regs = parse_registrations(LOG);
        assert_eq!(regs.len(), 4);
        assert_eq!(
            regs[2],
            Registration { pids: vec![5195, 5184, 5182, 5177], job: "1234".into() }
        );
        // 5184 is an ancestor of the others; 5194 registered twice
        struct All;
        impl Processes for All {
            fn cmdline(&self, pid: u32) -> Option<String> {
                Some(format!("python3 worker_{pid}.py"))
            }
        }
        let pids: Vec<u32> = runnable(&regs, &All).into_iter().map(|(p, _)| p).collect();
        assert_eq!(pids, [5194, 5195]);
        // One built by hand with no pid names no process.
        let mut regs = regs;
        regs.push(Registration { pids: Vec::new(), job: "0".into() });
        let pids: Vec<u32> = runnable(&regs, &All).into_iter().map(|(p, _)| p).collect();
        assert_eq!(pids, [5194, 5195]);
    }

    #[test]
    fn launchers_and_helpers() {
        for cmd in [
            "/usr/bin/python3 -m torch.distributed.run --nproc-per-node 2 train.py",
            "/opt/venv/bin/torchrun --nproc-per-node 8 train.py",
            "torchrun train.py",
            "python3 -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5)",
            "python3 -c from multiprocessing.resource_tracker import main;main(7)",
        ] {
            assert!(is_launcher_or_helper(cmd), "{cmd}");
        }
        for cmd in [
            "python3 train.py --local-rank 0",
            "python3 run_torchrun.py",
            "python3 my_torchrun_helper.py",
        ] {
            assert!(!is_launcher_or_helper(cmd), "{cmd}");
        }
    }
}

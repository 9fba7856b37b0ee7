//! `cargo xtask slurm up|down`: a private 4-node SLURM cluster with fake
//! GPUs, on this host, under one directory (reference/clusters.md: Debian's
//! slurmctld/slurmd 22.05 with munge, started by hand, stopped by PID).

use std::{
    fs,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use crate::cmd::cmd;

pub(crate) const NODES: u32 = 4;
pub(crate) const GPUS: u32 = 8;

fn ports(base: &Path) -> (u16, u16) {
    // Derive the ports from the directory, so two clusters can run at once.
    let h = base
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0u32, |h, &b| h.wrapping_mul(31).wrapping_add(b as u32));
    let ctl = 20000 + (h % 2000) as u16 * 10;
    (ctl, ctl + 1)
}

fn sh(program: &str, args: &[&str]) -> Result<String, String> {
    cmd(program, args)
        .stderr_to_stdout()
        .read()
        .map_err(|e| format!("`{program} {}` failed: {e}", args.join(" ")))
}

pub(crate) fn up(base: &Path) -> Result<(), String> {
    for tool in ["slurmctld", "slurmd", "sbatch", "munged"] {
        if sh("sh", &["-c", &format!("command -v {tool}")]).is_err() {
            return Err(format!(
                "{tool} is missing: apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge"
            ));
        }
    }
    let _ = down(base);
    let _ = fs::remove_dir_all(base);
    let b = |p: &str| base.join(p);
    for d in ["state", "spool", "log", "run", "munge", "munge-run", "fakedev", "scratch"] {
        fs::create_dir_all(b(d)).map_err(|e| format!("{}: {e}", b(d).display()))?;
    }
    for n in 1..=NODES {
        for d in [format!("spool/node{n}"), format!("scratch/node{n}")] {
            fs::create_dir_all(b(&d)).map_err(|e| format!("{d}: {e}"))?;
        }
    }
    let host = sh("hostname", &["-s"])?.trim().to_string();
    let (ctl_port, node_port) = ports(base);
    let base_s = base.display().to_string();
    let conf = format!(
        "ClusterName=madengine\nSlurmctldHost=localhost\nSlurmctldPort={ctl_port}\nSlurmUser=root\nSlurmdUser=root\n\
AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={base_s}/munge-run/munge.socket\n\
StateSaveLocation={base_s}/state\nSlurmdSpoolDir={base_s}/spool/%n\nSlurmctldPidFile={base_s}/run/slurmctld.pid\n\
SlurmdPidFile={base_s}/run/slurmd-%n.pid\nSlurmctldLogFile={base_s}/log/slurmctld.log\nSlurmdLogFile={base_s}/log/slurmd-%n.log\n\
ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nTaskProlog={base_s}/taskprolog.sh\nJobAcctGatherType=jobacct_gather/none\n\
AccountingStorageType=accounting_storage/none\nSchedulerType=sched/backfill\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n\
GresTypes=gpu\nReturnToService=2\nMpiDefault=none\nMailProg=/bin/true\nInactiveLimit=0\nKillWait=5\nMinJobAge=300\n\
NodeName=node[1-{NODES}] NodeHostname={host} NodeAddr=127.0.0.1 Port=[{node_port}-{}] CPUs=2 RealMemory=1000 Gres=gpu:{GPUS} State=UNKNOWN\n\
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4\n",
        node_port + NODES as u16 - 1
    );
    let write =
        |name: &str, text: &str| fs::write(b(name), text).map_err(|e| format!("{name}: {e}"));
    write("slurm.conf", &conf)?;
    write(
        "gres.conf",
        &format!(
            "AutoDetect=off\nNodeName=node[1-{NODES}] Name=gpu File={base_s}/fakedev/gpu[0-{}]\n",
            GPUS - 1
        ),
    )?;
    write(
        "taskprolog.sh",
        &format!(
            "#!/bin/sh\necho \"export NODE_LOCAL_SCRATCH={base_s}/scratch/$SLURMD_NODENAME\"\n"
        ),
    )?;
    sh("chmod", &["755", &b("taskprolog.sh").display().to_string()])?;

    // A private munged: own key, socket and pid file.
    let key = b("munge/munge.key");
    let mut random = [0u8; 1024];
    std::io::Read::read_exact(
        &mut fs::File::open("/dev/urandom").map_err(|e| format!("/dev/urandom: {e}"))?,
        &mut random,
    )
    .map_err(|e| format!("/dev/urandom: {e}"))?;
    fs::write(&key, random).map_err(|e| format!("munge key: {e}"))?;
    sh(
        "chown",
        &[
            "-R",
            "munge:munge",
            &b("munge").display().to_string(),
            &b("munge-run").display().to_string(),
        ],
    )?;
    sh("chmod", &["700", &b("munge").display().to_string()])?;
    sh("chmod", &["400", &key.display().to_string()])?;
    sh("chmod", &["755", &b("munge-run").display().to_string()])?;
    sh(
        "runuser",
        &[
            "-u",
            "munge",
            "--",
            "munged",
            &format!("--key-file={}", key.display()),
            &format!("--socket={base_s}/munge-run/munge.socket"),
            &format!("--pid-file={base_s}/munge-run/munged.pid"),
            &format!("--log-file={base_s}/munge/munged.log"),
            &format!("--seed-file={base_s}/munge/munged.seed"),
        ],
    )?;
    for i in 0..GPUS {
        let dev = b(&format!("fakedev/gpu{i}")).display().to_string();
        sh("mknod", &[&dev, "c", "1", "3"])?;
    }
    let conf_path = b("slurm.conf").display().to_string();
    sh("slurmctld", &["-f", &conf_path])?;
    for n in 1..=NODES {
        sh("slurmd", &["-f", &conf_path, "-N", &format!("node{n}")])?;
    }
    let started = Instant::now();
    loop {
        let out = cmd("sinfo", ["-h", "-N", "-o", "%T"])
            .env("SLURM_CONF", &conf_path)
            .stderr_to_stdout()
            .read()
            .unwrap_or_default();
        if out.lines().filter(|l| l.trim() == "idle").count() == NODES as usize {
            break;
        }
        if started.elapsed() > Duration::from_secs(30) {
            return Err(format!(
                "the nodes did not become idle within 30 s (sinfo: {out}); logs in {base_s}/log"
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    println!("export SLURM_CONF={conf_path}");
    println!("export MADENGINE_TEST_SLURM={conf_path}");
    Ok(())
}

pub(crate) fn down(base: &Path) -> Result<(), String> {
    let mut pid_files: Vec<PathBuf> = fs::read_dir(base.join("run"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    pid_files.push(base.join("munge-run/munged.pid"));
    let mut pids = Vec::new();
    for f in pid_files {
        if let Some(pid) = fs::read_to_string(&f).ok().and_then(|t| t.trim().parse::<u32>().ok()) {
            let _ = cmd("kill", [pid.to_string()]).stderr_null().unchecked().run();
            pids.push(pid);
        }
    }
    let started = Instant::now();
    while pids.iter().any(|p| Path::new(&format!("/proc/{p}")).exists())
        && started.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    for p in pids {
        if Path::new(&format!("/proc/{p}")).exists() {
            let _ = cmd("kill", ["-9".to_string(), p.to_string()]).stderr_null().unchecked().run();
        }
    }
    Ok(())
}

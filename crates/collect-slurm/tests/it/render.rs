//! Rendered scripts: snapshots, and hostile values through a real bash.

use collect_slurm::JobSpec;

pub(crate) fn spec() -> JobSpec {
    JobSpec {
        name: "llama-70b profile".into(),
        nodes: 4,
        ntasks_per_node: 8,
        gpus_per_node: Some(8),
        partition: Some("mi300x".into()),
        time: Some("01:00:00".into()),
        account: Some("perf team".into()),
        sbatch: vec!["--exclusive".into()],
        env: vec![
            ("HF_HOME".into(), "/shared/hf cache".into()),
            ("NCCL_DEBUG".into(), "WARN".into()),
        ],
        setup: vec!["module load rocm/6.4".into()],
        command: vec![
            "madengine".into(),
            "profile".into(),
            "--".into(),
            "torchrun".into(),
            "--nproc-per-node".into(),
            "8".into(),
            "/shared/train.py".into(),
        ],
        results_dir: "/shared/results dir".into(),
        ..JobSpec::default()
    }
}

#[test]
fn rendered_script() {
    insta::assert_snapshot!(spec().render().unwrap());
}

/// Run `spec`'s script under a real bash in `cwd`, with an `srun` that runs
/// the node step in place (node 0, job 7).
fn run_script(
    spec: &JobSpec,
    dir: &std::path::Path,
    cwd: &std::path::Path,
) -> std::process::Output {
    let script = dir.join("job.sbatch");
    std::fs::write(&script, spec.render().unwrap()).unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let srun = bin.join("srun");
    std::fs::write(
        &srun,
        "#!/bin/bash\nfor a; do last=$a; done\nSLURM_NODEID=0 exec bash \"$last\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&srun, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    #[allow(clippy::disallowed_methods, reason = "runs the script with a real bash")]
    std::process::Command::new("bash")
        .arg(&script)
        .current_dir(cwd)
        .env("PATH", path)
        .env("SLURM_JOB_ID", "7")
        .env("NODE_LOCAL_SCRATCH", dir)
        .output()
        .unwrap()
}

#[test]
fn hostile_values_survive_bash() {
    // The rendered script runs under a real bash, with an `srun` that runs the
    // node step in place; the workload prints what it got.
    let dir = tempfile::tempdir().unwrap();
    let weird = "it's $HOME \"q\" \\ `id` $(id) \n next %j,x=y ünï";
    let mut s = spec();
    s.results_dir = dir.path().join("results dir");
    s.env = vec![("WEIRD".into(), weird.into())];
    s.setup.clear();
    s.command = vec![
        "bash".into(),
        "-c".into(),
        r#"printf '%s|' "$WEIRD" "$@""#.into(),
        "argv0".into(),
        "a b".into(),
        "$x".into(),
        "'".into(),
        "`id`".into(),
        String::new(),
    ];
    let run = run_script(&s, dir.path(), dir.path());
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let out = std::fs::read_to_string(dir.path().join("results dir/7/node_0/stdout.out")).unwrap();
    assert_eq!(out, format!("{weird}|a b|$x|'|`id`||"));
}

/// A workload argument (or a collected directory) holding a line break and
/// the here-document's delimiter cannot end the node step early and run what
/// follows as the batch script: the delimiter is one no line of the step is.
#[test]
fn a_value_cannot_end_the_node_step_early() {
    let dir = tempfile::tempdir().unwrap();
    let pwned = dir.path().join("pwned");
    let mut s = spec();
    s.results_dir = dir.path().join("results");
    s.setup.clear();
    s.env.clear();
    let payload = format!("x\nMADENGINE_NODE_STEP\ntouch '{}'\n", pwned.display());
    s.command = vec!["printf".into(), "%s".into(), payload.clone()];
    s.collect = vec![format!("d\nMADENGINE_NODE_STEP_2\ntouch '{}'", pwned.display())];
    let script = s.render().unwrap();
    assert!(script.contains("<<'MADENGINE_NODE_STEP_3'"), "{script}");
    let run = run_script(&s, dir.path(), dir.path());
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert!(!pwned.exists(), "a value ran as the batch script");
    let out = std::fs::read_to_string(dir.path().join("results/7/node_0/stdout.out")).unwrap();
    assert_eq!(out, payload);
}

/// The default results directory is relative: each node changes to its own
/// work directory before writing into it, so the script names it absolute
/// (before, the workload never ran: `slurm_results/42/node_0/stdout.out: No
/// such file or directory`).
#[test]
fn a_relative_results_directory_is_made_absolute() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec();
    s.results_dir = "slurm_results".into();
    s.setup.clear();
    s.env.clear();
    s.command = vec!["echo".into(), "ran".into()];
    let cwd = std::env::current_dir().unwrap();
    let script = s.render().unwrap();
    let absolute = cwd.join("slurm_results");
    assert!(script.contains(&format!("RESULTS={}/", absolute.display())), "{script}");
    // So named, the node writes there from its own work directory.
    let here = JobSpec { results_dir: dir.path().join("slurm_results"), ..s.clone() };
    let run = run_script(&here, dir.path(), dir.path());
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let out =
        std::fs::read_to_string(dir.path().join("slurm_results/7/node_0/stdout.out")).unwrap();
    assert_eq!(out, "ran\n");
}

/// A results directory with a line break would split its `#SBATCH --output`
/// line: refused, as other #SBATCH values are.
#[test]
fn control_characters_on_sbatch_lines_are_refused() {
    let mut s = spec();
    s.results_dir = "/shared/a\nb".into();
    let err = s.render().unwrap_err().to_string();
    assert!(err.contains("has a control character (a line break?)"), "{err}");
}

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
    let script = dir.path().join("job.sbatch");
    std::fs::write(&script, s.render().unwrap()).unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let srun = bin.join("srun");
    std::fs::write(
        &srun,
        "#!/bin/bash\nfor a; do last=$a; done\nSLURM_NODEID=0 exec bash \"$last\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&srun, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    #[allow(clippy::disallowed_methods, reason = "runs the script with a real bash")]
    let run = std::process::Command::new("bash")
        .arg(&script)
        .env("PATH", path)
        .env("SLURM_JOB_ID", "7")
        .env("NODE_LOCAL_SCRATCH", dir.path())
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let out = std::fs::read_to_string(dir.path().join("results dir/7/node_0/stdout.out")).unwrap();
    assert_eq!(out, format!("{weird}|a b|$x|'|`id`||"));
}

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
    let mut s = spec();
    s.env = vec![("WEIRD".into(), "it's $HOME \"q\" \\ `id` $(id) \n next".into())];
    s.command =
        vec!["printf".into(), "%s|".into(), "a b".into(), "$x".into(), "'".into(), "`id`".into()];
    let script = s.render().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.sbatch");
    std::fs::write(&path, &script).unwrap();
    #[allow(clippy::disallowed_methods, reason = "checks the script with a real bash")]
    let check = std::process::Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(check.status.success(), "bash -n: {}", String::from_utf8_lossy(&check.stderr));
    assert!(
        script.contains("export WEIRD='it'\\''s $HOME \"q\" \\ `id` $(id) \n next'"),
        "{script}"
    );
}

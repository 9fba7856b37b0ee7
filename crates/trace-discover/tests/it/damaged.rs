//! Damaged traces under a run directory (bytes flipped, cut, lost, written
//! twice or put in, gzipped ones in their deflate stream) neither fail nor
//! panic the walk that classifies them by what is left of them, nor the
//! search for their rank.

use std::sync::OnceLock;

use proptest::prelude::*;
use trace_discover::{Options, discover, find_rank};

use crate::{
    damage::{damage, damaged, gzipped},
    synthetic_run,
};

/// Traces named so that only their content tells what they are (and their
/// rank, from `distributedInfo`).
fn seeds() -> &'static [(&'static str, Vec<u8>)] {
    static SEEDS: OnceLock<Vec<(&'static str, Vec<u8>)>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let read = |path: &str| std::fs::read(synthetic_run().join(path)).unwrap();
        let kineto = read("node_0/host_4242.json");
        vec![
            ("host_b.json.gz", gzipped(&kineto)),
            ("host_a.json", kineto),
            ("results_c.json", read("rocprof_output/9999_results.json")),
            ("d.db", read("rocprof_output/1e4d92661463/1234_results.db")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    #[test]
    fn damaged_traces_never_stop_the_walk(
        damages in proptest::collection::vec(damage(), 1..5),
    ) {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in seeds() {
            std::fs::write(dir.path().join(name), damaged(bytes, &damages)).unwrap();
        }
        let found = discover(dir.path(), &Options::default());
        prop_assert!(found.is_ok(), "{:?}", found.err());
        for (name, _) in seeds() {
            let _ = find_rank(&dir.path().join(name));
        }
    }
}

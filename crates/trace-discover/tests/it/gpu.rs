//! The real GPU traces of `fixtures/gpu/`: each found as a PyTorch trace,
//! a job's ranks by their names and, renamed, by their `distributedInfo`.

use trace_discover::{Options, RankSource, TraceKind, discover};

use crate::public_dir::gpu_fixture_sets;

#[test]
fn gpu_fixtures_are_found_with_their_ranks_by_name_and_by_content() {
    for (set, files) in gpu_fixture_sets() {
        let dir = files[0].parent().unwrap();
        let found = discover(dir, &Options::default()).unwrap();
        assert!(found.problems.is_empty() && found.unsupported.is_empty(), "{set}: {found:?}");
        assert_eq!(found.traces.len(), files.len(), "{set}");
        // Under other names, in a directory of their own: the ranks come
        // from the traces themselves, and agree with the names'.
        let renamed = tempfile::tempdir().unwrap();
        for (i, f) in files.iter().enumerate() {
            std::fs::copy(f, renamed.path().join(format!("trace{i}.json"))).unwrap();
        }
        let by_content = discover(renamed.path(), &Options::default()).unwrap();
        for t in &found.traces {
            let name = t.path.file_name().unwrap().to_string_lossy();
            let i = files.iter().position(|f| *f == t.path).unwrap();
            let other = by_content
                .traces
                .iter()
                .find(|o| o.path.ends_with(format!("trace{i}.json")))
                .unwrap_or_else(|| panic!("{set}/{name}: not found as trace{i}.json"));
            if name.starts_with("rocprofv3_") {
                assert_eq!((t.kind, other.kind), (TraceKind::RocprofJson, TraceKind::RocprofJson));
                continue;
            }
            assert_eq!((t.kind, other.kind), (TraceKind::Pytorch, TraceKind::Pytorch), "{name}");
            let named = name.split_once("_rank").map(|(_, r)| r.split('.').next().unwrap());
            match named {
                Some(rank) => {
                    let rank: u32 = rank.parse().unwrap();
                    assert_eq!(t.rank.map(|r| r.rank), Some(rank), "{set}/{name}");
                    let content = other.rank.unwrap_or_else(|| panic!("{set}/{name}: no rank"));
                    assert_eq!(content.rank, rank, "{set}/{name}");
                    assert_eq!(content.source, RankSource::DistributedInfo, "{set}/{name}");
                    assert_eq!(content.world_size, Some(2), "{set}/{name}: a 2-process job");
                }
                // One process, no distributed job: no rank anywhere.
                None => assert_eq!((t.rank, other.rank), (None, None), "{set}/{name}"),
            }
        }
    }
}

//! Every real public trace is discovered with the right kind, and the
//! multi-rank sets with the right ranks.

use std::collections::BTreeMap;

use trace_discover::{Options, TraceKind, discover};

#[test]
fn public_traces_are_classified_with_their_ranks() {
    let Some(dir) = crate::public_fixtures() else { return };
    let options = Options { exclude: vec![dir.join("tracelens-expected")], ..Options::default() };
    let found = discover(&dir, &options).unwrap();
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    let by_name: BTreeMap<String, _> = found
        .traces
        .iter()
        .map(|t| (t.path.strip_prefix(&dir).unwrap().display().to_string(), t))
        .collect();
    // every JSON trace is PyTorch except the rocprofv3 one; the .pftrace is pftrace
    let mut json = 0;
    for path in crate::public_dir::files_under(&dir) {
        let rel = path.strip_prefix(&dir).unwrap().display().to_string();
        if rel.starts_with("tracelens-expected") || rel.ends_with(".md") {
            continue;
        }
        let trace = by_name.get(&rel).unwrap_or_else(|| panic!("{rel} was not discovered"));
        let expected = if rel.ends_with(".pftrace") {
            TraceKind::Pftrace
        } else if rel.starts_with("rocprofv3/") {
            TraceKind::RocprofJson
        } else {
            json += 1;
            TraceKind::Pytorch
        };
        assert_eq!(trace.kind, expected, "{rel}");
    }
    assert_eq!(json, 27);
    // the multi-rank sets: ranks 0..8 and 0..2, each from the trace itself or its name
    for (set, world) in [("param-dlrm-8rank", 8), ("hta-trace_filter-2rank", 2)] {
        let mut ranks: Vec<u32> = by_name
            .iter()
            .filter(|(name, _)| name.contains(set))
            .map(|(name, t)| t.rank.unwrap_or_else(|| panic!("{name} has no rank")).rank)
            .collect();
        ranks.sort();
        assert_eq!(ranks, (0..world).collect::<Vec<_>>(), "{set}");
    }
    let dlrm = by_name.iter().find(|(n, _)| n.contains("worker3_step_12")).unwrap().1;
    assert_eq!(dlrm.rank.unwrap().world_size, Some(8));
}

//! Where a PyTorch trace's rank comes from.

use std::{
    fs::File,
    io::{self, Read, Seek, SeekFrom},
    path::Path,
    sync::LazyLock,
};

use memchr::memmem;
use regex::bytes::Regex;
use serde::{Deserialize, Serialize};

use crate::classify::{Head, read_head};

/// The rank regex the original and TraceLens' collective report use, searched
/// in a trace's file name.
pub const RANK_REGEX: &str = r"rank[\[\-_/]?(?P<rank>\d+)";

/// How much of a trace is read (decompressed) to find `distributedInfo`.
pub(crate) const DISTRIBUTED_INFO_HEAD: usize = 1 << 20;
/// How much of the end of an uncompressed trace is read when the head holds no
/// `distributedInfo` (on-demand Kineto traces write it after `traceEvents`).
pub(crate) const DISTRIBUTED_INFO_TAIL: u64 = 64 << 10;

static NAME_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&ascii_digits(RANK_REGEX)).expect("valid regex"));
static DIST_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?-u)"distributedInfo"\s*:\s*\{[^}]*?"rank"\s*:\s*([0-9]+)"#)
        .expect("valid regex")
});

fn ascii_digits(re: &str) -> String {
    re.replace(r"\d", "[0-9]")
}

/// A trace's rank in its job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Rank {
    /// The rank.
    pub rank: u32,
    /// Where it was found.
    pub source: RankSource,
    /// The job's world size, when the trace's `distributedInfo` says.
    pub world_size: Option<u32>,
}

/// Where a rank was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RankSource {
    /// The file name matched [`RANK_REGEX`].
    FileName,
    /// The trace's own `distributedInfo.rank`.
    DistributedInfo,
}

/// The rank in a file name, by [`RANK_REGEX`] (ASCII digits only).
pub fn rank_from_file_name(name: &[u8]) -> Option<u32> {
    NAME_RE
        .captures(name)?
        .name("rank")
        .and_then(|m| std::str::from_utf8(m.as_bytes()).ok()?.parse().ok())
}

#[derive(Deserialize)]
struct DistributedInfo {
    rank: Option<serde_json::Value>,
    world_size: Option<serde_json::Value>,
}

fn as_u32(v: &serde_json::Value) -> Option<u32> {
    match v {
        serde_json::Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// `(rank, world_size)` from the `distributedInfo` object in `bytes`, whatever
/// the key order; falls back to the original's regex when the object is cut off.
pub(crate) fn parse_distributed_info(bytes: &[u8]) -> Option<(u32, Option<u32>)> {
    let key = b"\"distributedInfo\"";
    let mut from = 0;
    while let Some(at) = memmem::find(&bytes[from..], key) {
        let mut rest = &bytes[from + at + key.len()..];
        rest = rest.trim_ascii_start();
        if let Some(r) = rest.strip_prefix(b":") {
            let value = r.trim_ascii_start();
            let mut de = serde_json::Deserializer::from_slice(value).into_iter::<DistributedInfo>();
            if let Some(Ok(info)) = de.next()
                && let Some(rank) = info.rank.as_ref().and_then(as_u32)
            {
                return Some((rank, info.world_size.as_ref().and_then(as_u32)));
            }
        }
        from += at + key.len();
    }
    let caps = DIST_RE.captures(bytes)?;
    let rank = std::str::from_utf8(caps.get(1)?.as_bytes()).ok()?.parse().ok()?;
    Some((rank, None))
}

/// The rank of a PyTorch trace: from its file name, else from its
/// `distributedInfo` (first MiB, decompressed; then the last 64 KiB of an
/// uncompressed file).
pub fn find_rank(path: &Path) -> io::Result<Option<Rank>> {
    find_rank_with(path, None)
}

/// [`find_rank`], reusing a head already read for classification.
pub(crate) fn find_rank_with(path: &Path, known: Option<&Head>) -> io::Result<Option<Rank>> {
    if let Some(rank) = path.file_name().and_then(|n| rank_from_file_name(n.as_encoded_bytes())) {
        return Ok(Some(Rank { rank, source: RankSource::FileName, world_size: None }));
    }
    let from_info =
        |(rank, world_size)| Rank { rank, source: RankSource::DistributedInfo, world_size };
    if let Some(head) = known {
        if let Some(found) = parse_distributed_info(&head.bytes) {
            return Ok(Some(from_info(found)));
        }
        if head.complete {
            return Ok(None);
        }
    }
    let head = read_head(path, DISTRIBUTED_INFO_HEAD)?;
    if let Some(found) = parse_distributed_info(&head.bytes) {
        return Ok(Some(from_info(found)));
    }
    if head.complete {
        return Ok(None);
    }
    let mut file = File::open(path)?;
    let mut magic = [0u8; 2];
    if file.read(&mut magic)? == 2 && magic == [0x1f, 0x8b] {
        // Reading the end would mean decompressing everything.
        return Ok(None);
    }
    let len = file.seek(SeekFrom::End(0))?;
    file.seek(SeekFrom::Start(len.saturating_sub(DISTRIBUTED_INFO_TAIL)))?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail)?;
    Ok(parse_distributed_info(&tail).map(from_info))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_from_names() {
        let check = |name: &str, expected: Option<u32>| {
            assert_eq!(rank_from_file_name(name.as_bytes()), expected, "{name}");
        };
        check("libkineto_trace_rank0_1.json", Some(0));
        check("rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", Some(34));
        check("sampled_rank-1.json.gz", Some(1));
        check("model_rank[12].pt.trace.json", Some(12));
        check("rank7_trace.json", Some(7));
        check("profile_trace_rank_0.json.gz", Some(0));
        check("worker0_step_12.1694128201545.pt.trace.json", None);
        check("libkineto_trace_4242.json", None);
        check("ranks.json", None);
        check("rank99999999999.json", None);
    }

    #[test]
    fn distributed_info_in_any_key_order() {
        let check = |text: &str, expected: Option<(u32, Option<u32>)>| {
            assert_eq!(parse_distributed_info(text.as_bytes()), expected, "{text}");
        };
        check(
            r#"{"distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8}}"#,
            Some((3, Some(8))),
        );
        check(
            r#""distributedInfo": {"pg_config": [{"pg_name": "0", "ranks": [0, 1]}], "world_size": 2, "rank": 1}"#,
            Some((1, Some(2))),
        );
        check(r#""distributedInfo":{"rank": 0}"#, Some((0, None)));
        check(
            r#""distributedInfo": {"backend": "gloo", "ranks": "[0, 1]", "rank": 1, "world_size": 2}"#,
            Some((1, Some(2))),
        );
        // cut off by the head limit: the original's regex still finds it
        check(
            r#""distributedInfo": {"backend": "nccl", "rank": 5, "world_size": 8, "pg_config": [{"#,
            Some((5, None)),
        );
        check(r#""traceEvents": []"#, None);
        check(r#""distributedInfo": {"backend": "nccl"}"#, None);
    }
}

//! What reading a trace costs, told before it is read: its JSON size, and
//! how many such reads fit in memory at once.

use std::{
    fs::File,
    io::{Read, Seek, SeekFrom},
    path::Path,
};

/// The size of a trace's JSON text, from its file alone: the file's length,
/// or for a gzip file the length its trailer records (RFC 1952 `ISIZE`,
/// modulo 4 GiB). Where that is implausible (smaller than the file, as for
/// a JSON text of 4 GiB or more, or several members), 15 times the file's
/// length is assumed, about what Kineto's JSON compresses by. 0 when the
/// file cannot be read, or is no regular file (a pipe is never opened).
pub fn json_size(path: &Path) -> u64 {
    if crate::classify::regular(path).is_err() {
        return 0;
    }
    let Ok(mut file) = File::open(path) else { return 0 };
    let len = file.metadata().map_or(0, |m| m.len());
    let mut magic = [0u8; 2];
    if file.read_exact(&mut magic).is_err() || magic != [0x1f, 0x8b] {
        return len;
    }
    let mut tail = [0u8; 4];
    match file.seek(SeekFrom::End(-4)).and_then(|_| file.read_exact(&mut tail)) {
        Ok(()) if u64::from(u32::from_le_bytes(tail)) >= len => u64::from(u32::from_le_bytes(tail)),
        _ => len.saturating_mul(15),
    }
}

/// How many jobs may run at once, at most `most` (and at least one): as many
/// of the largest `needs` (bytes each) as fit in `budget` together. No
/// budget: `most`.
///
/// ```
/// let gib = 1u64 << 30;
/// let needs = [2 * gib, gib / 10, 2 * gib, 2 * gib];
/// assert_eq!(trace_discover::at_once(8, &needs, Some(5 * gib)), 2);
/// assert_eq!(trace_discover::at_once(8, &[20 * gib], Some(4 * gib)), 1);
/// ```
pub fn at_once(most: usize, needs: &[u64], budget: Option<u64>) -> usize {
    let Some(budget) = budget else { return most.max(1) };
    let mut largest = needs.to_vec();
    largest.sort_unstable_by(|a, b| b.cmp(a));
    let mut total = 0u64;
    let fitting = largest
        .iter()
        .take_while(|&&need| {
            total = total.saturating_add(need);
            total <= budget
        })
        .count();
    fitting.clamp(1, most.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_fit_in_the_budget() {
        let gib = 1u64 << 30;
        // Small traces: as many as asked for.
        assert_eq!(at_once(8, &[gib / 10; 20], Some(8 * gib)), 8);
        // Two of the largest fit, whatever the order.
        assert_eq!(at_once(8, &[2 * gib, gib / 10, 2 * gib, 2 * gib], Some(4 * gib)), 2);
        // One larger than the budget still runs.
        assert_eq!(at_once(8, &[20 * gib], Some(4 * gib)), 1);
        // No budget, or no jobs: the most.
        assert_eq!(at_once(4, &[20 * gib; 8], None), 4);
        assert_eq!(at_once(4, &[], Some(gib)), 1);
    }

    #[test]
    fn a_gzip_trace_tells_its_json_size() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let json = format!(r#"{{"traceEvents": [{}]}}"#, "{},".repeat(100_000) + "{}");
        let path = dir.path().join("t.json.gz");
        let mut gz = flate2::write::GzEncoder::new(
            File::create(&path).unwrap(),
            flate2::Compression::default(),
        );
        gz.write_all(json.as_bytes()).unwrap();
        gz.finish().unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() < json.len() as u64 / 50);
        assert_eq!(json_size(&path), json.len() as u64);
        let plain = dir.path().join("t.json");
        std::fs::write(&plain, &json).unwrap();
        assert_eq!(json_size(&plain), json.len() as u64);
        // A gzip header with a trailer smaller than the file: 15 times it.
        let odd = dir.path().join("odd.json.gz");
        std::fs::write(&odd, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]).unwrap();
        assert_eq!(json_size(&odd), 14 * 15);
        assert_eq!(json_size(&dir.path().join("missing.json")), 0);
    }
}

//! A Perfetto protobuf trace (`.pftrace`, as rocprofv3 `--output-format
//! pftrace` writes), read into the same tables as rocprofv3's JSON
//! (`rocprof.rs`), without TraceLens' detour through Perfetto's `traceconv`.
//!
//! The trace is a `Trace` message: its packets (field 1) back to back, read
//! here one at a time, so a trace of any size is streamed. Of each packet
//! only what the tables need is decoded (by prost; every other field is
//! skipped): its `track_event` (a slice's begin or end on a track, its
//! categories and name), the `interned_data` those name by id (per packet
//! sequence, cleared with the sequence's incremental state), the sequence's
//! `trace_packet_defaults` and the incremental clocks its `clock_snapshot`
//! defines. `compressed_packets` (zlib) are read as the packets they hold.
//!
//! rocprofv3 writes one slice per record, its category the record's kind:
//! `kernel_dispatch` slices are kernels (named by the slice: the kernel's
//! name), `memory_copy` slices copies. A slice's time is its `begin_ns` /
//! `end_ns` debug annotations where it has both (rocprofv3 writes them: the
//! record's own times, in ns), else its packets' timestamps. A Perfetto
//! trace holds no process start and end: the total time is the span of its
//! slices, every category's, from the first begin to the last end.

use std::{
    borrow::Cow,
    io::{self, Read},
    sync::atomic::{AtomicBool, Ordering},
};

use prost::Message;
use rustc_hash::FxHashMap;

use crate::rocprof::{Records, Tables, truncated_kernel_name};

/// Why a Perfetto trace could not be read.
#[derive(Debug)]
pub(crate) enum Failure {
    /// `cancel` was raised.
    Cancelled,
    /// Reading the file failed, after this many bytes.
    Read(u64, io::Error),
    /// What went wrong, in words, with the offset (in the trace's bytes,
    /// decompressed) of the packet involved.
    Said(String),
    /// The trace ends in the middle of a packet, after this many bytes (or
    /// its gzip stream ends early).
    Truncated(u64),
}

/// How many packets are read between looks at `cancel`.
const CANCEL_EVERY: u32 = 1 << 16;

/// A packet larger than this is no packet of a trace: the bytes are not a
/// Perfetto trace, or damaged (Perfetto's own limit is far smaller).
const MAX_PACKET: u64 = 256 << 20;

/// The tables of the Perfetto trace read from `input`. With `salvage`, a
/// trace cut short inside a packet gives the tables of the packets before
/// the cut (and says where it was); without, it is an error.
pub(crate) fn tables(
    input: impl Read,
    salvage: bool,
    cancel: Option<&AtomicBool>,
) -> Result<Tables, Failure> {
    let mut reading = Reading::default();
    let mut input = Counted { inner: io::BufReader::with_capacity(1 << 20, input), read: 0 };
    let mut packet = Vec::new();
    let mut truncated_at = None;
    let mut read = 0u32;
    loop {
        if read.is_multiple_of(CANCEL_EVERY) && cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(Failure::Cancelled);
        }
        read = read.wrapping_add(1);
        let offset = input.read;
        // A gzip stream that ends early is a cut too.
        let next = next_field(&mut input, &mut packet).map_err(|e| match e {
            Next::Read(e) if e.kind() == io::ErrorKind::UnexpectedEof => Next::Cut,
            e => e,
        });
        match next {
            Ok(None) => break,
            Ok(Some(1)) => reading.packet(&packet).map_err(|detail| {
                Failure::Said(format!("its packet at byte {offset} does not decode: {detail}"))
            })?,
            // Another field of `Trace` (none is defined today): skipped.
            Ok(Some(_)) => {}
            Err(Next::Cut) if salvage => {
                truncated_at = Some(input.read);
                break;
            }
            Err(Next::Cut) => return Err(Failure::Truncated(input.read)),
            Err(Next::Read(e)) => return Err(Failure::Read(input.read, e)),
            Err(Next::Said(detail)) => {
                return Err(Failure::Said(format!("at byte {offset}: {detail}")));
            }
        }
    }
    let mut tables = reading.finish();
    tables.truncated_at = truncated_at;
    Ok(tables)
}

/// Why the next field of a message could not be read.
enum Next {
    /// The bytes end inside it.
    Cut,
    Read(io::Error),
    /// It is not protobuf.
    Said(String),
}

/// Bytes read through, counted.
struct Counted<R> {
    inner: R,
    read: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// The next field of the message `input` holds: its number, with its bytes
/// in `into` when it is length-delimited (the rest are skipped, and leave
/// `into` empty); `None` at the end of the input.
fn next_field(input: &mut impl Read, into: &mut Vec<u8>) -> Result<Option<u64>, Next> {
    into.clear();
    let Some(key) = varint(input, true)? else { return Ok(None) };
    let (field, wire) = (key >> 3, key & 7);
    if field == 0 {
        return Err(Next::Said(format!("field number 0 (key byte {key:#04x}): not protobuf")));
    }
    match wire {
        0 => {
            varint(input, false)?;
        }
        1 => skip(input, 8)?,
        5 => skip(input, 4)?,
        2 => {
            let len = varint(input, false)?.unwrap_or_default();
            if len > MAX_PACKET {
                return Err(Next::Said(format!(
                    "field {field} claims {len} bytes: not a Perfetto trace, or a damaged one"
                )));
            }
            into.reserve(len as usize);
            let got = input.take(len).read_to_end(into).map_err(Next::Read)?;
            if (got as u64) < len {
                return Err(Next::Cut);
            }
        }
        _ => {
            return Err(Next::Said(format!(
                "field {field} has wire type {wire}, which no Perfetto trace uses"
            )));
        }
    }
    Ok(Some(field))
}

fn skip(input: &mut impl Read, n: u64) -> Result<(), Next> {
    let skipped = io::copy(&mut input.take(n), &mut io::sink()).map_err(Next::Read)?;
    if skipped < n { Err(Next::Cut) } else { Ok(()) }
}

/// A varint; `None` when the input ends before its first byte and `at_end`
/// allows that.
fn varint(input: &mut impl Read, at_end: bool) -> Result<Option<u64>, Next> {
    let mut value = 0u64;
    for i in 0..10 {
        let mut byte = [0u8];
        loop {
            match input.read(&mut byte) {
                Ok(0) if i == 0 && at_end => return Ok(None),
                Ok(0) => return Err(Next::Cut),
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Next::Read(e)),
            }
        }
        value |= u64::from(byte[0] & 0x7f) << (7 * i);
        if byte[0] & 0x80 == 0 {
            return Ok(Some(value));
        }
    }
    Err(Next::Said("a varint longer than 10 bytes: not protobuf".into()))
}

/// Perfetto's `TracePacket`: the fields read (the reference's numbers).
#[derive(Clone, PartialEq, Message)]
struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "58")]
    timestamp_clock_id: Option<u32>,
    #[prost(uint32, optional, tag = "10")]
    trusted_packet_sequence_id: Option<u32>,
    #[prost(uint32, optional, tag = "13")]
    sequence_flags: Option<u32>,
    #[prost(message, optional, tag = "12")]
    interned_data: Option<InternedData>,
    #[prost(message, optional, tag = "59")]
    trace_packet_defaults: Option<TracePacketDefaults>,
    #[prost(message, optional, tag = "6")]
    clock_snapshot: Option<ClockSnapshot>,
    #[prost(message, optional, tag = "11")]
    track_event: Option<TrackEvent>,
    #[prost(bytes = "vec", optional, tag = "50")]
    compressed_packets: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "133")]
    zstd_compressed_packets: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct TracePacketDefaults {
    #[prost(uint32, optional, tag = "58")]
    timestamp_clock_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    track_event_defaults: Option<TrackEventDefaults>,
}

#[derive(Clone, PartialEq, Message)]
struct TrackEventDefaults {
    #[prost(uint64, optional, tag = "11")]
    track_uuid: Option<u64>,
}

#[derive(Clone, PartialEq, Message)]
struct ClockSnapshot {
    #[prost(message, repeated, tag = "1")]
    clocks: Vec<Clock>,
}

#[derive(Clone, PartialEq, Message)]
struct Clock {
    #[prost(uint32, optional, tag = "1")]
    clock_id: Option<u32>,
    #[prost(uint64, optional, tag = "2")]
    timestamp: Option<u64>,
    #[prost(bool, optional, tag = "3")]
    is_incremental: Option<bool>,
    #[prost(uint64, optional, tag = "4")]
    unit_multiplier_ns: Option<u64>,
}

#[derive(Clone, PartialEq, Message)]
struct InternedData {
    #[prost(message, repeated, tag = "1")]
    event_categories: Vec<Interned>,
    #[prost(message, repeated, tag = "2")]
    event_names: Vec<Interned>,
    #[prost(message, repeated, tag = "3")]
    debug_annotation_names: Vec<Interned>,
}

/// An interned string: `EventCategory`, `EventName`, `DebugAnnotationName`.
#[derive(Clone, PartialEq, Message)]
struct Interned {
    #[prost(uint64, optional, tag = "1")]
    iid: Option<u64>,
    /// Bytes, not `string`: a name that is not UTF-8 is read lossily
    /// rather than failing its packet.
    #[prost(bytes = "vec", optional, tag = "2")]
    name: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct TrackEvent {
    #[prost(int32, optional, tag = "9")]
    r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    track_uuid: Option<u64>,
    #[prost(uint64, repeated, packed = "false", tag = "3")]
    category_iids: Vec<u64>,
    #[prost(bytes = "vec", repeated, tag = "22")]
    categories: Vec<Vec<u8>>,
    #[prost(uint64, optional, tag = "10")]
    name_iid: Option<u64>,
    #[prost(bytes = "vec", optional, tag = "23")]
    name: Option<Vec<u8>>,
    #[prost(message, repeated, tag = "4")]
    debug_annotations: Vec<DebugAnnotation>,
}

#[derive(Clone, PartialEq, Message)]
struct DebugAnnotation {
    #[prost(uint64, optional, tag = "1")]
    name_iid: Option<u64>,
    #[prost(bytes = "vec", optional, tag = "10")]
    name: Option<Vec<u8>>,
    #[prost(uint64, optional, tag = "3")]
    uint_value: Option<u64>,
    #[prost(int64, optional, tag = "4")]
    int_value: Option<i64>,
    #[prost(bytes = "vec", optional, tag = "6")]
    string_value: Option<Vec<u8>>,
}

const SLICE_BEGIN: i32 = 1;
const SLICE_END: i32 = 2;
/// `sequence_flags`: the sequence's incremental state was cleared.
const INCREMENTAL_STATE_CLEARED: u32 = 1;

/// What a packet sequence's packets refer to.
#[derive(Default)]
struct Sequence {
    categories: FxHashMap<u64, String>,
    names: FxHashMap<u64, String>,
    /// Interned names of kernels, truncated (each once).
    kernel_names: FxHashMap<u64, String>,
    annotations: FxHashMap<u64, String>,
    clock: Option<u32>,
    track: Option<u64>,
    /// Incremental clocks: their last value and unit (ns).
    incremental: FxHashMap<u32, (u64, u64)>,
}

/// What a slice is to the tables.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Kernel,
    Copy,
    Other,
}

/// A slice begun and not yet ended.
struct Open {
    kind: Kind,
    name: String,
    begin: u64,
    /// Recorded at its begin already, from its annotations.
    done: bool,
}

#[derive(Default)]
struct Reading {
    sequences: FxHashMap<u32, Sequence>,
    /// Open slices, per track.
    open: FxHashMap<u64, Vec<Open>>,
    slices: Slices,
    /// The slices' categories, each once, in the order seen.
    categories: Vec<String>,
}

/// What the slices read add up to.
#[derive(Default)]
struct Slices {
    records: Records,
    /// The first begin and last end of any slice.
    span: Option<(u64, u64)>,
}

impl Slices {
    fn add(&mut self, kind: Kind, name: &str, begin: u64, end: u64) {
        let end = end.max(begin);
        self.span = Some(self.span.map_or((begin, end), |(b, e)| (b.min(begin), e.max(end))));
        match kind {
            Kind::Kernel => self.records.kernel(name, begin, end),
            Kind::Copy => self.records.copy(begin, end),
            Kind::Other => {}
        }
    }
}

/// The GPU index an `agent` annotation names: rocprofv3 writes its agent
/// as `<label>-<index>`, the label `GPU` (and the index the GPU's among the
/// node's GPUs) with `--agent-index type-relative`; by default `Agent`, and
/// a node-wide index that counts the CPUs too, which names no GPU.
fn gpu_index(agent: &[u8]) -> Option<u32> {
    let rest = agent.strip_prefix(b"GPU")?;
    let digits = rest.strip_prefix(b"-").unwrap_or(rest);
    std::str::from_utf8(digits).ok()?.trim().parse().ok()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

impl Reading {
    fn packet(&mut self, bytes: &[u8]) -> Result<(), String> {
        let packet = TracePacket::decode(bytes).map_err(|e| e.to_string())?;
        if let Some(compressed) = &packet.compressed_packets {
            let mut inner = flate2::read::ZlibDecoder::new(&compressed[..]);
            let mut bytes = Vec::new();
            loop {
                match next_field(&mut inner, &mut bytes) {
                    Ok(None) => break,
                    Ok(Some(1)) => self
                        .packet(&bytes)
                        .map_err(|e| format!("in its compressed_packets: {e}"))?,
                    Ok(Some(_)) => {}
                    Err(Next::Cut) => {
                        return Err("its compressed_packets end inside a packet".into());
                    }
                    Err(Next::Read(e)) => {
                        return Err(format!("its compressed_packets do not inflate: {e}"));
                    }
                    Err(Next::Said(said)) => {
                        return Err(format!("in its compressed_packets: {said}"));
                    }
                }
            }
        }
        if packet.zstd_compressed_packets.is_some() {
            return Err("it holds zstd_compressed_packets, which are not read: convert the trace \
                        with `traceconv decompress_packets` first"
                .into());
        }
        let sequence =
            self.sequences.entry(packet.trusted_packet_sequence_id.unwrap_or(0)).or_default();
        if packet.sequence_flags.unwrap_or(0) & INCREMENTAL_STATE_CLEARED != 0 {
            *sequence = Sequence::default();
        }
        if let Some(defaults) = &packet.trace_packet_defaults {
            sequence.clock = defaults.timestamp_clock_id;
            sequence.track = defaults.track_event_defaults.as_ref().and_then(|d| d.track_uuid);
        }
        if let Some(interned) = packet.interned_data {
            for (from, into) in [
                (interned.event_categories, &mut sequence.categories),
                (interned.event_names, &mut sequence.names),
                (interned.debug_annotation_names, &mut sequence.annotations),
            ] {
                for i in from {
                    if let (Some(iid), Some(name)) = (i.iid, i.name) {
                        into.insert(iid, text(&name));
                    }
                }
            }
        }
        if let Some(snapshot) = &packet.clock_snapshot {
            for clock in &snapshot.clocks {
                if let (Some(id), Some(true)) = (clock.clock_id, clock.is_incremental) {
                    let unit = clock.unit_multiplier_ns.unwrap_or(1).max(1);
                    sequence.incremental.insert(id, (clock.timestamp.unwrap_or(0), unit));
                }
            }
        }
        let Some(event) = packet.track_event else { return Ok(()) };
        let clock = packet.timestamp_clock_id.or(sequence.clock);
        let timestamp =
            packet.timestamp.map(|t| match clock.and_then(|c| sequence.incremental.get_mut(&c)) {
                Some((last, unit)) => {
                    *last = last.wrapping_add(t.wrapping_mul(*unit));
                    *last
                }
                None => t,
            });
        let track = event.track_uuid.or(sequence.track).unwrap_or(0);
        match event.r#type {
            Some(SLICE_BEGIN) => {
                let mut kind = Kind::Other;
                let named = event.category_iids.iter().filter_map(|iid| {
                    sequence.categories.get(iid).map(|c| Cow::Borrowed(c.as_str()))
                });
                for category in
                    named.chain(event.categories.iter().map(|c| String::from_utf8_lossy(c)))
                {
                    match &*category {
                        "kernel_dispatch" => kind = Kind::Kernel,
                        "memory_copy" if kind == Kind::Other => kind = Kind::Copy,
                        _ => {}
                    }
                    if !self.categories.iter().any(|c| *c == category) {
                        self.categories.push(category.into_owned());
                    }
                }
                // A kernel by the truncated name its JSON would give it (its
                // slice carries the demangled one), as TraceLens' rocprof
                // report names it.
                let kernel = kind == Kind::Kernel;
                let name = match (&event.name, event.name_iid) {
                    (Some(name), _) if kernel => {
                        Cow::Owned(truncated_kernel_name(&String::from_utf8_lossy(name)).into())
                    }
                    (Some(name), _) => String::from_utf8_lossy(name),
                    (None, Some(iid)) if kernel => {
                        let names = &sequence.names;
                        Cow::Borrowed(
                            sequence
                                .kernel_names
                                .entry(iid)
                                .or_insert_with(|| {
                                    let name = names.get(&iid).map_or("", String::as_str);
                                    truncated_kernel_name(name).to_string()
                                })
                                .as_str(),
                        )
                    }
                    (None, Some(iid)) => {
                        Cow::Borrowed(sequence.names.get(&iid).map_or("", String::as_str))
                    }
                    (None, None) => Cow::Borrowed(""),
                };
                let (mut begin_ns, mut end_ns, mut gpu) = (None, None, None);
                for a in &event.debug_annotations {
                    let named = match (&a.name, a.name_iid) {
                        (Some(name), _) => name.as_slice(),
                        (None, Some(iid)) => {
                            sequence.annotations.get(&iid).map_or(&b""[..], |n| n.as_bytes())
                        }
                        (None, None) => b"",
                    };
                    let value = a.uint_value.or(a.int_value.and_then(|v| u64::try_from(v).ok()));
                    match named {
                        b"begin_ns" => begin_ns = value,
                        b"end_ns" => end_ns = value,
                        b"agent" => gpu = a.string_value.as_deref().and_then(gpu_index),
                        _ => {}
                    }
                }
                if kind == Kind::Kernel {
                    self.slices.records.devices.insert(gpu);
                }
                let open = self.open.entry(track).or_default();
                match (begin_ns, end_ns) {
                    (Some(begin), Some(end)) => {
                        self.slices.add(kind, &name, begin, end);
                        open.push(Open { kind, name: String::new(), begin, done: true });
                    }
                    _ => match timestamp {
                        Some(begin) => {
                            open.push(Open { kind, name: name.into_owned(), begin, done: false });
                        }
                        None => return Err("a slice begins without a timestamp".into()),
                    },
                }
            }
            Some(SLICE_END) => {
                let Some(open) = self.open.get_mut(&track).and_then(Vec::pop) else {
                    // An end whose begin came before the trace did (a ring
                    // buffer wrapped, a sequence lost): nothing to time.
                    return Ok(());
                };
                if !open.done {
                    let Some(end) = timestamp else {
                        return Err("a slice ends without a timestamp".into());
                    };
                    self.slices.add(open.kind, &open.name, open.begin, end);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(self) -> Tables {
        let Slices { mut records, span } = self.slices;
        if let Some((first, last)) = span {
            records.process(first, last);
        }
        let gpu = !records.kernels.is_empty() || !records.copies.is_empty();
        let lists = if gpu { Vec::new() } else { self.categories };
        records.tables(lists)
    }
}

#[cfg(test)]
mod tests {
    use super::gpu_index;

    #[test]
    fn only_a_gpu_label_names_a_gpu_index() {
        assert_eq!(gpu_index(b"GPU-3"), Some(3));
        assert_eq!(gpu_index(b"GPU-0"), Some(0));
        // rocprofv3's default, a node-wide index: no GPU's.
        assert_eq!(gpu_index(b"Agent-2"), None);
        assert_eq!(gpu_index(b"CPU-0"), None);
        assert_eq!(gpu_index(b"GPU-"), None);
        assert_eq!(gpu_index(b"GPU-x"), None);
    }
}

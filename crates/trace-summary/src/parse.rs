//! One streaming pass over a Kineto trace into compact events: no DOM, only
//! the fields the tables use; strings are interned as they are read.

use std::{fmt, io::Read};

use rustc_hash::FxHashMap;

use serde::{
    Deserialize,
    de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor},
};

use crate::scan::{Batch, CHUNK, Shape, scan};
use crate::summary::{StepMarker, Steps};

/// A number as JSON wrote it: integer literals stay integers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub(crate) fn f(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
    pub(crate) fn is_int(self) -> bool {
        matches!(self, Num::Int(_))
    }
}

/// A JSON scalar used as a key (pid, tid, correlation, flow id, stream):
/// equality is type-sensitive, as in TraceLens (`"0"` is not `0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    Int(i64),
    Big(u64),
    Float(u64),
    Str(u32),
    Bool(bool),
    Null,
}

/// Event categories the tables care about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cat {
    CpuOp,
    Runtime,
    Driver,
    Kernel,
    Memcpy,
    Memset,
    Ac2g,
    PythonFunction,
    UserAnnotation,
    /// PyTorch 1.9-era `Kernel`, `Memcpy`, `Memset`, `Runtime`, `Operator`.
    LegacyKernel,
    LegacyMemcpy,
    LegacyMemset,
    LegacyRuntime,
    LegacyOperator,
    /// Older flow categories: `async` (PyTorch 1.9), `async_cpu_to_gpu` (2022-23).
    LegacyFlow,
    None,
    /// Another category with `user_annotation` in it (Kineto's
    /// `gpu_user_annotation`): TraceLens' annotation pass reads these too.
    OtherAnnotation,
    Other,
}

impl Cat {
    /// The modern category of a legacy one (TraceLens does not do this).
    pub(crate) fn modern(self) -> Cat {
        match self {
            Cat::LegacyKernel => Cat::Kernel,
            Cat::LegacyMemcpy => Cat::Memcpy,
            Cat::LegacyMemset => Cat::Memset,
            Cat::LegacyRuntime => Cat::Runtime,
            Cat::LegacyOperator => Cat::CpuOp,
            Cat::LegacyFlow => Cat::Ac2g,
            other => other,
        }
    }
    pub(crate) fn is_legacy(self) -> bool {
        self.modern() != self
    }
    pub(crate) fn is_gpu(self) -> bool {
        matches!(self, Cat::Kernel | Cat::Memcpy | Cat::Memset)
    }
    pub(crate) fn is_runtime(self) -> bool {
        matches!(self, Cat::Runtime | Cat::Driver)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub(crate) cat: Cat,
    pub(crate) ph: u8,
    pub(crate) name: u32,
    pub(crate) pid: Option<Key>,
    pub(crate) tid: Option<Key>,
    pub(crate) ts: Option<Num>,
    pub(crate) dur: Option<Num>,
    /// Flow id (`id`).
    pub(crate) id: Option<Key>,
    pub(crate) has_args: bool,
    pub(crate) correlation: Option<Key>,
    pub(crate) external_id: Option<Key>,
    pub(crate) stream: Option<Key>,
    /// TraceLens' UID: its 0-based index in the `traceEvents` list.
    pub(crate) uid: u32,
}

/// What a `cpu_op`'s `args` say of its inputs, each as Python's repr of
/// the value with lists made tuples (`((512,), (141, 512))`), interned, as
/// TraceLens' short-kernel study keys its rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ShapeArgs {
    /// `Input Dims`.
    pub(crate) dims: Option<u32>,
    /// `Input Strides`.
    pub(crate) strides: Option<u32>,
    /// `Concrete Inputs`.
    pub(crate) concrete: Option<u32>,
    /// `Input type`.
    pub(crate) types: Option<u32>,
    /// `Output type`.
    pub(crate) output_types: Option<u32>,
}

/// What the args of the `cpu_op` at `event` say of its inputs, if any
/// (the shapes are kept in event order).
pub(crate) fn shape_of(p: &Parsed, event: usize) -> Option<ShapeArgs> {
    let i = p.shapes.binary_search_by_key(&event, |(e, _)| *e).ok()?;
    Some(p.shapes[i].1)
}

/// A metadata event (`ph` `M`): `process_name`, `thread_name` (`args.name`)
/// or `process_labels` (`args.labels`), of a pid and tid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Meta {
    pub(crate) pid: Option<Key>,
    pub(crate) tid: Option<Key>,
    /// The event's name (`process_name`, ...), interned.
    pub(crate) name: u32,
    /// Its value, interned.
    pub(crate) value: u32,
}

/// What a collective kernel's `args` say of its call (PyTorch 2.x writes
/// them on NCCL/RCCL kernels, and on the CPU's `record_param_comms`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CollectiveArgs {
    /// `Collective name` (`allreduce`, `_allgather_base`, ...), interned.
    pub(crate) name: Option<u32>,
    /// `dtype` (`Float`, `BFloat16`, ...), interned.
    pub(crate) dtype: Option<u32>,
    /// `In msg nelems`.
    pub(crate) in_nelems: Option<u64>,
    /// `Out msg nelems`.
    pub(crate) out_nelems: Option<u64>,
    /// `Group size`: the ranks taking part.
    pub(crate) group_size: Option<u64>,
    /// `Process Group Name`, interned (a number as its text).
    pub(crate) pg_name: Option<u32>,
    /// `Process Group Ranks`, interned as written (Kineto writes the text
    /// `[0, 1]`; a JSON list as Python's tuple repr, as TraceLens takes it).
    pub(crate) pg_ranks: Option<u32>,
    /// `In split size`, as `pg_ranks`.
    pub(crate) in_split: Option<u32>,
    /// `Out split size`, as `pg_ranks`.
    pub(crate) out_split: Option<u32>,
}

/// A flow event (`ph` `s` or `f` of a flow category), kept apart from the
/// others: they are a third of a trace and only link launches to kernels.
#[derive(Debug, Clone)]
pub(crate) struct Flow {
    pub(crate) cat: Cat,
    pub(crate) ph: u8,
    pub(crate) id: Option<Key>,
    pub(crate) pid: Option<Key>,
    pub(crate) tid: Option<Key>,
}

/// The parsed trace.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    /// Events read (objects in `traceEvents`), flows included.
    pub(crate) read: usize,
    /// Every event but the flows.
    pub(crate) events: Vec<Event>,
    /// Flow events (`ac2g`, and the older `async` categories).
    pub(crate) flows: Vec<Flow>,
    pub(crate) strings: Vec<String>,
    pub(crate) lookup: FxHashMap<String, u32>,
    pub(crate) has_trace_events: bool,
    /// The top-level keys, each once, in order (at most [`MAX_KEYS`]):
    /// what a trace without `traceEvents` holds instead.
    pub(crate) keys: Vec<String>,
    /// Entries of the top-level `deviceProperties` list (Kineto writes one
    /// per GPU its process saw); `None` without such a list.
    pub(crate) devices: Option<usize>,
    /// The `name` of each `deviceProperties` entry that has one, in order.
    pub(crate) device_names: Vec<String>,
    /// The trace's JSON ended early, after this many bytes, with events
    /// complete before the cut (those are read; the partial one is not).
    pub(crate) truncated_at: Option<u64>,
    /// Where something other than whitespace follows the end of the
    /// trace's JSON document (what follows is not read).
    pub(crate) after_end: Option<u64>,
    /// The kernels whose args name a collective: `(index in events, what
    /// they say)`, in event order.
    pub(crate) collectives: Vec<(usize, CollectiveArgs)>,
    /// What the args of the event being read say of a collective, until
    /// it is kept (a kernel) or dropped.
    collective: Option<CollectiveArgs>,
    /// The `cpu_op`s whose args give their inputs' shapes: `(index in
    /// events, what they say)`, in event order.
    pub(crate) shapes: Vec<(usize, ShapeArgs)>,
    /// What the args of the event being read say of its inputs, until it
    /// is kept (a `cpu_op`) or dropped.
    shape: Option<ShapeArgs>,
    /// The metadata events' values, in file order.
    pub(crate) metadata: Vec<Meta>,
    /// The events whose args give a `Sequence number` (autograd's link of
    /// a forward op to its backward): `(index in events, number)`, in
    /// event order.
    pub(crate) sequences: Vec<(usize, i64)>,
    /// The `Sequence number` of the event being read, until it is kept.
    sequence: Option<i64>,
    /// `args.name` or `args.labels` of the event being read, until it is
    /// kept (a metadata event) or dropped.
    meta_value: Option<u32>,
    /// Elements of the `traceEvents` list read so far (the next one's UID).
    elements: u32,
    /// A buffer for [`TupleRepr`], kept between values.
    repr: String,
    /// The `traceEvents` list the events read are of (its ordinal).
    events_list: u32,
    /// `traceEvents` lists before the last one (a key given twice): their
    /// events are not read, as TraceLens (orjson keeps the last) does not.
    pub(crate) earlier_event_lists: u32,
}

impl Parsed {
    /// How many elements the (last) `traceEvents` list held: every event
    /// numbered, flows and metadata too (TraceLens' UIDs run to one less).
    pub(crate) fn elements(&self) -> u32 {
        self.elements
    }

    /// The steps the trace holds ([`Steps`]): its distinct
    /// `ProfilerStep#N` names (event names are interned, so each step's
    /// name is one string however many events carry it); without any, the
    /// `Optimizer.step#` annotations of the optimizer stepped most (a pass
    /// over the events, only for traces that name an optimizer step and no
    /// profiler step). `None` without either.
    pub(crate) fn steps(&self) -> Option<Steps> {
        let profiler = |s: &&String| {
            s.strip_prefix("ProfilerStep#")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        };
        let count = self.strings.iter().filter(profiler).count();
        if count > 0 {
            return Some(Steps { count, marker: StepMarker::ProfilerStep });
        }
        let optimizers: Vec<u32> = (0..self.strings.len() as u32)
            .filter(|&id| self.str(id).starts_with("Optimizer.step#"))
            .collect();
        if optimizers.is_empty() {
            return None;
        }
        let mut calls = vec![0usize; optimizers.len()];
        for e in &self.events {
            if e.cat == Cat::UserAnnotation
                && e.ph == b'X'
                && let Some(k) = optimizers.iter().position(|&id| id == e.name)
            {
                calls[k] += 1;
            }
        }
        let count = calls.into_iter().max().unwrap_or(0);
        (count > 0).then_some(Steps { count, marker: StepMarker::OptimizerStep })
    }

    /// The events of `traceEvents` list `n` are read from now on: those of
    /// an earlier one (a key given twice) are dropped, as orjson keeps the
    /// last.
    fn read_list(&mut self, n: u32) {
        if self.events_list > 0 {
            self.read = 0;
            self.events.clear();
            self.flows.clear();
            self.collectives.clear();
            self.shapes.clear();
            self.metadata.clear();
            self.sequences.clear();
            self.elements = 0;
        }
        self.earlier_event_lists = n.saturating_sub(1);
        self.events_list = n;
    }

    pub(crate) fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.lookup.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.to_string());
        self.lookup.insert(s.to_string(), id);
        id
    }
    pub(crate) fn str(&self, id: u32) -> &str {
        &self.strings[id as usize]
    }
    /// The id of `s`, if some event holds it.
    pub(crate) fn find(&self, s: &str) -> Option<u32> {
        self.lookup.get(s).copied()
    }
}

/// Parse a trace: the `traceEvents` elements are found in the stream by
/// the scanner ([`scan`]) on one thread, and deserialized from the buffer
/// they were read into on this one; everything else at the top level is
/// skipped.
pub(crate) fn parse<R: Read + Send>(reader: R) -> Result<Parsed, serde_json::Error> {
    parse_in_chunks(reader, CHUNK)
}

/// [`parse`], reading `chunk` bytes at a time (tests vary it).
fn parse_in_chunks<R: Read + Send>(reader: R, chunk: usize) -> Result<Parsed, serde_json::Error> {
    let mut parsed = Parsed::default();
    parsed.intern("");
    let scanned = scan(reader, chunk, Kineto::default(), |batch| read_events(batch, &mut parsed))?;
    if let Some(total) = scanned.truncated_at
        && parsed.read == 0
    {
        return Err(de::Error::custom(format!(
            "the trace ends after {total} bytes, before its JSON does (truncated?)"
        )));
    }
    // A last list that held no event: it is the one TraceLens reads.
    if scanned.shape.event_lists > parsed.events_list.max(1) {
        parsed.read_list(scanned.shape.event_lists);
    }
    parsed.has_trace_events = scanned.shape.has_trace_events;
    parsed.keys = scanned.shape.keys;
    parsed.devices = scanned.shape.devices;
    parsed.truncated_at = scanned.truncated_at;
    parsed.after_end = scanned.after_end;
    Ok(parsed)
}

/// A `deviceProperties` entry: only its name is read.
#[derive(serde::Deserialize)]
struct Device {
    #[serde(default)]
    name: Option<String>,
}

fn read_events(batch: &Batch<List>, parsed: &mut Parsed) -> Result<(), serde_json::Error> {
    let (Some(&(lo, ..)), Some(&(_, hi, _))) = (batch.elements.first(), batch.elements.last())
    else {
        return Ok(());
    };
    // Validate UTF-8 once (the sanitizer upstream makes it so): strings are
    // then read without checking each again.
    let text = simdutf8::basic::from_utf8(&batch.bytes[lo..hi]).ok();
    for &(s, e, list) in &batch.elements {
        if let List::Events(n) = list
            && n > parsed.events_list
        {
            parsed.read_list(n);
        }
        if list == List::Devices {
            // A GPU: its name, if it reads as one (nothing else depends on it).
            let device: Option<Device> = match text {
                Some(text) => serde_json::from_str(&text[s - lo..e - lo]).ok(),
                None => serde_json::from_slice(&batch.bytes[s..e]).ok(),
            };
            if let Some(name) = device.and_then(|d| d.name) {
                parsed.device_names.push(name);
            }
            continue;
        }
        let read = match text {
            Some(text) => EventSeed(parsed)
                .deserialize(&mut serde_json::Deserializer::from_str(&text[s - lo..e - lo])),
            None => EventSeed(parsed)
                .deserialize(&mut serde_json::Deserializer::from_slice(&batch.bytes[s..e])),
        };
        let read = read?;
        parsed.elements += 1;
        let collective = parsed.collective.take();
        let shape = parsed.shape.take();
        let meta_value = parsed.meta_value.take();
        let sequence = parsed.sequence.take();
        if let Some(ev) = read {
            parsed.read += 1;
            if let Some(n) = sequence
                && !(matches!(ev.cat, Cat::Ac2g | Cat::LegacyFlow)
                    && (ev.ph == b's' || ev.ph == b'f'))
            {
                parsed.sequences.push((parsed.events.len(), n));
            }
            if let Some(value) = meta_value
                && ev.ph == b'M'
            {
                parsed.metadata.push(Meta { pid: ev.pid, tid: ev.tid, name: ev.name, value });
            }
            if let Some(args) = shape
                && ev.cat == Cat::CpuOp
            {
                parsed.shapes.push((parsed.events.len(), args));
            }
            if let Some(args) = collective
                && ev.cat == Cat::Kernel
            {
                parsed.collectives.push((parsed.events.len(), args));
            }
            if matches!(ev.cat, Cat::Ac2g | Cat::LegacyFlow) && (ev.ph == b's' || ev.ph == b'f') {
                let Event { cat, ph, id, pid, tid, .. } = ev;
                parsed.flows.push(Flow { cat, ph, id, pid, tid });
            } else {
                parsed.events.push(ev);
            }
        }
    }
    Ok(())
}

/// The top-level lists Kineto's shape looks into; the tag of the elements
/// it finds in them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum List {
    /// `traceEvents`: each object element is an event; the list's ordinal
    /// among the top level's `traceEvents` lists (a key given twice: orjson,
    /// and so TraceLens, keeps the last).
    Events(u32),
    /// `deviceProperties`: each object element is a GPU.
    Devices,
}

impl List {
    fn of_key(key: &[u8]) -> Option<List> {
        match key {
            b"traceEvents" => Some(List::Events(0)),
            b"deviceProperties" => Some(List::Devices),
            _ => None,
        }
    }
}

/// Where a Kineto trace's events are: the objects of the top-level
/// `traceEvents` list. Only the top level's keys matter.
#[derive(Default)]
struct Kineto {
    /// The list whose key and `:` were just seen at the top level.
    pending: Option<List>,
    /// The list being read (level 2).
    inside: Option<List>,
    /// Objects opened in the deviceProperties list.
    devices: Option<usize>,
    has_trace_events: bool,
    /// The top-level keys ([`Parsed::keys`]).
    keys: Vec<String>,
    /// `traceEvents` lists opened at the top level.
    event_lists: u32,
}

/// How many top-level keys are kept ([`Parsed::keys`]).
const MAX_KEYS: usize = 32;

impl Shape for Kineto {
    type Tag = List;

    #[inline(always)]
    fn open(&mut self, depth: usize, b: u8) -> Result<Option<List>, serde_json::Error> {
        match (depth, b) {
            (2, b'[') => {
                self.inside = self.pending.take();
                if self.inside == Some(List::Devices) {
                    self.devices = Some(0);
                }
                if self.inside == Some(List::Events(0)) {
                    self.event_lists += 1;
                    self.inside = Some(List::Events(self.event_lists));
                }
            }
            (2, _) => self.pending = None,
            (3, b'{') => match self.inside {
                Some(List::Events(n)) => return Ok(Some(List::Events(n))),
                Some(List::Devices) => {
                    self.devices = self.devices.map(|n| n + 1);
                    return Ok(Some(List::Devices));
                }
                None => {}
            },
            _ => {}
        }
        Ok(None)
    }

    #[inline(always)]
    fn close(&mut self, depth: usize) -> Option<List> {
        if depth == 2 {
            self.inside = None;
            self.pending = None;
        }
        None
    }

    #[inline(always)]
    fn keyed(&self, depth: usize) -> bool {
        depth == 1
    }

    fn key(&mut self, key: &[u8]) {
        self.pending = List::of_key(key);
        self.has_trace_events |= self.pending == Some(List::Events(0));
        if self.keys.len() < MAX_KEYS {
            let key = crate::scan::key_text(key);
            if !self.keys.contains(&key) {
                self.keys.push(key);
            }
        }
    }

    fn comma(&mut self) {
        self.pending = None;
    }
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Field {
    Cat,
    Ph,
    Name,
    Pid,
    Tid,
    Ts,
    Dur,
    Id,
    Args,
    Correlation,
    ExternalId,
    Stream,
    CollectiveName,
    Dtype,
    InNelems,
    OutNelems,
    GroupSize,
    PgName,
    PgRanks,
    InSplit,
    OutSplit,
    InputDims,
    InputStrides,
    ConcreteInputs,
    InputType,
    OutputType,
    SequenceNumber,
    Labels,
    Other,
}

struct KeyName;

impl<'de> DeserializeSeed<'de> for KeyName {
    type Value = Field;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Field, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyName {
    type Value = Field;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Field, E> {
        Ok(match v {
            "cat" => Field::Cat,
            "ph" => Field::Ph,
            "name" => Field::Name,
            "pid" => Field::Pid,
            "tid" => Field::Tid,
            "ts" => Field::Ts,
            "dur" => Field::Dur,
            "id" => Field::Id,
            "args" => Field::Args,
            "correlation" => Field::Correlation,
            "External id" => Field::ExternalId,
            "stream" => Field::Stream,
            "Collective name" => Field::CollectiveName,
            "dtype" => Field::Dtype,
            "In msg nelems" => Field::InNelems,
            "Out msg nelems" => Field::OutNelems,
            "Group size" => Field::GroupSize,
            "Process Group Name" => Field::PgName,
            "Process Group Ranks" => Field::PgRanks,
            "In split size" => Field::InSplit,
            "Out split size" => Field::OutSplit,
            "Input Dims" => Field::InputDims,
            "Input Strides" => Field::InputStrides,
            "Concrete Inputs" => Field::ConcreteInputs,
            "Input type" => Field::InputType,
            "Output type" => Field::OutputType,
            "Sequence number" => Field::SequenceNumber,
            "labels" => Field::Labels,
            _ => Field::Other,
        })
    }
}

struct EventSeed<'a>(&'a mut Parsed);

impl<'de> DeserializeSeed<'de> for EventSeed<'_> {
    type Value = Option<Event>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Event>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EventSeed<'_> {
    type Value = Option<Event>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event")
    }
    // Non-object elements are kept as nothing (TraceLens would choke; we skip).
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Event>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Option<Event>, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Option<Event>, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Option<Event>, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<Event>, E> {
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<Event>, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<Event>, E> {
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Event>, A::Error> {
        let p = self.0;
        let mut e = Event {
            cat: Cat::None,
            ph: 0,
            name: 0,
            pid: None,
            tid: None,
            ts: None,
            dur: None,
            id: None,
            has_args: false,
            correlation: None,
            external_id: None,
            stream: None,
            uid: p.elements,
        };
        while let Some(key) = map.next_key_seed(KeyName)? {
            match key {
                Field::Cat => {
                    if let Some(cat) = map.next_value_seed(CatSeed)? {
                        e.cat = cat;
                    }
                }
                Field::Ph => e.ph = map.next_value_seed(PhSeed)?.unwrap_or(0),
                Field::Name => e.name = map.next_value_seed(StrSeed(p))?.unwrap_or(0),
                Field::Pid => e.pid = map.next_value_seed(KeySeed(p))?,
                Field::Tid => e.tid = map.next_value_seed(KeySeed(p))?,
                Field::Id => e.id = map.next_value_seed(KeySeed(p))?,
                Field::Ts => e.ts = map.next_value_seed(NumSeed)?,
                Field::Dur => e.dur = map.next_value_seed(NumSeed)?,
                Field::Args => {
                    e.has_args = true;
                    map.next_value_seed(ArgsSeed { p, e: &mut e })?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(e))
    }
}

struct ArgsSeed<'a, 'b> {
    p: &'a mut Parsed,
    e: &'b mut Event,
}

impl<'de> DeserializeSeed<'de> for ArgsSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ArgsSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("event args")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key_seed(KeyName)? {
            match key {
                Field::Correlation => self.e.correlation = map.next_value_seed(KeySeed(self.p))?,
                Field::ExternalId => self.e.external_id = map.next_value_seed(KeySeed(self.p))?,
                Field::Stream => self.e.stream = map.next_value_seed(KeySeed(self.p))?,
                Field::CollectiveName | Field::Dtype => {
                    let text = map.next_value_seed(StrSeed(self.p))?;
                    let args = self.p.collective.get_or_insert_default();
                    match key {
                        Field::CollectiveName => args.name = text,
                        _ => args.dtype = text,
                    }
                }
                Field::PgName | Field::PgRanks | Field::InSplit | Field::OutSplit => {
                    let text = map.next_value_seed(ReprSeed(self.p))?;
                    let args = self.p.collective.get_or_insert_default();
                    match key {
                        Field::PgName => args.pg_name = text,
                        Field::PgRanks => args.pg_ranks = text,
                        Field::InSplit => args.in_split = text,
                        _ => args.out_split = text,
                    }
                }
                Field::SequenceNumber => {
                    if let Some(Num::Int(n)) = map.next_value_seed(NumSeed)? {
                        self.p.sequence = Some(n);
                    }
                }
                Field::InputDims
                | Field::InputStrides
                | Field::ConcreteInputs
                | Field::InputType
                | Field::OutputType => {
                    let mut repr = std::mem::take(&mut self.p.repr);
                    repr.clear();
                    map.next_value_seed(TupleRepr(&mut repr))?;
                    let text = self.p.intern(&repr);
                    self.p.repr = repr;
                    let args = self.p.shape.get_or_insert_default();
                    match key {
                        Field::InputDims => args.dims = Some(text),
                        Field::InputStrides => args.strides = Some(text),
                        Field::InputType => args.types = Some(text),
                        Field::OutputType => args.output_types = Some(text),
                        _ => args.concrete = Some(text),
                    }
                }
                // A metadata event's value (`process_name` and
                // `thread_name` say it as `name`, `process_labels` as
                // `labels`).
                Field::Name | Field::Labels => {
                    if let Some(text) = map.next_value_seed(StrSeed(self.p))? {
                        self.p.meta_value = Some(text);
                    }
                }
                Field::InNelems | Field::OutNelems | Field::GroupSize => {
                    let n = match map.next_value_seed(NumSeed)? {
                        Some(Num::Int(n)) => u64::try_from(n).ok(),
                        _ => None,
                    };
                    let args = self.p.collective.get_or_insert_default();
                    match key {
                        Field::InNelems => args.in_nelems = n,
                        Field::OutNelems => args.out_nelems = n,
                        _ => args.group_size = n,
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.e.has_args = false;
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.e.has_args = false;
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
}

/// A string value, interned; non-strings give `None`.
/// A value as Python prints what `json.loads` (orjson) made of it, the
/// way TraceLens' collective tables print it: text as it is, a number as
/// its repr, a list as a tuple (`(0, 1)`, `(5,)`); `None` for null, a bool
/// or an object (not seen in these args).
struct ReprSeed<'a>(&'a mut Parsed);

impl<'de> DeserializeSeed<'de> for ReprSeed<'_> {
    type Value = Option<u32>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<u32>, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        let text = match &value {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(_) => python_repr(&value),
            serde_json::Value::Array(items) => {
                let items: Vec<String> = items.iter().map(python_repr).collect();
                match items.len() {
                    1 => format!("({},)", items[0]),
                    _ => format!("({})", items.join(", ")),
                }
            }
            _ => return Ok(None),
        };
        Ok(Some(self.0.intern(&text)))
    }
}

/// Python's repr of a JSON value as `json.loads` gives it.
fn python_repr(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => "None".into(),
        serde_json::Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (None, Some(u), _) => u.to_string(),
            (None, None, Some(f)) => crate::csv::py_float(f),
            _ => n.to_string(),
        },
        serde_json::Value::String(s) => py_str_repr(s),
        serde_json::Value::Array(items) => {
            format!("[{}]", items.iter().map(python_repr).collect::<Vec<_>>().join(", "))
        }
        serde_json::Value::Object(_) => value.to_string(),
    }
}

/// Python's repr of a JSON value as TraceLens makes it a key, written
/// into the buffer as it is read: lists become tuples, all the way down
/// (`[[512], []]` is `((512,), ())`).
struct TupleRepr<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for TupleRepr<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TupleRepr<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let out = self.0;
        out.push('(');
        let mut n = 0;
        loop {
            if n > 0 {
                // Peek by reading: a separator is only written before an
                // element that is there.
                let mark = out.len();
                out.push_str(", ");
                if seq.next_element_seed(TupleRepr(&mut *out))?.is_none() {
                    out.truncate(mark);
                    break;
                }
            } else if seq.next_element_seed(TupleRepr(&mut *out))?.is_none() {
                break;
            }
            n += 1;
        }
        if n == 1 {
            out.push(',');
        }
        out.push(')');
        Ok(())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.0.push_str(&py_str_repr(v));
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        use std::fmt::Write as _;
        let _ = write!(self.0, "{v}");
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        use std::fmt::Write as _;
        let _ = write!(self.0, "{v}");
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.0.push_str(&crate::csv::py_float(v));
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.0.push_str(if v { "True" } else { "False" });
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.0.push_str("None");
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let value = serde_json::Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
        self.0.push_str(&python_repr(&value));
        Ok(())
    }
}

/// Python's `repr` of a string: single quotes unless it holds one and no
/// double quote; backslashes, the quote and control characters escaped.
pub(crate) fn py_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

struct StrSeed<'a>(&'a mut Parsed);

impl<'de> DeserializeSeed<'de> for StrSeed<'_> {
    type Value = Option<u32>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<u32>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrSeed<'_> {
    type Value = Option<u32>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<u32>, E> {
        Ok(Some(self.0.intern(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<u32>, E> {
        Ok(Some(self.0.intern(&v.to_string())))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<u32>, E> {
        Ok(Some(self.0.intern(&v.to_string())))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<u32>, E> {
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<u32>, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<u32>, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<u32>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<u32>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

struct KeySeed<'a>(&'a mut Parsed);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Option<Key>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Key>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Option<Key>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<Key>, E> {
        Ok(Some(Key::Str(self.0.intern(v))))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<Key>, E> {
        Ok(Some(Key::Int(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<Key>, E> {
        Ok(Some(i64::try_from(v).map_or(Key::Big(v), Key::Int)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Option<Key>, E> {
        Ok(Some(Key::Float(v.to_bits())))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Option<Key>, E> {
        Ok(Some(Key::Bool(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<Key>, E> {
        Ok(Some(Key::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Key>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Key>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

struct NumSeed;

impl<'de> DeserializeSeed<'de> for NumSeed {
    type Value = Option<Num>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Num>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NumSeed {
    type Value = Option<Num>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<Num>, E> {
        Ok(Some(Num::Int(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<Num>, E> {
        Ok(Some(i64::try_from(v).map_or(Num::Float(v as f64), Num::Int)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Option<Num>, E> {
        Ok(Some(Num::Float(v)))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Option<Num>, E> {
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<Num>, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<Num>, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Num>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Num>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// `cat`, matched without allocating.
struct CatSeed;

impl<'de> DeserializeSeed<'de> for CatSeed {
    type Value = Option<Cat>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Cat>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CatSeed {
    type Value = Option<Cat>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a category")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<Cat>, E> {
        Ok(Some(match v {
            "cpu_op" => Cat::CpuOp,
            "cuda_runtime" => Cat::Runtime,
            "cuda_driver" => Cat::Driver,
            "kernel" => Cat::Kernel,
            "gpu_memcpy" => Cat::Memcpy,
            "gpu_memset" => Cat::Memset,
            "ac2g" => Cat::Ac2g,
            "python_function" => Cat::PythonFunction,
            "user_annotation" => Cat::UserAnnotation,
            "Kernel" => Cat::LegacyKernel,
            "Memcpy" => Cat::LegacyMemcpy,
            "Memset" => Cat::LegacyMemset,
            "Runtime" => Cat::LegacyRuntime,
            "Operator" => Cat::LegacyOperator,
            "async" | "async_cpu_to_gpu" => Cat::LegacyFlow,
            v if v.contains("user_annotation") => Cat::OtherAnnotation,
            _ => Cat::Other,
        }))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Option<Cat>, E> {
        Ok(Some(Cat::Other))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Option<Cat>, E> {
        Ok(Some(Cat::Other))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<Cat>, E> {
        Ok(Some(Cat::Other))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<Cat>, E> {
        Ok(Some(Cat::Other))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<Cat>, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Cat>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Some(Cat::Other))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Cat>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Some(Cat::Other))
    }
}

/// `ph`: its first byte.
struct PhSeed;

impl<'de> DeserializeSeed<'de> for PhSeed {
    type Value = Option<u8>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<u8>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PhSeed {
    type Value = Option<u8>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a phase")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<u8>, E> {
        Ok(v.bytes().next())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Option<u8>, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Option<u8>, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<u8>, E> {
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<u8>, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<u8>, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<u8>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<u8>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Args become the Python reprs TraceLens keys its tables on: lists as
    /// tuples all the way down, strings quoted as Python quotes them.
    #[test]
    fn args_read_as_python_tuple_reprs() {
        let repr = |json: &str| {
            let mut out = String::new();
            TupleRepr(&mut out).deserialize(&mut serde_json::Deserializer::from_str(json)).unwrap();
            out
        };
        assert_eq!(
            repr("[[512], [141, 512], [512, 512], [], []]"),
            "((512,), (141, 512), (512, 512), (), ())"
        );
        assert_eq!(repr(r#"["", "", "", "1", "1"]"#), "('', '', '', '1', '1')");
        assert_eq!(repr(r#"["c10::BFloat16", "Scalar"]"#), "('c10::BFloat16', 'Scalar')");
        assert_eq!(repr(r#"["it's", "a \"b\"", "tab\t"]"#), r#"("it's", 'a "b"', 'tab\t')"#);
        assert_eq!(repr("[1.5, 2.0, 1e-05, null, true]"), "(1.5, 2.0, 1e-05, None, True)");
        assert_eq!(repr("[]"), "()");
        assert_eq!(repr("7"), "7");
    }

    /// A trace whose events hide brackets, quotes and backslashes in
    /// strings and nest objects and arrays, shifted by `pad` bytes so that
    /// every construct meets every 64-byte block boundary.
    fn tricky_trace(pad: usize, events: usize) -> String {
        let mut t = format!(
            r#"{{"schemaVersion": 1, "pad": "{}", "deviceProperties": [{{"id": 0, "name": "[{{x}}]"}}],"#,
            " ".repeat(pad)
        );
        t.push_str("\n  \"traceEvents\": [\n");
        for i in 0..events {
            let name = match i % 6 {
                0 => format!("aten::mm_{i}"),
                1 => format!(r#"quote \" and ] and }} {i}"#),
                2 => format!(r#"backslash \\ then \" [{{ {i}"#),
                3 => format!(r#"\\\\\" {i}"#),
                4 => format!("unicode é ∑ 🙂 {i} {}", "w".repeat(i % 70)),
                _ => format!(r#"\u005b\u007d {i}"#),
            };
            let sep = if i + 1 == events { "" } else { "," };
            t.push_str(&format!(
                r#"    {{"ph": "X", "cat": "cpu_op", "name": "{name}", "pid": {i}, "tid": 1, "ts": {i}, "dur": 1, "args": {{"Input Dims": [[1, 2], [3]], "s": "{{[\"]}}", "n": {{"a": [{{}}]}}}}}}{sep}
"#
            ));
        }
        t.push_str(r#"  ], "traceName": "]}", "after": [{"x": "{"}]}"#);
        t
    }

    #[test]
    fn events_are_found_whatever_the_block_and_read_boundaries() {
        for pad in [0, 1, 7, 31, 63] {
            let trace = tricky_trace(pad, 40);
            let reference: serde_json::Value = serde_json::from_str(&trace).unwrap();
            let expected: Vec<String> = reference["traceEvents"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["name"].as_str().unwrap().to_string())
                .collect();
            for chunk in [1, 5, 64, 100, 1000, 1 << 20] {
                let parsed = parse_in_chunks(trace.as_bytes(), chunk).unwrap();
                let names: Vec<&str> = parsed.events.iter().map(|e| parsed.str(e.name)).collect();
                assert_eq!(names, expected, "pad {pad}, chunk {chunk}");
                assert!(parsed.has_trace_events);
                // The top level's keys, as a whole-document parse has them.
                let keys: Vec<&String> = reference.as_object().unwrap().keys().collect();
                let mut found: Vec<&String> = parsed.keys.iter().collect();
                found.sort();
                assert_eq!(found, keys, "pad {pad}, chunk {chunk}");
            }
        }
    }

    #[test]
    fn a_truncated_trace_keeps_the_events_complete_before_the_cut() {
        let trace = tricky_trace(3, 5);
        let complete: serde_json::Value = serde_json::from_str(&trace).unwrap();
        let names: Vec<&str> = complete["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        // Where each event ends in the text: a cut just before an event's
        // closing brace loses it, a cut just after keeps it.
        let ends: Vec<usize> = trace.match_indices("{}]}}}").map(|(at, m)| at + m.len()).collect();
        assert_eq!(ends.len(), names.len());
        for chunk in [1, 7, 64, 1 << 20] {
            for (i, &end) in ends.iter().enumerate() {
                for (cut, kept) in [(end - 1, i), (end, i + 1), (end + 1, i + 1)] {
                    let read = parse_in_chunks(&trace.as_bytes()[..cut], chunk);
                    if kept == 0 {
                        // Nothing before the cut: an error, as before.
                        assert!(read.is_err(), "cut {cut}, chunk {chunk}");
                        continue;
                    }
                    let parsed = read.unwrap();
                    let got: Vec<&str> = parsed.events.iter().map(|e| parsed.str(e.name)).collect();
                    assert_eq!(got, names[..kept], "cut {cut}, chunk {chunk}");
                    assert_eq!(parsed.truncated_at, Some(cut as u64));
                }
            }
            // Cut in the metadata after the events: every event, still truncated.
            let cut = trace.len() - 10;
            let parsed = parse_in_chunks(&trace.as_bytes()[..cut], chunk).unwrap();
            assert_eq!(parsed.events.len(), names.len());
            assert_eq!(parsed.truncated_at, Some(cut as u64));
            // The whole trace is not truncated.
            assert_eq!(parse_in_chunks(trace.as_bytes(), chunk).unwrap().truncated_at, None);
        }
    }

    #[test]
    fn truncated_before_any_event_and_unbalanced_traces_are_errors() {
        let trace = tricky_trace(3, 5);
        // Up to the first event's closing brace, not included.
        let first_end = trace.find("{}]}}}").unwrap() + "{}]}}".len();
        for cut in [10, first_end] {
            let err = parse_in_chunks(&trace.as_bytes()[..cut], 64).unwrap_err();
            assert!(err.to_string().contains("truncated"), "{cut}: {err}");
        }
        assert!(parse_in_chunks(&b"[1, 2]"[..], 64).is_err());
        assert!(parse_in_chunks(&b"]"[..], 64).is_err());
        // A bracket closing the other kind throws the levels off: refused,
        // wherever it stands, not read as the document's end.
        for text in [
            r#"{"traceEvents": [{"ph": "X", "args": {"a": [1}}]}, "x": 1}"#,
            r#"{"meta": {"a": 1], "traceEvents": [{"ph": "X"}]}"#,
        ] {
            for chunk in [1, 64] {
                let err = parse_in_chunks(text.as_bytes(), chunk).err().unwrap().to_string();
                assert!(err.contains("closes a"), "{text}: {err}");
            }
        }
    }

    /// Where keys matter, a key without its `:` (or a `:` after a value)
    /// would move them onto the wrong values: refused, not read as a trace
    /// without events.
    #[test]
    fn a_key_without_its_colon_where_keys_matter_is_refused() {
        for (text, said) in [
            (r#"{"traceEvents", [{"ph": "X"}]}"#, "`,` after a key"),
            (r#"{"schemaVersion" }"#, "`}` after a key"),
            (r#"{"a": "b": [], "traceEvents": [{"ph": "X"}]}"#, "`:` after no key"),
        ] {
            for chunk in [1, 64] {
                let err = parse_in_chunks(text.as_bytes(), chunk).err().unwrap().to_string();
                assert!(err.contains(said), "{text}: {err}");
            }
        }
        // Below the levels whose keys matter, the shape does not look.
        let text = r#"{"x": {"a" "b", "c"}, "traceEvents": [{"ph": "X"}]}"#;
        assert_eq!(parse_in_chunks(text.as_bytes(), 64).unwrap().read, 1);
    }

    #[test]
    fn a_key_with_an_escape_is_not_the_key_it_spells_without() {
        let text = r#"{"trace\"Events": [{"ph": "X", "name": "a"}], "traceEvents": [{"ph": "X", "name": "b"}]}"#;
        for chunk in [1, 5, 64] {
            let parsed = parse_in_chunks(text.as_bytes(), chunk).unwrap();
            let names: Vec<&str> = parsed.events.iter().map(|e| parsed.str(e.name)).collect();
            assert_eq!(names, ["b"], "chunk {chunk}");
        }
    }

    #[test]
    fn what_follows_the_document_is_found_and_not_read() {
        let trace = tricky_trace(3, 5);
        for after in ["}", "\n{\"traceEvents\": [{\"ph\": \"X\"}]}", "\nW1130 done", "\0\0", " ]"] {
            let text = format!("{trace} \n{after}");
            let at = trace.len() + 2 + after.len() - after.trim_start().len();
            for chunk in [1, 7, 64, 1 << 20] {
                let parsed = parse_in_chunks(text.as_bytes(), chunk).unwrap();
                assert_eq!(parsed.after_end, Some(at as u64), "{after:?}, chunk {chunk}");
                assert_eq!(parsed.read, 5, "only the document's events: {after:?}");
            }
        }
        assert_eq!(
            parse_in_chunks(format!("{trace} \r\n\t").as_bytes(), 3).unwrap().after_end,
            None
        );
    }

    #[test]
    fn device_properties_are_counted_wherever_they_stand() {
        let devices = |text: &str| {
            let counts: Vec<_> = [1, 3, 64, 1 << 20]
                .iter()
                .map(|&c| parse_in_chunks(text.as_bytes(), c).unwrap().devices)
                .collect();
            assert!(counts.windows(2).all(|w| w[0] == w[1]), "{text}: {counts:?}");
            counts[0]
        };
        let gpu = r#"{"id": 0, "name": "AMD Instinct MI300X", "computeMajor": 9, "x": [{"y": 1}]}"#;
        assert_eq!(
            devices(&format!(r#"{{"deviceProperties": [{gpu}, {gpu}], "traceEvents": [{{}}]}}"#)),
            Some(2)
        );
        // Kineto's CPU-only trace; and the list after the events.
        assert_eq!(
            devices(r#"{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [{}]}"#),
            Some(0)
        );
        assert_eq!(
            devices(&format!(
                r#"{{"traceEvents": [{{"args": {{"deviceProperties": [{gpu}]}}}}], "deviceProperties": [{gpu}]}}"#
            )),
            Some(1)
        );
        // None without the list; a key of that name deeper down is not it.
        assert_eq!(devices(r#"{"traceEvents": [{"deviceProperties": [{}]}]}"#), None);
        assert_eq!(devices(r#"{"deviceProperties": 0, "traceEvents": [{}]}"#), None);
    }

    #[test]
    fn device_names_are_read_and_odd_ones_skipped() {
        let text = r#"{"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "x": {"name": "no"}},
            {"id": 1, "name": 5}, {"id": 2}, {"name": "NVIDIA H100 80GB HBM3"}],
            "traceEvents": [{"name": "not a device"}]}"#;
        for chunk in [1, 7, 1 << 20] {
            let parsed = parse_in_chunks(text.as_bytes(), chunk).unwrap();
            assert_eq!(parsed.device_names, ["NVIDIA H100 80GB HBM3"; 2], "{chunk}");
            assert_eq!((parsed.devices, parsed.read), (Some(4), 1));
        }
    }

    #[test]
    fn what_is_not_a_trace_is_named() {
        let message = |bytes: &[u8], chunk| parse_in_chunks(bytes, chunk).unwrap_err().to_string();
        for chunk in [1, 64] {
            assert_eq!(message(b"", chunk), "the trace is empty (0 bytes)");
            assert_eq!(message(b" \n ", chunk), "no JSON object in the trace's 3 bytes");
            assert_eq!(
                message(b"  step 1 loss 0.5", chunk),
                "not JSON: 's' at offset 2, where the trace's object should start"
            );
            // What reaches the scanner is sanitized: U+FFFD for a stray byte.
            assert_eq!(
                message("\u{fffd}\u{fffd}".as_bytes(), chunk),
                "not JSON: binary data where the trace's object should start"
            );
            assert_eq!(
                message(br#"{"traceEvents": [{"ph": "X""#, chunk),
                "the trace ends after 27 bytes, before its JSON does (truncated?)"
            );
        }
        // A byte order mark and leading whitespace are fine.
        let parsed = parse_in_chunks("\u{feff} \n{\"traceEvents\": [{}]}".as_bytes(), 2).unwrap();
        assert_eq!(parsed.read, 1);
    }

    /// Every number of a trace is the double CPython's `float()` reads from
    /// its text (TraceLens reads through orjson, which rounds correctly too):
    /// 17-digit decimals as Python writes them, timestamps of a node up for
    /// months (3 decimals past 2^53), exponents, subnormals, negative zero.
    mod numbers {
        use std::io::Write as _;

        use proptest::prelude::*;

        use super::*;

        fn digits(n: usize) -> impl Strategy<Value = String> {
            proptest::collection::vec(0u8..10, n)
                .prop_map(|d| d.into_iter().map(|d| char::from(b'0' + d)).collect())
        }

        /// A JSON number's text, of the kinds real traces hold and the edges
        /// of the double.
        fn number() -> impl Strategy<Value = String> {
            let sign = prop_oneof![Just(""), Just("-")];
            prop_oneof![
                // 17 significant digits, the point anywhere (Python's repr).
                (sign.clone(), 1u8..10, digits(16), 0usize..16).prop_map(|(s, lead, rest, at)| {
                    let all = format!("{lead}{rest}");
                    format!("{s}{}.{}", &all[..=at], &all[at + 1..])
                }),
                // Kineto's microsecond timestamps, 3 decimals, 1e12..1e16.
                (1_000_000_000_000u64..10_000_000_000_000_000, digits(3))
                    .prop_map(|(int, frac)| format!("{int}.{frac}")),
                // Exponents, with a mantissa of up to 20 digits.
                (sign.clone(), 1u8..10, digits(19), 0usize..20, -330i32..308, 0u8..3).prop_map(
                    |(s, lead, rest, keep, exp, style)| {
                        let e = if exp < 0 { "e" } else { ["e", "E", "e+"][style as usize] };
                        let point = if keep == 0 { "" } else { "." };
                        format!("{s}{lead}{point}{}{e}{exp}", &rest[..keep])
                    }
                ),
                // Near the top and the bottom of the double, and zeros.
                prop_oneof![
                    Just("-0.0".to_string()),
                    Just("-0.0e0".to_string()),
                    Just("0.0".to_string()),
                    Just("4.9406564584124654e-324".to_string()),
                    Just("2.4703282292062328e-324".to_string()),
                    Just("1.7976931348623157e308".to_string()),
                    Just("2.2250738585072011e-308".to_string()),
                    Just("9007199254740993".to_string()),
                    Just("44.096000000000004".to_string()),
                    Just("9072000000000.123".to_string()),
                ],
                // Integers, beyond 64 bits too.
                (sign, 1u8..10, digits(24), 0usize..25)
                    .prop_map(|(s, lead, rest, keep)| format!("{s}{lead}{}", &rest[..keep])),
            ]
        }

        /// CPython's doubles for `texts`, as bit patterns.
        fn cpython(texts: &[String]) -> Vec<u64> {
            #[allow(clippy::disallowed_methods, reason = "a test calling the reference")]
            let mut child = std::process::Command::new("python3")
                .args([
                    "-c",
                    "import struct,sys\nfor l in sys.stdin:\n    \
                     print(struct.unpack('<Q', struct.pack('<d', float(l)))[0])",
                ])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("python3 runs (the reference for number parsing)");
            let mut stdin = child.stdin.take().unwrap();
            for t in texts {
                writeln!(stdin, "{t}").unwrap();
            }
            drop(stdin);
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap().lines().map(|l| l.parse().unwrap()).collect()
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(24))]
            #[test]
            fn numbers_are_the_doubles_cpython_reads(
                ts in proptest::collection::vec(number(), 1..400),
                dur in proptest::collection::vec(number(), 400),
            ) {
                let mut trace = String::from(r#"{"traceEvents": ["#);
                for (i, (t, d)) in ts.iter().zip(&dur).enumerate() {
                    let sep = if i == 0 { "" } else { "," };
                    trace.push_str(&format!(
                        r#"{sep}{{"ph": "X", "cat": "kernel", "name": "k", "ts": {t}, "dur": {d}}}"#
                    ));
                }
                trace.push_str("]}");
                let parsed = parse(trace.as_bytes()).unwrap();
                prop_assert_eq!(parsed.events.len(), ts.len());
                let texts: Vec<String> = ts.iter().chain(&dur[..ts.len()]).cloned().collect();
                let want = cpython(&texts);
                let got = parsed
                    .events
                    .iter()
                    .map(|e| e.ts)
                    .chain(parsed.events.iter().map(|e| e.dur))
                    .map(|n| n.unwrap().f().to_bits());
                for ((text, want), got) in texts.iter().zip(want).zip(got) {
                    prop_assert_eq!(
                        got, want, "{}: ours {:?}, CPython's {:?}",
                        text, f64::from_bits(got), f64::from_bits(want)
                    );
                }
            }
        }
    }
}

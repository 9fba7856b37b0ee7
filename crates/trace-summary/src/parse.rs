//! One streaming pass over a Kineto trace into compact events: no DOM, only
//! the fields the tables use; strings are interned as they are read.

use std::{collections::HashMap, fmt, io::Read};

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

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
    None,
    Other,
}

impl Cat {
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
    /// Raw `cat` string id (for legacy detection).
    pub(crate) cat_name: Option<u32>,
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
}

/// The parsed trace.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub(crate) events: Vec<Event>,
    pub(crate) strings: Vec<String>,
    pub(crate) lookup: HashMap<String, u32>,
    pub(crate) has_trace_events: bool,
}

impl Parsed {
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
}

pub(crate) fn parse<R: Read>(reader: R) -> Result<Parsed, serde_json::Error> {
    let mut parsed = Parsed::default();
    parsed.intern("");
    let mut de = serde_json::Deserializer::from_reader(reader);
    TopSeed(&mut parsed).deserialize(&mut de)?;
    de.end()?;
    Ok(parsed)
}

struct TopSeed<'a>(&'a mut Parsed);

impl<'de> DeserializeSeed<'de> for TopSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Chrome trace object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key_seed(KeyName)? {
            if key == Field::TraceEvents {
                self.0.has_trace_events = true;
                map.next_value_seed(EventsSeed(self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Field {
    TraceEvents,
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
            "traceEvents" => Field::TraceEvents,
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
            _ => Field::Other,
        })
    }
}

struct EventsSeed<'a>(&'a mut Parsed);

impl<'de> DeserializeSeed<'de> for EventsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EventsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the traceEvents array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(event) = seq.next_element_seed(EventSeed(self.0))? {
            if let Some(e) = event {
                self.0.events.push(e);
            }
        }
        Ok(())
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
            cat_name: None,
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
        };
        while let Some(key) = map.next_key_seed(KeyName)? {
            match key {
                Field::Cat => {
                    if let Some(id) = map.next_value_seed(StrSeed(p))? {
                        e.cat_name = Some(id);
                        e.cat = match p.str(id) {
                            "cpu_op" => Cat::CpuOp,
                            "cuda_runtime" => Cat::Runtime,
                            "cuda_driver" => Cat::Driver,
                            "kernel" => Cat::Kernel,
                            "gpu_memcpy" => Cat::Memcpy,
                            "gpu_memset" => Cat::Memset,
                            "ac2g" => Cat::Ac2g,
                            "python_function" => Cat::PythonFunction,
                            _ => Cat::Other,
                        };
                    }
                }
                Field::Ph => {
                    if let Some(id) = map.next_value_seed(StrSeed(p))? {
                        e.ph = p.str(id).bytes().next().unwrap_or(0);
                    }
                }
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

//! Trimming a real trace to the fixture size cap while keeping it valid and
//! consistent: a time window from the first profiler step (Kineto) or the
//! first kernel dispatch (rocprofv3), as wide as fits, with every GPU event
//! kept only together with the launch and the flow that link it.
//!
//! JSON is held as [`Json`], which keeps object keys in file order (traces
//! are read by tools that sniff their first keys) and numbers as written.

use std::{collections::BTreeSet, fmt};

use serde::{
    Deserialize, Deserializer, Serialize, Serializer,
    de::{MapAccess, SeqAccess, Visitor},
    ser::{SerializeMap, SerializeSeq},
};

/// A JSON value with object keys in file order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Num(serde_json::Number),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Obj(entries) => entries.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    fn str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }
    fn f64(&self) -> Option<f64> {
        match self {
            Json::Num(n) => n.as_f64(),
            _ => None,
        }
    }
    /// A scalar as a comparable key (correlation and flow ids).
    fn key(&self) -> Option<String> {
        match self {
            Json::Num(n) => Some(n.to_string()),
            Json::Str(s) => Some(format!("\"{s}")),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
                Ok(Json::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
                Ok(Json::Num(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
                Ok(Json::Num(v.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Json, E> {
                serde_json::Number::from_f64(v)
                    .map(Json::Num)
                    .ok_or_else(|| E::custom("a number JSON cannot hold"))
            }
            fn visit_str<E>(self, v: &str) -> Result<Json, E> {
                Ok(Json::Str(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Json, E> {
                Ok(Json::Str(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = seq.next_element()? {
                    out.push(v);
                }
                Ok(Json::Arr(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry()? {
                    out.push((k, v));
                }
                Ok(Json::Obj(out))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Num(n) => n.serialize(s),
            Json::Str(v) => s.serialize_str(v),
            Json::Arr(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for v in items {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Json::Obj(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

fn compact(v: &Json) -> String {
    serde_json::to_string(v).expect("a Json value always serializes")
}

/// What a trim kept.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Trimmed {
    pub(crate) text: String,
    /// The window kept, in the trace's time unit (µs for Kineto, ns for rocprofv3).
    pub(crate) window: f64,
    pub(crate) events_in: usize,
    pub(crate) events_kept: usize,
    /// Whether `python_function` events (with_stack) were left out to make
    /// room: they take no part in the tables.
    pub(crate) dropped_python: bool,
}

/// `cargo xtask trim`: read `input` (gzip or not), write the trimmed trace.
pub(crate) fn run(
    input: &std::path::Path,
    output: &std::path::Path,
    cap: usize,
) -> Result<(), String> {
    let file = std::fs::File::open(input).map_err(|e| format!("{}: {e}", input.display()))?;
    let mut head = [0u8; 2];
    let gz = std::io::Read::read(&mut &file, &mut head)
        .map_err(|e| format!("{}: {e}", input.display()))?
        == 2
        && head == [0x1f, 0x8b];
    let file = std::fs::File::open(input).map_err(|e| format!("{}: {e}", input.display()))?;
    let mut text = String::new();
    let read = if gz {
        std::io::Read::read_to_string(&mut flate2::read::MultiGzDecoder::new(file), &mut text)
    } else {
        std::io::Read::read_to_string(&mut std::io::BufReader::new(file), &mut text)
    };
    read.map_err(|e| format!("{}: {e}", input.display()))?;
    let t = trim(&text, cap).map_err(|e| format!("{}: {e}", input.display()))?;
    std::fs::write(output, &t.text).map_err(|e| format!("{}: {e}", output.display()))?;
    eprintln!(
        "{}: {} of {} events kept, {} bytes{}",
        output.display(),
        t.events_kept,
        t.events_in,
        t.text.len(),
        if t.dropped_python { " (python_function events left out)" } else { "" }
    );
    Ok(())
}

/// Trim a trace (Kineto or rocprofv3 JSON, told by its content) to at most
/// `cap` bytes.
pub(crate) fn trim(text: &str, cap: usize) -> Result<Trimmed, String> {
    let mut doc: Json = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    redact(&mut doc);
    if doc.get("traceEvents").is_some() {
        trim_kineto(&doc, cap)
    } else if doc.get("rocprofiler-sdk-tool").is_some() {
        trim_rocprof(&doc, cap)
    } else {
        Err("neither a Kineto trace (traceEvents) nor rocprofv3 JSON".into())
    }
}

/// What names the capturing machine, replaced in what trimming writes (the
/// output is meant to be committed): Kineto's top-level `host_name` and the
/// directories of `traceName`; rocprofv3's `metadata.node` host and machine ids.
fn redact(doc: &mut Json) {
    let Json::Obj(top) = doc else { return };
    for (key, value) in top.iter_mut() {
        match (key.as_str(), value) {
            ("host_name", v @ Json::Str(_)) => *v = Json::Str("redacted".into()),
            ("traceName", Json::Str(name)) => {
                *name = name.rsplit('/').next().unwrap_or_default().to_string();
            }
            ("rocprofiler-sdk-tool", Json::Arr(processes)) => {
                for process in processes {
                    let Some(Json::Obj(node)) =
                        process.get_mut("metadata").and_then(|m| m.get_mut("node"))
                    else {
                        continue;
                    };
                    for (k, v) in node.iter_mut() {
                        if ["hostname", "domain_name", "machine_id", "id", "hash"]
                            .contains(&k.as_str())
                        {
                            *v = Json::Str("redacted".into());
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// The largest window in `[0, span]` whose output fits `cap`, by bisection
/// (a wider window never keeps fewer events).
type Rendered = (String, usize, usize);

/// `render` gives the text, the events kept and the GPU events kept.
fn widest(
    span: f64,
    cap: usize,
    render: impl Fn(f64) -> Rendered,
) -> Result<(f64, Rendered), String> {
    let full = render(span);
    if full.0.len() <= cap {
        return Ok((span, full));
    }
    let (mut lo, mut hi) = (0.0f64, span);
    let mut best: Option<(f64, Rendered)> = None;
    for _ in 0..24 {
        let mid = (lo + hi) / 2.0;
        let r = render(mid);
        if r.0.len() <= cap {
            best = Some((mid, r));
            lo = mid;
        } else {
            hi = mid;
        }
    }
    best.ok_or_else(|| format!("even the shortest window is over {cap} bytes"))
}

const GPU_CATS: [&str; 3] = ["kernel", "gpu_memcpy", "gpu_memset"];
const RUNTIME_CATS: [&str; 2] = ["cuda_runtime", "cuda_driver"];

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Gpu,
    GpuAnnotation,
    Flow,
    Runtime,
    Python,
    Host,
}

/// What the window decisions need of one event, computed once.
struct Ev {
    kind: Kind,
    span: Option<(f64, f64)>,
    /// `args.correlation` (launches, GPU events) or `id` (flows).
    link: Option<String>,
    line: String,
}

fn trim_kineto(doc: &Json, cap: usize) -> Result<Trimmed, String> {
    let Some(Json::Arr(events)) = doc.get("traceEvents") else {
        return Err("traceEvents is not an array".into());
    };
    let evs: Vec<Ev> = events
        .iter()
        .map(|e| {
            let cat = e.get("cat").and_then(Json::str).unwrap_or("");
            let flow = cat == "ac2g" && matches!(e.get("ph").and_then(Json::str), Some("s" | "f"));
            let kind = match cat {
                _ if flow => Kind::Flow,
                c if GPU_CATS.contains(&c) => Kind::Gpu,
                "gpu_user_annotation" => Kind::GpuAnnotation,
                c if RUNTIME_CATS.contains(&c) => Kind::Runtime,
                "python_function" => Kind::Python,
                _ => Kind::Host,
            };
            let ts = e.get("ts").and_then(Json::f64);
            let dur = e.get("dur").and_then(Json::f64).unwrap_or(0.0);
            let link = if flow {
                e.get("id").and_then(Json::key)
            } else {
                e.get("args").and_then(|a| a.get("correlation")).and_then(Json::key)
            };
            Ev { kind, span: ts.map(|t| (t, t + dur)), link, line: compact(e) }
        })
        .collect();
    let gpu_side = |k: Kind| matches!(k, Kind::Gpu | Kind::GpuAnnotation | Kind::Flow);
    // From the first profiler step, or the first host event.
    let t0 = events
        .iter()
        .zip(&evs)
        .filter(|(e, _)| {
            e.get("name").and_then(Json::str).is_some_and(|n| n.starts_with("ProfilerStep#"))
        })
        .filter_map(|(_, v)| v.span.map(|s| s.0))
        .reduce(f64::min)
        .or_else(|| {
            evs.iter()
                .filter(|v| !gpu_side(v.kind))
                .filter_map(|v| v.span.map(|s| s.0))
                .reduce(f64::min)
        })
        .ok_or("no timed host event")?;
    let last = evs.iter().filter_map(|v| v.span.map(|s| s.1)).reduce(f64::max).unwrap_or(t0);
    let Json::Obj(entries) = doc else { unreachable!("checked above") };
    let render = |w: f64, drop_python: bool| -> Rendered {
        let t1 = t0 + w;
        let host = |v: &Ev| match v.span {
            _ if drop_python && v.kind == Kind::Python => false,
            Some((s, x)) => s <= t1 && x >= t0,
            None => true, // metadata and untimed events stay
        };
        let launches: BTreeSet<&str> = evs
            .iter()
            .filter(|v| v.kind == Kind::Runtime && host(v))
            .filter_map(|v| v.link.as_deref())
            .collect();
        let linked = |v: &Ev| v.link.as_deref().is_some_and(|c| launches.contains(c));
        let gpu_span = evs
            .iter()
            .filter(|v| v.kind == Kind::Gpu && linked(v))
            .filter_map(|v| v.span)
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
        let keep = |v: &Ev| match v.kind {
            Kind::Flow | Kind::Gpu => linked(v),
            Kind::GpuAnnotation => match (gpu_span, v.span) {
                (Some((a, b)), Some((s, x))) => s <= b && x >= a,
                _ => false,
            },
            _ => host(v),
        };
        let kept: Vec<&Ev> = evs.iter().filter(|v| keep(v)).collect();
        let gpu = kept.iter().filter(|v| v.kind == Kind::Gpu).count();
        let mut out = String::from("{\n");
        for (i, (k, v)) in entries.iter().enumerate() {
            out.push_str(&format!("  {}: ", compact(&Json::Str(k.clone()))));
            if k == "traceEvents" {
                out.push_str("[\n");
                for (j, e) in kept.iter().enumerate() {
                    out.push_str("    ");
                    out.push_str(&e.line);
                    out.push_str(if j + 1 < kept.len() { ",\n" } else { "\n" });
                }
                out.push_str("  ]");
            } else {
                out.push_str(&compact(v));
            }
            out.push_str(if i + 1 < entries.len() { ",\n" } else { "\n" });
        }
        out.push_str("}\n");
        (out, kept.len(), gpu)
    };
    // Stack traces (python_function) can fill the cap before one kernel
    // fits: then leave them out.
    let mut dropped_python = false;
    let mut result = widest(last - t0, cap, |w| render(w, false));
    if result.as_ref().map_or(true, |(_, r)| r.2 == 0) {
        dropped_python = true;
        result = widest(last - t0, cap, |w| render(w, true));
    }
    let (window, (text, kept, _)) = result?;
    Ok(Trimmed { text, window, events_in: events.len(), events_kept: kept, dropped_python })
}

fn trim_rocprof(doc: &Json, cap: usize) -> Result<Trimmed, String> {
    let Some(Json::Arr(procs)) = doc.get("rocprofiler-sdk-tool") else {
        return Err("rocprofiler-sdk-tool is not an array".into());
    };
    let start = |r: &Json| r.get("start_timestamp").and_then(Json::f64);
    let records = |p: &Json| -> Vec<(String, Vec<Json>)> {
        match p.get("buffer_records") {
            Some(Json::Obj(entries)) => entries
                .iter()
                .filter_map(|(k, v)| match v {
                    Json::Arr(a) => Some((k.clone(), a.clone())),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    };
    let all: Vec<Vec<(String, Vec<Json>)>> = procs.iter().map(records).collect();
    let events_in: usize = all.iter().flatten().map(|(_, a)| a.len()).sum();
    let dispatch_starts = all
        .iter()
        .flatten()
        .filter(|(k, _)| k == "kernel_dispatch")
        .flat_map(|(_, a)| a.iter().filter_map(start));
    let t0 = dispatch_starts.clone().reduce(f64::min).ok_or("no kernel dispatch record")?;
    let last = all
        .iter()
        .flatten()
        .flat_map(|(_, a)| a.iter().filter_map(start))
        .reduce(f64::max)
        .unwrap_or(t0);
    let render = |w: f64| -> Rendered {
        let t1 = t0 + w;
        let mut kept_total = 0;
        let mut gpu = 0;
        let mut out_procs = Vec::new();
        for (p, recs) in procs.iter().zip(&all) {
            let mut kernel_ids = BTreeSet::new();
            let mut agents = BTreeSet::new();
            let mut kept_arrays = Vec::new();
            for (k, a) in recs {
                let kept: Vec<Json> = a
                    .iter()
                    .filter(|r| start(r).is_some_and(|s| s >= t0 && s <= t1))
                    .cloned()
                    .collect();
                for r in &kept {
                    agent_handles(r, &mut agents);
                    if let Some(id) =
                        r.get("dispatch_info").and_then(|d| d.get("kernel_id")).and_then(Json::key)
                    {
                        kernel_ids.insert(id);
                    }
                }
                if k == "kernel_dispatch" {
                    gpu += kept.len();
                }
                kept_total += kept.len();
                kept_arrays.push((k.clone(), Json::Arr(kept)));
            }
            let id_in = |v: &Json, path: &[&str], set: &BTreeSet<String>| {
                path.iter()
                    .try_fold(v, |v, k| v.get(k))
                    .and_then(Json::key)
                    .is_some_and(|h| set.contains(&h))
            };
            let Json::Obj(fields) = p else {
                out_procs.push(p.clone());
                continue;
            };
            let fields = fields
                .iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("buffer_records", _) => Json::Obj(kept_arrays.clone()),
                        // The agents the records name, without their cache
                        // tables (about 110 KB per GPU).
                        ("agents", Json::Arr(list)) => Json::Arr(
                            list.iter()
                                .filter(|a| id_in(a, &["id", "handle"], &agents))
                                .map(|a| match a {
                                    Json::Obj(f) => Json::Obj(
                                        f.iter()
                                            .map(|(k, v)| {
                                                let v = if k == "caches" {
                                                    Json::Arr(Vec::new())
                                                } else {
                                                    v.clone()
                                                };
                                                (k.clone(), v)
                                            })
                                            .collect(),
                                    ),
                                    other => other.clone(),
                                })
                                .collect(),
                        ),
                        // The symbols of the kernels kept (a framework loads thousands).
                        ("kernel_symbols", Json::Arr(list)) => Json::Arr(
                            list.iter()
                                .filter(|s| id_in(s, &["kernel_id"], &kernel_ids))
                                .cloned()
                                .collect(),
                        ),
                        _ => v.clone(),
                    };
                    (k.clone(), v)
                })
                .collect();
            out_procs.push(Json::Obj(fields));
        }
        let Json::Obj(entries) = doc else { unreachable!("checked above") };
        let out = Json::Obj(
            entries
                .iter()
                .map(|(k, v)| {
                    if k == "rocprofiler-sdk-tool" {
                        (k.clone(), Json::Arr(out_procs.clone()))
                    } else {
                        (k.clone(), v.clone())
                    }
                })
                .collect(),
        );
        (compact(&out) + "\n", kept_total, gpu)
    };
    let (window, (text, kept, _)) = widest(last - t0, cap, render)?;
    Ok(Trimmed { text, window, events_in, events_kept: kept, dropped_python: false })
}

/// The `handle`s of every `*agent_id` in a record.
fn agent_handles(v: &Json, out: &mut BTreeSet<String>) {
    match v {
        Json::Obj(entries) => {
            for (k, v) in entries {
                if k.ends_with("agent_id")
                    && let Some(h) = v.get("handle").and_then(Json::key)
                {
                    out.insert(h);
                }
                agent_handles(v, out);
            }
        }
        Json::Arr(items) => items.iter().for_each(|v| agent_handles(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_key_order_and_numbers() {
        let text = r#"{"z":1,"a":[1.5,-2,18446744073709551615,"s",null,true],"m":{"y":{},"b":[]}}"#;
        let v: Json = serde_json::from_str(text).unwrap();
        assert_eq!(compact(&v), text);
    }

    fn kineto(steps: usize) -> String {
        let mut ev = vec![
            r#"{"ph":"M","name":"process_name","pid":1,"args":{"name":"python"}}"#.to_string(),
        ];
        for s in 0..steps {
            let t = 1000 * s as u64;
            ev.push(format!(r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{s}","pid":1,"tid":1,"ts":{t},"dur":900}}"#));
            ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":{},"dur":50,"args":{{"External id":{s}}}}}"#, t + 10));
            ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{s}}}}}"#, t + 20));
            ev.push(format!(
                r#"{{"ph":"s","cat":"ac2g","name":"ac2g","id":{s},"pid":1,"tid":1,"ts":{}}}"#,
                t + 20
            ));
            // the kernel runs after the window of its launch may have closed
            ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":{},"dur":400,"args":{{"correlation":{s},"stream":7}}}}"#, t + 800));
            ev.push(format!(r#"{{"ph":"f","cat":"ac2g","name":"ac2g","id":{s},"pid":0,"tid":7,"ts":{},"bp":"e"}}"#, t + 800));
        }
        format!(
            "{{\"schemaVersion\":1,\"distributedInfo\":{{\"rank\":1}},\"traceEvents\":[{}],\"traceName\":\"x\"}}",
            ev.join(",")
        )
    }

    #[test]
    fn what_names_the_machine_is_redacted() {
        let full = kineto(3).replacen(
            "{\"schemaVersion\":1,",
            "{\"schemaVersion\":1,\"host_name\":\"gpu-node-17.corp\",",
            1,
        );
        let full = full.replace(
            "\"traceName\":\"x\"",
            "\"traceName\":\"/home/alice/run/rank0.pt.trace.json\"",
        );
        let t = trim(&full, 1 << 20).unwrap();
        assert!(!t.text.contains("gpu-node-17") && !t.text.contains("alice"), "{}", t.text);
        assert!(t.text.contains(r#""host_name": "redacted""#), "{}", t.text);
        assert!(t.text.contains(r#""traceName": "rank0.pt.trace.json""#), "{}", t.text);
        let rocprof = r#"{"rocprofiler-sdk-tool":[{"metadata":{"pid":1,"node":{"hostname":"gpu-node-17","machine_id":"abc123","release":"6.8"}},"agents":[],"strings":{},"buffer_records":{"kernel_dispatch":[]}}]}"#;
        let mut doc: Json = serde_json::from_str(rocprof).unwrap();
        redact(&mut doc);
        let text = compact(&doc);
        assert!(!text.contains("gpu-node-17") && !text.contains("abc123"), "{text}");
        assert!(text.contains(r#""release":"6.8""#), "{text}");
    }

    #[test]
    fn kineto_trim_fits_the_cap_and_keeps_links_whole() {
        let full = kineto(200);
        let cap = full.len() / 5;
        let t = trim(&full, cap).unwrap();
        assert!(t.text.len() <= cap, "{} > {cap}", t.text.len());
        assert!(t.events_kept > 50 && t.events_kept < t.events_in, "{t:?}");
        let v: serde_json::Value = serde_json::from_str(&t.text).unwrap();
        let Json::Obj(top) = serde_json::from_str(&t.text).unwrap() else { panic!("an object") };
        let keys: Vec<&str> = top.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["schemaVersion", "distributedInfo", "traceEvents", "traceName"]);
        let events = v["traceEvents"].as_array().unwrap();
        let ids = |cat: &str, ph: &str| -> BTreeSet<u64> {
            events
                .iter()
                .filter(|e| e["cat"] == cat && e["ph"] == ph)
                .map(|e| e["args"]["correlation"].as_u64().or(e["id"].as_u64()).unwrap())
                .collect()
        };
        let kernels = ids("kernel", "X");
        assert!(!kernels.is_empty());
        assert_eq!(kernels, ids("cuda_runtime", "X"), "every kernel with its launch and back");
        assert_eq!(kernels, ids("ac2g", "s"));
        assert_eq!(kernels, ids("ac2g", "f"));
        assert!(events.iter().any(|e| e["ph"] == "M"), "metadata stays");
    }

    #[test]
    fn a_trace_that_fits_is_kept_whole() {
        let full = kineto(3);
        let t = trim(&full, 1 << 20).unwrap();
        assert_eq!(t.events_kept, t.events_in);
        let a: serde_json::Value = serde_json::from_str(&full).unwrap();
        let b: serde_json::Value = serde_json::from_str(&t.text).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn too_small_a_cap_and_other_json_are_errors() {
        assert!(trim(&kineto(3), 100).unwrap_err().contains("over 100 bytes"));
        assert!(trim("{\"a\":1}", 100).unwrap_err().contains("neither"));
        assert!(trim("{", 100).unwrap_err().contains("not JSON"));
    }

    /// Real traces from ../shared trimmed to the fixture cap still give
    /// TraceLens' tables with linked kernels.
    #[test]
    fn real_traces_trimmed_still_summarize() {
        let Some(public) = crate::public_fixtures() else {
            return;
        };
        let dir = tempfile_dir();
        for rel in [
            "kineto/tracelens/b200/eager_trace.json.gz",
            "kineto/tracelens/mi300/resnet_act_checkpoint.json.gz",
            "rocprofv3/tracelens/908_results.json.gz",
        ] {
            let mut text = String::new();
            let file = std::fs::File::open(public.join(rel)).unwrap();
            std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(file), &mut text)
                .unwrap();
            let cap = 256 << 10;
            let t = trim(&text, cap).unwrap_or_else(|e| panic!("{rel}: {e}"));
            assert!(t.text.len() <= cap && t.events_kept > 0, "{rel}: {t:?}");
            let path = dir.join("t.json");
            std::fs::write(&path, &t.text).unwrap();
            let s = trace_summary::summarize_file(&path).unwrap();
            let outcome = serde_json::to_value(s.outcome).unwrap();
            assert!(outcome == "tables" || outcome == "rocprofv3", "{rel}: {outcome}");
            assert!(s.gpu_events > 0 && s.kernel_summary.is_some(), "{rel}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "xtask-trim-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}

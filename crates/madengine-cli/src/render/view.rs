//! What the terminal (and the page) says of a trace besides its tables:
//! its notes and warnings, its heading's tags, its steps, the names of its
//! rows.

use std::borrow::Cow;

use trace_report::{TopRow, TraceView};
use trace_summary::Outcome;

/// What the terminal says of a trace besides its tables.
pub(crate) trait ViewText {
    /// Where op shapes were modelled without a GPU spec to compare them
    /// with: that there is no roofline, and how to get one.
    fn no_roofline_note(&self) -> Option<String>;
    /// Said first: what a trace read with --salvage left out, and what
    /// TraceLens refuses whatever is repaired.
    fn warning(&self) -> Option<String>;
    /// Said when the trace was read through repairs.
    fn repaired_note(&self) -> Option<String>;
    /// The timeline rows worth showing, `(row, label)`.
    fn parts(&self) -> &'static [(&'static str, &'static str)];
    /// What a trace's heading says after its path: ` (rank 0, AMD Instinct
    /// MI300X)`, ` (on GPU 3, AMD Instinct MI350X)`, or nothing.
    fn heading_tags(&self) -> String;
    /// What follows a total of `ms` over the steps it covers: ` over 5
    /// profiler steps (245.814 ms each)`, ` over 1 optimizer step`; empty
    /// without steps.
    fn steps_text(&self, ms: f64) -> String;
    /// What the reader should know about how this trace was read, if anything.
    fn note(&self) -> Option<Cow<'static, str>>;
    /// For a trace without the list its records are in (`kernel_dispatch`
    /// in rocprofv3's buffer_records, Kineto's `traceEvents`): the list
    /// under a key a stray byte changed, else what it holds instead.
    fn missing_list(&self, format: trace_summary::Format) -> Option<String>;
    fn static_note(&self) -> Option<&'static str>;
    /// Disjoint rows that add up to the total, for a stacked bar.
    fn bar_parts(&self) -> &'static [(&'static str, &'static str)];
}

impl ViewText for TraceView {
    /// Where op shapes were modelled without a GPU spec to compare them
    /// with: that there is no roofline, and how to get one.
    fn no_roofline_note(&self) -> Option<String> {
        if self.gpu_arch.is_some() || (self.top_gemms.is_empty() && self.top_shapes.is_empty()) {
            return None;
        }
        if self.gpus.iter().any(|g| trace_summary::GpuArch::for_device(g).is_some()) {
            return Some("no roofline: --gpu-arch none".into());
        }
        let gpus = match self.gpus.is_empty() {
            true => "its GPU".to_string(),
            false => self.gpus.join(", "),
        };
        Some(format!(
            "no roofline: no GPU spec is bundled for {gpus}; --gpu-arch MI300X|MI325X|FILE.json \
             compares the shapes with one"
        ))
    }

    /// Said first: what a trace read with --salvage left out, and what
    /// TraceLens refuses whatever is repaired.
    fn warning(&self) -> Option<String> {
        let salvaged = match (&self.truncated, self.data_after_end) {
            (Some(truncated), _) => Some(truncated.note()),
            (None, Some(bytes)) => Some(format!(
                "{bytes} bytes of data after the end of its JSON document were not read \
                 (TraceLens refuses the file as it is)"
            )),
            (None, None) => None,
        };
        let not_json = self.not_json.as_ref().map(|word| {
            format!(
                "`{}` at byte {} is a bare word that is not JSON (in a part these tables do not \
                 read): TraceLens refuses the trace, repaired or not",
                word.text, word.offset
            )
        });
        let malformed = self.malformed.as_ref().map(|m| {
            format!(
                "its JSON breaks at byte {}: {} where {} goes ({}), in a part these tables do not \
                 read: TraceLens refuses the trace, repaired or not",
                m.offset,
                m.found,
                m.expected,
                m.likely()
            )
        });
        let lists = (self.earlier_event_lists > 0).then(|| {
            format!(
                "its top object holds `traceEvents` {} times: only the last list is read, as \
                 TraceLens' parser keeps only the last ({} events left out)",
                self.earlier_event_lists + 1,
                match self.earlier_event_lists {
                    1 => "the other list's".to_string(),
                    n => format!("the {n} other lists'"),
                }
            )
        });
        let dropped = (self.dropped_records > 0).then(|| {
            format!(
                "{} left out: without a start or an end that is a time (NULL, text or \
                 negative), which rocprofv3 never writes (a database edited or damaged?)",
                super::plural(self.dropped_records as usize, "record")
            )
        });
        let negative = (self.negative_durations > 0).then(|| {
            format!(
                "{} a negative duration (a clock gone backwards, a trace edited by hand?): \
                 counted as TraceLens counts them, so the timeline's parts can be negative",
                match self.negative_durations {
                    1 => "1 GPU event has".to_string(),
                    n => format!("{n} GPU events have"),
                }
            )
        });
        let said: Vec<String> = [salvaged, not_json, malformed, lists, dropped, negative]
            .into_iter()
            .flatten()
            .collect();
        (!said.is_empty()).then(|| said.join("; "))
    }

    /// Said when the trace was read through repairs.
    fn repaired_note(&self) -> Option<String> {
        let counts = self.repaired?;
        // A repaired copy would not help: the warning said why.
        if self.not_json.is_some() || self.malformed.is_some() {
            return Some(format!("repaired while reading ({counts})"));
        }
        // Nor would a copy that is still cut short, or has data after its end.
        let (salvage, closed) = match self.truncated.is_some() || self.data_after_end.is_some() {
            true => ("--salvage ", ", closed"),
            false => ("", ""),
        };
        Some(format!(
            "repaired while reading ({counts}); TraceLens refuses it as it is: `madengine trace \
             sanitize {salvage}{}` writes a repaired{closed} copy",
            self.trace.display()
        ))
    }

    /// The timeline rows worth showing, `(row, label)`.
    fn parts(&self) -> &'static [(&'static str, &'static str)] {
        if self.outcome == Some(Outcome::Rocprofv3) { ROCPROF_PARTS } else { KINETO_PARTS }
    }

    /// What a trace's heading says after its path: ` (rank 0, AMD Instinct
    /// MI300X)`, ` (on GPU 3, AMD Instinct MI350X)`, or nothing.
    fn heading_tags(&self) -> String {
        let rank = self.rank.map(|r| format!("rank {r}"));
        let cycle = self.cycle.as_ref().map(|p| p.cycle.to_string());
        let gpu = self.gpu_index.map(|i| format!("on GPU {i}"));
        let tags: Vec<String> =
            rank.into_iter().chain(cycle).chain(gpu).chain(self.gpus.iter().cloned()).collect();
        if tags.is_empty() { String::new() } else { format!(" ({})", tags.join(", ")) }
    }

    /// What follows a total of `ms` over the steps it covers: ` over 5
    /// profiler steps (245.814 ms each)`, ` over 1 optimizer step`; empty
    /// without steps.
    fn steps_text(&self, ms: f64) -> String {
        let (Some(steps), Some(marker)) = (self.steps, self.steps_marked_by) else {
            return String::new();
        };
        let each = match steps {
            0 | 1 => String::new(),
            n => format!(" ({:.3} ms each)", ms / n as f64),
        };
        format!(" over {}{each}", super::plural(steps, marker.noun()))
    }

    /// What the reader should know about how this trace was read, if anything.
    fn note(&self) -> Option<Cow<'static, str>> {
        if self.outcome == Some(Outcome::NoGpuActivity)
            && let Some(format) = self.format
            && let Some(missing) = self.missing_list(format)
        {
            return Some(Cow::Owned(missing));
        }
        self.static_note().map(Cow::Borrowed)
    }

    /// For a trace without the list its records are in (`kernel_dispatch`
    /// in rocprofv3's buffer_records, Kineto's `traceEvents`): the list
    /// under a key a stray byte changed, else what it holds instead.
    fn missing_list(&self, format: trace_summary::Format) -> Option<String> {
        let database = self.trace.extension().is_some_and(|e| e == "db");
        let (list, within, place, records, guess) = match format {
            // A rocpd database: its record tables, named as the JSON's lists.
            trace_summary::Format::Rocprofv3 if database => (
                "kernel_dispatch",
                "",
                "its database holds records of",
                "records",
                "rocprofv3 run without --kernel-trace?",
            ),
            trace_summary::Format::Rocprofv3 => (
                "kernel_dispatch",
                " in its buffer_records",
                "its buffer_records hold",
                "records",
                "rocprofv3 run without --kernel-trace?",
            ),
            trace_summary::Format::Kineto => {
                ("traceEvents", "", "its top level holds", "events", "not a Chrome trace?")
            }
            // Its slices' categories (never a key a stray byte changed).
            trace_summary::Format::Perfetto => {
                let lists = &self.record_lists;
                if lists.is_empty() || lists.iter().any(|l| l == "kernel_dispatch") {
                    return None;
                }
                let held: Vec<String> = lists.iter().map(|l| format!("`{l}`")).collect();
                return Some(format!(
                    "no kernel_dispatch slices: its slices are of {} (not rocprofv3's, or a \
                     rocprofv3 run without --kernel-trace?): nothing to summarize",
                    held.join(", ")
                ));
            }
        };
        let lists = &self.record_lists;
        if lists.is_empty() || lists.iter().any(|l| l == list) {
            return None;
        }
        if let Some(near) = lists.iter().find(|l| strsim::levenshtein(l, list) <= 3) {
            // Quoted as in JSON: a control byte in it shows.
            let near = serde_json::to_string(near).unwrap_or_default();
            return Some(format!(
                "no {list} list{within}, but a {near} one: its key was changed (a stray byte in \
                 the trace?), so its {records} are not read; nothing to summarize"
            ));
        }
        let held: Vec<String> = lists.iter().map(|l| format!("`{l}`")).collect();
        let kind = if database { "records" } else { "list" };
        Some(format!(
            "no {list} {kind}: {place} {} ({guess}): nothing to summarize",
            held.join(", ")
        ))
    }

    fn static_note(&self) -> Option<&'static str> {
        match self.outcome? {
            Outcome::LegacyCategories => Some(
                "legacy categories or older flows, read as today's (TraceLens rejects this trace)",
            ),
            Outcome::Rocprofv3 if self.format == Some(trace_summary::Format::Perfetto) => Some(
                "rocprofv3 records from Perfetto slices: TraceLens' rocprof tables (no \
                 compute/communication split, no ops); profiled time is the span of its slices",
            ),
            Outcome::Rocprofv3 => Some(
                "rocprofv3 records: TraceLens' rocprof tables (no compute/communication split, no ops)",
            ),
            Outcome::Unlinked => Some(
                "no GPU event is linked to a launch (sampled trace?): the timeline counts every GPU \
                 event, kernels have no parent op (TraceLens rejects this trace)",
            ),
            Outcome::NoGpuActivity if self.format == Some(trace_summary::Format::Rocprofv3) => {
                Some(
                    "no kernel dispatch or memory copy records (rocprofv3 run without \
                     --kernel-trace or --memory-copy-trace?): nothing to summarize",
                )
            }
            Outcome::NoGpuActivity if self.format == Some(trace_summary::Format::Perfetto) => Some(
                "no kernel_dispatch or memory_copy slices (not rocprofv3's pftrace, or a \
                     rocprofv3 run without --kernel-trace or --memory-copy-trace?): nothing to \
                     summarize",
            ),
            Outcome::NoGpuActivity if self.truncated.is_some() => {
                Some("no GPU activity before the cut: nothing to summarize")
            }
            Outcome::NoGpuActivity if self.events == Some(0) => {
                Some("no events at all (no traceEvents, or an empty list): nothing to summarize")
            }
            Outcome::NoGpuActivity if self.gpu_devices == Some(0) => Some(
                "no GPU activity, and its process saw no GPU (its deviceProperties list is \
                 empty): the workload ran on the CPU; nothing to summarize",
            ),
            Outcome::NoGpuActivity => {
                Some("no GPU activity (a CPU-only trace): nothing to summarize")
            }
            Outcome::Tables => None,
        }
    }

    /// Disjoint rows that add up to the total, for a stacked bar.
    fn bar_parts(&self) -> &'static [(&'static str, &'static str)] {
        if self.outcome == Some(Outcome::Rocprofv3) { ROCPROF_BAR } else { KINETO_PARTS }
    }
}

/// Each row's name as `shown` (each shown once: demangling is not free),
/// with what tells it apart when another row shows the same name: TraceLens
/// groups kernels by name, parent op and stream, so one kernel can have
/// several rows.
pub(crate) fn labels(rows: &[TopRow], shown: impl Fn(&str) -> String) -> Vec<String> {
    let names: Vec<String> = rows.iter().map(|r| shown(&r.name)).collect();
    rows.iter()
        .zip(&names)
        .map(|(row, name)| {
            let twins: Vec<&TopRow> =
                rows.iter().zip(&names).filter(|(_, n)| *n == name).map(|(r, _)| r).collect();
            let mut tags = Vec::new();
            if twins.iter().any(|r| r.parent_op != row.parent_op) {
                tags.push(match row.parent_op.as_deref() {
                    Some("") | None => "no linked launch".to_string(),
                    Some(op) => format!("under {op}"),
                });
            }
            if twins.iter().any(|r| r.stream != row.stream)
                && let Some(stream) = &row.stream
            {
                tags.push(format!("stream {stream}"));
            }
            if tags.is_empty() { name.clone() } else { format!("{name} [{}]", tags.join(", ")) }
        })
        .collect()
}

/// Kineto timelines split GPU time into these four disjoint parts: `(row, label)`.
pub(crate) const KINETO_PARTS: &[(&str, &str)] = &[
    ("computation_time", "computation"),
    ("exposed_comm_time", "exposed comm"),
    ("exposed_memcpy_time", "exposed memcpy"),
    ("idle_time", "idle"),
];
/// rocprofv3 timelines have no compute/communication split.
const ROCPROF_PARTS: &[(&str, &str)] =
    &[("kernel", "kernel"), ("memory", "memory"), ("busy_time", "busy"), ("idle", "idle")];
pub(crate) const ROCPROF_BAR: &[(&str, &str)] = &[("busy_time", "busy"), ("idle", "idle")];

/// A number with `digits` decimals, `-` where there is none.
pub(crate) fn shown(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}

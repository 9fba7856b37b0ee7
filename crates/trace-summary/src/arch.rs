//! A GPU's roofline: its peak TFLOPS/s per compute spec (`matrix_bf16`,
//! `vector_fp32`, ...) and its memory bandwidth, as TraceLens' arch files
//! give them (`--gpu_arch_platform`, `--gpu_arch_json_path`). With one, the
//! perf-model sheets say how close each op came to the roofline.

use std::{collections::BTreeMap, path::Path};

use serde::Deserialize;

/// A GPU's roofline. Read from TraceLens' arch JSON ([`GpuArch::from_json`])
/// or taken from the bundled specs ([`GpuArch::bundled`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct GpuArch {
    /// Its name (`MI300X`).
    pub name: String,
    /// Memory bandwidth, GB/s.
    pub mem_bw_gbps: f64,
    /// Peak achievable TFLOPS/s by compute spec (`matrix_bf16`, ...).
    pub max_achievable_tflops: BTreeMap<String, f64>,
}

/// How the roofline of each trace is chosen ([`crate::Options::gpu_arch`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ArchChoice {
    /// No roofline (as TraceLens without `--gpu_arch_*`).
    #[default]
    None,
    /// This GPU's, for every trace.
    Given(GpuArch),
    /// The bundled spec of the GPU the trace's `deviceProperties` name,
    /// where one matches ([`GpuArch::for_device`]); none otherwise.
    FromTrace,
}

/// A bundled spec: its name, memory bandwidth (GB/s) and peak TFLOPS/s by
/// compute spec.
type Bundled = (&'static str, f64, [(&'static str, f64); 10]);

/// The bundled specs: TraceLens' own arch files, with its values.
const BUNDLED: [Bundled; 2] = [
    (
        "MI300X",
        5300.0,
        [
            ("matrix_fp16", 654.0),
            ("matrix_bf16", 708.0),
            ("matrix_fp32", 163.0),
            ("matrix_fp64", 81.0),
            ("matrix_fp8", 1273.0),
            ("matrix_int8", 2600.0),
            ("vector_fp16", 163.0),
            ("vector_bf16", 163.0),
            ("vector_fp32", 81.0),
            ("vector_fp64", 40.0),
        ],
    ),
    (
        "MI325X",
        6000.0,
        [
            ("matrix_fp16", 794.0),
            ("matrix_bf16", 843.0),
            ("matrix_fp32", 194.0),
            ("matrix_fp64", 97.0),
            ("matrix_fp8", 1519.0),
            ("matrix_int8", 3094.0),
            ("vector_fp16", 194.0),
            ("vector_bf16", 194.0),
            ("vector_fp32", 97.0),
            ("vector_fp64", 48.0),
        ],
    ),
];

/// Why an arch file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ArchError {
    /// It could not be read.
    #[error("cannot read the GPU arch file {path}")]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// It is not TraceLens' arch JSON (`name`, `mem_bw_gbps`,
    /// `max_achievable_tflops`).
    #[error(
        "{path} is not a GPU arch file (TraceLens' JSON: name, mem_bw_gbps, max_achievable_tflops)"
    )]
    Format {
        /// The file.
        path: std::path::PathBuf,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// No bundled spec has this name.
    #[error("no bundled GPU arch is named `{name}`; bundled: {}", GpuArch::bundled_names().join(", "))]
    Unknown {
        /// The name given.
        name: String,
    },
}

impl GpuArch {
    /// The names of the bundled specs (`MI300X`, `MI325X`).
    pub fn bundled_names() -> Vec<&'static str> {
        BUNDLED.iter().map(|(n, ..)| *n).collect()
    }

    /// The bundled spec named `name` (case-insensitive).
    pub fn bundled(name: &str) -> Result<GpuArch, ArchError> {
        let (name, bw, peaks) = BUNDLED
            .iter()
            .find(|(n, ..)| n.eq_ignore_ascii_case(name))
            .ok_or_else(|| ArchError::Unknown { name: name.to_string() })?;
        Ok(GpuArch {
            name: name.to_string(),
            mem_bw_gbps: *bw,
            max_achievable_tflops: peaks.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        })
    }

    /// An arch JSON file, as TraceLens' `--gpu_arch_json_path` reads it.
    pub fn from_json(path: &Path) -> Result<GpuArch, ArchError> {
        let text = std::fs::read(path)
            .map_err(|source| ArchError::Read { path: path.to_path_buf(), source })?;
        serde_json::from_slice(&text)
            .map_err(|source| ArchError::Format { path: path.to_path_buf(), source })
    }

    /// A bundled spec by name, else an arch JSON file at that path.
    pub fn named_or_file(spec: &str) -> Result<GpuArch, ArchError> {
        let path = Path::new(spec);
        match GpuArch::bundled(spec) {
            Err(ArchError::Unknown { .. }) if path.extension().is_some() || path.exists() => {
                GpuArch::from_json(path)
            }
            found => found,
        }
    }

    /// The bundled spec of a GPU as Kineto's `deviceProperties` names it
    /// (`AMD Instinct MI300X`, `AMD Instinct MI300X VF`): the first whose
    /// name is a word of it.
    pub fn for_device(device: &str) -> Option<GpuArch> {
        let words: Vec<&str> = device.split(|c: char| !c.is_ascii_alphanumeric()).collect();
        let (name, ..) =
            BUNDLED.iter().find(|(n, ..)| words.iter().any(|w| w.eq_ignore_ascii_case(n)))?;
        GpuArch::bundled(name).ok()
    }

    /// The roofline of an op whose `spec` is given (§8.2): its time (µs),
    /// whether compute bound, for `gflops` and `bytes`; `None` where the
    /// spec has no peak, or the op no FLOPs.
    pub(crate) fn roofline(&self, spec: &str, gflops: f64, bytes: f64) -> Option<(f64, bool)> {
        let peak = *self.max_achievable_tflops.get(spec)?;
        if gflops <= 0.0 || gflops.is_nan() {
            return None;
        }
        let compute_us = (gflops * 1e9 / (peak * 1e12)) * 1e6;
        let memory_us = (bytes / (self.mem_bw_gbps * 1e9)) * 1e6;
        Some((compute_us.max(memory_us), compute_us >= memory_us))
    }
}

#[cfg(test)]
mod tests {
    use super::GpuArch;

    #[test]
    fn bundled_specs_and_devices() {
        let mi300x = GpuArch::bundled("mi300x").unwrap();
        assert_eq!(mi300x.max_achievable_tflops["matrix_bf16"], 708.0);
        assert_eq!(mi300x.max_achievable_tflops.len(), 10);
        assert_eq!(GpuArch::for_device("AMD Instinct MI300X VF"), Some(mi300x.clone()));
        assert_eq!(GpuArch::for_device("AMD Instinct MI325X").unwrap().mem_bw_gbps, 6000.0);
        assert_eq!(GpuArch::for_device("NVIDIA H100 80GB HBM3"), None);
        assert_eq!(GpuArch::for_device("AMD Instinct MI300A"), None);
        let err = GpuArch::named_or_file("H100").unwrap_err();
        assert_eq!(err.to_string(), "no bundled GPU arch is named `H100`; bundled: MI300X, MI325X");
        // The reference's check: 141x512x512 bf16, 814,080 bytes.
        let (time, compute) = mi300x.roofline("matrix_bf16", 0.0739968, 814080.0).unwrap();
        assert!(!compute);
        assert!((time - 0.1536).abs() < 1e-4, "{time}");
        assert_eq!(mi300x.roofline("matrix_fp4", 1.0, 1.0), None);
    }

    #[test]
    fn an_arch_file_is_read_as_tracelens_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h100.json");
        std::fs::write(
            &path,
            r#"{"name": "H100", "mem_bw_gbps": 3350, "memory_gb": 80,
                "max_achievable_tflops": {"matrix_bf16": 989.5, "vector_fp32": 67}}"#,
        )
        .unwrap();
        let arch = GpuArch::named_or_file(path.to_str().unwrap()).unwrap();
        assert_eq!(arch.name, "H100");
        assert_eq!(arch.max_achievable_tflops["matrix_bf16"], 989.5);
        std::fs::write(&path, "{}").unwrap();
        let err = GpuArch::from_json(&path).unwrap_err();
        assert!(err.to_string().contains("is not a GPU arch file"), "{err}");
    }
}

//! Profiled runs as Kubernetes Jobs: render the manifests, gather the results.
//!
//! [`JobFile`] (a JSON job file) renders, through [`bundle`] and
//! [`JobFile::render`], to JSON manifests: a ConfigMap bundling the tools'
//! pre/post scripts and every `.py`/`.sh` helper their text references (keys
//! encode nested paths, mapped back by `items[].path`), a headless Service
//! when pods must find each other, a results PersistentVolumeClaim, and an
//! Indexed Job whose init container copies `madengine` from a tools image.
//! Kubernetes' limits (ConfigMap size and key characters, DNS-1123 names,
//! label values) are checked at render time. [`Kubectl::follow`] watches the
//! Job until it completes or fails. [`gather`] copies each pod's
//! results through a short-lived collector pod, every kubectl call going
//! through [`Kubectl::run`] (timeout, argv quoted in errors).
//!
//! # Example
//!
//! ```
//! use collect_k8s::{Bundle, GpuVendor, JobFile};
//!
//! let job: JobFile = serde_json::from_str(r#"{
//!     "name": "bert-profile", "namespace": "perf", "image": "rocm/pytorch:latest",
//!     "nodes": 2, "gpus_per_node": 8, "gpu_vendor": "amd",
//!     "command": ["madengine", "profile", "--", "torchrun", "train.py"],
//!     "results_storage": "10Gi"
//! }"#)?;
//! let objects = job.render(&Bundle::default())?;
//! let kinds: Vec<_> = objects.iter().map(|o| o["kind"].as_str().unwrap()).collect();
//! assert_eq!(kinds, ["ConfigMap", "Service", "PersistentVolumeClaim", "Job"]);
//! assert_eq!(objects[3]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["amd.com/gpu"], "8");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod error;
mod follow;
mod job;
mod kubectl;

pub use crate::{
    error::{Error, Result},
    follow::{JobStatus, MAX_POLL, stuck_pods},
    job::{
        Bundle, CONFIGMAP_LIMIT, DEFAULT_COLLECT, GpuVendor, JobFile, List, RENDEZVOUS_PORT,
        Toleration, builtin_bundle, bundle, check_dns_name, configmap_key,
    },
    kubectl::{Gathered, Kubectl, PodResults, gather, gather_live},
};

/// The README's example, run as a doctest so that it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;

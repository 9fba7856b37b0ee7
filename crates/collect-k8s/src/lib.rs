//! Profiled runs as Kubernetes Jobs: manifests, apply, gathering.
//!
//! Not built yet: see the project issue "collect-k8s and `madengine k8s`".
#![deny(missing_docs)]

//! Native client for the dynolog daemon (on-demand PyTorch/Kineto capture).
//!
//! Not built yet: this crate will speak dynolog's length-prefixed JSON wire
//! protocol (getStatus, getVersion, setKinetOnDemandRequest) and drive capture
//! sessions. See the project issue "dynolog-client and `madengine dynolog`".
#![deny(missing_docs)]

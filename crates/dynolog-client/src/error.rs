//! The crate's error type.

use std::{io, net::SocketAddr};

/// Everything that can go wrong talking to a dynolog daemon.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `host:port` does not resolve.
    #[error("cannot resolve the dynolog address {endpoint}")]
    Resolve {
        /// The endpoint as given.
        endpoint: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Nothing listens there (is the daemon running, on that port?).
    #[error("no dynolog daemon at {addr} (connection refused)")]
    Refused {
        /// The address tried.
        addr: SocketAddr,
    },
    /// Connecting, sending or receiving took too long. dynolog answers at
    /// once unless another client holds it (it serves one connection at a
    /// time), or what listens there is not dynolog.
    #[error(
        "dynolog at {addr} did not answer within {seconds} s ({during}){}",
        if *left_reading {
            "; the request was left to a background reader, as dynolog dies (SIGPIPE) when a \
             client leaves before its reply"
        } else {
            ""
        }
    )]
    Timeout {
        /// The address.
        addr: SocketAddr,
        /// The limit.
        seconds: f64,
        /// What was being done.
        during: &'static str,
        /// A request was in flight: its connection was handed to a reader
        /// that outlives this process, so the daemon's late reply does not
        /// kill it.
        left_reading: bool,
    },
    /// Something answers at that address, but not as dynolog.
    #[error("{addr} answers, but not as dynolog: {answered}")]
    NotDynolog {
        /// The address.
        addr: SocketAddr,
        /// What answered.
        answered: String,
    },
    /// The daemon closed the connection without replying (it does so for
    /// requests it cannot parse or does not know).
    #[error("dynolog at {addr} closed the connection without replying to {request}")]
    NoReply {
        /// The address.
        addr: SocketAddr,
        /// The request's `fn`.
        request: &'static str,
    },
    /// The daemon rejected the request: `{"status":"failed..."}`.
    #[error("dynolog at {addr} rejected {request}: {status}")]
    Rejected {
        /// The address.
        addr: SocketAddr,
        /// The request's `fn`.
        request: &'static str,
        /// The reply's status text.
        status: String,
    },
    /// The reply's length prefix is absurd (negative or larger than allowed).
    #[error(
        "dynolog at {addr} sent a reply length of {length} bytes, more than the {limit} allowed"
    )]
    ReplyTooLarge {
        /// The address.
        addr: SocketAddr,
        /// The prefix read.
        length: i64,
        /// The limit.
        limit: usize,
    },
    /// The reply is not the JSON expected.
    #[error("dynolog at {addr} sent an unexpected reply to {request}: {body}")]
    BadReply {
        /// The address.
        addr: SocketAddr,
        /// The request's `fn`.
        request: &'static str,
        /// The reply, lossily decoded.
        body: String,
    },
    /// Another I/O failure on the connection.
    #[error("talking to dynolog at {addr} failed")]
    Io {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The trace request itself is not acceptable (checked before sending).
    #[error("{0}")]
    InvalidRequest(String),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

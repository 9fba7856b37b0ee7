//! The wire protocol: one request per TCP connection, each way a 4-byte
//! native-endian `int32` length then that many bytes of JSON.

use std::{
    io::{self, Read, Write},
    net::{SocketAddr, TcpStream, ToSocketAddrs},
    time::Duration,
};

use serde::{Deserialize, Serialize};

use crate::{Error, Result, TraceRequest};

/// The daemon's default port.
pub const DEFAULT_PORT: u16 = 1778;

/// Replies longer than this are refused (a real reply is a few hundred bytes).
pub const MAX_REPLY: usize = 1 << 20;

/// A dynolog daemon's address and how long to wait for it.
#[derive(Debug, Clone)]
pub struct Client {
    addr: SocketAddr,
    timeout: Duration,
}

/// The reply to a trace request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TraceReply {
    /// Every registered process (leaf pid) that matched, not capped by the limit.
    pub processes_matched: Vec<u32>,
    /// The processes that received the config (at most `process_limit`).
    #[serde(default)]
    pub activity_profilers_triggered: Vec<u32>,
    /// Matched processes that had not yet fetched a previous config.
    #[serde(default)]
    pub activity_profilers_busy: u32,
    /// Always empty for RPC requests.
    #[serde(default)]
    pub event_profilers_triggered: Vec<u32>,
    /// Always 0 for RPC requests.
    #[serde(default)]
    pub event_profilers_busy: u32,
}

impl Client {
    /// Resolve `host:port`; like the real CLI, only the first address is used.
    pub fn new(host: &str, port: u16) -> Result<Client> {
        let endpoint = format!("{host}:{port}");
        let addr = (host, port)
            .to_socket_addrs()
            .map_err(|source| Error::Resolve { endpoint: endpoint.clone(), source })?
            .next()
            .ok_or_else(|| Error::Resolve {
                endpoint,
                source: io::Error::new(io::ErrorKind::NotFound, "no address"),
            })?;
        Ok(Client { addr, timeout: Duration::from_secs(30) })
    }

    /// A client for a known address.
    pub fn at(addr: SocketAddr) -> Client {
        Client { addr, timeout: Duration::from_secs(30) }
    }

    /// How long to wait to connect and for the reply. Keep it generous: a
    /// client that gives up and closes before the daemon writes its reply
    /// kills the daemon (SIGPIPE).
    pub fn with_timeout(mut self, timeout: Duration) -> Client {
        self.timeout = timeout;
        self
    }

    /// The address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `getStatus`: 1 for a daemon without GPU monitoring.
    pub fn status(&self) -> Result<i64> {
        #[derive(Deserialize)]
        struct Reply {
            status: serde_json::Value,
        }
        let body = self.call("getStatus", br#"{"fn":"getStatus"}"#)?;
        let reply: Reply = self.parse("getStatus", &body)?;
        reply.status.as_i64().ok_or_else(|| self.bad("getStatus", &body))
    }

    /// `getVersion`: the daemon's version string.
    pub fn version(&self) -> Result<String> {
        #[derive(Deserialize)]
        struct Reply {
            version: String,
        }
        let body = self.call("getVersion", br#"{"fn":"getVersion"}"#)?;
        Ok(self.parse::<Reply>("getVersion", &body)?.version)
    }

    /// `setKinetOnDemandRequest`: ask the matching processes to trace.
    pub fn gputrace(&self, request: &TraceRequest) -> Result<TraceReply> {
        const FN: &str = "setKinetOnDemandRequest";
        let body = self.call(FN, &request.body()?)?;
        self.parse(FN, &body)
    }

    /// One exchange. The request is framed before connecting (a client that
    /// connects and sends nothing blocks the daemon's only thread), and the
    /// reply is always read before closing.
    pub fn call(&self, function: &'static str, body: &[u8]) -> Result<Vec<u8>> {
        let mut frame = Vec::with_capacity(4 + body.len());
        frame.extend_from_slice(&(body.len() as i32).to_ne_bytes());
        frame.extend_from_slice(body);
        let addr = self.addr;
        let io_err = |during: &'static str, source: io::Error| match source.kind() {
            io::ErrorKind::ConnectionRefused => Error::Refused { addr },
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => Error::Timeout {
                addr,
                seconds: self.timeout.as_secs_f64(),
                during,
                left_reading: false,
            },
            _ => Error::Io { addr, source },
        };
        let mut stream =
            TcpStream::connect_timeout(&addr, self.timeout).map_err(|e| io_err("connecting", e))?;
        stream.set_read_timeout(Some(self.timeout)).map_err(|e| io_err("connecting", e))?;
        stream.set_write_timeout(Some(self.timeout)).map_err(|e| io_err("connecting", e))?;
        stream.write_all(&frame).map_err(|e| io_err("sending the request", e))?;

        // From here a request is in flight: the daemon serves one connection
        // at a time and may answer it long after (another client holds it),
        // and dies of SIGPIPE if we have gone by then. A reply that does not
        // come in time is left to a background reader, never abandoned.
        let timed_out = |stream: TcpStream, during: &'static str| Error::Timeout {
            addr,
            seconds: self.timeout.as_secs_f64(),
            during,
            left_reading: leave_to_reader(stream),
        };
        let mut prefix = [0u8; 4];
        match read_full(&mut stream, &mut prefix) {
            Ok(0) => return Err(Error::NoReply { addr, request: function }),
            Ok(4) => {}
            Ok(_) => return Err(Error::NoReply { addr, request: function }),
            Err(e) if is_timeout(&e) => return Err(timed_out(stream, "waiting for the reply")),
            Err(e) => return Err(io_err("waiting for the reply", e)),
        }
        if let Some(answered) = not_dynolog(&prefix, &mut stream) {
            return Err(Error::NotDynolog { addr, answered });
        }
        let length = i32::from_ne_bytes(prefix) as i64;
        if length <= 0 || length as usize > MAX_REPLY {
            return Err(Error::ReplyTooLarge { addr, length, limit: MAX_REPLY });
        }
        let mut reply = vec![0u8; length as usize];
        match read_full(&mut stream, &mut reply) {
            Ok(n) if n == reply.len() => Ok(reply),
            Ok(_) => Err(Error::NoReply { addr, request: function }),
            Err(e) if is_timeout(&e) => Err(timed_out(stream, "reading the reply")),
            Err(e) => Err(io_err("reading the reply", e)),
        }
    }

    fn parse<T: serde::de::DeserializeOwned>(
        &self,
        function: &'static str,
        body: &[u8],
    ) -> Result<T> {
        #[derive(Deserialize)]
        struct Failed {
            status: String,
        }
        if let Ok(failed) = serde_json::from_slice::<Failed>(body) {
            return Err(Error::Rejected {
                addr: self.addr,
                request: function,
                status: failed.status,
            });
        }
        serde_json::from_slice(body).map_err(|_| self.bad(function, body))
    }

    fn bad(&self, function: &'static str, body: &[u8]) -> Error {
        Error::BadReply {
            addr: self.addr,
            request: function,
            body: String::from_utf8_lossy(body).into_owned(),
        }
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock)
}

/// What answered, when a reply's first four bytes are not dynolog's length
/// prefix but the start of an HTTP response (`HTTP`, which as a length would
/// be 1,347,703,880 bytes): its status line, read from what follows.
fn not_dynolog(prefix: &[u8; 4], stream: &mut TcpStream) -> Option<String> {
    if prefix != b"HTTP" {
        return None;
    }
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut line = b"HTTP".to_vec();
    let mut byte = [0u8; 1];
    while line.len() < 200 && matches!(stream.read(&mut byte), Ok(1)) && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    let status = String::from_utf8_lossy(&line).trim().to_string();
    Some(format!("an HTTP server (`{status}`)"))
}

/// Hand `stream`, whose request the daemon may still answer, to a reader
/// that outlives this process (`cat`, its output discarded): the daemon's
/// reply then finds its peer, whenever it comes, and the daemon lives.
/// Whether the reader started.
fn leave_to_reader(stream: TcpStream) -> bool {
    let _ = stream.set_read_timeout(None);
    crate::session::cmd(&["cat".into()])
        .stdin_file(stream)
        .stdout_null()
        .stderr_null()
        .unchecked()
        .start()
        .map(std::mem::forget)
        .is_ok()
}

fn read_full(stream: &mut TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match stream.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

//! A fake dynolog RPC server on 127.0.0.1:0, written from
//! reference/dynolog.md: one request per connection, native-endian i32
//! length prefix, compact JSON replies with alphabetical keys; it can also
//! close without replying, reply slowly, or send a bogus length.

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpListener},
    sync::{Arc, Mutex},
    thread::JoinHandle,
    time::Duration,
};

#[derive(Debug, Clone)]
pub(crate) enum Reply {
    Json(String),
    /// Close the connection without replying (what the daemon does for
    /// requests it cannot parse).
    Close,
    /// Wait, then reply.
    Slow(Duration, String),
    /// A raw length prefix and nothing else.
    Prefix(i32),
    /// These bytes, whatever they are (what another server answers).
    Raw(Vec<u8>),
}

pub(crate) fn json(s: &str) -> Reply {
    Reply::Json(s.to_string())
}

pub(crate) const NO_MATCH: &str = r#"{"activityProfilersBusy":0,"activityProfilersTriggered":[],"eventProfilersBusy":0,"eventProfilersTriggered":[],"processesMatched":[]}"#;

pub(crate) fn matched(pids: &[u32]) -> Reply {
    let list = pids.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",");
    Reply::Json(format!(
        r#"{{"activityProfilersBusy":0,"activityProfilersTriggered":[{list}],"eventProfilersBusy":0,"eventProfilersTriggered":[],"processesMatched":[{list}]}}"#
    ))
}

pub(crate) struct FakeDaemon {
    pub(crate) addr: SocketAddr,
    /// Every request frame received, prefix included.
    pub(crate) frames: Arc<Mutex<Vec<Vec<u8>>>>,
    /// Whether a reply could not be written because the client had gone.
    pub(crate) client_closed_early: Arc<Mutex<bool>>,
    handle: Option<JoinHandle<()>>,
}

impl FakeDaemon {
    /// Serve `replies` in order, one connection each, then stop.
    pub(crate) fn serve(replies: Vec<Reply>) -> FakeDaemon {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let frames = Arc::new(Mutex::new(Vec::new()));
        let early = Arc::new(Mutex::new(false));
        let (f, e) = (Arc::clone(&frames), Arc::clone(&early));
        let handle = std::thread::spawn(move || {
            for reply in replies {
                let Ok((mut conn, _)) = listener.accept() else { return };
                let mut prefix = [0u8; 4];
                if conn.read_exact(&mut prefix).is_err() {
                    continue;
                }
                let len = i32::from_ne_bytes(prefix);
                let mut body = vec![0u8; len.max(0) as usize];
                if conn.read_exact(&mut body).is_err() {
                    continue;
                }
                let mut frame = prefix.to_vec();
                frame.extend_from_slice(&body);
                f.lock().unwrap().push(frame);
                let out = match reply {
                    Reply::Close => continue,
                    Reply::Json(text) => frame_of(text.as_bytes()),
                    Reply::Slow(wait, text) => {
                        std::thread::sleep(wait);
                        frame_of(text.as_bytes())
                    }
                    Reply::Prefix(n) => n.to_ne_bytes().to_vec(),
                    Reply::Raw(bytes) => bytes,
                };
                // As the real daemon: the length prefix, then the body, in
                // two writes; the second fails (the real one dies of
                // SIGPIPE) when the client has closed by then.
                let (prefix, body) = out.split_at(out.len().min(4));
                let wrote = conn.write_all(prefix).and_then(|()| {
                    std::thread::sleep(Duration::from_millis(20));
                    conn.write_all(body)?;
                    std::thread::sleep(Duration::from_millis(20));
                    conn.write_all(b"")
                });
                if wrote.is_err() {
                    *e.lock().unwrap() = true;
                }
            }
        });
        FakeDaemon { addr, frames, client_closed_early: early, handle: Some(handle) }
    }

    pub(crate) fn client(&self) -> dynolog_client::Client {
        dynolog_client::Client::at(self.addr).with_timeout(Duration::from_secs(5))
    }

    /// The request bodies received, as text.
    pub(crate) fn bodies(&self) -> Vec<String> {
        self.frames
            .lock()
            .unwrap()
            .iter()
            .map(|f| String::from_utf8_lossy(&f[4..]).into_owned())
            .collect()
    }

    pub(crate) fn join(mut self) {
        if let Some(h) = self.handle.take() {
            h.join().unwrap();
        }
    }
}

fn frame_of(body: &[u8]) -> Vec<u8> {
    let mut v = (body.len() as i32).to_ne_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

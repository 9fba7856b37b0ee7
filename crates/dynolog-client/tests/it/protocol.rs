//! Requests byte for byte, replies typed, every failure its own error.

use std::time::Duration;

use dynolog_client::{Client, Error, TraceRequest, Window};

use crate::fake::{FakeDaemon, NO_MATCH, Reply, hex, json, matched};

#[test]
fn status_and_version_are_the_real_bytes() {
    let daemon = FakeDaemon::serve(vec![json(r#"{"status":1}"#), json(r#"{"version":"0.6.0"}"#)]);
    let client = daemon.client();
    assert_eq!(client.status().unwrap(), 1);
    assert_eq!(client.version().unwrap(), "0.6.0");
    let frames = daemon.frames.lock().unwrap().clone();
    // exactly what the real dyno CLI sends (reference/dynolog.md §2)
    assert_eq!(hex(&frames[0]), "120000007b22666e223a22676574537461747573227d");
    assert_eq!(hex(&frames[1]), "130000007b22666e223a2267657456657273696f6e227d");
    daemon.join();
}

#[test]
fn gputrace_request_bytes() {
    let daemon = FakeDaemon::serve(vec![matched(&[772]), matched(&[7, 8])]);
    let client = daemon.client();
    let reply = client.gputrace(&TraceRequest::new("/tmp/dynotest_trace.json")).unwrap();
    assert_eq!(reply.processes_matched, [772]);
    assert_eq!(reply.activity_profilers_triggered, [772]);
    let mut r = TraceRequest::new("/tmp/run \"quoted\" \\ dir/it.pt.trace.json");
    r.window = Window::Iterations { count: 5, roundup: 1 };
    r.record_shapes = true;
    r.with_stacks = true;
    r.with_modules = true;
    r.job_id = 1234;
    r.pids = vec![7, 8];
    client.gputrace(&r).unwrap();
    insta::assert_snapshot!(daemon.bodies().join("\n"), @r#"
    {"fn":"setKinetOnDemandRequest","config":"ACTIVITIES_LOG_FILE=/tmp/dynotest_trace.json\nPROFILE_START_TIME=0\nACTIVITIES_DURATION_MSECS=500\nPROFILE_REPORT_INPUT_SHAPES=false\nPROFILE_WITH_STACK=false\nPROFILE_WITH_FLOPS=false\nPROFILE_WITH_MODULES=false","job_id":0,"pids":[0],"process_limit":64}
    {"fn":"setKinetOnDemandRequest","config":"ACTIVITIES_LOG_FILE=/tmp/run \"quoted\" \\ dir/it.pt.trace.json\nPROFILE_START_ITERATION=0\nPROFILE_START_ITERATION_ROUNDUP=1\nACTIVITIES_ITERATIONS=5\nPROFILE_REPORT_INPUT_SHAPES=true\nPROFILE_WITH_STACK=true\nPROFILE_WITH_FLOPS=false\nPROFILE_WITH_MODULES=true","job_id":1234,"pids":[7,8],"process_limit":64}
    "#);
    // a path with quotes and backslashes still makes valid JSON
    for body in daemon.bodies() {
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(v["config"].as_str().unwrap().starts_with("ACTIVITIES_LOG_FILE=/tmp/"));
    }
    // the prefix is the body length, native-endian
    let frames = daemon.frames.lock().unwrap().clone();
    assert_eq!(
        i32::from_ne_bytes(frames[0][..4].try_into().unwrap()) as usize,
        frames[0].len() - 4
    );
    daemon.join();
}

#[test]
fn a_reply_without_a_match_is_a_reply() {
    let daemon = FakeDaemon::serve(vec![json(NO_MATCH)]);
    let reply = daemon.client().gputrace(&TraceRequest::new("/tmp/t.json")).unwrap();
    assert!(reply.processes_matched.is_empty());
    daemon.join();
}

#[track_caller]
fn check_error(reply: Reply, expected: &str) {
    // A short timeout only where the daemon is to miss it: a loaded
    // machine may take longer than that to answer at once.
    let timeout = match reply {
        Reply::Slow(..) => Duration::from_millis(300),
        _ => Duration::from_secs(10),
    };
    let daemon = FakeDaemon::serve(vec![reply]);
    let client = daemon.client().with_timeout(timeout);
    let err = client.gputrace(&TraceRequest::new("/tmp/t.json")).unwrap_err();
    let text = err.to_string().replace(&daemon.addr.to_string(), "ADDR");
    assert_eq!(text, expected);
    let early = daemon.client_closed_early.clone();
    daemon.join();
    // However it failed, the client never left with the reply still due:
    // the real daemon would have died of SIGPIPE.
    assert!(!*early.lock().unwrap(), "the client closed before the daemon's reply: {expected}");
}

#[test]
fn each_failure_is_its_own_error() {
    check_error(
        json(
            r#"{"status":"failed with exception = [json.exception.type_error.302] type must be number, but is string"}"#,
        ),
        "dynolog at ADDR rejected setKinetOnDemandRequest: failed with exception = [json.exception.type_error.302] type must be number, but is string",
    );
    check_error(
        json(r#"{"status":"failed"}"#),
        "dynolog at ADDR rejected setKinetOnDemandRequest: failed",
    );
    check_error(
        Reply::Close,
        "dynolog at ADDR closed the connection without replying to setKinetOnDemandRequest",
    );
    check_error(
        Reply::Prefix(-1),
        "dynolog at ADDR sent a reply length of -1 bytes, more than the 1048576 allowed",
    );
    check_error(
        Reply::Prefix(1 << 30),
        "dynolog at ADDR sent a reply length of 1073741824 bytes, more than the 1048576 allowed",
    );
    check_error(
        json(r#"{"unexpected":true}"#),
        r#"dynolog at ADDR sent an unexpected reply to setKinetOnDemandRequest: {"unexpected":true}"#,
    );
    // A daemon held by another client answers late: the request is left
    // to a reader that outlives the call, and the daemon lives.
    check_error(
        Reply::Slow(Duration::from_secs(1), NO_MATCH.into()),
        "dynolog at ADDR did not answer within 0.3 s (waiting for the reply); the request was \
         left to a background reader, as dynolog dies (SIGPIPE) when a client leaves before its \
         reply",
    );
    // A web server on the port: its answer is no length prefix of 1.3 GB.
    check_error(
        Reply::Raw(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".to_vec()),
        "ADDR answers, but not as dynolog: an HTTP server (`HTTP/1.1 400 Bad Request`)",
    );
}

#[test]
fn refused_names_the_address_not_a_command() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let err = Client::new("127.0.0.1", port).unwrap().status().unwrap_err();
    assert!(matches!(err, Error::Refused { .. }), "{err:?}");
    // What to run is the front end's to say (STYLE rule 21).
    assert_eq!(
        err.to_string(),
        format!("no dynolog daemon at 127.0.0.1:{port} (connection refused)")
    );
}

#[test]
fn the_reply_is_read_before_closing() {
    // A slow daemon still gets its reply read (within the timeout): closing
    // early would kill a real daemon with SIGPIPE.
    let daemon =
        FakeDaemon::serve(vec![Reply::Slow(Duration::from_millis(300), r#"{"status":1}"#.into())]);
    assert_eq!(daemon.client().status().unwrap(), 1);
    let early = daemon.client_closed_early.clone();
    daemon.join();
    assert!(!*early.lock().unwrap());
}

#[test]
fn invalid_requests_never_reach_the_daemon() {
    let mut r = TraceRequest::new("/tmp/t.json");
    r.job_id = u64::from(u32::MAX);
    let err = Client::at("127.0.0.1:9".parse().unwrap()).gputrace(&r).unwrap_err();
    assert!(matches!(err, Error::InvalidRequest(_)), "{err:?}");
}

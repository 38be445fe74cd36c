//! `http_fetch` end to end: the tool through the `Toolbox` with the real `HttpFetcher` against
//! a loopback HTTP server (a named test double serving fixed answers): a granted GET, a body
//! cut at the cap, a redirect returned and not followed, an origin the node may not reach,
//! and no client at all.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

use std::io::{BufRead, BufReader, Write};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use weft_agents::HttpFetcher;
use weft_policy::{Identity, OperatorPolicy, Workspace, node_grants};
use weft_tools::{CallId, MemoryJournal, NoApprovals, ToolEnv, ToolLimits, ToolOutcome, Toolbox};

/// Serves `GET /ok`, `/big` (1,000 bytes) and `/redirect` (302 elsewhere) on loopback, one
/// connection at a time; returns the port and the paths it was asked for.
fn server() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            reader.read_line(&mut first).unwrap();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                    break;
                }
            }
            let path = first.split_whitespace().nth(1).unwrap_or("").to_string();
            log.lock().unwrap().push(path.clone());
            let (status, extra, body) = match path.as_str() {
                "/ok" => (
                    "200 OK",
                    "content-type: text/plain\r\n".to_string(),
                    "hello".to_string(),
                ),
                "/big" => ("200 OK", String::new(), "x".repeat(1000)),
                "/redirect" => (
                    "302 Found",
                    "location: http://example.invalid/elsewhere\r\n".to_string(),
                    String::new(),
                ),
                _ => ("404 Not Found", String::new(), String::new()),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, seen)
}

async fn call(port: u16, fetcher: Option<&HttpFetcher>, args: Value) -> ToolOutcome {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path().to_str().unwrap()).unwrap();
    let origin = format!("http://127.0.0.1:{port}");
    let doc = json!({"nodes": {"n": {"requirements": {"tools": ["http_fetch"],
        "network": "restricted", "permissions": [format!("net:fetch:{origin}")]}}}});
    let grants = node_grants(&doc, "n").unwrap();
    let policy = OperatorPolicy::from_toml(
        "[[policy.rules]]\ndecision = \"allow\"\npermission = \"net:fetch:*\"\n",
    )
    .unwrap();
    let identity = Identity {
        subject: "tester".into(),
        session: None,
    };
    let journal = MemoryJournal::default();
    let id = CallId {
        run: "r".into(),
        node: "n".into(),
        attempt: 1,
        index: 1,
    };
    let env = ToolEnv {
        workspace: &workspace,
        policy: &policy,
        grants: Some(&grants),
        identity: &identity,
        approvals: &NoApprovals,
        journal: &journal,
        call: &id,
        sandbox: None,
        fetcher: fetcher.map(|f| f as &dyn weft_tools::Fetcher),
        limits: ToolLimits::default(),
    };
    Toolbox::new()
        .unwrap()
        .call("http_fetch", &args, &env)
        .await
}

fn ok(outcome: ToolOutcome) -> Value {
    match outcome {
        ToolOutcome::Ok { result, .. } => result,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn http_fetch_reads_granted_origins_only_and_never_follows_redirects() {
    let (port, seen) = server();
    let fetcher = HttpFetcher::new().unwrap();
    let url = |p: &str| format!("http://127.0.0.1:{port}{p}");

    let r = ok(call(port, Some(&fetcher), json!({"url": url("/ok")})).await);
    assert_eq!(
        (r["status"].as_u64(), r["body"].as_str()),
        (Some(200), Some("hello"))
    );
    assert_eq!(r["content_type"], "text/plain");

    let r = ok(call(
        port,
        Some(&fetcher),
        json!({"url": url("/big"), "max_bytes": 10}),
    )
    .await);
    assert_eq!(
        (r["body"].as_str().map(str::len), r["truncated"].as_bool()),
        (Some(10), Some(true))
    );

    let r = ok(call(port, Some(&fetcher), json!({"url": url("/redirect")})).await);
    assert_eq!(r["status"], 302);
    assert_eq!(r["location"], "http://example.invalid/elsewhere");

    // Another origin than the node's permission: denied by the node layer, nothing sent.
    let before = seen.lock().unwrap().len();
    let other = format!("http://127.0.0.2:{port}/ok");
    match call(port, Some(&fetcher), json!({"url": other})).await {
        ToolOutcome::Denied { decision } => {
            assert_eq!(
                decision.source,
                weft_policy::Source::Node,
                "{}",
                decision.reason
            );
        }
        other => panic!("{other:?}"),
    }
    // Without a client the call is blocked, never sent another way.
    match call(port, None, json!({"url": url("/ok")})).await {
        ToolOutcome::Failed { class, .. } => {
            assert_eq!(class, weft_agents::FailureClass::Blocked);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        seen.lock().unwrap().len(),
        before,
        "refused calls reach nobody"
    );
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        ["/ok", "/big", "/redirect"]
    );
}

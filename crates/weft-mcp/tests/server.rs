//! weft-mcp against a real MCP server: the official Python SDK (`mcp` 2.3.0) running
//! `scripts/mcp/test_server.py` over stdio, from the venv `scripts/mcp/install.sh` makes.
//! Listing and calling tools, the output cap, a tool error, a call denied and one asked by the
//! operator's policy (with the approval bound to the call), journal replay, a server that
//! crashes mid-call or on start, a call that times out, the environment allowlist, the process
//! group killed on drop, and the same server over streamable HTTP.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure"
)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::{Value, json};
use weft_core::FailureClass;
use weft_mcp::{McpClient, McpConfig, McpServers, ServerConfig};
use weft_policy::{Identity, OperatorPolicy, Verdict, Workspace, node_grants};
use weft_tools::{CallId, MemoryJournal, ToolEnv, ToolLimits, ToolOutcome};

/// The venv's Python, installed on first use, or a failure that says why it cannot be
/// (never a skip).
fn python() -> PathBuf {
    weft_test_support::mcp_python()
}

fn server_script() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/mcp/test_server.py");
    p.canonicalize().unwrap().to_str().unwrap().to_owned()
}

/// A `weft.toml` with the test server as `demo` (and `extra` lines in its table).
fn config(extra: &str) -> McpConfig {
    let text = format!(
        "[mcp.servers.demo]\ncommand = {:?}\nargs = [{:?}]\n{extra}\n\
         [mcp.servers.broken]\ncommand = {:?}\nargs = [{:?}, \"--crash-on-start\"]\n",
        python().to_str().unwrap(),
        server_script(),
        python().to_str().unwrap(),
        server_script(),
    );
    McpConfig::parse(&text).unwrap()
}

fn demo(extra: &str) -> ServerConfig {
    config(extra).servers["demo"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_tools_with_schemas_and_calls_them() {
    let client = McpClient::start(&demo("")).await.unwrap();
    let tools = client
        .list_tools(std::time::Duration::from_secs(30))
        .await
        .unwrap();
    let names: BTreeSet<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for name in ["add", "echo", "big", "sleep", "fail", "crash"] {
        assert!(names.contains(name), "{name} in {names:?}");
    }
    let add = tools.iter().find(|t| t.name == "add").unwrap();
    assert_eq!(add.description, "Adds two integers.");
    assert_eq!(add.input_schema["properties"]["a"]["type"], "integer");

    let r = client.call_tool("add", &json!({"a": 2, "b": 40})).await;
    let r = r.unwrap();
    assert_eq!(r["content"][0]["text"], "42");
    assert_eq!(r["structured_content"]["result"], 42);
}

/// Whether process `pid` is alive (not gone, not a zombie).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|s| !s.trim_start().starts_with('Z'))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_client_kills_the_server_process_group() {
    let client = McpClient::start(&demo("")).await.unwrap();
    let pid = client.process_group().unwrap();
    assert!(alive(pid));
    drop(client);
    // SIGKILL is asynchronous: wait for the kernel (bounded), not for a time.
    let mut gone = false;
    for _ in 0..100 {
        if !alive(pid) {
            gone = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(gone, "the server {pid} outlived its client");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_allowlisted_variables_reach_the_server() {
    let mut cfg = demo("");
    if let weft_mcp::Transport::Stdio { env, .. } = &mut cfg.transport {
        *env = vec!["HOME".into()];
    }
    let client = McpClient::start(&cfg).await.unwrap();
    let getenv = async |name: &str| {
        let r = client.call_tool("getenv", &json!({"name": name})).await;
        r.unwrap()["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let home = std::env::var("HOME").unwrap();
    assert_eq!(getenv("HOME").await, home);
    assert!(std::env::var_os("PATH").is_some());
    assert_eq!(getenv("PATH").await, "<unset>");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_over_the_cap_are_cut_and_marked() {
    let client = McpClient::start(&demo("max_output_bytes = 100"))
        .await
        .unwrap();
    let r = client.call_tool("big", &json!({"n": 5000})).await.unwrap();
    assert_eq!(r["truncated"], true);
    assert_eq!(r["content"][0]["text"].as_str().unwrap().len(), 100);
    assert!(r["bytes"].as_u64().unwrap() > 5000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_raises_is_a_tool_error_and_the_server_stays_up() {
    let client = McpClient::start(&demo("")).await.unwrap();
    let e = client
        .call_tool("fail", &json!({"message": "no such row"}))
        .await
        .unwrap_err();
    assert_eq!(e.class, FailureClass::ToolError);
    assert!(e.message.contains("no such row"), "{e}");
    let e = client
        .call_tool("add", &json!({"a": "x"}))
        .await
        .unwrap_err();
    assert_eq!(e.class, FailureClass::ToolError, "{e}");
    let r = client.call_tool("add", &json!({"a": 1, "b": 1})).await;
    assert_eq!(r.unwrap()["content"][0]["text"], "2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashes_mid_call_is_transient() {
    let client = McpClient::start(&demo("")).await.unwrap();
    let e = client.call_tool("crash", &json!({})).await.unwrap_err();
    assert_eq!(e.class, FailureClass::Transient, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_is_transient_with_evidence() {
    let cfg = config("");
    let e = McpClient::start(&cfg.servers["broken"]).await.unwrap_err();
    assert_eq!(e.class, FailureClass::Transient, "{e}");
    assert!(e.message.contains("`broken`"), "{e}");
    let evidence = e.evidence.clone().unwrap_or_default();
    assert!(evidence.contains("cannot open its database"), "{e:?}");
    let mut missing = demo("");
    missing.transport = weft_mcp::Transport::Stdio {
        command: "/nonexistent/mcp-server".into(),
        args: vec![],
        env: vec![],
    };
    let e = McpClient::start(&missing).await.unwrap_err();
    assert_eq!(e.class, FailureClass::Transient, "{e}");
    assert!(e.message.contains("cannot start"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_timeout_is_a_timeout() {
    let client = McpClient::start(&demo("call_timeout_seconds = 1"))
        .await
        .unwrap();
    let e = client
        .call_tool("sleep", &json!({"seconds": 30}))
        .await
        .unwrap_err();
    assert_eq!(e.class, FailureClass::Timeout, "{e}");
    assert!(e.message.contains("within 1s"), "{e}");
}

/// The operator's rules: `demo/add` and `demo/crash` allowed, `demo/echo` asked, the rest of
/// `demo` denied.
const POLICY: &str = r#"
[policy]
version = "test"

[[policy.rules]]
decision = "allow"
permission = "mcp:call:demo/add"

[[policy.rules]]
decision = "allow"
permission = "mcp:call:demo/crash"

[[policy.rules]]
decision = "ask"
permission = "mcp:call:demo/echo"

[[policy.rules]]
decision = "deny"
permission = "mcp:*:demo/*"
reason = "not this tool"
"#;

struct Gate {
    _dir: tempfile::TempDir,
    workspace: Workspace,
    policy: OperatorPolicy,
    grants: weft_policy::NodeGrants,
    identity: Identity,
    journal: MemoryJournal,
    approvals: BTreeSet<String>,
}

impl Gate {
    fn new(permissions: Value) -> Gate {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let doc = json!({"nodes": {"n": {"type": "task", "requirements": {
            "mcp_servers": ["demo"], "permissions": permissions}}}});
        Gate {
            workspace: Workspace::new(root.to_str().unwrap()).unwrap(),
            _dir: dir,
            policy: OperatorPolicy::from_toml(POLICY).unwrap(),
            grants: node_grants(&doc, "n").unwrap(),
            identity: Identity {
                subject: "alice".into(),
                session: None,
            },
            journal: MemoryJournal::default(),
            approvals: BTreeSet::new(),
        }
    }

    async fn call(&self, servers: &McpServers, index: u32, name: &str, args: Value) -> ToolOutcome {
        let id = CallId {
            run: "run-1".into(),
            node: "n".into(),
            attempt: 1,
            index,
        };
        let env = ToolEnv {
            workspace: &self.workspace,
            policy: &self.policy,
            grants: Some(&self.grants),
            identity: &self.identity,
            approvals: &self.approvals,
            journal: &self.journal,
            call: &id,
            sandbox: None,
            fetcher: None,
            limits: ToolLimits::default(),
        };
        servers.call(name, &args, &env).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_decided_as_mcp_call_server_tool_and_journalled() {
    let servers = McpServers::new(config(""));
    let offered = servers.offer(&["demo".into()]).await.unwrap();
    assert!(offered.iter().any(|t| t.name == "mcp__demo__add"));

    let g = Gate::new(json!(["mcp:call:demo/*"]));
    let add = g
        .call(&servers, 1, "mcp__demo__add", json!({"a": 2, "b": 3}))
        .await;
    let ToolOutcome::Ok { result, replayed } = &add else {
        panic!("{add:?}")
    };
    assert_eq!(
        (result["content"][0]["text"].as_str(), *replayed),
        (Some("5"), false)
    );
    // The same call slot again is answered from the journal, not run again.
    let again = g
        .call(&servers, 1, "mcp__demo__add", json!({"a": 2, "b": 3}))
        .await;
    assert!(
        matches!(again, ToolOutcome::Ok { replayed: true, .. }),
        "{again:?}"
    );

    // The operator's deny.
    let big = g.call(&servers, 2, "mcp__demo__big", json!({"n": 1})).await;
    let ToolOutcome::Denied { decision } = &big else {
        panic!("{big:?}")
    };
    assert_eq!(decision.decision, Verdict::Deny);
    assert!(
        decision.reason.contains("not this tool"),
        "{}",
        decision.reason
    );

    // The operator's ask, bound to the exact arguments.
    let echo = g
        .call(&servers, 3, "mcp__demo__echo", json!({"text": "a"}))
        .await;
    let ToolOutcome::NeedsApproval { approval, .. } = &echo else {
        panic!("{echo:?}")
    };
    let mut approved = Gate::new(json!(["mcp:call:demo/*"]));
    approved.approvals.insert(approval.digest.clone());
    let r = approved
        .call(&servers, 3, "mcp__demo__echo", json!({"text": "a"}))
        .await;
    assert!(matches!(r, ToolOutcome::Ok { .. }), "{r:?}");
    let other = approved
        .call(&servers, 4, "mcp__demo__echo", json!({"text": "b"}))
        .await;
    assert!(
        matches!(other, ToolOutcome::NeedsApproval { .. }),
        "{other:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_grants_bound_mcp_calls_too() {
    let servers = McpServers::new(config(""));
    // The node may call only `demo/add`: the operator's allow of `demo/crash` does not widen it.
    let g = Gate::new(json!(["mcp:call:demo/add"]));
    let r = g.call(&servers, 1, "mcp__demo__crash", json!({})).await;
    assert!(matches!(r, ToolOutcome::Denied { .. }), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_server_is_started_again_on_next_use() {
    let servers = McpServers::new(config(""));
    let g = Gate::new(json!(["mcp:call:demo/*"]));
    let r = g.call(&servers, 1, "mcp__demo__crash", json!({})).await;
    let ToolOutcome::Failed { class, .. } = &r else {
        panic!("{r:?}")
    };
    assert_eq!(*class, FailureClass::Transient);
    // The model is told the class as AGS spells it.
    assert_eq!(r.to_model().0["error"], "transient");
    let r = g
        .call(&servers, 2, "mcp__demo__add", json!({"a": 1, "b": 2}))
        .await;
    assert!(matches!(r, ToolOutcome::Ok { .. }), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offering_a_server_that_cannot_start_fails_and_an_unknown_one_too() {
    let servers = McpServers::new(config(""));
    let e = servers.offer(&["broken".into()]).await.unwrap_err();
    assert_eq!(e.class, FailureClass::Transient, "{e}");
    let e = servers.offer(&["nope".into()]).await.unwrap_err();
    assert!(e.message.contains("no MCP server `nope`"), "{e}");
}

/// The test server serving streamable HTTP, killed when dropped.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn http_server() -> HttpServer {
    let port = free_port();
    let child = std::process::Command::new(python())
        .args([server_script(), "--http".into(), port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    HttpServer {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

fn http_config(url: &str) -> ServerConfig {
    let text = format!("[mcp.servers.web]\nurl = {url:?}\nstart_timeout_seconds = 5\n");
    McpConfig::parse(&text).unwrap().servers["web"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamable_http_server_is_listed_and_called() {
    let server = http_server();
    let config = http_config(&server.url);
    // The server takes a moment to listen: try again while it refuses (bounded).
    let mut client = None;
    for _ in 0..100 {
        match McpClient::start(&config).await {
            Ok(c) => {
                client = Some(c);
                break;
            }
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
        }
    }
    let client = client.expect("the HTTP server never answered");
    assert_eq!(client.process_group(), None, "weft does not own it");
    let tools = client
        .list_tools(std::time::Duration::from_secs(30))
        .await
        .unwrap();
    assert!(tools.iter().any(|t| t.name == "add"), "{tools:?}");
    let r = client.call_tool("add", &json!({"a": 20, "b": 22})).await;
    assert_eq!(r.unwrap()["content"][0]["text"], "42");
    let e = client
        .call_tool("fail", &json!({"message": "over http"}))
        .await
        .unwrap_err();
    assert_eq!(e.class, FailureClass::ToolError, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_does_not_listen_is_transient() {
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let e = McpClient::start(&http_config(&url)).await.unwrap_err();
    assert_eq!(e.class, FailureClass::Transient, "{e}");
    assert!(e.message.contains("`web`"), "{e}");
}

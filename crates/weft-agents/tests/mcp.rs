//! The model agent with MCP tools, against the loopback provider double and a real MCP server
//! (the official Python SDK running `scripts/mcp/test_server.py`, from the venv that
//! `scripts/mcp/install.sh` makes): a node that requires the server is offered its tools as
//! `mcp__demo__TOOL`; the model calls one, gets its result, then delivers with `emit_output`;
//! the call is journalled under the attempt's call id. A required server that cannot start, or
//! that is not configured, makes the attempt `blocked` with RT012.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::loopback::{Loopback, Reply};
use weft_agents::FailureClass;
use weft_agents::{AgentTools, LoopSettings, ModelAgent, ProviderConfig, ProviderKind};
use weft_engine::agent::{Agent, AgentRequest, Limits, Model, OutputDecl, Route, Tier};
use weft_mcp::{McpConfig, McpServers};
use weft_policy::{Identity, OperatorPolicy};
use weft_tools::{CallId, Journal, MemoryJournal};

const POLICY: &str = r#"
[policy]
[[policy.rules]]
decision = "allow"
permission = "mcp:call:demo/add"
[[policy.rules]]
decision = "allow"
permission = "mcp:call:demo/fail"
"#;

/// The venv's Python, installed on first use, or a failure that says why it cannot be
/// (never a skip).
fn python() -> String {
    weft_test_support::mcp_python().to_str().unwrap().to_owned()
}

fn mcp_config() -> McpConfig {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/mcp/test_server.py")
        .canonicalize()
        .unwrap();
    let script = script.to_str().unwrap();
    let py = python();
    McpConfig::parse(&format!(
        "[mcp.servers.demo]\ncommand = {py:?}\nargs = [{script:?}]\n\
         [mcp.servers.broken]\ncommand = {py:?}\nargs = [{script:?}, \"--crash-on-start\"]\n"
    ))
    .unwrap()
}

fn document(servers: &[&str]) -> Value {
    json!({"nodes": {"adder": {"type": "task", "requirements": {
        "mcp_servers": servers,
        "permissions": ["mcp:call:demo/*"]}}}})
}

struct Setup {
    dir: tempfile::TempDir,
    journal: Arc<MemoryJournal>,
    agent: ModelAgent,
}

fn setup(server: &Loopback, servers: &[&str], mcp: Option<McpConfig>) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let journal = Arc::new(MemoryJournal::default());
    let mut tools = AgentTools::new(
        Arc::new(document(servers)),
        Arc::new(OperatorPolicy::from_toml(POLICY).unwrap()),
        Identity {
            subject: "alice".into(),
            session: None,
        },
        journal.clone(),
        "run-9",
    )
    .unwrap();
    tools.mcp = mcp.map(|c| Arc::new(McpServers::new(c)));
    let config = ProviderConfig::new("loopback", ProviderKind::OpenAi, &server.base_url);
    let agent = ModelAgent::new(LoopSettings::default())
        .with_provider(config.build().unwrap())
        .with_model(
            Model {
                tier: Tier::Standard,
                model: "test-model".into(),
                provider: "loopback".into(),
                context_tokens: Some(8192),
            },
            None,
        )
        .with_tools(tools);
    Setup {
        dir,
        journal,
        agent,
    }
}

fn request(s: &Setup) -> AgentRequest {
    AgentRequest {
        node: "adder".into(),
        attempt: 1,
        inputs: json!({}),
        brief: Some("Add 2 and 40.".into()),
        guidance: Default::default(),
        outputs: vec![OutputDecl {
            name: "sum".into(),
            required: true,
            type_name: Some("integer".into()),
        }],
        decision_labels: vec![],
        decision_default: None,
        feedback: None,
        route: Some(Route {
            requested_tier: "standard".into(),
            effective_tier: "standard".into(),
            provider: "loopback".into(),
            model: "test-model".into(),
            downgraded: false,
            reason: None,
        }),
        limits: Limits::wall_clock(Duration::from_secs(60)),
        workspace: s.dir.path().to_path_buf(),
        config: Value::Null,
        approvals: Vec::new(),
        journal: Default::default(),
    }
}

fn call(id: &str, name: &str, arguments: Value) -> Reply {
    Reply::json(
        200,
        json!({
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": id, "type": "function",
                    "function": {"name": name, "arguments": arguments.to_string()}}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        })
        .to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_calls_an_mcp_tool_then_emit_output_delivers() {
    let server = Loopback::start(vec![
        call("c1", "mcp__demo__add", json!({"a": 2, "b": 40})),
        call("c2", "emit_output", json!({"sum": 42})),
    ])
    .await;
    let s = setup(&server, &["demo"], Some(mcp_config()));
    let result = s.agent.run(&request(&s)).await;
    assert!(result.failure.is_none(), "{:?}", result.failure);
    assert_eq!(result.outputs["sum"], 42);
    assert_eq!(result.usage.tool_calls, 1);

    let requests = server.requests();
    let first = requests[0].json();
    let tools = first["tools"].as_array().unwrap();
    let add = tools
        .iter()
        .find(|t| t["function"]["name"] == "mcp__demo__add")
        .unwrap_or_else(|| panic!("no mcp__demo__add in {tools:#?}"));
    assert_eq!(
        add["function"]["parameters"]["properties"]["b"]["type"],
        "integer"
    );
    let messages = requests[1].json()["messages"].clone();
    let reply = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "c1")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let reply: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(reply["content"][0]["text"], "42");
    let key = CallId {
        run: "run-9".into(),
        node: "adder".into(),
        attempt: 1,
        index: 1,
    }
    .key();
    let entry = s.journal.get(&key).unwrap();
    assert_eq!(entry["tool"], "mcp__demo__add");
    assert_eq!(entry["result"]["structured_content"]["result"], 42);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_server_that_cannot_start_blocks_the_attempt_with_rt012() {
    let server = Loopback::start(vec![call("c1", "emit_output", json!({"sum": 1}))]).await;
    let s = setup(&server, &["broken"], Some(mcp_config()));
    let failure = s.agent.run(&request(&s)).await.failure.unwrap();
    assert_eq!(failure.class, FailureClass::Blocked);
    assert!(failure.message.contains("RT012"), "{}", failure.message);
    assert!(
        failure.message.contains("cannot open its database"),
        "{}",
        failure.message
    );
    assert!(server.requests().is_empty(), "no token is spent");

    let server = Loopback::start(vec![call("c1", "emit_output", json!({"sum": 1}))]).await;
    let s = setup(&server, &["demo"], None);
    let failure = s.agent.run(&request(&s)).await.failure.unwrap();
    assert_eq!(failure.class, FailureClass::Blocked);
    assert!(failure.message.contains("RT012"), "{}", failure.message);
}

/// An MCP server's own error is `tool_error` (`weft_core::FailureClass`), and the model is told
/// that class as AGS spells it; the attempt goes on (the model may try differently).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_error_reaches_the_model_as_its_class() {
    let server = Loopback::start(vec![
        call("c1", "mcp__demo__fail", json!({"message": "no such row"})),
        call("c2", "emit_output", json!({"sum": 42})),
    ])
    .await;
    let s = setup(&server, &["demo"], Some(mcp_config()));
    let result = s.agent.run(&request(&s)).await;
    assert!(result.failure.is_none(), "{:?}", result.failure);
    let messages = server.requests()[1].json()["messages"].clone();
    let reply = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "c1")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let reply: Value = serde_json::from_str(&reply).unwrap();
    let class: FailureClass = serde_json::from_value(reply["error"].clone()).unwrap();
    assert_eq!(class, FailureClass::ToolError, "{reply}");
    assert!(
        reply["message"].as_str().unwrap().contains("no such row"),
        "{reply}"
    );
}

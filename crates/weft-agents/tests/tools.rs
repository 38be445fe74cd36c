//! The model agent with built-in tools, against the loopback provider double and real files:
//! the node's `requirements.tools` offered beside `emit_output`; a `file_write` call run under
//! the node's permissions, its result fed back, then `emit_output`; a refused call answered
//! as labelled data; an `ask` ending the attempt `permission_denied` with the approval
//! digest; `max_tool_calls` enforced before a call runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::loopback::{Loopback, Recorded, Reply};
use weft_agents::{AgentTools, LoopSettings, ModelAgent, ProviderConfig, ProviderKind};
use weft_engine::agent::{Agent, AgentRequest, Limits, Model, OutputDecl, Route, Tier};
use weft_policy::{Identity, OperatorPolicy};
use weft_tools::{CallId, Journal, MemoryJournal};

const POLICY: &str = r#"
[policy]
[[policy.rules]]
decision = "ask"
permission = "fs:write:deploy/**"
[[policy.rules]]
decision = "allow"
permission = "fs:*"
"#;

/// A document whose node `writer` may use the file tools and write under `notes/` and
/// `deploy/`.
fn document() -> Value {
    json!({"nodes": {"writer": {"type": "task", "requirements": {
        "tools": ["file_write", "file_read", {"name": "web_search", "optional": true}],
        "workspace": "read_write",
        "permissions": ["fs:read:**", "fs:write:notes/**", "fs:write:deploy/**"]}}}})
}

struct Setup {
    dir: tempfile::TempDir,
    journal: Arc<MemoryJournal>,
    agent: ModelAgent,
}

fn setup(server: &Loopback) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let journal = Arc::new(MemoryJournal::default());
    let tools = AgentTools::new(
        Arc::new(document()),
        Arc::new(OperatorPolicy::from_toml(POLICY).unwrap()),
        Identity {
            subject: "alice".into(),
            session: None,
        },
        journal.clone(),
        "run-7",
    )
    .unwrap();
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

fn request(s: &Setup, limits: Limits) -> AgentRequest {
    AgentRequest {
        node: "writer".into(),
        attempt: 1,
        inputs: json!({}),
        brief: Some("Write the notes.".into()),
        outputs: vec![OutputDecl {
            name: "summary".into(),
            required: true,
            type_name: Some("string".into()),
        }],
        decision_labels: vec![],
        feedback: None,
        route: Some(Route {
            requested_tier: "standard".into(),
            effective_tier: "standard".into(),
            provider: "loopback".into(),
            model: "test-model".into(),
            downgraded: false,
            reason: None,
        }),
        limits,
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

/// The tool message answering `call_id` in a recorded request.
fn tool_reply(r: &Recorded, call_id: &str) -> Value {
    let messages = r.json()["messages"].as_array().unwrap().clone();
    let m = messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .unwrap_or_else(|| panic!("no tool message for {call_id}: {messages:#?}"))
        .clone();
    serde_json::from_str(m["content"].as_str().unwrap()).unwrap()
}

fn limits() -> Limits {
    Limits::wall_clock(Duration::from_secs(60))
}

#[tokio::test]
async fn a_file_write_call_runs_under_the_node_permissions_then_emit_output_delivers() {
    let server = Loopback::start(vec![
        call(
            "c1",
            "file_write",
            json!({"path": "notes/a.md", "content": "hello"}),
        ),
        call("c2", "emit_output", json!({"summary": "wrote notes/a.md"})),
    ])
    .await;
    let s = setup(&server);
    let result = s.agent.run(&request(&s, limits())).await;
    assert!(result.failure.is_none(), "{:?}", result.failure);
    assert_eq!(result.outputs["summary"], "wrote notes/a.md");
    assert_eq!(result.usage.tool_calls, 1);
    assert_eq!(
        std::fs::read_to_string(s.dir.path().join("notes/a.md")).unwrap(),
        "hello"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = requests[0].json();
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["emit_output", "file_write", "file_read"],
        "web_search is not built"
    );
    assert_eq!(first["tool_choice"], "required");
    assert_eq!(
        tool_reply(&requests[1], "c1"),
        json!({"path": "notes/a.md", "bytes": 5})
    );
    // Journalled under the attempt's first call id.
    let key = CallId {
        run: "run-7".into(),
        node: "writer".into(),
        attempt: 1,
        index: 1,
    }
    .key();
    assert_eq!(s.journal.get(&key).unwrap()["result"]["bytes"], 5);
    let transcript = result.transcript.unwrap();
    assert_eq!(transcript[0]["tool_results"][0]["tool"], "file_write");
}

#[tokio::test]
async fn a_refused_call_is_answered_as_data_and_the_loop_goes_on() {
    let server = Loopback::start(vec![
        call(
            "c1",
            "file_write",
            json!({"path": "src/main.rs", "content": "x"}),
        ),
        call("c2", "shell_exec", json!({"command": "ls"})),
        call("c3", "emit_output", json!({"summary": "could not"})),
    ])
    .await;
    let s = setup(&server);
    let result = s.agent.run(&request(&s, limits())).await;
    assert!(result.failure.is_none(), "{:?}", result.failure);
    assert!(!s.dir.path().join("src/main.rs").exists());
    let requests = server.requests();
    let refusal = tool_reply(&requests[1], "c1");
    assert_eq!(refusal["error"], "permission_denied");
    assert_eq!(refusal["source"]["layer"], "node");
    let messages = requests[2].json()["messages"].clone();
    let unknown = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "c2")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(unknown.contains("Unknown tool `shell_exec`"), "{unknown}");
    assert_eq!(result.usage.tool_calls, 2);
}

#[tokio::test]
async fn an_ask_ends_the_attempt_with_the_approval_digest() {
    let server = Loopback::start(vec![call(
        "c1",
        "file_write",
        json!({"path": "deploy/app.toml", "content": "v1", "approved": true}),
    )])
    .await;
    let s = setup(&server);
    // `approved: true` from the model is a validation error, answered as data.
    server.push(call(
        "c2",
        "file_write",
        json!({"path": "deploy/app.toml", "content": "v1"}),
    ));
    let result = s.agent.run(&request(&s, limits())).await;
    let failure = result.failure.unwrap();
    assert_eq!(failure.class, "permission_denied");
    assert!(
        failure.message.contains("digest sha256:"),
        "{}",
        failure.message
    );
    // The engine gets the action to put before a person: its digest, tool and resource.
    let approval = result.approval.expect("an approval request");
    assert!(failure.message.contains(&approval.digest));
    assert_eq!(
        (approval.tool.as_str(), approval.resource.as_str()),
        ("file_write", "deploy/app.toml")
    );
    assert!(!s.dir.path().join("deploy/app.toml").exists());
    let forged = tool_reply(&server.requests()[1], "c1");
    assert_eq!(forged["error"], "validation_error");
}

#[tokio::test]
async fn max_tool_calls_is_enforced_before_a_call_runs() {
    let server = Loopback::start(vec![
        call(
            "c1",
            "file_write",
            json!({"path": "notes/1", "content": "1"}),
        ),
        call(
            "c2",
            "file_write",
            json!({"path": "notes/2", "content": "2"}),
        ),
    ])
    .await;
    let s = setup(&server);
    let mut l = limits();
    l.max_tool_calls = Some(1);
    let result = s.agent.run(&request(&s, l)).await;
    let failure = result.failure.unwrap();
    assert_eq!(failure.class, "budget_exceeded");
    assert!(
        failure.message.contains("max_tool_calls 1 exceeded (2)"),
        "{}",
        failure.message
    );
    assert!(s.dir.path().join("notes/1").exists());
    assert!(!s.dir.path().join("notes/2").exists());
}

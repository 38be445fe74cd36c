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
use weft_agents::FailureClass;
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
        guidance: Default::default(),
        outputs: vec![OutputDecl {
            name: "summary".into(),
            required: true,
            type_name: Some("string".into()),
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
    assert_eq!(failure.class, FailureClass::PermissionDenied);
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
    assert_eq!(failure.class, FailureClass::BudgetExceeded);
    assert!(
        failure.message.contains("max_tool_calls 1 exceeded (2)"),
        "{}",
        failure.message
    );
    assert!(s.dir.path().join("notes/1").exists());
    assert!(!s.dir.path().join("notes/2").exists());
}

/// The host tool of the next test: `lookup {key}` answers `value-<key>` as text.
struct Lookup;

impl weft_tools::HostTool for Lookup {
    fn name(&self) -> &str {
        "lookup"
    }
    fn description(&self) -> &str {
        "Look up the value stored under a key."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "additionalProperties": false, "required": ["key"],
            "properties": {"key": {"type": "string"}}})
    }
    fn call<'a>(&'a self, arguments: &'a Value) -> weft_tools::HostFuture<'a> {
        Box::pin(async move {
            Ok(json!(format!(
                "value-{}",
                arguments["key"].as_str().unwrap()
            )))
        })
    }
}

/// A ReAct-style exchange on a host tool: the model calls `lookup` (offered because the node
/// names it, allowed as `custom:call:host/lookup`), is answered with the text, then answers in
/// text, which fills the node's one text output (`text_answer`); the tool choice is `auto`.
/// Without `text_answer` the same text turn is nudged towards `emit_output`.
#[tokio::test]
async fn a_host_tool_call_then_a_text_answer_delivers_the_text_output() {
    let doc = json!({"nodes": {"writer": {"type": "task", "requirements": {
        "tools": ["lookup"], "permissions": ["custom:call:host/lookup"]}}}});
    let policy = "[policy]\n[[policy.rules]]\ndecision = \"allow\"\npermission = \"custom:call:host/lookup\"\n";
    let agent = |server: &Loopback, text_answer: bool| {
        let tools = AgentTools::new(
            Arc::new(doc.clone()),
            Arc::new(OperatorPolicy::from_toml(policy).unwrap()),
            Identity {
                subject: "alice".into(),
                session: None,
            },
            Arc::new(MemoryJournal::default()),
            "run-8",
        )
        .unwrap()
        .with_host_tool(Arc::new(Lookup))
        .unwrap();
        assert!(
            tools.missing_for("writer").is_empty(),
            "a host tool is not RT012"
        );
        let config = ProviderConfig::new("loopback", ProviderKind::OpenAi, &server.base_url);
        ModelAgent::new(LoopSettings {
            text_answer,
            max_steps: 3,
            ..LoopSettings::default()
        })
        .with_provider(config.build().unwrap())
        .with_tools(tools)
    };
    let text = |content: &str| {
        Reply::json(
            200,
            json!({"choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
            .to_string(),
        )
    };
    let server = Loopback::start(vec![
        call("c1", "lookup", json!({"key": "k7"})),
        text("FINAL: value-k7"),
    ])
    .await;
    let s = setup(&server);
    let result = agent(&server, true).run(&request(&s, limits())).await;
    assert!(result.failure.is_none(), "{:?}", result.failure);
    assert_eq!(result.outputs["summary"], "FINAL: value-k7");
    assert_eq!((result.usage.agent_steps, result.usage.tool_calls), (2, 1));
    let requests = server.requests();
    let first = requests[0].json();
    assert_eq!(first["tool_choice"], "auto");
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["emit_output", "lookup"]);
    let messages = requests[1].json()["messages"].as_array().unwrap().clone();
    let reply = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(
        reply["content"], "value-k7",
        "a text result is sent as text"
    );

    // Off (the default): the text turn is not an answer; the model is nudged, then the loop
    // runs out of turns without an output.
    let server = Loopback::start(vec![
        call("c1", "lookup", json!({"key": "k7"})),
        text("FINAL: value-k7"),
        text("FINAL: value-k7"),
    ])
    .await;
    let result = agent(&server, false).run(&request(&s, limits())).await;
    let failure = result.failure.unwrap();
    assert_eq!(failure.class, FailureClass::OutputMissing, "{failure:?}");
    assert_eq!(server.requests()[0].json()["tool_choice"], "required");
}

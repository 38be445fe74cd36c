//! The model agent (the engine's agent port on a provider) against the loopback test double:
//! the prompt and the forced `emit_output` call it sends, outputs checked against the declared
//! types (with a second chance), usage and cost accounting, limits, and classified failures.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::loopback::{Framing, Loopback, Recorded, Reply};
use weft_agents::FailureClass;
use weft_agents::openai::OpenAi;
use weft_agents::{
    HttpSettings, LoopSettings, ModelAgent, Price, ProviderConfig, ProviderKind, RetryPolicy,
    Secret,
};
use weft_engine::agent::{Agent, AgentRequest, Limits, Model, OutputDecl, Route, Tier};

fn http() -> HttpSettings {
    HttpSettings {
        timeout: Duration::from_secs(20),
        connect_timeout: Duration::from_secs(5),
        retry: RetryPolicy {
            max_attempts: 2,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(2),
            max_retry_after: Duration::from_secs(1),
        },
        max_body_bytes: weft_agents::DEFAULT_MAX_BODY_BYTES,
    }
}

fn agent(server: &Loopback, kind: ProviderKind, settings: LoopSettings) -> ModelAgent {
    let mut config = ProviderConfig::new("loopback", kind, &server.base_url);
    config.http = http();
    ModelAgent::new(settings)
        .with_provider(config.build().unwrap())
        .with_model(
            Model {
                tier: Tier::Standard,
                model: "test-model".into(),
                provider: "loopback".into(),
                context_tokens: Some(8192),
            },
            Some(Price {
                input_per_million: 3.0,
                output_per_million: 15.0,
            }),
        )
}

fn request() -> AgentRequest {
    AgentRequest {
        node: "triage".into(),
        attempt: 1,
        inputs: json!({"ticket": "The printer is on fire"}),
        brief: Some("Classify the ticket by severity.".into()),
        guidance: Default::default(),
        outputs: vec![
            OutputDecl {
                name: "severity".into(),
                required: true,
                type_name: Some("string".into()),
            },
            OutputDecl {
                name: "score".into(),
                required: false,
                type_name: Some("integer".into()),
            },
        ],
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
        workspace: PathBuf::from("."),
        config: Value::Null,
        approvals: Vec::new(),
        journal: Default::default(),
    }
}

/// An OpenAI answer calling `name` with `arguments` (raw JSON text).
fn call(name: &str, arguments: &str, prompt: u64, completion: u64) -> Reply {
    Reply::json(
        200,
        json!({
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": name, "arguments": arguments}}]}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
        })
        .to_string(),
    )
}

fn text(content: &str) -> Reply {
    Reply::json(
        200,
        json!({
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        })
        .to_string(),
    )
}

fn messages(r: &Recorded) -> Vec<Value> {
    r.json()["messages"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_forced_emit_output_call_delivers_typed_outputs_and_usage() {
    let server = Loopback::start(vec![call(
        "emit_output",
        r#"{"severity": "high", "score": 9}"#,
        100,
        20,
    )])
    .await;
    let agent = agent(&server, ProviderKind::OpenAi, LoopSettings::default());
    let result = agent.run(&request()).await;
    assert!(result.failure.is_none(), "{:?}", result.failure);
    assert_eq!(
        Value::Object(result.outputs),
        json!({"severity": "high", "score": 9})
    );
    assert_eq!(result.usage.agent_steps, 1);
    assert_eq!(
        (result.usage.input_tokens, result.usage.output_tokens),
        (100, 20)
    );
    assert!((result.usage.cost_usd - (100.0 * 3.0 + 20.0 * 15.0) / 1e6).abs() < 1e-12);
    assert_eq!(
        result.usage.tool_calls, 0,
        "emit_output is not counted, as in replay"
    );

    let sent = &server.requests()[0];
    let body = sent.json();
    assert_eq!(body["model"], json!("test-model"));
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "emit_output"}})
    );
    assert_eq!(body["temperature"], json!(0.0));
    let params = &body["tools"][0]["function"]["parameters"];
    assert_eq!(params["required"], json!(["severity"]));
    assert_eq!(params["properties"]["score"], json!({"type": "integer"}));
    let m = messages(sent);
    assert_eq!(m[0]["role"], json!("system"));
    let task = m[1]["content"].as_str().unwrap();
    assert!(
        task.starts_with("## Task\nClassify the ticket by severity."),
        "{task}"
    );
    assert!(
        task.contains("- `ticket`: The printer is on fire"),
        "{task}"
    );
    assert_eq!(agent.models().len(), 1);
}

#[tokio::test]
async fn outputs_that_do_not_fit_get_a_second_chance() {
    let server = Loopback::start(vec![
        call("emit_output", r#"{"severity": 3, "extra": true}"#, 50, 10),
        call("emit_output", r#"{"severity": "low"}"#, 80, 10),
    ])
    .await;
    let result = agent(&server, ProviderKind::OpenAi, LoopSettings::default())
        .run(&request())
        .await;
    assert!(result.failure.is_none(), "{:?}", result.failure);
    assert_eq!(result.outputs["severity"], json!("low"));
    assert_eq!(
        (result.usage.agent_steps, result.usage.input_tokens),
        (2, 130)
    );
    let second = messages(&server.requests()[1]);
    assert_eq!(second[2]["role"], json!("assistant"));
    assert_eq!(second[2]["content"], json!(""));
    assert_eq!(second[3]["role"], json!("tool"));
    assert!(
        second[3]["content"]
            .as_str()
            .unwrap()
            .starts_with("Rejected: "),
        "{second:?}"
    );
}

#[tokio::test]
async fn the_loop_is_bounded_and_its_failures_are_classified() {
    // Never calls the tool: output_missing after the loop's steps.
    let server = Loopback::start(vec![text("I think it is bad."), text("Really bad.")]).await;
    let settings = LoopSettings {
        max_steps: 2,
        ..LoopSettings::default()
    };
    let r = agent(&server, ProviderKind::OpenAi, settings.clone())
        .run(&request())
        .await;
    let f = r.failure.unwrap();
    assert_eq!(f.class, FailureClass::OutputMissing, "{f:?}");
    assert_eq!(r.usage.agent_steps, 2);
    assert!(r.outputs.is_empty());
    let nudge = messages(&server.requests()[1]);
    assert_eq!(nudge.last().unwrap()["role"], json!("user"));

    // Keeps emitting bad outputs: validation_error with the reason.
    let server = Loopback::start(vec![
        call("emit_output", r#"{"score": 1}"#, 5, 5),
        call("emit_output", r#"{"score": 2}"#, 5, 5),
    ])
    .await;
    let f = agent(&server, ProviderKind::OpenAi, settings.clone())
        .run(&request())
        .await
        .failure
        .unwrap();
    assert_eq!(f.class, FailureClass::ValidationError, "{f:?}");
    assert!(f.message.contains("severity"), "{f:?}");

    // The node's step limit is lower than the loop's.
    let server = Loopback::start(vec![text("no")]).await;
    let mut req = request();
    req.limits.max_agent_steps = Some(1);
    let f = agent(&server, ProviderKind::OpenAi, settings.clone())
        .run(&req)
        .await
        .failure
        .unwrap();
    assert_eq!(f.class, FailureClass::BudgetExceeded, "{f:?}");
    assert_eq!(server.requests().len(), 1);

    // A token limit is checked after the turn, and lowers the turn's max_tokens before it.
    let server = Loopback::start(vec![call(
        "emit_output",
        r#"{"severity": "high"}"#,
        100,
        20,
    )])
    .await;
    let mut req = request();
    req.limits.max_total_tokens = Some(50);
    let r = agent(&server, ProviderKind::OpenAi, settings.clone())
        .run(&req)
        .await;
    assert_eq!(r.failure.unwrap().class, FailureClass::BudgetExceeded);
    assert_eq!(
        r.usage.total_tokens(),
        120,
        "what was spent is still accounted"
    );
    assert_eq!(
        r.outputs["severity"],
        json!("high"),
        "kept for succeed_degraded"
    );
    assert_eq!(server.requests()[0].json()["max_tokens"], json!(50));

    // Provider failures keep their class.
    let server = Loopback::start(vec![Reply::json(503, "busy"), Reply::json(503, "busy")]).await;
    let f = agent(&server, ProviderKind::OpenAi, settings.clone())
        .run(&request())
        .await
        .failure
        .unwrap();
    assert_eq!(f.class, FailureClass::Transient, "{f:?}");
    assert!(
        f.message.contains("HTTP 503") && f.message.contains("busy"),
        "{f:?}"
    );

    // The wall clock covers the whole loop.
    let server = Loopback::start(vec![Reply::Hang]).await;
    let mut req = request();
    req.limits.wall_clock = Duration::from_millis(300);
    let f = agent(&server, ProviderKind::OpenAi, settings)
        .run(&req)
        .await
        .failure
        .unwrap();
    assert_eq!(f.class, FailureClass::Timeout, "{f:?}");
}

#[tokio::test]
async fn a_decision_answers_with_one_of_its_labels_over_a_streamed_anthropic_answer() {
    let events = |arguments: &str| -> Vec<String> {
        let data = [
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 40, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "emit_output", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": arguments}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 12}}),
            json!({"type": "message_stop"}),
        ];
        data.iter()
            .map(|d| format!("event: {}\ndata: {d}\n\n", d["type"].as_str().unwrap()))
            .collect()
    };
    let server = Loopback::start(vec![
        Reply::Sse {
            events: events(r#"{"decision": "maybe"}"#),
            framing: Framing::Fragments(9),
            cut_after: None,
        },
        Reply::Sse {
            events: events(r#"{"decision": "escalate"}"#),
            framing: Framing::Chunked,
            cut_after: None,
        },
    ])
    .await;
    let settings = LoopSettings {
        stream: true,
        ..LoopSettings::default()
    };
    let mut req = request();
    req.outputs.clear();
    req.decision_labels = vec!["close".into(), "escalate".into()];
    let r = agent(&server, ProviderKind::Anthropic, settings)
        .run(&req)
        .await;
    assert!(r.failure.is_none(), "{:?}", r.failure);
    assert_eq!(r.outputs["decision"], json!("escalate"));
    assert_eq!(
        (
            r.usage.agent_steps,
            r.usage.input_tokens,
            r.usage.output_tokens
        ),
        (2, 80, 24)
    );
    let body = server.requests()[1].json();
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "emit_output"})
    );
    assert_eq!(
        body["tools"][0]["input_schema"]["properties"]["decision"]["enum"],
        json!(["close", "escalate"])
    );
    assert_eq!(
        body["messages"][2]["content"][0]["type"],
        json!("tool_result")
    );
    assert_eq!(body["messages"][2]["content"][0]["is_error"], json!(true));
}

#[tokio::test]
async fn the_key_never_reaches_the_attempt_result() {
    const KEY: &str = "sk-weft-agent-test-SECRET-77";
    let server = Loopback::start(vec![Reply::EchoHeaders401]).await;
    let config = ProviderConfig::new("loopback", ProviderKind::OpenAi, &server.base_url);
    let agent = ModelAgent::new(LoopSettings::default()).with_provider(Arc::new(
        OpenAi::new(&config, Some(Secret::new(KEY))).unwrap(),
    ));
    let r = agent.run(&request()).await;
    let f = r.failure.clone().unwrap();
    assert_eq!(f.class, FailureClass::PermissionDenied);
    assert!(f.message.contains("Bearer ***"), "{f:?}");
    let recorded = format!(
        "{:?} {:?} {:?} {agent:?}",
        r.failure, r.transcript, r.outputs
    );
    assert!(!recorded.contains(KEY), "{recorded}");
}

/// Through the engine: the node's rationale, input descriptions, definition of done and
/// output `path_hint` reach the model's prompt in their slots.
#[tokio::test]
async fn the_engine_gives_the_model_what_the_node_declares() {
    let server = Loopback::start(vec![call("emit_output", r#"{"severity": "high"}"#, 10, 5)]).await;
    let mut registry = weft_engine::agent::AgentRegistry::new();
    registry.register(Arc::new(agent(
        &server,
        ProviderKind::OpenAi,
        LoopSettings::default(),
    )));
    registry.set_model_agent("model");
    let doc = json!({"id": "guided", "entrypoints": ["triage"], "nodes": {"triage": {
        "description": "Classify the ticket by severity.",
        "rationale": "On-call is paged only for high severity.",
        "intelligence": {"tier": "standard"},
        "inputs": {"ticket": {"type": "string", "description": "The ticket as written.",
                              "value": "The printer is on fire"}},
        "outputs": {"severity": {"type": "string", "description": "low, medium or high.",
                                 "path_hint": "triage/severity.txt"}},
        "success": {"summary": "A severity is chosen.", "criteria": [{
            "id": "known", "kind": "expression", "description": "The severity is a known one.",
            "expr": "outputs.severity == 'high'"}]}
    }}});
    let dir = tempfile::tempdir().unwrap();
    let store = weft_store::Store::open_in_memory().unwrap();
    let options = weft_engine::RunOptions {
        project_dir: dir.path().to_path_buf(),
        agents: Some(Arc::new(registry)),
        ..weft_engine::RunOptions::default()
    };
    let report = weft_engine::run_document(&doc, &store, &options)
        .await
        .unwrap();
    assert_eq!(
        report.status,
        weft_engine::FinalStatus::Succeeded,
        "{report:?}"
    );
    let task = messages(&server.requests()[0])[1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    for part in [
        "## Why\nOn-call is paged only for high severity.",
        "- `ticket` (The ticket as written.): The printer is on fire",
        "## Definition of done\nA severity is chosen.",
        "- `known`: The severity is a known one.",
        "- `severity` (string, required): low, medium or high. (expected at `triage/severity.txt`)",
    ] {
        assert!(task.contains(part), "{part} in {task}");
    }
}

/// Through the engine: a provider's refusal (HTTP 400) fails the attempt `model_error`, which
/// the event log records as the class the provider classified, not retried by default; a
/// provider's 503 is `transient`, retried, and the retry says why.
#[tokio::test]
async fn the_event_log_records_the_providers_failure_class() {
    use weft_store::EventLog as _;
    let server = Loopback::start(vec![
        Reply::json(400, r#"{"error": {"message": "bad request"}}"#),
        Reply::json(503, "busy"),
        Reply::json(503, "busy"),
        call("emit_output", r#"{"severity": "high"}"#, 10, 5),
    ])
    .await;
    let mut registry = weft_engine::agent::AgentRegistry::new();
    registry.register(Arc::new(agent(
        &server,
        ProviderKind::OpenAi,
        LoopSettings::default(),
    )));
    registry.set_model_agent("model");
    let node = |depends_on: Value| {
        json!({"description": "Classify the ticket by severity.", "depends_on": depends_on,
            "intelligence": {"tier": "standard"},
            "outputs": {"severity": {"type": "string", "description": "low, medium or high."}},
            "failure": {"retry": {"max_attempts": 2, "backoff": "none"}}})
    };
    // In sequence, so the loopback's replies are taken in order.
    let doc = json!({"id": "classes", "entrypoints": ["refused"], "nodes": {
        "refused": node(json!([])),
        "flaky": node(json!([])),
    }, "edges": [{"from": "refused", "to": "flaky", "kind": "on_failure"}]});
    let dir = tempfile::tempdir().unwrap();
    let store = weft_store::Store::open_in_memory().unwrap();
    let options = weft_engine::RunOptions {
        project_dir: dir.path().to_path_buf(),
        agents: Some(Arc::new(registry)),
        ..weft_engine::RunOptions::default()
    };
    let report = weft_engine::run_document(&doc, &store, &options)
        .await
        .unwrap();
    let log: Vec<weft_engine::RunEvent> = store
        .read(&report.run_id, 1, 10_000)
        .unwrap()
        .iter()
        .map(|r| weft_engine::RunEvent::from_record(r).unwrap())
        .collect();
    let class_of = |logged: &str| FailureClass::split_logged(logged).unwrap().0;
    let finished = |id: &str| {
        log.iter()
            .find_map(|e| match e {
                weft_engine::RunEvent::NodeFinished {
                    node,
                    error,
                    outcome,
                    ..
                } if node == id => Some((*outcome, error.clone())),
                _ => None,
            })
            .unwrap()
    };
    let (outcome, error) = finished("refused");
    assert_eq!(outcome, weft_engine::NodeOutcome::Failed);
    assert_eq!(class_of(&error.unwrap()), FailureClass::ModelError);
    let retried: Vec<FailureClass> = log
        .iter()
        .filter_map(|e| match e {
            weft_engine::RunEvent::NodeStarted {
                previous_failure: Some(p),
                ..
            } => Some(class_of(p)),
            _ => None,
        })
        .collect();
    // Only `flaky` was retried (model_error is not in the default retry_on).
    assert_eq!(retried, [FailureClass::Transient]);
    let (outcome, error) = finished("flaky");
    assert_eq!(outcome, weft_engine::NodeOutcome::Succeeded, "{error:?}");
}

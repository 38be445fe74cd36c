//! The agent port end to end, through the real driver and a real SQLite store: model nodes
//! replayed from cassettes (routes, usage, mismatches), decisions by agent, RT011 before any
//! token, node and graph budgets (`max_node_executions: 3` ends `partial`), typed
//! boundaries (RT031/RT032), AG302, an in-process agent, and resuming a replayed run.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;
use common::{assert_valid, events, record_node};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use weft_engine::agent::{
    Agent, AgentFuture, AgentRegistry, AgentRequest, AgentResult, Model, Tier,
};
use weft_engine::record::record_of;
use weft_engine::{
    EngineError, FinalStatus, ResumeOptions, RunEvent, RunOptions, RunReport, replay_run,
    resume_run, run_document,
};
use weft_store::{RunTable, Store};

/// A project directory with `cassette.json`.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new(cassette: &Value) -> Project {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("cassette.json"),
            serde_json::to_string_pretty(cassette).unwrap(),
        )
        .unwrap();
        Project { dir }
    }

    fn options(&self) -> RunOptions {
        RunOptions {
            project_dir: self.dir.path().to_path_buf(),
            cassette: Some(self.dir.path().join("cassette.json")),
            ..RunOptions::default()
        }
    }
}

fn cassette(models: Value, nodes: Value) -> Value {
    json!({"format": "weft-cassette/1", "models": models, "nodes": nodes})
}

fn models() -> Value {
    json!([
        {"tier": "minimal", "model": "small-1", "provider": "acme"},
        {"tier": "standard", "model": "mid-1", "provider": "acme"},
        {"tier": "advanced", "model": "big-1", "provider": "acme"}
    ])
}

fn turn(tokens_in: u64, tokens_out: u64, cost: f64) -> Value {
    json!({"content": "working", "tool_calls": [{"name": "file_read", "arguments": {"path": "README"}, "result": "text"}],
           "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out, "cost_usd": cost}})
}

fn emit(outputs: Value) -> Value {
    json!({"tool_calls": [{"name": "emit_output", "arguments": outputs}],
           "usage": {"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.001}})
}

fn model_node(extra: Value) -> Value {
    let mut n = json!({"description": "summarise", "instructions": "Summarise ${{ inputs.topic }}",
        "inputs": {"topic": {"type": "string", "description": "t", "value": "the changelog"}},
        "outputs": {"summary": {"type": "string", "description": "s"}}});
    for (k, v) in extra.as_object().unwrap() {
        n[k] = v.clone();
    }
    n
}

fn node<'a>(r: &'a RunReport, id: &str) -> &'a weft_engine::NodeReport {
    r.nodes.iter().find(|n| n.id == id).unwrap()
}

fn codes(record: &Value) -> Vec<String> {
    record["diagnostics"]
        .as_array()
        .map(|d| {
            d.iter()
                .map(|x| x["code"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn assert_replays(doc: &Value, store: &Store, report: &RunReport) {
    let replayed = replay_run(doc, store, &report.run_id).unwrap();
    assert!(replayed.is_finished());
    for (i, n) in report.nodes.iter().enumerate() {
        let s = format!("{:?}", replayed.state(i)).to_lowercase();
        assert_eq!(s, n.state.replace('_', ""), "node {}", n.id);
    }
}

fn two_step_doc() -> Value {
    json!({"id": "t", "entrypoints": ["plan"], "nodes": {
        "plan": model_node(json!({})),
        "show": {"description": "show", "depends_on": ["plan"],
                 "inputs": {"s": {"type": "string", "description": "s", "from": "nodes.plan.outputs.summary"}},
                 "x-weft-exec": {"run": "cat > seen.json"}}
    }})
}

#[tokio::test]
async fn a_replayed_model_node_runs_routes_and_records_its_usage() {
    let p = Project::new(&cassette(
        models(),
        json!({"plan": {"attempts": [{"turns": [turn(100, 20, 0.01), emit(json!({"summary": "three fixes"}))]}]}}),
    ));
    let doc = two_step_doc();
    let store = Store::open_in_memory().unwrap();
    let report = run_document(&doc, &store, &p.options()).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    let seen = std::fs::read_to_string(p.dir.path().join("seen.json")).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&seen).unwrap(),
        json!({"s": "three fixes"})
    );
    let log = events(&store, &report.run_id);
    let routed = log
        .iter()
        .find_map(|e| match e {
            RunEvent::NodeStarted { node, routed, .. } if node == "plan" => routed.clone(),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (routed.model.as_str(), routed.provider.as_str()),
        ("mid-1", "acme")
    );
    assert_eq!(
        (routed.requested_tier.as_str(), routed.downgraded),
        ("standard", false)
    );
    let usage = log
        .iter()
        .find_map(|e| match e {
            RunEvent::NodeFinished { node, usage, .. } if node == "plan" => *usage,
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (
            usage.agent_steps,
            usage.tool_calls,
            usage.input_tokens,
            usage.output_tokens
        ),
        (2, 1, 110, 25)
    );
    assert!((usage.cost_usd - 0.011).abs() < 1e-9);
    assert_eq!(report.usage, usage, "the report sums what the nodes spent");
    // exec nodes spend nothing and log no usage.
    assert!(log.iter().any(|e| matches!(e,
        RunEvent::NodeFinished { node, usage: None, .. } if node == "show")));
    assert_replays(&doc, &store, &report);
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    let plan = record_node(&record, "plan");
    assert_eq!(plan["attempts"][0]["routed"]["model"], "mid-1");
    assert_eq!(plan["attempts"][0]["routed"]["effective_tier"], "standard");
    assert_eq!(plan["usage"]["total_tokens"], 135);
    assert_eq!(plan["attempts"][0]["usage"]["tool_calls"], 1);
    assert_eq!(record["usage"]["input_tokens"], 110);
    assert_eq!(record["usage"]["node_executions"], 2);
}

/// A model agent that counts its calls and serves only what it is given.
struct Counting {
    models: Vec<Model>,
    calls: Arc<Mutex<Vec<AgentRequest>>>,
    answer: Value,
}

impl Agent for Counting {
    fn name(&self) -> &str {
        "counting"
    }
    fn models(&self) -> Vec<Model> {
        self.models.clone()
    }
    fn run<'a>(&'a self, request: &'a AgentRequest) -> AgentFuture<'a> {
        Box::pin(async move {
            self.calls.lock().unwrap().push(request.clone());
            let mut r = AgentResult::default();
            if request.attempt == 1 && self.answer.get("fail_first").is_some() {
                return AgentResult::failed(weft_core::FailureClass::Transient, "provider hiccup");
            }
            r.outputs = self.answer["outputs"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            r.usage.input_tokens = 7;
            r
        })
    }
}

fn counting(tiers: &[Tier], answer: Value) -> (Arc<AgentRegistry>, Arc<Mutex<Vec<AgentRequest>>>) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let mut reg = AgentRegistry::with_defaults(None);
    reg.register(Arc::new(Counting {
        models: tiers
            .iter()
            .map(|&tier| Model {
                tier,
                model: format!("m-{}", tier.as_str()),
                provider: "local".into(),
                context_tokens: Some(8000),
            })
            .collect(),
        calls: Arc::clone(&calls),
        answer,
    }));
    reg.set_model_agent("counting");
    (Arc::new(reg), calls)
}

#[tokio::test]
async fn rt011_refuses_the_run_before_any_token_when_only_a_small_model_exists() {
    let (agents, calls) = counting(&[Tier::Minimal], json!({}));
    let doc = json!({"id": "t", "entrypoints": ["a"], "nodes": {
        "a": {"description": "first", "x-weft-exec": {"run": "touch ran"}},
        "b": model_node(json!({"depends_on": ["a"], "intelligence": {"tier": "advanced", "rationale": "hard"}}))
    }});
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        agents: Some(agents),
        ..RunOptions::default()
    };
    let err = run_document(&doc, &store, &options).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, EngineError::Refused(_)), "{text}");
    assert!(text.contains("node `b`: RT011: tier `advanced`"), "{text}");
    assert!(text.contains("minimal (`m-minimal`)"), "{text}");
    assert!(
        calls.lock().unwrap().is_empty(),
        "a model turn was consumed"
    );
    assert!(!dir.path().join("ran").exists(), "a node ran");
    assert!(
        store.list_runs(None, 10).unwrap().is_empty(),
        "a run was created"
    );
}

#[tokio::test]
async fn an_in_process_agent_gets_the_brief_feedback_route_and_escalates_on_retry() {
    let (agents, calls) = counting(
        &[Tier::Minimal, Tier::Standard],
        json!({"fail_first": true, "outputs": {"summary": "done"}}),
    );
    let doc = json!({"id": "t", "entrypoints": ["a"], "nodes": {
        "a": model_node(json!({"intelligence": {"tier": "minimal"},
            "failure": {"retry": {"max_attempts": 2, "backoff": "none", "escalate_intelligence": true,
                                  "retry_on": ["transient"]}}}))
    }});
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        agents: Some(agents),
        ..RunOptions::default()
    };
    let report = run_document(&doc, &store, &options).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[0].brief.as_deref(),
        Some("summarise\n\nSummarise the changelog")
    );
    assert_eq!(calls[0].inputs, json!({"topic": "the changelog"}));
    assert_eq!(calls[0].feedback, None);
    assert!(
        calls[1]
            .feedback
            .as_deref()
            .unwrap()
            .contains("provider hiccup")
    );
    let tiers: Vec<&str> = calls
        .iter()
        .map(|c| c.route.as_ref().unwrap().effective_tier.as_str())
        .collect();
    assert_eq!(tiers, ["minimal", "standard"]);
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    let attempts = record_node(&record, "a")["attempts"].as_array().unwrap();
    assert_eq!(attempts[1]["routed"]["model"], "m-standard");
    assert_eq!(attempts[0]["usage"]["input_tokens"], 0);
    assert_eq!(attempts[1]["usage"]["input_tokens"], 7);
}

#[tokio::test]
async fn a_downgrade_is_allowed_only_when_declared_and_is_recorded() {
    let p = Project::new(&cassette(
        json!([{"tier": "minimal", "model": "small-1"}]),
        json!({"plan": {"attempts": [{"turns": [emit(json!({"summary": "s"}))]}]}}),
    ));
    let doc = json!({"id": "t", "entrypoints": ["plan"], "nodes": {
        "plan": model_node(json!({"intelligence": {"tier": "standard", "allow_downgrade": true}}))
    }});
    let store = Store::open_in_memory().unwrap();
    let report = run_document(&doc, &store, &p.options()).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded);
    let record = record_of(&store, &report.run_id).unwrap();
    let routed = &record_node(&record, "plan")["attempts"][0]["routed"];
    assert_eq!(routed["downgraded"], true);
    assert_eq!(routed["effective_tier"], "minimal");
    assert!(
        routed["reason"]
            .as_str()
            .unwrap()
            .contains("allow_downgrade")
    );
}

#[tokio::test]
async fn model_nodes_need_a_cassette_entry_and_a_cassette_must_be_well_formed() {
    let doc = two_step_doc();
    let store = Store::open_in_memory().unwrap();
    let p = Project::new(&cassette(models(), json!({"other": {"attempts": []}})));
    let err = run_document(&doc, &store, &p.options()).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("node `plan` is not an exec node and the cassette"),
        "{err}"
    );
    let bad = Project::new(
        &json!({"format": "weft-cassette/1", "nodes": {"plan": {"attempts": [
        {"turns": [{"usage": {"input_tokens": "many"}}]}]}}}),
    );
    let err = run_document(&doc, &store, &bad.options())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, EngineError::Cassette(_)), "{text}");
    assert!(text.contains("cassette.json"), "{text}");
    assert!(
        text.contains("$.nodes.plan.attempts[0].turns[0].usage.input_tokens"),
        "{text}"
    );
    assert!(store.list_runs(None, 10).unwrap().is_empty());
}

#[tokio::test]
async fn cassette_mismatches_are_classified_attempt_failures() {
    // Attempt 1 emits an undeclared output (validation_error, retried); attempt 2 is not
    // recorded (model_error).
    let p = Project::new(&cassette(
        models(),
        json!({"plan": {"attempts": [{"turns": [emit(json!({"summary": "s", "extra": 1}))]}]},
               "quiet": {"attempts": [{"turns": [turn(1, 1, 0.0)]}]}}),
    ));
    let doc = json!({"id": "t", "entrypoints": ["plan", "quiet"], "nodes": {
        "plan": model_node(json!({"failure": {"retry": {"max_attempts": 2, "backoff": "none",
                                                          "retry_on": ["validation_error"]}}})),
        "quiet": model_node(json!({}))
    }});
    let store = Store::open_in_memory().unwrap();
    let report = run_document(&doc, &store, &p.options()).await.unwrap();
    assert_eq!(report.status, FinalStatus::Partial);
    let plan = node(&report, "plan");
    assert_eq!((plan.state.as_str(), plan.attempts), ("failed", 2));
    let e = plan.error.as_deref().unwrap();
    assert!(
        e.starts_with("model_error:") && e.contains("no recorded attempt 2 (it records 1)"),
        "{e}"
    );
    let quiet = node(&report, "quiet").error.as_deref().unwrap();
    assert!(
        quiet.starts_with("output_missing:") && quiet.contains("never call emit_output"),
        "{quiet}"
    );
    let first_failure = events(&store, &report.run_id)
        .into_iter()
        .filter(|e| matches!(e, RunEvent::NodeStarted { node, attempt: 2, .. } if node == "plan"))
        .count();
    assert_eq!(first_failure, 1, "the undeclared output was retried");
    assert_replays(&doc, &store, &report);
}

fn decision_doc(default_branch: Option<&str>) -> Value {
    let mut block = json!({"question": "ship?", "branches": [
        {"label": "ship", "description": "go"},
        {"label": "hold", "description": "wait"}
    ]});
    if let Some(d) = default_branch {
        block["default_branch"] = json!(d);
    }
    json!({"id": "t", "entrypoints": ["choose"], "nodes": {
        "choose": {"type": "decision", "description": "decide", "decision": block,
                   "failure": {"retry": {"max_attempts": 2, "backoff": "none"}}},
        "go": {"description": "ship it", "x-weft-exec": {"run": "true"}},
        "wait": {"description": "hold it", "x-weft-exec": {"run": "true"}}
    }, "edges": [
        {"from": "choose", "to": "go", "kind": "conditional", "when": "nodes.choose.decision == 'ship'"},
        {"from": "choose", "to": "wait", "kind": "conditional", "when": "nodes.choose.decision == 'hold'"}
    ]})
}

#[tokio::test]
async fn a_decision_by_agent_routes_on_a_declared_label_and_retries_an_undeclared_one() {
    let p = Project::new(&cassette(
        models(),
        json!({"choose": {"attempts": [
            {"turns": [{"tool_calls": [{"name": "emit_output", "arguments": {"decision": "maybe"}}]}]},
            {"turns": [{"tool_calls": [{"name": "emit_output", "arguments": {"decision": "hold"}}]}]}
        ]}}),
    ));
    let doc = decision_doc(None);
    let store = Store::open_in_memory().unwrap();
    let report = run_document(&doc, &store, &p.options()).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(node(&report, "choose").attempts, 2);
    assert_eq!(node(&report, "wait").state, "succeeded");
    assert_eq!(node(&report, "go").state, "skipped");
    assert_replays(&doc, &store, &report);

    // With a default_branch, an out-of-set answer takes the default and records RT022.
    let p = Project::new(&cassette(
        models(),
        json!({"choose": {"attempts": [
            {"turns": [{"tool_calls": [{"name": "emit_output", "arguments": {"decision": "maybe"}}]}]}
        ]}}),
    ));
    let doc = decision_doc(Some("ship"));
    let report = run_document(&doc, &store, &p.options()).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded);
    assert_eq!(node(&report, "choose").attempts, 1);
    assert_eq!(node(&report, "go").state, "succeeded");
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert_eq!(codes(&record), ["RT022"]);
    assert_eq!(
        record_node(&record, "choose")["outputs"]["decision"],
        "ship"
    );
}

#[tokio::test]
async fn node_budgets_stop_a_turn_before_it_is_played() {
    let p = Project::new(&cassette(
        models(),
        json!({
            "tokens": {"attempts": [{"turns": [turn(40, 10, 0.0), turn(80, 20, 0.0), emit(json!({"summary": "s"}))]}]},
            "tools": {"attempts": [{"turns": [turn(1, 1, 0.0), turn(1, 1, 0.0), emit(json!({"summary": "s"}))]}]},
            "steps": {"attempts": [{"turns": [turn(1, 1, 0.0), turn(1, 1, 0.0), emit(json!({"summary": "s"}))]}]},
            "cost": {"attempts": [{"turns": [turn(1, 1, 0.5), emit(json!({"summary": "s"}))]}]}
        }),
    ));
    let doc = json!({"id": "t", "entrypoints": ["tokens", "tools", "steps", "cost"], "nodes": {
        "tokens": model_node(json!({"constraints": {"max_total_tokens": 100}})),
        "tools": model_node(json!({"constraints": {"max_tool_calls": 1}})),
        "steps": model_node(json!({"constraints": {"max_agent_steps": 2}})),
        "cost": model_node(json!({"constraints": {"max_cost_usd": 0.25}}))
    }});
    let store = Store::open_in_memory().unwrap();
    let report = run_document(&doc, &store, &p.options()).await.unwrap();
    assert_eq!(report.status, FinalStatus::Partial);
    let error = |id: &str| node(&report, id).error.clone().unwrap();
    assert_eq!(
        error("tokens"),
        "budget_exceeded: turn 2: max_total_tokens 100 exceeded (150); the turn was not played"
    );
    assert!(error("tools").contains("max_tool_calls 1 exceeded (2)"));
    assert!(error("steps").contains("turn 3: max_agent_steps 2 exceeded (3)"));
    assert!(error("cost").contains("max_cost_usd 0.25 exceeded"));
    let log = events(&store, &report.run_id);
    let spent = log
        .iter()
        .find_map(|e| match e {
            RunEvent::NodeFinished { node, usage, .. } if node == "tokens" => *usage,
            _ => None,
        })
        .unwrap();
    assert_eq!(spent.total_tokens(), 50, "only the played turn counts");
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert_eq!(
        record_node(&record, "tokens")["attempts"][0]["status"],
        "budget_exceeded"
    );
}

fn chain(n: usize, max_executions: u64) -> Value {
    let mut nodes = serde_json::Map::new();
    for i in 0..n {
        let mut node = json!({"description": format!("step {i}"), "x-weft-exec": {"run": "true"}});
        if i > 0 {
            node["depends_on"] = json!([format!("n{}", i - 1)]);
        }
        nodes.insert(format!("n{i}"), node);
    }
    json!({"id": "t", "entrypoints": ["n0"], "constraints": {"max_node_executions": max_executions},
           "nodes": nodes})
}

#[tokio::test]
async fn max_node_executions_3_ends_partial_not_an_exception() {
    let doc = chain(5, 3);
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        ..RunOptions::default()
    };
    let report = run_document(&doc, &store, &options).await.unwrap();
    assert_eq!(report.status, FinalStatus::Partial, "{report:#?}");
    let states: Vec<&str> = report.nodes.iter().map(|n| n.state.as_str()).collect();
    assert_eq!(
        states,
        [
            "succeeded",
            "succeeded",
            "succeeded",
            "cancelled",
            "skipped"
        ]
    );
    assert!(
        report
            .reasons
            .iter()
            .any(|r| r.starts_with("RT061: max_node_executions 3 reached")),
        "{:?}",
        report.reasons
    );
    let log = events(&store, &report.run_id);
    let started = log
        .iter()
        .filter(|e| matches!(e, RunEvent::NodeStarted { .. }))
        .count();
    assert_eq!(started, 3);
    assert!(matches!(&log[0], RunEvent::RunStarted { warnings, .. }
        if warnings.iter().any(|w| w.contains("worst case is 5 node executions"))));
    assert_replays(&doc, &store, &report);
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert_eq!(record["status"], "partial");
    // The planner's warning, the run's stop, and the node the stop cancelled (its error
    // names RT061: every RT code the run raised is a diagnostic).
    assert_eq!(codes(&record), ["RT061", "RT061", "RT061"]);
    let on_node: Vec<&Value> = record["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["node_id"].is_string())
        .collect();
    assert_eq!(on_node.len(), 1, "{record:#}");
    assert_eq!(on_node[0]["severity"], "error");
    assert_eq!(record["usage"]["node_executions"], 3);
}

#[tokio::test]
async fn retries_count_against_max_node_executions() {
    let mut doc = chain(2, 3);
    doc["nodes"]["n0"]["x-weft-exec"]["run"] = json!("exit 1");
    doc["nodes"]["n0"]["failure"] = json!({"retry": {"max_attempts": 5, "backoff": "none"}});
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        ..RunOptions::default()
    };
    let report = run_document(&doc, &store, &options).await.unwrap();
    assert_eq!(report.status, FinalStatus::Partial);
    assert_eq!(node(&report, "n0").attempts, 3);
    assert!(report.reasons.iter().any(|r| r.starts_with("RT061")));
}

#[tokio::test]
async fn a_graph_token_budget_stops_new_work_and_caps_each_attempt() {
    let p = Project::new(&cassette(
        models(),
        json!({
            "a": {"attempts": [{"turns": [turn(50, 10, 0.0), emit(json!({"summary": "s"}))]}]},
            "b": {"attempts": [{"turns": [turn(50, 10, 0.0), emit(json!({"summary": "s"}))]}]},
            "c": {"attempts": [{"turns": [emit(json!({"summary": "s"}))]}]}
        }),
    ));
    let doc = json!({"id": "t", "entrypoints": ["a"], "constraints": {"max_total_tokens": 100},
    "nodes": {
        "a": model_node(json!({})),
        "b": model_node(json!({"depends_on": ["a"]})),
        "c": model_node(json!({"depends_on": ["b"]}))
    }});
    let store = Store::open_in_memory().unwrap();
    let report = run_document(&doc, &store, &p.options()).await.unwrap();
    assert_eq!(report.status, FinalStatus::Partial, "{report:#?}");
    assert_eq!(node(&report, "a").state, "succeeded");
    // a spent 75; b's attempt is capped at the 25 the run has left.
    assert!(
        node(&report, "b")
            .error
            .as_deref()
            .unwrap()
            .contains("max_total_tokens 25 exceeded (60)"),
        "{report:#?}"
    );
    assert_eq!(node(&report, "c").state, "skipped");
}

#[tokio::test]
async fn outputs_and_inputs_are_checked_against_their_type_and_schema() {
    let doc = json!({"id": "t", "entrypoints": ["num", "big", "typed_in"], "nodes": {
        "num": {"description": "n", "outputs": {"n": {"type": "integer", "description": "n"}},
                "x-weft-exec": {"run": "echo '{\"n\": \"seven\"}'"}},
        "big": {"description": "b", "outputs": {"n": {"type": "integer", "description": "n",
                    "schema": {"type": "integer", "maximum": 5}}},
                "x-weft-exec": {"run": "echo '{\"n\": 9}'"}},
        "typed_in": {"description": "t", "inputs": {"k": {"type": "integer", "description": "k", "value": "x"}},
                "x-weft-exec": {"run": "touch ran"}}
    }});
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        ..RunOptions::default()
    };
    let report = run_document(&doc, &store, &options).await.unwrap();
    assert_eq!(report.status, FinalStatus::Partial);
    let error = |id: &str| node(&report, id).error.clone().unwrap();
    assert_eq!(
        error("num"),
        "validation_error: RT031: output `n` is a string, not of its declared type `integer`"
    );
    assert!(
        error("big").starts_with("validation_error: RT032: output `n` does not match its schema"),
        "{}",
        error("big")
    );
    assert!(error("typed_in").contains("RT031: input `k`"));
    assert!(
        !dir.path().join("ran").exists(),
        "the node ran on a mistyped input"
    );
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    let mut c = codes(&record);
    c.sort();
    assert_eq!(c, ["RT031", "RT031", "RT032"]);
}

#[tokio::test]
async fn params_outside_their_enum_or_schema_refuse_the_run_listing_each() {
    let doc = json!({"id": "t", "entrypoints": ["a"],
        "params": {
            "channel": {"type": "string", "description": "c", "enum": ["stable", "beta"]},
            "count": {"type": "integer", "description": "n", "schema": {"type": "integer", "minimum": 1}},
            "ok": {"type": "string", "description": "fine", "default": "x"}
        },
        "nodes": {"a": {"description": "a", "x-weft-exec": {"run": "touch ran"}}}});
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        ..RunOptions::default()
    };
    options.params.insert("channel".into(), json!("nightly"));
    options.params.insert("count".into(), json!(0));
    let err = run_document(&doc, &store, &options).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, EngineError::Params(_)), "{text}");
    assert!(text.contains("AG302"), "{text}");
    assert!(
        text.contains("`channel` = \"nightly\" is not one of"),
        "{text}"
    );
    assert!(
        text.contains("`count` = 0 does not match its schema"),
        "{text}"
    );
    assert!(!dir.path().join("ran").exists());
    assert!(store.list_runs(None, 10).unwrap().is_empty());
    options.params.insert("channel".into(), json!("beta"));
    options.params.insert("count".into(), json!(2));
    let report = run_document(&doc, &store, &options).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded);
}

#[tokio::test]
async fn a_replayed_run_stopped_anywhere_resumes_with_the_same_usage() {
    let p = Project::new(&cassette(
        models(),
        // An attempt cut short by the stop is abandoned on resume and the node runs as the
        // next attempt: each attempt is recorded twice, identically.
        json!({
            "a": {"attempts": [{"turns": [turn(5, 5, 0.01), emit(json!({"summary": "s"}))]},
                               {"turns": [turn(5, 5, 0.01), emit(json!({"summary": "s"}))]}]},
            "b": {"attempts": [{"turns": [turn(7, 3, 0.02), emit(json!({"summary": "s"}))]},
                               {"turns": [turn(7, 3, 0.02), emit(json!({"summary": "s"}))]}]}
        }),
    ));
    let doc = json!({"id": "t", "entrypoints": ["a"], "nodes": {
        "a": model_node(json!({})), "b": model_node(json!({"depends_on": ["a"]}))
    }});
    let store = Store::open_in_memory().unwrap();
    let full = run_document(&doc, &store, &p.options()).await.unwrap();
    let total = record_of(&store, &full.run_id).unwrap()["usage"].clone();
    let n = events(&store, &full.run_id).len();
    for stop in 1..n {
        let mut options = p.options();
        options.stop_after_events = Some(stop);
        let run_id = format!("stopped-{stop}");
        options.run_id = Some(run_id.clone());
        let err = run_document(&doc, &store, &options).await.unwrap_err();
        assert!(matches!(err, EngineError::Stopped(_)));
        let resumed = resume_run(
            &store,
            &run_id,
            None,
            &ResumeOptions {
                run: p.options(),
                force: false,
                retry_uncertain: true,
                retry_nodes: Vec::new(),
            },
        )
        .await
        .unwrap();
        assert_eq!(
            resumed.report.unwrap().status,
            FinalStatus::Succeeded,
            "stop {stop}"
        );
        let mut usage = record_of(&store, &run_id).unwrap()["usage"].clone();
        usage["wall_clock_seconds"] = total["wall_clock_seconds"].clone();
        usage["node_executions"] = total["node_executions"].clone();
        assert_eq!(usage, total, "stop {stop}");
    }
}

const CASSETTE_SCHEMA: &str = include_str!("../schema/cassette-1.schema.json");

#[test]
fn the_cassette_schema_accepts_what_the_reader_accepts() {
    let schema: Value = serde_json::from_str(CASSETTE_SCHEMA).unwrap();
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .unwrap();
    let example = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/replay-release-notes.cassette.json"),
    )
    .unwrap();
    let cases = [
        serde_json::from_str::<Value>(&example).unwrap(),
        cassette(
            models(),
            json!({"a": {"attempts": [{"turns": [turn(1, 2, 0.5), emit(json!({"x": 1}))]}]}}),
        ),
        json!({"format": "weft-cassette/1", "nodes": {}, "x-note": "extensions are fine"}),
        json!({"format": "weft-cassette/1", "nodes": {"a": {"attempts": [{"turns": [{"error": {"class": "transient"}}]}]}}}),
        json!({"format": "weft-cassette/2", "nodes": {}}),
        json!({"format": "weft-cassette/1"}),
        json!({"format": "weft-cassette/1", "models": [], "nodes": {}}),
        json!({"format": "weft-cassette/1", "nodes": {"a": {"attempts": [{"turns": [{"usage": {"input_tokens": -1}}]}]}}}),
        json!({"format": "weft-cassette/1", "nodes": {"a": {"attempts": [{"turns": [{"error": {"class": "any"}}]}]}}}),
        json!({"format": "weft-cassette/1", "nodes": {"a": {"attempts": [{"turns": [{"tool_calls": [{"name": "t", "arguments": [1]}]}]}]}}}),
        json!({"format": "weft-cassette/1", "nodes": {"a": {"attempts": [{"turns": [{"surprise": 1}]}]}}}),
    ];
    for (i, case) in cases.iter().enumerate() {
        let by_reader = weft_engine::agent::cassette::parse(&case.to_string(), "c.json").is_ok();
        let by_schema = validator.is_valid(case);
        assert_eq!(by_reader, by_schema, "case {i}: {case}");
        assert_eq!(by_reader, i < 4, "case {i}");
    }
}

#[tokio::test]
async fn full_transcript_feedback_carries_the_failed_attempts_turns() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    /// Records each request and plays the cassette through the real `replay` agent.
    struct Spy {
        inner: weft_engine::agent::replay::ReplayAgent,
        calls: Arc<Mutex<Vec<AgentRequest>>>,
    }
    impl Agent for Spy {
        fn name(&self) -> &str {
            "spy"
        }
        fn models(&self) -> Vec<Model> {
            self.inner.models()
        }
        fn run<'a>(&'a self, request: &'a AgentRequest) -> AgentFuture<'a> {
            self.calls.lock().unwrap().push(request.clone());
            self.inner.run(request)
        }
    }
    let recorded = cassette(
        models(),
        json!({"a": {"attempts": [
            {"turns": [{"content": "I looked at the wrong file", "tool_calls": [{"name": "file_read"}]},
                       {"error": {"class": "transient", "message": "overloaded"}}]},
            {"turns": [emit(json!({"summary": "s"}))]}
        ]}}),
    );
    let parsed = weft_engine::agent::cassette::parse(&recorded.to_string(), "inline.json").unwrap();
    let mut reg = AgentRegistry::with_defaults(None);
    reg.register(Arc::new(Spy {
        inner: weft_engine::agent::replay::ReplayAgent::new(Some(parsed)),
        calls: Arc::clone(&calls),
    }));
    reg.set_model_agent("spy");
    let doc = json!({"id": "t", "entrypoints": ["a"], "nodes": {
        "a": model_node(json!({"failure": {"retry": {"max_attempts": 2, "backoff": "none",
                                                      "feedback": "full_transcript"}}}))
    }});
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        agents: Some(Arc::new(reg)),
        ..RunOptions::default()
    };
    let report = run_document(&doc, &store, &options).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    let calls = calls.lock().unwrap();
    let feedback = calls[1].feedback.as_deref().unwrap();
    assert!(
        feedback.starts_with("The previous attempt failed (transient): turn 2: overloaded"),
        "{feedback}"
    );
    assert!(
        feedback.contains("I looked at the wrong file"),
        "{feedback}"
    );
    assert!(feedback.contains("file_read"), "{feedback}");
}

#[tokio::test]
async fn a_decision_by_agent_is_asked_its_question_with_the_labels() {
    let (agents, calls) = counting(&[Tier::Standard], json!({"outputs": {"decision": "hold"}}));
    let mut doc = decision_doc(None);
    doc["nodes"]["choose"]["decision"]["question"] = json!("Ship ${{ params.version }}?");
    doc["params"] = json!({"version": {"type": "string", "description": "v", "default": "1.2"}});
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        agents: Some(agents),
        ..RunOptions::default()
    };
    let report = run_document(&doc, &store, &options).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(node(&report, "wait").state, "succeeded");
    let calls = calls.lock().unwrap();
    assert_eq!(calls[0].brief.as_deref(), Some("decide\n\nShip 1.2?"));
    assert_eq!(calls[0].decision_labels, ["ship", "hold"]);
}

#[tokio::test]
async fn the_graph_wall_clock_caps_attempts_and_stops_new_work() {
    // `a` would sleep 5 s: its time limit is what the run has left (0.2 s), so it times out;
    // the on_failure edge would start `b`, but the run's wall clock is spent.
    let doc = json!({"id": "t", "entrypoints": ["a"], "constraints": {"max_wall_clock_seconds": 0.2},
        "nodes": {
            "a": {"description": "slow", "x-weft-exec": {"run": "sleep 5"}},
            "b": {"description": "after", "x-weft-exec": {"run": "touch ran"}}
        },
        "edges": [{"from": "a", "to": "b", "kind": "on_failure"}]});
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        ..RunOptions::default()
    };
    let report = run_document(&doc, &store, &options).await.unwrap();
    assert_eq!(report.status, FinalStatus::Partial, "{report:#?}");
    assert!(
        node(&report, "a")
            .error
            .as_deref()
            .unwrap()
            .starts_with("timeout:")
    );
    assert_eq!(node(&report, "b").state, "cancelled");
    assert!(
        node(&report, "b")
            .error
            .as_deref()
            .unwrap()
            .starts_with("budget_exceeded: RT061: max_wall_clock_seconds 0.2 reached")
    );
    assert!(!dir.path().join("ran").exists());
    assert_replays(&doc, &store, &report);
}

/// Issue: tokens a node spent before it escalated to a person were dropped when the
/// escalation settled in a resumed run, so the next model node ran past the graph's
/// `max_total_tokens`. They are logged (`attempt_spent`) when the node starts to wait and
/// counted exactly once: in the node's usage, the run's totals and the budget.
#[tokio::test]
async fn tokens_spent_before_an_escalation_are_counted_once_after_the_decision() {
    let failing = json!({"usage": {"input_tokens": 100, "output_tokens": 50, "cost_usd": 0.02},
        "error": {"class": "model_error", "message": "nonsense"}});
    let p = Project::new(&cassette(
        models(),
        json!({
            "plan": {"attempts": [{"turns": [failing]}]},
            "more": {"attempts": [{"turns": [turn(80, 20, 0.01), emit(json!({"summary": "more"}))]}]}
        }),
    ));
    // 200 tokens for the run: `plan` spends 150 before it escalates, so `more` has 50 left
    // and cannot play its first turn (100). Forgetting `plan`'s spend would let it run.
    let doc = json!({"id": "t", "entrypoints": ["plan"],
    "constraints": {"max_total_tokens": 200},
    "nodes": {
        "plan": model_node(json!({"failure": {"on_exhausted": "escalate",
            "escalation": {"to": "human", "roles": ["oncall"]}}})),
        "more": model_node(json!({"depends_on": ["plan"]})),
    }});
    let store = Store::open_in_memory().unwrap();
    let report = run_document(&doc, &store, &p.options()).await.unwrap();
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    let spent: Vec<RunEvent> = events(&store, &report.run_id)
        .into_iter()
        .filter(|e| matches!(e, RunEvent::AttemptSpent { .. }))
        .collect();
    assert_eq!(spent.len(), 1, "{:#?}", events(&store, &report.run_id));
    weft_engine::human::decide(
        &store,
        &report.run_id,
        &common::request(
            "plan",
            weft_engine::human::Verb::Approve,
            json!({"summary": "accepted"}),
        ),
    )
    .unwrap();
    let done = common::resume_with(&store, &report.run_id, p.options()).await;
    assert_eq!(node(&done, "plan").state, "succeeded", "{done:#?}");
    // Counted once, in the run's totals: the budget stopped `more` before its turn.
    assert_eq!(done.usage.total_tokens(), 150, "{:?}", done.usage);
    assert_eq!(node(&done, "more").state, "failed", "{done:#?}");
    assert!(
        node(&done, "more")
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("max_total_tokens"),
        "{done:#?}"
    );
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert_eq!(record_node(&record, "plan")["usage"]["total_tokens"], 150);
    assert_eq!(
        record_node(&record, "plan")["attempts"][0]["usage"]["input_tokens"],
        100
    );
    assert_eq!(record["usage"]["total_tokens"], 150);
}

/// The record's totals are the sum of the attempts' usage: every token and cost counted
/// once, on the attempt that spent it.
fn assert_usage_adds_up(record: &Value) {
    let mut tokens = 0;
    let mut cost = 0.0;
    for n in record["nodes"].as_array().unwrap() {
        let mut node_tokens = 0;
        for a in n["attempts"].as_array().into_iter().flatten() {
            node_tokens += a["usage"]["total_tokens"].as_u64().unwrap_or(0);
            cost += a["usage"]["cost_usd"].as_f64().unwrap_or(0.0);
        }
        assert_eq!(
            n["usage"]["total_tokens"].as_u64().unwrap_or(0),
            node_tokens,
            "{n}"
        );
        tokens += node_tokens;
    }
    assert_eq!(
        record["usage"]["total_tokens"], tokens,
        "{}",
        record["usage"]
    );
    let recorded = record["usage"]["cost_usd"].as_f64().unwrap();
    assert!((recorded - cost).abs() < 1e-9, "{recorded} vs {cost}");
}

#[tokio::test]
async fn usage_adds_up_per_attempt_through_retries_and_escalations() {
    let failing = |tokens: u64| {
        json!({"usage": {"input_tokens": tokens, "output_tokens": 10, "cost_usd": 0.01},
            "error": {"class": "transient", "message": "hiccup"}})
    };
    let p = Project::new(&cassette(
        models(),
        json!({
            // Retried: attempt 1 fails after spending, attempt 2 delivers.
            "retried": {"attempts": [{"turns": [failing(40)]},
                {"turns": [turn(30, 5, 0.02), emit(json!({"summary": "ok"}))]}]},
            // Two failed attempts, then a person.
            "escalated": {"attempts": [{"turns": [failing(70)]}, {"turns": [failing(20)]}]},
            // Fails once, then its fallback's alternate node delivers in its place.
            "primary": {"attempts": [{"turns": [failing(60)]}]},
            "backup": {"attempts": [{"turns": [emit(json!({"summary": "from backup"}))]}]},
        }),
    ));
    let retry = json!({"retry": {"max_attempts": 2, "backoff": "none", "retry_on": ["transient"]}});
    let mut escalate = retry.clone();
    escalate["on_exhausted"] = json!("escalate");
    escalate["escalation"] = json!({"to": "human", "roles": ["oncall"]});
    let doc = json!({"id": "t", "entrypoints": ["retried", "escalated", "primary"], "nodes": {
        "retried": model_node(json!({"failure": retry})),
        "escalated": model_node(json!({"failure": escalate})),
        "primary": model_node(json!({"failure":
            {"fallback": [{"strategy": "alternate_node", "node": "backup"}]}})),
        "backup": model_node(json!({"when": "false"})),
    }});
    let store = Store::open_in_memory().unwrap();
    let report = run_document(&doc, &store, &p.options()).await.unwrap();
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    weft_engine::human::decide(
        &store,
        &report.run_id,
        &common::request(
            "escalated",
            weft_engine::human::Verb::Approve,
            json!({"summary": "accepted"}),
        ),
    )
    .unwrap();
    let done = common::resume_with(&store, &report.run_id, p.options()).await;
    assert_eq!(node(&done, "escalated").state, "succeeded", "{done:#?}");
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert_usage_adds_up(&record);
    let attempts = |id: &str| -> Vec<u64> {
        record_node(&record, id)["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["usage"]["input_tokens"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(attempts("retried"), [40, 40], "30 + emit's 10 on attempt 2");
    assert_eq!(attempts("escalated"), [70, 20]);
    assert_eq!(node(&done, "primary").state, "succeeded", "{done:#?}");
    // The alternate that ran in its place is billed to the attempt it replaced: 60 + 10.
    assert_eq!(attempts("primary"), [70]);
    // Every token once: 40 + 40 + 70 + 20 + 60 + the backup's 10.
    assert_eq!(record["usage"]["input_tokens"], 240, "{}", record["usage"]);
    assert_eq!(
        done.usage.total_tokens(),
        record["usage"]["total_tokens"].as_u64().unwrap()
    );
}

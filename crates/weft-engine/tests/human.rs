//! Human-in-the-loop through the real engine and a real SQLite store: blocking gates
//! suspend the run (`awaiting_human`), decisions written to the log by another writer are
//! applied on resume or by the live driver (the inbox), `on_reject` and `on_timeout`
//! decide, `human_takeover` and escalation wait on a person, and `cancel_requested` stops a
//! running or suspended run. Every scenario replays to the live states and its run record
//! validates against the AGS run-record schema.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;
use common::{assert_valid, events, request, resume_with, state, wait_for};
use serde_json::{Value, json};
use weft_engine::human::{Verb, decide, request_cancel};
use weft_engine::record::record_of;
use weft_engine::{
    EngineError, FinalStatus, ResumeOptions, RunEvent, RunOptions, RunReport, replay_run,
    resume_run, run_document,
};
use weft_store::{EventLog, RunStatus, RunTable, Store};

fn exec(run: &str) -> Value {
    json!({"description": "a step", "x-weft-exec": {"run": run}})
}

/// A gate `g` and a node `after` that prints the gate's `decision` (its output `label`).
fn gate_doc(gate: Value) -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "g", "version": "1.0.0",
        "description": "gate", "entrypoints": ["g"],
        "params": {"who": {"type": "string", "description": "w", "default": "ops"}},
        "nodes": {
            "g": {"type": "gate", "description": "a person decides",
                "outputs": {"summary": {"type": "string", "required": false}},
                "gate": gate},
            "after": {"description": "reads the decision", "depends_on": ["g"],
                "inputs": {"d": {"from": "nodes.g.decision"}},
                "outputs": {"label": {"type": "string"}},
                "x-weft-exec": {"run": "python3 -c 'import json,sys; print(json.load(sys.stdin)[\"d\"])'"}}
        },
        "edges": []
    })
}

fn options(dir: &std::path::Path) -> RunOptions {
    RunOptions {
        project_dir: dir.to_path_buf(),
        ..RunOptions::default()
    }
}

async fn run(doc: &Value, store: &Store, dir: &std::path::Path) -> RunReport {
    run_document(doc, store, &options(dir)).await.unwrap()
}

async fn resume(store: &Store, run_id: &str, dir: &std::path::Path) -> RunReport {
    resume_with(store, run_id, options(dir)).await
}

fn outputs_of(store: &Store, run_id: &str, id: &str) -> Value {
    events(store, run_id)
        .into_iter()
        .find_map(|e| match e {
            RunEvent::NodeFinished { node, outputs, .. } if node == id => Some(outputs),
            _ => None,
        })
        .unwrap()
}

/// The stored log replays to the report's states.
fn assert_replays(doc: &Value, store: &Store, report: &RunReport) {
    let replayed = replay_run(doc, store, &report.run_id).unwrap();
    for (i, n) in report.nodes.iter().enumerate() {
        let s = format!("{:?}", replayed.state(i)).to_lowercase();
        assert_eq!(s, n.state.replace('_', ""), "node {}", n.id);
    }
}

fn refusal(err: EngineError) -> String {
    match err {
        EngineError::Refused(r) => r.join("\n"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn an_approve_gate_suspends_the_run_and_resume_applies_the_approval() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = gate_doc(json!({
        "mode": "approve", "prompt": "Ship it, ${{ params.who }}?",
        "roles": ["lead"], "present": ["params.who", "nodes.nope.outputs.x +"]
    }));
    let report = run(&doc, &store, dir.path()).await;
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    assert_eq!(state(&report, "g"), "awaiting_human");
    assert_eq!(state(&report, "after"), "pending");
    let w = &report.waiting[0];
    assert_eq!(
        (w.node.as_str(), w.prompt.as_deref()),
        ("g", Some("Ship it, ops?"))
    );
    assert_eq!(w.present[0], json!("ops"));
    assert!(w.present[1]["error"].is_string(), "{:?}", w.present);
    assert_eq!(w.on_timeout, "hold");
    let row = store.get_run(&report.run_id).unwrap().unwrap();
    assert_eq!(row.status, RunStatus::Suspended);
    assert_replays(&doc, &store, &report);
    let record = record_of(&store, &report.run_id).unwrap();
    assert_eq!(record["status"], json!("awaiting_human"));
    assert_valid(&record);

    // Resuming before anyone decided suspends again and writes nothing new but nothing
    // is treated as uncertain either.
    let before = events(&store, &report.run_id).len();
    let again = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(again.status, FinalStatus::AwaitingHuman);
    assert_eq!(events(&store, &report.run_id).len(), before);

    // A role outside `roles` is refused; then ann approves as lead.
    let mut bad = request("g", Verb::Approve, json!({}));
    bad.role = Some("intern".into());
    let err = decide(&store, &report.run_id, &bad).unwrap_err();
    assert!(refusal(err).contains("role `intern`"));
    let mut ok = request("g", Verb::Approve, json!({}));
    ok.role = Some("lead".into());
    decide(&store, &report.run_id, &ok).unwrap();
    // A second decision on the same wait is refused: the node no longer waits.
    let err = decide(&store, &report.run_id, &ok).unwrap_err();
    assert!(refusal(err).contains("is not waiting on a person"));

    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    assert_eq!(
        outputs_of(&store, &report.run_id, "after")["label"],
        json!("approved")
    );
    assert_replays(&doc, &store, &done);
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    let g = record["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["node_id"] == "g")
        .unwrap();
    assert_eq!(g["human_events"][0]["outcome"], json!("approved"));
    assert_eq!(g["human_events"][0]["actor"], json!("ann"));
    assert_eq!(g["human_events"][0]["at_stage"], json!("gate"));
    // Finished: decisions are refused.
    let err = decide(&store, &report.run_id, &ok).unwrap_err();
    assert!(refusal(err).contains("has finished"));
}

#[tokio::test]
async fn on_reject_fails_skips_dependents_or_routes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    for (on_reject, gate_state, after_state, label) in [
        ("fail", "failed", "skipped", None),
        ("skip_dependents", "skipped", "skipped", None),
        ("route", "succeeded", "succeeded", Some("rejected")),
    ] {
        let doc = gate_doc(json!({"mode": "approve", "on_reject": on_reject}));
        let report = run(&doc, &store, dir.path()).await;
        decide(
            &store,
            &report.run_id,
            &request("g", Verb::Reject, json!({})),
        )
        .unwrap();
        let done = resume(&store, &report.run_id, dir.path()).await;
        assert_eq!(state(&done, "g"), gate_state, "{on_reject}: {done:#?}");
        assert_eq!(state(&done, "after"), after_state, "{on_reject}");
        if let Some(label) = label {
            assert_eq!(
                outputs_of(&store, &report.run_id, "after")["label"],
                json!(label)
            );
        }
        assert_replays(&doc, &store, &done);
        assert_valid(&record_of(&store, &report.run_id).unwrap());
    }
}

#[tokio::test]
async fn input_values_are_checked_and_review_edits_write_the_declared_output() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = gate_doc(json!({"mode": "input", "collect": {
        "size": {"type": "integer", "description": "how many"},
        "colour": {"type": "string", "description": "which", "enum": ["red", "blue"]}
    }}));
    let report = run(&doc, &store, dir.path()).await;
    let err = decide(
        &store,
        &report.run_id,
        &request("g", Verb::Provide, json!({"size": "3", "colour": "red"})),
    )
    .unwrap_err();
    assert!(refusal(err).contains("`size` must be of type integer"));
    let err = decide(
        &store,
        &report.run_id,
        &request("g", Verb::Approve, json!({})),
    )
    .unwrap_err();
    assert!(refusal(err).contains("use `weft provide`"));
    decide(
        &store,
        &report.run_id,
        &request("g", Verb::Provide, json!({"size": 3, "colour": "red"})),
    )
    .unwrap();
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    let g = outputs_of(&store, &report.run_id, "g");
    assert_eq!(
        (g["size"].clone(), g["colour"].clone()),
        (json!(3), json!("red"))
    );
    assert_eq!(g["decision"], json!("provided"));

    let doc = gate_doc(json!({"mode": "review"}));
    let report = run(&doc, &store, dir.path()).await;
    let err = decide(
        &store,
        &report.run_id,
        &request("g", Verb::Approve, json!({"nope": "x"})),
    )
    .unwrap_err();
    assert!(refusal(err).contains("may only write a declared output"));
    decide(
        &store,
        &report.run_id,
        &request("g", Verb::Approve, json!({"summary": "edited text"})),
    )
    .unwrap();
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Succeeded);
    assert_eq!(
        outputs_of(&store, &report.run_id, "g")["summary"],
        json!("edited text")
    );
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert!(record.to_string().contains("\"outcome\":\"edited\""));
}

#[tokio::test]
async fn timeouts_decide_the_gate_with_policy_fallbacks() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    // A deadline already passed: the live driver logs `human_timeout` and acts.
    let doc = gate_doc(json!({"mode": "approve", "timeout_seconds": 0, "on_timeout": "approve"}));
    let report = run(&doc, &store, dir.path()).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert!(
        events(&store, &report.run_id)
            .iter()
            .any(|e| matches!(e, RunEvent::HumanTimeout { action, .. } if action == "approve"))
    );
    assert_replays(&doc, &store, &report);
    let doc = gate_doc(json!({"mode": "approve", "timeout_seconds": 0, "on_timeout": "fail"}));
    let report = run(&doc, &store, dir.path()).await;
    assert_eq!(state(&report, "g"), "failed");
    assert_valid(&record_of(&store, &report.run_id).unwrap());
    // The policy's fallbacks: a default timeout, `hold` (the default `on_human_timeout`).
    let mut doc = gate_doc(json!({"mode": "approve"}));
    doc["policy"] = json!({"default_human_timeout_seconds": 0});
    let report = run(&doc, &store, dir.path()).await;
    assert_eq!(report.status, FinalStatus::AwaitingHuman);
    let held = events(&store, &report.run_id)
        .iter()
        .filter(|e| matches!(e, RunEvent::HumanTimeout { action, .. } if action == "hold"))
        .count();
    assert_eq!(held, 1);
    // A held gate still takes a decision.
    decide(
        &store,
        &report.run_id,
        &request("g", Verb::Approve, json!({})),
    )
    .unwrap();
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Succeeded);
    // The policy may forbid `on_timeout: approve`: refused before anything runs.
    let mut doc = gate_doc(json!({"mode": "approve", "on_timeout": "approve"}));
    doc["policy"] = json!({"x-weft-forbid-timeout-approve": true});
    let err = run_document(&doc, &store, &options(dir.path()))
        .await
        .unwrap_err();
    assert!(refusal(err).contains("forbidden"));
}

#[tokio::test]
async fn a_timeout_passed_while_stopped_is_detected_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = gate_doc(json!({"mode": "approve", "timeout_seconds": 60, "on_timeout": "fail"}));
    // The run's clock, moved by hand: the minute passes while the run is stopped.
    let clock = weft_engine::clock::TestClock::at(1_700_000_000_000);
    let timed = RunOptions {
        clock: Some(std::sync::Arc::new(clock.clone())),
        ..options(dir.path())
    };
    let report = run_document(&doc, &store, &timed).await.unwrap();
    assert_eq!(report.status, FinalStatus::AwaitingHuman);
    clock.advance(std::time::Duration::from_secs(61));
    let done = resume_with(&store, &report.run_id, timed).await;
    assert_eq!(state(&done, "g"), "failed", "{done:#?}");
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert!(record.to_string().contains("\"outcome\":\"timed_out\""));
}

fn parallel_doc(gate: Value, other: &str) -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "p", "version": "1.0.0",
        "description": "a gate next to a running node", "entrypoints": ["g", "work"],
        "constraints": {"max_parallel_nodes": 2},
        "nodes": {
            "g": {"type": "gate", "description": "a person decides", "gate": gate},
            "work": exec(other),
        },
        "edges": []
    })
}

#[tokio::test]
async fn a_live_driver_takes_a_decision_from_the_inbox() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("weft.db");
    let store = Store::open(&db).unwrap();
    let doc = parallel_doc(json!({"mode": "approve"}), "sleep 2");
    let decider = {
        let db = db.clone();
        std::thread::spawn(move || {
            let other = wait_for(&db, "live-1", |e| matches!(e, RunEvent::GateWaiting(_)));
            decide(&other, "live-1", &request("g", Verb::Approve, json!({}))).unwrap();
        })
    };
    let mut opts = options(dir.path());
    opts.run_id = Some("live-1".into());
    let report = run_document(&doc, &store, &opts).await.unwrap();
    decider.join().unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(state(&report, "g"), "succeeded");
    // The gate settled from the decision before `work` finished.
    let order: Vec<String> = events(&store, "live-1")
        .into_iter()
        .filter_map(|e| match e {
            RunEvent::NodeFinished { node, .. } => Some(node),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["g", "work"]);
    assert_replays(&doc, &store, &report);
    assert_valid(&record_of(&store, "live-1").unwrap());
}

#[tokio::test]
async fn cancel_stops_a_live_run_and_kills_its_processes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("weft.db");
    let store = Store::open(&db).unwrap();
    // `work` would leave a marker after 30 s; the cancel kills it long before.
    let doc = parallel_doc(
        json!({"mode": "approve"}),
        "sleep 30 & echo $! > sleep.pid; wait; touch never-written",
    );
    let canceller = {
        let db = db.clone();
        let pid_file = dir.path().join("sleep.pid");
        std::thread::spawn(move || {
            let other = wait_for(
                &db,
                "live-2",
                |e| matches!(e, RunEvent::NodeStarted { node, .. } if node == "work"),
            );
            // Cancel once the command's `sleep` runs (its pid is written).
            for _ in 0..250 {
                if std::fs::read_to_string(&pid_file).is_ok_and(|p| !p.trim().is_empty()) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            request_cancel(&other, "live-2", "bob", Some("wrong branch")).unwrap();
        })
    };
    let mut opts = options(dir.path());
    opts.run_id = Some("live-2".into());
    let report = run_document(&doc, &store, &opts).await.unwrap();
    canceller.join().unwrap();
    assert_eq!(report.status, FinalStatus::Cancelled, "{report:#?}");
    assert_eq!(state(&report, "work"), "cancelled");
    assert_eq!(state(&report, "g"), "cancelled");
    assert!(report.reasons[0].contains("cancelled by bob"));
    let row = store.get_run("live-2").unwrap().unwrap();
    assert_eq!(row.status, RunStatus::Cancelled);
    assert!(!dir.path().join("never-written").exists());
    // The command's whole process group was killed: its `sleep` is gone (or a zombie).
    let pid = std::fs::read_to_string(dir.path().join("sleep.pid")).unwrap();
    let stat = format!("/proc/{}/stat", pid.trim());
    let mut alive = true;
    for _ in 0..100 {
        alive = std::fs::read_to_string(&stat)
            .is_ok_and(|s| s.split_whitespace().nth(2).is_none_or(|st| st != "Z"));
        if !alive {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!alive, "the node's `sleep` outlived the cancel");
    assert_replays(&doc, &store, &report);
    let record = record_of(&store, "live-2").unwrap();
    assert_eq!(record["status"], json!("cancelled"));
    assert_valid(&record);
    // A finished run cannot be cancelled again.
    let err = request_cancel(&store, "live-2", "bob", None).unwrap_err();
    assert!(refusal(err).contains("already finished"));
}

#[tokio::test]
async fn cancel_of_a_suspended_run_finishes_it_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = gate_doc(json!({"mode": "approve"}));
    let report = run(&doc, &store, dir.path()).await;
    request_cancel(&store, &report.run_id, "bob", None).unwrap();
    // Asking twice writes one event.
    let receipt = request_cancel(&store, &report.run_id, "bob", None).unwrap();
    assert_eq!(receipt.seq, None);
    let err = decide(
        &store,
        &report.run_id,
        &request("g", Verb::Approve, json!({})),
    )
    .unwrap_err();
    assert!(refusal(err).contains("being cancelled"));
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Cancelled, "{done:#?}");
    assert_eq!(state(&done, "g"), "cancelled");
    assert_eq!(state(&done, "after"), "cancelled");
    assert_replays(&doc, &store, &done);
    assert_valid(&record_of(&store, &report.run_id).unwrap());
}

fn failing_doc(failure: Value) -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "f", "version": "1.0.0",
        "description": "a failing node", "entrypoints": ["a"],
        "nodes": {"a": {"description": "fails", "outputs": {"v": {"type": "string"}},
            "x-weft-exec": {"run": "echo partial >&2; exit 1"}, "failure": failure}},
        "edges": []
    })
}

#[tokio::test]
async fn human_takeover_waits_for_the_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = failing_doc(json!({"fallback": [{"strategy": "human_takeover"}]}));
    let report = run(&doc, &store, dir.path()).await;
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    assert_eq!(report.waiting[0].stage, "human_takeover");
    let err = decide(
        &store,
        &report.run_id,
        &request("a", Verb::Provide, json!({})),
    )
    .unwrap_err();
    assert!(refusal(err).contains("`v` is required"));
    let err = decide(
        &store,
        &report.run_id,
        &request("a", Verb::Provide, json!({"v": 3})),
    )
    .unwrap_err();
    assert!(refusal(err).contains("`v` must be of type string"));
    decide(
        &store,
        &report.run_id,
        &request("a", Verb::Provide, json!({"v": "by hand"})),
    )
    .unwrap();
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    assert_eq!(
        outputs_of(&store, &report.run_id, "a")["v"],
        json!("by hand")
    );
    assert!(events(&store, &report.run_id).iter().any(|e| matches!(
        e, RunEvent::NodeFinished { absorbed_by: Some(r), .. } if r == "fallback[0]:human_takeover"
    )));
    assert_valid(&record_of(&store, &report.run_id).unwrap());

    let report = run(&doc, &store, dir.path()).await;
    decide(
        &store,
        &report.run_id,
        &request("a", Verb::Reject, json!({})),
    )
    .unwrap();
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(state(&done, "a"), "failed");
}

#[tokio::test]
async fn escalation_to_a_human_waits_and_an_approval_succeeds_degraded() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = failing_doc(json!({"on_exhausted": "escalate",
        "escalation": {"to": "human", "roles": ["oncall"]}}));
    let report = run(&doc, &store, dir.path()).await;
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    let w = &report.waiting[0];
    assert_eq!(
        (w.stage.as_str(), w.mode.as_str()),
        ("on_escalation", "review")
    );
    assert_eq!(w.roles, ["oncall"]);
    decide(
        &store,
        &report.run_id,
        &request("a", Verb::Approve, json!({"v": "accepted"})),
    )
    .unwrap();
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(state(&done, "a"), "succeeded");
    assert_eq!(done.status, FinalStatus::Partial, "RT042 caps the run");
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert!(record.to_string().contains("RT042"));

    let report = run(&doc, &store, dir.path()).await;
    decide(
        &store,
        &report.run_id,
        &request("a", Verb::Reject, json!({})),
    )
    .unwrap();
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(state(&done, "a"), "failed");
    assert!(
        done.nodes[0]
            .error
            .as_deref()
            .unwrap()
            .contains("rejected by ann")
    );
}

#[tokio::test]
async fn a_blocking_checkpoint_on_a_gate_is_refused_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let mut doc = gate_doc(json!({"mode": "notify"}));
    doc["nodes"]["g"]["human"] = json!([{"at": "before_start", "mode": "approve"}]);
    let err = run_document(&doc, &store, &options(dir.path()))
        .await
        .unwrap_err();
    assert!(refusal(err).contains("RT015"));
}

/// One task `a` (its command given) with `human` checkpoints, and `b` after it.
fn task_doc(run: &str, human: Value, extra: Value) -> Value {
    let mut a = json!({"description": "a step", "outputs": {"v": {"type": "string"}},
        "x-weft-exec": {"run": run}, "human": human});
    if let (Value::Object(m), Value::Object(x)) = (&mut a, extra) {
        m.extend(x);
    }
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "t", "version": "1.0.0",
        "description": "checkpoints", "entrypoints": ["a"],
        "nodes": {"a": a, "b": {"description": "after", "depends_on": ["a"],
            "x-weft-exec": {"run": "echo b"}}},
        "edges": []
    })
}

fn started(store: &Store, run_id: &str, id: &str) -> usize {
    events(store, run_id)
        .iter()
        .filter(|e| matches!(e, RunEvent::NodeStarted { node, .. } if node == id))
        .count()
}

#[tokio::test]
async fn before_start_waits_before_the_attempt_is_logged_and_a_rejection_never_runs_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = task_doc(
        "python3 -c 'import json,sys; i=json.load(sys.stdin); print(i[\"size\"])'; touch ran",
        json!([{"id": "go", "at": "before_start", "mode": "input", "prompt": "size?",
            "collect": {"size": {"type": "integer", "description": "n"}}}]),
        json!({}),
    );
    let report = run(&doc, &store, dir.path()).await;
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    let w = &report.waiting[0];
    assert_eq!(
        (w.stage.as_str(), w.checkpoint.as_deref()),
        ("before_start", Some("go"))
    );
    assert_eq!(started(&store, &report.run_id, "a"), 0);
    assert_replays(&doc, &store, &report);
    decide(
        &store,
        &report.run_id,
        &request("a", Verb::Provide, json!({"size": 7})),
    )
    .unwrap();
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    // The collected value reached the command's stdin.
    assert_eq!(outputs_of(&store, &report.run_id, "a")["v"], json!("7"));
    assert_eq!(started(&store, &report.run_id, "a"), 1);
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert!(record.to_string().contains("\"checkpoint_id\":\"go\""));

    std::fs::remove_file(dir.path().join("ran")).unwrap();
    let report = run(&doc, &store, dir.path()).await;
    decide(
        &store,
        &report.run_id,
        &request("a", Verb::Reject, json!({})),
    )
    .unwrap();
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(state(&done, "a"), "failed");
    assert!(
        done.nodes[0]
            .error
            .as_deref()
            .unwrap()
            .starts_with("permission_denied")
    );
    assert_eq!(state(&done, "b"), "skipped");
    assert!(!dir.path().join("ran").exists(), "the command never ran");
    assert_eq!(started(&store, &report.run_id, "a"), 0);
}

#[tokio::test]
async fn before_side_effects_fires_unless_the_permissions_are_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let human = json!([{"at": "before_side_effects", "mode": "approve"}]);
    let doc = task_doc("echo x", human.clone(), json!({}));
    let report = run(&doc, &store, dir.path()).await;
    assert_eq!(report.status, FinalStatus::AwaitingHuman);
    assert_eq!(report.waiting[0].stage, "before_side_effects");
    let read_only = task_doc(
        "echo x",
        human.clone(),
        json!({"requirements": {"permissions": ["fs:read:src/**", "net:fetch:https://x.test"]}}),
    );
    let report = run(&read_only, &store, dir.path()).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    let writes = task_doc(
        "echo x",
        human,
        json!({"requirements": {"permissions": ["fs:read:src/**", "fs:write:out/**"]}}),
    );
    let report = run(&writes, &store, dir.path()).await;
    assert_eq!(report.status, FinalStatus::AwaitingHuman);
}

#[tokio::test]
async fn after_outputs_review_edits_are_checked_by_success() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = task_doc(
        "echo bad",
        json!([{"at": "after_outputs", "mode": "review"}]),
        json!({"success": {"criteria": [{"id": "good", "kind": "expression",
            "description": "v is good", "expr": "outputs.v == 'good'"}]}}),
    );
    let report = run(&doc, &store, dir.path()).await;
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    assert_eq!(report.waiting[0].outputs["v"], json!("bad"));
    decide(
        &store,
        &report.run_id,
        &request("a", Verb::Approve, json!({"v": "good"})),
    )
    .unwrap();
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    assert_eq!(outputs_of(&store, &report.run_id, "a")["v"], json!("good"));
    // Without the edit, success fails on the command's own output.
    let report = run(&doc, &store, dir.path()).await;
    decide(
        &store,
        &report.run_id,
        &request("a", Verb::Approve, json!({})),
    )
    .unwrap();
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(state(&done, "a"), "failed", "{done:#?}");
    assert_valid(&record_of(&store, &report.run_id).unwrap());
}

#[tokio::test]
async fn on_criteria_failure_gates_the_retry_and_on_failure_holds_the_failure() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = task_doc(
        "echo bad",
        json!([{"at": "on_criteria_failure", "mode": "approve"},
               {"id": "ack", "at": "on_failure", "mode": "approve"}]),
        json!({"success": {"criteria": [{"id": "good", "kind": "expression",
                "description": "v is good", "expr": "outputs.v == 'good'"}]},
            "failure": {"retry": {"max_attempts": 2, "backoff": "none"}}}),
    );
    let report = run(&doc, &store, dir.path()).await;
    assert_eq!(
        report.waiting[0].stage, "on_criteria_failure",
        "{report:#?}"
    );
    assert!(report.waiting[0].verdict.is_some());
    decide(
        &store,
        &report.run_id,
        &request("a", Verb::Approve, json!({})),
    )
    .unwrap();
    // Approved: the retry runs, fails again, asks again.
    let again = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(again.waiting[0].stage, "on_criteria_failure", "{again:#?}");
    assert_eq!(started(&store, &report.run_id, "a"), 2);
    decide(
        &store,
        &report.run_id,
        &request("a", Verb::Approve, json!({})),
    )
    .unwrap();
    // Exhausted: the node failed; the on_failure checkpoint holds it.
    let held = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(held.waiting[0].stage, "on_failure", "{held:#?}");
    assert_eq!(state(&held, "b"), "pending");
    decide(
        &store,
        &report.run_id,
        &request("a", Verb::Approve, json!({})),
    )
    .unwrap();
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(state(&done, "a"), "failed");
    assert_eq!(state(&done, "b"), "skipped");
    assert_replays(&doc, &store, &done);
    assert_valid(&record_of(&store, &report.run_id).unwrap());

    // A rejection at on_criteria_failure stops the retries.
    let report = run(&doc, &store, dir.path()).await;
    decide(
        &store,
        &report.run_id,
        &request("a", Verb::Reject, json!({})),
    )
    .unwrap();
    let after = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(started(&store, &report.run_id, "a"), 1);
    // The person has just decided: the node fails without asking again at on_failure.
    assert_eq!(state(&after, "a"), "failed", "{after:#?}");
    assert!(
        after.nodes[0]
            .error
            .as_deref()
            .unwrap()
            .contains("retries stopped")
    );
}

#[tokio::test]
async fn advisory_notify_and_guarded_checkpoints_never_block() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = task_doc(
        "echo x",
        json!([
            {"id": "fyi", "at": "before_start", "mode": "approve", "required": false, "prompt": "FYI"},
            {"id": "told", "at": "after_outputs", "mode": "notify"},
            {"id": "never", "at": "before_start", "mode": "approve", "when": "false"}
        ]),
        json!({}),
    );
    let report = run(&doc, &store, dir.path()).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    let notified: Vec<(Option<String>, Option<String>)> = events(&store, &report.run_id)
        .into_iter()
        .filter_map(|e| match e {
            RunEvent::GateNotified {
                stage, checkpoint, ..
            } => Some((stage, checkpoint)),
            _ => None,
        })
        .collect();
    assert_eq!(
        notified,
        [
            (Some("before_start".into()), Some("fyi".into())),
            (Some("after_outputs".into()), Some("told".into()))
        ]
    );
    assert_valid(&record_of(&store, &report.run_id).unwrap());
}

#[tokio::test]
async fn an_on_escalation_checkpoint_shapes_the_escalation_wait() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let mut doc = failing_doc(json!({"on_exhausted": "escalate", "escalation": {"to": "human"}}));
    doc["nodes"]["a"]["human"] = json!([{"id": "esc", "at": "on_escalation", "mode": "input",
        "prompt": "help", "roles": ["sre"],
        "collect": {"v": {"type": "string", "description": "the value"}}}]);
    let report = run(&doc, &store, dir.path()).await;
    let w = &report.waiting[0];
    assert_eq!(
        (
            w.stage.as_str(),
            w.mode.as_str(),
            w.prompt.as_deref(),
            w.roles.clone()
        ),
        (
            "on_escalation",
            "input",
            Some("help"),
            vec!["sre".to_string()]
        )
    );
    decide(
        &store,
        &report.run_id,
        &request("a", Verb::Provide, json!({"v": "manual"})),
    )
    .unwrap();
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(state(&done, "a"), "succeeded");
    assert_eq!(
        outputs_of(&store, &report.run_id, "a")["v"],
        json!("manual")
    );
}

#[tokio::test]
async fn human_criteria_are_answered_through_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = task_doc(
        "echo draft",
        json!([]),
        json!({"success": {"criteria": [
            {"id": "nonempty", "kind": "expression", "description": "d", "expr": "outputs.v != ''"},
            {"id": "review", "kind": "human", "description": "a person reads it",
                "prompt": "Is ${{ outputs.v }} fine?", "roles": ["editor"]}
        ]}}),
    );
    let report = run(&doc, &store, dir.path()).await;
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    let w = &report.waiting[0];
    assert_eq!(
        (
            w.stage.as_str(),
            w.checkpoint.as_deref(),
            w.prompt.as_deref()
        ),
        ("human_criterion", Some("review"), Some("Is draft fine?"))
    );
    assert_eq!(w.roles, ["editor"]);
    decide(
        &store,
        &report.run_id,
        &request("a", Verb::Approve, json!({})),
    )
    .unwrap();
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    let verdict = events(&store, &report.run_id)
        .into_iter()
        .find_map(|e| match e {
            RunEvent::NodeFinished { node, verdict, .. } if node == "a" => verdict,
            _ => None,
        })
        .unwrap();
    assert_eq!(verdict["passed"], json!(true));
    assert!(
        verdict.to_string().contains("\"reviewer\":\"ann\""),
        "{verdict}"
    );
    assert_valid(&record_of(&store, &report.run_id).unwrap());

    let report = run(&doc, &store, dir.path()).await;
    decide(
        &store,
        &report.run_id,
        &request("a", Verb::Reject, json!({})),
    )
    .unwrap();
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(state(&done, "a"), "failed", "{done:#?}");
    assert!(done.nodes[0].error.as_deref().unwrap().contains("review"));
}

#[tokio::test]
async fn redacted_outputs_stay_out_of_waits_and_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let mut doc = task_doc(
        r#"echo '{"v": "x", "token": "s3cret"}'"#,
        json!([{"at": "after_outputs", "mode": "review"}]),
        json!({}),
    );
    doc["nodes"]["a"]["outputs"]["token"] =
        json!({"type": "string", "required": false, "redact": true});
    let report = run(&doc, &store, dir.path()).await;
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    let w = &report.waiting[0];
    assert_eq!(w.outputs.get("v"), Some(&json!("x")));
    assert!(w.outputs.get("token").is_none());
    assert_eq!(w.redacted, ["token"]);
    let err = decide(
        &store,
        &report.run_id,
        &request("a", Verb::Approve, json!({"token": "other"})),
    )
    .unwrap_err();
    assert!(refusal(err).contains("declared `redact: true`"));
    decide(
        &store,
        &report.run_id,
        &request("a", Verb::Approve, json!({})),
    )
    .unwrap();
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    let log: Vec<String> = store
        .read(&report.run_id, 1, 1000)
        .unwrap()
        .iter()
        // `run_started` holds the document, whose command text has the value.
        .filter(|r| r.kind != "run_started")
        .map(|r| r.payload.to_string())
        .collect();
    let leaks: Vec<&String> = log.iter().filter(|l| l.contains("s3cret")).collect();
    assert!(leaks.is_empty(), "{leaks:#?}");
}

/// A gate run stopped after every possible number of events, resumed, decided and resumed
/// again ends like the uninterrupted run: the same states, one `node_finished` per node, a
/// gap-free log, and its replay matches.
#[tokio::test]
async fn a_gate_run_stopped_anywhere_resumes_to_the_same_end() {
    let dir = tempfile::tempdir().unwrap();
    let doc = gate_doc(json!({"mode": "approve", "prompt": "ok?"}));
    let mut stopped_somewhere = false;
    for n in 1..12 {
        let store = Store::open_in_memory().unwrap();
        let mut opts = options(dir.path());
        opts.stop_after_events = Some(n);
        opts.run_id = Some(format!("stop-{n}"));
        let id = format!("stop-{n}");
        let first = run_document(&doc, &store, &opts).await;
        let mut report = match first {
            Err(EngineError::Stopped(_)) => {
                stopped_somewhere = true;
                resume(&store, &id, dir.path()).await
            }
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        };
        if report.status == FinalStatus::AwaitingHuman {
            decide(&store, &id, &request("g", Verb::Approve, json!({}))).unwrap();
            report = resume(&store, &id, dir.path()).await;
        }
        assert_eq!(
            report.status,
            FinalStatus::Succeeded,
            "stop after {n}: {report:#?}"
        );
        assert_eq!(outputs_of(&store, &id, "after")["label"], json!("approved"));
        let log = events(&store, &id);
        for node in ["g", "after"] {
            let finished = log
                .iter()
                .filter(|e| matches!(e, RunEvent::NodeFinished { node: x, .. } if x == node))
                .count();
            assert_eq!(finished, 1, "stop after {n}: {node}");
        }
        let seqs: Vec<u64> = store
            .read(&id, 1, 1000)
            .unwrap()
            .iter()
            .map(|r| r.seq)
            .collect();
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
        assert_replays(&doc, &store, &report);
        assert_valid(&record_of(&store, &id).unwrap());
    }
    assert!(stopped_somewhere);
}

/// Only inbox kinds may come from another writer: any other event in the log the driver did
/// not write means a second driver, and the driver stops with an error.
#[tokio::test]
async fn a_foreign_non_inbox_event_stops_the_driver() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("weft.db");
    let store = Store::open(&db).unwrap();
    let doc = parallel_doc(json!({"mode": "approve"}), "sleep 3");
    let intruder = {
        let db = db.clone();
        std::thread::spawn(move || {
            let other = wait_for(
                &db,
                "live-3",
                |e| matches!(e, RunEvent::NodeStarted { node, .. } if node == "work"),
            );
            let last = other.last_seq("live-3").unwrap();
            let bogus = RunEvent::NodeWhen {
                node: "work".into(),
                value: true,
                error: None,
            };
            other
                .append_expecting("live-3", last, &[bogus.to_new_event(0).unwrap()])
                .unwrap();
        })
    };
    let mut opts = options(dir.path());
    opts.run_id = Some("live-3".into());
    let err = run_document(&doc, &store, &opts).await.unwrap_err();
    intruder.join().unwrap();
    assert!(
        err.to_string().contains("was written by another driver"),
        "{err}"
    );
}

/// A task with `before_start` and `after_outputs` checkpoints and a `human` criterion,
/// stopped once at every possible position of its whole log (the run and the resumes that
/// decide what waits), ends like the uninterrupted run, with one `node_finished` per node,
/// a decision per wait and a gap-free log.
#[tokio::test]
async fn a_checkpointed_task_stopped_anywhere_resumes_to_the_same_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc = task_doc(
        "echo draft",
        json!([{"at": "before_start", "mode": "approve"},
               {"at": "after_outputs", "mode": "review"}]),
        json!({"success": {"criteria": [{"id": "ok", "kind": "human",
            "description": "a person agrees", "prompt": "ok?"}]}}),
    );
    doc["nodes"]["a"]["x-weft-exec"]["idempotent"] = json!(true);
    doc["nodes"]["b"]["x-weft-exec"]["idempotent"] = json!(true);
    let mut stopped = 0;
    for total in 1..22 {
        let store = Store::open_in_memory().unwrap();
        let id = format!("cp-{total}");
        let mut opts = options(dir.path());
        opts.stop_after_events = Some(total);
        opts.run_id = Some(id.clone());
        // One stop, once the log holds `total` events, whichever invocation writes them.
        let mut pending_stop = true;
        let mut outcome = run_document(&doc, &store, &opts).await;
        let mut rounds = 0;
        let report = loop {
            rounds += 1;
            assert!(rounds < 10, "stop at {total}");
            match outcome {
                Err(EngineError::Stopped(_)) => {
                    stopped += 1;
                    pending_stop = false;
                }
                Ok(r) if r.status == FinalStatus::AwaitingHuman => {
                    decide(&store, &id, &request("a", Verb::Approve, json!({}))).unwrap();
                }
                Ok(r) => break r,
                Err(e) => panic!("stop at {total}: {e}"),
            }
            let len = events(&store, &id).len();
            let mut ropts = ResumeOptions {
                run: options(dir.path()),
                ..ResumeOptions::default()
            };
            if pending_stop && total > len {
                ropts.run.stop_after_events = Some(total - len);
            }
            outcome = resume_run(&store, &id, None, &ropts)
                .await
                .map(|r| r.report.unwrap());
        };
        assert_eq!(
            report.status,
            FinalStatus::Succeeded,
            "stop at {total}: {report:#?}"
        );
        let log = events(&store, &id);
        for node in ["a", "b"] {
            let finished = log
                .iter()
                .filter(|e| matches!(e, RunEvent::NodeFinished { node: x, .. } if x == node))
                .count();
            assert_eq!(finished, 1, "stop at {total}: {node}");
        }
        let decisions = log
            .iter()
            .filter(|e| matches!(e, RunEvent::HumanDecision(_)))
            .count();
        // An attempt cut short runs again after `node_abandoned`, and its `before_start`
        // checkpoint asks again before the command runs a second time.
        let abandoned = log
            .iter()
            .filter(|e| matches!(e, RunEvent::NodeAbandoned { node, .. } if node == "a"))
            .count();
        let kinds: Vec<&str> = log.iter().map(RunEvent::kind).collect();
        assert_eq!(decisions, 3 + abandoned, "stop at {total}: {kinds:?}");
        let seqs: Vec<u64> = store
            .read(&id, 1, 1000)
            .unwrap()
            .iter()
            .map(|r| r.seq)
            .collect();
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
        assert_replays(&doc, &store, &report);
        assert_valid(&record_of(&store, &id).unwrap());
    }
    // Every position the driver writes and then goes on writing (a suspend or the end
    // closes an invocation; decisions are not the driver's).
    assert!(stopped >= 5, "{stopped}");
}

/// A graph whose `success` waits on an owner's sign-off with a deadline, and a policy.
fn signoff_doc(timeout: f64, on_timeout: &str) -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "s", "version": "1.0.0",
        "description": "sign-off", "entrypoints": ["work"],
        "policy": {"on_human_timeout": on_timeout},
        "nodes": {"work": exec("echo done")},
        "success": {"criteria": [{"id": "owner", "kind": "human", "description": "The owner signs off.", "prompt": "Sign off the release?",
                                  "timeout_seconds": timeout}]}
    })
}

/// A sign-off's deadline is carried out by the first resume after it: `fail` fails the
/// run, `approve` passes it, `hold` waits on with no deadline for a person, whose answer
/// then decides. Each is logged as `human_timeout` on the sign-off key and listed in the
/// record.
#[tokio::test]
async fn a_signoff_deadline_is_carried_out_on_resume_by_the_policy() {
    for (on_timeout, expected) in [
        ("fail", FinalStatus::Failed),
        ("approve", FinalStatus::Succeeded),
        ("hold", FinalStatus::AwaitingHuman),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_in_memory().unwrap();
        let doc = signoff_doc(0.05, on_timeout);
        let first = run(&doc, &store, dir.path()).await;
        assert_eq!(first.status, FinalStatus::AwaitingHuman, "{on_timeout}");
        assert!(first.waiting[0].deadline_ms.is_some(), "{on_timeout}");
        std::thread::sleep(std::time::Duration::from_millis(100));
        let done = resume(&store, &first.run_id, dir.path()).await;
        assert_eq!(done.status, expected, "{on_timeout}: {done:#?}");
        let timeouts: Vec<String> = events(&store, &first.run_id)
            .into_iter()
            .filter_map(|e| match e {
                RunEvent::HumanTimeout { node, action } => Some(format!("{node} {action}")),
                _ => None,
            })
            .collect();
        assert_eq!(timeouts, [format!("success/owner {on_timeout}")]);
        if on_timeout == "hold" {
            // Held: the wait has no deadline now, and a person's answer decides.
            assert_eq!(done.waiting[0].deadline_ms, None);
            decide(
                &store,
                &first.run_id,
                &request("success/owner", Verb::Approve, json!({})),
            )
            .unwrap();
            let signed = resume(&store, &first.run_id, dir.path()).await;
            assert_eq!(signed.status, FinalStatus::Succeeded);
        } else {
            let record = record_of(&store, &first.run_id).unwrap();
            assert_valid(&record);
            assert_eq!(
                record["x-weft-signoffs"][0]["outcome"], "timed_out",
                "{record}"
            );
            assert_eq!(record["x-weft-signoffs"][0]["on_timeout"], on_timeout);
        }
    }
}

/// A resume before the deadline keeps the deadline the first wait was given.
#[tokio::test]
async fn a_resume_before_the_signoff_deadline_does_not_move_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = signoff_doc(3600.0, "fail");
    let first = run(&doc, &store, dir.path()).await;
    let deadline = first.waiting[0].deadline_ms.expect("a deadline");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let again = resume(&store, &first.run_id, dir.path()).await;
    assert_eq!(again.status, FinalStatus::AwaitingHuman);
    assert_eq!(again.waiting[0].deadline_ms, Some(deadline));
}

/// `on_human_timeout: approve` for a sign-off is refused when the policy forbids it.
#[tokio::test]
async fn a_signoff_that_would_approve_on_timeout_is_refused_when_forbidden() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let mut doc = signoff_doc(60.0, "approve");
    doc["policy"]["x-weft-forbid-timeout-approve"] = json!(true);
    let err = run_document(&doc, &store, &options(dir.path()))
        .await
        .unwrap_err();
    assert!(refusal(err).contains("on_human_timeout: approve"));
}

//! The driver end to end on small documents: outcomes, retries, refusals, blocked nodes,
//! timeouts, `when`, failure policies, final status, determinism, and replay equality
//! (the stored events applied to a fresh scheduler give the live run's states).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;
use common::{events, state};
use serde_json::{Value, json};
use weft_engine::{
    EngineError, FinalStatus, RunEvent, RunOptions, RunReport, replay_run, run_document,
};
use weft_store::{RunStatus, RunTable, Store};

fn options(dir: &std::path::Path, max_parallel: Option<usize>) -> RunOptions {
    RunOptions {
        project_dir: dir.to_path_buf(),
        max_parallel,
        ..RunOptions::default()
    }
}

fn exec(run: &str) -> Value {
    json!({"description": "a step", "x-weft-exec": {"run": run}})
}

async fn run(doc: &Value, store: &Store) -> (RunReport, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let report = run_document(doc, store, &options(dir.path(), None))
        .await
        .unwrap();
    (report, dir)
}

fn example() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/exec-pipeline.agraph.yaml");
    weft_engine::load_document(&path).unwrap()
}

fn assert_replay_matches(doc: &Value, store: &Store, report: &RunReport) {
    let replayed = replay_run(doc, store, &report.run_id).unwrap();
    assert!(replayed.is_finished());
    for (i, n) in report.nodes.iter().enumerate() {
        let s = format!("{:?}", replayed.state(i)).to_lowercase();
        let live = n.state.replace('_', "");
        assert_eq!(s, live, "node {}", n.id);
    }
    let started: Vec<String> = replayed
        .started()
        .iter()
        .map(|&i| replayed.graph().node(i).id.clone())
        .collect();
    assert_eq!(started, report.started);
}

#[tokio::test]
async fn the_example_pipeline_succeeds_and_replays() {
    let doc = example();
    let store = Store::open_in_memory().unwrap();
    let (report, dir) = run(&doc, &store).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(state(&report, "smoke_test"), "failed");
    assert_eq!(state(&report, "notify_failure"), "succeeded");
    assert_eq!(state(&report, "publish"), "succeeded");
    assert_eq!(state(&report, "rollback"), "skipped");
    assert_eq!(report.outputs["artifact"], json!("out/build.json"));
    assert_eq!(report.outputs["channel"], json!("stable"));
    // build received its input on stdin.
    let written = std::fs::read_to_string(dir.path().join("out/build.json")).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&written).unwrap(),
        json!({"version": "1.2.3"})
    );
    let log = events(&store, &report.run_id);
    assert!(matches!(log.first(), Some(RunEvent::RunStarted { .. })));
    assert!(
        matches!(log.last(), Some(RunEvent::RunFinished { status, .. }) if status == "succeeded")
    );
    let run = store.get_run(&report.run_id).unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Succeeded);
    assert_replay_matches(&doc, &store, &report);
}

#[tokio::test]
async fn sequential_runs_start_nodes_in_the_same_order() {
    let doc = example();
    let store = Store::open_in_memory().unwrap();
    let mut orders = Vec::new();
    for _ in 0..2 {
        let dir = tempfile::tempdir().unwrap();
        let r = run_document(&doc, &store, &options(dir.path(), Some(1)))
            .await
            .unwrap();
        assert_replay_matches(&doc, &store, &r);
        orders.push(r.started);
    }
    assert_eq!(orders[0], orders[1]);
    assert_eq!(
        orders[0],
        [
            "prepare",
            "build",
            "smoke_test",
            "notify_failure",
            "publish"
        ]
    );
}

#[tokio::test]
async fn a_task_without_an_agent_refuses_the_run_before_anything_runs() {
    let doc = json!({"entrypoints": ["a"], "nodes": {
        "a": exec("touch ran"),
        "b": {"description": "needs a model", "depends_on": ["a"]},
        "c": {"depends_on": ["a"], "x-weft-exec": {"idempotent": true}}
    }});
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let err = run_document(&doc, &store, &options(dir.path(), None))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, EngineError::Refused(_)));
    assert!(
        text.contains("node `b` needs a model: this run has no live model provider"),
        "{text}"
    );
    assert!(
        text.contains("node `c`: `x-weft-exec` needs a string `run`"),
        "{text}"
    );
    assert!(!dir.path().join("ran").exists());
    assert!(store.list_runs(None, 10).unwrap().is_empty());
}

#[tokio::test]
async fn another_executor_blocks_the_node() {
    let mut a = exec("touch ran");
    a["x-acme-executor"] = json!({"model": "x"});
    let doc = json!({"entrypoints": ["a"], "nodes": {"a": a}});
    let store = Store::open_in_memory().unwrap();
    let (report, dir) = run(&doc, &store).await;
    assert_eq!(state(&report, "a"), "blocked");
    assert!(
        report.nodes[0]
            .error
            .as_deref()
            .unwrap()
            .contains("x-acme-executor")
    );
    assert!(!dir.path().join("ran").exists());
    assert_eq!(report.status, FinalStatus::Partial);
}

#[tokio::test]
async fn retries_until_an_attempt_succeeds() {
    let mut a = exec("if [ -f once ]; then echo done; else touch once; exit 1; fi");
    a["failure"] = json!({"retry": {"max_attempts": 3, "initial_delay_seconds": 0}});
    a["outputs"] = json!({"result": {"type": "string", "description": "r"}});
    let doc = json!({"entrypoints": ["a"], "nodes": {"a": a}});
    let store = Store::open_in_memory().unwrap();
    let (report, _dir) = run(&doc, &store).await;
    assert_eq!(report.status, FinalStatus::Succeeded);
    assert_eq!(report.nodes[0].attempts, 2);
    let attempts: Vec<u32> = events(&store, &report.run_id)
        .iter()
        .filter_map(|e| match e {
            RunEvent::NodeStarted { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(attempts, [1, 2]);
    let finished = events(&store, &report.run_id);
    assert!(finished.iter().any(|e| matches!(e, RunEvent::NodeFinished { outputs, .. } if outputs == &json!({"result": "done"}))));
}

#[tokio::test]
async fn timeouts_and_failed_criteria_fail_the_node() {
    let mut slow = exec("sleep 5");
    slow["constraints"] = json!({"max_wall_clock_seconds": 0.3});
    let mut bad = exec("true");
    bad["success"] = json!({"criteria": [
        {"id": "there", "kind": "file_exists", "description": "d", "path": "missing.txt"}
    ]});
    let doc = json!({"entrypoints": ["slow", "bad"], "nodes": {"slow": slow, "bad": bad}});
    let store = Store::open_in_memory().unwrap();
    let started = std::time::Instant::now();
    let (report, _dir) = run(&doc, &store).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
    assert_eq!(state(&report, "slow"), "failed");
    assert!(
        report.nodes[0]
            .error
            .as_deref()
            .unwrap()
            .starts_with("timeout")
    );
    assert_eq!(state(&report, "bad"), "failed");
    assert!(report.nodes[1].error.as_deref().unwrap().contains("there"));
    assert_eq!(report.status, FinalStatus::Partial);
    assert_replay_matches(&doc, &store, &report);
}

#[tokio::test]
async fn when_params_and_inputs() {
    let mut a = exec("cat");
    a["when"] = json!("params.go == true");
    a["inputs"] = json!({"greeting": {"type": "string", "description": "g"}});
    a["outputs"] = json!({"greeting": {"type": "string", "description": "g"}});
    let mut b = exec("touch b-ran");
    b["when"] = json!("params.go == false");
    let doc = json!({
        "params": {
            "go": {"type": "boolean", "description": "go"},
            "greeting": {"type": "string", "description": "g", "default": "hi"}
        },
        "entrypoints": ["a", "b"], "nodes": {"a": a, "b": b},
        "outputs": {"greeting": {"type": "string", "description": "g", "from": "nodes.a.outputs.greeting"}}
    });
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(dir.path(), Some(2));
    opts.params.insert("go".into(), json!(true));
    let report = run_document(&doc, &store, &opts).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(state(&report, "b"), "skipped");
    assert_eq!(report.outputs, json!({"greeting": "hi"}));
    assert!(!dir.path().join("b-ran").exists());
    assert_replay_matches(&doc, &store, &report);
    // A required param without a value refuses the run.
    let err = run_document(&doc, &store, &options(dir.path(), None))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("AG301"), "{err}");
}

#[tokio::test]
async fn halt_fails_the_run_and_unbound_outputs_make_it_partial() {
    let doc = json!({
        "policy": {"on_node_failure": "halt"},
        "entrypoints": ["a"],
        "nodes": {"a": exec("exit 2"), "b": {"description": "d", "depends_on": ["a"], "x-weft-exec": {"run": "true"}}}
    });
    let store = Store::open_in_memory().unwrap();
    let (report, _dir) = run(&doc, &store).await;
    assert_eq!(report.status, FinalStatus::Failed);
    assert_eq!(state(&report, "b"), "skipped");
    assert_eq!(
        store.get_run(&report.run_id).unwrap().unwrap().status,
        RunStatus::Failed
    );

    let doc = json!({
        "entrypoints": ["a"],
        "nodes": {"a": exec("echo '{}'")},
        "outputs": {"x": {"type": "string", "description": "x", "from": "nodes.a.outputs.x"}}
    });
    let (report, _dir) = run(&doc, &store).await;
    assert_eq!(report.status, FinalStatus::Partial);
    assert!(report.reasons[0].contains("RT041"), "{:?}", report.reasons);
}

#[tokio::test]
async fn a_missing_required_output_fails_the_attempt() {
    let mut a = exec("echo '{\"other\": 1}'");
    a["outputs"] = json!({"x": {"type": "string", "description": "x"}});
    let doc = json!({"entrypoints": ["a"], "nodes": {"a": a}});
    let store = Store::open_in_memory().unwrap();
    let (report, _dir) = run(&doc, &store).await;
    assert_eq!(state(&report, "a"), "failed");
    assert!(
        report.nodes[0]
            .error
            .as_deref()
            .unwrap()
            .starts_with("output_missing")
    );
}

/// The most node attempts in flight at once, read from the log.
fn max_in_flight(log: &[RunEvent], only: Option<&[&str]>) -> usize {
    let counts = |n: &str| only.is_none_or(|o| o.contains(&n));
    let (mut now, mut max) = (0usize, 0usize);
    for e in log {
        match e {
            RunEvent::NodeStarted { node, .. } if counts(node) => {
                now += 1;
                max = max.max(now);
            }
            RunEvent::NodeFinished { node, .. } if counts(node) => now -= 1,
            _ => {}
        }
    }
    max
}

#[tokio::test]
async fn max_parallel_and_concurrency_groups_bound_the_running_nodes() {
    let mut nodes = serde_json::Map::new();
    for id in ["a", "b", "c", "d"] {
        nodes.insert(id.into(), exec("sleep 0.2"));
    }
    for id in ["e", "f"] {
        let mut n = exec("sleep 0.2");
        n["constraints"] = json!({"concurrency_group": "deploy"});
        nodes.insert(id.into(), n);
    }
    let doc = json!({"entrypoints": ["a", "b", "c", "d", "e", "f"], "nodes": nodes});
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let report = run_document(&doc, &store, &options(dir.path(), Some(3)))
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded);
    let log = events(&store, &report.run_id);
    assert_eq!(max_in_flight(&log, None), 3);
    assert_eq!(max_in_flight(&log, Some(&["e", "f"])), 1);
    assert_replay_matches(&doc, &store, &report);
}

#[tokio::test]
async fn on_exhausted_skip_and_succeed_degraded() {
    let mut a = exec("exit 1");
    a["failure"] = json!({"on_exhausted": "skip"});
    let b = json!({"description": "d", "depends_on": ["a"], "x-weft-exec": {"run": "true"}});
    let mut c = exec("exit 1");
    c["failure"] = json!({"on_exhausted": "succeed_degraded"});
    let mut d = exec("true");
    d["depends_on"] = json!(["c"]);
    let doc = json!({"entrypoints": ["a", "c"], "nodes": {"a": a, "b": b, "c": c, "d": d}});
    let store = Store::open_in_memory().unwrap();
    let (report, _dir) = run(&doc, &store).await;
    assert_eq!(state(&report, "a"), "skipped");
    assert_eq!(state(&report, "b"), "skipped");
    assert_eq!(state(&report, "c"), "succeeded");
    assert_eq!(state(&report, "d"), "succeeded");
    assert_eq!(report.status, FinalStatus::Partial);
    assert!(report.reasons.iter().any(|r| r.contains("RT042")));
    assert_replay_matches(&doc, &store, &report);
}

fn decision_doc(flag: bool, with_default: bool) -> Value {
    let mut block = json!({
        "evaluator": "expression",
        "branches": [
            {"label": "go", "description": "flag set", "when": "params.flag == true"},
            {"label": "stop", "description": "never", "when": "params.flag == 'never'"}
        ]
    });
    if with_default {
        block["default_branch"] = json!("stop");
    }
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "d", "version": "1.0.0",
        "description": "decision", "entrypoints": ["choose"],
        "params": {"flag": {"type": "boolean", "default": flag}},
        "nodes": {
            "choose": {"type": "decision", "description": "pick", "decision": block},
            "went": {"description": "go branch", "x-weft-exec": {"run": "echo ok"}},
            "stopped": {"description": "stop branch", "x-weft-exec": {"run": "echo ok"}},
            "echo": {"description": "reads the label", "depends_on": ["choose"],
                "inputs": {"d": {"from": "nodes.choose.decision"}},
                "outputs": {"label": {"type": "string"}},
                "x-weft-exec": {"run": "python3 -c 'import json,sys; print(json.load(sys.stdin)[\"d\"])'"}}
        },
        "edges": [
            {"from": "choose", "to": "went", "kind": "conditional", "when": "nodes.choose.outputs.decision == 'go'"},
            {"from": "choose", "to": "stopped", "kind": "conditional", "when": "nodes.choose.decision == 'stop'"}
        ]
    })
}

#[tokio::test]
async fn an_expression_decision_routes_on_its_label() {
    let store = Store::open_in_memory().unwrap();
    let doc = decision_doc(true, false);
    let (report, _dir) = run(&doc, &store).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(state(&report, "went"), "succeeded", "{report:#?}");
    assert_eq!(state(&report, "stopped"), "skipped");
    let finished = events(&store, &report.run_id)
        .into_iter()
        .find_map(|e| match e {
            RunEvent::NodeFinished { node, outputs, .. } if node == "echo" => Some(outputs),
            _ => None,
        })
        .unwrap();
    assert_eq!(finished["label"], json!("go"));
    assert_replay_matches(&doc, &store, &report);
}

#[tokio::test]
async fn an_expression_decision_falls_back_to_its_default_or_fails() {
    let store = Store::open_in_memory().unwrap();
    let (report, _dir) = run(&decision_doc(false, true), &store).await;
    assert_eq!(state(&report, "went"), "skipped");
    assert_eq!(state(&report, "stopped"), "succeeded");
    let (report, _dir) = run(&decision_doc(false, false), &store).await;
    assert_eq!(state(&report, "choose"), "failed");
    assert!(
        report.nodes[0]
            .error
            .as_deref()
            .unwrap()
            .contains("no decision branch matched"),
        "{report:#?}"
    );
}

#[tokio::test]
async fn an_agent_decision_is_refused() {
    let store = Store::open_in_memory().unwrap();
    let mut doc = decision_doc(true, false);
    doc["nodes"]["choose"]["decision"]["evaluator"] = json!("agent");
    let dir = tempfile::tempdir().unwrap();
    let err = run_document(&doc, &store, &options(dir.path(), None))
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::Refused(_)), "{err:?}");
}

async fn run_recording(doc: &Value, store: &Store) -> (RunReport, Vec<std::time::Duration>) {
    let dir = tempfile::tempdir().unwrap();
    let sleeper = weft_engine::RecordingSleeper::default();
    let mut opts = options(dir.path(), None);
    opts.sleeper = Some(std::sync::Arc::new(sleeper.clone()));
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    opts.run_id = Some(format!("run-backoff-{n}"));
    let report = run_document(doc, store, &opts).await.unwrap();
    (report, sleeper.requested())
}

fn always_failing(retry: Value) -> Value {
    let mut a = exec("exit 3");
    a["failure"] = json!({"retry": retry});
    json!({"entrypoints": ["a"], "nodes": {"a": a}})
}

#[tokio::test]
async fn backoff_formulas_ask_the_sleeper_for_growing_capped_pauses() {
    use std::time::Duration;
    let store = Store::open_in_memory().unwrap();
    let secs = |v: &[Duration]| v.iter().map(Duration::as_secs_f64).collect::<Vec<_>>();
    let base = |kind: &str| {
        json!({"max_attempts": 5, "backoff": kind, "initial_delay_seconds": 2,
               "max_delay_seconds": 10, "jitter": false})
    };
    let (report, pauses) = run_recording(&always_failing(base("exponential")), &store).await;
    assert_eq!(report.nodes[0].attempts, 5);
    assert_eq!(secs(&pauses), [2.0, 4.0, 8.0, 10.0]);
    let logged: Vec<u64> = events(&store, &report.run_id)
        .into_iter()
        .filter_map(|e| match e {
            RunEvent::NodeStarted { delay_ms, .. } => delay_ms,
            _ => None,
        })
        .collect();
    assert_eq!(logged, [2000, 4000, 8000, 10_000]);
    let (_, pauses) = run_recording(&always_failing(base("linear")), &store).await;
    assert_eq!(secs(&pauses), [2.0, 4.0, 6.0, 8.0]);
    let (_, pauses) = run_recording(&always_failing(base("fixed")), &store).await;
    assert_eq!(secs(&pauses), [2.0, 2.0, 2.0, 2.0]);
    let (_, pauses) = run_recording(&always_failing(base("none")), &store).await;
    assert_eq!(secs(&pauses), [0.0, 0.0, 0.0, 0.0]);
    // Jitter (the default): within [0, delay], and the same for the same run id.
    let jittered = json!({"max_attempts": 4});
    let (r, first) = run_recording(&always_failing(jittered.clone()), &store).await;
    let again = weft_engine::Backoff::default();
    let expected: Vec<Duration> = (1..4).map(|n| again.delay(&r.run_id, "a", n)).collect();
    assert_eq!(first, expected);
    for (n, d) in first.iter().enumerate() {
        assert!(d.as_secs_f64() <= 2.0 * 2f64.powi(i32::try_from(n).unwrap()));
    }
}

#[tokio::test]
async fn the_second_attempt_receives_the_failed_criteria_as_feedback() {
    // Attempt 1 writes nothing; attempt 2 stores its stdin, whose `feedback` names the
    // criterion it missed, then creates the file.
    let mut a = exec("if [ -f tried ]; then cat > seen.json; touch done.txt; else touch tried; fi");
    a["success"] = json!({"criteria": [
        {"id": "made", "kind": "file_exists", "description": "the marker file done.txt exists", "path": "done.txt"}
    ]});
    a["failure"] = json!({"retry": {"max_attempts": 2, "initial_delay_seconds": 0}});
    let doc = json!({"entrypoints": ["a"], "nodes": {"a": a}});
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let report = run_document(&doc, &store, &options(dir.path(), None))
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("seen.json")).unwrap())
            .unwrap();
    let feedback = seen["feedback"].as_str().unwrap();
    assert!(
        feedback.contains("the marker file done.txt exists"),
        "{feedback}"
    );
}

fn absorbed_by(store: &Store, run_id: &str, id: &str) -> Option<String> {
    events(store, run_id).into_iter().find_map(|e| match e {
        RunEvent::NodeFinished {
            node, absorbed_by, ..
        } if node == id => absorbed_by,
        _ => None,
    })
}

fn ladder(a: Value, others: Value) -> Value {
    let mut nodes = others.as_object().cloned().unwrap_or_default();
    nodes.insert("a".into(), a);
    let mut next = exec("echo next");
    next["depends_on"] = json!(["a"]);
    nodes.insert("next".into(), next);
    json!({"entrypoints": ["a"], "nodes": nodes})
}

#[tokio::test]
async fn a_skip_fallback_skips_the_node_and_its_dependents() {
    let mut a = exec("exit 1");
    a["failure"] = json!({"fallback": [
        {"strategy": "skip", "when": "params.never == true"},
        {"strategy": "skip"}
    ]});
    let store = Store::open_in_memory().unwrap();
    let doc = ladder(a, json!({}));
    let (report, _dir) = run(&doc, &store).await;
    assert_eq!(state(&report, "a"), "skipped", "{report:#?}");
    assert_eq!(state(&report, "next"), "skipped");
    assert_eq!(
        absorbed_by(&store, &report.run_id, "a").as_deref(),
        Some("fallback[1]:skip")
    );
    assert_replay_matches(&doc, &store, &report);
}

#[tokio::test]
async fn degrade_outputs_and_relax_criteria_accept_the_attempt() {
    let mut a = exec(r#"echo '{"main": 1}'"#);
    a["outputs"] = json!({"main": {"type": "integer"}, "extra": {"type": "integer"}});
    a["failure"] = json!({"fallback": [{"strategy": "degrade_outputs", "outputs": ["main"]}]});
    let store = Store::open_in_memory().unwrap();
    let (report, _dir) = run(&ladder(a, json!({})), &store).await;
    assert_eq!(state(&report, "a"), "succeeded", "{report:#?}");
    assert_eq!(state(&report, "next"), "succeeded");
    assert_eq!(
        absorbed_by(&store, &report.run_id, "a").as_deref(),
        Some("fallback[0]:degrade_outputs")
    );

    let mut b = exec("true");
    b["success"] = json!({"criteria": [
        {"id": "nice", "kind": "file_exists", "description": "d", "path": "missing.txt"}
    ]});
    b["failure"] = json!({"fallback": [{"strategy": "relax_criteria", "criteria": ["nice"]}]});
    let (report, _dir) = run(&ladder(b, json!({})), &store).await;
    assert_eq!(state(&report, "a"), "succeeded", "{report:#?}");
    assert_eq!(
        absorbed_by(&store, &report.run_id, "a").as_deref(),
        Some("fallback[0]:relax_criteria")
    );
}

#[tokio::test]
async fn an_alternate_node_supplies_the_outputs_and_cycles_stop() {
    let mut a = exec("exit 1");
    a["outputs"] = json!({"v": {"type": "string"}});
    a["failure"] = json!({"fallback": [{"strategy": "alternate_node", "node": "alt"}]});
    let mut alt = exec("echo from-alt");
    alt["outputs"] = json!({"v": {"type": "string"}});
    alt["when"] = json!("false");
    let store = Store::open_in_memory().unwrap();
    let (report, _dir) = run(&ladder(a.clone(), json!({"alt": alt})), &store).await;
    assert_eq!(state(&report, "a"), "succeeded", "{report:#?}");
    let outputs = events(&store, &report.run_id)
        .into_iter()
        .find_map(|e| match e {
            RunEvent::NodeFinished { node, outputs, .. } if node == "a" => Some(outputs),
            _ => None,
        })
        .unwrap();
    assert_eq!(outputs["v"], json!("from-alt"));
    // A → B → A: both fail, the guard stops the loop, the node fails.
    let mut b = exec("exit 1");
    b["outputs"] = json!({"v": {"type": "string"}});
    b["when"] = json!("false");
    b["failure"] = json!({"fallback": [{"strategy": "alternate_node", "node": "a"}]});
    a["failure"] = json!({"fallback": [{"strategy": "alternate_node", "node": "b"}]});
    let (report, _dir) = run(&ladder(a, json!({"b": b})), &store).await;
    assert_eq!(state(&report, "a"), "failed", "{report:#?}");
}

#[tokio::test]
async fn escalation_to_a_supervisor_is_refused_up_front_and_timeout_action_decides() {
    let mut a = exec("exit 1");
    a["failure"] = json!({"on_exhausted": "escalate", "escalation": {"to": "supervisor"}});
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let refused = run_document(&ladder(a, json!({})), &store, &options(dir.path(), None))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("failure.escalation.to `supervisor` is not supported"),
        "{refused}"
    );
    let mut slow = exec("sleep 5");
    slow["constraints"] = json!({"max_wall_clock_seconds": 0.2});
    slow["failure"] = json!({"timeout_action": "partial"});
    let (report, _dir) = run(&ladder(slow, json!({})), &store).await;
    assert_eq!(state(&report, "a"), "succeeded");
    assert_eq!(report.status, FinalStatus::Partial);
    assert_eq!(
        absorbed_by(&store, &report.run_id, "a").as_deref(),
        Some("timeout_action:partial")
    );
}

#[tokio::test]
async fn timeout_action_retry_retries_timeouts_and_escalate_waits_on_a_person() {
    let store = Store::open_in_memory().unwrap();
    let mut slow = exec("sleep 5");
    slow["constraints"] = json!({"max_wall_clock_seconds": 0.2});
    slow["failure"] = json!({
        "retry": {"max_attempts": 2, "retry_on": ["tool_error"], "backoff": "none"},
        "timeout_action": "retry"
    });
    let (report, _dir) = run(&ladder(slow.clone(), json!({})), &store).await;
    assert_eq!(report.nodes[0].attempts, 2, "{report:#?}");
    assert_eq!(state(&report, "a"), "failed");
    slow["failure"] = json!({"timeout_action": "escalate"});
    let (report, _dir) = run(&ladder(slow, json!({})), &store).await;
    assert_eq!(state(&report, "a"), "awaiting_human");
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    assert_eq!(report.waiting[0].stage, "on_escalation");
}

#[tokio::test]
async fn a_decision_still_evaluates_its_success_block() {
    let store = Store::open_in_memory().unwrap();
    let mut doc = decision_doc(true, false);
    doc["nodes"]["choose"]["success"] = json!({"criteria": [
        {"id": "never", "kind": "file_exists", "description": "d", "path": "missing.txt"}
    ]});
    let (report, _dir) = run(&doc, &store).await;
    assert_eq!(state(&report, "choose"), "failed", "{report:#?}");
    assert_eq!(state(&report, "went"), "skipped");
}

fn gate_doc(mode: &str) -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "g", "version": "1.0.0",
        "description": "gate", "entrypoints": ["tell"],
        "nodes": {
            "tell": {"type": "gate", "description": "tell someone",
                "gate": {"mode": mode, "prompt": "done"}},
            "after": {"description": "reads the decision", "depends_on": ["tell"],
                "inputs": {"d": {"from": "nodes.tell.decision"}},
                "outputs": {"label": {"type": "string"}},
                "x-weft-exec": {"run": "python3 -c 'import json,sys; print(json.load(sys.stdin)[\"d\"])'"}}
        },
        "edges": []
    })
}

#[tokio::test]
async fn a_notify_gate_succeeds_at_once() {
    let store = Store::open_in_memory().unwrap();
    let doc = gate_doc("notify");
    let (report, _dir) = run(&doc, &store).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(state(&report, "tell"), "succeeded");
    let finished = events(&store, &report.run_id)
        .into_iter()
        .find_map(|e| match e {
            RunEvent::NodeFinished { node, outputs, .. } if node == "after" => Some(outputs),
            _ => None,
        })
        .unwrap();
    assert_eq!(finished["label"], json!("notified"));
    let notified: Vec<_> = events(&store, &report.run_id)
        .into_iter()
        .filter_map(|e| match e {
            RunEvent::GateNotified { node, prompt, .. } => Some((node, prompt)),
            _ => None,
        })
        .collect();
    assert_eq!(
        notified,
        vec![("tell".to_string(), Some("done".to_string()))]
    );
    assert_replay_matches(&doc, &store, &report);
}

/// Nodes a scheduler step starts together share one commit, and so do nodes whose attempts
/// end together (W3 of docs/BENCHMARKS.md: a fan-out must not cost one fsync per node).
#[tokio::test]
async fn nodes_that_start_together_share_one_commit() {
    let step = |deps: Vec<String>| {
        json!({"type": "decision", "description": "step", "depends_on": deps,
            "decision": {"evaluator": "expression",
                "branches": [{"label": "done", "description": "always", "when": "true"}]}})
    };
    let mut nodes = serde_json::Map::new();
    nodes.insert("s".into(), step(vec![]));
    let workers: Vec<String> = (0..20).map(|i| format!("w{i}")).collect();
    for w in &workers {
        nodes.insert(w.clone(), step(vec!["s".into()]));
    }
    nodes.insert("j".into(), step(workers.clone()));
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "fan", "version": "1.0.0",
        "description": "fan-out", "entrypoints": ["s"],
        "constraints": {"max_parallel_nodes": 32}, "nodes": nodes
    });
    let store = Store::open_in_memory().unwrap();
    let before = store.stats().transactions;
    let (report, _dir) = run(&doc, &store).await;
    assert_eq!(report.status, weft_engine::FinalStatus::Succeeded);
    let log = events(&store, &report.run_id);
    assert_eq!(log.len(), 1 + 2 * 22 + 1);
    // create_run, set_status, run_started, run_finished and the final status (5); s's
    // start and finish (2); the 20 starts (1); the 20 finishes, which end in the same
    // turn of the runtime (1, one more allowed); j's start and finish (2). One commit per
    // node would be 48.
    let commits = store.stats().transactions - before;
    assert!(commits <= 5 + 2 + 1 + 2 + 2, "{commits} commits");
    assert_replay_matches(&doc, &store, &report);
}

/// The engine is a level-3 harness (`record::CONFORMANCE_LEVEL`): a level-3 graph is not
/// refused for its level (no AG303), only for what this run lacks (here: a model for its
/// model nodes), and nothing is created.
#[tokio::test]
async fn a_level_three_graph_is_not_refused_for_its_level() {
    assert_eq!(weft_engine::record::CONFORMANCE_LEVEL, 3);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/ags/examples/test-repair-loop.agraph.yaml");
    let doc = weft_engine::load_document(&path).unwrap();
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let err = run_document(&doc, &store, &options(dir.path(), None))
        .await
        .unwrap_err();
    let EngineError::Refused(reasons) = err else {
        panic!("expected a refusal, got {err:?}");
    };
    assert!(!reasons.iter().any(|r| r.contains("AG303")), "{reasons:#?}");
    assert!(
        reasons.iter().any(|r| r.contains("establish_baseline")),
        "{reasons:#?}"
    );
    assert!(
        store.list_runs(None, 10).unwrap().is_empty(),
        "nothing was created"
    );
}

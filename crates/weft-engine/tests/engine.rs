//! The driver end to end on small documents: outcomes, retries, refusals, blocked nodes,
//! timeouts, `when`, failure policies, final status, determinism, and replay equality
//! (the stored events applied to a fresh scheduler give the live run's states).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

use serde_json::{Value, json};
use weft_engine::{
    EngineError, FinalStatus, RunEvent, RunOptions, RunReport, replay_run, run_document,
};
use weft_store::{EventLog, RunStatus, RunTable, Store};

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

fn state<'a>(r: &'a RunReport, id: &str) -> &'a str {
    &r.nodes.iter().find(|n| n.id == id).unwrap().state
}

fn events(store: &Store, run_id: &str) -> Vec<RunEvent> {
    store
        .read(run_id, 1, 10_000)
        .unwrap()
        .iter()
        .map(|r| RunEvent::from_record(r).unwrap())
        .collect()
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
        "c": {"type": "loop", "depends_on": ["a"], "loop": {}}
    }});
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let err = run_document(&doc, &store, &options(dir.path(), None))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, EngineError::Refused(_)));
    assert!(
        text.contains("no agent provider yet: the model issue adds them"),
        "{text}"
    );
    assert!(
        text.contains("`loop` nodes are not supported yet"),
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

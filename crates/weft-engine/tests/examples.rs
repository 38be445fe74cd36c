//! The project's own level-2 example (`examples/incident-triage.agraph.yaml`) end to end:
//! every node ends as the document intends, each failure-ladder rung that should absorb a
//! failure does, real parallelism stays inside its bounds, two runs agree, the stored log
//! replays to the same states, and the run record validates against the AGS schema.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;
use common::{assert_valid, events, state};
use serde_json::Value;
use weft_engine::{FinalStatus, RunEvent, RunOptions, RunReport, replay_run, run_document};
use weft_store::Store;

fn example(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    weft_engine::load_document(&path).unwrap()
}

async fn run(doc: &Value, store: &Store) -> (RunReport, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        ..RunOptions::default()
    };
    (run_document(doc, store, &options).await.unwrap(), dir)
}

fn attempts(r: &RunReport, id: &str) -> u32 {
    r.nodes.iter().find(|n| n.id == id).unwrap().attempts
}

/// The most nodes between their first `node_started` and their `node_finished` at once,
/// counting only `only` when given.
fn max_in_flight(log: &[RunEvent], only: Option<&[&str]>) -> usize {
    let counts = |n: &str| only.is_none_or(|o| o.contains(&n));
    let (mut now, mut max) = (0usize, 0usize);
    for e in log {
        match e {
            RunEvent::NodeStarted { node, attempt, .. } if *attempt == 1 && counts(node) => {
                now += 1;
                max = max.max(now);
            }
            RunEvent::NodeFinished { node, attempts, .. } if *attempts > 0 && counts(node) => {
                now -= 1;
            }
            _ => {}
        }
    }
    max
}

fn absorbed_by(log: &[RunEvent], id: &str) -> Option<String> {
    log.iter().find_map(|e| match e {
        RunEvent::NodeFinished {
            node, absorbed_by, ..
        } if node == id => absorbed_by.clone(),
        _ => None,
    })
}

#[tokio::test]
async fn incident_triage_runs_every_level_two_feature_to_success() {
    let doc = example("incident-triage.agraph.yaml");
    let store = Store::open_in_memory().unwrap();
    let (report, _dir) = run(&doc, &store).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");

    // The decision routed on its label: severity 2 pages, the queue branch is skipped.
    assert_eq!(state(&report, "classify"), "succeeded");
    assert_eq!(state(&report, "page_oncall"), "succeeded");
    assert_eq!(state(&report, "queue_ticket"), "skipped");
    assert_eq!(
        state(&report, "routed"),
        "succeeded",
        "join: any met by one branch"
    );
    assert_eq!(report.outputs["routed_to"], "page");
    assert_eq!(report.outputs["pager_receipt"], "paged");
    assert!(report.outputs.get("queue_receipt").is_none());

    // The failure ladder: a retry (the second attempt gets feedback), a relaxed criterion,
    // an alternate node, and a failure absorbed by an on_failure edge.
    assert_eq!(attempts(&report, "gather_logs"), 2);
    let events = events(&store, &report.run_id);
    assert_eq!(
        absorbed_by(&events, "gather_metrics").as_deref(),
        Some("fallback[0]:relax_criteria")
    );
    assert_eq!(
        absorbed_by(&events, "gather_traces").as_deref(),
        Some("fallback[0]:alternate_node")
    );
    assert_eq!(
        state(&report, "traces_mirror"),
        "skipped",
        "its own `when` is false"
    );
    assert_eq!(state(&report, "gather_deploys"), "failed");
    assert_eq!(state(&report, "note_missing_deploys"), "succeeded");
    assert_eq!(report.outputs["deploy_note"], "deploy list unavailable");

    // join: n_of 2 of 3 and the report's `when`, reading the diagnosis.
    assert_eq!(state(&report, "diagnose"), "succeeded");
    assert_eq!(report.outputs["cause"], "connection pool exhausted");

    // Real parallelism, bounded by max_parallel_nodes: 3.
    assert_eq!(max_in_flight(&events, None), 3);

    // The log replays to the live states.
    let replayed = replay_run(&doc, &store, &report.run_id).unwrap();
    for (i, n) in report.nodes.iter().enumerate() {
        let s = format!("{:?}", replayed.state(i)).to_lowercase();
        assert_eq!(s, n.state.replace('_', ""), "node {}", n.id);
    }

    // The record validates against the AGS run-record schema.
    let record = weft_engine::record::record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert_eq!(record["status"], "succeeded");
}

#[tokio::test]
async fn incident_triage_is_deterministic_and_routes_by_param() {
    let doc = example("incident-triage.agraph.yaml");
    let store = Store::open_in_memory().unwrap();
    let (a, _d1) = run(&doc, &store).await;
    let (b, _d2) = run(&doc, &store).await;
    let strip = |r: &RunReport| (r.status, r.nodes.clone(), r.outputs.clone());
    assert_eq!(strip(&a), strip(&b));

    // Severity 4 queues instead of paging.
    let dir = tempfile::tempdir().unwrap();
    let mut options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        ..RunOptions::default()
    };
    options.params.insert("severity".into(), 4.into());
    let c = run_document(&doc, &store, &options).await.unwrap();
    assert_eq!(c.status, FinalStatus::Succeeded);
    assert_eq!(state(&c, "page_oncall"), "skipped");
    assert_eq!(state(&c, "queue_ticket"), "succeeded");
    assert_eq!(c.outputs["routed_to"], "queue");
}

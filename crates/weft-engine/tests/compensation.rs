//! `failure.compensation` end to end on real processes: a failed or cancelled run undoes
//! its succeeded nodes newest first, logs each compensation and records it; a successful
//! run compensates nothing; a failed compensation is a reason and the next still runs; a
//! run stopped anywhere (also between and inside compensations) and resumed runs each
//! compensation to its end exactly once more than it had ended.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;
use common::{assert_valid, events, record_node};

use serde_json::{Value, json};
use weft_engine::record::record_of;
use weft_engine::{
    EngineError, FinalStatus, ResumeOptions, RunEvent, RunOptions, resume_run, run_document,
};
use weft_store::Store;

fn step(run: &str, extra: Value) -> Value {
    let mut n = json!({"description": run, "x-weft-exec": {"run": run}});
    n.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    n
}

/// deploy → announce → verify; verify fails when `fail` is set. deploy and announce have
/// compensations that append to `undo.log`.
fn doc(fail: bool, undo_announce: &str) -> Value {
    json!({"id": "c", "entrypoints": ["deploy"],
    "policy": {"on_node_failure": "halt"},
    "nodes": {
        "deploy": step("echo deploy >> did.log", json!({
            "failure": {"compensation": "undeploy"}})),
        "announce": step("echo announce >> did.log", json!({"depends_on": ["deploy"],
            "failure": {"compensation": "unannounce"}})),
        "verify": step(if fail { "exit 3" } else { "true" }, json!({"depends_on": ["announce"]})),
        "undeploy": step("echo undeploy >> undo.log", json!({})),
        "unannounce": step(undo_announce, json!({}))
    }})
}

fn options(dir: &std::path::Path) -> RunOptions {
    RunOptions {
        project_dir: dir.to_path_buf(),
        ..RunOptions::default()
    }
}

fn read(dir: &std::path::Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_default()
}

fn compensations(log: &[RunEvent]) -> Vec<(String, String, String)> {
    log.iter()
        .filter_map(|e| match e {
            RunEvent::CompensationStarted { node, compensates } => {
                Some(("started".into(), node.clone(), compensates.clone()))
            }
            RunEvent::CompensationFinished {
                node,
                compensates,
                outcome,
                ..
            } => Some((
                outcome.as_str().to_string(),
                node.clone(),
                compensates.clone(),
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_failed_run_undoes_its_succeeded_nodes_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let d = doc(true, "echo unannounce >> undo.log");
    let report = run_document(&d, &store, &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::Failed, "{report:#?}");
    assert_eq!(read(dir.path(), "undo.log"), "unannounce\nundeploy\n");
    let log = events(&store, &report.run_id);
    let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    assert_eq!(
        compensations(&log),
        [
            s("started", "unannounce", "announce"),
            s("succeeded", "unannounce", "announce"),
            s("started", "undeploy", "deploy"),
            s("succeeded", "undeploy", "deploy"),
        ]
    );
    // Compensations come before the end of the run.
    assert!(matches!(log.last(), Some(RunEvent::RunFinished { .. })));
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert_eq!(record_node(&record, "undeploy")["status"], "succeeded");
    assert_eq!(
        record_node(&record, "undeploy")["x-weft-compensates"],
        json!(["deploy"])
    );
    assert_eq!(
        record_node(&record, "deploy")["x-weft-compensated-by"],
        json!(["undeploy"])
    );
    let listed: Vec<&str> = record["x-weft-compensations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["node_id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["unannounce", "undeploy"]);
}

#[tokio::test]
async fn a_successful_run_compensates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let report = run_document(&doc(false, "true"), &store, &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded);
    assert_eq!(read(dir.path(), "undo.log"), "");
    assert!(compensations(&events(&store, &report.run_id)).is_empty());
    let record = record_of(&store, &report.run_id).unwrap();
    assert!(record.get("x-weft-compensations").is_none());
    assert_eq!(record_node(&record, "undeploy")["status"], "skipped");
}

#[tokio::test]
async fn a_failed_compensation_is_a_reason_and_the_next_still_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let report = run_document(&doc(true, "exit 9"), &store, &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::Failed);
    assert_eq!(read(dir.path(), "undo.log"), "undeploy\n");
    assert!(
        report
            .reasons
            .iter()
            .any(|r| r.starts_with("compensation `unannounce` of `announce` failed")),
        "{:?}",
        report.reasons
    );
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert_eq!(record_node(&record, "unannounce")["status"], "failed");
}

#[tokio::test]
async fn a_run_stopped_anywhere_resumes_its_compensations_to_the_end() {
    let d = doc(true, "echo unannounce >> undo.log");
    let full_dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let full = run_document(&d, &store, &options(full_dir.path()))
        .await
        .unwrap();
    let full_log = events(&store, &full.run_id);
    let expected = compensations(&full_log);
    for stop in 1..full_log.len() {
        let dir = tempfile::tempdir().unwrap();
        let run_id = format!("stop-{stop}");
        let mut o = options(dir.path());
        o.run_id = Some(run_id.clone());
        o.stop_after_events = Some(stop);
        let err = run_document(&d, &store, &o).await.unwrap_err();
        assert!(matches!(err, EngineError::Stopped(_)), "{err}");
        let resumed = resume_run(
            &store,
            &run_id,
            None,
            &ResumeOptions {
                run: options(dir.path()),
                retry_uncertain: true,
                ..ResumeOptions::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(
            resumed.report.unwrap().status,
            FinalStatus::Failed,
            "stop {stop}"
        );
        // Every compensation ended exactly once, in the same order as without the stop.
        let ended: Vec<_> = compensations(&events(&store, &run_id))
            .into_iter()
            .filter(|(what, ..)| what != "started")
            .collect();
        let expected_ended: Vec<_> = expected
            .iter()
            .filter(|(what, ..)| what != "started")
            .cloned()
            .collect();
        assert_eq!(ended, expected_ended, "stop {stop}");
        // A compensation cut between its start and its end ran again: each ran at least
        // once, at most twice, and every `unannounce` came before the last `undeploy`.
        let undo = read(dir.path(), "undo.log");
        let lines: Vec<&str> = undo.lines().collect();
        let count = |w: &str| lines.iter().filter(|l| **l == w).count();
        assert!(
            (1..=2).contains(&count("unannounce")),
            "stop {stop}: {undo}"
        );
        assert!((1..=2).contains(&count("undeploy")), "stop {stop}: {undo}");
        assert_eq!(lines.last(), Some(&"undeploy"), "stop {stop}: {undo}");
        assert_valid(&record_of(&store, &run_id).unwrap());
    }
}

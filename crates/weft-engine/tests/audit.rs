//! The engine's audit trail and observer hook: every event is observed once, in log order,
//! by a run and by its resume; the audit log of a real run verifies against the anchor kept
//! in the store; edits, deletions, reordering and truncation of it are detected; a run
//! stopped at any event and resumed has an audit log covering each event exactly once; an
//! export that is not the store's chain is never appended to. (The drivers here get a plain
//! store handle: the trail audits what it observes; `audit_commit.rs` is the audited one.)
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use weft_engine::audit::{AuditTrail, log_path};
use weft_engine::observe::RecordingObserver;
use weft_engine::{EngineError, ResumeOptions, RunOptions, resume_run, run_document};
use weft_store::{AuditAnchors, EventLog, Store};

fn doc() -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "audited", "version": "1.0.0",
        "description": "audit", "entrypoints": ["a"],
        "nodes": {
            "a": {"description": "first", "outputs": {"x": {"type": "string"}},
                "x-weft-exec": {"run": "echo one"},
                "success": {"criteria": [{"id": "said", "kind": "expression", "description": "d",
                    "expr": "outputs.x == 'one'"}]}},
            "b": {"description": "second", "depends_on": ["a"], "x-weft-exec": {"run": "echo two"}},
            "c": {"description": "fails", "depends_on": ["a"], "x-weft-exec": {"run": "exit 3"}}
        }
    })
}

fn options(dir: &Path, trail: &Arc<AuditTrail>, stop: Option<usize>) -> RunOptions {
    RunOptions {
        project_dir: dir.to_path_buf(),
        stop_after_events: stop,
        observers: vec![trail.clone()],
        started_by: Some("tester".into()),
        ..RunOptions::default()
    }
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn verify(path: &Path, anchor: Option<&str>) -> Result<weft_audit::VerifyReport, String> {
    let f = std::fs::File::open(path).unwrap();
    weft_audit::verify(std::io::BufReader::new(f), anchor).map_err(|e| e.to_string())
}

#[tokio::test]
async fn every_event_is_observed_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let seen = Arc::new(RecordingObserver::default());
    let opts = RunOptions {
        project_dir: dir.path().to_path_buf(),
        observers: vec![seen.clone()],
        stop_after_events: Some(4),
        ..RunOptions::default()
    };
    let err = run_document(&doc(), &store, &opts).await.unwrap_err();
    assert!(matches!(err, EngineError::Stopped(4)), "{err}");
    let run_id = store.list_runs_ids();
    let resume = ResumeOptions {
        run: RunOptions {
            project_dir: dir.path().to_path_buf(),
            observers: vec![seen.clone()],
            ..RunOptions::default()
        },
        retry_uncertain: true,
        ..ResumeOptions::default()
    };
    resume_run(&store, &run_id, None, &resume).await.unwrap();
    let log: Vec<(u64, String)> = store
        .read(&run_id, 1, 1000)
        .unwrap()
        .into_iter()
        .map(|r| (r.seq, r.kind))
        .collect();
    assert_eq!(seen.seen(), log);
}

trait FirstRun {
    fn list_runs_ids(&self) -> String;
}

impl FirstRun for Store {
    fn list_runs_ids(&self) -> String {
        use weft_store::RunTable;
        self.list_runs(None, 1).unwrap()[0].id.clone()
    }
}

#[tokio::test]
async fn the_audit_of_a_real_run_verifies_against_its_anchor() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("weft.db")).unwrap();
    let audit_dir = dir.path().join("audit");
    let trail = Arc::new(AuditTrail::new(&audit_dir, &store));
    let report = run_document(&doc(), &store, &options(dir.path(), &trail, None))
        .await
        .unwrap();
    let path = log_path(&audit_dir, &report.run_id).unwrap();
    let anchor = store.get_anchor(&report.run_id).unwrap().unwrap();
    let ok = verify(&path, Some(&anchor.hash)).unwrap();
    assert_eq!(ok.last_hash, anchor.hash);
    assert_eq!(anchor.event_seq, store.last_seq(&report.run_id).unwrap());
    let entries = lines(&path);
    let kinds: Vec<&str> = entries
        .iter()
        .map(|l| l["entry"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"run_started"));
    assert_eq!(kinds.last(), Some(&"run_finished"));
    assert_eq!(kinds.iter().filter(|k| **k == "node_started").count(), 3);
    assert_eq!(entries[0]["entry"]["actor"], "tester");
    let a_done = entries
        .iter()
        .find(|l| l["entry"]["kind"] == "node_finished" && l["entry"]["data"]["node_id"] == "a")
        .unwrap();
    assert_eq!(a_done["entry"]["data"]["verdict"]["passed"], true);
    assert_eq!(
        a_done["entry"]["data"]["verdict"]["criteria"][0]["id"],
        "said"
    );

    // Tampering: each of these is detected.
    let text = std::fs::read_to_string(&path).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    let write = |rows: &[&str]| {
        let p = dir.path().join("tampered.jsonl");
        std::fs::write(
            &p,
            rows.iter().map(|r| format!("{r}\n")).collect::<String>(),
        )
        .unwrap();
        p
    };
    let mut edited = rows.clone();
    let changed = rows[1].replace("\"attempt\":1", "\"attempt\":2");
    assert_ne!(changed, rows[1]);
    edited[1] = &changed;
    assert!(verify(&write(&edited), None).is_err(), "mutation");
    let mut deleted = rows.clone();
    deleted.remove(2);
    assert!(verify(&write(&deleted), None).is_err(), "deletion");
    let mut swapped = rows.clone();
    swapped.swap(1, 2);
    assert!(verify(&write(&swapped), None).is_err(), "reordering");
    // Truncation is a valid chain on its own: only the store's anchor catches it.
    let truncated = &rows[..rows.len() - 1];
    assert!(verify(&write(truncated), None).is_ok());
    let err = verify(&write(truncated), Some(&anchor.hash)).unwrap_err();
    assert!(err.contains("truncated"), "{err}");
}

#[tokio::test]
async fn a_run_stopped_anywhere_and_resumed_audits_each_event_once() {
    // The uninterrupted run's event count bounds the stop points.
    let total = {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_in_memory().unwrap();
        let r = run_document(
            &doc(),
            &store,
            &RunOptions {
                project_dir: dir.path().to_path_buf(),
                ..RunOptions::default()
            },
        )
        .await
        .unwrap();
        store.last_seq(&r.run_id).unwrap() as usize
    };
    for stop in 1..total {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("weft.db")).unwrap();
        let audit_dir = dir.path().join("audit");
        // A fresh trail per process, as after a crash.
        let trail = Arc::new(AuditTrail::new(&audit_dir, &store));
        let err = run_document(&doc(), &store, &options(dir.path(), &trail, Some(stop)))
            .await
            .unwrap_err();
        assert!(matches!(err, EngineError::Stopped(_)), "{err}");
        drop(trail);
        let run_id = store.list_runs_ids();
        let trail = Arc::new(AuditTrail::new(&audit_dir, &store));
        let resume = ResumeOptions {
            run: options(dir.path(), &trail, None),
            retry_uncertain: true,
            ..ResumeOptions::default()
        };
        resume_run(&store, &run_id, None, &resume).await.unwrap();
        let path = log_path(&audit_dir, &run_id).unwrap();
        let anchor = store.get_anchor(&run_id).unwrap().unwrap();
        verify(&path, Some(&anchor.hash)).unwrap();
        let audited: Vec<u64> = lines(&path)
            .iter()
            .map(|l| l["entry"]["data"]["event_seq"].as_u64().unwrap())
            .collect();
        let expected: Vec<u64> = store
            .read(&run_id, 1, 1000)
            .unwrap()
            .into_iter()
            .filter(|r| r.kind != "node_when")
            .map(|r| r.seq)
            .collect();
        assert_eq!(audited, expected, "stopped after {stop} events");
    }
}

#[tokio::test]
async fn an_export_that_is_not_the_stores_chain_is_never_appended_to() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("weft.db")).unwrap();
    let audit_dir = dir.path().join("audit");
    let trail = Arc::new(AuditTrail::new(&audit_dir, &store));
    run_document(&doc(), &store, &options(dir.path(), &trail, Some(5)))
        .await
        .unwrap_err();
    let run_id = store.list_runs_ids();
    // The trail copies nodes' routine lines in batches: the export of the stopped run is
    // completed first, as the CLI does after a run that stopped on an error.
    trail.catch_up(&run_id).unwrap();
    let path = log_path(&audit_dir, &run_id).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    // Truncated: the store's chain is the record, so the export is completed from it.
    let kept: String = text.lines().take(1).map(|l| format!("{l}\n")).collect();
    assert!(kept.len() < text.len());
    std::fs::write(&path, &kept).unwrap();
    let trail = Arc::new(AuditTrail::new(&audit_dir, &store));
    trail.catch_up(&run_id).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    // Edited (its hash recomputed, so the file alone verifies): refused, kept as evidence.
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let last = lines.len() - 1;
    let mut entry: Value = serde_json::from_str(&lines[last]).unwrap();
    entry["entry"]["at_ms"] = json!(1);
    let prev = entry["prev"].as_str().unwrap().to_owned();
    let (line, _) = weft_audit::encode_line(entry["seq"].as_u64().unwrap(), &prev, &entry["entry"]);
    lines[last] = line.trim_end().to_owned();
    let forged: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, &forged).unwrap();
    assert!(verify(&path, None).is_ok());
    let trail = Arc::new(AuditTrail::new(&audit_dir, &store));
    let err = trail.catch_up(&run_id).unwrap_err();
    assert!(err.to_string().contains("not a copy"), "{err}");
    let resume = ResumeOptions {
        run: options(dir.path(), &trail, None),
        retry_uncertain: true,
        ..ResumeOptions::default()
    };
    let err = resume_run(&store, &run_id, None, &resume)
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::Observe(_)), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), forged);
}

/// Refuses every event from the `n`-th on.
#[derive(Debug)]
struct FailFrom(u64);

impl weft_engine::RunObserver for FailFrom {
    fn on_event(&self, seen: &weft_engine::Observed<'_>) -> Result<(), weft_engine::ObserveError> {
        if seen.seq >= self.0 {
            Err(weft_engine::ObserveError::new("test", "refused"))
        } else {
            Ok(())
        }
    }
}

#[tokio::test]
async fn a_failing_observer_stops_the_run_after_the_event_is_logged() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let opts = RunOptions {
        project_dir: dir.path().to_path_buf(),
        observers: vec![Arc::new(FailFrom(3))],
        ..RunOptions::default()
    };
    let err = run_document(&doc(), &store, &opts).await.unwrap_err();
    assert!(matches!(err, EngineError::Observe(_)), "{err}");
    let run_id = store.list_runs_ids();
    // The refused event is in the log (append before observe), nothing after it.
    assert_eq!(store.last_seq(&run_id).unwrap(), 3);
    let resume = ResumeOptions {
        run: RunOptions {
            project_dir: dir.path().to_path_buf(),
            ..RunOptions::default()
        },
        retry_uncertain: true,
        ..ResumeOptions::default()
    };
    let report = resume_run(&store, &run_id, None, &resume).await.unwrap();
    assert_eq!(report.status, "partial");
}

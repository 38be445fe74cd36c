//! The audit chain written in the store's commit (`docs/audit.md` §9): the lines of a
//! run's events are stored in the events' own transaction (no commit of their own), the
//! JSONL export is a byte-for-byte copy of them, tampering with either copy is detected,
//! and a stop between a commit and its export is detected and completed from the store.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use weft_engine::audit::{AuditTrail, AuditTrailError, log_path, verify_run};
use weft_engine::{EngineError, ResumeOptions, RunObserver, RunOptions, resume_run, run_document};
use weft_store::{AuditAnchors, AuditEntries, EventLog, RunStore, Store};

fn doc() -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "audited", "version": "1.0.0",
        "description": "audit", "entrypoints": ["a"],
        "nodes": {
            "a": {"description": "first", "outputs": {"x": {"type": "string"}},
                "x-weft-exec": {"run": "echo one"}},
            "b": {"description": "second", "depends_on": ["a"], "x-weft-exec": {"run": "echo two"}},
            "c": {"description": "third", "depends_on": ["b"], "x-weft-exec": {"run": "echo three"}}
        }
    })
}

fn options(dir: &Path, observers: Vec<Arc<dyn RunObserver>>) -> RunOptions {
    RunOptions {
        project_dir: dir.to_path_buf(),
        observers,
        started_by: Some("tester".into()),
        ..RunOptions::default()
    }
}

fn only_run(store: &dyn RunStore) -> String {
    store.list_runs(None, 10).unwrap()[0].id.clone()
}

/// The stored lines of a run, as the export should hold them.
fn stored_text(store: &dyn RunStore, run_id: &str) -> String {
    store
        .audit_lines(run_id, 0, usize::MAX)
        .unwrap()
        .iter()
        .map(|l| format!("{}\n", l.line))
        .collect()
}

/// Refuses every event from the `n`-th on: the run stops right after that event's commit.
#[derive(Debug)]
struct FailFrom(u64);

impl RunObserver for FailFrom {
    fn on_event(&self, seen: &weft_engine::Observed<'_>) -> Result<(), weft_engine::ObserveError> {
        if seen.seq >= self.0 {
            Err(weft_engine::ObserveError::new("test", "stopped"))
        } else {
            Ok(())
        }
    }
}

#[tokio::test]
async fn the_audit_is_written_in_the_commit_of_its_events() {
    let dir = tempfile::tempdir().unwrap();
    // The same run without any audit: its commits are the baseline.
    let plain = Store::open(dir.path().join("plain.db")).unwrap();
    run_document(&doc(), &plain, &options(dir.path(), vec![]))
        .await
        .unwrap();
    let store = Store::open(dir.path().join("weft.db")).unwrap();
    let audit_dir = dir.path().join("audit");
    let trail = Arc::new(AuditTrail::new(&audit_dir, &store));
    let report = run_document(
        &doc(),
        trail.store(),
        &options(dir.path(), vec![trail.clone()]),
    )
    .await
    .unwrap();
    assert_eq!(report.status, weft_engine::FinalStatus::Succeeded);
    // No commit of its own: as many transactions as the unaudited run.
    assert_eq!(store.stats().transactions, plain.stats().transactions);
    let run_id = report.run_id;
    let anchor = store.get_anchor(&run_id).unwrap().unwrap();
    assert_eq!(anchor.event_seq, store.last_seq(&run_id).unwrap());
    let path = log_path(&audit_dir, &run_id).unwrap();
    let export = std::fs::read_to_string(&path).unwrap();
    assert_eq!(export, stored_text(&store, &run_id));
    let r = verify_run(&store, &audit_dir, &run_id).unwrap();
    assert_eq!(
        (r.lag, r.export.last_hash.as_str()),
        (0, anchor.hash.as_str())
    );
    assert_eq!(r.stored.unwrap().first_seq, 1);
    // Every audited event once, in order.
    let audited: Vec<u64> = store
        .audit_lines(&run_id, 0, usize::MAX)
        .unwrap()
        .iter()
        .map(|l| l.event_seq)
        .collect();
    let expected: Vec<u64> = store
        .read(&run_id, 1, 1000)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind != "node_when")
        .map(|e| e.seq)
        .collect();
    assert_eq!(audited, expected);
}

#[tokio::test]
async fn the_ephemeral_store_keeps_the_chain_in_its_commit_too() {
    let dir = tempfile::tempdir().unwrap();
    let store = weft_store::EphemeralStore::new();
    let audit_dir = dir.path().join("audit");
    let trail = Arc::new(AuditTrail::new(&audit_dir, &store));
    let report = run_document(
        &doc(),
        trail.store(),
        &options(dir.path(), vec![trail.clone()]),
    )
    .await
    .unwrap();
    let r = verify_run(&store, &audit_dir, &report.run_id).unwrap();
    assert_eq!(r.lag, 0);
    assert!(r.export.last_seq >= 8, "{r:?}");
    let path = log_path(&audit_dir, &report.run_id).unwrap();
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        stored_text(&store, &report.run_id)
    );
}

#[tokio::test]
async fn tampering_with_the_export_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("weft.db")).unwrap();
    let audit_dir = dir.path().join("audit");
    let trail = Arc::new(AuditTrail::new(&audit_dir, &store));
    let run_id = run_document(
        &doc(),
        trail.store(),
        &options(dir.path(), vec![trail.clone()]),
    )
    .await
    .unwrap()
    .run_id;
    let path = log_path(&audit_dir, &run_id).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    let check = |rows: &[&str], what: &str| {
        std::fs::write(
            &path,
            rows.iter().map(|r| format!("{r}\n")).collect::<String>(),
        )
        .unwrap();
        let err = verify_run(&store, &audit_dir, &run_id);
        assert!(err.is_err(), "{what}: {err:?}");
        // And the trail refuses to extend it.
        let trail = AuditTrail::new(&audit_dir, &store);
        assert!(trail.catch_up(&run_id).is_err(), "{what}: extended");
    };
    let mut edited = rows.clone();
    let changed = rows[1].replace("\"attempt\":1", "\"attempt\":2");
    assert_ne!(changed, rows[1]);
    edited[1] = &changed;
    check(&edited, "mutation");
    let mut inserted = rows.clone();
    inserted.insert(2, rows[2]);
    check(&inserted, "insertion");
    let mut deleted = rows.clone();
    deleted.remove(2);
    check(&deleted, "deletion");
    let mut swapped = rows.clone();
    swapped.swap(1, 2);
    check(&swapped, "reordering");
    // A truncated export is a valid chain, but shorter than the store's: verification
    // fails on the lag, and the store (the record) completes it byte for byte.
    std::fs::write(
        &path,
        rows[..rows.len() - 2]
            .iter()
            .map(|r| format!("{r}\n"))
            .collect::<String>(),
    )
    .unwrap();
    assert_eq!(verify_run(&store, &audit_dir, &run_id).unwrap().lag, 2);
    AuditTrail::new(&audit_dir, &store)
        .catch_up(&run_id)
        .unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert_eq!(verify_run(&store, &audit_dir, &run_id).unwrap().lag, 0);
}

#[tokio::test]
async fn tampering_with_the_stored_chain_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("weft.db");
    let audit_dir = dir.path().join("audit");
    let run_id = {
        let store = Store::open(&db).unwrap();
        let trail = Arc::new(AuditTrail::new(&audit_dir, &store));
        run_document(
            &doc(),
            trail.store(),
            &options(dir.path(), vec![trail.clone()]),
        )
        .await
        .unwrap()
        .run_id
    };
    // Each case tampers with its own copy of the database (`VACUUM INTO`: the WAL included).
    let copies = std::cell::Cell::new(0);
    let copy = || {
        copies.set(copies.get() + 1);
        let path = dir.path().join(format!("case{}.db", copies.get()));
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute("VACUUM INTO ?1", [path.to_str().unwrap()])
            .unwrap();
        path
    };
    let tamper = |sql: &str| {
        let case = copy();
        let conn = rusqlite::Connection::open(&case).unwrap();
        conn.execute_batch(&sql.replace("?1", &format!("'{run_id}'")))
            .unwrap();
        assert!(conn.total_changes() > 0, "{sql}");
        drop(conn);
        verify_run(&Store::open(&case).unwrap(), &audit_dir, &run_id)
    };
    let untouched = verify_run(&Store::open(copy()).unwrap(), &audit_dir, &run_id);
    assert!(untouched.is_ok(), "{untouched:?}");
    for (what, sql) in [
        (
            "mutation",
            "UPDATE audit_entries SET line = replace(line, '\"attempt\":1', '\"attempt\":2') \
             WHERE run_id = ?1 AND audit_seq = 2",
        ),
        (
            "deletion",
            "DELETE FROM audit_entries WHERE run_id = ?1 AND audit_seq = 3",
        ),
        (
            "reordering",
            "UPDATE audit_entries SET audit_seq = 1000 WHERE run_id = ?1 AND audit_seq = 2; \
             UPDATE audit_entries SET audit_seq = 2 WHERE run_id = ?1 AND audit_seq = 3; \
             UPDATE audit_entries SET audit_seq = 3 WHERE run_id = ?1 AND audit_seq = 1000;",
        ),
        (
            "insertion",
            "INSERT INTO audit_entries SELECT run_id, 1000, event_seq, hash, line \
             FROM audit_entries WHERE run_id = ?1 AND audit_seq = 2",
        ),
        (
            "truncation",
            "DELETE FROM audit_entries WHERE run_id = ?1 AND audit_seq = \
             (SELECT MAX(audit_seq) FROM audit_entries WHERE run_id = ?1)",
        ),
    ] {
        let err = tamper(sql);
        assert!(
            matches!(
                err,
                Err(AuditTrailError::Stored { .. } | AuditTrailError::Diverged { .. })
            ),
            "{what}: {err:?}"
        );
    }
}

#[tokio::test]
async fn a_stop_between_a_commit_and_its_export_is_detected_and_completed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("weft.db")).unwrap();
    let audit_dir = dir.path().join("audit");
    let trail = Arc::new(AuditTrail::new(&audit_dir, &store));
    // The first observer stops the run after the 4th event's commit, before the trail
    // copies its line: the store has it, the export does not.
    let stopper: Arc<dyn RunObserver> = Arc::new(FailFrom(4));
    let err = run_document(
        &doc(),
        trail.store(),
        &options(dir.path(), vec![stopper, trail.clone()]),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, EngineError::Observe(_)), "{err}");
    drop(trail);
    let run_id = only_run(&store);
    assert_eq!(store.last_seq(&run_id).unwrap(), 4);
    let anchor = store.get_anchor(&run_id).unwrap().unwrap();
    assert_eq!(anchor.event_seq, 4, "the audit is committed with the event");
    let r = verify_run(&store, &audit_dir, &run_id).unwrap();
    assert!(r.lag >= 1, "{r:?}");
    // The resume completes the export first, then audits the rest in its commits.
    let trail = Arc::new(AuditTrail::new(&audit_dir, &store));
    let resume = ResumeOptions {
        run: options(dir.path(), vec![trail.clone()]),
        retry_uncertain: true,
        ..ResumeOptions::default()
    };
    trail.catch_up(&run_id).unwrap();
    assert_eq!(verify_run(&store, &audit_dir, &run_id).unwrap().lag, 0);
    resume_run(trail.store(), &run_id, None, &resume)
        .await
        .unwrap();
    let r = verify_run(&store, &audit_dir, &run_id).unwrap();
    assert_eq!(r.lag, 0);
    assert_eq!(r.anchor.event_seq, store.last_seq(&run_id).unwrap());
    let path = log_path(&audit_dir, &run_id).unwrap();
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        stored_text(&store, &run_id)
    );
}

//! Audit lines in the commit (`AuditWrites::audited`, schema v4): on every backend, an audited
//! handle stores the lines of what it appends in the same write (no transaction of its
//! own), chained from the run's anchor, which moves with them; a plain handle's events are
//! audited by the next audited write; an encoder error stores nothing of the write; and a
//! v3 database migrates to v4 with its runs' old anchors continued.

#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

#[allow(dead_code, reason = "this file uses two helpers of the shared suite")]
mod suite;

use std::sync::Arc;

use weft_store::{
    AUDIT_GENESIS, AuditAnchor, AuditAnchors, AuditEncoder, AuditEntries, AuditLine, Backend,
    EphemeralStore, EventLog, NewEvent, RawEventRecord, RunLeases, RunStatus, RunStore, RunTable,
    SCHEMA_VERSION, SharedStore, Store, StoreError, open_store,
};

use suite::{new_run, numbered};

/// A stand-in for the engine's encoder: one line per event except kind `skip`, whose text
/// and hash name the chain position, the event and the previous hash, so the test sees
/// exactly how lines were chained. `refuse` fails any event with that `n`.
#[derive(Debug, Default)]
struct Lines {
    refuse: Option<u64>,
}

impl AuditEncoder for Lines {
    fn encode(
        &self,
        run_id: &str,
        head: &AuditAnchor,
        events: &[RawEventRecord],
    ) -> weft_store::Result<Vec<AuditLine>> {
        let (mut seq, mut prev) = (head.audit_seq, head.hash.clone());
        let mut out = Vec::new();
        for e in events {
            let payload: serde_json::Value = serde_json::from_str(&e.payload).unwrap();
            if self.refuse.is_some() && payload["n"].as_u64() == self.refuse {
                return Err(StoreError::Audit(format!("refused event {}", e.seq)));
            }
            if e.kind == "skip" {
                continue;
            }
            seq += 1;
            let hash = format!("h{seq}");
            out.push(AuditLine {
                audit_seq: seq,
                event_seq: e.seq,
                line: format!("{run_id}:{seq}:{}:{prev}", e.seq),
                hash: hash.clone(),
            });
            prev = hash;
        }
        Ok(out)
    }
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

fn backends() -> Vec<(&'static str, SharedStore, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let file = open_store(&Backend::File(dir.path().join("weft.db"))).unwrap();
    vec![
        ("ephemeral", open_store(&Backend::Ephemeral).unwrap(), None),
        (
            "memory",
            open_store(&Backend::SqliteInMemory).unwrap(),
            None,
        ),
        ("file", file, Some(dir)),
    ]
}

fn texts(store: &dyn RunStore, run_id: &str) -> Vec<String> {
    store
        .audit_lines(run_id, 0, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|l| l.line)
        .collect()
}

#[test]
fn audited_writes_store_their_lines_in_their_own_commit() {
    for (name, store, _dir) in backends() {
        let audited = store.audited(Arc::new(Lines::default()));
        block_on(async {
            audited
                .open_run(new_run("r", 1), RunStatus::Running, numbered(1, 2))
                .await
                .unwrap();
            let before = store.stats().transactions;
            audited.append_async("r", 2, numbered(3, 1)).await.unwrap();
            let mut skip = numbered(4, 2);
            skip[0].kind = "skip".into();
            audited.append_expecting("r", 3, &skip).unwrap();
            audited
                .close_run("r", 5, numbered(6, 1), RunStatus::Succeeded, 9)
                .await
                .unwrap();
            assert_eq!(
                store.stats().transactions - before,
                3,
                "{name}: no extra commit"
            );
        });
        assert_eq!(
            texts(&*store, "r"),
            [
                format!("r:1:1:{AUDIT_GENESIS}"),
                "r:2:2:h1".into(),
                "r:3:3:h2".into(),
                "r:4:5:h3".into(), // event 4 has no line
                "r:5:6:h4".into(),
            ],
            "{name}"
        );
        let anchor = store.get_anchor("r").unwrap().unwrap();
        assert_eq!(
            (anchor.event_seq, anchor.audit_seq, anchor.hash.as_str()),
            (6, 5, "h5"),
            "{name}"
        );
        assert_eq!(
            store.audit_lines("r", 3, 1).unwrap()[0].audit_seq,
            4,
            "{name}"
        );
        // A plain handle writes no lines.
        let plain = EphemeralStore::new();
        plain.create_run(&new_run("p", 1)).unwrap();
        plain.append("p", &numbered(1, 1)).unwrap();
        assert!(plain.audit_lines("p", 0, 10).unwrap().is_empty());
    }
}

#[test]
fn a_plain_handles_events_are_audited_by_the_next_audited_write() {
    for (name, store, _dir) in backends() {
        let audited = store.audited(Arc::new(Lines::default()));
        audited.create_run(&new_run("r", 1)).unwrap();
        audited.append("r", &numbered(1, 1)).unwrap();
        // Another writer (a decision from another process) appends without auditing.
        store.append("r", &numbered(2, 2)).unwrap();
        assert_eq!(
            store.get_anchor("r").unwrap().unwrap().event_seq,
            1,
            "{name}"
        );
        audited.append("r", &numbered(4, 1)).unwrap();
        let events: Vec<u64> = store
            .audit_lines("r", 0, 10)
            .unwrap()
            .iter()
            .map(|l| l.event_seq)
            .collect();
        assert_eq!(events, [1, 2, 3, 4], "{name}");
        store.append("r", &numbered(5, 1)).unwrap();
        audited.audit_catch_up("r").unwrap();
        assert_eq!(
            store.get_anchor("r").unwrap().unwrap().event_seq,
            5,
            "{name}"
        );
        assert_eq!(texts(&*store, "r").len(), 5, "{name}");
    }
}

#[test]
fn an_event_that_cannot_be_audited_stores_nothing_of_its_write() {
    for (name, store, _dir) in backends() {
        let audited = store.audited(Arc::new(Lines { refuse: Some(3) }));
        audited.create_run(&new_run("r", 1)).unwrap();
        audited.append("r", &numbered(1, 2)).unwrap();
        let err = audited.append("r", &numbered(3, 2)).unwrap_err();
        assert!(matches!(err, StoreError::Audit(_)), "{name}: {err}");
        let err =
            block_on(audited.close_run("r", 2, numbered(3, 1), RunStatus::Failed, 5)).unwrap_err();
        assert!(matches!(err, StoreError::Audit(_)), "{name}: {err}");
        assert_eq!(store.last_seq("r").unwrap(), 2, "{name}");
        assert_eq!(texts(&*store, "r").len(), 2, "{name}");
        assert_eq!(
            store.get_anchor("r").unwrap().unwrap().event_seq,
            2,
            "{name}"
        );
        assert_eq!(
            store.get_run("r").unwrap().unwrap().status,
            RunStatus::Pending,
            "{name}"
        );
        // The log goes on after the refused write.
        audited.append("r", &numbered(9, 1)).unwrap();
        assert_eq!(store.last_seq("r").unwrap(), 3, "{name}");
    }
}

#[test]
fn a_v3_database_migrates_and_its_anchors_and_lease_are_continued() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.db");
    // A v3 database as that version wrote it: a run, its events, its file-era anchor.
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE schema_version (version INTEGER NOT NULL PRIMARY KEY) STRICT;
             CREATE TABLE runs (id TEXT NOT NULL PRIMARY KEY, graph_digest TEXT NOT NULL,
                 status TEXT NOT NULL, created_at_ms INTEGER NOT NULL,
                 updated_at_ms INTEGER NOT NULL) STRICT;
             CREATE INDEX runs_by_created ON runs (created_at_ms, id);
             CREATE INDEX runs_by_status ON runs (status, created_at_ms, id);
             CREATE TABLE events (run_id TEXT NOT NULL REFERENCES runs (id),
                 seq INTEGER NOT NULL CHECK (seq >= 1), kind TEXT NOT NULL,
                 payload TEXT NOT NULL, recorded_at_ms INTEGER NOT NULL,
                 PRIMARY KEY (run_id, seq)) STRICT;
             CREATE TABLE audit_anchors (run_id TEXT NOT NULL PRIMARY KEY REFERENCES runs (id),
                 event_seq INTEGER NOT NULL CHECK (event_seq >= 0),
                 audit_seq INTEGER NOT NULL CHECK (audit_seq >= 0),
                 hash TEXT NOT NULL, updated_at_ms INTEGER NOT NULL) STRICT;
             CREATE TABLE leases (run_id TEXT NOT NULL PRIMARY KEY REFERENCES runs (id),
                 owner TEXT NOT NULL, host TEXT NOT NULL,
                 pid INTEGER NOT NULL CHECK (pid >= 0),
                 token INTEGER NOT NULL CHECK (token >= 1),
                 acquired_at_ms INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL) STRICT;
             INSERT INTO schema_version VALUES (1), (2), (3);
             INSERT INTO runs VALUES ('old', 'sha256:x', 'running', 1, 1);
             INSERT INTO events VALUES ('old', 1, 'step', '{\"n\":1}', 1),
                                       ('old', 2, 'step', '{\"n\":2}', 2);
             INSERT INTO audit_anchors VALUES ('old', 2, 2, 'file-head', 2);
             INSERT INTO leases VALUES ('old', 'w1', 'host-a', 42, 3, 10, 20);",
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(SCHEMA_VERSION, 5);
    assert_eq!(store.schema_version().unwrap(), 5);
    // v5 moved the lease into the run's row, token and all, and dropped the table.
    let lease = store.get_lease("old").unwrap().unwrap();
    assert_eq!(
        (
            lease.holder.owner.as_str(),
            lease.holder.host.as_str(),
            lease.holder.pid
        ),
        ("w1", "host-a", 42)
    );
    assert_eq!(
        (lease.token, lease.acquired_at_ms, lease.expires_at_ms),
        (3, 10, 20)
    );
    let tables: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT COUNT(*) FROM sqlite_schema WHERE name = 'leases'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(tables, 0);
    assert!(store.audit_lines("old", 0, 10).unwrap().is_empty());
    assert_eq!(store.last_seq("old").unwrap(), 2);
    // The stored chain continues the file's: from the old anchor's line and hash.
    let audited = store.audited(Arc::new(Lines::default()));
    audited
        .append(
            "old",
            &[NewEvent::new("step", serde_json::json!({"n": 3}), 3)],
        )
        .unwrap();
    assert_eq!(texts(&store, "old"), ["old:3:3:file-head"]);
    let anchor = store.get_anchor("old").unwrap().unwrap();
    assert_eq!((anchor.event_seq, anchor.audit_seq), (3, 3));
    drop(store);
    // Reopening applies nothing twice.
    assert_eq!(Store::open(&path).unwrap().schema_version().unwrap(), 5);
}

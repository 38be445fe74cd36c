//! The SQLite backend: the generic suite (in memory and on a file), plus what is specific
//! to SQLite: group commit, migrations, durability settings, corrupt rows.

#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

mod suite;

use std::sync::{Arc, Barrier};

use weft_store::{
    AuditAnchor, AuditAnchors, Backend, EventLog, RunTable, SCHEMA_VERSION, Store, StoreError,
    open_store,
};

use suite::{create_runs, numbered};

/// Runs every suite function against a fresh store of each backend, as the trait object
/// the engine holds (`open_store`): SQLite in memory and on a file, and the ephemeral (no
/// SQL) store, which must behave the same.
macro_rules! sqlite_suite {
    ($($module:ident :: $name:ident),* $(,)?) => {
        mod ephemeral {
            use super::*;
            $( #[test] fn $name() {
                suite::$module::$name(&*open_store(&Backend::Ephemeral).unwrap());
            } )*
        }
        mod memory {
            use super::*;
            $( #[test] fn $name() {
                suite::$module::$name(&*open_store(&Backend::SqliteInMemory).unwrap());
            } )*
        }
        mod file {
            use super::*;
            $( #[test] fn $name() {
                let dir = tempfile::tempdir().unwrap();
                let store = open_store(&Backend::File(dir.path().join("weft.db"))).unwrap();
                suite::$module::$name(&*store);
            } )*
        }
    };
}

sqlite_suite!(
    runs::create_then_get,
    runs::duplicate_id_is_refused,
    runs::unknown_run_is_none,
    runs::list_orders_filters_and_limits,
    runs::set_status_round_trips_every_status,
    runs::set_status_of_unknown_run_fails,
    events::append_assigns_gap_free_seqs,
    events::empty_append_writes_nothing,
    events::logs_are_per_run,
    events::unknown_run_is_an_error,
    events::read_from_and_limit,
    events::append_expecting_detects_conflicts,
    events::concurrent_appends_stay_contiguous,
    events::optimistic_workers_never_interleave,
    events::payload_round_trips,
    events::text_payloads_read_back_as_values,
    events::raw_reads_give_the_stored_text,
    leases::a_lease_is_taken_only_once_expired,
    leases::a_gone_holder_is_replaced_at_once_by_its_token_only,
    leases::renewal_extends_and_a_taken_over_lease_cannot_renew,
    leases::a_released_lease_keeps_its_token,
    leases::an_awaited_release_lets_the_handles_lease_go,
    leases::leases_of_unknown_runs_are_refused,
    leases::writes_of_a_taken_over_lease_are_fenced,
    leases::a_run_opens_with_its_first_lease,
    leases::racing_acquirers_get_one_lease,
    awaited::awaited_reads_answer_what_blocking_reads_do,
    awaited::awaited_lease_and_status_writes_are_fenced,
    awaited::audit_anchors_never_move_back,
    awaited::an_audited_handle_writes_the_chain_with_its_appends,
    awaited::owned_appends_behave_like_borrowed_ones,
    awaited::a_write_is_counted_as_one_transaction_at_most,
);

#[test]
fn store_is_send_sync_and_cheap_to_share() {
    fn assert_send_sync<T: Send + Sync + Clone + 'static>() {}
    assert_send_sync::<Store>();
    assert_send_sync::<weft_store::EphemeralStore>();
}

/// N threads appending at once must share transactions: fewer commits (fsyncs) than appends.
#[test]
fn group_commit_batches_concurrent_appends() {
    const THREADS: usize = 8;
    const APPENDS: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("weft.db")).unwrap();
    let ids: Vec<String> = (0..THREADS).map(|t| format!("r{t}")).collect();
    create_runs(&store, &ids.iter().map(String::as_str).collect::<Vec<_>>());
    let before = store.stats();
    let barrier = Arc::new(Barrier::new(THREADS));
    std::thread::scope(|scope| {
        for id in &ids {
            let (store, barrier) = (store.clone(), Arc::clone(&barrier));
            scope.spawn(move || {
                barrier.wait();
                for i in 0..APPENDS as u64 {
                    store.append(id, &numbered(i + 1, 1)).unwrap();
                }
            });
        }
    });
    let after = store.stats();
    let appends = after.appends - before.appends;
    let transactions = after.transactions - before.transactions;
    assert_eq!(appends, (THREADS * APPENDS) as u64);
    assert_eq!(after.events - before.events, appends);
    assert!(
        transactions < appends,
        "no batching: {transactions} transactions for {appends} appends"
    );
    for id in &ids {
        assert_eq!(store.last_seq(id).unwrap(), APPENDS as u64);
    }
}

/// A failing write (conflict) in a batch rolls back alone; the stats count it as a write.
#[test]
fn stats_count_writes_and_events() {
    let store = Store::open_in_memory().unwrap();
    assert_eq!(store.stats(), Default::default());
    create_runs(&store, &["r1"]);
    store.append("r1", &numbered(1, 3)).unwrap();
    assert!(store.append_expecting("r1", 0, &numbered(1, 1)).is_err());
    let stats = store.stats();
    assert_eq!((stats.writes, stats.appends, stats.events), (3, 2, 3));
    assert_eq!(stats.transactions, 3, "sequential writes commit one by one");
}

#[test]
fn data_survives_reopen_and_migration_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.db");
    {
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        create_runs(&store, &["r1"]);
        store.append("r1", &numbered(1, 5)).unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(store.last_seq("r1").unwrap(), 5);
    assert_eq!(store.path(), Some(path.as_path()));
    drop(store);
    // One row per applied migration, none applied twice.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let versions: Vec<i64> = conn
        .prepare("SELECT version FROM schema_version ORDER BY version")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        versions,
        (1..=i64::from(SCHEMA_VERSION)).collect::<Vec<_>>()
    );
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.db");
    drop(Store::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO schema_version (version) VALUES (?1)",
        [SCHEMA_VERSION + 1],
    )
    .unwrap();
    drop(conn);
    let err = Store::open(&path).unwrap_err();
    assert!(
        matches!(err, StoreError::SchemaTooNew { found, supported } if found == SCHEMA_VERSION + 1 && supported == SCHEMA_VERSION),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade weft"), "{err}");
}

#[test]
fn file_store_uses_wal_and_schema_is_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.db");
    let store = Store::open(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        tables,
        [
            "audit_anchors",
            "audit_entries",
            "events",
            "runs",
            "runs_by_created",
            "runs_by_status",
            "schema_version"
        ]
    );
    drop(store);
}

#[test]
fn corrupt_rows_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.db");
    let store = Store::open(&path).unwrap();
    create_runs(&store, &["r1", "r2"]);
    store.append("r1", &numbered(1, 1)).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE events SET payload = '{not json' WHERE run_id = 'r1'",
        [],
    )
    .unwrap();
    conn.execute("UPDATE runs SET status = 'exploded' WHERE id = 'r2'", [])
        .unwrap();
    let err = store.read("r1", 1, 10).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::CorruptRow {
                table: "events",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("run r1 seq 1"), "{err}");
    let err = store.get_run("r2").unwrap_err();
    assert!(
        matches!(err, StoreError::CorruptRow { table: "runs", .. }),
        "{err}"
    );
}

#[test]
fn events_need_a_run_even_past_the_api() {
    // The foreign key is enforced (foreign_keys=on), so the table itself refuses orphans.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.db");
    let _store = Store::open(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "foreign_keys", true).unwrap();
    let err = conn
        .execute("INSERT INTO events VALUES ('ghost', 1, 'k', '{}', 0)", [])
        .unwrap_err();
    assert!(err.to_string().contains("FOREIGN KEY"), "{err}");
}

#[test]
fn dropping_the_store_commits_queued_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.db");
    {
        let store = Store::open(&path).unwrap();
        create_runs(&store, &["r1"]);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                let store = store.clone();
                scope.spawn(move || store.append("r1", &numbered(1, 2)).unwrap());
            }
        });
    }
    assert_eq!(Store::open(&path).unwrap().last_seq("r1").unwrap(), 8);
}

/// Two stores on one file (as two engine processes would be) each have a writer thread;
/// `BEGIN IMMEDIATE` serialises them, so one run's log stays gap-free and batches whole.
#[test]
fn two_stores_on_one_file_do_not_interleave() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.db");
    let stores = [Store::open(&path).unwrap(), Store::open(&path).unwrap()];
    create_runs(&stores[0], &["r1"]);
    std::thread::scope(|scope| {
        for store in &stores {
            for _ in 0..3 {
                scope.spawn(move || {
                    for _ in 0..20 {
                        let seqs = store.append("r1", &numbered(0, 2)).unwrap();
                        assert_eq!(seqs[1], seqs[0] + 1);
                    }
                });
            }
        }
    });
    let events = stores[1].read("r1", 1, usize::MAX).unwrap();
    assert_eq!(events.len(), 2 * 3 * 20 * 2);
    assert!(events.iter().zip(1..).all(|(e, seq)| e.seq == seq));
}

#[test]
fn audit_anchors_are_kept_per_run_and_never_move_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.db");
    let anchor = |run: &str, audit_seq: u64, hash: &str| AuditAnchor {
        run_id: run.into(),
        event_seq: audit_seq * 2,
        audit_seq,
        hash: hash.into(),
        updated_at_ms: 7,
    };
    {
        let store = Store::open(&path).unwrap();
        create_runs(&store, &["r1", "r2"]);
        assert_eq!(store.get_anchor("r1").unwrap(), None);
        store.set_anchor(&anchor("r1", 3, "aa")).unwrap();
        store.set_anchor(&anchor("r2", 1, "bb")).unwrap();
        // A lower audit_seq is ignored: an anchor never moves back.
        store.set_anchor(&anchor("r1", 2, "cc")).unwrap();
        assert!(matches!(
            store.set_anchor(&anchor("nope", 1, "dd")).unwrap_err(),
            StoreError::UnknownRun { .. }
        ));
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.get_anchor("r1").unwrap(), Some(anchor("r1", 3, "aa")));
    assert_eq!(store.get_anchor("r2").unwrap(), Some(anchor("r2", 1, "bb")));
    store.set_anchor(&anchor("r1", 4, "ee")).unwrap();
    assert_eq!(store.get_anchor("r1").unwrap(), Some(anchor("r1", 4, "ee")));
}

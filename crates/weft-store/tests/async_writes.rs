//! Awaited writes (`Store::append_async`, `open_run`, `close_run`): the same meaning as the
//! blocking ones on every backend, all-or-nothing when they merge writes, and shared
//! commits for the writes of many tasks on one thread.

#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

#[allow(dead_code, reason = "this file uses two helpers of the shared suite")]
mod suite;

use weft_store::{Backend, EventLog, RunStatus, SharedStore, Store, open_store};

use suite::{new_run, numbered};

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

/// The three backends, each fresh; the file store's directory lives as long as the store.
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

#[test]
fn a_run_opens_in_its_status_with_its_first_events_and_closes_with_its_last() {
    for (name, store, _dir) in backends() {
        block_on(async {
            let seqs = store
                .open_run(new_run("r1", 7), RunStatus::Running, numbered(1, 2))
                .await
                .unwrap();
            assert_eq!(seqs, [1, 2], "{name}");
            let run = store.get_run("r1").unwrap().unwrap();
            assert_eq!(
                (run.status, run.updated_at_ms),
                (RunStatus::Running, 7),
                "{name}"
            );

            let seqs = store.append_async("r1", 2, numbered(3, 1)).await.unwrap();
            assert_eq!(seqs, [3], "{name}");

            let seqs = store
                .close_run("r1", 3, numbered(4, 2), RunStatus::Succeeded, 9)
                .await
                .unwrap();
            assert_eq!(seqs, [4, 5], "{name}");
            let run = store.get_run("r1").unwrap().unwrap();
            assert_eq!(
                (run.status, run.updated_at_ms),
                (RunStatus::Succeeded, 9),
                "{name}"
            );
            assert_eq!(store.last_seq("r1").unwrap(), 5, "{name}");
        });
    }
}

#[test]
fn a_failed_merged_write_writes_nothing() {
    for (name, store, _dir) in backends() {
        block_on(async {
            store
                .open_run(new_run("r1", 1), RunStatus::Running, numbered(1, 1))
                .await
                .unwrap();
            // A taken id: no second row, no events appended to the first run's log.
            let taken = store
                .open_run(new_run("r1", 2), RunStatus::Failed, numbered(2, 3))
                .await
                .unwrap_err();
            assert!(
                matches!(taken, weft_store::StoreError::RunExists { .. }),
                "{name}: {taken}"
            );
            assert_eq!(store.last_seq("r1").unwrap(), 1, "{name}");
            assert_eq!(
                store.get_run("r1").unwrap().unwrap().status,
                RunStatus::Running
            );

            // A conflict on close: neither the events nor the status.
            let conflict = store
                .close_run("r1", 0, numbered(2, 1), RunStatus::Succeeded, 5)
                .await
                .unwrap_err();
            assert!(conflict.is_conflict(), "{name}: {conflict}");
            assert_eq!(store.last_seq("r1").unwrap(), 1, "{name}");
            assert_eq!(
                store.get_run("r1").unwrap().unwrap().status,
                RunStatus::Running
            );

            let unknown = store.append_async("nope", 0, numbered(1, 1)).await;
            assert!(unknown.is_err(), "{name}");
        });
    }
}

/// Writes submitted by many tasks of one thread before any is awaited share commits: the
/// point of awaiting rather than blocking.
#[test]
fn the_writes_of_many_tasks_on_one_thread_share_commits() {
    const RUNS: usize = 64;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("weft.db")).unwrap();
    block_on(async {
        let opened: Vec<_> = (0..RUNS)
            .map(|i| {
                store.open_run(
                    new_run(&format!("r{i}"), 1),
                    RunStatus::Running,
                    numbered(1, 1),
                )
            })
            .collect();
        for open in opened {
            assert_eq!(open.await.unwrap(), [1]);
        }
        let before = store.stats();
        let appended: Vec<_> = (0..RUNS)
            .map(|i| store.append_async(&format!("r{i}"), 1, numbered(2, 2)))
            .collect();
        for append in appended {
            assert_eq!(append.await.unwrap(), [2, 3]);
        }
        let after = store.stats();
        let (appends, transactions) = (
            after.appends - before.appends,
            after.transactions - before.transactions,
        );
        assert_eq!(appends, RUNS as u64);
        assert_eq!(after.events - before.events, 2 * RUNS as u64);
        assert!(
            transactions < appends,
            "no batching: {transactions} transactions for {appends} appends"
        );
    });
    for i in 0..RUNS {
        assert_eq!(store.last_seq(&format!("r{i}")).unwrap(), 3);
    }
}

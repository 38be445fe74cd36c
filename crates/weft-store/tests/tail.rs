//! Following the log (`FollowLog::tail`, `FollowLog::appended_after`) on every backend: history
//! first, then each commit as it lands, in commit order across runs; a reader that stops
//! resumes from its cursor losing and repeating nothing; commits of another store on the
//! same file (another connection, as another process would be) and of another process
//! wake a tail too.
//!
//! The other process is this test binary re-invoked with `WEFT_STORE_TAIL_CHILD` set,
//! running the `tail_child` test, which is a no-op in a normal test run.

#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

#[allow(dead_code, reason = "this file uses two helpers of the shared suite")]
mod suite;

use std::time::Duration;

use weft_store::{
    Backend, EventLog, RunTable, SharedStore, Store, StoreError, TailFrom, TailedEvent, open_store,
};

use suite::{new_run, numbered};

const CHILD_ENV: &str = "WEFT_STORE_TAIL_CHILD";

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

fn run_tail(run: &str, after_seq: u64) -> TailFrom {
    TailFrom::Run {
        run_id: run.to_owned(),
        after_seq,
    }
}

/// Takes `n` events from `tail`, blocking.
fn take(tail: &mut weft_store::Tail, n: usize) -> Vec<TailedEvent> {
    (0..n).map(|_| tail.next_blocking().unwrap()).collect()
}

fn n_of(event: &TailedEvent) -> u64 {
    event.event.payload["n"].as_u64().unwrap()
}

fn ns(events: &[TailedEvent]) -> Vec<u64> {
    events.iter().map(n_of).collect()
}

#[test]
fn a_run_tail_hands_out_its_history_then_each_commit() {
    for (name, store, _dir) in backends() {
        store.create_run(&new_run("r", 1)).unwrap();
        store.create_run(&new_run("other", 2)).unwrap();
        store.append("r", &numbered(1, 3)).unwrap();
        let mut tail = store.tail(run_tail("r", 0));
        let history = tail.next_batch_blocking().unwrap();
        assert_eq!(ns(&history), [1, 2, 3], "{name}");
        assert_eq!(tail.cursor(), &run_tail("r", 3), "{name}");

        // Later commits, from another thread, some to another run.
        let writer = {
            let store = store.clone();
            std::thread::spawn(move || {
                for n in 4..=6 {
                    std::thread::sleep(Duration::from_millis(20));
                    store.append("other", &numbered(100 + n, 1)).unwrap();
                    store.append("r", &numbered(n, 1)).unwrap();
                }
            })
        };
        let live = take(&mut tail, 3);
        writer.join().unwrap();
        assert_eq!(ns(&live), [4, 5, 6], "{name}: only r's events, in order");
        assert!(
            live.iter()
                .all(|e| e.event.run_id == "r" && e.event.seq == e.event.payload["n"]),
            "{name}: {live:?}"
        );
        assert_eq!(tail.cursor(), &run_tail("r", 6), "{name}");
    }
}

#[test]
fn a_tail_of_every_run_follows_the_commit_order() {
    for (name, store, _dir) in backends() {
        for id in ["a", "b", "c"] {
            store.create_run(&new_run(id, 1)).unwrap();
        }
        // The order of commits: a, b, a, c, b (payload n = commit number).
        let order = ["a", "b", "a", "c", "b"];
        let mut expected = Vec::new();
        for (n, run) in (1..).zip(order) {
            let seq = store.append(run, &numbered(n, 1)).unwrap()[0];
            expected.push((run.to_owned(), seq, n));
        }
        let mut tail = store.tail(TailFrom::All { after_position: 0 });
        let mut seen = take(&mut tail, 5);

        // Live: two threads append to two runs at once; commits interleave.
        let writers: Vec<_> = [("a", 10), ("c", 20)]
            .into_iter()
            .map(|(run, base)| {
                let store = store.clone();
                std::thread::spawn(move || {
                    for i in 0..5 {
                        store.append(run, &numbered(base + i, 1)).unwrap();
                    }
                })
            })
            .collect();
        seen.extend(take(&mut tail, 10));
        for w in writers {
            w.join().unwrap();
        }
        let got: Vec<(String, u64, u64)> = seen[..5]
            .iter()
            .map(|e| (e.event.run_id.clone(), e.event.seq, n_of(e)))
            .collect();
        assert_eq!(got, expected, "{name}: history in commit order");
        assert!(
            seen.windows(2).all(|w| w[1].position == w[0].position + 1),
            "{name}: positions are gap-free and increasing: {:?}",
            seen.iter().map(|e| e.position).collect::<Vec<_>>()
        );
        // Each run's events in its own seq order, none missing.
        for (run, first_seq, first_n) in [("a", 3, 10), ("c", 2, 20)] {
            let mine: Vec<(u64, u64)> = seen[5..]
                .iter()
                .filter(|e| e.event.run_id == run)
                .map(|e| (e.event.seq, n_of(e)))
                .collect();
            let want: Vec<(u64, u64)> = (0..5).map(|i| (first_seq + i, first_n + i)).collect();
            assert_eq!(mine, want, "{name}: run {run}");
        }
        // The store's logs agree with what the tail handed out.
        let last = seen.last().unwrap().position;
        assert_eq!(
            tail.cursor(),
            &TailFrom::All {
                after_position: last
            }
        );
    }
}

#[test]
fn a_reader_resuming_from_its_cursor_loses_and_repeats_nothing() {
    for (name, store, _dir) in backends() {
        for id in ["x", "y"] {
            store.create_run(&new_run(id, 1)).unwrap();
        }
        let writer = {
            let store = store.clone();
            std::thread::spawn(move || {
                for n in 1..=60 {
                    let run = if n % 3 == 0 { "y" } else { "x" };
                    store.append(run, &numbered(n, 1)).unwrap();
                    if n % 7 == 0 {
                        std::thread::sleep(Duration::from_millis(3));
                    }
                }
            })
        };
        // Three readers in turn, each stopping after some events: the next resumes from
        // the previous one's cursor (events a reader had read ahead are read again).
        let mut seen = Vec::new();
        let mut cursor = TailFrom::All { after_position: 0 };
        for stop_after in [7, 25, 28] {
            let mut tail = store.tail(cursor.clone());
            seen.extend(take(&mut tail, stop_after));
            cursor = tail.cursor().clone();
        }
        writer.join().unwrap();
        assert_eq!(ns(&seen), (1..=60).collect::<Vec<_>>(), "{name}");

        // A run tail resumes the same way, from a seq.
        let mut tail = store.tail(run_tail("y", 0));
        let first = take(&mut tail, 5);
        let mut tail = store.tail(tail.cursor().clone());
        let rest = take(&mut tail, 15);
        let all: Vec<u64> = first.iter().chain(&rest).map(|e| e.event.seq).collect();
        assert_eq!(all, (1..=20).collect::<Vec<_>>(), "{name}");
    }
}

#[test]
fn a_tail_of_an_unknown_run_says_so() {
    for (name, store, _dir) in backends() {
        let err = store
            .tail(run_tail("nope", 0))
            .next_batch_blocking()
            .unwrap_err();
        assert!(
            matches!(err, StoreError::UnknownRun { ref run_id } if run_id == "nope"),
            "{name}: {err}"
        );
    }
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(future)
}

#[test]
fn a_wait_resolves_when_the_run_grows_past_it_and_not_before() {
    for (name, store, _dir) in backends() {
        store.create_run(&new_run("r", 1)).unwrap();
        store.create_run(&new_run("other", 1)).unwrap();
        store.append("r", &numbered(1, 2)).unwrap();
        block_on(async {
            // Already past: at once.
            store.appended_after("r", 1).await.unwrap();
            // Not yet: another run's commit does not wake it, r's does.
            let mut wait = store.appended_after("r", 2);
            store.append("other", &numbered(1, 1)).unwrap();
            assert!(
                tokio::time::timeout(Duration::from_millis(100), &mut wait)
                    .await
                    .is_err(),
                "{name}: woken by another run's commit"
            );
            let writer = {
                let store = store.clone();
                std::thread::spawn(move || store.append("r", &numbered(3, 1)).unwrap())
            };
            tokio::time::timeout(Duration::from_secs(10), wait)
                .await
                .expect("the wait was not woken by the commit")
                .unwrap();
            writer.join().unwrap();
            // The async `next` of a tail, on the same runtime.
            let mut tail = store.tail(run_tail("r", 2));
            assert_eq!(tail.next().await.unwrap().event.seq, 3, "{name}");
            let err = store.appended_after("nope", 0).await.unwrap_err();
            assert!(
                matches!(err, StoreError::UnknownRun { .. }),
                "{name}: {err}"
            );
        });
    }
}

#[test]
fn one_run_watch_serves_wait_after_wait_as_the_log_grows() {
    for (name, store, _dir) in backends() {
        store.create_run(&new_run("r", 1)).unwrap();
        block_on(async {
            let watch = store.watch_run("r");
            for seq in 0..5 {
                // Not before the next append (a commit to the run itself, this process).
                let pending =
                    tokio::time::timeout(Duration::from_millis(30), watch.appended_after(seq))
                        .await;
                assert!(
                    pending.is_err(),
                    "{name}: woken at seq {seq} with nothing new"
                );
                let writer = {
                    let store = store.clone();
                    std::thread::spawn(move || store.append("r", &numbered(seq + 1, 1)).unwrap())
                };
                tokio::time::timeout(Duration::from_secs(10), watch.appended_after(seq))
                    .await
                    .expect("the append did not wake the watch")
                    .unwrap();
                writer.join().unwrap();
            }
            let err = store.watch_run("nope").appended_after(0).await.unwrap_err();
            assert!(
                matches!(err, StoreError::UnknownRun { .. }),
                "{name}: {err}"
            );
        });
    }
}

#[test]
fn commits_of_another_store_on_the_same_file_wake_a_tail_and_a_wait() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.db");
    let follower = Store::open(&path).unwrap();
    let writer = Store::open(&path).unwrap();
    writer.create_run(&new_run("r", 1)).unwrap();
    let mut tail = follower.tail(run_tail("r", 0));
    let wait = follower.appended_after("r", 0);
    let appender = std::thread::spawn(move || {
        for n in 1..=5 {
            std::thread::sleep(Duration::from_millis(15));
            writer.append("r", &numbered(n, 1)).unwrap();
        }
    });
    block_on(async {
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .expect("the other store's commit did not wake the wait")
            .unwrap();
    });
    assert_eq!(ns(&take(&mut tail, 5)), [1, 2, 3, 4, 5]);
    appender.join().unwrap();
}

#[test]
fn another_stores_commits_are_seen_among_many_of_this_stores_own() {
    // The change check skips reading when every new event is this store's own; here both
    // write at once, and the other store's events must still wake the watch and the tail.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.db");
    let mine = Store::open(&path).unwrap();
    let other = Store::open(&path).unwrap();
    mine.create_run(&new_run("mine", 1)).unwrap();
    other.create_run(&new_run("theirs", 2)).unwrap();
    let watch = mine.watch_run("theirs");
    let mut tail = mine.tail(run_tail("theirs", 0));
    let busy = {
        let mine = mine.clone();
        std::thread::spawn(move || {
            for n in 1..=200 {
                mine.append("mine", &numbered(n, 1)).unwrap();
            }
        })
    };
    let theirs = std::thread::spawn(move || {
        for n in 1..=10 {
            std::thread::sleep(Duration::from_millis(7));
            other.append("theirs", &numbered(n, 1)).unwrap();
        }
    });
    assert_eq!(ns(&take(&mut tail, 10)), (1..=10).collect::<Vec<_>>());
    block_on(async {
        tokio::time::timeout(Duration::from_secs(10), watch.appended_after(9))
            .await
            .expect("the other store's commits did not reach the watch")
            .unwrap();
    });
    busy.join().unwrap();
    theirs.join().unwrap();
}

/// The other process: appends `WEFT_STORE_TAIL_COUNT` events to run `r`, a few ms apart.
#[test]
fn tail_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let store = Store::open(&path).unwrap();
    for n in 1..=40 {
        std::thread::sleep(Duration::from_millis(5));
        let run = if n % 2 == 0 { "even" } else { "odd" };
        store.append(run, &numbered(n, 1)).unwrap();
    }
}

#[test]
fn a_tail_follows_the_commits_of_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.db");
    let store = Store::open(&path).unwrap();
    store.create_run(&new_run("odd", 1)).unwrap();
    store.create_run(&new_run("even", 2)).unwrap();
    let mut all = store.tail(TailFrom::All { after_position: 0 });
    let mut even = store.tail(run_tail("even", 0));
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "tail_child", "--nocapture"])
        .env(CHILD_ENV, &path)
        .spawn()
        .unwrap();
    let seen = take(&mut all, 40);
    let evens = take(&mut even, 20);
    assert!(child.wait().unwrap().success());
    assert_eq!(ns(&seen), (1..=40).collect::<Vec<_>>());
    assert_eq!(
        ns(&evens),
        (1..=20).map(|i| i * 2).collect::<Vec<_>>(),
        "the run tail sees only its run"
    );
}

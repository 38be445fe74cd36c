//! Leases through the driver (`docs/engine.md` §2d): a second driver is told who drives a
//! live run; a driver whose lease was taken over stops at its next append and the run is
//! not corrupted; a lease is renewed on the run's clock; a gone process's lease on this
//! host is taken at once, another host's once expired — including after a real `kill -9`
//! of a driving child process.
//!
//! The child is this test binary re-invoked with `WEFT_LEASE_CHILD` set, running the
//! `lease_child` test, which is a no-op in a normal test run.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::events;
use serde_json::{Value, json};
use weft_engine::clock::{Clock, SystemClock, TestClock};
use weft_engine::lease::{LeaseOptions, host_name};
use weft_engine::{
    EngineError, FinalStatus, ResumeOptions, ResumeReport, RunEvent, RunOptions, resume_run,
    run_document,
};
use weft_store::{Lease, LeaseHolder, RunLeases, RunStatus, RunStore, Store, Takeover};

const T0: i64 = 1_700_000_000_000;
const CHILD_ENV: &str = "WEFT_LEASE_CHILD";

/// `w` waits until the file `go` exists in its workspace (declared idempotent, so a new
/// driver runs it again), then `z` runs. It also ends once its workspace is gone: the `w`
/// of a driver killed with `kill -9` outlives it, and must not outlive the test.
fn waiting_doc() -> Value {
    json!({"entrypoints": ["w"], "nodes": {
        "w": {"description": "waits for go", "x-weft-exec": {
            "run": "while [ ! -e go ]; do [ -d \"$PWD\" ] || exit 1; sleep 0.02; done",
            "idempotent": true}},
        "z": {"description": "after", "depends_on": ["w"], "x-weft-exec": {"run": "true"}}}})
}

/// A backend's case of the waiting document: its own project directory, a test clock at
/// `T0`, and the run's options on that clock.
fn waiting_case(tmp: &Path, name: &str) -> (PathBuf, TestClock, Value, RunOptions) {
    let dir = tmp.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let clock = TestClock::at(T0);
    let opts = options(&dir, Some(&clock));
    (dir, clock, waiting_doc(), opts)
}

fn options(dir: &Path, clock: Option<&TestClock>) -> RunOptions {
    RunOptions {
        project_dir: dir.to_path_buf(),
        run_id: Some("r".into()),
        clock: clock.map(|c| Arc::new(c.clone()) as Arc<dyn Clock>),
        ..RunOptions::default()
    }
}

async fn resume(store: &dyn RunStore, run: RunOptions) -> Result<ResumeReport, EngineError> {
    let opts = ResumeOptions {
        run,
        ..ResumeOptions::default()
    };
    resume_run(store, "r", None, &opts).await
}

/// Waits (on real time: a process is running) until the run's log has `w`'s start.
async fn until_w_started(store: &dyn RunStore) {
    for _ in 0..1_000 {
        let started = store.get_run("r").unwrap().is_some()
            && events(store, "r")
                .iter()
                .any(|e| matches!(e, RunEvent::NodeStarted { node, .. } if node == "w"));
        if started {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("w never started");
}

fn driven_by(err: EngineError) -> Lease {
    match err {
        EngineError::Driven(lease) => *lease,
        other => panic!("expected Driven, got {other:?}"),
    }
}

fn backends(dir: &Path) -> Vec<(&'static str, weft_store::SharedStore)> {
    vec![
        (
            "ephemeral",
            weft_store::open_store(&weft_store::Backend::Ephemeral).unwrap(),
        ),
        (
            "file",
            weft_store::open_store(&weft_store::Backend::File(dir.join("weft.db"))).unwrap(),
        ),
    ]
}

/// Two drivers race for one run: the second is refused while the first's lease holds; once
/// it has expired the second takes over and finishes the run, and the first's late append
/// (its node ended after the takeover) is refused by the fence.
#[tokio::test]
async fn a_taken_over_driver_is_fenced_at_its_next_append() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, shared) in backends(tmp.path()) {
        let store: &dyn RunStore = &*shared;
        let (dir_a, dir_b) = (
            tmp.path().join(format!("{name}-a")),
            tmp.path().join(format!("{name}-b")),
        );
        std::fs::create_dir_all(&dir_a).unwrap();
        std::fs::create_dir_all(&dir_b).unwrap();
        std::fs::write(dir_b.join("go"), "").unwrap();
        // Each driver has a clock of its own; a's is never moved, so it never renews.
        let (clock_a, clock_b) = (TestClock::at(T0), TestClock::at(T0 + 1_000));
        let doc = waiting_doc();
        let opts_a = options(&dir_a, Some(&clock_a));
        let first = run_document(&doc, store, &opts_a);
        let second = async {
            until_w_started(store).await;
            // Live: b is told who drives it, and nothing is written.
            let before = events(store, "r").len();
            let lease = driven_by(
                resume(store, options(&dir_b, Some(&clock_b)))
                    .await
                    .unwrap_err(),
            );
            assert_eq!(lease.token, 1, "{name}");
            assert_eq!(lease.holder.pid, std::process::id(), "{name}");
            assert_eq!(lease.holder.host, host_name(), "{name}");
            assert_eq!(lease.expires_at_ms, T0 + 30_000, "{name}");
            assert_eq!(events(store, "r").len(), before, "{name}");
            // Expired (a never renewed it): b takes over and drives the run to its end.
            clock_b.set(T0 + 30_000);
            let report = resume(store, options(&dir_b, Some(&clock_b)))
                .await
                .unwrap();
            assert_eq!(report.status, "succeeded", "{name}");
            // Now a's node ends, and a tries to append its end.
            std::fs::write(dir_a.join("go"), "").unwrap();
        };
        let (a, ()) = tokio::join!(first, second);
        let err = a.unwrap_err();
        assert!(
            matches!(&err, EngineError::Store(e) if e.is_fenced()),
            "{name}: {err:?}"
        );
        assert!(err.to_string().contains("taken over"), "{err}");
        // The log is b's: w finished once (b's attempt), the run once, and it succeeded.
        let log = events(store, "r");
        let finished_w = log
            .iter()
            .filter(|e| matches!(e, RunEvent::NodeFinished { node, .. } if node == "w"))
            .count();
        let finished_run = log
            .iter()
            .filter(|e| matches!(e, RunEvent::RunFinished { .. }))
            .count();
        assert_eq!((finished_w, finished_run), (1, 1), "{name}: {log:#?}");
        assert_eq!(
            store.get_run("r").unwrap().unwrap().status,
            RunStatus::Succeeded
        );
        let lease = store.get_lease("r").unwrap().unwrap();
        assert_eq!((lease.token, lease.released()), (2, true), "{name}");
    }
}

/// The driver renews its lease on the run's clock; renewed, it is not taken.
#[tokio::test]
async fn a_driver_renews_its_lease_on_the_run_clock() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, shared) in backends(tmp.path()) {
        let store: &dyn RunStore = &*shared;
        let (dir, clock, doc, opts) = waiting_case(tmp.path(), name);
        let run = run_document(&doc, store, &opts);
        let script = async {
            until_w_started(store).await;
            let expiry = || store.get_lease("r").unwrap().unwrap().expires_at_ms;
            assert_eq!(expiry(), T0 + 30_000, "{name}");
            for (tick, expected) in [(T0 + 10_000, T0 + 40_000), (T0 + 20_000, T0 + 50_000)] {
                // The renewal timer is the only sleep on the run's clock (w runs on real time).
                assert_eq!(clock.advance_to_next().await, tick, "{name}");
                for _ in 0..500 {
                    if expiry() == expected {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                assert_eq!(expiry(), expected, "{name}");
            }
            // Past the first expiry, the renewed lease still holds.
            let late = TestClock::at(T0 + 45_000);
            let lease = driven_by(resume(store, options(&dir, Some(&late))).await.unwrap_err());
            assert_eq!(lease.token, 1);
            std::fs::write(dir.join("go"), "").unwrap();
        };
        let (report, ()) = tokio::join!(run, script);
        assert_eq!(report.unwrap().status, FinalStatus::Succeeded, "{name}");
        let lease = store.get_lease("r").unwrap().unwrap();
        assert!(lease.released(), "{name}: the closing write let it go");
    }
}

fn gate_doc() -> Value {
    json!({"entrypoints": ["g"], "nodes": {
        "g": {"type": "gate", "description": "a person decides", "gate": {"mode": "approve"}}}})
}

/// A lease held by a process of this host that is gone is taken at once; one of a live
/// process, or of another host, is not (until it expires).
#[tokio::test]
async fn a_gone_process_lease_on_this_host_is_taken_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, shared) in backends(tmp.path()) {
        let store: &dyn RunStore = &*shared;
        let report = run_document(&gate_doc(), store, &options(tmp.path(), None))
            .await
            .unwrap();
        assert_eq!(report.status, FinalStatus::AwaitingHuman);
        // Suspended, the run's lease was let go.
        assert!(store.get_lease("r").unwrap().unwrap().released(), "{name}");
        let now = SystemClock.now_ms();
        let hour = 3_600_000;
        let take = |holder: LeaseHolder| {
            let current = store.get_lease("r").unwrap().unwrap();
            store
                .acquire_lease("r", &holder, now, hour, Takeover::Replacing(current.token))
                .unwrap()
        };
        let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
        let alive = LeaseHolder {
            owner: "other".into(),
            host: host_name(),
            pid: sleeper.id(),
        };
        take(alive.clone());
        let lease = driven_by(resume(store, options(tmp.path(), None)).await.unwrap_err());
        assert_eq!(lease.holder, alive, "{name}");
        let elsewhere = LeaseHolder {
            host: "elsewhere".into(),
            ..alive.clone()
        };
        take(elsewhere.clone());
        let lease = driven_by(resume(store, options(tmp.path(), None)).await.unwrap_err());
        assert_eq!(lease.holder, elsewhere, "{name}");
        // The process is gone (killed and reaped): its lease on this host is taken now.
        take(alive);
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        let resumed = resume(store, options(tmp.path(), None)).await.unwrap();
        assert_eq!(resumed.status, "awaiting_human", "{name}");
        let lease = store.get_lease("r").unwrap().unwrap();
        assert_eq!(lease.holder.pid, std::process::id(), "{name}");
        assert!(lease.released(), "{name}");
    }
}

/// The driving child: runs `waiting_doc` on the file store given in `WEFT_LEASE_CHILD`
/// (`DB|DIR|HOST`: the lease names `HOST`), until it is killed.
#[test]
fn lease_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut parts = spec.split('|');
    let (db, dir, host) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let store = Store::open(db).unwrap();
    let mut opts = options(Path::new(dir), None);
    opts.lease = LeaseOptions {
        holder: Some(LeaseHolder {
            owner: format!("child/{}", std::process::id()),
            host: host.into(),
            pid: std::process::id(),
        }),
        ..LeaseOptions::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _ = runtime.block_on(run_document(&waiting_doc(), &store, &opts));
    panic!("the child's run ended: it waits for a kill");
}

/// Starts the child driving run `r` in `db`, waits until `w` started, and SIGKILLs it.
fn kill_driving_child(db: &Path, dir: &Path, host: &str) {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", "lease_child", "--nocapture", "--test-threads=1"])
        .env(
            CHILD_ENV,
            format!("{}|{}|{host}", db.display(), dir.display()),
        )
        .spawn()
        .unwrap();
    let store = Store::open(db).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(until_w_started(&store));
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A driver killed mid-run (`kill -9`): on this host its lease is taken at once, so a
/// resume right after works; from another host's point of view (the lease names one), it
/// is taken only once it has expired.
#[test]
fn a_driver_killed_mid_run_is_taken_over() {
    let tmp = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for (case, host) in [("here", host_name()), ("elsewhere", "elsewhere".to_owned())] {
        let host = host.as_str();
        let dir: PathBuf = tmp.path().join(case);
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("weft.db");
        kill_driving_child(&db, &dir, host);
        std::fs::write(dir.join("go"), "").unwrap();
        let store = Store::open(&db).unwrap();
        let dead = store.get_lease("r").unwrap().unwrap();
        assert_eq!((dead.token, dead.holder.host.as_str()), (1, host));
        if case == "elsewhere" {
            // Not this host's process: its lease holds until it expires.
            let lease = driven_by(
                runtime
                    .block_on(resume(&store, options(&dir, None)))
                    .unwrap_err(),
            );
            assert_eq!(lease, dead);
            let expired = TestClock::at(dead.expires_at_ms);
            let report = runtime
                .block_on(resume(&store, options(&dir, Some(&expired))))
                .unwrap();
            assert_eq!(report.status, "succeeded", "{case}");
        } else {
            let report = runtime
                .block_on(resume(&store, options(&dir, None)))
                .unwrap();
            assert_eq!(report.status, "succeeded", "{case}");
        }
        let lease = store.get_lease("r").unwrap().unwrap();
        assert_eq!(lease.token, 2, "{case}");
        assert!(lease.released(), "{case}");
        let log = events(&store, "r");
        assert!(
            matches!(log.last(), Some(RunEvent::RunFinished { status, .. }) if status == "succeeded"),
            "{case}: {log:#?}"
        );
    }
}

/// The test hook stopping a run before its first event leaves the run opened with its
/// lease (token 1), let go as the driver stopped, and its log empty.
#[tokio::test]
async fn a_run_stopped_before_its_first_event_is_opened_with_its_lease() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, shared) in backends(tmp.path()) {
        let store: &dyn RunStore = &*shared;
        std::fs::write(tmp.path().join("go"), "").unwrap();
        let mut opts = options(tmp.path(), None);
        opts.stop_after_events = Some(0);
        let err = run_document(&waiting_doc(), store, &opts)
            .await
            .unwrap_err();
        assert!(matches!(err, EngineError::Stopped(0)), "{name}: {err:?}");
        assert_eq!(
            store.get_run("r").unwrap().unwrap().status,
            RunStatus::Running
        );
        let lease = store.get_lease("r").unwrap().unwrap();
        assert_eq!((lease.token, lease.released()), (1, true), "{name}");
        assert!(events(store, "r").is_empty(), "{name}");
    }
}

/// A run's future dropped while its node runs (a caller's timeout, a server cancelling the
/// request) lets the lease go as its hold is dropped: another driver takes the run at
/// once, without waiting for the lease to expire, and drives it to its end.
#[tokio::test]
async fn a_run_whose_future_is_dropped_mid_run_lets_its_lease_go() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, shared) in backends(tmp.path()) {
        let store: &dyn RunStore = &*shared;
        let (dir, clock, doc, opts) = waiting_case(tmp.path(), name);
        let first = run_document(&doc, store, &opts);
        tokio::select! {
            report = first => panic!("{name}: the run ended without `go`: {report:?}"),
            () = until_w_started(store) => {}
        }
        // `first` is dropped: its lease's release was submitted (not waited for: the drop
        // is on this runtime's thread), and it was never taken over.
        let mut lease = store.get_lease("r").unwrap().unwrap();
        for _ in 0..500 {
            if lease.released() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
            lease = store.get_lease("r").unwrap().unwrap();
        }
        assert_eq!((lease.token, lease.released()), (1, true), "{name}");
        std::fs::write(dir.join("go"), "").unwrap();
        // Not expired on the clock, yet taken at once: a released lease is free.
        let report = resume(store, options(&dir, Some(&clock))).await.unwrap();
        assert_eq!(report.status, "succeeded", "{name}");
        assert_eq!(store.get_lease("r").unwrap().unwrap().token, 2, "{name}");
    }
}

/// A run that never waits (pure nodes on a store that answers at once) ends before its
/// renewal timer is ever polled; on a current-thread runtime reused for the next run (the
/// CLI's kind, a benchmark's loop) that timer is never dropped. It must not hold the
/// store: every such run's whole log stayed alive (0.5 MB per run of a 1,000-node chain).
#[test]
fn a_run_that_never_waits_leaves_no_handle_to_its_store() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let pure = |after: &[&str]| {
        json!({"type": "decision", "description": "pure", "depends_on": after,
            "decision": {"evaluator": "expression",
                "branches": [{"label": "done", "description": "always", "when": "true"}]}})
    };
    let doc = json!({"entrypoints": ["a"], "nodes": {"a": pure(&[]), "b": pure(&["a"])}});
    for n in 0..3 {
        let store = weft_store::EphemeralStore::new();
        let opts = RunOptions {
            run_id: Some(format!("r{n}")),
            ..options(tmp.path(), None)
        };
        let report = rt.block_on(run_document(&doc, &store, &opts)).unwrap();
        assert_eq!(report.status, FinalStatus::Succeeded, "run {n}");
        assert_eq!(store.handles(), 1, "run {n}: a handle outlives the run");
    }
}

//! The engine reads and sets a run's status through the store's awaited methods on its
//! runtime (`docs/store.md` §5): a store handle that records every blocking call made on a
//! tokio runtime thread drives a run that suspends on a gate and its resume after a
//! decision, and none is left: the gate's wait, a rare path's write, and the lease's release
//! when a driver stops without a closing write are awaited like every other write of the
//! driver; a run whose future is dropped mid-run submits its lease's release without
//! blocking.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use common::{request, resume_with};
use serde_json::{Value, json};
use weft_engine::human::{Verb, decide};
use weft_engine::{FinalStatus, RunOptions, run_document};
use weft_store::{
    AuditAnchor, AuditAnchors, AuditEncoder, AuditEntries, AuditLine, AuditWrites, AwaitedReads,
    AwaitedWrites, EventLog, EventRecord, FollowLog, Lease, LeaseFence, LeaseHolder, NewEvent,
    NewRun, RawEventRecord, Result, RunLeases, RunRecord, RunStatus, RunStore, RunTable, RunWatch,
    SharedStore, SqliteStore, StoreFuture, StoreStats, Tail, TailFrom, Takeover,
};

/// A store handle that notes the blocking calls made on a runtime's thread.
struct Watched {
    inner: SharedStore,
    blocking: Arc<Mutex<BTreeSet<&'static str>>>,
}

impl Watched {
    /// A SQLite file store in `dir`, and a watched handle to it.
    fn file(dir: &Path) -> (SqliteStore, Watched) {
        let file = SqliteStore::open(dir.join("weft.db")).unwrap();
        let watched = Watched {
            inner: Arc::new(file.clone()),
            blocking: Arc::default(),
        };
        (file, watched)
    }

    fn note(&self, call: &'static str) {
        if tokio::runtime::Handle::try_current().is_ok() {
            self.blocking.lock().unwrap().insert(call);
        }
    }

    fn wrap(&self, inner: SharedStore) -> SharedStore {
        Arc::new(Watched {
            inner,
            blocking: Arc::clone(&self.blocking),
        })
    }
}

impl RunTable for Watched {
    fn create_run(&self, run: &NewRun) -> Result<RunRecord> {
        self.note("create_run");
        self.inner.create_run(run)
    }
    fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>> {
        self.note("get_run");
        self.inner.get_run(run_id)
    }
    fn list_runs(&self, status: Option<RunStatus>, limit: usize) -> Result<Vec<RunRecord>> {
        self.note("list_runs");
        self.inner.list_runs(status, limit)
    }
    fn set_status(&self, run_id: &str, status: RunStatus, at: i64) -> Result<()> {
        self.note("set_status");
        self.inner.set_status(run_id, status, at)
    }
}

impl EventLog for Watched {
    fn append(&self, run_id: &str, events: &[NewEvent]) -> Result<Vec<u64>> {
        self.note("append");
        self.inner.append(run_id, events)
    }
    fn append_expecting(&self, run_id: &str, last: u64, events: &[NewEvent]) -> Result<Vec<u64>> {
        self.note("append_expecting");
        self.inner.append_expecting(run_id, last, events)
    }
    fn read(&self, run_id: &str, from: u64, limit: usize) -> Result<Vec<EventRecord>> {
        self.note("read");
        self.inner.read(run_id, from, limit)
    }
    fn read_raw(&self, run_id: &str, from: u64, limit: usize) -> Result<Vec<RawEventRecord>> {
        self.note("read_raw");
        self.inner.read_raw(run_id, from, limit)
    }
    fn last_seq(&self, run_id: &str) -> Result<u64> {
        self.note("last_seq");
        self.inner.last_seq(run_id)
    }
    fn append_expecting_owned(
        &self,
        run_id: &str,
        last: u64,
        events: Vec<NewEvent>,
    ) -> Result<Vec<u64>> {
        self.note("append_expecting_owned");
        self.inner.append_expecting_owned(run_id, last, events)
    }
}

impl AuditAnchors for Watched {
    fn set_anchor(&self, anchor: &AuditAnchor) -> Result<()> {
        self.note("set_anchor");
        self.inner.set_anchor(anchor)
    }
    fn get_anchor(&self, run_id: &str) -> Result<Option<AuditAnchor>> {
        self.note("get_anchor");
        self.inner.get_anchor(run_id)
    }
}

impl AuditEntries for Watched {
    fn audit_lines(&self, run_id: &str, after: u64, limit: usize) -> Result<Vec<AuditLine>> {
        self.note("audit_lines");
        self.inner.audit_lines(run_id, after, limit)
    }
}

impl RunLeases for Watched {
    fn acquire_lease(
        &self,
        run_id: &str,
        holder: &LeaseHolder,
        now: i64,
        ttl: i64,
        takeover: Takeover,
    ) -> Result<Lease> {
        self.note("acquire_lease");
        self.inner.acquire_lease(run_id, holder, now, ttl, takeover)
    }
    fn renew_lease(&self, run_id: &str, token: u64, now: i64, ttl: i64) -> Result<Lease> {
        self.note("renew_lease");
        self.inner.renew_lease(run_id, token, now, ttl)
    }
    fn release_lease(&self, run_id: &str, token: u64) -> Result<()> {
        self.note("release_lease");
        self.inner.release_lease(run_id, token)
    }
    fn get_lease(&self, run_id: &str) -> Result<Option<Lease>> {
        self.note("get_lease");
        self.inner.get_lease(run_id)
    }
}

impl AwaitedWrites for Watched {
    fn append_async(
        &self,
        run_id: &str,
        last: u64,
        events: Vec<NewEvent>,
    ) -> StoreFuture<Vec<u64>> {
        self.inner.append_async(run_id, last, events)
    }
    fn open_run(
        &self,
        run: NewRun,
        status: RunStatus,
        events: Vec<NewEvent>,
    ) -> StoreFuture<Vec<u64>> {
        self.inner.open_run(run, status, events)
    }
    fn close_run(
        &self,
        run_id: &str,
        last: u64,
        events: Vec<NewEvent>,
        status: RunStatus,
        at: i64,
    ) -> StoreFuture<Vec<u64>> {
        self.inner.close_run(run_id, last, events, status, at)
    }
    fn renew_lease_async(
        &self,
        run_id: &str,
        token: u64,
        now: i64,
        ttl: i64,
    ) -> StoreFuture<Lease> {
        self.inner.renew_lease_async(run_id, token, now, ttl)
    }
    fn release_lease_async(&self, run_id: &str, token: u64) -> StoreFuture<()> {
        self.inner.release_lease_async(run_id, token)
    }
    fn acquire_lease_async(
        &self,
        run_id: &str,
        holder: &LeaseHolder,
        now: i64,
        ttl: i64,
        takeover: Takeover,
    ) -> StoreFuture<Lease> {
        self.inner
            .acquire_lease_async(run_id, holder, now, ttl, takeover)
    }
    fn set_status_async(&self, run_id: &str, status: RunStatus, at: i64) -> StoreFuture<()> {
        self.inner.set_status_async(run_id, status, at)
    }
}

impl AwaitedReads for Watched {
    fn get_run_async(&self, run_id: &str) -> StoreFuture<Option<RunRecord>> {
        self.inner.get_run_async(run_id)
    }
    fn read_async(&self, run_id: &str, from: u64, limit: usize) -> StoreFuture<Vec<EventRecord>> {
        self.inner.read_async(run_id, from, limit)
    }
    fn read_raw_async(
        &self,
        run_id: &str,
        from: u64,
        limit: usize,
    ) -> StoreFuture<Vec<RawEventRecord>> {
        self.inner.read_raw_async(run_id, from, limit)
    }
    fn last_seq_async(&self, run_id: &str) -> StoreFuture<u64> {
        self.inner.last_seq_async(run_id)
    }
    fn get_lease_async(&self, run_id: &str) -> StoreFuture<Option<Lease>> {
        self.inner.get_lease_async(run_id)
    }
}

impl AuditWrites for Watched {
    fn audited(&self, encoder: Arc<dyn AuditEncoder>) -> SharedStore {
        self.wrap(self.inner.audited(encoder))
    }
    fn audit_catch_up(&self, run_id: &str) -> Result<()> {
        self.note("audit_catch_up");
        self.inner.audit_catch_up(run_id)
    }
}

impl FollowLog for Watched {
    fn tail(&self, from: TailFrom) -> Tail {
        self.inner.tail(from)
    }
    fn watch_run(&self, run_id: &str) -> RunWatch {
        self.inner.watch_run(run_id)
    }
}

impl LeaseFence for Watched {
    fn fenced(&self, lease: Lease) -> SharedStore {
        self.wrap(self.inner.fenced(lease))
    }
    fn held_lease(&self) -> Option<&Lease> {
        self.inner.held_lease()
    }
    fn lease_released(&self) -> bool {
        self.inner.lease_released()
    }
}

impl RunStore for Watched {
    fn shared(&self) -> SharedStore {
        self.wrap(self.inner.shared())
    }
    fn path(&self) -> Option<&Path> {
        self.inner.path()
    }
    fn stats(&self) -> StoreStats {
        self.inner.stats()
    }
}

/// A gate `g`, then a step after it.
fn gate_doc() -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "g", "version": "1.0.0",
        "description": "gate", "entrypoints": ["g"],
        "nodes": {
            "g": {"type": "gate", "description": "a person decides", "gate": {"mode": "approve"}},
            "after": {"description": "after the gate", "depends_on": ["g"],
                "outputs": {"label": {"type": "string"}},
                "x-weft-exec": {"run": "echo done"}}
        },
        "edges": []
    })
}

#[tokio::test]
async fn a_suspend_and_its_resume_read_and_set_the_status_awaited() {
    let dir = tempfile::tempdir().unwrap();
    let (file, watched) = Watched::file(dir.path());
    let blocking = Arc::clone(&watched.blocking);
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        ..RunOptions::default()
    };
    let report = run_document(&gate_doc(), &watched, &options).await.unwrap();
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    // A person decides from another process (off any runtime: a thread of its own).
    let run_id = report.run_id.clone();
    std::thread::spawn(move || decide(&file, &run_id, &request("g", Verb::Approve, json!({}))))
        .join()
        .unwrap()
        .unwrap();
    let done = resume_with(&watched, &report.run_id, options).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    // Nothing blocks: no write (the gate's wait and the lease's release as the suspended
    // driver stops included), no read, no status.
    let seen = blocking.lock().unwrap().clone();
    assert!(
        seen.is_empty(),
        "blocking calls on the runtime's thread: {seen:?}"
    );
    // The watch's control: a blocking call made here, on the runtime, is seen.
    watched.get_run(&report.run_id).unwrap();
    assert!(blocking.lock().unwrap().contains("get_run"));
}

/// A run's future dropped while its node runs (a caller's timeout, a server cancelling the
/// request) lets its lease go from the hold's drop without a blocking call on the runtime's
/// thread: the release is submitted there and committed by the store's writer.
#[tokio::test]
async fn a_run_dropped_mid_run_lets_its_lease_go_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let (file, watched) = Watched::file(dir.path());
    let blocking = Arc::clone(&watched.blocking);
    let doc = json!({"entrypoints": ["w"], "nodes": {
        "w": {"description": "waits for go", "x-weft-exec": {
            "run": "while [ ! -e go ]; do [ -d \"$PWD\" ] || exit 1; sleep 0.02; done"}}}});
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        run_id: Some("r".into()),
        ..RunOptions::default()
    };
    let started = async {
        // Read through the plain handle: the watch notes only the driver's calls.
        loop {
            let log = file.read("r", 1, 100).unwrap_or_default();
            if log.iter().any(|e| e.kind == "node_started") {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    };
    tokio::select! {
        report = run_document(&doc, &watched, &options) => panic!("ended without go: {report:?}"),
        () = started => {}
    }
    let seen = blocking.lock().unwrap().clone();
    assert!(
        seen.is_empty(),
        "blocking calls on the runtime's thread: {seen:?}"
    );
    let mut lease = file.get_lease("r").unwrap().unwrap();
    for _ in 0..500 {
        if lease.released() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        lease = file.get_lease("r").unwrap().unwrap();
    }
    assert_eq!((lease.token, lease.released()), (1, true));
    std::fs::write(dir.path().join("go"), "").unwrap();
}

/// The audit trail's export (the store's chain copied to a JSONL file) reads the store and
/// writes and syncs its file off the runtime: no blocking call on the runtime's thread, and
/// the file complete, synced and verified when the run returns.
#[tokio::test]
async fn the_audit_export_blocks_no_runtime_thread_and_is_complete_when_the_run_returns() {
    let dir = tempfile::tempdir().unwrap();
    let (file, watched) = Watched::file(dir.path());
    let blocking = Arc::clone(&watched.blocking);
    let audit = dir.path().join("audit");
    let trail = Arc::new(weft_engine::audit::AuditTrail::new(&audit, &watched));
    let nodes: serde_json::Map<String, Value> = (0..40)
        .map(|i| {
            let after: Vec<String> = if i == 0 {
                vec![]
            } else {
                vec![format!("n{}", i - 1)]
            };
            (
                format!("n{i}"),
                json!({"type": "gate", "description": "tells", "depends_on": after,
                    "gate": {"mode": "notify"}}),
            )
        })
        .collect();
    let doc = json!({"entrypoints": ["n0"], "nodes": nodes});
    let observer: Arc<dyn weft_engine::RunObserver> = trail.clone();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        observers: vec![observer],
        ..RunOptions::default()
    };
    let report = run_document(&doc, trail.store(), &options).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    let seen = blocking.lock().unwrap().clone();
    assert!(
        seen.is_empty(),
        "blocking calls on the runtime's thread: {seen:?}"
    );
    // Complete as the run returns: every line of the store's chain, verified.
    let stored = file.audit_lines(&report.run_id, 0, usize::MAX).unwrap();
    let path = weft_engine::audit::log_path(&audit, &report.run_id).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let copied: Vec<&str> = text.lines().collect();
    let expected: Vec<&str> = stored.iter().map(|l| l.line.as_str()).collect();
    assert_eq!(copied, expected);
    assert!(stored.len() > 80, "{} lines", stored.len());
    let verified = weft_audit::verify(std::io::BufReader::new(text.as_bytes()), None).unwrap();
    assert_eq!(verified.last_seq, stored.len() as u64);
    drop(trail);
}

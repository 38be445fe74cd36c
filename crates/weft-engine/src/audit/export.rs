//! The JSONL export of a run's audit chain: [`AuditTrail`] copies the lines the store
//! committed with the run's events (`encode.rs`) into `<dir>/<run id>.jsonl`, byte for
//! byte, after the commits (nodes' routine events in batches of up to [`EXPORT_EVERY`],
//! anything else at once). The store's chain is the record; the file is a copy anyone can
//! check with `weft audit verify` or `sha256sum`, that may lag the store after a crash
//! between a commit and its export (then the next use of the run completes it) and that
//! is never appended to unless it is a verified prefix of the store's chain.
//!
//! The copying is done on a thread of the trail's own, never on the driver's: it reads the
//! store (blocking, and over the network for a remote store) and writes and syncs a file.
//! The driver only hands it each event's seq; the run awaits the thread's work for its
//! events before it returns ([`RunObserver::drained`]). A failure of the export stops the
//! run at its next event (fail closed, as an observer's failure does), or fails it at its
//! end.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Write as _};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, mpsc};
use std::thread::JoinHandle;

use weft_store::{RunStore, SharedStore};

use super::{AuditTrailError, RunAuditEncoder, last_event_seq, log_path};
use crate::observe::{Drained, ObserveError, Observed, RunObserver};

/// Lines copied per read of the store.
const CHUNK: usize = 512;

/// How many events a node's routine events may leave the file behind the store before they
/// are copied: one read of the store and one write per batch instead of one per commit
/// (the file is a copy, and may lag the store anyway: the module docs).
const EXPORT_EVERY: u64 = 256;

/// One run's export file and how far it is written.
#[derive(Debug)]
struct Export {
    run_id: String,
    path: PathBuf,
    file: File,
    /// The last chain line in the file.
    audit_seq: u64,
    /// The last run event whose line (if it has one) is in the file.
    event_seq: u64,
}

/// Exports the audit chain of the runs it observes, and makes the store handle whose
/// appends write that chain (see the module docs).
pub struct AuditTrail {
    exporter: Arc<Exporter>,
    /// The export thread, started at the first event observed.
    worker: Mutex<Option<Worker>>,
    /// The run and seq of the last event handed to the thread: a node's routine events are
    /// handed over in batches, so the thread is woken once per batch, not per event.
    handed: Mutex<Option<(String, u64)>>,
}

/// The export itself, shared by the trail and its thread.
struct Exporter {
    dir: PathBuf,
    store: SharedStore,
    open: Mutex<Option<Export>>,
    /// The export thread's first failure: it stops the run at its next event.
    failed: Mutex<Option<String>>,
}

/// The export thread and the way to hand it work.
struct Worker {
    jobs: mpsc::Sender<Job>,
    thread: JoinHandle<()>,
}

/// A piece of the export thread's work.
enum Job {
    /// An event the driver appended, due for export: the file is brought up to it.
    Event(Seen),
    /// Answered once every job before it is done.
    Drain(tokio::sync::oneshot::Sender<()>),
}

/// What the export needs of an observed event.
struct Seen {
    run_id: String,
    seq: u64,
    /// The root scope's `run_finished`: the file is completed and synced.
    ends: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl std::fmt::Debug for AuditTrail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditTrail")
            .field("dir", &self.exporter.dir)
            .field("store", &self.exporter.store.path())
            .finish_non_exhaustive()
    }
}

impl Drop for AuditTrail {
    /// Lets the export thread finish what it was given, and waits for it.
    fn drop(&mut self) {
        let worker = lock(&self.worker).take();
        if let Some(Worker { jobs, thread }) = worker {
            drop(jobs);
            let _ = thread.join();
        }
    }
}

impl AuditTrail {
    /// Exports go to `dir` (created when needed); the chain is `store`'s, which must be
    /// the store the runs are logged in. Give the driver [`AuditTrail::store`]: its appends
    /// write their audit lines in their own commit. A driver given a plain handle still
    /// gets a complete trail, at the cost of one more commit per batch (the trail audits
    /// what it observes and finds unaudited).
    pub fn new(dir: impl Into<PathBuf>, store: &dyn RunStore) -> Self {
        AuditTrail {
            exporter: Arc::new(Exporter {
                dir: dir.into(),
                store: store.audited(Arc::new(RunAuditEncoder)),
                open: Mutex::new(None),
                failed: Mutex::new(None),
            }),
            worker: Mutex::new(None),
            handed: Mutex::new(None),
        }
    }

    /// The store handle that writes the audit lines of its appends in their commit.
    pub fn store(&self) -> &dyn RunStore {
        &*self.exporter.store
    }

    /// Audits every event of `run_id` the store's chain does not cover yet (events another
    /// handle appended, or a run audited before schema v4), then completes the export and
    /// syncs it, on the caller's thread (a command's, before or after its run). Idempotent.
    pub fn catch_up(&self, run_id: &str) -> Result<(), AuditTrailError> {
        self.exporter.catch_up(run_id)
    }

    /// Hands `seen` to the export thread, started when needed; gives it back when no
    /// thread can be had. A thread that has stopped (it panicked) fails the run, closed.
    fn hand_over(&self, seen: Seen) -> Result<Option<Seen>, ObserveError> {
        let mut worker = lock(&self.worker);
        let worker = match worker.as_mut() {
            Some(w) => w,
            None => {
                let (jobs, queue) = mpsc::channel();
                let exporter = Arc::clone(&self.exporter);
                let spawned = std::thread::Builder::new()
                    .name("weft-audit-export".into())
                    .spawn(move || exporter.work(&queue));
                let Ok(thread) = spawned else {
                    return Ok(Some(seen));
                };
                worker.insert(Worker { jobs, thread })
            }
        };
        worker
            .jobs
            .send(Job::Event(seen))
            .map_err(|_| ObserveError::new("audit", "the export thread has stopped"))?;
        Ok(None)
    }
}

impl Exporter {
    fn catch_up(&self, run_id: &str) -> Result<(), AuditTrailError> {
        let mut open = lock(&self.open);
        let export = self.export_for(&mut open, run_id)?;
        self.store.audit_catch_up(run_id)?;
        self.copy_new_lines(export)?;
        export.event_seq = self.store.get_anchor(run_id)?.map_or(0, |a| a.event_seq);
        sync(export)
    }

    /// The export thread: each job in turn until the trail is dropped. After a failure
    /// it exports nothing more (the run stops at its next event), but still answers.
    fn work(&self, queue: &mpsc::Receiver<Job>) {
        for job in queue {
            match job {
                Job::Event(seen) => {
                    if lock(&self.failed).is_none()
                        && let Err(e) = self.export(&seen)
                    {
                        *lock(&self.failed) = Some(e.to_string());
                    }
                }
                Job::Drain(done) => {
                    let _ = done.send(());
                }
            }
        }
    }

    /// The export thread's failure, if any.
    fn failure(&self) -> Result<(), ObserveError> {
        match lock(&self.failed).as_deref() {
            Some(why) => Err(ObserveError::new("audit", why)),
            None => Ok(()),
        }
    }

    /// Opens (or keeps) the export of `run_id`, once its file is checked against the store.
    fn export_for<'a>(
        &self,
        open: &'a mut Option<Export>,
        run_id: &str,
    ) -> Result<&'a mut Export, AuditTrailError> {
        if open.as_ref().is_none_or(|o| o.run_id != run_id) {
            *open = None;
            *open = Some(self.open_export(run_id)?);
        }
        open.as_mut()
            .ok_or_else(|| AuditTrailError::RunId(run_id.to_string()))
    }

    fn open_export(&self, run_id: &str) -> Result<Export, AuditTrailError> {
        let path = log_path(&self.dir, run_id)?;
        let log_err = |source| AuditTrailError::Log {
            path: path.clone(),
            source,
        };
        let io_err = |e: std::io::Error| log_err(weft_audit::AuditError::Io(e));
        std::fs::create_dir_all(&self.dir).map_err(io_err)?;
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(io_err)?;
        let report = weft_audit::verify(BufReader::new(&file), None).map_err(log_err)?;
        let anchor = self.store.get_anchor(run_id)?;
        let head_seq = anchor.as_ref().map_or(0, |a| a.audit_seq);
        let diverged = |detail: String| AuditTrailError::Diverged {
            path: path.clone(),
            detail,
        };
        let stored_any = !self.store.audit_lines(run_id, 0, 1)?.is_empty();
        // What the file covers is only known up to its last line (the copy below completes
        // it to the store's head), except for a re-anchored file, which covers it all.
        let mut event_seq = 0;
        if report.last_seq > head_seq {
            if stored_any {
                return Err(diverged(format!(
                    "it has {} entries, the store's chain {head_seq}",
                    report.last_seq
                )));
            }
            // A run audited to a file before schema v4, stopped between its file's sync
            // and its anchor: the file is the chain; anchor its head, as that version did,
            // once it is known to contain the old anchor (a truncated log is not extended).
            if let Some(a) = &anchor {
                let file = File::open(&path).map_err(io_err)?;
                weft_audit::verify(BufReader::new(file), Some(&a.hash)).map_err(log_err)?;
            }
            event_seq = last_event_seq(&path)?;
            self.store.set_anchor(&weft_store::AuditAnchor {
                run_id: run_id.to_string(),
                event_seq,
                audit_seq: report.last_seq,
                hash: report.last_hash.clone(),
                updated_at_ms: crate::clock::Clock::now_ms(&crate::clock::SystemClock),
            })?;
        } else {
            // The next stored line must link to the file's last one: then the file is a
            // prefix of the store's chain and only lags it.
            match self.store.audit_lines(run_id, report.last_seq, 1)?.first() {
                Some(next) => {
                    if next.audit_seq != report.last_seq + 1 {
                        return Err(diverged(format!(
                            "it ends at entry {}, and the store keeps entries from {} on only",
                            report.last_seq, next.audit_seq
                        )));
                    }
                    if super::verify::first_prev(next).as_deref() != Some(report.last_hash.as_str())
                    {
                        return Err(diverged(format!(
                            "its entry {} is not the one the store's chain continues",
                            report.last_seq
                        )));
                    }
                }
                None => {
                    let head_hash = anchor.as_ref().map(|a| a.hash.as_str());
                    if report.last_seq != head_seq
                        || (head_seq > 0 && head_hash != Some(report.last_hash.as_str()))
                    {
                        return Err(diverged(format!(
                            "it ends at entry {} with a hash the store's anchor (entry {head_seq}) \
                             does not have: truncated or rewritten",
                            report.last_seq
                        )));
                    }
                }
            }
        }
        Ok(Export {
            run_id: run_id.to_string(),
            path,
            file,
            audit_seq: report.last_seq,
            event_seq,
        })
    }

    /// Appends to the file the store's lines after the last one it has (one write per
    /// chunk, not synced: the store's commit is what is durable).
    fn copy_new_lines(&self, export: &mut Export) -> Result<(), AuditTrailError> {
        loop {
            let lines = self
                .store
                .audit_lines(&export.run_id, export.audit_seq, CHUNK)?;
            let Some(last) = lines.last() else {
                return Ok(());
            };
            let (last_seq, last_event) = (last.audit_seq, last.event_seq);
            let mut bytes = Vec::with_capacity(lines.iter().map(|l| l.line.len() + 1).sum());
            for l in &lines {
                bytes.extend_from_slice(l.line.as_bytes());
                bytes.push(b'\n');
            }
            export
                .file
                .write_all(&bytes)
                .map_err(|e| AuditTrailError::Log {
                    path: export.path.clone(),
                    source: weft_audit::AuditError::Io(e),
                })?;
            export.audit_seq = last_seq;
            export.event_seq = export.event_seq.max(last_event);
            if lines.len() < CHUNK {
                return Ok(());
            }
        }
    }
}

/// Makes the export durable (once per run: at its end, and after a catch-up).
fn sync(export: &Export) -> Result<(), AuditTrailError> {
    export.file.sync_data().map_err(|e| AuditTrailError::Log {
        path: export.path.clone(),
        source: weft_audit::AuditError::Io(e),
    })
}

impl Exporter {
    /// Brings the file up to `seen` (an event the observer found due), and syncs it at
    /// the run's end.
    fn export(&self, seen: &Seen) -> Result<(), AuditTrailError> {
        let mut open = lock(&self.open);
        let export = self.export_for(&mut open, &seen.run_id)?;
        if seen.seq > export.event_seq {
            // The driver's audited appends have put the lines in the commit; a plain
            // handle's have not, and they are audited now (a commit of their own).
            let covered = self
                .store
                .get_anchor(&seen.run_id)?
                .map_or(0, |a| a.event_seq);
            if covered < seen.seq {
                self.store.audit_catch_up(&seen.run_id)?;
            }
            self.copy_new_lines(export)?;
            export.event_seq = export.event_seq.max(covered).max(seen.seq);
        }
        if seen.ends {
            sync(export)?;
        }
        Ok(())
    }
}

impl RunObserver for AuditTrail {
    fn on_event(&self, seen: &Observed<'_>) -> Result<(), ObserveError> {
        self.exporter.failure()?;
        let kind = seen.event.kind();
        let routine = matches!(kind, "node_when" | "node_started" | "node_finished");
        let ends = seen.scope.is_none() && kind == "run_finished";
        {
            // A node's routine events (its `when`, start and end: two or three per node)
            // are exported in batches; anything else (a wait on a person, a decision, a
            // cancel, the run's end) brings the file up to date at once.
            let mut handed = lock(&self.handed);
            let last = match handed.as_ref() {
                Some((run, seq)) if run == seen.run_id => *seq,
                _ => 0,
            };
            if routine && !ends && seen.seq.saturating_sub(last) < EXPORT_EVERY {
                return Ok(());
            }
            *handed = Some((seen.run_id.to_string(), seen.seq));
        }
        let seen = Seen {
            run_id: seen.run_id.to_string(),
            seq: seen.seq,
            ends,
        };
        // No thread to be had: the export on this one.
        if let Some(seen) = self.hand_over(seen)? {
            self.exporter
                .export(&seen)
                .map_err(|e| ObserveError::new("audit", e))?;
        }
        Ok(())
    }

    fn drained(&self) -> Option<Drained> {
        let (done, answer) = tokio::sync::oneshot::channel();
        // Without a thread (no event seen, or none could be had), nothing is pending.
        lock(&self.worker)
            .as_ref()?
            .jobs
            .send(Job::Drain(done))
            .ok()?;
        let exporter = Arc::clone(&self.exporter);
        Some(Box::pin(async move {
            // A thread that is gone has done all it will.
            let _ = answer.await;
            exporter.failure()
        }))
    }
}

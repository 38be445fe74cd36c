//! The ephemeral backend ([`EphemeralStore`]): runs, logs, leases and audit chains held in
//! this process only, with exactly the semantics of the SQLite backend (the same
//! backend-independent suite runs against both). [`MemoryLog`] is the state and its
//! rules; `store.rs` the handle behind the seam's traits. Nothing survives the process: it is what
//! LangGraph's "no checkpointer" is to a durable store, for runs that need no resume and
//! for measuring the engine without a database.

mod audit;
mod lease;
mod store;
mod tail;

pub use store::EphemeralStore;

use std::collections::{BTreeMap, HashMap};

use crate::error::{Result, StoreError};
use crate::lease::Lease;
use crate::model::{
    AuditAnchor, EventRecord, NewEvent, NewRun, RawEventRecord, RunRecord, RunStatus,
};

/// The whole state, behind the store's mutex.
#[derive(Default)]
pub(crate) struct MemoryLog {
    pub(crate) runs: BTreeMap<String, RunRecord>,
    events: HashMap<String, Vec<StoredEvent>>,
    anchors: HashMap<String, AuditAnchor>,
    /// Runs' audit lines (`memory/audit.rs`).
    audit: HashMap<String, Vec<crate::audit_log::AuditLine>>,
    /// The position of the last event appended to any run: events are numbered across
    /// runs in the order they were appended, for tails of every run (`memory/tail.rs`).
    last_position: u64,
    /// Runs' leases (`memory/lease.rs`).
    pub(crate) leases: HashMap<String, Lease>,
}

/// One event of a log: its seq is its index + 1. The payload is kept as compact JSON
/// text, sized to it (the engine's text grew while being written, up to twice its length),
/// and becomes a value only when read: a log of many small events holds about its text.
struct StoredEvent {
    kind: Box<str>,
    payload: Box<str>,
    recorded_at_ms: i64,
    position: u64,
}

/// `text` without spare capacity: a copy when it has some (shrinking in place may keep
/// the block it grew into).
fn sized(text: String) -> Box<str> {
    if text.capacity() > text.len() {
        Box::from(text.as_str())
    } else {
        text.into_boxed_str()
    }
}

fn unknown(run_id: &str) -> StoreError {
    StoreError::UnknownRun {
        run_id: run_id.to_owned(),
    }
}

impl MemoryLog {
    pub(crate) fn create_run(&mut self, run: &NewRun) -> Result<RunRecord> {
        if self.runs.contains_key(&run.id) {
            return Err(StoreError::RunExists {
                run_id: run.id.clone(),
            });
        }
        let record = RunRecord {
            id: run.id.clone(),
            graph_digest: run.graph_digest.clone(),
            status: RunStatus::Pending,
            created_at_ms: run.created_at_ms,
            updated_at_ms: run.created_at_ms,
        };
        self.runs.insert(run.id.clone(), record.clone());
        self.events.insert(run.id.clone(), Vec::new());
        Ok(record)
    }

    pub(crate) fn get_run(&self, run_id: &str) -> Option<RunRecord> {
        self.runs.get(run_id).cloned()
    }

    /// Oldest first (creation time, then id), like the SQLite backend.
    pub(crate) fn list_runs(&self, status: Option<RunStatus>, limit: usize) -> Vec<RunRecord> {
        let mut runs: Vec<&RunRecord> = self
            .runs
            .values()
            .filter(|r| status.is_none_or(|s| r.status == s))
            .collect();
        runs.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
        runs.into_iter().take(limit).cloned().collect()
    }

    pub(crate) fn set_status(
        &mut self,
        run_id: &str,
        status: RunStatus,
        updated_at_ms: i64,
    ) -> Result<()> {
        let run = self.runs.get_mut(run_id).ok_or_else(|| unknown(run_id))?;
        run.status = status;
        run.updated_at_ms = updated_at_ms;
        Ok(())
    }

    /// Appends after the end of the log, checking `expected` first when given; the events
    /// are moved in (no copy of their payloads).
    pub(crate) fn append_owned(
        &mut self,
        run_id: &str,
        expected: Option<u64>,
        events: Vec<NewEvent>,
    ) -> Result<Vec<u64>> {
        let log = self.events.get_mut(run_id).ok_or_else(|| unknown(run_id))?;
        let last = log.len() as u64;
        if let Some(expected) = expected
            && expected != last
        {
            return Err(StoreError::SequenceConflict {
                run_id: run_id.to_owned(),
                expected,
                actual: last,
            });
        }
        let mut seqs = Vec::with_capacity(events.len());
        for (seq, event) in (last + 1..).zip(events) {
            self.last_position += 1;
            log.push(StoredEvent {
                kind: sized(event.kind),
                payload: sized(event.payload.into_text()),
                recorded_at_ms: event.recorded_at_ms,
                position: self.last_position,
            });
            seqs.push(seq);
        }
        Ok(seqs)
    }

    pub(crate) fn read(
        &self,
        run_id: &str,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<EventRecord>> {
        let log = self.events.get(run_id).ok_or_else(|| unknown(run_id))?;
        let start = usize::try_from(from_seq.saturating_sub(1)).unwrap_or(usize::MAX);
        let slice = log.get(start..).unwrap_or_default();
        slice
            .iter()
            .take(limit)
            .enumerate()
            .map(|(i, event)| {
                // `start + i` indexes the log, so it is below its length: no overflow.
                let seq = (start + i) as u64 + 1;
                let payload =
                    serde_json::from_str(&event.payload).map_err(|e| StoreError::CorruptRow {
                        table: "events",
                        key: format!("run {run_id} seq {seq}"),
                        reason: format!("payload is not JSON: {e}"),
                    })?;
                Ok(EventRecord {
                    run_id: run_id.to_owned(),
                    seq,
                    kind: event.kind.to_string(),
                    payload,
                    recorded_at_ms: event.recorded_at_ms,
                })
            })
            .collect()
    }

    pub(crate) fn read_raw(
        &self,
        run_id: &str,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<RawEventRecord>> {
        let log = self.events.get(run_id).ok_or_else(|| unknown(run_id))?;
        let start = usize::try_from(from_seq.saturating_sub(1)).unwrap_or(usize::MAX);
        let slice = log.get(start..).unwrap_or_default();
        Ok(slice
            .iter()
            .take(limit)
            .enumerate()
            .map(|(i, event)| RawEventRecord {
                // `start + i` indexes the log, so it is below its length: no overflow.
                seq: (start + i) as u64 + 1,
                kind: event.kind.to_string(),
                payload: event.payload.to_string(),
                recorded_at_ms: event.recorded_at_ms,
            })
            .collect())
    }

    pub(crate) fn last_seq(&self, run_id: &str) -> Result<u64> {
        self.events
            .get(run_id)
            .map(|log| log.len() as u64)
            .ok_or_else(|| unknown(run_id))
    }

    /// Sets the run's anchor unless it would move backwards (a lower `audit_seq`).
    pub(crate) fn set_anchor(&mut self, anchor: &AuditAnchor) -> Result<()> {
        if !self.runs.contains_key(&anchor.run_id) {
            return Err(unknown(&anchor.run_id));
        }
        let newer = self
            .anchors
            .get(&anchor.run_id)
            .is_none_or(|a| anchor.audit_seq >= a.audit_seq);
        if newer {
            self.anchors.insert(anchor.run_id.clone(), anchor.clone());
        }
        Ok(())
    }

    pub(crate) fn get_anchor(&self, run_id: &str) -> Option<AuditAnchor> {
        self.anchors.get(run_id).cloned()
    }
}

//! Tail reads of the ephemeral backend: one run's events after a seq, or every run's
//! after a position (the order of appends across runs, kept per event).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{MemoryLog, StoredEvent, unknown};
use crate::error::{Result, StoreError};
use crate::model::EventRecord;
use crate::tail::{TailFrom, TailedEvent};

impl MemoryLog {
    /// Up to `limit` events after `from`, in its order; `UnknownRun` for a run tail of a
    /// run that does not exist.
    pub(crate) fn read_after(&self, from: &TailFrom, limit: usize) -> Result<Vec<TailedEvent>> {
        match from {
            TailFrom::Run { run_id, after_seq } => {
                let log = self.events.get(run_id).ok_or_else(|| unknown(run_id))?;
                let start = usize::try_from(*after_seq).unwrap_or(usize::MAX);
                let events = log.get(start..).unwrap_or_default();
                (start..)
                    .zip(events.iter().take(limit))
                    .map(|(i, event)| tailed(run_id, i, event))
                    .collect()
            }
            TailFrom::All { after_position } => self.read_all_after(*after_position, limit),
        }
    }

    /// Every run's events after `after`, merged by position (each log is in position
    /// order, so a heap of one cursor per log).
    fn read_all_after(&self, after: u64, limit: usize) -> Result<Vec<TailedEvent>> {
        let logs: Vec<(&String, &Vec<StoredEvent>)> = self.events.iter().collect();
        let mut heap = BinaryHeap::new();
        for (n, (_, log)) in logs.iter().enumerate() {
            let i = log.partition_point(|e| e.position <= after);
            if let Some(e) = log.get(i) {
                heap.push(Reverse((e.position, n, i)));
            }
        }
        let mut out = Vec::new();
        while out.len() < limit {
            let Some(Reverse((_, n, i))) = heap.pop() else {
                break;
            };
            let (run_id, log) = logs[n];
            out.push(tailed(run_id, i, &log[i])?);
            if let Some(e) = log.get(i + 1) {
                heap.push(Reverse((e.position, n, i + 1)));
            }
        }
        Ok(out)
    }
}

/// The event at index `i` of `run_id`'s log.
fn tailed(run_id: &str, i: usize, event: &StoredEvent) -> Result<TailedEvent> {
    // `i` indexes the log, so it is below its length: no overflow.
    let seq = i as u64 + 1;
    let payload = serde_json::from_str(&event.payload).map_err(|e| StoreError::CorruptRow {
        table: "events",
        key: format!("run {run_id} seq {seq}"),
        reason: format!("payload is not JSON: {e}"),
    })?;
    Ok(TailedEvent {
        position: event.position,
        event: EventRecord {
            run_id: run_id.to_owned(),
            seq,
            kind: event.kind.to_string(),
            payload,
            recorded_at_ms: event.recorded_at_ms,
        },
    })
}

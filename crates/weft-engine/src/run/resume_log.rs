//! A resumed run's log as the resume needs it, read from the stored text
//! ([`weft_store::EventLog::read_raw`]): the root scope's events decoded straight into
//! [`RunEvent`]s (no `serde_json::Value` tree per event, no copy of the records), and the
//! fragment instances' events grouped by instance as records, the form `fragment.rs`
//! rebuilds them from. The same events as [`crate::record::read_log`] split by
//! instance and [`super::root_records`], decoded.

use std::collections::BTreeMap;

use serde_json::Value;
use weft_store::{AwaitedReads, EventRecord};

use crate::EngineError;
use crate::events::RunEvent;
use crate::run_log::scope_in_text as scope_of;

/// The log of a run, split by scope.
pub(super) struct ResumeLog {
    /// The root scope's records, in log order, their payloads left `null` (only the seqs
    /// and times are read; the events are in `events`).
    pub(super) records: Vec<EventRecord>,
    /// The root scope's events, same index as `records`.
    pub(super) events: Vec<RunEvent>,
    /// Fragment instances' records, by instance path.
    pub(super) scoped: BTreeMap<String, Vec<EventRecord>>,
}

/// Reads and splits the whole log of `run_id`.
pub(super) async fn read(
    store: &(impl AwaitedReads + ?Sized),
    run_id: &str,
) -> Result<ResumeLog, EngineError> {
    let mut log = ResumeLog {
        records: Vec::new(),
        events: Vec::new(),
        scoped: BTreeMap::new(),
    };
    let mut from = 1;
    loop {
        let batch = store.read_raw_async(run_id, from, 1000).await?;
        let Some(last) = batch.last() else {
            return Ok(log);
        };
        from = last.seq + 1;
        for raw in batch {
            match scope_of(&raw.payload) {
                None => {
                    log.events.push(
                        RunEvent::from_text(raw.seq, &raw.kind, &raw.payload)
                            .map_err(|e| internal(e.to_string()))?,
                    );
                    log.records.push(raw.with_payload(run_id, Value::Null));
                }
                Some(path) => {
                    let payload = serde_json::from_str(&raw.payload).map_err(|e| {
                        internal(format!("event {}: payload is not JSON: {e}", raw.seq))
                    })?;
                    let record = raw.with_payload(run_id, payload);
                    log.scoped.entry(path).or_default().push(record);
                }
            }
        }
    }
}

fn internal(message: String) -> EngineError {
    EngineError::Internal(format!("resume: {message}"))
}

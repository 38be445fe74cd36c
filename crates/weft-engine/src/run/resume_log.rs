//! A resumed run's log as the resume needs it, read from the stored text
//! ([`weft_store::EventLog::read_raw`]): the root scope's events decoded straight into
//! [`RunEvent`]s (no `serde_json::Value` tree per event, no copy of the records), and the
//! fragment instances' events grouped by instance as records, the form `fragment.rs`
//! rebuilds them from. The same events as [`crate::record::read_log`] split by
//! instance and [`super::root_records`], decoded.

use std::collections::BTreeMap;

use weft_store::{AwaitedReads, EventRecord};

use crate::EngineError;
use crate::events::RunEvent;
use crate::stored_log::Stored;

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
        let batch = store
            .read_raw_async(run_id, from, crate::stored_log::READ_BATCH)
            .await?;
        let Some(last) = batch.last() else {
            return Ok(log);
        };
        from = last.seq + 1;
        for raw in batch {
            match crate::stored_log::split(run_id, raw)? {
                Stored::Root(event, record) => {
                    log.events.push(event);
                    log.records.push(record);
                }
                Stored::Scoped(path, record) => log.scoped.entry(path).or_default().push(record),
            }
        }
    }
}

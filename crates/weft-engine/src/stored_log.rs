//! A run's log read from its stored text ([`weft_store::EventLog::read_raw`]) and split as
//! the readers of a whole log need it: the root scope's events decoded straight from their
//! payloads (no `serde_json::Value` tree per event, no copy of a record), and the fragment
//! instances' events kept as records, whose payloads `run_log`'s helpers read. The inbox
//! (every decision, cancel and mutation reads the log it writes after), the resume and the
//! run record read logs this way; a log as values held a large run's document and every
//! payload twice over (`docs/BENCHMARKS.md`).

use serde_json::Value;
use weft_store::{EventRecord, RawEventRecord};

use crate::EngineError;
use crate::events::RunEvent;
use crate::run_log::scope_in_text;

/// One stored event, split.
#[allow(
    clippy::large_enum_variant,
    reason = "returned by value and taken apart at once; boxing the event would allocate once per event of the log"
)]
pub(crate) enum Stored {
    /// A root-scope event, decoded, and its record with a `null` payload (its seq, kind and
    /// time are what its readers use).
    Root(RunEvent, EventRecord),
    /// An event of the fragment instance at the path, as a record with its payload.
    Scoped(String, EventRecord),
}

/// Splits one stored event of run `run_id`.
pub(crate) fn split(run_id: &str, raw: RawEventRecord) -> Result<Stored, EngineError> {
    match scope_in_text(&raw.payload) {
        None => {
            let event = RunEvent::from_text(raw.seq, &raw.kind, &raw.payload)
                .map_err(|e| EngineError::Internal(e.to_string()))?;
            Ok(Stored::Root(event, raw.with_payload(run_id, Value::Null)))
        }
        Some(path) => {
            let payload = parse(&raw)?;
            Ok(Stored::Scoped(path, raw.with_payload(run_id, payload)))
        }
    }
}

/// The payload of `raw` as a value.
pub(crate) fn parse(raw: &RawEventRecord) -> Result<Value, EngineError> {
    serde_json::from_str(&raw.payload)
        .map_err(|e| EngineError::Internal(format!("event {}: payload is not JSON: {e}", raw.seq)))
}

/// The whole log of `run_id`: the root scope's events, and every record in log order (a
/// root event's with a `null` payload).
pub(crate) fn read(
    log: &(impl weft_store::EventLog + ?Sized),
    run_id: &str,
) -> Result<(Vec<RunEvent>, Vec<EventRecord>), EngineError> {
    let len = length(log, run_id)?;
    let mut root = Vec::with_capacity(len);
    let mut records = Vec::with_capacity(len);
    read_each(log, run_id, |raw| {
        match split(run_id, raw)? {
            Stored::Root(event, record) => {
                root.push(event);
                records.push(record);
            }
            Stored::Scoped(_, record) => records.push(record),
        }
        Ok(())
    })?;
    Ok((root, records))
}

/// How many events the log of `run_id` holds: what a reader sizes its vectors by once (a
/// doubling vector of 20,000 events would hold its old and new buffers at once).
pub(crate) fn length(
    log: &(impl weft_store::EventLog + ?Sized),
    run_id: &str,
) -> Result<usize, EngineError> {
    Ok(usize::try_from(log.last_seq(run_id)?).unwrap_or(0))
}

/// Events read from the store per step of [`read_each`] (and of a resume's awaited read).
pub(crate) const READ_BATCH: usize = 1000;

/// Hands every stored event of `run_id` to `each`, in seq order, read a batch at a time.
pub(crate) fn read_each(
    log: &(impl weft_store::EventLog + ?Sized),
    run_id: &str,
    mut each: impl FnMut(RawEventRecord) -> Result<(), EngineError>,
) -> Result<(), EngineError> {
    let mut from = 1;
    loop {
        let batch = log.read_raw(run_id, from, READ_BATCH)?;
        let Some(last) = batch.last() else {
            return Ok(());
        };
        from = last.seq + 1;
        batch.into_iter().try_for_each(&mut each)?;
    }
}

//! A run's log as the record reads it: the fragment instances' records (with their
//! payloads, which `scope.rs` reads), the root scope's events decoded once, and the
//! document of `run_started`.
//!
//! Read from the store ([`DecodedLog::read`]), the root scope's events are decoded straight
//! from their stored text and no record of them is kept: a 10,000-node run's log as
//! `serde_json::Value`s (the document again, and 20,000 payloads) was the peak of `weft
//! run`'s memory while it wrote the record (`docs/BENCHMARKS.md`). Given as records
//! ([`DecodedLog::of`], tests and callers that hold a log already), they are decoded from
//! their values.

use std::borrow::Cow;

use serde_json::Value;
use weft_store::EventRecord;

use crate::EngineError;
use crate::events::RunEvent;
use crate::stored_log::{self, Stored};

/// A run's log, decoded for the record.
pub(super) struct DecodedLog<'a> {
    /// The fragment instances' records in log order, with their payloads (`scope.rs`
    /// reads them). Read from the store, only those; given a log, the whole log (its root
    /// records are skipped by every reader of this list).
    pub(super) all: Cow<'a, [EventRecord]>,
    /// The root scope's events in log order (a `run_started` without its document), with
    /// the time each was recorded.
    pub(super) events: Vec<(RunEvent, i64)>,
    /// The seq of each of `events`, same index.
    pub(super) seqs: Vec<u64>,
    /// The `graph` member of the root's `run_started` (`null` when it has none).
    pub(super) graph: Cow<'a, Value>,
}

impl<'a> DecodedLog<'a> {
    /// The log `all` (in seq order), decoded.
    pub(super) fn of(all: &'a [EventRecord]) -> Result<Self, EngineError> {
        let mut events = Vec::with_capacity(all.len());
        let mut seqs = Vec::with_capacity(all.len());
        let mut graph = None;
        for r in all.iter().filter(|r| crate::run_log::scope_of(r).is_none()) {
            if events.is_empty() {
                // The root's first event: `run_started`, with the document.
                graph = r.payload.get("graph");
            }
            events.push((decode_lean(r)?, r.recorded_at_ms));
            seqs.push(r.seq);
        }
        Ok(DecodedLog {
            all: Cow::Borrowed(all),
            events,
            seqs,
            graph: Cow::Borrowed(graph.unwrap_or(&Value::Null)),
        })
    }

    /// The whole log of `run_id` read from its stored text: root events decoded without a
    /// value tree, their records without payloads; the document parsed once.
    pub(super) fn read(
        log: &(impl weft_store::EventLog + ?Sized),
        run_id: &str,
    ) -> Result<DecodedLog<'static>, EngineError> {
        let len = stored_log::length(log, run_id)?;
        let mut all: Vec<EventRecord> = Vec::new();
        let mut events = Vec::with_capacity(len);
        let mut seqs = Vec::with_capacity(len);
        let mut graph = Value::Null;
        stored_log::read_each(log, run_id, |raw| {
            if events.is_empty() && crate::run_log::scope_in_text(&raw.payload).is_none() {
                // The root's first event: `run_started`, its document kept apart.
                let mut payload = stored_log::parse(&raw)?;
                if let Some(members) = payload.as_object_mut() {
                    graph = members.remove("graph").unwrap_or(Value::Null);
                }
                let event = RunEvent::decode(raw.seq, &raw.kind, payload).map_err(decode_error)?;
                seqs.push(raw.seq);
                events.push((event, raw.recorded_at_ms));
                return Ok(());
            }
            match stored_log::split(run_id, raw)? {
                Stored::Root(event, record) => {
                    seqs.push(record.seq);
                    events.push((event, record.recorded_at_ms));
                }
                Stored::Scoped(_, record) => all.push(record),
            }
            Ok(())
        })?;
        Ok(DecodedLog {
            all: Cow::Owned(all),
            events,
            seqs,
            graph: Cow::Owned(graph),
        })
    }
}

/// A stored event decoded as [`RunEvent::from_record`] does, but a `run_started` without its
/// document (`graph` left null): the record reads the document from the stored payload, so
/// the largest value of a log is held once, not twice.
fn decode_lean(r: &EventRecord) -> Result<RunEvent, EngineError> {
    match r.payload.as_object() {
        Some(members) if r.kind == "run_started" => {
            let lean = crate::run_log::members_except(members, &["graph"]);
            RunEvent::decode(r.seq, &r.kind, Value::Object(lean))
        }
        _ => RunEvent::from_record(r),
    }
    .map_err(decode_error)
}

fn decode_error(e: crate::events::ReplayError) -> EngineError {
    EngineError::Internal(e.to_string())
}

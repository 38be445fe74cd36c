//! The inbox writers (`docs/engine.md` §2c): processes other than the driver append only
//! `human_decision` and `cancel_requested`, with `append_expecting` from the last seq they
//! read, after checking their request against the log as read; a conflict re-reads and
//! re-checks.

use weft_store::{EventLog, RunStatus, RunTable};

use super::{DecisionRequest, OpenWait, cancel_requested, check_decision, open_waits};
use crate::EngineError;
use crate::events::RunEvent;

/// What an inbox write found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InboxReceipt {
    /// The seq of the appended event (`None`: nothing appended, e.g. a cancel already
    /// requested).
    pub seq: Option<u64>,
    /// The run row's status when the event was appended.
    pub run_status: RunStatus,
}

/// How many times an inbox writer re-reads the log after a sequence conflict.
const INBOX_RETRIES: usize = 50;

fn read_events(
    store: &weft_store::Store,
    run_id: &str,
) -> Result<(Vec<RunEvent>, u64), EngineError> {
    let records = crate::record::read_log(store, run_id)?;
    let last = records.last().map_or(0, |r| r.seq);
    // The root scope's events: a fragment instance's (`scope`) are its own.
    let records = crate::run::root_records(&records);
    let events = records
        .iter()
        .map(RunEvent::from_record)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| EngineError::Internal(e.to_string()))?;
    Ok((events, last))
}

/// Appends `event` (an inbox kind) once `check` accepts the log as read; re-reads and
/// re-checks after every sequence conflict. `check` returning `Ok(None)` appends nothing.
fn append_inbox(
    store: &weft_store::Store,
    run_id: &str,
    check: impl Fn(&[RunEvent]) -> Result<Option<RunEvent>, EngineError>,
) -> Result<InboxReceipt, EngineError> {
    if store.get_run(run_id)?.is_none() {
        return Err(EngineError::UnknownRun(run_id.to_string()));
    }
    for _ in 0..INBOX_RETRIES {
        let (events, last) = read_events(store, run_id)?;
        let Some(event) = check(&events)? else {
            let row = store
                .get_run(run_id)?
                .ok_or_else(|| EngineError::UnknownRun(run_id.to_string()))?;
            return Ok(InboxReceipt {
                seq: None,
                run_status: row.status,
            });
        };
        debug_assert!(event.is_inbox());
        let now = crate::run::now_ms();
        match store.append_expecting(run_id, last, &[event.to_new_event(now)?]) {
            Ok(seqs) => {
                let row = store
                    .get_run(run_id)?
                    .ok_or_else(|| EngineError::UnknownRun(run_id.to_string()))?;
                return Ok(InboxReceipt {
                    seq: seqs.last().copied(),
                    run_status: row.status,
                });
            }
            Err(e) if e.is_conflict() => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(EngineError::Internal(format!(
        "run {run_id}: the log kept moving; the decision was not written (try again)"
    )))
}

/// Records a person's decision on a waiting node (`weft approve|reject|provide`). Refused
/// (nothing written) when the run has finished or is being cancelled, when the node is not
/// waiting, or when the decision does not fit the wait (`check_decision`).
pub fn decide(
    store: &weft_store::Store,
    run_id: &str,
    request: &DecisionRequest,
) -> Result<InboxReceipt, EngineError> {
    append_inbox(store, run_id, |events| {
        if let Some(status) = crate::events::finished_status(events) {
            return Err(EngineError::Refused(vec![format!(
                "run {run_id} has finished ({status}): nothing waits on a decision"
            )]));
        }
        if cancel_requested(events).is_some() {
            return Err(EngineError::Refused(vec![format!(
                "run {run_id} is being cancelled: no decision is taken"
            )]));
        }
        let waits = open_waits(events);
        let Some(wait) = waits
            .iter()
            .find(|w| w.waiting.node == request.node && w.is_open())
        else {
            let waiting: Vec<&str> = waits
                .iter()
                .filter(|w| w.is_open())
                .map(|w| w.waiting.node.as_str())
                .collect();
            let hint = if waiting.is_empty() {
                "no node of this run waits on a person".to_string()
            } else {
                format!("waiting: {}", waiting.join(", "))
            };
            return Err(EngineError::Refused(vec![format!(
                "node `{}` of run {run_id} is not waiting on a person ({hint})",
                request.node
            )]));
        };
        let decision =
            check_decision(&wait.waiting, request).map_err(|e| EngineError::Refused(vec![e]))?;
        Ok(Some(RunEvent::HumanDecision(decision)))
    })
}

/// Asks the run to stop (`weft cancel`): appends `cancel_requested` unless one is already
/// in the log (then nothing is written). Refused when the run has finished.
pub fn request_cancel(
    store: &weft_store::Store,
    run_id: &str,
    actor: &str,
    note: Option<&str>,
) -> Result<InboxReceipt, EngineError> {
    append_inbox(store, run_id, |events| {
        if let Some(status) = crate::events::finished_status(events) {
            return Err(EngineError::Refused(vec![format!(
                "run {run_id} has already finished ({status})"
            )]));
        }
        if cancel_requested(events).is_some() {
            return Ok(None);
        }
        Ok(Some(RunEvent::CancelRequested {
            actor: actor.to_string(),
            note: note.map(str::to_string),
        }))
    })
}

/// The open waits of a stored run (for `weft status` and `weft run`'s report).
pub fn waits_of(store: &weft_store::Store, run_id: &str) -> Result<Vec<OpenWait>, EngineError> {
    let (events, _) = read_events(store, run_id)?;
    Ok(open_waits(&events))
}

//! The inbox writers (`docs/engine.md` §2c): processes other than the driver append only
//! `human_decision`, `cancel_requested` and `graph_mutated` (`crate::mutation`), with `append_expecting` from the last seq they
//! read, after checking their request against the log as read; a conflict re-reads and
//! re-checks.

use serde_json::Value;
use weft_store::RunStatus;

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

/// A run's log as an inbox writer reads it: the root scope's events decoded, and every
/// record (fragment instances' events carry `scope`).
struct Log {
    root: Vec<RunEvent>,
    records: Vec<weft_store::EventRecord>,
}

fn decode(records: &[weft_store::EventRecord]) -> Result<Vec<RunEvent>, EngineError> {
    records
        .iter()
        .map(RunEvent::from_record)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| EngineError::Internal(e.to_string()))
}

fn read_log(store: &dyn weft_store::RunStore, run_id: &str) -> Result<(Log, u64), EngineError> {
    // Read as text: the root scope's events (a fragment instance's, `scope`, are its own)
    // decoded straight from their payloads, their records left without one (a mutation's
    // check reads their seqs; every other reader of `records` reads instances' only).
    let (root, records) = crate::stored_log::read(store, run_id)?;
    let last = records.last().map_or(0, |r| r.seq);
    Ok((Log { root, records }, last))
}

/// An inbox event to append, addressed to a fragment instance when `scope` is set.
struct Inbox {
    event: RunEvent,
    scope: Option<String>,
}

/// Appends the event `check` builds once it accepts the log as read; re-reads and
/// re-checks after every sequence conflict. `check` returning `Ok(None)` appends nothing.
fn append_inbox(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    check: impl Fn(&Log) -> Result<Option<Inbox>, EngineError>,
) -> Result<InboxReceipt, EngineError> {
    retrying(store, run_id, |log, last| match check(log)? {
        Some(Inbox { event, scope }) => append_after(store, run_id, last, &event, scope),
        None => receipt(store, run_id, None).map(Some),
    })
}

/// Appends `event` to the root scope once `check` accepts the log as read (it may rework
/// the event it is lent, and hand it back as it found it); re-reads and re-checks after
/// every sequence conflict. The writer keeps its event across attempts: a mutation of
/// thousands of nodes is neither copied for each attempt nor for its checks
/// (`crate::mutation::submit`).
pub(crate) fn append_root_inbox(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    event: &mut RunEvent,
    check: impl Fn(&[weft_store::EventRecord], &[RunEvent], &mut RunEvent) -> Result<(), EngineError>,
) -> Result<InboxReceipt, EngineError> {
    retrying(store, run_id, |log, last| {
        let records = crate::run_log::root_records(&log.records);
        check(&records, &log.root, event)?;
        append_after(store, run_id, last, event, None)
    })
}

/// Runs `attempt` on the log as read (and its last seq) until it gives a receipt: `None`
/// is a sequence conflict, and the log is read again (at most [`INBOX_RETRIES`] times).
fn retrying(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    mut attempt: impl FnMut(&Log, u64) -> Result<Option<InboxReceipt>, EngineError>,
) -> Result<InboxReceipt, EngineError> {
    if store.get_run(run_id)?.is_none() {
        return Err(EngineError::UnknownRun(run_id.to_string()));
    }
    for _ in 0..INBOX_RETRIES {
        let (log, last) = read_log(store, run_id)?;
        if let Some(appended) = attempt(&log, last)? {
            return Ok(appended);
        }
    }
    Err(EngineError::Internal(format!(
        "run {run_id}: the log kept moving; the decision was not written (try again)"
    )))
}

/// One attempt: `event` appended after seq `last`, or `None` when the log has moved since
/// (a sequence conflict: the caller reads it again).
fn append_after(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    last: u64,
    event: &RunEvent,
    scope: Option<String>,
) -> Result<Option<InboxReceipt>, EngineError> {
    debug_assert!(event.is_inbox());
    // A person's request is stamped when it is made, outside any run's clock.
    let now = crate::clock::Clock::now_ms(&crate::clock::SystemClock);
    let mut new = event.to_new_event(now)?;
    if let Some(path) = scope {
        new.payload
            .append_member(crate::run_log::SCOPE_MEMBER, Value::String(path));
    }
    match store.append_expecting(run_id, last, &[new]) {
        Ok(seqs) => receipt(store, run_id, seqs.last().copied()).map(Some),
        Err(e) if e.is_conflict() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The receipt of an inbox write: what was appended, and the run row's status after it.
fn receipt(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    seq: Option<u64>,
) -> Result<InboxReceipt, EngineError> {
    let row = store
        .get_run(run_id)?
        .ok_or_else(|| EngineError::UnknownRun(run_id.to_string()))?;
    Ok(InboxReceipt {
        seq,
        run_status: row.status,
    })
}

/// The open waits of the fragment instances of a log, each named by its address
/// (`work[3].review`), instance by instance in the order they opened.
fn instance_waits(records: &[weft_store::EventRecord]) -> Result<Vec<OpenWait>, EngineError> {
    let mut paths: Vec<&str> = Vec::new();
    for r in records {
        if let Some(p) = crate::run_log::scope_of(r)
            && !paths.contains(&p)
        {
            paths.push(p);
        }
    }
    let mut out = Vec::new();
    for path in paths {
        let events = decode(&crate::run_log::scope_records(records, path))?;
        out.extend(open_waits(&events).into_iter().map(|mut w| {
            w.waiting.node = format!("{path}.{}", w.waiting.node);
            w
        }));
    }
    Ok(out)
}

/// Records a person's decision on a waiting node (`weft approve|reject|provide`). Refused
/// (nothing written) when the run has finished or is being cancelled, when the node is not
/// waiting, or when the decision does not fit the wait (`check_decision`).
pub fn decide(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    request: &DecisionRequest,
) -> Result<InboxReceipt, EngineError> {
    append_inbox(store, run_id, |log| {
        let events = &log.root;
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
        // A node inside a fragment instance is named by its address (`work[3].review`).
        let (scope, node) = match super::split_address(&request.node) {
            Some((path, node)) => (Some(path), node),
            None => (None, request.node.as_str()),
        };
        let scoped;
        let waits = match scope {
            Some(path) => {
                let records = crate::run_log::scope_records(&log.records, path);
                if records.is_empty() {
                    return Err(EngineError::Refused(vec![format!(
                        "run {run_id} has no instance `{path}` (`{}` names node `{node}` of the loop iteration, map item or subgraph child `{path}`)",
                        request.node
                    )]));
                }
                scoped = decode(&records)?;
                open_waits(&scoped)
            }
            None => open_waits(events),
        };
        let Some(wait) = waits.iter().find(|w| w.waiting.node == node && w.is_open()) else {
            let mut all = open_waits(events);
            all.extend(instance_waits(&log.records)?);
            let waiting: Vec<&str> = all
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
        Ok(Some(Inbox {
            event: RunEvent::HumanDecision(decision),
            scope: scope.map(str::to_string),
        }))
    })
}

/// Asks the run to stop (`weft cancel`): appends `cancel_requested` unless one is already
/// in the log (then nothing is written). Refused when the run has finished.
pub fn request_cancel(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    actor: &str,
    note: Option<&str>,
) -> Result<InboxReceipt, EngineError> {
    append_inbox(store, run_id, |log| {
        let events = &log.root;
        if let Some(status) = crate::events::finished_status(events) {
            return Err(EngineError::Refused(vec![format!(
                "run {run_id} has already finished ({status})"
            )]));
        }
        if cancel_requested(events).is_some() {
            return Ok(None);
        }
        Ok(Some(Inbox {
            event: RunEvent::CancelRequested {
                actor: actor.to_string(),
                note: note.map(str::to_string),
            },
            scope: None,
        }))
    })
}

/// The open waits of a stored run (for `weft status` and `weft run`'s report): the root
/// scope's, then, while the run has not finished, those inside fragment instances, by
/// address (`work[3].review`; a cancel settles a waiting container and leaves its
/// instances as they were).
pub fn waits_of(
    store: &dyn weft_store::RunStore,
    run_id: &str,
) -> Result<Vec<OpenWait>, EngineError> {
    let (log, _) = read_log(store, run_id)?;
    let mut waits = open_waits(&log.root);
    if crate::events::finished_status(&log.root).is_none() {
        waits.extend(instance_waits(&log.records)?);
    }
    Ok(waits)
}

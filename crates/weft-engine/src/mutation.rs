//! Changing the graph of a live run: the `graph_mutated` inbox event (`docs/engine.md` §2e).
//!
//! Another process (later the org runtime) submits a mutation with [`submit`]: it is checked
//! against the run's state as the log says it is now, then appended as an inbox event, like a
//! person's decision. The driver applies it through `weft-core` where the log has it (at its
//! next append or inbox read), and a replay, a resume and the run record apply it at the same
//! place. A mutation the scheduler refuses there (the run moved on between the check and the
//! driver's read: the node has started) changes nothing, the same way in all of them, so the
//! log stays the whole truth.
//!
//! This first vocabulary changes existing nodes only (cancel a node that has not started, add
//! an edge between two nodes): a node added to a live run also needs a task the driver can
//! run, which the typed task model will bring.

use weft_core::{Event, Scheduler};

use crate::EngineError;
use crate::events::RunEvent;
use crate::human::InboxReceipt;

pub use crate::graph_change::{GraphMutation, LoggedEdge, MUTATION_FORMAT};

/// Submits a mutation to a run (`actor`: who asks). Refused, with nothing written, when the
/// run has finished, when an id names no node, or when the scheduler would refuse it in the
/// state the log shows now (the node has started, the edge closes a cycle, …).
pub fn submit(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    actor: &str,
    mutation: GraphMutation,
) -> Result<InboxReceipt, EngineError> {
    crate::human::append_root_inbox(store, run_id, |records, events| {
        if let Some(status) = crate::events::finished_status(events) {
            return Err(EngineError::Refused(vec![format!(
                "run {run_id} has already finished ({status})"
            )]));
        }
        let mut sched = current_scheduler(records, events)?;
        let core = mutation
            .to_core(sched.graph())
            .map_err(|id| EngineError::Refused(vec![format!("run {run_id} has no node `{id}`")]))?;
        sched
            .apply(&Event::Mutate(core))
            .map_err(|e| EngineError::Refused(vec![format!("the mutation was refused: {e}")]))?;
        Ok(Some(RunEvent::GraphMutated {
            v: MUTATION_FORMAT,
            actor: actor.to_string(),
            mutation: mutation.clone(),
        }))
    })
}

/// The root scope's scheduler as the log stands: the document of `run_started`, adapted,
/// with every root event replayed.
fn current_scheduler(
    records: &[weft_store::EventRecord],
    events: &[RunEvent],
) -> Result<Scheduler, EngineError> {
    let refused = |why: &str| EngineError::Refused(vec![why.to_string()]);
    let Some(RunEvent::RunStarted { graph, .. }) = events.first() else {
        return Err(refused("the run has not started"));
    };
    let root = graph
        .as_object()
        .ok_or_else(|| refused("the run's log does not hold its document (written before v1)"))?;
    let adapted = crate::adapter::adapt_root(root)?;
    let options = crate::events::recorded_options(&events[0])
        .ok_or_else(|| refused("the run has not started"))?;
    crate::events::replay_scope(adapted.graph, options, records)
        .map_err(|e| EngineError::Internal(format!("replay: {e}")))
}

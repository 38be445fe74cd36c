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

use serde::{Deserialize, Serialize};
use weft_core::{Action, EdgeKind, Event, Mutation, ProtocolError, Scheduler, WorkGraph};

use crate::EngineError;
use crate::events::RunEvent;
use crate::human::InboxReceipt;

/// Version of the `graph_mutated` payload (`graph_mutated.v`).
pub const MUTATION_FORMAT: u32 = 1;

/// One graph change, as logged: nodes by id (the root scope's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum GraphMutation {
    /// Cancel a node that has not started, and every node reachable only through it
    /// (`weft_core::Mutation::CancelNode`).
    CancelNode { node: String },
    /// Add an edge into a pending node (`weft_core::Mutation::AddEdge`); an edge that
    /// would close a cycle is refused.
    AddEdge {
        from: String,
        to: String,
        edge: LoggedEdge,
    },
}

/// The kinds of edge a mutation may add: unguarded ones (a guard needs an expression the
/// document does not have).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoggedEdge {
    Sequence,
    OnFailure,
}

impl GraphMutation {
    /// The scheduler's mutation, or the id that names no node of `graph`.
    pub fn to_core(&self, graph: &WorkGraph) -> Result<Mutation, String> {
        let find = |id: &str| graph.find(id).ok_or_else(|| id.to_string());
        Ok(match self {
            GraphMutation::CancelNode { node } => Mutation::CancelNode { node: find(node)? },
            GraphMutation::AddEdge { from, to, edge } => Mutation::AddEdge {
                from: find(from)?,
                to: find(to)?,
                kind: match edge {
                    LoggedEdge::Sequence => EdgeKind::Sequence,
                    LoggedEdge::OnFailure => EdgeKind::OnFailure,
                },
                guarded: false,
            },
        })
    }
}

/// Applies the scheduler event of a logged event. A refused `graph_mutated` changes nothing
/// and is not an error: the driver, a resume and a replay refuse it alike.
pub(crate) fn apply_logged(
    sched: &mut Scheduler,
    logged: &RunEvent,
    event: &Event,
) -> Result<Vec<Action>, ProtocolError> {
    match sched.apply(event) {
        Err(_) if matches!(logged, RunEvent::GraphMutated { .. }) => Ok(Vec::new()),
        result => result,
    }
}

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

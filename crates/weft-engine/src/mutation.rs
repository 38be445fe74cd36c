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
//! A node a mutation adds (`add_node`, `plan`, `split`, `merge`) is untrusted input, checked
//! as a document's node is before it is logged: the scheduler takes it (ids unique, every
//! `after` resolved, no cycle: a plan's refusal names every unresolved name and every
//! cycle), the validator finds no error in it (AGS schema, references, expressions: run on
//! a document of the new nodes and the nodes they read, [`check_new_nodes`]), and it
//! prepares into a task as the preflight prepares one. Mutations change the root scope
//! only: fragment instances stay static.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value, json};
use weft_core::Scheduler;

use crate::EngineError;
use crate::events::RunEvent;
use crate::human::InboxReceipt;

pub use crate::graph_change::{
    After, GraphMutation, LoggedEdge, LoggedShape, MUTATION_FORMAT, NewNode, PlannedNode,
};

/// Submits a mutation to a run (`actor`: who asks). Refused, with nothing written, when the
/// run has finished, when an id names no node, when a new node fails the checks a
/// document's node must pass, or when the scheduler would refuse it in the state the log
/// shows now (the node has started, the edge closes a cycle, …). Every reason is reported.
pub fn submit(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    actor: &str,
    mutation: GraphMutation,
) -> Result<InboxReceipt, EngineError> {
    // The event owns the mutation; each check (one per read of the log) is lent it.
    let mut event = RunEvent::GraphMutated {
        v: MUTATION_FORMAT,
        actor: actor.to_string(),
        mutation,
    };
    crate::human::append_root_inbox(store, run_id, &mut event, |records, events, event| {
        if let Some(status) = crate::events::finished_status(events) {
            return Err(EngineError::Refused(vec![format!(
                "run {run_id} has already finished ({status})"
            )]));
        }
        let RunEvent::GraphMutated { mutation, .. } = event else {
            return Err(EngineError::Internal("a mutation's event".into()));
        };
        let mut state = current_state(records, events)?;
        let refusals = check(run_id, &mut state, mutation);
        if !refusals.is_empty() {
            return Err(EngineError::Refused(refusals));
        }
        Ok(())
    })
}

/// The root scope as the log stands: its scheduler, the document of `run_started`, and
/// the AGS objects of the nodes mutations added (by id).
struct RootState<'l> {
    sched: Scheduler,
    doc: &'l Map<String, Value>,
    added: HashMap<&'l str, &'l Map<String, Value>>,
}

impl RootState<'_> {
    /// The AGS object of a node of the graph (declared or added).
    fn object_of(&self, id: &str) -> Option<&Map<String, Value>> {
        self.added.get(id).copied().or_else(|| {
            self.doc
                .get("nodes")
                .and_then(|n| n.get(id))
                .and_then(Value::as_object)
        })
    }
}

/// Every reason `mutation` cannot be logged now; empty when it can. Applies it to
/// `state`'s scheduler (a copy of the run's, rebuilt for the check). The mutation is lent
/// to the validator and comes back as it was.
fn check(run_id: &str, state: &mut RootState, mutation: &mut GraphMutation) -> Vec<String> {
    let graph = state.sched.graph();
    let unknown: Vec<String> = named_ids(mutation)
        .into_iter()
        .filter(|id| graph.find(id).is_none())
        .map(|id| format!("run {run_id} has no node `{id}`"))
        .collect();
    if !unknown.is_empty() {
        return unknown;
    }
    let event = match mutation.to_event(graph) {
        Ok(e) => e,
        Err(why) => return vec![format!("the mutation was refused: {why}")],
    };
    let before = graph.node_count();
    if let Err(e) = state.sched.apply(&event) {
        return vec![format!("the mutation was refused: {e}")];
    }
    let mut refusals = crate::run::check_added(&mutation.new_nodes(), state.doc);
    refusals.extend(check_new_nodes(state, mutation, before));
    refusals
}

/// The existing node ids a mutation names (a plan's `after` names are the scheduler's to
/// resolve: it reports every one that resolves nowhere).
fn named_ids(mutation: &GraphMutation) -> Vec<&str> {
    match mutation {
        GraphMutation::CancelNode { node } | GraphMutation::Split { node, .. } => vec![node],
        GraphMutation::AddEdge { from, to, .. } => vec![from, to],
        GraphMutation::Merge { a, b, .. } => vec![a, b],
        GraphMutation::AddNode { after, .. } => after.iter().map(|a| a.from.as_str()).collect(),
        GraphMutation::Plan { .. } | GraphMutation::Hold | GraphMutation::Release => Vec::new(),
    }
}

/// The validator's errors in the new nodes: it runs on a document of the run's graph-level
/// members (params, context, defaults, policy…), the new nodes wired as the scheduler now
/// has them (`depends_on`, on_failure `edges`), and the existing nodes they are wired to or
/// name in a string (their own edges left out, so only the new nodes are judged).
///
/// The new nodes' objects are moved into that document, not copied (a plan of 10,000 nodes
/// spent 8 ms on the copies), and moved back once it is judged, as they were. Should one
/// not come back (it cannot), the mutation is refused: nothing is logged without it.
fn check_new_nodes(state: &RootState, mutation: &mut GraphMutation, before: usize) -> Vec<String> {
    let mut new = mutation.new_nodes_mut();
    if new.is_empty() {
        return Vec::new();
    }
    let (doc, lent) = lend(state, &mut new, before);
    let g = state.sched.graph();
    // Only errors refuse a node: the advisory passes are left out.
    let mut refusals: Vec<String> = weft_ags::validate::validate_layers(&doc)
        .into_iter()
        .filter(|f| f.severity == weft_ags::diagnostic::Severity::Error)
        .filter(|f| {
            f.pointer
                .strip_prefix("/nodes/")
                .map(|rest| rest.split('/').next().unwrap_or(rest))
                .is_some_and(|id| g.find(id).is_some_and(|i| i >= before))
        })
        .map(|f| format!("{} {}: {}", f.code.as_str(), f.pointer, f.message))
        .collect();
    refusals.extend(give_back(doc, &mut new, lent));
    refusals
}

/// The validator's document of [`check_new_nodes`], the new nodes' objects moved into it
/// and wired; with how each was wired (`None`: not lent).
fn lend(
    state: &RootState,
    new: &mut [&mut NewNode],
    before: usize,
) -> (Value, Vec<Option<Wiring>>) {
    let g = state.sched.graph();
    // The mutation's nodes are those the scheduler appended to the graph; the nodes it
    // had before keep their indices.
    let existing = |id: &str| g.find(id).is_some_and(|i| i < before);
    let mut nodes = Map::with_capacity(new.len());
    let mut edges = Vec::new();
    let mut entries = Vec::new();
    let mut stubs: BTreeSet<String> = BTreeSet::new();
    let mut lent: Vec<Option<Wiring>> = Vec::with_capacity(new.len());
    for n in new.iter_mut() {
        let serde_json::map::Entry::Vacant(slot) = nodes.entry(n.id.clone()) else {
            // The scheduler refuses a repeated id before this; the object is not lent.
            lent.push(None);
            continue;
        };
        let mut obj = std::mem::take(&mut n.node);
        stubs.extend(read_ids(obj.values()).into_iter().filter(|id| existing(id)));
        let mut depends = Vec::new();
        let mut on_failure = false;
        if let Some(i) = g.find(&n.id).filter(|&i| i >= before) {
            for &e in g.incoming(i) {
                let edge = g.edge(e);
                let from = &g.node(edge.from).id;
                if edge.from < before {
                    stubs.insert(from.clone());
                }
                if edge.kind == weft_core::EdgeKind::OnFailure {
                    on_failure = true;
                    edges.push(json!({"from": from, "to": n.id, "kind": "on_failure"}));
                } else {
                    depends.push(Value::String(from.clone()));
                }
            }
        }
        let wiring = if depends.is_empty() {
            Wiring::AsItWas
        } else {
            Wiring::Replaced(obj.insert("depends_on".into(), Value::Array(depends)))
        };
        if !on_failure && !obj.contains_key("depends_on") {
            entries.push(Value::String(n.id.clone()));
        }
        lent.push(Some(wiring));
        slot.insert(Value::Object(obj));
    }
    // The existing nodes they are wired to or read, copied (a few), their own edges left
    // out so that only the new nodes are judged.
    for id in &stubs {
        if let Some(obj) = state.object_of(id) {
            let mut stub = obj.clone();
            stub.remove("depends_on");
            entries.push(Value::String(id.clone()));
            nodes.insert(id.clone(), Value::Object(stub));
        }
    }
    let mut doc = crate::run_log::members_except(
        state.doc,
        &[
            "nodes",
            "edges",
            "entrypoints",
            "outputs",
            "success",
            "fragments",
        ],
    );
    doc.insert("entrypoints".into(), Value::Array(entries));
    doc.insert("nodes".into(), Value::Object(nodes));
    doc.insert("edges".into(), Value::Array(edges));
    (Value::Object(doc), lent)
}

/// Moves the lent objects of `doc` back into the new nodes, their wiring undone; a refusal
/// for each that does not come back (it cannot: then nothing is logged without it).
fn give_back(doc: Value, new: &mut [&mut NewNode], lent: Vec<Option<Wiring>>) -> Vec<String> {
    let nodes = match doc {
        Value::Object(mut doc) => match doc.remove("nodes") {
            Some(Value::Object(nodes)) => nodes,
            _ => Map::new(),
        },
        _ => Map::new(),
    };
    // The lent objects come first in the document's nodes, in the order they were lent
    // (the workspace's `serde_json` keeps members in insertion order): no lookup by id.
    let mut back = nodes.into_iter();
    let mut lost = Vec::new();
    for (n, wiring) in new.iter_mut().zip(lent) {
        let Some(wiring) = wiring else {
            continue;
        };
        match back.next() {
            Some((id, Value::Object(mut obj))) if id == n.id => {
                match wiring {
                    Wiring::AsItWas => {}
                    // In place: the member keeps its position in the object.
                    Wiring::Replaced(Some(own)) => {
                        obj.insert("depends_on".into(), own);
                    }
                    // Inserted last: removing it leaves the others' order as it was.
                    Wiring::Replaced(None) => {
                        obj.shift_remove("depends_on");
                    }
                }
                n.node = obj;
            }
            _ => lost.push(format!("node `{}` was lost by its check", n.id)),
        }
    }
    lost
}

/// How [`check_new_nodes`] wired a new node's object for the validator.
enum Wiring {
    /// Not touched: the node has no incoming sequence edge.
    AsItWas,
    /// `depends_on` set to its incoming sequence edges; what the member held before.
    Replaced(Option<Value>),
}

/// The ids a node's strings name as `nodes.<id>` (the validator is given those nodes, so
/// a reference it makes to an existing node resolves).
fn read_ids<'v>(members: impl Iterator<Item = &'v Value>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack: Vec<&Value> = members.collect();
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                for (k, _) in s.match_indices("nodes.") {
                    let id: String = s[k + "nodes.".len()..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                        .collect();
                    if !id.is_empty() {
                        out.insert(id);
                    }
                }
            }
            Value::Array(items) => stack.extend(items),
            Value::Object(members) => stack.extend(members.values()),
            _ => {}
        }
    }
    out
}

/// The root scope's state as the log stands: the document of `run_started`, adapted, with
/// every root event replayed, and the objects of the nodes the mutations added.
fn current_state<'l>(
    records: &[weft_store::EventRecord],
    events: &'l [RunEvent],
) -> Result<RootState<'l>, EngineError> {
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
    // The root's events are decoded already: replayed as they are, not read again.
    let sched = if records.len() == events.len() {
        crate::events::replay_decoded(
            adapted.graph,
            options,
            records.iter().map(|r| r.seq).zip(events.iter()),
        )
    } else {
        crate::events::replay_scope(adapted.graph, options, records)
    }
    .map_err(|e| EngineError::Internal(format!("replay: {e}")))?;
    let added = crate::graph_change::added_objects(
        sched.graph(),
        events.iter().filter_map(|e| match e {
            RunEvent::GraphMutated { mutation, .. } => Some(mutation),
            _ => None,
        }),
    );
    Ok(RootState {
        sched,
        doc: root,
        added,
    })
}

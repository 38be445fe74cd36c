//! A live run's graph grows (`graph_mutated` `add_node`, `plan`, `split`, `merge`;
//! `docs/engine.md` §2e): the scheduler applies the mutation where the log has it, and the
//! driver then gives every node the graph gained its per-node state ([`Driver::push_slot`],
//! the one place the per-node state grows: its slot, task, reads, outputs, budget and
//! journal, together) and its task, prepared from the AGS
//! node object the mutation logged, as the preflight prepares a document's node.
//!
//! `mutation::submit` refuses a node that cannot be prepared before it is logged. A logged
//! node the driver still cannot run (written past `submit`, or a model node this driver's
//! agents cannot route) is not refused here: the scheduler has already taken it, exactly as
//! a replay does, so it settles `blocked` with the reason, and the log stays the whole
//! truth.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};
use weft_ags::model::{Node, obj_of};

use super::Driver;
use super::job::{Job, Shared, Work, prepare_shared};
use super::reads::{NodeReads, scan_by};
use crate::EngineError;
use crate::graph_change::{GraphMutation, NewNode};

/// What preparing an added node needs from the run's options (held by the driver, since
/// the options are not).
pub(super) struct Growth {
    pub(super) shared: Shared,
    pub(super) isolate: super::IsolateMode,
}

impl Growth {
    pub(super) fn of(options: &super::RunOptions) -> Growth {
        Growth {
            shared: Shared {
                workspace: options.project_dir.as_path().into(),
                checkers: Arc::clone(&options.checkers),
                criteria_wrapper: Arc::from(options.criteria_wrapper.clone()),
            },
            isolate: options.isolate,
        }
    }
}

/// Why a node cannot be added to a live run, beyond what preparing it refuses: the
/// refusals of the preflight that need no agent, and the root-scope-only rule.
pub(crate) fn added_node_refusal(job: &Job) -> Option<String> {
    if matches!(job.work, Work::Container(_)) {
        return Some(format!(
            "node `{}`: a map, loop or subgraph node cannot be added to a live run (fragment instances stay static)",
            job.id
        ));
    }
    super::preflight::check_escalation(job).err()
}

/// Prepares an added node as the preflight prepares a document's node, or says why not
/// (the checks that need no agent: `mutation::submit` calls this before logging).
pub(crate) fn prepare_added(
    new: &NewNode,
    index: usize,
    doc: &Map<String, Value>,
    shared: &Shared,
) -> Result<Job, String> {
    let node = Node {
        id: &new.id,
        index,
        obj: &new.node,
        pointer: format!("/nodes/{}", new.id),
    };
    let mut job = prepare_shared(&node, obj_of(doc, "defaults"), shared)?;
    job.expressions_yield_false = !super::expression_errors_fatal(doc);
    match added_node_refusal(&job) {
        Some(why) => Err(why),
        None => Ok(job),
    }
}

impl Driver<'_> {
    /// Grows every per-node vector by one node, all together (node index = its index in
    /// the scheduler's graph).
    pub(super) fn push_slot(&mut self, job: Arc<Job>, reads: NodeReads) {
        self.jobs.push(job);
        self.reads.push(reads);
        self.outputs.push(Arc::new(Map::new()));
        self.slots.push(super::slot::NodeSlot::new());
        self.budget.attempts.push(Vec::new());
        self.journal.push_node();
    }

    /// Every per-node vector holds `nodes` entries (checked after each growth in debug
    /// builds: the tests run them).
    fn slots_aligned(&self, nodes: usize) -> bool {
        [
            self.jobs.len(),
            self.reads.len(),
            self.outputs.len(),
            self.slots.len(),
            self.budget.attempts.len(),
            self.journal.nodes(),
        ]
        .iter()
        .all(|&n| n == nodes)
    }

    /// After a `graph_mutated` was applied to the scheduler: the nodes and edges the graph
    /// gained get their state, tasks and guards. A refused mutation gained nothing.
    pub(super) fn grow_to_graph(&mut self, mutation: &GraphMutation) -> Result<(), EngineError> {
        let (nodes, edges) = {
            let g = self.sched.graph();
            (g.node_count(), g.edge_count())
        };
        if self.jobs.len() < nodes {
            let doc = Arc::clone(&self.scope.doc);
            let defaults = obj_of(&doc, "defaults");
            let brought: HashMap<&str, &NewNode> = mutation
                .new_nodes()
                .into_iter()
                .map(|n| (n.id.as_str(), n))
                .collect();
            let ids: Vec<String> = {
                let g = self.sched.graph();
                (self.jobs.len()..nodes)
                    .map(|i| g.node(i).id.clone())
                    .collect()
            };
            for id in &ids {
                let i = self.jobs.len();
                let (job, reads) = match brought.get(id.as_str()) {
                    Some(new) => {
                        let graph = self.sched.graph();
                        let reads = scan_by(
                            new.node
                                .values()
                                .chain(defaults.into_iter().flat_map(|d| d.values())),
                            |id| graph.find(id),
                        );
                        (self.prepare_logged(new, i, &doc)?, reads)
                    }
                    None => (
                        self.blocked_job(id, i, &doc, "the mutation logged no node object for it")?,
                        NodeReads::Only(Vec::new()),
                    ),
                };
                self.push_slot(Arc::new(job), reads);
            }
        }
        debug_assert!(self.slots_aligned(nodes), "per-node state out of step");
        // Added edges are unguarded; a split's or merge's copy of a guarded edge keeps the
        // `when` of the edge it replaces.
        for k in self.edge_when.len()..edges {
            let when = self.copied_when(k);
            self.edge_when.push(when);
        }
        Ok(())
    }

    /// The task of a logged node: prepared, or `blocked` with the reason it cannot run.
    fn prepare_logged(
        &self,
        new: &NewNode,
        index: usize,
        doc: &Map<String, Value>,
    ) -> Result<Job, EngineError> {
        let prepared = prepare_added(new, index, doc, &self.growth.shared).and_then(|mut job| {
            job.isolated = self.growth.isolate.isolates(&job);
            super::preflight::check_model_node(&job, &self.agents)?;
            if let Some(why) = super::preflight::check_judges(&job, &self.agents).pop() {
                return Err(why);
            }
            Ok(job)
        });
        match prepared {
            Ok(job) => Ok(job),
            Err(why) => self.blocked_job(&new.id, index, doc, &why),
        }
    }

    /// A node that settles `blocked` with `why` when it starts.
    fn blocked_job(
        &self,
        id: &str,
        index: usize,
        doc: &Map<String, Value>,
        why: &str,
    ) -> Result<Job, EngineError> {
        let empty = Map::new();
        let node = Node {
            id,
            index,
            obj: &empty,
            pointer: format!("/nodes/{id}"),
        };
        // An empty task always prepares.
        let mut job = prepare_shared(&node, None, &self.growth.shared).map_err(|e| {
            EngineError::Internal(format!("an empty task node did not prepare: {e}"))
        })?;
        job.expressions_yield_false = !super::expression_errors_fatal(doc);
        job.work = Work::Blocked(format!("node `{id}` cannot run: {why}"));
        Ok(job)
    }

    /// The `when` of the guarded edge that guarded edge `edge` (new) copies: a retired
    /// edge of the same kind with the same source or target.
    fn copied_when(&self, edge: usize) -> Option<String> {
        let g = self.sched.graph();
        let new = g.edge(edge);
        if !new.guarded {
            return None;
        }
        (0..self.edge_when.len()).rev().find_map(|r| {
            let old = g.edge(r);
            let same = old.guarded
                && !g.is_edge_live(r)
                && old.kind == new.kind
                && (old.from == new.from || old.to == new.to);
            same.then(|| self.edge_when[r].clone()).flatten()
        })
    }
}

/// `mutation::submit`'s check of the nodes it is asked to add: each prepared as the driver
/// will prepare it (the checks that need no agent; a model node's route is the driver's to
/// check, with its agents). Every node's refusal, in order.
pub(crate) fn check_added(new: &[&NewNode], doc: &Map<String, Value>) -> Vec<String> {
    let shared = Shared {
        workspace: std::path::Path::new(".").into(),
        checkers: Arc::default(),
        criteria_wrapper: Arc::from(Vec::new()),
    };
    new.iter()
        .filter_map(|node| prepare_added(node, 0, doc, &shared).err())
        .collect()
}

//! An atomic plan: many new nodes and their incoming edges, added all together or not at all.
//!
//! Edges name their source by id: a node of the same plan (in any order, so a plan may list
//! a task before the tasks it waits for) or a live node already in the graph. A plan only
//! adds nodes and edges *into* its own nodes, so a cycle can only run through plan nodes;
//! wiring an existing pending node after a plan node is an `add_edge` that follows.
//!
//! Validation reports everything at once, not the first problem: every unresolved name,
//! every duplicate id, every cycle (each strongly connected set of plan nodes), and every
//! node or edge that breaks a rule. Nothing is written until all of it passes. The plan's
//! nodes are then appended in a topological order of their own (ties by plan order) after
//! every existing node, so the existing order is untouched: O(plan size · log V).

use super::check;
use super::{EdgeKind, EdgeSpec, GraphError, NodeSpec, WorkGraph};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;

/// The nodes to add, in the order their indices are assigned.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub nodes: Vec<PlanNode>,
}

/// One new node and its incoming edges.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanNode {
    pub spec: NodeSpec,
    pub after: Vec<PlanEdge>,
}

/// An incoming edge of a plan node, its source named by id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanEdge {
    pub from: String,
    pub kind: EdgeKind,
    pub guarded: bool,
}

impl PlanEdge {
    /// An edge with the guard its kind usually has (conditional guarded, others not).
    pub fn new(from: impl Into<String>, kind: EdgeKind) -> Self {
        PlanEdge {
            from: from.into(),
            kind,
            guarded: kind == EdgeKind::Conditional,
        }
    }
}

/// A name a plan edge uses that is neither a node of the plan nor a node of the graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unresolved {
    /// The plan node whose edge names it.
    pub node: String,
    pub name: String,
}

/// Why a plan was refused: all of it. Every list is in plan order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanError {
    pub unresolved: Vec<Unresolved>,
    /// Ids used twice in the plan, or already used by a node of the graph.
    pub duplicate_ids: Vec<String>,
    /// Each a set of plan nodes (ids, in plan order) that wait on one another.
    pub cycles: Vec<Vec<String>>,
    /// Other broken rules (guard, join, entry, retired source), one per node or edge.
    pub invalid: Vec<GraphError>,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if !self.unresolved.is_empty() {
            let names: Vec<String> = self
                .unresolved
                .iter()
                .map(|u| format!("`{}` (in `{}`)", u.name, u.node))
                .collect();
            parts.push(format!("unresolved names: {}", names.join(", ")));
        }
        if !self.duplicate_ids.is_empty() {
            parts.push(format!("duplicate ids: {}", self.duplicate_ids.join(", ")));
        }
        for cycle in &self.cycles {
            parts.push(format!("cycle through {}", cycle.join(", ")));
        }
        for e in &self.invalid {
            parts.push(e.to_string());
        }
        write!(
            f,
            "the plan was refused, nothing was added: {}",
            parts.join("; ")
        )
    }
}

impl std::error::Error for PlanError {}

impl PlanError {
    fn is_empty(&self) -> bool {
        self.unresolved.is_empty()
            && self.duplicate_ids.is_empty()
            && self.cycles.is_empty()
            && self.invalid.is_empty()
    }
}

/// Where a plan edge's source is.
#[derive(Clone, Copy)]
enum Source {
    Plan(usize),
    Graph(usize),
}

impl WorkGraph {
    /// Adds every node and edge of `plan`, or nothing (`GraphError::Plan` with every reason).
    pub fn add_plan(&mut self, plan: Plan) -> Result<super::Change, GraphError> {
        let sources = self
            .check_plan(&plan)
            .map_err(|e| GraphError::Plan(Box::new(e)))?;
        // Validated: apply, nodes in plan order, labels in the plan's own topological order.
        let mut change = super::Change::default();
        let first = self.nodes.len();
        let order = plan_order(&plan, &sources);
        // The plan is owned: its specs move into the graph (no copy per node).
        let mut afters = Vec::with_capacity(plan.nodes.len());
        for node in plan.nodes {
            change.added_nodes.push(self.push_node(node.spec));
            afters.push(node.after);
        }
        for i in order {
            self.append_label(first + i, &mut change);
        }
        for (i, after) in afters.iter().enumerate() {
            for (edge, source) in after.iter().zip(&sources[i]) {
                let from = match *source {
                    Source::Plan(j) => first + j,
                    Source::Graph(n) => n,
                };
                change.added_edges.push(self.push_edge(EdgeSpec {
                    from,
                    to: first + i,
                    kind: edge.kind,
                    guarded: edge.guarded,
                }));
            }
        }
        Ok(change)
    }

    /// Every check of a plan; on success, each edge's resolved source.
    fn check_plan(&self, plan: &Plan) -> Result<Vec<Vec<Source>>, PlanError> {
        let mut err = PlanError::default();
        let first = self.nodes.len();
        let mut local: HashMap<&str, usize> = HashMap::with_capacity(plan.nodes.len());
        for (i, node) in plan.nodes.iter().enumerate() {
            let id = node.spec.id.as_str();
            if self.by_id.contains_key(id) || local.insert(id, i).is_some() {
                err.duplicate_ids.push(id.to_string());
            }
        }
        let mut sources = Vec::with_capacity(plan.nodes.len());
        let mut edge_index = self.edges.len();
        for (i, node) in plan.nodes.iter().enumerate() {
            let mut resolved = Vec::with_capacity(node.after.len());
            let mut kinds = Vec::with_capacity(node.after.len());
            for edge in &node.after {
                let spec = EdgeSpec {
                    from: 0,
                    to: first + i,
                    kind: edge.kind,
                    guarded: edge.guarded,
                };
                if let Err(e) = check::guard(edge_index, &spec) {
                    err.invalid.push(e);
                }
                match local.get(edge.from.as_str()) {
                    Some(&j) => {
                        resolved.push(Source::Plan(j));
                        kinds.push((first + j, edge.kind));
                    }
                    None => match self.by_id.get(edge.from.as_str()) {
                        Some(&n) => {
                            if let Err(e) = self.check_endpoint(edge_index, n) {
                                err.invalid.push(e);
                            }
                            resolved.push(Source::Graph(n));
                            kinds.push((n, edge.kind));
                        }
                        None => err.unresolved.push(Unresolved {
                            node: node.spec.id.clone(),
                            name: edge.from.clone(),
                        }),
                    },
                }
                edge_index += 1;
            }
            let first_edge = (!node.after.is_empty()).then_some(edge_index - node.after.len());
            if let Err(e) = check::node(first + i, &node.spec, node.after.len(), first_edge) {
                err.invalid.push(e);
            }
            if let Err(e) = check::runnable(&node.spec, kinds.into_iter()) {
                err.invalid.push(e);
            }
            sources.push(resolved);
        }
        // Cycles over the names that did resolve, so they are reported together with the
        // names that did not.
        err.cycles = plan_cycles(plan, &sources);
        if err.is_empty() {
            Ok(sources)
        } else {
            Err(err)
        }
    }
}

/// The plan-local successors of each plan node.
fn local_successors(plan: &Plan, sources: &[Vec<Source>]) -> Vec<Vec<usize>> {
    let mut succ = vec![Vec::new(); plan.nodes.len()];
    for (i, list) in sources.iter().enumerate() {
        for source in list {
            if let Source::Plan(j) = *source {
                succ[j].push(i);
            }
        }
    }
    succ
}

/// Kahn's order of the plan's nodes over their local edges, ties by plan index (the plan
/// has been checked acyclic).
fn plan_order(plan: &Plan, sources: &[Vec<Source>]) -> Vec<usize> {
    let succ = local_successors(plan, sources);
    let mut indegree = vec![0usize; plan.nodes.len()];
    for list in &succ {
        for &to in list {
            indegree[to] += 1;
        }
    }
    let mut heap: BinaryHeap<Reverse<usize>> = (0..plan.nodes.len())
        .filter(|&i| indegree[i] == 0)
        .map(Reverse)
        .collect();
    let mut order = Vec::with_capacity(plan.nodes.len());
    while let Some(Reverse(i)) = heap.pop() {
        order.push(i);
        for &to in &succ[i] {
            indegree[to] -= 1;
            if indegree[to] == 0 {
                heap.push(Reverse(to));
            }
        }
    }
    order
}

/// Every cycle among plan nodes: the strongly connected sets of more than one node, and
/// nodes that wait on themselves (Tarjan's algorithm, iterative so a long plan cannot
/// overflow the stack).
fn plan_cycles(plan: &Plan, sources: &[Vec<Source>]) -> Vec<Vec<String>> {
    let succ = local_successors(plan, sources);
    let mut t = Tarjan::new(succ.len());
    let mut components: Vec<Vec<usize>> = Vec::new();
    for root in 0..succ.len() {
        if t.index[root] != UNVISITED {
            continue;
        }
        t.visit(root);
        while let Some(&(v, child)) = t.calls.last() {
            if let Some(&w) = succ[v].get(child) {
                if let Some(top) = t.calls.last_mut() {
                    top.1 += 1;
                }
                if t.index[w] == UNVISITED {
                    t.visit(w);
                } else if t.on_stack[w] {
                    t.low[v] = t.low[v].min(t.index[w]);
                }
                continue;
            }
            t.calls.pop();
            if let Some(&(u, _)) = t.calls.last() {
                t.low[u] = t.low[u].min(t.low[v]);
            }
            if t.low[v] == t.index[v] {
                let mut component = Vec::new();
                while let Some(w) = t.stack.pop() {
                    t.on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 || succ[v].contains(&v) {
                    component.sort_unstable();
                    components.push(component);
                }
            }
        }
    }
    components.sort_unstable_by_key(|c| c[0]);
    components
        .into_iter()
        .map(|c| {
            c.into_iter()
                .map(|i| plan.nodes[i].spec.id.clone())
                .collect()
        })
        .collect()
}

const UNVISITED: usize = usize::MAX;

/// The state of Tarjan's algorithm, with an explicit call stack of (node, next child).
struct Tarjan {
    index: Vec<usize>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    calls: Vec<(usize, usize)>,
    next: usize,
}

impl Tarjan {
    fn new(n: usize) -> Self {
        Tarjan {
            index: vec![UNVISITED; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            calls: Vec::new(),
            next: 0,
        }
    }

    fn visit(&mut self, v: usize) {
        self.index[v] = self.next;
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        self.calls.push((v, 0));
    }
}

//! Building a [`WorkGraph`]: the invariants and the rank.
//!
//! A built graph goes through [`WorkGraph::assemble`], which checks every invariant (with
//! the per-node and per-edge rules of `check.rs`, which mutations share) and labels the
//! nodes in Kahn's order. It is O(V + E log V), paid once per build; mutations never rebuild.

use super::check;
use super::order::GAP;
use super::{EdgeSpec, GraphError, NodeSpec, WorkGraph};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

/// Collects nodes and edges, then validates them in [`GraphBuilder::build`].
#[derive(Clone, Debug, Default)]
pub struct GraphBuilder {
    nodes: Vec<NodeSpec>,
    edges: Vec<EdgeSpec>,
}

impl GraphBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty builder with room for `nodes` nodes and `edges` edges (no regrowth while a
    /// large graph is declared).
    pub fn with_capacity(nodes: usize, edges: usize) -> Self {
        GraphBuilder {
            nodes: Vec::with_capacity(nodes),
            edges: Vec::with_capacity(edges),
        }
    }

    /// Declares a node; returns its index (declaration order).
    pub fn node(&mut self, spec: NodeSpec) -> usize {
        self.nodes.push(spec);
        self.nodes.len() - 1
    }

    /// Declares an edge; returns its index.
    pub fn edge(&mut self, spec: EdgeSpec) -> usize {
        self.edges.push(spec);
        self.edges.len() - 1
    }

    /// Validates and builds the graph.
    pub fn build(self) -> Result<WorkGraph, GraphError> {
        let (n, e) = (self.nodes.len(), self.edges.len());
        WorkGraph::assemble(self.nodes, self.edges, vec![true; n], vec![true; e])
    }
}

impl WorkGraph {
    /// Checks every invariant and computes adjacency, groups and labels.
    pub(crate) fn assemble(
        nodes: Vec<NodeSpec>,
        edges: Vec<EdgeSpec>,
        node_live: Vec<bool>,
        edge_live: Vec<bool>,
    ) -> Result<WorkGraph, GraphError> {
        // The graph's id index, built once (not a borrowed map first, then copied).
        let mut by_id: HashMap<String, usize> = HashMap::with_capacity(nodes.len());
        for (i, node) in nodes.iter().enumerate() {
            if let Some(&first) = by_id.get(node.id.as_str()) {
                return Err(GraphError::DuplicateId {
                    id: node.id.clone(),
                    first,
                    second: i,
                });
            }
            by_id.insert(node.id.clone(), i);
        }
        let mut outgoing = vec![Vec::new(); nodes.len()];
        let mut incoming = vec![Vec::new(); nodes.len()];
        for (i, edge) in edges.iter().enumerate() {
            if !edge_live[i] {
                continue;
            }
            for node in [edge.from, edge.to] {
                if node >= nodes.len() {
                    return Err(GraphError::UnknownEndpoint { edge: i, node });
                }
                if !node_live[node] {
                    return Err(GraphError::RetiredEndpoint { edge: i, node });
                }
            }
            check::guard(i, edge)?;
            outgoing[edge.from].push(i);
            incoming[edge.to].push(i);
        }
        for (i, node) in nodes.iter().enumerate() {
            if node_live[i] {
                check::node(i, node, incoming[i].len(), incoming[i].first().copied())?;
            }
        }
        let kahn = kahn_order(&nodes, &edges, &node_live, &outgoing, &incoming)?;
        let mut rank = vec![u64::MAX; nodes.len()];
        let labelled: Vec<(u64, usize)> = kahn
            .iter()
            .enumerate()
            .map(|(i, &node)| ((i as u64 + 1).saturating_mul(GAP), node))
            .collect();
        for &(label, node) in &labelled {
            rank[node] = label;
        }
        // Already sorted: the map is built in bulk, not by one insert per node.
        let order: BTreeMap<u64, usize> = labelled.into_iter().collect();
        let mut group_ids: HashMap<String, u32> = HashMap::new();
        let mut group = Vec::with_capacity(nodes.len());
        for node in &nodes {
            group.push(node.concurrency_group.as_ref().map(|g| {
                let next = group_ids.len() as u32;
                *group_ids.entry(g.clone()).or_insert(next)
            }));
        }
        Ok(WorkGraph {
            nodes,
            edges,
            node_live,
            edge_live,
            outgoing,
            incoming,
            rank,
            order,
            group,
            group_ids,
            by_id,
        })
    }
}

/// Kahn's algorithm over live nodes with a min-heap of declaration indices: the normative
/// tie-break (topological order first, then declaration order).
fn kahn_order(
    nodes: &[NodeSpec],
    edges: &[EdgeSpec],
    live: &[bool],
    outgoing: &[Vec<usize>],
    incoming: &[Vec<usize>],
) -> Result<Vec<usize>, GraphError> {
    let mut indegree: Vec<usize> = incoming.iter().map(Vec::len).collect();
    let mut heap: BinaryHeap<Reverse<usize>> = (0..nodes.len())
        .filter(|&i| live[i] && indegree[i] == 0)
        .map(Reverse)
        .collect();
    let live_count = live.iter().filter(|&&l| l).count();
    let mut order = Vec::with_capacity(live_count);
    let mut placed = vec![false; nodes.len()];
    while let Some(Reverse(i)) = heap.pop() {
        placed[i] = true;
        order.push(i);
        for &e in &outgoing[i] {
            let to = edges[e].to;
            indegree[to] -= 1;
            if indegree[to] == 0 {
                heap.push(Reverse(to));
            }
        }
    }
    if order.len() < live_count {
        let nodes = (0..nodes.len())
            .filter(|&i| live[i] && !placed[i])
            .collect();
        return Err(GraphError::Cycle { nodes });
    }
    Ok(order)
}

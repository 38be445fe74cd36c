//! The invariants one node or one edge must keep, stated once for the builder and for every
//! mutation (which check only the nodes and edges they touch).

use super::{EdgeKind, EdgeSpec, GraphError, Join, NodeSpec, WorkGraph};

/// Sequence edges are unguarded, conditional edges guarded (AGS `AG103`).
pub(crate) fn guard(edge: usize, spec: &EdgeSpec) -> Result<(), GraphError> {
    let must_guard = match spec.kind {
        EdgeKind::Sequence => Some(false),
        EdgeKind::Conditional => Some(true),
        EdgeKind::OnFailure => None,
    };
    if must_guard.is_some_and(|g| g != spec.guarded) {
        return Err(GraphError::Guard {
            edge,
            kind: spec.kind,
            guarded: spec.guarded,
        });
    }
    Ok(())
}

/// An entry node has no incoming edge; `n_of(n)` needs `1 ≤ n ≤` incoming edges.
/// `first_incoming` is the index of the node's first incoming edge, if any.
pub(crate) fn node(
    index: usize,
    spec: &NodeSpec,
    incoming: usize,
    first_incoming: Option<usize>,
) -> Result<(), GraphError> {
    if spec.entry
        && let Some(edge) = first_incoming
    {
        return Err(GraphError::EntryHasIncoming { node: index, edge });
    }
    if let Join::NOf(n) = spec.join {
        if n == 0 {
            return Err(GraphError::JoinZero { node: index });
        }
        if n as usize > incoming {
            return Err(GraphError::JoinTooLarge {
                node: index,
                n,
                incoming,
            });
        }
    }
    Ok(())
}

/// A node a mutation creates or rewires must be able to run: its join must be meetable by
/// edges that can be active together. A source's sequence and conditional edges need it to
/// succeed and its on_failure edges need it to fail, so from one source at most the larger
/// of the two groups is ever active. (Under `on_node_failure: continue` a sequence edge from
/// a failed source is active too, but a mutation must not make a node depend on the policy.)
/// Built graphs are not held to this: a document may declare such a node, and the scheduler
/// skips it by the join rules.
pub(crate) fn runnable(
    spec: &NodeSpec,
    incoming: impl Iterator<Item = (usize, EdgeKind)>,
) -> Result<(), GraphError> {
    let mut by_source: Vec<(usize, bool)> = incoming
        .map(|(from, kind)| (from, kind == EdgeKind::OnFailure))
        .collect();
    let total = by_source.len();
    if total == 0 {
        return Ok(());
    }
    let needed = match spec.join {
        Join::All => total,
        Join::Any => 1,
        Join::NOf(n) => n as usize,
    };
    by_source.sort_unstable();
    let (mut possible, mut conflicted) = (0, None);
    for group in by_source.chunk_by(|x, y| x.0 == y.0) {
        let failure = group.iter().filter(|&&(_, f)| f).count();
        let success = group.len() - failure;
        possible += failure.max(success);
        if failure > 0 && success > 0 {
            conflicted.get_or_insert(group[0].0);
        }
    }
    match conflicted {
        Some(source) if possible < needed => Err(GraphError::JoinNeverMet {
            id: spec.id.clone(),
            needed,
            from: source,
        }),
        _ => Ok(()),
    }
}

impl WorkGraph {
    /// A live node, or why not.
    pub(crate) fn check_live(&self, node: usize) -> Result<(), GraphError> {
        if node >= self.nodes.len() {
            Err(GraphError::UnknownNode(node))
        } else if !self.node_live[node] {
            Err(GraphError::RetiredNode(node))
        } else {
            Ok(())
        }
    }

    /// An endpoint of (future) edge `edge` is an existing live node.
    pub(crate) fn check_endpoint(&self, edge: usize, node: usize) -> Result<(), GraphError> {
        if node >= self.nodes.len() {
            Err(GraphError::UnknownEndpoint { edge, node })
        } else if !self.node_live[node] {
            Err(GraphError::RetiredEndpoint { edge, node })
        } else {
            Ok(())
        }
    }

    /// The id is not used by any node the graph ever held.
    pub(crate) fn check_fresh_id(&self, id: &str, index: usize) -> Result<(), GraphError> {
        match self.by_id.get(id) {
            Some(&first) => Err(GraphError::DuplicateId {
                id: id.to_string(),
                first,
                second: index,
            }),
            None => Ok(()),
        }
    }

    /// Appends a node (no label, no edges yet).
    pub(crate) fn push_node(&mut self, spec: NodeSpec) -> usize {
        let index = self.nodes.len();
        self.by_id.insert(spec.id.clone(), index);
        let group = spec.concurrency_group.as_ref().map(|g| {
            let next = self.group_ids.len() as u32;
            *self.group_ids.entry(g.clone()).or_insert(next)
        });
        self.group.push(group);
        self.nodes.push(spec);
        self.node_live.push(true);
        self.outgoing.push(Vec::new());
        self.incoming.push(Vec::new());
        self.rank.push(u64::MAX);
        index
    }

    /// Appends an edge between live nodes.
    pub(crate) fn push_edge(&mut self, spec: EdgeSpec) -> usize {
        let index = self.edges.len();
        self.outgoing[spec.from].push(index);
        self.incoming[spec.to].push(index);
        self.edges.push(spec);
        self.edge_live.push(true);
        index
    }
}

//! The effective edge set of one scope (SPEC §8) and the graph algorithms over it.
//!
//! E = dedupe(explicit edges ∪ {(d → n, sequence) for d in n.depends_on}), keyed by
//! `(from, to, kind, when)`. Edges that name unknown nodes are left out (the validator
//! reports them); everything here is indexed by declaration position, so every order it
//! produces is deterministic.

use crate::model::{Node, Scope, str_of};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BinaryHeap, HashMap, HashSet};

/// Edge kinds (§8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    Sequence,
    Conditional,
    OnFailure,
}

impl EdgeKind {
    /// Parses a `kind` value; absent is `sequence`.
    pub fn parse(s: Option<&str>) -> Option<EdgeKind> {
        Some(match s {
            None | Some("sequence") => EdgeKind::Sequence,
            Some("conditional") => EdgeKind::Conditional,
            Some("on_failure") => EdgeKind::OnFailure,
            Some(_) => return None,
        })
    }

    /// The name used in documents.
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Sequence => "sequence",
            EdgeKind::Conditional => "conditional",
            EdgeKind::OnFailure => "on_failure",
        }
    }
}

/// Where an effective edge was declared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `depends_on` of the target node.
    DependsOn,
    /// `edges[i]`; the pointer is the edge's.
    Explicit { index: usize, pointer: String },
}

/// One effective edge, endpoints as node indices.
#[derive(Clone, Debug)]
pub struct Edge<'a> {
    pub from: usize,
    pub to: usize,
    pub kind: EdgeKind,
    pub when: Option<&'a str>,
    pub origin: Origin,
    /// Also declared the other way (both `depends_on` and `edges`): AG901.
    pub declared_twice: bool,
}

/// The nodes and effective edges of one scope.
#[derive(Clone, Debug)]
pub struct EdgeSet<'a> {
    /// Nodes in declaration order.
    pub nodes: Vec<Node<'a>>,
    /// Node id → index.
    pub index: FxHashMap<&'a str, usize>,
    /// Deduplicated effective edges.
    pub edges: Vec<Edge<'a>>,
    /// Outgoing edge indices per node.
    pub outgoing: Vec<Vec<usize>>,
    /// Incoming edge indices per node.
    pub incoming: Vec<Vec<usize>>,
}

impl<'a> EdgeSet<'a> {
    /// Builds E for a scope. Linear in nodes + edges: `depends_on` edges are deduplicated
    /// per node (lists are short; a set takes over for long ones), and only explicit edges
    /// go through a hash map, so a 100k-edge scope costs no 100k-entry tables.
    pub fn build(scope: &Scope<'a>) -> EdgeSet<'a> {
        let (nodes, index, edges) = effective(scope);
        let mut outgoing = vec![Vec::new(); nodes.len()];
        let mut incoming = vec![Vec::new(); nodes.len()];
        for (i, e) in edges.iter().enumerate() {
            outgoing[e.from].push(i);
            incoming[e.to].push(i);
        }
        EdgeSet {
            nodes,
            index,
            edges,
            outgoing,
            incoming,
        }
    }

    /// The nodes and effective edges of a scope, as [`EdgeSet::build`] has them, without
    /// the per-node adjacency lists: for a consumer that builds its own graph from them.
    pub fn effective_edges(scope: &Scope<'a>) -> (Vec<Node<'a>>, Vec<Edge<'a>>) {
        let (nodes, _, edges) = effective(scope);
        (nodes, edges)
    }
}

/// The nodes of `scope`, their index by id, and its deduplicated effective edges. Linear in
/// nodes + edges: `depends_on` edges are deduplicated per node (lists are short; a set
/// takes over for long ones), and only explicit edges go through a hash map, so a
/// 100k-edge scope costs no 100k-entry tables.
#[allow(
    clippy::type_complexity,
    reason = "the three parts EdgeSet::build and effective_edges take apart"
)]
fn effective<'a>(scope: &Scope<'a>) -> (Vec<Node<'a>>, FxHashMap<&'a str, usize>, Vec<Edge<'a>>) {
    let nodes = scope.nodes();
    let mut index: FxHashMap<&'a str, usize> = FxHashMap::default();
    index.reserve(nodes.len());
    for n in &nodes {
        index.insert(n.id, n.index);
    }
    let explicit = crate::model::arr_of(scope.obj, "edges");
    let mut edges: Vec<Edge<'a>> = Vec::with_capacity(nodes.len() + explicit.len());
    // depends_on edges of node n occupy edges[dep_range[n]].
    let mut dep_range: Vec<(usize, usize)> = Vec::with_capacity(nodes.len());
    let mut long_list: FxHashSet<usize> = FxHashSet::default();
    for node in &nodes {
        let start = edges.len();
        let deps = crate::model::arr_of(node.obj, "depends_on");
        let use_set = deps.len() > 16;
        long_list.clear();
        for dep in deps.iter().filter_map(serde_json::Value::as_str) {
            let Some(&from) = index.get(dep) else {
                continue;
            };
            let duplicate = if use_set {
                !long_list.insert(from)
            } else {
                edges[start..].iter().any(|e| e.from == from)
            };
            if duplicate {
                continue;
            }
            edges.push(Edge {
                from,
                to: node.index,
                kind: EdgeKind::Sequence,
                when: None,
                origin: Origin::DependsOn,
                declared_twice: false,
            });
        }
        dep_range.push((start, edges.len()));
    }
    let mut seen: FxHashMap<(usize, usize, EdgeKind, Option<&'a str>), ()> = FxHashMap::default();
    let edges_ptr = scope.ptr("edges");
    for (i, e) in explicit.iter().enumerate() {
        let Some(e) = e.as_object() else { continue };
        let (Some(from), Some(to)) = (str_of(e, "from"), str_of(e, "to")) else {
            continue;
        };
        let (Some(&from), Some(&to)) = (index.get(from), index.get(to)) else {
            continue;
        };
        let Some(kind) = EdgeKind::parse(str_of(e, "kind")) else {
            continue;
        };
        let when = str_of(e, "when");
        let (lo, hi) = dep_range.get(to).copied().unwrap_or((0, 0));
        if let Some(d) = (lo..hi).find(|&d| edges[d].from == from) {
            // The reference flags any explicit edge on a depends_on pair (AG901).
            edges[d].declared_twice = true;
            if kind == EdgeKind::Sequence && when.is_none() {
                continue; // the same effective edge: dedupe
            }
        }
        if seen.insert((from, to, kind, when), ()).is_some() {
            continue;
        }
        edges.push(Edge {
            from,
            to,
            kind,
            when,
            origin: Origin::Explicit {
                index: i,
                pointer: crate::diagnostic::pointer_push(&edges_ptr, &i.to_string()),
            },
            declared_twice: false,
        });
    }
    (nodes, index, edges)
}

impl<'a> EdgeSet<'a> {
    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Is the scope empty?
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Direct successors of a node (deduplicated, in edge order).
    pub fn successors(&self, n: usize) -> impl Iterator<Item = usize> + '_ {
        self.outgoing[n].iter().map(move |&e| self.edges[e].to)
    }

    /// Direct predecessors of a node.
    pub fn predecessors(&self, n: usize) -> impl Iterator<Item = usize> + '_ {
        self.incoming[n].iter().map(move |&e| self.edges[e].from)
    }

    /// Kahn's algorithm with ties broken by declaration order (the normative tie-break,
    /// §17.5). Returns the order, or `None` when the scope has a cycle.
    pub fn topological_order(&self) -> Option<Vec<usize>> {
        let n = self.len();
        let mut indegree: Vec<usize> = self.incoming.iter().map(Vec::len).collect();
        let mut ready: BinaryHeap<std::cmp::Reverse<usize>> = (0..n)
            .filter(|&i| indegree[i] == 0)
            .map(std::cmp::Reverse)
            .collect();
        let mut order = Vec::with_capacity(n);
        while let Some(std::cmp::Reverse(i)) = ready.pop() {
            order.push(i);
            for &e in &self.outgoing[i] {
                let to = self.edges[e].to;
                indegree[to] -= 1;
                if indegree[to] == 0 {
                    ready.push(std::cmp::Reverse(to));
                }
            }
        }
        (order.len() == n).then_some(order)
    }

    /// Every cycle, one concrete witness per strongly connected component (a self-edge is a
    /// cycle), in order of their smallest declaration index. Each witness starts and ends at
    /// the same node: `[a, b, a]`.
    pub fn cycles(&self) -> Vec<Vec<usize>> {
        // Kahn's pass is cheaper than Tarjan's and settles the common, acyclic case.
        if self.topological_order().is_some() {
            return Vec::new();
        }
        let sccs = self.strongly_connected();
        let mut out = Vec::new();
        for comp in sccs {
            let is_cycle = comp.len() > 1 || self.successors(comp[0]).any(|s| s == comp[0]);
            if !is_cycle {
                continue;
            }
            let members: HashSet<usize> = comp.iter().copied().collect();
            let start = comp.iter().copied().min().unwrap_or(comp[0]);
            out.push(self.cycle_through(start, &members));
        }
        out.sort_by_key(|c| c.first().copied());
        out
    }

    /// A shortest cycle from `start` back to itself inside `members` (BFS).
    fn cycle_through(&self, start: usize, members: &HashSet<usize>) -> Vec<usize> {
        let mut parent: HashMap<usize, usize> = HashMap::new();
        let mut queue = std::collections::VecDeque::new();
        queue.push_back(start);
        while let Some(cur) = queue.pop_front() {
            let mut succ: Vec<usize> = self
                .successors(cur)
                .filter(|s| members.contains(s))
                .collect();
            succ.sort_unstable();
            for s in succ {
                if s == start {
                    // Walk the BFS parents back from `cur` to `start`, then reverse.
                    let mut fwd = vec![start];
                    let mut back = Vec::new();
                    let mut at = cur;
                    while at != start {
                        back.push(at);
                        at = parent.get(&at).copied().unwrap_or(start);
                    }
                    back.reverse();
                    fwd.extend(back);
                    fwd.push(start);
                    return fwd;
                }
                if let std::collections::hash_map::Entry::Vacant(v) = parent.entry(s) {
                    v.insert(cur);
                    queue.push_back(s);
                }
            }
        }
        vec![start, start]
    }

    /// Tarjan's strongly connected components, iterative (no recursion on input size).
    fn strongly_connected(&self) -> Vec<Vec<usize>> {
        let n = self.len();
        let mut index = vec![usize::MAX; n];
        let mut low = vec![0usize; n];
        let mut on_stack = vec![false; n];
        let mut stack = Vec::new();
        let mut next = 0usize;
        let mut out = Vec::new();
        for root in 0..n {
            if index[root] != usize::MAX {
                continue;
            }
            let mut work: Vec<(usize, usize)> = vec![(root, 0)];
            while let Some(&mut (v, ref mut pos)) = work.last_mut() {
                if *pos == 0 && index[v] == usize::MAX {
                    index[v] = next;
                    low[v] = next;
                    next += 1;
                    stack.push(v);
                    on_stack[v] = true;
                }
                if let Some(&e) = self.outgoing[v].get(*pos) {
                    *pos += 1;
                    let w = self.edges[e].to;
                    if index[w] == usize::MAX {
                        work.push((w, 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                    continue;
                }
                work.pop();
                if let Some(&(parent, _)) = work.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut comp = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        comp.push(w);
                        if w == v {
                            break;
                        }
                    }
                    comp.sort_unstable();
                    out.push(comp);
                }
            }
        }
        out
    }

    /// Nodes reachable from the given starts (starts included).
    pub fn reachable_from(&self, starts: impl IntoIterator<Item = usize>) -> Vec<bool> {
        let mut seen = vec![false; self.len()];
        let mut stack: Vec<usize> = starts.into_iter().collect();
        for &s in &stack {
            seen[s] = true;
        }
        while let Some(v) = stack.pop() {
            for w in self.successors(v) {
                if !seen[w] {
                    seen[w] = true;
                    stack.push(w);
                }
            }
        }
        seen
    }
}

/// Answers "is `a` a transitive predecessor of `b`?" fast on large graphs: a topological
/// rank rejects most queries at once, and the remaining searches walk backwards only over
/// nodes ranked at or after `a`, reusing one visit-stamp buffer.
pub struct Ancestry {
    rank: Vec<usize>,
    preds: Vec<Vec<usize>>,
    stamp: Vec<u32>,
    epoch: u32,
    stack: Vec<usize>,
}

impl Ancestry {
    /// Prepares queries over `set`. With a cycle the rank prefilter is disabled (every
    /// query searches), which stays correct.
    pub fn new(set: &EdgeSet<'_>) -> Ancestry {
        let n = set.len();
        let rank = match set.topological_order() {
            Some(order) => {
                let mut rank = vec![0; n];
                for (r, &v) in order.iter().enumerate() {
                    rank[v] = r;
                }
                rank
            }
            None => vec![usize::MAX; n],
        };
        let preds = (0..n).map(|v| set.predecessors(v).collect()).collect();
        Ancestry {
            rank,
            preds,
            stamp: vec![0; n],
            epoch: 0,
            stack: Vec::new(),
        }
    }

    /// Is `a` a strict transitive predecessor of `b`?
    pub fn precedes(&mut self, a: usize, b: usize) -> bool {
        if a == b {
            return false;
        }
        let ranked = self.rank[a] != usize::MAX;
        if ranked && self.rank[a] >= self.rank[b] {
            return false;
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.epoch = 1;
        }
        self.stack.clear();
        self.stack.push(b);
        self.stamp[b] = self.epoch;
        while let Some(v) = self.stack.pop() {
            for i in 0..self.preds[v].len() {
                let p = self.preds[v][i];
                if p == a {
                    return true;
                }
                if self.stamp[p] == self.epoch || (ranked && self.rank[p] < self.rank[a]) {
                    continue;
                }
                self.stamp[p] = self.epoch;
                self.stack.push(p);
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::scopes;
    use serde_json::json;

    fn with_set<R>(doc: serde_json::Value, f: impl FnOnce(&EdgeSet<'_>) -> R) -> R {
        let root = doc.as_object().unwrap();
        let scope = scopes(root).remove(0);
        f(&EdgeSet::build(&scope))
    }

    #[test]
    fn dedupe_keeps_distinct_when_and_kind() {
        let doc = json!({"nodes": {"a": {}, "b": {"depends_on": ["a", "a"]}}, "edges": [
            {"from": "a", "to": "b"},
            {"from": "a", "to": "b", "kind": "conditional", "when": "true"},
            {"from": "a", "to": "b", "kind": "conditional", "when": "false"},
            {"from": "a", "to": "b", "kind": "conditional", "when": "true"},
            {"from": "a", "to": "zz"}
        ]});
        with_set(doc, |set| {
            assert_eq!(set.edges.len(), 3);
            assert!(set.edges[0].declared_twice);
        });
    }

    #[test]
    fn topological_ties_follow_declaration_order() {
        let doc = json!({"nodes": {"c": {"depends_on": ["a"]}, "b": {}, "a": {}, "d": {"depends_on": ["b", "c"]}}});
        with_set(doc, |set| {
            let order: Vec<&str> = set
                .topological_order()
                .unwrap()
                .into_iter()
                .map(|i| set.nodes[i].id)
                .collect();
            assert_eq!(order, vec!["b", "a", "c", "d"]);
        });
    }

    #[test]
    fn every_cycle_is_reported_with_a_witness() {
        let doc = json!({"nodes": {
            "a": {"depends_on": ["b"]}, "b": {"depends_on": ["a"]},
            "c": {"depends_on": ["c"]},
            "d": {}, "e": {"depends_on": ["d", "g"]}, "f": {"depends_on": ["e"]}, "g": {"depends_on": ["f"]}
        }});
        with_set(doc, |set| {
            assert!(set.topological_order().is_none());
            let named: Vec<Vec<&str>> = set
                .cycles()
                .into_iter()
                .map(|c| c.into_iter().map(|i| set.nodes[i].id).collect())
                .collect();
            assert_eq!(
                named,
                vec![
                    vec!["a", "b", "a"],
                    vec!["c", "c"],
                    vec!["e", "f", "g", "e"]
                ]
            );
        });
    }

    #[test]
    fn ancestry_matches_reachability() {
        let doc = json!({"nodes": {
            "a": {}, "b": {"depends_on": ["a"]}, "c": {"depends_on": ["b"]}, "x": {}, "y": {"depends_on": ["x", "c"]}
        }});
        with_set(doc, |set| {
            let mut anc = Ancestry::new(set);
            for a in 0..set.len() {
                let reach = set.reachable_from([a]);
                for (b, &reached) in reach.iter().enumerate() {
                    assert_eq!(anc.precedes(a, b), a != b && reached, "{a} -> {b}");
                }
            }
        });
    }
}

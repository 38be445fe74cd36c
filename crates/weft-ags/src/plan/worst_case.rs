//! Worst-case node executions, multiplied through nesting (SPEC §13 `max_node_executions`).
//!
//! The model, per scope instance:
//!
//! - `count(n)`: how many times node `n` is started per instance of its scope: 1 if it is
//!   reachable from an entrypoint, plus one for every start of a node that names it as a
//!   `fallback` `alternate_node` or `escalation.node` (those run once after the invoking
//!   node's attempts are exhausted). Unreachable nodes that nothing invokes never run.
//! - `attempts(n)`: the effective `failure.retry.max_attempts` (after the scope's own
//!   `defaults`; 1 for gates, which never retry).
//! - a container runs its child `iters` times per attempt (`max_iterations`, `max_items`,
//!   1 for a subgraph) and counts itself once per attempt.
//!
//! So `W(scope) = Σ count(n) × attempts(n) × (1 + iters(n) × W(child(n)))`. Named fragments
//! are shared, so instead of re-walking a fragment per use (exponential on chains of
//! fragments that use each other twice) the scopes form a graph: `W` is computed once per
//! scope bottom-up, and the per-node breakdown pushes multipliers top-down in topological
//! order. Recursion (a `use` cycle, or a fallback cycle) is cut and reported; all arithmetic
//! saturates.

use super::{Analysed, Recursion, Unresolved};
use crate::model::{Fields, NodeType, obj_of, str_of};
use serde_json::Value;
use std::collections::HashMap;

/// What a node runs inside itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Child {
    /// Nothing (not a container, or a container without a usable body).
    Leaf,
    /// Another scope of the document.
    Scope(usize),
    /// A scope whose use would recurse; treated as empty.
    Cut,
}

/// The facts the planner derives for one node.
#[derive(Clone, Debug)]
pub(super) struct NodeFacts {
    pub ty: Option<NodeType>,
    pub attempts: u64,
    pub count: u64,
    pub iters: u64,
    pub child: Child,
    pub reachable: bool,
}

/// The scope graph with worst-case numbers.
pub(super) struct WorstCase {
    pub facts: Vec<Vec<NodeFacts>>,
    /// Scopes in DFS post-order (children before parents once cut edges are removed).
    pub post: Vec<usize>,
    /// Worst-case executions of one instance of each scope.
    pub per_instance: Vec<u64>,
    /// How many instances of each scope run in the worst case (root: 1).
    pub instances: Vec<u64>,
    pub unresolved: Vec<Unresolved>,
    pub recursion: Vec<Recursion>,
}

/// A non-negative integer member, accepting integral floats (`3.0`) as YAML may give them.
pub(super) fn count_value(v: Option<&Value>) -> Option<u64> {
    let v = v?;
    if let Some(n) = v.as_u64() {
        return Some(n);
    }
    let f = v.as_f64()?;
    // `as` saturates for large floats, which is what a worst case wants.
    (f.is_finite() && f >= 0.0).then_some(f as u64)
}

pub(super) fn analyse(a: &Analysed<'_>) -> WorstCase {
    let n_scopes = a.scopes.len();
    // Container node pointer → the inline body scope it owns.
    let mut by_owner: HashMap<&str, usize> = HashMap::new();
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    for (i, s) in a.scopes.iter().enumerate() {
        if let Some((_, ptr)) = &s.owner {
            by_owner.insert(ptr.as_str(), i);
        }
        if let crate::model::ScopeKind::Named(name) = s.kind {
            by_name.entry(name).or_insert(i);
        }
    }

    let mut unresolved = Vec::new();
    let mut recursion = Vec::new();
    let mut facts: Vec<Vec<NodeFacts>> = Vec::with_capacity(n_scopes);
    // Outgoing scope edges: (node index, child scope).
    let mut children: Vec<Vec<(usize, usize)>> = Vec::with_capacity(n_scopes);

    for (si, scope) in a.scopes.iter().enumerate() {
        let set = &a.sets[si];
        let reachable = &a.reachable[si];
        let defaults = obj_of(scope.obj, "defaults");
        let n = set.len();
        let mut scope_facts = Vec::with_capacity(n);
        let mut scope_children = Vec::new();
        // Invocation edges (fallback alternates, escalation nodes) inside this scope.
        let mut invokes: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut indegree = vec![0usize; n];

        for (i, node) in set.nodes.iter().enumerate() {
            let ty = node.node_type();
            // The effective `failure` block, read key by key: the merge is shallow (§6.3), so
            // a key comes from the node when it has it, else from `defaults` (never for a
            // gate; see `model::effective_block`). This avoids cloning a merged block per
            // node on large graphs.
            let own = node.obj("failure");
            let inherited = if ty == Some(NodeType::Gate) {
                None
            } else {
                defaults.and_then(|d| obj_of(d, "failure"))
            };
            let failure_key = |key: &str| {
                own.and_then(|o| o.get(key))
                    .or_else(|| inherited.and_then(|d| d.get(key)))
            };
            let attempts = if ty == Some(NodeType::Gate) {
                1
            } else {
                failure_key("retry")
                    .and_then(Value::as_object)
                    .and_then(|r| count_value(r.field("max_attempts")))
                    .filter(|&m| m >= 1)
                    .unwrap_or(1)
            };
            if own.is_some() || inherited.is_some() {
                let mut targets: Vec<&str> = Vec::new();
                let fallback = failure_key("fallback")
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice);
                for step in fallback {
                    if let Some(step) = step.as_object()
                        && str_of(step, "strategy") == Some("alternate_node")
                        && let Some(t) = str_of(step, "node")
                    {
                        targets.push(t);
                    }
                }
                if let Some(t) = failure_key("escalation")
                    .and_then(Value::as_object)
                    .and_then(|e| str_of(e, "node"))
                {
                    targets.push(t);
                }
                for t in targets {
                    let Some(&j) = set.index.get(t) else { continue };
                    if j == i {
                        recursion.push(Recursion {
                            pointer: node.ptr("failure"),
                            reason: "fallback_cycle",
                            target: t.to_string(),
                        });
                        continue;
                    }
                    invokes[i].push(j);
                    indegree[j] += 1;
                }
            }

            let (iters, child) = container_child(node, ty, &by_owner, &by_name, &mut unresolved);
            if let Child::Scope(c) = child {
                scope_children.push((i, c));
            }
            scope_facts.push(NodeFacts {
                ty,
                attempts,
                count: u64::from(reachable.get(i).copied().unwrap_or(false)),
                iters,
                child,
                reachable: reachable.get(i).copied().unwrap_or(false),
            });
        }

        // Kahn over the invocation edges: an invoked node starts once per start of its
        // invoker. Nodes left in a cycle keep what reached them; the cycle is reported.
        let mut queue: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
        let mut done = 0usize;
        while let Some(i) = queue.pop() {
            done += 1;
            let c = scope_facts[i].count;
            for &j in &invokes[i] {
                scope_facts[j].count = scope_facts[j].count.saturating_add(c);
                indegree[j] -= 1;
                if indegree[j] == 0 {
                    queue.push(j);
                }
            }
        }
        if done < n {
            for (i, node) in set.nodes.iter().enumerate() {
                if indegree[i] > 0 {
                    recursion.push(Recursion {
                        pointer: node.pointer.clone(),
                        reason: "fallback_cycle",
                        target: node.id.to_string(),
                    });
                }
            }
        }
        facts.push(scope_facts);
        children.push(scope_children);
    }

    // Iterative DFS over the scope graph, root first: post-order, and cut back edges.
    let mut state = vec![0u8; n_scopes];
    let mut post = Vec::with_capacity(n_scopes);
    for start in 0..n_scopes {
        if state[start] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        state[start] = 1;
        while let Some(&mut (s, ref mut next)) = stack.last_mut() {
            if let Some(&(node, c)) = children[s].get(*next) {
                *next += 1;
                match state[c] {
                    0 => {
                        state[c] = 1;
                        stack.push((c, 0));
                    }
                    1 => {
                        facts[s][node].child = Child::Cut;
                        let n = &a.sets[s].nodes[node];
                        let target = match a.scopes[c].kind {
                            crate::model::ScopeKind::Named(name) => name.to_string(),
                            _ => a.scopes[c].pointer.clone(),
                        };
                        recursion.push(Recursion {
                            pointer: n.pointer.clone(),
                            reason: "recursive_use",
                            target,
                        });
                    }
                    _ => {}
                }
                continue;
            }
            state[s] = 2;
            post.push(s);
            stack.pop();
        }
    }

    let mut per_instance = vec![0u64; n_scopes];
    for &s in &post {
        let mut total = 0u64;
        for f in &facts[s] {
            let inner = match f.child {
                Child::Scope(c) => f.iters.saturating_mul(per_instance[c]),
                _ => 0,
            };
            let unit = 1u64.saturating_add(inner);
            total = total.saturating_add(f.count.saturating_mul(f.attempts).saturating_mul(unit));
        }
        per_instance[s] = total;
    }

    let mut instances = vec![0u64; n_scopes];
    if let Some(first) = instances.first_mut() {
        *first = 1;
    }
    for &s in post.iter().rev() {
        let m = instances[s];
        if m == 0 {
            continue;
        }
        for f in &facts[s] {
            if let Child::Scope(c) = f.child {
                let add = m
                    .saturating_mul(f.count)
                    .saturating_mul(f.attempts)
                    .saturating_mul(f.iters);
                instances[c] = instances[c].saturating_add(add);
            }
        }
    }

    WorstCase {
        facts,
        post,
        per_instance,
        instances,
        unresolved,
        recursion,
    }
}

/// The iteration factor and child scope of a container node.
fn container_child(
    node: &crate::model::Node<'_>,
    ty: Option<NodeType>,
    by_owner: &HashMap<&str, usize>,
    by_name: &HashMap<&str, usize>,
    unresolved: &mut Vec<Unresolved>,
) -> (u64, Child) {
    let Some(ty) = ty.filter(|t| t.is_container()) else {
        return (1, Child::Leaf);
    };
    let Some(block) = node.block() else {
        return (1, Child::Leaf);
    };
    let iters = match ty {
        // A missing or malformed cap is a schema error (AG001); 1 keeps the preview usable.
        NodeType::Loop => count_value(block.field("max_iterations")).unwrap_or(1),
        NodeType::Map => count_value(block.field("max_items")).unwrap_or(1),
        _ => 1,
    };
    if let Some(&c) = by_owner.get(node.pointer.as_str()) {
        return (iters, Child::Scope(c));
    }
    if let Some(name) = str_of(block, "use") {
        if let Some(&c) = by_name.get(name) {
            return (iters, Child::Scope(c));
        }
        unresolved.push(Unresolved {
            pointer: node.ptr(ty.as_str()),
            kind: "unknown_fragment",
            target: name.to_string(),
        });
        return (iters, Child::Leaf);
    }
    if let Some(r) = block.field("ref") {
        let uri = r
            .as_object()
            .and_then(|r| str_of(r, "uri"))
            .unwrap_or_default()
            .to_string();
        unresolved.push(Unresolved {
            pointer: node.ptr(ty.as_str()),
            kind: "ref",
            target: uri,
        });
    }
    (iters, Child::Leaf)
}

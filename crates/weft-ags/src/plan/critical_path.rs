//! Per-scope schedule shape: parallel groups (ASAP levels) and the critical path.
//!
//! Both are one pass over a topological order (O(V + E)). Ties always go to the lower
//! declaration index, the normative tie-break of SPEC §17.5, so the output is
//! deterministic across runs and harnesses.

use super::CriticalPath;
use crate::edges::EdgeSet;
use crate::model::Fields;
use crate::model::obj_of;
use serde_json::Value;
use std::cmp::Ordering;

/// ASAP levels: group k holds the nodes whose longest path from a source has k edges, each
/// group in declaration order.
pub(super) fn parallel_groups(set: &EdgeSet<'_>, order: &[usize]) -> Vec<Vec<usize>> {
    let mut level = vec![0usize; set.len()];
    let mut max_level = 0usize;
    for &v in order {
        let l = set.predecessors(v).map(|p| level[p] + 1).max().unwrap_or(0);
        level[v] = l;
        max_level = max_level.max(l);
    }
    if set.is_empty() {
        return Vec::new();
    }
    let mut groups = vec![Vec::new(); max_level + 1];
    // Filling by index keeps each group in declaration order without sorting.
    for (v, &l) in level.iter().enumerate() {
        groups[l].push(v);
    }
    groups
}

/// `estimate.wall_clock_seconds` of a node, 0 when absent or malformed.
fn seconds(set: &EdgeSet<'_>, v: usize) -> f64 {
    obj_of(set.nodes[v].obj, "estimate")
        .and_then(|e| e.field("wall_clock_seconds"))
        .and_then(Value::as_f64)
        .filter(|s| s.is_finite())
        .map_or(0.0, |s| s.max(0.0))
}

/// Compares two path ends: more seconds first, then more nodes; `Greater` = better.
fn better(a: (f64, usize), b: (f64, usize)) -> Ordering {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
}

/// The longest path by estimated wall-clock seconds. Nodes without an estimate weigh 0 but
/// still lengthen the path, so an estimate-free graph yields its longest chain of nodes.
/// Ties go to the predecessor, then the end node, declared first.
pub(super) fn critical_path(set: &EdgeSet<'_>, order: &[usize]) -> Option<CriticalPath> {
    let n = set.len();
    if n == 0 {
        return None;
    }
    let mut best: Vec<(f64, usize)> = vec![(0.0, 0); n];
    let mut pred: Vec<Option<usize>> = vec![None; n];
    for &v in order {
        let mut chosen: Option<usize> = None;
        for p in set.predecessors(v) {
            chosen = match chosen {
                None => Some(p),
                Some(c) => match better(best[p], best[c]) {
                    Ordering::Greater => Some(p),
                    Ordering::Equal if p < c => Some(p),
                    _ => Some(c),
                },
            };
        }
        let (base_s, base_n) = chosen.map_or((0.0, 0), |c| best[c]);
        best[v] = (base_s + seconds(set, v), base_n + 1);
        pred[v] = chosen;
    }
    let mut end = 0usize;
    for v in 1..n {
        if better(best[v], best[end]) == Ordering::Greater {
            end = v;
        }
    }
    let total = best[end].0;
    let mut path = vec![end];
    let mut at = end;
    // The predecessor chain is acyclic (it follows a topological order); the length bound
    // only guards against a logic error looping forever.
    while let Some(p) = pred[at] {
        if path.len() > n {
            break;
        }
        path.push(p);
        at = p;
    }
    path.reverse();
    Some(CriticalPath {
        seconds: total,
        nodes: path
            .into_iter()
            .map(|v| set.nodes[v].id.to_string())
            .collect(),
    })
}

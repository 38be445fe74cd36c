//! Which nodes' facts a node's expressions can read, so the driver hands a node a context
//! with those nodes only instead of building a view of every node for every action (that
//! made each step O(nodes), and a run O(nodes²)).
//!
//! The scan is textual and conservative: every string of the node's definition (and of the
//! graph `defaults`, which merge into it) is searched for `nodes.<id>`; an occurrence of
//! `nodes` not followed by `.<id>` (`nodes['a']`, `nodes` whole) or a call that names a node
//! by a string argument (`succeeded(`, `failed(`, `skipped(`, `output(`) makes the node read
//! [`NodeReads::All`]. Reading more than needed only costs time; the context's answers are
//! the same, because a name the expression cannot reach is never looked up.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

/// The nodes an expression of one node may read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum NodeReads {
    /// Any node: the full view is built.
    All,
    /// These node indices only (ids that name no node are dropped: they resolve to
    /// "unknown node" either way).
    Only(Vec<usize>),
}

/// Calls whose node id is a string argument, invisible to the `nodes.<id>` scan.
const NODE_CALLS: [&str; 4] = ["succeeded(", "failed(", "skipped(", "output("];

/// Scans every string under `values` and resolves the ids through `index`.
pub(super) fn scan<'a>(
    values: impl IntoIterator<Item = &'a Value>,
    index: &HashMap<&str, usize>,
) -> NodeReads {
    scan_by(values, |id| index.get(id).copied())
}

/// [`scan`], resolving the ids through `find` (a node added to a live run: its few ids
/// are looked up in the graph, not the graph indexed for them, `grow.rs`).
pub(super) fn scan_by<'a>(
    values: impl IntoIterator<Item = &'a Value>,
    find: impl Fn(&str) -> Option<usize>,
) -> NodeReads {
    let mut ids = BTreeSet::new();
    for value in values {
        if !collect(value, &mut ids) {
            return NodeReads::All;
        }
    }
    let mut only: Vec<usize> = ids.iter().filter_map(|id| find(id)).collect();
    only.sort_unstable();
    only.dedup();
    NodeReads::Only(only)
}

/// Adds the ids under `value` to `ids`; `false` when the node may read any node.
fn collect(value: &Value, ids: &mut BTreeSet<String>) -> bool {
    match value {
        Value::String(s) => collect_str(s, ids),
        Value::Array(items) => items.iter().all(|v| collect(v, ids)),
        Value::Object(members) => members.values().all(|v| collect(v, ids)),
        _ => true,
    }
}

fn collect_str(s: &str, ids: &mut BTreeSet<String>) -> bool {
    // Every call ends in `(`: most strings (titles, descriptions, labels, ids) have none
    // and are not searched four more times.
    if s.contains('(') && NODE_CALLS.iter().any(|call| s.contains(call)) {
        return false;
    }
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    // `nodes` at each `n` (a one-byte search; a substring searcher costs more to set up
    // than these short strings cost to scan). `nodes` cannot overlap itself.
    for at in s
        .match_indices('n')
        .map(|(at, _)| at)
        .filter(|&at| s[at..].starts_with("nodes"))
    {
        let rest = s[at + "nodes".len()..].trim_start();
        let Some(rest) = rest.strip_prefix('.') else {
            return false;
        };
        let rest = rest.trim_start();
        let end = rest.find(|c: char| !ident(c)).unwrap_or(rest.len());
        let id = &rest[..end];
        if id.is_empty() {
            return false;
        }
        // `nodes.a-b` is `nodes.a` minus `b` in AGX, but `a-b` may also be an id: keep
        // every prefix that ends before a `-`, and the whole run.
        for (dash, _) in id.match_indices('-') {
            ids.insert(id[..dash].to_string());
        }
        ids.insert(id.to_string());
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reads(value: Value) -> NodeReads {
        let index: HashMap<&str, usize> = [("a", 0), ("b", 1), ("a-b", 2), ("c", 3)].into();
        scan([&value], &index)
    }

    #[test]
    fn dotted_paths_name_their_nodes() {
        let node = json!({
            "inputs": {"x": {"from": "nodes.b.outputs.report"}},
            "when": "nodes . c.status == 'succeeded'",
            "prompt": "Use ${{ nodes.a-b.outputs.y }}",
        });
        assert_eq!(reads(node), NodeReads::Only(vec![0, 1, 2, 3]));
        assert_eq!(
            reads(json!({"when": "nodes.zz.status"})),
            NodeReads::Only(vec![])
        );
        assert_eq!(
            reads(json!({"title": "Step", "n": 3})),
            NodeReads::Only(vec![])
        );
    }

    #[test]
    fn anything_dynamic_reads_every_node() {
        for text in [
            "nodes['a'].status",
            "length(nodes) > 2",
            "succeeded('a')",
            "output('b', 'x')",
            "nodes.",
            "Collect the nodes of the plan.",
        ] {
            assert_eq!(reads(json!({"when": text})), NodeReads::All, "{text}");
        }
    }
}

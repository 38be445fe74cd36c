//! The engine workloads W1–W8 of `docs/BENCHMARKS.md` as AGS documents, the same shapes
//! `bench/langgraph/lg_workloads.py` builds in LangGraph:
//!
//! - [`Shape::Chain`] — n nodes in sequence (W1, W4, W7);
//! - [`Shape::Layered`] — `depth` layers of `width` nodes, each depending on every node of the
//!   layer before (full bipartite, W2);
//! - [`Shape::Tree`] — a fan-out tree in breadth-first numbering (W2);
//! - [`Shape::FanOut`] — one source, `k` parallel nodes, one reduce node that joins all (W3;
//!   weft has no `map` yet, so the k tasks are k declared nodes);
//! - [`payload_chain`] — n exec nodes that each emit 1 KiB (W5);
//! - [`barrier`] — a 50 ms and a 1 s branch, and the fast branch's successor (W8).
//!
//! Every node of W1–W3 runs in process through [`node_body`], the one place that says what a
//! node is: today an expression `decision` node (the real engine path: inputs, AGX, events,
//! scheduler) that settles with the label [`DONE_LABEL`], which the benchmark counts at the
//! end. When in-process agents exist, only that function changes.

use serde_json::{Map, Value, json};

/// The label every W1–W3 node settles with; the benchmark checks that each node logged it.
pub const DONE_LABEL: &str = "done";

/// A W1–W3 graph shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Chain(usize),
    Layered { width: usize, depth: usize },
    Tree { total: usize, fanout: usize },
    FanOut(usize),
}

impl Shape {
    /// Parses `chain:N`, `layered:WxD`, `tree:N` (fan-out 10) or `fanout:K`.
    pub fn parse(text: &str) -> Option<Shape> {
        let (name, arg) = text.split_once(':')?;
        let num = |s: &str| s.parse::<usize>().ok().filter(|&n| n > 0);
        match name {
            "chain" => num(arg).map(Shape::Chain),
            "layered" => {
                let (w, d) = arg.split_once('x')?;
                Some(Shape::Layered {
                    width: num(w)?,
                    depth: num(d)?,
                })
            }
            "tree" => num(arg).map(|total| Shape::Tree { total, fanout: 10 }),
            "fanout" => num(arg).map(Shape::FanOut),
            _ => None,
        }
    }

    /// Number of nodes.
    pub fn nodes(self) -> usize {
        match self {
            Shape::Chain(n) => n,
            Shape::Layered { width, depth } => width * depth,
            Shape::Tree { total, .. } => total,
            Shape::FanOut(k) => k + 2,
        }
    }

    /// The node ids with their dependencies, in declaration order.
    pub fn nodes_and_deps(self) -> Vec<(String, Vec<String>)> {
        match self {
            Shape::Chain(n) => (0..n)
                .map(|i| {
                    let deps = if i == 0 {
                        vec![]
                    } else {
                        vec![format!("c{}", i - 1)]
                    };
                    (format!("c{i}"), deps)
                })
                .collect(),
            Shape::Layered { width, depth } => {
                let id = |d: usize, w: usize| format!("l{d}_{w}");
                let mut out = Vec::with_capacity(width * depth);
                for d in 0..depth {
                    for w in 0..width {
                        let deps = if d == 0 {
                            vec![]
                        } else {
                            (0..width).map(|a| id(d - 1, a)).collect()
                        };
                        out.push((id(d, w), deps));
                    }
                }
                out
            }
            Shape::Tree { total, fanout } => (0..total)
                .map(|i| {
                    let deps = if i == 0 {
                        vec![]
                    } else {
                        vec![format!("t{}", (i - 1) / fanout.max(1))]
                    };
                    (format!("t{i}"), deps)
                })
                .collect(),
            Shape::FanOut(k) => {
                let mut out = vec![("dispatch".to_string(), vec![])];
                out.extend((0..k).map(|i| (format!("w{i}"), vec!["dispatch".to_string()])));
                out.push((
                    "reduce".to_string(),
                    (0..k).map(|i| format!("w{i}")).collect(),
                ));
                out
            }
        }
    }

    /// The AGS document: every node is a [`node_body`], `max_parallel_nodes` large enough
    /// that no ready node waits for a slot.
    pub fn document(self) -> Value {
        let mut nodes = Map::new();
        let mut entrypoints = Vec::new();
        for (id, deps) in self.nodes_and_deps() {
            if deps.is_empty() {
                entrypoints.push(id.clone());
            }
            nodes.insert(id, node_body(deps));
        }
        graph("bench/engine", entrypoints, self.nodes(), nodes)
    }
}

/// What one W1–W3 node is: an in-process node doing observable work. Today an expression
/// `decision` node whose single branch holds, so it settles `succeeded` with the output
/// `decision = "done"`; the only function to change when in-process agents arrive.
pub fn node_body(depends_on: Vec<String>) -> Value {
    let mut node = json!({
        "type": "decision",
        "title": "Step",
        "description": "A benchmark step.",
        "decision": {
            "evaluator": "expression",
            "branches": [{"label": DONE_LABEL, "description": "Always.", "when": "true"}]
        }
    });
    if !depends_on.is_empty() {
        node["depends_on"] = json!(depends_on);
    }
    node
}

/// W3 with a `map` node (LangGraph's `Send`): `dispatch` → `work`, a map over the `n`
/// elements of `params.items` whose body is one [`node_body`] step (each item its own
/// scope instance `work[i]`, at most `max_parallel` started at once: `n` for the W3m
/// shape), collecting every item's decision → `reduce`.
pub fn map_fanout(n: usize, max_parallel: usize) -> Value {
    let mut nodes = Map::new();
    nodes.insert("dispatch".into(), node_body(vec![]));
    nodes.insert(
        "work".into(),
        map_node(n, max_parallel, vec!["dispatch".into()]),
    );
    nodes.insert("reduce".into(), node_body(vec!["work".into()]));
    let mut doc = graph("bench/map", vec!["dispatch".into()], n.max(3), nodes);
    doc["params"] = items_param(n);
    doc
}

/// The nested shape: a `loop` of `iterations` whose body is one map over `n` items (each
/// iteration `rounds[i]`, each item `rounds[i].work[j]`).
pub fn loop_of_maps(iterations: usize, n: usize) -> Value {
    let mut body_nodes = Map::new();
    body_nodes.insert("work".into(), map_node(n, n, vec![]));
    let mut nodes = Map::new();
    nodes.insert(
        "rounds".into(),
        json!({
            "type": "loop",
            "title": "Rounds",
            "description": "Repeat the map.",
            "loop": {
                "mode": "repeat",
                "max_iterations": iterations,
                "body": {"entrypoints": ["work"], "nodes": Value::Object(body_nodes)}
            }
        }),
    );
    let mut doc = graph("bench/loop-of-maps", vec!["rounds".into()], n.max(3), nodes);
    doc["params"] = items_param(n);
    doc
}

/// A map over `n` items, at most `max_parallel` of them started at once (the others wait,
/// unstarted, for a slot).
fn map_node(n: usize, max_parallel: usize, depends_on: Vec<String>) -> Value {
    let mut body = Map::new();
    body.insert("step".into(), node_body(vec![]));
    let mut node = json!({
        "type": "map",
        "title": "Work",
        "description": "One step per item.",
        "outputs": {"done": {"type": "array", "description": "Each item's decision."}},
        "map": {
            "over": "params.items",
            "as": "entry",
            "max_items": n,
            "max_parallel": max_parallel.max(1),
            "body": {"entrypoints": ["step"], "nodes": Value::Object(body)},
            "collect": {"done": "nodes.step.outputs.decision"}
        }
    });
    if !depends_on.is_empty() {
        node["depends_on"] = json!(depends_on);
    }
    node
}

fn items_param(n: usize) -> Value {
    json!({"items": {"type": "array", "description": "The items to map over.",
        "default": (0..n).collect::<Vec<usize>>()}})
}

/// W5: a chain of `n` exec nodes, each writing `bytes` bytes to stdout, its single output
/// `chunk` (the state grows by `bytes` per step, as in LangGraph's appending reducer).
pub fn payload_chain(n: usize, bytes: usize) -> Value {
    let mut nodes = Map::new();
    for i in 0..n {
        let mut node = json!({
            "title": "Append",
            "description": "Append one chunk.",
            "outputs": {"chunk": {"type": "text", "description": "This step's chunk."}},
            "x-weft-exec": {"run": format!("head -c {bytes} /dev/zero | tr '\\0' x")}
        });
        if i > 0 {
            node["depends_on"] = json!([format!("p{}", i - 1)]);
        }
        nodes.insert(format!("p{i}"), node);
    }
    graph("bench/payload", vec!["p0".into()], 1, nodes)
}

/// W8: `fast` (sleeps 50 ms) and `slow` (sleeps 1 s) start together; `after_fast` depends on
/// `fast` only. Real processes (`sleep`).
pub fn barrier() -> Value {
    let exec = |run: &str| json!({"title": "Branch", "description": "A branch.", "x-weft-exec": {"run": run}});
    let mut nodes = Map::new();
    nodes.insert("fast".into(), exec("sleep 0.05"));
    nodes.insert("slow".into(), exec("sleep 1"));
    let mut after = exec("true");
    after["depends_on"] = json!(["fast"]);
    nodes.insert("after_fast".into(), after);
    graph(
        "bench/barrier",
        vec!["fast".into(), "slow".into()],
        3,
        nodes,
    )
}

fn graph(id: &str, entrypoints: Vec<String>, parallel: usize, nodes: Map<String, Value>) -> Value {
    json!({
        "ags_version": "1.0",
        "kind": "AgenticGraph",
        "id": id,
        "version": "1.0.0",
        "title": "Engine benchmark workload",
        "objective": "Measure the engine's own cost per node.",
        "constraints": {"max_parallel_nodes": parallel.max(1)},
        "entrypoints": entrypoints,
        "nodes": Value::Object(nodes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_have_the_documented_sizes() {
        let edges = |s: Shape| -> usize { s.nodes_and_deps().iter().map(|(_, d)| d.len()).sum() };
        assert_eq!(Shape::parse("chain:1000"), Some(Shape::Chain(1000)));
        assert_eq!(edges(Shape::Chain(1000)), 999);
        let layered = Shape::parse("layered:10x100").unwrap_or(Shape::Chain(1));
        assert_eq!(layered.nodes(), 1000);
        assert_eq!(edges(layered), 9900);
        let tree = Shape::Tree {
            total: 1000,
            fanout: 10,
        };
        assert_eq!(edges(tree), 999);
        assert_eq!(Shape::FanOut(1000).nodes(), 1002);
        assert_eq!(edges(Shape::FanOut(1000)), 2000);
        assert_eq!(Shape::parse("ring:3"), None);
    }

    #[test]
    fn every_workload_document_is_valid() {
        let docs = [
            Shape::Chain(3).document(),
            Shape::Layered { width: 3, depth: 3 }.document(),
            Shape::Tree {
                total: 30,
                fanout: 10,
            }
            .document(),
            Shape::FanOut(5).document(),
            payload_chain(3, 16),
            barrier(),
        ];
        for doc in docs {
            let errors: Vec<String> = weft_ags::validate::validate(&doc)
                .iter()
                .filter(|f| f.is_error())
                .map(|f| format!("{} {}", f.code.as_str(), f.message))
                .collect();
            assert!(errors.is_empty(), "{}: {errors:?}", doc["id"]);
        }
    }
}

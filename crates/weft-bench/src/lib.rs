//! Generators of large AGS documents for benchmarks and scale tests.
//!
//! - [`chain`]: n tasks in a line, each reading its predecessor's output.
//! - [`layered`]: `layers × width` tasks where each node depends on many nodes of the layer
//!   before, for a target number of edges.
//! - [`chain_short_briefs`]: the data-flow chain with briefs too short to act on, so every
//!   node draws one piece of advice (WF901); written with [`minified`] it is the held-out
//!   shape of issue 12 (one line of ~1 MB, one advisory per node).
//! - [`faulty`]: what a model planner emits on a bad day: a large graph with a known set of
//!   injected faults (unknown nodes, dangling dependencies, duplicate keys, cycles), as YAML
//!   text (duplicate keys cannot exist in a parsed value).
//! - [`workloads`]: the engine workloads W1–W8 (chains, layers, trees, fan-out, payload,
//!   barrier) as runnable documents, for `examples/engine_workloads.rs`.
//! - [`agent_loop`]: W10, weft's agent loop against a mock LLM on loopback, for
//!   `examples/agent_loop.rs`.

pub mod agent_loop;
pub mod workloads;

use serde_json::{Map, Value, json};

fn header(id: &str, entrypoints: Vec<String>) -> Map<String, Value> {
    let mut root = Map::new();
    root.insert("ags_version".into(), json!("1.0"));
    root.insert("kind".into(), json!("AgenticGraph"));
    root.insert("id".into(), json!(id));
    root.insert("title".into(), json!(format!("Generated {id}")));
    root.insert("objective".into(), json!("Exercise the reader at scale."));
    root.insert(
        "constraints".into(),
        json!({"max_cost_usd": 1000.0, "max_parallel_nodes": 8}),
    );
    root.insert("entrypoints".into(), json!(entrypoints));
    root
}

fn task(title: &str, inputs: Value, depends_on: Vec<String>, dataflow: bool) -> Value {
    let mut node = json!({
        "title": title,
        "description": "Extend the shared report with this step's findings and cite every source used.",
    });
    if dataflow {
        // One typed output, and data in through an input: the dataflow layer gets work.
        node["outputs"] = json!({"report": {"type": "markdown", "description": "The report."}});
    }
    if !depends_on.is_empty() {
        node["depends_on"] = json!(depends_on);
    }
    if inputs.as_object().is_some_and(|o| !o.is_empty()) {
        node["inputs"] = inputs;
    }
    node
}

/// A chain of `n` tasks (n ≥ 1), each depending on the previous one: the plain shape of the
/// issue's "10k-node chain" (a title, a brief and `depends_on`).
pub fn chain(n: usize) -> Value {
    chain_of(n, false)
}

/// The same chain with data flow: node i reads node i−1's `report` output, and the last
/// report is the graph output, so every expression is parsed, resolved and type-checked.
pub fn chain_dataflow(n: usize) -> Value {
    chain_of(n, true)
}

fn chain_of(n: usize, dataflow: bool) -> Value {
    let id = |i: usize| format!("n{i}");
    let mut nodes = Map::new();
    for i in 0..n {
        let (inputs, deps) = if i == 0 {
            (json!({}), vec![])
        } else if dataflow {
            (
                json!({"upstream": {"type": "markdown", "description": "Upstream.", "from": format!("nodes.n{}.outputs.report", i - 1)}}),
                vec![id(i - 1)],
            )
        } else {
            (json!({}), vec![id(i - 1)])
        };
        nodes.insert(id(i), task(&format!("Step {i}"), inputs, deps, dataflow));
    }
    let mut root = header("bench/chain", vec![id(0)]);
    root.insert("nodes".into(), Value::Object(nodes));
    if dataflow {
        root.insert(
            "outputs".into(),
            json!({"final": {"type": "markdown", "description": "The last report.", "from": format!("nodes.n{}.outputs.report", n.saturating_sub(1))}}),
        );
    }
    Value::Object(root)
}

/// [`chain_dataflow`] with a two-word brief per node ("Step i."): valid, with exactly one
/// advisory per node (WF901, an under-specified brief).
pub fn chain_short_briefs(n: usize) -> Value {
    let mut value = chain_of(n, true);
    if let Some(nodes) = value.get_mut("nodes").and_then(Value::as_object_mut) {
        for (i, node) in nodes.values_mut().enumerate() {
            node["description"] = json!(format!("Step {i}."));
        }
    }
    value
}

/// A document as tools and models emit it: minified JSON, the whole graph on one line.
pub fn minified(value: &Value) -> String {
    value.to_string()
}

/// `layers × width` tasks with `edges` dependency edges in total, spread evenly over the
/// nodes of layers 1.. (each depends on a window of nodes of the layer before).
pub fn layered(layers: usize, width: usize, edges: usize) -> Value {
    let id = |l: usize, i: usize| format!("l{l}-{i}");
    let dependents = layers.saturating_sub(1) * width;
    let base = edges.checked_div(dependents).unwrap_or(0).min(width);
    let extra = edges.saturating_sub(base * dependents);
    let mut nodes = Map::new();
    let mut k = 0usize;
    for l in 0..layers {
        for i in 0..width {
            if l == 0 {
                nodes.insert(id(l, i), task("Source", json!({}), vec![], false));
                continue;
            }
            let fan = (base + usize::from(k < extra)).min(width);
            k += 1;
            let deps: Vec<String> = (0..fan).map(|d| id(l - 1, (i + d) % width)).collect();
            nodes.insert(id(l, i), task("Merge", json!({}), deps, false));
        }
    }
    let mut root = header("bench/layered", (0..width).map(|i| id(0, i)).collect());
    root.insert("nodes".into(), Value::Object(nodes));
    Value::Object(root)
}

/// The faults [`faulty`] injects, by kind, so a test can check each one is reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// `depends_on` naming nodes that do not exist (AG114).
    pub dangling_dependencies: usize,
    /// Edges whose target does not exist (AG113).
    pub unknown_edge_targets: usize,
    /// Inputs reading outputs of nodes that do not exist (AG203).
    pub unknown_node_reads: usize,
    /// Node ids declared twice (AG005).
    pub duplicate_keys: usize,
    /// Independent cycles (AG111).
    pub cycles: usize,
}

/// A planner-style graph of `n` tasks (n ≥ 100) in YAML: each task depends on one or two
/// earlier tasks and reads their output, with the faults listed in the returned [`Faults`]
/// injected at fixed positions.
pub fn faulty(n: usize) -> (String, Faults) {
    let n = n.max(100);
    let step = n / 10;
    let mut y = String::with_capacity(n * 400);
    y.push_str("ags_version: \"1.0\"\nkind: AgenticGraph\nid: bench/faulty\ntitle: Generated faulty plan\nobjective: Exercise error reporting at scale.\nconstraints: {max_cost_usd: 100}\nentrypoints: [t0]\nnodes:\n");
    let mut faults = Faults::default();
    let mut edges = String::from("edges:\n");
    for i in 0..n {
        let mut deps: Vec<String> = Vec::new();
        if i > 0 {
            deps.push(format!("t{}", i - 1));
        }
        if i > 10 && i % 7 == 0 {
            deps.push(format!("t{}", i - 10));
        }
        let slot = i % step;
        let block = i / step;
        let mut read = if i > 0 {
            format!("nodes.t{}.outputs.out", i - 1)
        } else {
            String::new()
        };
        if slot == 5 && block < 10 {
            deps.push(format!("ghost{block}"));
            faults.dangling_dependencies += 1;
        }
        if slot == 6 && block < 10 {
            read = format!("nodes.phantom{block}.outputs.out");
            faults.unknown_node_reads += 1;
        }
        if slot == 7 && block < 10 {
            edges.push_str(&format!("  - {{from: t{i}, to: missing{block}}}\n"));
            faults.unknown_edge_targets += 1;
        }
        // Three cycles: a later node feeds back into an earlier one.
        if slot == 20 && block < 3 {
            deps.push(format!("t{}", i + 3));
            faults.cycles += 1;
        }
        let copies = if slot == 30 && block < 5 {
            faults.duplicate_keys += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            y.push_str(&format!("  t{i}:\n    title: Task {i}\n    description: Carry the analysis one step further and record the result for the next task.\n"));
            if !deps.is_empty() {
                y.push_str(&format!("    depends_on: [{}]\n", deps.join(", ")));
            }
            if !read.is_empty() {
                y.push_str(&format!("    inputs:\n      prev: {{type: text, description: Upstream result., from: {read}}}\n"));
            }
            y.push_str("    outputs:\n      out: {type: text, description: This task's result.}\n    estimate: {cost_usd: 0.01}\n");
        }
    }
    y.push_str(&format!(
        "outputs:\n  result: {{type: text, description: Final result., from: nodes.t{}.outputs.out}}\n",
        n - 1
    ));
    y.push_str(&edges);
    (y, faults)
}

/// A simple fact check used by tests and the CLI helper: does `value` parse as an object?
pub fn is_graph(value: &Value) -> bool {
    value.get("kind").and_then(Value::as_str) == Some("AgenticGraph")
}

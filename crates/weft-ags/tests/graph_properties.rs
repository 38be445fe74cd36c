//! Properties over generated AGS graphs (random DAGs with random briefs, `x-` extensions and
//! edge kinds): YAML → JSON → YAML is lossless and digest-stable, validation never panics
//! and is deterministic, a generated DAG has no referential errors, and the planner's order
//! is a topological order of the effective edges that lists every node once.

#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use weft_ags::load::{Format, Limits, load_str, to_json_pretty, to_yaml};
use weft_ags::{Code, digest, plan, validate};

/// A random DAG of 1..24 nodes: node i depends on a random subset of earlier nodes, and a
/// few explicit conditional edges go forward too.
fn graph() -> impl Strategy<Value = Value> {
    (1usize..24)
        .prop_flat_map(|n| {
            (
                Just(n),
                prop::collection::vec(prop::collection::vec(any::<prop::sample::Index>(), 0..3), n),
                prop::collection::vec("[a-zA-Z0-9 :#'\"{}\\[\\],&*!|>%@`-]{1,40}", n),
                prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>()), 0..4),
                any::<bool>(),
            )
        })
        .prop_map(|(n, deps, briefs, extra, with_ext)| {
            let id = |i: usize| format!("n{i}");
            let mut nodes = Map::new();
            for i in 0..n {
                let mut node = json!({"title": format!("Node {i}"), "description": briefs[i].clone()});
                let mut ds: Vec<String> = if i == 0 {
                    vec![]
                } else {
                    deps[i].iter().map(|ix| id(ix.index(i))).collect()
                };
                ds.sort();
                ds.dedup();
                if i > 0 && ds.is_empty() {
                    ds.push(id(i - 1));
                }
                if !ds.is_empty() {
                    node["depends_on"] = json!(ds);
                }
                if with_ext {
                    node["x-weft-test"] = json!({"i": i, "s": briefs[i].clone()});
                }
                nodes.insert(id(i), node);
            }
            let mut edges = Vec::new();
            for (a, b) in extra {
                let (x, y) = (a.index(n), b.index(n));
                let (from, to) = (x.min(y), x.max(y));
                if from != to && to != 0 {
                    edges.push(json!({"from": id(from), "to": id(to), "kind": "conditional", "when": format!("nodes.{}.status == \"succeeded\"", id(from))}));
                }
            }
            let mut root = json!({
                "ags_version": "1.0", "kind": "AgenticGraph", "id": "prop/graph", "title": "Generated",
                "objective": "Property test.", "constraints": {"max_cost_usd": 1},
                "entrypoints": ["n0"], "nodes": nodes
            });
            if !edges.is_empty() {
                root["edges"] = json!(edges);
            }
            if with_ext {
                root["x-vendor"] = json!({"note": "kept"});
            }
            root
        })
}

fn load(text: &str, format: Format) -> Value {
    let loaded = load_str("prop", text, format, &Limits::default());
    assert!(loaded.findings.is_empty(), "{:?}\n{text}", loaded.findings);
    loaded.document.unwrap().value
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn yaml_json_yaml_is_lossless_and_digest_stable(g in graph()) {
        let yaml = to_yaml(&g);
        let from_yaml = load(&yaml, Format::Yaml);
        let json = to_json_pretty(&from_yaml);
        let from_json = load(&json, Format::Json);
        let back = load(&to_yaml(&from_json), Format::Yaml);
        prop_assert_eq!(&from_yaml, &g);
        prop_assert_eq!(&back, &g);
        // Key order survives too (serde_json equality ignores order; the text does not).
        prop_assert_eq!(serde_json::to_string(&back).unwrap(), serde_json::to_string(&g).unwrap());
        prop_assert_eq!(digest::graph_digest(&back), digest::graph_digest(&g));
    }

    #[test]
    fn generated_dags_validate_without_referential_errors(g in graph()) {
        let findings = validate::validate(&g);
        let again = validate::validate(&g);
        prop_assert_eq!(&findings, &again);
        let errors: Vec<_> = findings.iter().filter(|f| f.is_error()).collect();
        prop_assert!(errors.is_empty(), "{:?}", errors);
        prop_assert!(!findings.iter().any(|f| f.code == Code::AG111));
    }

    #[test]
    fn plan_order_is_topological_and_complete(g in graph()) {
        let p = plan::plan(g.as_object().unwrap());
        let order: Vec<String> = serde_json::to_value(&p.scopes[0].order).unwrap()
            .as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
        let nodes = g["nodes"].as_object().unwrap();
        prop_assert_eq!(order.len(), nodes.len());
        let pos = |id: &str| order.iter().position(|o| o == id).unwrap();
        for (id, node) in nodes {
            for d in node.get("depends_on").and_then(Value::as_array).into_iter().flatten() {
                prop_assert!(pos(d.as_str().unwrap()) < pos(id));
            }
        }
        for e in g.get("edges").and_then(Value::as_array).into_iter().flatten() {
            prop_assert!(pos(e["from"].as_str().unwrap()) < pos(e["to"].as_str().unwrap()));
        }
    }

    #[test]
    fn validation_never_panics_on_mutated_graphs(g in graph(), key in "[a-z_]{1,12}", junk in prop_oneof![Just(json!(null)), Just(json!(7)), Just(json!("x")), Just(json!([1, {"a": []}])), Just(json!({"when": "${{ x"}))]) {
        // Put junk at a random-ish place: every node member named `key`, and the root.
        let mut g = g;
        if let Some(nodes) = g["nodes"].as_object_mut() {
            for node in nodes.values_mut() {
                node[key.as_str()] = junk.clone();
            }
        }
        g[key.as_str()] = junk;
        let _ = validate::validate(&g);
        let _ = plan::plan(g.as_object().unwrap());
    }
}

//! Feature detection and the rejection rule (SPEC §19): the level of each shipped example,
//! fragments at any depth, `requires_conformance` not trusted, and `AG303` findings that
//! name every missing feature.

// Helpers outside #[test] fns may unwrap too: a panic is a test failure with a message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::example;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use weft_ags::Code;
use weft_ags::levels::{
    FEATURES, detect, feature_def, ignored_above, refuse_above, refuse_unsupported, required_level,
    summarize,
};

fn names(doc: &Value) -> BTreeSet<&'static str> {
    detect(doc.as_object().unwrap())
        .into_iter()
        .map(|f| f.name)
        .collect()
}

fn level(doc: &Value) -> u8 {
    required_level(&detect(doc.as_object().unwrap()))
}

#[test]
fn level_of_each_example() {
    // minimal is declared level 1 and is level 1: its node limits and `on_timeout: hold`
    // are level-1 features by weft's decision (docs/levels.md).
    assert_eq!(level(&example("minimal.agraph.yaml")), 1);
    assert_eq!(level(&example("library-v1-release.agraph.yaml")), 3);
    assert_eq!(level(&example("test-repair-loop.agraph.yaml")), 3);
    assert_eq!(level(&example("docs-site-refresh.agraph.yaml")), 3);
    // link-audit is declared level 1 but uses an `expression` criterion and
    // `determinism: reproducible`: features decide, so it needs level 2.
    assert_eq!(level(&example("link-audit.agraph.yaml")), 2);
}

#[test]
fn minimal_uses_exactly_the_level_one_surface() {
    let found = names(&example("minimal.agraph.yaml"));
    let expected: BTreeSet<&str> = [
        "task",
        "gate",
        "sequence-edge",
        "join-all",
        "criterion-file_exists",
        "criterion-command",
        "intelligence-routing",
        "retry",
        "on_exhausted",
        "node-constraints-basic",
        "hold",
    ]
    .into_iter()
    .collect();
    assert_eq!(found, expected);
    let root = example("minimal.agraph.yaml");
    assert!(refuse_above(root.as_object().unwrap(), 1).is_empty());
}

#[test]
fn link_audit_needs_level_two_for_named_reasons() {
    let doc = example("link-audit.agraph.yaml");
    let refused = refuse_above(doc.as_object().unwrap(), 1);
    let named: Vec<&str> = refused
        .iter()
        .filter_map(|f| f.message.split('`').nth(1))
        .collect();
    assert_eq!(named, vec!["node-constraints", "criterion-expression"]);
}

#[test]
fn examples_expose_their_level_three_constructs() {
    let lib = names(&example("library-v1-release.agraph.yaml"));
    for f in [
        "criterion-llm_judge",
        "decision",
        "conditional-edge",
        "join-any",
        "template",
        "parallelism",
        "fallback",
        "escalation",
        "checkpoint-before_side_effects",
        "checkpoint-after_outputs",
        "criterion-human",
        "inputs-from",
    ] {
        assert!(lib.contains(f), "library-v1-release uses {f}");
    }
    // Its policy only restates defaults (plus a timeout value), so it is no `policy` use.
    assert!(!lib.contains("policy"));
    let loop_doc = names(&example("test-repair-loop.agraph.yaml"));
    assert!(loop_doc.contains("loop") && loop_doc.contains("policy"));
    let docs = names(&example("docs-site-refresh.agraph.yaml"));
    for f in ["map", "subgraph-ref", "subgraph-use", "parallelism"] {
        assert!(docs.contains(f), "docs-site-refresh uses {f}");
    }
}

#[test]
fn detection_walks_bodies_at_any_depth_and_named_fragments() {
    let doc = json!({
        "entrypoints": ["s"],
        "nodes": {"s": {"type": "subgraph", "subgraph": {"use": "frag"}}},
        "subgraphs": {"frag": {"entrypoints": ["m"], "nodes": {
            "m": {"type": "map", "map": {"over": "params.xs", "as": "x", "max_items": 2, "body": {
                "entrypoints": ["t"], "nodes": {"t": {"success": {"criteria": [
                    {"id": "j", "kind": "external", "description": "d", "check": "c"}
                ]}}}}}}
        }}}
    });
    let features = detect(doc.as_object().unwrap());
    let ext = features
        .iter()
        .find(|f| f.name == "criterion-external")
        .unwrap();
    assert_eq!(
        ext.pointer,
        "/subgraphs/frag/nodes/m/map/body/nodes/t/success/criteria/0/kind"
    );
    assert_eq!(ext.level, 3);
    assert!(features.iter().any(|f| f.name == "map"));
    assert!(features.iter().any(|f| f.name == "subgraph-use"));
}

#[test]
fn requires_conformance_is_not_trusted() {
    let doc = json!({"requires_conformance": 1, "entrypoints": ["l"], "nodes": {
        "l": {"type": "loop", "loop": {"mode": "repeat", "max_iterations": 2, "body": {
            "entrypoints": ["t"], "nodes": {"t": {}}}}},
        "l2": {"type": "loop", "loop": {"mode": "repeat", "max_iterations": 2, "use": "f"}}
    }});
    let root = doc.as_object().unwrap();
    assert_eq!(level(&doc), 3);
    let refused = refuse_above(root, 1);
    assert_eq!(refused.len(), 1);
    let f = &refused[0];
    assert_eq!(f.code, Code::AG303);
    assert_eq!(f.pointer, "/nodes/l/loop");
    assert!(f.message.contains("`loop`"), "{}", f.message);
    assert!(f.message.contains("level 3"), "{}", f.message);
    assert!(f.message.contains("2 uses"), "{}", f.message);
    assert_eq!(
        f.help.as_deref(),
        Some("run with a level-3 harness or remove the loop nodes")
    );
}

#[test]
fn a_declared_level_above_the_harness_is_refused() {
    let doc = json!({"requires_conformance": 2, "entrypoints": ["t"], "nodes": {"t": {}}});
    let refused = refuse_above(doc.as_object().unwrap(), 1);
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].pointer, "/requires_conformance");
    assert!(refused[0].message.contains("requires_conformance: 2"));
}

#[test]
fn refusal_names_every_missing_feature_once() {
    let doc = example("library-v1-release.agraph.yaml");
    let root = doc.as_object().unwrap();
    let refused = refuse_above(root, 1);
    assert!(refused.iter().all(|f| f.code == Code::AG303));
    assert_eq!(refused[0].pointer, "/requires_conformance");
    let named: BTreeSet<&str> = refused
        .iter()
        .skip(1)
        .filter_map(|f| f.message.split('`').nth(1))
        .collect();
    let above: BTreeSet<&str> = summarize(root)
        .into_iter()
        .filter(|u| u.level > 1)
        .map(|u| u.name)
        .collect();
    assert_eq!(named, above);
    assert_eq!(named.len(), refused.len() - 1, "one finding per feature");
    for f in refused.iter().skip(1) {
        let name = f.message.split('`').nth(1).unwrap();
        let def = feature_def(name).unwrap();
        assert!(f.message.contains(&format!("level {}", def.level)));
        assert!(f.message.contains("use"));
        assert!(f.help.as_deref().unwrap().contains(def.what));
    }
}

#[test]
fn compensation_is_reported_as_ignored_not_refused() {
    let doc = json!({"entrypoints": ["a"], "nodes": {
        "a": {"failure": {"compensation": "undo"}}, "undo": {}
    }});
    let root = doc.as_object().unwrap();
    assert_eq!(level(&doc), 3);
    assert!(refuse_above(root, 1).is_empty());
    let ignored = ignored_above(root, 1);
    assert_eq!(ignored.len(), 1);
    assert_eq!(ignored[0].name, "compensation");
    assert_eq!(ignored[0].pointer, "/nodes/a/failure/compensation");
}

#[test]
fn defaults_and_policy_switches_count() {
    let doc = json!({
        "policy": {"on_node_failure": "halt", "record_run": false, "default_human_timeout_seconds": 5},
        "constraints": {"max_parallel_nodes": 1, "max_cost_usd": 3},
        "defaults": {"failure": {"fallback": [{"strategy": "skip"}]}, "human": [{"at": "on_failure", "mode": "notify"}]},
        "entrypoints": ["a"],
        "nodes": {"a": {"when": "true", "inputs": {"x": {"type": "string", "description": "d", "template": "hi"}}}}
    });
    let found = names(&doc);
    for f in [
        "policy",
        "graph-constraints",
        "fallback",
        "checkpoint-on_failure",
        "node-when",
        "template",
    ] {
        assert!(found.contains(f), "{f}");
    }
    assert!(!found.contains("parallelism"));
    let uses = summarize(doc.as_object().unwrap());
    let policy = uses.iter().find(|u| u.name == "policy").unwrap();
    assert_eq!(
        (policy.count, policy.pointer.as_str()),
        (1, "/policy/on_node_failure")
    );
}

#[test]
fn nothing_used_is_level_zero() {
    assert_eq!(required_level(&[]), 0);
    assert_eq!(level(&json!({})), 0);
}

#[test]
fn every_feature_is_documented() {
    let doc = include_str!("../../../docs/levels.md");
    for def in FEATURES {
        assert!(
            doc.contains(&format!("| `{}` | {} |", def.name, def.level)),
            "docs/levels.md lists `{}` at level {}",
            def.name,
            def.level
        );
    }
}

#[test]
fn a_harness_refuses_only_the_features_it_lacks() {
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "x", "title": "x", "objective": "o",
        "entrypoints": ["a"],
        "nodes": {"a": {"title": "A", "description": "d", "success": {"criteria": [
            {"id": "e", "kind": "external", "description": "d", "check": "c"},
            {"id": "j", "kind": "llm_judge", "description": "d", "rubric": "r"}]}}}
    });
    let root = doc.as_object().unwrap();
    let all: Vec<String> = refuse_above(root, 2)
        .iter()
        .map(|f| f.message.clone())
        .collect();
    assert_eq!(all.len(), 2, "{all:?}");
    let lacking = refuse_unsupported(root, 2, &["criterion-external"]);
    assert_eq!(lacking.len(), 1);
    assert!(
        lacking[0].message.contains("`criterion-llm_judge`"),
        "{lacking:?}"
    );
    assert_eq!(lacking[0].code, Code::AG303);
}

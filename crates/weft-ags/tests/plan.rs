//! Planner tests: order and tie-break, parallel groups, reachability, critical path, worst
//! case through retry × loop × map × nesting, recursion guards, cost, tiers, human
//! interactions, and concrete facts of the shipped examples.

// Helpers outside #[test] fns may unwrap too: a panic is a test failure with a message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::example;
use serde_json::{Value, json};
use weft_ags::plan::{Plan, plan};

fn plan_of(doc: &Value) -> Plan {
    plan(doc.as_object().expect("fixture is an object"))
}

fn ids(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn sum_executions(p: &Plan) -> u64 {
    p.executions.0.iter().map(|(_, n)| n).sum()
}

#[test]
fn order_breaks_ties_by_declaration_and_is_deterministic() {
    let doc = json!({"id": "g", "title": "T", "entrypoints": ["b", "a"], "nodes": {
        "c": {"depends_on": ["a"]}, "b": {}, "a": {}, "d": {"depends_on": ["b", "c"]}
    }});
    let p = plan_of(&doc);
    let root = &p.scopes[0];
    assert_eq!(root.kind, "root");
    assert_eq!(root.order, Some(ids(&["b", "a", "c", "d"])));
    assert_eq!(root.cycle, None);
    assert_eq!(p.graph_id.as_deref(), Some("g"));
    let again = serde_json::to_string(&plan_of(&doc)).unwrap();
    assert_eq!(serde_json::to_string(&p).unwrap(), again);
}

#[test]
fn parallel_groups_of_a_diamond_follow_declaration_order() {
    let doc = json!({"entrypoints": ["a"], "nodes": {
        "a": {},
        "c": {"depends_on": ["a"]},
        "b": {"depends_on": ["a"]},
        "d": {"depends_on": ["b", "c"]},
        "e": {"depends_on": ["a", "d"]}
    }});
    let p = plan_of(&doc);
    let groups = &p.scopes[0].parallel_groups;
    assert_eq!(
        groups,
        &vec![ids(&["a"]), ids(&["c", "b"]), ids(&["d"]), ids(&["e"])]
    );
}

#[test]
fn unreachable_nodes_are_listed_and_never_run() {
    let doc = json!({"entrypoints": ["a"], "nodes": {
        "a": {}, "b": {"depends_on": ["a"]},
        "x": {}, "y": {"depends_on": ["x"]}
    }});
    let p = plan_of(&doc);
    assert_eq!(p.scopes[0].unreachable, ids(&["x", "y"]));
    assert_eq!(p.scopes[0].entrypoints, ids(&["a"]));
    assert_eq!(p.worst_case_executions, 2);
    assert_eq!(p.executions.get("/nodes/x"), Some(0));
}

#[test]
fn critical_path_weighs_wall_clock_estimates() {
    let est = |s: f64| json!({"wall_clock_seconds": s});
    let doc = json!({"entrypoints": ["a", "e"], "nodes": {
        "a": {"estimate": est(10.0)},
        "b": {"depends_on": ["a"], "estimate": est(100.0)},
        "c": {"depends_on": ["a"], "estimate": est(50.0)},
        "d": {"depends_on": ["b", "c"], "estimate": est(5.0)},
        "e": {"estimate": est(100.0)}
    }});
    let cp = plan_of(&doc).scopes[0].critical_path.clone().unwrap();
    assert_eq!(cp.nodes, ids(&["a", "b", "d"]));
    assert_eq!(cp.seconds, 115.0);
}

#[test]
fn critical_path_without_estimates_is_the_longest_chain_first_declared() {
    let doc = json!({"entrypoints": ["a"], "nodes": {
        "a": {}, "b": {"depends_on": ["a"]}, "c": {"depends_on": ["a"]},
        "d": {"depends_on": ["c", "b"]}, "z": {}
    }});
    let cp = plan_of(&doc).scopes[0].critical_path.clone().unwrap();
    assert_eq!(cp.nodes, ids(&["a", "b", "d"]));
    assert_eq!(cp.seconds, 0.0);
}

#[test]
fn a_cycle_gives_no_order_but_a_witness() {
    let doc = json!({"entrypoints": ["s"], "nodes": {
        "s": {}, "a": {"depends_on": ["s", "b"]}, "b": {"depends_on": ["a"]}
    }});
    let root = &plan_of(&doc).scopes[0];
    assert_eq!(root.order, None);
    assert_eq!(root.cycle, Some(ids(&["a", "b", "a"])));
    assert!(root.parallel_groups.is_empty());
    assert!(root.critical_path.is_none());
}

#[test]
fn worst_case_multiplies_retry_through_loop_and_map() {
    let doc = json!({"entrypoints": ["l"], "nodes": {
        "l": {"type": "loop", "loop": {"mode": "repeat", "max_iterations": 5, "body": {
            "entrypoints": ["m"], "nodes": {
                "m": {"type": "map", "map": {"over": "params.xs", "as": "x", "max_items": 10, "body": {
                    "entrypoints": ["t"], "nodes": {
                        "t": {"failure": {"retry": {"max_attempts": 3}}}
                    }}}}
            }}}}
    }, "constraints": {"max_node_executions": 150}});
    let p = plan_of(&doc);
    assert_eq!(p.worst_case_executions, 1 + 5 * (1 + 10 * 3));
    assert_eq!(p.executions.get("/nodes/l"), Some(1));
    assert_eq!(p.executions.get("/nodes/l/loop/body/nodes/m"), Some(5));
    assert_eq!(
        p.executions
            .get("/nodes/l/loop/body/nodes/m/map/body/nodes/t"),
        Some(150)
    );
    assert_eq!(sum_executions(&p), p.worst_case_executions);
    assert_eq!(p.max_node_executions, Some(150));
    assert_eq!(p.exceeds_max_node_executions, Some(true));
    let kinds: Vec<_> = p.scopes.iter().map(|s| (s.kind, s.instances)).collect();
    assert_eq!(kinds, vec![("root", 1), ("loop_body", 5), ("map_body", 50)]);
}

#[test]
fn defaults_apply_per_scope_and_never_to_gates() {
    let doc = json!({
        "defaults": {"failure": {"retry": {"max_attempts": 3}}},
        "entrypoints": ["a"],
        "nodes": {
            "a": {},
            "g": {"type": "gate", "depends_on": ["a"], "gate": {"mode": "approve"},
                  "failure": {"retry": {"max_attempts": 9}}},
            // The container inherits retry from defaults: each attempt reruns its child.
            "s": {"type": "subgraph", "depends_on": ["g"], "subgraph": {"use": "frag"}}
        },
        "subgraphs": {
            "frag": {"entrypoints": ["f1"], "nodes": {
                "f1": {}, "f2": {"depends_on": ["f1"], "failure": {"retry": {"max_attempts": 2}}}
            }}
        }
    });
    let p = plan_of(&doc);
    // a: 3, g: 1, s: 3 × (1 + (f1: 1 + f2: 2))
    assert_eq!(p.worst_case_executions, 3 + 1 + 3 * (1 + 3));
    assert_eq!(p.executions.get("/subgraphs/frag/nodes/f1"), Some(3));
    assert_eq!(p.executions.get("/subgraphs/frag/nodes/f2"), Some(6));
    assert_eq!(sum_executions(&p), p.worst_case_executions);
    let frag = p.scopes.iter().find(|s| s.kind == "fragment").unwrap();
    assert_eq!(frag.name.as_deref(), Some("frag"));
    assert_eq!(frag.owner, None);
    assert_eq!(frag.worst_case_executions, 3);
}

#[test]
fn fragment_defaults_apply_inside_the_fragment() {
    let doc = json!({
        "entrypoints": ["s"],
        "nodes": {"s": {"type": "subgraph", "subgraph": {"inline": {
            "defaults": {"failure": {"retry": {"max_attempts": 4}}},
            "entrypoints": ["x"], "nodes": {"x": {}}
        }}}}
    });
    assert_eq!(plan_of(&doc).worst_case_executions, 1 + 4);
}

#[test]
fn fallback_alternates_and_escalation_nodes_add_their_own_worst_case() {
    let doc = json!({"entrypoints": ["a"], "nodes": {
        "a": {"failure": {
            "retry": {"max_attempts": 2},
            "fallback": [{"strategy": "alternate_node", "node": "b"}, {"strategy": "skip"}],
            "escalation": {"to": "node", "node": "c"}
        }},
        "b": {"failure": {"retry": {"max_attempts": 3}}},
        "c": {}
    }});
    let p = plan_of(&doc);
    assert_eq!(p.worst_case_executions, 2 + 3 + 1);
    assert_eq!(p.executions.get("/nodes/b"), Some(3));
    assert_eq!(p.scopes[0].unreachable, ids(&["b", "c"]));
}

#[test]
fn fallback_cycles_are_cut_and_reported() {
    let doc = json!({"entrypoints": ["a"], "nodes": {
        "a": {"failure": {"fallback": [{"strategy": "alternate_node", "node": "b"}]}},
        "b": {"failure": {"fallback": [{"strategy": "alternate_node", "node": "a"}]}},
        "c": {"depends_on": ["a"], "failure": {"escalation": {"to": "node", "node": "c"}}}
    }});
    let p = plan_of(&doc);
    assert!(p.worst_case_executions >= 2);
    assert!(p.recursion.iter().any(|r| r.reason == "fallback_cycle"));
    assert!(
        p.recursion
            .iter()
            .any(|r| r.pointer == "/nodes/c/failure" && r.target == "c")
    );
}

#[test]
fn recursive_fragment_use_is_cut_and_reported() {
    let doc = json!({
        "entrypoints": ["s"],
        "nodes": {"s": {"type": "subgraph", "subgraph": {"use": "f1"}}},
        "subgraphs": {
            "f1": {"entrypoints": ["n1"], "nodes": {"n1": {"type": "subgraph", "subgraph": {"use": "f2"}}}},
            "f2": {"entrypoints": ["n2"], "nodes": {"n2": {"type": "loop", "loop": {"mode": "repeat", "max_iterations": 3, "use": "f1"}}}},
            "me": {"entrypoints": ["m"], "nodes": {"m": {"type": "subgraph", "subgraph": {"use": "me"}}}}
        }
    });
    let p = plan_of(&doc);
    // s: 1 + f1; f1: n1 = 1 + f2; f2: n2 = 1 + 3 × (cut) = 1.
    assert_eq!(p.worst_case_executions, 3);
    let cut: Vec<_> = p
        .recursion
        .iter()
        .map(|r| (r.pointer.as_str(), r.reason, r.target.as_str()))
        .collect();
    assert_eq!(
        cut,
        vec![
            ("/subgraphs/f2/nodes/n2", "recursive_use", "f1"),
            ("/subgraphs/me/nodes/m", "recursive_use", "me"),
        ]
    );
}

#[test]
fn shared_fragments_are_not_rewalked_per_use() {
    // 40 fragments, each using the next twice: re-walking per use would take 2^40 steps.
    let mut subgraphs = serde_json::Map::new();
    for i in 0..40 {
        let next = format!("f{}", i + 1);
        let nodes = if i == 39 {
            json!({"x": {}})
        } else {
            json!({"x": {"type": "subgraph", "subgraph": {"use": next}},
                   "y": {"type": "subgraph", "subgraph": {"use": next}}})
        };
        subgraphs.insert(
            format!("f{i}"),
            json!({"entrypoints": ["x", "y"], "nodes": nodes}),
        );
    }
    let doc = json!({"entrypoints": ["s"], "nodes": {"s": {"type": "subgraph", "subgraph": {"use": "f0"}}},
                     "subgraphs": subgraphs});
    let p = plan_of(&doc);
    // W(f39) = 1; W(fi) = 2 × (1 + W(fi+1)) → W(f0) = 3 × 2^39 − 2; plus s itself.
    assert_eq!(p.worst_case_executions, 1 + 3 * (1u64 << 39) - 2);
    assert_eq!(sum_executions(&p), p.worst_case_executions);
}

#[test]
fn worst_case_saturates_instead_of_overflowing() {
    let mut body = json!({"entrypoints": ["t"], "nodes": {"t": {}}});
    for _ in 0..6 {
        body = json!({"entrypoints": ["m"], "nodes": {"m": {"type": "map", "map": {
            "over": "params.xs", "as": "x", "max_items": 10000, "body": body}}}});
    }
    let mut doc = body;
    doc["constraints"] = json!({"max_node_executions": 60});
    let p = plan_of(&doc);
    assert_eq!(p.worst_case_executions, u64::MAX);
    assert_eq!(p.exceeds_max_node_executions, Some(true));
}

#[test]
fn refs_and_unknown_fragments_count_once_and_are_listed() {
    let doc = json!({"entrypoints": ["r"], "nodes": {
        "r": {"type": "subgraph", "subgraph": {"ref": {"uri": "./child.agraph.yaml"}}},
        "u": {"type": "subgraph", "depends_on": ["r"], "subgraph": {"use": "missing"}}
    }});
    let p = plan_of(&doc);
    assert_eq!(p.worst_case_executions, 2);
    let un: Vec<_> = p
        .unresolved_refs
        .iter()
        .map(|u| (u.pointer.as_str(), u.kind, u.target.as_str()))
        .collect();
    assert_eq!(
        un,
        vec![
            ("/nodes/r/subgraph", "ref", "./child.agraph.yaml"),
            ("/nodes/u/subgraph", "unknown_fragment", "missing"),
        ]
    );
}

#[test]
fn cost_math_prefers_container_estimates_and_multiplies_the_worst_case() {
    let doc = json!({
        "constraints": {"max_cost_usd": 10.0},
        "entrypoints": ["a"],
        "nodes": {
            "a": {"estimate": {"cost_usd": 1.0}, "failure": {"retry": {"max_attempts": 3}}},
            "b": {"depends_on": ["a"], "estimate": {"cost_usd": 2.5}},
            "l": {"type": "loop", "depends_on": ["b"], "loop": {"mode": "repeat", "max_iterations": 4, "body": {
                "entrypoints": ["t"], "nodes": {"t": {"estimate": {"cost_usd": 0.5}, "failure": {"retry": {"max_attempts": 2}}}}}}},
            "m": {"type": "map", "depends_on": ["l"], "estimate": {"cost_usd": 3.0}, "map": {
                "over": "params.xs", "as": "x", "max_items": 7, "body": {
                "entrypoints": ["t2"], "nodes": {"t2": {"estimate": {"cost_usd": 100.0}}}}}},
            "c": {"depends_on": ["m"]},
            "g": {"type": "gate", "depends_on": ["c"], "gate": {"mode": "approve"}},
            "never": {"estimate": {"cost_usd": 50.0}}
        }
    });
    let cost = plan_of(&doc).cost;
    assert_eq!(cost.expected_usd, 1.0 + 2.5 + 4.0 * 0.5 + 3.0);
    assert_eq!(
        cost.worst_case_usd,
        3.0 * 1.0 + 2.5 + 4.0 * (2.0 * 0.5) + 3.0
    );
    assert_eq!(cost.ceiling_usd, Some(10.0));
    assert_eq!(cost.exceeds_ceiling, Some(true));
    assert_eq!(cost.nodes_without_estimate, 1, "only c; gates cost nothing");
    assert_eq!(cost.tokens, None);
}

#[test]
fn token_preview_appears_when_estimates_give_tokens() {
    let doc = json!({
        "constraints": {"max_total_tokens": 50000},
        "entrypoints": ["a"],
        "nodes": {
            "a": {"estimate": {"tokens": 10000}, "failure": {"retry": {"max_attempts": 2}}},
            "b": {"depends_on": ["a"], "estimate": {"tokens": 40000}}
        }
    });
    let cost = plan_of(&doc).cost;
    assert_eq!(cost.exceeds_ceiling, None);
    let t = cost.tokens.unwrap();
    assert_eq!(
        (t.expected, t.worst_case, t.ceiling),
        (50000, 60000, Some(50000))
    );
    assert_eq!(t.exceeds_ceiling, Some(true));
    assert_eq!(t.nodes_without_estimate, 0);
}

#[test]
fn tier_histogram_uses_effective_tiers_and_skips_gates() {
    let doc = json!({
        "defaults": {"intelligence": {"tier": "advanced"}},
        "entrypoints": ["a"],
        "nodes": {
            "a": {},
            "b": {"intelligence": {"tier": "minimal"}},
            "g": {"type": "gate", "gate": {"mode": "approve"}},
            "d": {"type": "decision", "intelligence": {"tier": "frontier"}, "decision": {"branches": []}},
            "l": {"type": "loop", "loop": {"mode": "repeat", "max_iterations": 2, "body": {
                "entrypoints": ["t"], "nodes": {"t": {}}}}}
        }
    });
    let p = plan_of(&doc);
    let t = &p.tiers;
    assert_eq!(
        (t.minimal, t.standard, t.advanced, t.frontier, t.unset),
        (1, 0, 2, 1, 1)
    );
    assert!(p.tier_routing_note.contains("standard"));
}

#[test]
fn human_interactions_are_collected_with_policy_fallbacks() {
    let doc = json!({
        "policy": {"default_human_timeout_seconds": 600, "on_human_timeout": "fail"},
        "defaults": {"human": [{"at": "before_start", "mode": "notify"}]},
        "entrypoints": ["g"],
        "nodes": {
            "g": {"type": "gate", "gate": {"mode": "input", "roles": ["ops"]}},
            "t": {"depends_on": ["g"], "human": [{"id": "h", "at": "after_outputs", "mode": "review", "required": false, "timeout_seconds": 5}],
                  "success": {"criteria": [{"id": "ok", "kind": "human", "description": "d", "prompt": "p", "roles": ["qa"]}]}}
        },
        "success": {"criteria": [{"id": "signoff", "kind": "human", "description": "d", "prompt": "p", "severity": "advisory"}]}
    });
    let h = plan_of(&doc).gates;
    assert_eq!(h.nodes.len(), 1);
    assert_eq!(h.nodes[0].on_timeout, "fail");
    assert_eq!(h.nodes[0].timeout_seconds, Some(600.0));
    assert_eq!(h.nodes[0].roles, ids(&["ops"]));
    assert_eq!(h.nodes[0].on_reject, "fail");
    let cps: Vec<_> = h
        .checkpoints
        .iter()
        .map(|c| {
            (
                c.node.as_str(),
                c.pointer.as_str(),
                c.at.as_deref(),
                c.required,
                c.timeout_seconds,
            )
        })
        .collect();
    assert_eq!(
        cps,
        vec![
            (
                "g",
                "/defaults/human/0",
                Some("before_start"),
                true,
                Some(600.0)
            ),
            (
                "t",
                "/nodes/t/human/0",
                Some("after_outputs"),
                false,
                Some(5.0)
            ),
        ]
    );
    let crit: Vec<_> = h
        .criteria
        .iter()
        .map(|c| (c.node.as_deref(), c.id.as_deref(), c.required))
        .collect();
    assert_eq!(
        crit,
        vec![
            (Some("t"), Some("ok"), true),
            (None, Some("signoff"), false)
        ]
    );
}

#[test]
fn hostile_shapes_never_panic() {
    let docs = [
        json!({}),
        json!({"nodes": []}),
        json!({"nodes": {"a": 1, "b": null, "c": []}, "entrypoints": "a", "edges": {"x": 1}}),
        json!({"nodes": {"a": {"type": "loop"}, "b": {"type": "map", "map": 3}, "c": {"type": 7}}}),
        json!({"nodes": {"a": {"type": "loop", "loop": {"max_iterations": "many", "body": []}}}}),
        json!({"nodes": {"a": {"type": "loop", "loop": {"max_iterations": -3.5, "body": {"nodes": {"x": {}}}}}},
               "entrypoints": ["a"]}),
        json!({"nodes": {"a": {"failure": {"retry": {"max_attempts": 1e300}, "fallback": "x", "escalation": 3}}},
               "entrypoints": ["a", "a", 5], "constraints": {"max_node_executions": "x", "max_cost_usd": []}}),
        json!({"nodes": {"a": {"estimate": {"cost_usd": -1, "tokens": 1e308, "wall_clock_seconds": "x"}}},
               "entrypoints": ["a"], "edges": [{"from": "a", "to": "a"}, 4, {"from": 1}]}),
        json!({"subgraphs": [], "policy": 3, "defaults": {"human": {"at": 1}, "failure": []},
               "nodes": {"a": {"human": [1, {"at": []}], "success": {"criteria": {"kind": "human"}}}}}),
        json!({"nodes": {"a": {"type": "subgraph", "subgraph": {"ref": "x", "use": 3, "inline": 4}}}}),
    ];
    for doc in &docs {
        let root = doc.as_object().unwrap();
        let p = plan(root);
        let _ = serde_json::to_string(&p).unwrap();
        let _ = weft_ags::levels::detect(root);
        let _ = weft_ags::levels::refuse_above(root, 0);
    }
}

#[test]
fn library_v1_release_plan_facts() {
    let doc = example("library-v1-release.agraph.yaml");
    let p = plan_of(&doc);
    assert_eq!(p.graph_id.as_deref(), Some("examples/library-v1-release"));
    assert_eq!(p.required_level, 3);
    assert_eq!(p.declared_level, Some(3));
    assert_eq!(p.scopes.len(), 1);
    let root = &p.scopes[0];
    let order = root.order.clone().unwrap();
    assert_eq!(order.first().map(String::as_str), Some("audit_codebase"));
    assert_eq!(order.last().map(String::as_str), Some("publish"));
    assert!(root.unreachable.is_empty());
    assert_eq!(
        root.parallel_groups[3],
        ids(&["implement_api", "write_test_suite", "write_documentation"])
    );
    assert_eq!(root.parallel_groups.len(), 10);
    let cp = root.critical_path.clone().unwrap();
    assert_eq!(cp.nodes.len(), 10);
    assert_eq!(cp.nodes[3], "implement_api");
    // Two gates, two checkpoints (after_outputs, before_side_effects), one human criterion.
    assert_eq!(p.gates.nodes.len(), 2);
    assert_eq!(p.gates.nodes[0].timeout_seconds, Some(172800.0));
    assert_eq!(p.gates.checkpoints.len(), 2);
    assert_eq!(p.gates.criteria.len(), 1);
    let t = &p.tiers;
    assert_eq!(
        (t.minimal, t.standard, t.advanced, t.frontier, t.unset),
        (2, 4, 3, 1, 0)
    );
    // defaults.failure.retry (2 attempts) applies to every node without its own failure
    // block; implement_api and publish retry 3 times, gates once.
    assert_eq!(p.worst_case_executions, 24);
    assert_eq!(p.exceeds_max_node_executions, Some(false));
    assert_eq!(p.cost.expected_usd, 27.0);
    assert_eq!(p.cost.worst_case_usd, 60.3);
    assert_eq!(p.cost.ceiling_usd, Some(25.0));
    assert_eq!(p.cost.exceeds_ceiling, Some(true));
    assert_eq!(p.cost.nodes_without_estimate, 0);
    // Both serializations plan identically.
    let from_json = plan_of(&example("library-v1-release.agraph.json"));
    assert_eq!(
        serde_json::to_value(&p).unwrap(),
        serde_json::to_value(&from_json).unwrap()
    );
}

#[test]
fn docs_site_refresh_plan_facts() {
    let p = plan_of(&example("docs-site-refresh.agraph.yaml"));
    let kinds: Vec<_> = p
        .scopes
        .iter()
        .map(|s| (s.kind, s.owner.as_deref()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("root", None),
            ("map_body", Some("refresh_pages")),
            ("fragment", None)
        ]
    );
    // inventory 1 + map (1 + 200 × refresh_page retried twice) + ref 1 + fix_links 1
    // + use (1 + build_site 1 + check_build 1).
    assert_eq!(p.worst_case_executions, 1 + (1 + 200 * 2) + 1 + 1 + 3);
    assert_eq!(p.exceeds_max_node_executions, Some(true));
    assert_eq!(p.unresolved_refs.len(), 1);
    assert_eq!(p.unresolved_refs[0].target, "./link-audit.agraph.yaml");
    assert_eq!(sum_executions(&p), p.worst_case_executions);
    // Container estimates stand for their whole run.
    assert_eq!(p.cost.expected_usd, 5.0 + 15.0 + 2.0 + 3.0 + 0.5);
    assert_eq!(p.gates.criteria.len(), 1);
    assert_eq!(p.gates.checkpoints.len(), 1);
}

#[test]
fn test_repair_loop_plan_facts() {
    let p = plan_of(&example("test-repair-loop.agraph.yaml"));
    // baseline 1 + loop (1 + 5 × (run_tests 1 + diagnose 1 + apply_fix 2)) + summary 1.
    assert_eq!(p.worst_case_executions, 1 + (1 + 5 * 4) + 1);
    assert_eq!(p.exceeds_max_node_executions, Some(false));
    let body = &p.scopes[1];
    assert_eq!(body.kind, "loop_body");
    assert_eq!(body.instances, 5);
    assert_eq!(
        body.order,
        Some(ids(&["run_tests", "diagnose", "apply_fix"]))
    );
    assert_eq!(p.tiers.unset, 0);
}

#[test]
fn plans_of_every_example_are_consistent() {
    for name in [
        "minimal.agraph.yaml",
        "library-v1-release.agraph.yaml",
        "test-repair-loop.agraph.yaml",
        "docs-site-refresh.agraph.yaml",
        "link-audit.agraph.yaml",
    ] {
        let p = plan_of(&example(name));
        assert_eq!(sum_executions(&p), p.worst_case_executions, "{name}");
        assert!(p.recursion.is_empty(), "{name}");
        assert!(p.scopes.iter().all(|s| s.order.is_some()), "{name}");
        assert_eq!(p.unsupported_features.len(), p.features.len(), "{name}");
    }
}

#[test]
fn escalations_to_people_are_human_interactions() {
    let doc = serde_json::json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "t", "title": "t", "objective": "o",
        "defaults": {"failure": {"escalation": {"to": "human", "roles": ["oncall"]}}},
        "entrypoints": ["a"],
        "nodes": {
            "a": {"title": "A", "description": "d"},
            "g": {"type": "gate", "title": "G", "description": "d", "depends_on": ["a"], "gate": {"mode": "approve"}},
            "b": {"title": "B", "description": "d", "depends_on": ["g"], "failure": {"escalation": {"to": "node", "node": "a"}}}
        }
    });
    let p = weft_ags::plan::plan(doc.as_object().unwrap());
    let esc: Vec<(&str, &[String])> = p
        .gates
        .escalations
        .iter()
        .map(|e| (e.node.as_str(), e.roles.as_slice()))
        .collect();
    // `a` inherits the default escalation; the gate never does (defaults.failure skips
    // gates); `b` escalates to a node, not a person.
    assert_eq!(esc, vec![("a", &["oncall".to_string()][..])]);
}

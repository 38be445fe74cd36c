//! Kill-and-resume inside loops and maps, for real: `weft run` of a graph whose loop body
//! maps over items (exec commands in every instance) is killed with SIGKILL at 30 seeded
//! points — after the k-th event reached the `--jsonl` stream, plus a seeded delay that
//! lands inside commands and appends — then `weft resume --retry-uncertain` finishes it.
//! Each time the run record equals the uninterrupted run's (status, graph outputs, every
//! node run by its address with its status, outputs and instance counts; times, ids and
//! attempt counts normalised away), each node instance finished once with no attempt
//! started twice, completed instances were never run again, and the audit log verifies and
//! covers each audited event once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

mod kill;

use serde_json::{Value, json};
use weft_store::Store;
use weft_test_support::log::normalised_record;

const POINTS: u64 = 30;

/// A python one-liner over the stdin inputs `i` that prints its result.
fn py(expr: &str) -> String {
    format!("python3 -c 'import json,sys; i=json.load(sys.stdin); print(json.dumps({expr}))'")
}

/// A loop (until the sum passes 20) whose body maps over three items, then sums them.
fn graph() -> Value {
    let item = json!({"entrypoints": ["d"], "nodes": {"d": {
        "title": "t", "description": "d",
        "inputs": {"n": {"type": "integer", "description": "v", "from": "x"}},
        "outputs": {"d": {"type": "integer", "description": "v"}},
        "x-weft-exec": {"run": format!("sleep 0.02; {}", py("dict(d=i[\"n\"] * 2)"))}
    }}});
    let map = json!({"type": "map", "title": "t", "description": "d", "map": {
        "over": "params.xs", "as": "x", "max_items": 10, "max_parallel": 2,
        "collect": {"ds": "nodes.d.outputs.d"},
        "body": item
    }});
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "kill-fragments", "version": "1.0.0",
        "title": "t", "objective": "survive kill -9 inside loops and maps", "description": "d",
        "entrypoints": ["l"],
        "constraints": {"max_parallel_nodes": 2},
        "nodes": {
            "l": {"type": "loop", "title": "t", "description": "d", "loop": {
                "mode": "until", "condition": "nodes.sum.outputs.acc > 20", "max_iterations": 5,
                "carry": {"acc": "acc"},
                "collect": {"acc": "nodes.sum.outputs.acc"},
                "body": {
                    "params": {
                        "acc": {"type": "integer", "description": "v", "required": false, "default": 0},
                        "xs": {"type": "array", "description": "v", "required": false, "default": [1, 2, 3]}
                    },
                    "entrypoints": ["m"],
                    "nodes": {
                        "m": map,
                        "sum": {"title": "t", "description": "d", "depends_on": ["m"],
                            "inputs": {"ds": {"type": "array", "description": "v", "from": "nodes.m.outputs.ds"},
                                       "acc": {"type": "integer", "description": "v", "from": "params.acc"}},
                            "outputs": {"acc": {"type": "integer", "description": "v"}},
                            "x-weft-exec": {"run": py("dict(acc=sum(i[\"ds\"]) + i[\"acc\"])")}}
                    }
                }
            }},
            "after": {"title": "t", "description": "d", "depends_on": ["l"],
                "inputs": {"acc": {"type": "integer", "description": "v", "from": "nodes.l.outputs.acc"}},
                "outputs": {"acc": {"type": "integer", "description": "v"}},
                "x-weft-exec": {"run": "cat"}}
        },
        "outputs": {"acc": {"type": "integer", "description": "v", "from": "nodes.after.outputs.acc"}}
    })
}

/// The run record without times, ids and attempt counts: each node run by its address
/// (`weft_test_support::log::normalised_record`).
fn normalised(store: &Store, run_id: &str) -> Value {
    normalised_record(&weft_engine::record::record_of(store, run_id).unwrap())
}

#[test]
fn seeded_kills_inside_loops_and_maps_resume_to_the_uninterrupted_record() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (expected, total) = kill::uninterrupted(d, &graph(), normalised);
    // The shape this test relies on: two iterations of three items each.
    assert_eq!(expected["outputs"], json!({"acc": 24}), "{expected}");
    let states = expected["nodes"].to_string();
    assert!(states.contains(r#"["l[1].m[2].d","succeeded""#), "{states}");

    let resumed = kill::kill_and_resume(
        d,
        "g.agraph.json",
        POINTS,
        0x00f4_a9e0_c0de_0001,
        total,
        &expected,
        normalised,
    );
    // Most points fall before the end of the run (a few may land after `run_finished`).
    assert!(
        resumed >= POINTS / 2,
        "only {resumed} of {POINTS} kills left work to resume"
    );
}

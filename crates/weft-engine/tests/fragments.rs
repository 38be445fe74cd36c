//! `map` and `loop` nodes end to end with `exec` bodies: each item and iteration its own
//! scope instance in the run's log (`scope` member), `collect` in input order with `null`
//! for failed items, `max_items` (RT026), `max_parallel`, `carry`, `loop.*` bindings,
//! `until`/`while`/`repeat`, `max_iterations` (RT021), the run record's `scope_path` nodes
//! validating against the AGS schema, and the root replay ignoring fragment events.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;
use common::{assert_valid, py, record_node, state};
use serde_json::{Value, json};
use weft_engine::record::record_of;
use weft_engine::{FinalStatus, RunOptions, RunReport, replay_run, run_document};
use weft_store::{EventLog, Store};
use weft_test_support::log::normalised_record;

fn options(dir: &std::path::Path) -> RunOptions {
    RunOptions {
        project_dir: dir.to_path_buf(),
        max_parallel: Some(4),
        ..RunOptions::default()
    }
}

fn graph(nodes: Value, outputs: Value) -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/fragments",
        "params": {"xs": {"type": "array", "required": false, "default": [1, 2, 3]}},
        "entrypoints": ["m"],
        "nodes": nodes,
        "outputs": outputs,
    })
}

fn doubling_map(extra: Value) -> Value {
    let mut map = json!({
        "over": "params.xs", "as": "x", "max_items": 10, "max_parallel": 2,
        "collect": {"doubles": "nodes.double.outputs.d"},
        "body": {
            "entrypoints": ["double"],
            "nodes": {"double": {
                "type": "task", "description": "double one item",
                "inputs": {"n": {"type": "integer", "from": "x"}, "at": {"type": "integer", "from": "index"}},
                "outputs": {"d": {"type": "integer"}},
                "x-weft-exec": {"run": py("dict(d=1 // 0 if i[\"n\"] == 99 else i[\"n\"] * 2)")}
            }}
        }
    });
    if let (Some(m), Some(e)) = (map.as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    graph(
        json!({"m": {"type": "map", "description": "double each", "map": map,
                      "outputs": {"doubles": {"type": "array"}}}}),
        json!({"doubles": {"type": "array", "from": "nodes.m.outputs.doubles"}}),
    )
}

async fn run_with(doc: &Value, store: &Store, params: Value) -> (RunReport, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(dir.path());
    o.params = params.as_object().cloned().unwrap_or_default();
    let report = run_document(doc, store, &o).await.unwrap();
    (report, dir)
}

fn scopes(store: &Store, run_id: &str) -> Vec<String> {
    store
        .read(run_id, 1, 100_000)
        .unwrap()
        .iter()
        .filter(|r| r.kind == "run_started")
        .filter_map(|r| weft_engine::scope_of(r).map(str::to_string))
        .collect()
}

#[tokio::test]
async fn a_map_runs_each_item_in_its_own_scope_and_collects_in_input_order() {
    let doc = doubling_map(json!({}));
    let store = Store::open_in_memory().unwrap();
    let (report, _dir) = run_with(&doc, &store, json!({"xs": [5, 1, 7, 3]})).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(report.outputs["doubles"], json!([10, 2, 14, 6]));
    assert_eq!(state(&report, "m"), "succeeded");
    assert_eq!(
        scopes(&store, &report.run_id),
        ["m[0]", "m[1]", "m[2]", "m[3]"]
    );
    // The root replay sees the root scope only, and agrees with the live run.
    let replayed = replay_run(&doc, &store, &report.run_id).unwrap();
    assert!(replayed.is_finished());
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert_eq!(record_node(&record, "m")["items"], json!(4));
    let inner: Vec<&Value> = record["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["node_id"] == "double")
        .collect();
    assert_eq!(inner.len(), 4);
    assert_eq!(inner[2]["scope_path"], json!("m[2].double"));
    assert_eq!(inner[2]["inputs"], json!({"n": 7, "at": 2}));
    assert_eq!(inner[2]["outputs"], json!({"d": 14}));
    assert_eq!(inner[2]["status"], json!("succeeded"));
}

#[tokio::test]
async fn over_max_items_is_refused_with_rt026_never_truncated_silently() {
    let doc = doubling_map(json!({"max_items": 2}));
    let store = Store::open_in_memory().unwrap();
    let (report, _dir) = run_with(&doc, &store, json!({})).await;
    assert_eq!(state(&report, "m"), "failed");
    let error = report.nodes[0].error.clone().unwrap_or_default();
    assert!(error.contains("RT026"), "{error}");
    assert!(scopes(&store, &report.run_id).is_empty());
    // `on_over_limit: truncate` runs the first items and says so.
    let doc = doubling_map(json!({"max_items": 2, "on_over_limit": "truncate"}));
    let (report, _dir) = run_with(&doc, &store, json!({})).await;
    assert_eq!(report.outputs["doubles"], json!([2, 4]));
    assert_eq!(scopes(&store, &report.run_id), ["m[0]", "m[1]"]);
}

#[tokio::test]
async fn a_failed_item_is_null_under_continue_and_fails_the_map_under_fail_fast() {
    let store = Store::open_in_memory().unwrap();
    let doc = doubling_map(json!({"on_item_failure": "continue"}));
    let (report, _dir) = run_with(&doc, &store, json!({"xs": [1, 99, 3]})).await;
    assert_eq!(state(&report, "m"), "succeeded", "{report:#?}");
    assert_eq!(report.outputs["doubles"], json!([2, null, 6]));
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    let failed = record["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["scope_path"] == "m[1].double")
        .unwrap();
    assert_eq!(failed["status"], json!("failed"));

    let doc = doubling_map(json!({"max_parallel": 1}));
    let (report, _dir) = run_with(&doc, &store, json!({"xs": [1, 99, 3, 4]})).await;
    assert_eq!(state(&report, "m"), "failed");
    // Sequential and fail-fast: nothing starts after the failed item.
    assert_eq!(scopes(&store, &report.run_id), ["m[0]", "m[1]"]);

    let doc = doubling_map(json!({"on_item_failure": "threshold", "min_successes": 3}));
    let (report, _dir) = run_with(&doc, &store, json!({"xs": [1, 99, 3]})).await;
    assert_eq!(state(&report, "m"), "failed");
    let (report, _dir) = run_with(&doc, &store, json!({"xs": [1, 99, 3, 4]})).await;
    assert_eq!(state(&report, "m"), "succeeded");
    assert_eq!(report.outputs["doubles"], json!([2, null, 6, 8]));
}

#[tokio::test]
async fn max_parallel_bounds_the_items_running_at_once() {
    // Each item logs its start and end to a file; the most items between a start and its
    // end is the concurrency actually used.
    let run = "python3 -c 'import json,sys,time,os; i=json.load(sys.stdin); f=open(\"trace\",\"a\"); f.write(\"+\\n\"); f.flush(); time.sleep(0.05); f.write(\"-\\n\"); f.close(); print(json.dumps({\"d\": i[\"n\"]}))'";
    for limit in [1, 2] {
        let mut doc = doubling_map(json!({"max_parallel": limit}));
        doc["nodes"]["m"]["map"]["body"]["nodes"]["double"]["x-weft-exec"]["run"] = json!(run);
        let store = Store::open_in_memory().unwrap();
        let (report, dir) = run_with(&doc, &store, json!({"xs": [1, 2, 3, 4, 5, 6]})).await;
        assert_eq!(report.outputs["doubles"], json!([1, 2, 3, 4, 5, 6]));
        let trace = std::fs::read_to_string(dir.path().join("trace")).unwrap();
        let (mut now, mut most) = (0i32, 0i32);
        for line in trace.lines() {
            now += if line == "+" { 1 } else { -1 };
            most = most.max(now);
        }
        assert!(
            most <= limit,
            "{most} running at once over max_parallel {limit}"
        );
    }
}

fn counting_loop(mode: &str, condition: Option<&str>, extra: Value) -> Value {
    let mut lp = json!({
        "mode": mode, "max_iterations": 5,
        "carry": {"acc": "acc"},
        "collect": {"total": "nodes.step.outputs.acc", "seen": "nodes.step.outputs.iteration"},
        "body": {
            "params": {"acc": {"type": "integer", "required": false, "default": 0}},
            "entrypoints": ["step"],
            "nodes": {"step": {
                "type": "task", "description": "add one",
                "inputs": {
                    "acc": {"type": "integer", "from": "params.acc"},
                    "iteration": {"type": "integer", "from": "loop.iteration"},
                    "previous": {"type": "integer", "required": false, "from": "loop.previous.total"}
                },
                "outputs": {"acc": {"type": "integer"}, "iteration": {"type": "integer"},
                            "previous": {"type": "integer", "required": false}},
                "x-weft-exec": {"run": py("dict(acc=i[\"acc\"] + 1, iteration=i[\"iteration\"], previous=i.get(\"previous\"))")}
            }}
        }
    });
    if let Some(c) = condition {
        lp["condition"] = json!(c);
    }
    if let (Some(m), Some(e)) = (lp.as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/loop",
        "entrypoints": ["l"],
        "nodes": {"l": {"type": "loop", "description": "count", "loop": lp,
                        "outputs": {"total": {"type": "integer"}, "seen": {"type": "integer"}}}},
        "outputs": {"total": {"type": "integer", "from": "nodes.l.outputs.total"}},
    })
}

#[tokio::test]
async fn an_until_loop_carries_state_and_collects_from_the_final_iteration() {
    let doc = counting_loop("until", Some("nodes.step.outputs.acc >= 3"), json!({}));
    let store = Store::open_in_memory().unwrap();
    let (report, _dir) = run_with(&doc, &store, json!({})).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(report.outputs["total"], json!(3));
    assert_eq!(scopes(&store, &report.run_id), ["l[0]", "l[1]", "l[2]"]);
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert_eq!(record_node(&record, "l")["iterations"], json!(3));
    assert_eq!(
        record_node(&record, "l")["outputs"],
        json!({"total": 3, "seen": 3})
    );
    let third = record["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["scope_path"] == "l[2].step")
        .unwrap();
    // `loop.previous` is the previous iteration's collect.
    assert_eq!(
        third["inputs"],
        json!({"acc": 2, "iteration": 3, "previous": 2})
    );
}

#[tokio::test]
async fn a_while_loop_tests_before_each_iteration() {
    let doc = counting_loop(
        "while",
        Some("loop.index == 0 || nodes.step.outputs.acc < 2"),
        json!({}),
    );
    let store = Store::open_in_memory().unwrap();
    let (report, _dir) = run_with(&doc, &store, json!({})).await;
    assert_eq!(report.outputs["total"], json!(2), "{report:#?}");
    assert_eq!(scopes(&store, &report.run_id), ["l[0]", "l[1]"]);
    let doc = counting_loop("repeat", None, json!({"max_iterations": 4}));
    let (report, _dir) = run_with(&doc, &store, json!({})).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(report.outputs["total"], json!(4));
}

#[tokio::test]
async fn reaching_max_iterations_is_rt021_decided_by_on_max_iterations() {
    let store = Store::open_in_memory().unwrap();
    let doc = counting_loop("until", Some("false"), json!({"max_iterations": 2}));
    let (report, _dir) = run_with(&doc, &store, json!({})).await;
    assert_eq!(state(&report, "l"), "failed");
    let error = report.nodes[0].error.clone().unwrap_or_default();
    assert!(error.contains("RT021"), "{error}");
    assert_eq!(scopes(&store, &report.run_id).len(), 2);
    let doc = counting_loop(
        "until",
        Some("false"),
        json!({"max_iterations": 2, "on_max_iterations": "succeed"}),
    );
    let (report, _dir) = run_with(&doc, &store, json!({})).await;
    assert_eq!(state(&report, "l"), "succeeded");
    assert_eq!(report.outputs["total"], json!(2));
}

#[tokio::test]
async fn a_loop_of_maps_nests_scopes() {
    let inner = doubling_map(json!({}))["nodes"]["m"].clone();
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/nested",
        "params": {"xs": {"type": "array", "required": false, "default": [1, 2]}},
        "entrypoints": ["l"],
        "nodes": {"l": {"type": "loop", "description": "twice", "loop": {
            "mode": "repeat", "max_iterations": 2,
            "collect": {"last": "nodes.m.outputs.doubles"},
            "body": {"entrypoints": ["m"], "nodes": {"m": inner}}
        }}},
        "outputs": {"last": {"type": "array", "from": "nodes.l.outputs.last"}},
    });
    let store = Store::open_in_memory().unwrap();
    let (report, _dir) = run_with(&doc, &store, json!({})).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(report.outputs["last"], json!([2, 4]));
    assert_eq!(
        scopes(&store, &report.run_id),
        [
            "l[0]",
            "l[0].m[0]",
            "l[0].m[1]",
            "l[1]",
            "l[1].m[0]",
            "l[1].m[1]"
        ]
    );
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    let m1 = record["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["scope_path"] == "l[1].m")
        .unwrap();
    assert_eq!(m1["items"], json!(2));
    assert!(
        record["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["scope_path"] == "l[1].m[1].double")
    );
}

/// A loop whose body maps over its items: two iterations of three items each.
fn loop_of_map() -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/resume",
        "entrypoints": ["l"],
        "nodes": {
            "l": {"type": "loop", "description": "sum until big", "loop": {
                "mode": "until", "condition": "nodes.sum.outputs.acc > 20", "max_iterations": 5,
                "carry": {"acc": "acc"},
                "collect": {"acc": "nodes.sum.outputs.acc"},
                "body": {
                    "params": {
                        "acc": {"type": "integer", "required": false, "default": 0},
                        "xs": {"type": "array", "required": false, "default": [1, 2, 3]}
                    },
                    "entrypoints": ["m"],
                    "nodes": {
                        "m": {"type": "map", "description": "each", "map": {
                            "over": "params.xs", "as": "x", "max_items": 10,
                            "collect": {"ds": "nodes.d.outputs.d"},
                            "body": {
                                "params": {"acc": {"type": "integer", "required": false, "default": 0}},
                                "entrypoints": ["d"],
                                "nodes": {"d": {
                                    "type": "task", "description": "one",
                                    "inputs": {"n": {"type": "integer", "from": "x"}},
                                    "outputs": {"d": {"type": "integer"}},
                                    "x-weft-exec": {"run": py("dict(d=i[\"n\"] * 2)")}
                                }}
                            }
                        }},
                        "sum": {"type": "task", "description": "sum", "depends_on": ["m"],
                            "inputs": {"ds": {"type": "array", "from": "nodes.m.outputs.ds"},
                                       "acc": {"type": "integer", "from": "params.acc"}},
                            "outputs": {"acc": {"type": "integer"}},
                            "x-weft-exec": {"run": py("dict(acc=sum(i[\"ds\"]) + i[\"acc\"])")}}
                    }
                }
            }},
            "after": {"type": "task", "description": "after", "depends_on": ["l"],
                "inputs": {"acc": {"type": "integer", "from": "nodes.l.outputs.acc"}},
                "outputs": {"acc": {"type": "integer"}},
                "x-weft-exec": {"run": "cat"}}
        },
        "outputs": {"acc": {"type": "integer", "from": "nodes.after.outputs.acc"}},
    })
}

/// The record without times and attempt counts (`weft_test_support::log`), checked
/// against the run record schema first.
fn normalised(store: &Store, run_id: &str) -> Value {
    let record = record_of(store, run_id).unwrap();
    assert_valid(&record);
    normalised_record(&record)
}

/// The log's invariants (`weft_test_support::log::check_log`).
fn check_log(store: &Store, run_id: &str, point: &str) {
    weft_test_support::log::check_log(&store.read(run_id, 1, usize::MAX).unwrap(), point);
}

/// Runs `doc` as `run_id` and stops the driver right after its `k`-th event, as if the
/// process had died there.
async fn stop_after(
    doc: &Value,
    store: &Store,
    mut o: RunOptions,
    k: u64,
    run_id: &str,
    point: &str,
) {
    o.stop_after_events = Some(usize::try_from(k).unwrap());
    o.run_id = Some(run_id.to_string());
    let err = run_document(doc, store, &o).await.unwrap_err();
    assert!(
        matches!(err, weft_engine::EngineError::Stopped(_)),
        "{point}: {err}"
    );
}

/// Resumes `run_id` (with `retry_uncertain` when asked) and gives what the resume reports.
async fn resume_to_end(
    store: &Store,
    run_id: &str,
    dir: &std::path::Path,
    retry_uncertain: bool,
    point: &str,
) -> weft_engine::ResumeReport {
    weft_engine::resume_run(
        store,
        run_id,
        None,
        &weft_engine::ResumeOptions {
            run: options(dir),
            retry_uncertain,
            ..Default::default()
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{point}: {e}"))
}

#[tokio::test]
async fn killed_inside_loops_and_maps_a_resume_finishes_with_the_uninterrupted_record() {
    let doc = loop_of_map();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let full = run_document(&doc, &store, &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(full.status, FinalStatus::Succeeded, "{full:#?}");
    // Iteration 1: 2 + 4 + 6 = 12; iteration 2: 12 + 2 + 4 + 6 = 24 > 20.
    assert_eq!(full.outputs["acc"], json!(24));
    let expected = normalised(&store, &full.run_id);
    check_log(&store, &full.run_id, "uninterrupted");
    let total = store.last_seq(&full.run_id).unwrap();
    // Seeded points over the whole log (each stops the driver right after its k-th
    // event), every one resumed with `retry_uncertain`.
    let mut seed: u64 = 0x00c0_ffee_1007_0a95;
    let mut points = Vec::new();
    for _ in 0..32 {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        points.push(1 + (seed >> 33) % (total - 1));
    }
    let mut inside = 0;
    for (i, k) in points.into_iter().enumerate() {
        let point = format!("point {i}: stopped after event {k} of {total}");
        let run_id = format!("kill-{i}");
        stop_after(&doc, &store, options(dir.path()), k, &run_id, &point).await;
        let log = store.read(&run_id, 1, 100_000).unwrap();
        if log.last().and_then(weft_engine::scope_of).is_some() {
            inside += 1;
        }
        let resumed = resume_to_end(&store, &run_id, dir.path(), true, &point).await;
        assert_eq!(resumed.status, "succeeded", "{point}: {resumed:#?}");
        assert_eq!(normalised(&store, &run_id), expected, "{point}");
        check_log(&store, &run_id, &point);
    }
    assert!(
        inside >= 20,
        "only {inside} points stopped inside a fragment instance"
    );
}

#[tokio::test]
async fn a_command_running_inside_an_instance_makes_a_plain_resume_refuse() {
    let doc = loop_of_map();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    // Stop right after the first event that starts a command inside an instance.
    let mut found = None;
    for k in 1..20 {
        let id = format!("r{k}");
        let mut o = options(dir.path());
        o.run_id = Some(id.clone());
        o.stop_after_events = Some(k);
        run_document(&doc, &store, &o).await.unwrap_err();
        let log = store.read(&id, 1, 1000).unwrap();
        let last = log.last().unwrap();
        // (A container's own start is not uncertain: it runs no command.)
        if last.kind == "node_started" && last.payload["node"] == "d" {
            found = Some(id);
            break;
        }
    }
    let run_id = found.expect("a command starts inside an instance within 20 events");
    let err = weft_engine::resume_run(
        &store,
        &run_id,
        None,
        &weft_engine::ResumeOptions {
            run: options(dir.path()),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("`l[0].m[0].d` (attempt 1)"),
        "{err}"
    );
}

fn subgraph_doc(block: Value) -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/subgraph",
        "params": {"base": {"type": "integer", "required": false, "default": 10}},
        "context": {"unit": "cm"},
        "subgraphs": {"add": {
            "params": {"a": {"type": "integer"}, "b": {"type": "integer", "required": false, "default": 1}},
            "entrypoints": ["add"],
            "nodes": {"add": {"type": "task", "description": "add",
                "inputs": {"a": {"type": "integer", "from": "params.a"},
                           "b": {"type": "integer", "from": "params.b"},
                           "unit": {"type": "string", "from": "context.unit"}},
                "outputs": {"sum": {"type": "integer"}, "unit": {"type": "string"}},
                "x-weft-exec": {"run": py("dict(sum=i[\"a\"] + i[\"b\"], unit=i[\"unit\"])")}}},
            "outputs": {"total": {"type": "integer", "from": "nodes.add.outputs.sum"}}
        }},
        "entrypoints": ["s"],
        "nodes": {"s": {"type": "subgraph", "description": "child", "subgraph": block},
                  "after": {"type": "task", "description": "after", "depends_on": ["s"],
                      "inputs": {"v": {"type": "object", "from": "nodes.s.outputs"}},
                      "outputs": {"v": {"type": "object"}},
                      "x-weft-exec": {"run": "cat"}}},
        "outputs": {"v": {"type": "object", "from": "nodes.after.outputs.v"}},
    })
}

#[tokio::test]
async fn a_subgraph_runs_its_fragment_as_a_nested_scope_with_params_and_outputs_from() {
    let store = Store::open_in_memory().unwrap();
    // `use`, no `outputs_from`: the child's outputs are copied verbatim.
    let doc = subgraph_doc(json!({"use": "add", "params": {"a": "params.base * 2"}}));
    let (report, _dir) = run_with(&doc, &store, json!({})).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(report.outputs["v"], json!({"total": 21}));
    assert_eq!(scopes(&store, &report.run_id), ["s"]);
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    let inner = record["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["scope_path"] == "s.add")
        .unwrap();
    assert_eq!(inner["outputs"], json!({"sum": 21, "unit": "cm"}));
    // The child's own run record, derived from its events in the parent's log.
    let child_id = record_node(&record, "s")["child_run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let child = weft_engine::record::child_record_of(&store, &report.run_id, "s").unwrap();
    assert_valid(&child);
    assert_eq!(child["run_id"], json!(child_id));
    assert_eq!(child["parent_run_id"], json!(report.run_id));
    assert_eq!(child["status"], json!("succeeded"));
    assert_eq!(child["outputs"], json!({"total": 21}));
    assert_eq!(record_node(&child, "add")["status"], json!("succeeded"));

    // `inline` with `outputs_from` and `context`.
    let inline = doc["subgraphs"]["add"].clone();
    let doc = subgraph_doc(json!({
        "inline": inline, "params": {"a": "1", "b": "2"},
        "context": {"unit": "mm"},
        "outputs_from": {"answer": "outputs.total", "unit": "nodes.add.outputs.unit"}
    }));
    let (report, _dir) = run_with(&doc, &store, json!({})).await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(report.outputs["v"], json!({"answer": 3, "unit": "mm"}));
}

#[tokio::test]
async fn a_failed_child_fails_the_subgraph_node() {
    let store = Store::open_in_memory().unwrap();
    let mut doc = subgraph_doc(json!({"use": "add", "params": {"a": "1"}}));
    doc["subgraphs"]["add"]["nodes"]["add"]["x-weft-exec"]["run"] = json!("exit 3");
    let (report, _dir) = run_with(&doc, &store, json!({})).await;
    assert_eq!(state(&report, "s"), "failed");
    assert_eq!(state(&report, "after"), "skipped");
    let error = report.nodes[0].error.clone().unwrap_or_default();
    assert!(error.contains("subgraph `s` ended partial"), "{error}");
}

#[tokio::test]
async fn node_executions_inside_instances_count_against_the_run_budget() {
    let mut doc = doubling_map(json!({"max_parallel": 1, "on_item_failure": "continue"}));
    doc["constraints"] = json!({"max_node_executions": 4});
    let store = Store::open_in_memory().unwrap();
    let (report, _dir) = run_with(&doc, &store, json!({"xs": [1, 2, 3, 4, 5, 6]})).await;
    // The map itself and three items: then no attempt starts anywhere in the run.
    let started = store
        .read(&report.run_id, 1, 1000)
        .unwrap()
        .iter()
        .filter(|r| r.kind == "node_started")
        .count();
    assert_eq!(started, 4);
    assert_eq!(
        report.outputs["doubles"],
        json!([2, 4, 6, null, null, null])
    );
    assert!(
        report
            .reasons
            .iter()
            .any(|r| r.starts_with("RT061: max_node_executions 4")),
        "{report:#?}"
    );
    assert_eq!(report.status, FinalStatus::Partial);
    assert_valid(&record_of(&store, &report.run_id).unwrap());
}

#[tokio::test]
async fn a_model_node_in_a_loop_replays_its_turns_per_iteration_by_address() {
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/model-loop",
        "entrypoints": ["l"],
        "nodes": {"l": {"type": "loop", "description": "until done", "loop": {
            "mode": "until", "condition": "nodes.check.outputs.done", "max_iterations": 4,
            "collect": {"note": "nodes.check.outputs.note"},
            "body": {"entrypoints": ["check"], "nodes": {"check": {
                "type": "task", "description": "is it done?",
                "intelligence": {"tier": "standard"},
                "outputs": {"done": {"type": "boolean"}, "note": {"type": "string"}}
            }}}
        }}},
        "outputs": {"note": {"type": "string", "from": "nodes.l.outputs.note"}},
    });
    let turn = |done: bool, note: &str| {
        json!({"attempts": [{"turns": [{"tool_calls": [{"name": "emit_output",
            "arguments": {"done": done, "note": note}}],
            "usage": {"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.01}}]}]})
    };
    let cassette = json!({"format": "weft-cassette/1", "nodes": {
        "l[0].check": turn(false, "not yet"),
        "l[1].check": turn(true, "done in two"),
    }});
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    std::fs::write(&path, cassette.to_string()).unwrap();
    let store = Store::open_in_memory().unwrap();
    let mut o = options(dir.path());
    o.cassette = Some(path);
    let report = run_document(&doc, &store, &o).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(report.outputs["note"], json!("done in two"));
    // Both iterations' usage counts in the run's.
    assert_eq!(report.usage.input_tokens, 20);
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert_eq!(record_node(&record, "l")["iterations"], json!(2));
}

#[tokio::test]
async fn a_cancel_while_a_map_runs_stops_further_items_and_cancels_the_run() {
    let mut doc = doubling_map(json!({"max_parallel": 1}));
    doc["nodes"]["m"]["map"]["body"]["nodes"]["double"]["x-weft-exec"]["run"] =
        json!(format!("sleep 0.2; {}", py("dict(d=i[\"n\"])")));
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(dir.path());
    o.run_id = Some("c".into());
    o.params = json!({"xs": [1, 2, 3, 4, 5]}).as_object().cloned().unwrap();
    let canceller = async {
        // Once the first item has finished, someone cancels the run.
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            let log = store.read("c", 1, 1000).unwrap_or_default();
            if log
                .iter()
                .any(|r| r.kind == "node_finished" && weft_engine::scope_of(r).is_some())
            {
                weft_engine::human::request_cancel(&store, "c", "alice", None).unwrap();
                return;
            }
        }
    };
    let (report, ()) = tokio::join!(run_document(&doc, &store, &o), canceller);
    let report = report.unwrap();
    assert_eq!(report.status, FinalStatus::Cancelled, "{report:#?}");
    let items = scopes(&store, "c").len();
    assert!((1..5).contains(&items), "{items} items started");
    let replayed = replay_run(&doc, &store, "c").unwrap();
    assert!(replayed.is_finished());
    assert_valid(&record_of(&store, "c").unwrap());
}

/// A parent document and the local child its `subgraph.ref` names, written to `dir`.
fn write_ref_pair(dir: &std::path::Path, integrity: Option<&str>) -> std::path::PathBuf {
    let child = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/child", "version": "1.0.0",
        "title": "child", "objective": "double", "description": "d",
        "params": {"n": {"type": "integer", "description": "n"}},
        "context": {"unit": "g"},
        "entrypoints": ["double"],
        "nodes": {"double": {"title": "t", "description": "d",
            "inputs": {"n": {"type": "integer", "description": "n", "from": "params.n"},
                       "unit": {"type": "string", "description": "u", "from": "context.unit"}},
            "outputs": {"r": {"type": "integer", "description": "r"},
                        "unit": {"type": "string", "description": "u"}},
            "x-weft-exec": {"run": py("dict(r=i[\"n\"] * 2, unit=i[\"unit\"])")}}},
        "outputs": {"result": {"type": "integer", "description": "r", "from": "nodes.double.outputs.r"}},
    });
    let digest = weft_ags::digest::graph_digest(&child);
    let parent = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/parent", "version": "1.0.0",
        "title": "parent", "objective": "use a child", "description": "d",
        "params": {"x": {"type": "integer", "description": "x", "required": false, "default": 21}},
        "context": {"unit": "kg"},
        "entrypoints": ["child"],
        "nodes": {"child": {"type": "subgraph", "title": "t", "description": "d", "subgraph": {
            "ref": {"uri": "./child.agraph.json", "integrity": integrity.unwrap_or(&digest),
                    "expected_id": "test/child"},
            "params": {"n": "params.x"},
            "inherit_context": true,
            "outputs_from": {"answer": "outputs.result", "unit": "nodes.double.outputs.unit"}
        }, "outputs": {"answer": {"type": "integer", "description": "a"},
                        "unit": {"type": "string", "description": "u"}}}},
        "outputs": {"answer": {"type": "integer", "description": "a", "from": "nodes.child.outputs.answer"},
                    "unit": {"type": "string", "description": "u", "from": "nodes.child.outputs.unit"}},
    });
    std::fs::write(dir.join("child.agraph.json"), child.to_string()).unwrap();
    let path = dir.join("parent.agraph.json");
    std::fs::write(&path, parent.to_string()).unwrap();
    path
}

#[test]
fn a_ref_child_runs_as_a_nested_scope_with_its_own_derived_run_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_ref_pair(dir.path(), None);
    let store = Store::open_in_memory().unwrap();
    let report = weft_engine::run_file_blocking(&path, &store, &options(dir.path())).unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(report.outputs, json!({"answer": 42, "unit": "kg"}));
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    let child = weft_engine::record::child_record_of(&store, &report.run_id, "child").unwrap();
    assert_valid(&child);
    assert_eq!(child["graph_id"], json!("test/child"));
    assert_eq!(child["parent_run_id"], json!(report.run_id));
    assert_eq!(child["outputs"], json!({"result": 42}));
    assert_eq!(
        record_node(&record, "child")["child_run_id"],
        child["run_id"]
    );

    // A digest that does not match refuses the run before anything is created.
    let dir = tempfile::tempdir().unwrap();
    let path = write_ref_pair(
        dir.path(),
        Some("sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="),
    );
    let err = weft_engine::run_file_blocking(&path, &store, &options(dir.path())).unwrap_err();
    assert!(err.to_string().contains("RT051"), "{err}");
}

/// A `ref` run stopped after `stop` events, its child's file removed, resumed with neither
/// the file nor refs: the child comes from the log, either from its own instance's
/// `run_started` (a started child) or from the run's `run_started.refs` (one not reached).
fn resume_a_ref_run_without_its_files(stop: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_ref_pair(dir.path(), None);
    let store = Store::open_in_memory().unwrap();
    let mut o = options(dir.path());
    o.run_id = Some("r".into());
    o.stop_after_events = Some(stop);
    let err = weft_engine::run_file_blocking(&path, &store, &o).unwrap_err();
    assert!(
        matches!(err, weft_engine::EngineError::Stopped(n) if n == stop),
        "{err}"
    );
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let p = entry.unwrap().path();
        if p != path && p.extension().is_some_and(|e| e == "yaml" || e == "json") {
            std::fs::remove_file(p).unwrap();
        }
    }
    let resumed = weft_engine::resume_run_blocking(
        &store,
        "r",
        None,
        &weft_engine::ResumeOptions {
            run: options(dir.path()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(resumed.status, "succeeded", "stop {stop}: {resumed:#?}");
    assert_eq!(
        resumed.report.unwrap().outputs,
        json!({"answer": 42, "unit": "kg"})
    );
    assert_valid(&record_of(&store, "r").unwrap());
}

#[test]
fn a_run_stopped_inside_a_ref_child_resumes_from_the_child_document_in_its_log() {
    // run_started, child started, the child's run_started: stopped inside the child.
    resume_a_ref_run_without_its_files(3);
}

#[test]
fn a_run_stopped_before_its_ref_child_started_resumes_without_the_file() {
    // Stopped right after `run_started`: the child has not been reached.
    resume_a_ref_run_without_its_files(1);
}

#[tokio::test]
async fn map_items_run_on_an_in_process_agent_with_their_addresses() {
    // An in-process model agent: `y = x * 10`, remembering the node addresses it was asked for.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let asked = std::sync::Arc::clone(&seen);
    let reg = common::with_model_agent(move |request| {
        asked.lock().unwrap().push(request.node.clone());
        let x = request.inputs["x"].as_i64().unwrap_or_default();
        let mut r = weft_engine::agent::AgentResult::default();
        r.outputs.insert("y".into(), json!(x * 10));
        r.usage.input_tokens = 3;
        r
    });
    let doc = graph(
        json!({"m": {"type": "map", "description": "each", "map": {
            "over": "params.xs", "as": "x", "max_items": 10, "max_parallel": 3,
            "collect": {"ys": "nodes.work.outputs.y"},
            "body": {"entrypoints": ["work"], "nodes": {"work": {
                "type": "task", "description": "times ten", "intelligence": {"tier": "standard"},
                "inputs": {"x": {"type": "integer", "from": "x"}},
                "outputs": {"y": {"type": "integer"}}
            }}}
        }}}),
        json!({"ys": {"type": "array", "from": "nodes.m.outputs.ys"}}),
    );
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(dir.path());
    o.agents = Some(reg);
    let store = Store::open_in_memory().unwrap();
    let report = run_document(&doc, &store, &o).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(report.outputs["ys"], json!([10, 20, 30]));
    assert_eq!(report.usage.input_tokens, 9);
    let mut addrs = seen.lock().unwrap().clone();
    addrs.sort();
    assert_eq!(addrs, ["m[0].work", "m[1].work", "m[2].work"]);
}

#[tokio::test]
async fn a_containers_own_outputs_and_success_are_checked_like_any_nodes() {
    let store = Store::open_in_memory().unwrap();
    let mut doc = doubling_map(json!({}));
    doc["nodes"]["m"]["success"] = json!({"criteria": [{
        "id": "three", "kind": "expression", "description": "three results",
        "expr": "len(self.outputs.doubles) == 3"
    }]});
    let (report, _dir) = run_with(&doc, &store, json!({})).await;
    assert_eq!(state(&report, "m"), "succeeded", "{report:#?}");
    let (report, _dir) = run_with(&doc, &store, json!({"xs": [1, 2]})).await;
    assert_eq!(state(&report, "m"), "failed", "{report:#?}");
    let error = report.nodes[0].error.clone().unwrap_or_default();
    assert!(error.starts_with("criteria_failed"), "{error}");
    // A declared output of the wrong type fails the node (RT031).
    let mut doc = doubling_map(json!({}));
    doc["nodes"]["m"]["outputs"]["doubles"]["type"] = json!("string");
    let (report, _dir) = run_with(&doc, &store, json!({})).await;
    let error = report.nodes[0].error.clone().unwrap_or_default();
    assert!(error.contains("RT031"), "{error}");
}

#[tokio::test]
async fn a_failed_container_is_not_run_again_by_retry_nodes() {
    let store = Store::open_in_memory().unwrap();
    let doc = doubling_map(json!({}));
    let (report, dir) = run_with(&doc, &store, json!({"xs": [99]})).await;
    assert_eq!(state(&report, "m"), "failed");
    let err = weft_engine::resume_run(
        &store,
        &report.run_id,
        None,
        &weft_engine::ResumeOptions {
            run: options(dir.path()),
            retry_nodes: vec!["m".into()],
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("`m` is a loop, map or subgraph"),
        "{err}"
    );
}

/// A map whose body is one expression decision (the light path of `map_item.rs`), with one
/// item (a string) whose decision fails: that item takes the full path, the map goes on.
fn light_map() -> Value {
    graph(
        json!({"m": {"type": "map", "description": "label each", "map": {
            "over": "params.xs", "as": "x", "max_items": 10, "max_parallel": 3,
            "on_item_failure": "continue",
            "collect": {"labels": "nodes.pick.outputs.decision"},
            "body": {"entrypoints": ["pick"], "nodes": {"pick": {
                "type": "decision", "description": "big or small",
                "decision": {"evaluator": "expression", "branches": [
                    {"label": "big", "description": "over 2", "when": "x > 2"},
                    {"label": "small", "description": "the rest", "when": "x <= 2"}
                ]}
            }}}
        }, "outputs": {"labels": {"type": "array"}}}}),
        json!({"labels": {"type": "array", "from": "nodes.m.outputs.labels"}}),
    )
}

#[tokio::test]
async fn a_light_map_stopped_at_every_event_resumes_to_the_uninterrupted_record() {
    let doc = light_map();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let mut o = options(dir.path());
    o.params = json!({"xs": [1, 3, "a", 4, 2]})
        .as_object()
        .cloned()
        .unwrap();
    let full = run_document(&doc, &store, &o).await.unwrap();
    assert_eq!(full.status, FinalStatus::Succeeded, "{full:#?}");
    assert_eq!(
        full.outputs["labels"],
        json!(["small", "big", null, "big", "small"])
    );
    let expected = normalised(&store, &full.run_id);
    check_log(&store, &full.run_id, "uninterrupted");
    // Every item logs its instance's start and end and its step's two events; the failed
    // item logs its full path's events.
    let log = store.read(&full.run_id, 1, 100_000).unwrap();
    for i in [0, 1, 3, 4] {
        let kinds: Vec<&str> = log
            .iter()
            .filter(|r| weft_engine::scope_of(r) == Some(&format!("m[{i}]")))
            .map(|r| r.kind.as_str())
            .collect();
        assert_eq!(
            kinds,
            [
                "run_started",
                "node_started",
                "node_finished",
                "run_finished"
            ],
            "m[{i}]"
        );
    }
    let total = store.last_seq(&full.run_id).unwrap();
    for k in 1..total {
        let point = format!("stopped after event {k} of {total}");
        let run_id = format!("light-{k}");
        stop_after(&doc, &store, o.clone(), k, &run_id, &point).await;
        assert_eq!(store.last_seq(&run_id).unwrap(), k, "{point}");
        let resumed = resume_to_end(&store, &run_id, dir.path(), false, &point).await;
        assert_eq!(resumed.status, "succeeded", "{point}: {resumed:#?}");
        assert_eq!(normalised(&store, &run_id), expected, "{point}");
        check_log(&store, &run_id, &point);
    }
}

/// A map whose body is two expression decisions in a row: not a light item (each item has
/// a driver of its own), and no item awaits anything but its own writes.
fn two_step_map() -> Value {
    graph(
        json!({"m": {"type": "map", "description": "label each twice", "map": {
            "over": "params.xs", "as": "x", "max_items": 10, "max_parallel": 4,
            "collect": {"labels": "nodes.second.outputs.decision"},
            "body": {"entrypoints": ["first"], "nodes": {
                "first": {"type": "decision", "description": "big or small",
                    "decision": {"evaluator": "expression", "branches": [
                        {"label": "big", "description": "over 2", "when": "x > 2"},
                        {"label": "small", "description": "the rest", "when": "x <= 2"}
                    ]}},
                "second": {"type": "decision", "description": "odd or even",
                    "decision": {"evaluator": "expression", "branches": [
                        {"label": "odd", "description": "odd", "when": "x % 2 == 1"},
                        {"label": "even", "description": "even", "when": "x % 2 == 0"}
                    ]}}
            }, "edges": [{"from": "first", "to": "second"}]}
        }, "outputs": {"labels": {"type": "array"}}}}),
        json!({"labels": {"type": "array", "from": "nodes.m.outputs.labels"}}),
    )
}

#[tokio::test]
async fn sibling_instances_await_their_writes_in_turn_and_the_log_stays_whole() {
    // A store file: each commit is synced on the store's writer thread, so an instance's
    // write is still in flight when its driver yields, and the map polls its siblings
    // meanwhile. With a blocking write an instance that awaits nothing else would end
    // within its first poll, its events all together in the log; with awaited writes the
    // instances go on side by side, each writing at the run's end in its turn, never at an
    // end another has moved (a conflict would stop the run: "written by another driver").
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("weft.db")).unwrap();
    let observer = std::sync::Arc::new(weft_engine::observe::RecordingObserver::default());
    let mut o = options(dir.path());
    o.params = json!({"xs": [1, 2, 3, 4]}).as_object().cloned().unwrap();
    o.observers = vec![observer.clone()];
    let report = run_document(&two_step_map(), &store, &o).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(
        report.outputs["labels"],
        json!(["odd", "even", "odd", "even"])
    );
    let log = store.read(&report.run_id, 1, 100_000).unwrap();
    check_log(&store, &report.run_id, "sibling instances");
    // Each instance's own events are whole and in order.
    let of = |i: usize| -> Vec<usize> {
        let path = format!("m[{i}]");
        (0..log.len())
            .filter(|&k| weft_engine::scope_of(&log[k]) == Some(path.as_str()))
            .collect()
    };
    for i in 0..4 {
        let kinds: Vec<&str> = of(i).iter().map(|&k| log[k].kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "run_started",
                "node_started",
                "node_finished",
                "node_started",
                "node_finished",
                "run_finished"
            ],
            "m[{i}]"
        );
    }
    // The instances ran side by side: the second started before the first ended.
    assert!(
        of(1)[0] < *of(0).last().unwrap(),
        "the instances' writes did not interleave: {:?}",
        log.iter()
            .map(|r| (r.kind.as_str(), weft_engine::scope_of(r)))
            .collect::<Vec<_>>()
    );
    // The observers saw the log exactly, in its order.
    let logged: Vec<(u64, String)> = log.iter().map(|r| (r.seq, r.kind.clone())).collect();
    assert_eq!(observer.seen(), logged);
    // And the run's record (its instances' nodes included) is valid and complete.
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert_eq!(record_node(&record, "m")["items"], json!(4));
}

#[tokio::test]
async fn sibling_instances_waiting_on_commands_never_take_a_siblings_commit_for_another_writers() {
    // Every item runs a command; while it runs, its instance's driver waits for another
    // writer's append to the log. A sibling's awaited commit lands before that sibling's
    // driver has moved the run's shared seq: the waiting driver must not take the
    // sibling's events for another driver's (the run would stop, "written by another
    // driver"), nor for inbox events.
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("weft.db")).unwrap();
    let doc = doubling_map(json!({"max_parallel": 4}));
    let mut o = options(dir.path());
    o.params = json!({"xs": [1, 2, 3, 4, 5, 6, 7, 8]})
        .as_object()
        .cloned()
        .unwrap();
    for round in 0..3 {
        let report = run_document(&doc, &store, &o).await.unwrap();
        assert_eq!(
            report.status,
            FinalStatus::Succeeded,
            "round {round}: {report:#?}"
        );
        assert_eq!(
            report.outputs["doubles"],
            json!([2, 4, 6, 8, 10, 12, 14, 16])
        );
        check_log(&store, &report.run_id, "sibling commands");
    }
}

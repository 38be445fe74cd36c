//! People waited on inside loops, maps and subgraphs (`docs/engine.md` §3j): a gate, a
//! checkpoint, an escalation or a node's `human` criterion in a map item, a loop iteration
//! or a subgraph child suspends the run (`awaiting_human`) with the wait listed by its
//! address (`m[1].ok`, `l[0].m[1].ok`); `decide` takes the address (the decision is a
//! `human_decision` with the instance's `scope`); a resume rebuilds the instance from its
//! events and carries the decision out as the root does (approve, reject → `on_reject`,
//! timeouts); a live run carries a decision out through the instance's driver or by running
//! the waiting container again; a cancel settles the waiting container; and a run stopped
//! at any of its events, resumed and decided the same way, ends with the uninterrupted
//! run's record, its map open in one attempt throughout.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;
use common::{assert_valid, py, record_node, request, resume_with};
use serde_json::{Value, json};
use weft_engine::human::{Verb, decide, waits_of};
use weft_engine::record::record_of;
use weft_engine::{
    EngineError, FinalStatus, ResumeOptions, RunOptions, RunReport, resume_run, run_document,
};
use weft_store::{EventLog, Store};

fn options(dir: &std::path::Path) -> RunOptions {
    RunOptions {
        project_dir: dir.to_path_buf(),
        max_parallel: Some(4),
        ..RunOptions::default()
    }
}

/// A map over `[1, 2, 3]` whose body doubles its item, then waits on a review gate `ok`;
/// failed items give `null` (`on_item_failure: continue`).
fn map_with_gate(max_parallel: u64) -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/instance-waits",
        "entrypoints": ["m"],
        "nodes": {
            "m": {"type": "map", "description": "double and review each", "map": {
                "over": "[1, 2, 3]", "as": "x", "max_items": 10, "max_parallel": max_parallel,
                "on_item_failure": "continue",
                "collect": {"doubles": "nodes.double.outputs.d"},
                "body": {
                    "entrypoints": ["double"],
                    "nodes": {
                        "double": {"type": "task", "description": "double one item",
                            "inputs": {"n": {"type": "integer", "from": "x"}},
                            "outputs": {"d": {"type": "integer"}},
                            "x-weft-exec": {"run": py("dict(d=i[\"n\"] * 2)")}},
                        "ok": {"type": "gate", "description": "review the double",
                            "depends_on": ["double"],
                            "gate": {"mode": "review", "prompt": "double of ${{ x }}?",
                                     "present": ["nodes.double.outputs.d"]}}
                    },
                    "outputs": {"d": {"type": "integer", "from": "nodes.double.outputs.d"}}
                }
            }, "outputs": {"doubles": {"type": "array"}}},
            "after": {"type": "task", "description": "after the map", "depends_on": ["m"],
                "inputs": {"ds": {"type": "array", "from": "nodes.m.outputs.doubles"}},
                "outputs": {"ds": {"type": "array"}},
                "x-weft-exec": {"run": "cat"}}
        },
        "outputs": {"ds": {"type": "array", "from": "nodes.after.outputs.ds"}},
    })
}

async fn resume(store: &Store, run_id: &str, dir: &std::path::Path) -> RunReport {
    resume_with(store, run_id, options(dir)).await
}

/// Approves each wait of `addresses`, in order, then resumes the run to its report.
async fn approve_and_resume(
    store: &Store,
    run_id: &str,
    dir: &std::path::Path,
    addresses: &[&str],
) -> RunReport {
    for address in addresses {
        decide(store, run_id, &request(address, Verb::Approve, json!({}))).unwrap();
    }
    resume(store, run_id, dir).await
}

fn waiting(report: &RunReport) -> Vec<&str> {
    report.waiting.iter().map(|w| w.node.as_str()).collect()
}

fn open_addresses(store: &Store, run_id: &str) -> Vec<String> {
    waits_of(store, run_id)
        .unwrap()
        .into_iter()
        .filter(|w| w.is_open())
        .map(|w| w.waiting.node)
        .collect()
}

fn refusal(err: EngineError) -> String {
    match err {
        EngineError::Refused(r) => r.join("\n"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn a_review_gate_per_map_item_is_decided_by_address_and_a_rejection_follows_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = map_with_gate(2);
    let report = run_document(&doc, &store, &options(dir.path()))
        .await
        .unwrap();
    // Every item waits at once (a waiting item holds no `max_parallel` slot); the map
    // stays `running` and nothing after it starts.
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    let mut listed = waiting(&report);
    listed.sort_unstable();
    assert_eq!(listed, ["m[0].ok", "m[1].ok", "m[2].ok"]);
    let first = report.waiting.iter().find(|w| w.node == "m[0].ok").unwrap();
    assert_eq!(first.present, [json!(2)]);
    assert_eq!(first.prompt.as_deref(), Some("double of 1?"));
    let run = report.run_id.clone();
    assert_eq!(
        open_addresses(&store, &run),
        ["m[0].ok", "m[1].ok", "m[2].ok"]
    );
    let record = record_of(&store, &run).unwrap();
    assert_eq!(record["status"], json!("awaiting_human"));
    assert_eq!(record_node(&record, "m")["status"], json!("running"));
    assert_eq!(record_node(&record, "after")["status"], json!("pending"));

    // An unknown instance and a node that does not wait are refused, naming the waits.
    let err = decide(&store, &run, &request("m[7].ok", Verb::Approve, json!({}))).unwrap_err();
    assert!(refusal(err).contains("no instance `m[7]`"));
    let err = decide(
        &store,
        &run,
        &request("m[0].double", Verb::Approve, json!({})),
    )
    .unwrap_err();
    assert!(
        refusal(err).contains("waiting: m[0].ok, m[1].ok, m[2].ok"),
        "the hint lists the waits by address"
    );
    // Decided one by one: the decision is addressed to its instance.
    decide(&store, &run, &request("m[0].ok", Verb::Approve, json!({}))).unwrap();
    let last = store.read(&run, store.last_seq(&run).unwrap(), 1).unwrap();
    assert_eq!(last[0].kind, "human_decision");
    assert_eq!(last[0].payload["node"], json!("ok"));
    assert_eq!(weft_engine::scope_of(&last[0]), Some("m[0]"));
    // The others keep waiting: the run suspends again on them.
    let again = resume(&store, &run, dir.path()).await;
    assert_eq!(again.status, FinalStatus::AwaitingHuman, "{again:#?}");
    let mut listed = waiting(&again);
    listed.sort_unstable();
    assert_eq!(listed, ["m[1].ok", "m[2].ok"]);

    decide(&store, &run, &request("m[1].ok", Verb::Reject, json!({}))).unwrap();
    decide(&store, &run, &request("m[2].ok", Verb::Approve, json!({}))).unwrap();
    let done = resume(&store, &run, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    // The rejected item failed its gate (`on_reject: fail`): `null` under `continue`.
    assert_eq!(done.outputs["ds"], json!([2, null, 6]));
    let record = record_of(&store, &run).unwrap();
    assert_valid(&record);
    let gate = |addr: &str| {
        record["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["scope_path"] == json!(addr))
            .cloned()
            .unwrap()
    };
    assert_eq!(gate("m[1].ok")["status"], json!("failed"));
    // The instance's human events are listed under its node run, as the root's are.
    let events = gate("m[0].ok")["human_events"].clone();
    assert_eq!(events[0]["outcome"], json!("approved"), "{events:#}");
    assert_eq!(events[0]["actor"], json!("ann"), "{events:#}");
    assert_eq!(
        gate("m[1].ok")["human_events"][0]["outcome"],
        json!("rejected")
    );
    // Finished: nothing waits any more.
    assert!(open_addresses(&store, &run).is_empty());
}

#[tokio::test]
async fn an_input_gate_per_loop_iteration_suspends_the_run_once_per_iteration() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/loop-input",
        "entrypoints": ["l"],
        "nodes": {"l": {"type": "loop", "description": "ask until big", "loop": {
            "mode": "until", "condition": "nodes.ask.outputs.n > 5", "max_iterations": 4,
            "collect": {"n": "nodes.ask.outputs.n"},
            "body": {
                "entrypoints": ["ask"],
                "nodes": {"ask": {"type": "gate", "description": "a number",
                    "gate": {"mode": "input", "prompt": "a number",
                             "collect": {"n": {"type": "integer", "description": "n"}}}}}
            }
        }, "outputs": {"n": {"type": "integer"}}}},
        "outputs": {"n": {"type": "integer", "from": "nodes.l.outputs.n"}},
    });
    let report = run_document(&doc, &store, &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    assert_eq!(waiting(&report), ["l[0].ask"]);
    let run = report.run_id.clone();
    // Input values are checked against the gate's `collect`, as at the root.
    let err = decide(
        &store,
        &run,
        &request("l[0].ask", Verb::Provide, json!({"n": "three"})),
    )
    .unwrap_err();
    assert!(refusal(err).contains('n'));
    decide(
        &store,
        &run,
        &request("l[0].ask", Verb::Provide, json!({"n": 3})),
    )
    .unwrap();
    let second = resume(&store, &run, dir.path()).await;
    assert_eq!(second.status, FinalStatus::AwaitingHuman, "{second:#?}");
    assert_eq!(waiting(&second), ["l[1].ask"]);
    decide(
        &store,
        &run,
        &request("l[1].ask", Verb::Provide, json!({"n": 9})),
    )
    .unwrap();
    let done = resume(&store, &run, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    assert_eq!(done.outputs["n"], json!(9));
    let record = record_of(&store, &run).unwrap();
    assert_valid(&record);
    assert_eq!(record_node(&record, "l")["iterations"], json!(2));
}

#[tokio::test]
async fn a_subgraph_childs_approval_gate_is_decided_by_its_address() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/subgraph-gate",
        "entrypoints": ["child"],
        "nodes": {"child": {"type": "subgraph", "description": "a child with an approval",
            "subgraph": {"inline": {
                "entrypoints": ["ok"],
                "nodes": {
                    "ok": {"type": "gate", "description": "ship?", "gate": {"mode": "approve"}},
                    "ship": {"type": "task", "description": "ship", "depends_on": ["ok"],
                        "outputs": {"v": {"type": "string"}},
                        "x-weft-exec": {"run": "echo shipped"}}
                },
                "outputs": {"v": {"type": "string", "from": "nodes.ship.outputs.v"}}
            }},
            "outputs": {"v": {"type": "string"}}}},
        "outputs": {"v": {"type": "string", "from": "nodes.child.outputs.v"}},
    });
    let report = run_document(&doc, &store, &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    assert_eq!(waiting(&report), ["child.ok"]);
    let run = report.run_id.clone();
    decide(&store, &run, &request("child.ok", Verb::Approve, json!({}))).unwrap();
    let done = resume(&store, &run, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    assert_eq!(done.outputs["v"], json!("shipped"));
}

/// The record without times and attempt counts (as `fragments.rs` compares them).
fn normalised(store: &Store, run_id: &str) -> Value {
    let record = record_of(store, run_id).unwrap();
    assert_valid(&record);
    let nodes: Vec<Value> = record["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let addr = n.get("scope_path").unwrap_or(&n["node_id"]);
            let outcomes: Vec<Value> = n
                .get("human_events")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|e| e["outcome"].clone())
                .collect();
            json!([
                addr,
                n["status"],
                n.get("outputs"),
                n.get("items"),
                outcomes
            ])
        })
        .collect();
    json!({"status": record["status"], "outputs": record["outputs"], "nodes": nodes})
}

/// The decisions of the scenario: item 1 rejected, the others approved.
fn decide_open(store: &Store, run_id: &str) -> usize {
    let open = open_addresses(store, run_id);
    for addr in &open {
        let verb = if addr == "m[1].ok" {
            Verb::Reject
        } else {
            Verb::Approve
        };
        decide(store, run_id, &request(addr, verb, json!({}))).unwrap();
    }
    open.len()
}

/// Runs the scenario to its end: every suspension decided with [`decide_open`]; the first
/// invocations stop (as if killed) once `stop_at` events of the drivers have been written.
async fn run_to_end(
    doc: &Value,
    store: &Store,
    dir: &std::path::Path,
    run_id: &str,
    stop_at: Option<u64>,
) -> usize {
    let mut left = stop_at;
    let mut suspensions = 0;
    let mut first = true;
    loop {
        let before = store.last_seq(run_id).unwrap_or(0);
        let mut o = options(dir);
        o.run_id = Some(run_id.to_string());
        o.stop_after_events = left.map(|n| usize::try_from(n).unwrap());
        let status = if first {
            first = false;
            run_document(doc, store, &o)
                .await
                .map(|r| r.status.as_str().to_string())
        } else {
            resume_run(
                store,
                run_id,
                None,
                &ResumeOptions {
                    run: o,
                    retry_uncertain: true,
                    ..ResumeOptions::default()
                },
            )
            .await
            .map(|r| r.status)
        };
        match status {
            Err(EngineError::Stopped(_)) => left = None,
            Err(e) => panic!("{run_id}: {e}"),
            Ok(s) if s == "awaiting_human" => {
                let written = store.last_seq(run_id).unwrap() - before;
                left = left.map(|n| n.saturating_sub(written).max(1));
                assert!(
                    decide_open(store, run_id) > 0,
                    "{run_id}: suspended on nothing"
                );
                suspensions += 1;
            }
            Ok(s) => {
                assert_eq!(s, "succeeded", "{run_id}");
                return suspensions;
            }
        }
    }
}

#[tokio::test]
async fn stopped_at_every_event_of_a_map_with_gates_a_resume_ends_with_the_same_record() {
    let doc = map_with_gate(2);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    assert_eq!(run_to_end(&doc, &store, dir.path(), "full", None).await, 1);
    let expected = normalised(&store, "full");
    assert_eq!(expected["outputs"]["ds"], json!([2, null, 6]));
    // Every event the drivers wrote (the decisions are not theirs).
    let total = store
        .read("full", 1, 100_000)
        .unwrap()
        .iter()
        .filter(|r| r.kind != "human_decision")
        .count();
    let total = u64::try_from(total).unwrap();
    assert!(total > 20, "{total} events");
    for k in 1..total {
        let run_id = format!("kill-{k}");
        run_to_end(&doc, &store, dir.path(), &run_id, Some(k)).await;
        assert_eq!(
            normalised(&store, &run_id),
            expected,
            "stopped after event {k} of {total}"
        );
        // The map stayed open in its one attempt through every stop and suspension.
        let root_m: Vec<String> = store
            .read(&run_id, 1, 100_000)
            .unwrap()
            .iter()
            .filter(|r| weft_engine::scope_of(r).is_none() && r.payload["node"] == json!("m"))
            .map(|r| r.kind.clone())
            .collect();
        assert_eq!(
            root_m,
            ["node_started", "node_finished"],
            "stopped after event {k}"
        );
    }
}

/// A map over `[1, 2]` whose body is the single task `t` (a command printing its item),
/// with `extra` merged into the task.
fn map_of_task(run: &str, extra: Value) -> Value {
    let mut t = json!({"type": "task", "description": "one item",
        "inputs": {"n": {"type": "integer", "from": "x"}},
        "outputs": {"v": {"type": "string"}},
        "x-weft-exec": {"run": run}});
    if let (Value::Object(m), Value::Object(x)) = (&mut t, extra) {
        m.extend(x);
    }
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/map-task",
        "entrypoints": ["m"],
        "nodes": {"m": {"type": "map", "description": "each", "map": {
            "over": "[1, 2]", "as": "x", "max_items": 10, "max_parallel": 2,
            "collect": {"vs": "nodes.t.outputs.v"},
            "body": {"entrypoints": ["t"], "nodes": {"t": t}}
        }, "outputs": {"vs": {"type": "array"}}}},
        "outputs": {"vs": {"type": "array", "from": "nodes.m.outputs.vs"}},
    })
}

#[tokio::test]
async fn a_before_start_checkpoint_in_a_map_item_holds_its_command_until_approved() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = map_of_task(
        &py("dict(v=str(i[\"n\"]))"),
        json!({"human": [{"id": "go", "at": "before_start", "mode": "approve"}]}),
    );
    let report = run_document(&doc, &store, &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    let mut listed = waiting(&report);
    listed.sort_unstable();
    assert_eq!(listed, ["m[0].t", "m[1].t"]);
    assert_eq!(report.waiting[0].checkpoint.as_deref(), Some("go"));
    // Nothing ran yet: no attempt of `t` started in either item.
    let run = report.run_id.clone();
    assert!(
        !store
            .read(&run, 1, 1000)
            .unwrap()
            .iter()
            .any(|r| r.kind == "node_started" && r.payload["node"] == json!("t")),
        "a before_start checkpoint holds the command"
    );
    let done = approve_and_resume(&store, &run, dir.path(), &["m[0].t", "m[1].t"]).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    assert_eq!(done.outputs["vs"], json!(["1", "2"]));
}

#[tokio::test]
async fn an_escalation_to_a_person_in_a_map_item_takes_the_outputs_they_provide() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    // Item 2 fails and escalates to a person (a review of its outputs, which an edit
    // writes); item 1 succeeds on its own.
    let doc = map_of_task(
        &py("dict(v=str(i[\"n\"])) if i[\"n\"] == 1 else 1 // 0"),
        json!({"failure": {"on_exhausted": "escalate", "escalation": {"to": "human"}}}),
    );
    let report = run_document(&doc, &store, &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    assert_eq!(waiting(&report), ["m[1].t"]);
    assert_eq!(report.waiting[0].stage, "on_escalation");
    let run = report.run_id.clone();
    decide(
        &store,
        &run,
        &request("m[1].t", Verb::Approve, json!({"v": "by hand"})),
    )
    .unwrap_or_else(|e| panic!("{e}: {:#?}", report.waiting[0]));
    let done = resume(&store, &run, dir.path()).await;
    // The person's outputs are the node's, as at the root: `t` succeeds degraded (RT042),
    // so its item ends `partial`, which a `fail_fast` map counts as a failed item.
    let record = record_of(&store, &run).unwrap();
    assert_valid(&record);
    let t = record["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["scope_path"] == json!("m[1].t"))
        .cloned()
        .unwrap();
    assert_eq!(t["status"], json!("succeeded"), "{t:#}");
    assert_eq!(t["outputs"], json!({"v": "by hand"}));
    assert_eq!(t["human_events"][0]["outcome"], json!("edited"), "{t:#}");
    assert_eq!(done.status, FinalStatus::Partial, "{done:#?}");
    assert!(
        done.nodes[0]
            .error
            .as_deref()
            .unwrap_or("")
            .contains("RT042"),
        "{done:#?}"
    );
}

/// Waits (polling a second connection) until the run's log holds an event `pred` accepts.
fn wait_for(db: &std::path::Path, run_id: &str, pred: impl Fn(&weft_store::EventRecord) -> bool) {
    let store = Store::open(db).unwrap();
    for _ in 0..600 {
        if let Ok(records) = store.read(run_id, 1, 10_000)
            && records.iter().any(&pred)
        {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("the event never came");
}

/// Runs `doc` live as `run_id` in a database under `dir` while another handle on it, once
/// the instance `scope` has a gate waiting, approves `address` — as a person's `weft
/// approve` from another process would.
async fn run_deciding_live(
    doc: &Value,
    dir: &std::path::Path,
    run_id: &'static str,
    scope: &'static str,
    address: &'static str,
) -> (Store, RunReport) {
    let db = dir.join("weft.db");
    let store = Store::open(&db).unwrap();
    let decider = std::thread::spawn(move || {
        wait_for(&db, run_id, |r| {
            r.kind == "gate_waiting" && weft_engine::scope_of(r) == Some(scope)
        });
        let other = Store::open(&db).unwrap();
        decide(&other, run_id, &request(address, Verb::Approve, json!({}))).unwrap();
    });
    let mut o = options(dir);
    o.run_id = Some(run_id.into());
    let report = run_document(doc, &store, &o).await.unwrap();
    decider.join().unwrap();
    (store, report)
}

#[tokio::test]
async fn a_live_instance_driver_takes_the_decision_addressed_to_it() {
    let dir = tempfile::tempdir().unwrap();
    // One item whose gate waits while a command of the same item still runs: the item's
    // driver is live and reads its inbox.
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/live",
        "entrypoints": ["m"],
        "nodes": {"m": {"type": "map", "description": "one item", "map": {
            "over": "[1]", "as": "x", "max_items": 1,
            "body": {"entrypoints": ["ok", "work"], "nodes": {
                "ok": {"type": "gate", "description": "go?", "gate": {"mode": "approve"}},
                "work": {"type": "task", "description": "slow", "x-weft-exec": {"run": "sleep 2"}}
            }}
        }}},
    });
    let (store, report) = run_deciding_live(&doc, dir.path(), "live", "m[0]", "m[0].ok").await;
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    // The gate settled from the decision before the command finished.
    let order: Vec<String> = store
        .read("live", 1, 1000)
        .unwrap()
        .iter()
        .filter(|r| r.kind == "node_finished" && weft_engine::scope_of(r) == Some("m[0]"))
        .map(|r| r.payload["node"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(order, ["ok", "work"]);
}

#[tokio::test]
async fn a_decision_for_a_waiting_map_runs_the_map_again_while_the_run_is_live() {
    let dir = tempfile::tempdir().unwrap();
    // Both items wait at once and the map waits with them, while `slow` keeps the run
    // live: a decision for one item runs the map again; the other item waits on.
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/reenter",
        "entrypoints": ["m", "slow"],
        "nodes": {
            "m": {"type": "map", "description": "two items", "map": {
                "over": "[1, 2]", "as": "x", "max_items": 2, "max_parallel": 2,
                "body": {"entrypoints": ["ok"], "nodes": {
                    "ok": {"type": "gate", "description": "go?", "gate": {"mode": "approve"}}
                }}
            }},
            "slow": {"type": "task", "description": "slow", "x-weft-exec": {"run": "sleep 2"}}
        },
    });
    let (store, report) = run_deciding_live(&doc, dir.path(), "reenter", "m[1]", "m[0].ok").await;
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    assert_eq!(waiting(&report), ["m[1].ok"]);
    // Item 0 ended in this run, from the decision; nothing of item 1 did.
    let ended: Vec<String> = store
        .read("reenter", 1, 1000)
        .unwrap()
        .iter()
        .filter(|r| r.kind == "run_finished")
        .filter_map(|r| weft_engine::scope_of(r).map(str::to_string))
        .collect();
    assert_eq!(ended, ["m[0]"]);
    decide(
        &store,
        "reenter",
        &request("m[1].ok", Verb::Approve, json!({})),
    )
    .unwrap();
    let done = resume(&store, "reenter", dir.path()).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
}

#[tokio::test]
async fn a_gate_in_a_map_nested_in_a_loop_is_decided_by_its_full_address() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "test/nested",
        "entrypoints": ["l"],
        "nodes": {"l": {"type": "loop", "description": "once", "loop": {
            "mode": "repeat", "max_iterations": 1,
            "collect": {"n": "nodes.m.outputs.n"},
            "body": {"entrypoints": ["m"], "nodes": {"m": {"type": "map", "description": "items",
                "map": {"over": "[1, 2]", "as": "x", "max_items": 2, "max_parallel": 2,
                    "collect": {"n": "x"},
                    "body": {"entrypoints": ["ok"], "nodes": {"ok": {"type": "gate",
                        "description": "go?", "gate": {"mode": "approve"}}}}},
                "outputs": {"n": {"type": "array"}}}}}
        }, "outputs": {"n": {"type": "array"}}}},
        "outputs": {"n": {"type": "array", "from": "nodes.l.outputs.n"}},
    });
    let report = run_document(&doc, &store, &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    let mut listed = waiting(&report);
    listed.sort_unstable();
    assert_eq!(listed, ["l[0].m[0].ok", "l[0].m[1].ok"]);
    let run = report.run_id.clone();
    for addr in ["l[0].m[0].ok", "l[0].m[1].ok"] {
        decide(&store, &run, &request(addr, Verb::Approve, json!({}))).unwrap();
    }
    let done = resume(&store, &run, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    assert_eq!(done.outputs["n"], json!([1, 2]));
}

#[tokio::test]
async fn a_gate_timeout_inside_an_instance_is_carried_out_on_resume_as_at_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let mut doc = map_with_gate(1);
    doc["nodes"]["m"]["map"]["body"]["nodes"]["ok"]["gate"] =
        json!({"mode": "approve", "timeout_seconds": 0.05, "on_timeout": "approve"});
    let report = run_document(&doc, &store, &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    assert!(report.waiting.iter().all(|w| w.deadline_ms.is_some()));
    std::thread::sleep(std::time::Duration::from_millis(120));
    let done = resume(&store, &report.run_id, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    assert_eq!(done.outputs["ds"], json!([2, 4, 6]));
    let timeouts = store
        .read(&report.run_id, 1, 10_000)
        .unwrap()
        .iter()
        .filter(|r| r.kind == "human_timeout" && weft_engine::scope_of(r).is_some())
        .count();
    assert_eq!(timeouts, 3);
}

#[tokio::test]
async fn cancelling_a_run_suspended_inside_a_map_cancels_the_map_and_lists_no_waits() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let report = run_document(&map_with_gate(2), &store, &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    let run = report.run_id.clone();
    weft_engine::human::request_cancel(&store, &run, "ann", None).unwrap();
    let done = resume(&store, &run, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Cancelled, "{done:#?}");
    assert_eq!(done.nodes[0].state, "cancelled");
    assert!(open_addresses(&store, &run).is_empty());
    let err = decide(&store, &run, &request("m[0].ok", Verb::Approve, json!({}))).unwrap_err();
    assert!(refusal(err).contains("has finished"));
}

#[tokio::test]
async fn a_human_success_criterion_of_a_map_items_node_is_answered_by_address() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let doc = map_of_task(
        &py("dict(v=str(i[\"n\"]))"),
        json!({"success": {"criteria": [{"id": "review", "kind": "human",
            "description": "a person reads it", "prompt": "Is ${{ outputs.v }} fine?"}]}}),
    );
    let report = run_document(&doc, &store, &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    let w = report.waiting.iter().find(|w| w.node == "m[1].t").unwrap();
    assert_eq!(
        (w.stage.as_str(), w.prompt.as_deref()),
        ("human_criterion", Some("Is 2 fine?"))
    );
    let run = report.run_id.clone();
    let done = approve_and_resume(&store, &run, dir.path(), &["m[0].t", "m[1].t"]).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    assert_eq!(done.outputs["vs"], json!(["1", "2"]));
}

#[tokio::test]
async fn a_fail_fast_map_with_a_failed_item_does_not_wait_for_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    // Each item waits at a checkpoint before its command; the command fails for item 0.
    let mut doc = map_of_task(
        &py("dict(v=str(i[\"n\"])) if i[\"n\"] == 1 else 1 // 0"),
        json!({"human": [{"id": "go", "at": "before_start", "mode": "approve"}]}),
    );
    doc["nodes"]["m"]["map"]["max_parallel"] = json!(1);
    doc["nodes"]["m"]["map"]["over"] = json!("[2, 1]");
    let report = run_document(&doc, &store, &options(dir.path()))
        .await
        .unwrap();
    // Both items wait at their checkpoint (a waiting item frees its slot).
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    let run = report.run_id.clone();
    decide(&store, &run, &request("m[0].t", Verb::Approve, json!({}))).unwrap();
    // Item 0 (over 2) fails: under fail_fast the map fails without waiting for item 1.
    let done = resume(&store, &run, dir.path()).await;
    assert_ne!(done.status, FinalStatus::AwaitingHuman, "{done:#?}");
    assert_eq!(done.nodes[0].state, "failed", "{done:#?}");
    assert!(
        done.nodes[0]
            .error
            .as_deref()
            .unwrap_or("")
            .contains("fail_fast"),
        "{done:#?}"
    );
}

/// [`map_with_gate`] over `[1, 2]` without its gate: instead, the body's own `success`
/// asks a person (`human` criterion `looks_right`) once an item has doubled its number.
fn map_with_signoff() -> Value {
    let mut doc = map_with_gate(2);
    let map = &mut doc["nodes"]["m"]["map"];
    map["over"] = json!("[1, 2]");
    let body = &mut map["body"];
    body["nodes"].as_object_mut().unwrap().remove("ok");
    body["success"] = json!({"criteria": [{"id": "looks_right", "kind": "human",
        "description": "A person checks the double.",
        "prompt": "Is the double of ${{ x }} right?"}]});
    doc
}

/// A `human` criterion in a fragment's own `success` is asked, not left pending: each map
/// item's instance waits, listed by its address (`m[0].success/looks_right`); the map stays
/// open; an approval lets the item succeed, a rejection fails it (the map goes on without
/// it, `null` in its place: `on_item_failure: continue`), and the run finishes once both
/// are answered.
#[tokio::test]
async fn a_signoff_in_a_map_body_is_asked_per_item_and_decided_by_address() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let first = run_document(&map_with_signoff(), &store, &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(first.status, FinalStatus::AwaitingHuman, "{first:#?}");
    let mut asked = waiting(&first);
    asked.sort_unstable();
    assert_eq!(
        asked,
        ["m[0].success/looks_right", "m[1].success/looks_right"]
    );
    assert_eq!(first.waiting[0].stage, "graph_success");
    assert!(
        first.waiting[0]
            .prompt
            .as_deref()
            .is_some_and(|p| p.starts_with("Is the double of")),
        "{:?}",
        first.waiting[0].prompt
    );
    let mut open = open_addresses(&store, &first.run_id);
    open.sort_unstable();
    assert_eq!(
        open,
        ["m[0].success/looks_right", "m[1].success/looks_right"]
    );

    decide(
        &store,
        &first.run_id,
        &request("m[0].success/looks_right", Verb::Approve, json!({})),
    )
    .unwrap();
    let half = resume(&store, &first.run_id, dir.path()).await;
    assert_eq!(half.status, FinalStatus::AwaitingHuman, "{half:#?}");
    assert_eq!(waiting(&half), ["m[1].success/looks_right"]);

    decide(
        &store,
        &first.run_id,
        &request("m[1].success/looks_right", Verb::Reject, json!({})),
    )
    .unwrap();
    let done = resume(&store, &first.run_id, dir.path()).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    // Item 0 signed off with its double; item 1 rejected: `null` in its place.
    assert_eq!(done.outputs["ds"], json!([2, null]), "{done:#?}");
    let record = record_of(&store, &first.run_id).unwrap();
    assert_valid(&record);
    assert!(
        decide(
            &store,
            &first.run_id,
            &request("m[1].success/looks_right", Verb::Approve, json!({})),
        )
        .is_err(),
        "a finished run takes no decision"
    );
}

//! `weft status` is the run view of the log (`weft_host::view::RunView`), not the run
//! record: checked here against the record node by node — a failure that leaves a node
//! unreachable and another isolated, a wait on a person, map instances with nodes the log
//! never names, a cancel, a node a mutation cancelled — and on a run another process is
//! still appending to, read again and again while it runs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use weft_test_support::cli::{call, weft};

fn json_of(dir: &Path, args: &[&str]) -> Value {
    let out = call(dir, args);
    assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

fn exec(run: &str, extra: Value) -> Value {
    let mut node = json!({"title": "t", "description": "d", "x-weft-exec": {"run": run}});
    if let (Value::Object(n), Value::Object(extra)) = (&mut node, extra) {
        n.extend(extra);
    }
    node
}

fn doc(id: &str, entrypoints: &[&str], nodes: Value, policy: Value) -> Value {
    json!({"ags_version": "1.0", "kind": "AgenticGraph", "id": id, "version": "1.0.0",
           "title": "t", "objective": "o", "description": "d",
           "entrypoints": entrypoints, "nodes": nodes, "policy": policy})
}

/// Runs `doc` and returns its run id (whatever the exit code).
fn run(dir: &Path, name: &str, doc: &Value) -> String {
    std::fs::write(dir.join(name), doc.to_string()).unwrap();
    let out = call(dir, &["run", name, "--json"]);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    report["run_id"].as_str().unwrap().to_string()
}

/// `weft status --json` and `weft record` of `run_id` say the same run status, the same
/// nodes (by address) in the same order with the same states, and the same attempts for
/// every node that ended; the text form has a line per node with its state.
fn agree_with_the_record(dir: &Path, run_id: &str) -> Value {
    let status = json_of(dir, &["status", run_id, "--json"]);
    let record = json_of(dir, &["record", run_id]);
    assert_eq!(status["status"], record["status"], "{status:#}");
    assert_eq!(status["started_at"], record["started_at"]);
    assert_eq!(status["finished_at"], record["finished_at"]);
    let of_record: Vec<(String, String)> = record["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let id = n.get("scope_path").unwrap_or(&n["node_id"]);
            (
                id.as_str().unwrap().to_string(),
                n["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let of_status: Vec<(String, String)> = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["id"].as_str().unwrap().to_string(),
                n["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(of_status, of_record, "status {status:#}");
    for (n, r) in status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .zip(record["nodes"].as_array().unwrap())
    {
        if r.get("finished_at").is_some() {
            assert_eq!(
                n["attempts"].as_u64().unwrap() as usize,
                r["attempts"].as_array().map_or(0, Vec::len),
                "{n}"
            );
        }
    }
    let text = call(dir, &["status", run_id]).stdout;
    for (id, state) in &of_status {
        assert!(
            text.lines().any(|l| {
                let mut words = l.split_whitespace();
                words.next() == Some(id) && words.next() == Some(state)
            }),
            "no line `{id} {state}`:\n{text}"
        );
    }
    assert!(
        text.contains(&format!("status: {}", status["status"].as_str().unwrap())),
        "{text}"
    );
    status
}

fn state<'a>(status: &'a Value, id: &str) -> &'a str {
    status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .and_then(|n| n["status"].as_str())
        .unwrap_or_else(|| panic!("no node {id} in {status:#}"))
}

#[test]
fn a_failure_leaves_its_successor_skipped_and_the_rest_runs_on() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nodes = json!({
        "a": exec("exit 3", json!({})),
        "b": exec("true", json!({"depends_on": ["a"]})),
        "c": exec("true", json!({})),
    });
    let id = run(
        d,
        "f.json",
        &doc(
            "fail",
            &["a", "c"],
            nodes,
            json!({"on_node_failure": "isolate"}),
        ),
    );
    let status = agree_with_the_record(d, &id);
    assert_eq!(
        [
            state(&status, "a"),
            state(&status, "b"),
            state(&status, "c")
        ],
        ["failed", "skipped", "succeeded"]
    );
}

#[test]
fn a_wait_on_a_person_then_a_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nodes = json!({
        "review": {"type": "gate", "title": "t", "description": "a person decides",
                   "gate": {"mode": "approve", "prompt": "ship?"}},
        "ship": exec("true", json!({"depends_on": ["review"]})),
    });
    let id = run(d, "g.json", &doc("gate", &["review"], nodes, json!({})));
    let status = agree_with_the_record(d, &id);
    assert_eq!(status["status"], "awaiting_human");
    assert_eq!(status["waiting"][0]["node"], "review");
    assert_eq!(
        [state(&status, "review"), state(&status, "ship")],
        ["awaiting_human", "pending"]
    );
    assert!(status.get("finished_at").is_none());

    assert_eq!(call(d, &["cancel", &id]).code, 0);
    let status = agree_with_the_record(d, &id);
    assert_eq!(status["status"], "cancelled");
    assert!(status.get("waiting").is_none(), "{status:#}");
    assert!(status["finished_at"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn map_instances_list_every_node_of_their_fragment_by_address() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Each item: `d` runs, `g` (a gate) waits, `never` is guarded off by a false `when`.
    let body = json!({"entrypoints": ["d"], "nodes": {
        "d": exec("true", json!({})),
        "g": {"type": "gate", "title": "t", "description": "review", "depends_on": ["d"],
              "gate": {"mode": "approve", "prompt": "ok?"}},
        "never": exec("true", json!({"depends_on": ["d"], "when": "false"})),
    }});
    let nodes = json!({"m": {"type": "map", "title": "t", "description": "d", "map": {
        "over": "params.xs", "as": "x", "max_items": 5, "body": body}}});
    let mut graph = doc("map", &["m"], nodes, json!({}));
    graph["params"] = json!({"xs": {"type": "array", "description": "xs", "required": false,
                                    "default": [1, 2]}});
    let id = run(d, "m.json", &graph);
    let status = agree_with_the_record(d, &id);
    assert_eq!(status["status"], "awaiting_human");
    for i in 0..2 {
        assert_eq!(state(&status, &format!("m[{i}].d")), "succeeded");
        assert_eq!(state(&status, &format!("m[{i}].g")), "awaiting_human");
        assert_eq!(state(&status, &format!("m[{i}].never")), "skipped");
    }
    let waits: Vec<&str> = status["waiting"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["node"].as_str().unwrap())
        .collect();
    assert_eq!(waits, ["m[0].g", "m[1].g"]);
}

/// Node states by rank: a state a later read may not go back from.
fn rank(state: &str) -> u8 {
    match state {
        "pending" => 0,
        "running" => 1,
        _ => 2,
    }
}

#[test]
fn a_run_another_process_appends_to_is_read_as_it_goes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nodes = json!({
        "a": exec("sleep 0.6", json!({})),
        "b": exec("sleep 0.6", json!({"depends_on": ["a"]})),
        "c": exec("sleep 0.6", json!({"depends_on": ["b"]})),
    });
    std::fs::write(
        d.join("chain.json"),
        doc("chain", &["a"], nodes, json!({})).to_string(),
    )
    .unwrap();
    let mut writer = weft(d)
        .args(["run", "chain.json", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut reads: Vec<Value> = Vec::new();
    for _ in 0..600 {
        let out = call(d, &["status", "--json"]);
        if out.code == 0 {
            let status: Value = serde_json::from_str(&out.stdout).unwrap();
            let done = status["status"] == "succeeded";
            reads.push(status);
            if done {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(writer.wait().unwrap().success());
    let last = reads.last().unwrap();
    assert_eq!(last["status"], "succeeded", "{last:#}");
    let running: Vec<&Value> = reads.iter().filter(|r| r["status"] == "running").collect();
    assert!(
        running.iter().any(|r| state(r, "b") == "running"),
        "a read while b ran: {reads:#?}"
    );
    for r in &running {
        assert!(r.get("finished_at").is_none(), "{r:#}");
        // A node runs only once its predecessor succeeded; later ones wait (and right after
        // `run_started`, before `a`'s `node_started`, none runs yet).
        let states = [state(r, "a"), state(r, "b"), state(r, "c")];
        let ranks = states.map(rank);
        assert!(ranks.windows(2).all(|w| w[0] >= w[1]), "{states:?}");
        assert!(
            states.iter().filter(|s| **s == "running").count() <= 1,
            "{states:?}"
        );
    }
    // No read goes back on an earlier one.
    for pair in reads.windows(2) {
        for id in ["a", "b", "c"] {
            assert!(
                rank(state(&pair[1], id)) >= rank(state(&pair[0], id)),
                "{id}: {:#} then {:#}",
                pair[0],
                pair[1]
            );
        }
    }
    agree_with_the_record(d, last["run_id"].as_str().unwrap());
}

#[test]
fn a_node_cancelled_by_a_mutation_is_cancelled_before_and_after_the_resume() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nodes = json!({
        "review": {"type": "gate", "title": "t", "description": "a person decides",
                   "gate": {"mode": "approve"}},
        "ship": exec("true", json!({"depends_on": ["review"]})),
        "notify": exec("true", json!({"depends_on": ["review"]})),
    });
    let id = run(d, "g.json", &doc("mutate", &["review"], nodes, json!({})));
    let out = call(d, &["mutate", &id, "--cancel-node", "ship"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let status = agree_with_the_record(d, &id);
    assert_eq!(
        [state(&status, "ship"), state(&status, "notify")],
        ["cancelled", "pending"],
        "the log names no end of ship: its scheduler retired it"
    );
    assert_eq!(call(d, &["approve", &id, "review"]).code, 0);
    assert_eq!(call(d, &["resume", &id]).code, 0);
    let status = agree_with_the_record(d, &id);
    assert_eq!(
        [state(&status, "ship"), state(&status, "notify")],
        ["cancelled", "succeeded"]
    );
}

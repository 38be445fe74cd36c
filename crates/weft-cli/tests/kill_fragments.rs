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

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use weft_store::{AuditAnchors, EventLog, RunTable, Store};

const POINTS: usize = 30;

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

fn weft() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("weft"))
}

/// The run record without times, ids and attempt counts: each node run by its address.
fn normalised(store: &Store, run_id: &str) -> Value {
    let record = weft_engine::record::record_of(store, run_id).unwrap();
    let nodes: Vec<Value> = record["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let addr = n.get("scope_path").unwrap_or(&n["node_id"]);
            json!([
                addr,
                n["status"],
                n.get("outputs"),
                n.get("items"),
                n.get("iterations")
            ])
        })
        .collect();
    json!({"status": record["status"], "outputs": record["outputs"], "nodes": nodes})
}

/// The log's invariants: gap-free seqs, each node instance finished at most once, no
/// attempt started twice, every started attempt finished or abandoned, each fragment
/// instance opened once.
fn check_log(store: &Store, run_id: &str, point: &str) {
    let log = store.read(run_id, 1, usize::MAX).unwrap();
    let seqs: Vec<u64> = log.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=log.len() as u64).collect::<Vec<_>>(), "{point}");
    let mut finished: BTreeMap<String, u32> = BTreeMap::new();
    let mut started: BTreeMap<(String, u64), u32> = BTreeMap::new();
    let mut open: BTreeMap<String, u64> = BTreeMap::new();
    let mut opened: BTreeMap<String, u32> = BTreeMap::new();
    for r in &log {
        let scope = weft_engine::scope_of(r).unwrap_or("").to_string();
        let node = format!("{scope}/{}", r.payload["node"].as_str().unwrap_or(""));
        let attempt = r.payload["attempt"].as_u64().unwrap_or(0);
        match r.kind.as_str() {
            "run_started" => *opened.entry(scope).or_default() += 1,
            "node_started" => {
                *started.entry((node.clone(), attempt)).or_default() += 1;
                open.insert(node, attempt);
            }
            "node_abandoned" => assert_eq!(open.remove(&node), Some(attempt), "{point}: {node}"),
            "node_finished" => {
                *finished.entry(node.clone()).or_default() += 1;
                open.remove(&node);
            }
            _ => {}
        }
    }
    assert!(finished.values().all(|&c| c == 1), "{point}: {finished:?}");
    assert!(started.values().all(|&c| c == 1), "{point}: {started:?}");
    assert!(opened.values().all(|&c| c == 1), "{point}: {opened:?}");
    assert!(open.is_empty(), "{point}: never finished: {open:?}");
    assert_eq!(log.last().unwrap().kind, "run_finished", "{point}");
    assert!(
        weft_engine::scope_of(log.last().unwrap()).is_none(),
        "{point}"
    );
}

/// The audit log verifies against the store's anchor and covers every audited event once.
fn check_audit(dir: &Path, store: &Store, run_id: &str, point: &str) {
    let path = dir.join(format!("audit/{run_id}.jsonl"));
    let anchor = store.get_anchor(run_id).unwrap().expect("an anchor");
    let file = std::fs::File::open(&path).unwrap();
    let report = weft_audit::verify(BufReader::new(file), Some(&anchor.hash))
        .unwrap_or_else(|e| panic!("{point}: {e}"));
    assert_eq!(report.last_hash, anchor.hash, "{point}");
    let audited: Vec<u64> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["entry"]["data"]["event_seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let expected: Vec<u64> = store
        .read(run_id, 1, usize::MAX)
        .unwrap()
        .iter()
        .filter(|r| r.kind != "node_when")
        .map(|r| r.seq)
        .collect();
    assert_eq!(audited, expected, "{point}");
}

#[test]
fn seeded_kills_inside_loops_and_maps_resume_to_the_uninterrupted_record() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("g.agraph.json"), graph().to_string()).unwrap();
    let full = weft()
        .current_dir(d)
        .args(["run", "g.agraph.json", "--db", "full.db", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&full.stdout).unwrap();
    assert_eq!(report["status"], "succeeded", "{report}");
    let full_id = report["run_id"].as_str().unwrap().to_string();
    let (expected, total) = {
        let store = Store::open(d.join("full.db")).unwrap();
        check_log(&store, &full_id, "uninterrupted");
        (
            normalised(&store, &full_id),
            store.last_seq(&full_id).unwrap(),
        )
    };
    // The shape this test relies on: two iterations of three items each.
    assert_eq!(expected["outputs"], json!({"acc": 24}), "{expected}");
    let states = expected["nodes"].to_string();
    assert!(states.contains(r#"["l[1].m[2].d","succeeded""#), "{states}");

    let mut seed: u64 = 0x00f4_a9e0_c0de_0001;
    let mut next = || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seed >> 33
    };
    let mut resumed = 0;
    for i in 0..POINTS {
        // After the k-th event (1..=total), plus 0..25 ms.
        let k = 1 + next() % total;
        let delay_us = next() % 25_000;
        let point = format!("point {i}: after event {k} + {delay_us} µs");
        let db = format!("k{i}.db");
        let mut child = weft()
            .current_dir(d)
            .args(["run", "g.agraph.json", "--db", &db, "--jsonl"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut run_id = String::new();
        for _ in 0..k {
            let Some(Ok(line)) = lines.next() else { break };
            run_id = serde_json::from_str::<Value>(&line).unwrap()["run_id"]
                .as_str()
                .unwrap()
                .to_string();
        }
        std::thread::sleep(Duration::from_micros(delay_us));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        drop(lines);
        assert!(!run_id.is_empty(), "{point}: no event before the kill");
        let out = weft()
            .current_dir(d)
            .args([
                "resume",
                &run_id,
                "--db",
                &db,
                "--retry-uncertain",
                "--json",
            ])
            .output()
            .unwrap();
        let resume: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{point}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(resume["status"], "succeeded", "{point}: {resume}");
        if resume["resumed"] == true {
            resumed += 1;
        }
        let store = Store::open(d.join(&db)).unwrap();
        assert_eq!(store.list_runs(None, 10).unwrap().len(), 1, "{point}");
        assert_eq!(normalised(&store, &run_id), expected, "{point}");
        check_log(&store, &run_id, &point);
        check_audit(d, &store, &run_id, &point);
    }
    // Most points fall before the end of the run (a few may land after `run_finished`).
    assert!(
        resumed >= POINTS / 2,
        "only {resumed} of {POINTS} kills left work to resume"
    );
}

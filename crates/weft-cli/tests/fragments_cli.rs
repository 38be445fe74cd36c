//! `weft run` and `weft status` on a graph with a map: each instance's events are named by
//! their instance in the text lines, carry `scope` in `--jsonl`, and `weft status` lists
//! the nodes inside instances by address.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

use std::process::Command;

use serde_json::{Value, json};

fn weft(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(assert_cmd::cargo::cargo_bin("weft"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn graph() -> Value {
    let item = json!({"entrypoints": ["d"], "nodes": {"d": {"title": "t", "description": "d",
        "inputs": {"n": {"type": "integer", "description": "n", "from": "x"}},
        "outputs": {"d": {"type": "integer", "description": "d"}},
        "x-weft-exec": {"run": "python3 -c 'import json,sys; print(json.dumps(dict(d=json.load(sys.stdin)[\"n\"] * 2)))'"}}}});
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "demo/map", "version": "1.0.0",
        "title": "t", "objective": "o", "description": "d",
        "params": {"xs": {"type": "array", "description": "xs", "required": false, "default": [1, 2, 3]}},
        "entrypoints": ["m"],
        "nodes": {"m": {"type": "map", "title": "t", "description": "d", "map": {
            "over": "params.xs", "as": "x", "max_items": 5,
            "collect": {"ds": "nodes.d.outputs.d"}, "body": item}}},
        "outputs": {"ds": {"type": "array", "description": "ds", "from": "nodes.m.outputs.ds"}}
    })
}

#[test]
fn instances_are_named_in_the_text_lines_jsonl_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("g.json"), graph().to_string()).unwrap();
    let out = weft(d, &["run", "g.json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("instance m[0] started"), "{text}");
    assert!(
        text.contains("m[2]: node d succeeded (1 attempt)"),
        "{text}"
    );
    assert!(text.contains("instance m[2] finished: succeeded"), "{text}");
    let run_id = text
        .lines()
        .find_map(|l| l.strip_prefix("run_id: "))
        .map(str::to_string)
        .or_else(|| {
            text.split_whitespace()
                .find(|w| w.starts_with("run-"))
                .map(str::to_string)
        })
        .unwrap();
    let status = weft(d, &["status", &run_id]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("m[1].d"), "{status}");

    let out = weft(d, &["run", "g.json", "--jsonl", "--db", "j.db"]);
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let scoped: Vec<&str> = lines
        .iter()
        .filter(|l| l["kind"] == "run_started")
        .filter_map(|l| l["payload"]["scope"].as_str())
        .collect();
    assert_eq!(scoped, ["m[0]", "m[1]", "m[2]"]);
    let last = lines.last().unwrap();
    assert_eq!(last["kind"], "run_finished");
    assert!(last["payload"].get("scope").is_none());
}

#[test]
fn weft_record_prints_a_subgraph_childs_own_record() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut g = graph();
    let mut body = g["nodes"]["m"]["map"]["body"].clone();
    body["nodes"]["d"]["inputs"]["n"]["from"] = json!("params.x");
    g["subgraphs"] = json!({"one": {
        "params": {"x": {"type": "integer", "description": "x"}},
        "entrypoints": body["entrypoints"].clone(), "nodes": body["nodes"].clone(),
        "outputs": {"d": {"type": "integer", "description": "d", "from": "nodes.d.outputs.d"}}
    }});
    g["nodes"] = json!({"s": {"type": "subgraph", "title": "t", "description": "d",
        "subgraph": {"use": "one", "params": {"x": "5"}},
        "outputs": {"d": {"type": "integer", "description": "d"}}}});
    g["entrypoints"] = json!(["s"]);
    g["outputs"] =
        json!({"d": {"type": "integer", "description": "d", "from": "nodes.s.outputs.d"}});
    std::fs::write(d.join("g.json"), g.to_string()).unwrap();
    let out = weft(d, &["run", "g.json", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["status"], "succeeded", "{report}");
    let run_id = report["run_id"].as_str().unwrap();
    let out = weft(d, &["record", &format!("{run_id}/s")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let child: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(child["run_id"], json!(format!("{run_id}/s")));
    assert_eq!(child["parent_run_id"], json!(run_id));
    assert_eq!(child["outputs"], json!({"d": 10}));
}

/// The map of [`graph`] with a review gate `g` after `d` in every item.
fn gated_graph() -> Value {
    let mut g = graph();
    g["nodes"]["m"]["map"]["body"]["nodes"]["g"] = json!({"type": "gate", "title": "t",
        "description": "review the double", "depends_on": ["d"],
        "gate": {"mode": "approve", "prompt": "ok?"}});
    g
}

#[test]
fn a_gate_in_each_map_item_exits_3_and_is_decided_by_address() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("g.json"), gated_graph().to_string()).unwrap();
    let out = weft(d, &["run", "g.json", "--param", "xs=[1, 2]"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("waiting on a person:"), "{text}");
    let run_id = text
        .split_whitespace()
        .find(|w| w.starts_with("run-"))
        .map(|w| w.trim_end_matches([':', ',', '.']).to_string())
        .unwrap();
    // Each wait is listed by its address, with the command that decides it, quoted for the
    // shell (`m[1].g` is a glob pattern): pasted into `sh` as printed, it decides `m[1].g`.
    let printed = format!("weft approve {run_id} 'm[1].g'");
    assert!(text.contains(&printed), "{text}");
    let bin = assert_cmd::cargo::cargo_bin("weft");
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let pasted = Command::new("sh")
        .arg("-c")
        .arg(&printed)
        .current_dir(d)
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        pasted.status.success(),
        "{}",
        String::from_utf8_lossy(&pasted.stderr)
    );
    let status = weft(d, &["status", &run_id]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("m[0].g"), "{status}");

    // An unknown instance is refused (exit 1) with a clear error.
    let bad = weft(d, &["approve", &run_id, "m[5].g"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("no instance `m[5]`"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    // The other by its address as an argument.
    let ok = weft(d, &["approve", &run_id, "m[0].g"]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let resumed = weft(d, &["resume", &run_id]);
    let text = String::from_utf8_lossy(&resumed.stdout);
    assert!(resumed.status.success(), "{text}");
    let status = weft(d, &["status", &run_id, "--json"]);
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["status"], json!("succeeded"), "{status:#}");
}

#[test]
fn a_run_prints_every_warning_a_node_finished_with() {
    // Issue 13: a loop that hit its cap under `on_max_iterations: succeed` succeeds, and its
    // RT021 is said on the terminal, not only logged (DIGEST §1.8).
    let step = json!({"entrypoints": ["s"], "nodes": {"s": {"title": "t", "description": "d",
        "x-weft-exec": {"run": "python3 -c 'print(\"{}\")'"}}}});
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "demo/cap", "version": "1.0.0",
        "title": "t", "objective": "o", "description": "d",
        "entrypoints": ["l"],
        "nodes": {"l": {"type": "loop", "title": "t", "description": "d", "loop": {
            "mode": "until", "condition": "false", "max_iterations": 2,
            "on_max_iterations": "succeed", "body": step}}}
    });
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("g.json"), doc.to_string()).unwrap();
    let out = weft(d, &["run", "g.json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("warning: l: RT021: loop `l` reached max_iterations 2")),
        "{text}"
    );
}

//! `weft mutate` through the real binary: a suspended run's graph is changed (a node
//! cancelled), refusals exit 1 with the reason and write nothing, and the resumed run and
//! its record show the change.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use serde_json::Value;
use std::path::Path;
use weft_test_support::cli::call;

const GATE: &str = r#"
ags_version: "1.0"
kind: AgenticGraph
id: t/mutate
title: Mutate
objective: Change the plan while a person decides.
entrypoints: [review]
nodes:
  review:
    type: gate
    title: Review
    description: A person approves.
    gate: {mode: approve}
  ship:
    title: Ship
    description: Ships.
    depends_on: [review]
    x-weft-exec: {run: "true"}
  notify:
    title: Notify
    description: Tells the team.
    depends_on: [review]
    x-weft-exec: {run: "true"}
"#;

fn events_of(d: &Path, id: &str) -> usize {
    call(d, &["events", id]).stdout.lines().count()
}

#[test]
fn mutate_cancels_a_node_of_a_suspended_run_and_refuses_what_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("g.agraph.yaml"), GATE).unwrap();
    let out = call(d, &["run", "g.agraph.yaml"]);
    let id = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("run_id: "))
        .unwrap()
        .to_string();

    let before = events_of(d, &id);
    for (args, reason) in [
        (vec!["--cancel-node", "nope"], "no node `nope`"),
        (vec!["--cancel-node", "review"], "refused"),
        (vec!["--add-edge", "notify", "review"], "refused"),
    ] {
        let mut full = vec!["mutate", id.as_str()];
        full.extend(args);
        let out = call(d, &full);
        assert_eq!(out.code, 1, "{full:?}: {}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains(reason), "{full:?}: {}", out.stderr);
    }
    assert_eq!(events_of(d, &id), before, "a refusal wrote nothing");

    let out = call(
        d,
        &["mutate", &id, "--cancel-node", "ship", "--as", "planner"],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("graph_mutated by planner"),
        "{}",
        out.stdout
    );
    assert_eq!(events_of(d, &id), before + 1);

    assert_eq!(call(d, &["approve", &id, "review"]).code, 0);
    let out = call(d, &["resume", &id]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let record: Value = serde_json::from_str(&call(d, &["record", &id]).stdout).unwrap();
    let state = |node: &str| {
        record["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["node_id"] == node)
            .map(|n| n["status"].clone())
            .unwrap()
    };
    assert_eq!(state("ship"), "cancelled", "{record:#}");
    assert_eq!(state("notify"), "succeeded");
    // A finished run takes no more changes.
    let out = call(d, &["mutate", &id, "--cancel-node", "notify"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("already finished"), "{}", out.stderr);
}

#[test]
fn mutate_adds_a_node_and_a_plan_and_holds_and_releases_through_files_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("g.agraph.yaml"), GATE).unwrap();
    let out = call(d, &["run", "g.agraph.yaml"]);
    let id = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("run_id: "))
        .unwrap()
        .to_string();
    let task = |id: &str| {
        serde_json::json!({"id": id, "node": {"title": "Added", "description": "added",
            "x-weft-exec": {"run": "true"}}})
    };
    let mut added = task("audit");
    added["after"] = serde_json::json!([{"from": "ship"}]);
    std::fs::write(d.join("node.json"), added.to_string()).unwrap();
    let plan = serde_json::json!({"nodes": [
        {"id": "p2", "node": task("p2")["node"], "after": [{"from": "p1"}]},
        {"id": "p1", "node": task("p1")["node"], "after": [{"from": "audit"}]},
    ]});
    std::fs::write(d.join("plan.json"), plan.to_string()).unwrap();
    let before = events_of(d, &id);

    // Files that cannot be used: exit 2, nothing written, the place named (file:line:col).
    std::fs::write(d.join("broken.json"), "{not json").unwrap();
    // A misspelt `after` would make an entry node that runs at once: refused.
    std::fs::write(
        d.join("typo.json"),
        "{\"nodes\": [\n  {\"id\": \"p9\", \"node\": {}, \"aftr\": [{\"from\": \"p1\"}]}\n]}",
    )
    .unwrap();
    for (args, reason) in [
        (
            vec!["--add-node", "missing.json"],
            "cannot read missing.json",
        ),
        (
            vec!["--add-node", "broken.json"],
            "broken.json:1:2: broken.json is not JSON",
        ),
        (
            vec!["--plan", "node.json"],
            "unknown field `id`, expected `nodes`",
        ),
        (
            vec!["--plan", "typo.json"],
            "typo.json:2:33: typo.json is not a plan",
        ),
        (vec!["--plan", "typo.json"], "unknown field `aftr`"),
    ] {
        let mut full = vec!["mutate", id.as_str()];
        full.extend(args);
        let out = call(d, &full);
        assert_eq!(out.code, 2, "{full:?}: {}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains(reason), "{full:?}: {}", out.stderr);
    }
    // A plan with a name that resolves nowhere: refused, the name reported.
    let mut bad = plan.clone();
    bad["nodes"][0]["after"] = serde_json::json!([{"from": "ghost"}]);
    std::fs::write(d.join("bad.json"), bad.to_string()).unwrap();
    let out = call(d, &["mutate", &id, "--plan", "bad.json"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("`ghost`"), "{}", out.stderr);
    assert_eq!(events_of(d, &id), before, "a refusal wrote nothing");

    assert_eq!(call(d, &["mutate", &id, "--add-node", "node.json"]).code, 0);
    assert_eq!(call(d, &["mutate", &id, "--plan", "plan.json"]).code, 0);
    // The merge's node from stdin.
    let out = assert_cmd::Command::cargo_bin("weft")
        .unwrap()
        .current_dir(d)
        .args(["mutate", &id, "--merge", "p2", "notify", "--into", "-"])
        .write_stdin(task("p2n").to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(call(d, &["mutate", &id, "--hold"]).code, 0);
    assert_eq!(call(d, &["mutate", &id, "--release"]).code, 0);
    assert_eq!(events_of(d, &id), before + 5);

    assert_eq!(call(d, &["approve", &id, "review"]).code, 0);
    let out = call(d, &["resume", &id]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let record: Value = serde_json::from_str(&call(d, &["record", &id]).stdout).unwrap();
    let state = |node: &str| {
        record["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["node_id"] == node)
            .map(|n| n["status"].clone())
            .unwrap_or_else(|| panic!("no {node} in {record:#}"))
    };
    for node in ["ship", "audit", "p1", "p2n"] {
        assert_eq!(state(node), "succeeded", "{node}: {record:#}");
    }
    for node in ["p2", "notify"] {
        assert_eq!(state(node), "cancelled", "{node} was merged");
    }
}

//! Every agent node in its own copy of the project (`docs/semantics.md`, "Workspaces";
//! `docs/engine.md` §3n), through `weft run --config` with a loopback provider double whose
//! model writes a file with `file_write`: two parallel nodes editing different files both
//! merge, each as a recorded patch; editing the same file, the second to finish conflicts
//! (its attempt fails naming the path, its patch recorded and not applied);
//! `[workspace] isolate = "declared"` lets the model write the project directly, and
//! `weft config check` shows the mode.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use weft_test_support::scripted as provider;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use assert_cmd::Command;
use provider::{responding, tool_call};
use serde_json::{Value, json};
use weft_store::{EventLog, Store};

/// Two model nodes with no edge between them (so they run in parallel), each writing the
/// file its brief names.
fn doc(file_a: &str, file_b: &str) -> String {
    let node = |id: &str, file: &str| {
        format!(
            "  {id}:\n    title: {id}\n    description: \"Node {id}: write {file} with file_write.\"\n    \
             requirements:\n      tools: [file_write]\n      permissions: [\"fs:write:{file}\"]\n      \
             workspace: read_write\n    failure:\n      retry:\n        max_attempts: 1\n    \
             outputs:\n      done:\n        type: string\n        description: Done.\n"
        )
    };
    format!(
        "ags_version: \"1.0\"\nkind: AgenticGraph\nid: t/ws\ntitle: Parallel writers\n\
         objective: Two nodes write files.\nentrypoints: [a, b]\npolicy:\n  on_node_failure: continue\n\
         constraints:\n  max_parallel_nodes: 2\n\
         nodes:\n{}{}",
        node("a", file_a),
        node("b", file_b)
    )
}

/// The model: a first turn writes the file the brief names (content: the node's name), the
/// turn after the tool result reports. A first turn is answered only once both nodes asked
/// (`first`: how many did), so both copies of the project exist before either node writes.
fn model(body: &str, first: &AtomicUsize) -> String {
    if body.contains("call_file_write") {
        return tool_call("emit_output", json!({"done": "yes"}));
    }
    first.fetch_add(1, Ordering::SeqCst);
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while first.load(Ordering::SeqCst) < 2 && std::time::Instant::now() < give_up {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let brief = |id: &str| body.contains(&format!("Node {id}: write"));
    let (id, path) = match (brief("a"), brief("b")) {
        (true, _) => ("a", file_named(body, "a")),
        _ => ("b", file_named(body, "b")),
    };
    tool_call(
        "file_write",
        json!({"path": path, "content": format!("written by {id}\n")}),
    )
}

/// The file `Node ID: write FILE with file_write.` names in the request body.
fn file_named(body: &str, id: &str) -> String {
    let marker = format!("Node {id}: write ");
    let rest = &body[body.find(&marker).unwrap() + marker.len()..];
    rest[..rest.find(" with").unwrap()].to_string()
}

fn profile(port: u16, files: &[&str], isolate: Option<&str>) -> String {
    let mut p = format!(
        "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}\"\nmax_attempts = 1\n\
         [tiers.standard]\nprovider = \"p\"\nmodel = \"mid\"\n"
    );
    for f in files {
        p.push_str(&format!(
            "[[policy.rules]]\ndecision = \"allow\"\npermission = \"fs:write:{f}\"\n"
        ));
    }
    if let Some(mode) = isolate {
        p.push_str(&format!("[workspace]\nisolate = \"{mode}\"\n"));
    }
    p
}

/// Runs the two-writer graph; returns the report and the log's `node_patch` payloads.
fn run(dir: &Path, file_a: &str, file_b: &str, isolate: Option<&str>) -> (Value, Vec<Value>) {
    let first = AtomicUsize::new(0);
    let (port, _seen) = responding(move |body| model(body, &first));
    let mut files = vec![file_a];
    if file_b != file_a {
        files.push(file_b);
    }
    std::fs::write(dir.join("weft.toml"), profile(port, &files, isolate)).unwrap();
    std::fs::write(dir.join("ws.agraph.yaml"), doc(file_a, file_b)).unwrap();
    let out = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir)
        .args([
            "run",
            "ws.agraph.yaml",
            "--config",
            "weft.toml",
            "--db",
            "w.db",
        ])
        .args(["--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    let store = Store::open(dir.join("w.db")).unwrap();
    let run_id = report["run_id"].as_str().unwrap();
    let patches = store
        .read(run_id, 1, usize::MAX)
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == "node_patch")
        .map(|r| r.payload)
        .collect();
    (report, patches)
}

#[test]
fn parallel_agent_nodes_editing_different_files_both_merge_as_recorded_patches() {
    let dir = tempfile::tempdir().unwrap();
    let (report, patches) = run(dir.path(), "a.txt", "b.txt", None);
    assert_eq!(report["status"], "succeeded", "{report}");
    for id in ["a", "b"] {
        assert_eq!(
            std::fs::read_to_string(dir.path().join(format!("{id}.txt"))).unwrap(),
            format!("written by {id}\n")
        );
    }
    let mut merged: Vec<(String, Value)> = patches
        .iter()
        .map(|p| (p["node"].as_str().unwrap().to_string(), p["files"].clone()))
        .collect();
    merged.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(
        merged,
        vec![
            ("a".into(), json!(["a.txt"])),
            ("b".into(), json!(["b.txt"]))
        ]
    );
    assert!(patches.iter().all(|p| p["applied"] == true), "{patches:?}");
    assert!(patches[0]["diff"].as_str().unwrap().contains("+written by"));
    // No copy is left behind.
    let left = std::fs::read_dir(dir.path().join(".weft/scratch"))
        .map(|d| {
            d.flatten()
                .flat_map(|r| std::fs::read_dir(r.path()).unwrap())
                .count()
        })
        .unwrap_or(0);
    assert_eq!(left, 0);
}

#[test]
fn parallel_agent_nodes_editing_the_same_file_the_second_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let (report, patches) = run(dir.path(), "shared.txt", "shared.txt", None);
    let nodes = report["nodes"].as_array().unwrap();
    let failed: Vec<&Value> = nodes.iter().filter(|n| n["state"] == "failed").collect();
    let succeeded: Vec<&Value> = nodes.iter().filter(|n| n["state"] == "succeeded").collect();
    assert_eq!((failed.len(), succeeded.len()), (1, 1), "{report}");
    let error = failed[0]["error"].as_str().unwrap();
    assert!(
        error.starts_with("tool_error: ") && error.contains("shared.txt"),
        "{error}"
    );
    // The winner's content is in the project; the loser's patch is recorded, not applied.
    let winner = succeeded[0]["id"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("shared.txt")).unwrap(),
        format!("written by {winner}\n")
    );
    let loser = failed[0]["id"].as_str().unwrap();
    let theirs: Vec<&Value> = patches.iter().filter(|p| p["node"] == loser).collect();
    assert!(
        theirs.iter().any(|p| p["applied"] == false
            && p["error"]
                .as_str()
                .is_some_and(|e| e.contains("shared.txt"))),
        "{theirs:?}"
    );
    assert!(
        theirs.iter().any(|p| p["diff"]
            .as_str()
            .is_some_and(|d| d.contains(&format!("+written by {loser}")))),
        "the conflicting edit is recorded: {theirs:?}"
    );
}

#[test]
fn isolate_declared_lets_agents_write_the_project_directly_and_config_check_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let (report, patches) = run(dir.path(), "a.txt", "b.txt", Some("declared"));
    assert_eq!(report["status"], "succeeded", "{report}");
    assert!(dir.path().join("a.txt").is_file() && dir.path().join("b.txt").is_file());
    assert!(patches.is_empty(), "{patches:?}");

    let check = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir.path())
        .args(["config", "check"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(text.contains("workspace: isolate = declared"), "{text}");
    std::fs::write(
        dir.path().join("weft.toml"),
        "[workspace]\nisolate = \"some\"\n",
    )
    .unwrap();
    let bad = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir.path())
        .args(["config", "check"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("workspace.isolate"));
}

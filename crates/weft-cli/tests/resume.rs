//! `weft resume` through the real binary: `weft run` killed with SIGKILL at seeded random
//! instants, then `weft resume --retry-uncertain`, ends with every node terminal, the node
//! states of an uninterrupted run, and a gap-free log.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use serde_json::Value;
use std::path::Path;
use std::time::Duration;
use weft_test_support::cli::weft;

const GRAPH: &str = r#"{
  "ags_version": "1.0", "kind": "AgenticGraph", "id": "slow", "version": "1.0.0",
  "title": "slow", "objective": "resume after a kill", "description": "four slow steps", "entrypoints": ["a"],
  "nodes": {
    "a": {"title": "a", "description": "a", "x-weft-exec": {"run": "sleep 0.2; echo a"}},
    "b": {"title": "b", "description": "b", "depends_on": ["a"], "x-weft-exec": {"run": "sleep 0.2; echo b"}},
    "c": {"title": "c", "description": "c", "depends_on": ["a"], "x-weft-exec": {"run": "sleep 0.2; exit 1"}},
    "d": {"title": "d", "description": "d", "depends_on": ["b"], "x-weft-exec": {"run": "sleep 0.2; echo d"}}
  }
}"#;

fn json_out(dir: &Path, args: &[&str]) -> Value {
    let out = weft(dir).args(args).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

fn node_states(record: &Value) -> Vec<(String, String)> {
    record["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["node_id"].as_str().unwrap().to_string(),
                n["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_killed_run_resumes_to_the_uninterrupted_end() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("g.agraph.yaml"), GRAPH).unwrap();
    let full = json_out(d, &["run", "g.agraph.yaml", "--db", "full.db", "--json"]);
    let full_id = full["run_id"].as_str().unwrap();
    let expected = node_states(&json_out(d, &["record", full_id, "--db", "full.db"]));
    assert!(
        expected
            .iter()
            .all(|(_, s)| s != "pending" && s != "running")
    );

    // Seeded instants in [0.05 s, 0.75 s): a small LCG, no `rand`.
    let mut seed: u64 = 0x5eed;
    for k in 0..4 {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let ms = 50 + (seed >> 33) % 700;
        let db = format!("k{k}.db");
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("weft"))
            .current_dir(d)
            .args(["run", "g.agraph.yaml", "--db", &db, "--json"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(ms));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let runs = json_out(d, &["runs", "--db", &db, "--json"]);
        let Some(id) = runs["runs"].as_array().unwrap().first() else {
            continue; // killed before the run was created: nothing to resume
        };
        let id = id["run_id"].as_str().unwrap().to_string();
        let out = weft(d)
            .args(["resume", &id, "--db", &db, "--retry-uncertain", "--json"])
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!("kill at {ms} ms: {}", String::from_utf8_lossy(&out.stderr))
        });
        assert_eq!(report["status"], full["status"], "kill at {ms} ms");
        eprintln!("kill at {ms} ms: resumed {}", report["resumed"]);
        // Resuming a finished run does nothing and exits by its status (partial: 1).
        let again = weft(d)
            .args(["resume", &id, "--db", &db, "--json"])
            .output()
            .unwrap();
        assert_eq!(again.status.code(), Some(1));
        let again: Value = serde_json::from_slice(&again.stdout).unwrap();
        assert_eq!(again["resumed"], false);
        let record = json_out(d, &["record", &id, "--db", &db]);
        assert_eq!(node_states(&record), expected, "kill at {ms} ms");
        let events = weft(d).args(["events", &id, "--db", &db]).output().unwrap();
        let seqs: Vec<u64> = String::from_utf8(events.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["seq"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(
            seqs,
            (1..=seqs.len() as u64).collect::<Vec<_>>(),
            "kill at {ms} ms"
        );
    }
}

/// A node that waits until the file `go` exists in the project.
const WAITING: &str = r#"{
  "ags_version": "1.0", "kind": "AgenticGraph", "id": "wait", "version": "1.0.0",
  "title": "wait", "objective": "stay live", "description": "waits for go", "entrypoints": ["w"],
  "nodes": {
    "w": {"title": "w", "description": "w", "x-weft-exec": {"run": "while [ ! -e go ]; do sleep 0.05; done"}}
  }
}"#;

/// A second `weft resume` of a run that a live `weft run` drives says who drives it
/// (owner, host, pid, lease expiry), exits 5 and touches nothing; once the driver is done,
/// the run resumes as usual (already finished).
#[test]
fn a_second_resume_of_a_live_run_says_who_drives_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("w.agraph.json"), WAITING).unwrap();
    let mut driver = std::process::Command::new(assert_cmd::cargo::cargo_bin("weft"))
        .current_dir(d)
        .args(["run", "w.agraph.json", "--db", "w.db", "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Until `w` has started (the run is live, its driver waiting on `go`).
    let mut id = None;
    for _ in 0..600 {
        let runs = weft(d)
            .args(["runs", "--db", "w.db", "--json"])
            .output()
            .unwrap();
        if let Ok(runs) = serde_json::from_slice::<Value>(&runs.stdout)
            && let Some(run) = runs["runs"].as_array().and_then(|r| r.first())
        {
            let run_id = run["run_id"].as_str().unwrap().to_string();
            let events = weft(d)
                .args(["events", &run_id, "--db", "w.db"])
                .output()
                .unwrap();
            if String::from_utf8_lossy(&events.stdout).contains("node_started") {
                id = Some(run_id);
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let id = id.expect("the run never started w");
    let before = weft(d)
        .args(["events", &id, "--db", "w.db"])
        .output()
        .unwrap();

    let second = weft(d)
        .args(["resume", &id, "--db", "w.db"])
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(5));
    let stderr = String::from_utf8_lossy(&second.stderr);
    let pid = driver.id();
    assert!(
        stderr.contains(&format!("run {id} is driven by another process: owner "))
            && stderr.contains(&format!(", pid {pid}, lease until ")),
        "{stderr}"
    );
    let json = weft(d)
        .args(["resume", &id, "--db", "w.db", "--json"])
        .output()
        .unwrap();
    assert_eq!(json.status.code(), Some(5));
    let json: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["status"], "driven_elsewhere");
    assert_eq!(json["run_id"], id.as_str());
    // Nothing was written by the refused resumes.
    let after = weft(d)
        .args(["events", &id, "--db", "w.db"])
        .output()
        .unwrap();
    assert_eq!(before.stdout, after.stdout);

    std::fs::write(d.join("go"), "").unwrap();
    assert!(driver.wait().unwrap().success());
    let done = weft(d)
        .args(["resume", &id, "--db", "w.db", "--json"])
        .output()
        .unwrap();
    assert_eq!(done.status.code(), Some(0));
    let done: Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(
        (done["resumed"].clone(), done["status"].clone()),
        (Value::Bool(false), Value::from("succeeded"))
    );
}

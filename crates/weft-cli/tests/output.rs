//! What `weft run` and `weft resume` print, through the real binary: `--jsonl` (the log as
//! it is appended, nothing else), `--json` (one object with `run_id` and `status`, also for
//! refusals), one line per event when stdout is not a terminal, `--dry-run` (nothing
//! created), and the audit trail written next to the store, verified with
//! `weft audit verify --run` and caught when truncated or edited.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

const GRAPH: &str = r#"{
  "ags_version": "1.0", "kind": "AgenticGraph", "id": "out", "version": "1.0.0",
  "title": "out", "objective": "show a run", "description": "three steps", "entrypoints": ["a"],
  "nodes": {
    "a": {"title": "a", "description": "a", "x-weft-exec": {"run": "echo a"}},
    "b": {"title": "b", "description": "b", "depends_on": ["a"], "x-weft-exec": {"run": "echo b"}},
    "c": {"title": "c", "description": "c", "depends_on": ["b"], "x-weft-exec": {"run": "echo c"}}
  }
}"#;

const NEEDS_A_MODEL: &str = r#"{
  "ags_version": "1.0", "kind": "AgenticGraph", "id": "m", "version": "1.0.0",
  "title": "m", "objective": "needs a model", "description": "d", "entrypoints": ["a"],
  "nodes": {"a": {"title": "a", "description": "Summarise the changelog into release notes."}}
}"#;

fn weft(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("weft").unwrap();
    c.current_dir(dir).env_remove("NO_COLOR");
    c
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("g.agraph.json"), GRAPH).unwrap();
    std::fs::write(dir.path().join("m.agraph.json"), NEEDS_A_MODEL).unwrap();
    dir
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn jsonl_streams_the_log_and_nothing_else() {
    let dir = setup();
    let d = dir.path();
    let out = weft(d)
        .args(["run", "g.agraph.json", "--jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect();
    let run_id = lines[0]["run_id"].as_str().unwrap().to_string();
    assert!(lines.iter().all(|l| l["run_id"] == run_id.as_str()));
    let seqs: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=lines.len() as u64).collect::<Vec<_>>());
    // The stream is the stored log.
    let stored: Vec<Value> = stdout(&weft(d).args(["events", &run_id]).output().unwrap())
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(stored.len(), lines.len());
    for (s, l) in stored.iter().zip(&lines) {
        assert_eq!(
            (&s["seq"], &s["kind"], &s["payload"]),
            (&l["seq"], &l["kind"], &l["payload"])
        );
    }
    assert_eq!(lines.last().unwrap()["kind"], "run_finished");
}

#[test]
fn json_always_has_run_id_and_status() {
    let dir = setup();
    let d = dir.path();
    let out = weft(d)
        .args(["run", "g.agraph.json", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(v["run_id"].as_str().unwrap().starts_with("run-"));
    assert_eq!(v["status"], "succeeded");
    // A refused run: no run was created, and the object still says so.
    let out = weft(d)
        .args(["run", "m.agraph.json", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["run_id"], Value::Null);
    assert_eq!(v["status"], "refused");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("has no live model provider")
    );
}

#[test]
fn without_a_terminal_each_event_is_one_line() {
    let dir = setup();
    let out = weft(dir.path())
        .args(["run", "g.agraph.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("run_id: run-"), "{text}");
    let clock = |l: &str| {
        l.len() > 9 && l.as_bytes()[2] == b':' && l.as_bytes()[5] == b':' && &l[8..9] == " "
    };
    let events: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| clock(l))
        .map(|l| &l[9..])
        .collect();
    assert!(
        events[0].starts_with("run run-") && events[0].contains(" started"),
        "{text}"
    );
    assert!(events.contains(&"node b started (attempt 1)"), "{text}");
    assert!(events.contains(&"node b succeeded (1 attempt)"), "{text}");
    assert_eq!(events.last(), Some(&"run finished: succeeded"), "{text}");
    // No ANSI escapes when stdout is not a terminal.
    assert!(!text.contains('\x1b'), "{text}");
    // The status, then where the record was written (`policy.record_run` defaults to true).
    let n = lines.len();
    assert_eq!(lines[n - 2], "status: succeeded", "{text}");
    let record = lines[n - 1]
        .strip_prefix("record: ")
        .expect("a record line");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(record)).unwrap()).unwrap();
    assert_eq!(written["status"], "succeeded");
    assert!(record.starts_with(".weft/records/run-"), "{record}");
}

#[test]
fn dry_run_writes_nothing() {
    let dir = setup();
    let d = dir.path();
    let out = weft(d)
        .args(["run", "g.agraph.json", "--dry-run", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["status"], "would_run");
    assert_eq!(v["order"], serde_json::json!(["a", "b", "c"]));
    assert_eq!(v["run_id"], Value::Null);
    let out = weft(d)
        .args(["run", "g.agraph.json", "--dry-run"])
        .output()
        .unwrap();
    assert!(
        stdout(&out).contains("would run: a → b → c"),
        "{}",
        stdout(&out)
    );
    // Refused: exit 1 with the reasons, still nothing written.
    let out = weft(d)
        .args(["run", "m.agraph.json", "--dry-run", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(
        v["refusals"][0]
            .as_str()
            .unwrap()
            .contains("has no live model provider")
    );
    assert!(!d.join(".weft").exists(), "the store directory was created");
    // An existing store is left untouched.
    weft(d)
        .args(["run", "g.agraph.json", "--json"])
        .assert()
        .code(0);
    let db = d.join(".weft/weft.db");
    let before = std::fs::read(&db).unwrap();
    let runs = stdout(&weft(d).args(["runs", "--json"]).output().unwrap());
    weft(d)
        .args(["run", "g.agraph.json", "--dry-run"])
        .assert()
        .code(0);
    assert_eq!(std::fs::read(&db).unwrap(), before);
    assert_eq!(
        stdout(&weft(d).args(["runs", "--json"]).output().unwrap()),
        runs
    );
}

#[test]
fn the_audit_trail_verifies_and_catches_truncation_and_edits() {
    let dir = setup();
    let d = dir.path();
    let out = weft(d)
        .args(["run", "g.agraph.json", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let run_id = v["run_id"].as_str().unwrap();
    let out = weft(d)
        .args(["audit", "verify", "--run", run_id])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout(&out).contains("anchor is the last entry"),
        "{}",
        stdout(&out)
    );
    let log = d.join(format!(".weft/audit/{run_id}.jsonl"));
    let text = std::fs::read_to_string(&log).unwrap();
    let kinds: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["entry"]["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("run_started"));
    assert_eq!(kinds.last().map(String::as_str), Some("run_finished"));
    // Truncated: the file alone verifies, the store's chain says it is short.
    let mut lines: Vec<&str> = text.lines().collect();
    lines.pop();
    std::fs::write(
        &log,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    weft(d).args(["audit", "verify"]).arg(&log).assert().code(0);
    let out = weft(d)
        .args(["audit", "verify", "--run", run_id])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("truncated"));
    // The store keeps the chain: `audit export` completes the file from it, byte for byte.
    weft(d)
        .args(["audit", "export", "--run", run_id])
        .assert()
        .code(0);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), text);
    // Edited.
    std::fs::write(
        &log,
        text.replacen("\"node_id\":\"b\"", "\"node_id\":\"x\"", 1),
    )
    .unwrap();
    let out = weft(d)
        .args(["audit", "verify", "--run", run_id])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn resume_jsonl_prints_only_the_new_events() {
    let dir = setup();
    let d = dir.path();
    // A run killed while `b` runs (it sleeps): the kill follows its `node_started` line.
    let slow = GRAPH.replace("echo b", "sleep 0.5; echo b");
    std::fs::write(d.join("slow.agraph.json"), slow).unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("weft"))
        .current_dir(d)
        .args(["run", "slow.agraph.json", "--jsonl"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut run_id = String::new();
    for line in std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap())) {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        run_id = v["run_id"].as_str().unwrap().to_string();
        if v["kind"] == "node_started" && v["payload"]["node"] == "b" {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = stdout(&weft(d).args(["events", &run_id]).output().unwrap())
        .lines()
        .count();
    // `b` may have had side effects: refused without --retry-uncertain, and `--json` says so.
    let out = weft(d)
        .args(["resume", &run_id, "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (v["run_id"].as_str(), v["status"].as_str()),
        (Some(run_id.as_str()), Some("refused"))
    );
    assert!(
        v["error"].as_str().unwrap().contains("`b` (attempt 1)"),
        "{v}"
    );
    let out = weft(d)
        .args(["resume", &run_id, "--retry-uncertain", "--jsonl"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    let seqs: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    let after = stdout(&weft(d).args(["events", &run_id]).output().unwrap())
        .lines()
        .count();
    assert_eq!(seqs, (before as u64 + 1..=after as u64).collect::<Vec<_>>());
    assert_eq!(lines[0]["kind"], "node_abandoned");
    weft(d)
        .args(["audit", "verify", "--run", &run_id])
        .assert()
        .code(0);
    // Plain lines, on a run already finished.
    let out = weft(d).args(["resume", &run_id]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stdout(&out).contains("already finished: nothing to resume"),
        "{}",
        stdout(&out)
    );
}

/// The text report ends with the graph's outputs, one line each, a long one cut with its size.
#[test]
fn the_text_report_shows_the_graph_outputs() {
    const WITH_OUTPUTS: &str = r#"{
      "ags_version": "1.0", "kind": "AgenticGraph", "id": "outs", "version": "1.0.0",
      "title": "outs", "objective": "show outputs", "description": "d", "entrypoints": ["a"],
      "nodes": {"a": {"title": "a", "description": "a",
        "outputs": {"word": {"type": "string", "description": "w"},
                    "long": {"type": "string", "description": "l"}},
        "x-weft-exec": {"run": "printf '{\"word\":\"hello\",\"long\":\"%0300d\"}' 0"}}},
      "outputs": {
        "word": {"type": "string", "description": "w", "from": "nodes.a.outputs.word"},
        "long": {"type": "string", "description": "l", "from": "nodes.a.outputs.long"}
      }
    }"#;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("o.agraph.json"), WITH_OUTPUTS).unwrap();
    let out = weft(dir.path())
        .args(["run", "o.agraph.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.lines().any(|l| l == "output word: \"hello\""),
        "{text}"
    );
    let long = text
        .lines()
        .find(|l| l.starts_with("output long: "))
        .expect("a line for the long output");
    assert!(long.ends_with("… (302 bytes in all)"), "{long}");
    assert!(long.chars().count() < 260, "{long}");
}

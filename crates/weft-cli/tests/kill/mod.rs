//! The seeded kill-and-resume harness shared by the SIGKILL tests: `weft run` killed after
//! the k-th event of its `--jsonl` stream plus a seeded delay, then `weft resume
//! --retry-uncertain`; every point's record, log and audit log are checked.

#![allow(
    dead_code,
    reason = "each test binary that includes the harness uses a different part of it"
)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use weft_store::{AuditAnchors, EventLog, RunTable, Store};

pub fn weft() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("weft"))
}

/// The log's invariants (`weft_test_support::log::check_log`): gap-free seqs, each node
/// instance finished at most once, no attempt started twice, every started attempt finished
/// or abandoned, each fragment instance opened once, the root's `run_finished` last.
pub fn check_log(store: &Store, run_id: &str, point: &str) {
    weft_test_support::log::check_log(&store.read(run_id, 1, usize::MAX).unwrap(), point);
}

/// The audit log verifies against the store's anchor and covers every audited event once.
pub fn check_audit(dir: &Path, store: &Store, run_id: &str, point: &str) {
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

/// Starts `weft ARGS --jsonl` in `dir`, reads `k` events of its stream, waits `delay_us`
/// and kills it with SIGKILL (with `tree`, the commands it runs too, as a machine crash
/// would). Returns the run id the stream named (empty when no event came).
pub fn kill_after(dir: &Path, args: &[&str], k: u64, delay_us: u64, tree: bool) -> String {
    let mut child = weft()
        .current_dir(dir)
        .args(args)
        .arg("--jsonl")
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
    let descendants = if tree {
        descendants(child.id())
    } else {
        Vec::new()
    };
    child.kill().unwrap(); // SIGKILL
    for pid in descendants {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    child.wait().unwrap();
    run_id
}

/// Every process below `pid` (from `/proc/*/task/*/children`).
fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut queue = vec![pid];
    while let Some(p) = queue.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                found.push(child);
                queue.push(child);
            }
        }
    }
    found
}

/// Writes `doc` to `g.agraph.json` in `dir` and runs it to its end uninterrupted (database
/// `full.db`): its record as `normalised` gives it and its number of events, the log checked.
pub fn uninterrupted(
    dir: &Path,
    doc: &Value,
    normalised: fn(&Store, &str) -> Value,
) -> (Value, u64) {
    std::fs::write(dir.join("g.agraph.json"), doc.to_string()).unwrap();
    let full = weft()
        .current_dir(dir)
        .args(["run", "g.agraph.json", "--db", "full.db", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&full.stdout).unwrap();
    assert_eq!(report["status"], "succeeded", "{report}");
    let full_id = report["run_id"].as_str().unwrap().to_string();
    let store = Store::open(dir.join("full.db")).unwrap();
    check_log(&store, &full_id, "uninterrupted");
    (
        normalised(&store, &full_id),
        store.last_seq(&full_id).unwrap(),
    )
}

/// Kills `weft run FILE` at `points` seeded points in `dir` (each point its own database),
/// resumes each, and checks the record (`normalised`) equals `expected`, the log and the
/// audit log. `total` is the uninterrupted run's number of events. Returns how many of the
/// kills left work to resume.
pub fn kill_and_resume(
    dir: &Path,
    file: &str,
    points: u64,
    mut seed: u64,
    total: u64,
    expected: &Value,
    normalised: fn(&Store, &str) -> Value,
) -> u64 {
    let d = dir;
    let mut next = || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seed >> 33
    };
    let mut resumed = 0;
    for i in 0..points {
        // After the k-th event (1..=total), plus 0..25 ms.
        let k = 1 + next() % total;
        let delay_us = next() % 25_000;
        let point = format!("point {i}: after event {k} + {delay_us} µs");
        let db = format!("k{i}.db");
        let run_id = kill_after(d, &["run", file, "--db", &db], k, delay_us, false);
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
        assert_eq!(normalised(&store, &run_id), *expected, "{point}");
        check_log(&store, &run_id, &point);
        check_audit(d, &store, &run_id, &point);
    }
    resumed
}

/// Starts `weft ARGS --jsonl` in `dir`, reads its stream until an event of `kind`, runs
/// `then` and kills it with SIGKILL. Returns the run id and whether the event came.
pub fn kill_at_kind(dir: &Path, args: &[&str], kind: &str, then: impl FnOnce()) -> (String, bool) {
    let mut child = weft()
        .current_dir(dir)
        .args(args)
        .arg("--jsonl")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut run_id = String::new();
    let mut seen = false;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let Ok(line) = line else { break };
        let event: Value = serde_json::from_str(&line).unwrap();
        run_id = event["run_id"].as_str().unwrap_or_default().to_string();
        if event["kind"] == kind {
            seen = true;
            break;
        }
    }
    if seen {
        then();
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    (run_id, seen)
}

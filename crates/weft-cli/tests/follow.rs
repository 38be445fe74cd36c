//! Following a store from another process: `weft events --follow [RUN]` and `weft status
//! --watch RUN` while `weft run` (a separate process) writes the store; a follower killed
//! midway and restarted from its last cursor; a decision by `weft approve` (a third
//! process) taken by the live driver, which the store wakes.
//!
//! Arrival is checked against a generous bound (2 s after the event was recorded) so a
//! loaded machine does not fail the test; the latency itself is measured by
//! `crates/weft-store/examples/tail_latency.rs` (`docs/BENCHMARKS.md`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// Three steps of 0.3 s each: about a second of commits spread out in time.
const CHAIN: &str = r#"{
  "ags_version": "1.0", "kind": "AgenticGraph", "id": "chain", "version": "1.0.0",
  "title": "chain", "objective": "o", "description": "a slow chain", "entrypoints": ["a"],
  "nodes": {
    "a": {"title": "a", "description": "a", "x-weft-exec": {"run": "sleep 0.3"}},
    "b": {"title": "b", "description": "b", "depends_on": ["a"], "x-weft-exec": {"run": "sleep 0.3"}},
    "c": {"title": "c", "description": "c", "depends_on": ["b"], "x-weft-exec": {"run": "sleep 0.3"}}
  }
}"#;

/// A gate next to a node that runs for 3 s: a decision lands while the driver is live.
const GATE: &str = r#"{
  "ags_version": "1.0", "kind": "AgenticGraph", "id": "gate", "version": "1.0.0",
  "title": "gate", "objective": "o", "description": "a gate beside a slow step",
  "entrypoints": ["g", "work"], "constraints": {"max_parallel_nodes": 2},
  "nodes": {
    "g": {"type": "gate", "title": "g", "description": "a person decides", "gate": {"mode": "approve"}},
    "work": {"title": "w", "description": "w", "x-weft-exec": {"run": "sleep 3"}}
  }
}"#;

/// [`CHAIN`] with 0.8 s steps: still running when a follower started after it has begun
/// is up, even on a loaded machine.
fn slow_chain() -> String {
    CHAIN.replace("sleep 0.3", "sleep 0.8")
}

fn weft() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("weft"))
}

fn now_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// `weft ARGS` to completion: (exit code, stdout).
fn call(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = weft().current_dir(dir).args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
    )
}

/// Starts `weft run FILE --db s.db` in the background.
fn start_run(dir: &Path, file: &str, doc: &str) -> Child {
    std::fs::write(dir.join(file), doc).unwrap();
    weft()
        .current_dir(dir)
        .args(["run", file, "--db", "s.db", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The ids of the store's runs once there are `n` of them (oldest first).
fn wait_for_runs(dir: &Path, n: usize) -> Vec<String> {
    for _ in 0..800 {
        if dir.join("s.db").exists() {
            let (_, out) = call(dir, &["runs", "--db", "s.db", "--json"]);
            if let Ok(runs) = serde_json::from_str::<Value>(&out) {
                let ids: Vec<String> = runs["runs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["run_id"].as_str().map(str::to_string))
                    .collect();
                if ids.len() >= n {
                    return ids;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("the runs never appeared");
}

/// A follower process and the lines it printed, each with the time it was read (ms).
struct Follower {
    child: Child,
    lines: mpsc::Receiver<(i64, String)>,
}

impl Follower {
    fn start(dir: &Path, args: &[&str]) -> Follower {
        let mut child = weft()
            .current_dir(dir)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send((now_ms(), line)).is_err() {
                    return;
                }
            }
        });
        Follower { child, lines }
    }

    /// The next `n` lines (fails after 30 s without them).
    fn take(&self, n: usize) -> Vec<(i64, String)> {
        (0..n)
            .map(|_| {
                self.lines
                    .recv_timeout(Duration::from_secs(30))
                    .expect("the follower printed nothing for 30 s")
            })
            .collect()
    }

    /// Every line until the follower exits on its own; its exit code.
    fn until_exit(mut self) -> (Vec<(i64, String)>, i32) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let code = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status.code().unwrap();
            }
            assert!(Instant::now() < deadline, "the follower did not exit");
            std::thread::sleep(Duration::from_millis(20));
        };
        (self.lines.iter().collect(), code)
    }

    fn kill(mut self) -> Vec<(i64, String)> {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        let (_, lines) = std::sync::mpsc::channel();
        std::mem::replace(&mut self.lines, lines).iter().collect()
    }
}

/// A follower of every run never exits on its own: one a test did not kill (an assertion
/// failed first, or it was only read from) must not outlive the test.
impl Drop for Follower {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn texts(lines: &[(i64, String)]) -> Vec<String> {
    lines.iter().map(|(_, l)| l.clone()).collect()
}

fn json(line: &str) -> Value {
    serde_json::from_str(line).unwrap()
}

#[test]
fn events_follow_prints_each_commit_of_another_process_and_exits_when_the_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut run = start_run(d, "chain.json", &slow_chain());
    let id = wait_for_runs(d, 1).remove(0);
    let started = now_ms();
    let follower = Follower::start(d, &["events", "--follow", &id, "--db", "s.db"]);
    let (lines, code) = follower.until_exit();
    assert_eq!(code, 0, "the follow ends with the run");
    assert!(run.wait().unwrap().success());

    // Exactly the log, in the `weft events` format.
    let (_, all) = call(d, &["events", &id, "--db", "s.db"]);
    let all: Vec<String> = all.lines().map(str::to_string).collect();
    assert_eq!(texts(&lines), all);
    assert_eq!(
        json(all.last().unwrap())["kind"],
        "run_finished",
        "{all:#?}"
    );
    // The events committed while it followed arrived promptly (a generous bound).
    let live: Vec<i64> = lines
        .iter()
        .filter_map(|(at, line)| {
            let recorded = json(line)["recorded_at_ms"].as_i64().unwrap();
            (recorded >= started).then_some(at - recorded)
        })
        .collect();
    assert!(!live.is_empty(), "no event was committed while following");
    assert!(live.iter().all(|&ms| ms <= 2000), "late events: {live:?}");

    // A run that has ended: the follow prints its log and exits at once.
    let (code, out) = call(d, &["events", "--follow", &id, "--db", "s.db"]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), all.len());
    // Nothing after a cursor at its end.
    let after = all.len().to_string();
    let (code, out) = call(
        d,
        &["events", "--follow", &id, "--after", &after, "--db", "s.db"],
    );
    assert_eq!((code, out.as_str()), (0, ""));
}

#[test]
fn a_follower_restarted_from_its_cursor_loses_and_repeats_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut first = start_run(d, "one.json", CHAIN);
    wait_for_runs(d, 1);
    let mut second = start_run(d, "two.json", CHAIN);

    // Every run: the first follower is killed after 5 lines, the next resumes from the
    // position of the last line it printed, and so on.
    let mut seen: Vec<String> = Vec::new();
    let mut after = 0;
    for take in [5, 6] {
        let f = Follower::start(
            d,
            &[
                "events",
                "--follow",
                "--db",
                "s.db",
                "--after",
                &after.to_string(),
            ],
        );
        let got = texts(&f.take(take));
        f.kill();
        after = json(got.last().unwrap())["position"].as_u64().unwrap();
        seen.extend(got);
    }
    assert!(first.wait().unwrap().success());
    assert!(second.wait().unwrap().success());
    let ids = wait_for_runs(d, 2);
    let total: usize = ids
        .iter()
        .map(|id| call(d, &["events", id, "--db", "s.db"]).1.lines().count())
        .sum();
    let f = Follower::start(
        d,
        &[
            "events",
            "--follow",
            "--db",
            "s.db",
            "--after",
            &after.to_string(),
        ],
    );
    seen.extend(texts(&f.take(total - seen.len())));
    f.kill();

    // The same lines as one follower from the start, each exactly once.
    let whole = Follower::start(d, &["events", "--follow", "--db", "s.db"]);
    let whole = texts(&whole.take(total));
    assert_eq!(seen, whole);
    // Positions gap-free in commit order; each run's lines are its log, in order.
    let positions: Vec<u64> = seen
        .iter()
        .map(|l| json(l)["position"].as_u64().unwrap())
        .collect();
    assert_eq!(positions, (1..=total as u64).collect::<Vec<_>>());
    for id in &ids {
        let mine: Vec<Value> = seen
            .iter()
            .map(|l| json(l))
            .filter(|v| v["run_id"] == id.as_str())
            .map(|mut v| {
                let m = v.as_object_mut().unwrap();
                m.remove("run_id");
                m.remove("position");
                v
            })
            .collect();
        let log: Vec<Value> = call(d, &["events", id, "--db", "s.db"])
            .1
            .lines()
            .map(json)
            .collect();
        assert_eq!(mine, log, "run {id}");
    }

    // One run, the same way: killed after 3 lines, resumed from the seq of the last.
    let id = &ids[0];
    let f = Follower::start(d, &["events", "--follow", id, "--db", "s.db"]);
    let mut lines = texts(&f.take(3));
    f.kill();
    let seq = json(lines.last().unwrap())["seq"].as_u64().unwrap();
    let f = Follower::start(
        d,
        &[
            "events",
            "--follow",
            id,
            "--db",
            "s.db",
            "--after",
            &seq.to_string(),
        ],
    );
    let (rest, code) = f.until_exit();
    assert_eq!(code, 0);
    lines.extend(texts(&rest));
    let log: Vec<String> = call(d, &["events", id, "--db", "s.db"])
        .1
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(lines, log);
}

#[test]
fn following_every_run_sees_concurrent_runs_in_commit_order() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut one = start_run(d, "one.json", CHAIN);
    wait_for_runs(d, 1);
    let follower = Follower::start(d, &["events", "--follow", "--db", "s.db"]);
    let mut two = start_run(d, "two.json", CHAIN);
    assert!(one.wait().unwrap().success());
    assert!(two.wait().unwrap().success());
    let ids = wait_for_runs(d, 2);
    let counts: Vec<usize> = ids
        .iter()
        .map(|id| call(d, &["events", id, "--db", "s.db"]).1.lines().count())
        .collect();
    let lines: Vec<Value> = texts(&follower.take(counts.iter().sum()))
        .iter()
        .map(|l| json(l))
        .collect();
    follower.kill();
    let positions: Vec<u64> = lines
        .iter()
        .map(|v| v["position"].as_u64().unwrap())
        .collect();
    assert!(
        positions.windows(2).all(|w| w[1] == w[0] + 1),
        "{positions:?}"
    );
    for (id, count) in ids.iter().zip(counts) {
        let seqs: Vec<u64> = lines
            .iter()
            .filter(|v| v["run_id"] == id.as_str())
            .map(|v| v["seq"].as_u64().unwrap())
            .collect();
        assert_eq!(seqs, (1..=count as u64).collect::<Vec<_>>(), "run {id}");
    }
}

#[test]
fn status_watch_renders_again_as_events_come_and_exits_when_the_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut run = start_run(d, "chain.json", &slow_chain());
    let id = wait_for_runs(d, 1).remove(0);
    let watch = Follower::start(d, &["status", "--watch", &id, "--db", "s.db", "--json"]);
    let (renders, code) = watch.until_exit();
    assert_eq!(code, 0);
    assert!(run.wait().unwrap().success());
    let renders: Vec<Value> = renders.iter().map(|(_, l)| json(l)).collect();
    assert!(
        renders.len() >= 2,
        "one render per batch of events: {renders:#?}"
    );
    assert_eq!(renders.last().unwrap()["status"], "succeeded");
    assert!(
        renders[..renders.len() - 1]
            .iter()
            .any(|r| r["status"] == "running"),
        "{renders:#?}"
    );
    // An unknown run, or no RUN without --follow.
    assert_eq!(call(d, &["status", "--watch", "nope", "--db", "s.db"]).0, 1);
    assert_eq!(
        call(d, &["events", "--follow", "nope", "--db", "s.db"]).0,
        1
    );
    assert_eq!(call(d, &["events", "--db", "s.db"]).0, 2);
}

#[test]
fn a_decision_of_another_process_is_taken_by_the_live_driver() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut run = start_run(d, "gate.json", GATE);
    let id = wait_for_runs(d, 1).remove(0);
    let follower = Follower::start(d, &["events", "--follow", &id, "--db", "s.db"]);
    loop {
        let (_, line) = follower.take(1).remove(0);
        if json(&line)["kind"] == "gate_waiting" {
            break;
        }
    }
    let (code, _) = call(d, &["approve", &id, "g", "--db", "s.db"]);
    assert_eq!(code, 0);
    let (rest, code) = follower.until_exit();
    assert_eq!(code, 0);
    // No resume: the driver was woken while `work` ran and finished the run itself.
    assert!(run.wait().unwrap().success());
    let finished: Vec<String> = rest
        .iter()
        .map(|(_, l)| json(l))
        .filter(|v| v["kind"] == "node_finished")
        .map(|v| v["payload"]["node"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(finished, ["g", "work"], "the gate settled while work ran");
}

//! Crash safety: a child process appends in a loop and is killed with SIGKILL at seeded
//! random moments; after each kill the database must reopen with every run's log a
//! gap-free prefix (nothing torn, nothing duplicated) holding every append the child had
//! reported as committed.
//!
//! The child is this test binary re-invoked with `WEFT_STORE_CRASH_CHILD` set, running the
//! `crash_child` test, which is a no-op in a normal test run.

#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::json;
use weft_store::{EventLog, NewEvent, NewRun, RunTable, Store, StoreError};

const CHILD_ENV: &str = "WEFT_STORE_CRASH_CHILD";
const KILLS: usize = 24;
/// Runs appended with `append_expecting` by one thread each: payload `n` must equal seq.
const OWN_RUNS: [&str; 2] = ["own-0", "own-1"];
/// A run two threads append to with plain `append`: batches must stay whole and in order.
const SHARED_RUN: &str = "shared";
const SHARED_WRITERS: u64 = 2;
/// Line prefix of the child's "this append returned Ok" reports.
const COMMITTED: &str = "committed";

/// xorshift64*: deterministic kill moments without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

#[test]
fn crash_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let store = Store::open(&path).unwrap();
    for (t, id) in (0..).zip(OWN_RUNS.iter().chain([&SHARED_RUN])) {
        let run = NewRun {
            id: (*id).to_owned(),
            graph_digest: "sha256:crash".to_owned(),
            created_at_ms: t,
        };
        match store.create_run(&run) {
            Ok(_) | Err(StoreError::RunExists { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
    let report = |run: &str, last: u64| {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{COMMITTED} {run} {last}").unwrap();
        out.flush().unwrap();
    };
    std::thread::scope(|scope| {
        for run in OWN_RUNS {
            let store = &store;
            scope.spawn(move || {
                loop {
                    let last = store.last_seq(run).unwrap();
                    let batch: Vec<_> = (last + 1..=last + 1 + last % 3)
                        .map(|n| NewEvent::new("step", json!({"n": n, "pad": "x".repeat(200)}), 0))
                        .collect();
                    let seqs = store.append_expecting(run, last, &batch).unwrap();
                    report(run, *seqs.last().unwrap());
                }
            });
        }
        for writer in 0..SHARED_WRITERS {
            let store = &store;
            scope.spawn(move || {
                // Resume this writer's counter from the log, so `i` keeps counting across kills.
                let events = store.read(SHARED_RUN, 1, usize::MAX).unwrap();
                let mut i = events.iter().filter(|e| e.payload["w"] == writer).count() as u64 / 2;
                loop {
                    let batch: Vec<_> = (0..2)
                        .map(|j| NewEvent::new("step", json!({"w": writer, "i": i, "j": j}), 0))
                        .collect();
                    let seqs = store.append(SHARED_RUN, &batch).unwrap();
                    report(SHARED_RUN, seqs[1]);
                    i += 1;
                }
            });
        }
    });
}

#[test]
fn kill_9_leaves_a_gap_free_committed_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let exe = std::env::current_exe().unwrap();
    let mut rng = Rng(0x5EED_CAFE_F00D_0001);
    let mut reported: HashMap<String, u64> = HashMap::new();
    for kill in 0..KILLS {
        let mut child = Command::new(&exe)
            .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (lines_tx, lines) = mpsc::channel();
        let pump = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if lines_tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Every fourth kill may land during start-up (opening, migrating, creating runs);
        // the others once the child is appending, at a random moment.
        let delay = Duration::from_millis(rng.below(40));
        let mut seen = Vec::new();
        if kill % 4 != 0 {
            for line in lines.iter() {
                let first = line.starts_with(COMMITTED);
                seen.push(line);
                if first {
                    break;
                }
            }
            assert!(
                seen.iter().any(|l| l.starts_with(COMMITTED)),
                "child {kill} exited before appending"
            );
        }
        std::thread::sleep(delay);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        pump.join().unwrap();
        // Whatever the child printed before dying had returned Ok from an append.
        seen.extend(lines.try_iter());
        for line in seen {
            if let Some(rest) = line.strip_prefix(COMMITTED) {
                let mut parts = rest.split_whitespace();
                let run = parts.next().unwrap().to_owned();
                let seq: u64 = parts.next().unwrap().parse().unwrap();
                let max = reported.entry(run).or_default();
                *max = (*max).max(seq);
            }
        }
        verify(&path, &reported, kill);
    }
    let total: u64 = reported.values().sum();
    eprintln!("committed seqs reported by the children: {reported:?}");
    assert!(total > 0, "the child never committed anything");
}

fn verify(path: &std::path::Path, reported: &HashMap<String, u64>, kill: usize) {
    let store = Store::open(path).unwrap();
    for run in OWN_RUNS.iter().chain([&SHARED_RUN]) {
        let Some(_) = store.get_run(run).unwrap() else {
            assert_eq!(reported.get(*run), None, "kill {kill}: run {run} lost");
            continue;
        };
        let events = store.read(run, 1, usize::MAX).unwrap();
        let last = store.last_seq(run).unwrap();
        assert_eq!(events.len() as u64, last, "kill {kill}: {run} has gaps");
        for (e, seq) in events.iter().zip(1..) {
            assert_eq!(e.seq, seq, "kill {kill}: {run} is not gap-free");
        }
        let committed = reported.get(*run).copied().unwrap_or(0);
        assert!(
            last >= committed,
            "kill {kill}: {run} lost committed seq {committed} (has {last})"
        );
        if *run == SHARED_RUN {
            check_shared(&events, kill);
        } else {
            for e in &events {
                assert_eq!(
                    e.payload["n"], e.seq,
                    "kill {kill}: {run} payload/seq mismatch"
                );
            }
        }
    }
}

/// Each writer's batches appear whole (j = 0 then 1, adjacent) and its counter `i` counts
/// 0, 1, 2, … without repeats or holes.
fn check_shared(events: &[weft_store::EventRecord], kill: usize) {
    assert_eq!(events.len() % 2, 0, "kill {kill}: torn batch");
    let mut next_i = [0u64; SHARED_WRITERS as usize];
    for pair in events.chunks(2) {
        let (a, b) = (&pair[0].payload, &pair[1].payload);
        assert_eq!(
            (a["j"].as_u64(), b["j"].as_u64()),
            (Some(0), Some(1)),
            "kill {kill}: split batch"
        );
        assert_eq!(
            (&a["w"], &a["i"]),
            (&b["w"], &b["i"]),
            "kill {kill}: interleaved batch"
        );
        let w = a["w"].as_u64().unwrap() as usize;
        assert_eq!(
            a["i"].as_u64(),
            Some(next_i[w]),
            "kill {kill}: writer {w} duplicated or skipped"
        );
        next_i[w] += 1;
    }
}

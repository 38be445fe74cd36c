//! Seeded kill-and-resume of the shipped examples: `weft run` of `test-repair-loop` (a loop
//! of model nodes replayed from the cassette, real `pytest` and `git` criteria) and of
//! `docs-site-refresh` (a map, a `ref` and a `use` subgraph, real `mkdocs` and `python`, the
//! owner's sign-off) is killed with SIGKILL at 30 seeded points each — after the k-th event
//! reached the `--jsonl` stream, plus a seeded delay that lands inside criteria commands
//! and appends — then `weft resume RUN FILE --retry-uncertain --cassette` finishes it (for
//! `docs-site-refresh`: up to the sign-off wait, then the owner approves and a last resume
//! ends it). Each time the run record equals the uninterrupted run's (status, graph outputs
//! and verdict, every node run by its address with its status, outputs and instance
//! counts), and every node instance finished once.
//!
//! The cassette records each model node's turns twice: an attempt abandoned by the kill is
//! played again from the next recorded attempt (`docs/cli.md`, `weft resume --cassette`),
//! as a live model would be asked again.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use weft_test_support::log::normalised_record;

use super::harness::kill_after;
use super::kit::{run_id, weft};
use super::{docs_site_refresh, test_repair_loop};

const POINTS: usize = 30;

/// The recorded session with every attempt recorded twice.
fn twice(cassette: &str) -> String {
    let mut c: Value = serde_json::from_str(cassette).unwrap();
    for entry in c["nodes"].as_object_mut().unwrap().values_mut() {
        let first = entry["attempts"][0].clone();
        entry["attempts"] = json!([first.clone(), first]);
    }
    c.to_string()
}

/// The run record of `run` in `db` without times, ids and attempt counts.
fn normalised(dir: &Path, db: &str, run: &str) -> Value {
    let out = weft(dir, &["record", run, "--db", db]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let record: Value = serde_json::from_str(&out.stdout).unwrap();
    let mut normalised = normalised_record(&record);
    normalised["graph_passed"] = record["graph_success"]["passed"].clone();
    normalised
}

/// Every node instance finished exactly once, and the log ends with the root's end.
fn finished_once(dir: &Path, db: &str, run: &str, point: &str) {
    let out = weft(dir, &["events", run, "--db", db]);
    assert_eq!(out.code, 0, "{point}: {}", out.stderr);
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut finished: BTreeMap<String, u32> = BTreeMap::new();
    for e in &events {
        if e["kind"] == "node_finished" {
            let scope = e["payload"]["scope"].as_str().unwrap_or("");
            let node = e["payload"]["node"].as_str().unwrap_or("");
            *finished.entry(format!("{scope}/{node}")).or_default() += 1;
        }
    }
    assert!(finished.values().all(|&c| c == 1), "{point}: {finished:?}");
    let last = events.last().unwrap();
    assert_eq!(last["kind"], "run_finished", "{point}");
    assert!(last["payload"].get("scope").is_none(), "{point}");
}

/// What ends a run once its kill was resumed, given the resume's report: nothing more for
/// `test-repair-loop`; the owner's sign-off and a last resume for `docs-site-refresh`.
type Finish = fn(&Path, &str, &str, Value, &str);

fn ends_at_once(_: &Path, _: &str, _: &str, resume: Value, point: &str) {
    assert_eq!(resume["status"], "succeeded", "{point}: {resume}");
}

fn ends_after_signoff(d: &Path, db: &str, id: &str, resume: Value, point: &str) {
    assert_eq!(resume["status"], "awaiting_human", "{point}: {resume}");
    let approve = [
        "approve",
        id,
        "success/owner_signoff",
        "--as",
        "dana",
        "--role",
        "docs-owner",
        "--db",
        db,
    ];
    let out = weft(d, &approve);
    assert_eq!(out.code, 0, "{point}: {}", out.stderr);
    let out = weft(
        d,
        &["resume", id, "--db", db, "--cassette", "c.json", "--json"],
    );
    let done: Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|_| panic!("{point}: {}", out.stderr));
    assert_eq!(done["status"], "succeeded", "{point}: {done}");
}

/// Kills `weft run FILE` at 30 seeded points and resumes each, comparing the records with
/// the uninterrupted run's (ended the same way by `finish`).
fn seeded_kills(d: &Path, file: &str, mut seed: u64, finish: Finish) {
    let run = ["run", file, "--cassette", "c.json"];
    let full = weft(d, &[&run[..], &["--db", "full.db", "--json"]].concat());
    let report: Value = serde_json::from_str(&full.stdout).unwrap();
    let full_id = run_id(&report);
    finish(d, "full.db", &full_id, report, "uninterrupted");
    let expected = normalised(d, "full.db", &full_id);
    assert_eq!(expected["status"], "succeeded", "{expected}");
    finished_once(d, "full.db", &full_id, "uninterrupted");
    let total = weft(d, &["events", &full_id, "--db", "full.db"])
        .stdout
        .lines()
        .count() as u64;

    let mut next = || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seed >> 33
    };
    let mut resumed = 0;
    for i in 0..POINTS {
        let k = 1 + next() % total;
        let delay_us = next() % 40_000;
        let point = format!("{file} point {i}: after event {k} + {delay_us} µs");
        let db = format!("k{i}.db");
        // A crash of the machine, not of `weft` alone: the commands it was running die with
        // it (left running, a criterion's `mkdocs build` would race the resumed run's
        // build over `site/`).
        let id = kill_after(d, &[&run[..], &["--db", &db]].concat(), k, delay_us, true);
        assert!(!id.is_empty(), "{point}: no event before the kill");
        // The document's file too: its `ref` child may not have been reached before the kill.
        let resume_args = [
            "resume",
            &id,
            file,
            "--db",
            &db,
            "--retry-uncertain",
            "--cassette",
            "c.json",
            "--json",
        ];
        let out = weft(d, &resume_args);
        let resume: Value =
            serde_json::from_str(&out.stdout).unwrap_or_else(|_| panic!("{point}: {}", out.stderr));
        if resume["resumed"] == true {
            resumed += 1;
        }
        finish(d, &db, &id, resume, &point);
        assert_eq!(normalised(d, &db, &id), expected, "{point}");
        finished_once(d, &db, &id, &point);
    }
    assert!(
        resumed >= POINTS / 2,
        "only {resumed} of {POINTS} kills left work to resume"
    );
}

#[test]
fn seeded_kills_of_test_repair_loop_resume_to_the_uninterrupted_record() {
    let dir = test_repair_loop::repaired_project();
    let d = dir.path();
    let cassette = twice(&test_repair_loop::recorded_session());
    std::fs::write(d.join("c.json"), cassette).unwrap();
    seeded_kills(
        d,
        "test-repair-loop.agraph.yaml",
        0x7e57_4e9a_1b00_0003,
        ends_at_once,
    );
}

#[test]
fn seeded_kills_of_docs_site_refresh_resume_to_the_uninterrupted_record() {
    let dir = docs_site_refresh::refreshed_site();
    let d = dir.path();
    let cassette = twice(&docs_site_refresh::recorded_session());
    std::fs::write(d.join("c.json"), cassette).unwrap();
    seeded_kills(
        d,
        "docs-site-refresh.agraph.yaml",
        0x0d0c_5173_0000_0007,
        ends_after_signoff,
    );
}

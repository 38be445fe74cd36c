//! What the kill-and-resume suites check of a run, in the engine's tests and the CLI's: the
//! run record with what may differ between an interrupted run and an uninterrupted one
//! left out ([`normalised_record`]), and the log's invariants ([`check_log`]).

use std::collections::BTreeMap;

use serde_json::{Value, json};
use weft_store::EventRecord;

/// `record` (an AGS run record, from `weft_engine::record::record_of` or `weft record`)
/// without times, ids and attempt counts: its status and outputs, and each node run by its
/// address (`scope_path`, else `node_id`) with its status, outputs and instance counts
/// (`items`, `iterations`). A resumed run's record equals the uninterrupted one's here.
pub fn normalised_record(record: &Value) -> Value {
    let nodes: Vec<Value> = record["nodes"]
        .as_array()
        .into_iter()
        .flatten()
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

/// Panics, naming `point` (where the run was interrupted), unless the finished run's `log`
/// keeps the engine's invariants: gap-free seqs from 1, each node instance finished at most
/// once, no attempt started twice, every started attempt finished or abandoned, each scope
/// instance opened once, and the log ends with the root scope's `run_finished`.
pub fn check_log(log: &[EventRecord], point: &str) {
    let seqs: Vec<u64> = log.iter().map(|r| r.seq).collect();
    let expected: Vec<u64> = (1..).take(log.len()).collect();
    assert_eq!(seqs, expected, "{point}: the seqs have a gap");
    let mut finished: BTreeMap<String, u32> = BTreeMap::new();
    let mut started: BTreeMap<(String, u64), u32> = BTreeMap::new();
    let mut open: BTreeMap<String, u64> = BTreeMap::new();
    let mut opened: BTreeMap<String, u32> = BTreeMap::new();
    for r in log {
        let scope = scope_of(r).unwrap_or("").to_string();
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
    let last = log.last();
    assert_eq!(
        last.map(|r| r.kind.as_str()),
        Some("run_finished"),
        "{point}: the log does not end with `run_finished`"
    );
    assert_eq!(
        last.and_then(scope_of),
        None,
        "{point}: the last event is not the root's"
    );
}

/// The scope instance of a logged event: its `scope` member (`docs/engine.md` §3j; absent
/// for the root scope). Read here, not through the engine, so the format is pinned.
fn scope_of(record: &EventRecord) -> Option<&str> {
    record.payload.get("scope").and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, kind: &str, payload: Value) -> EventRecord {
        EventRecord {
            run_id: "r".into(),
            seq,
            kind: kind.into(),
            payload,
            recorded_at_ms: 0,
        }
    }

    fn good() -> Vec<EventRecord> {
        vec![
            event(1, "run_started", json!({})),
            event(2, "node_started", json!({"node": "m", "attempt": 1})),
            event(3, "run_started", json!({"scope": "m[0]"})),
            event(
                4,
                "node_started",
                json!({"node": "a", "attempt": 1, "scope": "m[0]"}),
            ),
            event(5, "node_finished", json!({"node": "a", "scope": "m[0]"})),
            event(6, "run_finished", json!({"scope": "m[0]"})),
            event(7, "node_finished", json!({"node": "m"})),
            event(8, "run_finished", json!({})),
        ]
    }

    #[test]
    fn a_well_formed_log_passes() {
        check_log(&good(), "whole");
    }

    #[test]
    fn each_broken_invariant_is_caught() {
        let mut gap = good();
        gap[3].seq = 9;
        let mut twice = good();
        twice.insert(
            5,
            event(6, "node_finished", json!({"node": "a", "scope": "m[0]"})),
        );
        let mut unfinished = good();
        unfinished.remove(4);
        let mut scoped_end = good();
        scoped_end.swap(5, 7);
        for (name, log) in [
            ("gap", gap),
            ("finished twice", twice),
            ("never finished", unfinished),
            ("the root does not end it", scoped_end),
        ] {
            let log: Vec<EventRecord> = log
                .into_iter()
                .enumerate()
                .map(|(i, mut r)| {
                    if name != "gap" {
                        r.seq = i as u64 + 1;
                    }
                    r
                })
                .collect();
            let caught = std::panic::catch_unwind(|| check_log(&log, name));
            assert!(caught.is_err(), "{name} was not caught");
        }
    }

    #[test]
    fn the_normalised_record_keeps_addresses_and_counts_but_not_times() {
        let record = json!({"status": "succeeded", "outputs": {"x": 1}, "started_at": "t",
        "nodes": [
            {"node_id": "m", "status": "succeeded", "items": 2, "attempts": 3, "ended_at": "t"},
            {"node_id": "a", "scope_path": "m[0].a", "status": "succeeded",
             "outputs": {"y": 2}}
        ]});
        assert_eq!(
            normalised_record(&record),
            json!({"status": "succeeded", "outputs": {"x": 1}, "nodes": [
                ["m", "succeeded", null, 2, null],
                ["m[0].a", "succeeded", {"y": 2}, null, null]
            ]})
        );
    }
}

//! Changing a live run's graph (`graph_mutated`, `weft_engine::mutation`) through the real
//! engine and a real SQLite store: a mutation is checked against the log and appended as an
//! inbox event, applied by the driver (live, or on resume) through `weft-core`, and a
//! replay, a resume from any point and the run record reproduce it. Random mutations,
//! accepted and refused, end in the same states live, replayed and resumed.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;
use common::{assert_valid, events, request, resume_with, state, wait_for};
use serde_json::{Value, json};
use weft_engine::human::{Verb, decide};
use weft_engine::mutation::{GraphMutation, LoggedEdge, submit};
use weft_engine::record::record_of;
use weft_engine::{EngineError, FinalStatus, RunEvent, RunOptions, RunReport, replay_run};
use weft_store::Store;

fn exec(after: &[&str]) -> Value {
    json!({"description": "a step", "depends_on": after, "x-weft-exec": {"run": "true"}})
}

/// A gate `g`, then `a -> c`, `b`, `d`, and a second layer `e`, `f` after `a` and `b`.
fn doc() -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "m", "version": "1.0.0",
        "description": "a graph changed while it runs", "entrypoints": ["g"],
        "nodes": {
            "g": {"type": "gate", "description": "a person decides", "gate": {"mode": "approve"}},
            "a": exec(&["g"]), "b": exec(&["g"]), "c": exec(&["a"]), "d": exec(&["g"]),
            "e": exec(&["a", "b"]), "f": exec(&["b"]),
        },
        "edges": []
    })
}

const NODES: [&str; 7] = ["g", "a", "b", "c", "d", "e", "f"];

fn options(dir: &std::path::Path) -> RunOptions {
    RunOptions {
        project_dir: dir.to_path_buf(),
        ..RunOptions::default()
    }
}

fn refusal(err: EngineError) -> String {
    match err {
        EngineError::Refused(r) => r.join("\n"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn cancel(node: &str) -> GraphMutation {
    GraphMutation::CancelNode { node: node.into() }
}

fn edge(from: &str, to: &str) -> GraphMutation {
    GraphMutation::AddEdge {
        from: from.into(),
        to: to.into(),
        edge: LoggedEdge::Sequence,
    }
}

/// The stored log replays to the report's states, node by node.
fn assert_replays(store: &Store, report: &RunReport) {
    let replayed = replay_run(&doc(), store, &report.run_id).unwrap();
    for n in &report.nodes {
        let i = replayed.graph().find(&n.id).unwrap();
        let s = format!("{:?}", replayed.state(i)).to_lowercase();
        assert_eq!(s, n.state.replace('_', ""), "node {}", n.id);
    }
}

fn position(events: &[RunEvent], pred: impl Fn(&RunEvent) -> bool) -> usize {
    events.iter().position(pred).unwrap()
}

fn finished(id: &'static str) -> impl Fn(&RunEvent) -> bool {
    move |e| matches!(e, RunEvent::NodeFinished { node, .. } if node == id)
}

fn started(id: &'static str) -> impl Fn(&RunEvent) -> bool {
    move |e| matches!(e, RunEvent::NodeStarted { node, .. } if node == id)
}

#[tokio::test]
async fn mutations_of_a_suspended_run_apply_on_resume_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let report = weft_engine::run_document(&doc(), &store, &options(dir.path()))
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    let run = report.run_id.clone();

    // Accepted: cancel b (f, reachable only through it, goes too; e still waits on a and
    // now sees b's edge inactive), and make d wait for c.
    assert!(
        submit(&store, &run, "planner", cancel("b"))
            .unwrap()
            .seq
            .is_some()
    );
    submit(&store, &run, "planner", edge("c", "d")).unwrap();
    // Refused, nothing written: a cycle, an unknown node, a node that is not pending.
    let before = events(&store, &run).len();
    let err = refusal(submit(&store, &run, "planner", edge("d", "a")).unwrap_err());
    assert!(err.contains("cycle"), "{err}");
    let err = refusal(submit(&store, &run, "planner", cancel("nope")).unwrap_err());
    assert!(err.contains("no node `nope`"), "{err}");
    let err = refusal(submit(&store, &run, "planner", cancel("g")).unwrap_err());
    assert!(err.contains("AwaitingHuman"), "{err}");
    assert_eq!(events(&store, &run).len(), before);
    let logged = events(&store, &run);
    assert!(logged.iter().any(|e| matches!(
        e,
        RunEvent::GraphMutated { v: weft_engine::mutation::MUTATION_FORMAT, actor, mutation } if actor == "planner" && *mutation == cancel("b")
    )));

    decide(&store, &run, &request("g", Verb::Approve, json!({}))).unwrap();
    let done = resume_with(&store, &run, options(dir.path())).await;
    // Nodes cancelled or skipped before they started do not make the run partial.
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    for (id, expected) in [
        ("a", "succeeded"),
        ("b", "cancelled"),
        ("c", "succeeded"),
        ("d", "succeeded"),
        ("e", "skipped"),
        ("f", "cancelled"),
    ] {
        assert_eq!(state(&done, id), expected, "{id}");
    }
    let log = events(&store, &run);
    assert!(
        position(&log, finished("c")) < position(&log, started("d")),
        "d waited for c"
    );
    assert_replays(&store, &done);
    let record = record_of(&store, &run).unwrap();
    assert_valid(&record);
    // Finished: no more mutations.
    let err = refusal(submit(&store, &run, "planner", cancel("e")).unwrap_err());
    assert!(err.contains("already finished"), "{err}");
}

/// A tiny deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn states(report: &RunReport) -> Vec<(String, String)> {
    let mut s: Vec<(String, String)> = report
        .nodes
        .iter()
        .map(|n| (n.id.clone(), n.state.clone()))
        .collect();
    s.sort();
    s
}

/// Runs the document to its gate, submits `plan`'s mutations (or, without a plan, six
/// random ones, returned as accepted), approves, and resumes; with `stop`, the first resume
/// stops after that many events (as if the process died) and a second one finishes.
async fn scenario(
    seed: u64,
    plan: Option<&[GraphMutation]>,
    stop: Option<usize>,
) -> (Store, RunReport, Vec<GraphMutation>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_memory().unwrap();
    let report = weft_engine::run_document(&doc(), &store, &options(dir.path()))
        .await
        .unwrap();
    let run = report.run_id.clone();
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mutations: Vec<GraphMutation> = match plan {
        Some(plan) => plan.to_vec(),
        None => (0..6)
            .map(|_| {
                let kind = rng.below(3);
                let from = NODES[rng.below(NODES.len())];
                let to = NODES[rng.below(NODES.len())];
                if kind == 0 {
                    cancel(from)
                } else {
                    edge(from, to)
                }
            })
            .collect(),
    };
    let mut accepted = Vec::new();
    for m in mutations {
        let before = events(&store, &run).len();
        match submit(&store, &run, "planner", m.clone()) {
            Ok(receipt) => {
                assert!(receipt.seq.is_some());
                accepted.push(m);
            }
            Err(EngineError::Refused(_)) => {
                assert_eq!(events(&store, &run).len(), before, "a refusal wrote");
            }
            Err(e) => panic!("{e}"),
        }
    }
    decide(&store, &run, &request("g", Verb::Approve, json!({}))).unwrap();
    if let Some(stop) = stop {
        let mut o = options(dir.path());
        o.stop_after_events = Some(stop);
        let opts = weft_engine::ResumeOptions {
            run: o,
            ..Default::default()
        };
        match weft_engine::resume_run(&store, &run, None, &opts).await {
            Err(EngineError::Stopped(_)) => {}
            // The resumed part had fewer events than the cut: it ran to the end.
            Ok(done) => {
                let report = done.report.clone().unwrap_or_else(|| panic!("{done:?}"));
                return (store, report, accepted);
            }
            Err(e) => panic!("{e}"),
        }
        let opts = weft_engine::ResumeOptions {
            run: options(dir.path()),
            retry_uncertain: true,
            ..Default::default()
        };
        let done = weft_engine::resume_run(&store, &run, None, &opts)
            .await
            .unwrap();
        let report = done.report.clone().unwrap_or_else(|| panic!("{done:?}"));
        return (store, report, accepted);
    }
    let live = resume_with(&store, &run, options(dir.path())).await;
    (store, live, accepted)
}

#[tokio::test]
async fn random_mutations_end_the_same_live_replayed_and_resumed_from_any_point() {
    let mut accepted_in_all = 0;
    for seed in 1..=5u64 {
        let (store, live, accepted) = scenario(seed, None, None).await;
        accepted_in_all += accepted.len();
        assert!(
            matches!(live.status, FinalStatus::Succeeded | FinalStatus::Partial),
            "seed {seed}: {live:#?}"
        );
        assert_replays(&store, &live);
        assert_valid(&record_of(&store, &live.run_id).unwrap());
        // The same mutations, then the run killed after k events and resumed: same end.
        for stop in [1, 2, 4, 7] {
            let (store, again, _) = scenario(seed, Some(&accepted), Some(stop)).await;
            assert_eq!(states(&again), states(&live), "seed {seed}, stop {stop}");
            assert_replays(&store, &again);
        }
    }
    assert!(accepted_in_all > 5, "the seeds exercise accepted mutations");
}

#[tokio::test]
async fn the_live_driver_applies_a_mutation_submitted_while_a_node_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("weft.db");
    let store = Store::open(&db).unwrap();
    let marker = dir.path().join("go");
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "live", "version": "1.0.0",
        "description": "a plan changed while a node runs", "entrypoints": ["slow"],
        "nodes": {
            // Runs until the mutation is in the log.
            "slow": {"description": "waits", "x-weft-exec": {"run": format!(
                "for i in $(seq 1 400); do [ -e {} ] && exit 0; sleep 0.025; done; exit 1",
                marker.display())}},
            "x": exec(&["slow"]), "y": exec(&["slow"]), "z": exec(&["y"]),
        },
        "edges": []
    });
    let submitter = {
        let (db, marker) = (db.clone(), marker.clone());
        std::thread::spawn(move || {
            let other = wait_for(&db, "live-m", started("slow"));
            let receipt = submit(&other, "live-m", "planner", cancel("y")).unwrap();
            std::fs::write(&marker, "").unwrap();
            receipt
        })
    };
    let mut opts = options(dir.path());
    opts.run_id = Some("live-m".into());
    let report = weft_engine::run_document(&doc, &store, &opts)
        .await
        .unwrap();
    let receipt = submitter.join().unwrap();
    assert!(receipt.seq.is_some());
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(
        (state(&report, "slow"), state(&report, "x")),
        ("succeeded", "succeeded")
    );
    assert_eq!(
        (state(&report, "y"), state(&report, "z")),
        ("cancelled", "cancelled")
    );
    // The mutation sits in the log before slow's end, which the driver appended after it.
    let log = events(&store, "live-m");
    let mutated = position(&log, |e| matches!(e, RunEvent::GraphMutated { .. }));
    assert!(mutated < position(&log, finished("slow")));
    let replayed = replay_run(&doc, &store, "live-m").unwrap();
    for n in &report.nodes {
        let i = replayed.graph().find(&n.id).unwrap();
        assert_eq!(format!("{:?}", replayed.state(i)).to_lowercase(), n.state);
    }
    assert_valid(&record_of(&store, "live-m").unwrap());
}

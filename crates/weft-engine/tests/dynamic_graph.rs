//! A dynamic graph in the engine (`graph_mutated` format 2, `docs/engine.md` §2e): nodes
//! added to a run by `add_node`, `plan`, `split` and `merge`, checked as a document's nodes
//! are before anything is logged, run by the driver (live, or on resume) like declared
//! nodes, and reproduced by a replay, a resume and the run record; `hold` keeps a run whose
//! nodes have all settled open for more work, `release` lets it finish. Real SQLite stores.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;
use common::{assert_valid, events, record_node, request, resume_with, state, wait_for};
use serde_json::{Map, Value, json};
use weft_engine::human::{Verb, decide};
use weft_engine::mutation::{
    After, GraphMutation, LoggedEdge, LoggedShape, NewNode, PlannedNode, submit,
};
use weft_engine::record::record_of;
use weft_engine::view::RunView;
use weft_engine::{EngineError, FinalStatus, RunEvent, RunOptions, RunReport, replay_run};
use weft_store::{EventLog, Store};

fn exec(after: &[&str]) -> Value {
    json!({"description": "a step", "depends_on": after, "x-weft-exec": {"run": "true"}})
}

/// A gate `g`, then `a` and `b` after it, `c` after `a`.
fn doc() -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "dyn", "version": "1.0.0",
        "description": "a graph that grows while it runs", "entrypoints": ["g"],
        "nodes": {
            "g": {"type": "gate", "description": "a person decides", "gate": {"mode": "approve"}},
            "a": exec(&["g"]), "b": exec(&["g"]), "c": exec(&["a"]),
        },
        "edges": []
    })
}

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

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

/// A task that runs `true`.
fn task(id: &str) -> NewNode {
    NewNode {
        id: id.into(),
        node: obj(
            json!({"title": "Added", "description": "added", "x-weft-exec": {"run": "true"}}),
        ),
    }
}

/// A notify gate: decided in place, no process (a plan of 10,000 runs in seconds).
fn notify(id: &str) -> NewNode {
    NewNode {
        id: id.into(),
        node: obj(
            json!({"type": "gate", "title": "Tell", "description": "tells", "gate": {"mode": "notify"}}),
        ),
    }
}

fn after(from: &str) -> After {
    After {
        from: from.into(),
        edge: LoggedEdge::Sequence,
    }
}

fn add(node: NewNode, afters: &[&str]) -> GraphMutation {
    GraphMutation::AddNode {
        node,
        after: afters.iter().map(|f| after(f)).collect(),
    }
}

/// The replayed log's state of every node of the report equals the report's.
fn assert_replays(doc: &Value, store: &Store, report: &RunReport) {
    let replayed = replay_run(doc, store, &report.run_id).unwrap();
    for n in &report.nodes {
        let i = replayed.graph().find(&n.id).unwrap();
        let s = format!("{:?}", replayed.state(i)).to_lowercase();
        assert_eq!(s, n.state.replace('_', ""), "node {}", n.id);
    }
    assert_eq!(replayed.graph().node_count(), report.nodes.len());
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

async fn suspended(store: &Store, dir: &std::path::Path, doc: &Value) -> String {
    let report = weft_engine::run_document(doc, store, &options(dir))
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::AwaitingHuman, "{report:#?}");
    report.run_id
}

#[tokio::test]
async fn an_added_node_runs_and_replay_resume_record_and_view_show_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("weft.db")).unwrap();
    let run = suspended(&store, dir.path(), &doc()).await;
    // `n` after `a`, with a `when` that reads `a` (its reads resolve to an existing node).
    let mut n = task("n");
    n.node
        .insert("when".into(), json!("nodes.a.status == 'succeeded'"));
    n.node.insert(
        "outputs".into(),
        json!({"stdout": {"type": "string", "description": "what it printed", "required": false}}),
    );
    let receipt = submit(&store, &run, "planner", add(n, &["a"])).unwrap();
    assert!(receipt.seq.is_some());
    // An entry node added with no `after`.
    submit(&store, &run, "planner", add(task("solo"), &[])).unwrap();

    decide(&store, &run, &request("g", Verb::Approve, json!({}))).unwrap();
    let done = resume_with(&store, &run, options(dir.path())).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    for id in ["a", "b", "c", "n", "solo"] {
        assert_eq!(state(&done, id), "succeeded", "{id}");
    }
    let log = events(&store, &run);
    assert!(position(&log, finished("a")) < position(&log, started("n")));
    assert!(log.iter().any(|e| matches!(
        e,
        RunEvent::NodeWhen { node, value: true, .. } if node == "n"
    )));
    assert_replays(&doc(), &store, &done);
    let record = record_of(&store, &run).unwrap();
    assert_valid(&record);
    assert_eq!(record_node(&record, "n")["status"], "succeeded");
    assert_eq!(record_node(&record, "n")["type"], "task");
    let view = RunView::of_records(&run, &store.read(&run, 1, 10_000).unwrap());
    assert_eq!(
        view.node(None, "n").map(|n| n.state.as_str()),
        Some("succeeded")
    );
}

#[tokio::test]
async fn a_node_that_fails_a_documents_checks_is_refused_with_every_reason_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("weft.db")).unwrap();
    let run = suspended(&store, dir.path(), &doc()).await;
    let before = events(&store, &run).len();
    let refused = |m: GraphMutation| refusal(submit(&store, &run, "planner", m).unwrap_err());

    // Every unknown `after` named.
    let err = refused(add(task("n"), &["zz", "a", "yy"]));
    assert!(err.contains("`zz`") && err.contains("`yy`"), "{err}");
    // An id the graph holds.
    let err = refused(add(task("a"), &["g"]));
    assert!(err.contains("a"), "{err}");
    // Not an AGS node: an unknown type (the validator's schema error, with its code).
    let bad = NewNode {
        id: "bad".into(),
        node: obj(json!({"type": "bogus", "title": "Bad", "description": "x"})),
    };
    let err = refused(add(bad, &["a"]));
    assert!(err.contains("AG") && err.contains("/nodes/bad"), "{err}");
    // A reference to a node that does not exist.
    let mut reads = task("reads");
    reads
        .node
        .insert("when".into(), json!("nodes.ghost.status == 'succeeded'"));
    let err = refused(add(reads, &["a"]));
    assert!(err.contains("ghost"), "{err}");
    // A container: fragment instances stay static.
    let map = NewNode {
        id: "m".into(),
        node: obj(
            json!({"type": "map", "title": "Map", "description": "fan out",
            "map": {"over": "[1]", "as": "x", "body": {"nodes": {"s": exec(&[])}}}}),
        ),
    };
    assert!(!refused(add(map, &["a"])).is_empty());
    // An invalid join.
    let mut join = task("j");
    join.node.insert("join".into(), json!("n_of"));
    let err = refused(add(join, &["a"]));
    assert!(err.contains("join_count"), "{err}");
    assert_eq!(events(&store, &run).len(), before, "a refusal wrote");
}

fn chain_plan(n: usize, first_after: &str) -> Vec<PlannedNode> {
    (0..n)
        .map(|i| PlannedNode {
            node: notify(&format!("t{i}")),
            after: vec![after(&if i == 0 {
                first_after.to_string()
            } else {
                format!("t{}", i - 1)
            })],
        })
        .collect()
}

/// The objects a check lends to the validator come back as they were: the logged plan is
/// the submitted one, text for text (member order included), whatever wiring each node got
/// for its check (none, sequence edges, an on_failure edge, a `depends_on` of its own).
#[tokio::test]
async fn a_logged_plan_holds_each_node_exactly_as_submitted() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("weft.db")).unwrap();
    let run = suspended(&store, dir.path(), &doc()).await;
    let own = |id: &str, members: Value| NewNode {
        id: id.into(),
        node: obj(members),
    };
    let edge = |from: &str, kind| After {
        from: from.into(),
        edge: kind,
    };
    let nodes = vec![
        // An entry: no wiring.
        PlannedNode {
            node: own(
                "p0",
                json!({"x-weft-exec": {"run": "true"}, "title": "P0", "description": "entry"}),
            ),
            after: vec![],
        },
        // Sequence edges: `depends_on` set for the check, removed after it.
        PlannedNode {
            node: own(
                "p1",
                json!({"x-weft-exec": {"run": "true"}, "description": "after two", "title": "P1"}),
            ),
            after: vec![
                edge("p0", LoggedEdge::Sequence),
                edge("c", LoggedEdge::Sequence),
            ],
        },
        // An on_failure edge: wired through `edges`, the object untouched.
        PlannedNode {
            node: own(
                "p2",
                json!({"title": "P2", "x-weft-exec": {"run": "true"}, "description": "on failure"}),
            ),
            after: vec![edge("p1", LoggedEdge::OnFailure)],
        },
        // Its own `depends_on` (the plan's `after` wires it): replaced for the check, then
        // put back in its place.
        PlannedNode {
            node: own(
                "p3",
                json!({"depends_on": ["b"], "title": "P3", "x-weft-exec": {"run": "true"}, "description": "own"}),
            ),
            after: vec![edge("p1", LoggedEdge::Sequence)],
        },
    ];
    let submitted = GraphMutation::Plan { nodes };
    let text = serde_json::to_string(&submitted).unwrap();
    let outcome = submit(&store, &run, "planner", submitted);
    let logged = events(&store, &run).into_iter().find_map(|e| match e {
        RunEvent::GraphMutated { mutation, .. } => Some(mutation),
        _ => None,
    });
    match outcome {
        Ok(_) => {
            let logged = logged.expect("the accepted plan is logged");
            assert_eq!(serde_json::to_string(&logged).unwrap(), text);
        }
        Err(e) => panic!("the plan was refused: {}", refusal(e)),
    }
}

#[tokio::test]
async fn a_plan_of_10000_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("weft.db")).unwrap();
    let run = suspended(&store, dir.path(), &doc()).await;
    let before = events(&store, &run).len();

    // One unresolved name among 10,000: refused, nothing created, the name reported.
    let mut nodes = chain_plan(10_000, "a");
    nodes[5_000].after.push(after("ghost"));
    let err = refusal(
        submit(
            &store,
            &run,
            "planner",
            GraphMutation::Plan {
                nodes: nodes.clone(),
            },
        )
        .unwrap_err(),
    );
    assert!(err.contains("`ghost` (in `t5000`)"), "{err}");
    assert_eq!(events(&store, &run).len(), before);
    let replayed = replay_run(&doc(), &store, &run).unwrap();
    assert_eq!(replayed.graph().node_count(), 4);
    assert!(replayed.graph().find("t0").is_none());

    // Every unresolved name and every cycle of a plan, at once.
    let small = vec![
        PlannedNode {
            node: notify("p"),
            after: vec![after("q"), after("nope1")],
        },
        PlannedNode {
            node: notify("q"),
            after: vec![after("p"), after("nope2")],
        },
    ];
    let err = refusal(
        submit(
            &store,
            &run,
            "planner",
            GraphMutation::Plan { nodes: small },
        )
        .unwrap_err(),
    );
    assert!(
        err.contains("nope1") && err.contains("nope2") && err.contains("cycle"),
        "{err}"
    );
    assert_eq!(events(&store, &run).len(), before);

    // The same 10,000 without the bad name: accepted, and they all run.
    nodes[5_000].after.pop();
    submit(&store, &run, "planner", GraphMutation::Plan { nodes }).unwrap();
    decide(&store, &run, &request("g", Verb::Approve, json!({}))).unwrap();
    let done = resume_with(&store, &run, options(dir.path())).await;
    assert_eq!(done.status, FinalStatus::Succeeded);
    assert_eq!(done.nodes.len(), 10_004);
    assert!(done.nodes.iter().all(|n| n.state == "succeeded"));
    let log = events(&store, &run);
    assert!(position(&log, finished("t9998")) < position(&log, started("t9999")));
    assert_replays(&doc(), &store, &done);
}

#[tokio::test]
async fn split_and_merge_replace_pending_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("weft.db")).unwrap();
    let run = suspended(&store, dir.path(), &doc()).await;
    // c (after a) becomes the chain c1 -> c2; b and a new independent d merge into bd.
    submit(
        &store,
        &run,
        "planner",
        GraphMutation::Split {
            node: "c".into(),
            parts: vec![task("c1"), task("c2")],
            shape: LoggedShape::Chain,
        },
    )
    .unwrap();
    submit(&store, &run, "planner", add(task("d"), &["g"])).unwrap();
    submit(
        &store,
        &run,
        "planner",
        GraphMutation::Merge {
            a: "b".into(),
            b: "d".into(),
            into: task("bd"),
        },
    )
    .unwrap();
    // Refused: a node that no longer exists, and a merge of dependent nodes.
    let err = refusal(
        submit(
            &store,
            &run,
            "planner",
            GraphMutation::Split {
                node: "c".into(),
                parts: vec![task("c3")],
                shape: LoggedShape::Fan,
            },
        )
        .unwrap_err(),
    );
    assert!(err.contains("refused"), "{err}");
    let err = refusal(
        submit(
            &store,
            &run,
            "planner",
            GraphMutation::Merge {
                a: "a".into(),
                b: "c1".into(),
                into: task("ac"),
            },
        )
        .unwrap_err(),
    );
    assert!(err.contains("refused"), "{err}");

    decide(&store, &run, &request("g", Verb::Approve, json!({}))).unwrap();
    let done = resume_with(&store, &run, options(dir.path())).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    for id in ["a", "c1", "c2", "bd"] {
        assert_eq!(state(&done, id), "succeeded", "{id}");
    }
    for id in ["b", "c", "d"] {
        assert_eq!(state(&done, id), "cancelled", "{id} was replaced");
    }
    let log = events(&store, &run);
    assert!(position(&log, finished("a")) < position(&log, started("c1")));
    assert!(position(&log, finished("c1")) < position(&log, started("c2")));
    assert_replays(&doc(), &store, &done);
    assert_valid(&record_of(&store, &run).unwrap());
}

#[tokio::test]
async fn a_held_run_waits_for_added_work_and_finishes_on_release() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("weft.db");
    let store = Store::open(&db).unwrap();
    let marker = dir.path().join("go");
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "held", "version": "1.0.0",
        "description": "an org run open for more work", "entrypoints": ["first"],
        "nodes": {
            // Runs until the hold is in the log.
            "first": {"description": "waits", "x-weft-exec": {"run": format!(
                "for i in $(seq 1 400); do [ -e {} ] && exit 0; sleep 0.025; done; exit 1",
                marker.display())}},
        },
        "edges": []
    });
    let other = {
        let (db, marker) = (db.clone(), marker.clone());
        std::thread::spawn(move || {
            let other = wait_for(&db, "held-1", started("first"));
            submit(&other, "held-1", "org", GraphMutation::Hold).unwrap();
            std::fs::write(&marker, "").unwrap();
            // Every node has settled; the run stays open.
            wait_for(&db, "held-1", finished("first"));
            std::thread::sleep(std::time::Duration::from_millis(200));
            assert!(
                !events(&other, "held-1")
                    .iter()
                    .any(|e| matches!(e, RunEvent::RunFinished { .. })),
                "a held run finished"
            );
            submit(&other, "held-1", "org", add(task("later"), &["first"])).unwrap();
            wait_for(&db, "held-1", finished("later"));
            submit(&other, "held-1", "org", GraphMutation::Release).unwrap();
        })
    };
    let mut opts = options(dir.path());
    opts.run_id = Some("held-1".into());
    // Bounded: if the other writer fails, nothing would release the run.
    let report = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        weft_engine::run_document(&doc, &store, &opts),
    )
    .await
    .expect("the held run never ended")
    .unwrap();
    other.join().unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    assert_eq!(state(&report, "later"), "succeeded");
    let log = events(&store, "held-1");
    let released = position(&log, |e| {
        matches!(
            e,
            RunEvent::GraphMutated {
                mutation: GraphMutation::Release,
                ..
            }
        )
    });
    assert!(position(&log, finished("later")) < released);
    assert!(released < position(&log, |e| matches!(e, RunEvent::RunFinished { .. })));
    assert_replays(&doc, &store, &report);
    assert_valid(&record_of(&store, "held-1").unwrap());
}

#[tokio::test]
async fn a_run_stopped_after_an_added_node_started_resumes_to_the_same_end() {
    // The same mutations, then the resume killed after k events and resumed again: the
    // added nodes' state is rebuilt from the log and the end is the same.
    let mut ends = Vec::new();
    for stop in [None, Some(1), Some(2), Some(3), Some(5)] {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("weft.db")).unwrap();
        let run = suspended(&store, dir.path(), &doc()).await;
        submit(&store, &run, "planner", add(task("n"), &["a"])).unwrap();
        submit(&store, &run, "planner", add(task("m"), &["n", "b"])).unwrap();
        decide(&store, &run, &request("g", Verb::Approve, json!({}))).unwrap();
        let report = match stop {
            None => resume_with(&store, &run, options(dir.path())).await,
            Some(stop) => {
                let mut o = options(dir.path());
                o.stop_after_events = Some(stop);
                let opts = weft_engine::ResumeOptions {
                    run: o,
                    ..Default::default()
                };
                match weft_engine::resume_run(&store, &run, None, &opts).await {
                    Err(EngineError::Stopped(_)) => {}
                    other => panic!("{other:?}"),
                }
                let opts = weft_engine::ResumeOptions {
                    run: options(dir.path()),
                    retry_uncertain: true,
                    ..Default::default()
                };
                let done = weft_engine::resume_run(&store, &run, None, &opts)
                    .await
                    .unwrap();
                done.report.unwrap()
            }
        };
        assert_replays(&doc(), &store, &report);
        assert_valid(&record_of(&store, &run).unwrap());
        let mut states: Vec<(String, String)> = report
            .nodes
            .iter()
            .map(|n| (n.id.clone(), n.state.clone()))
            .collect();
        states.sort();
        ends.push((report.status, states));
    }
    assert_eq!(ends[0].0, FinalStatus::Succeeded);
    for end in &ends[1..] {
        assert_eq!(end, &ends[0]);
    }
}

//! The property of a dynamic graph: random sequences of mutations (`add_node`, `add_edge`,
//! `cancel_node`, `split`, `merge`, `plan`; some refused, naming nodes that do not exist,
//! ids already held, cycles, unresolved plan names) submitted to a run that has not
//! finished, on a real SQLite store, end the same way whether the run goes straight to its
//! end or is stopped after k events and resumed: the same node states, the same run record
//! nodes, and the log replays to those states.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;
use common::{events, request};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use weft_engine::human::{Verb, decide};
use weft_engine::mutation::{
    After, GraphMutation, LoggedEdge, LoggedShape, NewNode, PlannedNode, submit,
};
use weft_engine::record::record_of;
use weft_engine::{EngineError, RunOptions, RunReport, replay_run};
use weft_store::Store;

fn exec(after: &[&str]) -> Value {
    json!({"title": "Step", "description": "a step", "depends_on": after,
        "x-weft-exec": {"run": "true"}})
}

fn doc() -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "props", "version": "1.0.0",
        "description": "a graph changed at random", "entrypoints": ["g"],
        "nodes": {
            "g": {"type": "gate", "title": "Gate", "description": "a person decides",
                "gate": {"mode": "approve"}},
            "a": exec(&["g"]), "b": exec(&["g"]), "c": exec(&["a"]), "d": exec(&["b"]),
        },
        "edges": []
    })
}

/// One random step, its names picked by index among the ids known so far (those the
/// graph may hold) or, for `missing`, a name no node has.
#[derive(Clone, Debug)]
enum Op {
    Add {
        after: Vec<usize>,
        missing: bool,
    },
    Edge {
        from: usize,
        to: usize,
    },
    Cancel {
        node: usize,
    },
    Split {
        node: usize,
        parts: usize,
        fan: bool,
    },
    Merge {
        a: usize,
        b: usize,
    },
    Plan {
        size: usize,
        after: usize,
        bad: bool,
    },
    Duplicate {
        node: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let i = 0usize..32;
    prop_oneof![
        (
            prop::collection::vec(i.clone(), 0..3),
            prop::bool::weighted(0.15)
        )
            .prop_map(|(after, missing)| Op::Add { after, missing }),
        (i.clone(), i.clone()).prop_map(|(from, to)| Op::Edge { from, to }),
        i.clone().prop_map(|node| Op::Cancel { node }),
        (i.clone(), 1usize..4, any::<bool>()).prop_map(|(node, parts, fan)| Op::Split {
            node,
            parts,
            fan
        }),
        (i.clone(), i.clone()).prop_map(|(a, b)| Op::Merge { a, b }),
        (1usize..6, i.clone(), prop::bool::weighted(0.3)).prop_map(|(size, after, bad)| Op::Plan {
            size,
            after,
            bad
        }),
        i.prop_map(|node| Op::Duplicate { node }),
    ]
}

fn new_node(id: &str) -> NewNode {
    let node: Map<String, Value> = exec(&[]).as_object().cloned().unwrap();
    let mut node = node;
    node.remove("depends_on");
    NewNode {
        id: id.into(),
        node,
    }
}

fn after(from: &str) -> After {
    After {
        from: from.into(),
        edge: LoggedEdge::Sequence,
    }
}

/// The mutations of `ops`, their names resolved against the ids known as they go (an
/// accepted mutation's new ids become known; the caller feeds acceptance back).
struct Namer {
    known: Vec<String>,
    fresh: usize,
}

impl Namer {
    fn pick(&self, i: usize) -> String {
        self.known[i % self.known.len()].clone()
    }

    fn fresh(&mut self) -> String {
        self.fresh += 1;
        format!("n{}", self.fresh)
    }

    fn mutation(&mut self, op: &Op) -> GraphMutation {
        match op {
            Op::Add { after: a, missing } => {
                let mut after_: Vec<After> = a.iter().map(|&i| after(&self.pick(i))).collect();
                after_.dedup();
                if *missing {
                    after_.push(after("nowhere"));
                }
                GraphMutation::AddNode {
                    node: new_node(&self.fresh()),
                    after: after_,
                }
            }
            Op::Edge { from, to } => GraphMutation::AddEdge {
                from: self.pick(*from),
                to: self.pick(*to),
                edge: LoggedEdge::Sequence,
            },
            Op::Cancel { node } => GraphMutation::CancelNode {
                node: self.pick(*node),
            },
            Op::Split { node, parts, fan } => GraphMutation::Split {
                node: self.pick(*node),
                parts: (0..*parts).map(|_| new_node(&self.fresh())).collect(),
                shape: if *fan {
                    LoggedShape::Fan
                } else {
                    LoggedShape::Chain
                },
            },
            Op::Merge { a, b } => GraphMutation::Merge {
                a: self.pick(*a),
                b: self.pick(*b),
                into: new_node(&self.fresh()),
            },
            Op::Plan {
                size,
                after: first,
                bad,
            } => {
                let ids: Vec<String> = (0..*size).map(|_| self.fresh()).collect();
                let mut nodes: Vec<PlannedNode> = ids
                    .iter()
                    .enumerate()
                    .map(|(k, id)| PlannedNode {
                        node: new_node(id),
                        after: vec![after(&if k == 0 {
                            self.pick(*first)
                        } else {
                            ids[k - 1].clone()
                        })],
                    })
                    .collect();
                if *bad {
                    // A cycle back to the plan's last node, and a name from nowhere.
                    nodes[0].after.push(after(&ids[ids.len() - 1]));
                    nodes[ids.len() - 1].after.push(after("unplanned"));
                }
                GraphMutation::Plan { nodes }
            }
            Op::Duplicate { node } => GraphMutation::AddNode {
                node: new_node(&self.pick(*node)),
                after: vec![after("g")],
            },
        }
    }
}

fn options(dir: &std::path::Path) -> RunOptions {
    RunOptions {
        project_dir: dir.to_path_buf(),
        ..RunOptions::default()
    }
}

/// What a run ended with, comparable across runs: node states from the report, the
/// record's nodes (id, status, type). (Not attempts: a node running at the stop is
/// abandoned and runs again, `retry_uncertain`.)
#[derive(Debug, PartialEq)]
struct End {
    status: String,
    nodes: Vec<(String, String)>,
    record: Vec<Value>,
}

fn end_of(store: &Store, report: &RunReport) -> End {
    let mut nodes: Vec<(String, String)> = report
        .nodes
        .iter()
        .map(|n| (n.id.clone(), n.state.clone()))
        .collect();
    nodes.sort();
    let record = record_of(store, &report.run_id).unwrap();
    let mut record: Vec<Value> = record["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| json!({"id": n["node_id"], "status": n["status"], "type": n["type"]}))
        .collect();
    record.sort_by_key(|v| v["id"].as_str().unwrap_or_default().to_string());
    End {
        status: report.status.as_str().to_string(),
        nodes,
        record,
    }
}

/// The run to its gate, `ops` submitted (the accepted ones' ids known to the next), the
/// gate approved, then resumed to the end, or stopped after `stop` events and resumed
/// again. Returns the end and how many mutations were accepted.
async fn scenario(ops: &[Op], stop: Option<usize>) -> (End, usize) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("weft.db")).unwrap();
    let report = weft_engine::run_document(&doc(), &store, &options(dir.path()))
        .await
        .unwrap();
    let run = report.run_id.clone();
    let mut namer = Namer {
        known: ["g", "a", "b", "c", "d"].map(String::from).to_vec(),
        fresh: 0,
    };
    let mut accepted = 0;
    for op in ops {
        let m = namer.mutation(op);
        let before = events(&store, &run).len();
        match submit(&store, &run, "planner", m.clone()) {
            Ok(_) => {
                accepted += 1;
                namer
                    .known
                    .extend(m.new_nodes().iter().map(|n| n.id.clone()));
            }
            Err(EngineError::Refused(_)) => {
                assert_eq!(events(&store, &run).len(), before, "a refusal wrote");
            }
            Err(e) => panic!("{e}"),
        }
    }
    decide(&store, &run, &request("g", Verb::Approve, json!({}))).unwrap();
    let mut resume = weft_engine::ResumeOptions {
        run: options(dir.path()),
        ..Default::default()
    };
    resume.run.stop_after_events = stop;
    let report = match weft_engine::resume_run(&store, &run, None, &resume).await {
        Ok(done) => done.report.unwrap(),
        Err(EngineError::Stopped(_)) => {
            let again = weft_engine::ResumeOptions {
                run: options(dir.path()),
                retry_uncertain: true,
                ..Default::default()
            };
            weft_engine::resume_run(&store, &run, None, &again)
                .await
                .unwrap()
                .report
                .unwrap()
        }
        Err(e) => panic!("{e}"),
    };
    // The log replays to the report's states, node by node.
    let replayed = replay_run(&doc(), &store, &run).unwrap();
    assert_eq!(replayed.graph().node_count(), report.nodes.len());
    for n in &report.nodes {
        let i = replayed.graph().find(&n.id).unwrap();
        let s = format!("{:?}", replayed.state(i)).to_lowercase();
        assert_eq!(s, n.state.replace('_', ""), "node {}", n.id);
    }
    (end_of(&store, &report), accepted)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_mutations_end_the_same_straight_and_stopped_and_resumed(
        ops in prop::collection::vec(op(), 1..10),
        stop in 1usize..12,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (straight, _) = rt.block_on(scenario(&ops, None));
        let (stopped, _) = rt.block_on(scenario(&ops, Some(stop)));
        prop_assert_eq!(straight, stopped);
    }
}

#[tokio::test]
async fn the_generated_mutations_are_accepted_and_refused_both() {
    // A fixed sequence: adds, a plan, a split and a merge accepted; a duplicate id, an
    // unresolved plan and an edge into a started node refused.
    let ops = [
        Op::Add {
            after: vec![1],
            missing: false,
        },
        Op::Plan {
            size: 3,
            after: 5,
            bad: false,
        },
        Op::Plan {
            size: 2,
            after: 2,
            bad: true,
        },
        Op::Split {
            node: 3,
            parts: 2,
            fan: true,
        },
        Op::Merge { a: 4, b: 6 },
        Op::Duplicate { node: 1 },
        Op::Edge { from: 1, to: 0 },
    ];
    let (straight, accepted) = scenario(&ops, None).await;
    assert_eq!(accepted, 4, "{straight:#?}");
    assert_eq!(straight.status, "succeeded", "{straight:#?}");
    for stop in [1, 3, 6] {
        assert_eq!(scenario(&ops, Some(stop)).await.0, straight, "stop {stop}");
    }
}

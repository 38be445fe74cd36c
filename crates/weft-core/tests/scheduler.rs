//! Scheduler behaviour, one scenario per rule: each step is an event and the actions it must
//! produce, in order (see `common` for the graph notation and the action rendering).

mod common;

use NodeState::*;
use Outcome::{Blocked as B, Failed as F, Succeeded as S};
use common::Driver;
use weft_core::{Event, FailurePolicy, Join, NodeState, Outcome, ProtocolError};

#[test]
fn chain_runs_in_order_and_finishes() {
    let mut d = Driver::isolate("a* -> b -> c");
    assert_eq!(d.begin(), ["start a"]);
    assert_eq!(d.settle("a", S), ["start b"]);
    assert_eq!(d.state("c"), Pending);
    assert_eq!(d.settle("b", S), ["start c"]);
    assert_eq!(d.settle("c", S), ["finished"]);
    let summary = d.s.summary();
    assert_eq!(summary.counts.succeeded, 3);
    assert_eq!(summary.started, [0, 1, 2]);
    assert_eq!(
        summary
            .edges_taken
            .iter()
            .map(|t| t.edge)
            .collect::<Vec<_>>(),
        [0, 1]
    );
    assert!(d.s.is_finished());
    assert_eq!(d.try_apply(Event::Begin), Err(ProtocolError::Finished));
}

#[test]
fn skip_propagates_through_a_chain() {
    let mut d = Driver::isolate("a* -> b -> c -> d");
    d.begin();
    assert_eq!(
        d.settle("a", F),
        ["skip b join", "skip c join", "skip d join", "finished"]
    );
    assert_eq!(d.s.summary().counts.skipped, 3);
    assert_eq!(d.s.summary().unabsorbed, [0]);
}

#[test]
fn blocked_counts_as_failed_for_edges() {
    let mut d = Driver::isolate("a* -> b; a !> h");
    d.begin();
    assert_eq!(d.settle("a", B), ["skip b join", "start h"]);
    assert_eq!(d.state("a"), Blocked);
    assert!(
        d.s.summary().unabsorbed.is_empty(),
        "the on_failure edge absorbs the block"
    );
}

/// Three entry nodes feed `j`; each row settles them in turn and gives `j`'s state after each.
#[test]
fn join_kinds_ready_and_skip() {
    let rows: &[(&str, [Outcome; 3], [NodeState; 3])] = &[
        ("j", [S, S, S], [Pending, Pending, Running]),
        ("j", [S, F, S], [Pending, Skipped, Skipped]),
        ("j", [F, S, S], [Skipped, Skipped, Skipped]),
        ("j:any", [F, S, S], [Pending, Running, Running]),
        ("j:any", [S, F, F], [Running, Running, Running]),
        ("j:any", [F, F, F], [Pending, Pending, Skipped]),
        (
            "j:any",
            [F, B, Outcome::Skipped],
            [Pending, Pending, Skipped],
        ),
        ("j:2", [S, F, S], [Pending, Pending, Running]),
        ("j:2", [S, S, F], [Pending, Running, Running]),
        ("j:2", [F, F, S], [Pending, Skipped, Skipped]),
        ("j:3", [S, S, F], [Pending, Pending, Skipped]),
    ];
    for (j, outcomes, states) in rows {
        let text = format!("a* b* c*; a -> {j}; b -> j; c -> j");
        let mut d = Driver::isolate(&text);
        d.begin();
        for (i, (name, outcome)) in ["a", "b", "c"].iter().zip(outcomes).enumerate() {
            d.settle(name, *outcome);
            assert_eq!(
                d.state("j"),
                states[i],
                "{j} after settling {name} {outcome:?} ({outcomes:?})"
            );
        }
        assert!(d.s.started().iter().filter(|&&n| n == d.n("j")).count() <= 1);
    }
}

#[test]
fn any_fires_on_the_first_edge_and_runs_once() {
    let mut d = Driver::isolate("a* b*; a -> j:any; b -> j");
    assert_eq!(d.begin(), ["start a", "start b"]);
    assert_eq!(d.settle("a", S), ["start j"]);
    // The second edge resolves later: recorded, never re-triggers.
    assert_eq!(d.settle("b", S), Vec::<String>::new());
    assert_eq!(d.s.resolution(d.e("b", "j")), weft_core::Resolution::Active);
    assert_eq!(d.settle("j", S), ["finished"]);
    assert_eq!(d.s.summary().started, [0, 1, 2]);
}

#[test]
fn on_failure_edges() {
    let mut d = Driver::isolate("a* -> b; a !> h");
    d.begin();
    // Skips come out while edges resolve, starts after: skips first.
    assert_eq!(d.settle("a", S), ["skip h join", "start b"]);

    let mut d = Driver::isolate("a* -> b; a !> h");
    d.begin();
    assert_eq!(d.settle("a", F), ["skip b join", "start h"]);
    assert_eq!(d.settle("h", S), ["finished"]);

    // A guarded on_failure edge follows its guard.
    let mut d = Driver::isolate("a* !?> h");
    d.begin();
    assert_eq!(
        d.settle_with("a", F, &[("h", false)]),
        ["skip h join", "finished"]
    );
    assert_eq!(
        d.s.summary().unabsorbed,
        [0],
        "an inactive handler absorbs nothing"
    );
}

#[test]
fn conditional_guards() {
    let mut d = Driver::isolate("a* => b; a => c");
    d.begin();
    assert_eq!(
        d.settle_with("a", S, &[("b", true), ("c", false)]),
        ["skip c join", "start b"]
    );
    let taken = &d.s.summary().edges_taken;
    assert_eq!(taken.len(), 1);
    assert_eq!((taken[0].to, taken[0].guard), (1, Some(true)));

    // On failure the conditional guards are not needed.
    let mut d = Driver::isolate("a* => b; a => c");
    d.begin();
    assert_eq!(d.settle("a", F), ["skip b join", "skip c join", "finished"]);
}

#[test]
fn when_conditions() {
    let mut d = Driver::isolate("a* -> b? -> c");
    d.begin();
    assert_eq!(d.settle("a", S), ["when b"]);
    assert_eq!(d.state("b"), Ready);
    assert!(d.s.when_pending(1));
    assert_eq!(d.when("b", true), ["start b"]);

    let mut d = Driver::isolate("a* -> b? -> c");
    d.begin();
    d.settle("a", S);
    assert_eq!(
        d.when("b", false),
        ["skip b when", "skip c join", "finished"]
    );

    let mut d = Driver::isolate("a*? b*");
    assert_eq!(d.begin(), ["when a", "start b"]);
}

/// `a` fails while `b` runs; `c` depends on `a`, `d` on `b`, `e` on both through `any`.
#[test]
fn failure_policies() {
    let text = "a* -> c; b* -> d; a -> e:any; b -> e";
    type Row<'a> = (FailurePolicy, &'a [&'a str], &'a [&'a str], [NodeState; 3]);
    let rows: &[Row] = &[
        (
            FailurePolicy::Isolate,
            &["skip c join"],
            &["start d", "start e"],
            [Skipped, Running, Running],
        ),
        (
            FailurePolicy::Halt,
            &["skip c join", "skip d halted", "skip e halted"],
            &["finished"],
            [Skipped, Skipped, Skipped],
        ),
        (
            FailurePolicy::Continue,
            &["start c", "start e"],
            &["start d"],
            [Running, Running, Running],
        ),
    ];
    for (policy, after_a, after_b, states) in rows {
        let mut d = Driver::new(text, 8, *policy);
        assert_eq!(d.begin(), ["start a", "start b"], "{policy:?}");
        assert_eq!(d.settle("a", F), *after_a, "{policy:?}");
        assert_eq!(
            d.settle("b", S),
            *after_b,
            "{policy:?}: running nodes finish"
        );
        let got = [d.state("c"), d.state("d"), d.state("e")];
        assert_eq!(&got, states, "{policy:?}");
    }
}

#[test]
fn halt_spares_absorbed_failures_and_continue_keeps_conditionals_inactive() {
    let mut d = Driver::new("a* -> c; a !> h; b*", 1, FailurePolicy::Halt);
    assert_eq!(d.begin(), ["start a"]);
    assert_eq!(d.settle("a", F), ["skip c join", "start h"]);
    assert!(!d.s.summary().halted);

    let mut d = Driver::new("a* => c; a -> e", 4, FailurePolicy::Continue);
    d.begin();
    assert_eq!(d.settle("a", F), ["skip c join", "start e"]);
    assert_eq!(
        d.s.summary().edges_taken[0].kind,
        weft_core::EdgeKind::Sequence
    );
}

#[test]
fn max_parallel_and_concurrency_groups() {
    let mut d = Driver::new("a* b* c* d*", 2, FailurePolicy::Isolate);
    assert_eq!(d.begin(), ["start a", "start b"]);
    assert_eq!(d.settle("b", S), ["start c"]);
    assert_eq!(d.settle("a", S), ["start d"]);

    let mut d = Driver::new("a*@g b*@g c*", 3, FailurePolicy::Isolate);
    assert_eq!(d.begin(), ["start a", "start c"]);
    assert_eq!(d.settle("c", S), Vec::<String>::new());
    assert_eq!(d.settle("a", S), ["start b"]);
}

#[test]
fn a_node_awaiting_a_human_frees_its_slot() {
    // Issue 13: a person's wait does not count against max_parallel_nodes, so independent
    // nodes keep running while it waits; the answered node resumes at once.
    let mut d = Driver::new("a* b* c*", 1, FailurePolicy::Isolate);
    assert_eq!(d.begin(), ["start a"]);
    assert_eq!(d.apply(Event::AwaitingHuman { node: 0 }), ["start b"]);
    assert_eq!(
        d.apply(Event::HumanResumed { node: 0 }),
        Vec::<String>::new()
    );
    assert_eq!(
        d.settle("b", S),
        Vec::<String>::new(),
        "a runs again: no slot"
    );
    assert_eq!(d.settle("a", S), ["start c"]);
    assert_eq!(d.settle("c", S), ["finished"]);
}

#[test]
fn awaiting_human_keeps_its_concurrency_group() {
    let mut d = Driver::new("a*@g b* c*@g", 2, FailurePolicy::Isolate);
    assert_eq!(d.begin(), ["start a", "start b"]);
    assert_eq!(
        d.apply(Event::AwaitingHuman { node: 0 }),
        Vec::<String>::new()
    );
    assert_eq!(d.state("a"), AwaitingHuman);
    assert_eq!(d.settle("b", S), Vec::<String>::new(), "c shares a's group");
    assert_eq!(
        d.apply(Event::HumanResumed { node: 0 }),
        Vec::<String>::new()
    );
    assert_eq!(d.settle("a", S), ["start c"]);
    // A node awaiting a human may also settle directly (a gate that times out).
    d.apply(Event::AwaitingHuman { node: 2 });
    assert_eq!(d.settle("c", F), ["finished"]);
}

#[test]
fn rank_tie_break() {
    // Two independent ready nodes start in declaration order, not name order.
    let mut d = Driver::new("b* a*", 1, FailurePolicy::Isolate);
    assert_eq!(d.begin(), ["start b"]);
    assert_eq!(d.settle("b", S), ["start a"]);

    // y is declared first but x is earlier in Kahn's order (rank 2 vs 4): held back by
    // their group until g settles, both are ready and x starts first.
    let text = "y@G g*@G a* x@G b*; a -> x; b -> y";
    let mut d = Driver::isolate(text);
    assert_eq!(d.s.graph().order().collect::<Vec<_>>(), [1, 2, 3, 4, 0]);
    assert_eq!(d.begin(), ["start g", "start a", "start b"]);
    assert_eq!(d.settle("b", S), Vec::<String>::new());
    assert_eq!(d.settle("a", S), Vec::<String>::new());
    assert_eq!(d.settle("g", S), ["start x"]);
    assert_eq!(d.settle("x", S), ["start y"]);
    d.assert_replays(text);
}

#[test]
fn unreachable_nodes_are_skipped_at_the_end() {
    let mut d = Driver::isolate("a*; b -> c");
    assert_eq!(d.begin(), ["start a"]);
    assert_eq!(
        d.settle("a", S),
        ["skip b unreachable", "skip c join", "finished"]
    );
    let mut d = Driver::isolate("b -> c");
    assert_eq!(d.begin(), ["skip b unreachable", "skip c join", "finished"]);
}

#[test]
fn cancel_stops_the_scope() {
    let mut d = Driver::new("a* -> b; c*", 1, FailurePolicy::Isolate);
    assert_eq!(d.begin(), ["start a"]);
    assert_eq!(d.apply(Event::Cancel), Vec::<String>::new(), "a still runs");
    assert_eq!((d.state("b"), d.state("c")), (Cancelled, Cancelled));
    assert_eq!(d.apply(Event::Cancel), Vec::<String>::new(), "idempotent");
    assert_eq!(d.settle("a", Outcome::Cancelled), ["finished"]);
    let summary = d.s.summary();
    assert!(summary.cancelled);
    assert_eq!(summary.counts.cancelled, 3);

    let mut d = Driver::isolate("a* -> b");
    assert_eq!(d.apply(Event::Cancel), ["finished"]);
    assert_eq!(d.try_apply(Event::Begin), Err(ProtocolError::Finished));
}

#[test]
fn node_ids_and_edge_kinds_keep_their_notation() {
    let d = Driver::isolate("a* -> b:2; c* -> b; d:any");
    assert_eq!(d.s.graph().node(1).join, Join::NOf(2));
    assert_eq!(d.s.graph().node(3).join, Join::Any);
}

/// Every bad event is rejected and leaves the scheduler exactly as it was.
#[test]
fn protocol_errors_change_nothing() {
    let text = "a* => b; a !?> h; a -> c?; x* -> y";
    let mut d = Driver::isolate(text);
    let fresh: Vec<(Event, ProtocolError)> = vec![(
        Event::Settled {
            node: 0,
            outcome: S,
            guards: vec![],
        },
        ProtocolError::NotBegun,
    )];
    for (event, err) in fresh {
        assert_eq!(d.s.clone().apply(&event), Err(err));
    }
    d.begin();
    let (a, b, h, c) = (d.n("a"), d.n("b"), d.n("h"), d.n("c"));
    let (ab, ah, xy) = (d.e("a", "b"), d.e("a", "h"), d.e("x", "y"));
    let bad: Vec<(Event, ProtocolError)> = vec![
        (Event::Begin, ProtocolError::AlreadyBegun),
        (
            Event::Settled {
                node: 99,
                outcome: S,
                guards: vec![],
            },
            ProtocolError::UnknownNode(99),
        ),
        (
            Event::Settled {
                node: b,
                outcome: S,
                guards: vec![],
            },
            ProtocolError::WrongState {
                node: b,
                state: Pending,
                expected: "running or awaiting_human",
            },
        ),
        (
            Event::Settled {
                node: a,
                outcome: S,
                guards: vec![],
            },
            ProtocolError::MissingGuard { node: a, edge: ab },
        ),
        (
            Event::Settled {
                node: a,
                outcome: F,
                guards: vec![],
            },
            ProtocolError::MissingGuard { node: a, edge: ah },
        ),
        (
            Event::Settled {
                node: a,
                outcome: S,
                guards: vec![(ab, true), (xy, true)],
            },
            ProtocolError::UnexpectedGuard { node: a, edge: xy },
        ),
        (
            Event::Settled {
                node: a,
                outcome: S,
                guards: vec![(ab, true), (ab, false)],
            },
            ProtocolError::DuplicateGuard { edge: ab },
        ),
        (
            Event::WhenResolved {
                node: c,
                value: true,
            },
            ProtocolError::NoWhenPending { node: c },
        ),
        (
            Event::HumanResumed { node: a },
            ProtocolError::WrongState {
                node: a,
                state: Running,
                expected: "awaiting_human",
            },
        ),
        (
            Event::AwaitingHuman { node: h },
            ProtocolError::WrongState {
                node: h,
                state: Pending,
                expected: "running",
            },
        ),
    ];
    for (event, err) in bad {
        let before = format!("{:?}", d.s);
        assert_eq!(d.s.apply(&event), Err(err), "{event:?}");
        assert_eq!(format!("{:?}", d.s), before, "{event:?} changed the state");
    }
    // Extra guard values for edges the outcome does not need are accepted.
    let ok = d.settle_with("a", S, &[("b", true), ("h", true)]);
    assert_eq!(ok, ["skip h join", "when c", "start b"]);
    assert!(d.s.summary().edges_taken.iter().all(|t| t.edge != ah));
}

#[test]
fn replay_reproduces_the_actions() {
    let text = "a* -> b? -> c; a => d:any; a !> h; e*@g -> f@g; d -> f";
    let mut d = Driver::new(text, 2, FailurePolicy::Isolate);
    d.begin();
    d.settle("e", S);
    d.settle_with("a", S, &[("d", true)]);
    d.when("b", true);
    for name in ["d", "b", "f", "c"] {
        if d.state(name) == Running {
            d.settle(name, S);
        }
    }
    while !d.s.is_finished() {
        let running: Vec<usize> = (0..d.s.graph().node_count())
            .filter(|&n| d.s.state(n) == Running)
            .collect();
        let name = d.s.graph().node(running[0]).id.clone();
        d.settle(&name, S);
    }
    d.assert_replays(text);
    // Actions and events serialize (the store logs events).
    let json = serde_json::to_string(&d.events).unwrap();
    let back: Vec<Event> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, d.events);
}

/// A 10k chain fails at its head: skip propagation is iterative (no stack overflow), and a
/// 5k-wide fan-out/fan-in runs through without rescans.
#[test]
fn scale_chain_skip_and_wide_fan() {
    use weft_core::{EdgeKind, EdgeSpec, GraphBuilder, NodeSpec, Options, Scheduler};
    let mut b = GraphBuilder::new();
    b.node(NodeSpec::new("n0").entry());
    for i in 1..10_000 {
        b.node(NodeSpec::new(format!("n{i}")));
        b.edge(EdgeSpec::new(i - 1, i, EdgeKind::Sequence));
    }
    let mut s = Scheduler::new(b.build().unwrap(), Options::default());
    s.apply(&Event::Begin).unwrap();
    let out = s
        .apply(&Event::Settled {
            node: 0,
            outcome: F,
            guards: vec![],
        })
        .unwrap();
    assert_eq!(out.len(), 10_000, "9999 skips and Finished");

    let width = 5_000;
    let mut b = GraphBuilder::new();
    let root = b.node(NodeSpec::new("root").entry());
    let sink = b.node(NodeSpec::new("sink"));
    for i in 0..width {
        let mid = b.node(NodeSpec::new(format!("m{i}")));
        b.edge(EdgeSpec::new(root, mid, EdgeKind::Sequence));
        b.edge(EdgeSpec::new(mid, sink, EdgeKind::Sequence));
    }
    let options = Options {
        max_parallel: 64,
        on_node_failure: FailurePolicy::Isolate,
    };
    let mut s = Scheduler::new(b.build().unwrap(), options);
    s.apply(&Event::Begin).unwrap();
    let mut running: Vec<usize> = vec![root];
    let mut finished = false;
    while let Some(node) = running.pop() {
        let out = s
            .apply(&Event::Settled {
                node,
                outcome: S,
                guards: vec![],
            })
            .unwrap();
        for a in out {
            match a {
                weft_core::Action::Start { node } => running.push(node),
                weft_core::Action::Finished { summary } => {
                    assert_eq!(summary.counts.succeeded, width + 2);
                    finished = true;
                }
                _ => {}
            }
        }
    }
    assert!(finished);
}

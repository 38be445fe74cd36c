//! Mutations during a run (`Event::Mutate`): the run-state preconditions, the state of new
//! nodes and edges, and that a rejected mutation changes nothing.

mod common;

use NodeState::*;
use Outcome::{Failed as F, Succeeded as S};
use common::Driver;
use weft_core::{
    EdgeKind, Event, FailurePolicy, GraphError, Mutation, NewEdge, NodeSpec, NodeState, Outcome,
    ProtocolError, SplitShape,
};

fn seq(from: usize) -> NewEdge {
    NewEdge {
        from,
        kind: EdgeKind::Sequence,
        guarded: false,
    }
}

#[test]
fn add_node_after_a_settled_source_starts_at_once() {
    let mut d = Driver::isolate("a* -> b");
    d.begin();
    d.settle("a", S);
    let add = Mutation::AddNode {
        spec: NodeSpec::new("c"),
        incoming: vec![seq(0)],
    };
    assert_eq!(d.apply(Event::Mutate(add)), ["start c"]);
    d.settle("b", S);
    assert_eq!(d.settle("c", S), ["finished"]);
    d.assert_replays("a* -> b");
}

#[test]
fn add_edge_into_a_pending_node() {
    let mut d = Driver::isolate("a* -> b; c* ; d");
    d.begin();
    let (c, dd) = (d.n("c"), d.n("d"));
    d.apply(Event::Mutate(Mutation::AddEdge {
        from: c,
        to: dd,
        kind: EdgeKind::Sequence,
        guarded: false,
    }));
    d.settle("a", S);
    assert_eq!(d.settle("c", S), ["start d"]);
    // Into a running node: rejected.
    let bad = Mutation::AddEdge {
        from: c,
        to: d.n("b"),
        kind: EdgeKind::Sequence,
        guarded: false,
    };
    assert_eq!(
        d.try_apply(Event::Mutate(bad)),
        Err(ProtocolError::WrongState {
            node: 1,
            state: Running,
            expected: "pending"
        })
    );
}

#[test]
fn split_a_pending_node_and_run_the_parts() {
    let text = "a* -> x -> c";
    let mut d = Driver::isolate(text);
    d.begin();
    let split = Mutation::Split {
        node: d.n("x"),
        parts: vec![NodeSpec::new("x1"), NodeSpec::new("x2")],
        shape: SplitShape::Chain,
    };
    assert_eq!(d.apply(Event::Mutate(split)), Vec::<String>::new());
    assert_eq!(d.state("x"), Cancelled);
    assert_eq!(d.settle("a", S), ["start x1"]);
    assert_eq!(d.settle("x1", S), ["start x2"]);
    assert_eq!(d.settle("x2", S), ["start c"]);
    assert_eq!(d.settle("c", S), ["finished"]);
    let summary = d.s.summary();
    assert_eq!(summary.retired, [1]);
    assert_eq!(summary.counts.succeeded, 4, "retired nodes are not counted");
    d.assert_replays(text);
}

#[test]
fn split_a_ready_node_keeps_its_resolved_edges() {
    let mut d = Driver::new("a* -> x; b*", 1, FailurePolicy::Isolate);
    d.begin();
    assert_eq!(d.settle("a", S), ["start x"]);
    // x runs now: it cannot be split.
    let split = |d: &Driver, node: &str| Mutation::Split {
        node: d.n(node),
        parts: vec![NodeSpec::new("p"), NodeSpec::new("q")],
        shape: SplitShape::Fan,
    };
    let before = format!("{:?}", d.s);
    let m = split(&d, "x");
    assert!(matches!(
        d.try_apply(Event::Mutate(m)),
        Err(ProtocolError::WrongState { .. })
    ));
    assert_eq!(format!("{:?}", d.s), before);

    // b is ready behind x (max_parallel 1): split it into a fan.
    let mut d = Driver::new("a* -> x -> y; a -> z", 1, FailurePolicy::Isolate);
    d.begin();
    assert_eq!(d.settle("a", S), ["start x"]);
    assert_eq!(d.state("z"), Ready);
    let m = split(&d, "z");
    assert_eq!(d.apply(Event::Mutate(m)), Vec::<String>::new());
    assert_eq!(
        (d.state("p"), d.state("q")),
        (Ready, Ready),
        "the copied a -> edges are active"
    );
    assert_eq!(d.settle("x", S), ["start y"], "y ranks before p and q");
    assert_eq!(d.settle("y", S), ["start p"]);
}

#[test]
fn merge_two_pending_siblings() {
    let mut d = Driver::isolate("a* -> x -> c; a -> y -> c");
    d.begin();
    let m = Mutation::Merge {
        a: d.n("x"),
        b: d.n("y"),
        spec: NodeSpec::new("xy"),
    };
    d.apply(Event::Mutate(m));
    assert_eq!(d.settle("a", S), ["start xy"]);
    assert_eq!(d.settle("xy", S), ["start c"]);
}

#[test]
fn cancel_node_cancels_what_is_reachable_only_through_it() {
    let mut d = Driver::isolate("a* -> x -> y -> z; b* -> j:any; y -> j; x -> k; b -> k");
    d.begin();
    let m = Mutation::CancelNode { node: d.n("x") };
    assert_eq!(d.apply(Event::Mutate(m)), ["skip k join"]);
    assert_eq!([d.state("x"), d.state("y"), d.state("z")], [Cancelled; 3]);
    assert_eq!(d.state("j"), Pending, "j can still be reached from b");
    assert_eq!(d.settle("b", S), ["start j"]);
    d.settle("a", S);
    assert_eq!(d.settle("j", S), ["finished"]);
    // Cancelling a node that runs is the shell's job (it settles as Cancelled).
    let mut d = Driver::isolate("a* -> b");
    d.begin();
    let m = Mutation::CancelNode { node: 0 };
    assert!(matches!(
        d.try_apply(Event::Mutate(m)),
        Err(ProtocolError::WrongState { .. })
    ));
}

/// Every rejected mutation leaves the scheduler exactly as it was.
#[test]
fn rejected_mutations_change_nothing() {
    let mut d = Driver::isolate("a* => b; a -> c -> e; a -> d? -> e; c -> f");
    d.begin();
    d.settle_with("a", S, &[("b", true)]);
    let (a, b, dn, e) = (d.n("a"), d.n("b"), d.n("d"), d.n("e"));
    let rows: Vec<(Mutation, ProtocolError)> = vec![
        (
            Mutation::AddNode {
                spec: NodeSpec::new("n"),
                incoming: vec![NewEdge {
                    from: a,
                    kind: EdgeKind::Conditional,
                    guarded: true,
                }],
            },
            ProtocolError::GuardUnavailable { from: a },
        ),
        (
            Mutation::AddNode {
                spec: NodeSpec::new("b"),
                incoming: vec![seq(a)],
            },
            ProtocolError::Graph(GraphError::DuplicateId {
                id: "b".into(),
                first: b,
                second: 6,
            }),
        ),
        (
            Mutation::AddEdge {
                from: e,
                to: e,
                kind: EdgeKind::Sequence,
                guarded: false,
            },
            ProtocolError::Graph(GraphError::Cycle { nodes: vec![e] }),
        ),
        (
            Mutation::Split {
                node: b,
                parts: vec![NodeSpec::new("p")],
                shape: SplitShape::Chain,
            },
            ProtocolError::WrongState {
                node: b,
                state: Running,
                expected: "pending, or ready with no `when` outstanding",
            },
        ),
        (
            Mutation::Split {
                node: dn,
                parts: vec![NodeSpec::new("p")],
                shape: SplitShape::Chain,
            },
            ProtocolError::WrongState {
                node: dn,
                state: Ready,
                expected: "pending, or ready with no `when` outstanding",
            },
        ),
        (
            Mutation::CancelNode { node: 42 },
            ProtocolError::UnknownNode(42),
        ),
    ];
    for (m, err) in rows {
        let before = format!("{:?}", d.s);
        assert_eq!(d.s.apply(&Event::Mutate(m.clone())), Err(err), "{m:?}");
        assert_eq!(format!("{:?}", d.s), before, "{m:?} changed the state");
    }
}

#[test]
fn no_mutation_after_halt_or_cancel() {
    let mut d = Driver::new("a* -> b; c*", 1, FailurePolicy::Halt);
    d.begin();
    d.settle("a", F);
    let m = Mutation::AddNode {
        spec: NodeSpec::new("n").entry(),
        incoming: vec![],
    };
    assert!(d.s.is_finished());
    assert_eq!(
        d.s.clone().apply(&Event::Mutate(m.clone())),
        Err(ProtocolError::Finished)
    );

    let mut d = Driver::isolate("a* -> b");
    d.begin();
    d.apply(Event::Cancel);
    assert_eq!(d.try_apply(Event::Mutate(m)), Err(ProtocolError::Closed));
}

#[test]
fn entry_node_added_mid_run_starts() {
    let mut d = Driver::isolate("a*");
    d.begin();
    let m = Mutation::AddNode {
        spec: NodeSpec::new("n").entry(),
        incoming: vec![],
    };
    assert_eq!(d.apply(Event::Mutate(m)), ["start n"]);
    d.settle("a", S);
    assert_eq!(d.settle("n", S), ["finished"]);
}

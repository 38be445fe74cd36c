//! The work graph: every invariant the builder enforces, the rank, and the mutation
//! primitives (each keeps every invariant or fails without change).

mod common;

use common::{builder, graph};
use weft_core::{
    EdgeKind, EdgeSpec, GraphBuilder, GraphError, Join, NewEdge, NodeSpec, SplitShape, WorkGraph,
};

/// A node's position in the scheduling order; `usize::MAX` for a retired node.
fn position(g: &WorkGraph, node: usize) -> usize {
    g.order().position(|n| n == node).unwrap_or(usize::MAX)
}

/// A stable rendering of a graph (ids, live flags, edges, positions in the order) to
/// compare before/after.
fn snapshot(g: &WorkGraph) -> String {
    let nodes: Vec<String> = (0..g.node_count())
        .map(|n| {
            format!(
                "{}{}#{}",
                g.node(n).id,
                if g.is_live(n) { "" } else { "(retired)" },
                position(g, n)
            )
        })
        .collect();
    let edges: Vec<String> = (0..g.edge_count())
        .filter(|&e| g.is_edge_live(e))
        .map(|e| {
            let s = g.edge(e);
            format!("{}{:?}{}", g.node(s.from).id, s.kind, g.node(s.to).id)
        })
        .collect();
    format!("{nodes:?} {edges:?}")
}

#[test]
fn builder_rejects_every_broken_invariant() {
    let rows: &[(&str, GraphError)] = &[
        ("a -> b -> a", GraphError::Cycle { nodes: vec![0, 1] }),
        ("a*; b -> c -> b", GraphError::Cycle { nodes: vec![1, 2] }),
        (
            "a* -> b:3",
            GraphError::JoinTooLarge {
                node: 1,
                n: 3,
                incoming: 1,
            },
        ),
        ("a* -> b:0", GraphError::JoinZero { node: 1 }),
        (
            "a* -> b*",
            GraphError::EntryHasIncoming { node: 1, edge: 0 },
        ),
    ];
    for (text, err) in rows {
        assert_eq!(builder(text).build().unwrap_err(), *err, "{text}");
    }
    // The notation reuses a name, so duplicate ids go through the builder directly.
    let mut b = GraphBuilder::new();
    b.node(NodeSpec::new("a"));
    b.node(NodeSpec::new("a"));
    assert_eq!(
        b.build().unwrap_err(),
        GraphError::DuplicateId {
            id: "a".into(),
            first: 0,
            second: 1
        }
    );
    let edge_rows = [
        (
            EdgeSpec {
                from: 0,
                to: 5,
                kind: EdgeKind::Sequence,
                guarded: false,
            },
            GraphError::UnknownEndpoint { edge: 0, node: 5 },
        ),
        (
            EdgeSpec {
                from: 1,
                to: 1,
                kind: EdgeKind::Sequence,
                guarded: false,
            },
            GraphError::Cycle { nodes: vec![1] },
        ),
        (
            EdgeSpec {
                from: 0,
                to: 1,
                kind: EdgeKind::Sequence,
                guarded: true,
            },
            GraphError::Guard {
                edge: 0,
                kind: EdgeKind::Sequence,
                guarded: true,
            },
        ),
        (
            EdgeSpec {
                from: 0,
                to: 1,
                kind: EdgeKind::Conditional,
                guarded: false,
            },
            GraphError::Guard {
                edge: 0,
                kind: EdgeKind::Conditional,
                guarded: false,
            },
        ),
    ];
    for (edge, err) in edge_rows {
        let mut b = GraphBuilder::new();
        b.node(NodeSpec::new("a").entry());
        b.node(NodeSpec::new("b"));
        b.edge(edge);
        assert_eq!(b.build().unwrap_err(), err, "{edge:?}");
    }
}

#[test]
fn rank_is_kahn_with_declaration_ties() {
    // (graph, expected order of node ids)
    let rows: &[(&str, &[&str])] = &[
        ("a* b* c*", &["a", "b", "c"]),
        ("c* b* a*", &["c", "b", "a"]),
        ("a* -> c; b* -> d", &["a", "c", "b", "d"]),
        ("y g* a* x b*; a -> x; b -> y", &["g", "a", "x", "b", "y"]),
        ("d; a* -> b -> d; a -> c -> d", &["a", "b", "c", "d"]),
    ];
    for (text, expected) in rows {
        let g = graph(text);
        let order: Vec<&str> = g.order().map(|n| g.node(n).id.as_str()).collect();
        assert_eq!(order, *expected, "{text}");
        let ranks: Vec<u64> = g.order().map(|n| g.rank(n)).collect();
        assert!(
            ranks.windows(2).all(|w| w[0] < w[1]),
            "{text}: ranks increase"
        );
    }
}

#[test]
fn add_node_and_edge() {
    let mut g = graph("a* -> b");
    let c = g
        .add_node(
            NodeSpec::new("c").join(Join::NOf(2)),
            &[
                NewEdge {
                    from: 0,
                    kind: EdgeKind::Sequence,
                    guarded: false,
                },
                NewEdge {
                    from: 1,
                    kind: EdgeKind::OnFailure,
                    guarded: true,
                },
            ],
        )
        .unwrap();
    assert_eq!(c.added_nodes, [2]);
    assert_eq!(c.added_edges, [1, 2]);
    assert_eq!(g.incoming(2), [1, 2]);
    let before = snapshot(&g);
    let failing: Vec<(Result<_, GraphError>, GraphError)> = vec![
        (
            g.clone().add_edge(EdgeSpec::new(2, 0, EdgeKind::Sequence)),
            GraphError::EntryHasIncoming { node: 0, edge: 3 },
        ),
        (
            // The cycle in path order, from the new edge's source: 2 -> 1 -> 2.
            g.clone().add_edge(EdgeSpec::new(2, 1, EdgeKind::Sequence)),
            GraphError::Cycle { nodes: vec![2, 1] },
        ),
        (
            g.clone().add_node(NodeSpec::new("b"), &[]),
            GraphError::DuplicateId {
                id: "b".into(),
                first: 1,
                second: 3,
            },
        ),
        (
            g.clone()
                .add_node(NodeSpec::new("d").join(Join::NOf(1)), &[]),
            GraphError::JoinTooLarge {
                node: 3,
                n: 1,
                incoming: 0,
            },
        ),
    ];
    for (result, err) in failing {
        assert_eq!(result.unwrap_err(), err);
    }
    // The same failures on the graph itself leave it as it was.
    assert!(g.add_edge(EdgeSpec::new(2, 1, EdgeKind::Sequence)).is_err());
    assert!(g.add_node(NodeSpec::new("a"), &[]).is_err());
    assert_eq!(snapshot(&g), before);
}

#[test]
fn split_into_a_chain_or_a_fan() {
    let mut g = graph("a* -> x -> c; b* -> x");
    let x = g.find("x").unwrap();
    let change = g
        .split(
            x,
            vec![NodeSpec::new("x1"), NodeSpec::new("x2")],
            SplitShape::Chain,
        )
        .unwrap();
    assert_eq!(change.retired_nodes, [x]);
    assert!(!g.is_live(x));
    assert_eq!(
        snapshot(&g),
        r#"["a#0", "x(retired)#18446744073709551615", "c#4", "b#1", "x1#2", "x2#3"] ["aSequencex1", "bSequencex1", "x2Sequencec", "x1Sequencex2"]"#
    );
    assert_eq!(change.copied_edges.len(), 3);

    let mut g = graph("a* -> x -> c; b* -> x");
    g.split(
        1,
        vec![NodeSpec::new("p"), NodeSpec::new("q")],
        SplitShape::Fan,
    )
    .unwrap();
    let c = g.find("c").unwrap();
    assert_eq!(g.incoming(c).len(), 2, "one copy of x -> c per part");
    assert_eq!(g.incoming(g.find("q").unwrap()).len(), 2);

    // Failing splits change nothing.
    let mut g = graph("a* -> x -> c:1");
    let before = snapshot(&g);
    assert_eq!(
        g.split(1, vec![], SplitShape::Chain).unwrap_err(),
        GraphError::EmptySplit
    );
    assert_eq!(
        g.split(9, vec![NodeSpec::new("p")], SplitShape::Chain)
            .unwrap_err(),
        GraphError::UnknownNode(9)
    );
    assert!(matches!(
        g.split(1, vec![NodeSpec::new("a")], SplitShape::Chain),
        Err(GraphError::DuplicateId { .. })
    ));
    assert!(matches!(
        g.split(
            1,
            vec![NodeSpec::new("p").join(Join::NOf(2))],
            SplitShape::Chain
        ),
        Err(GraphError::JoinTooLarge { .. })
    ));
    assert_eq!(snapshot(&g), before);
    g.split(1, vec![NodeSpec::new("p")], SplitShape::Chain)
        .unwrap();
    assert_eq!(
        g.split(1, vec![NodeSpec::new("r")], SplitShape::Chain)
            .unwrap_err(),
        GraphError::RetiredNode(1)
    );
}

#[test]
fn merge_independent_nodes() {
    let mut g = graph("a* -> x -> c; a -> y -> c; y -> d");
    let (x, y) = (g.find("x").unwrap(), g.find("y").unwrap());
    let change = g.merge(x, y, NodeSpec::new("xy")).unwrap();
    let m = g.find("xy").unwrap();
    assert_eq!(change.added_nodes, [m]);
    assert_eq!(g.incoming(m).len(), 1, "the two a -> edges dedupe");
    assert_eq!(g.outgoing(m).len(), 2, "xy -> c once, xy -> d");
    assert_eq!(change.copied_edges.len(), 5);

    let mut g = graph("a* -> x -> y; b* -> y");
    let before = snapshot(&g);
    assert_eq!(
        g.merge(1, 2, NodeSpec::new("m")).unwrap_err(),
        GraphError::MergeDependent {
            a: 1,
            b: 2,
            path: vec![1, 2]
        }
    );
    assert_eq!(
        g.merge(1, 1, NodeSpec::new("m")).unwrap_err(),
        GraphError::MergeSelf(1)
    );
    assert_eq!(snapshot(&g), before);
    // Two entry nodes are siblings (no predecessors); the merged node must be an entry too.
    assert!(g.merge(0, 3, NodeSpec::new("m").entry()).is_ok());
}

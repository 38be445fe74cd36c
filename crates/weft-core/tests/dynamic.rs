//! The dynamic graph: the merge rule, atomic plans, and a scope held open while idle.

mod common;

use NodeState::*;
use Outcome::{Failed as F, Succeeded as S};
use common::{Driver, graph};
use weft_core::{
    EdgeKind, Event, GraphError, Join, Mutation, NodeSpec, NodeState, Outcome, Plan, PlanEdge,
    PlanNode, ProtocolError, Unresolved,
};

fn task(id: &str, after: &[&str]) -> PlanNode {
    PlanNode {
        spec: NodeSpec::new(id),
        after: after
            .iter()
            .map(|&from| PlanEdge::new(from, EdgeKind::Sequence))
            .collect(),
    }
}

#[test]
fn merge_two_independent_nodes_with_different_predecessors() {
    // x and y are not siblings (a -> x, b -> y) but neither reaches the other.
    let mut d = Driver::new(
        "a* -> x -> c; b* -> y -> c",
        2,
        weft_core::FailurePolicy::Isolate,
    );
    d.begin();
    let m = Mutation::Merge {
        a: d.n("x"),
        b: d.n("y"),
        spec: NodeSpec::new("xy"),
    };
    assert_eq!(d.apply(Event::Mutate(m)), Vec::<String>::new());
    assert_eq!(d.settle("a", S), Vec::<String>::new(), "xy waits for b too");
    assert_eq!(d.settle("b", S), ["start xy"]);
    assert_eq!(d.settle("xy", S), ["start c"]);
    assert_eq!(d.settle("c", S), ["finished"]);
}

#[test]
fn merge_of_a_node_with_one_it_reaches_is_refused_and_changes_nothing() {
    let mut d = Driver::isolate("a* -> x -> z -> y; a -> y");
    d.begin();
    let (x, y, z) = (d.n("x"), d.n("y"), d.n("z"));
    let before = format!("{:?}", d.s);
    let m = Mutation::Merge {
        a: y,
        b: x,
        spec: NodeSpec::new("m"),
    };
    assert_eq!(
        d.try_apply(Event::Mutate(m)),
        Err(ProtocolError::Graph(GraphError::MergeDependent {
            a: y,
            b: x,
            path: vec![x, z, y]
        }))
    );
    assert_eq!(format!("{:?}", d.s), before);
}

#[test]
fn merge_of_a_sequence_child_and_an_on_failure_child_is_refused() {
    // s runs when a succeeds, h when it fails: under `join: all` the merged node would
    // need both, so it could never run.
    let mut g = graph("a* -> s; a !> h");
    let (a, s, h) = (
        g.find("a").unwrap(),
        g.find("s").unwrap(),
        g.find("h").unwrap(),
    );
    let before = format!("{g:?}");
    assert_eq!(
        g.merge(s, h, NodeSpec::new("sh")).unwrap_err(),
        GraphError::JoinNeverMet {
            id: "sh".into(),
            needed: 2,
            from: a
        }
    );
    assert_eq!(format!("{g:?}"), before);
    // `join: any` runs on either outcome: accepted.
    let m = g.merge(s, h, NodeSpec::new("sh").join(Join::Any)).unwrap();
    assert_eq!(g.incoming(m.added_nodes[0]).len(), 2);

    // The same rule for an edge added into a node.
    let mut g = graph("a* -> s");
    let (a, s) = (g.find("a").unwrap(), g.find("s").unwrap());
    let on_failure = weft_core::EdgeSpec::new(a, s, EdgeKind::OnFailure);
    assert!(matches!(
        g.add_edge(on_failure),
        Err(GraphError::JoinNeverMet { .. })
    ));
}

#[test]
fn add_edge_against_the_order_moves_only_the_region_between_its_ends() {
    // b1 -> b2 are ranked before c1 -> c2; the edge c2 -> b2 moves b2 after c2.
    let mut g = graph("a*; b1* -> b2; c1* -> c2; z*");
    let ids = |g: &weft_core::WorkGraph| -> Vec<String> {
        g.order().map(|n| g.node(n).id.clone()).collect()
    };
    assert_eq!(ids(&g), ["a", "b1", "b2", "c1", "c2", "z"]);
    let (a, z) = (g.find("a").unwrap(), g.find("z").unwrap());
    let (rank_a, rank_z) = (g.rank(a), g.rank(z));
    let (c2, b1) = (g.find("c2").unwrap(), g.find("b1").unwrap());
    let mut b1_entry = g.clone();
    assert!(matches!(
        b1_entry.add_edge(weft_core::EdgeSpec::new(c2, b1, EdgeKind::Sequence)),
        Err(GraphError::EntryHasIncoming { .. })
    ));
    let b2 = g.find("b2").unwrap();
    let change = g
        .add_edge(weft_core::EdgeSpec::new(c2, b2, EdgeKind::Sequence))
        .unwrap();
    let order = ids(&g);
    let pos = |id: &str| order.iter().position(|x| x == id).unwrap();
    assert!(pos("c2") < pos("b2") && pos("c1") < pos("c2") && pos("b1") < pos("b2"));
    assert_eq!(
        (g.rank(a), g.rank(z)),
        (rank_a, rank_z),
        "a and z did not move"
    );
    let moved: Vec<usize> = change.reranked.iter().map(|&(n, _)| n).collect();
    assert_eq!(order, ["a", "b1", "c1", "c2", "b2", "z"]);
    moved
        .iter()
        .for_each(|&n| assert!(n != a && n != z && n != b1));
    assert_eq!(
        moved.len(),
        3,
        "b2, c1 and c2 share their labels anew: {moved:?}"
    );
    // Closing a cycle is refused with the cycle, in path order.
    assert_eq!(
        g.add_edge(weft_core::EdgeSpec::new(
            b2,
            g.find("c1").unwrap(),
            EdgeKind::Sequence
        ))
        .unwrap_err(),
        GraphError::EntryHasIncoming {
            node: g.find("c1").unwrap(),
            edge: g.edge_count()
        }
    );
    let before = format!("{g:?}");
    assert_eq!(
        g.add_edge(weft_core::EdgeSpec::new(b2, c2, EdgeKind::Sequence))
            .unwrap_err(),
        GraphError::Cycle {
            nodes: vec![b2, c2]
        }
    );
    assert_eq!(format!("{g:?}"), before);
}

#[test]
fn a_plan_with_one_unresolved_name_among_ten_thousand_creates_nothing() {
    let mut d = Driver::isolate("root*");
    d.begin();
    let mut nodes: Vec<PlanNode> = (0..10_000)
        .map(|i| {
            let after = if i == 0 {
                "root".to_string()
            } else {
                format!("t{}", i - 1)
            };
            task(&format!("t{i}"), &[after.as_str()])
        })
        .collect();
    nodes[5_000]
        .after
        .push(PlanEdge::new("t_missing", EdgeKind::Sequence));
    let before = format!("{:?}", d.s);
    let count = d.s.graph().node_count();
    let err = d
        .try_apply(Event::Mutate(Mutation::Plan(Plan {
            nodes: nodes.clone(),
        })))
        .unwrap_err();
    let ProtocolError::Graph(GraphError::Plan(plan)) = err else {
        panic!("expected a plan error, got {err:?}");
    };
    assert_eq!(
        plan.unresolved,
        [Unresolved {
            node: "t5000".into(),
            name: "t_missing".into()
        }]
    );
    assert!(plan.to_string().contains("`t_missing` (in `t5000`)"));
    assert_eq!(d.s.graph().node_count(), count, "nothing created");
    assert_eq!(format!("{:?}", d.s), before);

    // Without the bad name the whole plan goes in and runs in order.
    nodes[5_000].after.pop();
    d.apply(Event::Mutate(Mutation::Plan(Plan { nodes })));
    assert_eq!(d.s.graph().node_count(), count + 10_000);
    assert_eq!(d.settle("root", S), ["start t0"]);
    assert_eq!(d.settle("t0", S), ["start t1"]);
}

#[test]
fn a_plan_reports_every_problem_at_once() {
    let mut d = Driver::isolate("a* -> b");
    d.begin();
    let plan = Plan {
        nodes: vec![
            task("p", &["r"]),
            task("q", &["p", "nowhere"]),
            task("r", &["q"]),
            task("s", &["s"]),
            task("u", &["a", "gone"]),
            task("b", &["a"]),
            task("v", &["a"]),
        ],
    };
    let before = format!("{:?}", d.s);
    let err = d.try_apply(Event::Mutate(Mutation::Plan(plan.clone())));
    let Err(ProtocolError::Graph(GraphError::Plan(e))) = err else {
        panic!("expected a plan error, got {err:?}");
    };
    let names: Vec<&str> = e.unresolved.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["nowhere", "gone"]);
    assert_eq!(e.duplicate_ids, ["b"]);
    assert_eq!(e.cycles, [vec!["p", "q", "r"], vec!["s"]]);
    assert_eq!(format!("{:?}", d.s), before);

    // With the names resolved and the duplicate gone, the cycles remain.
    let mut plan = plan;
    plan.nodes[1].after.pop();
    plan.nodes[4].after.pop();
    plan.nodes.remove(5);
    let err = d.try_apply(Event::Mutate(Mutation::Plan(plan)));
    let Err(ProtocolError::Graph(GraphError::Plan(e))) = err else {
        panic!("expected a plan error, got {err:?}");
    };
    assert_eq!(e.cycles, [vec!["p", "q", "r"], vec!["s"]]);
    assert_eq!(format!("{:?}", d.s), before);
}

#[test]
fn a_plan_may_list_a_task_before_the_tasks_it_waits_for() {
    let mut d = Driver::isolate("a* -> b");
    d.begin();
    let plan = Plan {
        nodes: vec![task("late", &["early", "b"]), task("early", &["a"])],
    };
    assert_eq!(
        d.apply(Event::Mutate(Mutation::Plan(plan))),
        Vec::<String>::new()
    );
    assert_eq!(d.settle("a", S), ["start b", "start early"]);
    assert_eq!(
        d.settle("early", S),
        Vec::<String>::new(),
        "late waits for b too"
    );
    assert_eq!(d.settle("b", S), ["start late"]);
    assert_eq!(d.settle("late", S), ["finished"]);
}

#[test]
fn a_held_scope_stays_open_while_idle_and_finishes_on_release() {
    let mut d = Driver::isolate("a*");
    d.apply(Event::Hold);
    d.begin();
    assert_eq!(d.settle("a", S), Vec::<String>::new(), "idle, but held");
    assert!(d.s.is_held() && d.s.is_idle() && !d.s.is_finished());
    // Work added while idle runs.
    let add = Mutation::Plan(Plan {
        nodes: vec![task("b", &["a"])],
    });
    assert_eq!(d.apply(Event::Mutate(add)), ["start b"]);
    assert_eq!(d.settle("b", F), Vec::<String>::new());
    assert_eq!(d.apply(Event::Release), ["finished"]);
    assert_eq!(d.try_apply(Event::Hold), Err(ProtocolError::Finished));

    // A release while work is running finishes when it ends.
    let mut d = Driver::isolate("a*");
    d.apply(Event::Hold);
    d.begin();
    assert_eq!(d.apply(Event::Release), Vec::<String>::new());
    assert_eq!(d.settle("a", S), ["finished"]);

    // Cancel ends a held scope.
    let mut d = Driver::isolate("a* -> b");
    d.apply(Event::Hold);
    d.begin();
    assert_eq!(d.apply(Event::Cancel), Vec::<String>::new());
    assert_eq!(d.state("b"), Cancelled);
    assert_eq!(d.settle("a", Outcome::Cancelled), ["finished"]);
}

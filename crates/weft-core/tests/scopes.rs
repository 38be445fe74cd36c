//! Scope instances: the address syntax round-trips and rejects what is not an address, and
//! the [`ScopeTree`] keeps a container running until its fragment instances finish, opens
//! instances only under running containers within the depth limit, and cancels innermost
//! first.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;

use common::graph;
use proptest::prelude::*;
use weft_core::{
    Action, Event, NodeAddr, Options, Outcome, ScopeId, ScopePath, ScopeTree, TreeError,
};

fn sched(text: &str) -> weft_core::Scheduler {
    weft_core::Scheduler::new(graph(text), Options::default())
}

fn settle(node: usize) -> Event {
    Event::Settled {
        node,
        outcome: Outcome::Succeeded,
        guards: vec![],
    }
}

#[test]
fn addresses_print_and_parse() {
    let a = NodeAddr::parse("fix_loop[2].run_tests").unwrap();
    assert_eq!(a.node, "run_tests");
    assert_eq!(a.scope.depth(), 1);
    assert_eq!(a.scope.steps()[0].container, "fix_loop");
    assert_eq!(a.scope.steps()[0].index, Some(2));
    assert_eq!(a.to_string(), "fix_loop[2].run_tests");

    let nested = NodeAddr::parse("docs[0].audit.check-links").unwrap();
    assert_eq!(nested.scope.to_string(), "docs[0].audit");
    assert_eq!(nested.scope.steps()[1].index, None);

    let root = NodeAddr::parse("build").unwrap();
    assert!(root.scope.is_root());
    assert_eq!(root, NodeAddr::root("build"));
    assert_eq!(root.to_string(), "build");
}

#[test]
fn malformed_addresses_are_refused_with_the_reason() {
    for (text, why) in [
        ("", "node id"),
        ("a..b", "node id"),
        ("a[2]", "node id"),
        ("a[02].b", "leading zeros"),
        ("a[].b", "decimal"),
        ("a[-1].b", "decimal"),
        ("a[1.b", "end with"),
        ("a[99999999999].b", "decimal"),
        ("A.b", "node id"),
        ("a.b-", "node id"),
        ("_a.b", "node id"),
    ] {
        let err = NodeAddr::parse(text).unwrap_err();
        assert!(err.to_string().contains(why), "{text}: {err}");
    }
}

fn id_strategy() -> impl Strategy<Value = String> {
    "[a-z0-9]([a-z0-9_-]{0,6}[a-z0-9])?"
}

proptest! {
    #[test]
    fn every_address_round_trips(
        steps in proptest::collection::vec((id_strategy(), proptest::option::of(0u32..5000)), 0..4),
        node in id_strategy(),
    ) {
        let mut scope = ScopePath::root();
        for (c, i) in &steps {
            scope = scope.child(c, *i);
        }
        let addr = NodeAddr { scope, node };
        let text = addr.to_string();
        prop_assert_eq!(NodeAddr::parse(&text).unwrap(), addr);
    }

    #[test]
    fn parsing_never_panics(text in "[a-z0-9_.\\[\\]-]{0,24}") {
        let _ = NodeAddr::parse(&text);
    }
}

#[test]
fn a_container_stays_running_until_its_fragment_instances_finish() {
    // Root: prep -> fix_loop -> ship. The loop body: run_tests -> repair.
    let mut tree = ScopeTree::new(sched("prep* -> fix_loop -> ship"), 5);
    tree.apply(ScopeId::ROOT, &Event::Begin).unwrap();
    tree.apply(ScopeId::ROOT, &settle(0)).unwrap();
    let loop_node = 1;

    let it0 = tree
        .open(
            ScopeId::ROOT,
            loop_node,
            Some(0),
            sched("run_tests* -> repair"),
        )
        .unwrap();
    assert_eq!(tree.path(it0).unwrap().to_string(), "fix_loop[0]");
    assert_eq!(
        tree.addr(it0, 0).unwrap().to_string(),
        "fix_loop[0].run_tests"
    );
    let started = tree.apply(it0, &Event::Begin).unwrap();
    assert_eq!(started[0].scope, it0);
    assert_eq!(started[0].action, Action::Start { node: 0 });

    // The loop node cannot settle while iteration 0 runs.
    let err = tree.apply(ScopeId::ROOT, &settle(loop_node)).unwrap_err();
    assert!(
        matches!(&err, TreeError::FragmentUnfinished { child, .. } if child.to_string() == "fix_loop[0]"),
        "{err}"
    );
    assert!(err.to_string().contains("fix_loop[0]"));

    tree.apply(it0, &settle(0)).unwrap();
    let done = tree.apply(it0, &settle(1)).unwrap();
    assert!(matches!(
        done.last().unwrap().action,
        Action::Finished { .. }
    ));

    // A second iteration, a fresh instance with its own states.
    let it1 = tree
        .open(
            ScopeId::ROOT,
            loop_node,
            Some(1),
            sched("run_tests* -> repair"),
        )
        .unwrap();
    assert_eq!(tree.children(ScopeId::ROOT, loop_node), &[it0, it1]);
    assert_eq!(
        tree.find(&ScopePath::parse("fix_loop[1]").unwrap()),
        Some(it1)
    );
    assert_eq!(tree.parent(it1), Some((ScopeId::ROOT, loop_node)));
    tree.apply(it1, &Event::Begin).unwrap();
    tree.apply(it1, &settle(0)).unwrap();
    tree.apply(it1, &settle(1)).unwrap();

    // Now the container settles and the root goes on.
    let next = tree.apply(ScopeId::ROOT, &settle(loop_node)).unwrap();
    assert_eq!(next[0].action, Action::Start { node: 2 });
}

#[test]
fn instances_open_only_under_running_containers_at_fresh_paths_within_the_depth() {
    let mut tree = ScopeTree::new(sched("a* -> m"), 2);
    tree.apply(ScopeId::ROOT, &Event::Begin).unwrap();
    // `m` is pending: it cannot open anything.
    let err = tree
        .open(ScopeId::ROOT, 1, Some(0), sched("x*"))
        .unwrap_err();
    assert!(
        matches!(err, TreeError::ContainerNotRunning { node: 1, .. }),
        "{err}"
    );
    tree.apply(ScopeId::ROOT, &settle(0)).unwrap();

    let item0 = tree
        .open(ScopeId::ROOT, 1, Some(0), sched("inner* -> y"))
        .unwrap();
    let err = tree
        .open(ScopeId::ROOT, 1, Some(0), sched("x*"))
        .unwrap_err();
    assert_eq!(
        err,
        TreeError::AlreadyOpen(ScopePath::parse("m[0]").unwrap())
    );
    let err = tree.open(ScopeId::ROOT, 7, None, sched("x*")).unwrap_err();
    assert!(matches!(err, TreeError::Protocol { .. }), "{err}");

    // Depth 2 is allowed, 3 is not.
    tree.apply(item0, &Event::Begin).unwrap();
    let sub = tree.open(item0, 0, None, sched("deep*")).unwrap();
    assert_eq!(tree.path(sub).unwrap().to_string(), "m[0].inner");
    tree.apply(sub, &Event::Begin).unwrap();
    let err = tree.open(sub, 0, Some(0), sched("x*")).unwrap_err();
    assert!(
        matches!(
            err,
            TreeError::TooDeep {
                depth: 3,
                max: 2,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(tree.len(), 3, "failed opens leave nothing behind");
    assert!(tree.apply(ScopeId(9), &Event::Begin).is_err());
}

#[test]
fn cancelling_a_scope_cancels_its_unfinished_descendants_innermost_first() {
    let mut tree = ScopeTree::new(sched("m*; other*"), 5);
    tree.apply(ScopeId::ROOT, &Event::Begin).unwrap();
    let item0 = tree
        .open(ScopeId::ROOT, 0, Some(0), sched("a* -> b"))
        .unwrap();
    let item1 = tree.open(ScopeId::ROOT, 0, Some(1), sched("a*")).unwrap();
    tree.apply(item0, &Event::Begin).unwrap();
    tree.apply(item1, &Event::Begin).unwrap();
    tree.apply(item1, &settle(0)).unwrap(); // item 1 finished already

    let actions = tree.apply(ScopeId::ROOT, &Event::Cancel).unwrap();
    let scopes: Vec<ScopeId> = actions.iter().map(|a| a.scope).collect();
    assert!(
        scopes.iter().all(|s| *s == item0 || *s == ScopeId::ROOT),
        "a finished instance is left alone: {actions:?}"
    );
    let first_root = scopes.iter().position(|s| *s == ScopeId::ROOT);
    let last_item = scopes.iter().rposition(|s| *s == item0);
    assert!(
        last_item < first_root || first_root.is_none(),
        "{actions:?}"
    );
    // The item's `b` never started: the cancel skipped or cancelled it; `a` still runs and
    // settles cancelled, which finishes the item.
    let done = tree
        .apply(
            item0,
            &Event::Settled {
                node: 0,
                outcome: Outcome::Cancelled,
                guards: vec![],
            },
        )
        .unwrap();
    assert!(matches!(
        done.last().unwrap().action,
        Action::Finished { .. }
    ));
    assert!(tree.scheduler(item0).unwrap().is_finished());
}

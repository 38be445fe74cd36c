//! Property tests: random DAGs driven by a random but legal environment (it settles running
//! nodes, answers `when`s, pauses and resumes humans, sometimes cancels, and in the second
//! property also cancels, splits, merges and adds nodes). Checked after every event:
//! capacity, concurrency groups, joins met before a start, at most one start per node, and
//! that a rejected mutation changed nothing; at the end: `Finished` once and last, every
//! node terminal, and a replay of the recorded events yields the same actions.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic in a helper is a test failure with a message"
)]

use proptest::prelude::*;
use std::collections::HashSet;
use weft_core::{
    Action, EdgeKind, EdgeSpec, Event, FailurePolicy, GraphBuilder, Join, Mutation, NewEdge,
    NodeSpec, NodeState, Options, Outcome, ProtocolError, Resolution, Scheduler, SplitShape,
    WorkGraph,
};

/// A node at a topological position: (entry, join choice, n_of count, has_when, group).
type NodeGen = (bool, u8, u32, bool, Option<u8>);
/// An edge between positions (made forward by ordering the two): (a, b, kind, guarded).
type EdgeGen = (usize, usize, u8, bool);

fn build(nodes: &[NodeGen], edges: &[EdgeGen], perm: &[usize]) -> WorkGraph {
    let n = nodes.len();
    // Edges go from a lower to a higher topological position, so the graph is acyclic;
    // `perm` maps positions to declaration indices so rank and declaration order differ.
    let mut specs: Vec<(usize, usize, EdgeKind, bool)> = Vec::new();
    for &(a, b, kind, guarded) in edges {
        let (a, b) = (a % n, b % n);
        if a == b {
            continue;
        }
        let (from, to) = (a.min(b), a.max(b));
        if nodes[to].0 {
            continue; // entry nodes have no incoming edges
        }
        let (kind, guarded) = match kind % 3 {
            0 => (EdgeKind::Sequence, false),
            1 => (EdgeKind::Conditional, true),
            _ => (EdgeKind::OnFailure, guarded),
        };
        specs.push((from, to, kind, guarded));
    }
    let mut declared: Vec<usize> = vec![0; n]; // declaration index → position
    for (pos, &decl) in perm.iter().enumerate() {
        declared[decl] = pos;
    }
    let mut b = GraphBuilder::new();
    for &pos in &declared {
        let (entry, join, count, has_when, group) = nodes[pos];
        let incoming = specs.iter().filter(|s| s.1 == pos).count() as u32;
        // Most sources are entry nodes, so runs get long; the rest test unreachable nodes.
        let entry = entry || (incoming == 0 && count != 0);
        let join = match join % 3 {
            _ if incoming == 0 => Join::All,
            0 => Join::All,
            1 => Join::Any,
            _ => Join::NOf(1 + count % incoming),
        };
        b.node(NodeSpec {
            id: format!("n{pos}"),
            join,
            has_when,
            concurrency_group: group.map(|g| format!("g{}", g % 3)),
            entry,
        });
    }
    for (from, to, kind, guarded) in specs {
        b.edge(EdgeSpec {
            from: perm[from],
            to: perm[to],
            kind,
            guarded,
        });
    }
    b.build().unwrap()
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn join_met(s: &Scheduler, node: usize) -> bool {
    let g = s.graph();
    let inc = g.incoming(node);
    let active = inc
        .iter()
        .filter(|&&e| s.resolution(e) == Resolution::Active)
        .count();
    match g.node(node).join {
        Join::All => active == inc.len(),
        Join::Any => active >= 1,
        Join::NOf(n) => active >= n as usize,
    }
}

/// A legal mutation for the current state, or `None` when no node fits.
fn mutation(s: &Scheduler, rng: &mut Rng, fresh_id: &mut usize) -> Option<Mutation> {
    let g = s.graph();
    let unstarted: Vec<usize> = g
        .order()
        .iter()
        .copied()
        .filter(|&n| matches!(s.state(n), NodeState::Pending | NodeState::Ready))
        .collect();
    let mut id = || {
        *fresh_id += 1;
        format!("m{fresh_id}")
    };
    match rng.below(4) {
        3 => {
            // Two mergeable siblings: unstarted, no `when` outstanding, same predecessors.
            let parents = |n: usize| {
                let mut p: Vec<usize> = g.incoming(n).iter().map(|&e| g.edge(e).from).collect();
                p.sort_unstable();
                p.dedup();
                p
            };
            let ok: Vec<usize> = unstarted
                .into_iter()
                .filter(|&n| !s.when_pending(n))
                .collect();
            let pairs: Vec<(usize, usize)> = ok
                .iter()
                .flat_map(|&a| ok.iter().map(move |&b| (a, b)))
                .filter(|&(a, b)| a < b && parents(a) == parents(b))
                .collect();
            let &(a, b) = pairs.get(rng.below(pairs.len().max(1)))?;
            let (na, nb) = (g.node(a), g.node(b));
            // A join valid for the merged edge set: n_of needs n ≤ incoming, which the
            // union keeps for the larger of the two.
            let join = match (na.join, nb.join) {
                (Join::NOf(x), Join::NOf(y)) => Join::NOf(x.min(y)),
                (j, _) => j,
            };
            let mut spec = NodeSpec::new(id()).join(join);
            spec.entry = na.entry;
            spec.concurrency_group = na.concurrency_group.clone();
            Some(Mutation::Merge { a, b, spec })
        }
        0 => {
            let node = *unstarted.get(rng.below(unstarted.len().max(1)))?;
            Some(Mutation::CancelNode { node })
        }
        1 => {
            let splittable: Vec<usize> = unstarted
                .into_iter()
                .filter(|&n| !s.when_pending(n))
                .collect();
            let node = *splittable.get(rng.below(splittable.len().max(1)))?;
            let orig = g.node(node).clone();
            let shape = if rng.below(2) == 0 {
                SplitShape::Chain
            } else {
                SplitShape::Fan
            };
            let parts = (0..1 + rng.below(3))
                .map(|i| NodeSpec {
                    id: id(),
                    // A chain's later parts have one incoming edge.
                    join: if i == 0 || shape == SplitShape::Fan {
                        orig.join
                    } else {
                        Join::All
                    },
                    has_when: rng.below(4) == 0,
                    concurrency_group: orig.concurrency_group.clone(),
                    entry: orig.entry && (i == 0 || shape == SplitShape::Fan),
                })
                .collect();
            Some(Mutation::Split { node, parts, shape })
        }
        _ => {
            let live = g.order();
            let incoming: Vec<NewEdge> = (0..rng.below(3))
                .map(|_| NewEdge {
                    from: live[rng.below(live.len())],
                    kind: if rng.below(3) == 0 {
                        EdgeKind::OnFailure
                    } else {
                        EdgeKind::Sequence
                    },
                    guarded: false,
                })
                .collect();
            let join = if rng.below(2) == 0 {
                Join::Any
            } else {
                Join::All
            };
            let mut spec = NodeSpec::new(id()).join(join);
            spec.entry = incoming.is_empty();
            Some(Mutation::AddNode { spec, incoming })
        }
    }
}

/// The environment's next move: a random legal event for the current state.
fn choose(s: &Scheduler, rng: &mut Rng, fresh_id: &mut usize, mutate: bool) -> Event {
    let g = s.graph();
    let busy: Vec<usize> = (0..g.node_count())
        .filter(|&n| s.state(n).is_started())
        .collect();
    let whens: Vec<usize> = (0..g.node_count()).filter(|&n| s.when_pending(n)).collect();
    assert!(
        !whens.is_empty() || !busy.is_empty(),
        "stuck: nothing to answer but not finished"
    );
    let roll = rng.below(200);
    let summary = s.summary();
    let open = !(summary.halted || summary.cancelled);
    if roll == 0 {
        Event::Cancel
    } else if let Some(m) = (mutate && open && roll < 20)
        .then(|| mutation(s, rng, fresh_id))
        .flatten()
    {
        Event::Mutate(m)
    } else if !whens.is_empty() && (busy.is_empty() || roll < 60) {
        Event::WhenResolved {
            node: whens[rng.below(whens.len())],
            value: rng.below(3) > 0,
        }
    } else {
        let node = busy[rng.below(busy.len())];
        match (s.state(node), rng.below(10)) {
            (NodeState::Running, 0) => Event::AwaitingHuman { node },
            (NodeState::AwaitingHuman, r) if r < 5 => Event::HumanResumed { node },
            _ => {
                let outcome = match rng.below(20) {
                    0..14 => Outcome::Succeeded,
                    14..16 => Outcome::Failed,
                    16 => Outcome::Blocked,
                    17 | 18 => Outcome::Skipped,
                    _ => Outcome::Cancelled,
                };
                let guards = g
                    .outgoing(node)
                    .iter()
                    .filter(|&&e| g.edge(e).guarded)
                    .map(|&e| (e, rng.below(4) != 0))
                    .collect();
                Event::Settled {
                    node,
                    outcome,
                    guards,
                }
            }
        }
    }
}

fn run(graph: WorkGraph, options: Options, seed: u64, mutate: bool) {
    let mut rng = Rng(seed | 1);
    let mut s = Scheduler::new(graph.clone(), options);
    let (mut events, mut actions) = (Vec::new(), Vec::new());
    let mut started: HashSet<usize> = HashSet::new();
    let mut when_true: HashSet<usize> = HashSet::new();
    let mut finished = 0;
    let mut fresh_id = 0;
    let mut event = Event::Begin;
    for _step in 0..10_000 {
        let before = matches!(event, Event::Mutate(_)).then(|| format!("{s:?}"));
        let out = match s.apply(&event) {
            Ok(out) => out,
            // The environment may propose a merge the graph rejects (a successor's n_of
            // would exceed its deduplicated edges): it must change nothing.
            Err(ProtocolError::Graph(_)) if before.is_some() => {
                assert_eq!(
                    before,
                    Some(format!("{s:?}")),
                    "a rejected mutation changed the state"
                );
                event = choose(&s, &mut rng, &mut fresh_id, mutate);
                continue;
            }
            Err(e) => panic!("{event:?}: {e}"),
        };
        if let Event::WhenResolved { node, value: true } = event {
            when_true.insert(node);
        }
        let g = s.graph();
        for (i, a) in out.iter().enumerate() {
            match a {
                Action::Start { node } => {
                    assert!(started.insert(*node), "node {node} started twice");
                    assert!(
                        join_met(&s, *node) || g.node(*node).entry,
                        "node {node} started before its join"
                    );
                    assert!(!g.node(*node).has_when || when_true.contains(node));
                }
                Action::Skipped { node, .. } => assert!(!started.contains(node)),
                Action::Finished { .. } => {
                    finished += 1;
                    assert_eq!(i, out.len() - 1, "Finished is the last action");
                }
                Action::EvaluateWhen { .. } => {}
            }
        }
        let busy: Vec<usize> = (0..g.node_count())
            .filter(|&n| s.state(n).is_started())
            .collect();
        // A node awaiting a human holds no slot; one a person answered resumes at once,
        // even over capacity, so the bound holds whenever the scheduler starts a node.
        let running = busy
            .iter()
            .filter(|&&n| s.state(n) == NodeState::Running)
            .count();
        if out.iter().any(|a| matches!(a, Action::Start { .. })) {
            assert!(running <= options.max_parallel, "over capacity: {busy:?}");
        }
        let mut groups: Vec<&str> = busy
            .iter()
            .filter_map(|&n| g.node(n).concurrency_group.as_deref())
            .collect();
        let before = groups.len();
        groups.sort_unstable();
        groups.dedup();
        assert_eq!(groups.len(), before, "two nodes of one group run at once");
        events.push(event);
        actions.push(out);
        if s.is_finished() {
            break;
        }
        event = choose(&s, &mut rng, &mut fresh_id, mutate);
    }
    assert_eq!(finished, 1, "Finished exactly once");
    for n in 0..s.graph().node_count() {
        assert!(s.state(n).is_terminal(), "node {n} ends {:?}", s.state(n));
    }
    let mut fresh = Scheduler::new(graph, options);
    for (event, expected) in events.iter().zip(&actions) {
        assert_eq!(
            &fresh.apply(event).unwrap(),
            expected,
            "replay diverged at {event:?}"
        );
    }
}

fn case() -> impl Strategy<Value = (Vec<NodeGen>, Vec<EdgeGen>, Vec<usize>, usize, u8, u64)> {
    (1usize..=30).prop_flat_map(|n| {
        (
            prop::collection::vec(
                (
                    prop::bool::weighted(0.2),
                    0u8..3,
                    0u32..4,
                    prop::bool::weighted(0.2),
                    prop::option::weighted(0.3, 0u8..3),
                ),
                n,
            ),
            prop::collection::vec((0..n, 0..n, 0u8..3, any::<bool>()), 0..=(2 * n)),
            Just((0..n).collect::<Vec<usize>>()).prop_shuffle(),
            1usize..=4,
            0u8..3,
            any::<u64>(),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn random_runs_keep_every_invariant((nodes, edges, perm, max_parallel, policy, seed) in case()) {
        let graph = build(&nodes, &edges, &perm);
        let on_node_failure = [FailurePolicy::Halt, FailurePolicy::Isolate, FailurePolicy::Continue][policy as usize];
        run(graph, Options { max_parallel, on_node_failure }, seed, false);
    }

    #[test]
    fn random_runs_with_mutations_keep_every_invariant((nodes, edges, perm, max_parallel, policy, seed) in case()) {
        let graph = build(&nodes, &edges, &perm);
        let on_node_failure = [FailurePolicy::Halt, FailurePolicy::Isolate, FailurePolicy::Continue][policy as usize];
        run(graph, Options { max_parallel, on_node_failure }, seed, true);
    }
}

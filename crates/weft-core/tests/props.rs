//! Property tests: random DAGs driven by a random but legal environment (it settles running
//! nodes, answers `when`s, pauses and resumes humans, sometimes cancels, and in the second
//! property also cancels, splits, merges, adds nodes, edges and whole plans — some of which
//! the graph refuses — and holds the scope open). Checked after every event: the graph's
//! invariants (acyclic, no dangling edge, the order and adjacency exact), capacity,
//! concurrency groups, joins met before a start, at most one start per node, and that a
//! refused mutation changed nothing; at the end: `Finished` once and last, every node
//! terminal, and a replay of the recorded events yields the same actions.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic in a helper is a test failure with a message"
)]

use proptest::prelude::*;
use std::collections::HashSet;
use weft_core::{
    Action, EdgeKind, EdgeSpec, Event, FailurePolicy, GraphBuilder, Join, Mutation, NewEdge,
    NodeSpec, NodeState, Options, Outcome, Plan, PlanEdge, PlanNode, ProtocolError, Resolution,
    Scheduler, SplitShape, WorkGraph,
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
        .filter(|&n| matches!(s.state(n), NodeState::Pending | NodeState::Ready))
        .collect();
    let mut id = || {
        *fresh_id += 1;
        format!("m{fresh_id}")
    };
    match rng.below(6) {
        3 => {
            // Two unstarted nodes with no `when` outstanding. The graph refuses (and must
            // then change nothing) a pair where one reaches the other, or whose merged node
            // could never run or leaves a successor's n_of unsatisfiable.
            let ok: Vec<usize> = unstarted
                .into_iter()
                .filter(|&n| !s.when_pending(n))
                .collect();
            if ok.len() < 2 {
                return None;
            }
            let a = ok[rng.below(ok.len())];
            let b = ok[rng.below(ok.len())];
            if a == b {
                return None;
            }
            let (na, nb) = (g.node(a), g.node(b));
            let join = match (na.join, nb.join) {
                (Join::NOf(x), Join::NOf(y)) => Join::NOf(x.min(y)),
                (j, _) => j,
            };
            let mut spec = NodeSpec::new(id()).join(join);
            spec.entry = na.entry && nb.entry;
            spec.concurrency_group = na.concurrency_group.clone();
            Some(Mutation::Merge { a, b, spec })
        }
        4 => {
            // An edge into a pending node from any live node: the graph refuses a cycle.
            let pending: Vec<usize> = g
                .order()
                .filter(|&n| s.state(n) == NodeState::Pending && !g.node(n).entry)
                .collect();
            let to = *pending.get(rng.below(pending.len().max(1)))?;
            let live: Vec<usize> = g.order().collect();
            let from = live[rng.below(live.len())];
            let kind = if rng.below(4) == 0 {
                EdgeKind::OnFailure
            } else {
                EdgeKind::Sequence
            };
            Some(Mutation::AddEdge {
                from,
                to,
                kind,
                guarded: false,
            })
        }
        5 => {
            // A plan of a few tasks after existing nodes or one another, in any order; now
            // and then with a name nothing has, or a cycle: refused whole.
            let live: Vec<usize> = g.order().collect();
            let first = *fresh_id;
            let count = 1 + rng.below(4);
            *fresh_id += count;
            let nodes = (0..count)
                .map(|i| {
                    let after = (0..rng.below(3))
                        .map(|_| {
                            let from = match rng.below(12) {
                                0 => "no_such_task".to_string(),
                                1..5 => format!("m{}", first + 1 + rng.below(count)),
                                _ => g.node(live[rng.below(live.len())]).id.clone(),
                            };
                            let kind = if rng.below(4) == 0 {
                                EdgeKind::OnFailure
                            } else {
                                EdgeKind::Sequence
                            };
                            PlanEdge::new(from, kind)
                        })
                        .collect::<Vec<_>>();
                    let mut spec = NodeSpec::new(format!("m{}", first + 1 + i));
                    spec.entry = after.is_empty();
                    spec.join = if rng.below(2) == 0 {
                        Join::Any
                    } else {
                        Join::All
                    };
                    PlanNode { spec, after }
                })
                .collect();
            Some(Mutation::Plan(Plan { nodes }))
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
            let live: Vec<usize> = g.order().collect();
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
    let roll = rng.below(200);
    if s.is_held() && (roll < 10 || (whens.is_empty() && busy.is_empty())) {
        // A held scope that is idle waits for the environment: release it (sometimes
        // after adding more work).
        return Event::Release;
    }
    assert!(
        !whens.is_empty() || !busy.is_empty(),
        "stuck: nothing to answer but not finished"
    );
    let summary = s.summary();
    let open = !(summary.halted || summary.cancelled);
    if roll == 0 {
        Event::Cancel
    } else if mutate && roll == 1 {
        Event::Hold
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

/// The graph's invariants after any event: the order holds exactly the live nodes with
/// increasing ranks, every live edge joins live nodes and goes forward in the order
/// (acyclic), and the adjacency lists hold exactly the live edges.
fn check_graph(g: &WorkGraph) {
    let order: Vec<usize> = g.order().collect();
    assert_eq!(order.len(), g.live_count());
    assert!(
        order.windows(2).all(|w| g.rank(w[0]) < g.rank(w[1])),
        "ranks increase"
    );
    let live = (0..g.node_count()).filter(|&n| g.is_live(n)).count();
    assert_eq!(order.len(), live, "the order holds every live node");
    for n in 0..g.node_count() {
        assert_eq!(g.find(&g.node(n).id), Some(n));
        if !g.is_live(n) {
            assert_eq!(g.rank(n), u64::MAX);
            assert!(g.incoming(n).is_empty() && g.outgoing(n).is_empty());
        }
        for &e in g.incoming(n) {
            assert!(g.is_edge_live(e) && g.edge(e).to == n);
        }
        for &e in g.outgoing(n) {
            assert!(g.is_edge_live(e) && g.edge(e).from == n);
        }
    }
    for e in (0..g.edge_count()).filter(|&e| g.is_edge_live(e)) {
        let spec = g.edge(e);
        assert!(
            g.is_live(spec.from) && g.is_live(spec.to),
            "dangling edge {e}"
        );
        assert!(
            g.rank(spec.from) < g.rank(spec.to),
            "edge {e} goes backward"
        );
        assert!(g.incoming(spec.to).contains(&e) && g.outgoing(spec.from).contains(&e));
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
        check_graph(s.graph());
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

//! What a graph mutation costs the scheduler (issue 12): every figure is one or more
//! `Scheduler::apply(&Event::Mutate(..))` calls on a live scope, as a shell makes them.
//!
//! `cargo run --release -p weft-core --example mutation_cost [-- --quick]` prints a Markdown
//! tables for `docs/BENCHMARKS.md`. Whole workloads (10,000 tasks) report the CPU time of
//! the measuring thread (from `/proc/thread-self/schedstat`, which does not count other
//! processes on a shared machine) over 20 runs, per run, and the median wall time of a run.
//! Single operations on a graph of a million nodes are below that clock's tick, so they
//! report the median and the fastest wall time of 2,001 operations on different nodes.
//! Whatever a batch needs (plans, schedulers) is made before its clocks start and dropped
//! after they stop. `--quick` uses graphs ten times smaller.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark program: a failure is a panic with a message"
)]

use std::time::{Duration, Instant};
use weft_core::{
    EdgeKind, EdgeSpec, Event, GraphBuilder, Mutation, NewEdge, NodeSpec, Options, Plan, PlanEdge,
    PlanNode, Scheduler, SplitShape,
};

/// CPU time of this thread so far.
fn thread_cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    let ns: u64 = text
        .split_whitespace()
        .next()
        .and_then(|f| f.parse().ok())
        .expect("schedstat's first field");
    Duration::from_nanos(ns)
}

/// Runs `op` on every prepared item: (CPU of the whole batch, wall per item, sorted).
fn batch<S, T>(mut items: Vec<S>, mut op: impl FnMut(&mut S) -> T) -> (Duration, Vec<Duration>) {
    let mut walls = Vec::with_capacity(items.len());
    let mut outs = Vec::with_capacity(items.len());
    let cpu = thread_cpu();
    for item in &mut items {
        let start = Instant::now();
        outs.push(op(item));
        walls.push(start.elapsed());
    }
    let cpu = thread_cpu() - cpu;
    drop(outs);
    drop(items);
    walls.sort_unstable();
    (cpu, walls)
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 0.1 {
        format!("{:.1} µs", ms * 1e3)
    } else {
        format!("{ms:.2} ms")
    }
}

/// A whole workload: CPU per run (the batch's CPU over its runs), median wall per run.
fn row(what: &str, (cpu, walls): (Duration, Vec<Duration>), before: &str) {
    let per_run = cpu / walls.len() as u32;
    let median = walls[walls.len() / 2];
    println!("| {what} | {} | {} | {before} |", ms(per_run), ms(median));
}

/// One small operation, many times: its CPU is below the clock's tick, so the figures are
/// the median and the fastest wall time (a preemption moves neither much).
fn op_row(what: &str, (_, walls): (Duration, Vec<Duration>), before: &str) {
    let (median, fastest) = (walls[walls.len() / 2], walls[0]);
    println!("| {what} | {} | {} | {before} |", ms(median), ms(fastest));
}

/// A running scope over `layers × width` nodes: layer 0 are entries, every other node
/// waits on nodes `i` and `i + 1` of the layer before.
fn layered(layers: usize, width: usize) -> Scheduler {
    let mut b = GraphBuilder::with_capacity(layers * width, 2 * layers * width);
    for l in 0..layers {
        for i in 0..width {
            let spec = NodeSpec::new(format!("n{l}_{i}"));
            b.node(if l == 0 { spec.entry() } else { spec });
        }
    }
    for l in 1..layers {
        for i in 0..width {
            let to = l * width + i;
            b.edge(EdgeSpec::new((l - 1) * width + i, to, EdgeKind::Sequence));
            b.edge(EdgeSpec::new(
                (l - 1) * width + (i + 1) % width,
                to,
                EdgeKind::Sequence,
            ));
        }
    }
    let mut s = Scheduler::new(b.build().unwrap(), Options::default());
    s.apply(&Event::Begin).unwrap();
    s
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 10 } else { 1 };
    let tasks = 10_000 / scale;
    let runs = 20;
    println!(
        "| workload | CPU per run | wall per run (median) | Monomind, or weft before (issue 12) |"
    );
    println!("|---|---:|---:|---|");

    // 1. Tasks added one by one to a running scope, each after the previous.
    let adds = |s: &mut Scheduler| {
        let mut prev = 0;
        for i in 0..tasks {
            let add = Mutation::AddNode {
                spec: NodeSpec::new(format!("t{i}")),
                incoming: vec![NewEdge {
                    from: prev,
                    kind: EdgeKind::Sequence,
                    guarded: false,
                }],
            };
            s.apply(&Event::Mutate(add)).unwrap();
            prev = s.graph().node_count() - 1;
        }
    };
    row(
        &format!("add {tasks} tasks one by one (all of them; {runs} runs)"),
        batch((0..runs).map(|_| layered(1, 1)).collect(), adds),
        "Monomind 17.3 s CPU; weft before 15.5 s CPU",
    );

    // 2. One plan of 10,000 tasks: a chain, and 100 layers of 100 with two edges each.
    for (name, width) in [("a chain", 1), ("100 layers of 100", 100)] {
        let plan = |bad: bool| {
            let nodes: Vec<PlanNode> = (0..tasks)
                .map(|i| {
                    let after = if i < width {
                        vec![PlanEdge::new("n0_0", EdgeKind::Sequence)]
                    } else {
                        let prev = i - width;
                        let next = i - width + (i + 1) % width - i % width;
                        let mut after = vec![PlanEdge::new(format!("p{prev}"), EdgeKind::Sequence)];
                        if next != prev {
                            after.push(PlanEdge::new(format!("p{next}"), EdgeKind::Sequence));
                        }
                        after
                    };
                    PlanNode {
                        spec: NodeSpec::new(format!("p{i}")),
                        after,
                    }
                })
                .collect();
            // Listed last task first: the plan orders itself.
            let mut plan = Plan {
                nodes: nodes.into_iter().rev().collect(),
            };
            if bad {
                plan.nodes[tasks / 2]
                    .after
                    .push(PlanEdge::new("no_such_task", EdgeKind::Sequence));
            }
            (layered(1, 1), Event::Mutate(Mutation::Plan(plan)))
        };
        for bad in [false, true] {
            let items = (0..runs).map(|_| plan(bad)).collect();
            let took = batch(items, |(s, m)| {
                let result = s.apply(m);
                assert_eq!(result.is_ok(), !bad);
                result
            });
            let (what, before) = if bad {
                (
                    format!("one plan of {tasks} tasks, {name}, one unresolved name: refused"),
                    "Monomind leaves a partial plan",
                )
            } else {
                (
                    format!("one plan of {tasks} tasks, {name}, listed in reverse"),
                    "Monomind: O(n²) re-scan, a whole-graph cycle check per task",
                )
            };
            row(&format!("{what} ({runs} runs)"), took, before);
        }
    }

    // 3. Split and merge on a graph of a million nodes (1,000 layers of 1,000).
    let (layers, width) = (1_000 / scale, 1_000);
    let start = Instant::now();
    let mut s = layered(layers, width);
    let n = layers * width;
    println!();
    println!(
        "<!-- built and begun {n} nodes in {} -->",
        ms(start.elapsed())
    );
    println!(
        "| operation on a graph of {n} nodes | wall (median) | wall (fastest) | Monomind, or weft before (issue 12) |"
    );
    println!("|---|---:|---:|---|");
    let reps = if quick { 501 } else { 2_001 };
    let mut next_id = 0;
    let mut id = || {
        next_id += 1;
        format!("new{next_id}")
    };
    let node = |l: usize, i: usize| l * width + i;
    // Each kind of operation works in its own band of layers, on distinct nodes, so no
    // operation meets a node an earlier one retired.
    let band = layers / 10;
    let mid = layers / 2;
    let samples = |s: &mut Scheduler, ms: Vec<Mutation>, ok: bool| {
        let events: Vec<Event> = ms.into_iter().map(Event::Mutate).collect();
        batch(events, |m| {
            let result = s.apply(m);
            assert_eq!(result.is_ok(), ok, "{result:?}");
            result
        })
    };
    for (k, shape) in [SplitShape::Chain, SplitShape::Fan].into_iter().enumerate() {
        let ms = (0..reps)
            .map(|r| Mutation::Split {
                node: node(mid + k * band / 2 + r / width, r % width),
                parts: (0..3).map(|_| NodeSpec::new(id())).collect(),
                shape,
            })
            .collect();
        op_row(
            &format!("split into 3 ({shape:?}); {reps} splits"),
            samples(&mut s, ms, true),
            "—",
        );
    }
    let ms = (0..reps)
        .map(|r| Mutation::Merge {
            a: node(mid - band + r / 250, 2 * (r % 250)),
            b: node(mid - band + r / 250, 2 * (r % 250) + 500),
            spec: NodeSpec::new(id()),
        })
        .collect();
    op_row(
        &format!("merge two nodes of one layer; {reps} merges"),
        samples(&mut s, ms, true),
        "Monomind 39 ms at 100,000 nodes; weft before 76 ms, and 1.4 s at 1,000,000",
    );
    let ms = (0..reps)
        .map(|r| Mutation::Merge {
            // (l, c) feeds (l + 1, c) and (l + 1, c - 1), ranked before (l + 1, c + 500).
            a: node(mid - 3 * band + 2 * (r / 500), r % 500),
            b: node(mid - 3 * band + 2 * (r / 500) + 1, r % 500 + 500),
            spec: NodeSpec::new(id()),
        })
        .collect();
    op_row(
        &format!("merge across adjacent layers (order repaired); {reps} merges"),
        samples(&mut s, ms, true),
        "—",
    );
    let ms = (0..reps)
        .map(|r| Mutation::Merge {
            // (l, c) reaches (l + 2, c - 1) through (l + 1, c - 1).
            a: node(mid + 2 * band + r % band, 5 + r % 900),
            b: node(mid + 2 * band + r % band + 2, 4 + r % 900),
            spec: NodeSpec::new(id()),
        })
        .collect();
    op_row(
        &format!("merge refused (one reaches the other); {reps} merges"),
        samples(&mut s, ms, false),
        "Monomind: no check (the merge yields a cycle); weft before: the clone",
    );
}

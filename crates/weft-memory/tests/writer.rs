//! The single writer under concurrency: extractors in parallel through cloned handles, and
//! readers that only ever see whole commits.

#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{cand, reopen, store};
use weft_memory::{SubgraphQuery, Verdict};

#[test]
fn parallel_extractors_share_one_writer_and_lose_nothing() {
    let t = store();
    let threads: Vec<_> = (0..4)
        .map(|worker| {
            let memory = t.memory.clone();
            std::thread::spawn(move || {
                for batch in 0..10 {
                    let candidates = (0..25)
                        .map(|i| {
                            cand(
                                &format!("w{worker}"),
                                "emits",
                                &format!("item {batch}-{i}"),
                                &format!("c{worker}"),
                            )
                        })
                        .collect();
                    memory.ingest(candidates, 1).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(t.memory.stats().unwrap().candidates_staged, 1000);
    let promoted = t
        .memory
        .decide_all(Verdict::Promote, "alice", "bulk", 2)
        .unwrap();
    assert_eq!(promoted.len(), 1000);
    assert_eq!(t.memory.graph().current_edges(), 1000);
}

#[test]
fn readers_see_whole_commits_only() {
    let t = store();
    // Every commit promotes exactly 10 edges around one hub; a reader must never observe a
    // count that is not a multiple of 10, through the index or through a served subgraph.
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let memory = t.memory.clone();
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut observations = 0usize;
            let query = SubgraphQuery {
                seeds: vec!["hub".into()],
                hops: 1,
                max_edges: 100_000,
                max_tokens: usize::MAX,
                ..SubgraphQuery::default()
            };
            while !stop.load(Ordering::Relaxed) {
                let (count, version) = {
                    let graph = memory.graph();
                    (graph.current_edges(), graph.version())
                };
                assert_eq!(
                    count % 10,
                    0,
                    "a partial commit was visible at version {version}"
                );
                let served = memory.subgraph(&query).unwrap();
                assert_eq!(served.edges.len() % 10, 0, "partial commit in a subgraph");
                observations += 1;
            }
            observations
        })
    };
    for batch in 0..30 {
        let ids = t
            .memory
            .ingest(
                (0..10)
                    .map(|i| cand("hub", "links", &format!("n{batch}-{i}"), "c"))
                    .collect(),
                1,
            )
            .unwrap()
            .staged;
        t.memory
            .decide(ids, Verdict::Promote, "alice", "batch", 2)
            .unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let observations = reader.join().unwrap();
    assert!(observations > 0);
    assert_eq!(t.memory.graph().current_edges(), 300);
}

#[test]
fn a_failed_write_changes_neither_the_store_nor_the_index() {
    let t = store();
    let ids = t
        .memory
        .ingest(vec![cand("A", "p", "B", "c")], 1)
        .unwrap()
        .staged;
    let hash = t.memory.store_hash().unwrap();
    let version = t.memory.graph().version();
    // One good id and one unknown: the whole decision is refused and rolled back.
    let refused = t
        .memory
        .decide(vec![ids[0], 999], Verdict::Promote, "alice", "", 2);
    assert!(refused.is_err());
    assert_eq!(t.memory.store_hash().unwrap(), hash);
    assert_eq!(t.memory.graph().current_edges(), 0);
    assert_eq!(t.memory.graph().version(), version);
}

#[test]
fn the_index_rebuilt_on_open_serves_what_the_live_one_served() {
    let t = store();
    for i in 0..20 {
        common::fact(
            &t.memory,
            &format!("e{i}"),
            "next",
            &format!("e{}", i + 1),
            &format!("c{i}"),
        );
    }
    let query = SubgraphQuery {
        seeds: vec!["e0".into()],
        hops: 5,
        ..SubgraphQuery::default()
    };
    let live = t.memory.subgraph(&query).unwrap();
    assert_eq!(live.edges.len(), 5);
    let hash = t.memory.store_hash().unwrap();
    let t = reopen(t);
    let mut rebuilt = t.memory.subgraph(&query).unwrap();
    rebuilt.snapshot = live.snapshot;
    assert_eq!(rebuilt, live);
    assert_eq!(t.memory.store_hash().unwrap(), hash);
}

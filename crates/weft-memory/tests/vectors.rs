//! Vector recall over passages on a real store: embeddings stored and ranked by cosine, the
//! nearest passages seeding a subgraph (their edges at hop 0, never edges found by vector),
//! bad embeddings refused with nothing stored, a store made before the table gains it.
#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;

use common::{fact, reopen, store};
use weft_memory::{MemoryError, PassageVector, SubgraphQuery};

fn vector(chunk: &str, v: &[f32]) -> PassageVector {
    PassageVector {
        source: "doc".into(),
        chunk: chunk.into(),
        vector: v.to_vec(),
    }
}

#[test]
fn the_nearest_passages_seed_the_subgraph_and_survive_a_reopen() {
    let s = store();
    fact(&s.memory, "Hall", "born in", "Ashfield", "p1");
    fact(&s.memory, "Ashfield", "in state", "Massachusetts", "p2");
    fact(&s.memory, "Paris", "capital of", "France", "p3");
    let stored = s
        .memory
        .add_passage_vectors(vec![
            vector("p1", &[1.0, 0.0, 0.0]),
            vector("p2", &[0.6, 0.8, 0.0]),
            vector("p3", &[0.0, 0.0, 1.0]),
        ])
        .unwrap();
    assert_eq!(stored, 3);
    let s = reopen(s);
    // Cosine, not dot product: a longer vector in the same direction ranks the same.
    let near = s.memory.nearest_passages(&[2.0, 0.1, 0.0], 2).unwrap();
    let order: Vec<&str> = near.iter().map(|n| n.chunk.as_str()).collect();
    assert_eq!(order, ["p1", "p2"]);
    assert!(near[0].score > 0.99 && near[0].score <= 1.0, "{near:?}");
    assert!(near[1].score < near[0].score);

    // Seeds from the nearest passage only, no hops: exactly the edge that passage cites.
    let query = SubgraphQuery {
        hops: 0,
        ..SubgraphQuery::default()
    };
    let served = s.memory.subgraph_near(&query, &[0.0, 0.1, 3.0], 1).unwrap();
    assert_eq!(served.passages, ["doc#p3"]);
    let edges: Vec<(&str, u8)> = served.named_edges().map(|e| (e.object, e.hop)).collect();
    assert_eq!(edges, [("France", 0)]);
    // One hop from the passage's entities: the walk continues over the graph.
    let query = SubgraphQuery {
        hops: 1,
        ..SubgraphQuery::default()
    };
    let served = s.memory.subgraph_near(&query, &[1.0, 0.0, 0.0], 1).unwrap();
    let edges: Vec<(&str, &str, u8)> = served
        .named_edges()
        .map(|e| (e.subject, e.object, e.hop))
        .collect();
    assert_eq!(
        edges,
        [("Hall", "Ashfield", 0), ("Ashfield", "Massachusetts", 1)]
    );
}

#[test]
fn bad_embeddings_are_refused_and_nothing_of_the_batch_is_stored() {
    let s = store();
    s.memory
        .add_passage_vectors(vec![vector("p1", &[1.0, 0.0])])
        .unwrap();
    for (batch, expected) in [
        (vec![vector("p2", &[1.0, 0.0, 0.0])], "3 dimensions"),
        (
            vec![vector("p2", &[0.0, 1.0]), vector("p3", &[1.0])],
            "1 dimensions in a batch of 2",
        ),
        (vec![vector("p2", &[0.0, 0.0])], "all zeros"),
        (vec![vector("p2", &[f32::NAN, 1.0])], "finite"),
        (vec![vector("p2", &[])], "no dimensions"),
    ] {
        match s.memory.add_passage_vectors(batch) {
            Err(MemoryError::Refused(why)) => assert!(why.contains(expected), "{why}"),
            other => panic!("{expected}: {other:?}"),
        }
    }
    let near = s.memory.nearest_passages(&[0.0, 1.0], 10).unwrap();
    assert_eq!(near.len(), 1, "only the first passage: {near:?}");
    match s.memory.nearest_passages(&[1.0, 0.0, 0.0], 1) {
        Err(MemoryError::Refused(why)) => assert!(why.contains("holds 2"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_store_made_before_the_vector_table_gains_it_on_open() {
    let s = store();
    fact(&s.memory, "Hall", "born in", "Ashfield", "p1");
    let path = s.dir.path().join("memory.db");
    let hash = s.memory.store_hash().unwrap();
    let s = {
        let common::TestStore { memory, dir } = s;
        drop(memory);
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("DROP TABLE passage_vectors").unwrap();
        drop(conn);
        reopen(common::TestStore {
            memory: weft_memory::Memory::open(&path, common::config()).unwrap(),
            dir,
        })
    };
    assert_eq!(s.memory.store_hash().unwrap(), hash);
    s.memory
        .add_passage_vectors(vec![vector("p1", &[1.0])])
        .unwrap();
    assert_eq!(s.memory.nearest_passages(&[3.0], 1).unwrap()[0].chunk, "p1");
}

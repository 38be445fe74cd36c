//! Helpers the memory tests share: a store in a temporary directory and candidate builders.

#![allow(dead_code, reason = "each test binary uses some of these")]
#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

use std::collections::BTreeSet;

use tempfile::TempDir;
use weft_memory::{Config, Memory, NewCandidate, Ontology, PromotionPolicy, Provenance};

pub struct TestStore {
    pub memory: Memory,
    pub dir: TempDir,
}

pub fn config() -> Config {
    Config {
        ontology: Ontology {
            functional: BTreeSet::from(["capital".to_string(), "ceo".to_string()]),
            ..Ontology::default()
        },
        promotion: PromotionPolicy { k: 2, n: 3 },
        review_merge_degree: Some(5),
    }
}

pub fn store() -> TestStore {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(&dir.path().join("memory.db"), config()).unwrap();
    TestStore { memory, dir }
}

pub fn reopen(store: TestStore) -> TestStore {
    let TestStore { memory, dir } = store;
    drop(memory);
    let memory = Memory::open(&dir.path().join("memory.db"), config()).unwrap();
    TestStore { memory, dir }
}

pub fn cand(s: &str, p: &str, o: &str, chunk: &str) -> NewCandidate {
    NewCandidate {
        subject: s.to_string(),
        predicate: p.to_string(),
        object: o.to_string(),
        provenance: Provenance {
            source: "doc".to_string(),
            chunk: chunk.to_string(),
            extractor: "test/1".to_string(),
            run_id: "run-1".to_string(),
        },
        valid_from: None,
        valid_to: None,
    }
}

/// Stages and promotes (by a person) one candidate; returns (candidate id, triple id).
pub fn fact(memory: &Memory, s: &str, p: &str, o: &str, chunk: &str) -> (i64, i64) {
    let report = memory.ingest(vec![cand(s, p, o, chunk)], 1).unwrap();
    let id = report.staged[0];
    let outcome = memory
        .decide(
            vec![id],
            weft_memory::Verdict::Promote,
            "tester",
            "setup",
            2,
        )
        .unwrap();
    match outcome[0].1 {
        weft_memory::Outcome::Promoted { triple } => (id, triple),
        ref other => panic!("not promoted: {other:?}"),
    }
}

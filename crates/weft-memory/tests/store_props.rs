//! Untrusted names all the way through the store: any strings an extractor emits are either
//! staged or rejected with a reason, promotion never panics, and the index always agrees
//! with SQLite — live, and after a reopen rebuilds it.

#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;

use proptest::prelude::*;
use weft_memory::{Outcome, SubgraphQuery, Verdict};

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z]{1,3}",
        "(The |the )?[A-Z][a-z]{0,6}( [A-Z][a-z]{0,6})?",
        ".{0,12}",
        Just(String::new()),
        Just("  ".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn any_names_keep_the_index_and_sqlite_in_agreement(
        triples in proptest::collection::vec((name(), "[a-z ]{0,8}|.{0,6}", name()), 1..30),
        functional in any::<bool>(),
    ) {
        let mut t = common::store();
        let batch = triples
            .iter()
            .enumerate()
            .map(|(i, (s, p, o))| {
                let p = if functional { "capital".to_string() } else { p.clone() };
                let mut c = common::cand(s, &p, o, &format!("c{}", i % 3));
                c.valid_from = Some(i as i64);
                c
            })
            .collect();
        let report = t.memory.ingest(batch, 1).unwrap();
        prop_assert_eq!(report.staged.len() + report.rejected.len(), triples.len());
        for (_, _, reason) in &report.rejected {
            prop_assert!(!reason.is_empty());
        }
        let outcomes = t.memory.decide_all(Verdict::Promote, "prop", "", 2).unwrap();
        for (_, outcome) in &outcomes {
            prop_assert!(matches!(outcome, Outcome::Promoted { .. }), "{:?}", outcome);
        }
        let check = |memory: &weft_memory::Memory| -> Result<(), TestCaseError> {
            let stats = memory.stats().unwrap();
            let current = memory.graph().current_edges();
            prop_assert_eq!(current as i64, stats.triples_current);
            // Every current edge is served from its subject with a provenance that names it.
            for triple in memory.triples().unwrap().iter().filter(|t| t.valid_to.is_none() && t.retired_at.is_none()) {
                let served = memory
                    .subgraph(&SubgraphQuery { seeds: vec![triple.subject.clone()], hops: 1, max_edges: 10_000, max_tokens: usize::MAX, ..SubgraphQuery::default() })
                    .unwrap();
                prop_assert!(served.edges.iter().any(|e| e.id == triple.id), "edge {} not served", triple.id);
                prop_assert_eq!(memory.provenance(triple.provenance).unwrap().triple, Some(triple.id));
            }
            Ok(())
        };
        check(&t.memory)?;
        let hash = t.memory.store_hash().unwrap();
        t = common::reopen(t);
        check(&t.memory)?;
        prop_assert_eq!(t.memory.store_hash().unwrap(), hash);
    }
}

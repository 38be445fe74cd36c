//! The model's rules on a real SQLite store: staging and k-of-n promotion, people's
//! decisions, ontology rejections, contradictions, merges and their exact undo.

#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;

use common::{cand, fact, reopen, store};
use weft_memory::{Outcome, SubgraphQuery, Verdict};

#[test]
fn a_claim_becomes_canonical_only_with_k_of_n_approvals() {
    let t = store();
    let report = t
        .memory
        .ingest(vec![cand("Ada", "wrote", "Notes", "c1")], 10)
        .unwrap();
    let id = report.staged[0];
    assert_eq!(
        t.memory.graph().current_edges(),
        0,
        "staged is not canonical"
    );

    let first = t.memory.vote(id, "v1", true, "looks right", 11).unwrap();
    assert_eq!(
        first,
        Outcome::Pending {
            approvals: 1,
            rejections: 0
        }
    );
    // The same verifier voting again does not count twice.
    let again = t.memory.vote(id, "v1", true, "still", 12).unwrap();
    assert_eq!(
        again,
        Outcome::Pending {
            approvals: 1,
            rejections: 0
        }
    );
    assert_eq!(t.memory.graph().current_edges(), 0);

    let second = t.memory.vote(id, "v2", true, "agree", 13).unwrap();
    let Outcome::Promoted { triple } = second else {
        panic!("{second:?}")
    };
    assert_eq!(t.memory.graph().current_edges(), 1);
    let record = &t.memory.triples().unwrap()[triple as usize];
    assert_eq!(
        (record.subject.as_str(), record.object.as_str()),
        ("Ada", "Notes")
    );
    assert_eq!(record.provenance, id);
    assert_eq!(record.learned_at, 13);
    let provenance = t.memory.provenance(id).unwrap();
    assert_eq!(provenance.provenance.chunk, "c1");
    assert_eq!(provenance.provenance.extractor, "test/1");
    assert_eq!(provenance.provenance.run_id, "run-1");
    assert_eq!(provenance.triple, Some(triple));
}

#[test]
fn a_claim_is_rejected_once_k_approvals_cannot_be_reached() {
    let t = store();
    let id = t
        .memory
        .ingest(vec![cand("Ada", "wrote", "Hamlet", "c1")], 1)
        .unwrap()
        .staged[0];
    assert_eq!(
        t.memory.vote(id, "v1", false, "wrong author", 2).unwrap(),
        Outcome::Pending {
            approvals: 0,
            rejections: 1
        }
    );
    // n = 3, k = 2: a second rejection leaves one verifier, too few for two approvals.
    assert_eq!(
        t.memory.vote(id, "v2", false, "no", 3).unwrap(),
        Outcome::Rejected
    );
    assert_eq!(
        t.memory.vote(id, "v3", true, "late", 4).unwrap(),
        Outcome::Rejected
    );
    assert_eq!(t.memory.graph().current_edges(), 0);
    assert_eq!(t.memory.stats().unwrap().candidates_rejected, 1);
}

#[test]
fn emissions_of_one_claim_share_its_votes_and_its_edge() {
    let t = store();
    // Two extractors emit the same claim from the same chunk (surface forms differ).
    let ids = t
        .memory
        .ingest(
            vec![
                cand("Ada Lovelace", "Wrote", "Notes", "c1"),
                cand("ada lovelace", "wrote", "notes", "c1"),
            ],
            1,
        )
        .unwrap()
        .staged;
    t.memory.vote(ids[0], "v1", true, "", 2).unwrap();
    let outcome = t.memory.vote(ids[1], "v2", true, "", 3).unwrap();
    assert!(matches!(outcome, Outcome::Promoted { .. }), "{outcome:?}");
    assert_eq!(t.memory.graph().current_edges(), 1);
    assert_eq!(t.memory.stats().unwrap().candidates_promoted, 2);
}

#[test]
fn a_persons_decision_is_recorded_with_who_and_why() {
    let t = store();
    let id = t
        .memory
        .ingest(vec![cand("Ada", "wrote", "Notes", "c1")], 1)
        .unwrap()
        .staged[0];
    let refused = t.memory.decide(vec![id], Verdict::Promote, " ", "why", 2);
    assert!(refused.is_err(), "a decision without who is refused");
    assert_eq!(t.memory.graph().current_edges(), 0);

    let outcome = t
        .memory
        .decide(vec![id], Verdict::Promote, "alice", "checked the source", 3)
        .unwrap();
    assert!(matches!(outcome[0].1, Outcome::Promoted { .. }));
    let hash_before = t.memory.store_hash().unwrap();
    // Rejecting the canonical claim retires its edge; the row stays.
    let outcome = t
        .memory
        .decide(vec![id], Verdict::Reject, "bob", "source retracted", 4)
        .unwrap();
    assert_eq!(outcome[0].1, Outcome::Rejected);
    assert_eq!(t.memory.graph().current_edges(), 0);
    let triples = t.memory.triples().unwrap();
    assert_eq!(triples.len(), 1);
    assert_eq!(triples[0].retired_at, Some(4));
    assert_ne!(hash_before, t.memory.store_hash().unwrap());
    let why = t.memory.provenance(id).unwrap();
    assert_eq!(why.status, "rejected");
}

#[test]
fn malformed_and_ontology_violating_triples_are_rejected_with_a_reason() {
    let t = store();
    let mut self_loop = cand("Ada", "knows", "ada", "c1");
    self_loop.valid_from = None;
    let mut backwards = cand("Ada", "lived in", "London", "c1");
    backwards.valid_from = Some(10);
    backwards.valid_to = Some(5);
    let mut no_source = cand("Ada", "knows", "Babbage", "c1");
    no_source.provenance.source = String::new();
    let report = t
        .memory
        .ingest(
            vec![
                cand("", "wrote", "Notes", "c1"),
                cand("Ada", "!!", "Notes", "c1"),
                self_loop,
                backwards,
                no_source,
                cand("Ada", "knows", "Babbage", "c1"),
            ],
            1,
        )
        .unwrap();
    assert_eq!(report.staged.len(), 1);
    let reasons: Vec<&str> = report.rejected.iter().map(|(_, _, r)| r.as_str()).collect();
    assert_eq!(reasons.len(), 5);
    assert!(reasons[0].contains("subject is empty"), "{reasons:?}");
    assert!(reasons[1].contains("predicate is empty"), "{reasons:?}");
    assert!(reasons[2].contains("same entity"), "{reasons:?}");
    assert!(reasons[3].contains("valid_to"), "{reasons:?}");
    assert!(reasons[4].contains("no source"), "{reasons:?}");
    // Rejected rows cannot become facts, not even by a person.
    let rejected_id = report.rejected[2].1;
    assert!(
        t.memory
            .decide(vec![rejected_id], Verdict::Promote, "alice", "try", 2)
            .is_err()
    );
    assert_eq!(t.memory.graph().current_edges(), 0);
    assert_eq!(t.memory.stats().unwrap().candidates_rejected, 5);
}

#[test]
fn a_closed_predicate_set_refuses_unknown_predicates() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config();
    config.ontology.predicates = Some(["born in".to_string()].into_iter().collect());
    let memory = weft_memory::Memory::open(&dir.path().join("m.db"), config).unwrap();
    let report = memory
        .ingest(
            vec![
                cand("Ada", "Born In", "London", "c"),
                cand("Ada", "likes", "Tea", "c"),
            ],
            1,
        )
        .unwrap();
    assert_eq!(report.staged.len(), 1);
    assert!(
        report.rejected[0]
            .2
            .contains("`likes` is not in the ontology")
    );
}

#[test]
fn a_contradiction_closes_the_old_facts_validity_instead_of_deleting_it() {
    let t = store();
    let mut old = cand("France", "capital", "Versailles", "c1");
    old.valid_from = Some(1682);
    let mut new = cand("France", "capital", "Paris", "c2");
    new.valid_from = Some(1789);
    let ids = t.memory.ingest(vec![old, new], 5).unwrap().staged;
    t.memory
        .decide(vec![ids[0]], Verdict::Promote, "alice", "", 6)
        .unwrap();
    t.memory
        .decide(vec![ids[1]], Verdict::Promote, "alice", "", 7)
        .unwrap();
    let triples = t.memory.triples().unwrap();
    assert_eq!(triples.len(), 2, "nothing deleted");
    assert_eq!(triples[0].object, "Versailles");
    assert_eq!(
        triples[0].valid_to,
        Some(1789),
        "closed where the new fact begins"
    );
    assert_eq!(triples[0].closed_by, Some(triples[1].id));
    assert_eq!(triples[0].retired_at, None, "still believed as history");
    assert_eq!(triples[1].valid_to, None);
    assert_eq!(t.memory.graph().current_edges(), 1);

    // An older fact learned later is stored closed; the current one stands.
    let mut older = cand("France", "capital", "Paris-Lutetia", "c3");
    older.valid_from = Some(500);
    let id = t.memory.ingest(vec![older], 8).unwrap().staged[0];
    t.memory
        .decide(vec![id], Verdict::Promote, "alice", "", 9)
        .unwrap();
    let triples = t.memory.triples().unwrap();
    assert_eq!(triples[2].valid_to, Some(1789));
    assert_eq!(triples[1].valid_to, None, "the current fact is untouched");
    let served = t
        .memory
        .subgraph(&SubgraphQuery {
            seeds: vec!["France".into()],
            ..SubgraphQuery::default()
        })
        .unwrap();
    let objects: Vec<&str> = served.named_edges().map(|e| e.object).collect();
    assert_eq!(objects, ["Paris"]);

    // Non-functional predicates accumulate.
    fact(&t.memory, "France", "borders", "Spain", "c4");
    fact(&t.memory, "France", "borders", "Italy", "c5");
    assert_eq!(t.memory.graph().current_edges(), 3);
}

/// Everything a merge could disturb, for comparing before and after an undo.
type MergeState = (
    Vec<weft_memory::TripleRecord>,
    Vec<Vec<String>>,
    Vec<(String, String)>,
);

fn merge_state(memory: &weft_memory::Memory) -> MergeState {
    let triples = memory.triples().unwrap();
    let entities = memory.graph().entity_count() as i64;
    let aliases = (0..entities)
        .map(|e| memory.aliases_of(e).unwrap())
        .collect();
    let served = memory
        .subgraph(&SubgraphQuery {
            seeds: vec!["APA".into(), "American Psychological Association".into()],
            hops: 3,
            ..SubgraphQuery::default()
        })
        .unwrap();
    let mut edges: Vec<(String, String)> = served
        .edges
        .iter()
        .map(|e| (e.subject.to_string(), e.object.to_string()))
        .collect();
    edges.sort();
    (triples, aliases, edges)
}

#[test]
fn undoing_a_wrong_merge_restores_aliases_and_edges_exactly() {
    let t = store();
    fact(
        &t.memory,
        "APA",
        "published",
        "Journal of Psychotherapy Integration",
        "c1",
    );
    fact(
        &t.memory,
        "American Psychological Association",
        "first president",
        "G. Stanley Hall",
        "c2",
    );
    fact(
        &t.memory,
        "American Philosophical Association",
        "founded in",
        "1900",
        "c3",
    );
    fact(
        &t.memory,
        "Journal of Psychotherapy Integration",
        "cites",
        "APA",
        "c4",
    );
    let before = merge_state(&t.memory);
    let hash_before = t.memory.store_hash().unwrap();

    // The wrong merge: APA here is the psychological association, not the philosophical one.
    let wrong = t
        .memory
        .merge(
            "APA",
            "American Philosophical Association",
            "acronym",
            "resolver",
            10,
        )
        .unwrap();
    assert_eq!(wrong.moved_edges, 2);
    assert_eq!(wrong.moved_aliases, 1);
    assert!(!wrong.flagged_for_review);
    let graph = t.memory.graph();
    let apa = graph.resolve("APA").unwrap();
    assert_eq!(graph.name(apa), "American Philosophical Association");
    drop(graph);
    assert_ne!(merge_state(&t.memory), before);

    t.memory.unmerge(wrong.merge_id, "alice", 11).unwrap();
    assert_eq!(
        merge_state(&t.memory),
        before,
        "aliases and edges back exactly"
    );
    assert!(
        t.memory.unmerge(wrong.merge_id, "alice", 12).is_err(),
        "undone once"
    );

    // The right merge, and it survives a reopen (the index rebuilt from SQLite).
    let right = t
        .memory
        .merge(
            "APA",
            "American Psychological Association",
            "acronym",
            "alice",
            13,
        )
        .unwrap();
    let t = reopen(t);
    let graph = t.memory.graph();
    assert_eq!(
        graph.resolve("apa"),
        graph.resolve("American Psychological Association")
    );
    drop(graph);
    let served = t
        .memory
        .subgraph(&SubgraphQuery {
            seeds: vec!["APA".into()],
            hops: 1,
            ..SubgraphQuery::default()
        })
        .unwrap();
    assert_eq!(served.edges.len(), 3, "{served:?}");
    t.memory.unmerge(right.merge_id, "alice", 14).unwrap();
    assert_eq!(merge_state(&t.memory), before);
    assert_ne!(
        t.memory.store_hash().unwrap(),
        hash_before,
        "the merges stay on record"
    );
    let merges = t.memory.merges().unwrap();
    assert_eq!(merges.len(), 2);
    assert!(merges.iter().all(|m| m.undone_at.is_some()));
}

#[test]
fn an_undo_is_refused_while_a_later_merge_of_the_same_entities_stands() {
    let t = store();
    fact(&t.memory, "A", "p", "X", "c1");
    fact(&t.memory, "B", "p", "Y", "c2");
    fact(&t.memory, "C", "p", "Z", "c3");
    let first = t.memory.merge("A", "B", "", "r", 1).unwrap();
    let second = t.memory.merge("B", "C", "", "r", 2).unwrap();
    let refused = t.memory.unmerge(first.merge_id, "alice", 3).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains(&format!("merge {}", second.merge_id)),
        "{refused}"
    );
    t.memory.unmerge(second.merge_id, "alice", 4).unwrap();
    t.memory.unmerge(first.merge_id, "alice", 5).unwrap();
    let graph = t.memory.graph();
    assert_ne!(graph.resolve("A"), graph.resolve("B"));
    assert_ne!(graph.resolve("B"), graph.resolve("C"));
}

#[test]
fn a_high_degree_merge_is_flagged_for_review() {
    let t = store();
    for i in 0..6 {
        fact(
            &t.memory,
            "United States",
            "contains",
            &format!("State {i}"),
            &format!("c{i}"),
        );
    }
    fact(&t.memory, "USA", "member of", "UN", "c9");
    let small = t
        .memory
        .merge("USA", "United States", "acronym", "r", 1)
        .unwrap();
    assert!(!small.flagged_for_review);
    t.memory.unmerge(small.merge_id, "r", 2).unwrap();
    // Threshold 5 (tests' config): moving the hub's 6 edges is flagged, though applied.
    let big = t
        .memory
        .merge("United States", "USA", "acronym", "r", 3)
        .unwrap();
    assert!(big.flagged_for_review);
    assert_eq!(big.moved_edges, 6);
    assert_eq!(t.memory.stats().unwrap().merges_flagged, 1);
}

#[test]
fn merging_unknown_or_identical_entities_is_refused() {
    let t = store();
    fact(&t.memory, "A", "p", "B", "c1");
    assert!(t.memory.merge("Nope", "A", "", "r", 1).is_err());
    assert!(t.memory.merge("a", "A", "", "r", 1).is_err());
    assert_eq!(
        t.memory.merges().unwrap().len(),
        0,
        "a refused merge leaves no record"
    );
}

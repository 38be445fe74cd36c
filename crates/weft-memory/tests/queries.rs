//! Bounded subgraph queries: hops, edge and token budgets, predicate filters, passage seeds,
//! provenance on every edge, and the answer check.

#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;

use common::{fact, store};
use weft_memory::{Claim, Cutoff, Passage, SubgraphQuery, Ungrounded, check_answer};

fn chain(memory: &weft_memory::Memory) {
    // Journal -published by-> APA -first president-> Hall -born in-> Ashfield
    fact(
        memory,
        "Journal of Psychotherapy Integration",
        "published by",
        "American Psychological Association",
        "p6",
    );
    fact(
        memory,
        "American Psychological Association",
        "first president",
        "G. Stanley Hall",
        "p10",
    );
    fact(memory, "G. Stanley Hall", "born in", "Ashfield", "p11");
    fact(
        memory,
        "Journal of Psychotherapy Integration",
        "founded in",
        "1991",
        "p6",
    );
}

#[test]
fn hops_bound_the_walk_and_every_edge_cites_its_provenance() {
    let t = store();
    chain(&t.memory);
    let query = |hops| SubgraphQuery {
        seeds: vec!["journal of psychotherapy integration".into()],
        hops,
        ..SubgraphQuery::default()
    };
    let one = t.memory.subgraph(&query(1)).unwrap();
    assert_eq!(one.edges.len(), 2);
    assert_eq!(
        one.seeds[0].canonical,
        "Journal of Psychotherapy Integration"
    );
    let two = t.memory.subgraph(&query(2)).unwrap();
    assert_eq!(two.edges.len(), 3);
    assert_eq!(two.named(&two.edges[2]).object, "G. Stanley Hall");
    assert_eq!(two.edges[2].hop, 2);
    let three = t.memory.subgraph(&query(3)).unwrap();
    assert_eq!(three.edges.len(), 4);
    for edge in three.named_edges() {
        let provenance = t.memory.provenance(edge.provenance).unwrap();
        assert_eq!(provenance.triple, Some(edge.id));
        assert_eq!(provenance.provenance.chunk, edge.chunk);
        assert_eq!(provenance.provenance.source, edge.source);
    }
    assert_eq!(
        three.tokens,
        three
            .named_edges()
            .map(|e| e.subject.split_whitespace().count()
                + e.predicate.split_whitespace().count()
                + e.object.split_whitespace().count()
                + 3)
            .sum::<usize>()
    );
}

#[test]
fn edge_and_token_budgets_cut_the_walk_and_say_so() {
    let t = store();
    chain(&t.memory);
    let base = SubgraphQuery {
        seeds: vec!["Journal of Psychotherapy Integration".into()],
        hops: 3,
        ..SubgraphQuery::default()
    };
    let capped = t
        .memory
        .subgraph(&SubgraphQuery {
            max_edges: 2,
            ..base.clone()
        })
        .unwrap();
    assert_eq!(capped.edges.len(), 2);
    assert_eq!(capped.cutoff, Some(Cutoff::MaxEdges));
    let full = t.memory.subgraph(&base).unwrap();
    assert_eq!(full.cutoff, None);
    let words = |e: weft_memory::NamedEdge<'_>| {
        e.subject.split_whitespace().count()
            + e.predicate.split_whitespace().count()
            + e.object.split_whitespace().count()
            + 3
    };
    let first_tokens = words(full.named(&full.edges[0]));
    assert_eq!(first_tokens, 4 + 2 + 3 + 3);
    let tight = t
        .memory
        .subgraph(&SubgraphQuery {
            max_tokens: first_tokens,
            ..base
        })
        .unwrap();
    assert_eq!(tight.edges.len(), 1);
    assert_eq!(tight.tokens, first_tokens);
    assert_eq!(tight.cutoff, Some(Cutoff::Tokens));
}

#[test]
fn predicate_filters_and_unknown_seeds() {
    let t = store();
    chain(&t.memory);
    let served = t
        .memory
        .subgraph(&SubgraphQuery {
            seeds: vec![
                "Journal of Psychotherapy Integration".into(),
                "Nobody".into(),
            ],
            hops: 3,
            predicates: Some(vec!["Published By".into(), "first president".into()]),
            ..SubgraphQuery::default()
        })
        .unwrap();
    let predicates: Vec<&str> = served.named_edges().map(|e| e.predicate).collect();
    assert_eq!(predicates, ["published by", "first president"]);
    assert_eq!(served.unresolved_seeds, ["Nobody"]);
}

#[test]
fn passage_search_seeds_the_walk_with_the_passages_edges() {
    let t = store();
    chain(&t.memory);
    t.memory
        .add_passages(vec![
            Passage {
                source: "doc".into(),
                chunk: "p10".into(),
                text: "G. Stanley Hall was the first president of the APA.".into(),
            },
            Passage {
                source: "doc".into(),
                chunk: "p11".into(),
                text: "Hall was born in Ashfield, Massachusetts.".into(),
            },
        ])
        .unwrap();
    let served = t
        .memory
        .subgraph(&SubgraphQuery {
            passage_search: Some("Who was the first president?".into()),
            passage_limit: 1,
            hops: 0,
            ..SubgraphQuery::default()
        })
        .unwrap();
    assert_eq!(served.passages, ["doc#p10"]);
    assert_eq!(served.edges.len(), 1);
    assert_eq!(served.named(&served.edges[0]).predicate, "first president");
    assert_eq!(served.edges[0].hop, 0);
    let wider = t
        .memory
        .subgraph(&SubgraphQuery {
            passage_search: Some("first president".into()),
            passage_limit: 1,
            hops: 1,
            ..SubgraphQuery::default()
        })
        .unwrap();
    assert_eq!(wider.edges.len(), 3, "{wider:?}");
}

#[test]
fn the_answer_check_drops_or_flags_claims_citing_no_served_edge() {
    let t = store();
    chain(&t.memory);
    let served = t
        .memory
        .subgraph(&SubgraphQuery {
            seeds: vec!["G. Stanley Hall".into()],
            hops: 1,
            ..SubgraphQuery::default()
        })
        .unwrap();
    let cited = served.edges[0].provenance;
    let unserved = t.memory.triples().unwrap()[0].provenance;
    assert!(served.edges.iter().all(|e| e.provenance != unserved));
    let claims = vec![
        Claim {
            text: "Hall was the first president".into(),
            cites: vec![cited],
        },
        Claim {
            text: "It was founded in 1991".into(),
            cites: vec![unserved],
        },
        Claim {
            text: "He liked tea".into(),
            cites: vec![],
        },
    ];
    let dropped = check_answer(&served, claims.clone(), Ungrounded::Drop);
    assert_eq!(dropped.kept, claims[..1]);
    assert_eq!(dropped.dropped.len(), 2);
    assert!(dropped.dropped[0].1.contains(&format!("p:{unserved}")));
    assert_eq!(dropped.dropped[1].1, "cites no edge");
    let flagged = check_answer(&served, claims, Ungrounded::Flag);
    assert_eq!(flagged.flagged.len(), 2);
    assert!(flagged.dropped.is_empty());
}

#[test]
fn focus_words_rank_a_hops_edges_before_the_budget_cuts() {
    let t = store();
    fact(&t.memory, "Hall", "born in", "Ashfield", "p1");
    fact(&t.memory, "Hall", "studied at", "Harvard", "p2");
    fact(
        &t.memory,
        "Hall",
        "first president of",
        "American Psychological Association",
        "p3",
    );
    let one_edge = |focus: Option<&str>| {
        t.memory
            .subgraph(&SubgraphQuery {
                seeds: vec!["Hall".into()],
                hops: 1,
                max_edges: 1,
                focus: focus.map(str::to_string),
                ..SubgraphQuery::default()
            })
            .unwrap()
    };
    // Without focus the walk's order (promotion order) decides; with it, the edge sharing
    // the question's words comes first.
    let object = |served: weft_memory::Subgraph| served.named(&served.edges[0]).object.to_string();
    assert_eq!(object(one_edge(None)), "Ashfield");
    let focused = one_edge(Some("Who was the first president of the association?"));
    assert_eq!(focused.cutoff, Some(Cutoff::MaxEdges));
    assert_eq!(object(focused), "American Psychological Association");
    // Ties keep the walk's order.
    assert_eq!(object(one_edge(Some("Nothing matches here"))), "Ashfield");
}

#[test]
fn a_subgraph_writes_its_edges_named_as_served_after_later_commits_and_the_store_closed() {
    let t = store();
    let (c1, t1) = fact(
        &t.memory,
        "American Psychological Association",
        "first president",
        "G. Stanley Hall",
        "p10",
    );
    let (c2, t2) = fact(&t.memory, "G. Stanley Hall", "born in", "Ashfield", "p11");
    let served = t
        .memory
        .subgraph(&SubgraphQuery {
            seeds: vec!["g stanley hall".into()],
            hops: 1,
            ..SubgraphQuery::default()
        })
        .unwrap();
    // Later commits add names (new entities, a predicate, a passage) and merge one of the
    // served entities away: the served subgraph still names what it served.
    for i in 0..200 {
        fact(
            &t.memory,
            &format!("entity {i}"),
            "links",
            "Ashfield Town",
            "p12",
        );
    }
    t.memory
        .merge("Ashfield", "Ashfield Town", "same town", "tester", 9)
        .unwrap();
    let snapshot = served.snapshot;
    let common::TestStore { memory, dir } = t;
    drop(memory);
    drop(dir);
    let expected = format!(
        concat!(
            r#"{{"edges":[{{"id":{t1},"subject":"American Psychological Association","#,
            r#""predicate":"first president","object":"G. Stanley Hall","provenance":{c1},"#,
            r#""source":"doc","chunk":"p10","hop":1}},{{"id":{t2},"subject":"G. Stanley Hall","#,
            r#""predicate":"born in","object":"Ashfield","provenance":{c2},"source":"doc","#,
            r#""chunk":"p11","hop":1}}],"tokens":20,"snapshot":{snapshot},"seeds":[{{"name":"#,
            r#""g stanley hall","entity":1,"canonical":"G. Stanley Hall"}}],"#,
            r#""unresolved_seeds":[],"passages":[],"cutoff":null}}"#
        ),
        t1 = t1,
        c1 = c1,
        t2 = t2,
        c2 = c2,
        snapshot = snapshot
    );
    assert_eq!(serde_json::to_string(&served).unwrap(), expected);
    assert_eq!(
        served.to_text(),
        format!(
            "American Psychological Association | first president | G. Stanley Hall [p:{c1}]\n\
             G. Stanley Hall | born in | Ashfield [p:{c2}]\n"
        )
    );
}

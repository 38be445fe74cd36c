//! The OpenAI-compatible embedder against the loopback server speaking the exact
//! `/v1/embeddings` wire format: the request it sends, answers out of order, malformed
//! answers refused, the key never shown; and the vectors seeding a memory subgraph
//! (`weft_memory::Memory::subgraph_near`) end to end.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod support;

use serde_json::json;
use support::loopback::{Loopback, Reply};
use weft_agents::{FailureClass, HttpSettings, OpenAiEmbedder, Secret};

fn embedder(server: &Loopback, key: Option<&str>) -> OpenAiEmbedder {
    let http = HttpSettings {
        retry: weft_agents::RetryPolicy {
            max_attempts: 1,
            ..weft_agents::RetryPolicy::default()
        },
        ..HttpSettings::default()
    };
    OpenAiEmbedder::new(&server.base_url, "embed-small", key.map(Secret::new), http).unwrap()
}

fn answer(entries: serde_json::Value) -> Reply {
    Reply::json(
        200,
        json!({"object": "list", "data": entries, "model": "embed-small",
               "usage": {"prompt_tokens": 8, "total_tokens": 8}})
        .to_string(),
    )
}

#[tokio::test]
async fn the_request_is_the_wire_format_and_the_answer_is_put_in_input_order() {
    let server = Loopback::start(vec![answer(json!([
        {"object": "embedding", "index": 1, "embedding": [0.0, 1.0]},
        {"object": "embedding", "index": 0, "embedding": [1.0, 0.5]}
    ]))])
    .await;
    let texts = vec![
        "Hall was born in Ashfield.".to_string(),
        "Paris".to_string(),
    ];
    let vectors = embedder(&server, Some("sk-embed-SECRET"))
        .embed(&texts)
        .await
        .unwrap();
    assert_eq!(vectors, [vec![1.0, 0.5], vec![0.0, 1.0]]);
    let sent = &server.requests()[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/embeddings")
    );
    assert_eq!(sent.header("authorization"), Some("Bearer sk-embed-SECRET"));
    assert_eq!(
        sent.json(),
        json!({"model": "embed-small", "input": ["Hall was born in Ashfield.", "Paris"]})
    );
}

#[tokio::test]
async fn malformed_answers_are_refused_as_model_errors_and_the_key_is_never_shown() {
    for (entries, expected) in [
        (
            json!([{"index": 0, "embedding": [1.0]}]),
            "1 embeddings for 2 inputs",
        ),
        (
            json!([{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [2.0]}]),
            "index 0 repeated",
        ),
        (
            json!([{"index": 0, "embedding": [1.0]}, {"index": 2, "embedding": [2.0]}]),
            "index 2 out of range",
        ),
        (
            json!([{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": ["x"]}]),
            "not a number",
        ),
        (
            json!([{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]),
            "different or zero lengths",
        ),
    ] {
        let server = Loopback::start(vec![answer(entries)]).await;
        let e = embedder(&server, Some("sk-embed-SECRET"))
            .embed(&["a".to_string(), "b".to_string()])
            .await
            .unwrap_err();
        assert_eq!(e.class, FailureClass::ModelError, "{e}");
        assert!(e.message.contains(expected), "{expected}: {e}");
    }
    // A refusal by the server: its class, and the key echoed in the body is redacted.
    let server = Loopback::start(vec![Reply::json(
        401,
        r#"{"error": {"message": "bad key sk-embed-SECRET"}}"#,
    )])
    .await;
    let e = embedder(&server, Some("sk-embed-SECRET"))
        .embed(&["a".to_string()])
        .await
        .unwrap_err();
    assert!(!e.to_string().contains("sk-embed-SECRET"), "{e}");
    assert_eq!(e.class, FailureClass::PermissionDenied, "{e}");
}

#[tokio::test]
async fn configured_dimensions_are_asked_for_and_an_answer_of_another_length_is_refused() {
    let server = Loopback::start(vec![
        answer(json!([{"object": "embedding", "index": 0, "embedding": [0.5, 0.5, 0.0]}])),
        answer(json!([{"object": "embedding", "index": 0, "embedding": [0.5, 0.5]}])),
    ])
    .await;
    let embedder = embedder(&server, None).with_dimensions(3);
    let text = vec!["Hall".to_string()];
    assert_eq!(embedder.embed(&text).await.unwrap(), [vec![0.5, 0.5, 0.0]]);
    assert_eq!(
        server.requests()[0].json(),
        json!({"model": "embed-small", "input": ["Hall"], "dimensions": 3})
    );
    let e = embedder.embed(&text).await.unwrap_err();
    assert_eq!(e.class, FailureClass::ModelError, "{e}");
    assert!(
        e.message
            .contains("vectors of 2 dimensions; 3 were asked for"),
        "{e}"
    );
}

#[tokio::test]
async fn embedded_passages_seed_a_memory_subgraph() {
    let dir = tempfile::tempdir().unwrap();
    let memory = weft_memory::Memory::open(
        &dir.path().join("memory.db"),
        weft_memory::Config::default(),
    )
    .unwrap();
    let mut staged = Vec::new();
    for (s, p, o, chunk) in [
        ("Hall", "born in", "Ashfield", "p1"),
        ("Paris", "capital of", "France", "p2"),
    ] {
        let report = memory
            .ingest(
                vec![weft_memory::NewCandidate {
                    subject: s.into(),
                    predicate: p.into(),
                    object: o.into(),
                    provenance: weft_memory::Provenance {
                        source: "doc".into(),
                        chunk: chunk.into(),
                        extractor: "test/1".into(),
                        run_id: "r".into(),
                    },
                    valid_from: None,
                    valid_to: None,
                }],
                1,
            )
            .unwrap();
        staged.extend(report.staged);
    }
    memory
        .decide(staged, weft_memory::Verdict::Promote, "tester", "setup", 2)
        .unwrap();
    // The passages, then the question, each embedded by the server.
    let server = Loopback::start(vec![
        answer(json!([
            {"index": 0, "embedding": [0.9, 0.1, 0.0]},
            {"index": 1, "embedding": [0.0, 0.2, 0.9]}
        ])),
        answer(json!([{"index": 0, "embedding": [0.1, 0.0, 1.0]}])),
    ])
    .await;
    let embedder = embedder(&server, None);
    let passages = embedder
        .embed(&[
            "Hall was born in Ashfield.".into(),
            "Paris is the capital of France.".into(),
        ])
        .await
        .unwrap();
    memory
        .add_passage_vectors(
            ["p1", "p2"]
                .into_iter()
                .zip(passages)
                .map(|(chunk, vector)| weft_memory::PassageVector {
                    source: "doc".into(),
                    chunk: chunk.into(),
                    vector,
                })
                .collect(),
        )
        .unwrap();
    let question = embedder
        .embed(&["What is France's capital?".into()])
        .await
        .unwrap();
    let query = weft_memory::SubgraphQuery {
        hops: 0,
        ..weft_memory::SubgraphQuery::default()
    };
    let served = memory.subgraph_near(&query, &question[0], 1).unwrap();
    assert_eq!(served.passages, ["doc#p2"]);
    assert_eq!(served.edges.len(), 1);
    let edge = served.named(&served.edges[0]);
    assert_eq!((edge.subject, edge.object), ("Paris", "France"));
    assert_eq!(server.requests().len(), 2);
}

//! The memory tools in `weft run`: `[memory] db` in weft.toml names the store, an agent node
//! whose grants allow the tools calls them (the model scripted by the loopback provider), a
//! proposal is staged with the provenance of the calling run, node, attempt and actor (never
//! the model's), and a search answers the model with the store's facts. `weft resume` offers
//! them too, and a proposal journalled before a `kill -9` is not staged again. With
//! `[memory.embedder]` (a loopback `/v1/embeddings` server), searches seed the passages
//! nearest to the query's embedding, in runs and in `weft memory --config … query`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod kill;
use weft_test_support::scripted as provider;

use std::path::Path;

use assert_cmd::Command;
use provider::{Answer, responding, scripted, scripted_provider, tool_call};
use serde_json::{Value, json};
use weft_memory::{Config, Memory, NewCandidate, Passage, PassageVector, Provenance, Verdict};

const DOC: &str = r#"ags_version: "1.0"
kind: AgenticGraph
id: t/memory
title: A model node with the memory tools
objective: Record a fact and look up what memory knows about Hall.
entrypoints: [learn]
nodes:
  learn:
    title: Learn
    description: Propose a fact, search memory, then emit the outcome.
    requirements:
      tools: [memory_propose, memory_search]
      permissions: ["custom:call:host/memory_propose", "custom:call:host/memory_search"]
    outputs:
      outcome:
        type: string
        description: What memory said.
"#;

/// A store holding one canonical fact cited by one passage.
fn seeded_store(db: &Path) {
    let memory = Memory::open(db, Config::default()).unwrap();
    let report = memory
        .ingest(
            vec![NewCandidate {
                subject: "G. Stanley Hall".into(),
                predicate: "born in".into(),
                object: "Ashfield".into(),
                provenance: Provenance {
                    source: "musique".into(),
                    chunk: "p11".into(),
                    extractor: "seed/1".into(),
                    run_id: "seed".into(),
                },
                valid_from: None,
                valid_to: None,
            }],
            1,
        )
        .unwrap();
    memory
        .decide(report.staged, Verdict::Promote, "tester", "seed fact", 2)
        .unwrap();
    memory
        .add_passages(vec![Passage {
            source: "musique".into(),
            chunk: "p11".into(),
            text: "Granville Stanley Hall was born in Ashfield, Massachusetts.".into(),
        }])
        .unwrap();
}

fn profile(port: u16, memory: &str) -> String {
    format!(
        "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}\"\nmax_attempts = 1\n\
         [tiers.standard]\nprovider = \"p\"\nmodel = \"mid\"\n\
         [[policy.rules]]\ndecision = \"allow\"\npermission = \"custom:call:host/memory_*\"\n\
         {memory}"
    )
}

/// The content of the last tool message answering call `id` in a chat request body.
fn tool_reply(request: &str, id: &str) -> Value {
    let request: Value = serde_json::from_str(request).unwrap();
    let message = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .unwrap_or_else(|| panic!("no tool message for {id}: {request}"))
        .clone();
    serde_json::from_str(message["content"].as_str().unwrap()).unwrap()
}

#[test]
fn run_offers_the_memory_tools_and_writes_carry_the_callers_provenance() {
    let (port, seen) = scripted_provider(vec![
        // The model tries to pass its own provenance; the schema has no such member, so the
        // call is refused and it tries again without it.
        tool_call(
            "memory_propose",
            json!({"subject": "G. Stanley Hall", "predicate": "first president of",
                   "object": "American Psychological Association", "source": "musique",
                   "run": "forged-run"}),
        ),
        tool_call(
            "memory_propose",
            json!({"subject": "G. Stanley Hall", "predicate": "first president of",
                   "object": "American Psychological Association", "source": "musique"}),
        ),
        tool_call("memory_search", json!({"query": "Where was Hall born?"})),
        tool_call(
            "emit_output",
            json!({"outcome": "Hall was born in Ashfield"}),
        ),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(".weft/memory.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    seeded_store(&db);
    std::fs::write(
        dir.path().join("weft.toml"),
        profile(port, "[memory]\ndb = \".weft/memory.db\"\n"),
    )
    .unwrap();
    std::fs::write(dir.path().join("memory.agraph.yaml"), DOC).unwrap();
    let out = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir.path())
        .env("USER", "memory-tester")
        .args([
            "run",
            "memory.agraph.yaml",
            "--config",
            "weft.toml",
            "--json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run_id = report["run_id"].as_str().expect("the report's run id");

    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 4, "three tool turns, then emit_output");
    for name in ["\"memory_propose\"", "\"memory_search\""] {
        assert!(
            requests[0].contains(name),
            "{name} offered: {}",
            requests[0]
        );
    }
    // The node did not ask for them: not offered.
    assert!(!requests[0].contains("\"memory_verify\""));
    let forged = tool_reply(&requests[1], "call_memory_propose");
    assert!(forged.to_string().contains("validation"), "{forged}");
    let proposed = tool_reply(&requests[2], "call_memory_propose");
    assert_eq!(proposed["status"], "staged", "{proposed}");
    let candidate = proposed["candidate"].as_i64().unwrap();
    // The search answered the model with the seeded fact and its provenance id.
    let found = tool_reply(&requests[3], "call_memory_search");
    let edges = found["edges"].as_array().unwrap();
    assert_eq!(edges.len(), 1, "{found}");
    assert_eq!(edges[0]["subject"], "G. Stanley Hall");
    assert_eq!(edges[0]["object"], "Ashfield");
    assert_eq!(found["passages"], json!(["musique#p11"]));

    // The store holds the staged candidate with the caller's provenance.
    let memory = Memory::open(&db, Config::default()).unwrap();
    let record = memory.provenance(candidate).unwrap();
    assert_eq!(record.status, "staged");
    assert_eq!(record.provenance.run_id, run_id);
    assert_eq!(record.provenance.chunk, "learn#1", "node and attempt");
    assert_eq!(record.provenance.source, "musique");
    assert_eq!(
        record.provenance.extractor, "agent:memory-tester",
        "the operator"
    );
    assert_ne!(record.provenance.run_id, "forged-run");
    assert_eq!(memory.stats().unwrap().candidates_staged, 1);
}

#[test]
fn without_memory_a_node_requiring_the_tools_is_refused_and_a_bad_table_names_its_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("memory.agraph.yaml"), DOC).unwrap();
    for (memory, expected) in [
        ("", "RT012"),
        ("[memory]\npath = \"m.db\"\n", "`memory.path`: unknown key"),
        (
            "[memory]\ndb = \"m.db\"\n[memory.embedder]\nbase_url = \"http://127.0.0.1:9\"\n\
             model = \"e\"\napi_key_env = \"WEFT_TEST_SURELY_UNSET_EMBED_KEY\"\n",
            "`memory.embedder.api_key_env`: environment variable WEFT_TEST_SURELY_UNSET_EMBED_KEY is not set",
        ),
        (
            "[memory]\ndb = \"m.db\"\n[memory.embedder]\nurl = \"http://127.0.0.1:9\"\n",
            "`memory.embedder.url`: unknown key",
        ),
    ] {
        let (port, seen) =
            scripted_provider(vec![tool_call("emit_output", json!({"outcome": "x"}))]);
        std::fs::write(dir.path().join("weft.toml"), profile(port, memory)).unwrap();
        let out = Command::cargo_bin("weft")
            .unwrap()
            .current_dir(dir.path())
            .args(["run", "memory.agraph.yaml", "--config", "weft.toml"])
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_ne!(out.status.code(), Some(0), "{all}");
        assert!(all.contains(expected), "{memory:?}: {all}");
        assert!(seen.lock().unwrap().is_empty(), "no token spent: {all}");
    }
}

#[test]
fn a_resumed_run_offers_the_tools_and_a_journalled_proposal_is_not_staged_twice() {
    let propose = tool_call(
        "memory_propose",
        json!({"subject": "G. Stanley Hall", "predicate": "first president of",
               "object": "American Psychological Association", "source": "musique"}),
    );
    let (port, seen) = scripted(vec![
        // `weft run`: the proposal, then the next turn hangs until the process is killed.
        Answer::Body(propose.clone()),
        Answer::Hang,
        // `weft resume`: the same proposal again (answered from the journal), a search, the
        // outcome.
        Answer::Body(propose),
        Answer::Body(tool_call(
            "memory_search",
            json!({"query": "Where was Hall born?"}),
        )),
        Answer::Body(tool_call("emit_output", json!({"outcome": "Ashfield"}))),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let db = d.join(".weft/memory.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    seeded_store(&db);
    std::fs::write(
        d.join("weft.toml"),
        profile(port, "[memory]\ndb = \".weft/memory.db\"\n"),
    )
    .unwrap();
    std::fs::write(d.join("memory.agraph.yaml"), DOC).unwrap();
    let run = [
        "run",
        "memory.agraph.yaml",
        "--config",
        "weft.toml",
        "--db",
        "m.db",
    ];
    let asked = || {
        while seen.lock().unwrap().len() < 2 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    };
    let (run_id, effect_seen) = kill::kill_at_kind(d, &run, "tool_effect", asked);
    assert!(effect_seen, "no tool_effect before the kill");

    let out = kill::weft()
        .current_dir(d)
        .env("USER", "memory-tester")
        .args(["resume", &run_id, "--db", "m.db", "--config", "weft.toml"])
        .args(["--retry-uncertain", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{stderr}"));
    assert_eq!(report["status"], "succeeded", "{report} {stderr}");
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 5, "{requests:?}");
    // The resumed attempt was offered the tools, told the journalled proposal's answer and
    // answered its search from the store.
    assert!(requests[2].contains("\"memory_search\""), "{}", requests[2]);
    let replayed = tool_reply(&requests[3], "call_memory_propose");
    assert_eq!(replayed["status"], "staged", "{replayed}");
    let found = tool_reply(&requests[4], "call_memory_search");
    assert_eq!(found["edges"][0]["object"], "Ashfield", "{found}");

    // One candidate, staged by the killed attempt, with the run's provenance.
    let memory = Memory::open(&db, Config::default()).unwrap();
    assert_eq!(memory.stats().unwrap().candidates_staged, 1);
    let record = memory
        .provenance(replayed["candidate"].as_i64().unwrap())
        .unwrap();
    assert_eq!(record.provenance.run_id, run_id);
    assert_eq!(record.provenance.chunk, "learn#1");
}

#[test]
fn config_check_shows_the_memory_store_and_refuses_a_wrong_table() {
    let dir = tempfile::tempdir().unwrap();
    let check = |memory: &str| {
        std::fs::write(dir.path().join("weft.toml"), profile(1, memory)).unwrap();
        Command::cargo_bin("weft")
            .unwrap()
            .current_dir(dir.path())
            .args(["config", "check"])
            .output()
            .unwrap()
    };
    let out = check("[memory]\ndb = \".weft/memory.db\"\n");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(
            "memory: .weft/memory.db (memory_search, memory_subgraph, memory_propose, memory_verify"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("memory embedder:"), "{stdout}");
    // A check opens nothing (nor reads the key variable).
    assert!(!dir.path().join(".weft/memory.db").exists());
    let out = check(
        "[memory]\ndb = \"m.db\"\n[memory.embedder]\nbase_url = \"http://127.0.0.1:9/\"\n\
         model = \"e5\"\napi_key_env = \"WEFT_TEST_SURELY_UNSET_EMBED_KEY\"\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(
            "memory embedder: e5 at http://127.0.0.1:9/v1/embeddings, key from $WEFT_TEST_SURELY_UNSET_EMBED_KEY"
        ),
        "{stdout}"
    );
    let out = check("[memory]\ndb = \"\"\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("`memory.db`: the path is empty"),
        "{stderr}"
    );
    let out = check("");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("memory:"));
}

/// The toy embedding the loopback embedder gives a text: births one way, the rest another.
fn toy_vector(text: &str) -> Vec<f32> {
    let text = text.to_lowercase();
    if text.contains("born") || text.contains("birthplace") {
        vec![1.0, 0.1]
    } else {
        vec![0.1, 1.0]
    }
}

/// A loopback `/v1/embeddings` server: the exact wire format, `toy_vector` of each input.
fn embedder_server() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    responding(|body| {
        let request: Value = serde_json::from_str(body).unwrap();
        let data: Vec<Value> = request["input"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(index, text)| {
                json!({"object": "embedding", "index": index,
                       "embedding": toy_vector(text.as_str().unwrap())})
            })
            .collect();
        json!({"object": "list", "data": data, "model": request["model"],
               "usage": {"prompt_tokens": 4, "total_tokens": 4}})
        .to_string()
    })
}

/// Runs the memory node once with this `[memory]` text, the model searching `question`;
/// returns what the search answered the model.
fn search_run(memory_toml: &str, question: &str) -> Value {
    let (port, seen) = scripted_provider(vec![
        tool_call("memory_search", json!({"query": question, "limit": 1})),
        tool_call("emit_output", json!({"outcome": "done"})),
    ]);
    let dir = tempfile::tempdir().unwrap();
    store_with_vectors(&dir.path().join(".weft/memory.db"));
    std::fs::write(dir.path().join("weft.toml"), profile(port, memory_toml)).unwrap();
    std::fs::write(dir.path().join("memory.agraph.yaml"), DOC).unwrap();
    let out = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir.path())
        .env("WEFT_TEST_EMBED_KEY", "sk-embed-test")
        .args(["run", "memory.agraph.yaml", "--config", "weft.toml"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "the search, then emit_output: {stderr}");
    tool_reply(&requests[1], "call_memory_search")
}

/// [`seeded_store`], a second passage, and the embeddings of both as a program stores them.
fn store_with_vectors(db: &Path) {
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    seeded_store(db);
    let memory = Memory::open(db, Config::default()).unwrap();
    memory
        .add_passages(vec![Passage {
            source: "musique".into(),
            chunk: "p20".into(),
            text: "Eiffel Tower stands in Paris.".into(),
        }])
        .unwrap();
    memory
        .add_passage_vectors(vec![
            PassageVector {
                source: "musique".into(),
                chunk: "p11".into(),
                vector: toy_vector("Granville Stanley Hall was born in Ashfield, Massachusetts."),
            },
            PassageVector {
                source: "musique".into(),
                chunk: "p20".into(),
                vector: toy_vector("Eiffel Tower stands in Paris."),
            },
        ])
        .unwrap();
}

#[test]
fn a_configured_embedder_seeds_the_search_by_vectors_and_without_one_full_text_alone() {
    // No word of the question (longer than two letters) is in a passage: full text finds
    // nothing, the embedding finds the birth passage.
    let question = "Which town is the psychologist's birthplace?";
    let without = search_run("[memory]\ndb = \".weft/memory.db\"\n", question);
    assert_eq!(without["passages"], json!([]), "{without}");
    assert_eq!(without["edges"], json!([]), "{without}");

    let (embed_port, embedded) = embedder_server();
    let with = search_run(
        &format!(
            "[memory]\ndb = \".weft/memory.db\"\n[memory.embedder]\n\
             base_url = \"http://127.0.0.1:{embed_port}/\"\nmodel = \"embed-small\"\n\
             api_key_env = \"WEFT_TEST_EMBED_KEY\"\ndimensions = 2\nmax_attempts = 1\n"
        ),
        question,
    );
    assert_eq!(with["passages"], json!(["musique#p11"]), "{with}");
    let edges = with["edges"].as_array().unwrap();
    assert_eq!(edges.len(), 1, "{with}");
    assert_eq!(
        (&edges[0]["subject"], &edges[0]["object"], &edges[0]["hop"]),
        (&json!("G. Stanley Hall"), &json!("Ashfield"), &json!(0))
    );
    // One embeddings request: the question, in the wire format, with the dimensions asked.
    let sent = embedded.lock().unwrap().clone();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let sent: Value = serde_json::from_str(&sent[0]).unwrap();
    assert_eq!(
        sent,
        json!({"model": "embed-small", "input": [question], "dimensions": 2})
    );
}

#[test]
fn an_unreachable_embedder_answers_the_search_with_an_error_naming_it() {
    // A port that was just free: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let (chat_port, seen) = scripted_provider(vec![
        tool_call("memory_search", json!({"query": "Where was Hall born?"})),
        tool_call("emit_output", json!({"outcome": "done"})),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(".weft/memory.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    seeded_store(&db);
    std::fs::write(
        dir.path().join("weft.toml"),
        profile(
            chat_port,
            &format!(
                "[memory]\ndb = \".weft/memory.db\"\n[memory.embedder]\n\
                 base_url = \"http://127.0.0.1:{port}\"\nmodel = \"e\"\nmax_attempts = 1\n"
            ),
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("memory.agraph.yaml"), DOC).unwrap();
    let out = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir.path())
        .args(["run", "memory.agraph.yaml", "--config", "weft.toml"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let requests = seen.lock().unwrap().clone();
    let reply = tool_reply(&requests[1], "call_memory_search");
    let text = reply.to_string();
    assert!(
        text.contains(&format!(
            "memory_search: the embedder failed: http://127.0.0.1:{port}/v1/embeddings"
        )),
        "{text}"
    );
}

#[test]
fn weft_memory_query_with_config_embeds_the_search_and_without_it_searches_full_text() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    store_with_vectors(&d.join("store/m.db"));
    let (embed_port, embedded) = embedder_server();
    std::fs::write(
        d.join("weft.toml"),
        format!(
            "[memory]\ndb = \"store/m.db\"\n[memory.embedder]\n\
             base_url = \"http://127.0.0.1:{embed_port}\"\nmodel = \"embed-small\"\nmax_attempts = 1\n"
        ),
    )
    .unwrap();
    let question = "Which town is the psychologist's birthplace?";
    let query = |extra: &[&str]| {
        let out = Command::cargo_bin("weft")
            .unwrap()
            .current_dir(d)
            .arg("memory")
            .args(extra)
            .args(["query", "--search", question, "--hops", "0", "--json"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr,
        )
    };
    // --config: the store its [memory] table names, and the search embedded.
    let (code, stdout, stderr) = query(&["--config", "weft.toml"]);
    assert_eq!(code, Some(0), "{stderr}");
    let served: Value = serde_json::from_str(&stdout).unwrap();
    // Both passages have vectors (three are taken): nearest first.
    assert_eq!(
        served["passages"],
        json!(["musique#p11", "musique#p20"]),
        "{served}"
    );
    assert_eq!(served["edges"][0]["object"], "Ashfield", "{served}");
    assert_eq!(embedded.lock().unwrap().len(), 1);
    // The same store by --db alone: full text, which finds nothing; no embedding asked.
    let (code, stdout, stderr) = query(&["--db", "store/m.db"]);
    assert_eq!(code, Some(0), "{stderr}");
    let served: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(served["passages"], json!([]), "{served}");
    assert_eq!(served["edges"], json!([]), "{served}");
    assert_eq!(embedded.lock().unwrap().len(), 1);
    // An embedder nobody answers: exit 2, naming its URL.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    std::fs::write(
        d.join("down.toml"),
        format!(
            "[memory]\ndb = \"store/m.db\"\n[memory.embedder]\n\
             base_url = \"http://127.0.0.1:{port}\"\nmodel = \"e\"\nmax_attempts = 1\n"
        ),
    )
    .unwrap();
    let (code, _, stderr) = query(&["--config", "down.toml"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the embedder at http://127.0.0.1:{port}/v1/embeddings: "
        )),
        "{stderr}"
    );
    // A file without [memory] is refused, naming it.
    std::fs::write(d.join("none.toml"), "[workspace]\n").unwrap();
    let (code, _, stderr) = query(&["--config", "none.toml"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("none.toml has no [memory] table"),
        "{stderr}"
    );
}

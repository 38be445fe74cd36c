//! The memory tools (`weft_tools::memory`) through the `Toolbox`, on a real memory store:
//! a proposal carries the caller's run, node, attempt and actor as provenance (the model
//! cannot supply them), two verifiers' votes make it canonical, the subgraph and search tools
//! serve it with its provenance id, and a replayed proposal is answered from the journal.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Fixture, failed, ok};
use serde_json::json;
use weft_core::FailureClass;
use weft_memory::{Config, Memory, Passage};
use weft_policy::OperatorPolicy;
use weft_tools::Toolbox;

const ALLOW: &str = "[policy]\n[[policy.rules]]\ndecision = \"allow\"\npermission = \"custom:call:host/memory_*\"\n";

fn fixture(memory: &Memory, actor: &str) -> Fixture {
    let mut f = Fixture::new(json!({"permissions": ["custom:call:host/memory_*"]}));
    let mut toolbox = Toolbox::new().unwrap();
    for tool in weft_tools::memory::memory_tools(memory) {
        toolbox = toolbox.with_host_tool(tool).unwrap();
    }
    f.toolbox = toolbox;
    f.policy = OperatorPolicy::from_toml(ALLOW).unwrap();
    f.identity.subject = actor.into();
    f
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proposals_carry_the_callers_provenance_and_need_two_verifiers() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(&dir.path().join("memory.db"), Config::default()).unwrap();
    let mut alice = fixture(&memory, "alice");
    let proposal = json!({"subject": "G. Stanley Hall", "predicate": "first president of",
        "object": "American Psychological Association", "source": "wiki/APA"});
    let r = alice.call("memory_propose", proposal.clone()).await;
    let answer = ok(&r).clone();
    assert_eq!(answer["status"], "staged");
    let candidate = answer["candidate"].as_i64().unwrap();
    let provenance = memory.provenance(candidate).unwrap();
    assert_eq!(provenance.provenance.run_id, "run-1");
    assert_eq!(provenance.provenance.chunk, "n#1");
    assert_eq!(provenance.provenance.extractor, "agent:alice");
    // The same call replayed (same run, node, attempt, index) is answered from the journal.
    let again = alice.call("memory_propose", proposal.clone()).await;
    assert_eq!(ok(&again), &answer);
    assert_eq!(memory.stats().unwrap().candidates_staged, 1);
    // The model cannot name another run.
    alice.next();
    let mut spoofed = proposal.clone();
    spoofed["run"] = json!("someone-else");
    let (class, _) = failed(&alice.call("memory_propose", spoofed).await);
    assert_eq!(class, FailureClass::ValidationError);

    alice.next();
    let r = alice
        .call(
            "memory_verify",
            json!({"candidate": candidate, "approve": true, "reason": "matches"}),
        )
        .await;
    assert_eq!(
        ok(&r),
        &json!({"outcome": "pending", "approvals": 1, "rejections": 0})
    );
    let bob = fixture(&memory, "bob");
    let r = bob
        .call(
            "memory_verify",
            json!({"candidate": candidate, "approve": true}),
        )
        .await;
    assert_eq!(ok(&r)["outcome"], "promoted");

    let r = bob
        .call(
            "memory_subgraph",
            json!({"seeds": ["APA", "American Psychological Association"], "hops": 1}),
        )
        .await;
    let served = ok(&r);
    assert_eq!(served["edges"][0]["subject"], "G. Stanley Hall");
    assert_eq!(served["edges"][0]["provenance"], candidate);
    assert_eq!(served["unresolved_seeds"], json!(["APA"]));

    memory
        .add_passages(vec![Passage {
            source: "wiki/APA".into(),
            chunk: "n#1".into(),
            text: "Hall was the first president of the APA".into(),
        }])
        .unwrap();
    let r = bob
        .call("memory_search", json!({"query": "first president"}))
        .await;
    let found = ok(&r);
    assert_eq!(found["passages"], json!(["wiki/APA#n#1"]));
    assert_eq!(found["edges"][0]["provenance"], candidate);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inadmissible_proposal_is_rejected_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::open(&dir.path().join("memory.db"), Config::default()).unwrap();
    let f = fixture(&memory, "alice");
    let r = f
        .call(
            "memory_propose",
            json!({"subject": "Hall", "predicate": "is", "object": "hall", "source": "s"}),
        )
        .await;
    assert_eq!(ok(&r)["status"], "rejected");
    assert!(ok(&r)["reason"].as_str().unwrap().contains("same entity"));
    assert_eq!(memory.graph().current_edges(), 0);
}

//! A workspace on disk with a node's grants, an operator policy, a journal and approvals:
//! what every tool test runs a call against.
#![allow(dead_code, reason = "each test binary uses part of the fixture")]

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::{Value, json};
use weft_core::FailureClass;
use weft_policy::{Identity, NodeGrants, OperatorPolicy, Workspace, node_grants};
use weft_sandbox::Sandbox;
use weft_tools::{CallId, MemoryJournal, ToolEnv, ToolLimits, ToolOutcome, Toolbox};

/// The operator's rules: secrets denied, writes under `deploy/` asked, other fs allowed,
/// shell allowed except `rm`.
pub const POLICY: &str = r#"
[policy]
version = "test"

[[policy.rules]]
decision = "deny"
permission = "fs:*:secret/**"
reason = "secrets are off limits"

[[policy.rules]]
decision = "ask"
permission = "fs:write:deploy/**"

[[policy.rules]]
decision = "allow"
permission = "fs:*"

[[policy.rules]]
decision = "deny"
permission = "shell:exec:rm*"

[[policy.rules]]
decision = "allow"
permission = "shell:exec:*"
"#;

pub struct Fixture {
    /// Holds the workspace (`ws`) and a sibling directory outside it (`outside`).
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub workspace: Workspace,
    pub policy: OperatorPolicy,
    pub grants: NodeGrants,
    pub identity: Identity,
    pub journal: MemoryJournal,
    pub approvals: BTreeSet<String>,
    pub toolbox: Toolbox,
    pub sandbox: Option<Sandbox>,
    pub fetcher: Option<Box<dyn weft_tools::Fetcher>>,
    pub index: u32,
}

impl Fixture {
    /// A node with `requirements`.
    pub fn new(requirements: Value) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        let doc = json!({"nodes": {"n": {"type": "task", "requirements": requirements}}});
        Fixture {
            workspace: Workspace::new(root.to_str().unwrap()).unwrap(),
            root,
            dir,
            policy: OperatorPolicy::from_toml(POLICY).unwrap(),
            grants: node_grants(&doc, "n").unwrap(),
            identity: Identity {
                subject: "alice".into(),
                session: None,
            },
            journal: MemoryJournal::default(),
            approvals: BTreeSet::new(),
            toolbox: Toolbox::new().unwrap(),
            sandbox: None,
            fetcher: None,
            index: 1,
        }
    }

    /// A read-write node that may read and write everything and run anything.
    pub fn writer() -> Fixture {
        Fixture::new(json!({"workspace": "read_write",
            "permissions": ["fs:read:**", "fs:write:**", "shell:exec:*"]}))
    }

    pub fn call_id(&self) -> CallId {
        CallId {
            run: "run-1".into(),
            node: "n".into(),
            attempt: 1,
            index: self.index,
        }
    }

    /// Runs call number `self.index` (the same slot until the test moves it on).
    pub async fn call(&self, tool: &str, arguments: Value) -> ToolOutcome {
        let id = self.call_id();
        let env = ToolEnv {
            workspace: &self.workspace,
            policy: &self.policy,
            grants: Some(&self.grants),
            identity: &self.identity,
            approvals: &self.approvals,
            journal: &self.journal,
            call: &id,
            sandbox: self.sandbox.as_ref(),
            fetcher: self.fetcher.as_deref(),
            limits: ToolLimits::default(),
        };
        self.toolbox.call(tool, &arguments, &env).await
    }

    /// Moves on to the next call slot.
    pub fn next(&mut self) {
        self.index += 1;
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn put(&self, rel: &str, content: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    pub fn get(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }
}

/// The result of an `Ok` outcome (panics with the outcome otherwise).
pub fn ok(outcome: &ToolOutcome) -> &Value {
    match outcome {
        ToolOutcome::Ok { result, .. } => result,
        other => panic!("expected Ok, got {other:?}"),
    }
}

/// The class and message of a `Failed` outcome.
pub fn failed(outcome: &ToolOutcome) -> (FailureClass, String) {
    match outcome {
        ToolOutcome::Failed { class, message } => (*class, message.clone()),
        other => panic!("expected Failed, got {other:?}"),
    }
}

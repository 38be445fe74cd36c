//! The agent port: the one interface through which the engine runs every node attempt that
//! does work (`docs/engine.md` §3).
//!
//! The driver builds an [`AgentRequest`] (node id, attempt, resolved inputs, the rendered
//! brief, declared outputs, retry feedback, the routed model, the attempt's limits) and an
//! [`Agent`] answers with an [`AgentResult`] (outputs, [`Usage`], a classified failure, an
//! optional transcript). What happens around the call — input and output typing, `success`,
//! retries, the failure ladder, budgets across attempts and nodes — stays in the driver, so
//! every agent gets the same semantics.
//!
//! Agents live in an [`AgentRegistry`] (`RunOptions::agents`): the default one holds
//! [`exec::ExecAgent`] (`x-weft-exec` nodes) and [`replay::ReplayAgent`] (model turns played
//! from a cassette, the model agent); tests and benches register an in-process agent.
//! [`sandboxed::SandboxedExecAgent`] replaces `exec` when commands must run confined
//! (`weft run --sandbox`).

pub mod budget;
pub mod cassette;
pub mod exec;
pub mod explain;
pub mod guidance;
pub mod journal;
pub mod replay;
pub mod route;
pub mod sandboxed;
pub mod tiers;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value};
use weft_core::FailureClass;

pub use budget::{Limits, Usage};
pub use guidance::Guidance;
pub use route::{Model, Route, Tier, TierRequest};

/// The future an agent returns.
pub type AgentFuture<'a> = Pin<Box<dyn Future<Output = AgentResult> + Send + 'a>>;

/// One declared output of the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputDecl {
    pub name: String,
    pub required: bool,
    /// The declared AGS `type`, when there is one.
    pub type_name: Option<String>,
}

/// What the engine asks an agent to do: one attempt of one node.
#[derive(Clone, Debug)]
pub struct AgentRequest {
    pub node: String,
    /// 1-based attempt number.
    pub attempt: u32,
    /// The resolved inputs (an object; retries get the same ones).
    pub inputs: Value,
    /// The node's `description` and its rendered `instructions`.
    pub brief: Option<String>,
    /// For model agents: the rationale, input and output descriptions, `path_hint`s and the
    /// definition of done the node declares (empty for `exec` and in tests that need none).
    pub guidance: Arc<Guidance>,
    pub outputs: Vec<OutputDecl>,
    /// For a `decision` node with `evaluator: agent`: the labels the answer must be one of
    /// (the label comes back as the output `decision`). Empty otherwise.
    pub decision_labels: Vec<String>,
    /// The decision's `default_branch`, when it declares one: an answer outside
    /// `decision_labels` is then not the agent's failure but the default's case (`RT022`),
    /// so an agent must not refuse it.
    pub decision_default: Option<String>,
    /// What the previous attempt taught (`retry.feedback`), attempts ≥ 2 only.
    pub feedback: Option<String>,
    /// The model this attempt is routed to (model agents), `None` for `exec`.
    pub route: Option<Route>,
    /// What this attempt may spend (node limits less what earlier attempts spent, capped by
    /// what the run has left).
    pub limits: Limits,
    /// The project directory.
    pub workspace: PathBuf,
    /// The executor's own block (`x-weft-exec` for `exec`), `null` for model agents.
    pub config: Value,
    /// Digests of the tool actions a person approved for this node (`tool_approval`
    /// waits, `docs/engine.md` §3m): an `ask` bound to one of them is allowed.
    pub approvals: Vec<String>,
    /// The node's tool journal as the log holds it, and the port that logs new side effects
    /// (`docs/engine.md` §3o); the default (no port) for requests made outside a run.
    pub journal: journal::AttemptJournal,
}

/// An action a policy `ask` holds for a person: the attempt ends, the node waits (stage
/// `tool_approval`), and an approval lets its next attempt take exactly that action.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApprovalRequest {
    /// `sha256:<hex>` binding tool, normalised arguments, identity and policy version.
    pub digest: String,
    /// The logical tool.
    pub tool: String,
    /// The normalised resource, in words.
    pub resource: String,
    /// Why the policy asks.
    pub reason: String,
}

/// A classified failure: its failure class (DIGEST §1.16) and a one-line message with the
/// evidence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub class: FailureClass,
    pub message: String,
}

impl Failure {
    pub fn new(class: FailureClass, message: impl Into<String>) -> Failure {
        Failure {
            class,
            message: message.into(),
        }
    }
}

/// What an agent did in one attempt.
#[derive(Clone, Debug, Default)]
pub struct AgentResult {
    pub outputs: Map<String, Value>,
    pub usage: Usage,
    pub failure: Option<Failure>,
    /// The turns, for `retry.feedback: full_transcript` (not logged).
    pub transcript: Option<Value>,
    /// With a `permission_denied` failure: the action that waits for a person's approval.
    pub approval: Option<ApprovalRequest>,
}

impl AgentResult {
    /// A result that failed before producing anything.
    pub fn failed(class: FailureClass, message: impl Into<String>) -> AgentResult {
        AgentResult {
            failure: Some(Failure::new(class, message)),
            ..AgentResult::default()
        }
    }
}

/// Runs node attempts.
pub trait Agent: Send + Sync {
    /// The registry name (`exec`, `replay`, …).
    fn name(&self) -> &str;
    /// The models this agent serves (its routing profile); empty for agents that call no
    /// model.
    fn models(&self) -> Vec<Model> {
        Vec::new()
    }
    /// Whether this agent can run `node` at all: an `Err` refuses the run up front.
    fn check(&self, _node: &str) -> Result<(), String> {
        Ok(())
    }
    /// Runs one attempt.
    fn run<'a>(&'a self, request: &'a AgentRequest) -> AgentFuture<'a>;
}

/// The name of the agent that runs `x-weft-exec` nodes.
pub const EXEC: &str = "exec";
/// The name of the default model agent.
pub const REPLAY: &str = "replay";

/// The agents a run may use, by name, and which one does model work.
#[derive(Clone, Default)]
pub struct AgentRegistry {
    agents: BTreeMap<String, Arc<dyn Agent>>,
    model_agent: Option<String>,
}

impl std::fmt::Debug for AgentRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRegistry")
            .field("agents", &self.agents.keys().collect::<Vec<_>>())
            .field("model_agent", &self.model_agent)
            .finish()
    }
}

impl AgentRegistry {
    /// An empty registry.
    pub fn new() -> AgentRegistry {
        AgentRegistry::default()
    }

    /// `exec`, and `replay` (the model agent) over `cassette` — without one, `replay`
    /// refuses every model node up front.
    pub fn with_defaults(cassette: Option<cassette::Cassette>) -> AgentRegistry {
        let mut r = AgentRegistry::new();
        r.register(Arc::new(exec::ExecAgent));
        r.register(Arc::new(replay::ReplayAgent::new(cassette)));
        r.set_model_agent(REPLAY);
        r
    }

    /// Adds (or replaces) an agent under its name.
    pub fn register(&mut self, agent: Arc<dyn Agent>) {
        self.agents.insert(agent.name().to_string(), agent);
    }

    /// Names the agent that runs model nodes (tasks without `x-weft-exec`, decisions with
    /// `evaluator: agent`).
    pub fn set_model_agent(&mut self, name: &str) {
        self.model_agent = Some(name.to_string());
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Agent>> {
        self.agents.get(name)
    }

    /// The model agent, if one is named and registered.
    pub fn model_agent(&self) -> Option<&Arc<dyn Agent>> {
        self.model_agent.as_deref().and_then(|n| self.agents.get(n))
    }
}

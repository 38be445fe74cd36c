//! Graph generation (`weft generate`): a model drafts an AGS document for an objective,
//! weft validates it and feeds the findings back until it is valid and clean under
//! `--strict` or a bounded number of repair rounds is spent. The result is a draft for a
//! person to review; nothing here runs it.
//!
//! Every model call is one forced tool call on a fresh conversation (`docs/agents.md` §6b):
//! 1. `draft_skeleton` ([`tools`]): graph id, title, description, cost bound, and each node's
//!    id, type, title and `depends_on`;
//! 2. `draft_node` for each node, dependencies first, shown the skeleton and the outputs of
//!    the nodes already drafted;
//! 3. the document is assembled ([`assemble`]) and validated (`weft_ags::validate`); while a
//!    finding that `--strict` fails on remains and rounds are left, a repair round sends each
//!    node's findings back with its draft (`draft_node` again) and the graph's own findings
//!    with the skeleton (`draft_skeleton` again; kept nodes keep their bodies, new ones are
//!    drafted) — each finding as code, pointer, message and help ([`feedback`]).
//!
//! Arguments are read leniently (a missing call or a non-object is an empty object): the
//! validator, not the tool schema, judges the draft, and its findings are the feedback.

pub mod assemble;
pub mod feedback;
pub mod tools;

use serde_json::{Map, Value, json};
use weft_ags::Finding;

use crate::chat::{ChatRequest, Message, TokenUsage, ToolChoice, ToolDef};
use crate::error::ProviderError;
use crate::provider::Provider;
use assemble::{Skeleton, document};
use feedback::{blocking, by_node, render};
use tools::{node_tool, skeleton_tool};

/// How a generation talks to the model.
#[derive(Clone, Debug, PartialEq)]
pub struct GenerateSettings {
    /// Repair rounds after the first draft at most.
    pub max_rounds: u32,
    /// `max_tokens` of each call.
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    /// Nodes of the skeleton kept at most (the rest are dropped before drafting).
    pub max_nodes: usize,
}

impl Default for GenerateSettings {
    fn default() -> GenerateSettings {
        GenerateSettings {
            max_rounds: 3,
            max_tokens: 4096,
            temperature: Some(0.0),
            max_nodes: assemble::MAX_NODES,
        }
    }
}

/// What a generation produced.
#[derive(Debug)]
pub struct Generated {
    /// The last draft.
    pub document: Value,
    /// Its findings (all severities, sorted by pointer).
    pub findings: Vec<Finding>,
    /// No finding `--strict` fails on.
    pub clean: bool,
    /// Repair rounds spent.
    pub rounds: u32,
    /// The number of findings to fix after the first draft and after each repair round.
    pub blocking_per_draft: Vec<usize>,
    /// Model calls made, and their tokens.
    pub calls: u32,
    pub usage: TokenUsage,
    /// A model call that failed during a repair round (the draft before it is kept).
    pub stopped: Option<ProviderError>,
}

const SYSTEM: &str = "You draft AGS 1.0 work graphs for weft, a workflow engine. A graph is a \
set of nodes; each node is one bounded, concrete step done by an agent. Node types: `task` \
(does work and declares typed outputs), `decision` (an agent picks one of its branches), `gate` \
(waits for a person). Data flows through inputs: an input reads an output of a node it depends \
on with `from: nodes.<node_id>.outputs.<output_name>`. Value types: string, markdown, number, \
integer, boolean, object, array, file, file_set. Intelligence tiers: minimal, standard, \
advanced, frontier. Answer only by calling the tool you are given; text outside it is ignored.";

/// Drafts a graph for `objective` on `provider`/`model`. `Err` only when the first call
/// (the skeleton) fails: later failures stop the loop and are reported in
/// [`Generated::stopped`] with the draft so far.
pub async fn generate(
    provider: &dyn Provider,
    model: &str,
    objective: &str,
    settings: &GenerateSettings,
) -> Result<Generated, ProviderError> {
    let mut run = Run {
        provider,
        model,
        settings,
        calls: 0,
        usage: TokenUsage::default(),
    };
    let first = format!(
        "Objective: {objective}\n\nDraft the skeleton of a work graph that achieves the objective: \
         usually two to six nodes, each one concrete step, in the order they run. Call {}.",
        tools::SKELETON
    );
    let mut skeleton = Skeleton::read(
        &run.call(&skeleton_tool(settings.max_nodes), first).await?,
        settings.max_nodes,
    );
    let mut bodies = Map::new();
    let mut stopped = None;
    if let Err(e) = run.draft_missing(objective, &skeleton, &mut bodies).await {
        stopped = Some(e);
    }
    let mut rounds = 0;
    let mut blocking_per_draft = Vec::new();
    loop {
        let doc = document(objective, &skeleton, &bodies);
        let mut findings = weft_ags::validate::validate(&doc);
        findings.sort_by(|a, b| (&a.pointer, a.code).cmp(&(&b.pointer, b.code)));
        let to_fix = findings.iter().filter(|f| blocking(f)).count();
        blocking_per_draft.push(to_fix);
        if to_fix == 0 || rounds >= settings.max_rounds || stopped.is_some() {
            return Ok(Generated {
                document: doc,
                clean: to_fix == 0,
                findings,
                rounds,
                blocking_per_draft,
                calls: run.calls,
                usage: run.usage,
                stopped,
            });
        }
        rounds += 1;
        if let Err(e) = run
            .repair(objective, &mut skeleton, &mut bodies, &findings)
            .await
        {
            stopped = Some(e);
        }
    }
}

struct Run<'a> {
    provider: &'a dyn Provider,
    model: &'a str,
    settings: &'a GenerateSettings,
    calls: u32,
    usage: TokenUsage,
}

impl Run<'_> {
    /// One forced call of `tool`; its arguments (an empty object when it made none).
    async fn call(&mut self, tool: &ToolDef, prompt: String) -> Result<Value, ProviderError> {
        let mut request = ChatRequest::new(
            self.model,
            vec![Message::system(SYSTEM), Message::user(prompt)],
        );
        request.tools = vec![tool.clone()];
        request.tool_choice = ToolChoice::Named(tool.name.clone());
        request.max_tokens = self.settings.max_tokens;
        request.temperature = self.settings.temperature;
        self.calls += 1;
        let answer = self.provider.chat(&request).await?;
        self.usage.input_tokens += answer.usage.input_tokens;
        self.usage.output_tokens += answer.usage.output_tokens;
        Ok(answer
            .tool_calls
            .into_iter()
            .find(|c| c.name == tool.name)
            .map_or_else(|| json!({}), |c| c.arguments))
    }

    /// Drafts every node of `skeleton` that has no body yet, dependencies first.
    async fn draft_missing(
        &mut self,
        objective: &str,
        skeleton: &Skeleton,
        bodies: &mut Map<String, Value>,
    ) -> Result<(), ProviderError> {
        for node in skeleton.drafting_order() {
            if bodies.contains_key(&node.id) {
                continue;
            }
            let prompt = format!(
                "{}\n\nDraft node `{}` ({}: {}){}. Its inputs may only read outputs of the nodes \
                 it depends on. Declare the outputs it produces, typed and described. Call {}.",
                context(objective, skeleton, bodies),
                node.id,
                node.node_type,
                node.title,
                depends(&node.depends_on),
                tools::NODE
            );
            let body = self.call(&node_tool(), prompt).await?;
            bodies.insert(node.id.clone(), body);
        }
        Ok(())
    }

    /// One repair round: the graph's findings with the skeleton, each node's with its draft.
    async fn repair(
        &mut self,
        objective: &str,
        skeleton: &mut Skeleton,
        bodies: &mut Map<String, Value>,
        findings: &[Finding],
    ) -> Result<(), ProviderError> {
        let groups = by_node(findings);
        let mut redrafted: Vec<String> = Vec::new();
        if let Some(graph) = groups.get(&None) {
            let prompt = format!(
                "Objective: {objective}\n\nYour skeleton was:\n```json\n{}\n```\nThe validator \
                 found these problems in the graph:\n{}\n\nCall {} again with a corrected skeleton.",
                skeleton.raw,
                render(graph),
                tools::SKELETON
            );
            *skeleton = Skeleton::read(
                &self
                    .call(&skeleton_tool(self.settings.max_nodes), prompt)
                    .await?,
                self.settings.max_nodes,
            );
            bodies.retain(|id, _| skeleton.nodes.iter().any(|n| &n.id == id));
            let before: Vec<String> = bodies.keys().cloned().collect();
            self.draft_missing(objective, skeleton, bodies).await?;
            redrafted.extend(bodies.keys().filter(|k| !before.contains(k)).cloned());
        }
        for (id, found) in &groups {
            let Some(id) = id else { continue };
            let Some(node) = skeleton.nodes.iter().find(|n| &n.id == id) else {
                continue;
            };
            if redrafted.contains(id) {
                continue;
            }
            let draft = bodies.get(id).cloned().unwrap_or_else(|| json!({}));
            let prompt = format!(
                "{}\n\nYour draft of node `{id}` ({}: {}){} was:\n```json\n{draft}\n```\nThe \
                 validator found these problems in it:\n{}\n\nCall {} again with the corrected \
                 node `{id}`.",
                context(objective, skeleton, bodies),
                node.node_type,
                node.title,
                depends(&node.depends_on),
                render(found),
                tools::NODE
            );
            let body = self.call(&node_tool(), prompt).await?;
            bodies.insert(id.clone(), body);
        }
        Ok(())
    }
}

fn depends(on: &[String]) -> String {
    if on.is_empty() {
        String::new()
    } else {
        format!(", which depends on {}", on.join(", "))
    }
}

/// The objective, the skeleton's nodes and the outputs drafted so far.
fn context(objective: &str, skeleton: &Skeleton, bodies: &Map<String, Value>) -> String {
    let mut s = format!(
        "Objective: {objective}\n\nGraph `{}`: {} — {}\nNodes:\n",
        skeleton.id, skeleton.title, skeleton.description
    );
    for n in &skeleton.nodes {
        s.push_str(&format!(
            "- `{}` ({}): {}{}\n",
            n.id,
            n.node_type,
            n.title,
            depends(&n.depends_on)
        ));
    }
    let outputs: Vec<String> = skeleton
        .nodes
        .iter()
        .filter_map(|n| Some((n, bodies.get(&n.id)?.get("outputs")?.as_object()?)))
        .flat_map(|(n, outs)| {
            outs.iter().map(move |(name, spec)| {
                format!(
                    "- nodes.{}.outputs.{name} ({})",
                    n.id,
                    spec.get("type").and_then(Value::as_str).unwrap_or("any")
                )
            })
        })
        .collect();
    if !outputs.is_empty() {
        s.push_str("Outputs of the nodes drafted so far:\n");
        s.push_str(&outputs.join("\n"));
        s.push('\n');
    }
    s.trim_end().to_string()
}

/// [`generate`] on a fresh current-thread runtime, for callers without one (the CLI).
pub fn generate_blocking(
    provider: &dyn Provider,
    model: &str,
    objective: &str,
    settings: &GenerateSettings,
) -> std::io::Result<Result<Generated, ProviderError>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(generate(provider, model, objective, settings)))
}

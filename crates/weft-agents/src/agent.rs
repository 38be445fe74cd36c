//! The model agent: runs a node attempt as one bounded agent loop on a live [`Provider`]
//! (implements the engine's [`Agent`] port, `docs/agents.md`).
//!
//! Per attempt: the routed provider and model; a system message and the task prompt
//! ([`crate::prompt`]); one tool, `emit_output`, whose arguments are checked against the
//! declared outputs ([`crate::output`]). Each model turn is an agent step. Before a turn the
//! step limit is checked and the turn's `max_tokens` is capped by what the attempt may still
//! spend; after it, its tokens (and their cost, when the model has prices) are added to the
//! attempt's [`Usage`] and every limit is checked. A turn without a call, a call of an unknown
//! tool, or arguments that do not fit the outputs are answered (as tool results or a user
//! nudge) and the loop goes on, up to the loop's step bound. The attempt ends on the first
//! valid `emit_output`. The wall-clock limit covers the whole loop.
//!
//! With [`AgentTools`] ([`ModelAgent::with_tools`]), a node is also offered the built-in tools
//! its `requirements.tools` names ([`crate::tools`]); each call runs through the `Toolbox`
//! under the node's permissions and its result, or a refusal labelled as data, is answered as
//! the tool result. `max_tool_calls` is checked before each call runs. A call that needs a
//! person's approval ends the attempt `permission_denied` with the approval digest (waiting
//! for the approval is not built yet).
//!
//! With [`LoopSettings::text_answer`], a node whose one declared output is text also takes
//! the ReAct convention: a turn with text and no tool call is the final answer and fills that
//! output (checked like an `emit_output` call); the tool choice is then left to the model.
//!
//! A tool result that is a JSON string is answered to the model as that text; any other
//! result as its JSON.
//!
//! Failures, by AGS class: provider failures keep theirs (`transient`, `model_error`,
//! `timeout`, `permission_denied`); `budget_exceeded` when a limit is reached; `timeout` past
//! the wall clock; `output_missing` when the loop ends with no `emit_output`;
//! `validation_error` when the last `emit_output` did not fit the outputs.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use weft_engine::agent::replay::EMIT_OUTPUT;
use weft_engine::agent::{Agent, AgentFuture, AgentRequest, AgentResult, Failure, Model, Usage};

use crate::FailureClass;
use crate::chat::{ChatRequest, Message, TokenUsage, ToolChoice};
use crate::cli::{CliConfig, CliSandbox, run_cli};
use crate::output::{accepting, check_emitted_within, emit_output_tool, text_output};
pub use crate::price::Price;
use crate::prompt::{system_prompt, task_prompt, tools_note};
use crate::provider::Provider;
use crate::tools::AgentTools;
use weft_tools::ToolOutcome;

/// The registry name of the model agent.
pub const MODEL: &str = "model";

/// How the loop talks to the model.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopSettings {
    /// Model turns per attempt at most, whatever the node's limits.
    pub max_steps: u64,
    /// `max_tokens` of one turn (lowered to what the attempt may still spend).
    pub max_tokens_per_turn: u32,
    pub temperature: Option<f32>,
    /// Force the `emit_output` call (named tool choice). Weak models never call a tool on
    /// their own; with `emit_output` the only tool, forcing it loses nothing.
    pub force_emit_output: bool,
    /// Read answers as SSE streams.
    pub stream: bool,
    /// A final text answer (a turn with text and no tool call) delivers the node's output
    /// when the node declares exactly one output, of a text type, and is not a decision
    /// ([`crate::output::text_output`]); the model is then not forced to call a tool. Off:
    /// `emit_output` is the only way to deliver.
    pub text_answer: bool,
    /// The most JSON text one output value may hold (default 1 MiB; `[limits]
    /// max_output_bytes` in `weft.toml`): a larger one is refused like a schema violation,
    /// and the attempt ends `validation_error` naming the limit if the model never fits.
    pub max_output_bytes: usize,
}

impl Default for LoopSettings {
    fn default() -> LoopSettings {
        LoopSettings {
            max_steps: 4,
            max_tokens_per_turn: 1024,
            temperature: Some(0.0),
            force_emit_output: true,
            stream: false,
            text_answer: false,
            max_output_bytes: crate::output::DEFAULT_MAX_OUTPUT_BYTES,
        }
    }
}

/// Runs model nodes on live providers.
#[derive(Clone)]
pub struct ModelAgent {
    name: String,
    providers: BTreeMap<String, Arc<dyn Provider>>,
    models: Vec<Model>,
    prices: BTreeMap<String, Price>,
    settings: LoopSettings,
    tools: Option<AgentTools>,
    /// Coding-agent CLI providers, by name (`cli`).
    clis: BTreeMap<String, CliConfig>,
    /// Where CLI providers run; `None`: a CLI-routed attempt is `blocked`.
    cli_sandbox: Option<CliSandbox>,
}

impl std::fmt::Debug for ModelAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelAgent")
            .field("name", &self.name)
            .field("providers", &self.providers.keys().collect::<Vec<_>>())
            .field("clis", &self.clis.keys().collect::<Vec<_>>())
            .field("models", &self.models)
            .field("settings", &self.settings)
            .field("tools", &self.tools)
            .finish()
    }
}

impl ModelAgent {
    /// An agent named [`MODEL`] with no providers yet.
    pub fn new(settings: LoopSettings) -> ModelAgent {
        ModelAgent {
            name: MODEL.to_string(),
            providers: BTreeMap::new(),
            models: Vec::new(),
            prices: BTreeMap::new(),
            settings,
            tools: None,
            clis: BTreeMap::new(),
            cli_sandbox: None,
        }
    }

    /// Offers nodes the built-in tools their `requirements.tools` names, run with `tools`.
    pub fn with_tools(mut self, tools: AgentTools) -> ModelAgent {
        self.tools = Some(tools);
        self
    }

    /// Adds a coding-agent CLI provider under its name.
    pub fn with_cli(mut self, cli: CliConfig) -> ModelAgent {
        self.clis.insert(cli.name.clone(), cli);
        self
    }

    /// The sandbox and document CLI providers run in (without it they are `blocked`).
    pub fn with_cli_sandbox(mut self, sandbox: CliSandbox) -> ModelAgent {
        self.cli_sandbox = Some(sandbox);
        self
    }

    /// Whether any provider is a coding-agent CLI (which needs [`Self::with_cli_sandbox`]).
    pub fn has_cli(&self) -> bool {
        !self.clis.is_empty()
    }

    /// Adds a provider under its name.
    pub fn with_provider(mut self, provider: Arc<dyn Provider>) -> ModelAgent {
        self.providers.insert(provider.name().to_string(), provider);
        self
    }

    /// Adds a model to the routing profile, with its prices when known.
    pub fn with_model(mut self, model: Model, price: Option<Price>) -> ModelAgent {
        if let Some(p) = price {
            self.prices.insert(model.model.clone(), p);
        }
        self.models.push(model);
        self
    }

    fn cost(&self, model: &str, input: u64, output: u64) -> f64 {
        self.prices.get(model).map_or(0.0, |p| {
            (input as f64 * p.input_per_million + output as f64 * p.output_per_million) / 1e6
        })
    }
}

impl Agent for ModelAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn models(&self) -> Vec<Model> {
        self.models.clone()
    }

    fn check(&self, node: &str) -> Result<(), String> {
        if self.providers.is_empty() && self.clis.is_empty() {
            return Err(format!(
                "node `{node}` needs a model and no provider is configured"
            ));
        }
        // A required tool this build does not provide refuses the run before any token.
        if let Some(tools) = &self.tools {
            let missing = tools.missing_for(node);
            if !missing.is_empty() {
                return Err(format!(
                    "RT012: node `{node}` requires {}, which this build does not provide (mark it `optional: true` or give `alternatives`; built-in: {})",
                    missing
                        .iter()
                        .map(|m| format!("`{m}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    weft_tools::BUILTIN.join(", ")
                ));
            }
        }
        Ok(())
    }

    fn run<'a>(&'a self, request: &'a AgentRequest) -> AgentFuture<'a> {
        Box::pin(async move {
            if let Some(route) = &request.route
                && let Some(cli) = self.clis.get(&route.provider)
            {
                let price = self.prices.get(&route.model).copied();
                return run_cli(cli, self.cli_sandbox.as_ref(), request, &route.model, price).await;
            }
            let mut state = State::default();
            let wall = request.limits.wall_clock;
            let failure = match tokio::time::timeout(wall, self.turns(request, &mut state)).await {
                Ok(Ok(())) => None,
                Ok(Err(f)) => Some(f),
                Err(_) => Some(Failure::new(
                    FailureClass::Timeout,
                    format!(
                        "the attempt ran past its {} s wall clock after {} model turn(s)",
                        wall.as_secs_f64(),
                        state.usage.agent_steps
                    ),
                )),
            };
            AgentResult {
                // Kept on failure too (a valid emit_output over budget): `succeed_degraded`
                // takes whatever outputs exist.
                outputs: state.outputs,
                usage: state.usage,
                failure,
                transcript: Some(Value::Array(state.transcript)),
                approval: state.approval,
            }
        })
    }
}

/// Gives every tool call of one turn its own id: a model that repeats an id (or sends
/// none) would otherwise have its results matched to the wrong calls. A repeated or empty
/// id becomes `{id}~{turn}.{n}`, which the model sees in the echoed assistant message and
/// the results alike.
fn unique_call_ids(calls: &mut [crate::chat::ToolCall], turn: u64) {
    let mut seen = std::collections::HashSet::with_capacity(calls.len());
    for (n, call) in calls.iter_mut().enumerate() {
        if call.id.is_empty() || !seen.insert(call.id.clone()) {
            let base = if call.id.is_empty() {
                "call"
            } else {
                call.id.as_str()
            };
            call.id = format!("{base}~{turn}.{}", n + 1);
            seen.insert(call.id.clone());
        }
    }
}

/// What one attempt has done so far (kept outside the loop so a timeout keeps it).
#[derive(Default)]
struct State {
    usage: Usage,
    outputs: Map<String, Value>,
    transcript: Vec<Value>,
    /// The action a policy `ask` holds for a person, when one ended the attempt.
    approval: Option<weft_engine::agent::ApprovalRequest>,
}

impl ModelAgent {
    async fn turns(&self, req: &AgentRequest, state: &mut State) -> Result<(), Failure> {
        let route = req.route.as_ref().ok_or_else(|| {
            Failure::new(
                FailureClass::ModelError,
                "the attempt was not routed to a model",
            )
        })?;
        let provider = self.providers.get(&route.provider).ok_or_else(|| {
            Failure::new(
                FailureClass::ModelError,
                format!("no provider named `{}` is configured", route.provider),
            )
        })?;
        let tool = emit_output_tool(
            &req.outputs,
            &req.decision_labels,
            req.decision_default.as_deref(),
        );
        let accept = accepting(&tool, req.decision_default.as_deref());
        let text_target =
            text_output(&req.outputs, &req.decision_labels).filter(|_| self.settings.text_answer);
        let mut attempt_tools = match &self.tools {
            Some(tools) => tools.for_attempt(req).await?,
            None => None,
        };
        let mut system = system_prompt();
        if let Some(at) = &attempt_tools {
            system.push(' ');
            system.push_str(&tools_note(&at.names()));
        }
        let mut chat = ChatRequest::new(
            route.model.clone(),
            vec![Message::system(system), Message::user(task_prompt(req))],
        );
        chat.tools = vec![tool.clone()];
        chat.tool_choice = if text_target.is_some() {
            // A text answer delivers: the model must be free not to call a tool.
            ToolChoice::Auto
        } else if self.settings.force_emit_output && attempt_tools.is_none() {
            ToolChoice::Named(EMIT_OUTPUT.into())
        } else {
            // Forcing `emit_output` would keep the model from its other tools.
            ToolChoice::Required
        };
        if let Some(at) = &attempt_tools {
            chat.tools.extend(at.defs());
        }
        chat.temperature = self.settings.temperature;
        chat.stream = self.settings.stream;
        let limits = &req.limits;
        let mut last_rejection: Option<String> = None;
        loop {
            let steps = state.usage.agent_steps;
            if limits.max_agent_steps.is_some_and(|max| steps >= max) {
                return Err(Failure::new(
                    FailureClass::BudgetExceeded,
                    format!("max_agent_steps {steps} reached before a valid {EMIT_OUTPUT}"),
                ));
            }
            if steps >= self.settings.max_steps {
                return Err(match last_rejection {
                    Some(why) => Failure::new(
                        FailureClass::ValidationError,
                        format!(
                            "after {steps} model turn(s), the last {EMIT_OUTPUT} did not fit the outputs: {why}"
                        ),
                    ),
                    None => Failure::new(
                        FailureClass::OutputMissing,
                        format!("{steps} model turn(s) without a call of {EMIT_OUTPUT}"),
                    ),
                });
            }
            chat.max_tokens = turn_budget(self.settings.max_tokens_per_turn, limits, &state.usage);
            if chat.max_tokens == 0 {
                return Err(Failure::new(
                    FailureClass::BudgetExceeded,
                    "no output tokens left for another model turn",
                ));
            }
            let mut answer = provider
                .chat(&chat)
                .await
                .map_err(|e| Failure::new(e.attempt_class(), e.to_string()))?;
            unique_call_ids(&mut answer.tool_calls, state.usage.agent_steps + 1);
            // Unreported usage is estimated, never counted as zero: budgets still hold.
            let spent = if answer.usage.reported {
                answer.usage
            } else {
                TokenUsage::estimate(&chat, &answer)
            };
            state.usage.add(&Usage {
                agent_steps: 1,
                input_tokens: spent.input_tokens,
                output_tokens: spent.output_tokens,
                cost_usd: self.cost(&route.model, spent.input_tokens, spent.output_tokens),
                estimated_turns: u64::from(!spent.reported),
                ..Usage::default()
            });
            state.transcript.push(json!({
                "text": answer.text,
                "tool_calls": answer.tool_calls,
                "usage": answer.usage,
                "finish_reason": answer.finish_reason,
            }));
            chat.messages.push(Message::Assistant {
                content: answer.text.clone(),
                tool_calls: answer.tool_calls.clone(),
            });
            let mut emitted = None;
            let mut results = Vec::new();
            for call in &answer.tool_calls {
                let (reply, is_error) = if call.name == EMIT_OUTPUT {
                    match check_emitted_within(
                        &accept,
                        &call.arguments,
                        self.settings.max_output_bytes,
                    ) {
                        Ok(outputs) => {
                            emitted = Some(outputs);
                            break;
                        }
                        Err(why) => {
                            last_rejection = Some(why.clone());
                            let reply = format!(
                                "Rejected: {why}. Call {EMIT_OUTPUT} again with outputs that fit."
                            );
                            (reply, true)
                        }
                    }
                } else {
                    state.usage.tool_calls += 1;
                    match (&self.tools, attempt_tools.as_mut()) {
                        (Some(tools), Some(at)) if at.offers(&call.name) => {
                            if let Some(over) = limits.exceeded(&state.usage) {
                                return Err(Failure::new(
                                    FailureClass::BudgetExceeded,
                                    format!("turn {}: {over}", state.usage.agent_steps),
                                ));
                            }
                            let outcome = tools.call(at, req, &call.name, &call.arguments).await;
                            if let ToolOutcome::NeedsApproval { approval, decision } = &outcome {
                                state.approval = Some(weft_engine::agent::ApprovalRequest {
                                    digest: approval.digest.clone(),
                                    tool: call.name.clone(),
                                    resource: decision
                                        .resource
                                        .as_ref()
                                        .and_then(|r| r.target.clone())
                                        .unwrap_or_default(),
                                    reason: decision.reason.clone(),
                                });
                            }
                            let (content, is_error) = answer_of(&call.name, &outcome)?;
                            let reply = match &content {
                                Value::String(text) => text.clone(),
                                other => other.to_string(),
                            };
                            results.push(json!({"tool": call.name, "result": content}));
                            (reply, is_error)
                        }
                        (_, at) => {
                            let mut names = vec![EMIT_OUTPUT];
                            if let Some(at) = at {
                                names.extend(at.names());
                            }
                            let reply = format!(
                                "Unknown tool `{}`: the tools are {}.",
                                call.name,
                                names.join(", ")
                            );
                            (reply, true)
                        }
                    }
                };
                chat.messages.push(Message::Tool {
                    call_id: call.id.clone(),
                    content: reply,
                    is_error,
                });
            }
            if let (false, Some(Value::Object(turn))) =
                (results.is_empty(), state.transcript.last_mut())
            {
                turn.insert("tool_results".into(), Value::Array(results));
            }
            if let (Some(name), true) = (text_target, answer.tool_calls.is_empty()) {
                if answer.text.trim().is_empty() {
                    last_rejection = Some("the answer had no text and no tool call".into());
                } else {
                    match check_emitted_within(
                        &accept,
                        &json!({ name: answer.text }),
                        self.settings.max_output_bytes,
                    ) {
                        Ok(outputs) => emitted = Some(outputs),
                        Err(why) => last_rejection = Some(why),
                    }
                }
            }
            let done = emitted.is_some();
            if let Some(outputs) = emitted {
                state.outputs = outputs;
            }
            if let Some(over) = limits.exceeded(&state.usage) {
                return Err(Failure::new(
                    FailureClass::BudgetExceeded,
                    format!("turn {}: {over}", state.usage.agent_steps),
                ));
            }
            if done {
                return Ok(());
            }
            if answer.tool_calls.is_empty() {
                chat.messages.push(Message::user(format!(
                    "Deliver the result now by calling {EMIT_OUTPUT}."
                )));
            }
        }
    }
}

/// What the model is answered for a tool's outcome (a result, or a refusal as data), or the
/// failure that ends the attempt: a call that needs a person's approval.
fn answer_of(tool: &str, outcome: &ToolOutcome) -> Result<(Value, bool), Failure> {
    if let ToolOutcome::NeedsApproval { approval, decision } = outcome {
        return Err(Failure::new(
            FailureClass::PermissionDenied,
            format!(
                "the call of `{tool}` needs a person's approval ({}): {}; digest {}",
                decision
                    .resource
                    .as_ref()
                    .and_then(|r| r.target.clone())
                    .unwrap_or_default(),
                decision.reason,
                approval.digest
            ),
        ));
    }
    Ok(outcome.to_model())
}

/// `max_tokens` of the next turn: the loop's per-turn cap, lowered to the output and total
/// tokens the attempt may still spend.
fn turn_budget(cap: u32, limits: &weft_engine::agent::Limits, used: &Usage) -> u32 {
    let mut left = u64::from(cap);
    if let Some(max) = limits.max_output_tokens {
        left = left.min(max.saturating_sub(used.output_tokens));
    }
    if let Some(max) = limits.max_total_tokens {
        left = left.min(max.saturating_sub(used.total_tokens()));
    }
    u32::try_from(left).unwrap_or(cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::ToolCall;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: json!({}),
        }
    }

    #[test]
    fn repeated_and_empty_call_ids_become_unique_within_a_turn() {
        let mut calls = vec![
            call("call_dup"),
            call("call_dup"),
            call(""),
            call("call_dup"),
            call("b"),
        ];
        unique_call_ids(&mut calls, 3);
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            ["call_dup", "call_dup~3.2", "call~3.3", "call_dup~3.4", "b"]
        );
        // Already unique ids are kept as the model sent them.
        let mut fine = vec![call("a"), call("b")];
        unique_call_ids(&mut fine, 1);
        assert_eq!(fine[0].id, "a");
        assert_eq!(fine[1].id, "b");
    }
}

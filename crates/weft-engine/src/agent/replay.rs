//! The `replay` agent: plays a node's recorded model turns from a [`Cassette`] instead of
//! calling a provider, so model nodes run deterministically in tests, benches and demos.
//!
//! Attempt `n` of node `id` plays `nodes.<id>.attempts[n − 1].turns` in order. Each turn is
//! one agent step; before it is played, the attempt's [`super::Limits`] are checked against
//! the usage it would reach (its recorded tokens and cost, one more step), and a turn that
//! would exceed one is not played (`budget_exceeded`). A turn's tool calls are counted
//! (`emit_output` excepted) and checked after it. `emit_output` calls carry the outputs
//! (their `arguments`, merged in order); a turn with an `error` fails the attempt with its
//! class. Mismatches are classified failures, never panics: no recorded attempt
//! (`model_error`), an output name the node does not declare (`validation_error`), no
//! `emit_output` when the node declares outputs (`output_missing`).

use serde_json::{Map, Value, json};
use weft_core::FailureClass;

use super::budget::Usage;
use super::cassette::Cassette;
use super::route::Model;
use super::{Agent, AgentFuture, AgentRequest, AgentResult, Failure, REPLAY};

/// The tool call that carries a node's outputs.
pub const EMIT_OUTPUT: &str = "emit_output";

/// Plays recorded turns (see the module docs). Without a cassette it refuses every node.
#[derive(Clone, Debug)]
pub struct ReplayAgent {
    cassette: Option<Cassette>,
}

impl ReplayAgent {
    pub fn new(cassette: Option<Cassette>) -> ReplayAgent {
        ReplayAgent { cassette }
    }
}

impl Agent for ReplayAgent {
    fn name(&self) -> &str {
        REPLAY
    }

    fn models(&self) -> Vec<Model> {
        self.cassette
            .as_ref()
            .map(|c| c.models.clone())
            .unwrap_or_default()
    }

    fn check(&self, node: &str) -> Result<(), String> {
        match &self.cassette {
            None => Err(format!(
                "node `{node}` needs a model: this run has no live model provider (`--config weft.toml`); give the node `x-weft-exec: {{run: ...}}` or pass `--cassette FILE` to replay recorded turns"
            )),
            // A node inside loops, maps or subgraphs may be recorded per instance, by its
            // address (`fix_loop[2].run_tests`).
            Some(c)
                if !c.nodes.contains_key(node)
                    && !c.nodes.keys().any(|k| k.ends_with(&format!(".{node}"))) =>
            {
                Err(format!(
                    "node `{node}` is not an exec node and the cassette {} has no entry for it",
                    c.source
                ))
            }
            Some(_) => Ok(()),
        }
    }

    fn run<'a>(&'a self, request: &'a AgentRequest) -> AgentFuture<'a> {
        Box::pin(async move { self.play(request) })
    }
}

impl ReplayAgent {
    fn play(&self, req: &AgentRequest) -> AgentResult {
        let Some(c) = &self.cassette else {
            return AgentResult::failed(FailureClass::Blocked, "no cassette");
        };
        // By the node instance's address first, then by its id.
        let bare = req.node.rsplit('.').next().unwrap_or(&req.node);
        let recorded = c
            .nodes
            .get(&req.node)
            .or_else(|| c.nodes.get(bare))
            .map_or(&[][..], Vec::as_slice);
        let index = usize::try_from(req.attempt.saturating_sub(1)).unwrap_or(usize::MAX);
        let Some(attempt) = recorded.get(index) else {
            return AgentResult::failed(
                FailureClass::ModelError,
                format!(
                    "cassette {}: node `{}` has no recorded attempt {} (it records {})",
                    c.source,
                    req.node,
                    req.attempt,
                    recorded.len()
                ),
            );
        };
        let mut declared: Vec<&str> = req.outputs.iter().map(|o| o.name.as_str()).collect();
        if !req.decision_labels.is_empty() {
            declared.push("decision");
        }
        let mut used = Usage::default();
        let mut outputs = Map::new();
        let mut emitted = false;
        let mut transcript = Vec::new();
        let fail =
            |used: Usage, outputs: Map<String, Value>, t: Vec<Value>, f: Failure| AgentResult {
                outputs,
                usage: used,
                failure: Some(f),
                transcript: Some(Value::Array(t)),
                approval: None,
            };
        for (i, turn) in attempt.turns.iter().enumerate() {
            let step = Usage {
                agent_steps: 1,
                ..turn.usage
            };
            let projected = used.plus(&step);
            if let Some(over) = req.limits.exceeded(&projected) {
                return fail(
                    used,
                    outputs,
                    transcript,
                    Failure::new(
                        FailureClass::BudgetExceeded,
                        format!("turn {}: {over}; the turn was not played", i + 1),
                    ),
                );
            }
            used = projected;
            transcript.push(json!({
                "content": turn.content,
                "tool_calls": turn.tool_calls.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            }));
            if let Some(e) = &turn.error {
                return fail(
                    used,
                    outputs,
                    transcript,
                    Failure::new(e.class, format!("turn {}: {}", i + 1, e.message)),
                );
            }
            for call in &turn.tool_calls {
                if call.name != EMIT_OUTPUT {
                    used.tool_calls += 1;
                    continue;
                }
                emitted = true;
                for (k, v) in &call.arguments {
                    if !declared.contains(&k.as_str()) {
                        return fail(
                            used,
                            outputs,
                            transcript,
                            Failure::new(
                                FailureClass::ValidationError,
                                format!(
                                    "turn {}: emit_output names `{k}`, which the node does not declare (declared: {})",
                                    i + 1,
                                    if declared.is_empty() {
                                        "none".to_string()
                                    } else {
                                        declared.join(", ")
                                    }
                                ),
                            ),
                        );
                    }
                    outputs.insert(k.clone(), v.clone());
                }
            }
            if let Some(over) = req.limits.exceeded(&used) {
                return fail(
                    used,
                    outputs,
                    transcript,
                    Failure::new(
                        FailureClass::BudgetExceeded,
                        format!("turn {}: {over}", i + 1),
                    ),
                );
            }
        }
        if !emitted && !declared.is_empty() {
            return fail(
                used,
                outputs,
                transcript,
                Failure::new(
                    FailureClass::OutputMissing,
                    format!(
                        "the {} recorded turn(s) of attempt {} never call emit_output",
                        attempt.turns.len(),
                        req.attempt
                    ),
                ),
            );
        }
        AgentResult {
            outputs,
            usage: used,
            failure: None,
            transcript: Some(Value::Array(transcript)),
            approval: None,
        }
    }
}

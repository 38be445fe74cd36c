//! The JSONL event streams of the coding-agent CLIs, read into one provider-neutral
//! [`CliAnswer`] (final text, usage, cost when reported, turns and tool calls), or a
//! classified [`ProviderError`] with evidence.
//!
//! - Claude Code (`claude -p --output-format stream-json --verbose`): `system` (`init`),
//!   `assistant` and `user` messages, then one terminal `result` event with `result` (the
//!   final text), `is_error`, `subtype`, `num_turns`, `usage` and `total_cost_usd`, and
//!   `permission_denials` (tools its permission mode refused).
//! - Codex (`codex exec --json`): `thread.started`, `turn.started`, `item.started` /
//!   `item.updated` / `item.completed` (items `agent_message`, `reasoning`,
//!   `command_execution`, `file_change`, `mcp_tool_call`, `web_search`, …), then
//!   `turn.completed` with `usage`, or `turn.failed` / `error`. Codex reports no cost.
//!
//! Every line must be one JSON object: a line that is not is a `model_error` naming it. A
//! stream that ends before its terminal event (`result`; `turn.completed`) is `transient`
//! (like an HTTP stream cut before its end), with the last lines read as evidence.

use serde_json::Value;

use crate::chat::TokenUsage;
use crate::error::{FailureClass, ProviderError};
use crate::wire::{reported_cost, token_count};

/// What a CLI run delivered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CliAnswer {
    /// The final text (Claude's `result`; Codex's last `agent_message`).
    pub text: String,
    /// Input tokens (cached and cache-creation ones included) and output tokens.
    pub usage: TokenUsage,
    /// The cost the CLI reported (Claude's `total_cost_usd`); `None` when it reports none.
    pub cost_usd: Option<f64>,
    /// Model turns (Claude's `num_turns`; Codex: completed turns).
    pub turns: u64,
    /// Tool uses the CLI made on its own (Claude `tool_use` blocks; Codex tool items).
    pub tool_calls: u64,
    /// Tools the CLI's own permission mode refused (Claude's `permission_denials`).
    pub permission_denials: Vec<Value>,
    /// The session or thread id, when given.
    pub session: Option<String>,
}

/// The stream dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    ClaudeCode,
    Codex,
}

/// Lines kept as evidence of a cut stream.
const EVIDENCE_LINES: usize = 3;

/// Reads a whole stream.
pub fn parse(dialect: Dialect, stream: &str) -> Result<CliAnswer, ProviderError> {
    let mut answer = CliAnswer::default();
    let mut finished = false;
    let mut seen: Vec<&str> = Vec::new();
    for (n, line) in stream.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        seen.push(line);
        let event: Value = serde_json::from_str(line)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| {
                ProviderError::new(
                    FailureClass::ModelError,
                    format!(
                        "line {} of the CLI's event stream is not a JSON object",
                        n + 1
                    ),
                )
                .with_evidence(line.to_string())
            })?;
        let done = match dialect {
            Dialect::ClaudeCode => claude_event(&event, &mut answer)?,
            Dialect::Codex => codex_event(&event, &mut answer)?,
        };
        finished |= done;
    }
    if !finished {
        let tail = seen[seen.len().saturating_sub(EVIDENCE_LINES)..].join("\n");
        let terminal = match dialect {
            Dialect::ClaudeCode => "`result`",
            Dialect::Codex => "`turn.completed`",
        };
        return Err(ProviderError::new(
            FailureClass::Transient,
            format!(
                "the CLI's event stream ended after {} line(s) without its terminal {terminal} event",
                seen.len()
            ),
        )
        .with_evidence(if tail.is_empty() {
            "(no output)".into()
        } else {
            tail
        }));
    }
    Ok(answer)
}

fn count(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_u64).unwrap_or(0)
}

/// One Claude Code event; `Ok(true)` at the terminal `result`.
fn claude_event(e: &Value, answer: &mut CliAnswer) -> Result<bool, ProviderError> {
    if let Some(s) = e.get("session_id").and_then(Value::as_str) {
        answer.session = Some(s.to_string());
    }
    match e.get("type").and_then(Value::as_str) {
        Some("assistant") => {
            answer.tool_calls += e
                .pointer("/message/content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
                .count() as u64;
            Ok(false)
        }
        Some("result") => {
            let usage = e.get("usage").unwrap_or(&Value::Null);
            let field = |k: &str| token_count(usage, &format!("/{k}"));
            let input = match (
                field("input_tokens")?,
                field("cache_creation_input_tokens")?,
                field("cache_read_input_tokens")?,
            ) {
                (None, None, None) => None,
                (a, b, c) => Some(
                    a.unwrap_or(0)
                        .saturating_add(b.unwrap_or(0))
                        .saturating_add(c.unwrap_or(0)),
                ),
            };
            answer.usage = TokenUsage::from_counts(input, field("output_tokens")?);
            answer.cost_usd = reported_cost(e.get("total_cost_usd"))?;
            answer.turns = count(e.get("num_turns"));
            answer.text = e
                .get("result")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            answer.permission_denials = e
                .get("permission_denials")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let subtype = e.get("subtype").and_then(Value::as_str).unwrap_or("");
            let is_error = e.get("is_error").and_then(Value::as_bool).unwrap_or(false);
            if is_error || subtype != "success" {
                // `error_max_turns`: its own turn bound (`--max-turns`, from
                // `max_agent_steps`) was reached; `error_during_execution`: it failed.
                return Err(ProviderError::new(
                    FailureClass::ModelError,
                    format!(
                        "the CLI's result is an error (subtype `{subtype}`, {} turn(s)): {}",
                        answer.turns, answer.text
                    ),
                )
                .with_evidence(e.to_string()));
            }
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// One Codex event; `Ok(true)` at `turn.completed`.
fn codex_event(e: &Value, answer: &mut CliAnswer) -> Result<bool, ProviderError> {
    match e.get("type").and_then(Value::as_str) {
        Some("thread.started") => {
            answer.session = e
                .get("thread_id")
                .and_then(Value::as_str)
                .map(str::to_string);
            Ok(false)
        }
        Some("item.completed") => {
            let item = e.get("item");
            match item.and_then(|i| i.get("type")).and_then(Value::as_str) {
                Some("agent_message") => {
                    answer.text = item
                        .and_then(|i| i.get("text"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                }
                Some("command_execution" | "file_change" | "mcp_tool_call" | "web_search") => {
                    answer.tool_calls += 1;
                }
                _ => {}
            }
            Ok(false)
        }
        Some("turn.completed") => {
            let usage = e.get("usage").unwrap_or(&Value::Null);
            let field = |k: &str| token_count(usage, &format!("/{k}"));
            // `input_tokens` already counts the cached ones (`cached_input_tokens` is a part).
            let turn = TokenUsage::from_counts(field("input_tokens")?, field("output_tokens")?);
            let first = answer.turns == 0;
            answer.usage = TokenUsage {
                input_tokens: answer.usage.input_tokens.saturating_add(turn.input_tokens),
                output_tokens: answer
                    .usage
                    .output_tokens
                    .saturating_add(turn.output_tokens),
                // Known only if every turn reported its own.
                reported: turn.reported && (first || answer.usage.reported),
            };
            answer.turns += 1;
            Ok(true)
        }
        Some("turn.failed") => Err(ProviderError::new(
            FailureClass::ModelError,
            format!(
                "the CLI's turn failed: {}",
                e.pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message")
            ),
        )
        .with_evidence(e.to_string())),
        Some("error") => Err(ProviderError::new(
            FailureClass::ModelError,
            format!(
                "the CLI reported an error: {}",
                e.get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message")
            ),
        )
        .with_evidence(e.to_string())),
        _ => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLAUDE_OK: &str = r#"{"type":"system","subtype":"init","session_id":"s1","model":"m","permissionMode":"default"}
{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}]},"session_id":"s1"}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}}
{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"done {\"a\": 1}","session_id":"s1","total_cost_usd":0.0123,"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"output_tokens":7},"permission_denials":[{"tool_name":"Bash"}]}
"#;

    #[test]
    fn a_claude_stream_gives_text_usage_cost_and_denials() {
        let a = parse(Dialect::ClaudeCode, CLAUDE_OK).unwrap();
        assert_eq!(a.text, "done {\"a\": 1}");
        assert_eq!(a.usage.input_tokens, 115);
        assert_eq!(a.usage.output_tokens, 7);
        assert_eq!(a.cost_usd, Some(0.0123));
        assert_eq!((a.turns, a.tool_calls), (2, 1));
        assert_eq!(a.permission_denials.len(), 1);
        assert_eq!(a.session.as_deref(), Some("s1"));
    }

    #[test]
    fn a_cut_or_malformed_stream_is_classified_with_evidence() {
        let cut: String = CLAUDE_OK.lines().take(2).collect::<Vec<_>>().join("\n");
        let e = parse(Dialect::ClaudeCode, &cut).unwrap_err();
        assert_eq!(e.class, FailureClass::Transient);
        assert!(e.evidence.unwrap().contains("tool_use"));
        let bad = format!("{}\n{{\"type\":\"resu", CLAUDE_OK.lines().next().unwrap());
        let e = parse(Dialect::ClaudeCode, &bad).unwrap_err();
        assert_eq!(e.class, FailureClass::ModelError);
        assert!(e.message.contains("line 2"), "{}", e.message);
        assert_eq!(e.evidence.as_deref(), Some("{\"type\":\"resu"));
    }

    #[test]
    fn a_claude_error_result_is_a_model_error() {
        let s = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":1,"result":"boom"}"#;
        let e = parse(Dialect::ClaudeCode, s).unwrap_err();
        assert_eq!(e.class, FailureClass::ModelError);
        assert!(
            e.message.contains("error_during_execution"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_codex_stream_sums_turn_usage_and_keeps_the_last_message() {
        let s = r#"{"type":"thread.started","thread_id":"th"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"i0","type":"command_execution","command":"ls","status":"completed"}}
{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"{\"a\": 2}"}}
{"type":"turn.completed","usage":{"input_tokens":30,"cached_input_tokens":20,"output_tokens":4}}
"#;
        let a = parse(Dialect::Codex, s).unwrap();
        assert_eq!(a.text, "{\"a\": 2}");
        assert_eq!((a.usage.input_tokens, a.usage.output_tokens), (30, 4));
        assert_eq!((a.turns, a.tool_calls, a.cost_usd), (1, 1, None));
        let failed = r#"{"type":"turn.failed","error":{"message":"quota"}}"#;
        let e = parse(Dialect::Codex, failed).unwrap_err();
        assert!(e.message.contains("quota"));
        let e = parse(Dialect::Codex, "").unwrap_err();
        assert_eq!(e.class, FailureClass::Transient);
    }
}

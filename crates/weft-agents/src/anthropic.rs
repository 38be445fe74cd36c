//! The Anthropic Messages provider (`POST {base}/v1/messages`, `anthropic-version` header):
//! request mapping (system prompt apart, tool results as `tool_result` blocks of a user turn,
//! `tool_choice` auto / none / any / tool), the JSON answer, and the typed SSE stream
//! (`message_start`, `content_block_start` / `_delta` / `_stop` with `input_json_delta`
//! accumulated per block, `message_delta` with the stop reason and usage, `message_stop`,
//! `ping`, `error`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::chat::{
    ChatRequest, ChatResponse, FinishReason, Message, TokenUsage, ToolCall, ToolChoice,
};
use crate::error::{FailureClass, ProviderError};
use crate::http::{Flow, Transport, read_events, read_json};
use crate::provider::{ChatFuture, Provider, ProviderConfig};
use crate::secret::Secret;
use crate::wire::{parse_arguments, str_at, token_count};

/// The API version weft speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The Anthropic Messages API.
#[derive(Debug)]
pub struct Anthropic {
    name: String,
    url: String,
    key: Option<Secret>,
    transport: Transport,
}

impl Anthropic {
    pub fn new(config: &ProviderConfig, key: Option<Secret>) -> Result<Anthropic, ProviderError> {
        Ok(Anthropic {
            name: config.name.clone(),
            url: format!("{}/v1/messages", config.base_url),
            key,
            transport: Transport::new(config.http.clone())?,
        })
    }

    async fn exchange(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let body = request_body(request);
        let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION.to_string())];
        if let Some(k) = &self.key {
            headers.push(("x-api-key", k.expose().to_string()));
        }
        let answer = self.transport.post(&self.url, &headers, &body).await?;
        if request.stream {
            let mut acc = StreamAccumulator::default();
            read_events(answer, &self.url, |event, data| acc.push(event, data)).await?;
            acc.finish()
        } else {
            parse_response(&read_json(answer, &self.url).await?)
        }
    }
}

impl Provider for Anthropic {
    fn name(&self) -> &str {
        &self.name
    }

    fn chat<'a>(&'a self, request: &'a ChatRequest) -> ChatFuture<'a> {
        Box::pin(async move {
            let secret = self.key.as_ref().map(Secret::expose).unwrap_or_default();
            self.exchange(request).await.map_err(|e| e.redacted(secret))
        })
    }
}

/// The wire request.
pub fn request_body(r: &ChatRequest) -> Value {
    let mut system = Vec::new();
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
    // Consecutive turns of one role are merged: the API wants user and assistant to alternate,
    // and the results of one turn's calls in one user message.
    let mut push = |role: &'static str, block: Value| match messages.last_mut() {
        Some((r, blocks)) if *r == role => blocks.push(block),
        _ => messages.push((role, vec![block])),
    };
    for m in &r.messages {
        match m {
            Message::System { content } => system.push(content.as_str()),
            Message::User { content } => push("user", json!({"type": "text", "text": content})),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if !content.is_empty() {
                    push("assistant", json!({"type": "text", "text": content}));
                }
                for c in tool_calls {
                    push(
                        "assistant",
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}),
                    );
                }
            }
            Message::Tool {
                call_id,
                content,
                is_error,
            } => push(
                "user",
                json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}),
            ),
        }
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = json!({"model": r.model, "max_tokens": r.max_tokens, "messages": messages});
    if let Some(obj) = body.as_object_mut() {
        if !system.is_empty() {
            obj.insert("system".into(), json!(system.join("\n\n")));
        }
        if let Some(t) = r.temperature {
            obj.insert("temperature".into(), json!(t));
        }
        if !r.tools.is_empty() {
            let tools: Vec<Value> = r
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect();
            obj.insert("tools".into(), Value::Array(tools));
            let choice = match &r.tool_choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::Named(n) => json!({"type": "tool", "name": n}),
            };
            obj.insert("tool_choice".into(), choice);
        }
        if r.stream {
            obj.insert("stream".into(), json!(true));
        }
    }
    body
}

fn finish_reason(s: Option<&str>) -> FinishReason {
    match s {
        Some("end_turn") | Some("stop_sequence") | None => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens") => FinishReason::Length,
        Some(other) => FinishReason::Other(other.to_string()),
    }
}

/// An `error` object (a body's or an `error` event's): overloaded is `transient`, the rest
/// `model_error`.
fn provider_error(e: &Value) -> ProviderError {
    let kind = str_at(e, "/type").unwrap_or("error");
    let class = if matches!(kind, "overloaded_error" | "rate_limit_error" | "api_error") {
        FailureClass::Transient
    } else {
        FailureClass::ModelError
    };
    ProviderError::new(
        class,
        format!(
            "the provider reported {kind}: {}",
            str_at(e, "/message").unwrap_or("(no message)")
        ),
    )
    .with_evidence(e.to_string())
}

/// Parses a whole (non-streamed) answer.
pub fn parse_response(v: &Value) -> Result<ChatResponse, ProviderError> {
    if str_at(v, "/type") == Some("error") {
        return Err(provider_error(v.get("error").unwrap_or(v)));
    }
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in v
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match str_at(block, "/type") {
            Some("text") => text.push_str(str_at(block, "/text").unwrap_or_default()),
            Some("tool_use") => tool_calls.push(ToolCall {
                id: str_at(block, "/id").unwrap_or_default().to_string(),
                name: str_at(block, "/name").unwrap_or_default().to_string(),
                arguments: block.get("input").cloned().unwrap_or_else(|| json!({})),
            }),
            _ => {}
        }
    }
    Ok(ChatResponse {
        text,
        tool_calls,
        usage: TokenUsage::from_counts(
            token_count(v, "/usage/input_tokens")?,
            token_count(v, "/usage/output_tokens")?,
        ),
        finish_reason: finish_reason(str_at(v, "/stop_reason")),
    })
}

/// One content block being streamed.
enum Block {
    Text,
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
}

/// Folds the typed events of one stream into one answer.
#[derive(Default)]
pub struct StreamAccumulator {
    text: String,
    blocks: BTreeMap<u64, Block>,
    /// The token counts as last reported (`message_start`, then `message_delta`).
    input: Option<u64>,
    output: Option<u64>,
    stop: Option<String>,
}

impl StreamAccumulator {
    /// Takes one event; `message_stop` ends the stream, `error` fails it.
    pub(crate) fn push(&mut self, event: &str, data: &str) -> Result<Flow, ProviderError> {
        let v: Value = serde_json::from_str(data).map_err(|e| {
            ProviderError::new(
                FailureClass::ModelError,
                format!("a `{event}` event is not JSON: {e}"),
            )
            .with_evidence(data.to_string())
        })?;
        // The event name is repeated as `type` in the data; trust either.
        let kind = if event.is_empty() || event == "message" {
            str_at(&v, "/type").unwrap_or_default()
        } else {
            event
        };
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                self.input = token_count(&v, "/message/usage/input_tokens")?;
                self.output = token_count(&v, "/message/usage/output_tokens")?;
            }
            "content_block_start" => {
                let block = match str_at(&v, "/content_block/type") {
                    Some("tool_use") => Block::ToolUse {
                        id: str_at(&v, "/content_block/id")
                            .unwrap_or_default()
                            .to_string(),
                        name: str_at(&v, "/content_block/name")
                            .unwrap_or_default()
                            .to_string(),
                        json: String::new(),
                    },
                    _ => {
                        self.text
                            .push_str(str_at(&v, "/content_block/text").unwrap_or_default());
                        Block::Text
                    }
                };
                self.blocks.insert(index, block);
            }
            "content_block_delta" => match (self.blocks.get_mut(&index), str_at(&v, "/delta/type"))
            {
                (Some(Block::ToolUse { json, .. }), Some("input_json_delta")) => {
                    json.push_str(str_at(&v, "/delta/partial_json").unwrap_or_default());
                }
                (_, Some("text_delta")) => {
                    self.text
                        .push_str(str_at(&v, "/delta/text").unwrap_or_default());
                }
                _ => {}
            },
            "message_delta" => {
                if let Some(s) = str_at(&v, "/delta/stop_reason") {
                    self.stop = Some(s.to_string());
                }
                if let Some(out) = token_count(&v, "/usage/output_tokens")? {
                    self.output = Some(out);
                }
                if let Some(input) = token_count(&v, "/usage/input_tokens")? {
                    self.input = Some(input);
                }
            }
            "message_stop" => return Ok(Flow::Done),
            "error" => return Err(provider_error(v.get("error").unwrap_or(&v))),
            _ => {} // ping, content_block_stop, and event kinds added later
        }
        Ok(Flow::Continue)
    }

    /// The answer the stream carried.
    pub fn finish(self) -> Result<ChatResponse, ProviderError> {
        let mut tool_calls = Vec::new();
        for block in self.blocks.into_values() {
            if let Block::ToolUse { id, name, json } = block {
                tool_calls.push(ToolCall {
                    arguments: parse_arguments(&name, &json)?,
                    id,
                    name,
                });
            }
        }
        Ok(ChatResponse {
            text: self.text,
            tool_calls,
            usage: TokenUsage::from_counts(self.input, self.output),
            finish_reason: finish_reason(self.stop.as_deref()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::ToolDef;

    fn with_tool(choice: ToolChoice) -> Value {
        let mut r = ChatRequest::new(
            "m",
            vec![
                Message::system("s1"),
                Message::system("s2"),
                Message::user("hi"),
            ],
        );
        r.tools = vec![ToolDef {
            name: "t".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }];
        r.tool_choice = choice;
        request_body(&r)
    }

    #[test]
    fn every_tool_choice_has_its_wire_form_and_system_messages_join() {
        assert_eq!(
            with_tool(ToolChoice::Auto)["tool_choice"],
            json!({"type": "auto"})
        );
        assert_eq!(
            with_tool(ToolChoice::None)["tool_choice"],
            json!({"type": "none"})
        );
        assert_eq!(
            with_tool(ToolChoice::Required)["tool_choice"],
            json!({"type": "any"})
        );
        let named = with_tool(ToolChoice::Named("t".into()));
        assert_eq!(named["tool_choice"], json!({"type": "tool", "name": "t"}));
        assert_eq!(named["system"], json!("s1\n\ns2"));
        assert_eq!(named["messages"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn events_named_only_in_their_data_are_understood() {
        let mut acc = StreamAccumulator::default();
        let start =
            r#"{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}"#;
        assert!(matches!(acc.push("", start), Ok(Flow::Continue)));
        assert!(matches!(
            acc.push("message", r#"{"type":"message_stop"}"#),
            Ok(Flow::Done)
        ));
        let answer = acc.finish().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(answer.usage.input_tokens, 5);
        let e = match StreamAccumulator::default().push(
            "error",
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}"#,
        ) {
            Err(e) => e,
            Ok(_) => panic!("an error event must fail"),
        };
        assert_eq!(
            e.class,
            FailureClass::ModelError,
            "not every error is worth a retry"
        );
    }
}

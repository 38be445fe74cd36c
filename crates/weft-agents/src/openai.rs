//! The OpenAI-compatible chat-completions provider (`POST {base}/v1/chat/completions`):
//! request mapping (tools, `tool_choice` auto / none / required / named, `content: ""` beside
//! tool calls, which some servers require instead of `null`), the JSON answer, and the SSE
//! stream (`data: {chunk}` … `data: [DONE]`, tool-call fragments keyed by `index`, usage in
//! the last chunk through `stream_options.include_usage`).

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

/// An OpenAI-compatible server.
#[derive(Debug)]
pub struct OpenAi {
    name: String,
    url: String,
    key: Option<Secret>,
    transport: Transport,
}

impl OpenAi {
    pub fn new(config: &ProviderConfig, key: Option<Secret>) -> Result<OpenAi, ProviderError> {
        Ok(OpenAi {
            name: config.name.clone(),
            url: format!("{}/v1/chat/completions", config.base_url),
            key,
            transport: Transport::new(config.http.clone())?,
        })
    }

    async fn exchange(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let body = request_body(request);
        let mut headers = Vec::new();
        if let Some(k) = &self.key {
            headers.push(("authorization", format!("Bearer {}", k.expose())));
        }
        let answer = self.transport.post(&self.url, &headers, &body).await?;
        if request.stream {
            let mut acc = StreamAccumulator::default();
            read_events(answer, &self.url, |_, data| acc.push(data)).await?;
            acc.finish()
        } else {
            parse_response(&read_json(answer, &self.url).await?)
        }
    }
}

impl Provider for OpenAi {
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
    let messages: Vec<Value> = r.messages.iter().map(message).collect();
    let mut body = json!({
        "model": r.model,
        "messages": messages,
        "max_tokens": r.max_tokens,
    });
    if let Some(obj) = body.as_object_mut() {
        if let Some(t) = r.temperature {
            obj.insert("temperature".into(), json!(t));
        }
        if !r.tools.is_empty() {
            let tools: Vec<Value> = r
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters,
                    }})
                })
                .collect();
            obj.insert("tools".into(), Value::Array(tools));
            let choice = match &r.tool_choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Named(n) => json!({"type": "function", "function": {"name": n}}),
            };
            obj.insert("tool_choice".into(), choice);
        }
        if r.stream {
            obj.insert("stream".into(), json!(true));
            obj.insert("stream_options".into(), json!({"include_usage": true}));
        }
    }
    body
}

fn message(m: &Message) -> Value {
    match m {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let mut v = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty()
                && let Some(obj) = v.as_object_mut()
            {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function", "function": {
                            "name": c.name, "arguments": c.arguments.to_string(),
                        }})
                    })
                    .collect();
                obj.insert("tool_calls".into(), Value::Array(calls));
            }
            v
        }
        Message::Tool {
            call_id, content, ..
        } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
    }
}

fn finish_reason(s: Option<&str>) -> FinishReason {
    match s {
        Some("stop") | None => FinishReason::Stop,
        Some("tool_calls") | Some("function_call") => FinishReason::ToolCalls,
        Some("length") => FinishReason::Length,
        Some(other) => FinishReason::Other(other.to_string()),
    }
}

fn usage(v: &Value) -> Result<TokenUsage, ProviderError> {
    Ok(TokenUsage::from_counts(
        token_count(v, "/prompt_tokens")?,
        token_count(v, "/completion_tokens")?,
    ))
}

fn provider_error(v: &Value) -> Option<ProviderError> {
    let e = v.get("error")?;
    Some(
        ProviderError::new(
            FailureClass::ModelError,
            format!(
                "the provider reported an error: {}",
                str_at(e, "/message").unwrap_or("(no message)")
            ),
        )
        .with_evidence(e.to_string()),
    )
}

/// Parses a whole (non-streamed) answer.
pub fn parse_response(v: &Value) -> Result<ChatResponse, ProviderError> {
    if let Some(e) = provider_error(v) {
        return Err(e);
    }
    let Some(choice) = v.pointer("/choices/0") else {
        return Err(
            ProviderError::new(FailureClass::ModelError, "the answer has no choices")
                .with_evidence(v.to_string()),
        );
    };
    let mut tool_calls = Vec::new();
    if let Some(calls) = choice
        .pointer("/message/tool_calls")
        .and_then(Value::as_array)
    {
        for c in calls {
            let name = str_at(c, "/function/name").unwrap_or_default();
            tool_calls.push(ToolCall {
                id: str_at(c, "/id").unwrap_or_default().to_string(),
                name: name.to_string(),
                arguments: parse_arguments(name, str_at(c, "/function/arguments").unwrap_or(""))?,
            });
        }
    }
    Ok(ChatResponse {
        text: str_at(choice, "/message/content")
            .unwrap_or_default()
            .to_string(),
        tool_calls,
        usage: v.get("usage").map(usage).transpose()?.unwrap_or_default(),
        finish_reason: finish_reason(str_at(choice, "/finish_reason")),
    })
}

/// A tool call being assembled from stream fragments.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Folds `chat.completion.chunk` events into one answer.
#[derive(Default)]
pub struct StreamAccumulator {
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    usage: TokenUsage,
    finish: Option<String>,
}

impl StreamAccumulator {
    /// Takes one event's data; `[DONE]` ends the stream.
    pub(crate) fn push(&mut self, data: &str) -> Result<Flow, ProviderError> {
        if data.trim() == "[DONE]" {
            return Ok(Flow::Done);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            ProviderError::new(
                FailureClass::ModelError,
                format!("a stream chunk is not JSON: {e}"),
            )
            .with_evidence(data.to_string())
        })?;
        if let Some(e) = provider_error(&chunk) {
            return Err(e);
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = usage(u)?;
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(Flow::Continue);
        };
        if let Some(t) = str_at(choice, "/delta/content") {
            self.text.push_str(t);
        }
        if let Some(f) = str_at(choice, "/finish_reason") {
            self.finish = Some(f.to_string());
        }
        let fragments = choice
            .pointer("/delta/tool_calls")
            .and_then(Value::as_array);
        for (i, frag) in fragments.into_iter().flatten().enumerate() {
            let index = frag
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(i as u64);
            let call = self.calls.entry(index).or_default();
            if let Some(id) = str_at(frag, "/id") {
                call.id.push_str(id);
            }
            if let Some(n) = str_at(frag, "/function/name") {
                call.name.push_str(n);
            }
            if let Some(a) = str_at(frag, "/function/arguments") {
                call.arguments.push_str(a);
            }
        }
        Ok(Flow::Continue)
    }

    /// The answer the stream carried.
    pub fn finish(self) -> Result<ChatResponse, ProviderError> {
        let mut tool_calls = Vec::new();
        for call in self.calls.into_values() {
            tool_calls.push(ToolCall {
                arguments: parse_arguments(&call.name, &call.arguments)?,
                id: call.id,
                name: call.name,
            });
        }
        Ok(ChatResponse {
            text: self.text,
            tool_calls,
            usage: self.usage,
            finish_reason: finish_reason(self.finish.as_deref()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::ToolDef;

    fn with_tool(choice: ToolChoice) -> Value {
        let mut r = ChatRequest::new("m", vec![Message::user("hi")]);
        r.tools = vec![ToolDef {
            name: "t".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }];
        r.tool_choice = choice;
        request_body(&r)
    }

    #[test]
    fn every_tool_choice_has_its_wire_form() {
        assert_eq!(with_tool(ToolChoice::Auto)["tool_choice"], json!("auto"));
        assert_eq!(with_tool(ToolChoice::None)["tool_choice"], json!("none"));
        assert_eq!(
            with_tool(ToolChoice::Required)["tool_choice"],
            json!("required")
        );
        assert_eq!(
            with_tool(ToolChoice::Named("t".into()))["tool_choice"],
            json!({"type": "function", "function": {"name": "t"}})
        );
    }

    #[test]
    fn an_error_chunk_fails_the_stream() {
        let mut acc = StreamAccumulator::default();
        assert!(matches!(
            acc.push(r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#),
            Ok(Flow::Continue)
        ));
        let e = match acc.push(r#"{"error":{"message":"context length exceeded"}}"#) {
            Err(e) => e,
            Ok(_) => panic!("an error chunk must fail"),
        };
        assert_eq!(e.class, FailureClass::ModelError);
        assert!(e.message.contains("context length exceeded"), "{e}");
        let e = match StreamAccumulator::default().push("{not json") {
            Err(e) => e,
            Ok(_) => panic!("a broken chunk must fail"),
        };
        assert_eq!(e.evidence.as_deref(), Some("{not json"));
    }
}

//! The provider-neutral chat model: what weft sends to a model (messages, tools, tool choice,
//! sampling) and what comes back (text, tool calls with parsed arguments, usage, finish
//! reason). Each provider maps these to and from its own wire format.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: String,
    },
    /// A model turn: its text (possibly empty) and the tools it called.
    Assistant {
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, answered to the model.
    Tool {
        call_id: String,
        content: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

impl Message {
    pub fn system(content: impl Into<String>) -> Message {
        Message::System {
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> Message {
        Message::User {
            content: content.into(),
        }
    }
}

/// A tool the model may call: its parameters are a JSON Schema (an object schema).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// Whether and which tool the model must call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tool call.
    None,
    /// Some tool call.
    Required,
    /// A call of this tool.
    Named(String),
}

/// One request to a model.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolDef>,
    pub tool_choice: ToolChoice,
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    /// Read the answer as a server-sent event stream rather than one JSON body.
    pub stream: bool,
}

impl ChatRequest {
    /// A request with no tools, 1024 output tokens at most, the provider's temperature and
    /// no streaming.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            model: model.into(),
            messages,
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            max_tokens: 1024,
            temperature: None,
            stream: false,
        }
    }
}

/// A tool call the model made; `arguments` are parsed JSON (malformed arguments never get
/// this far: they are a classified failure).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// Tokens one response cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The provider reported both counts. When it did not, the counts are weft's local
    /// estimate ([`TokenUsage::estimate`]), never a silent zero.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub reported: bool,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

impl TokenUsage {
    /// Counts the provider reported.
    pub fn reported(input_tokens: u64, output_tokens: u64) -> TokenUsage {
        TokenUsage {
            input_tokens,
            output_tokens,
            reported: true,
        }
    }

    /// Counts read from an answer: both present make a reported usage; otherwise unknown
    /// (zeros, `reported: false`) for the caller to estimate.
    pub fn from_counts(input: Option<u64>, output: Option<u64>) -> TokenUsage {
        match (input, output) {
            (Some(i), Some(o)) => TokenUsage::reported(i, o),
            _ => TokenUsage::default(),
        }
    }

    /// weft's estimate of an exchange the provider did not bill: about four bytes of text
    /// per token, for what was sent and what came back (`docs/agents.md`, "Usage").
    pub fn estimate(request: &ChatRequest, answer: &ChatResponse) -> TokenUsage {
        let sent: usize = request
            .messages
            .iter()
            .map(|m| serde_json::to_string(m).map_or(0, |s| s.len()))
            .sum::<usize>()
            + request
                .tools
                .iter()
                .map(|t| t.description.len() + t.parameters.to_string().len())
                .sum::<usize>();
        let received = answer.text.len()
            + answer
                .tool_calls
                .iter()
                .map(|c| c.name.len() + c.arguments.to_string().len())
                .sum::<usize>();
        TokenUsage::estimated(sent, received)
    }

    /// The estimate for `sent` and `received` bytes of text: about four bytes a token.
    pub fn estimated(sent: usize, received: usize) -> TokenUsage {
        let tokens = |bytes: usize| (bytes as u64).div_ceil(4);
        TokenUsage {
            input_tokens: tokens(sent),
            output_tokens: tokens(received),
            reported: false,
        }
    }
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural end of the turn.
    Stop,
    /// It called tools.
    ToolCalls,
    /// It ran out of output tokens.
    Length,
    /// Anything else the provider said (`content_filter`, `refusal`, …), verbatim.
    Other(String),
}

/// A model's answer to one request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: TokenUsage,
    pub finish_reason: FinishReason,
}

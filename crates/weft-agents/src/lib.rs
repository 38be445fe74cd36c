//! weft's model providers and the model agent (`docs/agents.md`).
//!
//! - [`chat`]: the provider-neutral chat model (messages, tools, tool choice, the answer);
//! - [`Provider`]: one model API, with two implementations over HTTP: [`openai::OpenAi`]
//!   (OpenAI-compatible chat completions) and [`anthropic::Anthropic`] (Messages), sharing
//!   the transport in [`http`] (time limits, bounded retries, SSE with truncation detection);
//! - [`error`]: failures classified with the AGS failure classes, with evidence;
//! - [`secret`]: API keys from the environment, never printed;
//! - [`agent::ModelAgent`]: the engine's agent port on a provider: one bounded agent loop per
//!   attempt, with the prompt of [`prompt`] and the `emit_output` tool of [`output`];
//! - [`tools`]: the built-in tools of `weft-tools` offered in that loop, under the node's
//!   permissions;
//! - [`cli`]: coding-agent CLIs (Claude Code, Codex) as providers, each run inside weft's
//!   sandbox with the node's confinement, approvals not bypassed;
//! - [`generate`]: a model drafts an AGS graph, weft validates it and feeds the findings
//!   back until it is clean (`weft generate`);
//! - [`config::RoutingProfile`]: the `[providers.*]` and `[tiers.*]` tables of `weft.toml`;
//!   [`memory_config`]: its `[memory]` table (the store the memory tools serve);
//! - [`embeddings::OpenAiEmbedder`]: `/v1/embeddings` for the memory's vector recall.
//!
//! This crate depends on `weft-engine` (it implements the engine's agent port), never the
//! reverse.

pub mod agent;
pub mod anthropic;
pub mod chat;
pub mod cli;
pub mod config;
mod connect;
pub mod embeddings;
pub mod error;
pub mod fetch;
pub mod generate;
pub mod http;
pub mod keyring_ref;
pub mod memory_config;
pub mod openai;
pub mod output;
mod price;
pub mod prompt;
pub mod provider;
pub mod secret;
pub mod tools;
pub mod untrusted;
mod wire;
pub mod workspace;

pub use agent::{LoopSettings, MODEL, ModelAgent, Price};
pub use chat::{
    ChatRequest, ChatResponse, FinishReason, Message, TokenUsage, ToolCall, ToolChoice, ToolDef,
};
pub use config::{ConfigError, RoutingProfile, TierRoute};
pub use embeddings::OpenAiEmbedder;
pub use error::{FailureClass, ProviderError};
pub use fetch::HttpFetcher;
pub use http::{
    DEFAULT_MAX_BODY_BYTES, HttpSettings, RetryPolicy, install_crypto_provider, parse_retry_after,
};
pub use keyring_ref::KeyringRef;
pub use memory_config::{EmbedderConfig, MemoryConfig, memory_config, memory_config_of};
pub use provider::{Provider, ProviderConfig, ProviderKind, chat_until_cancelled};
pub use secret::Secret;
pub use tools::{AgentTools, AttemptTools};
pub use workspace::{isolate_mode, isolate_mode_of};

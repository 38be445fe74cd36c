//! The [`Provider`] port (one model API behind the neutral chat model) and the configuration
//! that builds one: its kind, base URL, the environment variable that holds its key, and its
//! HTTP settings.

use std::future::Future;
use std::pin::Pin;

use tokio_util::sync::CancellationToken;

use crate::chat::{ChatRequest, ChatResponse};
use crate::error::{FailureClass, ProviderError};
use crate::http::HttpSettings;
use crate::keyring_ref::KeyringRef;

/// The future a provider returns.
pub type ChatFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ChatResponse, ProviderError>> + Send + 'a>>;

/// One model API. Dropping the future stops reading and closes the connection.
pub trait Provider: Send + Sync {
    /// The provider's name in the routing profile.
    fn name(&self) -> &str;
    /// Sends one request and returns the whole answer (streamed or not, per
    /// [`ChatRequest::stream`]).
    fn chat<'a>(&'a self, request: &'a ChatRequest) -> ChatFuture<'a>;
}

/// Runs `provider.chat(request)` until it answers or `cancel` fires; a cancelled request is
/// dropped mid-flight (its connection closed) and fails with [`FailureClass::Cancelled`].
pub async fn chat_until_cancelled(
    provider: &dyn Provider,
    request: &ChatRequest,
    cancel: &CancellationToken,
) -> Result<ChatResponse, ProviderError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ProviderError::new(
            FailureClass::Cancelled,
            format!("provider `{}`: the request was cancelled", provider.name()),
        )),
        answer = provider.chat(request) => answer,
    }
}

/// The wire format a provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderKind {
    /// `POST {base}/v1/chat/completions` (OpenAI, vLLM, llama.cpp, Ollama, LM Studio, …).
    OpenAi,
    /// `POST {base}/v1/messages` (Anthropic Messages).
    Anthropic,
}

impl ProviderKind {
    pub fn parse(s: &str) -> Option<ProviderKind> {
        match s {
            "openai" => Some(ProviderKind::OpenAi),
            "anthropic" => Some(ProviderKind::Anthropic),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }
}

/// What builds a provider (a `[providers.<name>]` table of `weft.toml`).
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderConfig {
    pub name: String,
    pub kind: ProviderKind,
    /// Scheme, host and port (and a path prefix, if any), without `/v1/…`.
    pub base_url: String,
    /// The environment variable that holds the API key; `None` (and no keyring reference):
    /// send no key (local servers).
    pub api_key_env: Option<String>,
    /// The keyring entry that holds the API key (instead of `api_key_env`, never both).
    pub api_key_keyring: Option<KeyringRef>,
    pub http: HttpSettings,
}

impl ProviderConfig {
    pub fn new(name: &str, kind: ProviderKind, base_url: &str) -> ProviderConfig {
        ProviderConfig {
            name: name.to_string(),
            kind,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key_env: None,
            api_key_keyring: None,
            http: HttpSettings::default(),
        }
    }
}

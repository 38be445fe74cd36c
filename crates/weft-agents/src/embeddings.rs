//! An OpenAI-compatible embedder (`POST {base}/v1/embeddings`) for the memory's optional
//! vector recall (`weft_memory::Memory::add_passage_vectors`, `subgraph_near`,
//! `docs/memory.md` §4). It lives here because HTTP does: `weft-memory` stores and compares
//! vectors and never calls a network. The same transport as the chat providers (time limits,
//! bounded retries, a cap on the answer); a key is sent as `Authorization: Bearer` and never
//! appears in an error.
//!
//! Request: `{"model": M, "input": [TEXT, …]}` (and `"dimensions": N` when configured).
//! Answer: `{"data": [{"index": I,
//! "embedding": [f32, …]}, …]}`, one entry per input in any order (sorted by `index`); an
//! answer with a missing, repeated or extra index, a non-numeric value or vectors of
//! different lengths (or, with `dimensions`, another length) is refused as `model_error`.
//!
//! It is the memory tools' query embedder ([`weft_tools::memory::QueryEmbedder`]) when
//! `weft.toml` has `[memory.embedder]` (`crate::memory_config`).

use serde_json::{Value, json};

use crate::error::{FailureClass, ProviderError};
use crate::http::{HttpSettings, Transport, read_json};
use crate::secret::Secret;

/// An embedding model on an OpenAI-compatible server.
#[derive(Debug)]
pub struct OpenAiEmbedder {
    url: String,
    model: String,
    key: Option<Secret>,
    dimensions: Option<u32>,
    transport: Transport,
}

impl OpenAiEmbedder {
    /// An embedder for `model` at `base_url` (without `/v1`).
    pub fn new(
        base_url: &str,
        model: &str,
        key: Option<Secret>,
        http: HttpSettings,
    ) -> Result<OpenAiEmbedder, ProviderError> {
        Ok(OpenAiEmbedder {
            url: format!("{}/v1/embeddings", base_url.trim_end_matches('/')),
            model: model.to_owned(),
            key,
            dimensions: None,
            transport: Transport::new(http)?,
        })
    }

    /// Asks the server for vectors of `dimensions` values (`"dimensions"` in the request)
    /// and refuses an answer whose vectors have another length.
    pub fn with_dimensions(mut self, dimensions: u32) -> OpenAiEmbedder {
        self.dimensions = Some(dimensions);
        self
    }

    /// The URL it posts to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// One embedding per text, in the texts' order (nothing is sent for no text).
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let secret = self.key.as_ref().map(Secret::expose).unwrap_or_default();
        self.exchange(texts).await.map_err(|e| e.redacted(secret))
    }

    /// [`OpenAiEmbedder::embed`] for a caller without a runtime (`weft memory query`), on
    /// one of its own (current thread).
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                ProviderError::new(
                    FailureClass::Transient,
                    format!("cannot start the embedder's runtime: {e}"),
                )
            })?
            .block_on(self.embed(texts))
    }

    async fn exchange(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
        let mut body = json!({"model": self.model, "input": texts});
        if let Some(n) = self.dimensions {
            body["dimensions"] = json!(n);
        }
        let mut headers = Vec::new();
        if let Some(k) = &self.key {
            headers.push(("authorization", format!("Bearer {}", k.expose())));
        }
        let answer = self.transport.post(&self.url, &headers, &body).await?;
        let vectors = parse_embeddings(&read_json(answer, &self.url).await?, texts.len())?;
        match (self.dimensions, vectors.first()) {
            (Some(n), Some(v)) if v.len() != n as usize => Err(malformed(format!(
                "vectors of {} dimensions; {n} were asked for",
                v.len()
            ))),
            _ => Ok(vectors),
        }
    }
}

impl weft_tools::memory::QueryEmbedder for OpenAiEmbedder {
    fn embed_query<'a>(&'a self, text: &'a str) -> weft_tools::memory::EmbedFuture<'a> {
        Box::pin(async move {
            let mut vectors = self
                .embed(&[text.to_owned()])
                .await
                .map_err(|e| format!("{}: {e}", self.url))?;
            vectors
                .pop()
                .ok_or_else(|| format!("{}: no embedding for the query", self.url))
        })
    }
}

fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::new(
        FailureClass::ModelError,
        format!("embeddings answer: {}", message.into()),
    )
}

/// The vectors of an embeddings answer for `count` inputs, in input order.
pub fn parse_embeddings(answer: &Value, count: usize) -> Result<Vec<Vec<f32>>, ProviderError> {
    let data = answer
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no `data` array"))?;
    if data.len() != count {
        return Err(malformed(format!(
            "{} embeddings for {count} inputs",
            data.len()
        )));
    }
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; count];
    for (at, entry) in data.iter().enumerate() {
        let index = entry
            .get("index")
            .and_then(Value::as_u64)
            .and_then(|i| usize::try_from(i).ok())
            .ok_or_else(|| malformed(format!("data[{at}]: no integer `index`")))?;
        let slot = vectors
            .get_mut(index)
            .ok_or_else(|| malformed(format!("data[{at}]: index {index} out of range")))?;
        if slot.is_some() {
            return Err(malformed(format!("data[{at}]: index {index} repeated")));
        }
        let values = entry
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| malformed(format!("data[{at}]: no `embedding` array")))?;
        let vector = values
            .iter()
            .map(|v| v.as_f64().map(|f| f as f32).filter(|f| f.is_finite()))
            .collect::<Option<Vec<f32>>>()
            .ok_or_else(|| malformed(format!("data[{at}]: a value that is not a number")))?;
        *slot = Some(vector);
    }
    let vectors: Vec<Vec<f32>> = vectors.into_iter().flatten().collect();
    if let Some(first) = vectors.first()
        && vectors
            .iter()
            .any(|v| v.len() != first.len() || v.is_empty())
    {
        return Err(malformed("vectors of different or zero lengths"));
    }
    Ok(vectors)
}

//! Memory tools for agent nodes: host tools over a `weft-memory` store. Reads serve bounded
//! subgraphs; writes stage candidates and cast verifier votes whose provenance (run, node,
//! attempt, actor) comes from the call's environment ([`HostCaller`]), never from the model.
//!
//! - `memory_search {query, limit?}`: the best passages for free text and the edges they cite.
//! - `memory_subgraph {seeds?, search?, hops?, max_edges?, tokens?, predicates?}`: a bounded
//!   subgraph (`weft_memory::Subgraph` as JSON); cite its edges by `provenance`.
//! - `memory_propose {subject, predicate, object, source, chunk?, valid_from?, valid_to?}`:
//!   stages a candidate (extractor `agent:ACTOR`, run = the calling run, chunk defaulting to
//!   `NODE#ATTEMPT`); it becomes a fact only through verification.
//! - `memory_verify {candidate, approve, reason?}`: a vote as verifier `ACTOR@RUN/NODE`.
//!
//! With a [`QueryEmbedder`] (`weft.toml` `[memory.embedder]`), a search's text is embedded
//! and the passages nearest to it seed the subgraph after the full-text search's
//! (`Memory::subgraph_near`); without one, the full-text search alone.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Value, json};
use weft_memory::{Memory, NewCandidate, Provenance, SubgraphQuery};

use crate::env::ToolError;
use crate::host::{HostCaller, HostFuture, HostTool};

/// What embedding a query yields: its vector, or why there is none (said to the model).
pub type EmbedFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<f32>, String>> + Send + 'a>>;

/// Embeds a search's text for vector recall. The OpenAI-compatible `/v1/embeddings` client
/// is `weft_agents::OpenAiEmbedder` (this crate calls no network).
pub trait QueryEmbedder: Send + Sync {
    fn embed_query<'a>(&'a self, text: &'a str) -> EmbedFuture<'a>;
}

/// The four memory tools over one store, ready for `Toolbox::with_host_tool`; searches by
/// full text only.
pub fn memory_tools(memory: &Memory) -> Vec<Arc<dyn HostTool>> {
    memory_tools_with(memory, None)
}

/// [`memory_tools`] whose searches also seed the passages nearest to the search text's
/// embedding, when `embedder` is set.
pub fn memory_tools_with(
    memory: &Memory,
    embedder: Option<Arc<dyn QueryEmbedder>>,
) -> Vec<Arc<dyn HostTool>> {
    [Kind::Search, Kind::Subgraph, Kind::Propose, Kind::Verify]
        .into_iter()
        .map(|kind| {
            Arc::new(MemoryTool {
                memory: memory.clone(),
                embedder: embedder.clone(),
                kind,
            }) as Arc<dyn HostTool>
        })
        .collect()
}

#[derive(Clone, Copy)]
enum Kind {
    Search,
    Subgraph,
    Propose,
    Verify,
}

struct MemoryTool {
    memory: Memory,
    embedder: Option<Arc<dyn QueryEmbedder>>,
    kind: Kind,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn text(arguments: &Value, name: &str) -> String {
    arguments
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn count(arguments: &Value, name: &str, default: u64) -> u64 {
    arguments
        .get(name)
        .and_then(Value::as_u64)
        .unwrap_or(default)
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, ToolError> {
    serde_json::to_value(value).map_err(|e| ToolError::tool(e.to_string()))
}

fn memory_error(error: weft_memory::MemoryError) -> ToolError {
    ToolError::tool(error.to_string())
}

/// The subgraph of `query`, its passage search widened by the passages nearest to
/// `embedding` (as many as the search takes) when there is one.
fn serve(
    memory: &Memory,
    query: &SubgraphQuery,
    embedding: Option<&[f32]>,
) -> Result<weft_memory::Subgraph, ToolError> {
    match embedding {
        Some(vector) => memory.subgraph_near(query, vector, query.passage_limit),
        None => memory.subgraph(query),
    }
    .map_err(memory_error)
}

impl MemoryTool {
    /// Runs the store call off the async threads (SQLite and the writer's answer block).
    async fn blocking(
        &self,
        work: impl FnOnce(Memory) -> Result<Value, ToolError> + Send + 'static,
    ) -> Result<Value, ToolError> {
        let memory = self.memory.clone();
        tokio::task::spawn_blocking(move || work(memory))
            .await
            .map_err(|e| ToolError::tool(format!("the memory call failed: {e}")))?
    }

    /// The embedding of a search's text, when an embedder is configured and there is text.
    async fn embedding(&self, tool: &str, text: &str) -> Result<Option<Vec<f32>>, ToolError> {
        match &self.embedder {
            Some(embedder) if !text.trim().is_empty() => embedder
                .embed_query(text)
                .await
                .map(Some)
                .map_err(|why| ToolError::tool(format!("{tool}: the embedder failed: {why}"))),
            _ => Ok(None),
        }
    }

    async fn answer(
        &self,
        arguments: &Value,
        caller: Option<&HostCaller>,
    ) -> Result<Value, ToolError> {
        let arguments = arguments.clone();
        match self.kind {
            Kind::Search => {
                let search = text(&arguments, "query");
                let embedding = self.embedding("memory_search", &search).await?;
                self.blocking(move |memory| {
                    let query = SubgraphQuery {
                        passage_search: Some(search),
                        passage_limit: usize::try_from(count(&arguments, "limit", 3)).unwrap_or(3),
                        hops: 0,
                        ..SubgraphQuery::default()
                    };
                    to_json(&serve(&memory, &query, embedding.as_deref())?)
                })
                .await
            }
            Kind::Subgraph => {
                let search = text(&arguments, "search");
                let embedding = self.embedding("memory_subgraph", &search).await?;
                self.blocking(move |memory| {
                    let strings = |name: &str| -> Vec<String> {
                        arguments
                            .get(name)
                            .and_then(Value::as_array)
                            .map(|a| {
                                a.iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_string)
                                    .collect()
                            })
                            .unwrap_or_default()
                    };
                    let predicates = strings("predicates");
                    let query = SubgraphQuery {
                        seeds: strings("seeds"),
                        passage_search: (!search.is_empty()).then_some(search),
                        hops: u32::try_from(count(&arguments, "hops", 2)).unwrap_or(2),
                        max_edges: usize::try_from(count(&arguments, "max_edges", 500))
                            .unwrap_or(500),
                        max_tokens: usize::try_from(count(&arguments, "tokens", 2000))
                            .unwrap_or(2000),
                        predicates: (!predicates.is_empty()).then_some(predicates),
                        ..SubgraphQuery::default()
                    };
                    to_json(&serve(&memory, &query, embedding.as_deref())?)
                })
                .await
            }
            Kind::Propose => {
                let caller = caller
                    .cloned()
                    .ok_or_else(|| ToolError::tool("memory_propose needs the calling run"))?;
                self.blocking(move |memory| {
                    let chunk = match text(&arguments, "chunk") {
                        c if c.is_empty() => format!("{}#{}", caller.node, caller.attempt),
                        c => c,
                    };
                    let candidate = NewCandidate {
                        subject: text(&arguments, "subject"),
                        predicate: text(&arguments, "predicate"),
                        object: text(&arguments, "object"),
                        provenance: Provenance {
                            source: text(&arguments, "source"),
                            chunk,
                            extractor: format!("agent:{}", caller.actor),
                            run_id: caller.run.clone(),
                        },
                        valid_from: arguments.get("valid_from").and_then(Value::as_i64),
                        valid_to: arguments.get("valid_to").and_then(Value::as_i64),
                    };
                    let report = memory
                        .ingest(vec![candidate], now_ms())
                        .map_err(memory_error)?;
                    match (report.staged.first(), report.rejected.first()) {
                        (Some(id), _) => Ok(json!({"candidate": id, "status": "staged"})),
                        (None, Some((_, id, reason))) => {
                            Ok(json!({"candidate": id, "status": "rejected", "reason": reason}))
                        }
                        (None, None) => Err(ToolError::tool("nothing was staged")),
                    }
                })
                .await
            }
            Kind::Verify => {
                let caller = caller
                    .cloned()
                    .ok_or_else(|| ToolError::tool("memory_verify needs the calling run"))?;
                self.blocking(move |memory| {
                    let candidate = arguments
                        .get("candidate")
                        .and_then(Value::as_i64)
                        .unwrap_or(-1);
                    let approve = arguments
                        .get("approve")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    let verifier = format!("{}@{}/{}", caller.actor, caller.run, caller.node);
                    let outcome = memory
                        .vote(
                            candidate,
                            &verifier,
                            approve,
                            &text(&arguments, "reason"),
                            now_ms(),
                        )
                        .map_err(memory_error)?;
                    to_json(&outcome)
                })
                .await
            }
        }
    }
}

impl HostTool for MemoryTool {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Search => "memory_search",
            Kind::Subgraph => "memory_subgraph",
            Kind::Propose => "memory_propose",
            Kind::Verify => "memory_verify",
        }
    }

    fn description(&self) -> &str {
        match self.kind {
            Kind::Search => {
                "Search the memory's passages; returns the best passages' facts, each with its provenance id."
            }
            Kind::Subgraph => {
                "A bounded subgraph of verified facts around seed entities (and/or a passage search); cite facts by their provenance id."
            }
            Kind::Propose => {
                "Propose a fact (subject, predicate, object, source) for verification; it is not a fact until verified."
            }
            Kind::Verify => {
                "Vote on a proposed fact by its candidate id: approve or reject, with a reason."
            }
        }
    }

    fn parameters(&self) -> Value {
        match self.kind {
            Kind::Search => {
                json!({"type": "object", "additionalProperties": false, "required": ["query"],
                "properties": {"query": {"type": "string", "minLength": 1},
                               "limit": {"type": "integer", "minimum": 1, "maximum": 20}}})
            }
            Kind::Subgraph => json!({"type": "object", "additionalProperties": false,
                "properties": {"seeds": {"type": "array", "items": {"type": "string"}, "maxItems": 20},
                               "search": {"type": "string"},
                               "hops": {"type": "integer", "minimum": 0, "maximum": 4},
                               "max_edges": {"type": "integer", "minimum": 1, "maximum": 2000},
                               "tokens": {"type": "integer", "minimum": 1, "maximum": 20000},
                               "predicates": {"type": "array", "items": {"type": "string"}}}}),
            Kind::Propose => json!({"type": "object", "additionalProperties": false,
                "required": ["subject", "predicate", "object", "source"],
                "properties": {"subject": {"type": "string"}, "predicate": {"type": "string"},
                               "object": {"type": "string"}, "source": {"type": "string"},
                               "chunk": {"type": "string"},
                               "valid_from": {"type": "integer"}, "valid_to": {"type": "integer"}}}),
            Kind::Verify => json!({"type": "object", "additionalProperties": false,
                "required": ["candidate", "approve"],
                "properties": {"candidate": {"type": "integer", "minimum": 1},
                               "approve": {"type": "boolean"}, "reason": {"type": "string"}}}),
        }
    }

    fn side_effect(&self) -> bool {
        matches!(self.kind, Kind::Propose | Kind::Verify)
    }

    fn call<'a>(&'a self, arguments: &'a Value) -> HostFuture<'a> {
        Box::pin(self.answer(arguments, None))
    }

    fn call_as<'a>(&'a self, arguments: &'a Value, caller: &'a HostCaller) -> HostFuture<'a> {
        Box::pin(self.answer(arguments, Some(caller)))
    }
}

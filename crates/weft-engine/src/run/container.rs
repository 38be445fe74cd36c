//! Container nodes (`map`, `loop`, `subgraph`): their spec read from the document
//! ([`ContainerSpec`]), the up-front check of their fragments ([`check_container`]), and
//! the dispatch of a started container to `map.rs`, `loop_.rs` or `subgraph.rs`
//! ([`run_container`]).
//!
//! A container node stays `running` in its scope while its instances run: the driver runs
//! the container inline (like a fallback), and its outcome is an ordinary attempt result
//! that settles it like any other node.

use serde_json::{Map, Value};
use weft_ags::model::{Fields, obj_of, str_of};

use super::fragment::fragment_doc;
use super::{Driver, RunOptions};
use crate::EngineError;
use crate::context::RunContext;

/// What a `map` does when an item fails (`map.on_item_failure`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ItemFailure {
    /// The first failure stops further items from starting and fails the map.
    FailFast,
    /// Failed items contribute `null`; the map succeeds.
    Continue,
    /// The map succeeds when at least this many items succeeded.
    Threshold(u64),
}

/// A `map` block (DIGEST §1.8).
#[derive(Clone, Debug)]
pub(super) struct MapSpec {
    pub(super) over: String,
    pub(super) item_as: String,
    pub(super) index_as: String,
    pub(super) max_items: usize,
    /// `on_over_limit: truncate` (a warning) instead of the default `fail` (RT026).
    pub(super) truncate: bool,
    pub(super) max_parallel: usize,
    pub(super) on_item_failure: ItemFailure,
}

/// `loop.mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LoopMode {
    While,
    Until,
    Repeat,
}

/// A `loop` block (DIGEST §1.8).
#[derive(Clone, Debug)]
pub(super) struct LoopSpec {
    pub(super) mode: LoopMode,
    pub(super) condition: Option<String>,
    pub(super) max_iterations: u32,
    /// `fail` (default), `succeed` or `escalate`.
    pub(super) on_max_iterations: String,
    /// (body output name, body param name): iteration `i`'s value feeds iteration `i + 1`.
    pub(super) carry: Vec<(String, String)>,
}

/// A `subgraph` block (DIGEST §1.8) with `use` or `inline`.
#[derive(Clone, Debug)]
pub(super) struct SubgraphSpec {
    /// (child param name, expression in the parent's scope).
    pub(super) params: Vec<(String, String)>,
    /// `subgraph.context`: entries merged into the child's context.
    pub(super) context: Map<String, Value>,
    /// (node output name, expression in the child's final scope); empty: the child's
    /// outputs are copied verbatim.
    pub(super) outputs_from: Vec<(String, String)>,
    /// `ref`: another document, loaded before the run (`crate::refs`).
    pub(super) reference: Option<RefSpec>,
    /// `inherit_context`: the parent's context is visible to a `ref` child.
    pub(super) inherit_context: bool,
}

/// A `subgraph.ref`.
#[derive(Clone, Debug)]
pub(super) struct RefSpec {
    pub(super) uri: String,
    /// `sha256-…`: the child's graph digest must equal it (RT051).
    pub(super) integrity: Option<String>,
    /// The child's `id` must equal it (RT052).
    pub(super) expected_id: Option<String>,
}

#[derive(Clone, Debug)]
pub(super) enum Kind {
    Map(MapSpec),
    Loop(LoopSpec),
    Subgraph(SubgraphSpec),
}

/// A container node, prepared up front: its kind, its fragment and its `collect`.
#[derive(Clone, Debug)]
pub(super) struct ContainerSpec {
    pub(super) kind: Kind,
    /// The fragment (inline `body`, or the named fragment `use` names, resolved by the
    /// preflight: [`ContainerSpec::resolve`]).
    pub(super) body: Map<String, Value>,
    /// `use`: the named fragment, until resolved.
    pub(super) uses: Option<String>,
    /// (container output name, expression), in declared order.
    pub(super) collect: Vec<(String, String)>,
}

fn pairs(block: &Map<String, Value>, key: &str) -> Vec<(String, String)> {
    block
        .field(key)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
        .collect()
}

fn count(block: &Map<String, Value>, key: &str) -> Option<u64> {
    block.field(key).and_then(Value::as_u64)
}

impl ContainerSpec {
    /// Reads the `map` or `loop` block of node `id` (`obj` is the node object).
    pub(super) fn read(id: &str, ty: &str, obj: &Map<String, Value>) -> Result<Self, String> {
        let block = obj_of(obj, ty).ok_or_else(|| format!("node `{id}`: no `{ty}` block"))?;
        let kind = match ty {
            "subgraph" => Kind::Subgraph(SubgraphSpec {
                params: pairs(block, "params"),
                context: obj_of(block, "context").cloned().unwrap_or_default(),
                outputs_from: pairs(block, "outputs_from"),
                reference: obj_of(block, "ref").map(|r| RefSpec {
                    uri: str_of(r, "uri").unwrap_or_default().to_string(),
                    integrity: str_of(r, "integrity").map(str::to_string),
                    expected_id: str_of(r, "expected_id").map(str::to_string),
                }),
                inherit_context: block
                    .field("inherit_context")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            }),
            "map" => Kind::Map(MapSpec {
                over: str_of(block, "over")
                    .ok_or_else(|| format!("node `{id}`: `map.over` is required"))?
                    .to_string(),
                item_as: str_of(block, "as").unwrap_or("item").to_string(),
                index_as: str_of(block, "index_as").unwrap_or("index").to_string(),
                max_items: count(block, "max_items")
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| format!("node `{id}`: `map.max_items` is required"))?,
                truncate: str_of(block, "on_over_limit") == Some("truncate"),
                max_parallel: count(block, "max_parallel")
                    .map_or(1, |n| usize::try_from(n).unwrap_or(usize::MAX).max(1)),
                on_item_failure: match str_of(block, "on_item_failure") {
                    Some("continue") => ItemFailure::Continue,
                    Some("threshold") => {
                        ItemFailure::Threshold(count(block, "min_successes").ok_or_else(|| {
                            format!(
                                "node `{id}`: `on_item_failure: threshold` needs `min_successes`"
                            )
                        })?)
                    }
                    _ => ItemFailure::FailFast,
                },
            }),
            _ => {
                let mode = match str_of(block, "mode") {
                    Some("while") => LoopMode::While,
                    Some("until") => LoopMode::Until,
                    Some("repeat") => LoopMode::Repeat,
                    other => {
                        return Err(format!(
                            "node `{id}`: `loop.mode` must be while, until or repeat, not {other:?}"
                        ));
                    }
                };
                let condition = str_of(block, "condition").map(str::to_string);
                if mode != LoopMode::Repeat && condition.is_none() {
                    return Err(format!(
                        "node `{id}`: a `{}` loop needs a `condition`",
                        if mode == LoopMode::While {
                            "while"
                        } else {
                            "until"
                        }
                    ));
                }
                Kind::Loop(LoopSpec {
                    mode,
                    condition,
                    max_iterations: count(block, "max_iterations")
                        .and_then(|n| u32::try_from(n).ok())
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| {
                            format!("node `{id}`: `loop.max_iterations` (1–1000) is required")
                        })?,
                    on_max_iterations: str_of(block, "on_max_iterations")
                        .unwrap_or("fail")
                        .to_string(),
                    carry: pairs(block, "carry"),
                })
            }
        };
        Ok(ContainerSpec {
            kind,
            body: obj_of(block, "body")
                .or_else(|| obj_of(block, "inline"))
                .cloned()
                .unwrap_or_default(),
            uses: str_of(block, "use").map(str::to_string),
            collect: pairs(block, "collect"),
        })
    }

    /// Resolves `use` against the document's `subgraphs` (AG132 when unknown).
    pub(super) fn resolve(&mut self, id: &str, doc: &Map<String, Value>) -> Result<(), String> {
        if let Some(name) = self.uses.take() {
            self.body = obj_of(doc, "subgraphs")
                .and_then(|s| obj_of(s, &name))
                .cloned()
                .ok_or_else(|| format!("node `{id}`: AG132 unknown fragment `{name}` in `use`"))?;
        }
        Ok(())
    }

    /// Does the fragment declare its own `params`? (Then it sees only those.)
    pub(super) fn declares_params(&self) -> bool {
        self.body.contains_key("params")
    }
}

/// Runs container node `job` (`ctx`: its context with its resolved inputs) to its attempt
/// result, its fragment instances in the run's log.
pub(super) async fn run_container(
    d: &Driver<'_>,
    options: &RunOptions,
    job: &super::job::Job,
    ctx: &RunContext,
) -> Result<super::node::Attempt, EngineError> {
    let super::job::Work::Container(spec) = &job.work else {
        return Err(EngineError::Internal(format!(
            "node `{}` is not a container",
            job.id
        )));
    };
    let result = match &spec.kind {
        Kind::Map(map) => super::map::run_map(d, options, &job.id, spec, map, ctx).await?,
        Kind::Loop(lp) => super::loop_::run_loop(d, options, &job.id, spec, lp, ctx).await?,
        Kind::Subgraph(sub) => {
            super::subgraph::run_subgraph(d, options, &job.id, spec, sub, ctx).await?
        }
    };
    if result.waiting || result.failure.is_some() || job.defer_success {
        return Ok(result);
    }
    // Like any node's attempt: its declared outputs checked (required, `type`, `schema`),
    // then its `success` evaluated on them.
    if let Some(failure) = super::node::check_outputs(job, &result.outputs) {
        return Ok(super::node::Attempt {
            failure: Some(failure),
            ..result
        });
    }
    let index = d.jobs.iter().position(|j| j.id == job.id).unwrap_or(0);
    let limits = d.budget.limits_for(index, &job.limits, d.clock.now_ms());
    let judge = super::judge::ModelJudge::new(
        job,
        std::sync::Arc::clone(&d.agents),
        std::sync::Arc::clone(&d.clock),
        1,
        limits,
    );
    let spent = result.usage;
    let mut checked = super::node::check_success(job, result.outputs, ctx.clone(), &judge).await;
    checked.usage = spent.plus(&judge.spent());
    let mut warnings = result.warnings;
    warnings.append(&mut checked.warnings);
    checked.warnings = warnings;
    Ok(checked)
}

/// Compensation runs for the root scope's nodes when the run fails (`compensate.rs`); a
/// fragment node's would need its instance scope back after the run: refused up front
/// rather than silently never run.
fn check_no_compensation(job: &super::job::Job) -> Result<(), String> {
    match &job.compensation {
        Some(c) => Err(format!(
            "node `{}`: `failure.compensation` (`{c}`) inside a loop, map or subgraph is not supported; declare the compensation on the container node",
            job.id
        )),
        None => Ok(()),
    }
}

/// Prepares a container node up front: `use` resolved against `doc`'s `subgraphs`, no
/// retries (a container is not re-run: its body's nodes retry themselves), and every node
/// of its fragment, at any depth, prepared and checked like the root's, so a fragment the
/// engine cannot run refuses the run before anything runs.
pub(super) fn check_container(
    job: &mut super::job::Job,
    doc: &Map<String, Value>,
    options: &RunOptions,
    agents: &crate::agent::AgentRegistry,
) -> Result<(), String> {
    let super::job::Work::Container(spec) = &mut job.work else {
        return Ok(());
    };
    spec.resolve(&job.id, doc)?;
    job.max_attempts = 1;
    let child = match &spec.kind {
        // A `ref` child loaded before the run is checked like a fragment; one that was not
        // loaded fails its node when it would run.
        Kind::Subgraph(SubgraphSpec {
            reference: Some(r), ..
        }) => options
            .refs
            .iter()
            .find(|c| c.uri == r.uri)
            .and_then(|c| c.document.as_object().cloned()),
        _ => fragment_doc(doc, &spec.body).as_object().cloned(),
    };
    let Some(child) = child else {
        return Ok(());
    };
    let scopes = weft_ags::model::scopes(&child);
    let Some(scope) = scopes.first() else {
        return Ok(());
    };
    let defaults = obj_of(&child, "defaults");
    let mut refusals = Vec::new();
    for node in scope.nodes() {
        match super::job::prepare(&node, defaults, &options.project_dir) {
            Ok(mut inner) => {
                if let Err(e) = check_container(&mut inner, &child, options, agents)
                    .and_then(|()| super::preflight::check_model_node(&inner, agents))
                    .and_then(|()| check_no_compensation(&inner))
                {
                    refusals.push(e);
                }
                refusals.extend(super::preflight::check_judges(&inner, agents));
            }
            Err(e) => refusals.push(e),
        }
    }
    if refusals.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "in the fragment of `{}`: {}",
            job.id,
            refusals.join("; ")
        ))
    }
}

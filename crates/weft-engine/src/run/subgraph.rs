//! A `subgraph` node with `use` (a named fragment of `subgraphs:`) or `inline` (DIGEST
//! §1.8): one fragment instance at the path `<node>` (no index), its params evaluated in
//! the parent's scope (`subgraph.params`), `subgraph.context` merged into its context, and
//! its result mapped out by `outputs_from` (evaluated in the child's final scope), else its
//! `outputs` copied verbatim. The child is sealed: it sees only its own nodes, params and
//! context, never the parent's nodes (AG202).
//!
//! The child is a nested scope of the run's log, not a second log: its events carry
//! `scope: <node>`, its `run_started.graph` is the child document, and its own run record
//! (`parent_run_id` = the run) is derived from those events (`record::child_record_of`).

use serde_json::{Map, Value};

use super::fragment::{ContainerSpec, Instance, SubgraphSpec, fragment_doc, run_instance};
use super::node::Attempt;
use super::{Driver, RunOptions};
use crate::EngineError;
use crate::context::RunContext;

fn eval(src: &str, ctx: &RunContext) -> Result<Value, String> {
    weft_agx::parse(src)
        .map_err(|e| format!("`{src}`: {e}"))
        .and_then(|e| weft_agx::eval(&e, ctx).map_err(|e| format!("`{src}`: {e}")))
}

/// Runs subgraph node `id` (its context `ctx` holds its resolved inputs) to its attempt
/// result.
pub(super) async fn run_subgraph(
    d: &Driver<'_>,
    options: &RunOptions,
    id: &str,
    spec: &ContainerSpec,
    sub: &SubgraphSpec,
    ctx: &RunContext,
) -> Result<Attempt, EngineError> {
    let failed = |message: String| Attempt {
        failure: Some(("tool_error".to_string(), message)),
        ..Attempt::default()
    };
    let mut doc = fragment_doc(&d.scope.doc, &spec.body);
    if !sub.context.is_empty()
        && let Some(obj) = doc.as_object_mut()
    {
        let mut context = obj
            .get("context")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        context.extend(sub.context.clone());
        obj.insert("context".into(), Value::Object(context));
    }
    let mut params = if spec.declares_params() {
        Map::new()
    } else {
        d.params.as_object().cloned().unwrap_or_default()
    };
    for (name, src) in &sub.params {
        match eval(src, ctx) {
            Ok(v) => {
                params.insert(name.clone(), v);
            }
            Err(e) => return Ok(failed(format!("subgraph `{id}`: params.{name}: {e}"))),
        }
    }
    let path = match &d.scope.path {
        Some(p) => format!("{p}.{id}"),
        None => id.to_string(),
    };
    let end = run_instance(
        d,
        options,
        Instance {
            path,
            doc: doc.clone(),
            params,
            bindings: Map::new(),
            graph: doc,
        },
    )
    .await?;
    if !end.ok() {
        return Ok(failed(format!(
            "subgraph `{id}` ended {}: {}",
            end.status.as_str(),
            end.reasons.join("; ")
        )));
    }
    let outputs = if sub.outputs_from.is_empty() {
        end.outputs.as_object().cloned().unwrap_or_default()
    } else {
        let mut out = Map::new();
        for (name, src) in &sub.outputs_from {
            match eval(src, &end.scope) {
                Ok(v) => {
                    out.insert(name.clone(), v);
                }
                Err(e) => {
                    return Ok(failed(format!("subgraph `{id}`: outputs_from.{name}: {e}")));
                }
            }
        }
        out
    };
    Ok(Attempt {
        outputs,
        ..Attempt::default()
    })
}

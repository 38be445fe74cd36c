//! A `subgraph` node (DIGEST §1.8) — `use` (a named fragment of `subgraphs:`), `inline`, or
//! `ref` (another local document, loaded and checked before the run by `crate::refs`):
//! one instance at the path `<node>` (no index), its params evaluated in the parent's scope
//! (`subgraph.params`), `subgraph.context` merged into its context, and its result mapped
//! out by `outputs_from` (evaluated in the child's final scope), else its `outputs` copied
//! verbatim. The child is sealed: it sees only its own nodes, params and context, never the
//! parent's nodes (AG202); a `ref` child sees the parent's context only with
//! `inherit_context: true`.
//!
//! The child is a nested scope of the run's log, not a second log: its events carry
//! `scope: <node>`, its `run_started.graph` is the child document, and its own run record
//! (`parent_run_id` = the run) is derived from those events (`record::child_record_of`).

use serde_json::{Map, Value};
use weft_core::FailureClass;

use std::sync::Arc;

use super::container::{ContainerSpec, RefSpec, SubgraphSpec};
use super::fragment::{Instance, InstanceParams, fragment_doc, run_instance, shared_doc};
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
        failure: Some((FailureClass::ToolError, message)),
        ..Attempt::default()
    };
    let path = match &d.scope.path {
        Some(p) => format!("{p}.{id}"),
        None => id.to_string(),
    };
    let (logged, refs, own_params) = match &sub.reference {
        None => (
            fragment_doc(&d.scope.doc, &spec.body),
            None,
            spec.declares_params(),
        ),
        Some(r) => match ref_child(d, &path, r) {
            Ok((doc, refs)) => (doc, refs, true),
            Err(e) => return Ok(failed(format!("subgraph `{id}`: {e}"))),
        },
    };
    // The instance logs its document as referenced (`run_started.graph`: a `ref` child's
    // digest stays the one `integrity` pins); the context is merged into the copy it runs.
    let mut doc = logged.clone();
    if let Some(obj) = doc.as_object_mut() {
        let mut context = obj
            .get("context")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if sub.reference.is_some() && sub.inherit_context {
            // The child declares its context keys (AG203); inherited, the parent's values
            // of them and its other entries win over the child's defaults.
            context.extend(d.context.as_object().cloned().unwrap_or_default());
        }
        context.extend(sub.context.clone());
        if !context.is_empty() {
            obj.insert("context".into(), Value::Object(context));
        }
    }
    let mut params = if own_params {
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
    let (doc, digest) = shared_doc(doc);
    let end = run_instance(
        d,
        options,
        Instance {
            path,
            digest,
            doc,
            plan: None,
            params: InstanceParams::Given(params),
            bindings: Map::new(),
            graph: logged,
            refs,
            own_params,
        },
    )
    .await?;
    if end.waiting() {
        return Ok(Attempt::waiting_on_person());
    }
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

/// A `ref` child's own loaded references.
type Refs = Arc<Vec<crate::refs::ChildRef>>;

/// The document a `ref` names: the child loaded before the run (by `uri`, among the
/// enclosing document's references), else — on resume — the one the instance logged when
/// it started. Its digest and id are checked again (RT051, RT052).
fn ref_child(d: &Driver<'_>, path: &str, r: &RefSpec) -> Result<(Value, Option<Refs>), String> {
    let (doc, refs) = match d.scope.refs.iter().find(|c| c.uri == r.uri) {
        Some(child) => (
            (*child.document).clone(),
            Some(Arc::new(child.children.clone())),
        ),
        None => {
            let logged = d
                .scope
                .resumed
                .as_ref()
                .and_then(|res| res.scopes.get(path))
                .and_then(|records| records.first())
                .and_then(|r| crate::events::RunEvent::from_record(r).ok());
            match logged {
                Some(crate::events::RunEvent::RunStarted { graph, .. }) if graph.is_object() => {
                    (graph, None)
                }
                _ => {
                    return Err(format!(
                        "the ref `{}` was not loaded: run the document from its file (`weft run FILE` and `weft resume RUN FILE` load local refs), or pass `RunOptions::refs`",
                        r.uri
                    ));
                }
            }
        }
    };
    if let Some(want) = &r.integrity {
        let got = weft_ags::digest::graph_digest(&doc);
        if &got != want {
            return Err(format!(
                "RT051: the ref `{}` digests to {got}, its integrity says {want}",
                r.uri
            ));
        }
    }
    if let Some(want) = &r.expected_id {
        let got = doc.get("id").and_then(Value::as_str).unwrap_or_default();
        if got != want {
            return Err(format!(
                "RT052: the ref `{}` has id `{got}`, expected_id is `{want}`",
                r.uri
            ));
        }
    }
    Ok((doc, refs))
}

/// The `subgraph.ref`s of `root` (in any of its scopes) whose child is not among `loaded`:
/// a new run refuses them up front (a resumed run may find a started child in its log).
pub(super) fn unloaded_refs(
    root: &Map<String, Value>,
    loaded: &[crate::refs::ChildRef],
) -> Vec<String> {
    let mut out = Vec::new();
    fn uri_of(obj: &Map<String, Value>) -> Option<&str> {
        obj.get("subgraph")
            .and_then(|b| b.get("ref"))
            .and_then(|r| r.get("uri"))
            .and_then(Value::as_str)
    }
    for scope in weft_ags::model::scopes(root) {
        // Only the nodes with a ref are built (the others are not looked at twice).
        for node in scope.nodes_where(|obj| uri_of(obj).is_some()) {
            let uri = uri_of(node.obj);
            if let Some(uri) = uri
                && !loaded.iter().any(|c| c.uri == uri)
            {
                out.push(format!(
                    "node `{}`: the ref `{uri}` is not loaded: run the document from its file (`weft run FILE` loads and checks local refs) or pass `RunOptions::refs`",
                    node.id
                ));
            }
        }
    }
    out
}

//! A `loop` node (DIGEST §1.8): iterations run one after another, each its own fragment
//! instance `<loop>[<i>]` with `loop.index`, `loop.iteration` and `loop.previous` (the
//! previous iteration's `collect`) bound; `carry` feeds an output of iteration `i` into a
//! param of iteration `i + 1`; `while` tests before an iteration (in the previous one's
//! scope), `until` after it; `max_iterations` is a hard bound, and reaching it without
//! the condition met is RT021, decided by `on_max_iterations`. `collect` is evaluated in
//! the final iteration's scope.

use std::sync::Arc;

use serde_json::{Map, Value};
use weft_core::FailureClass;

use super::container::{ContainerSpec, LoopMode, LoopSpec};
use super::fragment::{
    Instance, InstanceEnd, InstanceParams, inheriting_doc, run_instance, shared_doc,
};
use super::node::Attempt;
use super::{Driver, RT062, RunOptions};
use crate::EngineError;
use crate::context::{NodeView, RunContext};

/// Evaluates the loop's condition in `scope`. An evaluation error follows
/// `policy.on_expression_error` (DIGEST §2.6): under `false` it is `false` and an `RT062`
/// warning; under `fail` it is the `RT062` error that ends the loop (and fails the run).
fn condition(
    src: &str,
    scope: &RunContext,
    yield_false: bool,
    warnings: &mut Vec<String>,
) -> Result<bool, String> {
    match super::eval_condition(src, scope) {
        (value, None) => Ok(value),
        (_, Some(e)) if yield_false => {
            warnings.push(format!("{RT062}loop condition evaluated as false: {e}"));
            Ok(false)
        }
        (_, Some(e)) => Err(format!("{RT062}loop condition: {e}")),
    }
}

/// A loop attempt that ended on its condition's evaluation error.
fn condition_failed(error: String, warnings: Vec<String>) -> Attempt {
    Attempt {
        failure: Some((FailureClass::ValidationError, error)),
        warnings,
        ..Attempt::default()
    }
}

/// The value of body output `name` in a finished iteration, for `carry`: the fragment's
/// declared output of that name, else a `collect`ed value of that name, else the first
/// body node (declaration order) with an output of that name.
fn carried(end: &InstanceEnd, collected: &Map<String, Value>, name: &str) -> Option<Value> {
    end.outputs
        .get(name)
        .or_else(|| collected.get(name))
        .filter(|v| !v.is_null())
        .cloned()
        .or_else(|| {
            end.scope
                .nodes
                .values()
                .find_map(|n| n.outputs.get(name).filter(|v| !v.is_null()).cloned())
        })
}

/// Runs loop node `id` (its context `ctx` holds its resolved inputs) to its attempt result.
pub(super) async fn run_loop(
    d: &Driver<'_>,
    options: &RunOptions,
    id: &str,
    spec: &ContainerSpec,
    lp: &LoopSpec,
    ctx: &RunContext,
) -> Result<Attempt, EngineError> {
    let (doc, digest) = shared_doc(inheriting_doc(&d.scope.doc, &spec.body));
    // Iterations that inherit the enclosing params are prepared once; carried params
    // differ per iteration.
    let plan = Arc::new(std::sync::OnceLock::new());
    let prefix = d
        .scope
        .path
        .as_ref()
        .map_or(String::new(), |p| format!("{p}."));
    let mut last: Option<(InstanceEnd, Map<String, Value>)> = None;
    let mut capped = lp.mode != LoopMode::Repeat;
    let mut warnings = Vec::new();
    let yield_false = !super::expression_errors_fatal(&d.scope.doc);
    for i in 0..lp.max_iterations {
        if d.scope.shared.cancel_relayed() {
            // A cancel read while the loop runs: no further iteration starts.
            return Ok(Attempt {
                failure: Some((FailureClass::Cancelled, format!("loop `{id}`: cancelled"))),
                warnings,
                ..Attempt::default()
            });
        }
        let mut binding = Map::new();
        binding.insert("index".into(), Value::from(i));
        binding.insert("iteration".into(), Value::from(i + 1));
        if let Some((_, collected)) = &last {
            binding.insert("previous".into(), Value::Object(collected.clone()));
        }
        if lp.mode == LoopMode::While {
            // Tested in the previous iteration's scope; before the first, an empty one.
            let scope = match &last {
                Some((end, _)) => end.scope.clone(),
                None => {
                    // The body's nodes are declared but have produced nothing: each reads
                    // as `pending` with absent (null) outputs (DIGEST §1.8, §2.3).
                    let nodes = spec
                        .body
                        .get("nodes")
                        .and_then(Value::as_object)
                        .into_iter()
                        .flat_map(|n| n.keys())
                        .map(|id| {
                            let view = NodeView {
                                status: "pending",
                                ..NodeView::default()
                            };
                            (id.clone(), view)
                        })
                        .collect();
                    let mut s = RunContext {
                        params: ctx.params.clone(),
                        context: ctx.context.clone(),
                        graph: Arc::clone(&ctx.graph),
                        nodes,
                        ..RunContext::default()
                    };
                    s.bindings
                        .insert("loop".into(), Value::Object(binding.clone()));
                    s
                }
            };
            let tested = condition(
                lp.condition.as_deref().unwrap_or("false"),
                &scope,
                yield_false,
                &mut warnings,
            );
            let go = match tested {
                Ok(go) => go,
                Err(e) => return Ok(condition_failed(e, warnings)),
            };
            if !go {
                capped = false;
                break;
            }
        }
        let params = if spec.declares_params() {
            let mut p = Map::new();
            if let Some((end, collected)) = &last {
                for (out, param) in &lp.carry {
                    if let Some(v) = carried(end, collected, out) {
                        p.insert(param.clone(), v);
                    }
                }
            }
            InstanceParams::Given(p)
        } else {
            InstanceParams::Inherited(Arc::clone(&d.params))
        };
        let mut bindings = Map::new();
        bindings.insert("loop".into(), Value::Object(binding));
        let end = run_instance(
            d,
            options,
            Instance {
                path: format!("{prefix}{id}[{i}]"),
                doc: Arc::clone(&doc),
                digest: Arc::clone(&digest),
                plan: (!spec.declares_params()).then(|| Arc::clone(&plan)),
                params,
                bindings,
                graph: Value::Null,
                refs: None,
                own_params: spec.declares_params(),
            },
        )
        .await?;
        if end.waiting() {
            return Ok(Attempt::waiting_on_person());
        }
        if !end.ok() {
            // A terminal failure inside an iteration ends the loop and fails the node.
            return Ok(Attempt {
                failure: Some((
                    FailureClass::ToolError,
                    format!(
                        "loop `{id}`: iteration {} ended {}: {}",
                        i + 1,
                        end.status.as_str(),
                        end.reasons.join("; ")
                    ),
                )),
                warnings,
                ..Attempt::default()
            });
        }
        let collected = end.collect(&spec.collect);
        let stop = lp.mode == LoopMode::Until
            && match condition(
                lp.condition.as_deref().unwrap_or("true"),
                &end.scope,
                yield_false,
                &mut warnings,
            ) {
                Ok(done) => done,
                Err(e) => return Ok(condition_failed(e, warnings)),
            };
        last = Some((end, collected));
        if stop {
            capped = false;
            break;
        }
    }
    let outputs = last.map(|(_, c)| c).unwrap_or_default();
    let mut failure = None;
    if capped {
        let message = format!(
            "RT021: loop `{id}` reached max_iterations {} without meeting its condition",
            lp.max_iterations
        );
        // RT021 is recorded whatever `on_max_iterations` decides (DIGEST §1.8).
        warnings.push(format!(
            "{message} (on_max_iterations: {})",
            lp.on_max_iterations
        ));
        if lp.on_max_iterations != "succeed" {
            // `fail`, and `escalate`: the node's failure ladder (its `escalation`) decides.
            failure = Some((FailureClass::CriteriaFailed, message));
        }
    }
    Ok(Attempt {
        outputs,
        failure,
        warnings,
        ..Attempt::default()
    })
}

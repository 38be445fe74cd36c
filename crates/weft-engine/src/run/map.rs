//! A `map` node (DIGEST §1.8): its `over` array, bounded by `max_items` (RT026: refused
//! unless `on_over_limit: truncate`), each item run as its own fragment instance
//! `<map>[<i>]` with the item and its index bound (`as`, `index_as`), at most
//! `max_parallel` at once (further capped by the run's `max_parallel`), `collect` gathered
//! in input order with `null` for failed or skipped items, and `on_item_failure` deciding
//! what a failed item means for the map.

use std::sync::Arc;
use std::task::Poll;

use serde_json::{Map, Value};

use super::container::{ContainerSpec, ItemFailure, MapSpec};
use super::fragment::{
    Instance, InstanceEnd, InstanceParams, InstanceRun, inheriting_doc, run_instance, shared_doc,
};
use super::node::Attempt;
use super::{Driver, RunOptions};
use crate::EngineError;
use crate::context::RunContext;

fn failed(class: &str, message: String) -> Attempt {
    Attempt {
        failure: Some((class.to_string(), message)),
        ..Attempt::default()
    }
}

/// Runs map node `id` (its context `ctx` holds its resolved inputs) to its attempt result.
pub(super) async fn run_map(
    d: &Driver<'_>,
    options: &RunOptions,
    id: &str,
    spec: &ContainerSpec,
    map: &MapSpec,
    ctx: &RunContext,
) -> Result<Attempt, EngineError> {
    let over = match weft_agx::parse(&map.over)
        .map_err(|e| e.to_string())
        .map(|e| weft_agx::eval(&e, ctx).map_err(|e| e.to_string()))
    {
        Ok(Ok(Value::Array(items))) => items,
        Ok(Ok(other)) => {
            return Ok(failed(
                "validation_error",
                format!(
                    "RT025: `map.over` (`{}`) gave {}, not an array",
                    map.over,
                    kind_of(&other)
                ),
            ));
        }
        Ok(Err(e)) | Err(e) => {
            return Ok(failed(
                "validation_error",
                format!("RT025: `map.over` (`{}`): {e}", map.over),
            ));
        }
    };
    let mut warnings = Vec::new();
    let mut items = over;
    if items.len() > map.max_items {
        let message = format!(
            "RT026: `map.over` gave {} items, over max_items {}",
            items.len(),
            map.max_items
        );
        if !map.truncate {
            return Ok(failed("validation_error", message));
        }
        warnings.push(format!(
            "{message}; the first {} ran (on_over_limit: truncate)",
            map.max_items
        ));
        items.truncate(map.max_items);
    }
    let limit = map.max_parallel.min(d.sched.options().max_parallel).max(1);
    let (doc, digest) = shared_doc(inheriting_doc(&d.scope.doc, &spec.body));
    // Every item binds the same params: the fragment is prepared once for all of them.
    let plan = Arc::new(std::sync::OnceLock::new());
    let prefix = d
        .scope
        .path
        .as_ref()
        .map_or(String::new(), |p| format!("{p}."));
    let instance = |i: usize, item: &Value| {
        let mut bindings = Map::new();
        bindings.insert(map.item_as.clone(), item.clone());
        bindings.insert(map.index_as.clone(), Value::from(i));
        Instance {
            path: format!("{prefix}{id}[{i}]"),
            doc: Arc::clone(&doc),
            digest: Arc::clone(&digest),
            plan: Some(Arc::clone(&plan)),
            params: if spec.declares_params() {
                InstanceParams::Given(Map::new())
            } else {
                InstanceParams::Inherited(Arc::clone(&d.params))
            },
            bindings,
            graph: Value::Null,
            refs: None,
            own_params: spec.declares_params(),
        }
    };
    // What each item left: its `collect`ed values, or why it failed; computed as it ends,
    // so an item's final scope is not kept while the others run.
    let mut ends: Vec<Option<ItemEnd>> = vec![None; items.len()];
    let settle = |end: InstanceEnd| {
        if end.ok() {
            ItemEnd::Succeeded(end.collect(&spec.collect))
        } else {
            ItemEnd::Failed(end.reasons.join("; "))
        }
    };
    let mut running: Vec<(usize, InstanceRun<'_>)> = Vec::new();
    let mut next = 0;
    let mut stop = false;
    loop {
        // A cancel read while the map runs: no further item starts.
        stop = stop || d.scope.shared.cancel_relayed();
        while !stop && running.len() < limit && next < items.len() {
            let mut run = run_instance(d, options, instance(next, &items[next]));
            // Polled once at once: an item that waits on nothing (in-process work) ends
            // here, so its (large) future is never held while the next ones are created,
            // and memory stays per item that really waits.
            let polled = std::future::poll_fn(|cx| Poll::Ready(run.as_mut().poll(cx))).await;
            match polled {
                Poll::Ready(end) => {
                    let end = end?;
                    stop = stop || (!end.ok() && map.on_item_failure == ItemFailure::FailFast);
                    ends[next] = Some(settle(end));
                }
                Poll::Pending => running.push((next, run)),
            }
            next += 1;
        }
        if running.is_empty() {
            break;
        }
        let (slot, end) = std::future::poll_fn(|cx| {
            for (slot, (_, run)) in running.iter_mut().enumerate() {
                if let Poll::Ready(end) = run.as_mut().poll(cx) {
                    return Poll::Ready((slot, end));
                }
            }
            Poll::Pending
        })
        .await;
        let (i, _) = running.swap_remove(slot);
        let end = end?;
        if !end.ok() && map.on_item_failure == ItemFailure::FailFast {
            // `fail_fast`: no further item starts; the ones running finish.
            stop = true;
        }
        ends[i] = Some(settle(end));
    }
    let mut outputs = Map::new();
    for (name, _) in &spec.collect {
        outputs.insert(name.clone(), Value::Array(Vec::with_capacity(ends.len())));
    }
    let mut succeeded = 0u64;
    let mut failures = Vec::new();
    for (i, end) in ends.iter().enumerate() {
        let collected = match end {
            Some(ItemEnd::Succeeded(collected)) => {
                succeeded += 1;
                Some(collected)
            }
            Some(ItemEnd::Failed(reasons)) => {
                failures.push(format!("item {i} ({reasons})"));
                None
            }
            None => None,
        };
        for (name, _) in &spec.collect {
            let v = collected
                .as_ref()
                .and_then(|c| c.get(name).cloned())
                .unwrap_or(Value::Null);
            if let Some(Value::Array(a)) = outputs.get_mut(name) {
                a.push(v);
            }
        }
    }
    let failure = match map.on_item_failure {
        ItemFailure::FailFast if !failures.is_empty() => Some(format!(
            "map `{id}`: {} failed (on_item_failure: fail_fast)",
            failures.join(", ")
        )),
        ItemFailure::Threshold(min) if succeeded < min => Some(format!(
            "map `{id}`: {succeeded} of {} items succeeded, under min_successes {min}",
            ends.len()
        )),
        _ => None,
    };
    Ok(Attempt {
        outputs,
        failure: failure.map(|m| ("tool_error".to_string(), m)),
        warnings,
        ..Attempt::default()
    })
}

/// How one item ended, as the map keeps it.
#[derive(Clone, Debug)]
enum ItemEnd {
    /// Its `collect`ed values.
    Succeeded(Map<String, Value>),
    /// Why it failed.
    Failed(String),
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

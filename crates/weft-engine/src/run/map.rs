//! A `map` node (DIGEST §1.8): its `over` array, bounded by `max_items` (RT026: refused
//! unless `on_over_limit: truncate`), each item run as its own fragment instance
//! `<map>[<i>]` with the item and its index bound (`as`, `index_as`), at most
//! `max_parallel` at once (further capped by the run's `max_parallel`), `collect` gathered
//! in input order with `null` for failed or skipped items, and `on_item_failure` deciding
//! what a failed item means for the map.

use std::sync::Arc;
use std::task::Poll;

use serde_json::{Map, Value};
use weft_core::FailureClass;

use super::container::{ContainerSpec, ItemFailure, MapSpec};
use super::fragment::{
    Instance, InstanceEnd, InstanceParams, InstanceRun, inheriting_doc, run_instance, shared_doc,
};
use super::map_item::{Light, LightBody};
use super::node::Attempt;
use super::{Driver, RunOptions};
use crate::EngineError;
use crate::context::RunContext;

fn failed(class: FailureClass, message: String) -> Attempt {
    Attempt {
        failure: Some((class, message)),
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
                FailureClass::ValidationError,
                format!(
                    "RT025: `map.over` (`{}`) gave {}, not an array",
                    map.over,
                    kind_of(&other)
                ),
            ));
        }
        Ok(Err(e)) | Err(e) => {
            return Ok(failed(
                FailureClass::ValidationError,
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
            return Ok(failed(FailureClass::ValidationError, message));
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
    // A body of one pure node: items run without a driver of their own (`map_item.rs`).
    let light = LightBody::prepare(d, options, spec, &doc, &digest, &plan);
    let bind = |i: usize, item: &Value| {
        let mut bindings = Map::new();
        bindings.insert(map.item_as.clone(), item.clone());
        bindings.insert(map.index_as.clone(), Value::from(i));
        bindings
    };
    let instance = |path: String, bindings: Map<String, Value>| Instance {
        path,
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
    };
    // What the items left, filled in place as each ends (its final scope is not kept
    // while the others run); an item not started yet is one `Pending` byte and a `null`
    // slot per collected output.
    let mut gathered = Gathered::new(&spec.collect, items.len());
    let mut running: Vec<(usize, InstanceRun<'_>)> = Vec::new();
    let mut next = 0;
    let mut stop = false;
    // Items that wait on a person: they do not hold a `max_parallel` slot (nothing of
    // theirs runs), and the map waits with them once nothing else can go on.
    let mut waiting = 0;
    loop {
        // A cancel read while the map runs: no further item starts.
        stop = stop || d.scope.shared.cancel_relayed();
        while !stop && running.len() < limit && next < items.len() {
            let path = format!("{prefix}{id}[{next}]");
            let mut bindings = bind(next, &items[next]);
            if let Some(light) = &light {
                match light.run(d, &path, bindings).await? {
                    Light::Ended(end) => {
                        stop = stop || (!end.ok() && map.on_item_failure == ItemFailure::FailFast);
                        gathered.settle(next, &end);
                        next += 1;
                        continue;
                    }
                    Light::Full(handed_back) => bindings = handed_back,
                }
            }
            let mut run = run_instance(d, options, instance(path, bindings));
            // Polled once at once: an item that waits on nothing (in-process work) ends
            // here, so its (large) future is never held while the next ones are created,
            // and memory stays per item that really waits.
            let polled = std::future::poll_fn(|cx| Poll::Ready(run.as_mut().poll(cx))).await;
            match polled {
                Poll::Ready(end) => {
                    let end = end?;
                    if end.waiting() {
                        waiting += 1;
                    } else {
                        stop = stop || (!end.ok() && map.on_item_failure == ItemFailure::FailFast);
                        gathered.settle(next, &end);
                    }
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
        if end.waiting() {
            waiting += 1;
            continue;
        }
        if !end.ok() && map.on_item_failure == ItemFailure::FailFast {
            // `fail_fast`: no further item starts; the ones running finish.
            stop = true;
        }
        gathered.settle(i, &end);
    }
    // Items wait on a person: the map waits with them, unless it has stopped (a
    // `fail_fast` failure, a cancel) and their answers could no longer change its end.
    if waiting > 0 && !stop {
        return Ok(Attempt::waiting_on_person());
    }
    let total = gathered.state.len();
    let (outputs, succeeded, failures) = gathered.finish();
    let failure = match map.on_item_failure {
        ItemFailure::FailFast if !failures.is_empty() => Some(format!(
            "map `{id}`: {} failed (on_item_failure: fail_fast)",
            failures.join(", ")
        )),
        ItemFailure::Threshold(min) if succeeded < min => Some(format!(
            "map `{id}`: {succeeded} of {total} items succeeded, under min_successes {min}"
        )),
        _ => None,
    };
    Ok(Attempt {
        outputs,
        failure: failure.map(|m| (FailureClass::ToolError, m)),
        warnings,
        ..Attempt::default()
    })
}

/// Where one item is, as the map keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ItemState {
    /// Not started, or started and not ended.
    Pending,
    Succeeded,
    Failed,
}

/// The map's result, gathered in input order as items end: one array per `collect`ed
/// output, each item's slot `null` until it succeeds (and for ever if it fails or never
/// starts), with the `collect` expressions parsed once per map, not once per item.
struct Gathered {
    /// Per collected output: its name, its parsed expression (`None`: it does not parse,
    /// and every item gives `null`), and its values so far.
    outputs: Vec<(String, Option<weft_agx::Expr>, Vec<Value>)>,
    state: Vec<ItemState>,
    /// Why the failed items failed, by item index.
    failures: Vec<(usize, String)>,
}

impl Gathered {
    fn new(collect: &[(String, String)], items: usize) -> Gathered {
        Gathered {
            outputs: collect
                .iter()
                .map(|(name, src)| {
                    (
                        name.clone(),
                        weft_agx::parse(src).ok(),
                        vec![Value::Null; items],
                    )
                })
                .collect(),
            state: vec![ItemState::Pending; items],
            failures: Vec::new(),
        }
    }

    /// Item `i` ended: its `collect` evaluated in its final scope (an expression that
    /// fails gives `null`), or why it failed.
    fn settle(&mut self, i: usize, end: &InstanceEnd) {
        if end.ok() {
            for (_, expr, values) in &mut self.outputs {
                if let (Some(expr), Some(slot)) = (expr.as_ref(), values.get_mut(i)) {
                    *slot = weft_agx::eval(expr, &end.scope).unwrap_or(Value::Null);
                }
            }
            self.mark(i, ItemState::Succeeded);
        } else {
            self.mark(i, ItemState::Failed);
            self.failures.push((i, end.reasons.join("; ")));
        }
    }

    fn mark(&mut self, i: usize, state: ItemState) {
        if let Some(s) = self.state.get_mut(i) {
            *s = state;
        }
    }

    /// The map's outputs, how many items succeeded, and the failed items (in input
    /// order) with their reasons.
    fn finish(self) -> (Map<String, Value>, u64, Vec<String>) {
        let succeeded = self
            .state
            .iter()
            .filter(|s| **s == ItemState::Succeeded)
            .count();
        let succeeded = u64::try_from(succeeded).unwrap_or(u64::MAX);
        let mut failures = self.failures;
        failures.sort_by_key(|(i, _)| *i);
        let failures = failures
            .into_iter()
            .map(|(i, reasons)| format!("item {i} ({reasons})"))
            .collect();
        let outputs = self
            .outputs
            .into_iter()
            .map(|(name, _, values)| (name, Value::Array(values)))
            .collect();
        (outputs, succeeded, failures)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::FinalStatus;
    use serde_json::json;

    fn end(status: FinalStatus, n: i64, reason: &str) -> InstanceEnd {
        let mut scope = RunContext::default();
        scope.bindings.insert("n".into(), json!(n));
        InstanceEnd {
            status,
            outputs: json!({}),
            scope,
            reasons: vec![reason.to_string()],
        }
    }

    #[test]
    fn items_gather_in_input_order_whatever_order_they_end_in() {
        let collect = vec![
            ("twice".to_string(), "n * 2".to_string()),
            ("broken".to_string(), "n +".to_string()),
        ];
        let mut g = Gathered::new(&collect, 4);
        g.settle(2, &end(FinalStatus::Failed, 0, "late"));
        g.settle(3, &end(FinalStatus::Succeeded, 3, ""));
        g.settle(0, &end(FinalStatus::Failed, 0, "early"));
        g.settle(1, &end(FinalStatus::Partial, 1, "partial"));
        // Item 1 is `partial`: a failure. No item succeeded but the last.
        let (outputs, succeeded, failures) = g.finish();
        assert_eq!(succeeded, 1);
        assert_eq!(outputs["twice"], json!([null, null, null, 6]));
        // An expression that does not parse gives `null` for every item.
        assert_eq!(outputs["broken"], json!([null, null, null, null]));
        assert_eq!(
            failures,
            ["item 0 (early)", "item 1 (partial)", "item 2 (late)"]
        );
    }

    #[test]
    fn an_item_never_started_stays_null_and_is_neither_succeeded_nor_failed() {
        let collect = vec![("v".to_string(), "n".to_string())];
        let mut g = Gathered::new(&collect, 3);
        g.settle(0, &end(FinalStatus::Succeeded, 7, ""));
        let (outputs, succeeded, failures) = g.finish();
        assert_eq!(outputs["v"], json!([7, null, null]));
        assert_eq!(succeeded, 1);
        assert!(failures.is_empty());
    }
}

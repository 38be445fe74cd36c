//! What stays out of the log: outputs and inputs declared `redact: true` never reach the
//! event log (nor, so, the run record). Kept apart so every writer of node and graph values
//! goes through the same filters.

use serde_json::{Map, Value};
use weft_ags::model::{Fields, entries_of};

use super::job::Job;

/// The names of the `outputs` declared `redact: true` in `obj` (a node or the graph).
pub(super) fn redacted_names(obj: &Map<String, Value>) -> Vec<String> {
    entries_of(obj, "outputs")
        .filter(|(_, spec)| spec.field("redact").and_then(Value::as_bool) == Some(true))
        .map(|(name, _)| name.to_string())
        .collect()
}

/// Splits outputs into what may be logged and the names of those left out.
pub(super) fn split_redacted(
    outputs: &Map<String, Value>,
    redact: &[String],
) -> (Value, Vec<String>) {
    let mut kept = outputs.clone();
    let mut left_out = Vec::new();
    for name in redact {
        if kept.shift_remove(name).is_some() {
            left_out.push(name.clone());
        }
    }
    (Value::Object(kept), left_out)
}

/// The resolved inputs as logged: those declared `redact: true` left out.
pub(super) fn loggable_inputs(job: &Job, inputs: &Value) -> Value {
    let mut out = inputs.as_object().cloned().unwrap_or_default();
    for spec in job.inputs.iter().filter(|i| i.redact) {
        out.shift_remove(&spec.name);
    }
    Value::Object(out)
}

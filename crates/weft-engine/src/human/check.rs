//! The checks a person's decision must pass against the wait it answers: the verb fits the
//! mode, the role is listed, review edits name declared outputs, provided values fit the
//! `collect` param specs (type by AGS logical type, `enum`, required).

use serde_json::{Map, Value};

use super::{Decision, Waiting};

/// What a person asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Approve,
    Reject,
    Provide,
}

/// A decision request from `weft approve|reject|provide`.
#[derive(Clone, Debug)]
pub struct DecisionRequest {
    pub node: String,
    pub verb: Verb,
    /// `--set name=JSON` values.
    pub values: Map<String, Value>,
    pub actor: String,
    pub role: Option<String>,
    pub note: Option<String>,
}

/// Checks `request` against the wait it answers and turns it into the logged decision.
pub fn check_decision(wait: &Waiting, request: &DecisionRequest) -> Result<Decision, String> {
    let node = &wait.node;
    if let Some(role) = &request.role
        && !wait.roles.is_empty()
        && !wait.roles.contains(role)
    {
        return Err(format!(
            "role `{role}` may not decide `{node}`: its roles are {}",
            wait.roles.join(", ")
        ));
    }
    if let Some(name) = request.values.keys().find(|k| wait.redacted.contains(k)) {
        return Err(format!(
            "`{name}` of `{node}` is declared `redact: true`: its value cannot go through the run's log"
        ));
    }
    let outcome = match (request.verb, wait.mode.as_str()) {
        (Verb::Reject, _) => {
            if !request.values.is_empty() {
                return Err("a rejection takes no --set values".into());
            }
            "rejected"
        }
        (Verb::Approve, "approve") => {
            if !request.values.is_empty() {
                return Err(format!(
                    "`{node}` waits for an approval: --set is only for review (edits) and input (weft provide)"
                ));
            }
            "approved"
        }
        (Verb::Approve, "review") => {
            if let Some(name) = request.values.keys().find(|k| !wait.editable.contains(k)) {
                return Err(format!(
                    "`{node}`: an edit may only write a declared output ({}); `{name}` is not one",
                    wait.editable.join(", ")
                ));
            }
            if request.values.is_empty() {
                "approved"
            } else {
                "edited"
            }
        }
        (Verb::Approve, _) => {
            return Err(format!(
                "`{node}` waits for input: use `weft provide` with --set NAME=JSON"
            ));
        }
        (Verb::Provide, "input") => {
            check_values(&wait.collect, &request.values)?;
            "provided"
        }
        (Verb::Provide, mode) => {
            return Err(format!(
                "`{node}` waits for `{mode}`, not for input: use `weft approve` or `weft reject`"
            ));
        }
    };
    Ok(Decision {
        node: node.clone(),
        outcome: outcome.into(),
        values: request.values.clone(),
        actor: request.actor.clone(),
        role: request.role.clone(),
        note: request.note.clone(),
    })
}

/// Checks provided values against `collect` param specs: no unknown name, every required
/// one present, and each of the right `type` (and in `enum`, when given).
pub fn check_values(
    collect: &Map<String, Value>,
    values: &Map<String, Value>,
) -> Result<(), String> {
    let mut problems = Vec::new();
    for name in values.keys() {
        if !collect.contains_key(name) {
            let known: Vec<&str> = collect.keys().map(String::as_str).collect();
            problems.push(format!(
                "`{name}` is not collected here (expected: {})",
                known.join(", ")
            ));
        }
    }
    for (name, spec) in collect {
        let Some(value) = values.get(name) else {
            let required = spec
                .get("required")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            if required && spec.get("default").is_none() {
                problems.push(format!("`{name}` is required"));
            }
            continue;
        };
        let ty = spec.get("type").and_then(Value::as_str).unwrap_or("any");
        if !type_matches(ty, value) {
            problems.push(format!("`{name}` must be of type {ty}, got {value}"));
        }
        if let Some(allowed) = spec.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            problems.push(format!(
                "`{name}` must be one of {}, got {value}",
                list.join(", ")
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// Does `value` fit the AGS logical type `ty`? Types without a JSON shape of their own
/// (`file`, `reference`, …) take a string; `json` and `any` take anything.
fn type_matches(ty: &str, value: &Value) -> bool {
    match ty {
        "string" | "text" | "markdown" | "file" | "directory" | "artifact" | "reference" => {
            value.is_string()
        }
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" | "file_set" => value.is_array(),
        _ => true,
    }
}

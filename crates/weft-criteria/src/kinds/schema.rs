//! `json_schema`: an output against an inline schema or a workspace schema file, draft
//! 2020-12 with format assertions on.
//!
//! No remote or file references: `jsonschema` is built without its `resolve-http` and
//! `resolve-file` features, any `$ref`/`$dynamicRef` not starting with `#` is refused
//! before compiling (with a message naming it), and the retriever refuses everything, in
//! case a reference slips past the scan. Schema `pattern`s use the linear-time `regex`
//! engine.

use std::borrow::Cow;

use jsonschema::{Draft, PatternOptions, Retrieve, Uri};
use serde_json::Value;

use super::{error, field, shorten};
use crate::env::CriteriaEnv;
use crate::model::Criterion;
use crate::paths::{canonical_root, resolve_inside};
use crate::verdict::{Evidence, MAX_SCHEMA_VIOLATIONS, Outcome, SchemaViolation};

/// The only `$schema` accepted (with or without a trailing `#`): the engine validates with
/// draft 2020-12 and will not fetch another meta-schema.
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// Refuses every retrieval.
struct NoRemote;

impl Retrieve for NoRemote {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!(
            "reference '{}' refused: schemas are not fetched",
            uri.as_str()
        )
        .into())
    }
}

/// Compiles a schema the way weft checks every declared schema (criteria here, typed inputs
/// and outputs in the engine): draft 2020-12 only, formats asserted, references inside the
/// schema only (never fetched), patterns on the linear-time regex engine under a size cap.
pub fn compile(schema: &Value, max_regex_size: usize) -> Result<jsonschema::Validator, String> {
    refuse_remote(schema, &mut String::new())?;
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .should_validate_formats(true)
        .with_retriever(NoRemote)
        .with_pattern_options(PatternOptions::regex().size_limit(max_regex_size))
        .build(schema)
        .map_err(|e| format!("the schema does not compile: {e}"))
}

/// Evaluates `json_schema`.
pub fn check(c: &Criterion, env: &CriteriaEnv<'_>) -> (Outcome, Evidence) {
    let name = match field(c.output.as_deref(), "output", c) {
        Ok(n) => n,
        Err(e) => return *e,
    };
    let schema: Cow<'_, Value> = match (&c.schema, &c.schema_ref) {
        (Some(inline), _) => Cow::Borrowed(inline),
        (None, Some(reference)) => match load(reference, env) {
            Ok(v) => Cow::Owned(v),
            Err(e) => return error(e),
        },
        (None, None) => return error(format!("criterion '{}' has no schema", c.id)),
    };
    let validator = match compile(&schema, env.limits.max_regex_size) {
        Ok(v) => v,
        Err(e) => return error(e),
    };
    let Some(value) = env.output(name) else {
        return (
            Outcome::Failed,
            Evidence::summary(format!("output '{name}' was not produced")),
        );
    };
    let mut violations = Vec::new();
    let mut total = 0usize;
    for e in validator.iter_errors(value) {
        total += 1;
        if violations.len() < MAX_SCHEMA_VIOLATIONS {
            violations.push(SchemaViolation {
                instance_path: e.instance_path().as_str().to_string(),
                schema_path: e.schema_path().as_str().to_string(),
                message: shorten(&e.to_string(), 300),
            });
        }
    }
    if total == 0 {
        return (
            Outcome::Passed,
            Evidence::summary(format!("output '{name}' validates against the schema")),
        );
    }
    (
        Outcome::Failed,
        Evidence {
            summary: format!("output '{name}' has {total} schema violation(s)"),
            schema_errors: violations,
            ..Evidence::default()
        },
    )
}

/// Reads a `schema_ref`: a workspace-relative JSON file, never a URI.
fn load(reference: &str, env: &CriteriaEnv<'_>) -> Result<Value, String> {
    if reference.contains("://") || reference.starts_with("urn:") {
        return Err(format!(
            "schema_ref '{reference}' is a URI; only workspace-relative schema files are read"
        ));
    }
    let root = canonical_root(env.workspace).map_err(|e| e.to_string())?;
    let path = resolve_inside(&root, reference).map_err(|e| format!("schema_ref: {e}"))?;
    let meta = std::fs::metadata(&path).map_err(|e| format!("schema_ref '{reference}': {e}"))?;
    if meta.len() > env.limits.max_schema_bytes {
        return Err(format!(
            "schema_ref '{reference}' is {} bytes, over the cap of {}",
            meta.len(),
            env.limits.max_schema_bytes
        ));
    }
    let text =
        std::fs::read_to_string(&path).map_err(|e| format!("schema_ref '{reference}': {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("schema_ref '{reference}' is not JSON: {e}"))
}

/// Refuses non-local references anywhere in the schema; `pointer` tracks the location for
/// the message. Conservative: it does not tell schema positions from data (`const`), since
/// a `$ref` key inside data is vanishingly rare and refusing it is safe.
fn refuse_remote(value: &Value, pointer: &mut String) -> Result<(), String> {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if let ("$ref" | "$dynamicRef", Value::String(r)) = (key.as_str(), child)
                    && !r.starts_with('#')
                {
                    return Err(format!(
                        "{key} '{r}' at '{pointer}' is not a local reference; only '#…' \
                         references are allowed (schemas are never fetched)"
                    ));
                }
                if let ("$schema", Value::String(s)) = (key.as_str(), child)
                    && s.trim_end_matches('#') != DRAFT_2020_12
                {
                    return Err(format!(
                        "$schema '{s}' at '{pointer}' is not draft 2020-12 ({DRAFT_2020_12})"
                    ));
                }
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                let result = refuse_remote(child, pointer);
                pointer.truncate(len);
                result?;
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                let result = refuse_remote(item, pointer);
                pointer.truncate(len);
                result?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_retriever_refuses_what_the_scan_would_miss() {
        // Bypasses `refuse_remote` to check the second line of defence on its own.
        let built = jsonschema::options()
            .with_draft(Draft::Draft202012)
            .with_retriever(NoRemote)
            .build(&json!({"$ref": "https://example.com/x.json"}));
        assert!(built.is_err());
    }

    #[test]
    fn scan_reports_the_pointer() {
        let err = refuse_remote(
            &json!({"allOf": [{"properties": {"a/b": {"$ref": "x.json"}}}]}),
            &mut String::new(),
        )
        .unwrap_err();
        assert!(err.contains("'/allOf/0/properties/a~1b'"), "{err}");
        assert!(refuse_remote(&json!({"$ref": "#/$defs/a"}), &mut String::new()).is_ok());
    }
}

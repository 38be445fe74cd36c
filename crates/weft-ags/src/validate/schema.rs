//! Layer 1: the AGS JSON Schema (draft 2020-12), with every schema error mapped to its
//! dedicated code and rewritten as a message that names the field and the fix.
//!
//! The schema's `not` rules (AG101–AG104) and the type-block `if/then` rules are reported by
//! [`super::shape`] with their dedicated codes, so the generic schema errors for those rules
//! are dropped here instead of surfacing as AG001 (the reference validator's defect).

use super::suggest::did_you_mean;
use crate::diagnostic::{Code, Finding, Severity, pointer_push};
use crate::model::Fields;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::Value;
use std::sync::LazyLock;

/// The embedded AGS 1.0.1 graph schema.
pub const GRAPH_SCHEMA: &str = include_str!("../../schema/agentic-graph-1.0.schema.json");

static SCHEMA: LazyLock<Option<Value>> = LazyLock::new(|| serde_json::from_str(GRAPH_SCHEMA).ok());

static VALIDATOR: LazyLock<Option<Validator>> = LazyLock::new(|| {
    let schema = SCHEMA.as_ref()?;
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema)
        .ok()
});

/// Validates `root` against the schema and maps every error.
pub fn check(root: &Value, out: &mut Vec<Finding>) {
    let Some(validator) = VALIDATOR.as_ref() else {
        out.push(Finding::new(
            Code::AG001,
            "",
            "internal error: the embedded AGS schema did not compile",
        ));
        return;
    };
    if validator.is_valid(root) {
        return;
    }
    for error in validator.iter_errors(root) {
        map_error(&error, out);
    }
}

/// `policy.on_unknown_field: warn` (DIGEST §1.5): unknown non-`x-` fields (AG003) are
/// reported as warnings, so the document still runs and `--strict` still refuses it. Only
/// AG003 moves: an unknown `ags_version` (AG002) stays an error, as SPEC 1.0.1 requires.
pub(super) fn unknown_fields_per_policy(root: &Value, out: &mut [Finding]) {
    let warn = root
        .get("policy")
        .and_then(|p| p.get("on_unknown_field"))
        .and_then(Value::as_str)
        == Some("warn");
    if !warn {
        return;
    }
    for f in out.iter_mut().filter(|f| f.code == Code::AG003) {
        f.severity = Severity::Warning;
        f.message
            .push_str(" (a warning under policy.on_unknown_field: warn)");
    }
}

fn map_error(error: &ValidationError<'_>, out: &mut Vec<Finding>) {
    let pointer = error.instance_path().as_str().to_string();
    let field = field_name(&pointer);
    let instance = error.instance();
    match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let known = known_properties(error);
            for key in unexpected {
                let mut help = format!(
                    "remove '{key}', fix its spelling, or rename it 'x-{key}' to keep it as an extension"
                );
                if let Some(best) = did_you_mean(key, known.iter().map(String::as_str)) {
                    help = format!("did you mean '{best}'? Otherwise {help}");
                }
                out.push(
                    Finding::new(
                        Code::AG003,
                        pointer_push(&pointer, key),
                        format!("unknown field '{key}' in {}", describe_parent(&pointer)),
                    )
                    .help(help),
                );
            }
        }
        ValidationErrorKind::Enum { options } => {
            let allowed: Vec<&str> = options
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let got = instance
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| instance.to_string());
            let mut help = format!("use one of: {}", allowed.join(", "));
            if let Some(best) = did_you_mean(&got, allowed.iter().copied()) {
                help = format!("did you mean '{best}'? Allowed: {}", allowed.join(", "));
            }
            // The caret goes on the misspelled value, not on its key.
            out.push(
                Finding::new(
                    Code::AG004,
                    pointer,
                    format!("unknown value '{got}' for '{field}'"),
                )
                .help(help)
                .anchored(instance.as_str().unwrap_or_default()),
            );
        }
        ValidationErrorKind::Not { .. } => {
            // AG101–AG104: reported by `shape` with their dedicated codes.
        }
        ValidationErrorKind::Required { property } => {
            let property = property.as_str().unwrap_or_default();
            if is_type_block_rule(instance, property) {
                return; // AG101, reported by `shape`.
            }
            out.push(
                Finding::new(
                    Code::AG001,
                    pointer.clone(),
                    format!(
                        "{} is missing required field '{property}'",
                        describe_parent_of_object(&pointer)
                    ),
                )
                .help(required_help(property, instance)),
            );
        }
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => format!("{set:?}"),
            };
            let mut help = format!("write '{field}' as {}", article(&expected));
            if field == "ags_version" && instance.is_number() {
                help = "quote the version: ags_version: \"1.0\" (unquoted 1.0 is a number in YAML)"
                    .to_string();
            } else if instance.is_number() && expected == "string" {
                help = format!("quote the value of '{field}' so it stays a string");
            }
            out.push(
                Finding::new(
                    Code::AG001,
                    pointer,
                    format!(
                        "'{field}' must be {}, found {}",
                        article(&expected),
                        json_type(instance)
                    ),
                )
                .help(help),
            );
        }
        ValidationErrorKind::Constant { expected_value } => {
            out.push(
                Finding::new(
                    Code::AG001,
                    pointer,
                    format!("'{field}' must be {expected_value}, found {instance}"),
                )
                .help(format!("set '{field}' to {expected_value}")),
            );
        }
        ValidationErrorKind::Pattern { pattern } => {
            if field == "ags_version" {
                return; // AG002, reported by the version check with a better message.
            }
            let (what, help) = describe_pattern(pattern);
            out.push(
                Finding::new(
                    Code::AG001,
                    pointer,
                    format!("{instance} is not a valid {what} (in '{field}')"),
                )
                .help(help),
            );
        }
        ValidationErrorKind::PropertyNames { error: inner } => {
            let key = inner.instance().as_str().unwrap_or_default().to_string();
            let (what, help) = match inner.kind() {
                ValidationErrorKind::Pattern { pattern } => describe_pattern(pattern),
                _ => ("name".to_string(), inner.to_string()),
            };
            out.push(
                Finding::new(
                    Code::AG001,
                    pointer_push(&pointer, &key),
                    format!("'{key}' is not a valid {what} (a key of '{field}')"),
                )
                .help(help),
            );
        }
        ValidationErrorKind::Format { format } => {
            out.push(
                Finding::new(
                    Code::AG001,
                    pointer,
                    format!("{instance} is not a valid {format} (in '{field}')"),
                )
                .help(match format.as_str() {
                    "date-time" => {
                        "write an RFC 3339 timestamp such as \"2026-11-30T12:00:00Z\" (quoted)"
                            .to_string()
                    }
                    "uri" => "write an absolute URI such as https://example.org/x".to_string(),
                    _ => format!("write a valid {format}"),
                }),
            );
        }
        ValidationErrorKind::OneOfNotValid { context } | ValidationErrorKind::AnyOf { context } => {
            if let Some(names) = required_alternatives(context) {
                out.push(
                    Finding::new(
                        Code::AG001,
                        pointer,
                        format!(
                            "{} must declare {} of: {}",
                            describe_parent_of_object(&error.instance_path().to_string()),
                            if matches!(error.kind(), ValidationErrorKind::AnyOf { .. }) {
                                "at least one"
                            } else {
                                "exactly one"
                            },
                            quoted_list(&names)
                        ),
                    )
                    .help(format!("add one of {}", quoted_list(&names))),
                );
                return;
            }
            // Report the errors of the branch that came closest to matching.
            if let Some(best) = context.iter().min_by_key(|branch| branch.len()) {
                for e in best {
                    map_error(e, out);
                }
            }
        }
        ValidationErrorKind::OneOfMultipleValid { context } => {
            let names = required_alternatives(context).unwrap_or_default();
            out.push(
                Finding::new(
                    Code::AG001,
                    pointer.clone(),
                    format!(
                        "{} declares more than one of: {}",
                        describe_parent_of_object(&pointer),
                        quoted_list(&names)
                    ),
                )
                .help("keep exactly one of them"),
            );
        }
        _ => {
            out.push(
                Finding::new(Code::AG001, pointer, format!("'{field}': {error}"))
                    .help("see the AGS schema (`weft schema`) for the allowed shape"),
            );
        }
    }
}

/// The schema's `if type == X then require X` rules are AG101, reported elsewhere.
fn is_type_block_rule(instance: &Value, property: &str) -> bool {
    matches!(property, "loop" | "map" | "subgraph" | "gate" | "decision")
        && instance.field("type").and_then(Value::as_str) == Some(property)
}

/// For a `oneOf`/`anyOf` whose branches are each "requires field X", the list of X.
fn required_alternatives(context: &[Vec<ValidationError<'static>>]) -> Option<Vec<String>> {
    let mut names = Vec::new();
    for branch in context {
        match branch.as_slice() {
            [] => {}
            [only] => match only.kind() {
                ValidationErrorKind::Required { property } => {
                    names.push(property.as_str()?.to_string());
                }
                _ => return None,
            },
            _ => return None,
        }
    }
    (!names.is_empty()).then_some(names)
}

/// Property names the failing schema object declares (for "did you mean").
fn known_properties(error: &ValidationError<'_>) -> Vec<String> {
    let Some(schema) = SCHEMA.as_ref() else {
        return Vec::new();
    };
    let Some(location) = error.absolute_keyword_location() else {
        return Vec::new();
    };
    let Some(fragment) = location.fragment() else {
        return Vec::new();
    };
    let ptr = fragment.as_str().trim_end_matches("/additionalProperties");
    schema
        .pointer(ptr)
        .and_then(|s| s.field("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

fn describe_pattern(pattern: &str) -> (String, String) {
    let (what, help) = match pattern {
        p if p.starts_with("^[a-z0-9](?:") => (
            "node id",
            "node ids are 1–64 lowercase letters, digits, '-' or '_', starting and ending with a letter or digit",
        ),
        p if p.starts_with("^[a-zA-Z_][a-zA-Z0-9_]") => (
            "name",
            "names start with a letter or '_' and continue with letters, digits or '_' (at most 63 characters)",
        ),
        p if p.starts_with("^[a-zA-Z0-9][a-zA-Z0-9._:/-]") => (
            "graph id",
            "graph ids start with a letter or digit and use letters, digits, '.', '_', ':', '/' or '-'",
        ),
        p if p.starts_with("^(fs|net|shell") => (
            "permission",
            "write permissions as scope:action[:target], scope one of fs, net, shell, git, process, secret, mcp, human, custom (e.g. fs:read:src/**)",
        ),
        p if p.starts_with("^[0-9]+\\.[0-9]+\\.[0-9]+") => (
            "semantic version",
            "write the version as MAJOR.MINOR.PATCH, e.g. 1.2.0",
        ),
        p if p.starts_with("^[imsx]") => ("regex flag set", "use only the flags i, m, s and x"),
        p if p.starts_with("^sha256-") => (
            "integrity digest",
            "write sha256- followed by the base64 SHA-256 of the child's canonical form (`weft digest CHILD`)",
        ),
        _ => (
            "value",
            "see the AGS schema (`weft schema`) for the allowed form",
        ),
    };
    (what.to_string(), help.to_string())
}

fn required_help(property: &str, instance: &Value) -> String {
    match property {
        "when" if instance.field("kind").and_then(Value::as_str) == Some("conditional") => {
            "a conditional edge needs a `when` expression; use kind: sequence for an unconditional edge".to_string()
        }
        "join_count" => "join: n_of needs join_count: N (how many incoming edges must be active)".to_string(),
        "condition" => "while and until loops need a `condition` expression; use mode: repeat for a fixed count".to_string(),
        "min_successes" => "on_item_failure: threshold needs min_successes: N".to_string(),
        "count" => "mode: n_of needs count: N (how many required criteria must pass)".to_string(),
        _ => format!("add '{property}'"),
    }
}

/// The last segment of a pointer, or `document` for the root.
fn field_name(pointer: &str) -> String {
    match pointer.rsplit('/').next() {
        Some(seg) if !pointer.is_empty() => seg.replace("~1", "/").replace("~0", "~"),
        _ => "document".to_string(),
    }
}

fn describe_parent(pointer: &str) -> String {
    if pointer.is_empty() {
        "the graph".to_string()
    } else {
        format!("'{pointer}'")
    }
}

fn describe_parent_of_object(pointer: &str) -> String {
    if pointer.is_empty() {
        "the graph".to_string()
    } else {
        format!("'{pointer}'")
    }
}

fn quoted_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn article(ty: &str) -> String {
    match ty {
        "object" | "array" | "integer" => format!("an {ty}"),
        "null" => "null".to_string(),
        _ => format!("a {ty}"),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// AG002: the version check, run whether or not the schema passed.
pub fn check_version(root: &Value, out: &mut Vec<Finding>) {
    let Some(raw) = root.field("ags_version").and_then(Value::as_str) else {
        return; // missing or not a string: layer 1 says so.
    };
    let parsed = raw
        .split_once('.')
        .and_then(|(maj, min)| Some((maj.parse::<u64>().ok()?, min.parse::<u64>().ok()?)))
        .filter(|_| raw.bytes().all(|b| b.is_ascii_digit() || b == b'.'));
    let help = "weft reads AGS 1.0 documents: set ags_version: \"1.0\"";
    match parsed {
        None => out.push(
            Finding::new(Code::AG002, "/ags_version", format!("unparsable ags_version '{raw}'"))
                .help(help),
        ),
        Some((major, _)) if major != 1 => out.push(
            Finding::new(
                Code::AG002,
                "/ags_version",
                format!("unsupported major spec version {major} (ags_version '{raw}')"),
            )
            .help(help),
        ),
        Some((_, minor)) if minor > 0 => out.push(
            Finding::new(
                Code::AG002,
                "/ags_version",
                format!(
                    "document targets AGS 1.{minor}, weft knows 1.0; unsupported versions fail closed"
                ),
            )
            .help(help),
        ),
        Some(_) => {}
    }
}

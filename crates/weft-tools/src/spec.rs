//! What a model is offered: each built-in tool's AGS logical name, a one-line description
//! and the JSON Schema of its arguments (closed objects: an unknown argument is an error,
//! never silently ignored).

use serde::Serialize;
use serde_json::{Value, json};

/// A tool as offered to a model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolSpec {
    /// The AGS logical name (`requirements.tools`).
    pub name: &'static str,
    pub description: &'static str,
    /// JSON Schema (draft 2020-12 subset) of the arguments object.
    pub parameters: Value,
    /// Whether the tool changes anything (its calls are journalled).
    pub side_effect: bool,
}

/// The built-in tools, by logical name.
pub const BUILTIN: &[&str] = &[
    "file_read",
    "file_write",
    "file_edit",
    "file_search",
    "list_dir",
    "shell_exec",
    "http_fetch",
];

/// The spec of built-in tool `name`.
pub fn spec_of(name: &str) -> Option<ToolSpec> {
    let path = json!({"type": "string", "minLength": 1,
        "description": "a path relative to the workspace root"});
    let (description, parameters, side_effect) = match name {
        "file_read" => (
            "Read a text file of the workspace (at most `limit` bytes from `offset`).",
            json!({"type": "object", "additionalProperties": false, "required": ["path"],
                "properties": {"path": path,
                    "offset": {"type": "integer", "minimum": 0},
                    "limit": {"type": "integer", "minimum": 1}}}),
            false,
        ),
        "file_write" => (
            "Create or replace a file of the workspace with `content`.",
            json!({"type": "object", "additionalProperties": false,
                "required": ["path", "content"],
                "properties": {"path": path, "content": {"type": "string"}}}),
            true,
        ),
        "file_edit" => (
            "Replace the exact text `old` with `new` in a file (once, or everywhere with `replace_all`).",
            json!({"type": "object", "additionalProperties": false,
                "required": ["path", "old", "new"],
                "properties": {"path": path, "old": {"type": "string", "minLength": 1},
                    "new": {"type": "string"}, "replace_all": {"type": "boolean"}}}),
            true,
        ),
        "file_search" => (
            "Find files under `path` whose workspace-relative path matches the glob `pattern`, and, with `contains`, the lines matching that regular expression.",
            json!({"type": "object", "additionalProperties": false, "required": ["pattern"],
                "properties": {"pattern": {"type": "string", "minLength": 1},
                    "contains": {"type": "string", "minLength": 1},
                    "path": path}}),
            false,
        ),
        "list_dir" => (
            "List a directory of the workspace: names, kinds and sizes.",
            json!({"type": "object", "additionalProperties": false,
                "properties": {"path": path}}),
            false,
        ),
        "shell_exec" => (
            "Run a command (split like a shell would, but run without one: no pipes, redirects or variables) in the workspace, sandboxed.",
            json!({"type": "object", "additionalProperties": false, "required": ["command"],
                "properties": {"command": {"type": "string", "minLength": 1},
                    "timeout_seconds": {"type": "number", "exclusiveMinimum": 0}}}),
            true,
        ),
        "http_fetch" => (
            "Read a URL (GET or HEAD; redirects are returned, not followed).",
            json!({"type": "object", "additionalProperties": false, "required": ["url"],
                "properties": {"url": {"type": "string", "minLength": 1},
                    "method": {"enum": ["GET", "HEAD"]},
                    "max_bytes": {"type": "integer", "minimum": 1}}}),
            false,
        ),
        _ => return None,
    };
    Some(ToolSpec {
        name: BUILTIN.iter().find(|n| **n == name)?,
        description,
        parameters,
        side_effect,
    })
}

/// The built-in tools a node's `requirements.tools` asks for, in its order: each entry is a
/// logical name or `{name, optional, alternatives}`; the name is taken when it is built in,
/// else its first built-in alternative. Entries weft does not build (`http_fetch`, MCP tools)
/// are not offered. Refusing to start a node whose non-optional tool is missing (`RT012`)
/// belongs to the engine's checks before a node starts, and is not built yet.
pub fn offered(tools: Option<&Value>) -> Vec<&'static str> {
    offered_with(tools, |_| false).0
}

/// [`offered`] when the embedder also provides host tools (`crate::host`; `is_host` says
/// which names): each entry takes its name, else its first alternative, that is built in or
/// a host tool. Returns the built-in tools and the host tools offered, each in order.
pub fn offered_with(
    tools: Option<&Value>,
    is_host: impl Fn(&str) -> bool,
) -> (Vec<&'static str>, Vec<String>) {
    let builtin = |name: &str| BUILTIN.iter().copied().find(|b| *b == name);
    let (mut offered, mut host) = (Vec::new(), Vec::<String>::new());
    for entry in tools.and_then(Value::as_array).into_iter().flatten() {
        let found = candidates(entry)
            .into_iter()
            .find(|n| builtin(n).is_some() || is_host(n));
        let Some(name) = found else { continue };
        match builtin(name) {
            Some(b) if !offered.contains(&b) => offered.push(b),
            Some(_) => {}
            None if !host.iter().any(|h| h == name) => host.push(name.to_owned()),
            None => {}
        }
    }
    (offered, host)
}

/// An entry's name, then its alternatives.
fn candidates(entry: &Value) -> Vec<&str> {
    match entry {
        Value::String(name) => vec![name.as_str()],
        Value::Object(o) => o
            .get("name")
            .into_iter()
            .chain(
                o.get("alternatives")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten(),
            )
            .filter_map(Value::as_str)
            .collect(),
        _ => Vec::new(),
    }
}

/// The non-optional entries of a node's `requirements.tools` that no built-in tool
/// satisfies (neither the name nor any of its `alternatives`): a node needing one is
/// refused before it starts (RT012).
pub fn missing(tools: Option<&Value>) -> Vec<String> {
    missing_with(tools, |_| false)
}

/// [`missing`] when the embedder also provides host tools (`is_host` says which names).
pub fn missing_with(tools: Option<&Value>, is_host: impl Fn(&str) -> bool) -> Vec<String> {
    let provided = |name: &str| BUILTIN.contains(&name) || is_host(name);
    let mut missing = Vec::new();
    for entry in tools.and_then(Value::as_array).into_iter().flatten() {
        let optional = entry.get("optional").and_then(Value::as_bool) == Some(true);
        let names = candidates(entry);
        if !optional && !names.is_empty() && !names.iter().any(|n| provided(n)) {
            missing.push(names[0].to_owned());
        }
        if names.is_empty() && entry.is_object() && !optional {
            missing.push("?".to_owned());
        }
    }
    missing
}

/// A tool's argument schema that does not compile: a built-in one (a bug in this module) or
/// a host tool's (`toolbox` re-exports it).
#[derive(Debug, thiserror::Error)]
#[error("the schema of tool `{tool}` does not compile: {message}")]
pub struct SchemaError {
    pub tool: String,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{BUILTIN, missing, missing_with, offered, offered_with, spec_of};

    #[test]
    fn missing_lists_required_tools_no_builtin_satisfies() {
        let tools = json!(["file_read", "web_search",
            {"name": "http_fetch", "optional": true},
            {"name": "test_runner", "alternatives": ["shell_exec"]},
            {"name": "browser"}]);
        assert_eq!(missing(Some(&tools)), ["web_search", "browser"]);
        assert!(missing(Some(&json!(["http_fetch"]))).is_empty());
        assert!(missing(None).is_empty());
    }

    #[test]
    fn host_tools_are_offered_and_not_missing_when_the_embedder_provides_them() {
        let tools = json!(["lookup", "file_read", "web_search",
            {"name": "index", "alternatives": ["lookup", "file_read"]},
            {"name": "test_runner", "alternatives": ["shell_exec", "lookup"]}]);
        let is_host = |n: &str| n == "lookup";
        let (builtin, host) = offered_with(Some(&tools), is_host);
        assert_eq!(builtin, ["file_read", "shell_exec"]);
        assert_eq!(host, ["lookup"]);
        assert_eq!(missing_with(Some(&tools), is_host), ["web_search"]);
        assert_eq!(missing(Some(&tools)), ["lookup", "web_search"]);
    }

    #[test]
    fn every_builtin_has_a_closed_object_schema() {
        for name in BUILTIN {
            let spec = spec_of(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(spec.parameters["type"], "object");
            assert_eq!(spec.parameters["additionalProperties"], false);
        }
        assert!(spec_of("web_search").is_none());
    }

    #[test]
    fn offered_takes_names_then_alternatives_and_skips_what_is_not_built() {
        let tools = json!(["file_read", "web_search",
            {"name": "test_runner", "alternatives": ["shell_exec"]},
            {"name": "file_write", "optional": true}, "file_read"]);
        assert_eq!(
            offered(Some(&tools)),
            ["file_read", "shell_exec", "file_write"]
        );
        assert!(offered(None).is_empty());
    }
}

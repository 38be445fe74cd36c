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
        _ => return None,
    };
    Some(ToolSpec {
        name: BUILTIN.iter().find(|n| **n == name)?,
        description,
        parameters,
        side_effect,
    })
}

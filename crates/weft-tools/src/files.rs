//! The file tools: `file_read`, `file_write`, `file_edit`, `list_dir`, `file_search`, all
//! confined to the workspace.
//!
//! A path is confined twice. The policy normalises it lexically (a `..` that climbs out is
//! denied before anything runs); here it is also resolved through the file system: the
//! deepest part of it that exists is canonicalised (every symlink followed) and must still lie
//! under the canonical workspace root, so a symlink inside the workspace that points outside
//! is refused. What does not exist yet has no symlinks to follow. The arguments reaching these
//! functions have been validated against the tools' schemas ([`crate::spec`]).

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use globset::GlobBuilder;
use regex::RegexBuilder;
use serde_json::{Value, json};
use weft_core::FailureClass;
use weft_policy::Action;

use crate::env::{ToolEnv, ToolError};

/// The string argument `name` (validated present when required; empty when absent).
fn text<'v>(arguments: &'v Value, name: &str) -> &'v str {
    arguments.get(name).and_then(Value::as_str).unwrap_or("")
}

/// A workspace path, normalised and resolved.
struct Resolved {
    /// Workspace-relative, `/`-separated (`.` for the root).
    relative: String,
    /// The path to open.
    path: PathBuf,
}

/// Normalises `path` lexically, then checks that what it resolves to on disk stays inside
/// the workspace.
fn resolve(env: &ToolEnv<'_>, path: &str) -> Result<Resolved, ToolError> {
    let relative = env
        .workspace
        .normalise(path)
        .map_err(|e| ToolError::tool(e.to_string()))?;
    let absolute = PathBuf::from(env.workspace.absolute(&relative));
    let root = fs::canonicalize(env.workspace.root())
        .map_err(|e| ToolError::tool(format!("the workspace root cannot be resolved: {e}")))?;
    // The deepest ancestor that exists (as a link or not) is resolved; the rest is new.
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    while fs::symlink_metadata(existing).is_err() {
        let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
            break;
        };
        rest.push(name.to_owned());
        existing = parent;
    }
    let mut resolved = fs::canonicalize(existing)
        .map_err(|e| ToolError::tool(format!("`{path}` cannot be resolved: {e}")))?;
    for name in rest.iter().rev() {
        resolved.push(name);
    }
    if !resolved.starts_with(&root) {
        return Err(ToolError::tool(format!(
            "`{path}` resolves outside the workspace (through a symbolic link)"
        )));
    }
    Ok(Resolved {
        relative,
        path: resolved,
    })
}

fn io(what: &str, path: &str, e: &std::io::Error) -> ToolError {
    ToolError::tool(format!("cannot {what} `{path}`: {e}"))
}

/// `file_read`: at most `limit` bytes (capped) from `offset`, UTF-8 decoded lossily.
pub fn read(arguments: &Value, env: &ToolEnv<'_>) -> Result<Value, ToolError> {
    let target = resolve(env, text(arguments, "path"))?;
    let rel = &target.relative;
    let offset = arguments.get("offset").and_then(Value::as_u64).unwrap_or(0);
    let cap = env.limits.max_read_bytes;
    let limit = arguments
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(cap, |l| l.min(cap));
    let mut file = fs::File::open(&target.path).map_err(|e| io("open", rel, &e))?;
    let size = file.metadata().map_err(|e| io("stat", rel, &e))?.len();
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| io("seek in", rel, &e))?;
    let mut bytes = Vec::new();
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| io("read", rel, &e))?;
    let read = bytes.len() as u64;
    Ok(json!({
        "path": rel,
        "offset": offset,
        "bytes": read,
        "size": size,
        "truncated": offset.saturating_add(read) < size,
        "content": String::from_utf8_lossy(&bytes),
    }))
}

/// `file_write`: creates or replaces the file, creating missing parent directories.
pub fn write(arguments: &Value, env: &ToolEnv<'_>) -> Result<Value, ToolError> {
    let target = resolve(env, text(arguments, "path"))?;
    let rel = &target.relative;
    let content = text(arguments, "content");
    if let Some(parent) = target.path.parent() {
        fs::create_dir_all(parent).map_err(|e| io("create the directory of", rel, &e))?;
    }
    fs::write(&target.path, content).map_err(|e| io("write", rel, &e))?;
    Ok(json!({"path": rel, "bytes": content.len()}))
}

/// `file_edit`: replaces the exact text `old` with `new`, once (exactly one match) or
/// everywhere (`replace_all`).
pub fn edit(arguments: &Value, env: &ToolEnv<'_>) -> Result<Value, ToolError> {
    let target = resolve(env, text(arguments, "path"))?;
    let rel = &target.relative;
    let (old, new) = (text(arguments, "old"), text(arguments, "new"));
    let all = arguments
        .get("replace_all")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let content = fs::read_to_string(&target.path).map_err(|e| io("read", rel, &e))?;
    let count = content.matches(old).count();
    if count == 0 {
        return Err(ToolError::tool(format!(
            "`old` occurs 0 times in `{rel}`; nothing was changed"
        )));
    }
    if count > 1 && !all {
        return Err(ToolError::tool(format!(
            "`old` occurs {count} times in `{rel}`; give more context or set replace_all"
        )));
    }
    let edited = content.replace(old, new);
    fs::write(&target.path, edited).map_err(|e| io("write", rel, &e))?;
    Ok(json!({"path": rel, "replacements": count}))
}

fn kind(file_type: fs::FileType) -> &'static str {
    if file_type.is_symlink() {
        "symlink"
    } else if file_type.is_dir() {
        "dir"
    } else if file_type.is_file() {
        "file"
    } else {
        "other"
    }
}

/// `list_dir`: names, kinds and sizes, sorted by name, at most `max_dir_entries`.
pub fn list(arguments: &Value, env: &ToolEnv<'_>) -> Result<Value, ToolError> {
    let path = arguments.get("path").and_then(Value::as_str).unwrap_or(".");
    let target = resolve(env, path)?;
    let rel = &target.relative;
    let mut entries = Vec::new();
    for entry in fs::read_dir(&target.path).map_err(|e| io("list", rel, &e))? {
        let entry = entry.map_err(|e| io("list", rel, &e))?;
        let meta = entry.metadata().map_err(|e| io("list", rel, &e))?;
        entries.push((
            entry.file_name().to_string_lossy().into_owned(),
            kind(meta.file_type()),
            meta.len(),
        ));
    }
    entries.sort();
    let truncated = entries.len() > env.limits.max_dir_entries;
    entries.truncate(env.limits.max_dir_entries);
    let entries: Vec<Value> = entries
        .into_iter()
        .map(|(name, kind, size)| json!({"name": name, "kind": kind, "size": size}))
        .collect();
    Ok(json!({"path": rel, "entries": entries, "truncated": truncated}))
}

/// `file_search`: files under `path` whose workspace-relative path matches the glob
/// `pattern` (`*` stays in one directory, `**` crosses), and with `contains` the lines
/// matching that regular expression. The walk does not follow symlinks and visits at most
/// `max_walk_entries` entries; files the policy would not let the node read are left out.
pub fn search(arguments: &Value, env: &ToolEnv<'_>) -> Result<Value, ToolError> {
    let root = arguments.get("path").and_then(Value::as_str).unwrap_or(".");
    let root = resolve(env, root)?;
    let pattern = text(arguments, "pattern");
    let glob = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError {
            class: FailureClass::ValidationError,
            message: format!("`pattern`: {e}"),
        })?
        .compile_matcher();
    let contains = match arguments.get("contains").and_then(Value::as_str) {
        Some(re) => Some(
            RegexBuilder::new(re)
                .size_limit(env.limits.max_regex_bytes)
                .dfa_size_limit(env.limits.max_regex_bytes)
                .build()
                .map_err(|e| ToolError {
                    class: FailureClass::ValidationError,
                    message: format!("`contains`: {e}"),
                })?,
        ),
        None => None,
    };
    let limits = env.limits;
    let mut files = Vec::new();
    let mut matches = Vec::new();
    let mut truncated = false;
    let mut visited = 0usize;
    let mut stack = vec![(root.path.clone(), root.relative.clone())];
    while let Some((dir, rel_dir)) = stack.pop() {
        let Ok(listing) = fs::read_dir(&dir) else {
            continue;
        };
        let mut children: Vec<_> = listing.filter_map(Result::ok).collect();
        children.sort_by_key(fs::DirEntry::file_name);
        for child in children.into_iter().rev() {
            visited += 1;
            if visited > limits.max_walk_entries {
                truncated = true;
                stack.clear();
                break;
            }
            let name = child.file_name().to_string_lossy().into_owned();
            let rel = if rel_dir == "." {
                name
            } else {
                format!("{rel_dir}/{name}")
            };
            let Ok(file_type) = child.file_type() else {
                continue;
            };
            if file_type.is_dir() {
                stack.push((child.path(), rel));
                continue;
            }
            if !file_type.is_file() || !glob.is_match(&rel) || !may_read(env, &rel) {
                continue;
            }
            if files.len() >= limits.max_matches {
                truncated = true;
                continue;
            }
            if let Some(re) = &contains {
                let found = grep(
                    &child.path(),
                    re,
                    &limits,
                    &rel,
                    &mut matches,
                    &mut truncated,
                );
                if !found {
                    continue;
                }
            }
            files.push(Value::String(rel));
        }
    }
    files.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    let mut result = json!({"files": files, "truncated": truncated});
    if contains.is_some() {
        result["matches"] = Value::Array(matches);
    }
    Ok(result)
}

/// Whether the node may read `rel` without a pending approval (a search shows no more than
/// `file_read` would).
fn may_read(env: &ToolEnv<'_>, rel: &str) -> bool {
    env.allows(&Action {
        scope: "fs".into(),
        action: "read".into(),
        target: Some(rel.to_owned()),
        argv: None,
        tool: Some("file_search".into()),
        arguments: None,
    })
}

/// Appends the lines of `path` matching `re` (bounded); whether any matched. Files larger
/// than the cap are skipped.
fn grep(
    path: &Path,
    re: &regex::Regex,
    limits: &crate::ToolLimits,
    rel: &str,
    matches: &mut Vec<Value>,
    truncated: &mut bool,
) -> bool {
    let too_big = fs::metadata(path).map_or(true, |m| m.len() > limits.max_search_file_bytes);
    if too_big {
        return false;
    }
    let Ok(bytes) = fs::read(path) else {
        return false;
    };
    let content = String::from_utf8_lossy(&bytes);
    let mut found = false;
    for (number, line) in content.lines().enumerate() {
        if !re.is_match(line) {
            continue;
        }
        found = true;
        if matches.len() >= limits.max_matches {
            *truncated = true;
            break;
        }
        let line_text: String = line.chars().take(400).collect();
        matches.push(json!({"path": rel, "line": number + 1, "text": line_text}));
    }
    found
}

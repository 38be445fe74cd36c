//! `file_exists`: a workspace-relative path or glob, confined to the workspace.
//!
//! Globs use `globset` with `literal_separator(true)` (so `*` stays within one directory
//! and `**` crosses directories) and are matched against every entry of a walk of the
//! workspace. The walk does not descend into symlinked directories (it could loop or leave
//! the workspace); a symlinked *file* that matches is followed, and refused when its target
//! lies outside. Entries are visited in name order so the reported match is deterministic.
//! The walk is synchronous: it is bounded by `Limits::max_walk_entries`.

use std::path::{Path, PathBuf};

use globset::GlobBuilder;

use super::{error, field};
use crate::env::CriteriaEnv;
use crate::model::Criterion;
use crate::paths::{PathError, canonical_root, check_relative, ensure_inside};
use crate::verdict::{Evidence, Outcome};

/// Evaluates `file_exists`.
pub fn check(c: &Criterion, env: &CriteriaEnv<'_>) -> (Outcome, Evidence) {
    let path = match field(c.path.as_deref(), "path", c) {
        Ok(p) => p,
        Err(e) => return *e,
    };
    if let Err(e) = check_relative(path) {
        return error(e.to_string());
    }
    let root = match canonical_root(env.workspace) {
        Ok(r) => r,
        Err(e) => return error(e.to_string()),
    };
    let min = c.min_bytes.unwrap_or(0);
    let mut rejected = Vec::new();
    let candidates = if path.contains(['*', '?', '[', '{']) {
        match walk_matches(&root, path, env.limits.max_walk_entries) {
            Ok(found) => found,
            Err(e) => return error(e),
        }
    } else {
        vec![path.trim_start_matches("./").to_string()]
    };
    for rel in candidates {
        match accept(&root, &rel, min) {
            Ok(()) => {
                return (
                    Outcome::Passed,
                    Evidence {
                        summary: format!("'{rel}' exists with at least {min} bytes"),
                        matched_file: Some(rel),
                        rejected,
                        ..Evidence::default()
                    },
                );
            }
            Err(reason) => rejected.push(reason),
        }
    }
    let summary = if rejected.is_empty() {
        format!("no file matches '{path}'")
    } else {
        format!(
            "no acceptable file matches '{path}': {}",
            rejected.join("; ")
        )
    };
    (
        Outcome::Failed,
        Evidence {
            summary,
            rejected,
            ..Evidence::default()
        },
    )
}

/// Checks one candidate: inside the workspace after symlinks, a regular file, big enough.
fn accept(root: &Path, rel: &str, min: u64) -> Result<(), String> {
    let canonical = match root.join(rel).canonicalize() {
        Ok(p) => p,
        Err(_) => return Err(format!("'{rel}' does not exist")),
    };
    ensure_inside(root, &canonical, rel).map_err(|e: PathError| format!("refused: {e}"))?;
    let meta = std::fs::metadata(&canonical).map_err(|e| format!("'{rel}': {e}"))?;
    if !meta.is_file() {
        return Err(format!("'{rel}' is not a regular file"));
    }
    if meta.len() < min {
        return Err(format!(
            "'{rel}' has {} bytes, fewer than {min}",
            meta.len()
        ));
    }
    Ok(())
}

/// Workspace-relative paths (with `/`) of the non-directory entries matching `pattern`.
fn walk_matches(root: &Path, pattern: &str, max_entries: usize) -> Result<Vec<String>, String> {
    let matcher = GlobBuilder::new(pattern.trim_start_matches("./"))
        .literal_separator(true)
        .build()
        .map_err(|e| format!("invalid glob '{pattern}': {e}"))?
        .compile_matcher();
    let mut found = Vec::new();
    let mut visited = 0usize;
    let mut stack: Vec<(PathBuf, String)> = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        // Pushed in reverse so directories are visited in name order.
        let mut subdirs = Vec::new();
        for entry in entries {
            visited += 1;
            if visited > max_entries {
                return Err(format!(
                    "the glob walk visited more than {max_entries} entries; narrow the pattern"
                ));
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                subdirs.push((entry.path(), rel));
            } else if matcher.is_match(&rel) {
                found.push(rel);
            }
        }
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(found)
}

//! Keeping paths inside the workspace.
//!
//! Two checks, both needed: a lexical one (no absolute path, no `..` component, even one
//! that would stay inside: such a path is almost always a mistake and refusing it keeps the
//! rule simple to state), and a canonical one after the file system resolved symlinks,
//! which is what catches a symlink pointing outside.

use std::path::{Component, Path, PathBuf};

/// Why a path was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// An absolute path.
    #[error("'{0}' is absolute; paths are relative to the workspace")]
    Absolute(String),
    /// A `..` component.
    #[error("'{0}' contains '..'; paths may not leave the workspace")]
    ParentDir(String),
    /// It resolves (through symlinks) outside the workspace.
    #[error("'{0}' resolves outside the workspace")]
    Escapes(String),
    /// It does not exist or cannot be resolved.
    #[error("'{path}' cannot be resolved: {reason}")]
    Unresolvable {
        /// The path as written.
        path: String,
        /// The OS error.
        reason: String,
    },
}

/// Refuses absolute paths and `..` components.
pub fn check_relative(path: &str) -> Result<(), PathError> {
    let p = Path::new(path);
    if p.is_absolute() || path.starts_with('/') || path.starts_with('\\') {
        return Err(PathError::Absolute(path.to_string()));
    }
    if p.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(PathError::ParentDir(path.to_string()));
    }
    Ok(())
}

/// The canonical workspace root.
pub fn canonical_root(workspace: &Path) -> Result<PathBuf, PathError> {
    workspace
        .canonicalize()
        .map_err(|e| PathError::Unresolvable {
            path: workspace.display().to_string(),
            reason: e.to_string(),
        })
}

/// Resolves `path` (as written, relative to `root`) to a canonical path inside `root`.
pub fn resolve_inside(root: &Path, path: &str) -> Result<PathBuf, PathError> {
    check_relative(path)?;
    let canonical = root
        .join(path)
        .canonicalize()
        .map_err(|e| PathError::Unresolvable {
            path: path.to_string(),
            reason: e.to_string(),
        })?;
    ensure_inside(root, &canonical, path)?;
    Ok(canonical)
}

/// Checks that the canonical `path` lies in the canonical `root`.
pub fn ensure_inside(root: &Path, canonical: &Path, shown: &str) -> Result<(), PathError> {
    if canonical.starts_with(root) {
        Ok(())
    } else {
        Err(PathError::Escapes(shown.to_string()))
    }
}

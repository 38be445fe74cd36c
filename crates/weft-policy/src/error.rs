//! The errors of a permission's text: malformed ([`PermissionError`]) or not usable as a
//! pattern ([`PatternError`]), and [`Error`], either. Vocabulary below the modules that
//! parse permissions (`config`, `grants`, `pattern`), which all return [`Error`].

use crate::permission::PermissionError;

/// Why a permission cannot be used as a pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// fs targets are relative to the workspace root.
    #[error("'{0}': fs targets are workspace-relative globs (no leading '/')")]
    AbsoluteFs(String),
    /// fs patterns with `..` can never match a normalised path.
    #[error("'{0}': fs targets cannot contain '..'")]
    ParentFs(String),
    /// The glob does not compile.
    #[error("'{text}': {error}")]
    Glob {
        /// The permission.
        text: String,
        /// The glob error.
        error: String,
    },
}

/// A permission that cannot be parsed or compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Malformed text.
    #[error(transparent)]
    Permission(#[from] PermissionError),
    /// A target that cannot be a pattern.
    #[error(transparent)]
    Pattern(#[from] PatternError),
}

//! The errors of AGX's passes — a syntax error ([`ParseError`]), a static finding
//! ([`StaticError`]), a run-time error ([`EvalError`]) — as vocabulary below the passes,
//! since the function table (`functions`) both evaluates calls and checks them.

use thiserror::Error;

use crate::ast::Span;

/// A syntax error. `message` always ends with `at offset N`, where N is `offset`.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct ParseError {
    /// The full message, position included, e.g. `unexpected end of expression at offset 4`.
    pub message: String,
    /// Byte offset of the problem in the source (for templates: in the template string).
    pub offset: usize,
    /// The message without its position, so callers can re-anchor it.
    pub reason: String,
}

impl ParseError {
    /// An error with `reason` at byte `offset`.
    pub fn new(reason: impl Into<String>, offset: usize) -> ParseError {
        let reason = reason.into();
        ParseError {
            message: format!("{reason} at offset {offset}"),
            offset,
            reason,
        }
    }

    /// The same error moved `by` bytes to the right (a hole inside a template).
    pub fn shifted(&self, by: usize) -> ParseError {
        ParseError::new(self.reason.clone(), self.offset.saturating_add(by))
    }
}

/// The category of a static finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StaticErrorKind {
    /// A call to a name outside the AGS 1.0 function set.
    UnknownFunction,
    /// A known function called with the wrong number of arguments.
    Arity,
    /// An operation that fails for every value the operands can have.
    Type,
}

/// A static finding about an expression.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct StaticError {
    /// The category.
    pub kind: StaticErrorKind,
    /// A human-readable message (for calls, in the reference validator's words).
    pub message: String,
    /// The offending sub-expression.
    pub span: Span,
}

/// A run-time evaluation error.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct EvalError {
    /// What went wrong.
    pub message: String,
    /// The sub-expression that failed (relative to the expression source; for
    /// [`crate::render`], relative to the template).
    pub span: Span,
}

impl EvalError {
    /// An error with `message` at `span`.
    pub fn new(message: impl Into<String>, span: Span) -> EvalError {
        EvalError {
            message: message.into(),
            span,
        }
    }
}

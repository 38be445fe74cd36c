//! AGX, the AGS 1.0 expression language: lexer, parser, static checks, evaluator and
//! `${{ }}` templates.
//!
//! ```
//! use weft_agx::{MapContext, eval_bool, parse};
//! use serde_json::json;
//!
//! let expr = parse("params.retries - 1 >= 0 && 'fast' in params.modes").unwrap();
//! let ctx = MapContext::from_value(json!({"params": {"retries": 2, "modes": ["fast"]}}));
//! assert!(eval_bool(&expr, &ctx).unwrap());
//! ```
//!
//! The crate is pure: no clock, environment, processes or files, so an expression evaluates
//! the same way when a run is replayed. Decisions the spec leaves open are listed in the
//! crate README.

#![warn(clippy::disallowed_methods)]
#![warn(missing_docs)]

mod analysis;
mod ast;
mod context;
mod error;
mod eval;
mod functions;
mod lexer;
pub mod names;
mod parser;
mod template;
mod ty;
mod types;
mod value;

pub use analysis::{RefKind, Reference, check_calls, references};
pub use ast::{BinaryOp, Expr, Span, UnaryOp};
pub use context::{Context, Lookup, MapContext};
pub use error::{EvalError, ParseError, StaticError, StaticErrorKind};
pub use eval::{eval, eval_bool};
pub use functions::function_names;
pub use parser::{MAX_DEPTH, MAX_SOURCE_LEN, parse};
pub use template::{Segment, Template, has_interpolation, parse_template, render};
pub use ty::Ty;
pub use types::{AnyEnv, TypeEnv, check_condition, infer};
pub use value::{
    MAX_ARRAY_LEN, MAX_STRING_LEN, compare, deep_equal, format_number, stringify, type_name,
};

//! The AGX syntax tree, and a canonical printer for it.
//!
//! Every node carries the [`Span`] of the source text it was parsed from so that static
//! findings and evaluation errors can point into the original expression. The printer
//! (`Display`) writes a fully parenthesised form that parses back to the same tree (up to
//! spans); error messages and tests rely on that.

use std::fmt;

use serde_json::Value;

/// A half-open byte range `start..end` in the expression source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// Byte offset of the first byte.
    pub start: usize,
    /// Byte offset one past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The smallest span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// This span moved `by` bytes to the right (used to make hole spans template-relative).
    pub fn shifted(self, by: usize) -> Span {
        Span {
            start: self.start.saturating_add(by),
            end: self.end.saturating_add(by),
        }
    }
}

/// A prefix operator. `!` and `not` are the same operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `!x`, `not x`: boolean negation.
    Not,
    /// `-x`: numeric negation.
    Neg,
}

impl UnaryOp {
    /// The canonical spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Not => "!",
            UnaryOp::Neg => "-",
        }
    }
}

/// An infix operator. `&&`/`and` and `||`/`or` are the same operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `||`, `or`
    Or,
    /// `&&`, `and`
    And,
    /// `in`
    In,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
}

impl BinaryOp {
    /// The canonical spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "||",
            BinaryOp::And => "&&",
            BinaryOp::In => "in",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
        }
    }

    /// Binding strength: higher binds tighter. All levels are left-associative.
    pub fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And => 2,
            BinaryOp::In => 3,
            BinaryOp::Eq | BinaryOp::Ne => 4,
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => 5,
            BinaryOp::Add | BinaryOp::Sub => 6,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => 7,
        }
    }
}

/// An AGX expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// `null`, `true`, `false`, a number or a string. Integer literals that fit `i64` are
    /// integers; literals with a fraction or exponent (or too large for `i64`) are floats.
    Literal {
        /// The literal's JSON value (never an array or object).
        value: Value,
        /// Source range.
        span: Span,
    },
    /// `[a, b, ...]`
    Array {
        /// The element expressions.
        items: Vec<Expr>,
        /// Source range, brackets included.
        span: Span,
    },
    /// A dotted name, root first: `nodes.build.outputs.log`.
    Path {
        /// The segments, root first. Segments after the first may be keywords (`nodes.in`).
        segments: Vec<String>,
        /// Source range.
        span: Span,
    },
    /// `name(args...)`
    Call {
        /// The function name.
        name: String,
        /// The argument expressions.
        args: Vec<Expr>,
        /// Source range of the whole call, parentheses included.
        span: Span,
        /// Source range of the name alone.
        name_span: Span,
    },
    /// A prefix operator application.
    Unary {
        /// The operator.
        op: UnaryOp,
        /// Its operand.
        operand: Box<Expr>,
        /// Source range, operator included.
        span: Span,
    },
    /// An infix operator application.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// Left operand.
        left: Box<Expr>,
        /// Right operand.
        right: Box<Expr>,
        /// Source range from the start of `left` to the end of `right`.
        span: Span,
    },
}

impl Expr {
    /// The source range of this expression.
    pub fn span(&self) -> Span {
        match self {
            Expr::Literal { span, .. }
            | Expr::Array { span, .. }
            | Expr::Path { span, .. }
            | Expr::Call { span, .. }
            | Expr::Unary { span, .. }
            | Expr::Binary { span, .. } => *span,
        }
    }

    /// Structural equality that ignores spans (two parses of differently spaced text).
    pub fn eq_ignoring_spans(&self, other: &Expr) -> bool {
        match (self, other) {
            (Expr::Literal { value: a, .. }, Expr::Literal { value: b, .. }) => a == b,
            (Expr::Array { items: a, .. }, Expr::Array { items: b, .. }) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.eq_ignoring_spans(y))
            }
            (Expr::Path { segments: a, .. }, Expr::Path { segments: b, .. }) => a == b,
            (
                Expr::Call {
                    name: n1, args: a1, ..
                },
                Expr::Call {
                    name: n2, args: a2, ..
                },
            ) => {
                n1 == n2
                    && a1.len() == a2.len()
                    && a1.iter().zip(a2).all(|(x, y)| x.eq_ignoring_spans(y))
            }
            (
                Expr::Unary {
                    op: o1, operand: x, ..
                },
                Expr::Unary {
                    op: o2, operand: y, ..
                },
            ) => o1 == o2 && x.eq_ignoring_spans(y),
            (
                Expr::Binary {
                    op: o1,
                    left: l1,
                    right: r1,
                    ..
                },
                Expr::Binary {
                    op: o2,
                    left: l2,
                    right: r2,
                    ..
                },
            ) => o1 == o2 && l1.eq_ignoring_spans(l2) && r1.eq_ignoring_spans(r2),
            _ => false,
        }
    }
}

/// Prints a canonical, fully parenthesised form: every unary and binary application is
/// wrapped in parentheses, strings use double quotes with JSON escapes, and `!`, `&&`, `||`
/// stand for their keyword spellings. `parse(&e.to_string())` yields `e` again, up to spans.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Literal { value, .. } => write_literal(f, value),
            Expr::Array { items, .. } => {
                f.write_str("[")?;
                write_list(f, items)?;
                f.write_str("]")
            }
            Expr::Path { segments, .. } => f.write_str(&segments.join(".")),
            Expr::Call { name, args, .. } => {
                write!(f, "{name}(")?;
                write_list(f, args)?;
                f.write_str(")")
            }
            Expr::Unary { op, operand, .. } => write!(f, "({}{})", op.symbol(), operand),
            Expr::Binary {
                op, left, right, ..
            } => write!(f, "({} {} {})", left, op.symbol(), right),
        }
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, items: &[Expr]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

fn write_literal(f: &mut fmt::Formatter<'_>, value: &Value) -> fmt::Result {
    match value {
        // A float literal must keep a fraction or exponent so that it parses back as a
        // float; serde_json's shortest round-trip formatting always does (`1.0`, `1e300`).
        Value::Number(n) if n.is_f64() => {
            let text = n.to_string();
            if text.contains(['.', 'e', 'E']) {
                f.write_str(&text)
            } else {
                write!(f, "{text}.0")
            }
        }
        // u64 literals above i64::MAX never come out of the parser (they become floats), but
        // a hand-built tree may hold one; printing it as a float keeps the printer total.
        Value::Number(n) if n.as_i64().is_none() => {
            write!(f, "{}.0", n)
        }
        // JSON string escapes are a subset of AGX string escapes.
        other => write!(f, "{other}"),
    }
}

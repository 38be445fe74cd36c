//! The static type checker: infers a coarse type for an expression and reports operations
//! that are certain to fail at run time.
//!
//! Only *definite* errors are reported, so that a valid document never gets a false
//! positive: an operand of type [`Ty::Any`] (a name whose type the validator does not know)
//! never causes an error by itself. An error with an `Any` operand is reported only when the
//! *other* operand alone already rules the operation out, e.g. `x < true` (booleans are
//! never ordered) or `x - "a"`.

use crate::ast::{BinaryOp, Expr, Span, UnaryOp};
use crate::error::{StaticError, StaticErrorKind};
use crate::functions::{TySet, signature};
pub use crate::ty::Ty;

/// The static types of names in scope.
pub trait TypeEnv {
    /// The type of the value at `path` (root first); [`Ty::Any`] when unknown.
    fn type_of(&self, path: &[&str]) -> Ty;
}

/// A [`TypeEnv`] that knows nothing: every name is [`Ty::Any`].
#[derive(Clone, Copy, Debug, Default)]
pub struct AnyEnv;

impl TypeEnv for AnyEnv {
    fn type_of(&self, _path: &[&str]) -> Ty {
        Ty::Any
    }
}

/// The type of `expr` and every definite type error in it (in evaluation order).
pub fn infer(expr: &Expr, env: &dyn TypeEnv) -> (Ty, Vec<StaticError>) {
    let mut errors = Vec::new();
    let ty = infer_into(expr, env, &mut errors);
    (ty, errors)
}

/// [`infer`], plus an error if the result is definitely not a boolean (conditions such as
/// `when` must be booleans; there is no truthiness).
pub fn check_condition(expr: &Expr, env: &dyn TypeEnv) -> Vec<StaticError> {
    let (ty, mut errors) = infer(expr, env);
    if !ty.may_be(Ty::Bool) {
        errors.push(type_error(
            format!("condition must be a boolean, found {}", ty.name()),
            expr.span(),
        ));
    }
    errors
}

fn type_error(message: String, span: Span) -> StaticError {
    StaticError {
        kind: StaticErrorKind::Type,
        message,
        span,
    }
}

fn infer_into(expr: &Expr, env: &dyn TypeEnv, errors: &mut Vec<StaticError>) -> Ty {
    match expr {
        Expr::Literal { value, .. } => Ty::of_value(value),
        Expr::Array { items, .. } => {
            for item in items {
                infer_into(item, env, errors);
            }
            Ty::Array
        }
        Expr::Path { segments, .. } => {
            let path: Vec<&str> = segments.iter().map(String::as_str).collect();
            env.type_of(&path)
        }
        Expr::Call { name, args, .. } => {
            let tys: Vec<Ty> = args.iter().map(|a| infer_into(a, env, errors)).collect();
            infer_call(name, args, &tys, errors)
        }
        Expr::Unary { op, operand, span } => {
            let t = infer_into(operand, env, errors);
            match op {
                UnaryOp::Not => {
                    if !t.may_be(Ty::Bool) {
                        errors.push(type_error(
                            format!("operator '!' needs a boolean, found {}", t.name()),
                            *span,
                        ));
                    }
                    Ty::Bool
                }
                UnaryOp::Neg => {
                    if !t.may_be_number() {
                        errors.push(type_error(
                            format!("operator '-' needs a number, found {}", t.name()),
                            *span,
                        ));
                        return Ty::Number;
                    }
                    if t == Ty::Integer {
                        Ty::Integer
                    } else {
                        Ty::Number
                    }
                }
            }
        }
        Expr::Binary {
            op,
            left,
            right,
            span,
        } => {
            let l = infer_into(left, env, errors);
            let r = infer_into(right, env, errors);
            infer_binary(*op, l, r, *span, errors)
        }
    }
}

fn operand_error(op: BinaryOp, l: Ty, r: Ty, span: Span) -> StaticError {
    let needs = match op {
        BinaryOp::Or | BinaryOp::And => "booleans",
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => "two numbers or two strings",
        BinaryOp::Add => "two numbers, two strings or two arrays",
        BinaryOp::In => "an array, string or object on the right",
        _ => "numbers",
    };
    type_error(
        format!(
            "operator '{}' needs {needs}, found {} and {}",
            op.symbol(),
            l.name(),
            r.name()
        ),
        span,
    )
}

fn infer_binary(op: BinaryOp, l: Ty, r: Ty, span: Span, errors: &mut Vec<StaticError>) -> Ty {
    match op {
        BinaryOp::Or | BinaryOp::And => {
            if !l.may_be(Ty::Bool) || !r.may_be(Ty::Bool) {
                errors.push(operand_error(op, l, r, span));
            }
            Ty::Bool
        }
        BinaryOp::Eq | BinaryOp::Ne => Ty::Bool,
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            let orderable = |t: Ty| t == Ty::Any || t.is_numeric() || t == Ty::String;
            let compatible = l == Ty::Any
                || r == Ty::Any
                || (l.is_numeric() && r.is_numeric())
                || (l == Ty::String && r == Ty::String);
            if !orderable(l) || !orderable(r) || !compatible {
                errors.push(operand_error(op, l, r, span));
            }
            Ty::Bool
        }
        BinaryOp::Add => {
            let addable = |t: Ty| {
                matches!(
                    t,
                    Ty::Any | Ty::Number | Ty::Integer | Ty::String | Ty::Array
                )
            };
            if !addable(l) || !addable(r) {
                errors.push(operand_error(op, l, r, span));
                return Ty::Any;
            }
            match (l, r) {
                (Ty::Any, Ty::Any) => Ty::Any,
                (Ty::Integer, Ty::Integer) => Ty::Integer,
                (a, b) if a.may_be_number() && b.may_be_number() => Ty::Number,
                (Ty::Any, t) | (t, Ty::Any) => t,
                (a, b) if a == b => a,
                _ => {
                    errors.push(operand_error(op, l, r, span));
                    Ty::Any
                }
            }
        }
        BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => {
            if !l.may_be_number() || !r.may_be_number() {
                errors.push(operand_error(op, l, r, span));
                return Ty::Number;
            }
            // Integer division may produce a float (`1 / 2`), the others stay integral.
            if l == Ty::Integer && r == Ty::Integer && op != BinaryOp::Div {
                Ty::Integer
            } else {
                Ty::Number
            }
        }
        BinaryOp::In => {
            let ok = match r {
                Ty::Any | Ty::Array => true,
                Ty::String | Ty::Object => l.may_be(Ty::String),
                _ => false,
            };
            if !ok {
                errors.push(operand_error(op, l, r, span));
            }
            Ty::Bool
        }
    }
}

fn infer_call(name: &str, args: &[Expr], tys: &[Ty], errors: &mut Vec<StaticError>) -> Ty {
    // Unknown functions and arity are `check_calls`' findings; types only look at the
    // arguments a known signature describes.
    let Some(sig) = signature(name) else {
        return Ty::Any;
    };
    for (i, (arg, ty)) in args.iter().zip(tys).enumerate() {
        let allowed = sig.params.get(i).copied().unwrap_or(TySet::ANY);
        if !allowed.admits(*ty) {
            errors.push(type_error(
                format!(
                    "{}() argument {} must be {}, found {}",
                    sig.name,
                    i + 1,
                    allowed.describe(),
                    ty.name()
                ),
                arg.span(),
            ));
        }
    }
    match (name, tys) {
        // `contains(haystack, needle)` has the same pairing rules as `needle in haystack`.
        ("contains", [h, n]) if matches!(h, Ty::String | Ty::Object) && !n.may_be(Ty::String) => {
            errors.push(type_error(
                format!(
                    "contains() cannot look for a {} in a {}",
                    n.name(),
                    h.name()
                ),
                args.get(1).map_or_else(Span::default, Expr::span),
            ));
        }
        // The result of `default` is one of its arguments; when both agree we know it.
        ("default", [a, b]) => {
            return match (a, b) {
                (Ty::Null, t) => *t,
                (a, b) if a == b => *a,
                (Ty::Integer, Ty::Number) | (Ty::Number, Ty::Integer) => Ty::Number,
                _ => Ty::Any,
            };
        }
        _ => {}
    }
    sig.ret
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    /// `params.n` is an integer, `params.s` a string, `params.f` a number, `params.b` a
    /// boolean, `params.l` an array, `params.o` an object, everything else unknown.
    struct Env;

    impl TypeEnv for Env {
        fn type_of(&self, path: &[&str]) -> Ty {
            match path {
                ["params", "n"] => Ty::Integer,
                ["params", "f"] => Ty::Number,
                ["params", "s"] => Ty::String,
                ["params", "b"] => Ty::Bool,
                ["params", "l"] => Ty::Array,
                ["params", "o"] => Ty::Object,
                ["params", "z"] => Ty::Null,
                _ => Ty::Any,
            }
        }
    }

    fn ty(src: &str) -> Ty {
        let (t, errors) = infer(&parse(src).unwrap(), &Env);
        assert!(errors.is_empty(), "{src}: {errors:?}");
        t
    }

    fn errs(src: &str) -> Vec<String> {
        infer(&parse(src).unwrap(), &Env)
            .1
            .into_iter()
            .map(|e| {
                assert_eq!(e.kind, StaticErrorKind::Type);
                e.message
            })
            .collect()
    }

    #[test]
    fn literal_and_path_types() {
        assert_eq!(ty("1"), Ty::Integer);
        assert_eq!(ty("1.5"), Ty::Number);
        assert_eq!(ty("1e3"), Ty::Number);
        assert_eq!(ty("'a'"), Ty::String);
        assert_eq!(ty("null"), Ty::Null);
        assert_eq!(ty("true"), Ty::Bool);
        assert_eq!(ty("[1, 'a']"), Ty::Array);
        assert_eq!(ty("params.s"), Ty::String);
        assert_eq!(ty("x.y"), Ty::Any);
    }

    #[test]
    fn operator_types() {
        assert_eq!(ty("1 + 2"), Ty::Integer);
        assert_eq!(ty("1 + 2.5"), Ty::Number);
        assert_eq!(ty("params.n * 2"), Ty::Integer);
        assert_eq!(ty("params.n / 2"), Ty::Number);
        assert_eq!(ty("params.n % 2"), Ty::Integer);
        assert_eq!(ty("x - 1"), Ty::Number);
        assert_eq!(ty("x + 1"), Ty::Number);
        assert_eq!(ty("x + y"), Ty::Any);
        assert_eq!(ty("'a' + x"), Ty::String);
        assert_eq!(ty("params.l + [1]"), Ty::Array);
        assert_eq!(ty("-params.n"), Ty::Integer);
        assert_eq!(ty("-params.f"), Ty::Number);
        assert_eq!(ty("-x"), Ty::Number);
        assert_eq!(ty("!x"), Ty::Bool);
        assert_eq!(ty("1 == 'a'"), Ty::Bool);
        assert_eq!(ty("null != [1]"), Ty::Bool);
        assert_eq!(ty("'a' < 'b'"), Ty::Bool);
        assert_eq!(ty("1 < 2.5"), Ty::Bool);
        assert_eq!(ty("x < 1"), Ty::Bool);
        assert_eq!(ty("'a' in params.o"), Ty::Bool);
        assert_eq!(ty("1 in params.l"), Ty::Bool);
        assert_eq!(ty("1 in x"), Ty::Bool);
        assert_eq!(ty("x in 'abc'"), Ty::Bool);
        assert_eq!(ty("x && y || z"), Ty::Bool);
    }

    #[test]
    fn definite_errors() {
        assert_eq!(
            errs("'a' - 1"),
            ["operator '-' needs numbers, found string and integer"]
        );
        assert_eq!(
            errs("1 < 'x'"),
            ["operator '<' needs two numbers or two strings, found integer and string"]
        );
        assert_eq!(errs("!5"), ["operator '!' needs a boolean, found integer"]);
        assert_eq!(errs("not 'a'").len(), 1);
        assert_eq!(errs("-'a'"), ["operator '-' needs a number, found string"]);
        assert_eq!(
            errs("len(3)"),
            ["len() argument 1 must be a string, array or object, found integer"]
        );
        // `(1 < 2) < 3`: a boolean is never ordered.
        assert_eq!(
            errs("1 < 2 < 3"),
            ["operator '<' needs two numbers or two strings, found boolean and integer"]
        );
        assert_eq!(errs("1 + 'a'").len(), 1);
        assert_eq!(errs("[1] + 'a'").len(), 1);
        assert_eq!(errs("true + true").len(), 1);
        assert_eq!(errs("params.o + params.o").len(), 1);
        assert_eq!(errs("1 && true").len(), 1);
        assert_eq!(errs("true || 'x'").len(), 1);
        assert_eq!(errs("1 in 5").len(), 1);
        assert_eq!(errs("1 in 'abc'").len(), 1);
        assert_eq!(errs("1 in params.o").len(), 1);
        assert_eq!(errs("params.b * 2").len(), 1);
        assert_eq!(errs("startswith(1, 'a')").len(), 1);
        assert_eq!(errs("count('abc')").len(), 1);
        assert_eq!(errs("int(true)").len(), 1);
        assert_eq!(errs("bool(1)").len(), 1);
        assert_eq!(errs("join(params.l, 1)").len(), 1);
        assert_eq!(errs("contains('abc', 1)").len(), 1);
        assert_eq!(errs("get(x, 1)").len(), 1);
        assert_eq!(errs("succeeded(1)").len(), 1);
        // Errors in nested positions are all found.
        assert_eq!(errs("[!1, -'a', len(2)]").len(), 3);
        // An Any operand with an operand that can never work is still definite.
        assert_eq!(errs("x < true").len(), 1);
        assert_eq!(errs("x - 'a'").len(), 1);
        assert_eq!(errs("x && 1").len(), 1);
    }

    #[test]
    fn any_never_errors_on_its_own() {
        for src in [
            "x - 1",
            "x < 'a'",
            "!x",
            "-x",
            "len(x)",
            "x && y",
            "x + 'a'",
            "x in y",
            "'a' in x",
            "x < y",
            "int(x)",
            "matches(x, y)",
            "get(x, y)",
            "contains(x, 1)",
            "x.y.z * 3",
            "unknown_fn(1, 'a')",
        ] {
            assert!(errs(src).is_empty(), "{src}");
        }
    }

    #[test]
    fn function_result_types() {
        assert_eq!(ty("len('a')"), Ty::Integer);
        assert_eq!(ty("count([])"), Ty::Integer);
        assert_eq!(ty("contains([1], 1)"), Ty::Bool);
        assert_eq!(ty("lower('A')"), Ty::String);
        assert_eq!(ty("split('a,b', ',')"), Ty::Array);
        assert_eq!(ty("join([], ',')"), Ty::String);
        assert_eq!(ty("int('1')"), Ty::Integer);
        assert_eq!(ty("float(1)"), Ty::Number);
        assert_eq!(ty("str(1)"), Ty::String);
        assert_eq!(ty("json('1')"), Ty::Any);
        assert_eq!(ty("get(x, 'a')"), Ty::Any);
        assert_eq!(ty("default(x, 1)"), Ty::Any);
        assert_eq!(ty("default(params.z, 1)"), Ty::Integer);
        assert_eq!(ty("default(params.n, 1)"), Ty::Integer);
        assert_eq!(ty("default(params.n, 1.5)"), Ty::Number);
        assert_eq!(ty("succeeded('a')"), Ty::Bool);
        assert_eq!(ty("output('a', 'b')"), Ty::Any);
        assert_eq!(ty("nope(1)"), Ty::Any);
    }

    #[test]
    fn conditions() {
        let check = |src: &str| check_condition(&parse(src).unwrap(), &Env);
        assert!(check("x").is_empty());
        assert!(check("params.b").is_empty());
        assert!(check("1 < 2").is_empty());
        assert!(check("default(x, true)").is_empty());
        let e = check("params.n + 1");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].message, "condition must be a boolean, found integer");
        assert_eq!(e[0].span, Span::new(0, 12));
        assert_eq!(check("'yes'").len(), 1);
        assert_eq!(check("null").len(), 1);
        // The operand error and the non-boolean result are both reported.
        assert_eq!(check("'a' - 1").len(), 2);
    }
}

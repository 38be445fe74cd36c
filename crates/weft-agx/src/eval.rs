//! The evaluator: [`Expr`] to JSON value against a [`Context`].
//!
//! No coercion and no truthiness (DIGEST §2.3). `&&` and `||` short-circuit so that guards
//! such as `failed("x") && nodes.x.outputs.log != null` are safe; their left operand must
//! still be a boolean. Recursion follows the tree, whose depth the parser bounds.

use std::cmp::Ordering;

use serde_json::Value;

use crate::ast::{BinaryOp, Expr, Span, UnaryOp};
use crate::context::{Context, Lookup};
pub use crate::error::EvalError;
use crate::functions::{self, Arg, membership};
use crate::value::{MAX_ARRAY_LEN, MAX_STRING_LEN, Num, compare, deep_equal, type_name};

/// Evaluates `expr`.
pub fn eval(expr: &Expr, ctx: &dyn Context) -> Result<Value, EvalError> {
    match expr {
        Expr::Literal { value, .. } => Ok(value.clone()),
        Expr::Array { items, .. } => items
            .iter()
            .map(|item| eval(item, ctx))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        Expr::Path { segments, span } => {
            let path: Vec<&str> = segments.iter().map(String::as_str).collect();
            match ctx.lookup(&path) {
                Lookup::Value(v) => Ok(v),
                Lookup::Absent => Ok(Value::Null),
                Lookup::Unknown => Err(EvalError::new(
                    format!("unknown name '{}'", segments.join(".")),
                    *span,
                )),
            }
        }
        Expr::Call {
            name, args, span, ..
        } => {
            let mut values = Vec::with_capacity(args.len());
            for arg in args {
                values.push(Arg {
                    value: eval(arg, ctx)?,
                    span: arg.span(),
                });
            }
            functions::call(name, values, *span, ctx)
        }
        Expr::Unary { op, operand, span } => {
            let v = eval(operand, ctx)?;
            unary(*op, v, *span)
        }
        Expr::Binary {
            op,
            left,
            right,
            span,
        } => match op {
            BinaryOp::And | BinaryOp::Or => {
                let l = boolean_operand(*op, eval(left, ctx)?, left.span())?;
                // Short-circuit: `false && _` and `true || _` never look at the right side.
                if (*op == BinaryOp::And) != l {
                    return Ok(Value::Bool(l));
                }
                let r = boolean_operand(*op, eval(right, ctx)?, right.span())?;
                Ok(Value::Bool(r))
            }
            _ => {
                let l = eval(left, ctx)?;
                let r = eval(right, ctx)?;
                binary(*op, l, r, *span)
            }
        },
    }
}

/// Evaluates `expr` as a condition: anything but a boolean is an error.
pub fn eval_bool(expr: &Expr, ctx: &dyn Context) -> Result<bool, EvalError> {
    match eval(expr, ctx)? {
        Value::Bool(b) => Ok(b),
        other => Err(EvalError::new(
            format!("expected a boolean, found {}", type_name(&other)),
            expr.span(),
        )),
    }
}

fn boolean_operand(op: BinaryOp, value: Value, span: Span) -> Result<bool, EvalError> {
    match value {
        Value::Bool(b) => Ok(b),
        other => Err(EvalError::new(
            format!(
                "operator '{}' needs booleans, found {}",
                op.symbol(),
                type_name(&other)
            ),
            span,
        )),
    }
}

fn unary(op: UnaryOp, value: Value, span: Span) -> Result<Value, EvalError> {
    match (op, &value) {
        (UnaryOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
        (UnaryOp::Neg, Value::Number(n)) => {
            let result = match Num::of(n) {
                Num::Int(i) => Num::Int(
                    i.checked_neg()
                        .ok_or_else(|| EvalError::new("integer overflow", span))?,
                ),
                Num::Float(f) => Num::Float(-f),
            };
            number_value(result, span)
        }
        (UnaryOp::Not, _) => Err(EvalError::new(
            format!("operator '!' needs a boolean, found {}", type_name(&value)),
            span,
        )),
        (UnaryOp::Neg, _) => Err(EvalError::new(
            format!("operator '-' needs a number, found {}", type_name(&value)),
            span,
        )),
    }
}

fn number_value(n: Num, span: Span) -> Result<Value, EvalError> {
    n.to_value()
        .ok_or_else(|| EvalError::new("number overflow (result is not finite)", span))
}

fn mismatch(op: BinaryOp, needs: &str, l: &Value, r: &Value, span: Span) -> EvalError {
    EvalError::new(
        format!(
            "operator '{}' needs {needs}, found {} and {}",
            op.symbol(),
            type_name(l),
            type_name(r)
        ),
        span,
    )
}

fn binary(op: BinaryOp, l: Value, r: Value, span: Span) -> Result<Value, EvalError> {
    match op {
        BinaryOp::Eq => Ok(Value::Bool(deep_equal(&l, &r))),
        BinaryOp::Ne => Ok(Value::Bool(!deep_equal(&l, &r))),
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            let ord = compare(&l, &r)
                .ok_or_else(|| mismatch(op, "two numbers or two strings", &l, &r, span))?;
            Ok(Value::Bool(match op {
                BinaryOp::Lt => ord == Ordering::Less,
                BinaryOp::Le => ord != Ordering::Greater,
                BinaryOp::Gt => ord == Ordering::Greater,
                _ => ord != Ordering::Less,
            }))
        }
        BinaryOp::In => membership(&l, &r).map(Value::Bool).ok_or_else(|| {
            EvalError::new(
                format!(
                    "operator 'in' cannot look for a {} in a {}",
                    type_name(&l),
                    type_name(&r)
                ),
                span,
            )
        }),
        BinaryOp::Add => match (l, r) {
            (Value::String(a), Value::String(b)) => {
                if a.len().saturating_add(b.len()) > MAX_STRING_LEN {
                    return Err(EvalError::new(
                        format!("string longer than {MAX_STRING_LEN} bytes"),
                        span,
                    ));
                }
                Ok(Value::String(a + &b))
            }
            (Value::Array(mut a), Value::Array(b)) => {
                if a.len().saturating_add(b.len()) > MAX_ARRAY_LEN {
                    return Err(EvalError::new(
                        format!("array longer than {MAX_ARRAY_LEN} elements"),
                        span,
                    ));
                }
                a.extend(b);
                Ok(Value::Array(a))
            }
            (Value::Number(a), Value::Number(b)) => arithmetic(op, Num::of(&a), Num::of(&b), span),
            (l, r) => Err(mismatch(
                op,
                "two numbers, two strings or two arrays",
                &l,
                &r,
                span,
            )),
        },
        BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => match (&l, &r) {
            (Value::Number(a), Value::Number(b)) => arithmetic(op, Num::of(a), Num::of(b), span),
            _ => Err(mismatch(op, "numbers", &l, &r, span)),
        },
        // And/Or are handled by `eval` (they short-circuit); reaching here means both sides
        // were already evaluated, which gives the same result.
        BinaryOp::And | BinaryOp::Or => {
            let a = boolean_operand(op, l, span)?;
            let b = boolean_operand(op, r, span)?;
            Ok(Value::Bool(if op == BinaryOp::And {
                a && b
            } else {
                a || b
            }))
        }
    }
}

/// Number arithmetic: integer when both sides are integers (checked; overflow is an error),
/// float otherwise. `/` of two integers is an integer only when it divides exactly. `%`
/// takes the sign of the divisor, like the Python reference (`-7 % 3 == 2`).
fn arithmetic(op: BinaryOp, a: Num, b: Num, span: Span) -> Result<Value, EvalError> {
    let zero = match b {
        Num::Int(i) => i == 0,
        Num::Float(f) => f == 0.0,
    };
    if zero && matches!(op, BinaryOp::Div | BinaryOp::Rem) {
        let what = if op == BinaryOp::Div {
            "division"
        } else {
            "modulo"
        };
        return Err(EvalError::new(format!("{what} by zero"), span));
    }
    let overflow = || EvalError::new("integer overflow", span);
    let result = match (a, b) {
        (Num::Int(x), Num::Int(y)) => match op {
            BinaryOp::Add => Num::Int(x.checked_add(y).ok_or_else(overflow)?),
            BinaryOp::Sub => Num::Int(x.checked_sub(y).ok_or_else(overflow)?),
            BinaryOp::Mul => Num::Int(x.checked_mul(y).ok_or_else(overflow)?),
            BinaryOp::Div => {
                if x.checked_rem(y).ok_or_else(overflow)? == 0 {
                    Num::Int(x.checked_div(y).ok_or_else(overflow)?)
                } else {
                    Num::Float(x as f64 / y as f64)
                }
            }
            _ => {
                let r = x.checked_rem(y).ok_or_else(overflow)?;
                // Floor modulo: shift a remainder whose sign differs from the divisor's.
                Num::Int(if r != 0 && ((r < 0) != (y < 0)) {
                    r + y
                } else {
                    r
                })
            }
        },
        _ => {
            let (x, y) = (a.as_f64(), b.as_f64());
            Num::Float(match op {
                BinaryOp::Add => x + y,
                BinaryOp::Sub => x - y,
                BinaryOp::Mul => x * y,
                BinaryOp::Div => x / y,
                _ => {
                    let r = x % y;
                    if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
                        r + y
                    } else {
                        r
                    }
                }
            })
        }
    };
    number_value(result, span)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::MapContext;
    use crate::parse;
    use serde_json::json;

    fn ctx() -> MapContext {
        MapContext::from_value(json!({
            "params": {"n": 3, "f": 2.5, "s": "hello", "l": [1, "a", [2]], "o": {"k": 1}, "z": null},
            "nodes": {"a": {"status": "failed", "outputs": {"log": "boom"}}},
            "loop": {"iteration": 4},
            "big": 9_223_372_036_854_775_807_i64,
        }))
    }

    fn ev(src: &str) -> Value {
        let expr = parse(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        eval(&expr, &ctx()).unwrap_or_else(|e| panic!("{src}: {e}"))
    }

    fn fails(src: &str) -> EvalError {
        let expr = parse(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        match eval(&expr, &ctx()) {
            Ok(v) => panic!("{src} evaluated to {v}"),
            Err(e) => e,
        }
    }

    #[test]
    fn literals_and_paths() {
        assert_eq!(ev("null"), json!(null));
        assert_eq!(ev("[1, 'a', true]"), json!([1, "a", true]));
        assert_eq!(ev("params.n"), json!(3));
        assert_eq!(ev("params.missing"), json!(null));
        assert_eq!(ev("params.s.deeper"), json!(null));
        assert_eq!(ev("nodes.a.outputs.log"), json!("boom"));
        assert_eq!(ev("loop.iteration -1"), json!(3));
        let e = fails("context.key");
        assert_eq!(e.message, "unknown name 'context.key'");
        assert_eq!(e.span, Span::new(0, 11));
        assert_eq!(fails("1 + secrets.x").span, Span::new(4, 13));
    }

    #[test]
    fn equality() {
        assert_eq!(ev("1 == 1.0"), json!(true));
        assert_eq!(ev("1 != 1.0"), json!(false));
        assert_eq!(ev("1 == '1'"), json!(false));
        assert_eq!(ev("null == false"), json!(false));
        assert_eq!(ev("params.z == null"), json!(true));
        assert_eq!(ev("params.missing == null"), json!(true));
        assert_eq!(ev("[1, [2]] == [1.0, [2]]"), json!(true));
        assert_eq!(ev("params.o == params.o"), json!(true));
        assert_eq!(ev("[1] != [1, 2]"), json!(true));
        assert_eq!(ev("'a' == 'a'"), json!(true));
    }

    #[test]
    fn ordering() {
        assert_eq!(ev("1 < 2"), json!(true));
        assert_eq!(ev("2 <= 2.0"), json!(true));
        assert_eq!(ev("3 > 2.5"), json!(true));
        assert_eq!(ev("2 >= 3"), json!(false));
        assert_eq!(ev("'abc' < 'abd'"), json!(true));
        assert_eq!(ev("'Z' < 'a'"), json!(true));
        assert_eq!(ev("'b' >= 'a'"), json!(true));
        let e = fails("1 < 'x'");
        assert_eq!(
            e.message,
            "operator '<' needs two numbers or two strings, found number and string"
        );
        assert_eq!(e.span, Span::new(0, 7));
        assert!(
            fails("1 < 2 < 3")
                .message
                .contains("found boolean and number")
        );
        fails("null < null");
        fails("[1] < [2]");
        fails("true > false");
    }

    #[test]
    fn addition() {
        assert_eq!(ev("1 + 2"), json!(3));
        assert_eq!(ev("1 + 2.5"), json!(3.5));
        assert_eq!(ev("'a' + 'b'"), json!("ab"));
        assert_eq!(ev("[1] + [2, 3]"), json!([1, 2, 3]));
        assert_eq!(ev("[] + []"), json!([]));
        assert_eq!(
            fails("'a' + 1").message,
            "operator '+' needs two numbers, two strings or two arrays, found string and number"
        );
        fails("[1] + 1");
        fails("null + null");
        fails("params.o + params.o");
        assert_eq!(fails("big + 1").message, "integer overflow");
        // Built strings and arrays are capped (see MAX_STRING_LEN / MAX_ARRAY_LEN).
        let sq = |n: usize| {
            let a = format!("'{}'", "a".repeat(n));
            format!("join(split({a}, 'a'), {a})")
        };
        let e = fails(&format!("{} + {}", sq(2049), sq(2049)));
        assert_eq!(e.message, "string longer than 8388608 bytes");
        let e = fails(&format!(
            "split({}, 'a') + split({}, 'a')",
            sq(776),
            sq(776)
        ));
        assert_eq!(e.message, "array longer than 1048576 elements");
    }

    #[test]
    fn arithmetic() {
        assert_eq!(ev("5 - 7"), json!(-2));
        assert_eq!(ev("6 * 7"), json!(42));
        assert_eq!(ev("6 / 3"), json!(2));
        assert!(ev("6 / 3").is_i64());
        assert_eq!(ev("7 / 2"), json!(3.5));
        assert_eq!(ev("1 / 3"), json!(1.0 / 3.0));
        assert_eq!(ev("7 % 3"), json!(1));
        assert_eq!(ev("-7 % 3"), json!(2));
        assert_eq!(ev("7 % -3"), json!(-2));
        assert_eq!(ev("6 % 3"), json!(0));
        assert_eq!(ev("7.5 % 2"), json!(1.5));
        assert_eq!(ev("-7.5 % 2"), json!(0.5));
        assert_eq!(ev("2.5 * 2"), json!(5.0));
        assert_eq!(ev("params.f - 0.5"), json!(2.0));
        assert_eq!(ev("-params.n"), json!(-3));
        assert_eq!(ev("-params.f"), json!(-2.5));
        assert_eq!(fails("1 / 0").message, "division by zero");
        assert_eq!(fails("1 % 0").message, "modulo by zero");
        assert_eq!(fails("1.5 / 0.0").message, "division by zero");
        assert_eq!(fails("1 % 0.0").message, "modulo by zero");
        assert_eq!(fails("big * 2").message, "integer overflow");
        assert_eq!(fails("-big - 2").message, "integer overflow");
        assert_eq!(fails("(-big - 1) / -1").message, "integer overflow");
        assert_eq!(fails("(-big - 1) % -1").message, "integer overflow");
        assert_eq!(fails("-(-big - 1)").message, "integer overflow");
        assert!(fails("1e308 * 10").message.contains("not finite"));
        assert_eq!(
            fails("'a' - 1").message,
            "operator '-' needs numbers, found string and number"
        );
        fails("1 * true");
        fails("null / 1");
        fails("[1] % 1");
        assert_eq!(
            fails("-'a'").message,
            "operator '-' needs a number, found string"
        );
    }

    #[test]
    fn booleans_and_short_circuit() {
        assert_eq!(ev("true && false"), json!(false));
        assert_eq!(ev("true and true"), json!(true));
        assert_eq!(ev("false || true"), json!(true));
        assert_eq!(ev("false or false"), json!(false));
        assert_eq!(ev("!true"), json!(false));
        assert_eq!(ev("not false"), json!(true));
        // The right side is never evaluated when the left decides.
        assert_eq!(ev("false && (1/0 == 1)"), json!(false));
        assert_eq!(ev("true || undeclared.name"), json!(true));
        assert_eq!(ev("false and 'not a bool'"), json!(false));
        assert_eq!(ev("failed('a') || nodes.a.outputs.log == 'x'"), json!(true));
        // ...but it is when needed, and must then be a boolean.
        assert!(
            fails("true && (1/0 == 1)")
                .message
                .contains("division by zero")
        );
        let e = fails("true && 1");
        assert_eq!(e.message, "operator '&&' needs booleans, found number");
        assert_eq!(e.span, Span::new(8, 9));
        // A non-boolean left side is an error even though the right is never needed.
        let e = fails("1 || true");
        assert_eq!(e.message, "operator '||' needs booleans, found number");
        assert_eq!(e.span, Span::new(0, 1));
        fails("null && false");
        assert_eq!(
            fails("!5").message,
            "operator '!' needs a boolean, found number"
        );
        fails("not 'x'");
    }

    #[test]
    fn membership() {
        assert_eq!(ev("1 in [1, 2]"), json!(true));
        assert_eq!(ev("1.0 in params.l"), json!(true));
        assert_eq!(ev("[2] in params.l"), json!(true));
        assert_eq!(ev("3 in params.l"), json!(false));
        assert_eq!(ev("null in [null]"), json!(true));
        assert_eq!(ev("'ell' in params.s"), json!(true));
        assert_eq!(ev("'' in 'abc'"), json!(true));
        assert_eq!(ev("'x' in params.s"), json!(false));
        assert_eq!(ev("'k' in params.o"), json!(true));
        assert_eq!(ev("'q' in params.o"), json!(false));
        assert_eq!(ev("not ('k' in params.o)"), json!(false));
    }

    #[test]
    fn membership_errors() {
        assert_eq!(
            fails("1 in 'abc'").message,
            "operator 'in' cannot look for a number in a string"
        );
        fails("1 in params.o");
        fails("1 in 5");
        fails("'a' in null");
        // `not a in b` is `(not a) in b`, so this negates a string.
        assert_eq!(
            fails("not 'k' in params.o").message,
            "operator '!' needs a boolean, found string"
        );
    }

    #[test]
    fn deepest_trees_are_safe_on_a_small_stack() {
        let n = crate::MAX_DEPTH - 1;
        let cases = [
            vec!["1"; n + 1].join(" + "),
            format!("{}1{}", "(1 + ".repeat(n), ")".repeat(n)),
            format!("{}true", "!".repeat(n)),
            format!("{}1{}", "[".repeat(n), "]".repeat(n)),
            format!("{}1{}", "str(".repeat(n), ")".repeat(n)),
            format!("{}1{}", "-(".repeat(n), ")".repeat(n)),
        ];
        // Every pass recurses over the tree. Measured need at MAX_DEPTH: under 256 KiB in
        // release builds, under 1.5 MiB unoptimised; 2 MiB is Rust's default thread stack.
        let worker = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                for src in cases {
                    let expr = parse(&src).unwrap();
                    eval(&expr, &ctx()).unwrap();
                    let _ = crate::infer(&expr, &crate::AnyEnv);
                    let _ = crate::references(&expr);
                    let _ = crate::check_calls(&expr);
                    let printed = expr.to_string();
                    assert!(parse(&printed).unwrap().eq_ignoring_spans(&expr));
                    assert!(crate::parse(&format!("({src}) + 1")).is_err());
                }
            })
            .unwrap();
        worker.join().unwrap();
    }

    #[test]
    fn eval_bool_requires_a_boolean() {
        let c = ctx();
        assert!(eval_bool(&parse("params.n > 2").unwrap(), &c).unwrap());
        assert!(!eval_bool(&parse("params.n > 3").unwrap(), &c).unwrap());
        let e = eval_bool(&parse("params.n + 1").unwrap(), &c).unwrap_err();
        assert_eq!(e.message, "expected a boolean, found number");
        assert_eq!(e.span, Span::new(0, 12));
        // A missing value is null, not false.
        assert!(eval_bool(&parse("params.missing").unwrap(), &c).is_err());
    }
}

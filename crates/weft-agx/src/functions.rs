//! The built-in functions of DIGEST §2.4: their signatures (shared by the static checks)
//! and their run-time behaviour.
//!
//! The set is closed: the spec forbids adding bare names, so an unknown name is an error
//! both statically (`check_calls`) and at run time.

use regex::RegexBuilder;
use serde_json::Value;

use crate::ast::Span;
use crate::context::{Context, Lookup};
use crate::error::EvalError;
use crate::ty::Ty;
use crate::value::{MAX_ARRAY_LEN, MAX_STRING_LEN, Num, deep_equal, stringify, type_name};

/// A set of argument types, as a bit mask over [`Ty`]s (`Integer` counts as `Number`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TySet(u8);

impl TySet {
    pub(crate) const NULL: TySet = TySet(1);
    pub(crate) const BOOL: TySet = TySet(2);
    pub(crate) const NUM: TySet = TySet(4);
    pub(crate) const STR: TySet = TySet(8);
    pub(crate) const ARR: TySet = TySet(16);
    pub(crate) const OBJ: TySet = TySet(32);
    pub(crate) const ANY: TySet = TySet(63);

    const fn or(self, other: TySet) -> TySet {
        TySet(self.0 | other.0)
    }

    /// Whether a value of static type `ty` may be accepted (`Any` always may).
    pub(crate) fn admits(self, ty: Ty) -> bool {
        let bit = match ty {
            Ty::Any => return true,
            Ty::Null => TySet::NULL,
            Ty::Bool => TySet::BOOL,
            Ty::Number | Ty::Integer => TySet::NUM,
            Ty::String => TySet::STR,
            Ty::Array => TySet::ARR,
            Ty::Object => TySet::OBJ,
        };
        self.0 & bit.0 != 0
    }

    fn admits_value(self, value: &Value) -> bool {
        self.admits(Ty::of_value(value))
    }

    /// `a string, array or object` for messages.
    pub(crate) fn describe(self) -> String {
        let names: Vec<&str> = [
            (TySet::NULL, "null"),
            (TySet::BOOL, "boolean"),
            (TySet::NUM, "number"),
            (TySet::STR, "string"),
            (TySet::ARR, "array"),
            (TySet::OBJ, "object"),
        ]
        .into_iter()
        .filter(|(set, _)| self.0 & set.0 != 0)
        .map(|(_, name)| name)
        .collect();
        match names.as_slice() {
            [] => "nothing".to_string(),
            [one] => format!("a {one}"),
            [init @ .., last] => format!("a {} or {last}", init.join(", ")),
        }
    }
}

/// What the static checker knows about a function.
#[derive(Debug)]
pub(crate) struct Signature {
    pub name: &'static str,
    pub min: usize,
    pub max: usize,
    pub params: &'static [TySet],
    pub ret: Ty,
}

const STR_ARR_OBJ: TySet = TySet::STR.or(TySet::ARR).or(TySet::OBJ);

const fn sig(
    name: &'static str,
    min: usize,
    max: usize,
    params: &'static [TySet],
    ret: Ty,
) -> Signature {
    Signature {
        name,
        min,
        max,
        params,
        ret,
    }
}

/// The exact function set of AGS 1.0.
pub(crate) const SIGNATURES: &[Signature] = &[
    sig("len", 1, 1, &[STR_ARR_OBJ], Ty::Integer),
    sig("count", 1, 1, &[TySet::ARR], Ty::Integer),
    sig("contains", 2, 2, &[STR_ARR_OBJ, TySet::ANY], Ty::Bool),
    sig("startswith", 2, 2, &[TySet::STR, TySet::STR], Ty::Bool),
    sig("endswith", 2, 2, &[TySet::STR, TySet::STR], Ty::Bool),
    sig("lower", 1, 1, &[TySet::STR], Ty::String),
    sig("upper", 1, 1, &[TySet::STR], Ty::String),
    sig("trim", 1, 1, &[TySet::STR], Ty::String),
    sig("matches", 2, 2, &[TySet::STR, TySet::STR], Ty::Bool),
    sig("split", 2, 2, &[TySet::STR, TySet::STR], Ty::Array),
    sig("join", 2, 2, &[TySet::ARR, TySet::STR], Ty::String),
    sig("int", 1, 1, &[TySet::STR.or(TySet::NUM)], Ty::Integer),
    sig("float", 1, 1, &[TySet::STR.or(TySet::NUM)], Ty::Number),
    sig("bool", 1, 1, &[TySet::STR.or(TySet::BOOL)], Ty::Bool),
    sig("str", 1, 1, &[TySet::ANY], Ty::String),
    sig("json", 1, 1, &[TySet::STR], Ty::Any),
    sig("get", 2, 3, &[TySet::ANY, TySet::STR, TySet::ANY], Ty::Any),
    sig("default", 2, 2, &[TySet::ANY, TySet::ANY], Ty::Any),
    sig("any", 1, 1, &[TySet::ARR], Ty::Bool),
    sig("all", 1, 1, &[TySet::ARR], Ty::Bool),
    sig("succeeded", 1, 1, &[TySet::STR], Ty::Bool),
    sig("failed", 1, 1, &[TySet::STR], Ty::Bool),
    sig("skipped", 1, 1, &[TySet::STR], Ty::Bool),
    sig("output", 2, 2, &[TySet::STR, TySet::STR], Ty::Any),
];

/// The names of all built-in functions, in the order of the spec's table.
pub fn function_names() -> impl Iterator<Item = &'static str> {
    SIGNATURES.iter().map(|s| s.name)
}

pub(crate) fn signature(name: &str) -> Option<&'static Signature> {
    SIGNATURES.iter().find(|s| s.name == name)
}

pub(crate) fn unknown_function_message(name: &str) -> String {
    format!("unknown function '{name}'")
}

/// The reference validator's wording, kept verbatim (including "1 arguments").
pub(crate) fn arity_message(sig: &Signature, got: usize) -> String {
    if sig.min == sig.max {
        format!("{}() takes {} arguments, got {got}", sig.name, sig.min)
    } else {
        format!(
            "{}() takes {}-{} arguments, got {got}",
            sig.name, sig.min, sig.max
        )
    }
}

/// The most bytes a compiled `matches()` pattern may use; patterns over it are errors.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// An evaluated argument with the span of its expression (for precise error locations).
pub(crate) struct Arg {
    pub value: Value,
    pub span: Span,
}

/// Calls built-in `name` on already evaluated arguments.
pub(crate) fn call(
    name: &str,
    args: Vec<Arg>,
    span: Span,
    ctx: &dyn Context,
) -> Result<Value, EvalError> {
    let Some(sig) = signature(name) else {
        return Err(EvalError::new(unknown_function_message(name), span));
    };
    if args.len() < sig.min || args.len() > sig.max {
        return Err(EvalError::new(arity_message(sig, args.len()), span));
    }
    for (i, arg) in args.iter().enumerate() {
        let allowed = sig.params.get(i).copied().unwrap_or(TySet::ANY);
        if !allowed.admits_value(&arg.value) {
            return Err(EvalError::new(
                format!(
                    "{}() argument {} must be {}, found {}",
                    sig.name,
                    i + 1,
                    allowed.describe(),
                    type_name(&arg.value)
                ),
                arg.span,
            ));
        }
    }
    let mut args = args.into_iter();
    // Arity and argument types are checked above, so the helpers below only see the shapes
    // the signature allows; `next_arg` still never panics if that ever changes.
    let mut next_arg = || {
        args.next().unwrap_or(Arg {
            value: Value::Null,
            span,
        })
    };
    let a = next_arg();
    match sig.name {
        "len" => Ok(Value::from(match &a.value {
            Value::String(s) => s.chars().count(),
            Value::Array(v) => v.len(),
            Value::Object(m) => m.len(),
            _ => 0,
        })),
        "count" => Ok(Value::from(a.value.as_array().map_or(0, Vec::len))),
        "contains" => {
            let b = next_arg();
            membership(&b.value, &a.value)
                .map(Value::Bool)
                .ok_or_else(|| {
                    EvalError::new(
                        format!(
                            "contains() cannot look for a {} in a {}",
                            type_name(&b.value),
                            type_name(&a.value)
                        ),
                        b.span,
                    )
                })
        }
        "startswith" | "endswith" => {
            let b = next_arg();
            let (s, p) = (as_str(&a.value), as_str(&b.value));
            Ok(Value::Bool(if sig.name == "startswith" {
                s.starts_with(p)
            } else {
                s.ends_with(p)
            }))
        }
        "lower" => Ok(Value::String(as_str(&a.value).to_lowercase())),
        "upper" => Ok(Value::String(as_str(&a.value).to_uppercase())),
        "trim" => Ok(Value::String(as_str(&a.value).trim().to_string())),
        "matches" => {
            let b = next_arg();
            let re = RegexBuilder::new(as_str(&b.value))
                .size_limit(REGEX_SIZE_LIMIT)
                .dfa_size_limit(REGEX_SIZE_LIMIT)
                .build()
                .map_err(|e| {
                    EvalError::new(
                        format!("matches(): invalid regular expression: {}", one_line(&e)),
                        b.span,
                    )
                })?;
            Ok(Value::Bool(re.is_match(as_str(&a.value))))
        }
        "split" => {
            let b = next_arg();
            let sep = as_str(&b.value);
            if sep.is_empty() {
                return Err(EvalError::new("split(): empty separator", b.span));
            }
            let mut parts = Vec::new();
            for part in as_str(&a.value).split(sep) {
                if parts.len() >= MAX_ARRAY_LEN {
                    return Err(EvalError::new(
                        format!("split(): more than {MAX_ARRAY_LEN} parts"),
                        span,
                    ));
                }
                parts.push(Value::String(part.to_string()));
            }
            Ok(Value::Array(parts))
        }
        "join" => {
            let b = next_arg();
            let parts: Vec<String> = a
                .value
                .as_array()
                .map(|items| items.iter().map(stringify).collect())
                .unwrap_or_default();
            let sep = as_str(&b.value);
            // Check the size before building: the separator is repeated once per element.
            let total = parts
                .iter()
                .map(String::len)
                .sum::<usize>()
                .saturating_add(sep.len().saturating_mul(parts.len().saturating_sub(1)));
            if total > MAX_STRING_LEN {
                return Err(EvalError::new(
                    format!("join(): result longer than {MAX_STRING_LEN} bytes"),
                    span,
                ));
            }
            Ok(Value::String(parts.join(sep)))
        }
        "int" => to_int(&a),
        "float" => to_float(&a),
        "bool" => match &a.value {
            Value::Bool(b) => Ok(Value::Bool(*b)),
            Value::String(s) if s == "true" => Ok(Value::Bool(true)),
            Value::String(s) if s == "false" => Ok(Value::Bool(false)),
            other => Err(EvalError::new(
                format!("bool() cannot convert {}", show(other)),
                a.span,
            )),
        },
        "str" => Ok(Value::String(stringify(&a.value))),
        "json" => serde_json::from_str::<Value>(as_str(&a.value))
            .map_err(|e| EvalError::new(format!("json(): invalid JSON: {e}"), a.span)),
        "get" => {
            let path = next_arg();
            // Missing third argument: `next_arg` yields null.
            let fallback = next_arg().value;
            Ok(get_path(&a.value, as_str(&path.value)).map_or(fallback, Clone::clone))
        }
        "default" => {
            let fallback = next_arg();
            Ok(if a.value.is_null() {
                fallback.value
            } else {
                a.value
            })
        }
        "any" | "all" => {
            let items = a.value.as_array().map(Vec::as_slice).unwrap_or(&[]);
            let mut bools = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::Bool(b) => bools.push(*b),
                    other => {
                        return Err(EvalError::new(
                            format!(
                                "{}() needs an array of booleans, element {i} is {}",
                                sig.name,
                                type_name(other)
                            ),
                            a.span,
                        ));
                    }
                }
            }
            Ok(Value::Bool(if sig.name == "any" {
                bools.iter().any(|b| *b)
            } else {
                bools.iter().all(|b| *b)
            }))
        }
        "succeeded" | "failed" | "skipped" => {
            let id = as_str(&a.value);
            let state = ctx
                .node_state(id)
                .ok_or_else(|| EvalError::new(format!("unknown node '{id}'"), a.span))?;
            // `blocked` counts as failed (DIGEST §6.2), so `failed()` is true for it.
            let hit = match sig.name {
                "succeeded" => state == "succeeded",
                "failed" => state == "failed" || state == "blocked",
                _ => state == "skipped",
            };
            Ok(Value::Bool(hit))
        }
        "output" => {
            let b = next_arg();
            let (id, name) = (as_str(&a.value), as_str(&b.value));
            match ctx.node_output(id, name) {
                Lookup::Value(v) => Ok(v),
                Lookup::Absent => Ok(Value::Null),
                Lookup::Unknown => Err(EvalError::new(
                    format!("unknown output '{name}' of node '{id}'"),
                    span,
                )),
            }
        }
        _ => Err(EvalError::new(unknown_function_message(name), span)),
    }
}

fn as_str(value: &Value) -> &str {
    value.as_str().unwrap_or("")
}

/// A value for messages: strings quoted, other values as compact JSON, cut short.
fn show(value: &Value) -> String {
    let text = match value {
        Value::String(s) => format!("'{s}'"),
        other => format!("{} {}", type_name(other), stringify(other)),
    };
    let mut short: String = text.chars().take(40).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

fn one_line(e: &regex::Error) -> String {
    e.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn to_int(a: &Arg) -> Result<Value, EvalError> {
    let fail = || EvalError::new(format!("int() cannot convert {}", show(&a.value)), a.span);
    match &a.value {
        Value::Number(n) => match Num::of(n) {
            Num::Int(i) => Ok(Value::from(i)),
            Num::Float(f) => {
                // Truncates toward zero; only floats whose integer part fits i64 convert.
                let t = f.trunc();
                if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&t) {
                    Ok(Value::from(t as i64))
                } else {
                    Err(fail())
                }
            }
        },
        Value::String(s) => {
            let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(fail());
            }
            s.parse::<i64>().map(Value::from).map_err(|_| fail())
        }
        _ => Err(fail()),
    }
}

fn to_float(a: &Arg) -> Result<Value, EvalError> {
    let fail = || EvalError::new(format!("float() cannot convert {}", show(&a.value)), a.span);
    let f = match &a.value {
        Value::Number(n) => Num::of(n).as_f64(),
        // Rust's float syntax, minus the non-finite spellings (`inf`, `NaN`) JSON lacks.
        Value::String(s) => s.parse::<f64>().map_err(|_| fail())?,
        _ => return Err(fail()),
    };
    Num::Float(f).to_value().ok_or_else(fail)
}

/// `get`'s dotted-path walk: an all-digit segment indexes an array, any segment looks up an
/// object key; an empty path is the value itself. `None` when anything is missing.
pub(crate) fn get_path<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    if path.is_empty() {
        return Some(value);
    }
    let mut current = value;
    for segment in path.split('.') {
        current = match current {
            Value::Object(map) => map.get(segment)?,
            Value::Array(items)
                if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) =>
            {
                items.get(segment.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(current)
}

/// `needle in haystack`: array membership by deep equality, substring, or object key
/// presence. `None` for any other pairing (an evaluation error).
pub(crate) fn membership(needle: &Value, haystack: &Value) -> Option<bool> {
    match (needle, haystack) {
        (_, Value::Array(items)) => Some(items.iter().any(|item| deep_equal(needle, item))),
        (Value::String(n), Value::String(h)) => Some(h.contains(n.as_str())),
        (Value::String(n), Value::Object(map)) => Some(map.contains_key(n)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::context::MapContext;
    use crate::{EvalError, Span, eval, parse};
    use serde_json::{Value, json};

    fn ctx() -> MapContext {
        MapContext::from_value(json!({
            "params": {"o": {"a": {"b": [10, {"c": "deep"}]}, "n": null}, "l": [true, false]},
            "nodes": {
                "build": {"status": "succeeded", "outputs": {"log": "ok", "empty": null}},
                "lint": {"status": "failed", "outputs": {}},
            },
        }))
        .with_state("docs", "skipped")
        .with_state("deploy", "blocked")
        .with_state("wait", "running")
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
    fn len_and_count() {
        assert_eq!(ev("len('héllo')"), json!(5));
        assert_eq!(ev("len('😀')"), json!(1));
        assert_eq!(ev("len([1, 2])"), json!(2));
        assert_eq!(ev("len(params.o)"), json!(2));
        assert_eq!(ev("len('')"), json!(0));
        assert_eq!(ev("count([1, 2, 3])"), json!(3));
        let e = fails("len(3)");
        assert_eq!(
            e.message,
            "len() argument 1 must be a string, array or object, found number"
        );
        assert_eq!(e.span, Span::new(4, 5));
        fails("len(null)");
        fails("count('abc')");
        fails("count(params.o)");
    }

    #[test]
    fn contains() {
        assert_eq!(ev("contains('abc', 'b')"), json!(true));
        assert_eq!(ev("contains('abc', 'd')"), json!(false));
        assert_eq!(ev("contains([1, [2]], [2.0])"), json!(true));
        assert_eq!(ev("contains([1], 2)"), json!(false));
        assert_eq!(ev("contains(params.o, 'a')"), json!(true));
        assert_eq!(ev("contains(params.o, 'z')"), json!(false));
        assert_eq!(
            fails("contains('abc', 1)").message,
            "contains() cannot look for a number in a string"
        );
        fails("contains(params.o, 1)");
        fails("contains(1, 1)");
    }

    #[test]
    fn string_functions() {
        assert_eq!(ev("startswith('hello', 'he')"), json!(true));
        assert_eq!(ev("startswith('hello', 'lo')"), json!(false));
        assert_eq!(ev("endswith('hello', 'lo')"), json!(true));
        assert_eq!(ev("endswith('hello', 'he')"), json!(false));
        assert_eq!(ev("lower('ÀbC')"), json!("àbc"));
        assert_eq!(ev("upper('àbc')"), json!("ÀBC"));
        assert_eq!(ev("trim('  a b \\n')"), json!("a b"));
        fails("startswith(1, 'a')");
        fails("endswith('a', null)");
        fails("lower(1)");
        fails("upper([])");
        fails("trim(true)");
    }

    #[test]
    fn matches() {
        assert_eq!(ev("matches('error: 42', '[0-9]+')"), json!(true));
        // Unanchored: a match anywhere counts, anchors are explicit.
        assert_eq!(ev("matches('abc', 'b')"), json!(true));
        assert_eq!(ev("matches('abc', '^b')"), json!(false));
        assert_eq!(ev("matches('ABC', '(?i)abc')"), json!(true));
        let e = fails("matches('a', '(')");
        assert!(
            e.message
                .starts_with("matches(): invalid regular expression"),
            "{e}"
        );
        assert_eq!(e.span, Span::new(13, 16));
        // Patterns too large to compile within the size limit are errors, not hangs.
        assert!(
            fails("matches('a', '\\\\w{1000}{1000}')")
                .message
                .contains("invalid")
        );
        fails("matches(1, 'a')");
    }

    #[test]
    fn split_and_join() {
        assert_eq!(ev("split('a,b,,c', ',')"), json!(["a", "b", "", "c"]));
        assert_eq!(ev("split('abc', ',')"), json!(["abc"]));
        assert_eq!(ev("split('', ',')"), json!([""]));
        assert_eq!(ev("split('a::b', '::')"), json!(["a", "b"]));
        assert_eq!(
            fails("split('abc', '')").message,
            "split(): empty separator"
        );
        assert_eq!(
            ev("join(['a', 1, 2.0, true, null, [1]], '-')"),
            json!("a-1-2-true--[1]")
        );
        assert_eq!(ev("join([], ',')"), json!(""));
        fails("join('abc', ',')");
        fails("join([], 1)");
        // Size caps stop join/split amplification: each `sq` squares the length.
        let sq = |x: &str| format!("join(split({x}, 'a'), {x})");
        let a16 = format!("'{}'", "a".repeat(16));
        assert_eq!(ev(&sq(&sq(&a16))).as_str().map(str::len), Some(65_536));
        let e = fails(&sq(&sq(&sq(&a16))));
        assert_eq!(e.message, "join(): result longer than 8388608 bytes");
        let big = format!("'{}'", "a".repeat(1448));
        let e = fails(&format!("split({}, 'a')", sq(&big)));
        assert_eq!(e.message, "split(): more than 1048576 parts");
    }

    #[test]
    fn conversions() {
        assert_eq!(ev("int('12')"), json!(12));
        assert_eq!(ev("int('-12')"), json!(-12));
        assert_eq!(ev("int('+7')"), json!(7));
        assert_eq!(ev("int(3.7)"), json!(3));
        assert_eq!(ev("int(-3.7)"), json!(-3));
        assert_eq!(ev("int(5)"), json!(5));
        assert_eq!(
            fails("int(true)").message,
            "int() argument 1 must be a number or string, found boolean"
        );
        for bad in [
            "int('3.7')",
            "int('')",
            "int(' 1')",
            "int('1e3')",
            "int('-')",
        ] {
            assert!(
                fails(bad).message.starts_with("int() cannot convert"),
                "{bad}"
            );
        }
        assert_eq!(fails("int('abc')").message, "int() cannot convert 'abc'");
        fails("int('99999999999999999999')");
        fails("int(1e300)");
        fails("int(null)");
        assert_eq!(ev("float('2.5')"), json!(2.5));
        assert_eq!(ev("float('-1e3')"), json!(-1000.0));
        assert_eq!(ev("float(3)"), json!(3.0));
        assert!(ev("float(3)").is_f64());
        for bad in [
            "float('inf')",
            "float('NaN')",
            "float('x')",
            "float('1e999')",
        ] {
            assert!(
                fails(bad).message.starts_with("float() cannot convert"),
                "{bad}"
            );
        }
        fails("float(true)");
        assert_eq!(ev("bool('true')"), json!(true));
        assert_eq!(ev("bool('false')"), json!(false));
        assert_eq!(ev("bool(false)"), json!(false));
        assert_eq!(fails("bool('yes')").message, "bool() cannot convert 'yes'");
        fails("bool('True')");
        fails("bool(1)");
        assert_eq!(ev("str(1.0)"), json!("1"));
        assert_eq!(ev("str(null)"), json!(""));
        assert_eq!(ev("str(true)"), json!("true"));
        assert_eq!(ev("str([1, 'a'])"), json!("[1,\"a\"]"));
        assert_eq!(ev("str('x')"), json!("x"));
    }

    #[test]
    fn json_function() {
        assert_eq!(ev("json('{\"a\": [1, 2.5]}')"), json!({"a": [1, 2.5]}));
        assert_eq!(ev("json('null')"), json!(null));
        assert_eq!(ev("json('\"s\"')"), json!("s"));
        assert!(
            fails("json('{')")
                .message
                .starts_with("json(): invalid JSON")
        );
        fails("json(1)");
        // serde_json's recursion limit keeps hostile input from overflowing the stack.
        let deep = format!("json('{}')", "[".repeat(10_000));
        assert!(fails(&deep).message.starts_with("json(): invalid JSON"));
    }

    #[test]
    fn get_function() {
        assert_eq!(ev("get(params.o, 'a.b.0')"), json!(10));
        assert_eq!(ev("get(params.o, 'a.b.1.c')"), json!("deep"));
        assert_eq!(ev("get(params.o, 'a.b.2')"), json!(null));
        assert_eq!(ev("get(params.o, 'a.b.2', 'fb')"), json!("fb"));
        assert_eq!(ev("get(params.o, 'a.x.y', 0)"), json!(0));
        assert_eq!(ev("get(params.o, 'a.b.c', 0)"), json!(0));
        assert_eq!(ev("get(params.o, 'a.b.-1', 0)"), json!(0));
        assert_eq!(
            ev("get(params.o, 'a.b.99999999999999999999999', 0)"),
            json!(0)
        );
        // A present null is a value, not a missing key.
        assert_eq!(ev("get(params.o, 'n', 1)"), json!(null));
        assert_eq!(ev("get(params.o, '')"), ev("params.o"));
        assert_eq!(ev("get(5, 'a', 'fb')"), json!("fb"));
        assert_eq!(ev("get(null, 'a')"), json!(null));
        assert_eq!(ev("get([[1, 2]], '0.1')"), json!(2));
        assert_eq!(ev("get(json('{\"0\": \"k\"}'), '0')"), json!("k"));
        fails("get(params.o, 1)");
    }

    #[test]
    fn default_function() {
        assert_eq!(ev("default(null, 1)"), json!(1));
        assert_eq!(ev("default(params.missing, 'x')"), json!("x"));
        assert_eq!(ev("default(nodes.build.outputs.empty, 2)"), json!(2));
        assert_eq!(ev("default(false, true)"), json!(false));
        assert_eq!(ev("default(0, 1)"), json!(0));
        assert_eq!(ev("default('', 'x')"), json!(""));
        // An undeclared root is still an error: default() covers absent values only.
        assert_eq!(fails("default(nope.x, 1)").message, "unknown name 'nope.x'");
    }

    #[test]
    fn any_and_all() {
        assert_eq!(ev("any([false, true])"), json!(true));
        assert_eq!(ev("any([false])"), json!(false));
        assert_eq!(ev("any([])"), json!(false));
        assert_eq!(ev("all([true, true])"), json!(true));
        assert_eq!(ev("all([true, false])"), json!(false));
        assert_eq!(ev("all([])"), json!(true));
        assert_eq!(ev("all(params.l)"), json!(false));
        assert_eq!(
            fails("any([true, 1])").message,
            "any() needs an array of booleans, element 1 is number"
        );
        fails("all([false, 'x'])");
        fails("all('x')");
    }

    #[test]
    fn node_states() {
        assert_eq!(ev("succeeded('build')"), json!(true));
        assert_eq!(ev("failed('build')"), json!(false));
        assert_eq!(ev("failed('lint')"), json!(true));
        assert_eq!(ev("skipped('docs')"), json!(true));
        assert_eq!(ev("skipped('lint')"), json!(false));
        assert_eq!(ev("failed('deploy')"), json!(true));
        assert_eq!(
            ev("succeeded('wait') || failed('wait') || skipped('wait')"),
            json!(false)
        );
        let e = fails("succeeded('nope')");
        assert_eq!(e.message, "unknown node 'nope'");
        assert_eq!(e.span, Span::new(10, 16));
        fails("failed(1)");
    }

    #[test]
    fn outputs() {
        assert_eq!(ev("output('build', 'log')"), json!("ok"));
        assert_eq!(ev("output('build', 'missing')"), json!(null));
        assert_eq!(ev("output('lint', 'x')"), json!(null));
        assert_eq!(
            fails("output('nope', 'x')").message,
            "unknown output 'x' of node 'nope'"
        );
        fails("output('build', 1)");
    }

    #[test]
    fn unknown_functions_and_arity_at_run_time() {
        let e = fails("now()");
        assert_eq!(e.message, "unknown function 'now'");
        assert_eq!(e.span, Span::new(0, 5));
        assert_eq!(
            fails("len('a', 'b')").message,
            "len() takes 1 arguments, got 2"
        );
        assert_eq!(fails("get(1)").message, "get() takes 2-3 arguments, got 1");
        // Arguments are evaluated before the call, so their errors come first.
        assert_eq!(fails("now(1/0)").message, "division by zero");
    }
}

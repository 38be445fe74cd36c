//! Operations on JSON values shared by the evaluator and the functions: type names, numeric
//! classification, deep equality, ordering and template stringification.
//!
//! AGX values are plain `serde_json::Value`s. Numbers are either integers (`i64`) or floats;
//! the two compare numerically (`1 == 1.0`), exactly, without rounding through `f64`.

use std::cmp::Ordering;

use serde_json::{Number, Value};

/// The longest string an operation may build (`+`, `join`), in bytes (8 MiB).
///
/// `join(split(s, "a"), s)` squares the size of `s`, and nesting it repeats that, so without
/// a cap a short expression could exhaust memory. Strings read from the context are not
/// limited; only strings AGX itself builds are.
pub const MAX_STRING_LEN: usize = 8 << 20;

/// The longest array an operation may build (`+`, `split`): 1,048,576 elements.
pub const MAX_ARRAY_LEN: usize = 1 << 20;

/// The AGX name of a value's type, used in error messages.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A number as arithmetic sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    /// Integers outside `i64` (large `u64`s from JSON input) are treated as floats.
    pub(crate) fn of(n: &Number) -> Num {
        match n.as_i64() {
            Some(i) => Num::Int(i),
            None => Num::Float(n.as_f64().unwrap_or(f64::NAN)),
        }
    }

    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// Back to JSON; `None` when the result is not finite (JSON has no NaN or infinity).
    pub(crate) fn to_value(self) -> Option<Value> {
        match self {
            Num::Int(i) => Some(Value::from(i)),
            Num::Float(f) => Number::from_f64(f).map(Value::Number),
        }
    }
}

/// An exact integer view of a JSON number, if it is one (`i64` or `u64`).
fn exact_int(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

/// Compares an exact integer with a finite float without rounding the integer.
fn cmp_int_float(i: i128, f: f64) -> Ordering {
    // 2^64 and -2^63 bound every integer JSON gives us.
    const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;
    const MINUS_TWO_POW_63: f64 = -9_223_372_036_854_775_808.0;
    if f.is_nan() {
        return Ordering::Less;
    }
    if f >= TWO_POW_64 {
        return Ordering::Less;
    }
    if f < MINUS_TWO_POW_63 {
        return Ordering::Greater;
    }
    // In range, so the truncation is exact.
    let t = f.trunc();
    let ti = t as i128;
    match i.cmp(&ti) {
        Ordering::Equal => {
            if f > t {
                Ordering::Less
            } else if f < t {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        }
        other => other,
    }
}

/// Numeric comparison of two JSON numbers (exact across integers and floats).
pub fn compare_numbers(a: &Number, b: &Number) -> Ordering {
    match (exact_int(a), exact_int(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(x), None) => cmp_int_float(x, b.as_f64().unwrap_or(f64::NAN)),
        (None, Some(y)) => cmp_int_float(y, a.as_f64().unwrap_or(f64::NAN)).reverse(),
        (None, None) => {
            let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
    }
}

/// Total deep equality: different types are unequal (never an error), numbers compare
/// numerically, arrays element-wise, objects as maps regardless of key order.
pub fn deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Ordering::Equal,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| deep_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| deep_equal(v, w)))
        }
        _ => false,
    }
}

/// Ordering for `<`, `<=`, `>`, `>=`: numbers numerically, strings by Unicode code point
/// (which is byte order for UTF-8); `None` for any other pair, which is an evaluation error.
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => Some(compare_numbers(x, y)),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// Formats a number for templates: integers as-is, integral floats without a fraction
/// (`1.0` -> `1`) while they are exactly representable, otherwise the shortest form that
/// round-trips (`2.5`, `1e-7`, `1e+20`).
pub fn format_number(n: &Number) -> String {
    if let Some(f) = n.as_f64().filter(|_| n.is_f64()) {
        // 2^53: beyond it not every integer is a float, and ryu's exponent form is clearer.
        const EXACT: f64 = 9_007_199_254_740_992.0;
        if f.fract() == 0.0 && f.abs() <= EXACT {
            return format!("{}", f as i64);
        }
    }
    n.to_string()
}

/// Template interpolation: strings as-is, `null` as the empty string, booleans as
/// `true`/`false`, numbers per [`format_number`], arrays and objects as compact JSON whose
/// numbers follow the same rule.
pub fn stringify(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => {
            let mut out = String::new();
            write_compact(&mut out, other);
            out
        }
    }
}

fn write_compact(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&format_number(n)),
        Value::String(s) => write_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_compact(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, k);
                out.push(':');
                write_compact(out, v);
            }
            out.push('}');
        }
    }
}

fn write_json_string(out: &mut String, s: &str) {
    // serde_json's string escaping is the JSON standard's; serialising a &str cannot fail.
    match serde_json::to_string(s) {
        Ok(quoted) => out.push_str(&quoted),
        Err(_) => out.push_str("\"\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_exactly() {
        assert!(deep_equal(&json!(1), &json!(1.0)));
        assert!(!deep_equal(&json!(1), &json!(1.5)));
        // 2^53 + 1 is not a float; rounding through f64 would call these equal.
        assert!(!deep_equal(
            &json!(9_007_199_254_740_993_i64),
            &json!(9_007_199_254_740_992.0)
        ));
        assert!(!deep_equal(&json!(u64::MAX), &json!(u64::MAX - 1)));
        assert!(deep_equal(&json!(u64::MAX), &json!(u64::MAX)));
        assert_eq!(compare(&json!(-1), &json!(u64::MAX)), Some(Ordering::Less));
        assert_eq!(compare(&json!(2), &json!(1.5)), Some(Ordering::Greater));
        assert_eq!(compare(&json!(1), &json!(1.5)), Some(Ordering::Less));
        assert_eq!(compare(&json!(-1), &json!(-1.5)), Some(Ordering::Greater));
        assert_eq!(
            compare(&json!(1e300), &json!(i64::MAX)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare(&json!(-1e300), &json!(i64::MIN)),
            Some(Ordering::Less)
        );
        assert_eq!(compare(&json!(0.5), &json!(0.25)), Some(Ordering::Greater));
    }

    #[test]
    fn deep_equality() {
        assert!(deep_equal(
            &json!({"a": 1, "b": [1, 2]}),
            &json!({"b": [1.0, 2], "a": 1})
        ));
        assert!(!deep_equal(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!deep_equal(&json!({"a": 1}), &json!({"b": 1})));
        assert!(!deep_equal(&json!([1, 2]), &json!([2, 1])));
        assert!(!deep_equal(&json!(null), &json!(false)));
        assert!(!deep_equal(&json!("1"), &json!(1)));
        assert!(deep_equal(&json!(null), &json!(null)));
    }

    #[test]
    fn ordering() {
        assert_eq!(compare(&json!("a"), &json!("b")), Some(Ordering::Less));
        // Code point order: 'Z' (U+5A) < 'a' (U+61) < 'é' (U+E9) < '😀'.
        assert_eq!(compare(&json!("Z"), &json!("a")), Some(Ordering::Less));
        assert_eq!(compare(&json!("é"), &json!("😀")), Some(Ordering::Less));
        assert_eq!(compare(&json!("a"), &json!(1)), None);
        assert_eq!(compare(&json!(true), &json!(false)), None);
        assert_eq!(compare(&json!(null), &json!(null)), None);
    }

    #[test]
    fn stringify_rules() {
        assert_eq!(stringify(&json!("x y")), "x y");
        assert_eq!(stringify(&json!(null)), "");
        assert_eq!(stringify(&json!(true)), "true");
        assert_eq!(stringify(&json!(false)), "false");
        assert_eq!(stringify(&json!(1.0)), "1");
        assert_eq!(stringify(&json!(-0.0)), "0");
        assert_eq!(stringify(&json!(2.5)), "2.5");
        assert_eq!(stringify(&json!(42)), "42");
        assert_eq!(stringify(&json!(-7)), "-7");
        assert_eq!(stringify(&json!(0.1)), "0.1");
        assert_eq!(stringify(&json!(1e-7)), "1e-7");
        assert_eq!(stringify(&json!(1e20)), "1e+20");
        assert_eq!(stringify(&json!(u64::MAX)), "18446744073709551615");
        assert_eq!(
            stringify(&json!({"a": [1.0, "x\"y", null, true], "b": {}})),
            r#"{"a":[1,"x\"y",null,true],"b":{}}"#
        );
        assert_eq!(stringify(&json!([])), "[]");
    }
}

//! Small helpers both wire formats share: reading fields out of JSON answers, and parsing a
//! tool call's arguments (malformed JSON is a classified failure with the raw text).

use serde_json::Value;

use crate::error::{FailureClass, ProviderError};

/// The string at a JSON pointer, if it is one.
pub(crate) fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// The most tokens one answer may report: far beyond any context window, far below what
/// would wrap a run's totals. A larger count is a lie, not a bill.
pub const MAX_REPORTED_TOKENS: u64 = 100_000_000;

/// A token count a provider reported at `pointer`: `None` when absent or `null` (usage
/// unknown); a `model_error` with the value as evidence when it is negative, fractional,
/// not a number, or beyond [`MAX_REPORTED_TOKENS`]: absurd usage is never read as zero.
pub(crate) fn token_count(v: &Value, pointer: &str) -> Result<Option<u64>, ProviderError> {
    match v.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(n) => match n.as_u64() {
            Some(count) if count <= MAX_REPORTED_TOKENS => Ok(Some(count)),
            _ => Err(ProviderError::new(
                FailureClass::ModelError,
                format!(
                    "the provider reported an absurd token count at `{pointer}` (a whole number from 0 to {MAX_REPORTED_TOKENS} was expected)"
                ),
            )
            .with_evidence(n.to_string())),
        },
    }
}

/// A cost a provider reported: `None` when absent; a finite, non-negative number of
/// dollars below a bound, or a `model_error`.
pub(crate) fn reported_cost(v: Option<&Value>) -> Result<Option<f64>, ProviderError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(n) => match n.as_f64() {
            Some(usd) if usd.is_finite() && (0.0..1e6).contains(&usd) => Ok(Some(usd)),
            _ => Err(ProviderError::new(
                FailureClass::ModelError,
                "the provider reported an absurd cost (a number of dollars from 0 to 1,000,000 was expected)",
            )
            .with_evidence(n.to_string())),
        },
    }
}

/// Parses the arguments of a call of `tool`: empty text is `{}` (a call without
/// parameters); anything but a JSON object is a `model_error` whose evidence is the raw text.
pub(crate) fn parse_arguments(tool: &str, raw: &str) -> Result<Value, ProviderError> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(ProviderError::new(
            FailureClass::ModelError,
            format!(
                "the arguments of the `{tool}` call are not a JSON object (got {})",
                kind(&other)
            ),
        )
        .with_evidence(raw)),
        Err(e) => Err(ProviderError::new(
            FailureClass::ModelError,
            format!("the arguments of the `{tool}` call are malformed JSON: {e}"),
        )
        .with_evidence(raw)),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse_or_fail_with_the_raw_text() {
        assert_eq!(parse_arguments("t", " ").unwrap(), serde_json::json!({}));
        assert_eq!(
            parse_arguments("t", r#"{"a":1}"#).unwrap(),
            serde_json::json!({"a": 1})
        );
        let e = parse_arguments("t", r#"{"a":"#).unwrap_err();
        assert_eq!(e.class, FailureClass::ModelError);
        assert_eq!(e.evidence.as_deref(), Some(r#"{"a":"#));
        let e = parse_arguments("t", "[1]").unwrap_err();
        assert!(e.message.contains("got an array"), "{}", e.message);
    }

    #[test]
    fn token_counts_are_whole_bounded_numbers_or_a_classified_failure() {
        let v = serde_json::json!({
            "ok": 12, "null": null, "negative": -1, "fraction": 1.5, "text": "12",
            "huge": u64::MAX, "big_float": 1e300
        });
        assert_eq!(token_count(&v, "/ok").unwrap(), Some(12));
        assert_eq!(token_count(&v, "/missing").unwrap(), None);
        assert_eq!(token_count(&v, "/null").unwrap(), None);
        for absurd in ["/negative", "/fraction", "/text", "/huge", "/big_float"] {
            let e = token_count(&v, absurd).unwrap_err();
            assert_eq!(e.class, FailureClass::ModelError, "{absurd}");
            assert!(e.evidence.is_some(), "{absurd}");
        }
        assert_eq!(reported_cost(v.get("ok")).unwrap(), Some(12.0));
        assert!(reported_cost(v.get("negative")).is_err());
        assert!(reported_cost(v.get("big_float")).is_err());
        assert_eq!(reported_cost(None).unwrap(), None);
    }
}

//! Small helpers both wire formats share: reading fields out of JSON answers, and parsing a
//! tool call's arguments (malformed JSON is a classified failure with the raw text).

use serde_json::Value;

use crate::error::{FailureClass, ProviderError};

/// The string at a JSON pointer, if it is one.
pub(crate) fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// The unsigned integer at a JSON pointer, 0 when absent.
pub(crate) fn u64_at(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
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
}

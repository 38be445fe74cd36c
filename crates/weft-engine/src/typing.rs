//! Typed boundaries: a value against its declared AGS `type` (DIGEST §1.11, `RT031`) and
//! `schema` (JSON Schema draft 2020-12, `RT032`), for node inputs and outputs and, at run
//! start, params (`AG302`).
//!
//! Schemas never reach outside the document: they compile under the same rules as
//! `json_schema` criteria (`weft_criteria::compile_schema`), when the node is prepared.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use jsonschema::Validator;
use serde_json::Value;

/// How many schema violations a message quotes.
const MAX_QUOTED: usize = 3;

/// Does `value` have the runtime shape of the AGS value type `ty`? Unknown types accept
/// anything (the validator reports them).
pub fn type_matches(ty: &str, value: &Value) -> bool {
    match ty {
        "string" | "text" | "markdown" | "file" | "directory" | "reference" => value.is_string(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64()
                || value.is_u64()
                || value
                    .as_f64()
                    .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "file_set" => value
            .as_array()
            .is_some_and(|a| a.iter().all(Value::is_string)),
        "artifact" => value.get("id").is_some_and(Value::is_string),
        _ => true,
    }
}

/// The JSON kind of a value, for messages.
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Compiles an inline schema under weft's rules for every declared schema
/// (`weft_criteria::compile_schema`: draft 2020-12, formats asserted, references inside the
/// schema only, patterns on the linear-time engine under the default size cap).
pub fn compile(schema: &Value) -> Result<Validator, String> {
    weft_criteria::compile_schema(schema, weft_criteria::Limits::default().max_regex_size)
}

/// Schemas compiled in this process, by their text. A schema is compiled when its node is
/// prepared and was compiled again at every check of a value against it (each typed input
/// and output, each `emit_output` of an agent): 7% of an agent-loop run's CPU (W10,
/// `docs/BENCHMARKS.md`). A compiled schema depends on its text alone (the rules and the
/// regex cap are fixed), so runs of one process share it.
static COMPILED: LazyLock<Compiled> = LazyLock::new(Compiled::default);

/// How many compiled schemas [`Compiled`] holds before it starts again empty.
const MAX_COMPILED: usize = 256;

/// A schema's text above this many bytes is compiled at each use, not kept.
const MAX_COMPILED_TEXT: usize = 64 * 1024;

/// Compiled schemas by their text, at most [`MAX_COMPILED`].
#[derive(Default)]
struct Compiled(Mutex<HashMap<String, Arc<Validator>>>);

impl Compiled {
    fn get_or_compile(&self, schema: &Value) -> Result<Arc<Validator>, String> {
        let text = schema.to_string();
        let kept = || self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(validator) = kept().get(&text) {
            return Ok(Arc::clone(validator));
        }
        let validator = Arc::new(compile(schema)?);
        if text.len() <= MAX_COMPILED_TEXT {
            let mut kept = kept();
            if kept.len() >= MAX_COMPILED {
                kept.clear();
            }
            kept.insert(text, Arc::clone(&validator));
        }
        Ok(validator)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// [`compile`], once per schema text in this process (a schema that does not compile is
/// compiled again at each use: its error is the answer, and such a schema is refused when
/// its node is prepared).
pub fn compiled(schema: &Value) -> Result<Arc<Validator>, String> {
    COMPILED.get_or_compile(schema)
}

/// `Err` with the first violations (instance path and message) when `value` fails `schema`.
pub fn check_schema(schema: &Value, value: &Value) -> Result<(), String> {
    let validator = compiled(schema)?;
    let mut quoted = Vec::new();
    let mut total = 0usize;
    for e in validator.iter_errors(value) {
        total += 1;
        if quoted.len() < MAX_QUOTED {
            let at = e.instance_path().as_str().to_string();
            let at = if at.is_empty() { "/".to_string() } else { at };
            let mut msg = e.to_string();
            if msg.len() > 200 {
                let mut cut = 200;
                while !msg.is_char_boundary(cut) {
                    cut -= 1;
                }
                msg.truncate(cut);
                msg.push('…');
            }
            quoted.push(format!("at {at}: {msg}"));
        }
    }
    if total == 0 {
        Ok(())
    } else {
        Err(format!(
            "{total} schema violation(s): {}",
            quoted.join("; ")
        ))
    }
}

/// A declared binding's type and schema, checked at a node boundary.
#[derive(Clone, Debug, PartialEq)]
pub struct Typed {
    pub name: String,
    pub ty: Option<String>,
    pub schema: Option<Value>,
}

impl Typed {
    /// Checks `value`: `Err((code, message))` with `RT031` (type) or `RT032` (schema).
    /// `what` is `input` or `output`.
    pub fn check(&self, what: &str, value: &Value) -> Result<(), (&'static str, String)> {
        if let Some(ty) = &self.ty
            && !type_matches(ty, value)
        {
            return Err((
                "RT031",
                format!(
                    "{what} `{}` is {}, not of its declared type `{ty}`",
                    self.name,
                    kind_of(value)
                ),
            ));
        }
        if let Some(schema) = &self.schema
            && let Err(e) = check_schema(schema, value)
        {
            return Err((
                "RT032",
                format!("{what} `{}` does not match its schema: {e}", self.name),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn types() {
        assert!(type_matches("integer", &json!(3)));
        assert!(type_matches("integer", &json!(3.0)));
        assert!(!type_matches("integer", &json!(3.5)));
        assert!(!type_matches("string", &json!(1)));
        assert!(type_matches("file_set", &json!(["a", "b"])));
        assert!(!type_matches("file_set", &json!(["a", 1])));
        assert!(type_matches("artifact", &json!({"id": "x"})));
        assert!(type_matches("any", &json!(null)));
    }

    #[test]
    fn schemas_are_local_and_violations_quoted() {
        let s = json!({"type": "object", "required": ["n"], "properties": {"n": {"minimum": 1}}});
        assert!(check_schema(&s, &json!({"n": 2})).is_ok());
        let e = check_schema(&s, &json!({"n": 0})).unwrap_err();
        assert!(e.contains("at /n"), "{e}");
        let remote = json!({"$ref": "https://example.com/s.json"});
        assert!(
            compile(&remote)
                .unwrap_err()
                .contains("not a local reference")
        );
        let t = Typed {
            name: "x".into(),
            ty: Some("integer".into()),
            schema: Some(json!({"maximum": 5})),
        };
        assert_eq!(t.check("output", &json!("a")).unwrap_err().0, "RT031");
        assert_eq!(t.check("output", &json!(9)).unwrap_err().0, "RT032");
        assert!(t.check("output", &json!(4)).is_ok());
    }

    #[test]
    fn a_schema_is_compiled_once_per_text_and_a_failing_one_each_time() {
        // Its own cache: the process's is shared with the other tests, which may fill it.
        let cache = Compiled::default();
        let s = json!({"type": "object", "required": ["a"]});
        let first = cache.get_or_compile(&s).unwrap();
        assert!(Arc::ptr_eq(&first, &cache.get_or_compile(&s).unwrap()));
        // Another text is another schema.
        let other = json!({"type": "object", "required": ["a", "b"]});
        assert!(!Arc::ptr_eq(&first, &cache.get_or_compile(&other).unwrap()));
        // A schema that does not compile says so at every use, and is not kept.
        let remote = json!({"$ref": "https://example.com/s.json"});
        for _ in 0..2 {
            assert!(cache.get_or_compile(&remote).is_err());
        }
        assert_eq!(cache.len(), 2);
        // The checks through the process's cache keep their verdicts, the second time too.
        for _ in 0..2 {
            assert!(check_schema(&s, &json!({"a": 1})).is_ok());
            assert!(check_schema(&other, &json!({"a": 1})).is_err());
            assert!(check_schema(&remote, &json!(1)).is_err());
        }
    }

    #[test]
    fn the_compiled_schemas_kept_are_bounded() {
        // Its own cache: the process's is shared with the other tests.
        let cache = Compiled::default();
        for i in 0..(MAX_COMPILED + 10) {
            cache.get_or_compile(&json!({"minimum": i})).unwrap();
            assert!(cache.len() <= MAX_COMPILED);
        }
        let again = json!({"minimum": MAX_COMPILED + 9});
        assert!(Arc::ptr_eq(
            &cache.get_or_compile(&again).unwrap(),
            &cache.get_or_compile(&again).unwrap()
        ));
        let big = json!({"description": "x".repeat(MAX_COMPILED_TEXT), "type": "string"});
        assert!(!Arc::ptr_eq(
            &cache.get_or_compile(&big).unwrap(),
            &cache.get_or_compile(&big).unwrap()
        ));
    }
}

//! The one output mechanism of the model agent: an `emit_output` tool whose parameters are
//! the node's declared outputs (each typed from its AGS `type`, DIGEST §1.11), and the check
//! of a call's arguments against them.

use serde_json::{Map, Value, json};
use weft_engine::agent::OutputDecl;
use weft_engine::agent::replay::EMIT_OUTPUT;

use crate::chat::ToolDef;

/// The JSON Schema of a value of AGS type `ty` (no type, `json`, `any` and unknown types:
/// any value).
pub fn schema_of_type(ty: Option<&str>) -> Value {
    match ty {
        Some("string" | "text" | "markdown" | "file" | "directory" | "reference") => {
            json!({"type": "string"})
        }
        Some("number") => json!({"type": "number"}),
        Some("integer") => json!({"type": "integer"}),
        Some("boolean") => json!({"type": "boolean"}),
        Some("object") => json!({"type": "object"}),
        Some("array") => json!({"type": "array"}),
        Some("file_set") => json!({"type": "array", "items": {"type": "string"}}),
        Some("artifact") => json!({
            "type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]
        }),
        _ => json!({}),
    }
}

/// The `emit_output` tool of a node: one property per declared output (and `decision`,
/// one of `labels`, for an agent-evaluated decision), required as declared, nothing else.
///
/// The model is always shown the labels as an `enum` (a server that constrains decoding to
/// the schema then answers with one); what is accepted back is [`accepting`]'s.
pub fn emit_output_tool(
    outputs: &[OutputDecl],
    labels: &[String],
    default: Option<&str>,
) -> ToolDef {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for o in outputs {
        properties.insert(o.name.clone(), schema_of_type(o.type_name.as_deref()));
        if o.required {
            required.push(Value::String(o.name.clone()));
        }
    }
    if !labels.is_empty() {
        let mut decision = json!({"type": "string", "enum": labels});
        if let Some(d) = default {
            decision["description"] = json!(format!(
                "one of: {}; anything else takes the default branch `{d}`",
                labels.join(", ")
            ));
        }
        properties.insert("decision".into(), decision);
        required.push(json!("decision"));
    }
    ToolDef {
        name: EMIT_OUTPUT.to_string(),
        description: "Report the outputs of this task. Call it exactly once, when the work is \
                      done, with every required output; this is the only way to deliver them."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }),
    }
}

/// The output a final text answer delivers ([`crate::LoopSettings::text_answer`]): the name of
/// the node's one declared output when it is of a text type (`string`, `text`, `markdown`)
/// and the node is not a decision; `None` otherwise (then only `emit_output` delivers).
pub fn text_output<'a>(outputs: &'a [OutputDecl], labels: &[String]) -> Option<&'a str> {
    match outputs {
        [only]
            if labels.is_empty()
                && matches!(
                    only.type_name.as_deref(),
                    Some("string" | "text" | "markdown")
                ) =>
        {
            Some(only.name.as_str())
        }
        _ => None,
    }
}

/// What an answer is checked against: `tool` itself, except that with a `default_branch`
/// `decision` may be any string — the engine takes the default for a label outside the
/// branches and records `RT022`, where the enum would make the stray label a failed attempt.
pub fn accepting(tool: &ToolDef, default: Option<&str>) -> ToolDef {
    let mut accept = tool.clone();
    if default.is_some()
        && let Some(decision) = accept.parameters.pointer_mut("/properties/decision")
        && let Some(d) = decision.as_object_mut()
    {
        d.remove("enum");
    }
    accept
}

/// The default [`crate::LoopSettings::max_output_bytes`]: 1 MiB of JSON per output value.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1 << 20;

/// [`check_emitted`], then every output value within `max_bytes` of JSON text: a model's
/// answer goes whole into the store, the record and the next nodes' prompts, so a larger
/// one is refused with its size and the limit (the model may try again, shorter).
pub fn check_emitted_within(
    tool: &ToolDef,
    arguments: &Value,
    max_bytes: usize,
) -> Result<Map<String, Value>, String> {
    let outputs = check_emitted(tool, arguments)?;
    for (name, value) in &outputs {
        let size = serde_json::to_string(value).map_or(usize::MAX, |t| t.len());
        if size > max_bytes {
            return Err(format!(
                "output `{name}` is {size} bytes of JSON, beyond the {max_bytes} an output may hold (max_output_bytes in [limits] of weft.toml)"
            ));
        }
    }
    Ok(outputs)
}

/// The outputs an `emit_output` call carries, or why they do not fit the tool's schema.
pub fn check_emitted(tool: &ToolDef, arguments: &Value) -> Result<Map<String, Value>, String> {
    weft_engine::typing::check_schema(&tool.parameters, arguments)?;
    match arguments {
        Value::Object(map) => Ok(map.clone()),
        _ => Err("the arguments are not an object".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(name: &str, required: bool, ty: &str) -> OutputDecl {
        OutputDecl {
            name: name.into(),
            required,
            type_name: Some(ty.into()),
        }
    }

    #[test]
    fn only_a_single_text_output_of_a_non_decision_takes_a_text_answer() {
        assert_eq!(
            text_output(&[decl("answer", true, "text")], &[]),
            Some("answer")
        );
        assert_eq!(text_output(&[decl("n", true, "integer")], &[]), None);
        let two = [decl("a", true, "string"), decl("b", false, "string")];
        assert_eq!(text_output(&two, &[]), None);
        assert_eq!(
            text_output(&[decl("a", true, "string")], &["yes".into()]),
            None
        );
    }

    #[test]
    fn the_tool_types_each_output_and_requires_the_required_ones() {
        let tool = emit_output_tool(
            &[
                decl("summary", true, "markdown"),
                decl("count", false, "integer"),
            ],
            &["yes".into(), "no".into()],
            None,
        );
        assert_eq!(tool.name, "emit_output");
        assert_eq!(tool.parameters["required"], json!(["summary", "decision"]));
        assert_eq!(
            tool.parameters["properties"]["count"],
            json!({"type": "integer"})
        );
        assert!(check_emitted(&tool, &json!({"summary": "ok", "decision": "yes"})).is_ok());
        let e = check_emitted(&tool, &json!({"summary": 3, "decision": "maybe"})).unwrap_err();
        assert!(e.starts_with("2 schema violation(s)"), "{e}");
        let e = check_emitted(&tool, &json!({"decision": "no", "extra": 1})).unwrap_err();
        assert!(e.contains("summary") || e.contains("extra"), "{e}");
    }

    #[test]
    fn an_output_beyond_the_cap_is_refused_with_its_size_and_the_limit() {
        let tool = emit_output_tool(&[decl("summary", true, "string")], &[], None);
        let fits = json!({"summary": "x".repeat(100)});
        assert!(check_emitted_within(&tool, &fits, 1024).is_ok());
        let big = json!({"summary": "x".repeat(2000)});
        let e = check_emitted_within(&tool, &big, 1024).unwrap_err();
        assert!(
            e.contains("`summary` is 2002 bytes") && e.contains("max_output_bytes"),
            "{e}"
        );
    }

    #[test]
    fn with_a_default_branch_a_stray_label_is_delivered_for_the_engine_to_default() {
        let labels = ["ship".to_string(), "hold".to_string()];
        let strict = emit_output_tool(&[], &labels, None);
        assert!(check_emitted(&accepting(&strict, None), &json!({"decision": "maybe"})).is_err());
        let shown = emit_output_tool(&[], &labels, Some("hold"));
        // The model still sees the labels as an enum; a stray one is accepted back.
        assert_eq!(
            shown.parameters["properties"]["decision"]["enum"],
            json!(labels)
        );
        let lenient = accepting(&shown, Some("hold"));
        assert!(check_emitted(&lenient, &json!({"decision": "maybe"})).is_ok());
        assert!(check_emitted(&lenient, &json!({"decision": 3})).is_err());
        let described = shown.parameters["properties"]["decision"]["description"]
            .as_str()
            .unwrap();
        assert!(
            described.contains("ship, hold") && described.contains("`hold`"),
            "{described}"
        );
    }
}

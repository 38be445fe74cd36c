//! Cassettes: recorded model turns the `replay` agent plays back (format
//! [`CASSETTE_FORMAT`], `docs/engine.md` §3f, JSON Schema `schema/cassette-1.schema.json`).
//!
//! A cassette is strict: an unknown member (other than `x-…`), a wrong type or an unknown
//! failure class is an error naming the file and the JSON path (`$.nodes.plan.attempts[0]
//! .turns[1].usage.input_tokens`), never a silent default.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};
use weft_core::FailureClass;

use super::Failure;
use super::budget::Usage;
use super::route::{Model, Tier};

/// The `format` member a cassette must carry.
pub const CASSETTE_FORMAT: &str = "weft-cassette/1";

/// Largest cassette read (bytes).
pub const MAX_CASSETTE_BYTES: u64 = 64 * 1024 * 1024;

/// A loaded cassette.
#[derive(Clone, Debug, PartialEq)]
pub struct Cassette {
    /// Where it was read from (for messages).
    pub source: String,
    /// The routing profile it serves.
    pub models: Vec<Model>,
    /// Per node id, the recorded attempts (attempt `n` is `attempts[n - 1]`).
    pub nodes: BTreeMap<String, Vec<RecordedAttempt>>,
}

/// One recorded attempt.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedAttempt {
    pub turns: Vec<Turn>,
}

/// One model turn: what the model said and called, what it cost, or how it failed.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    /// Tokens and cost of this turn (steps and tool calls are counted by the agent).
    pub usage: Usage,
    /// The provider failed this turn (the attempt fails with this class).
    pub error: Option<Failure>,
}

/// One tool call of a turn. `emit_output` carries the node's outputs in `arguments`.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Map<String, Value>,
    /// The recorded tool result (informational; replay does not run tools).
    pub result: Option<Value>,
}

/// Why a cassette cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CassetteError {
    #[error("cannot read the cassette {file}: {message}")]
    Read { file: String, message: String },
    #[error("invalid cassette {file} at {path}: {message}")]
    Invalid {
        file: String,
        path: String,
        message: String,
    },
}

/// Reads and parses a cassette file.
pub fn load(path: &Path) -> Result<Cassette, CassetteError> {
    let file = path.display().to_string();
    let read_err = |message: String| CassetteError::Read {
        file: file.clone(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| read_err(e.to_string()))?;
    if meta.len() > MAX_CASSETTE_BYTES {
        return Err(read_err(format!(
            "{} bytes, over the limit of {MAX_CASSETTE_BYTES}",
            meta.len()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| read_err(e.to_string()))?;
    parse(&text, &file)
}

/// Parses a cassette's text; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Cassette, CassetteError> {
    let value: Value = serde_json::from_str(text).map_err(|e| CassetteError::Invalid {
        file: file.to_string(),
        path: "$".into(),
        message: format!("not JSON: {e}"),
    })?;
    Reader { file }.cassette(&value)
}

struct Reader<'a> {
    file: &'a str,
}

type R<T> = Result<T, CassetteError>;

impl Reader<'_> {
    fn err<T>(&self, path: &str, message: impl Into<String>) -> R<T> {
        Err(CassetteError::Invalid {
            file: self.file.to_string(),
            path: path.to_string(),
            message: message.into(),
        })
    }

    fn object<'v>(&self, v: &'v Value, path: &str, known: &[&str]) -> R<&'v Map<String, Value>> {
        let Some(m) = v.as_object() else {
            return self.err(path, "expected an object");
        };
        if let Some(k) = m
            .keys()
            .find(|k| !k.starts_with("x-") && !known.contains(&k.as_str()))
        {
            return self.err(
                &format!("{path}.{k}"),
                format!("unknown member (expected one of: {})", known.join(", ")),
            );
        }
        Ok(m)
    }

    fn string(&self, v: &Value, path: &str) -> R<String> {
        match v.as_str() {
            Some(s) => Ok(s.to_string()),
            None => self.err(path, "expected a string"),
        }
    }

    fn count(&self, m: &Map<String, Value>, key: &str, path: &str) -> R<u64> {
        match m.get(key) {
            None => Ok(0),
            Some(v) => match v.as_u64() {
                Some(n) => Ok(n),
                None => self.err(&format!("{path}.{key}"), "expected an integer ≥ 0"),
            },
        }
    }

    fn array<'v>(&self, v: &'v Value, path: &str) -> R<&'v Vec<Value>> {
        match v.as_array() {
            Some(a) => Ok(a),
            None => self.err(path, "expected an array"),
        }
    }

    fn cassette(&self, v: &Value) -> R<Cassette> {
        let root = self.object(v, "$", &["format", "models", "nodes"])?;
        match root.get("format").and_then(Value::as_str) {
            Some(CASSETTE_FORMAT) => {}
            Some(other) => {
                return self.err(
                    "$.format",
                    format!("unsupported format `{other}` (this build reads `{CASSETTE_FORMAT}`)"),
                );
            }
            None => {
                return self.err("$.format", format!("missing: expected `{CASSETTE_FORMAT}`"));
            }
        }
        let models = match root.get("models") {
            None => default_models(),
            Some(list) => {
                let mut out = Vec::new();
                for (i, m) in self.array(list, "$.models")?.iter().enumerate() {
                    out.push(self.model(m, &format!("$.models[{i}]"))?);
                }
                if out.is_empty() {
                    return self.err("$.models", "a cassette must serve at least one model");
                }
                out
            }
        };
        let mut nodes = BTreeMap::new();
        let Some(node_map) = root.get("nodes") else {
            return self.err("$.nodes", "missing: the recorded attempts per node id");
        };
        let Some(node_map) = node_map.as_object() else {
            return self.err(
                "$.nodes",
                "expected an object (node id → recorded attempts)",
            );
        };
        for (id, node) in node_map {
            let path = format!("$.nodes.{id}");
            let n = self.object(node, &path, &["attempts"])?;
            let Some(attempts) = n.get("attempts") else {
                return self.err(&format!("{path}.attempts"), "missing");
            };
            let mut out = Vec::new();
            for (i, a) in self
                .array(attempts, &format!("{path}.attempts"))?
                .iter()
                .enumerate()
            {
                let apath = format!("{path}.attempts[{i}]");
                let a = self.object(a, &apath, &["turns"])?;
                let Some(turns) = a.get("turns") else {
                    return self.err(&format!("{apath}.turns"), "missing");
                };
                let mut ts = Vec::new();
                for (j, t) in self
                    .array(turns, &format!("{apath}.turns"))?
                    .iter()
                    .enumerate()
                {
                    ts.push(self.turn(t, &format!("{apath}.turns[{j}]"))?);
                }
                out.push(RecordedAttempt { turns: ts });
            }
            nodes.insert(id.clone(), out);
        }
        Ok(Cassette {
            source: self.file.to_string(),
            models,
            nodes,
        })
    }

    fn model(&self, v: &Value, path: &str) -> R<Model> {
        let m = self.object(v, path, &["tier", "model", "provider", "context_tokens"])?;
        let tier = match m.get("tier").and_then(Value::as_str).and_then(Tier::parse) {
            Some(t) => t,
            None => {
                return self.err(
                    &format!("{path}.tier"),
                    "expected one of minimal, standard, advanced, frontier",
                );
            }
        };
        let Some(model) = m.get("model") else {
            return self.err(&format!("{path}.model"), "missing");
        };
        let model = self.string(model, &format!("{path}.model"))?;
        let provider = match m.get("provider") {
            Some(p) => self.string(p, &format!("{path}.provider"))?,
            None => "cassette".into(),
        };
        let context_tokens = match m.get("context_tokens") {
            None => None,
            Some(_) => Some(self.count(m, "context_tokens", path)?),
        };
        Ok(Model {
            tier,
            model,
            provider,
            context_tokens,
        })
    }

    fn turn(&self, v: &Value, path: &str) -> R<Turn> {
        let t = self.object(v, path, &["content", "tool_calls", "usage", "error"])?;
        let content = match t.get("content") {
            None | Some(Value::Null) => None,
            Some(c) => Some(self.string(c, &format!("{path}.content"))?),
        };
        let mut tool_calls = Vec::new();
        if let Some(calls) = t.get("tool_calls") {
            for (k, c) in self
                .array(calls, &format!("{path}.tool_calls"))?
                .iter()
                .enumerate()
            {
                let cpath = format!("{path}.tool_calls[{k}]");
                let c = self.object(c, &cpath, &["name", "arguments", "result"])?;
                let Some(name) = c.get("name") else {
                    return self.err(&format!("{cpath}.name"), "missing");
                };
                let name = self.string(name, &format!("{cpath}.name"))?;
                let arguments = match c.get("arguments") {
                    None => Map::new(),
                    Some(Value::Object(m)) => m.clone(),
                    Some(_) => {
                        return self.err(&format!("{cpath}.arguments"), "expected an object");
                    }
                };
                tool_calls.push(ToolCall {
                    name,
                    arguments,
                    result: c.get("result").cloned(),
                });
            }
        }
        let usage = match t.get("usage") {
            None => Usage::default(),
            Some(u) => {
                let upath = format!("{path}.usage");
                let u = self.object(u, &upath, &["input_tokens", "output_tokens", "cost_usd"])?;
                let cost_usd = match u.get("cost_usd") {
                    None => 0.0,
                    Some(c) => match c.as_f64().filter(|c| c.is_finite() && *c >= 0.0) {
                        Some(c) => c,
                        None => {
                            return self.err(&format!("{upath}.cost_usd"), "expected a number ≥ 0");
                        }
                    },
                };
                Usage {
                    input_tokens: self.count(u, "input_tokens", &upath)?,
                    output_tokens: self.count(u, "output_tokens", &upath)?,
                    cost_usd,
                    ..Usage::default()
                }
            }
        };
        let error = match t.get("error") {
            None => None,
            Some(e) => {
                let epath = format!("{path}.error");
                let e = self.object(e, &epath, &["class", "message"])?;
                // A recorded provider failure has one of the AGS classes (DIGEST §1.16,
                // without `any`); `blocked` and `cancelled` are weft's, never a provider's.
                let class = match e
                    .get("class")
                    .and_then(Value::as_str)
                    .and_then(|c| c.parse::<FailureClass>().ok())
                {
                    Some(c) if c.is_ags() => c,
                    _ => {
                        return self.err(
                            &format!("{epath}.class"),
                            format!(
                                "expected one of: {}",
                                FailureClass::AGS.map(FailureClass::as_str).join(", ")
                            ),
                        );
                    }
                };
                let message = match e.get("message") {
                    Some(m) => self.string(m, &format!("{epath}.message"))?,
                    None => String::new(),
                };
                Some(Failure::new(class, message))
            }
        };
        Ok(Turn {
            content,
            tool_calls,
            usage,
            error,
        })
    }
}

/// A cassette without `models` serves every tier, each with the model `replay-<tier>`
/// (provider `cassette`): a single-profile replay, stated as such in `routed`.
fn default_models() -> Vec<Model> {
    [
        Tier::Minimal,
        Tier::Standard,
        Tier::Advanced,
        Tier::Frontier,
    ]
    .into_iter()
    .map(|tier| Model {
        tier,
        model: format!("replay-{}", tier.as_str()),
        provider: "cassette".into(),
        context_tokens: None,
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(text: &str) -> (String, String) {
        match parse(text, "c.json").unwrap_err() {
            CassetteError::Invalid { path, message, .. } => (path, message),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_full_cassette_parses() {
        let c = parse(
            r#"{"format": "weft-cassette/1",
                "models": [{"tier": "standard", "model": "m1", "provider": "p", "context_tokens": 9}],
                "nodes": {"a": {"attempts": [{"turns": [
                    {"content": "thinking", "tool_calls": [{"name": "file_read", "arguments": {"path": "x"}, "result": "hi"}],
                     "usage": {"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.01}},
                    {"tool_calls": [{"name": "emit_output", "arguments": {"summary": "ok"}}]},
                    {"error": {"class": "transient", "message": "503"}}
                ]}]}}}"#,
            "c.json",
        )
        .unwrap();
        assert_eq!(c.models[0].context_tokens, Some(9));
        let turns = &c.nodes["a"][0].turns;
        assert_eq!(turns.len(), 3);
        assert_eq!(turns[0].usage.total_tokens(), 15);
        assert_eq!(turns[1].tool_calls[0].arguments["summary"], "ok");
        assert_eq!(
            turns[2].error.as_ref().unwrap().class,
            FailureClass::Transient
        );
    }

    #[test]
    fn errors_name_the_json_path() {
        assert_eq!(bad("{").0, "$");
        assert_eq!(bad(r#"{"nodes": {}}"#).0, "$.format");
        assert_eq!(
            bad(r#"{"format": "weft-cassette/1", "nodes": {"a": {"attempts": [{"turns": [{"usage": {"input_tokens": -1}}]}]}}}"#).0,
            "$.nodes.a.attempts[0].turns[0].usage.input_tokens"
        );
        let (path, message) = bad(
            r#"{"format": "weft-cassette/1", "nodes": {"a": {"attempts": [{"turns": [{"error": {"class": "oops"}}]}]}}}"#,
        );
        assert_eq!(path, "$.nodes.a.attempts[0].turns[0].error.class");
        assert!(message.contains("model_error"));
        assert!(!message.contains("blocked"), "{message}");
        let (path, _) = bad(
            r#"{"format": "weft-cassette/1", "nodes": {"a": {"attempts": [{"turns": [{"error": {"class": "blocked"}}]}]}}}"#,
        );
        assert_eq!(path, "$.nodes.a.attempts[0].turns[0].error.class");
        assert_eq!(
            bad(r#"{"format": "weft-cassette/1", "nodes": {}, "extra": 1}"#).0,
            "$.extra"
        );
        assert_eq!(
            bad(r#"{"format": "weft-cassette/1", "models": [{"tier": "huge", "model": "m"}], "nodes": {}}"#).0,
            "$.models[0].tier"
        );
    }
}

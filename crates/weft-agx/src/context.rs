//! What evaluation reads from the outside world: the [`Context`] trait and [`MapContext`], a
//! ready-made implementation over one JSON object for tests, the CLI and fuzzing.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// The result of resolving a name.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup {
    /// The name has a value.
    Value(Value),
    /// The name is declared but has no value (yet); it evaluates to `null`.
    Absent,
    /// The name is not declared at all; evaluating it is an error.
    Unknown,
}

/// The names an expression can see at run time.
pub trait Context {
    /// Resolves the full dotted path of a path expression, root first.
    fn lookup(&self, path: &[&str]) -> Lookup;
    /// The state of node `id` (`succeeded`, `failed`, ...); `None` if there is no such node.
    fn node_state(&self, id: &str) -> Option<String>;
    /// Output `name` of node `id`, for `output(id, name)`.
    fn node_output(&self, id: &str, name: &str) -> Lookup;
}

/// A [`Context`] over one JSON object whose top-level keys are the roots in scope.
///
/// A path resolves by walking object keys. A root that is not a key is [`Lookup::Unknown`];
/// below an existing root, anything missing (or a walk into a non-object) is
/// [`Lookup::Absent`]. Node states come from [`MapContext::with_state`], falling back to a
/// string at `nodes.<id>.status`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MapContext {
    /// The roots in scope.
    pub root: Map<String, Value>,
    /// Node states by node id.
    pub states: BTreeMap<String, String>,
}

impl MapContext {
    /// A context with no names and no nodes.
    pub fn new() -> MapContext {
        MapContext::default()
    }

    /// A context over `value`'s keys; a non-object value gives an empty context.
    pub fn from_value(value: Value) -> MapContext {
        match value {
            Value::Object(root) => MapContext {
                root,
                states: BTreeMap::new(),
            },
            _ => MapContext::default(),
        }
    }

    /// Records the state of node `id`.
    pub fn with_state(mut self, id: impl Into<String>, state: impl Into<String>) -> MapContext {
        self.states.insert(id.into(), state.into());
        self
    }
}

impl Context for MapContext {
    fn lookup(&self, path: &[&str]) -> Lookup {
        let Some((first, rest)) = path.split_first() else {
            return Lookup::Unknown;
        };
        let Some(mut current) = self.root.get(*first) else {
            return Lookup::Unknown;
        };
        for segment in rest {
            match current.get(*segment) {
                Some(next) if current.is_object() => current = next,
                _ => return Lookup::Absent,
            }
        }
        Lookup::Value(current.clone())
    }

    fn node_state(&self, id: &str) -> Option<String> {
        if let Some(state) = self.states.get(id) {
            return Some(state.clone());
        }
        self.root
            .get("nodes")
            .and_then(|nodes| nodes.get(id))
            .and_then(|node| node.get("status"))
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    fn node_output(&self, id: &str, name: &str) -> Lookup {
        let node_known = self.states.contains_key(id)
            || self.root.get("nodes").and_then(|n| n.get(id)).is_some();
        match self.lookup(&["nodes", id, "outputs", name]) {
            Lookup::Value(v) => Lookup::Value(v),
            _ if node_known => Lookup::Absent,
            _ => Lookup::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lookups() {
        let ctx = MapContext::from_value(json!({
            "params": {"n": 3, "s": "x"},
            "nodes": {"a": {"status": "failed", "outputs": {"o": 1}}}
        }))
        .with_state("b", "succeeded");
        assert_eq!(ctx.lookup(&["params", "n"]), Lookup::Value(json!(3)));
        assert_eq!(
            ctx.lookup(&["params"]),
            Lookup::Value(json!({"n": 3, "s": "x"}))
        );
        assert_eq!(ctx.lookup(&["params", "m"]), Lookup::Absent);
        // Walking into a string does not index it.
        assert_eq!(ctx.lookup(&["params", "s", "len"]), Lookup::Absent);
        assert_eq!(ctx.lookup(&["context", "k"]), Lookup::Unknown);
        assert_eq!(ctx.lookup(&[]), Lookup::Unknown);
        assert_eq!(ctx.node_state("a").as_deref(), Some("failed"));
        assert_eq!(ctx.node_state("b").as_deref(), Some("succeeded"));
        assert_eq!(ctx.node_state("c"), None);
        assert_eq!(ctx.node_output("a", "o"), Lookup::Value(json!(1)));
        assert_eq!(ctx.node_output("a", "p"), Lookup::Absent);
        assert_eq!(ctx.node_output("b", "p"), Lookup::Absent);
        assert_eq!(ctx.node_output("c", "p"), Lookup::Unknown);
        assert_eq!(MapContext::from_value(json!(3)), MapContext::new());
    }
}

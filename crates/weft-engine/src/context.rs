//! [`RunContext`]: the names an AGX expression sees during a run — `params`, `context`,
//! `nodes.<id>.status` / `nodes.<id>.outputs.<name>`, inside one node, `inputs` and
//! `outputs`, and inside a fragment instance its bindings (`item`, `index`, `loop`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};
use weft_agx::{Context, Lookup};

/// What the run knows about one node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeView {
    /// `pending`, `running`, `succeeded`, …
    pub status: &'static str,
    /// The node's outputs so far (empty until it finished), shared with the driver: a view
    /// costs a reference count, not a copy, however many nodes read it.
    pub outputs: Arc<Map<String, Value>>,
}

/// The run's AGX context. Built from the log's facts only, so a replay sees the same names.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunContext {
    /// Shared, not copied, by every view of a run: a 1,000-item map's `params` would
    /// otherwise be cloned into each item's every view.
    pub params: Arc<Value>,
    pub context: Arc<Value>,
    /// Every node of the scope, by id.
    pub nodes: BTreeMap<String, NodeView>,
    /// The resolved inputs of the node being evaluated (`None` outside a node).
    pub inputs: Option<Value>,
    /// The outputs of the node being evaluated (`None` outside a node).
    pub outputs: Option<Value>,
    /// Names bound at the root of a fragment instance: a map item's `as`/`index_as`, a
    /// loop's `loop` (`index`, `iteration`, `previous`). Empty in the root scope.
    pub bindings: Map<String, Value>,
}

fn walk(mut current: &Value, rest: &[&str]) -> Lookup {
    for segment in rest {
        match current {
            Value::Object(m) => match m.get(*segment) {
                Some(next) => current = next,
                None => return Lookup::Absent,
            },
            _ => return Lookup::Absent,
        }
    }
    Lookup::Value(current.clone())
}

impl Context for RunContext {
    fn lookup(&self, path: &[&str]) -> Lookup {
        let Some((first, rest)) = path.split_first() else {
            return Lookup::Unknown;
        };
        match *first {
            "params" => walk(&self.params, rest),
            "context" => walk(&self.context, rest),
            "inputs" => self
                .inputs
                .as_ref()
                .map_or(Lookup::Unknown, |v| walk(v, rest)),
            "outputs" => self
                .outputs
                .as_ref()
                .map_or(Lookup::Unknown, |v| walk(v, rest)),
            // AGS `self.inputs.<n>` / `self.outputs.<n>` (DIGEST §2.5): the node being
            // evaluated; its outputs exist only once the attempt produced them.
            "self" => match rest.split_first() {
                Some((&"inputs", rest)) => self.lookup(&[&["inputs"], rest].concat()),
                Some((&"outputs", rest)) => self.lookup(&[&["outputs"], rest].concat()),
                _ => Lookup::Unknown,
            },
            "nodes" => match rest.split_first() {
                None => {
                    let all: Map<String, Value> = self
                        .nodes
                        .iter()
                        .map(|(id, n)| (id.clone(), view_value(n)))
                        .collect();
                    Lookup::Value(Value::Object(all))
                }
                Some((id, rest)) => match self.nodes.get(*id) {
                    Some(n) => view_lookup(n, rest),
                    None => Lookup::Unknown,
                },
            },
            other => self
                .bindings
                .get(other)
                .map_or(Lookup::Unknown, |v| walk(v, rest)),
        }
    }

    fn node_state(&self, id: &str) -> Option<String> {
        self.nodes.get(id).map(|n| n.status.to_owned())
    }

    fn node_output(&self, id: &str, name: &str) -> Lookup {
        match self.nodes.get(id) {
            Some(n) => n
                .outputs
                .get(name)
                .map_or(Lookup::Absent, |v| Lookup::Value(v.clone())),
            None => Lookup::Unknown,
        }
    }
}

/// `walk(&view_value(n), rest)` without building the view: a `collect` or `when` that
/// reads one output of a node copies that output, not all of them.
fn view_lookup(n: &NodeView, rest: &[&str]) -> Lookup {
    match rest.split_first() {
        None => Lookup::Value(view_value(n)),
        Some((&"status", rest)) => walk(&Value::String(n.status.to_owned()), rest),
        Some((&"outputs", rest)) => match rest.split_first() {
            None => Lookup::Value(Value::Object((*n.outputs).clone())),
            Some((name, rest)) => n
                .outputs
                .get(*name)
                .map_or(Lookup::Absent, |v| walk(v, rest)),
        },
        Some((&"decision", rest)) => n
            .outputs
            .get("decision")
            .map_or(Lookup::Absent, |v| walk(v, rest)),
        Some(_) => Lookup::Absent,
    }
}

fn view_value(n: &NodeView) -> Value {
    let mut m = Map::new();
    m.insert("status".into(), Value::String(n.status.to_owned()));
    m.insert("outputs".into(), Value::Object((*n.outputs).clone()));
    // A decision node's label is also readable as `nodes.<id>.decision` (DIGEST §1.8).
    if let Some(d) = n.outputs.get("decision") {
        m.insert("decision".into(), d.clone());
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_resolve() {
        let mut ctx = RunContext {
            params: Arc::new(json!({"n": 2})),
            context: Arc::new(json!({"repo": "x"})),
            ..RunContext::default()
        };
        ctx.nodes.insert(
            "a".into(),
            NodeView {
                status: "succeeded",
                outputs: Arc::new(json!({"o": 1}).as_object().cloned().unwrap()),
            },
        );
        let eval = |src: &str| weft_agx::eval(&weft_agx::parse(src).unwrap(), &ctx).unwrap();
        assert_eq!(eval("params.n + 1"), json!(3));
        assert_eq!(eval("nodes.a.outputs.o"), json!(1));
        assert_eq!(eval("nodes.a.status == 'succeeded'"), json!(true));
        assert_eq!(eval("context.repo"), json!("x"));
        assert_eq!(ctx.lookup(&["inputs", "x"]), Lookup::Unknown);
        assert_eq!(ctx.lookup(&["nodes", "b"]), Lookup::Unknown);
        assert_eq!(ctx.lookup(&["params", "m"]), Lookup::Absent);
        assert_eq!(ctx.lookup(&["self", "outputs", "r"]), Lookup::Unknown);
        ctx.inputs = Some(json!({"x": 5}));
        ctx.outputs = Some(json!({"r": "r-1"}));
        let eval = |src: &str| weft_agx::eval(&weft_agx::parse(src).unwrap(), &ctx).unwrap();
        assert_eq!(eval("self.inputs.x * 2"), json!(10));
        assert_eq!(eval("self.outputs.r"), json!("r-1"));
        assert_eq!(ctx.lookup(&["self", "id"]), Lookup::Unknown);
    }

    #[test]
    fn a_node_path_reads_what_the_whole_view_holds() {
        let outputs = json!({"o": {"p": [1, 2]}, "decision": "go"});
        let n = NodeView {
            status: "succeeded",
            outputs: Arc::new(outputs.as_object().cloned().unwrap()),
        };
        let paths: [&[&str]; 11] = [
            &[],
            &["status"],
            &["status", "x"],
            &["outputs"],
            &["outputs", "o"],
            &["outputs", "o", "p"],
            &["outputs", "missing"],
            &["outputs", "decision", "x"],
            &["decision"],
            &["decision", "x"],
            &["other"],
        ];
        for path in paths {
            assert_eq!(
                view_lookup(&n, path),
                walk(&view_value(&n), path),
                "{path:?}"
            );
        }
        let plain = NodeView {
            status: "running",
            outputs: Arc::default(),
        };
        assert_eq!(view_lookup(&plain, &["decision"]), Lookup::Absent);
    }
}

//! [`RunContext`]: the names an AGX expression sees during a run — `params`, `context`,
//! `nodes.<id>.status` / `nodes.<id>.outputs.<name>`, inside one node, `inputs` and
//! `outputs`, and inside a fragment instance its bindings (`item`, `index`, `loop`).

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

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
    /// `nodes.<id>.attempts`: attempts made (0 until it finished).
    pub attempts: u32,
    /// `nodes.<id>.duration_seconds`: from its first attempt's start to its end, once it
    /// finished (`null` before).
    pub duration_seconds: Option<f64>,
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
    /// `graph.<field>` (`weft_agx::names::GRAPH_FIELDS`): the document's own values.
    pub graph: Arc<Value>,
    /// `self.id` and `self.attempt` (1-based) inside a node; `None` outside one.
    pub self_id: Option<String>,
    pub attempt: Option<u32>,
    /// `env.<NAME>` inside a node: the names its `requirements.environment` lists, each
    /// with the harness's value (absent when unset); `None` outside a node (DIGEST §1.14).
    pub env: Option<Arc<Map<String, Value>>>,
}

impl RunContext {
    /// The view inside node `id` at attempt `attempt` (1-based): `self.id`, `self.attempt`
    /// and `env.<NAME>` for each name of its `requirements.environment` (null when the
    /// harness has no such variable).
    pub fn enter_node(&mut self, id: &str, attempt: u32, environment: &[String]) {
        self.self_id = Some(id.to_string());
        self.attempt = Some(attempt);
        // Most nodes list no environment: they share one empty map (a start costs no
        // allocation for it; thousands of short nodes start per second).
        static NO_ENVIRONMENT: LazyLock<Arc<Map<String, Value>>> = LazyLock::new(Arc::default);
        self.env = Some(if environment.is_empty() {
            Arc::clone(&NO_ENVIRONMENT)
        } else {
            Arc::new(
                environment
                    .iter()
                    .map(|name| {
                        let value = std::env::var(name).map_or(Value::Null, Value::String);
                        (name.clone(), value)
                    })
                    .collect(),
            )
        });
    }
}

/// The `graph` root of a document: the fields of `weft_agx::names::GRAPH_FIELDS` it has.
pub fn graph_fields(doc: &Map<String, Value>) -> Value {
    Value::Object(
        weft_agx::names::GRAPH_FIELDS
            .iter()
            .filter_map(|f| doc.get(*f).map(|v| ((*f).to_string(), v.clone())))
            .collect(),
    )
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
            "self" => self.self_lookup(rest),
            // Every declared graph field is readable; one the document leaves out is null.
            "graph" => match rest.split_first() {
                None => Lookup::Value((*self.graph).clone()),
                Some((f, _)) if weft_agx::names::GRAPH_FIELDS.contains(f) => {
                    walk(&self.graph, rest)
                }
                Some(_) => Lookup::Unknown,
            },
            "env" => match &self.env {
                // A listed name the harness has no value for is held as null; a name
                // not listed is unknown (AG203 at load time).
                Some(env) => match rest.split_first() {
                    None => Lookup::Value(Value::Object((**env).clone())),
                    Some((name, rest)) => env.get(*name).map_or(Lookup::Unknown, |v| walk(v, rest)),
                },
                None => Lookup::Unknown,
            },
            "nodes" => match rest.split_first() {
                Some((&"self", rest)) => self.self_lookup(rest),
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

impl RunContext {
    /// `self.<field>` (`weft_agx::names::SELF_FIELDS`): the node being evaluated.
    fn self_lookup(&self, rest: &[&str]) -> Lookup {
        match rest.split_first() {
            Some((&"inputs", rest)) => self.lookup(&[&["inputs"], rest].concat()),
            // Its outputs exist only once the attempt produced them.
            Some((&"outputs", rest)) => self.lookup(&[&["outputs"], rest].concat()),
            Some((&"id", rest)) => self
                .self_id
                .as_ref()
                .map_or(Lookup::Unknown, |id| walk(&Value::String(id.clone()), rest)),
            Some((&"attempt", rest)) => self
                .attempt
                .map_or(Lookup::Unknown, |a| walk(&Value::from(a), rest)),
            _ => Lookup::Unknown,
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
        Some((&"attempts", rest)) => walk(&Value::from(n.attempts), rest),
        Some((&"duration_seconds", rest)) => n
            .duration_seconds
            .map_or(Lookup::Absent, |d| walk(&Value::from(d), rest)),
        Some(_) => Lookup::Absent,
    }
}

fn view_value(n: &NodeView) -> Value {
    let mut m = Map::new();
    m.insert("status".into(), Value::String(n.status.to_owned()));
    m.insert("outputs".into(), Value::Object((*n.outputs).clone()));
    m.insert("attempts".into(), Value::from(n.attempts));
    if let Some(d) = n.duration_seconds {
        m.insert("duration_seconds".into(), Value::from(d));
    }
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
                ..NodeView::default()
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
            attempts: 2,
            duration_seconds: Some(1.5),
        };
        let paths: [&[&str]; 13] = [
            &["attempts"],
            &["duration_seconds"],
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
            ..NodeView::default()
        };
        assert_eq!(view_lookup(&plain, &["decision"]), Lookup::Absent);
    }

    /// One definition of the names (DIGEST §2.5): every field the validator accepts under
    /// `graph`, `self`, `nodes.<id>` resolves in a run's view of a node.
    #[test]
    fn every_name_the_validator_accepts_resolves() {
        let mut ctx = RunContext {
            graph: Arc::new(graph_fields(
                json!({"id": "g", "title": "t", "objective": "o", "version": "1", "description": "d"})
                    .as_object()
                    .unwrap(),
            )),
            inputs: Some(json!({})),
            outputs: Some(json!({})),
            ..RunContext::default()
        };
        ctx.nodes.insert(
            "a".into(),
            NodeView {
                status: "succeeded",
                outputs: Arc::new(json!({"decision": "go"}).as_object().cloned().unwrap()),
                attempts: 1,
                duration_seconds: Some(0.5),
            },
        );
        ctx.enter_node("a", 1, &["HOME".to_string()]);
        for f in weft_agx::names::GRAPH_FIELDS {
            assert!(
                matches!(ctx.lookup(&["graph", f]), Lookup::Value(_)),
                "graph.{f}"
            );
        }
        for f in weft_agx::names::SELF_FIELDS {
            assert!(
                matches!(ctx.lookup(&["self", f]), Lookup::Value(_)),
                "self.{f}"
            );
        }
        for f in weft_agx::names::NODE_FIELDS {
            assert!(
                matches!(ctx.lookup(&["nodes", "a", f]), Lookup::Value(_)),
                "nodes.a.{f}"
            );
        }
        assert_ne!(ctx.lookup(&["env", "HOME"]), Lookup::Unknown);
        assert_eq!(ctx.lookup(&["env", "PATH"]), Lookup::Unknown);
        assert_eq!(ctx.lookup(&["graph", "owner"]), Lookup::Unknown);
    }
}

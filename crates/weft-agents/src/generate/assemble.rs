//! From the model's calls to an AGS document: the skeleton read leniently (entries without
//! an id or with a repeated id are dropped, the first `max_nodes` kept), then the document built in AGS key order
//! with what weft decides itself: `ags_version`, `kind`, the objective as given,
//! `entrypoints` (the nodes that depend on nothing) and the graph `outputs` (every node
//! output that no other node reads, so a finished run's results are the graph's).

use serde_json::{Map, Value, json};

use super::tools::{NODE_FIELDS, object};

/// The most nodes a generated graph may have by default (a bound on the calls a
/// generation makes).
pub const MAX_NODES: usize = 12;

/// One node of the skeleton.
#[derive(Clone, Debug, PartialEq)]
pub struct SkeletonNode {
    pub id: String,
    pub node_type: String,
    pub title: String,
    pub depends_on: Vec<String>,
}

/// The graph before its nodes are written.
#[derive(Clone, Debug, PartialEq)]
pub struct Skeleton {
    /// The `draft_skeleton` arguments as given (shown back to the model when it revises).
    pub raw: Value,
    pub id: String,
    pub title: String,
    pub description: String,
    pub max_cost_usd: Option<f64>,
    pub nodes: Vec<SkeletonNode>,
}

fn text(obj: &Map<String, Value>, key: &str) -> String {
    obj.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

impl Skeleton {
    /// Reads `draft_skeleton` arguments, keeping the first `max_nodes` nodes.
    pub fn read(arguments: &Value, max_nodes: usize) -> Skeleton {
        let obj = object(arguments);
        let mut nodes: Vec<SkeletonNode> = Vec::new();
        for n in obj
            .get("nodes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let n = object(n);
            let id = text(&n, "id");
            if id.is_empty() || nodes.iter().any(|x| x.id == id) || nodes.len() >= max_nodes {
                continue;
            }
            nodes.push(SkeletonNode {
                id,
                node_type: n
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("task")
                    .to_string(),
                title: text(&n, "title"),
                depends_on: strings(n.get("depends_on")),
            });
        }
        Skeleton {
            raw: arguments.clone(),
            id: text(&obj, "id"),
            title: text(&obj, "title"),
            description: text(&obj, "description"),
            max_cost_usd: obj.get("max_cost_usd").and_then(Value::as_f64),
            nodes,
        }
    }

    /// The node ids in an order where each comes after the nodes it depends on (declared
    /// order where that is already so; a cycle is left for the validator to report).
    pub fn drafting_order(&self) -> Vec<&SkeletonNode> {
        let mut done: Vec<&str> = Vec::new();
        let mut order = Vec::new();
        while order.len() < self.nodes.len() {
            let next = self.nodes.iter().find(|n| {
                !done.contains(&n.id.as_str())
                    && n.depends_on.iter().all(|d| {
                        done.contains(&d.as_str()) || !self.nodes.iter().any(|x| &x.id == d)
                    })
            });
            let next = next.or_else(|| self.nodes.iter().find(|n| !done.contains(&n.id.as_str())));
            let Some(n) = next else { break };
            done.push(&n.id);
            order.push(n);
        }
        order
    }
}

/// The document of `skeleton` with `bodies` (each node's `draft_node` arguments, by id).
pub fn document(objective: &str, skeleton: &Skeleton, bodies: &Map<String, Value>) -> Value {
    let mut nodes = Map::new();
    for n in &skeleton.nodes {
        let body = bodies.get(&n.id).map(object).unwrap_or_default();
        let mut node = Map::new();
        node.insert("type".into(), json!(n.node_type));
        for key in NODE_FIELDS {
            let value = match (key, body.get(key)) {
                ("title", None) => Some(json!(n.title)),
                ("depends_on", None) if !n.depends_on.is_empty() => Some(json!(n.depends_on)),
                ("depends_on", Some(Value::Array(a))) if a.is_empty() => None,
                (_, v) => v.cloned(),
            };
            if let Some(v) = value {
                node.insert(key.into(), v);
            }
        }
        nodes.insert(n.id.clone(), Value::Object(node));
    }
    let entrypoints: Vec<&String> = nodes
        .iter()
        .filter(|(_, n)| n.get("depends_on").is_none())
        .map(|(id, _)| id)
        .collect();
    let mut doc = Map::new();
    doc.insert("ags_version".into(), json!("1.0"));
    doc.insert("kind".into(), json!("AgenticGraph"));
    doc.insert("id".into(), json!(skeleton.id));
    doc.insert("title".into(), json!(skeleton.title));
    if !skeleton.description.is_empty() {
        doc.insert("description".into(), json!(skeleton.description));
    }
    doc.insert("objective".into(), json!(objective));
    if let Some(cost) = skeleton.max_cost_usd {
        doc.insert("constraints".into(), json!({"max_cost_usd": cost}));
    }
    doc.insert("entrypoints".into(), json!(entrypoints));
    let outputs = unread_outputs(&nodes);
    doc.insert("nodes".into(), Value::Object(nodes));
    if !outputs.is_empty() {
        doc.insert("outputs".into(), Value::Object(outputs));
    }
    Value::Object(doc)
}

/// Every node output no input reads (`from: nodes.<id>.outputs.<name>`), as a graph output
/// of the same type and description; a name taken twice gets the node id as a prefix.
fn unread_outputs(nodes: &Map<String, Value>) -> Map<String, Value> {
    let reads: Vec<String> = nodes
        .values()
        .filter_map(|n| n.get("inputs").and_then(Value::as_object))
        .flat_map(|inputs| inputs.values())
        .filter_map(|i| i.get("from").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    let mut out = Map::new();
    for (id, node) in nodes {
        for (name, spec) in node
            .get("outputs")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let from = format!("nodes.{id}.outputs.{name}");
            if reads.iter().any(|r| r == &from) {
                continue;
            }
            let key = if out.contains_key(name) {
                format!("{id}_{name}")
            } else {
                name.clone()
            };
            let field = |k: &str| spec.get(k).cloned().unwrap_or(json!("string"));
            out.insert(
                key,
                json!({
                    "type": field("type"),
                    "description": spec.get("description").cloned().unwrap_or(json!(name)),
                    "from": from,
                }),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_gets_entrypoints_and_the_unread_outputs() {
        let skeleton = Skeleton::read(
            &json!({
                "id": "notes", "title": "Notes", "description": "d", "max_cost_usd": 1.0,
                "nodes": [
                    {"id": "write", "type": "task", "title": "Write", "depends_on": ["collect"]},
                    {"id": "collect", "type": "task", "title": "Collect"},
                    {"type": "task", "title": "no id: dropped"}
                ]
            }),
            MAX_NODES,
        );
        let order: Vec<&str> = skeleton
            .drafting_order()
            .iter()
            .map(|n| n.id.as_str())
            .collect();
        assert_eq!(order, ["collect", "write"]);
        let mut bodies = Map::new();
        bodies.insert(
            "collect".into(),
            json!({"description": "c", "outputs": {"changes": {"type": "string", "description": "x"}}}),
        );
        bodies.insert(
            "write".into(),
            json!({"description": "w",
                "inputs": {"changes": {"type": "string", "description": "x", "from": "nodes.collect.outputs.changes"}},
                "outputs": {"notes": {"type": "markdown", "description": "n"}}}),
        );
        let doc = document("Write notes.", &skeleton, &bodies);
        assert_eq!(doc["entrypoints"], json!(["collect"]));
        assert_eq!(doc["nodes"]["write"]["depends_on"], json!(["collect"]));
        assert_eq!(doc["nodes"]["collect"]["title"], "Collect");
        assert_eq!(
            doc["outputs"],
            json!({"notes": {"type": "markdown", "description": "n", "from": "nodes.write.outputs.notes"}})
        );
    }
}

//! The forced tools of graph generation and their schemas: `draft_skeleton` (the graph's id,
//! title, description, cost bound and its nodes' ids, types and `depends_on`) and
//! `draft_node` (one node: the subset of the AGS node an author writes — title, description,
//! instructions, intelligence tier, inputs, outputs, and the `decision` or `gate` block of
//! those types). The schemas are deliberately smaller than the AGS schema: the model fills
//! these, weft assembles the document and `weft_ags::validate` is the judge.

use serde_json::{Value, json};

use crate::chat::ToolDef;

/// The skeleton tool's name.
pub const SKELETON: &str = "draft_skeleton";
/// The node tool's name.
pub const NODE: &str = "draft_node";

/// The node types a generated graph may use: those weft runs at the root scope.
pub const NODE_TYPES: [&str; 3] = ["task", "decision", "gate"];

/// The AGS value types offered for inputs and outputs.
const VALUE_TYPES: [&str; 9] = [
    "string", "markdown", "number", "integer", "boolean", "object", "array", "file", "file_set",
];

/// Bounds on the strings and collections of a call, so a model cannot ramble a call past its
/// token budget (JSON-schema-constrained decoders honour them).
const ID: usize = 40;
const TITLE: usize = 80;
const TEXT: usize = 400;
const SHORT_TEXT: usize = 160;
const MEMBERS: usize = 6;

fn string(max: usize) -> Value {
    json!({"type": "string", "maxLength": max})
}

/// `draft_skeleton`: the graph before its nodes are written, with `max_nodes` nodes at most.
pub fn skeleton_tool(max_nodes: usize) -> ToolDef {
    ToolDef {
        name: SKELETON.into(),
        description: "Draft the skeleton of the work graph: its id, title, description, cost \
                      bound, and every node's id, type, title and the nodes it depends on."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "maxLength": ID, "description": "kebab-case graph id"},
                "title": string(TITLE),
                "description": string(TEXT),
                "max_cost_usd": {"type": "number", "description": "the run's cost bound in US dollars"},
                "nodes": {
                    "type": "array",
                    "maxItems": max_nodes,
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "maxLength": ID, "description": "snake_case node id"},
                            "type": {"type": "string", "enum": NODE_TYPES},
                            "title": string(TITLE),
                            "depends_on": {"type": "array", "maxItems": MEMBERS, "items": string(ID)}
                        },
                        "required": ["id", "type", "title"]
                    }
                }
            },
            "required": ["id", "title", "description", "max_cost_usd", "nodes"]
        }),
    }
}

/// `draft_node`: one node's body (its id and type come from the skeleton).
pub fn node_tool() -> ToolDef {
    let value = |with_from: bool| {
        let mut props = json!({
            "type": {"type": "string", "enum": VALUE_TYPES},
            "description": string(SHORT_TEXT)
        });
        if with_from && let Some(p) = props.as_object_mut() {
            p.insert(
                "from".into(),
                json!({"type": "string", "maxLength": SHORT_TEXT, "description": "nodes.<node>.outputs.<output> of a node it depends on"}),
            );
        }
        json!({"type": "object", "properties": props, "required": ["type", "description"]})
    };
    ToolDef {
        name: NODE.into(),
        description: "Draft one node of the work graph.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "title": string(TITLE),
                "description": {"type": "string", "maxLength": TEXT, "description": "what the node must do, concretely"},
                "instructions": string(TEXT),
                "depends_on": {"type": "array", "maxItems": MEMBERS, "items": string(ID)},
                "intelligence": {
                    "type": "object",
                    "properties": {"tier": {"type": "string", "enum": ["minimal", "standard", "advanced", "frontier"]}},
                    "required": ["tier"]
                },
                "inputs": {"type": "object", "maxProperties": MEMBERS, "additionalProperties": value(true)},
                "outputs": {"type": "object", "maxProperties": MEMBERS, "additionalProperties": value(false)},
                "decision": {"type": "object", "description": "decision nodes: question, branches [{label, when}], default_branch"},
                "gate": {"type": "object", "description": "gate nodes: mode (approve, review, input, notify), prompt, roles"}
            },
            "required": ["title", "description"]
        }),
    }
}

/// The members of a `draft_node` call that become the node's (in this order).
pub const NODE_FIELDS: [&str; 9] = [
    "title",
    "description",
    "instructions",
    "depends_on",
    "intelligence",
    "inputs",
    "outputs",
    "decision",
    "gate",
];

/// The arguments of a call as an object (anything else: empty, so the validator reports
/// what is missing rather than the call being lost).
pub fn object(arguments: &Value) -> serde_json::Map<String, Value> {
    arguments.as_object().cloned().unwrap_or_default()
}

//! How a logged mutation is read back. serde's derive reads an internally tagged enum
//! (`op`) and a flattened struct by first copying the whole value into a buffer of its own,
//! then reading the copy: for a plan of 10,000 nodes (1.45 MB of log) that was most of
//! the time a reader of the log spent on it, and every reader pays it (the driver, a
//! resume, the record, each inbox writer). These plain structs are read straight from the
//! text; [`GraphMutation`] and [`PlannedNode`] are built from them. The text they read is
//! the one the derived `Serialize` writes (tests: every op read back equal, and read as
//! the value route reads it).

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{After, GraphMutation, LoggedEdge, LoggedShape, NewNode, PlannedNode};

/// The mutation's name (`op`).
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Op {
    CancelNode,
    AddEdge,
    AddNode,
    Plan,
    Split,
    Merge,
    Hold,
    Release,
}

/// Every member any op has; each op takes its own and requires them.
#[derive(Deserialize)]
pub(super) struct MutationWire {
    op: Op,
    /// The node an op names (`cancel_node`, `split`), or the object of the node it adds
    /// (`add_node`, `merge`: with `id`).
    node: Option<Value>,
    id: Option<String>,
    from: Option<String>,
    to: Option<String>,
    edge: Option<LoggedEdge>,
    #[serde(default)]
    after: Vec<After>,
    nodes: Option<Vec<PlannedNode>>,
    parts: Option<Vec<NewNode>>,
    shape: Option<LoggedShape>,
    a: Option<String>,
    b: Option<String>,
}

/// A plan's node as logged: the new node's members and its incoming edges, side by side.
#[derive(Deserialize)]
pub(super) struct PlannedWire {
    id: String,
    node: Map<String, Value>,
    #[serde(default)]
    after: Vec<After>,
}

impl From<PlannedWire> for PlannedNode {
    fn from(w: PlannedWire) -> Self {
        PlannedNode {
            node: NewNode {
                id: w.id,
                node: w.node,
            },
            after: w.after,
        }
    }
}

impl TryFrom<MutationWire> for GraphMutation {
    type Error = String;

    fn try_from(w: MutationWire) -> Result<Self, String> {
        let op = w.op;
        let missing = |field: &str| format!("missing field `{field}` (op {op:?})");
        let need = |v: Option<String>, field: &str| v.ok_or_else(|| missing(field));
        let named = |v: Option<Value>| match v {
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(format!(
                "`node` must name a node (op {op:?}), found {other}"
            )),
            None => Err(missing("node")),
        };
        let new_node = |id: Option<String>, node: Option<Value>| -> Result<NewNode, String> {
            let id = id.ok_or_else(|| missing("id"))?;
            match node {
                Some(Value::Object(node)) => Ok(NewNode { id, node }),
                Some(_) => Err(format!("`node` must be an AGS node object (op {op:?})")),
                None => Err(missing("node")),
            }
        };
        Ok(match op {
            Op::CancelNode => GraphMutation::CancelNode {
                node: named(w.node)?,
            },
            Op::AddEdge => GraphMutation::AddEdge {
                from: need(w.from, "from")?,
                to: need(w.to, "to")?,
                edge: w.edge.ok_or_else(|| missing("edge"))?,
            },
            Op::AddNode => GraphMutation::AddNode {
                node: new_node(w.id, w.node)?,
                after: w.after,
            },
            Op::Plan => GraphMutation::Plan {
                nodes: w.nodes.ok_or_else(|| missing("nodes"))?,
            },
            Op::Split => GraphMutation::Split {
                node: named(w.node)?,
                parts: w.parts.ok_or_else(|| missing("parts"))?,
                shape: w.shape.ok_or_else(|| missing("shape"))?,
            },
            Op::Merge => GraphMutation::Merge {
                a: need(w.a, "a")?,
                b: need(w.b, "b")?,
                into: new_node(w.id, w.node)?,
            },
            Op::Hold => GraphMutation::Hold,
            Op::Release => GraphMutation::Release,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a panic here is a test failure")]

    use serde_json::json;

    use super::*;
    use crate::events::RunEvent;

    fn new(id: &str) -> NewNode {
        NewNode {
            id: id.into(),
            node: json!({"type": "gate", "title": "T", "gate": {"mode": "notify"}, "description": "d"})
                .as_object()
                .cloned()
                .unwrap(),
        }
    }

    fn after(from: &str, edge: LoggedEdge) -> After {
        After {
            from: from.into(),
            edge,
        }
    }

    /// One mutation of every op, with and without the optional members.
    fn every_op() -> Vec<GraphMutation> {
        vec![
            GraphMutation::CancelNode { node: "a".into() },
            GraphMutation::AddEdge {
                from: "a".into(),
                to: "b".into(),
                edge: LoggedEdge::OnFailure,
            },
            GraphMutation::AddNode {
                node: new("x"),
                after: Vec::new(),
            },
            GraphMutation::AddNode {
                node: new("y"),
                after: vec![
                    after("a", LoggedEdge::Sequence),
                    after("b", LoggedEdge::OnFailure),
                ],
            },
            GraphMutation::Plan {
                nodes: vec![
                    PlannedNode {
                        node: new("p0"),
                        after: Vec::new(),
                    },
                    PlannedNode {
                        node: new("p1"),
                        after: vec![after("p0", LoggedEdge::Sequence)],
                    },
                ],
            },
            GraphMutation::Plan { nodes: Vec::new() },
            GraphMutation::Split {
                node: "a".into(),
                parts: vec![new("a1"), new("a2")],
                shape: LoggedShape::Fan,
            },
            GraphMutation::Merge {
                a: "a".into(),
                b: "b".into(),
                into: new("ab"),
            },
            GraphMutation::Hold,
            GraphMutation::Release,
        ]
    }

    #[test]
    fn every_op_reads_back_as_written_from_text_and_from_a_value() {
        for mutation in every_op() {
            let event = RunEvent::GraphMutated {
                v: 2,
                actor: "planner".into(),
                mutation,
            };
            let stored = event.to_new_event(1).unwrap();
            let text = stored.payload.text();
            let read = RunEvent::from_text(3, &stored.kind, &text).unwrap();
            assert_eq!(read, event, "{text}");
            // Text for text: member order included.
            assert_eq!(read.to_new_event(1).unwrap().payload.text(), text);
            let value = stored.payload.to_value().unwrap();
            assert_eq!(RunEvent::decode(3, &stored.kind, value).unwrap(), event);
        }
    }

    #[test]
    fn a_format_1_payload_reads_as_before() {
        let text = r#"{"v":1,"actor":"ops","mutation":{"op":"add_edge","from":"a","to":"b","edge":"sequence"}}"#;
        assert_eq!(
            RunEvent::from_text(1, "graph_mutated", text).unwrap(),
            RunEvent::GraphMutated {
                v: 1,
                actor: "ops".into(),
                mutation: GraphMutation::AddEdge {
                    from: "a".into(),
                    to: "b".into(),
                    edge: LoggedEdge::Sequence,
                },
            }
        );
    }

    #[test]
    fn a_payload_missing_what_its_op_needs_is_a_decode_error_that_says_what() {
        for (mutation, says) in [
            (
                json!({"op": "add_edge", "from": "a", "edge": "sequence"}),
                "`to`",
            ),
            (json!({"op": "cancel_node"}), "`node`"),
            (
                json!({"op": "cancel_node", "node": {"type": "task"}}),
                "name a node",
            ),
            (json!({"op": "add_node", "node": "x"}), "`id`"),
            (
                json!({"op": "add_node", "id": "x", "node": "x"}),
                "AGS node object",
            ),
            (
                json!({"op": "merge", "a": "a", "id": "m", "node": {}}),
                "`b`",
            ),
            (json!({"op": "split", "node": "a", "parts": []}), "`shape`"),
            (json!({"op": "plan", "nodes": [{"id": "p"}]}), "`node`"),
            (
                json!({"op": "rename", "node": "a"}),
                "unknown variant `rename`",
            ),
        ] {
            let text = json!({"v": 2, "actor": "x", "mutation": mutation}).to_string();
            let from_text = RunEvent::from_text(4, "graph_mutated", &text).unwrap_err();
            assert!(from_text.to_string().contains(says), "{text}: {from_text}");
            let from_value =
                RunEvent::decode(4, "graph_mutated", serde_json::from_str(&text).unwrap())
                    .unwrap_err();
            assert!(
                from_value.to_string().contains(says),
                "{text}: {from_value}"
            );
        }
    }
}

//! What a model's prompt shows beyond the rendered brief and the resolved inputs: the slots
//! of the AGS harness integration guide (DIGEST §6.11) that come from the node as declared —
//! its rationale, each input's description, the definition of done (the `success` summary
//! and every criterion's description: the guide says to show criteria to the agent), and each
//! output's description and `path_hint`. Read once per node, for nodes a model works on.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use weft_ags::model::{Fields, entries_of, obj_of, str_of};

/// The declared guidance of one node (empty members are left out of the prompt).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Guidance {
    /// `rationale`: why the node exists.
    pub rationale: Option<String>,
    /// Each input's `description`, by binding name.
    pub inputs: BTreeMap<String, String>,
    /// `success.summary`: what done means, in a line.
    pub done: Option<String>,
    /// `success.criteria`, in declared order.
    pub criteria: Vec<CriterionBrief>,
    /// Each output's `description` and `path_hint`, by name.
    pub outputs: BTreeMap<String, OutputBrief>,
}

/// One success criterion as the agent is told it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CriterionBrief {
    pub id: String,
    pub description: String,
    /// `severity: advisory`: evaluated and recorded, never gating.
    pub advisory: bool,
}

/// What the node says about one output.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutputBrief {
    pub description: Option<String>,
    /// Where a file output is expected, relative to the workspace.
    pub path_hint: Option<String>,
}

impl Guidance {
    /// The guidance declared on a node object.
    pub fn of_node(node: &Map<String, Value>) -> Guidance {
        let text = |v: &Value, key: &str| {
            v.field(key)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let success = obj_of(node, "success");
        Guidance {
            rationale: str_of(node, "rationale")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            inputs: entries_of(node, "inputs")
                .filter_map(|(name, spec)| Some((name.to_string(), text(spec, "description")?)))
                .collect(),
            done: success
                .and_then(|s| str_of(s, "summary"))
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            criteria: success
                .and_then(|s| s.get("criteria"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| {
                    Some(CriterionBrief {
                        id: text(c, "id")?,
                        description: text(c, "description").unwrap_or_default(),
                        advisory: c.field("severity").and_then(Value::as_str) == Some("advisory"),
                    })
                })
                .collect(),
            outputs: entries_of(node, "outputs")
                .map(|(name, spec)| {
                    let brief = OutputBrief {
                        description: text(spec, "description"),
                        path_hint: text(spec, "path_hint"),
                    };
                    (name.to_string(), brief)
                })
                .filter(|(_, b)| b.description.is_some() || b.path_hint.is_some())
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_every_slot_a_node_declares_and_leaves_out_blank_ones() {
        let node = json!({
            "title": "t", "description": "d", "rationale": "  the release needs it ",
            "inputs": {
                "ticket": {"type": "string", "description": "The ticket text."},
                "quiet": {"type": "string", "description": "   "}
            },
            "outputs": {
                "notes": {"type": "file", "description": "Release notes.", "path_hint": "NOTES.md"},
                "bare": {"type": "string"}
            },
            "success": {
                "summary": "Notes written.",
                "criteria": [
                    {"id": "exists", "kind": "file_exists", "description": "NOTES.md exists.", "path": "NOTES.md"},
                    {"id": "tone", "kind": "regex", "description": "Friendly.", "severity": "advisory"}
                ]
            }
        });
        let g = Guidance::of_node(node.as_object().unwrap());
        assert_eq!(g.rationale.as_deref(), Some("the release needs it"));
        assert_eq!(g.inputs.len(), 1);
        assert_eq!(g.inputs["ticket"], "The ticket text.");
        assert_eq!(g.done.as_deref(), Some("Notes written."));
        assert_eq!(g.criteria.len(), 2);
        assert!(!g.criteria[0].advisory && g.criteria[1].advisory);
        assert_eq!(g.outputs["notes"].path_hint.as_deref(), Some("NOTES.md"));
        assert!(!g.outputs.contains_key("bare"));
    }
}

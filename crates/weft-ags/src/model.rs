//! Typed, lenient views over a parsed AGS document.
//!
//! The validator must report every problem of a document that may be schema-invalid, so
//! the model is a set of borrowed views over the `serde_json::Value` rather than strict
//! structs: each accessor returns what is there and `None`/empty when it is missing or of
//! the wrong shape (layer 1 reports the shape problem; later layers work with what exists).
//! Declaration order comes from the order-preserving map and is normative for scheduling.

use crate::diagnostic::pointer_push;
use serde_json::{Map, Value};

/// A JSON object.
pub type Object = Map<String, Value>;

/// The node types of AGS 1.0 (§7). An absent `type` is `task`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeType {
    Task,
    Decision,
    Gate,
    Loop,
    Map,
    Subgraph,
}

impl NodeType {
    /// All types, in spec order.
    pub const ALL: [NodeType; 6] = [
        NodeType::Task,
        NodeType::Decision,
        NodeType::Gate,
        NodeType::Loop,
        NodeType::Map,
        NodeType::Subgraph,
    ];

    /// Parses a `type` value.
    pub fn parse(s: &str) -> Option<NodeType> {
        Some(match s {
            "task" => NodeType::Task,
            "decision" => NodeType::Decision,
            "gate" => NodeType::Gate,
            "loop" => NodeType::Loop,
            "map" => NodeType::Map,
            "subgraph" => NodeType::Subgraph,
            _ => return None,
        })
    }

    /// The name used in documents.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeType::Task => "task",
            NodeType::Decision => "decision",
            NodeType::Gate => "gate",
            NodeType::Loop => "loop",
            NodeType::Map => "map",
            NodeType::Subgraph => "subgraph",
        }
    }

    /// The type-specific block this type requires (`None` for `task`).
    pub fn block(self) -> Option<&'static str> {
        match self {
            NodeType::Task => None,
            other => Some(other.as_str()),
        }
    }

    /// Does this node own a fragment scope (loop, map, subgraph)?
    pub fn is_container(self) -> bool {
        matches!(self, NodeType::Loop | NodeType::Map | NodeType::Subgraph)
    }
}

/// Capability tiers, ordered (§11).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    Minimal = 1,
    Standard = 2,
    Advanced = 3,
    Frontier = 4,
}

impl Tier {
    /// All tiers, lowest first.
    pub const ALL: [Tier; 4] = [
        Tier::Minimal,
        Tier::Standard,
        Tier::Advanced,
        Tier::Frontier,
    ];

    /// Parses a tier name.
    pub fn parse(s: &str) -> Option<Tier> {
        Some(match s {
            "minimal" => Tier::Minimal,
            "standard" => Tier::Standard,
            "advanced" => Tier::Advanced,
            "frontier" => Tier::Frontier,
            _ => return None,
        })
    }

    /// The name used in documents.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Minimal => "minimal",
            Tier::Standard => "standard",
            Tier::Advanced => "advanced",
            Tier::Frontier => "frontier",
        }
    }

    /// The numeric `level` that must agree with this tier (AG141).
    pub fn level(self) -> u64 {
        self as u64
    }

    /// `n` tiers up, clamped at `frontier` (`escalate_intelligence`).
    pub fn up(self, n: u32) -> Tier {
        let level = (self as u32).saturating_add(n).min(4);
        match level {
            1 => Tier::Minimal,
            2 => Tier::Standard,
            3 => Tier::Advanced,
            _ => Tier::Frontier,
        }
    }
}

/// Member lookup tuned for AGS objects, which are small: a linear scan over the
/// (order-preserving) entries beats hashing the key with SipHash below about a dozen
/// members, and lookups are the reader's hottest operation. Falls back to the hash index
/// for large maps such as `nodes`.
pub trait Fields {
    /// The member `key`, if present.
    fn field(&self, key: &str) -> Option<&Value>;
    /// Is the member `key` present?
    fn has(&self, key: &str) -> bool {
        self.field(key).is_some()
    }
}

/// Maps up to this size are scanned linearly.
const LINEAR_SCAN_MAX: usize = 12;

impl Fields for Object {
    #[inline]
    fn field(&self, key: &str) -> Option<&Value> {
        if self.len() <= LINEAR_SCAN_MAX {
            self.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
        } else {
            self.get(key)
        }
    }
}

impl Fields for Value {
    #[inline]
    fn field(&self, key: &str) -> Option<&Value> {
        self.as_object().and_then(|o| o.field(key))
    }
}

/// Reads a string member.
pub fn str_of<'a>(obj: &'a Object, key: &str) -> Option<&'a str> {
    obj.field(key).and_then(Value::as_str)
}

/// Reads an object member.
pub fn obj_of<'a>(obj: &'a Object, key: &str) -> Option<&'a Object> {
    obj.field(key).and_then(Value::as_object)
}

/// Reads an array member (empty when missing or not an array).
pub fn arr_of<'a>(obj: &'a Object, key: &str) -> &'a [Value] {
    obj.field(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The string items of an array member, skipping non-strings.
pub fn strs_of<'a>(obj: &'a Object, key: &str) -> impl Iterator<Item = &'a str> + 'a {
    arr_of(obj, key).iter().filter_map(Value::as_str)
}

/// The entries of a map-typed member (`params`, `outputs`, `collect`, …) in declaration
/// order. `x-` keys are skipped: they are extensions, not names.
pub fn entries_of<'a>(
    obj: &'a Object,
    key: &str,
) -> impl Iterator<Item = (&'a str, &'a Value)> + 'a {
    obj_of(obj, key)
        .into_iter()
        .flat_map(|m| m.iter())
        .filter(|(k, _)| !k.starts_with("x-"))
        .map(|(k, v)| (k.as_str(), v))
}

/// One node of a scope.
#[derive(Clone, Debug)]
pub struct Node<'a> {
    /// The node id (its key in `nodes`).
    pub id: &'a str,
    /// Its position in the scope's `nodes` map (declaration order).
    pub index: usize,
    /// The node object (an empty object when the node is not an object).
    pub obj: &'a Object,
    /// JSON Pointer of the node.
    pub pointer: String,
}

static EMPTY: std::sync::LazyLock<Object> = std::sync::LazyLock::new(Object::new);

impl<'a> Node<'a> {
    /// The declared `type` string, if any.
    pub fn type_name(&self) -> Option<&'a str> {
        str_of(self.obj, "type")
    }

    /// The node type; an absent `type` is `task`, an unknown one is `None`.
    pub fn node_type(&self) -> Option<NodeType> {
        match self.obj.field("type") {
            None => Some(NodeType::Task),
            Some(Value::String(s)) => NodeType::parse(s),
            Some(_) => None,
        }
    }

    /// Member access.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.obj.field(key)
    }

    /// Member access (same as [`Node::get`], named like [`Fields::field`]).
    pub fn field(&self, key: &str) -> Option<&'a Value> {
        self.obj.field(key)
    }

    /// Object member access.
    pub fn obj(&self, key: &str) -> Option<&'a Object> {
        obj_of(self.obj, key)
    }

    /// The `depends_on` ids.
    pub fn depends_on(&self) -> impl Iterator<Item = &'a str> + 'a {
        strs_of(self.obj, "depends_on")
    }

    /// The type-specific block (`loop`, `map`, …) matching the node's type.
    pub fn block(&self) -> Option<&'a Object> {
        self.node_type()
            .and_then(NodeType::block)
            .and_then(|b| obj_of(self.obj, b))
    }

    /// Pointer of a member of this node.
    pub fn ptr(&self, segment: &str) -> String {
        pointer_push(&self.pointer, segment)
    }

    /// Declared output names (the `outputs` map), in order.
    pub fn declared_outputs(&self) -> impl Iterator<Item = &'a str> + 'a {
        entries_of(self.obj, "outputs").map(|(k, _)| k)
    }

    /// Every output name a reader may use: declared outputs plus the implicit ones
    /// (`decision` on decision and gate nodes, `gate.collect` keys, loop/map `collect`
    /// keys, subgraph `outputs_from` keys). `None` in the list would mean "unknown set";
    /// see [`Node::outputs_are_open`].
    pub fn readable_outputs(&self) -> Vec<&'a str> {
        let mut out: Vec<&'a str> = self.declared_outputs().collect();
        match self.node_type() {
            Some(NodeType::Decision) => out.push("decision"),
            Some(NodeType::Gate) => {
                out.push("decision");
                if let Some(g) = self.obj("gate") {
                    out.extend(entries_of(g, "collect").map(|(k, _)| k));
                }
            }
            Some(NodeType::Loop) | Some(NodeType::Map) => {
                if let Some(b) = self.block() {
                    out.extend(entries_of(b, "collect").map(|(k, _)| k));
                }
            }
            Some(NodeType::Subgraph) => {
                if let Some(b) = self.block() {
                    out.extend(entries_of(b, "outputs_from").map(|(k, _)| k));
                }
            }
            _ => {}
        }
        out
    }

    /// A subgraph node without `outputs_from` copies its child's outputs verbatim; for a
    /// `ref` child those are not known statically, so reads cannot be checked (AG206).
    pub fn outputs_are_open(&self) -> bool {
        self.node_type() == Some(NodeType::Subgraph)
            && self
                .block()
                .is_some_and(|b| !b.has("outputs_from") && b.has("ref"))
    }
}

/// What kind of scope a set of nodes lives in, with the extra names it binds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScopeKind<'a> {
    /// The graph itself.
    Root,
    /// An inline loop body (`loop.*` is in scope).
    LoopBody,
    /// An inline map body (the item and index names are in scope).
    MapBody { item: &'a str, index: &'a str },
    /// An inline subgraph.
    Inline,
    /// A named fragment in `subgraphs` (used by `use`). How it is used decides extra
    /// bindings: see [`Scope::uses`].
    Named(&'a str),
}

/// A graph or fragment: a set of nodes with entrypoints and edges.
#[derive(Clone, Debug)]
pub struct Scope<'a> {
    pub kind: ScopeKind<'a>,
    /// The graph or fragment object.
    pub obj: &'a Object,
    /// JSON Pointer of the graph or fragment.
    pub pointer: String,
    /// Container node that owns this scope (`None` for the root and named fragments).
    pub owner: Option<(String, String)>,
    /// Nesting depth: 0 for the root and named fragments, +1 per inline body.
    pub depth: usize,
}

impl<'a> Scope<'a> {
    /// The root scope of a document: the first of [`scopes`], without walking the others.
    pub fn root(root: &'a Object) -> Scope<'a> {
        Scope {
            kind: ScopeKind::Root,
            obj: root,
            pointer: String::new(),
            owner: None,
            depth: 0,
        }
    }

    /// Nodes in declaration order.
    pub fn nodes(&self) -> Vec<Node<'a>> {
        let nodes_ptr = pointer_push(&self.pointer, "nodes");
        obj_of(self.obj, "nodes")
            .into_iter()
            .flat_map(|m| m.iter())
            .enumerate()
            .map(|(index, (id, v))| Node {
                id: id.as_str(),
                index,
                obj: v.as_object().unwrap_or(&EMPTY),
                pointer: pointer_push(&nodes_ptr, id),
            })
            .collect()
    }

    /// The nodes whose object passes `keep`, as [`Scope::nodes`] gives them (same
    /// `index`), without building a [`Node`] for the others.
    pub fn nodes_where(
        &self,
        keep: impl Fn(&'a Object) -> bool + 'a,
    ) -> impl Iterator<Item = Node<'a>> + 'a {
        let nodes_ptr = pointer_push(&self.pointer, "nodes");
        obj_of(self.obj, "nodes")
            .into_iter()
            .flat_map(|m| m.iter())
            .enumerate()
            .filter_map(move |(index, (id, v))| {
                let obj = v.as_object().unwrap_or(&EMPTY);
                keep(obj).then(|| Node {
                    id: id.as_str(),
                    index,
                    obj,
                    pointer: pointer_push(&nodes_ptr, id),
                })
            })
    }

    /// Entrypoint ids.
    pub fn entrypoints(&self) -> impl Iterator<Item = &'a str> + 'a {
        strs_of(self.obj, "entrypoints")
    }

    /// Declared param names of this scope.
    pub fn param_names(&self) -> impl Iterator<Item = &'a str> + 'a {
        entries_of(self.obj, "params").map(|(k, _)| k)
    }

    /// Does this scope declare a `params` block at all?
    pub fn declares_params(&self) -> bool {
        self.obj.has("params")
    }

    /// Pointer of a member of this scope.
    pub fn ptr(&self, segment: &str) -> String {
        pointer_push(&self.pointer, segment)
    }

    /// Is this the root graph?
    pub fn is_root(&self) -> bool {
        self.kind == ScopeKind::Root
    }
}

/// Every scope of a document: the root, every inline body (recursively, at any depth)
/// and every named fragment, with the fragments' inline bodies too.
pub fn scopes(root: &Object) -> Vec<Scope<'_>> {
    let mut out = Vec::new();
    collect_scopes(Scope::root(root), &mut out);
    for (name, frag) in entries_of(root, "subgraphs") {
        if let Some(obj) = frag.as_object() {
            let scope = Scope {
                kind: ScopeKind::Named(name),
                obj,
                pointer: pointer_push("/subgraphs", name),
                owner: None,
                depth: 0,
            };
            collect_scopes(scope, &mut out);
        }
    }
    out
}

fn collect_scopes<'a>(scope: Scope<'a>, out: &mut Vec<Scope<'a>>) {
    // Only container nodes own a body: the others are passed over without building a
    // `Node` (and its pointer) for each.
    let containers: Vec<Node<'a>> = scope
        .nodes_where(|obj| match obj.field("type") {
            Some(Value::String(t)) => NodeType::parse(t).is_some_and(NodeType::is_container),
            _ => false,
        })
        .collect();
    let depth = scope.depth;
    out.push(scope);
    for node in containers {
        if let Some((kind, obj, pointer)) = inline_body(&node) {
            let child = Scope {
                kind,
                obj,
                pointer,
                owner: Some((node.id.to_string(), node.pointer.clone())),
                depth: depth + 1,
            };
            collect_scopes(child, out);
        }
    }
}

/// The inline fragment a container node owns, if any.
pub fn inline_body<'a>(node: &Node<'a>) -> Option<(ScopeKind<'a>, &'a Object, String)> {
    let ty = node.node_type()?;
    let block_name = ty.block()?;
    let block = node.obj(block_name)?;
    let (key, kind) = match ty {
        NodeType::Loop => ("body", ScopeKind::LoopBody),
        NodeType::Map => (
            "body",
            ScopeKind::MapBody {
                item: str_of(block, "as").unwrap_or("item"),
                index: str_of(block, "index_as").unwrap_or("index"),
            },
        ),
        NodeType::Subgraph => ("inline", ScopeKind::Inline),
        _ => return None,
    };
    let body = obj_of(block, key)?;
    let pointer = pointer_push(&node.ptr(block_name), key);
    Some((kind, body, pointer))
}

/// The effective value of a node block after `defaults` (§6.3): shallow, per block, arrays
/// replaced. `defaults` never apply to gates for `intelligence` and `failure` (a gate never
/// calls a model and never retries one; DIGEST §1.6 gap, decided in docs/semantics.md).
pub fn effective_block<'a>(
    node: &Node<'a>,
    defaults: Option<&'a Object>,
    block: &str,
) -> Option<std::borrow::Cow<'a, Object>> {
    use std::borrow::Cow;
    let own = node.obj(block);
    // The node's type is looked up only when `defaults` has the block to give.
    let inherited = defaults.and_then(|d| obj_of(d, block)).filter(|_| {
        !(matches!(block, "intelligence" | "failure") && node.node_type() == Some(NodeType::Gate))
    });
    match (own, inherited) {
        (Some(o), None) => Some(Cow::Borrowed(o)),
        (None, Some(d)) => Some(Cow::Borrowed(d)),
        (None, None) => None,
        (Some(o), Some(d)) => {
            let mut merged = d.clone();
            for (k, v) in o {
                merged.insert(k.clone(), v.clone());
            }
            Some(Cow::Owned(merged))
        }
    }
}

/// The effective tier of a node, after defaults. `None` when neither declares one
/// (weft then routes at `standard`; see docs/semantics.md).
pub fn effective_tier(node: &Node<'_>, defaults: Option<&Object>) -> Option<Tier> {
    if node.node_type() == Some(NodeType::Gate) {
        return None;
    }
    let intel = node
        .obj("intelligence")
        .or_else(|| defaults.and_then(|d| obj_of(d, "intelligence")))?;
    str_of(intel, "tier").and_then(Tier::parse)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scopes_include_nested_inline_bodies_and_named_fragments() {
        let doc = json!({
            "nodes": {
                "a": {"type": "loop", "loop": {"body": {"entrypoints": ["b"], "nodes": {
                    "b": {"type": "map", "map": {"as": "page", "body": {"entrypoints": ["c"], "nodes": {"c": {}}}}}
                }}}}
            },
            "subgraphs": {"frag": {"entrypoints": ["d"], "nodes": {"d": {}}}}
        });
        let root = doc.as_object().unwrap();
        let all = scopes(root);
        let kinds: Vec<_> = all.iter().map(|s| (s.pointer.as_str(), s.depth)).collect();
        assert_eq!(
            kinds,
            vec![
                ("", 0),
                ("/nodes/a/loop/body", 1),
                ("/nodes/a/loop/body/nodes/b/map/body", 2),
                ("/subgraphs/frag", 0),
            ]
        );
        assert_eq!(
            all[2].kind,
            ScopeKind::MapBody {
                item: "page",
                index: "index"
            }
        );
    }

    #[test]
    fn nodes_where_gives_the_kept_nodes_as_nodes_does() {
        let doc = json!({"nodes": {"a": {}, "b~/c": {"human": []}, "d": 3, "e": {"human": []}}});
        let scope = Scope::root(doc.as_object().unwrap());
        let kept: Vec<_> = scope
            .nodes_where(|obj| obj.contains_key("human"))
            .map(|n| (n.id, n.index, n.pointer))
            .collect();
        let all: Vec<_> = scope
            .nodes()
            .into_iter()
            .filter(|n| n.obj.contains_key("human"))
            .map(|n| (n.id, n.index, n.pointer))
            .collect();
        assert_eq!(kept, all);
        assert_eq!(
            kept,
            vec![
                ("b~/c", 1, "/nodes/b~0~1c".to_string()),
                ("e", 3, "/nodes/e".to_string())
            ]
        );
    }

    #[test]
    fn implicit_outputs_of_gates_and_containers_are_readable() {
        let doc = json!({"nodes": {
            "g": {"type": "gate", "gate": {"mode": "input", "collect": {"why": {}}}},
            "s": {"type": "subgraph", "subgraph": {"use": "f", "outputs_from": {"log": "outputs.log"}}},
            "r": {"type": "subgraph", "subgraph": {"ref": {"uri": "./x.yaml"}}}
        }});
        let scope = &scopes(doc.as_object().unwrap())[0];
        let nodes = scope.nodes();
        assert_eq!(nodes[0].readable_outputs(), vec!["decision", "why"]);
        assert_eq!(nodes[1].readable_outputs(), vec!["log"]);
        assert!(!nodes[1].outputs_are_open());
        assert!(nodes[2].outputs_are_open());
    }

    #[test]
    fn defaults_merge_shallowly_and_skip_gates() {
        let doc = json!({"nodes": {
            "t": {"failure": {"on_exhausted": "skip"}},
            "g": {"type": "gate", "gate": {"mode": "approve"}}
        }, "defaults": {"failure": {"retry": {"max_attempts": 3}}, "intelligence": {"tier": "advanced"}}});
        let root = doc.as_object().unwrap();
        let defaults = obj_of(root, "defaults");
        let nodes = scopes(root)[0].nodes();
        let merged = effective_block(&nodes[0], defaults, "failure").unwrap();
        assert_eq!(merged.field("on_exhausted"), Some(&json!("skip")));
        assert_eq!(merged.field("retry"), Some(&json!({"max_attempts": 3})));
        assert!(effective_block(&nodes[1], defaults, "failure").is_none());
        assert_eq!(effective_tier(&nodes[0], defaults), Some(Tier::Advanced));
        assert_eq!(effective_tier(&nodes[1], defaults), None);
    }
}

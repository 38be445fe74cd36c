//! Addresses of scope instances and of node instances in them: `fix_loop[2].run_tests` is
//! node `run_tests` in the third iteration of loop node `fix_loop` (of the root scope);
//! `docs[0].fetch` is `fetch` in the first item of map `docs`; `audit.check` is `check` in
//! the instance of subgraph `audit`. The root scope's path is empty and its nodes are
//! addressed by their bare id, so the root-only event vocabulary stays valid as is.
//!
//! AGS node ids (`^[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?$`) contain neither `.` nor `[`, so
//! the text form is unambiguous and [`NodeAddr::parse`] inverts [`NodeAddr`]'s `Display`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One step down: from a container node (`loop`, `map`, `subgraph`) into one instance of
/// its fragment. `index` is the iteration (loop) or the item (map), 0-based; a subgraph has
/// one instance and no index.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Step {
    pub container: String,
    pub index: Option<u32>,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.container)?;
        if let Some(i) = self.index {
            write!(f, "[{i}]")?;
        }
        Ok(())
    }
}

/// The address of a scope instance: the steps from the root. Ordered step by step, so the
/// instances of one container sort by index.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ScopePath(Vec<Step>);

impl ScopePath {
    /// The root scope.
    pub fn root() -> ScopePath {
        ScopePath(Vec::new())
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// Nesting depth: 0 for the root.
    pub fn depth(&self) -> usize {
        self.0.len()
    }

    pub fn steps(&self) -> &[Step] {
        &self.0
    }

    /// The instance `index` of `container`'s fragment inside this scope.
    pub fn child(&self, container: &str, index: Option<u32>) -> ScopePath {
        let mut steps = self.0.clone();
        steps.push(Step {
            container: container.to_string(),
            index,
        });
        ScopePath(steps)
    }

    /// The enclosing scope and the step into this one; `None` for the root.
    pub fn split_last(&self) -> Option<(ScopePath, &Step)> {
        let (last, rest) = self.0.split_last()?;
        Some((ScopePath(rest.to_vec()), last))
    }

    /// Parses `a[2].b` (the text of a scope path; empty for the root).
    pub fn parse(text: &str) -> Result<ScopePath, PathError> {
        if text.is_empty() {
            return Ok(ScopePath::root());
        }
        text.split('.')
            .map(parse_step)
            .collect::<Result<_, _>>()
            .map(ScopePath)
    }
}

impl fmt::Display for ScopePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{step}")?;
        }
        Ok(())
    }
}

/// A node instance: a node id in a scope instance.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NodeAddr {
    pub scope: ScopePath,
    pub node: String,
}

impl NodeAddr {
    /// A node of the root scope.
    pub fn root(node: &str) -> NodeAddr {
        NodeAddr {
            scope: ScopePath::root(),
            node: node.to_string(),
        }
    }

    /// Parses `fix_loop[2].run_tests`; the last segment is the node and carries no index.
    pub fn parse(text: &str) -> Result<NodeAddr, PathError> {
        let (scope, node) = match text.rsplit_once('.') {
            Some((scope, node)) => (ScopePath::parse(scope)?, node),
            None => (ScopePath::root(), text),
        };
        check_id(node, text)?;
        Ok(NodeAddr {
            scope,
            node: node.to_string(),
        })
    }
}

impl fmt::Display for NodeAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.scope.is_root() {
            write!(f, "{}.", self.scope)?;
        }
        f.write_str(&self.node)
    }
}

/// A malformed address text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a node address: {why} (expected e.g. `fix_loop[2].run_tests`)")]
pub struct PathError {
    pub text: String,
    pub why: &'static str,
}

fn parse_step(segment: &str) -> Result<Step, PathError> {
    let (container, index) = match segment.split_once('[') {
        Some((id, rest)) => {
            let digits = rest.strip_suffix(']').ok_or_else(|| PathError {
                text: segment.to_string(),
                why: "an index must end with `]`",
            })?;
            let canonical = !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
                && (digits == "0" || !digits.starts_with('0'));
            let index = digits
                .parse::<u32>()
                .ok()
                .filter(|_| canonical)
                .ok_or_else(|| PathError {
                    text: segment.to_string(),
                    why: "an index is a decimal number without leading zeros",
                })?;
            (id, Some(index))
        }
        None => (segment, None),
    };
    check_id(container, segment)?;
    Ok(Step {
        container: container.to_string(),
        index,
    })
}

/// The AGS `node_id` rule.
fn check_id(id: &str, text: &str) -> Result<(), PathError> {
    let bytes = id.as_bytes();
    let inner = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-';
    let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let ok = (1..=64).contains(&bytes.len())
        && bytes.first().is_some_and(edge)
        && bytes.last().is_some_and(edge)
        && bytes.iter().all(inner);
    if ok {
        Ok(())
    } else {
        Err(PathError {
            text: text.to_string(),
            why: "a node id is 1–64 of a-z, 0-9, `_` and `-`, starting and ending with a letter or digit",
        })
    }
}

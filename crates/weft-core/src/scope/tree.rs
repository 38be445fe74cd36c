//! [`ScopeTree`]: the scope instances of one run — the root scope and every fragment
//! instance opened under a container node (`loop` iteration, `map` item, `subgraph`) — each
//! with its own [`Scheduler`] (DIGEST §6.5: "run the same scheduler recursively over each
//! fragment instance; don't inline fragment nodes into the parent").
//!
//! The tree routes events to their instance and keeps the invariants that link them:
//! - a fragment instance opens only under a container node that is `Running` in a scope
//!   that has not finished, at a fresh path, within the depth limit;
//! - **a container cannot settle while one of its fragment instances is unfinished** (it
//!   "stays running until its fragment ends");
//! - cancelling a scope cancels its unfinished descendants first, innermost first.
//!
//! What a finished fragment means for its container (next iteration, next item, the
//! container's outcome) is the shell's decision, reported back as ordinary events. Like the
//! scheduler, the tree is pure: no IO, no clock; an error changes nothing.

use std::collections::BTreeMap;

use super::path::{NodeAddr, ScopePath};
use crate::scheduler::{Action, Event, ProtocolError, Scheduler};
use crate::state::NodeState;

/// A scope instance of the tree; the root is `ScopeId(0)`. Ids are never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ScopeId(pub usize);

impl ScopeId {
    pub const ROOT: ScopeId = ScopeId(0);
}

/// An action of one scope instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopedAction {
    pub scope: ScopeId,
    pub action: Action,
}

/// An operation that does not fit the tree. The tree is unchanged after one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    #[error("there is no scope instance {0:?}")]
    UnknownScope(ScopeId),
    #[error("the scope instance `{0}` is already open")]
    AlreadyOpen(ScopePath),
    #[error(
        "node {node} of scope `{scope}` is {state:?}: only a running container opens a fragment instance"
    )]
    ContainerNotRunning {
        scope: ScopePath,
        node: usize,
        state: NodeState,
    },
    #[error("scope `{scope}` has finished: nothing opens under it")]
    ParentFinished { scope: ScopePath },
    #[error("`{path}` would nest {depth} scopes deep; the limit is {max}")]
    TooDeep {
        path: ScopePath,
        depth: usize,
        max: usize,
    },
    #[error(
        "container `{container}` cannot settle: its fragment instance `{child}` has not finished"
    )]
    FragmentUnfinished {
        container: NodeAddr,
        child: ScopePath,
    },
    #[error("in scope `{scope}`: {source}")]
    Protocol {
        scope: ScopePath,
        #[source]
        source: ProtocolError,
    },
}

#[derive(Clone, Debug)]
struct Instance {
    path: ScopePath,
    /// The enclosing instance and the container node in it; `None` for the root.
    parent: Option<(ScopeId, usize)>,
    scheduler: Scheduler,
    /// Fragment instances opened under each container node of this scope, in opening order.
    children: BTreeMap<usize, Vec<ScopeId>>,
}

/// The scope instances of a run.
#[derive(Clone, Debug)]
pub struct ScopeTree {
    instances: Vec<Instance>,
    by_path: BTreeMap<ScopePath, ScopeId>,
    max_depth: usize,
}

impl ScopeTree {
    /// A tree with the root scope only. `max_depth` bounds the nesting of fragment
    /// instances (AGS `constraints.max_subgraph_depth`, default 5).
    pub fn new(root: Scheduler, max_depth: usize) -> ScopeTree {
        let mut by_path = BTreeMap::new();
        by_path.insert(ScopePath::root(), ScopeId::ROOT);
        ScopeTree {
            instances: vec![Instance {
                path: ScopePath::root(),
                parent: None,
                scheduler: root,
                children: BTreeMap::new(),
            }],
            by_path,
            max_depth,
        }
    }

    /// Opens instance `index` of the fragment of `container`, a running node of `parent`,
    /// scheduled by `scheduler` (built by the shell from the fragment; not begun yet: send it
    /// `Event::Begin` through [`ScopeTree::apply`]).
    pub fn open(
        &mut self,
        parent: ScopeId,
        container: usize,
        index: Option<u32>,
        scheduler: Scheduler,
    ) -> Result<ScopeId, TreeError> {
        let inst = self.instance(parent)?;
        if inst.scheduler.is_finished() {
            return Err(TreeError::ParentFinished {
                scope: inst.path.clone(),
            });
        }
        let graph = inst.scheduler.graph();
        if container >= graph.node_count() || !graph.is_live(container) {
            return Err(TreeError::Protocol {
                scope: inst.path.clone(),
                source: ProtocolError::UnknownNode(container),
            });
        }
        let state = inst.scheduler.state(container);
        if state != NodeState::Running {
            return Err(TreeError::ContainerNotRunning {
                scope: inst.path.clone(),
                node: container,
                state,
            });
        }
        let path = inst.path.child(&graph.node(container).id, index);
        if path.depth() > self.max_depth {
            return Err(TreeError::TooDeep {
                depth: path.depth(),
                path,
                max: self.max_depth,
            });
        }
        if self.by_path.contains_key(&path) {
            return Err(TreeError::AlreadyOpen(path));
        }
        let id = ScopeId(self.instances.len());
        self.instances.push(Instance {
            path: path.clone(),
            parent: Some((parent, container)),
            scheduler,
            children: BTreeMap::new(),
        });
        self.by_path.insert(path, id);
        if let Some(p) = self.instances.get_mut(parent.0) {
            p.children.entry(container).or_default().push(id);
        }
        Ok(id)
    }

    /// Applies `event` to the instance `scope`; returns the actions, tagged with their
    /// instance. `Event::Cancel` cancels the unfinished descendants first (innermost first),
    /// and their actions come first. A `Settled` of a container with an unfinished fragment
    /// instance is refused.
    pub fn apply(&mut self, scope: ScopeId, event: &Event) -> Result<Vec<ScopedAction>, TreeError> {
        let inst = self.instance(scope)?;
        if let Event::Settled { node, .. } = event
            && let Some(child) = inst
                .children
                .get(node)
                .into_iter()
                .flatten()
                .find(|c| !self.instances[c.0].scheduler.is_finished())
        {
            return Err(TreeError::FragmentUnfinished {
                container: NodeAddr {
                    scope: inst.path.clone(),
                    node: inst.scheduler.graph().node(*node).id.clone(),
                },
                child: self.instances[child.0].path.clone(),
            });
        }
        if matches!(event, Event::Cancel) {
            return Ok(self.cancel(scope));
        }
        let inst = &mut self.instances[scope.0];
        let actions = inst
            .scheduler
            .apply(event)
            .map_err(|source| TreeError::Protocol {
                scope: inst.path.clone(),
                source,
            })?;
        Ok(tag(scope, actions))
    }

    /// Cancels `scope` and its unfinished descendants, innermost first. Cancelling a
    /// finished instance is a no-op (a cancel races with the end of the work it stops).
    fn cancel(&mut self, scope: ScopeId) -> Vec<ScopedAction> {
        let mut order = Vec::new();
        self.post_order(scope, &mut order);
        let mut out = Vec::new();
        for id in order {
            let sched = &mut self.instances[id.0].scheduler;
            if sched.is_finished() {
                continue;
            }
            // Cancel is accepted in every unfinished state, so this cannot fail.
            if let Ok(actions) = sched.apply(&Event::Cancel) {
                out.extend(tag(id, actions));
            }
        }
        out
    }

    fn post_order(&self, id: ScopeId, out: &mut Vec<ScopeId>) {
        for kids in self.instances[id.0].children.values() {
            for &k in kids {
                self.post_order(k, out);
            }
        }
        out.push(id);
    }

    fn instance(&self, id: ScopeId) -> Result<&Instance, TreeError> {
        self.instances.get(id.0).ok_or(TreeError::UnknownScope(id))
    }

    /// The scheduler of an instance.
    pub fn scheduler(&self, id: ScopeId) -> Option<&Scheduler> {
        self.instances.get(id.0).map(|i| &i.scheduler)
    }

    pub fn path(&self, id: ScopeId) -> Option<&ScopePath> {
        self.instances.get(id.0).map(|i| &i.path)
    }

    /// The instance at `path`, if it was opened.
    pub fn find(&self, path: &ScopePath) -> Option<ScopeId> {
        self.by_path.get(path).copied()
    }

    /// The enclosing instance and the container node in it; `None` for the root.
    pub fn parent(&self, id: ScopeId) -> Option<(ScopeId, usize)> {
        self.instances.get(id.0).and_then(|i| i.parent)
    }

    /// The fragment instances opened under `container` of `id`, in opening order.
    pub fn children(&self, id: ScopeId, container: usize) -> &[ScopeId] {
        self.instances
            .get(id.0)
            .and_then(|i| i.children.get(&container))
            .map_or(&[], Vec::as_slice)
    }

    /// The address of node `node` of instance `id`.
    pub fn addr(&self, id: ScopeId, node: usize) -> Option<NodeAddr> {
        let inst = self.instances.get(id.0)?;
        let graph = inst.scheduler.graph();
        (node < graph.node_count()).then(|| NodeAddr {
            scope: inst.path.clone(),
            node: graph.node(node).id.clone(),
        })
    }

    /// Number of instances ever opened, the root included.
    pub fn len(&self) -> usize {
        self.instances.len()
    }

    /// Never true: the root always exists.
    pub fn is_empty(&self) -> bool {
        false
    }
}

fn tag(scope: ScopeId, actions: Vec<Action>) -> Vec<ScopedAction> {
    actions
        .into_iter()
        .map(|action| ScopedAction { scope, action })
        .collect()
}

//! Test helpers: a one-line graph notation and a driver that renders actions as short
//! strings, so scheduler tests read as tables of (event, expected actions).
//!
//! Notation, statements separated by `;` or newlines:
//! - nodes: `a* b? c:any d:2 e@g` (`*` entry, `?` has a `when`, `:any`/`:all`/`:N` join,
//!   `@g` concurrency group), declared in order of appearance;
//! - edges: `a -> b` sequence, `a => b` conditional (guarded), `a !> b` on_failure,
//!   `a !?> b` guarded on_failure; chains like `a -> b -> c` are fine. Nodes named only in
//!   edges are declared when first seen.
#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the helpers"
)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic in a helper is a test failure with a message"
)]

use weft_core::{
    Action, EdgeKind, EdgeSpec, Event, GraphBuilder, Join, NodeSpec, Options, Outcome,
    ProtocolError, Scheduler, SkipReason, WorkGraph,
};

fn node_spec(token: &str) -> NodeSpec {
    let end = token
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(token.len());
    let mut spec = NodeSpec::new(&token[..end]);
    let mut rest = &token[end..];
    while let Some(c) = rest.chars().next() {
        rest = &rest[1..];
        let word_end = rest.find(['*', '?', ':', '@']).unwrap_or(rest.len());
        match c {
            '*' => spec.entry = true,
            '?' => spec.has_when = true,
            ':' => {
                spec.join = match &rest[..word_end] {
                    "any" => Join::Any,
                    "all" => Join::All,
                    n => Join::NOf(n.parse().unwrap()),
                };
                rest = &rest[word_end..];
            }
            '@' => {
                spec.concurrency_group = Some(rest[..word_end].to_string());
                rest = &rest[word_end..];
            }
            _ => panic!("bad node token {token}"),
        }
    }
    spec
}

fn edge_kind(op: &str) -> (EdgeKind, bool) {
    match op {
        "->" => (EdgeKind::Sequence, false),
        "=>" => (EdgeKind::Conditional, true),
        "!>" => (EdgeKind::OnFailure, false),
        "!?>" => (EdgeKind::OnFailure, true),
        _ => panic!("bad edge operator {op}"),
    }
}

/// Builds the builder for a graph in the notation (for tests of build errors).
pub fn builder(text: &str) -> GraphBuilder {
    let mut b = GraphBuilder::new();
    let mut names: Vec<String> = Vec::new();
    let mut index = |b: &mut GraphBuilder, token: &str| -> usize {
        let spec = node_spec(token);
        if let Some(i) = names.iter().position(|n| *n == spec.id) {
            return i;
        }
        names.push(spec.id.clone());
        b.node(spec)
    };
    for stmt in text
        .split([';', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let tokens: Vec<&str> = stmt.split_whitespace().collect();
        if tokens.len() > 1 && tokens[1].ends_with('>') {
            let mut from = index(&mut b, tokens[0]);
            for pair in tokens[1..].chunks(2) {
                let to = index(&mut b, pair[1]);
                let (kind, guarded) = edge_kind(pair[0]);
                b.edge(EdgeSpec {
                    from,
                    to,
                    kind,
                    guarded,
                });
                from = to;
            }
        } else {
            for t in tokens {
                index(&mut b, t);
            }
        }
    }
    b
}

/// A graph in the notation; panics if invalid.
pub fn graph(text: &str) -> WorkGraph {
    builder(text).build().unwrap()
}

/// Renders an action: `start a`, `when a`, `skip a join`, `finished`.
pub fn render(g: &WorkGraph, a: &Action) -> String {
    match a {
        Action::Start { node } => format!("start {}", g.node(*node).id),
        Action::EvaluateWhen { node } => format!("when {}", g.node(*node).id),
        Action::Skipped { node, reason } => {
            let why = match reason {
                SkipReason::WhenFalse => "when",
                SkipReason::JoinUnsatisfiable => "join",
                SkipReason::Halted => "halted",
                SkipReason::Unreachable => "unreachable",
            };
            format!("skip {} {why}", g.node(*node).id)
        }
        Action::Finished { .. } => "finished".to_string(),
    }
}

/// Drives a scheduler by node names and records every event and action for replay checks.
pub struct Driver {
    pub s: Scheduler,
    pub events: Vec<Event>,
    pub actions: Vec<Vec<Action>>,
}

impl Driver {
    pub fn new(text: &str, max_parallel: usize, policy: weft_core::FailurePolicy) -> Driver {
        let options = Options {
            max_parallel,
            on_node_failure: policy,
        };
        Driver {
            s: Scheduler::new(graph(text), options),
            events: Vec::new(),
            actions: Vec::new(),
        }
    }

    pub fn isolate(text: &str) -> Driver {
        Self::new(text, 8, weft_core::FailurePolicy::Isolate)
    }

    pub fn n(&self, name: &str) -> usize {
        self.s
            .graph()
            .find(name)
            .unwrap_or_else(|| panic!("no node {name}"))
    }

    /// The live edge `from → to` (the first one, if several).
    pub fn e(&self, from: &str, to: &str) -> usize {
        let (f, t) = (self.n(from), self.n(to));
        *self
            .s
            .graph()
            .outgoing(f)
            .iter()
            .find(|&&e| self.s.graph().edge(e).to == t)
            .unwrap_or_else(|| panic!("no edge {from} -> {to}"))
    }

    pub fn try_apply(&mut self, event: Event) -> Result<Vec<String>, ProtocolError> {
        let actions = self.s.apply(&event)?;
        let rendered = actions.iter().map(|a| render(self.s.graph(), a)).collect();
        self.events.push(event);
        self.actions.push(actions);
        Ok(rendered)
    }

    pub fn apply(&mut self, event: Event) -> Vec<String> {
        self.try_apply(event).unwrap()
    }

    pub fn begin(&mut self) -> Vec<String> {
        self.apply(Event::Begin)
    }

    pub fn settle(&mut self, name: &str, outcome: Outcome) -> Vec<String> {
        self.settle_with(name, outcome, &[])
    }

    /// Settles with guard values given as `(target, value)` for the node's guarded edges.
    pub fn settle_with(
        &mut self,
        name: &str,
        outcome: Outcome,
        guards: &[(&str, bool)],
    ) -> Vec<String> {
        let guards = guards
            .iter()
            .map(|&(to, v)| (self.e(name, to), v))
            .collect();
        self.apply(Event::Settled {
            node: self.n(name),
            outcome,
            guards,
        })
    }

    pub fn when(&mut self, name: &str, value: bool) -> Vec<String> {
        self.apply(Event::WhenResolved {
            node: self.n(name),
            value,
        })
    }

    pub fn state(&self, name: &str) -> weft_core::NodeState {
        self.s.state(self.n(name))
    }

    /// Replays the recorded events on a fresh scheduler over `graph` and checks the actions.
    pub fn assert_replays(&self, text: &str) {
        let mut fresh = Scheduler::new(graph(text), self.s.options());
        for (event, expected) in self.events.iter().zip(&self.actions) {
            assert_eq!(
                &fresh.apply(event).unwrap(),
                expected,
                "replay diverged at {event:?}"
            );
        }
    }
}

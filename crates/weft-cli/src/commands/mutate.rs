//! `weft mutate RUN (--cancel-node NODE | --add-edge FROM TO [--on-failure] | --add-node FILE
//! | --plan FILE | --split NODE --parts FILE [--fan] | --merge A B --into FILE | --hold |
//! --release)`: changes the graph of a run that has not finished. It appends
//! `graph_mutated` (an inbox event, `docs/engine.md` §2e) once the mutation fits the run as
//! its log stands; a live driver applies it at its next read of the log, a suspended run
//! when it is resumed. A FILE is JSON (`-`: stdin).
//!
//! Exit codes: 0 appended; 1 refused (unknown run or node, finished run, a new node that
//! fails a document's checks, or a mutation the scheduler refuses: the node has started,
//! the edge closes a cycle, a plan name resolves nowhere); 2 a FILE that cannot be read or
//! is not the JSON its flag takes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use weft_engine::mutation::{After, GraphMutation, LoggedEdge, LoggedShape, NewNode, PlannedNode};

use super::decide::Identity;
use super::record::open_store;

/// What `weft mutate` changes (exactly one).
#[derive(clap::Args, Debug)]
#[group(required = true, multiple = false)]
pub struct MutateOp {
    /// Cancel a node that has not started, and every node reachable only through it.
    #[arg(long, value_name = "NODE")]
    pub cancel_node: Option<String>,
    /// Add an edge FROM -> TO into a pending node (sequence; `--on-failure`: on_failure).
    #[arg(long, num_args = 2, value_names = ["FROM", "TO"])]
    pub add_edge: Option<Vec<String>>,
    /// Add the node in FILE: `{"id", "node": {AGS node}, "after": [{"from", "edge"}]}`
    /// (no `after`: an entry node, ready at once).
    #[arg(long, value_name = "FILE")]
    pub add_node: Option<PathBuf>,
    /// Add the nodes of FILE, all or nothing: `{"nodes": [{"id", "node", "after"}, …]}`.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// Replace the pending NODE by the parts of `--parts` (a chain; `--fan`: side by side).
    #[arg(long, value_name = "NODE", requires = "parts")]
    pub split: Option<String>,
    /// Replace the independent pending nodes A and B by the node of `--into`.
    #[arg(long, num_args = 2, value_names = ["A", "B"], requires = "into")]
    pub merge: Option<Vec<String>>,
    /// Keep the run open while it is idle: it waits for more work until `--release`.
    #[arg(long)]
    pub hold: bool,
    /// End a `--hold`: the run finishes once it is idle.
    #[arg(long)]
    pub release: bool,
}

#[derive(clap::Args, Debug)]
pub struct MutateArgs {
    /// The run id.
    #[arg(value_name = "RUN")]
    pub run: String,
    #[command(flatten)]
    pub op: MutateOp,
    /// With `--add-edge`: an on_failure edge (TO runs when FROM fails).
    #[arg(long, requires = "add_edge")]
    pub on_failure: bool,
    /// With `--split`: the parts, `[{"id", "node"}, …]` (JSON FILE, `-`: stdin).
    #[arg(long, value_name = "FILE", requires = "split")]
    pub parts: Option<PathBuf>,
    /// With `--split`: every part takes a copy of the node's edges (default: a chain).
    #[arg(long, requires = "split")]
    pub fan: bool,
    /// With `--merge`: the node that replaces both, `{"id", "node"}` (JSON FILE, `-`: stdin).
    #[arg(long, value_name = "FILE", requires = "merge")]
    pub into: Option<PathBuf>,
    /// The event store.
    #[arg(long, value_name = "PATH", default_value = ".weft/weft.db")]
    pub db: PathBuf,
    /// Who asks (default: $USER, else $LOGNAME, else the OS account of this process's
    /// user).
    #[arg(long = "as", value_name = "ID")]
    pub actor: Option<String>,
}

/// Why a FILE of `weft mutate` cannot be used (exit 2), in one line.
#[derive(Debug)]
struct InputError(String);

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The text of FILE (`-`: stdin).
fn read_text(path: &Path) -> Result<String, InputError> {
    let name = path.display().to_string();
    if name == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map(|_| text)
    } else {
        std::fs::read_to_string(path)
    }
    .map_err(|e| InputError(format!("cannot read {name}: {e}")))
}

/// FILE read straight into `T` (no JSON value tree first: a plan of 10,000 nodes is 1.3
/// MB), or where it is not: `FILE:LINE:COL: FILE is not …` (or `is not JSON`).
fn parse<T: DeserializeOwned>(path: &Path, what: &'static str) -> Result<T, InputError> {
    let text = read_text(path)?;
    serde_json::from_str(&text).map_err(|e| {
        let name = path.display();
        let at = format!(" at line {} column {}", e.line(), e.column());
        let message = e.to_string();
        let message = message.strip_suffix(&at).unwrap_or(&message);
        let is_not = match e.classify() {
            serde_json::error::Category::Data => what,
            _ => "JSON",
        };
        InputError(format!(
            "{name}:{}:{}: {name} is not {is_not}: {message}",
            e.line(),
            e.column()
        ))
    })
}

/// A new node as a FILE gives it: `{"id", "node"}`; a member it does not know is refused
/// (a misspelt `after` would otherwise make an entry node).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeFile {
    id: String,
    node: Map<String, Value>,
}

impl From<NodeFile> for NewNode {
    fn from(f: NodeFile) -> Self {
        NewNode {
            id: f.id,
            node: f.node,
        }
    }
}

/// A node with its incoming edges, as `--add-node` and each of `--plan`'s nodes give it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WiredNodeFile {
    id: String,
    node: Map<String, Value>,
    #[serde(default)]
    after: Vec<AfterFile>,
}

impl WiredNodeFile {
    fn into_parts(self) -> (NewNode, Vec<After>) {
        let node = NewNode {
            id: self.id,
            node: self.node,
        };
        (node, self.after.into_iter().map(After::from).collect())
    }
}

/// An incoming edge: `{"from", "edge"}` (`edge`: `sequence`, the default, or `on_failure`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AfterFile {
    from: String,
    #[serde(default)]
    edge: Option<LoggedEdge>,
}

impl From<AfterFile> for After {
    fn from(f: AfterFile) -> Self {
        After {
            from: f.from,
            edge: f.edge.unwrap_or(LoggedEdge::Sequence),
        }
    }
}

/// `--plan`'s FILE: `{"nodes": [...]}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    nodes: Vec<WiredNodeFile>,
}

fn mutation(args: &MutateArgs) -> Result<Option<GraphMutation>, InputError> {
    let op = &args.op;
    if let Some(node) = &op.cancel_node {
        return Ok(Some(GraphMutation::CancelNode { node: node.clone() }));
    }
    if let Some([from, to]) = op.add_edge.as_deref() {
        return Ok(Some(GraphMutation::AddEdge {
            from: from.clone(),
            to: to.clone(),
            edge: if args.on_failure {
                LoggedEdge::OnFailure
            } else {
                LoggedEdge::Sequence
            },
        }));
    }
    if let Some(file) = &op.add_node {
        let (node, after) =
            parse::<WiredNodeFile>(file, r#"a node to add ({"id", "node", "after"})"#)?
                .into_parts();
        return Ok(Some(GraphMutation::AddNode { node, after }));
    }
    if let Some(file) = &op.plan {
        let plan = parse::<PlanFile>(file, r#"a plan ({"nodes": [{"id", "node", "after"}]})"#)?;
        let nodes = plan
            .nodes
            .into_iter()
            .map(|n| {
                let (node, after) = n.into_parts();
                PlannedNode { node, after }
            })
            .collect();
        return Ok(Some(GraphMutation::Plan { nodes }));
    }
    if let (Some(node), Some(parts)) = (&op.split, &args.parts) {
        return Ok(Some(GraphMutation::Split {
            node: node.clone(),
            parts: parse::<Vec<NodeFile>>(parts, r#"the parts ([{"id", "node"}])"#)?
                .into_iter()
                .map(NewNode::from)
                .collect(),
            shape: if args.fan {
                LoggedShape::Fan
            } else {
                LoggedShape::Chain
            },
        }));
    }
    if let (Some([a, b]), Some(into)) = (op.merge.as_deref(), &args.into) {
        return Ok(Some(GraphMutation::Merge {
            a: a.clone(),
            b: b.clone(),
            into: parse::<NodeFile>(into, r#"the node to merge into ({"id", "node"})"#)?.into(),
        }));
    }
    if op.hold {
        return Ok(Some(GraphMutation::Hold));
    }
    Ok(op.release.then_some(GraphMutation::Release))
}

pub fn run(args: &MutateArgs) -> anyhow::Result<ExitCode> {
    let db: &Path = &args.db;
    let Some(store) = open_store(db)? else {
        return Ok(ExitCode::from(1));
    };
    let mutation = match mutation(args) {
        Ok(Some(m)) => m,
        Ok(None) => {
            writeln!(anstream::stderr(), "error: nothing to change")?;
            return Ok(ExitCode::from(1));
        }
        Err(e) => {
            writeln!(anstream::stderr(), "error: {e}")?;
            return Ok(ExitCode::from(2));
        }
    };
    let who = Identity {
        actor: args.actor.clone(),
        note: None,
    };
    let actor = who.actor().name;
    match weft_engine::mutation::submit(&*store, &args.run, &actor, mutation) {
        Ok(receipt) => {
            let seq = receipt
                .seq
                .map_or_else(String::new, |s| format!(" (event {s})"));
            writeln!(anstream::stdout(), "graph_mutated by {actor}{seq}")?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            writeln!(anstream::stderr(), "error: {e}")?;
            Ok(ExitCode::from(1))
        }
    }
}

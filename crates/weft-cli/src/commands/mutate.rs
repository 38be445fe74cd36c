//! `weft mutate RUN (--cancel-node NODE | --add-edge FROM TO [--on-failure])`: changes the
//! graph of a run that has not finished. It appends `graph_mutated` (an inbox event,
//! `docs/engine.md` §2e) once the mutation fits the run as its log stands; a live driver
//! applies it at its next read of the log, a suspended run when it is resumed.
//!
//! Exit codes: 0 appended; 1 refused (unknown run or node, finished run, or a mutation the
//! scheduler refuses: the node has started, the edge closes a cycle).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use weft_engine::mutation::{GraphMutation, LoggedEdge};

use super::decide::Identity;
use super::record::open_store;

/// What `weft mutate` changes (exactly one of the two).
#[derive(clap::Args, Debug)]
#[group(required = true, multiple = false)]
pub struct MutateOp {
    /// Cancel a node that has not started, and every node reachable only through it.
    #[arg(long, value_name = "NODE")]
    pub cancel_node: Option<String>,
    /// Add an edge FROM -> TO into a pending node (sequence; `--on-failure`: on_failure).
    #[arg(long, num_args = 2, value_names = ["FROM", "TO"])]
    pub add_edge: Option<Vec<String>>,
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
    /// The event store.
    #[arg(long, value_name = "PATH", default_value = ".weft/weft.db")]
    pub db: PathBuf,
    /// Who asks (default: $USER, else $LOGNAME, else the OS account of this process's
    /// user).
    #[arg(long = "as", value_name = "ID")]
    pub actor: Option<String>,
}

fn mutation(args: &MutateArgs) -> Option<GraphMutation> {
    if let Some(node) = &args.op.cancel_node {
        return Some(GraphMutation::CancelNode { node: node.clone() });
    }
    match args.op.add_edge.as_deref() {
        Some([from, to]) => Some(GraphMutation::AddEdge {
            from: from.clone(),
            to: to.clone(),
            edge: if args.on_failure {
                LoggedEdge::OnFailure
            } else {
                LoggedEdge::Sequence
            },
        }),
        _ => None,
    }
}

pub fn run(args: &MutateArgs) -> anyhow::Result<ExitCode> {
    let db: &Path = &args.db;
    let Some(store) = open_store(db)? else {
        return Ok(ExitCode::from(1));
    };
    let Some(mutation) = mutation(args) else {
        writeln!(anstream::stderr(), "error: nothing to change")?;
        return Ok(ExitCode::from(1));
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

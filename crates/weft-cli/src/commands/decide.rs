//! `weft approve|reject|provide RUN NODE`: a person's decision on a node that waits on one
//! (a blocking gate, a `human_takeover`, an escalation). It is appended to the run's log as
//! a `human_decision` inbox event (`docs/engine.md` §2c): a live driver applies it at once,
//! a suspended run when `weft resume RUN` continues it. Exit 0 when recorded, 1 when
//! refused (the node does not wait, a role not listed, values that do not fit `collect`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::{Map, Value};
use weft_engine::human::{DecisionRequest, Verb};
use weft_store::RunStatus;

use super::record::open_store;
use crate::identity::Actor;

/// Who decides and why (shared by the three commands and `weft cancel`).
#[derive(clap::Args, Debug, Clone)]
pub struct Identity {
    /// Who decides (default: $USER, else $LOGNAME, else the OS account of this process's
    /// user).
    #[arg(long = "as", value_name = "ID")]
    pub actor: Option<String>,
    /// A note kept with the decision.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
}

impl Identity {
    /// `--as`, else `$USER` or `$LOGNAME`, else the OS account (`crate::identity`).
    pub fn actor(&self) -> Actor {
        Actor::resolve(self.actor.as_deref())
    }
}

/// Parses `--set NAME=JSON` values (VALUE as JSON when it parses, else a string).
fn parse_sets(sets: &[String]) -> anyhow::Result<Map<String, Value>> {
    let mut out = Map::new();
    for s in sets {
        let (k, v) = s
            .split_once('=')
            .with_context(|| format!("--set `{s}`: expected NAME=VALUE"))?;
        let value = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()));
        out.insert(k.to_string(), value);
    }
    Ok(out)
}

/// The arguments of `weft approve|reject|provide`.
#[derive(clap::Args, Debug, Clone)]
pub struct DecideArgs {
    /// The run id.
    #[arg(value_name = "RUN")]
    pub run: String,
    /// The node that waits.
    #[arg(value_name = "NODE")]
    pub node: String,
    /// A value, `NAME=VALUE` (VALUE parsed as JSON when it is JSON, else a string): a
    /// `collect` value (provide), an edit of a declared output (approve, review mode).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub sets: Vec<String>,
    /// The role you decide as; refused when the wait lists roles and not this one.
    #[arg(long, value_name = "ROLE")]
    pub role: Option<String>,
    #[command(flatten)]
    pub who: Identity,
    /// The event store.
    #[arg(long, value_name = "PATH", default_value = ".weft/weft.db")]
    pub db: PathBuf,
}

pub fn run(args: &DecideArgs, verb: Verb) -> anyhow::Result<ExitCode> {
    let Some(store) = open_store(&args.db)? else {
        return Ok(ExitCode::from(1));
    };
    let actor = args.who.actor();
    let request = DecisionRequest {
        node: args.node.clone(),
        verb,
        values: parse_sets(&args.sets)?,
        actor: actor.name.clone(),
        role: args.role.clone(),
        note: args.who.note.clone(),
    };
    let receipt = match weft_engine::human::decide(&*store, &args.run, &request) {
        Ok(r) => r,
        Err(e) => {
            writeln!(anstream::stderr(), "error: {e}")?;
            return Ok(ExitCode::from(1));
        }
    };
    let what = match verb {
        Verb::Approve => "approval",
        Verb::Reject => "rejection",
        Verb::Provide => "values",
    };
    let mut out = anstream::stdout();
    writeln!(
        out,
        "recorded the {what} of `{}` by {} ({}) (event {})",
        args.node,
        request.actor,
        actor.provenance(),
        receipt.seq.unwrap_or_default()
    )?;
    if receipt.run_status == RunStatus::Running {
        writeln!(
            out,
            "the run is live: its driver applies the decision (if no driver runs it, `weft resume {}` does)",
            args.run
        )?;
    } else {
        writeln!(
            out,
            "the run is suspended: `weft resume {}` continues it",
            args.run
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

//! `weft policy explain '<json action>'`: the decision the permission layers give an action
//! (graph ∩ node ∩ the operator's `[policy]` rules), the rule that matched and the
//! normalised resource. Nothing is executed or approved. Exit 0 allow, 3 ask, 1 deny
//! (docs/cli.md, format in docs/permissions.md).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use weft_policy::{
    Action, Context, Decision, Identity, NodeGrants, OperatorPolicy, Source, Verdict, Workspace,
};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Explain the decision for one action, e.g. `{"scope":"fs","action":"write",
    /// "target":"src/a.rs"}`. Executes nothing. Exit 0 allow, 3 ask, 1 deny.
    Explain {
        /// The action as JSON: scope, action, target (or argv), and optionally tool and
        /// arguments (bound into approvals).
        #[arg(value_name = "JSON")]
        action: String,
        /// A graph whose node's requirements (and containers') bound the action.
        #[arg(long, value_name = "FILE", requires = "node")]
        graph: Option<PathBuf>,
        /// The node of --graph: its id, or its scope address (`fix.step`, `fix[2].step`).
        #[arg(long, value_name = "ID", requires = "graph")]
        node: Option<String>,
        /// The config whose `[policy]` table holds the operator rules (default: ./weft.toml
        /// when it exists; without rules every action is denied).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// The workspace root paths are normalised against (default: the current directory).
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// The identity bound into an approval (default: $USER, else $LOGNAME, else the OS
        /// account of this process's user).
        #[arg(long = "as", value_name = "ID")]
        actor: Option<String>,
        /// Print the decision as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: &Command) -> anyhow::Result<ExitCode> {
    let Command::Explain {
        action,
        graph,
        node,
        config,
        workspace,
        actor,
        json,
    } = command;
    let action: Action = serde_json::from_str(action)
        .context("the action is not valid JSON of the documented shape")?;
    let policy = load_policy(config.as_deref())?;
    let root = match workspace {
        Some(dir) => std::path::absolute(dir).context("cannot resolve --workspace")?,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let root = root.to_str().context("the workspace path is not UTF-8")?;
    let workspace = Workspace::new(root)?;
    let grants = match (graph, node) {
        (Some(file), Some(id)) => Some(load_grants(file, id)?),
        _ => None,
    };
    let identity = Identity {
        subject: crate::identity::Actor::resolve(actor.as_deref()).name,
        session: None,
    };
    let decision = weft_policy::decide(
        &action,
        &Context {
            workspace: &workspace,
            policy: &policy,
            node: grants.as_ref(),
            identity: &identity,
        },
    );
    let mut out = anstream::stdout().lock();
    if *json {
        writeln!(out, "{}", serde_json::to_string_pretty(&decision)?)?;
    } else {
        render(&mut out, &decision)?;
    }
    Ok(ExitCode::from(match decision.decision {
        Verdict::Allow => 0,
        Verdict::Deny => 1,
        Verdict::Ask => 3,
    }))
}

fn load_policy(config: Option<&Path>) -> anyhow::Result<OperatorPolicy> {
    let path = match config {
        Some(p) => p.to_path_buf(),
        None if Path::new("weft.toml").is_file() => PathBuf::from("weft.toml"),
        None => return Ok(OperatorPolicy::from_toml("")?),
    };
    // Only the `[policy]` table is read (the rest may be another machine's profile).
    Ok(weft_host::ConfigFile::load(&path)?.policy()?)
}

fn load_grants(file: &Path, id: &str) -> anyhow::Result<NodeGrants> {
    let input = crate::input::load(file, weft_ags::load::Limits::default().max_bytes);
    let Some(doc) = input.document else {
        let first = input
            .findings
            .first()
            .map(|f| f.message.clone())
            .unwrap_or_default();
        bail!("cannot load {}: {first}", file.display());
    };
    // A scope address (`fix.step`, `fix[2].step`) names one node, as the sandbox finds it; a
    // bare id that is no root node is looked for in the bodies (the first match).
    match weft_policy::node_grants_at(&doc.value, id) {
        Err(weft_policy::DocumentError::NoNode(_)) if !id.contains('.') => {
            Ok(weft_policy::node_grants(&doc.value, id)?)
        }
        found => Ok(found?),
    }
}

fn render(out: &mut impl Write, d: &Decision) -> std::io::Result<()> {
    writeln!(out, "decision: {}", d.decision.as_str())?;
    writeln!(out, "reason:   {}", d.reason)?;
    let source = match &d.source {
        Source::Resource => "the action itself (it cannot be normalised)".to_owned(),
        Source::Node => "the node's requirements".to_owned(),
        Source::Graph { holder } => format!("the graph: {holder}"),
        Source::Rule { index, permission } => format!("policy.rules[{index}] {permission}"),
        Source::Default => "no rule matched: default deny".to_owned(),
    };
    writeln!(out, "rule:     {source}")?;
    match &d.resource {
        Some(r) => {
            let target = r.target.as_deref().unwrap_or("(none)");
            writeln!(out, "resource: {}:{}:{target}", r.scope, r.action)?;
            if let Some(abs) = &r.absolute {
                writeln!(out, "          {abs}")?;
            }
            if let Some(argv) = &r.argv {
                writeln!(
                    out,
                    "          argv {}",
                    serde_json::to_string(argv).unwrap_or_default()
                )?;
            }
        }
        None => writeln!(out, "resource: (not normalised)")?,
    }
    for by in &d.covered_by {
        writeln!(out, "granted:  {by}")?;
    }
    writeln!(out, "policy:   {}", d.policy_version)?;
    if let Some(a) = &d.approval {
        writeln!(
            out,
            "approval: {} (tool {}, identity {})",
            a.digest, a.tool, a.identity.subject
        )?;
    }
    writeln!(out, "nothing was executed")
}

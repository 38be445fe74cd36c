//! `weft config check [FILE]`: read the routing profile of `weft.toml` (`[providers.*]`,
//! `[tiers.*]`; docs/agents.md, "Configuration") and show what it routes where, or the key
//! and the reason it is refused (exit 1). A key variable that is not set is a warning: the
//! profile is valid, and runs routed to that provider are refused until it is set. Never
//! prints a key, only the name of its variable. The file is parsed once, every section
//! checked (`weft_host::config`); `weft run --config` sets a run up from the same parse
//! (`weft_host::setup`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use weft_engine::agent::Tier;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Check the routing profile and show each tier's provider and model.
    Check {
        /// The configuration file.
        #[arg(value_name = "FILE", default_value = "weft.toml")]
        file: PathBuf,
    },
}

pub fn run(command: &Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Check { file } => check(file),
    }
}

fn check(file: &Path) -> anyhow::Result<ExitCode> {
    // The whole file, parsed once: every section is checked (weft-host).
    let config = match weft_host::WeftConfig::load(file) {
        Ok(c) => c,
        Err(e) => {
            writeln!(anstream::stderr(), "error: {e}")?;
            return Ok(ExitCode::from(1));
        }
    };
    let profile = &config.routing;
    let mut out = String::new();
    let mut warnings = Vec::new();
    out.push_str(&format!(
        "{}: routing profile OK\nproviders:\n",
        file.display()
    ));
    for p in &profile.providers {
        let key = key_source(
            &p.name,
            p.api_key_env.as_deref(),
            p.api_key_keyring.as_ref(),
            &mut warnings,
        )
        .unwrap_or_else(|| "no key".to_string());
        out.push_str(&format!(
            "  {}: {} at {}, {key}, timeout {} s, {} attempt(s)\n",
            p.name,
            p.kind.as_str(),
            p.base_url,
            p.http.timeout.as_secs_f64(),
            p.http.retry.max_attempts
        ));
    }
    for c in &profile.clis {
        let key = match key_source(
            &c.name,
            c.api_key_env.as_deref(),
            c.api_key_keyring.as_ref(),
            &mut warnings,
        ) {
            Some(key) if c.api_key_keyring.is_some() => {
                format!("{key}, passed as ${}", c.kind.key_variable())
            }
            Some(key) => key,
            None => "no key passed".to_string(),
        };
        out.push_str(&format!(
            "  {}: {} CLI {}, {key}, runs only inside the sandbox (weft run --sandbox)\n",
            c.name,
            c.kind.as_str(),
            c.command.display()
        ));
    }
    out.push_str("tiers:\n");
    for t in &profile.tiers {
        let context = t
            .model
            .context_tokens
            .map_or("context unknown".to_string(), |c| format!("context {c}"));
        let price = t
            .price
            .map_or("no price (cost not accounted)".to_string(), |p| {
                format!(
                    "${}/M in, ${}/M out",
                    p.input_per_million, p.output_per_million
                )
            });
        out.push_str(&format!(
            "  {}: {} `{}`, {context}, {price}\n",
            t.model.tier.as_str(),
            t.model.provider,
            t.model.model
        ));
    }
    let unserved: Vec<&str> = [
        Tier::Minimal,
        Tier::Standard,
        Tier::Advanced,
        Tier::Frontier,
    ]
    .into_iter()
    .filter(|tier| !profile.tiers.iter().any(|t| t.model.tier == *tier))
    .map(Tier::as_str)
    .collect();
    if profile.tiers.is_empty() {
        warnings.push("no tier is served: every model node is refused (RT011)".into());
    } else if !unserved.is_empty() {
        out.push_str(&format!(
            "not served: {} (a node there routes up to the next served tier; RT011 when none is above)\n",
            unserved.join(", ")
        ));
    }
    let mode = config.workspace.isolate;
    out.push_str(&format!(
        "workspace: isolate = {} ({})\n",
        mode.as_str(),
        match mode {
            weft_engine::IsolateMode::Agents =>
                "model and coding-agent nodes, and nodes declaring isolation, work in their own copy",
            weft_engine::IsolateMode::Declared =>
                "only nodes declaring isolation: worktree|sandbox work in their own copy",
            weft_engine::IsolateMode::All => "every agent and exec node works in its own copy",
        }
    ));
    out.push_str(&mcp_section(&config.mcp));
    if let Some(memory) = &config.memory {
        out.push_str(&format!(
            "memory: {} (memory_search, memory_subgraph, memory_propose, memory_verify, for the nodes whose requirements.tools name them)\n",
            memory.db.display()
        ));
        if let Some(embedder) = &memory.embedder {
            out.push_str(&format!(
                "memory embedder: {} at {}/v1/embeddings{} (searches also seed the passages nearest to the query's embedding)\n",
                embedder.model,
                embedder.base_url.trim_end_matches('/'),
                embedder
                    .api_key_env
                    .as_ref()
                    .map_or(String::new(), |var| format!(", key from ${var}"))
            ));
        }
    }
    write!(anstream::stdout(), "{out}")?;
    for w in warnings {
        writeln!(anstream::stderr(), "warning: {w}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The `mcp servers:` lines of `weft config check` (nothing when none is configured). The
/// servers are not started: a check runs nothing.
fn mcp_section(mcp: &weft_mcp::McpConfig) -> String {
    if mcp.servers.is_empty() {
        return String::new();
    }
    let mut out = String::from("mcp servers (started by the first node that requires them):\n");
    for s in mcp.servers.values() {
        let how = match &s.transport {
            weft_mcp::Transport::Stdio { command, args, env } => format!(
                "stdio `{command}`{}{}",
                if args.is_empty() {
                    String::new()
                } else {
                    format!(" {}", args.join(" "))
                },
                if env.is_empty() {
                    ", empty environment".to_string()
                } else {
                    format!(", environment {}", env.join(", "))
                }
            ),
            weft_mcp::Transport::Http { url } => format!("streamable HTTP {url}"),
        };
        out.push_str(&format!(
            "  {}: {how}, call timeout {} s, output cap {} bytes\n",
            s.name,
            s.call_timeout.as_secs(),
            s.max_output_bytes
        ));
    }
    out
}

/// Where a provider's key comes from, looked up to say whether it is there (the value is
/// dropped unread); a missing one adds a warning. `None`: the provider takes no key.
fn key_source(
    provider: &str,
    env: Option<&str>,
    keyring: Option<&weft_agents::KeyringRef>,
    warnings: &mut Vec<String>,
) -> Option<String> {
    let refused = format!("runs routed to provider `{provider}` will be refused");
    Some(match (env, keyring) {
        (None, Some(r)) => match r.read() {
            Ok(_) => format!("key from keyring {r} (found)"),
            Err(why) => {
                warnings.push(format!("{why}: {refused}"));
                format!("key from keyring {r} (NOT FOUND)")
            }
        },
        (None, None) => return None,
        (Some(var), _) if std::env::var_os(var).is_some_and(|v| !v.is_empty()) => {
            format!("key from ${var} (set)")
        }
        (Some(var), _) => {
            warnings.push(format!("${var} is not set: {refused}"));
            format!("key from ${var} (NOT SET)")
        }
    })
}

//! `weft generate "<objective>" --out FILE [--config weft.toml] [--tier T] [--max-rounds N]
//! [--max-nodes N] [--force]`: a model of the routing profile drafts a work graph (`weft_agents::generate`),
//! weft validates it and feeds the findings back until it is valid and clean under
//! `--strict`, then writes it as YAML for review. It is never run. Exit 0 written clean; 1
//! the rounds were spent (the draft is written next to FILE as `*.draft.yaml` and the
//! remaining findings printed) or the model failed; 2 bad input (profile, tier, provider,
//! an existing FILE without `--force`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use weft_agents::generate::{GenerateSettings, Generated, feedback, generate_blocking};
use weft_engine::agent::route::route;
use weft_engine::agent::{Tier, TierRequest};

/// The command's arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// What the graph must achieve (becomes its `objective`).
    #[arg(value_name = "OBJECTIVE")]
    objective: String,
    /// Where to write the graph (YAML).
    #[arg(long, short, value_name = "FILE")]
    out: PathBuf,
    /// The routing profile whose model drafts the graph.
    #[arg(long, value_name = "PATH", default_value = "weft.toml")]
    config: PathBuf,
    /// The tier to route the drafting model at.
    #[arg(long, value_name = "TIER", default_value = "standard")]
    tier: String,
    /// Repair rounds after the first draft at most.
    #[arg(long, value_name = "N", default_value_t = GenerateSettings::default().max_rounds)]
    max_rounds: u32,
    /// Nodes of the skeleton kept at most.
    #[arg(long, value_name = "N", default_value_t = GenerateSettings::default().max_nodes)]
    max_nodes: usize,
    /// Overwrite FILE (and its draft) when it exists.
    #[arg(long)]
    force: bool,
}

fn bad_input(message: &str) -> anyhow::Result<ExitCode> {
    writeln!(anstream::stderr(), "error: {message}")?;
    Ok(ExitCode::from(2))
}

/// `plan.agraph.yaml` → `plan.draft.yaml` (also for `.yaml`, `.yml`, `.json`).
pub fn draft_path(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = [
        ".agraph.yaml",
        ".agraph.yml",
        ".agraph.json",
        ".yaml",
        ".yml",
        ".json",
    ]
    .iter()
    .find_map(|ext| name.strip_suffix(ext))
    .unwrap_or(&name);
    out.with_file_name(format!("{stem}.draft.yaml"))
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let draft = draft_path(&args.out);
    if !args.force
        && let Some(existing) = [&args.out, &draft].into_iter().find(|p| p.exists())
    {
        return bad_input(&format!(
            "{} exists; pass --force to overwrite it",
            existing.display()
        ));
    }
    let Some(tier) = Tier::parse(&args.tier) else {
        return bad_input(&format!(
            "unknown tier `{}` (minimal, standard, advanced, frontier)",
            args.tier
        ));
    };
    let profile = match weft_host::ConfigFile::load(&args.config).and_then(|f| f.routing()) {
        Ok(profile) => profile,
        Err(e) => return bad_input(&e.to_string()),
    };
    let models: Vec<_> = profile.tiers.iter().map(|t| t.model.clone()).collect();
    let request = TierRequest {
        tier,
        ..TierRequest::default()
    };
    let routed = match route(&models, &request, 1) {
        Ok(r) => r,
        Err(e) => return bad_input(&e),
    };
    let Some(config) = profile.providers.iter().find(|p| p.name == routed.provider) else {
        return bad_input(&format!(
            "tier `{}` routes to provider `{}`, a coding-agent CLI: drafting needs forced tool calls of an HTTP provider",
            args.tier, routed.provider
        ));
    };
    let provider = match config.build() {
        Ok(p) => p,
        Err(e) => return bad_input(&e.to_string()),
    };
    let settings = GenerateSettings {
        max_rounds: args.max_rounds,
        max_nodes: args.max_nodes,
        ..GenerateSettings::default()
    };
    writeln!(
        anstream::stderr(),
        "drafting on {} `{}` (tier {})…",
        routed.provider,
        routed.model,
        routed.effective_tier
    )?;
    let generated =
        match generate_blocking(provider.as_ref(), &routed.model, &args.objective, &settings)? {
            Ok(g) => g,
            Err(e) => {
                writeln!(anstream::stderr(), "error: the model failed: {e}")?;
                return Ok(ExitCode::from(1));
            }
        };
    report(args, &draft, &generated)
}

fn report(args: &Args, draft: &Path, g: &Generated) -> anyhow::Result<ExitCode> {
    let mut err = anstream::stderr();
    let yaml = weft_ags::load::emit::to_yaml(&g.document);
    let counts: Vec<String> = g.blocking_per_draft.iter().map(usize::to_string).collect();
    writeln!(
        err,
        "{} model call(s), {} input and {} output tokens; findings to fix per draft: {}",
        g.calls,
        g.usage.input_tokens,
        g.usage.output_tokens,
        counts.join(" → ")
    )?;
    if let Some(e) = &g.stopped {
        writeln!(err, "error: the model failed during a repair round: {e}")?;
    }
    if g.clean {
        std::fs::write(&args.out, yaml)?;
        writeln!(
            anstream::stdout(),
            "wrote {}: valid and clean under --strict after {} repair round(s). Review it; weft does not run it.",
            args.out.display(),
            g.rounds
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    std::fs::write(draft, yaml)?;
    let left: Vec<_> = g
        .findings
        .iter()
        .filter(|f| feedback::blocking(f))
        .collect();
    writeln!(
        err,
        "not clean after {} repair round(s): {} finding(s) remain; the draft is {}",
        g.rounds,
        left.len(),
        draft.display()
    )?;
    writeln!(err, "{}", feedback::render(&left))?;
    Ok(ExitCode::from(1))
}

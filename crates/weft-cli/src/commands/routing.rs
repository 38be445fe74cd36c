//! `weft routing explain FILE [--config weft.toml] [--json]`: for each model call a run of
//! FILE would make (model nodes, `llm_judge` criteria), the tier it asks for and the model
//! each attempt is routed to by the profile, or the RT011 message, and why
//! (`weft_engine::agent::explain`). Exit 0 when every call is routable, 1 when some is not
//! (the run would be refused), 2 when FILE or the profile cannot be read or has errors.
//! Nothing is run and no provider is contacted.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use weft_engine::agent::explain::{CallRouting, DISTINCT_ATTEMPTS, explain};

use crate::input::load_and_validate;
use crate::render::findings;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Show each model call's requested tier and the model each attempt is routed to.
    /// Exit 0 all routable, 1 some call is refused (RT011), 2 bad input.
    Explain {
        /// The document.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// The routing profile.
        #[arg(long, value_name = "PATH", default_value = "weft.toml")]
        config: PathBuf,
        /// Print `{"file", "config", "routable", "calls": [...]}` as JSON.
        #[arg(long)]
        json: bool,
        /// Refuse documents larger than this many bytes.
        #[arg(long, value_name = "BYTES", default_value_t = weft_ags::load::Limits::default().max_bytes)]
        max_bytes: usize,
    },
}

pub fn run(command: &Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Explain {
            file,
            config,
            json,
            max_bytes,
        } => explain_file(file, config, *json, *max_bytes),
    }
}

fn bad_input(message: &str) -> anyhow::Result<ExitCode> {
    writeln!(anstream::stderr(), "error: {message}")?;
    Ok(ExitCode::from(2))
}

fn explain_file(
    file: &Path,
    config: &Path,
    json: bool,
    max_bytes: usize,
) -> anyhow::Result<ExitCode> {
    let input = load_and_validate(file, max_bytes);
    let root = input.document.as_ref().and_then(|d| d.value.as_object());
    let (Some(root), false) = (root, input.has_errors()) else {
        write!(anstream::stderr(), "{}", findings::human(&input))?;
        return bad_input(&format!(
            "{} has errors; fix them before explaining its routes",
            input.path
        ));
    };
    let profile = match weft_host::ConfigFile::load(config).and_then(|f| f.routing()) {
        Ok(profile) => profile,
        Err(e) => return bad_input(&e.to_string()),
    };
    let models: Vec<_> = profile.tiers.iter().map(|t| t.model.clone()).collect();
    let calls = explain(root, &models);
    let routable = !calls.iter().any(CallRouting::refused);
    let mut stdout = std::io::stdout().lock();
    if json {
        let value = serde_json::json!({
            "file": input.path,
            "config": config.display().to_string(),
            "routable": routable,
            "calls": calls,
        });
        writeln!(stdout, "{}", serde_json::to_string_pretty(&value)?)?;
    } else {
        write!(stdout, "{}", render(&input.path, config, &calls))?;
    }
    Ok(if routable {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The text form: one block per call, one line per attempt.
fn render(file: &str, config: &Path, calls: &[CallRouting]) -> String {
    let mut out = format!("{file} on {}:\n", config.display());
    if calls.is_empty() {
        out.push_str("  no node calls a model\n");
    }
    for c in calls {
        let mut ask = vec![format!("tier {} (from {})", c.requested_tier, c.source)];
        ask.push(format!(
            "allow_downgrade {}",
            if c.allow_downgrade { "yes" } else { "no" }
        ));
        if let Some(min) = c.min_context_tokens {
            ask.push(format!("min_context_tokens {min}"));
        }
        if c.escalate_intelligence {
            ask.push(match c.escalate_to {
                Some(t) => format!("escalate_intelligence to {t}"),
                None => "escalate_intelligence one tier per retry".into(),
            });
        }
        ask.push(format!("max_attempts {}", c.max_attempts));
        out.push_str(&format!("{} ({}): {}\n", c.key, c.kind, ask.join(", ")));
        for a in &c.attempts {
            match &a.route {
                Some(r) => out.push_str(&format!(
                    "  attempt {}: {} `{}` at {}{} — {}\n",
                    a.attempt,
                    r.provider,
                    r.model,
                    r.effective_tier,
                    if r.downgraded { " (downgraded)" } else { "" },
                    a.why
                )),
                None => out.push_str(&format!("  attempt {}: refused — {}\n", a.attempt, a.why)),
            }
        }
        if c.max_attempts > DISTINCT_ATTEMPTS {
            out.push_str(&format!(
                "  attempts {}..{}: as attempt {DISTINCT_ATTEMPTS} (escalation stops at frontier)\n",
                DISTINCT_ATTEMPTS + 1,
                c.max_attempts
            ));
        }
    }
    out
}

//! One attempt on a coding-agent CLI, confined: the node's grants (`weft_policy`) become the
//! process's confinement (`weft_sandbox::from_grants`), plus read access to the CLI's own
//! executable and the operator's `read_paths`, and write access to a fresh private `HOME`.
//! The environment is `PATH`, `HOME`, `LANG` and the key variable, nothing else; the brief
//! goes in on stdin; the node's wall clock and an output cap bound the run. Every way it can go wrong is a
//! classified failure with evidence:
//!
//! | what | class |
//! | --- | --- |
//! | no sandbox given, the sandbox not enforced here, the node not in the document | `blocked` |
//! | the key variable unset | `permission_denied` |
//! | past the wall clock | `timeout` |
//! | non-zero exit, output cap, malformed line, error event or result | `model_error` |
//! | the stream ends before its terminal event | `transient` |
//! | no outputs object at the end of the final text | `output_missing` |
//! | an outputs object that does not fit the declared outputs | `validation_error` |
//! | a node limit passed | `budget_exceeded` |

use std::path::Path;

use serde_json::{Value, json};
use weft_engine::agent::exec::COMMAND_PATH;
use weft_engine::agent::{AgentRequest, AgentResult, Failure, Usage};
use weft_policy::{Workspace, node_grants_at};
use weft_sandbox::{Job, SandboxError, from_grants};

use super::argv::{Access, argv};
use super::stream::{CliAnswer, parse};
use super::{CliConfig, CliSandbox, deliver};
use crate::chat::TokenUsage;
use crate::error::{FailureClass, ProviderError, truncate};
use crate::price::Price;
use crate::secret::Secret;

/// stdout + stderr bytes after which the CLI's process group is killed.
pub const MAX_STREAM_BYTES: u64 = 16 * 1024 * 1024;

/// Runs `request` on `cli` with `model`, confined by `sandbox`; `price` gives the cost when
/// the CLI reports none.
pub async fn run_cli(
    cli: &CliConfig,
    sandbox: Option<&CliSandbox>,
    request: &AgentRequest,
    model: &str,
    price: Option<Price>,
) -> AgentResult {
    let Some(sandbox) = sandbox else {
        return AgentResult::failed(
            FailureClass::Blocked,
            format!(
                "provider `{}` is a coding-agent CLI: it runs only inside weft's sandbox (`weft run --sandbox`), never unconfined",
                cli.name
            ),
        );
    };
    let key = match (&cli.api_key_env, &cli.api_key_keyring) {
        (None, None) => Ok(None),
        (Some(var), None) => Secret::from_env(var).map(|s| Some((var.clone(), s))),
        (None, Some(r)) => r
            .read()
            .map(|s| Some((cli.kind.key_variable().to_string(), s))),
        (Some(_), Some(_)) => Err("both api_key_env and api_key_keyring are set; keep one".into()),
    };
    let key = match key {
        Ok(key) => key,
        Err(e) => {
            return AgentResult::failed(
                FailureClass::PermissionDenied,
                format!("provider `{}`: {e}", cli.name),
            );
        }
    };
    let redact = |e: ProviderError| match &key {
        Some((_, s)) => e.redacted(s.expose()),
        None => e,
    };
    // A judge runs under its node's grants (`<node>/judge/<criterion>`); a node inside a
    // body may be addressed as an instance (`fix[2].test`).
    let node = request
        .node
        .split("/judge/")
        .next()
        .unwrap_or(&request.node);
    let grants = match node_grants_at(&sandbox.document, node) {
        Ok(g) => g,
        Err(e) => return AgentResult::failed(FailureClass::Blocked, format!("requirements: {e}")),
    };
    let Some(root) = std::path::absolute(&request.workspace)
        .ok()
        .and_then(|p| p.to_str().and_then(|p| Workspace::new(p).ok()))
    else {
        return AgentResult::failed(
            FailureClass::Blocked,
            "the workspace is not an absolute UTF-8 path",
        );
    };
    let mut confinement = from_grants::confinement(&root, &grants);
    if let Err(e) = from_grants::create_write_dirs(&confinement, &grants, &root) {
        return AgentResult::failed(
            FailureClass::Blocked,
            format!("cannot create a write root: {e}"),
        );
    }
    let access = Access {
        read: !confinement.read_roots.is_empty(),
        write: !confinement.write_roots.is_empty(),
    };
    // The CLI keeps its own state (settings, sessions) under HOME: a fresh private directory
    // per attempt, writable, removed after it, rather than the workspace or a real home.
    let home = match tempfile::Builder::new().prefix("weft-cli-home-").tempdir() {
        Ok(h) => h,
        Err(e) => {
            return AgentResult::failed(
                FailureClass::Blocked,
                format!("cannot create a HOME: {e}"),
            );
        }
    };
    confinement.write_roots.push(home.path().to_path_buf());
    confinement.read_roots.push(cli.command.clone());
    confinement
        .read_roots
        .extend(cli.read_paths.iter().cloned());
    let args = argv(
        cli.kind,
        &cli.command,
        model,
        access,
        request.limits.max_agent_steps,
        &request.workspace,
    );
    let path = match cli.command.parent().filter(|d| d != &Path::new("")) {
        Some(dir) => format!("{}:{COMMAND_PATH}", dir.display()),
        None => COMMAND_PATH.to_string(),
    };
    let mut env = vec![
        ("PATH".to_string(), path),
        ("HOME".to_string(), home.path().display().to_string()),
        ("LANG".to_string(), "C.UTF-8".to_string()),
    ];
    if let Some((var, secret)) = &key {
        env.push((var.clone(), secret.expose().to_string()));
    }
    let tool = deliver::outputs_tool(request);
    let brief = deliver::brief(request, &tool);
    let job = Job {
        argv: &args,
        cwd: &request.workspace,
        env: &env,
        stdin: Some(brief.as_bytes()),
        confinement: &confinement,
        timeout: request.limits.wall_clock,
        max_output: MAX_STREAM_BYTES,
    };
    let outcome = match sandbox.sandbox.run(&job).await {
        Ok(o) => o,
        Err(SandboxError::Blocked(why)) => {
            return AgentResult::failed(FailureClass::Blocked, format!("sandbox: {why}"));
        }
        Err(e) => return AgentResult::failed(FailureClass::Blocked, format!("sandbox: {e}")),
    };
    let stdout = String::from_utf8_lossy(&outcome.stdout);
    let stderr = String::from_utf8_lossy(&outcome.stderr);
    let failed =
        |class: FailureClass, e: ProviderError| AgentResult::failed(class, redact(e).to_string());
    if outcome.timed_out {
        return failed(
            FailureClass::Timeout,
            ProviderError::new(
                FailureClass::Timeout,
                format!(
                    "the CLI ran past the {} s wall clock; its process group was killed",
                    request.limits.wall_clock.as_secs_f64()
                ),
            )
            .with_evidence(tail(&stdout)),
        );
    }
    if outcome.output_capped {
        return failed(
            FailureClass::ModelError,
            ProviderError::new(
                FailureClass::ModelError,
                format!(
                    "the CLI wrote more than {MAX_STREAM_BYTES} bytes; its process group was killed"
                ),
            ),
        );
    }
    if outcome.exit_code != Some(0) {
        let how = outcome.exit_code.map_or_else(
            || {
                format!(
                    "was killed by signal {}",
                    outcome.signal.unwrap_or_default()
                )
            },
            |c| format!("exited with code {c}"),
        );
        return failed(
            FailureClass::ModelError,
            ProviderError::new(FailureClass::ModelError, format!("the CLI {how}")).with_evidence(
                format!("stderr: {}\nstdout: {}", tail(&stderr), tail(&stdout)),
            ),
        );
    }
    let answer = match parse(cli.kind.dialect(), &stdout) {
        Ok(a) => a,
        Err(e) => {
            return failed(e.attempt_class(), e);
        }
    };
    let mut result = finish(request, &tool, answer, model, price);
    if let (Some(f), Some((_, secret))) = (&mut result.failure, &key) {
        f.message = f.message.replace(secret.expose(), "***");
    }
    result
}

/// The result of a run whose stream was read: usage, then outputs, then limits.
fn finish(
    request: &AgentRequest,
    tool: &crate::chat::ToolDef,
    answer: CliAnswer,
    model: &str,
    price: Option<Price>,
) -> AgentResult {
    // A CLI that reports no usage is billed by weft's estimate (the brief it was given and
    // the text it answered), never as zero.
    let spent = if answer.usage.reported {
        answer.usage
    } else {
        TokenUsage::estimated(
            request.brief.as_deref().map_or(0, str::len),
            answer.text.len(),
        )
    };
    let cost = answer.cost_usd.unwrap_or_else(|| {
        price.map_or(0.0, |p| {
            (spent.input_tokens as f64 * p.input_per_million
                + spent.output_tokens as f64 * p.output_per_million)
                / 1e6
        })
    });
    let usage = Usage {
        agent_steps: answer.turns.max(1),
        tool_calls: answer.tool_calls,
        input_tokens: spent.input_tokens,
        output_tokens: spent.output_tokens,
        cost_usd: cost,
        estimated_turns: if spent.reported {
            0
        } else {
            answer.turns.max(1)
        },
    };
    let transcript = json!([{
        "model": model,
        "text": answer.text,
        "usage": answer.usage,
        "cost_usd": answer.cost_usd,
        "turns": answer.turns,
        "tool_calls": answer.tool_calls,
        "permission_denials": answer.permission_denials,
        "session": answer.session,
    }]);
    let mut result = AgentResult {
        usage,
        transcript: Some(transcript),
        ..AgentResult::default()
    };
    match deliver::outputs(tool, &answer.text) {
        Ok(outputs) => result.outputs = outputs,
        Err((class, why)) => {
            let denied = denied_tools(&answer.permission_denials);
            let why = if denied.is_empty() {
                why
            } else {
                format!("{why}; its permission mode refused: {denied}")
            };
            result.failure = Some(Failure::new(
                class,
                format!("{why} (evidence: {})", tail(&answer.text)),
            ));
            return result;
        }
    }
    if let Some(over) = request.limits.exceeded(&result.usage) {
        result.failure = Some(Failure::new(FailureClass::BudgetExceeded, over));
    }
    result
}

fn denied_tools(denials: &[Value]) -> String {
    denials
        .iter()
        .filter_map(|d| d.get("tool_name").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The end of a text, as evidence.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let last = lines[lines.len().saturating_sub(3)..].join("\n");
    if last.is_empty() {
        return "(empty)".into();
    }
    truncate(last, 1024)
}

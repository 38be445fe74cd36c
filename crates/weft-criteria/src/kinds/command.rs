//! `command`: `sh -c <run>` in the workspace, with a time limit and capped output.
//!
//! Environment: cleared, then exactly `PATH` (`Limits::command_path`), `HOME` (the
//! canonical workspace root) and `LANG=C.UTF-8`; nothing of the engine's environment leaks
//! in, so no secret can reach a criterion's evidence through it. stdin is `/dev/null`.
//!
//! The run itself is [`crate::process::run`]: the shell leads a new process group; on
//! timeout, or when the caller drops the evaluation mid-run, the whole group gets `SIGKILL`,
//! so grandchildren (a test runner's workers, a stray `sleep`) die with it. Both pipes are
//! read to the end while keeping only the first `max_output_bytes`. Isolation beyond this
//! (file system, network, permissions) comes with the sandbox issue.

use std::os::unix::process::ExitStatusExt;

use super::{build_regex, error, field, shorten, time_limit};
use crate::env::CriteriaEnv;
use crate::model::Criterion;
use crate::paths::{canonical_root, resolve_inside};
use crate::process::{self, Shell, ShellOutput};
use crate::verdict::{Evidence, Outcome};

/// Evaluates `command`.
pub async fn check(c: &Criterion, env: &CriteriaEnv<'_>) -> (Outcome, Evidence) {
    let run = match field(c.run.as_deref(), "run", c) {
        Ok(r) => r,
        Err(e) => return *e,
    };
    let root = match canonical_root(env.workspace) {
        Ok(r) => r,
        Err(e) => return error(e.to_string()),
    };
    let cwd = match c.cwd.as_deref() {
        Some(dir) => match resolve_inside(&root, dir) {
            Ok(p) if p.is_dir() => p,
            Ok(_) => return error(format!("cwd '{dir}' is not a directory")),
            Err(e) => return error(format!("cwd refused: {e}")),
        },
        None => root.clone(),
    };
    let pattern = match c.expect_stdout_matches.as_deref() {
        Some(p) => match build_regex(p, "", env.limits.max_regex_size) {
            Ok(re) => Some(re),
            Err(e) => return error(format!("expect_stdout_matches: {e}")),
        },
        None => None,
    };
    let expected = c.expect_exit_code.unwrap_or(0);
    let limit = time_limit(c, env);

    let shell = Shell {
        script: run,
        cwd: &cwd,
        path_var: &env.limits.command_path,
        home: &root,
        stdin: None,
        timeout: limit,
        max_output: env.limits.max_output_bytes,
        wrapper: &env.limits.command_wrapper,
    };
    let ShellOutput {
        status,
        stdout,
        stderr,
    } = match process::run(&shell).await {
        Ok(output) => output,
        Err(e) => return error(e.to_string()),
    };
    let mut evidence = Evidence::default();
    let outcome = match status {
        None => {
            evidence.timed_out = true;
            evidence.summary = format!("timed out after {limit:?}; the process group was killed");
            Outcome::Failed
        }
        Some(status) => {
            let code = status.code();
            evidence.exit_code = code;
            let code_ok = code.is_some_and(|c| i64::from(c) == expected);
            let found = pattern
                .as_ref()
                .map(|re| re.find(&stdout.text).map(|m| shorten(m.as_str(), 200)));
            let stdout_ok = !matches!(found, Some(None));
            evidence.matched_text = found.flatten();
            evidence.summary = match (code, status.signal()) {
                (Some(c), _) if code_ok => format!("exit code {c}"),
                (Some(c), _) => format!("exit code {c}, expected {expected}"),
                (None, Some(sig)) => {
                    format!("killed by signal {sig}, expected exit code {expected}")
                }
                (None, None) => format!("no exit code, expected {expected}"),
            };
            if !stdout_ok {
                let scope = if stdout.truncated {
                    " (only the first max_output_bytes were searched)"
                } else {
                    ""
                };
                evidence.summary.push_str(&format!(
                    "; stdout does not match /{}/{scope}",
                    c.expect_stdout_matches.as_deref().unwrap_or_default()
                ));
            }
            if code_ok && stdout_ok {
                Outcome::Passed
            } else {
                Outcome::Failed
            }
        }
    };
    evidence.stdout = Some(stdout);
    evidence.stderr = Some(stderr);
    (outcome, evidence)
}

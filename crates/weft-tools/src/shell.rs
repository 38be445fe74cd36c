//! `shell_exec`: a command line split with `shlex` and run as an argv, without a shell (so
//! `a; rm x` is the one program `a` with the arguments `;`, `rm`, `x`: no pipes, redirects,
//! variables or globs), through the OS sandbox with the node's confinement
//! (`weft_sandbox::from_grants`, narrowed by the operator policy), in the workspace root, with an environment of `PATH`,
//! `HOME` (the workspace), `LANG` and `WEFT_IDEMPOTENCY_KEY`, a wall-clock limit and an output
//! cap. Without a sandbox the call is `blocked`: it never runs unconfined.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use weft_core::FailureClass;
use weft_sandbox::confinement::DEFAULT_MAX_PROCESSES;
use weft_sandbox::{Confinement, Job, SandboxError, from_grants};

use crate::env::{ToolEnv, ToolError};

/// The `PATH` a command sees.
pub const COMMAND_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The variable that carries the call's idempotency key.
pub const IDEMPOTENCY_VARIABLE: &str = "WEFT_IDEMPOTENCY_KEY";

/// Runs the command of `arguments` confined; `key` is the call's idempotency key.
pub async fn exec(arguments: &Value, env: &ToolEnv<'_>, key: &str) -> Result<Value, ToolError> {
    let line = arguments
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or("");
    let argv = shlex::split(line)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| ToolError {
            class: FailureClass::ValidationError,
            message: format!(
                "`command` is not a command line (empty, or an unclosed quote): {line}"
            ),
        })?;
    let Some(sandbox) = env.sandbox else {
        return Err(ToolError {
            class: FailureClass::Blocked,
            message: "no OS sandbox is available here; shell_exec never runs unconfined".into(),
        });
    };
    let limits = env.limits;
    let seconds = arguments
        .get("timeout_seconds")
        .and_then(Value::as_f64)
        .unwrap_or(limits.default_shell_seconds as f64)
        .min(limits.max_shell_seconds as f64);
    let timeout = Duration::try_from_secs_f64(seconds)
        .unwrap_or(Duration::from_secs(limits.default_shell_seconds));
    let root = env.workspace.root();
    let mut confinement = match env.grants {
        Some(grants) => from_grants::confinement(env.workspace, grants),
        // No node: read the workspace, write nothing.
        None => Confinement {
            read_roots: vec![PathBuf::from(&root)],
            max_processes: Some(DEFAULT_MAX_PROCESSES),
            workspace: Some(PathBuf::from(&root)),
            ..Confinement::minimal()
        },
    };
    // What the operator refuses stays refused for whatever the command touches.
    from_grants::apply_policy(&mut confinement, env.workspace, env.policy);
    if let Some(grants) = env.grants {
        from_grants::create_write_dirs(&confinement, grants, env.workspace)
            .map_err(|e| ToolError::tool(format!("cannot create a write root: {e}")))?;
    }
    let vars = [
        ("PATH".to_owned(), COMMAND_PATH.to_owned()),
        ("HOME".to_owned(), root.clone()),
        ("LANG".to_owned(), "C.UTF-8".to_owned()),
        (IDEMPOTENCY_VARIABLE.to_owned(), key.to_owned()),
    ];
    let cwd = PathBuf::from(&root);
    let job = Job {
        argv: &argv,
        cwd: &cwd,
        env: &vars,
        stdin: None,
        confinement: &confinement,
        timeout,
        max_output: limits.max_shell_output,
    };
    let outcome = match sandbox.run(&job).await {
        Ok(o) => o,
        Err(SandboxError::Blocked(why)) => {
            return Err(ToolError {
                class: FailureClass::Blocked,
                message: format!("sandbox: {why}"),
            });
        }
        Err(e) => return Err(ToolError::tool(format!("sandbox: {e}"))),
    };
    let head = |bytes: &[u8]| {
        let cut = bytes.len().min(limits.shell_head_bytes);
        (
            String::from_utf8_lossy(bytes.get(..cut).unwrap_or_default()).into_owned(),
            cut < bytes.len(),
        )
    };
    let (stdout, stdout_cut) = head(&outcome.stdout);
    let (stderr, stderr_cut) = head(&outcome.stderr);
    Ok(json!({
        "argv": argv,
        "exit_code": outcome.exit_code,
        "signal": outcome.signal,
        "timed_out": outcome.timed_out,
        "output_capped": outcome.output_capped,
        "process_capped": outcome.process_capped,
        "stdout": stdout,
        "stdout_truncated": stdout_cut,
        "stderr": stderr,
        "stderr_truncated": stderr_cut,
    }))
}

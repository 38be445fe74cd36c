//! The `exec` agent ([`ExecAgent`]): `x-weft-exec: {run: "<shell command>"}` runs
//! `sh -c <run>` in the project directory. It calls no model, so its usage is zero.
//!
//! Environment cleared, then exactly `PATH` (`/usr/local/bin:/usr/bin:/bin`, after the
//! project's `.weft/bin` when it exists: `crate::tool_path`), `HOME` (the
//! project directory) and `LANG=C.UTF-8`. stdin carries the node's resolved inputs as one
//! JSON object. The run itself is [`weft_criteria::process::run`]: the shell leads its own
//! process group; on timeout (or when the run is dropped) the whole group gets `SIGKILL`.
//! stdout and stderr keep their first [`MAX_OUTPUT_BYTES`] each.
//!
//! Outputs: if stdout (trimmed) is a JSON object, its members are the node's outputs;
//! otherwise stdout without its trailing newline is the value of the node's single declared
//! output (no outputs when the node declares none or several) — parsed as JSON when that
//! output's declared type is `number`, `integer`, `boolean`, `array` or `object` and the
//! text parses, so `echo 42` feeds an `integer` output.

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};
use weft_core::FailureClass;
use weft_criteria::process::{self, Shell};

use super::{Agent, AgentFuture, AgentRequest, AgentResult, EXEC, OutputDecl};

/// Bytes kept from each of stdout and stderr.
pub const MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// weft's fixed `PATH` for commands (so a plan behaves the same on every host); a project's
/// `.weft/bin` comes before it (`crate::tool_path::command_path`).
pub const COMMAND_PATH: &str = crate::tool_path::DEFAULT_PATH;

/// What one command did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecResult {
    /// The exit code; `None` when killed by a signal or timed out.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
}

impl ExecResult {
    /// Exit code 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// Runs `run` with `sh -c` in `dir`, feeding `stdin`, killed after `timeout`.
pub async fn run_command(
    run: &str,
    dir: &Path,
    stdin: &[u8],
    timeout: Duration,
) -> std::io::Result<ExecResult> {
    let path_var = crate::tool_path::command_path(dir);
    let output = process::run(&Shell {
        script: run,
        cwd: dir,
        path_var: &path_var,
        home: dir,
        stdin: Some(stdin),
        timeout,
        max_output: MAX_OUTPUT_BYTES,
        wrapper: &[],
    })
    .await?;
    Ok(ExecResult {
        exit_code: output.exit_code(),
        timed_out: output.timed_out(),
        stdout: output.stdout.text,
        stderr: output.stderr.text,
    })
}

/// The declared types whose plain-text value is read as JSON.
const JSON_TYPES: &[&str] = &["number", "integer", "boolean", "array", "object"];

/// The node's outputs from its stdout (see the module docs).
pub fn parse_outputs(stdout: &str, declared: &[OutputDecl]) -> Map<String, Value> {
    if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(stdout.trim()) {
        return m;
    }
    let mut out = Map::new();
    if let [only] = declared {
        let text = stdout.strip_suffix('\n').unwrap_or(stdout);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let parsed = only
            .type_name
            .as_deref()
            .filter(|t| JSON_TYPES.contains(t))
            .and_then(|_| serde_json::from_str::<Value>(text.trim()).ok());
        out.insert(
            only.name.clone(),
            parsed.unwrap_or_else(|| Value::String(text.to_string())),
        );
    }
    out
}

/// The `exec` agent: runs the node's `x-weft-exec.run` (the request's `config`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ExecAgent;

impl Agent for ExecAgent {
    fn name(&self) -> &str {
        EXEC
    }

    fn run<'a>(&'a self, request: &'a AgentRequest) -> AgentFuture<'a> {
        Box::pin(run_exec(request))
    }
}

/// One attempt: the inputs (and any feedback) as JSON on stdin, outputs from stdout.
async fn run_exec(request: &AgentRequest) -> AgentResult {
    let Some(run) = request.config.get("run").and_then(Value::as_str) else {
        return AgentResult::failed(FailureClass::Blocked, "`x-weft-exec` needs a string `run`");
    };
    let mut stdin = request.inputs.clone();
    if let (Some(f), Value::Object(m)) = (&request.feedback, &mut stdin) {
        m.insert("feedback".into(), Value::String(f.clone()));
    }
    let stdin = stdin.to_string();
    let timeout = request.limits.wall_clock;
    let result = match run_command(run, &request.workspace, stdin.as_bytes(), timeout).await {
        Ok(r) => r,
        Err(e) => {
            return AgentResult::failed(
                FailureClass::ToolError,
                format!("cannot start the command: {e}"),
            );
        }
    };
    if result.timed_out {
        return AgentResult::failed(
            FailureClass::Timeout,
            format!("timed out after {timeout:?}; the process group was killed"),
        );
    }
    if !result.success() {
        let tail = stderr_tail(&result.stderr);
        let code = result
            .exit_code
            .map_or("a signal".to_string(), |c| c.to_string());
        return AgentResult::failed(FailureClass::ToolError, format!("exit code {code}: {tail}"));
    }
    AgentResult {
        outputs: parse_outputs(&result.stdout, &request.outputs),
        ..AgentResult::default()
    }
}

/// How many of a failed command's last stderr lines its error keeps, and how many characters
/// of each: enough to say why it failed (a traceback's last lines, a message and its cause)
/// in one line of the log.
const STDERR_TAIL_LINES: usize = 3;
const STDERR_TAIL_CHARS: usize = 200;

/// The last [`STDERR_TAIL_LINES`] non-blank lines of `stderr`, each cut to
/// [`STDERR_TAIL_CHARS`] characters, joined with ` | ` (a failed command's error message).
pub(crate) fn stderr_tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(STDERR_TAIL_LINES)..]
        .iter()
        .map(|l| l.trim().chars().take(STDERR_TAIL_CHARS).collect::<String>())
        .collect::<Vec<_>>()
        .join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decl(name: &str, ty: Option<&str>) -> OutputDecl {
        OutputDecl {
            name: name.into(),
            required: true,
            type_name: ty.map(str::to_string),
        }
    }

    #[test]
    fn a_failed_commands_error_keeps_its_last_stderr_lines() {
        assert_eq!(
            stderr_tail("trace store unreachable\n"),
            "trace store unreachable"
        );
        assert_eq!(
            stderr_tail("Traceback:\n  File x\n\n  line 3\nValueError: bad\n"),
            "File x | line 3 | ValueError: bad"
        );
        assert_eq!(stderr_tail(""), "");
        assert_eq!(stderr_tail(&"x".repeat(300)).chars().count(), 200);
    }

    #[test]
    fn outputs_from_stdout() {
        let one = vec![decl("x", Some("string"))];
        assert_eq!(
            parse_outputs("{\"a\": 1}\n", &one),
            *json!({"a": 1}).as_object().unwrap()
        );
        assert_eq!(
            parse_outputs("hello\n", &one),
            *json!({"x": "hello"}).as_object().unwrap()
        );
        assert_eq!(
            parse_outputs("42\n", &one),
            *json!({"x": "42"}).as_object().unwrap()
        );
        let int = vec![decl("n", Some("integer"))];
        assert_eq!(
            parse_outputs("42\n", &int),
            *json!({"n": 42}).as_object().unwrap()
        );
        assert_eq!(
            parse_outputs("many\n", &int),
            *json!({"n": "many"}).as_object().unwrap()
        );
        assert!(parse_outputs("hello", &[]).is_empty());
        assert!(parse_outputs("[1]", &[decl("a", None), decl("b", None)]).is_empty());
    }

    #[tokio::test]
    async fn runs_reads_stdin_and_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let r = run_command(
            "cat; echo err >&2; exit 3",
            dir.path(),
            b"{\"i\":1}",
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        assert_eq!(r.exit_code, Some(3));
        assert_eq!(r.stdout, "{\"i\":1}");
        assert_eq!(r.stderr, "err\n");
        let env = run_command(
            "echo \"$HOME|$FOO\"",
            dir.path(),
            b"",
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        assert!(env.success());
        assert!(env.stdout.ends_with("|\n"));
        // clock-exempt: a real process group is killed on real time.
        let started = std::time::Instant::now();
        let slow = run_command(
            "sleep 30 & sleep 30",
            dir.path(),
            b"",
            Duration::from_millis(300),
        )
        .await
        .unwrap();
        assert!(slow.timed_out);
        assert_eq!(slow.exit_code, None);
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}

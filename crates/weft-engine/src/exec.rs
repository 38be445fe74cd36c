//! The `exec` agent: `x-weft-exec: {run: "<shell command>"}` runs `sh -c <run>` in the
//! project directory.
//!
//! Environment cleared, then exactly `PATH` (`/usr/local/bin:/usr/bin:/bin`), `HOME` (the
//! project directory) and `LANG=C.UTF-8`. stdin carries the node's resolved inputs as one
//! JSON object. The shell leads its own process group; on timeout the whole group gets
//! `SIGKILL`. stdout and stderr keep their first [`MAX_OUTPUT_BYTES`] each.
//!
//! Outputs: if stdout (trimmed) is a JSON object, its members are the node's outputs;
//! otherwise stdout without its trailing newline is the value of the node's single declared
//! output (no outputs when the node declares none or several).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// Bytes kept from each of stdout and stderr.
pub const MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// `PATH` given to commands (fixed, so a plan behaves the same on every host).
pub const COMMAND_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

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

async fn fill<R: AsyncRead + Unpin>(stream: &mut R, head: &mut Vec<u8>) {
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_OUTPUT_BYTES.saturating_sub(head.len());
                if let Some(kept) = chunk.get(..n.min(room)) {
                    head.extend_from_slice(kept);
                }
            }
        }
    }
}

/// Runs `run` with `sh -c` in `dir`, feeding `stdin`, killed after `timeout`.
pub async fn run_command(
    run: &str,
    dir: &Path,
    stdin: &[u8],
    timeout: Duration,
) -> std::io::Result<ExecResult> {
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(run)
        .current_dir(dir)
        .env_clear()
        .env("PATH", COMMAND_PATH)
        .env("HOME", dir)
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let pgid = child.id();
    let (Some(mut input), Some(mut stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("the command's pipes are missing"));
    };
    let mut out = Vec::new();
    let mut err = Vec::new();
    let finished = tokio::time::timeout(timeout, async {
        let feed = async {
            // A command that does not read its stdin closes the pipe: not an error.
            let _ = input.write_all(stdin).await;
            drop(input);
        };
        let (_, _, _, status) = tokio::join!(
            feed,
            fill(&mut stdout, &mut out),
            fill(&mut stderr, &mut err),
            child.wait()
        );
        status
    })
    .await;
    let (exit_code, timed_out) = match finished {
        Ok(status) => (status?.code(), false),
        Err(_) => {
            if let Some(pgid) = pgid {
                kill_group(pgid);
            }
            let _ = child.wait().await;
            (None, true)
        }
    };
    Ok(ExecResult {
        exit_code,
        timed_out,
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
    })
}

/// `SIGKILL` to process group `pgid` through the shell's `kill` (the workspace forbids
/// `unsafe`, so no direct `kill(2)`).
fn kill_group(pgid: u32) {
    let _ = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg("kill -s KILL -- \"-$1\"")
        .arg("sh")
        .arg(pgid.to_string())
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// The node's outputs from its stdout (see the module docs).
pub fn parse_outputs(stdout: &str, declared: &[String]) -> Map<String, Value> {
    if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(stdout.trim()) {
        return m;
    }
    let mut out = Map::new();
    if let [only] = declared {
        let text = stdout.strip_suffix('\n').unwrap_or(stdout);
        let text = text.strip_suffix('\r').unwrap_or(text);
        out.insert(only.clone(), Value::String(text.to_string()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outputs_from_stdout() {
        let one = vec!["x".to_string()];
        assert_eq!(
            parse_outputs("{\"a\": 1}\n", &one),
            *json!({"a": 1}).as_object().unwrap()
        );
        assert_eq!(
            parse_outputs("hello\n", &one),
            *json!({"x": "hello"}).as_object().unwrap()
        );
        assert!(parse_outputs("hello", &[]).is_empty());
        assert!(parse_outputs("[1]", &["a".into(), "b".into()]).is_empty());
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

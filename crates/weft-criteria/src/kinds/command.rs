//! `command`: `sh -c <run>` in the workspace, with a time limit and capped output.
//!
//! Environment: cleared, then exactly `PATH` (`Limits::command_path`), `HOME` (the
//! canonical workspace root) and `LANG=C.UTF-8`; nothing of the engine's environment leaks
//! in, so no secret can reach a criterion's evidence through it. stdin is `/dev/null`.
//!
//! The shell leads a new process group. On timeout, or when the caller drops the
//! evaluation mid-run, the whole group gets `SIGKILL`, so grandchildren (a test runner's
//! workers, a stray `sleep`) die with it. Both pipes are
//! read to the end while keeping only the first `max_output_bytes`: discarding the rest
//! keeps memory bounded and the child never blocks on a full pipe. Isolation beyond this
//! (file system, network, permissions) comes with the sandbox issue.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use super::{build_regex, error, field, shorten, time_limit};
use crate::env::CriteriaEnv;
use crate::model::Criterion;
use crate::paths::{canonical_root, resolve_inside};
use crate::verdict::{Evidence, Outcome, OutputHead};

/// The head of a stream and its total size.
struct Capture {
    head: Vec<u8>,
    total: u64,
    cap: usize,
}

impl Capture {
    fn new(cap: usize) -> Capture {
        Capture {
            head: Vec::new(),
            total: 0,
            cap,
        }
    }

    /// Reads `stream` to its end, keeping the first `cap` bytes.
    async fn fill<R: AsyncRead + Unpin>(&mut self, stream: &mut R) {
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    self.total += n as u64;
                    let room = self.cap.saturating_sub(self.head.len());
                    if let Some(kept) = chunk.get(..n.min(room)) {
                        self.head.extend_from_slice(kept);
                    }
                }
            }
        }
    }

    fn into_head(self) -> OutputHead {
        OutputHead {
            text: String::from_utf8_lossy(&self.head).into_owned(),
            total_bytes: self.total,
            truncated: self.total > self.head.len() as u64,
        }
    }
}

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

    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(run)
        .current_dir(&cwd)
        .env_clear()
        .env("PATH", &env.limits.command_path)
        .env("HOME", &root)
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return error(format!("cannot start /bin/sh: {e}")),
    };
    let mut group = GroupGuard(child.id());
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return error("the command's pipes are missing");
    };
    let mut out = Capture::new(env.limits.max_output_bytes);
    let mut err = Capture::new(env.limits.max_output_bytes);
    // The work borrows the captures; when the timeout drops it, what was read so far stays.
    let finished = tokio::time::timeout(limit, async {
        let (_, _, status) =
            tokio::join!(out.fill(&mut stdout), err.fill(&mut stderr), child.wait());
        status
    })
    .await;
    let status = match finished {
        Ok(Ok(status)) => {
            group.disarm();
            Some(status)
        }
        Ok(Err(e)) => return error(format!("waiting for the command failed: {e}")),
        Err(_) => {
            group.kill();
            // Reap the shell so no zombie is left.
            let _ = child.wait().await;
            None
        }
    };
    let stdout = out.into_head();
    let stderr = err.into_head();
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

/// Kills the command's process group unless disarmed: on timeout, and also when the caller
/// drops the evaluation future mid-run (`kill_on_drop` alone would reach only the shell,
/// leaving its children running). Disarmed once the shell ended on its own, since by then
/// the group may be empty and its id free for reuse.
struct GroupGuard(Option<u32>);

impl GroupGuard {
    fn disarm(&mut self) {
        self.0 = None;
    }

    fn kill(&mut self) {
        if let Some(pgid) = self.0.take() {
            kill_group(pgid);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sends `SIGKILL` to process group `pgid` with the shell's `kill` builtin (the crate
/// forbids `unsafe`, so no direct `kill(2)`). Synchronous so it also works from `Drop`; it
/// takes a few milliseconds. The group outlives its leader while any member lives, so the
/// id cannot have been reused for another group.
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

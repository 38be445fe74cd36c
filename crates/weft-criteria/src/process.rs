//! The shell runner shared by the `command` criterion and the engine's `exec` agent:
//! `sh -c <script>` with a time limit and capped output.
//!
//! Environment: cleared, then exactly `PATH` ([`Shell::path_var`]), `HOME` ([`Shell::home`])
//! and `LANG=C.UTF-8`; nothing of the caller's environment leaks in. stdin is `/dev/null`,
//! or a pipe carrying [`Shell::stdin`] and then closed.
//!
//! The shell leads a new process group. On timeout, or when the caller drops the run
//! mid-way, the whole group gets `SIGKILL`, so grandchildren (a test runner's workers, a
//! stray `sleep`) die with it. Both pipes are read to the end while keeping only the first
//! [`Shell::max_output`] bytes: discarding the rest keeps memory bounded and the child never
//! blocks on a full pipe.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::verdict::OutputHead;

/// One `sh -c` run.
#[derive(Clone, Copy, Debug)]
pub struct Shell<'a> {
    /// The script given to `sh -c`.
    pub script: &'a str,
    /// The working directory.
    pub cwd: &'a Path,
    /// The value of `PATH`.
    pub path_var: &'a str,
    /// The value of `HOME`.
    pub home: &'a Path,
    /// Bytes written to stdin (then closed); `None` gives `/dev/null`.
    pub stdin: Option<&'a [u8]>,
    /// After this long the process group is killed.
    pub timeout: Duration,
    /// Bytes kept from each of stdout and stderr.
    pub max_output: usize,
    /// A program and arguments put before `/bin/sh -c <script>` (a confining helper);
    /// empty: the shell is started directly.
    pub wrapper: &'a [String],
}

/// What one run did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellOutput {
    /// How the shell ended; `None` when it timed out (its group was killed).
    pub status: Option<ExitStatus>,
    /// The head of stdout.
    pub stdout: OutputHead,
    /// The head of stderr.
    pub stderr: OutputHead,
}

impl ShellOutput {
    /// `true` when the time limit killed the process group.
    pub fn timed_out(&self) -> bool {
        self.status.is_none()
    }

    /// The exit code; `None` when killed by a signal or timed out.
    pub fn exit_code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }
}

/// Why a run produced no [`ShellOutput`].
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    /// `/bin/sh` could not be started.
    #[error("cannot start /bin/sh: {0}")]
    Start(std::io::Error),
    /// A requested pipe was not set up.
    #[error("the command's pipes are missing")]
    Pipes,
    /// Waiting for the shell failed.
    #[error("waiting for the command failed: {0}")]
    Wait(std::io::Error),
}

impl From<ShellError> for std::io::Error {
    /// The underlying I/O error (a missing pipe becomes [`std::io::ErrorKind::Other`]).
    fn from(e: ShellError) -> std::io::Error {
        match e {
            ShellError::Start(e) | ShellError::Wait(e) => e,
            ShellError::Pipes => std::io::Error::other("the command's pipes are missing"),
        }
    }
}

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

/// Runs `shell` (see the module docs).
pub async fn run(shell: &Shell<'_>) -> Result<ShellOutput, ShellError> {
    let mut command = match shell.wrapper.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg("/bin/sh");
            c
        }
        None => Command::new("/bin/sh"),
    };
    command
        .arg("-c")
        .arg(shell.script)
        .current_dir(shell.cwd)
        .env_clear()
        .env("PATH", shell.path_var)
        .env("HOME", shell.home)
        .env("LANG", "C.UTF-8")
        .stdin(if shell.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(ShellError::Start)?;
    let mut group = GroupGuard(child.id());
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ShellError::Pipes);
    };
    let input = match shell.stdin {
        Some(bytes) => Some((child.stdin.take().ok_or(ShellError::Pipes)?, bytes)),
        None => None,
    };
    let mut out = Capture::new(shell.max_output);
    let mut err = Capture::new(shell.max_output);
    // The work borrows the captures; when the timeout drops it, what was read so far stays.
    let finished = tokio::time::timeout(shell.timeout, async {
        let feed = async {
            if let Some((mut pipe, bytes)) = input {
                // A command that does not read its stdin closes the pipe: not an error.
                let _ = pipe.write_all(bytes).await;
                drop(pipe);
            }
        };
        let (_, _, _, status) = tokio::join!(
            feed,
            out.fill(&mut stdout),
            err.fill(&mut stderr),
            child.wait()
        );
        status
    })
    .await;
    let status = match finished {
        Ok(Ok(status)) => {
            group.disarm();
            Some(status)
        }
        Ok(Err(e)) => return Err(ShellError::Wait(e)),
        Err(_) => {
            group.kill();
            // Reap the shell so no zombie is left.
            let _ = child.wait().await;
            None
        }
    };
    Ok(ShellOutput {
        status,
        stdout: out.into_head(),
        stderr: err.into_head(),
    })
}

/// Kills the shell's process group unless disarmed: on timeout, and also when the caller
/// drops the run mid-way (`kill_on_drop` alone would reach only the shell, leaving its
/// children running). Disarmed once the shell ended on its own, since by then the group may
/// be empty and its id free for reuse.
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

/// Sends `SIGKILL` to process group `pgid` with the shell's `kill` builtin (the workspace
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

//! The parent side: starts the helper with the command, an environment reduced to the
//! allowlist, its own process group, a pids cgroup for the process cap (where weft may make
//! one), a wall-clock limit and an output cap. When the time runs out, or stdout and stderr
//! together pass the cap, the whole group gets `SIGKILL`; the helper's PID namespace takes
//! every other process of the job with it (`setsid` ones included), and the cgroup is
//! emptied and removed after the job, so no confined process outlives it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::Notify;

use crate::cgroup::Pids;
use crate::confinement::Confinement;
use crate::helper::{BLOCKED_EXIT, BLOCKED_PREFIX};

/// How to start the helper: a program and the arguments before `--policy`
/// (`weft` + `sandbox-exec`, or the `weft-sandbox-exec` binary alone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Helper {
    /// The program.
    pub program: PathBuf,
    /// Arguments before `--policy`.
    pub prefix: Vec<OsString>,
}

impl Helper {
    /// The `weft-sandbox-exec` binary (or any program taking the helper's arguments).
    pub fn binary(program: impl Into<PathBuf>) -> Helper {
        Helper {
            program: program.into(),
            prefix: Vec::new(),
        }
    }

    /// The `weft` CLI's hidden `sandbox-exec` subcommand.
    pub fn weft(weft: impl Into<PathBuf>) -> Helper {
        Helper {
            program: weft.into(),
            prefix: vec!["sandbox-exec".into()],
        }
    }
}

/// One confined run.
#[derive(Clone, Debug)]
pub struct Job<'a> {
    /// The command and its arguments (never through a shell unless argv says so).
    pub argv: &'a [String],
    /// The working directory.
    pub cwd: &'a Path,
    /// The whole environment of the command (nothing else is inherited).
    pub env: &'a [(String, String)],
    /// Bytes written to the command's stdin (then closed); `None` gives `/dev/null`.
    pub stdin: Option<&'a [u8]>,
    /// What the command may touch.
    pub confinement: &'a Confinement,
    /// Wall-clock limit; the group is killed after it.
    pub timeout: Duration,
    /// stdout + stderr bytes after which the group is killed.
    pub max_output: u64,
}

/// What a confined run did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The exit code, when the command exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did (`SIGXCPU` at the CPU limit).
    pub signal: Option<i32>,
    /// stdout (at most `max_output` bytes).
    pub stdout: Vec<u8>,
    /// stderr (at most `max_output` bytes).
    pub stderr: Vec<u8>,
    /// The wall-clock limit killed the group.
    pub timed_out: bool,
    /// The output cap killed the group.
    pub output_capped: bool,
    /// The process cap refused at least one fork (known where a pids cgroup enforced it;
    /// under `RLIMIT_NPROC` the command only sees its forks fail).
    pub process_capped: bool,
}

/// Why a job did not run to an [`Outcome`].
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The confinement cannot be enforced here; the command was not run.
    #[error("blocked: {0}")]
    Blocked(String),
    /// An environment variable that would change how programs load is refused.
    #[error("the environment variable {0} is not allowed in a sandbox (it changes what code runs)")]
    Env(String),
    /// No command.
    #[error("the command is empty")]
    EmptyCommand,
    /// The helper could not be started.
    #[error("cannot start the sandbox helper {0}: {1}")]
    Spawn(String, std::io::Error),
    /// Waiting for it failed.
    #[error("waiting for the sandboxed command failed: {0}")]
    Wait(std::io::Error),
    /// The helper's pipes are missing.
    #[error("the sandboxed command's pipes are missing")]
    Pipes,
}

/// Variables that load or inject code into the command: refused in the allowlist.
fn loader_variable(name: &str) -> bool {
    name.starts_with("LD_")
        || matches!(
            name,
            "PYTHONPATH"
                | "PYTHONSTARTUP"
                | "PYTHONHOME"
                | "PERL5LIB"
                | "PERL5OPT"
                | "RUBYOPT"
                | "RUBYLIB"
                | "NODE_OPTIONS"
                | "BASH_ENV"
                | "ENV"
                | "GCONV_PATH"
        )
}

/// Under a port grant with names to resolve, resolves them here (the job has no DNS: no UDP)
/// and writes them as a hosts file for the helper to show the job as `/etc/hosts`; a name
/// that does not resolve is left out (the job's lookup of it fails as any other).
async fn hosts_file(c: &mut Confinement) -> Result<Option<tempfile::NamedTempFile>, SandboxError> {
    use std::io::Write;
    if !matches!(c.net, crate::confinement::NetAccess::Ports { .. }) || c.resolve.is_empty() {
        c.hosts_file = None;
        return Ok(None);
    }
    let mut text = String::new();
    for name in &c.resolve {
        let Ok(addrs) = tokio::net::lookup_host((name.as_str(), 0)).await else {
            continue;
        };
        let mut ips: Vec<std::net::IpAddr> = addrs.map(|a| a.ip()).collect();
        ips.sort();
        ips.dedup();
        for ip in ips {
            text.push_str(&format!("{ip} {name}\n"));
        }
    }
    let io = |e: std::io::Error| {
        SandboxError::Blocked(format!("cannot write the job's hosts file: {e}"))
    };
    let mut file = tempfile::Builder::new()
        .prefix("weft-hosts-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .tempfile()
        .map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    file.flush().map_err(io)?;
    c.hosts_file = Some(file.path().to_path_buf());
    Ok(Some(file))
}

/// Runs `job` through `helper`.
pub async fn run(helper: &Helper, job: &Job<'_>) -> Result<Outcome, SandboxError> {
    if job.argv.is_empty() {
        return Err(SandboxError::EmptyCommand);
    }
    if let Some((name, _)) = job.env.iter().find(|(n, _)| loader_variable(n)) {
        return Err(SandboxError::Env(name.clone()));
    }
    // Who a root weft's job runs as: the confinement's choice, else the operator's in weft's
    // environment (docs/permissions.md §6, "Identity").
    let mut confinement = job.confinement.clone();
    confinement
        .step_user
        .get_or_insert_with(crate::confinement::StepUser::from_env);
    // Kept until the job ends: the helper binds it over the job's `/etc/hosts`.
    let _hosts = hosts_file(&mut confinement).await?;
    let policy =
        serde_json::to_string(&confinement).map_err(|e| SandboxError::Blocked(e.to_string()))?;
    let cgroup = job_cgroup(job.confinement)?;
    let mut command = Command::new(&helper.program);
    command.args(&helper.prefix).arg("--policy").arg(policy);
    if let Some(dir) = cgroup.as_ref().and_then(Pids::dir) {
        command.arg("--cgroup").arg(dir);
    }
    command
        .arg("--")
        .args(job.argv)
        .current_dir(job.cwd)
        .env_clear()
        .envs(job.env.iter().map(|(k, v)| (k, v)))
        .stdin(if job.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|e| SandboxError::Spawn(helper.program.display().to_string(), e))?;
    let mut group = Group(child.id());
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(SandboxError::Pipes);
    };
    let cap = Arc::new(Cap {
        seen: AtomicU64::new(0),
        limit: job.max_output,
        over: Notify::new(),
    });
    if let (Some(bytes), Some(mut pipe)) = (job.stdin, child.stdin.take()) {
        let bytes = bytes.to_vec();
        // A command that does not read its stdin closes the pipe: not an error.
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let _ = pipe.write_all(&bytes).await;
        });
    }
    let out = tokio::spawn(read_capped(stdout, cap.clone()));
    let err = tokio::spawn(read_capped(stderr, cap.clone()));
    let mut timed_out = false;
    let mut output_capped = false;
    let status = tokio::select! {
        s = child.wait() => Some(s.map_err(SandboxError::Wait)?),
        () = cap.over.notified() => { output_capped = true; None }
        () = tokio::time::sleep(job.timeout) => { timed_out = true; None }
    };
    // Whatever is left in the group dies now: after a limit, or after the command ended (a
    // finished tool leaves no daemons behind). Once the leader is reaped an empty group's id
    // could in principle be reused, but pids are handed out sequentially, so not in the
    // microseconds between the two calls.
    group.kill();
    let status = match status {
        Some(s) => s,
        None => child.wait().await.map_err(SandboxError::Wait)?,
    };
    let stdout = out.await.unwrap_or_default();
    let stderr = err.await.unwrap_or_default();
    let process_capped = match cgroup {
        Some(cgroup) => cgroup.finish().await,
        None => false,
    };
    use std::os::unix::process::ExitStatusExt;
    let outcome = Outcome {
        exit_code: status.code(),
        signal: status.signal(),
        stdout,
        stderr,
        timed_out,
        output_capped,
        process_capped,
    };
    if outcome.exit_code == Some(BLOCKED_EXIT) {
        let text = String::from_utf8_lossy(&outcome.stderr);
        if let Some(why) = text.lines().find_map(|l| l.strip_prefix(BLOCKED_PREFIX)) {
            return Err(SandboxError::Blocked(why.to_owned()));
        }
    }
    Ok(outcome)
}

/// The job's pids cgroup when it has a process cap and this machine lets weft make one;
/// otherwise the helper enforces the cap with `RLIMIT_NPROC` in a user namespace, or refuses.
fn job_cgroup(c: &Confinement) -> Result<Option<Pids>, SandboxError> {
    let (Some(max), Some(hierarchy)) = (c.max_processes, crate::cgroup::hierarchy()) else {
        return Ok(None);
    };
    Pids::create(hierarchy, max).map(Some).map_err(|e| {
        SandboxError::Blocked(format!(
            "cannot make the job's pids cgroup under {}: {e}",
            hierarchy.base.display()
        ))
    })
}

struct Cap {
    seen: AtomicU64,
    limit: u64,
    over: Notify,
}

/// Reads `stream` to its end, keeping what fits under the shared cap; wakes the runner once
/// the total passes it.
async fn read_capped<R: AsyncRead + Unpin>(mut stream: R, cap: Arc<Cap>) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let before = cap.seen.fetch_add(n as u64, Ordering::SeqCst);
                let room = usize::try_from(cap.limit.saturating_sub(before)).unwrap_or(usize::MAX);
                if let Some(part) = chunk.get(..n.min(room)) {
                    kept.extend_from_slice(part);
                }
                if before + n as u64 > cap.limit {
                    // notify_one stores a permit, so the runner sees it even if not yet waiting.
                    cap.over.notify_one();
                }
            }
        }
    }
    kept
}

/// The job's process group; killed on drop too, so a caller dropping the run mid-way leaves
/// nothing running.
struct Group(Option<u32>);

impl Group {
    fn kill(&mut self) {
        let pid = self
            .0
            .take()
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw);
        if let Some(pid) = pid {
            // ESRCH (the group is already empty) is fine.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

//! The re-exec'd helper: `weft sandbox-exec --policy JSON [--cgroup DIR] -- CMD ARGS…` (or
//! the `weft-sandbox-exec` binary). It runs single-threaded. The process the parent starts
//! is the supervisor (`supervise`: pids cgroup, PID namespace, process cap); it re-executes
//! the helper as the namespace's init and as `--confine JSON -- CMD…`, which confines
//! *itself* (rlimits, then Landlock, then the seccomp socket filter; each survives `execve`)
//! and then executes the command in its own place. Applying the restrictions here rather
//! than in a `pre_exec` closure keeps allocation out of a forked multi-threaded engine and
//! needs no `unsafe`.
//!
//! Fail-closed: when any restriction cannot be fully enforced the command is not run; the
//! helper prints one line starting with [`BLOCKED_PREFIX`] on stderr and exits
//! [`BLOCKED_EXIT`].

use std::ffi::OsString;

use serde::Serialize;

use crate::confinement::Confinement;

/// Exit status of a helper that refused to run the command.
pub const BLOCKED_EXIT: i32 = 125;
/// The start of the helper's refusal line on stderr.
pub const BLOCKED_PREFIX: &str = "weft-sandbox-exec: blocked: ";
/// Exit status when the command itself cannot be executed (as a shell's 127).
pub const EXEC_FAILED_EXIT: i32 = 127;

/// The first arguments the helper's entry point answers to: the public `--probe` and
/// `--policy`, and the supervisor's re-executions `--confine` and `--ns-init`. A program
/// that is its own helper (a test binary) hands these to [`main`].
pub const MODES: &[&str] = &["--probe", "--policy", "--confine", "--ns-init"];

/// What the helper enforced on itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Enforcement {
    /// The Landlock ABI the kernel offers (0 when Landlock is unavailable).
    pub landlock_abi: u32,
    /// `fully_enforced`, `partially_enforced` or `not_enforced`.
    pub landlock: String,
    /// Whether `no_new_privs` is set.
    pub no_new_privs: bool,
    /// Whether the seccomp socket filter is installed.
    pub seccomp: bool,
    /// Whether the rlimits were set.
    pub rlimits: bool,
    /// Whether a PID namespace could be made (every process of a job dies with it).
    #[serde(default)]
    pub pid_namespace: bool,
    /// Whether that needed a user namespace (not root), whose `RLIMIT_NPROC` can cap the
    /// job's processes.
    #[serde(default)]
    pub user_namespace: bool,
    /// Why no namespace could be made.
    #[serde(default)]
    pub namespace_error: Option<String>,
    /// Whether the job also got its own IPC and UTS namespaces (no SysV IPC object of the
    /// host is visible; a hostname change stays inside).
    #[serde(default)]
    pub ipc_uts_namespaces: bool,
    /// Whether every capability set (bounding, ambient, effective, permitted, inheritable)
    /// was emptied and checked empty.
    #[serde(default)]
    pub capabilities_dropped: bool,
    /// Whether every inherited descriptor above 2 was closed.
    #[serde(default)]
    pub descriptors_closed: bool,
    /// Whether making device nodes is refused (Landlock and seccomp).
    #[serde(default)]
    pub device_nodes_refused: bool,
    /// Whether the kernel keyring calls are refused.
    #[serde(default)]
    pub keyring_refused: bool,
    /// Whether the network filter (raw and packet sockets, other protocols, and for port
    /// grants Fast Open and `listen`) is installed.
    #[serde(default)]
    pub net_filter: bool,
    /// Whether a job runs with an unprivileged identity: weft's own uid when it is not root;
    /// for a root weft, the step user with its roots mounted idmapped (tried on the current
    /// directory's file system).
    #[serde(default)]
    pub unprivileged_identity: bool,
    /// What runs the job, or why a root weft cannot run it unprivileged here.
    #[serde(default)]
    pub identity_detail: String,
}

/// Why the helper refused.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// A resource limit could not be set.
    #[error("cannot set {0}: {1}")]
    Rlimit(&'static str, std::io::Error),
    /// Landlock could not be set up.
    #[error("landlock: {0}")]
    Landlock(String),
    /// Landlock is not fully enforced on this kernel.
    #[error("landlock is {status} here (ABI {abi}); weft needs ABI 6 fully enforced")]
    NotEnforced {
        /// The status.
        status: String,
        /// The kernel's ABI.
        abi: u32,
    },
    /// The seccomp filter could not be built or installed.
    #[error("seccomp: {0}")]
    Seccomp(String),
    /// The inherited descriptors could not be closed.
    #[error("cannot close the inherited descriptors: {0}")]
    Descriptors(std::io::Error),
    /// The capabilities could not all be dropped.
    #[error("{0}")]
    Capabilities(String),
    /// A grant root is refused (a symbolic link on its way) or cannot be opened.
    #[error("{0}")]
    Root(String),
    /// This operating system has no supported sandbox.
    #[error("no OS sandbox on this platform (weft confines processes on Linux only)")]
    Unsupported,
}

/// Confines the calling process (see the module docs). Linux only.
pub fn confine(c: &Confinement) -> Result<Enforcement, ApplyError> {
    #[cfg(target_os = "linux")]
    {
        crate::linux::confine(c)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = c;
        Err(ApplyError::Unsupported)
    }
}

/// The helper's `main`: parses its arguments and returns the exit status (it only returns
/// when the command could not be executed, or after supervising it). The public forms are
/// `--probe` and `--policy JSON [--cgroup DIR] -- CMD…`; `--confine JSON -- CMD…` and
/// `--ns-init` are the supervisor's re-executions of the helper (docs/permissions.md §6).
pub fn main(args: Vec<OsString>) -> i32 {
    // The arguments before ours (`sandbox-exec` under `weft`), to re-execute the same entry.
    let all: Vec<OsString> = std::env::args_os().skip(1).collect();
    let prefix = all
        .get(..all.len().saturating_sub(args.len()))
        .unwrap_or_default()
        .to_vec();
    let mut args = args.into_iter();
    let mode = args.next();
    match mode.as_ref().and_then(|a| a.to_str()) {
        Some("--probe") => probe(&prefix),
        Some("--ns-init") => ns_init(args.next().is_some_and(|a| a == "--userns")),
        Some(mode @ ("--policy" | "--confine")) => {
            let Some(json) = args.next() else {
                return usage(&format!("{mode} needs a JSON value"));
            };
            let Some(json) = json.to_str().map(str::to_owned) else {
                return usage(&format!("{mode} is not UTF-8"));
            };
            let mut cgroup = None;
            let mut next = args.next();
            if mode == "--policy" && next.as_ref().and_then(|a| a.to_str()) == Some("--cgroup") {
                cgroup = args.next().map(std::path::PathBuf::from);
                if cgroup.is_none() {
                    return usage("--cgroup needs a directory");
                }
                next = args.next();
            }
            if next.as_ref().and_then(|a| a.to_str()) != Some("--") {
                return usage("expected -- before the command");
            }
            let argv: Vec<OsString> = args.collect();
            let Some((program, rest)) = argv.split_first() else {
                return usage("no command after --");
            };
            let confinement: Confinement = match serde_json::from_str(&json) {
                Ok(c) => c,
                Err(e) => return usage(&format!("{mode}: {e}")),
            };
            if mode == "--policy" {
                return supervise(&json, &confinement, cgroup.as_deref(), &prefix, &argv);
            }
            if let Err(e) = confine(&confinement) {
                eprintln!("{BLOCKED_PREFIX}{e}");
                return BLOCKED_EXIT;
            }
            exec(program, rest)
        }
        _ => usage("expected --probe or --policy JSON -- CMD…"),
    }
}

/// Runs the command under the supervisor (Linux), or refuses.
fn supervise(
    json: &str,
    c: &Confinement,
    cgroup: Option<&std::path::Path>,
    prefix: &[OsString],
    argv: &[OsString],
) -> i32 {
    #[cfg(target_os = "linux")]
    {
        match crate::supervise::supervise(json, c, cgroup, prefix, argv) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("{BLOCKED_PREFIX}{e}");
                BLOCKED_EXIT
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (json, c, cgroup, prefix, argv);
        eprintln!("{BLOCKED_PREFIX}{}", ApplyError::Unsupported);
        BLOCKED_EXIT
    }
}

fn ns_init(userns: bool) -> i32 {
    #[cfg(target_os = "linux")]
    {
        crate::supervise::ns_init(userns)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = userns;
        BLOCKED_EXIT
    }
}

fn usage(why: &str) -> i32 {
    eprintln!("{BLOCKED_PREFIX}{why} (usage: weft sandbox-exec --policy JSON -- CMD [ARGS…])");
    BLOCKED_EXIT
}

/// Replaces the process with `program` (looked up in `PATH` when it has no `/`).
fn exec(program: &OsString, rest: &[OsString]) -> i32 {
    use std::os::unix::process::CommandExt;
    let err = std::process::Command::new(program).args(rest).exec();
    eprintln!(
        "weft-sandbox-exec: cannot execute {}: {err}",
        program.to_string_lossy()
    );
    EXEC_FAILED_EXIT
}

/// `--probe`: makes the namespaces a job gets and confines itself the way a node with a port
/// grant would be, and prints the [`Enforcement`] (or the refusal) as one JSON line.
fn probe(prefix: &[OsString]) -> i32 {
    let c = Confinement {
        net: crate::confinement::NetAccess::Ports { ports: vec![443] },
        cpu_seconds: Some(3600),
        max_file_bytes: Some(1 << 30),
        ..Confinement::minimal()
    };
    #[cfg(target_os = "linux")]
    let namespaces = crate::fds::close_inherited()
        .map_err(crate::supervise::SuperviseError::Descriptors)
        .and_then(|()| crate::supervise::namespaces())
        .map(|i| i.user_namespace);
    #[cfg(not(target_os = "linux"))]
    let namespaces: Result<bool, ApplyError> = Err(ApplyError::Unsupported);
    #[cfg(target_os = "linux")]
    let identity = crate::supervise::probe_identity(prefix);
    #[cfg(not(target_os = "linux"))]
    let identity: Result<String, String> = {
        let _ = prefix;
        Err(ApplyError::Unsupported.to_string())
    };
    match confine(&c) {
        Ok(mut e) => {
            e.unprivileged_identity = identity.is_ok();
            e.identity_detail = identity.unwrap_or_else(|why| why);
            match namespaces {
                Ok(user) => {
                    e.pid_namespace = true;
                    e.user_namespace = user;
                    e.ipc_uts_namespaces = true;
                }
                Err(err) => e.namespace_error = Some(err.to_string()),
            }
            println!("{}", serde_json::json!({"ok": true, "enforcement": e}));
            0
        }
        Err(e) => {
            println!(
                "{}",
                serde_json::json!({"ok": false, "error": e.to_string()})
            );
            0
        }
    }
}

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

use crate::confinement::Confinement;
pub use crate::enforcement::{ApplyError, Enforcement};

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

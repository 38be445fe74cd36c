//! The helper's supervisor (Linux): the process the parent starts. It joins the job's pids
//! cgroup (when the parent made one), moves its future children into a new PID namespace
//! (and, when not root, a new user namespace whose `RLIMIT_NPROC` is the process cap), then
//! starts two re-executions of itself:
//!
//! 1. `--ns-init`, the namespace's init (pid 1), which only reaps orphans. When it dies the
//!    kernel kills every process left in the namespace — a `setsid` or `setpgid` child
//!    cannot escape that the way it escapes a process-group kill.
//! 2. `--confine JSON -- CMD…` (pid 2), which confines itself (rlimits, Landlock, seccomp)
//!    and `execve`s the command.
//!
//! When the command ends the supervisor kills the init (so nothing of the job outlives it)
//! and ends the way the command did: its exit code, or the same signal. The supervisor
//! itself stays unconfined: it runs no foreign code, and it must signal the init, which a
//! Landlock-scoped process could not.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

use rustix::process::{Resource, Rlimit, Signal, setrlimit};
use rustix::thread::{CapabilitySet, UnshareFlags};

use crate::confinement::Confinement;
use crate::namespaces::unshare;

/// Why the supervisor refused to start the command.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SuperviseError {
    /// The job's cgroup could not be joined.
    #[error("cannot join the job's pids cgroup {0}: {1}")]
    Cgroup(String, std::io::Error),
    /// The namespaces could not be made.
    #[error("cannot create a {0} namespace: {1}")]
    Namespace(&'static str, std::io::Error),
    /// The inherited descriptors could not be closed.
    #[error("cannot close the inherited descriptors: {0}")]
    Descriptors(std::io::Error),
    /// The capabilities could not be dropped before the job starts.
    #[error("{0}")]
    Capabilities(String),
    /// The read-only or hidden paths could not be made.
    #[error("{0}")]
    Protect(String),
    /// No mechanism enforces the process cap.
    #[error(
        "a process cap of {0} is required but cannot be enforced: no pids cgroup could be made \
         and RLIMIT_NPROC does not bind root"
    )]
    NoCap(u32),
    /// `RLIMIT_NPROC` could not be set.
    #[error("cannot set RLIMIT_NPROC: {0}")]
    Nproc(std::io::Error),
    /// A root weft's job cannot run as the unprivileged step user.
    #[error("{0}")]
    Identity(String),
    /// The working directory could not be entered again through the job's mounts.
    #[error("cannot enter the working directory through the job's mounts: {0}")]
    Cwd(std::io::Error),
    /// A re-execution of the helper could not be started.
    #[error("cannot start the {0}: {1}")]
    Spawn(&'static str, std::io::Error),
}

/// How the job is isolated, as the probe reports it.
pub(crate) struct Isolation {
    /// A user namespace was needed (not root).
    pub user_namespace: bool,
}

/// Moves this process's future children into a new PID namespace, and this process into new
/// IPC and UTS namespaces (the host's SysV shared memory, semaphores and message queues are
/// not visible; a hostname change would stay inside) — inside a new user namespace first
/// when not root (unprivileged processes may only make these inside their own user
/// namespace; uid and gid map to themselves, so file ownership is unchanged).
pub(crate) fn namespaces() -> Result<Isolation, SuperviseError> {
    let root = rustix::process::geteuid().is_root();
    let own = UnshareFlags::NEWPID | UnshareFlags::NEWIPC | UnshareFlags::NEWUTS;
    if root {
        unshare(own).map_err(|e| SuperviseError::Namespace("PID, IPC and UTS", e.into()))?;
        return Ok(Isolation {
            user_namespace: false,
        });
    }
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    unshare(UnshareFlags::NEWUSER | own)
        .map_err(|e| SuperviseError::Namespace("user, PID, IPC and UTS", e.into()))?;
    let write = |file: &str, text: String| {
        std::fs::write(Path::new("/proc/self").join(file), text)
            .map_err(|e| SuperviseError::Namespace("user", e))
    };
    write("setgroups", "deny".into())?;
    write("uid_map", format!("{uid} {uid} 1"))?;
    write("gid_map", format!("{gid} {gid} 1"))?;
    Ok(Isolation {
        user_namespace: true,
    })
}

/// What setting up the step user made.
struct Unprivileged {
    /// The namespace init, already started (it carries the idmapping's user namespace).
    init: Option<std::process::Child>,
    /// Whether the job's mount namespace was made (the roots are mounted idmapped).
    mounts: bool,
}

/// Sets up the step user for a root weft's job (`identity`): checks that it may reach every
/// root, starts the init with the user namespace of the mapping, and mounts the roots
/// idmapped in a mount namespace of the job's own. Every check that can fail comes before the
/// first mount is attached, so a fallback to uid 0 finds the job's view unchanged.
fn unprivileged(
    c: &Confinement,
    prefix: &[OsString],
    user: crate::confinement::StepUser,
) -> Result<Unprivileged, crate::identity::IdentityError> {
    use crate::identity::{self, IdentityError};
    identity::validate(user)?;
    identity::check_reachable(c, user)?;
    let Some(owner) = identity::mapped_owner(c) else {
        return Ok(Unprivileged {
            init: None,
            mounts: false,
        });
    };
    let (mut init, userns) = identity::spawn_init_with_userns(prefix, owner, user)?;
    let prepared = crate::protect::private_namespace()
        .map_err(|e| IdentityError::Userns(e.to_string()))
        .and_then(|()| identity::prepare(c, &userns, user));
    let prepared = match prepared {
        Ok(p) => p,
        Err(e) => {
            let _ = init.kill();
            let _ = init.wait();
            return Err(e);
        }
    };
    identity::attach(c, prepared, user.uid)?;
    Ok(Unprivileged {
        init: Some(init),
        mounts: true,
    })
}

/// For the probe (after [`namespaces`]): whether a job runs unprivileged here, with what
/// runs it, or why not. As root, the idmapped mount of a job is made for real on the current
/// directory (in a mount namespace of the probe's own, never attached).
pub(crate) fn probe_identity(prefix: &[OsString]) -> Result<String, String> {
    let uid = rustix::process::getuid().as_raw();
    if uid != 0 {
        // Made for real, as a job's (in the probe's own namespaces, which die with it).
        let c = Confinement {
            write_roots: vec![std::env::current_dir().map_err(|e| e.to_string())?],
            ..Confinement::minimal()
        };
        crate::protect::private_namespace().map_err(|e| e.to_string())?;
        crate::read_only_view::make(&c).map_err(|e| e.to_string())?;
        return Ok(format!(
            "uid {uid} (weft's own; weft is not root), every mount read-only but the write \
             roots"
        ));
    }
    let user = crate::confinement::StepUser::from_env();
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let c = Confinement {
        write_roots: vec![cwd.clone()],
        ..Confinement::minimal()
    };
    crate::identity::validate(user).map_err(|e| e.to_string())?;
    let owner = crate::identity::mapped_owner(&c).ok_or("the current directory is unreadable")?;
    let (mut init, userns) =
        crate::identity::spawn_init_with_userns(prefix, owner, user).map_err(|e| e.to_string())?;
    let made = crate::protect::private_namespace()
        .map_err(|e| e.to_string())
        .and_then(|()| crate::identity::prepare(&c, &userns, user).map_err(|e| e.to_string()));
    let _ = init.kill();
    let _ = init.wait();
    made.map(|_| {
        format!(
            "a root weft's jobs run as uid {} gid {}, their roots mounted idmapped ({} here)",
            user.uid,
            user.gid,
            cwd.display()
        )
    })
}

/// Runs `argv` supervised (see the module docs) and returns the exit code to end with.
pub(crate) fn supervise(
    json: &str,
    c: &Confinement,
    cgroup: Option<&Path>,
    prefix: &[OsString],
    argv: &[OsString],
) -> Result<i32, SuperviseError> {
    // First, so no process of the job — the init included — holds a descriptor weft's caller
    // left open.
    crate::fds::close_inherited().map_err(SuperviseError::Descriptors)?;
    if let Some(dir) = cgroup {
        // Before anything is started, so every process of the job is counted.
        std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string())
            .map_err(|e| SuperviseError::Cgroup(dir.display().to_string(), e))?;
    }
    let isolation = namespaces()?;
    if let (Some(max), None) = (c.max_processes, cgroup) {
        if !isolation.user_namespace {
            return Err(SuperviseError::NoCap(max));
        }
        // Counted per user namespace since Linux 5.14, so this caps the job alone.
        let max = u64::from(max);
        setrlimit(
            Resource::Nproc,
            Rlimit {
                current: Some(max),
                maximum: Some(max),
            },
        )
        .map_err(|e| SuperviseError::Nproc(e.into()))?;
    }
    // A root weft's job runs as the unprivileged step user (`identity`), its roots mounted
    // idmapped; where that cannot be set up it is blocked, or runs as uid 0 without
    // capabilities when the operator allowed it.
    let mut early_init = None;
    let mut mounted = false;
    let mut run_as = None;
    if !isolation.user_namespace {
        let user = c.step_user.unwrap_or_default();
        match unprivileged(c, prefix, user) {
            Ok(Unprivileged { init, mounts }) => {
                early_init = init;
                mounted = mounts;
                run_as = Some(user);
            }
            Err(e) if user.allow_root && !e.view_changed() => {
                eprintln!(
                    "weft-sandbox-exec: warning: the job runs as uid 0 without capabilities \
                     (WEFT_SANDBOX_ROOT_FALLBACK=1): {e}"
                );
            }
            Err(e) => return Err(SuperviseError::Identity(e.to_string())),
        }
    }
    // A non-root weft's job runs as weft's own uid, which owns files outside the grants that
    // Landlock would let it chmod, chown, touch or tag: every mount of its namespace is made
    // read-only but its write roots (`read_only_view`).
    if isolation.user_namespace {
        crate::protect::private_namespace().map_err(|e| SuperviseError::Protect(e.to_string()))?;
        crate::read_only_view::make(c).map_err(|e| SuperviseError::Protect(e.to_string()))?;
        mounted = true;
    }
    // Before the capabilities go: mounting needs CAP_SYS_ADMIN (in the user namespace).
    if crate::protect::needed(c) && !mounted {
        crate::protect::private_namespace().map_err(|e| SuperviseError::Protect(e.to_string()))?;
        mounted = true;
    }
    crate::protect::protect(c).map_err(|e| SuperviseError::Protect(e.to_string()))?;
    if mounted {
        // The working directory still refers to the mounts as they were: enter it again
        // through the job's own (idmapped, read-only, hidden) ones.
        let cwd = std::env::current_dir().map_err(SuperviseError::Cwd)?;
        std::env::set_current_dir(&cwd).map_err(SuperviseError::Cwd)?;
    }
    // The supervisor needs no capability from here on (it only waits and signals its own
    // children) but CAP_SETUID and CAP_SETGID to start the job as the step user, dropped
    // right after; its children inherit the empty bounding set: as root, the `execve`s below
    // then start them with no capabilities at all.
    let keep = if run_as.is_some() {
        CapabilitySet::SETUID | CapabilitySet::SETGID
    } else {
        CapabilitySet::empty()
    };
    crate::caps::drop_all_but(keep).map_err(|e| SuperviseError::Capabilities(e.to_string()))?;
    let exe = Path::new("/proc/self/exe");
    let mut init = match early_init {
        Some(init) => init,
        None => Command::new(exe)
            .args(prefix)
            .arg("--ns-init")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| SuperviseError::Spawn("namespace init", e))?,
    };
    let mut command = Command::new(exe);
    command
        .args(prefix)
        .arg("--confine")
        .arg(json)
        .arg("--")
        .args(argv);
    if let Some(user) = run_as {
        // `uid` also empties the supplementary groups (std calls `setgroups(0)` first); leaving
        // uid 0 clears the permitted and effective capabilities.
        use std::os::unix::process::CommandExt;
        command.uid(user.uid).gid(user.gid);
    }
    let command = command.spawn();
    if run_as.is_some() {
        crate::caps::drop_all().map_err(|e| SuperviseError::Capabilities(e.to_string()))?;
    }
    let status = command.and_then(|mut child| child.wait());
    // The init's death takes every process left in the namespace with it.
    let _ = init.kill();
    let _ = init.wait();
    let status = status.map_err(|e| SuperviseError::Spawn("confined command", e))?;
    Ok(end_like(status))
}

/// The exit code that reproduces `status`; a signal is re-raised on this process (no core
/// file: `RLIMIT_CORE` is 0), falling back to `128 + signal` where it is ignored (`SIGPIPE`,
/// which the Rust runtime ignores).
fn end_like(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return code;
    }
    let Some(sig) = status.signal() else { return 1 };
    let _ = setrlimit(
        Resource::Core,
        Rlimit {
            current: Some(0),
            maximum: Some(0),
        },
    );
    if let Some(signal) = Signal::from_named_raw(sig) {
        let _ = rustix::process::kill_process(rustix::process::getpid(), signal);
    }
    128 + sig
}

/// `--ns-init`: pid 1 of the job's namespace. Reaps whatever is orphaned to it until the
/// supervisor kills it (or dies: the parent-death signal covers a supervisor killed first).
///
/// With `userns` (a root weft's job) it first makes a user namespace of its own, says so on
/// stdout, and drops the capabilities it holds there: the supervisor maps the workspace's
/// owner to the step user in it, for the idmapped mounts (`identity`).
pub(crate) fn ns_init(userns: bool) -> i32 {
    let _ = rustix::process::set_parent_process_death_signal(Some(Signal::KILL));
    if userns {
        if crate::identity::make_userns_for_parent().is_err() {
            return 1;
        }
        // Nothing here needs them; best effort, the init runs no foreign code.
        let _ = crate::caps::drop_all();
    }
    loop {
        match rustix::process::wait(rustix::process::WaitOptions::empty()) {
            Ok(_) => {}
            // No children (yet): orphans arrive when their parents die.
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
}

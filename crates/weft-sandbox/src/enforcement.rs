//! What the helper enforced on itself ([`Enforcement`]) and why it refused ([`ApplyError`]):
//! vocabulary the helper's entry point (`helper`, which re-exports both) and the Linux
//! confinement it calls (`linux`) share, below both.

use serde::Serialize;

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

//! What a confined process may do, as the data the parent hands the helper (`--policy JSON`).
//! It holds no secrets: the environment travels as the helper's own environment, which the
//! parent has already reduced to the allowlist.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Network access of a confined process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum NetAccess {
    /// No network: every `socket(2)` but `socketpair`'s is refused, TCP bind and connect too.
    None,
    /// TCP connect to these ports only (Landlock cannot tell hosts apart). No TCP bind, no
    /// UDP (no datagram socket at all: its destinations could not be bounded).
    Ports {
        /// The ports.
        ports: Vec<u16>,
    },
    /// Unrestricted IP networking.
    Full,
}

/// The confinement of one process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confinement {
    /// Directories (or files) the process may read and execute, besides the system paths.
    pub read_roots: Vec<PathBuf>,
    /// Directories (or files) the process may read, write, create and delete in.
    pub write_roots: Vec<PathBuf>,
    /// Network access.
    pub net: NetAccess,
    /// CPU seconds (`RLIMIT_CPU`: `SIGXCPU` at the limit, `SIGKILL` one second later).
    pub cpu_seconds: Option<u64>,
    /// Largest file the process may write, in bytes (`RLIMIT_FSIZE`).
    pub max_file_bytes: Option<u64>,
    /// Most processes the job may have at once, the helper and the namespace init included
    /// (a pids cgroup, or `RLIMIT_NPROC` in the job's user namespace; docs/permissions.md
    /// §6). `None`: no cap. A cap that cannot be enforced blocks the job.
    #[serde(default)]
    pub max_processes: Option<u32>,
    /// The workspace the roots under it belong to: those are opened beneath it without
    /// following symbolic links, and a root reached through a link refuses the job
    /// (docs/permissions.md §6). `None`: every root is opened as given.
    #[serde(default)]
    pub workspace: Option<PathBuf>,
    /// Paths under the workspace that stay read-only although a write root holds them (the
    /// operator policy's refused writes, weft's own state): bound read-only in the job's
    /// mount namespace. Missing ones are skipped.
    #[serde(default)]
    pub read_only: Vec<PathBuf>,
    /// Paths under the workspace the job may not read although a root holds them (the
    /// operator policy's refused reads): covered by an empty read-only tmpfs (a directory)
    /// or the null device (a file). Missing ones are skipped.
    #[serde(default)]
    pub hidden: Vec<PathBuf>,
    /// Who the job runs as when weft is root (docs/permissions.md §6, "Identity"). `None`:
    /// [`StepUser::from_env`] on the parent side, [`StepUser::default`] in the helper.
    #[serde(default)]
    pub step_user: Option<StepUser>,
    /// Host names the job may resolve under a port grant (the granted origins' hosts): the
    /// parent resolves them and the job sees only them in its `/etc/hosts`
    /// (docs/permissions.md §6, "Name resolution"). Ignored unless `net` is a port grant.
    #[serde(default)]
    pub resolve: Vec<String>,
    /// The hosts file the parent wrote for [`Confinement::resolve`], bound read-only over
    /// `/etc/hosts` in the job's mount namespace. Set by [`crate::run::run`].
    #[serde(default)]
    pub hosts_file: Option<PathBuf>,
}

/// The unprivileged identity a root weft's job runs as. Its grant roots are mounted
/// *idmapped* in the job's mount namespace, so the workspace owner's files appear owned by
/// this uid and gid, and what the job writes there lands owned by the workspace's owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepUser {
    /// The job's uid (never 0).
    pub uid: u32,
    /// The job's gid (never 0).
    pub gid: u32,
    /// Whether a job may run as uid 0 (without capabilities) where the unprivileged identity
    /// cannot be set up (no idmapped mounts on the workspace's file system, a directory above
    /// the workspace closed to the uid). `false`: such a job is blocked.
    #[serde(default)]
    pub allow_root: bool,
}

/// `nobody`.
pub const NOBODY: u32 = 65534;

impl Default for StepUser {
    fn default() -> StepUser {
        StepUser {
            uid: NOBODY,
            gid: NOBODY,
            allow_root: false,
        }
    }
}

impl StepUser {
    /// The operator's choice in weft's environment: `WEFT_SANDBOX_UID`, `WEFT_SANDBOX_GID`
    /// (default 65534 each; 0 or a non-number is ignored) and `WEFT_SANDBOX_ROOT_FALLBACK=1`
    /// (a root weft's job may run as uid 0 without capabilities where the identity cannot be
    /// set up).
    pub fn from_env() -> StepUser {
        let id = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<u32>().ok())
                .filter(|&v| v != 0)
                .unwrap_or(NOBODY)
        };
        StepUser {
            uid: id("WEFT_SANDBOX_UID"),
            gid: id("WEFT_SANDBOX_GID"),
            allow_root: std::env::var("WEFT_SANDBOX_ROOT_FALLBACK").is_ok_and(|v| v == "1"),
        }
    }
}

/// The process cap of a node's commands ([`crate::from_grants::confinement`]): room for a
/// build's parallel compilers and test runners, far below what exhausts a machine.
pub const DEFAULT_MAX_PROCESSES: u32 = 256;

/// Read-only system paths every process needs (the loader, libraries, shells, the null and
/// random devices, its own `/proc` entry). Missing ones are skipped.
pub const SYSTEM_READ_PATHS: &[&str] = &[
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/bin",
    "/sbin",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/dev/urandom",
    "/dev/random",
    "/proc/self",
];

/// Paths a process may write besides its write roots: the null device only.
pub const SYSTEM_WRITE_PATHS: &[&str] = &["/dev/null"];

impl Confinement {
    /// Nothing but the system paths, no network, no limits (no process cap either).
    pub fn minimal() -> Confinement {
        Confinement {
            read_roots: Vec::new(),
            write_roots: Vec::new(),
            net: NetAccess::None,
            cpu_seconds: None,
            max_file_bytes: None,
            max_processes: None,
            workspace: None,
            read_only: Vec::new(),
            hidden: Vec::new(),
            step_user: None,
            resolve: Vec::new(),
            hosts_file: None,
        }
    }
}

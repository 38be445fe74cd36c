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
    /// TCP connect to these ports only (Landlock cannot tell hosts apart); UDP is open, for
    /// DNS. No TCP bind.
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
        }
    }
}

//! weft-sandbox: runs a command confined on Linux, fail-closed.
//!
//! - [`confinement`]: what a process may touch (read and write roots, network, limits).
//! - [`helper`]: the re-exec'd helper that confines itself and executes the command
//!   (`weft sandbox-exec`, or the `weft-sandbox-exec` binary); Linux mechanisms in `linux`,
//!   the PID-namespace supervisor and process cap in `supervise`.
//! - [`cgroup`]: the job's pids cgroup (the process cap where weft may create cgroups).
//! - [`run`]: the parent side: empty environment plus an allowlist, own process group,
//!   wall-clock limit and output cap that kill the group.
//! - [`doctor`]: what this machine enforces, and [`Sandbox`], which refuses to run anything
//!   while a required mechanism is missing.
//! - [`from_grants`]: a node's effective permissions as a confinement.
//! - [`scratch`]: per-node temporary workspaces whose edits come back as a unified patch.
//!
//! Semantics and limits: docs/permissions.md ("The OS sandbox").

#[cfg(target_os = "linux")]
mod beneath;
#[cfg(target_os = "linux")]
mod caps;
pub mod cgroup;
pub mod confinement;
pub mod doctor;
mod enforcement;
#[cfg(target_os = "linux")]
mod fds;
#[cfg(target_os = "linux")]
mod filter;
pub mod from_grants;
pub mod helper;
#[cfg(target_os = "linux")]
mod identity;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod namespaces;
#[cfg(target_os = "linux")]
mod protect;
#[cfg(target_os = "linux")]
mod read_only_view;
pub mod run;
pub mod scratch;
#[cfg(target_os = "linux")]
mod supervise;

pub use confinement::{Confinement, NetAccess, StepUser};
pub use doctor::{Report, Sandbox, doctor, doctor_blocking};
pub use helper::{BLOCKED_EXIT, Enforcement};
pub use run::{Helper, Job, Outcome, SandboxError};
pub use scratch::{Patch, Scratch};

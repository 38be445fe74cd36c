//! A non-root weft's job sees every mount read-only but its write roots (Linux).
//!
//! Landlock governs no metadata change: `chmod`, `chown`, `utimensat`, `setxattr` and
//! `removexattr` pass it whatever the grants. A root weft's job runs as the step user, who
//! owns nothing outside its roots (`identity`); a non-root weft's job runs as weft's own
//! uid, which owns its home, its other projects, its files in `/tmp`. So the supervisor, in
//! the job's own user and mount namespace (uid and gid mapped to themselves), first clones
//! each write root as it is (`open_tree(OPEN_TREE_CLONE | AT_RECURSIVE)`: detached, still
//! read-write), then makes every mount of the namespace read-only (`mount_setattr` with
//! `MOUNT_ATTR_RDONLY`, recursively from `/`), then attaches the clones over their roots
//! (`move_mount`). The order matters: a mount cloned in an unprivileged user namespace from
//! a read-only one stays locked read-only. Any change outside the write roots, metadata
//! included, then fails with `EROFS` before Landlock is asked; a write outside them fails
//! with `EROFS` too (rather than Landlock's `EACCES`). Device files (`/dev/null`, a
//! terminal) stay writable: a read-only mount refuses writes to files and directories, not
//! to devices.

use std::os::fd::AsFd;
use std::path::PathBuf;

use rustix::fs::{Mode, OFlags};
use rustix::mount::{MoveMountFlags, OpenTreeFlags, move_mount, open_tree};

use crate::confinement::Confinement;

/// Why the job's read-only view could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ViewError {
    /// A write root could not be opened, cloned or attached again.
    #[error("cannot keep the write root {0} writable in the job's read-only view: {1}")]
    WriteRoot(String, String),
    /// The mounts could not be made read-only.
    #[error("cannot make the job's mounts read-only: {0}")]
    ReadOnly(std::io::Error),
}

/// The write roots that exist and lie in no other one (a clone is recursive).
fn outermost(c: &Confinement) -> Vec<PathBuf> {
    let present: Vec<&PathBuf> = c
        .write_roots
        .iter()
        .filter(|p| std::fs::symlink_metadata(p).is_ok())
        .collect();
    let mut out: Vec<PathBuf> = Vec::new();
    for p in &present {
        let inside_other = present.iter().any(|q| q != p && p.starts_with(q));
        if !inside_other && !out.contains(p) {
            out.push((*p).clone());
        }
    }
    out
}

/// Makes the view (see the module docs). The caller is in the job's own user and mount
/// namespace, its mounts private.
pub(crate) fn make(c: &Confinement) -> Result<(), ViewError> {
    let ws = c.workspace.as_deref();
    let root_err = |p: &PathBuf, e: String| ViewError::WriteRoot(p.display().to_string(), e);
    let mut clones = Vec::new();
    for p in outermost(c) {
        let Some(root) =
            crate::beneath::open_root(ws, &p).map_err(|e| root_err(&p, e.to_string()))?
        else {
            continue;
        };
        let flags = OpenTreeFlags::OPEN_TREE_CLONE
            | OpenTreeFlags::OPEN_TREE_CLOEXEC
            | OpenTreeFlags::AT_EMPTY_PATH
            | OpenTreeFlags::AT_RECURSIVE;
        let tree = open_tree(&root.fd, "", flags).map_err(|e| root_err(&p, e.to_string()))?;
        clones.push((p, tree));
    }
    let top = rustix::fs::open(
        "/",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| ViewError::ReadOnly(e.into()))?;
    crate::identity::set_read_only(top.as_fd()).map_err(ViewError::ReadOnly)?;
    for (p, tree) in clones {
        // Opened again through the read-only mounts: the path leads where it led before.
        let Some(at) =
            crate::beneath::open_root(ws, &p).map_err(|e| root_err(&p, e.to_string()))?
        else {
            return Err(root_err(&p, "it is gone".into()));
        };
        move_mount(
            &tree,
            "",
            &at.fd,
            "",
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH | MoveMountFlags::MOVE_MOUNT_T_EMPTY_PATH,
        )
        .map_err(|e| root_err(&p, e.to_string()))?;
    }
    Ok(())
}

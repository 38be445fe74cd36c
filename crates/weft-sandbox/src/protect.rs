//! Paths a job may not change or see although a root grants them (Linux): the operator
//! policy's refusals inside a write or read root (`deny fs:*:.git/**` under `fs:write:**`),
//! and weft's own state under the workspace (`.weft`: the store, the audit log, scratch
//! copies, the tool directory). Landlock only adds rights down a tree, so these are made by
//! the supervisor in a mount namespace of the job's own: a path kept read-only is bound onto
//! itself and remounted read-only (writes fail with `EROFS`, and a mount point cannot be
//! renamed or removed); a hidden directory gets an empty read-only tmpfs of mode 000 over it,
//! a hidden file the null device on a `nodev` mount: neither can be opened. Every path is opened beneath the workspace without following links
//! first, the mount made on that descriptor, so a link planted in its place refuses the job
//! rather than moving the protection elsewhere. A path that does not exist is left alone
//! (nothing of it can be changed; a step may create it, which docs/permissions.md states).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags, ResolveFlags, StatVfsMountFlags, fstat, fstatvfs};
use rustix::mount::{
    MountFlags, MountPropagationFlags, mount, mount_bind, mount_change, mount_remount,
};

use crate::confinement::Confinement;

/// Why the protections could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProtectError {
    /// A protected path is (or goes through) a symbolic link.
    #[error(
        "{0} is reached through a symbolic link; the path weft keeps read-only or hidden there cannot be protected, so the job is refused"
    )]
    Link(String),
    /// A mount failed.
    #[error("cannot {0} {1}: {2}")]
    Mount(&'static str, String, std::io::Error),
}

/// Whether `c` has paths to protect that exist, or a hosts file to show (then the job needs a
/// mount namespace).
pub(crate) fn needed(c: &Confinement) -> bool {
    let present = |p: &&std::path::PathBuf| std::fs::symlink_metadata(p).is_ok();
    hosts_file(c).is_some()
        || (c.workspace.is_some() && c.read_only.iter().chain(&c.hidden).any(|p| present(&p)))
}

/// The hosts file to bind over `/etc/hosts`: only under a port grant.
pub(crate) fn hosts_file(c: &Confinement) -> Option<&Path> {
    match c.net {
        crate::confinement::NetAccess::Ports { .. } => c.hosts_file.as_deref(),
        _ => None,
    }
}

/// The job's `/etc/hosts`: the parent's hosts file, bound read-only over it (the job's mount
/// namespace, which the caller made).
pub(crate) fn show_hosts(c: &Confinement) -> Result<(), ProtectError> {
    let Some(file) = hosts_file(c) else {
        return Ok(());
    };
    let fail = |what: &'static str| {
        move |e: rustix::io::Errno| ProtectError::Mount(what, "/etc/hosts".into(), e.into())
    };
    mount_bind(file, "/etc/hosts").map_err(fail("bind the job's hosts file over"))?;
    let flags = MountFlags::BIND
        | MountFlags::RDONLY
        | MountFlags::NOSUID
        | MountFlags::NODEV
        | MountFlags::NOEXEC;
    mount_remount("/etc/hosts", flags, "").map_err(fail("remount read-only"))
}

/// Moves the calling process into a mount namespace of its own whose mounts propagate
/// nothing back to the host.
pub(crate) fn private_namespace() -> Result<(), ProtectError> {
    let fail = |what: &'static str, p: &str| {
        let p = p.to_owned();
        move |e: rustix::io::Errno| ProtectError::Mount(what, p, e.into())
    };
    crate::namespaces::unshare(rustix::thread::UnshareFlags::NEWNS)
        .map_err(fail("make a mount namespace for", "the job"))?;
    mount_change(
        "/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )
    .map_err(fail("make private the mounts of", "/"))
}

/// Makes the protections in the job's mount namespace ([`private_namespace`], which the
/// caller made when [`needed`]); `false` when there is nothing to protect.
pub(crate) fn protect(c: &Confinement) -> Result<bool, ProtectError> {
    if !needed(c) {
        return Ok(false);
    }
    show_hosts(c)?;
    let Some(ws) = c.workspace.as_deref() else {
        return Ok(true);
    };
    let fail = |what: &'static str, p: &Path| {
        let p = p.display().to_string();
        move |e: rustix::io::Errno| ProtectError::Mount(what, p, e.into())
    };
    // Opened in the new namespace: a mount can only be made on one of its own.
    let mut read_only = Vec::new();
    // A path beneath another read-only one is read-only already.
    let outermost = c
        .read_only
        .iter()
        .filter(|p| !c.read_only.iter().any(|q| q != *p && p.starts_with(q)));
    for p in outermost {
        if let Some(fd) = open_beneath(ws, p)? {
            read_only.push((p, fd));
        }
    }
    let mut hidden = Vec::new();
    for p in &c.hidden {
        if let Some(fd) = open_beneath(ws, p)? {
            hidden.push((p, fd));
        }
    }
    let sealed = MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    for (p, fd) in &hidden {
        let at = magic(fd);
        if is_dir(fd) {
            // Mode 000, owned by root: the job (never root, or root without capabilities)
            // can neither list nor enter it.
            mount("tmpfs", &at, "tmpfs", sealed, Some(c"mode=000")).map_err(fail("hide", p))?;
        } else {
            // The null device on a `nodev` mount: opening it fails (`EACCES`) for everyone.
            mount_bind("/dev/null", &at).map_err(fail("hide", p))?;
            let Some(bound) = open_beneath(ws, p)? else {
                return Err(ProtectError::Mount(
                    "reopen",
                    p.display().to_string(),
                    std::io::ErrorKind::NotFound.into(),
                ));
            };
            mount_remount(magic(&bound), MountFlags::BIND | sealed, "").map_err(fail("seal", p))?;
        }
    }
    for (p, fd) in &read_only {
        let at = magic(fd);
        mount_bind(&at, &at).map_err(fail("bind", p))?;
        // The path now leads into the new mount: reopen it (still without links) and make
        // that mount read-only, keeping the flags a user namespace may not clear.
        let Some(bound) = open_beneath(ws, p)? else {
            return Err(ProtectError::Mount(
                "reopen",
                p.display().to_string(),
                std::io::ErrorKind::NotFound.into(),
            ));
        };
        let locked = fstatvfs(&bound)
            .map(|s| s.f_flag)
            .map_err(fail("read the mount flags of", p))?;
        let mut flags = MountFlags::BIND | MountFlags::RDONLY;
        for (has, keep) in [
            (StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
            (StatVfsMountFlags::NODEV, MountFlags::NODEV),
            (StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
        ] {
            if locked.contains(has) {
                flags |= keep;
            }
        }
        mount_remount(magic(&bound), flags, "").map_err(fail("remount read-only", p))?;
    }
    Ok(true)
}

/// `/proc/self/fd/N`: mounting on it mounts on the object the descriptor holds.
fn magic(fd: &OwnedFd) -> String {
    format!("/proc/self/fd/{}", fd.as_raw_fd())
}

fn is_dir(fd: &OwnedFd) -> bool {
    fstat(fd).is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory)
}

/// Opens `p` beneath `ws` without following links; `None` when it does not exist (or lies
/// outside the workspace, where weft protects nothing).
fn open_beneath(ws: &Path, p: &Path) -> Result<Option<OwnedFd>, ProtectError> {
    let Ok(rel) = p.strip_prefix(ws) else {
        return Ok(None);
    };
    let flags = OFlags::PATH | OFlags::CLOEXEC;
    let dir = match rustix::fs::open(ws, flags | OFlags::DIRECTORY, Mode::empty()) {
        Ok(d) => d,
        Err(_) => return Ok(None),
    };
    if rel.as_os_str().is_empty() {
        return Ok(Some(dir));
    }
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS;
    match rustix::fs::openat2(&dir, rel, flags, Mode::empty(), resolve) {
        Ok(fd) => Ok(Some(fd)),
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => Ok(None),
        Err(rustix::io::Errno::LOOP | rustix::io::Errno::XDEV) => {
            Err(ProtectError::Link(p.display().to_string()))
        }
        Err(e) => Err(ProtectError::Mount(
            "open",
            p.display().to_string(),
            e.into(),
        )),
    }
}

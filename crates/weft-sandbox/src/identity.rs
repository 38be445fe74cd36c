//! The unprivileged identity of a root weft's job (Linux). A job of a root weft runs as
//! [`StepUser`] (uid and gid 65534 unless the operator chose others), never as uid 0: its
//! real, effective and saved ids are that uid on the host, outside every namespace.
//!
//! Its grant roots are owned by the workspace's owner (root, typically), which the job's uid
//! could not write. So the supervisor, in the job's own mount namespace, mounts each root
//! *idmapped* over itself (`open_tree(OPEN_TREE_CLONE)`, `mount_setattr(MOUNT_ATTR_IDMAP)`,
//! `move_mount`): through those mounts the owner's files appear owned by the job's uid and
//! gid, and what the job creates there lands on disk owned by the owner. The workspace and
//! the read roots are mounted read-only (the owner's files appear the job's, and Landlock has
//! no right for `chmod` or `chown`: a read-only mount refuses both), the write roots
//! read-write on top. The user namespace that carries the mapping (`owner → job uid`) is the
//! namespace init's (it makes one when started with `--userns`), so no process more is
//! started for it.
//!
//! Nothing else changes for the job: files outside its roots keep their owners, so a file
//! only root may read stays unreadable whatever Landlock says, and every directory on the way
//! to a root must let the job's uid in: a root behind a closed directory (`/root/project` with
//! `/root` at mode 0700) refuses the job with a message that names the directory.
//!
//! The crate denies `unsafe`; `mount_setattr(2)`, which rustix does not wrap, is the one call
//! here that needs it.
#![allow(
    unsafe_code,
    reason = "mount_setattr(2) has no safe wrapper; see the SAFETY comment"
)]

use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use rustix::fs::{Mode, OFlags};
use rustix::mount::{MoveMountFlags, OpenTreeFlags, move_mount, open_tree};

use crate::confinement::{Confinement, StepUser};

/// Why the identity could not be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IdentityError {
    /// The user namespace that carries the mapping could not be made.
    #[error("cannot make the user namespace of the idmapped mounts: {0}")]
    Userns(String),
    /// A root could not be mounted idmapped.
    #[error(
        "cannot mount {0} idmapped for uid {1} ({2}); the file system may not support idmapped \
         mounts"
    )]
    Idmap(String, u32, std::io::Error),
    /// A root is refused (a link) or cannot be opened.
    #[error("{0}")]
    Root(String),
    /// A directory on the way to a root is closed to the job's uid.
    #[error(
        "the job runs as uid {uid} gid {gid}, which cannot enter {dir} (mode {mode:o}, owner \
         {owner}:{group}) on the way to {root}: give the workspace a path others may enter, or \
         set WEFT_SANDBOX_ROOT_FALLBACK=1 to run a root weft's jobs as uid 0 (without \
         capabilities)"
    )]
    Closed {
        /// The job's uid.
        uid: u32,
        /// The job's gid.
        gid: u32,
        /// The closed directory.
        dir: String,
        /// Its mode bits.
        mode: u32,
        /// Its owner.
        owner: u32,
        /// Its group.
        group: u32,
        /// The root behind it.
        root: String,
    },
    /// A prepared mount could not be attached: the job's view is half changed, so no
    /// fallback may run the job in it.
    #[error("cannot attach the idmapped mount of {0}: {1}")]
    Attach(String, String),
    /// The chosen identity is root.
    #[error("the job's uid and gid must not be 0 (WEFT_SANDBOX_UID, WEFT_SANDBOX_GID)")]
    Root0,
}

/// A mount to make: the path, and whether it stays read-only.
struct Target {
    path: PathBuf,
    read_only: bool,
}

/// The roots to mount idmapped, outermost first: the workspace and the read roots read-only,
/// the write roots read-write, and with `user`, every directory on the way to them that the
/// owner owns and `user` could not enter (`/root` above `/root/project`) read-only: Landlock
/// still refuses everything in it outside the roots, the mount only lets the job pass. A root
/// inside a read-write one, or inside a read-only one when it is read-only itself, is covered
/// by that mount already.
fn targets(c: &Confinement, user: Option<StepUser>) -> Vec<Target> {
    let ancestors: Vec<Target> = match (user, owner(c)) {
        (Some(user), Some(owner)) => closed_ancestors(c, user, owner),
        _ => Vec::new(),
    };
    let mut all: Vec<Target> = c
        .workspace
        .iter()
        .chain(&c.read_roots)
        .map(|p| Target {
            path: p.clone(),
            read_only: true,
        })
        .chain(c.write_roots.iter().map(|p| Target {
            path: p.clone(),
            read_only: false,
        }))
        .filter(|t| std::fs::symlink_metadata(&t.path).is_ok())
        .chain(ancestors)
        .collect();
    all.sort_by_key(|t| (t.path.components().count(), t.read_only));
    let mut kept: Vec<Target> = Vec::new();
    for t in all {
        let covered = kept
            .iter()
            .any(|k| t.path.starts_with(&k.path) && (!k.read_only || t.read_only));
        if !covered {
            kept.push(t);
        }
    }
    kept
}

/// Whether `user` may enter a directory of metadata `m`.
fn enters(m: &std::fs::Metadata, user: StepUser) -> bool {
    let mode = m.mode();
    (m.uid() == user.uid && mode & 0o100 != 0)
        || (m.gid() == user.gid && mode & 0o010 != 0)
        || mode & 0o001 != 0
}

/// The directories above the roots that `owner` owns, lets itself enter, and `user` could
/// not: mounted idmapped, they let the job pass as the owner would.
fn closed_ancestors(c: &Confinement, user: StepUser, owner: (u32, u32)) -> Vec<Target> {
    let mut out: Vec<Target> = Vec::new();
    for root in c
        .workspace
        .iter()
        .chain(&c.read_roots)
        .chain(&c.write_roots)
    {
        for dir in root.ancestors().skip(1) {
            let Ok(m) = std::fs::metadata(dir) else {
                continue;
            };
            let passes_as_owner = (m.uid(), m.gid()) == owner && m.mode() & 0o100 != 0;
            let closed = m.is_dir() && !enters(&m, user) && passes_as_owner;
            if closed && dir != Path::new("/") && !out.iter().any(|t| t.path == dir) {
                out.push(Target {
                    path: dir.to_path_buf(),
                    read_only: true,
                });
            }
        }
    }
    out
}

/// The owner whose files the job's uid stands for: the workspace's, else the first write
/// root's, else the first read root's.
fn owner(c: &Confinement) -> Option<(u32, u32)> {
    c.workspace
        .iter()
        .chain(&c.write_roots)
        .chain(&c.read_roots)
        .find_map(|p| std::fs::metadata(p).ok())
        .map(|m| (m.uid(), m.gid()))
}

/// Whether `c` has roots to mount (and so needs the init's user namespace).
pub(crate) fn needs_idmap(c: &Confinement) -> bool {
    !targets(c, None).is_empty()
}

/// Starts the namespace init with `--userns` and maps, in the user namespace it makes,
/// `owner` to the job's ids. Returns the init and that namespace's descriptor.
pub(crate) fn spawn_init_with_userns(
    prefix: &[std::ffi::OsString],
    owner: (u32, u32),
    user: StepUser,
) -> Result<(Child, OwnedFd), IdentityError> {
    let err = |what: &str, e: std::io::Error| IdentityError::Userns(format!("{what}: {e}"));
    let mut init = Command::new("/proc/self/exe")
        .args(prefix)
        .args(["--ns-init", "--userns"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| err("cannot start the namespace init", e))?;
    let mut ready = [0u8; 1];
    let read = init
        .stdout
        .take()
        .ok_or_else(|| IdentityError::Userns("the init has no stdout".into()))
        .and_then(|mut out| {
            out.read_exact(&mut ready)
                .map_err(|e| err("the init made no user namespace", e))
        });
    let mapped = read.and_then(|()| {
        let proc = PathBuf::from(format!("/proc/{}", init.id()));
        std::fs::write(
            proc.join("uid_map"),
            format!("{} {} 1\n", owner.0, user.uid),
        )
        .map_err(|e| err("uid_map", e))?;
        std::fs::write(
            proc.join("gid_map"),
            format!("{} {} 1\n", owner.1, user.gid),
        )
        .map_err(|e| err("gid_map", e))?;
        rustix::fs::open(
            proc.join("ns/user"),
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| err("ns/user", e.into()))
    });
    match mapped {
        Ok(fd) => Ok((init, fd)),
        Err(e) => {
            let _ = init.kill();
            let _ = init.wait();
            Err(e)
        }
    }
}

/// The init's side of `--userns`: makes its user namespace and says so on stdout.
pub(crate) fn make_userns_for_parent() -> std::io::Result<()> {
    use std::io::Write;
    crate::namespaces::unshare(rustix::thread::UnshareFlags::NEWUSER)?;
    let mut out = std::io::stdout().lock();
    out.write_all(b"u")?;
    out.flush()
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x0000_0001;
const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
const AT_EMPTY_PATH: libc::c_uint = 0x1000;
const AT_RECURSIVE: libc::c_uint = 0x8000;

/// Makes the detached mount `tree` (and every mount below it) idmapped through `userns`, and
/// read-only when asked.
fn set_idmap(tree: BorrowedFd<'_>, userns: BorrowedFd<'_>, read_only: bool) -> std::io::Result<()> {
    set_attr(
        tree,
        &MountAttr {
            attr_set: MOUNT_ATTR_IDMAP | if read_only { MOUNT_ATTR_RDONLY } else { 0 },
            attr_clr: 0,
            propagation: 0,
            userns_fd: u64::from(userns.as_raw_fd().unsigned_abs()),
        },
    )
}

/// Makes the mount `at` refers to, and every mount below it, read-only
/// (`crate::read_only_view`).
pub(crate) fn set_read_only(at: BorrowedFd<'_>) -> std::io::Result<()> {
    set_attr(
        at,
        &MountAttr {
            attr_set: MOUNT_ATTR_RDONLY,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        },
    )
}

/// `mount_setattr(2)` on `tree` and every mount below it.
fn set_attr(tree: BorrowedFd<'_>, attr: &MountAttr) -> std::io::Result<()> {
    // SAFETY: mount_setattr(2) reads `size_of::<MountAttr>()` bytes from `attr`, a live
    // `repr(C)` value of the kernel's `struct mount_attr` layout (four u64), and the empty
    // NUL-terminated path; it writes no memory. The descriptor is borrowed for the call (and
    // the user namespace's, when `attr` names one, by the caller).
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            AT_EMPTY_PATH | AT_RECURSIVE,
            std::ptr::from_ref(attr),
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Roots cloned and idmapped, not attached yet: nothing of the job's view has changed
/// until [`attach`].
pub(crate) struct Prepared(Vec<(Target, OwnedFd)>);

/// Clones every root of `c` from the mounts as they are and makes each clone idmapped (see
/// the module docs). Each root is opened beneath the workspace without following links (a
/// link refuses the job).
pub(crate) fn prepare(
    c: &Confinement,
    userns: &OwnedFd,
    user: StepUser,
) -> Result<Prepared, IdentityError> {
    let uid = user.uid;
    let ws = c.workspace.as_deref();
    let mut trees = Vec::new();
    for t in targets(c, Some(user)) {
        let Some(root) = open(ws, &t.path)? else {
            continue;
        };
        let flags = OpenTreeFlags::OPEN_TREE_CLONE
            | OpenTreeFlags::OPEN_TREE_CLOEXEC
            | OpenTreeFlags::AT_EMPTY_PATH
            | OpenTreeFlags::AT_RECURSIVE;
        let idmap_err =
            |e: std::io::Error| IdentityError::Idmap(t.path.display().to_string(), uid, e);
        let tree = open_tree(&root.fd, "", flags).map_err(|e| idmap_err(e.into()))?;
        set_idmap(tree.as_fd(), userns.as_fd(), t.read_only).map_err(idmap_err)?;
        trees.push((t, tree));
    }
    Ok(Prepared(trees))
}

/// Attaches the prepared mounts over their roots, outermost first, each target opened again
/// (beneath the workspace, without links) through the mounts already made. The caller is in
/// the job's own, private mount namespace.
pub(crate) fn attach(c: &Confinement, prepared: Prepared, uid: u32) -> Result<(), IdentityError> {
    let ws = c.workspace.as_deref();
    for (t, tree) in prepared.0 {
        let attach_err = |e: String| IdentityError::Attach(t.path.display().to_string(), e);
        let Some(at) = open(ws, &t.path).map_err(|e| attach_err(e.to_string()))? else {
            continue;
        };
        move_mount(
            &tree,
            "",
            &at.fd,
            "",
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH | MoveMountFlags::MOVE_MOUNT_T_EMPTY_PATH,
        )
        .map_err(|e| attach_err(format!("{e} (uid {uid})")))?;
    }
    Ok(())
}

impl IdentityError {
    /// Whether the job's mounts were left half made (no fallback to uid 0 then).
    pub(crate) fn view_changed(&self) -> bool {
        matches!(self, IdentityError::Attach(..))
    }
}

fn open(ws: Option<&Path>, p: &Path) -> Result<Option<crate::beneath::Root>, IdentityError> {
    crate::beneath::open_root(ws, p).map_err(|e| IdentityError::Root(e.to_string()))
}

/// The owner to map, when `c` has roots to mount.
pub(crate) fn mapped_owner(c: &Confinement) -> Option<(u32, u32)> {
    needs_idmap(c).then(|| owner(c)).flatten()
}

/// Fails unless `user` may enter every directory on the way to each root of `c`. Checked
/// before anything is mounted: a directory that will be mounted idmapped is skipped (the
/// job's uid stands for its owner there). The working directory is not checked: the job
/// starts in it whatever lies above it.
pub(crate) fn check_reachable(c: &Confinement, user: StepUser) -> Result<(), IdentityError> {
    let mapped: Vec<PathBuf> = targets(c, Some(user)).into_iter().map(|t| t.path).collect();
    let paths = c
        .workspace
        .iter()
        .chain(&c.read_roots)
        .chain(&c.write_roots)
        .map(PathBuf::as_path);
    for root in paths {
        // Only what exists: a missing root grants nothing.
        if std::fs::symlink_metadata(root).is_err() {
            continue;
        }
        let dirs = root.ancestors().collect::<Vec<_>>();
        for dir in dirs.into_iter().rev() {
            if mapped.iter().any(|t| dir.starts_with(t)) {
                continue;
            }
            let Ok(m) = std::fs::metadata(dir) else {
                continue;
            };
            if !m.is_dir() {
                continue;
            }
            let mode = m.mode();
            if !enters(&m, user) {
                return Err(IdentityError::Closed {
                    uid: user.uid,
                    gid: user.gid,
                    dir: dir.display().to_string(),
                    mode: mode & 0o7777,
                    owner: m.uid(),
                    group: m.gid(),
                    root: root.display().to_string(),
                });
            }
        }
    }
    Ok(())
}

/// Checks the identity itself.
pub(crate) fn validate(user: StepUser) -> Result<(), IdentityError> {
    if user.uid == 0 || user.gid == 0 {
        return Err(IdentityError::Root0);
    }
    Ok(())
}

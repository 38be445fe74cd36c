//! Opening grant roots (Linux). A root inside the workspace is opened *beneath* the workspace
//! without following any symbolic link (`openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS`), so a link planted before the run or by an earlier step — `out ->
//! /etc`, `docs -> ~/.ssh`, `NOTES.md -> /root/.bashrc` — cannot carry a grant out of the
//! workspace: the grant is refused with a message that names the link. The descriptor the
//! Landlock rule is made from is the one opened here, so nothing can swap the path between
//! the check and the rule. Roots outside the workspace (the system paths, a coding-agent
//! CLI's own directories) are the operator's and opened as given.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags, ResolveFlags, fstat, open, openat2};
use rustix::io::Errno;

/// Why a grant root is refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RootError {
    /// A component of the root (or the root itself) is a symbolic link.
    #[error(
        "the grant root {root} goes through the symbolic link {link} (-> {target}); grant roots \
         are opened beneath the workspace without following links, so the grant is refused"
    )]
    Link {
        /// The root.
        root: String,
        /// The link.
        link: String,
        /// Where it points.
        target: String,
    },
    /// The root cannot be opened.
    #[error("cannot open the grant root {0}: {1}")]
    Open(String, std::io::Error),
}

/// An opened root: its descriptor and whether it is a directory.
pub(crate) struct Root {
    pub fd: OwnedFd,
    pub is_dir: bool,
}

/// Opens `root` (beneath `workspace` when it lies under it, see the module docs). A root that
/// does not exist grants nothing: `Ok(None)`.
pub(crate) fn open_root(workspace: Option<&Path>, root: &Path) -> Result<Option<Root>, RootError> {
    let flags = OFlags::PATH | OFlags::CLOEXEC;
    let inside = workspace.and_then(|w| root.strip_prefix(w).ok().map(|rel| (w, rel)));
    let opened = match inside {
        Some((ws, rel)) => {
            let dir = match open(ws, flags | OFlags::DIRECTORY, Mode::empty()) {
                Ok(d) => d,
                Err(Errno::NOENT) => return Ok(None),
                Err(e) => return Err(RootError::Open(ws.display().to_string(), e.into())),
            };
            if rel.as_os_str().is_empty() {
                Ok(dir)
            } else {
                let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS;
                openat2(&dir, rel, flags, Mode::empty(), resolve)
            }
        }
        None => open(root, flags, Mode::empty()),
    };
    let fd = match opened {
        Ok(fd) => fd,
        Err(Errno::NOENT | Errno::NOTDIR) => return Ok(None),
        Err(Errno::LOOP | Errno::XDEV) => {
            return Err(named_link(workspace, root));
        }
        Err(e) => return Err(RootError::Open(root.display().to_string(), e.into())),
    };
    let is_dir = fstat(&fd)
        .map(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory)
        .map_err(|e| RootError::Open(root.display().to_string(), e.into()))?;
    Ok(Some(Root { fd, is_dir }))
}

/// The refusal for a root whose resolution met a link: the first component (from the
/// workspace down) that is a symbolic link, and where it points.
fn named_link(workspace: Option<&Path>, root: &Path) -> RootError {
    let ws = workspace.unwrap_or(Path::new("/"));
    let rel = root.strip_prefix(ws).unwrap_or(root);
    let mut at = PathBuf::from(ws);
    for part in rel.components() {
        at.push(part);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            let target = std::fs::read_link(&at)
                .map(|t| t.display().to_string())
                .unwrap_or_else(|_| "?".into());
            return RootError::Link {
                root: root.display().to_string(),
                link: at.display().to_string(),
                target,
            };
        }
    }
    // The link was swapped away again between the open and this look: still refused.
    RootError::Link {
        root: root.display().to_string(),
        link: root.display().to_string(),
        target: "a link that is gone again".into(),
    }
}

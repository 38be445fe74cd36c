//! Per-node temporary workspaces. [`Scratch::copy`] snapshots the project twice into a
//! temporary directory: `base/` (what the node started from) and `work/` (where it runs).
//! [`Scratch::diff`] returns the node's edits as a reviewable unified [`Patch`];
//! [`Scratch::merge`] writes them back into the project only where the project still equals
//! the base (a file changed there meanwhile is a conflict, and nothing is written), so edits
//! are never silently discarded nor silently overwrite someone else's. The directory is
//! deleted when the `Scratch` is dropped. [`Scratch::at`] keeps the copy at a given place
//! instead, and opens it again when a complete one is already there: an attempt that takes
//! over from one a dead process ran continues in that attempt's copy.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use similar::TextDiff;

/// Names skipped at any depth by default: version-control metadata, weft's store, build
/// output, and Python's caches (written by any test run, never an edit to review: two
/// parallel nodes that both ran `pytest` would otherwise conflict on them).
pub const DEFAULT_EXCLUDES: &[&str] = &[".git", ".weft", "target", "__pycache__", ".pytest_cache"];

/// A node's temporary copy of the project.
#[derive(Debug)]
pub struct Scratch {
    dir: Place,
    project: PathBuf,
    exclude: Vec<String>,
}

/// Where a copy lives: a fresh temporary directory, or a given one (removed on drop too).
#[derive(Debug)]
enum Place {
    Temp(tempfile::TempDir),
    At(PathBuf),
}

impl Place {
    fn path(&self) -> &Path {
        match self {
            Place::Temp(t) => t.path(),
            Place::At(p) => p,
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Place::At(p) = self {
            // The marker goes first: a removal cut short (the process killed mid-way) must
            // never leave a partial copy that [`Scratch::at`] would open as complete. Without
            // the marker, the next `at` makes the copy again.
            let _ = std::fs::remove_file(p.join(COMPLETE));
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

/// The file that marks a kept copy complete (written last by [`Scratch::at`]).
const COMPLETE: &str = "complete";

/// How one path changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// New in the scratch workspace.
    Added,
    /// Different content (or symlink target).
    Modified,
    /// Gone from the scratch workspace.
    Deleted,
}

/// One changed path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Relative to the project root, `/`-separated.
    pub path: String,
    /// How it changed.
    pub kind: ChangeKind,
    /// Not text (or a symlink): the patch text names it without a hunk.
    pub binary: bool,
}

/// A node's edits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Patch {
    /// The changed paths, sorted.
    pub changes: Vec<Change>,
    /// The unified diff (`--- a/PATH` / `+++ b/PATH`, `/dev/null` for added and deleted
    /// files, three lines of context; `Binary files … differ` for the rest).
    pub text: String,
}

impl Patch {
    /// No change.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// Why a scratch workspace failed.
#[derive(Debug, thiserror::Error)]
pub enum ScratchError {
    /// File system trouble.
    #[error("{path}: {error}")]
    Io {
        /// Where.
        path: PathBuf,
        /// What.
        error: std::io::Error,
    },
    /// The project changed these paths since the copy; nothing was merged.
    #[error("the project changed since the node started: {}", .0.join(", "))]
    Conflict(Vec<String>),
    /// A directory on the way to a changed path is a symlink in the project; writing through
    /// it could land outside the project, so nothing was merged.
    #[error("{0}: a directory on the way is a symlink in the project")]
    Symlink(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ScratchError + '_ {
    move |error| ScratchError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// A file or a symlink, as found.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    File(Vec<u8>),
    Link(PathBuf),
}

impl Scratch {
    /// Copies `project` (skipping `exclude` names at any depth, and the paths from the
    /// project's root given as `/PATH`; special files are skipped, symlinks are copied as
    /// symlinks).
    pub fn copy(project: &Path, exclude: &[&str]) -> Result<Scratch, ScratchError> {
        let dir = tempfile::Builder::new()
            .prefix("weft-scratch-")
            .tempdir()
            .map_err(io(project))?;
        Scratch {
            dir: Place::Temp(dir),
            project: project.to_path_buf(),
            exclude: exclude.iter().map(|s| (*s).to_owned()).collect(),
        }
        .fill(project)
    }

    /// [`Scratch::copy`] kept at `dir`: a complete copy already there (left by a process that
    /// died) is opened as it is, edits and base included; an incomplete one is made again.
    /// `dir` is removed when the `Scratch` is dropped.
    pub fn at(project: &Path, dir: &Path, exclude: &[&str]) -> Result<Scratch, ScratchError> {
        let scratch = Scratch {
            dir: Place::At(dir.to_path_buf()),
            project: project.to_path_buf(),
            exclude: exclude.iter().map(|s| (*s).to_owned()).collect(),
        };
        if dir.join(COMPLETE).is_file() {
            return Ok(scratch);
        }
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(io(dir))?;
        }
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let scratch = scratch.fill(project)?;
        std::fs::write(dir.join(COMPLETE), b"").map_err(io(dir))?;
        Ok(scratch)
    }

    /// Copies `project` into `base/` and `work/`.
    fn fill(self, project: &Path) -> Result<Scratch, ScratchError> {
        let scratch = self;
        for side in ["base", "work"] {
            let root = scratch.dir.path().join(side);
            std::fs::create_dir(&root).map_err(io(&root))?;
            copy_tree(project, &root, &scratch.exclude)?;
        }
        Ok(scratch)
    }

    /// Where the node works.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// The node's edits so far.
    pub fn diff(&self) -> Result<Patch, ScratchError> {
        let base = snapshot(&self.dir.path().join("base"), &self.exclude)?;
        let work = snapshot(&self.path(), &self.exclude)?;
        let mut paths: Vec<&String> = base.keys().chain(work.keys()).collect();
        paths.sort();
        paths.dedup();
        let mut changes = Vec::new();
        let mut text = String::new();
        for path in paths {
            let (old, new) = (base.get(path), work.get(path));
            let kind = match (old, new) {
                (Some(a), Some(b)) if a == b => continue,
                (Some(_), Some(_)) => ChangeKind::Modified,
                (None, Some(_)) => ChangeKind::Added,
                (Some(_), None) => ChangeKind::Deleted,
                (None, None) => continue,
            };
            let (a_name, b_name) = match kind {
                ChangeKind::Added => ("/dev/null".to_owned(), format!("b/{path}")),
                ChangeKind::Deleted => (format!("a/{path}"), "/dev/null".to_owned()),
                ChangeKind::Modified => (format!("a/{path}"), format!("b/{path}")),
            };
            let as_text = |e: Option<&Entry>| match e {
                None => Some(String::new()),
                Some(Entry::File(bytes)) if !bytes.contains(&0) => {
                    String::from_utf8(bytes.clone()).ok()
                }
                Some(_) => None,
            };
            let binary = match (as_text(old), as_text(new)) {
                (Some(a), Some(b)) => {
                    let diff = TextDiff::from_lines(&a, &b);
                    text.push_str(
                        &diff
                            .unified_diff()
                            .context_radius(3)
                            .header(&a_name, &b_name)
                            .to_string(),
                    );
                    false
                }
                _ => {
                    text.push_str(&format!("Binary files {a_name} and {b_name} differ\n"));
                    true
                }
            };
            changes.push(Change {
                path: path.clone(),
                kind,
                binary,
            });
        }
        Ok(Patch { changes, text })
    }

    /// Writes the node's edits into the project: every changed path must still equal the base
    /// there (else [`ScratchError::Conflict`] and nothing is written). Returns the patch merged.
    pub fn merge(&self) -> Result<Patch, ScratchError> {
        let patch = self.diff()?;
        let base_root = self.dir.path().join("base");
        let work_root = self.path();
        let mut conflicts = Vec::new();
        for c in &patch.changes {
            ensure_no_symlink_parent(&self.project, &c.path)?;
            let now = read_entry(&self.project.join(&c.path))?;
            let then = read_entry(&base_root.join(&c.path))?;
            // The project already holds exactly this edit (made by someone else too): no
            // conflict.
            if now != then && now != read_entry(&work_root.join(&c.path))? {
                conflicts.push(c.path.clone());
            }
        }
        if !conflicts.is_empty() {
            return Err(ScratchError::Conflict(conflicts));
        }
        for c in &patch.changes {
            let target = self.project.join(&c.path);
            match read_entry(&work_root.join(&c.path))? {
                None => std::fs::remove_file(&target).map_err(io(&target))?,
                Some(entry) => {
                    if let Some(parent) = target.parent() {
                        std::fs::create_dir_all(parent).map_err(io(parent))?;
                    }
                    write_entry(&target, &entry, &work_root.join(&c.path))?;
                }
            }
        }
        Ok(patch)
    }
}

/// Whether `path` (under `root`) is left out: its name is an excluded name (at any depth),
/// or it is an anchored exclusion (`/full.db-wal`: that path from the project's root only).
fn excluded(root: &Path, path: &Path, exclude: &[String]) -> bool {
    let name = path.file_name().and_then(std::ffi::OsStr::to_str);
    let rel = path.strip_prefix(root).ok().and_then(Path::to_str);
    exclude.iter().any(|e| match e.strip_prefix('/') {
        Some(anchored) => rel == Some(anchored),
        None => name == Some(e.as_str()),
    })
}

fn copy_tree(from: &Path, to: &Path, exclude: &[String]) -> Result<(), ScratchError> {
    copy_under(from, from, to, exclude)
}

fn copy_under(root: &Path, from: &Path, to: &Path, exclude: &[String]) -> Result<(), ScratchError> {
    for entry in std::fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        if excluded(root, &entry.path(), exclude) {
            continue;
        }
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let kind = entry.file_type().map_err(io(&src))?;
        if kind.is_dir() {
            std::fs::create_dir(&dst).map_err(io(&dst))?;
            copy_under(root, &src, &dst, exclude)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst).map_err(io(&src))?;
        } else if kind.is_symlink() {
            let target = std::fs::read_link(&src).map_err(io(&src))?;
            std::os::unix::fs::symlink(&target, &dst).map_err(io(&dst))?;
        }
    }
    Ok(())
}

fn snapshot(root: &Path, exclude: &[String]) -> Result<BTreeMap<String, Entry>, ScratchError> {
    let mut out = BTreeMap::new();
    walk(root, root, exclude, &mut out)?;
    Ok(out)
}

fn walk(
    root: &Path,
    dir: &Path,
    exclude: &[String],
    out: &mut BTreeMap<String, Entry>,
) -> Result<(), ScratchError> {
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        if excluded(root, &entry.path(), exclude) {
            continue;
        }
        let path = entry.path();
        let kind = entry.file_type().map_err(io(&path))?;
        if kind.is_dir() {
            walk(root, &path, exclude, out)?;
            continue;
        }
        let Some(found) = read_entry(&path)? else {
            continue;
        };
        let rel = path.strip_prefix(root).unwrap_or(&path);
        let rel: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        out.insert(rel.join("/"), found);
    }
    Ok(())
}

/// A file's bytes or a symlink's target; `None` when absent (or neither).
fn read_entry(path: &Path) -> Result<Option<Entry>, ScratchError> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
        Ok(m) if m.file_type().is_symlink() => Ok(Some(Entry::Link(
            std::fs::read_link(path).map_err(io(path))?,
        ))),
        Ok(m) if m.is_file() => Ok(Some(Entry::File(std::fs::read(path).map_err(io(path))?))),
        Ok(_) => Ok(None),
    }
}

fn write_entry(target: &Path, entry: &Entry, source: &Path) -> Result<(), ScratchError> {
    if std::fs::symlink_metadata(target).is_ok() {
        std::fs::remove_file(target).map_err(io(target))?;
    }
    match entry {
        // `copy` keeps the permission bits (an edited script stays executable).
        Entry::File(_) => std::fs::copy(source, target)
            .map(|_| ())
            .map_err(io(target)),
        Entry::Link(to) => std::os::unix::fs::symlink(to, target).map_err(io(target)),
    }
}

fn ensure_no_symlink_parent(project: &Path, rel: &str) -> Result<(), ScratchError> {
    let mut at = project.to_path_buf();
    let segments: Vec<&str> = rel.split('/').collect();
    for seg in segments.iter().take(segments.len().saturating_sub(1)) {
        at.push(seg);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(ScratchError::Symlink(rel.to_owned()));
        }
    }
    Ok(())
}

//! Isolated nodes (`docs/engine.md` §3n): by default every node whose work an agent does
//! (a model or coding-agent provider) and that may write the project
//! (`requirements.workspace: read_write`), and every node with `constraints.isolation: worktree`
//! or `sandbox` ([`IsolateMode`], `[workspace] isolate` in `weft.toml`). Each attempt works
//! in its own copy of the project (`weft_sandbox::Scratch`), its success criteria evaluated
//! there. The copy is kept under `.weft/scratch/RUN/NODE/ATTEMPT` while the attempt runs, so
//! the attempt that takes over from one a dead process abandoned continues in that copy
//! (its journalled effects, answered from the log, are already in it: §3p). When the attempt ends, its edits are a unified patch, logged
//! (`node_patch`) before anything else happens to them: a successful attempt's patch is then
//! merged into the project (only where the project still equals the copy's base: a file
//! changed meanwhile is a conflict, nothing is written, the attempt fails); a failed
//! attempt's patch is recorded and not applied. Edits are never silently discarded.

use std::path::Path;
use std::sync::Arc;
use weft_core::FailureClass;

use weft_sandbox::Scratch;
use weft_sandbox::scratch::DEFAULT_EXCLUDES;

use super::Driver;
use super::job::{Job, Work};
use super::node::Attempt;
use crate::EngineError;
use crate::events::RunEvent;

/// Which nodes run each attempt in their own copy of the project (the operator's
/// `[workspace] isolate`; `docs/semantics.md`, "Workspaces").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IsolateMode {
    /// Nodes an agent works in (model and coding-agent providers), and those that declare
    /// `isolation: worktree|sandbox`. The default.
    #[default]
    Agents,
    /// Only the nodes that declare `isolation: worktree|sandbox`.
    Declared,
    /// Every node that runs an agent or a command (`x-weft-exec` too).
    All,
}

impl IsolateMode {
    /// `agents`, `declared` or `all`.
    pub fn parse(s: &str) -> Option<IsolateMode> {
        match s {
            "agents" => Some(IsolateMode::Agents),
            "declared" => Some(IsolateMode::Declared),
            "all" => Some(IsolateMode::All),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            IsolateMode::Agents => "agents",
            IsolateMode::Declared => "declared",
            IsolateMode::All => "all",
        }
    }

    /// Whether `job` runs isolated under this mode. Expression decisions, gates and
    /// containers never do: they edit nothing. Nor does an agent node whose requirements
    /// leave the workspace read-only (AGS's default): its tools cannot write the project
    /// (the policy refuses `fs:write`, the sandbox gives no write root), so a copy would be
    /// the project itself, paid for on every attempt.
    pub(super) fn isolates(self, job: &Job) -> bool {
        match job.work {
            Work::Model => job.isolated || (self != IsolateMode::Declared && job.writes_workspace),
            Work::Exec(_) => job.isolated || self == IsolateMode::All,
            _ => false,
        }
    }
}

/// An attempt's own copy of the project.
#[derive(Debug)]
pub(super) struct Isolation {
    scratch: Scratch,
    /// Where it is kept, when it is (its empty parents go with it).
    place: Option<std::path::PathBuf>,
}

impl Isolation {
    /// Removes the copy, then the kept copy's parents up to `.weft/scratch` that are empty.
    fn remove(self) {
        let Isolation { scratch, place } = self;
        drop(scratch);
        let mut at = place.as_deref().and_then(Path::parent);
        while let Some(dir) = at.filter(|d| !d.ends_with(".weft")) {
            if std::fs::remove_dir(dir).is_err() {
                break;
            }
            at = dir.parent();
        }
    }
}

/// The job as it runs in a copy of its project kept at `place` (a fresh temporary one
/// without), and that copy.
pub(super) fn begin(
    job: &Arc<Job>,
    place: Option<&Path>,
    keep_out: &[String],
) -> Result<(Arc<Job>, Isolation), String> {
    let exclude: Vec<&str> = DEFAULT_EXCLUDES
        .iter()
        .copied()
        .chain(keep_out.iter().map(String::as_str))
        .collect();
    let scratch = match place {
        Some(place) => Scratch::at(&job.workspace, place, &exclude),
        None => Scratch::copy(&job.workspace, &exclude),
    }
    .map_err(|e| format!("cannot copy the project for the node's isolated workspace: {e}"))?;
    link_project_parts(&job.workspace, &scratch.path())
        .map_err(|e| format!("cannot give the isolated workspace the project's tools: {e}"))?;
    let mut inside = (**job).clone();
    inside.workspace = scratch.path().into();
    Ok((
        Arc::new(inside),
        Isolation {
            scratch,
            place: place.map(Path::to_path_buf),
        },
    ))
}

impl Driver<'_> {
    /// Records the attempt's edits and merges them when it succeeded (see the module docs);
    /// a merge that conflicts fails the attempt.
    pub(super) async fn finish_isolation(
        &mut self,
        node: usize,
        number: u32,
        isolation: Box<Isolation>,
        result: &mut Attempt,
    ) -> Result<(), EngineError> {
        let done = self
            .record_and_merge(node, number, &isolation, result)
            .await;
        isolation.remove();
        done
    }

    async fn record_and_merge(
        &mut self,
        node: usize,
        number: u32,
        isolation: &Isolation,
        result: &mut Attempt,
    ) -> Result<(), EngineError> {
        let id = self.jobs[node].id.clone();
        let patch = match isolation.scratch.diff() {
            Ok(p) => p,
            Err(e) => {
                result.failure = Some((
                    FailureClass::ToolError,
                    format!("the isolated workspace's edits cannot be read: {e}"),
                ));
                return Ok(());
            }
        };
        if patch.is_empty() {
            return Ok(());
        }
        let apply = result.failure.is_none();
        let files: Vec<String> = patch.changes.iter().map(|c| c.path.clone()).collect();
        self.append(&RunEvent::NodePatch {
            node: id.clone(),
            attempt: number,
            applied: apply,
            files: files.clone(),
            diff: patch.text.clone(),
            error: None,
        })
        .await?;
        if !apply {
            return Ok(());
        }
        if let Err(e) = isolation.scratch.merge() {
            let message = format!("the node's edits were not merged: {e}");
            self.append(&RunEvent::NodePatch {
                node: id,
                attempt: number,
                applied: false,
                files,
                diff: String::new(),
                error: Some(message.clone()),
            })
            .await?;
            result.failure = Some((FailureClass::ToolError, message));
        }
        Ok(())
    }
}

/// The parts of the project the copy leaves out but its commands need, linked into it: the
/// tool directory (`.weft/bin`, `crate::tool_path`) and the repository (`.git`, so `git diff`
/// in a criterion compares the copy with the project's `HEAD`). Neither is ever diffed (both
/// names are excluded), so a link never shows in a patch. The repository is the project's
/// own: a command that writes to it (`git add`, `git commit`) is not isolated.
fn link_project_parts(project: &Path, copy: &Path) -> std::io::Result<()> {
    for part in [".weft/bin", ".git"] {
        let target = std::path::absolute(project.join(part))?;
        if std::fs::symlink_metadata(&target).is_err() {
            continue;
        }
        let link = copy.join(part);
        if let Some(parent) = link.parent() {
            std::fs::create_dir_all(parent)?;
        }
        match std::os::unix::fs::symlink(&target, &link) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            other => other?,
        }
    }
    Ok(())
}

impl Driver<'_> {
    /// Where attempt `key_attempt`'s copy of `job`'s project is kept:
    /// `.weft/scratch/RUN/NODE/ATTEMPT` in the project (`.weft` is never copied). `NODE` is
    /// the instance address with `[i]` written `-i` (`fix-2.test`): tools such as `pytest`
    /// read brackets in a path as a selector.
    pub(super) fn scratch_place(&self, job: &Job, key_attempt: u32) -> std::path::PathBuf {
        let node = self
            .scope
            .path
            .as_ref()
            .map_or_else(|| job.id.clone(), |p| format!("{p}.{}", job.id))
            .replace('[', "-")
            .replace(']', "");
        job.workspace
            .join(".weft/scratch")
            .join(&self.run_id)
            .join(node)
            .join(key_attempt.to_string())
    }
}

/// weft's own files under `workspace`, as anchored exclusions of a copy (`/full.db-shm`):
/// the store `db` with its `-wal`, `-shm` and `-journal`, and its audit directory. They
/// change while an isolated attempt runs (the driver's writes, the tail's reads of the WAL
/// index), so a copy that held them would show them as the node's edits, and a merge as a
/// conflict with the project.
pub(super) fn own_files(db: Option<&Path>, workspace: &Path) -> Vec<String> {
    let Some(db) = db else {
        return Vec::new();
    };
    let root = std::path::absolute(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    crate::audit::state_paths(db)
        .iter()
        .filter_map(|f| f.strip_prefix(&root).ok())
        .filter_map(Path::to_str)
        .map(|rel| format!("/{rel}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::own_files;
    use std::path::Path;

    #[test]
    fn the_store_and_its_audit_directory_are_kept_out_when_inside_the_workspace() {
        let inside = own_files(Some(Path::new("/p/full.db")), Path::new("/p"));
        assert_eq!(
            inside,
            [
                "/full.db",
                "/full.db-wal",
                "/full.db-shm",
                "/full.db-journal",
                "/audit"
            ]
        );
        assert!(own_files(Some(Path::new("/elsewhere/w.db")), Path::new("/p")).is_empty());
        assert!(own_files(None, Path::new("/p")).is_empty());
    }
}

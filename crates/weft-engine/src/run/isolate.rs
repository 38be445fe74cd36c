//! Nodes with `constraints.isolation: worktree` or `sandbox` (`docs/engine.md` §3n): each
//! attempt works in its own copy of the project (`weft_sandbox::Scratch`), its success
//! criteria evaluated there. When the attempt ends, its edits are a unified patch, logged
//! (`node_patch`) before anything else happens to them: a successful attempt's patch is then
//! merged into the project (only where the project still equals the copy's base: a file
//! changed meanwhile is a conflict, nothing is written, the attempt fails); a failed
//! attempt's patch is recorded and not applied. Edits are never silently discarded.

use std::sync::Arc;

use weft_sandbox::Scratch;
use weft_sandbox::scratch::DEFAULT_EXCLUDES;

use super::Driver;
use super::job::Job;
use super::node::Attempt;
use crate::EngineError;
use crate::events::RunEvent;

/// An attempt's own copy of the project.
#[derive(Debug)]
pub(super) struct Isolation {
    scratch: Scratch,
}

/// The job as it runs in a fresh copy of its project, and that copy.
pub(super) fn begin(job: &Arc<Job>) -> Result<(Arc<Job>, Isolation), String> {
    let scratch = Scratch::copy(&job.workspace, DEFAULT_EXCLUDES)
        .map_err(|e| format!("cannot copy the project for the node's isolated workspace: {e}"))?;
    let mut inside = (**job).clone();
    inside.workspace = scratch.path();
    Ok((Arc::new(inside), Isolation { scratch }))
}

impl Driver<'_> {
    /// Records the attempt's edits and merges them when it succeeded (see the module docs);
    /// a merge that conflicts fails the attempt.
    pub(super) fn finish_isolation(
        &mut self,
        node: usize,
        number: u32,
        isolation: Isolation,
        result: &mut Attempt,
    ) -> Result<(), EngineError> {
        let id = self.jobs[node].id.clone();
        let patch = match isolation.scratch.diff() {
            Ok(p) => p,
            Err(e) => {
                result.failure = Some((
                    "tool_error".into(),
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
        })?;
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
            })?;
            result.failure = Some(("tool_error".into(), message));
        }
        Ok(())
    }
}

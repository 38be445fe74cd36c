//! The `exec` agent through the OS sandbox ([`SandboxedExecAgent`], registered under the
//! name `exec` in place of [`super::exec::ExecAgent`]; `weft run --sandbox`). Every node's
//! `sh -c <run>` runs confined to what the node and the containers around it grant, found by
//! the node's full scope address (`fix[2].step`, never its last id: two bodies may each have
//! a `step`), intersected layer by layer (`weft_sandbox::from_grants`; a missing directory
//! write root such as `out/` for `fs:write:out/**` is created first), narrowed by the
//! operator policy when one is given, with weft's own state read-only: read and write
//! roots, network, an environment of exactly `PATH`, `HOME` and `LANG`, the wall-clock limit
//! and the output cap. A node that declares no permissions gets the defaults (a read-only
//! workspace with nothing granted, no network): nothing runs unconfined. When the machine
//! cannot enforce the sandbox, the node fails `blocked`.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use weft_core::FailureClass;
use weft_policy::{OperatorPolicy, Workspace, node_grants_at};
use weft_sandbox::{Job, Sandbox, SandboxError, from_grants};

use super::exec::{MAX_OUTPUT_BYTES, parse_outputs};
use super::{Agent, AgentFuture, AgentRequest, AgentResult, EXEC};

/// The `exec` agent, every node confined.
#[derive(Clone, Debug)]
pub struct SandboxedExecAgent {
    sandbox: Arc<Sandbox>,
    document: Arc<Value>,
    policy: Option<Arc<OperatorPolicy>>,
    protected: Vec<PathBuf>,
}

impl SandboxedExecAgent {
    /// Confines the `exec` nodes of `document` with `sandbox`.
    pub fn new(sandbox: Arc<Sandbox>, document: Arc<Value>) -> SandboxedExecAgent {
        SandboxedExecAgent {
            sandbox,
            document,
            policy: None,
            protected: Vec::new(),
        }
    }

    /// Narrows every node's confinement by the operator policy (`from_grants::apply_policy`).
    pub fn with_policy(mut self, policy: Arc<OperatorPolicy>) -> SandboxedExecAgent {
        self.policy = Some(policy);
        self
    }

    /// Keeps `paths` (the store, the audit log where they are not under `.weft`) read-only
    /// for every node whose write roots hold them.
    pub fn with_protected(mut self, paths: Vec<PathBuf>) -> SandboxedExecAgent {
        self.protected = paths;
        self
    }
}

impl Agent for SandboxedExecAgent {
    fn name(&self) -> &str {
        EXEC
    }

    fn run<'a>(&'a self, request: &'a AgentRequest) -> AgentFuture<'a> {
        Box::pin(self.run_confined(request))
    }
}

impl SandboxedExecAgent {
    async fn run_confined(&self, request: &AgentRequest) -> AgentResult {
        // The node's full address (`fix[2].test`): its own layer and every container's.
        let grants = match node_grants_at(&self.document, &request.node) {
            Ok(g) => g,
            // A node the document does not have cannot be judged: fail closed.
            Err(e) => {
                return AgentResult::failed(FailureClass::Blocked, format!("requirements: {e}"));
            }
        };
        let Some(run) = request.config.get("run").and_then(Value::as_str) else {
            return AgentResult::failed(
                FailureClass::Blocked,
                "`x-weft-exec` needs a string `run`",
            );
        };
        let root = match std::path::absolute(&request.workspace)
            .ok()
            .and_then(|p| p.to_str().map(str::to_owned))
            .map(|p| Workspace::new(&p))
        {
            Some(Ok(w)) => w,
            _ => {
                return AgentResult::failed(
                    FailureClass::Blocked,
                    "the project directory is not an absolute UTF-8 path",
                );
            }
        };
        let mut confinement = from_grants::confinement(&root, &grants);
        from_grants::protect(&mut confinement, &self.protected);
        if let Some(policy) = &self.policy {
            from_grants::apply_policy(&mut confinement, &root, policy);
        }
        if let Err(e) = from_grants::create_write_dirs(&confinement, &grants, &root) {
            return AgentResult::failed(
                FailureClass::ToolError,
                format!("cannot create a write root: {e}"),
            );
        }
        let mut stdin = request.inputs.clone();
        if let (Some(f), Value::Object(m)) = (&request.feedback, &mut stdin) {
            m.insert("feedback".into(), Value::String(f.clone()));
        }
        let stdin = stdin.to_string();
        let argv = ["/bin/sh".to_owned(), "-c".to_owned(), run.to_owned()];
        let env = [
            (
                "PATH".to_owned(),
                crate::tool_path::command_path(&request.workspace),
            ),
            ("HOME".to_owned(), request.workspace.display().to_string()),
            ("LANG".to_owned(), "C.UTF-8".to_owned()),
        ];
        let timeout = request.limits.wall_clock;
        let job = Job {
            argv: &argv,
            cwd: &request.workspace,
            env: &env,
            stdin: Some(stdin.as_bytes()),
            confinement: &confinement,
            timeout,
            max_output: 2 * MAX_OUTPUT_BYTES as u64,
        };
        let outcome = match self.sandbox.run(&job).await {
            Ok(o) => o,
            Err(SandboxError::Blocked(why)) => {
                return AgentResult::failed(FailureClass::Blocked, format!("sandbox: {why}"));
            }
            Err(e) => return AgentResult::failed(FailureClass::ToolError, format!("sandbox: {e}")),
        };
        // A fork refused by the process cap is named in whichever failure follows.
        let capped = match (outcome.process_capped, confinement.max_processes) {
            (true, Some(max)) => format!("; the process cap ({max} processes) refused a fork"),
            _ => String::new(),
        };
        if outcome.timed_out {
            return AgentResult::failed(
                FailureClass::Timeout,
                format!("timed out after {timeout:?}; the process group was killed{capped}"),
            );
        }
        if outcome.output_capped {
            return AgentResult::failed(
                FailureClass::ToolError,
                "the output cap was reached; the process group was killed",
            );
        }
        if outcome.exit_code != Some(0) {
            let stderr = String::from_utf8_lossy(&outcome.stderr);
            let tail = super::exec::stderr_tail(&stderr);
            let code = outcome.exit_code.map_or_else(
                || format!("signal {}", outcome.signal.unwrap_or_default()),
                |c| c.to_string(),
            );
            return AgentResult::failed(
                FailureClass::ToolError,
                format!("exit code {code}: {tail}{capped}"),
            );
        }
        AgentResult {
            outputs: parse_outputs(&String::from_utf8_lossy(&outcome.stdout), &request.outputs),
            ..AgentResult::default()
        }
    }
}

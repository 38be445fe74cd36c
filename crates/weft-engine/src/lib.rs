//! weft-engine: the durable execution engine — the async shell around the pure scheduler.
//!
//! The top-level modules form layers: a module imports only from its own layer or those
//! below, and no two import each other in a circle (`scripts/check-module-cycles.sh`).
//!
//! Vocabulary, what the rest is written in:
//! - [`clock`]: the clock port; [`backoff`]: the pauses between attempts.
//! - [`adapter`]: an AGS scope → a [`weft_core::WorkGraph`] (same node and edge indices).
//! - [`agent`]: the agent port every working node attempt goes through, with the `exec`
//!   agent (`x-weft-exec: {run: ...}`: `sh -c` with a cleared environment, a time limit
//!   and a killed process group), the `replay` agent (recorded model turns from a
//!   cassette), routing (tiers → models, RT011) and per-attempt limits.
//! - [`typing`]: declared `type`s and `schema`s of inputs, outputs and params.
//! - [`checkers`]: the `external` criteria checkers a harness registers (unknown names fail
//!   closed).
//! - [`context`]: [`context::RunContext`], the AGX names of a run.
//! - [`refs`]: local `subgraph.ref` children; [`tool_path`]: the tools' `PATH`.
//! - [`wait`]: the payloads of `gate_waiting` and `human_decision`, and the sign-off key.
//! - [`graph_change`]: the `graph_mutated` payload (a change to a live run's graph).
//! - `nesting`: how deep a document nests its container scopes
//!   (`constraints.max_subgraph_depth`, across `ref` children too).
//! - [`EngineError`], [`ObserveError`]: why the engine stops.
//! - [`events`]: the run's event vocabulary v1, its store form, and [`events::replay`].
//! - [`run_log`]: a run's one log as readers see it: every record, the scope instance of
//!   each event, the fragment an instance runs.
//!
//! The log's readers:
//! - [`observe`]: the [`RunObserver`] hook, called after every appended event.
//! - [`audit`]: the run's audit trail, a hash-chained `weft-audit` log anchored in the store.
//! - [`human`]: waits on people as the log tells them, decisions and cancels written by
//!   other processes (the inbox).
//! - [`mutation`]: changing a live run's graph: submitting the `graph_mutated` inbox event,
//!   which the driver, a resume and a replay apply through `weft-core` alike.
//! - [`record`]: the AGS run record, built from the stored log alone.
//!
//! The driver:
//! - [`run`]: the driver. Every result is appended to the store *before* the scheduler
//!   sees it, so a run's state is always a fold over its log. The crate root's functions
//!   ([`run_file_blocking`], [`replay_run`], …) and [`lease`] sit on it.
//!
//! This slice runs the root scope of a document: `exec` task nodes, model nodes through
//! the model agent (`replay` by default), decisions, notify gates; everything else is
//! refused with a message. What is built and what is not:
//! `docs/engine.md`.

pub mod adapter;
pub mod agent;
pub mod audit;
pub mod backoff;
pub mod checkers;
pub mod clock;
pub mod context;
mod error;
pub mod events;
pub mod graph_change;
pub mod human;
pub mod mutation;
mod nesting;
pub mod observe;
pub mod record;
pub mod refs;
pub mod run;
pub mod run_log;
mod stored_log;
mod timefmt;
pub mod tool_path;
pub mod typing;
pub mod view;
pub mod wait;

pub use agent::exec;

use std::path::Path;

pub use backoff::{Backoff, BackoffKind, RecordingSleeper, Sleeper, TokioSleeper};
pub use error::EngineError;
pub use events::{EVENT_FORMAT, NodeOutcome, RunEvent, replay};
pub use observe::{ObserveError, Observed, RunObserver};
pub use run::{
    DryRun, FinalStatus, IsolateMode, LeaseOptions, NodeReport, ResumeOptions, ResumeReport,
    RunOptions, RunReport, dry_run, resume_run, run_document, run_owned,
};
pub use run_log::{SCOPE_MEMBER, root_records, scope_of, scope_records};
pub use wait::criterion_of as signoff_criterion;

/// Who drives a run (`docs/engine.md` §2d): the lease's options and what a caller asks of
/// it before touching a run (`weft resume`'s check).
pub mod lease {
    pub use crate::run::{
        LeaseOptions, driven_by, host_name, is_live, process_alive, this_process,
    };
}

/// Loads and validates a document; any error-level finding refuses it.
pub fn load_document(path: &Path) -> Result<serde_json::Value, EngineError> {
    let loaded = weft_ags::load::read_file(path, &weft_ags::load::Limits::default())
        .map_err(|e| EngineError::Read(format!("{}: {e}", path.display())))?;
    let describe = |f: &weft_ags::Finding| {
        let at = f.line.map_or(String::new(), |l| format!(" (line {l})"));
        format!("{} {}{at}: {}", f.code.as_str(), f.pointer, f.message)
    };
    let mut errors: Vec<String> = loaded
        .findings
        .iter()
        .filter(|f| f.is_error())
        .map(describe)
        .collect();
    let Some(doc) = loaded.document else {
        return Err(EngineError::Invalid(errors));
    };
    errors.extend(
        weft_ags::validate::validate_document(&doc)
            .iter()
            .filter(|f| f.is_error())
            .map(describe),
    );
    if errors.is_empty() {
        Ok(doc.value)
    } else {
        Err(EngineError::Invalid(errors))
    }
}

/// Replays a stored run of `doc`: its events applied, in order, to a fresh scheduler over
/// the document's root scope, with the options recorded in `run_started`.
pub fn replay_run(
    doc: &serde_json::Value,
    log: &impl weft_store::EventLog,
    run_id: &str,
) -> Result<weft_core::Scheduler, EngineError> {
    let root = doc
        .as_object()
        .ok_or_else(|| EngineError::Refused(vec!["the document is not an object".into()]))?;
    let adapted = adapter::adapt_root(root)?;
    let records = record::read_log(log, run_id)?;
    let options = records
        .first()
        .and_then(|r| RunEvent::from_record(r).ok())
        .as_ref()
        .and_then(events::recorded_options)
        .ok_or_else(|| EngineError::Internal(format!("run {run_id} has no run_started event")))?;
    events::replay(adapted.graph, options, &records)
        .map_err(|e| EngineError::Internal(format!("replay: {e}")))
}

/// Loads, validates and runs `path` on a fresh current-thread runtime (for the CLI).
pub fn run_file_blocking(
    path: &Path,
    store: &dyn weft_store::RunStore,
    options: &RunOptions,
) -> Result<RunReport, EngineError> {
    let doc = load_document(path)?;
    let mut options = options.clone();
    if options.refs.is_empty() && has_ref(&doc) {
        options.refs = load_local_refs(path, &options.project_dir)?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| EngineError::Internal(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(run_owned(doc, store, &options))
}

/// Does any `subgraph` block of `doc` (at any depth) name a `ref`?
fn has_ref(doc: &serde_json::Value) -> bool {
    match doc {
        serde_json::Value::Object(m) => {
            m.get("subgraph").is_some_and(|s| s.get("ref").is_some()) || m.values().any(has_ref)
        }
        serde_json::Value::Array(a) => a.iter().any(has_ref),
        _ => false,
    }
}

/// Loads and checks the local `subgraph.ref` children of the document at `path`
/// (`refs::load_refs`, bounded by `boundary`): every problem refuses the run.
fn load_local_refs(path: &Path, boundary: &Path) -> Result<Vec<refs::ChildRef>, EngineError> {
    let loaded = weft_ags::load::read_file(path, &weft_ags::load::Limits::default())
        .map_err(|e| EngineError::Read(format!("{}: {e}", path.display())))?;
    let Some(document) = loaded.document else {
        return Err(EngineError::Read(format!(
            "{}: no document",
            path.display()
        )));
    };
    let boundary = if boundary.as_os_str().is_empty() {
        path.parent().unwrap_or(Path::new(".")).to_path_buf()
    } else {
        boundary.to_path_buf()
    };
    refs::load_refs(path, &document, &refs::RefOptions::new(boundary)).map_err(|problems| {
        EngineError::Refused(problems.iter().map(ToString::to_string).collect())
    })
}

/// [`resume_run`] on a fresh current-thread runtime (for the CLI).
pub fn resume_run_blocking(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    document: Option<&serde_json::Value>,
    options: &ResumeOptions,
) -> Result<ResumeReport, EngineError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| EngineError::Internal(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(resume_run(store, run_id, document, options))
}

/// [`resume_run_blocking`] with the run's document read from `path` (checked against the
/// run's digest, RT053), whose local `subgraph.ref` children are loaded and checked as
/// `weft run FILE` does, so a `ref` the run had not reached yet runs on resume.
pub fn resume_file_blocking(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    path: &Path,
    options: &ResumeOptions,
) -> Result<ResumeReport, EngineError> {
    let doc = load_document(path)?;
    let mut options = options.clone();
    if options.run.refs.is_empty() && has_ref(&doc) {
        options.run.refs = load_local_refs(path, &options.run.project_dir)?;
    }
    resume_run_blocking(store, run_id, Some(&doc), &options)
}

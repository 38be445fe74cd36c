//! `weft run`: run a document to its end, showing it as it runs (`--jsonl`, `--json`, a live
//! view on a terminal, one line per event otherwise; `crate::progress`), with the run's audit
//! trail written next to the store. `--dry-run` checks and plans, and writes nothing
//! (`super::dry_run`). Exit 0 when the run succeeded, 1 when it failed, is partial, was
//! cancelled or refused, 3 when it waits on a person (`awaiting_human`: the waits and the
//! commands that decide them are printed; `weft resume RUN` continues).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use serde_json::{Map, Value, json};
use weft_engine::{EngineError, FinalStatus, RunObserver, RunOptions, RunReport};
use weft_host::{RunSetup, SetupRequest, WeftConfig};
use weft_store::RunTable;

use crate::progress::story::Story;
use crate::progress::{self, Mode};

/// How `weft run` reports.
pub struct Flags {
    pub json: bool,
    pub jsonl: bool,
    pub dry_run: bool,
    /// `--cassette`: the recorded model turns the `replay` agent plays.
    pub cassette: Option<std::path::PathBuf>,
    /// `--sandbox`: `exec` nodes that declare permissions run confined (docs/permissions.md).
    pub sandbox: bool,
    /// `--config`: a `weft.toml` whose routing profile runs model nodes on live providers.
    pub config: Option<std::path::PathBuf>,
}

/// Parses `KEY=VALUE` params: VALUE as JSON when it parses, else as a string.
fn parse_params(params: &[String]) -> anyhow::Result<Map<String, Value>> {
    let mut out = Map::new();
    for p in params {
        let (k, v) = p
            .split_once('=')
            .with_context(|| format!("--param `{p}`: expected KEY=VALUE"))?;
        let value = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()));
        out.insert(k.to_string(), value);
    }
    Ok(out)
}

/// Who runs weft, for `run_started.started_by` and the audit entry: `$USER`, `$LOGNAME`, else
/// the OS account (`crate::identity`).
pub fn who() -> Option<String> {
    Some(crate::identity::Actor::current().name)
}

/// What `weft run` and `weft resume` set a run up from, owned: the parsed `--config` (read
/// and parsed once) and the request made of it.
pub struct Setup<'a> {
    config: Option<WeftConfig>,
    document: Option<Arc<Value>>,
    run_id: &'a str,
    cassette: Option<&'a Path>,
    sandbox: bool,
    helper: std::path::PathBuf,
    project_dir: &'a Path,
    db: &'a Path,
}

impl Setup<'_> {
    pub fn request(&self) -> SetupRequest<'_> {
        SetupRequest {
            config: self.config.as_ref(),
            document: self.document.clone(),
            run_id: self.run_id,
            cassette: self.cassette,
            sandbox: self.sandbox,
            helper: &self.helper,
            identity: crate::identity::Actor::current().name,
            project_dir: self.project_dir,
            db: self.db,
        }
    }
}

/// Reads `config` (when given) and gathers the rest of a run's setup. `Err` is the message
/// to print.
pub fn setup_request<'a>(
    config: Option<&Path>,
    document: Option<Arc<Value>>,
    run_id: &'a str,
    cassette: Option<&'a Path>,
    sandbox: bool,
    project_dir: &'a Path,
    db: &'a Path,
) -> anyhow::Result<Setup<'a>> {
    Ok(Setup {
        config: config.map(WeftConfig::load).transpose()?,
        document,
        run_id,
        cassette,
        sandbox,
        // The sandbox helper is this binary (`weft sandbox-exec`).
        helper: std::env::current_exe().context("cannot find the weft binary to run the helper")?,
        project_dir,
        db,
    })
}

/// Refusals (nothing was created) versus errors of a run that exists and can be resumed.
pub fn is_refusal(e: &EngineError) -> bool {
    matches!(
        e,
        EngineError::Read(_)
            | EngineError::Invalid(_)
            | EngineError::Refused(_)
            | EngineError::Params(_)
            | EngineError::Adapt(_)
    )
}

pub fn run(
    file: &Path,
    params: &[String],
    max_parallel: Option<usize>,
    db: &Path,
    flags: &Flags,
) -> anyhow::Result<ExitCode> {
    let mut options = RunOptions {
        params: parse_params(params)?,
        max_parallel,
        project_dir: std::env::current_dir().context("cannot read the current directory")?,
        run_id: Some(weft_engine::run::new_run_id()),
        started_by: who(),
        cassette: flags.cassette.clone(),
        ..RunOptions::default()
    };
    let sandbox = flags.sandbox && !flags.dry_run;
    if flags.config.is_some() || sandbox {
        // Agents, isolation, sandbox: one setup with `weft resume` (weft-host). The document
        // is loaded here for its nodes' tool requirements (the run loads its own); one that
        // cannot be loaded is reported by the run as usual (nothing to confine then).
        let document = weft_engine::load_document(file).ok().map(Arc::new);
        let sandbox = sandbox && document.is_some();
        let request = setup_request(
            flags.config.as_deref(),
            document,
            options.run_id.as_deref().unwrap_or_default(),
            flags.cassette.as_deref(),
            sandbox,
            &options.project_dir,
            db,
        );
        match request.and_then(|r| Ok(RunSetup::prepare(&r.request())?)) {
            Ok(setup) => setup.apply_to(&mut options),
            Err(e) => {
                writeln!(anstream::stderr(), "error: {e}")?;
                return Ok(ExitCode::from(1));
            }
        }
    }
    if flags.dry_run {
        return super::dry_run::run(file, &options, flags.json);
    }
    let store = weft_host::setup::open_store(db)?;
    let mode = Mode::from_flags(flags.json, flags.jsonl);
    let (printer, ticker) = progress::observer(mode, None, &[]);
    let trail = weft_host::setup::audit_trail(db, &store);
    // The driver's appends write their audit lines in their own commit.
    let audited = trail.store().shared();
    let export = Arc::clone(&trail);
    let trail: Arc<dyn RunObserver> = trail;
    options.observers = std::iter::once(trail).chain(printer).collect();
    let result = weft_engine::run_file_blocking(file, &*audited, &options);
    drop(ticker);
    let run_id = options.run_id.unwrap_or_default();
    match result {
        Ok(report) => {
            print_report(mode, &report, &store, db)?;
            emit_record(mode, &store, db, &report.run_id)?;
            Ok(exit_code(report.status))
        }
        Err(e) => {
            let created = store.get_run(&run_id).ok().flatten().is_some();
            if created && !matches!(e, EngineError::Driven(_)) {
                super::resume::complete_export(&export, &run_id)?;
            }
            print_error(mode, created.then_some(run_id.as_str()), &e)?;
            Ok(error_exit(&e))
        }
    }
}

/// The end of a run on stdout, by mode (`--jsonl` prints nothing more): with text, the
/// nodes (plain lines), what failed and what weft did instead (`progress::story`), why a run
/// with failures still succeeded, what waits on a person and the commands that decide it.
pub fn print_report(
    mode: Mode,
    report: &RunReport,
    store: &dyn weft_store::RunStore,
    db: &Path,
) -> anyhow::Result<()> {
    let mut out = anstream::stdout();
    match mode {
        Mode::Jsonl => {}
        Mode::Json => writeln!(out, "{}", serde_json::to_string(report)?)?,
        Mode::Live | Mode::Lines => {
            // The words are a courtesy: a log that cannot be read leaves the report as it was.
            let events = story_log(store, &report.run_id).unwrap_or_default();
            let story = Story::from_events(&events);
            if mode == Mode::Lines {
                let width =
                    crate::render::column_width(report.nodes.iter().map(|n| n.id.as_str()), 24);
                for n in &report.nodes {
                    let note = match (story.note_for(&n.id), n.error.as_deref()) {
                        (Some(note), _) => format!("  ({note})"),
                        (None, Some(e)) => format!("  ({e})"),
                        (None, None) => String::new(),
                    };
                    writeln!(
                        out,
                        "  {:<width$} {:<10} attempts {}{note}",
                        n.id, n.state, n.attempts
                    )?;
                }
            }
            if !story.lines.is_empty() {
                writeln!(out, "what failed, and what weft did instead:")?;
                for line in &story.lines {
                    writeln!(out, "  {line}")?;
                }
            }
            // Every warning a node finished with (RT021, RT022, RT062, ...): never only in
            // the log.
            for (node, warning) in node_warnings(&events) {
                writeln!(out, "warning: {node}: {warning}")?;
            }
            for r in &report.reasons {
                writeln!(out, "reason: {r}")?;
            }
            if let Some(outputs) = report.outputs.as_object() {
                for (name, value) in outputs {
                    writeln!(out, "output {name}: {}", output_line(value))?;
                }
            }
            let u = &report.usage;
            if !u.is_zero() {
                writeln!(
                    out,
                    "usage: {} tokens ({} in, {} out), {} tool calls, {} agent steps, ${:.4}",
                    u.total_tokens(),
                    u.input_tokens,
                    u.output_tokens,
                    u.tool_calls,
                    u.agent_steps,
                    u.cost_usd
                )?;
            }
            writeln!(out, "status: {}", report.status.as_str())?;
            if report.status == FinalStatus::Succeeded
                && let Some(why) = story.why_succeeded()
            {
                writeln!(out, "why: {why}")?;
            }
            if !report.waiting.is_empty() {
                super::waiting::print(&mut out, &report.run_id, db, &report.waiting)?;
            }
        }
    }
    Ok(())
}

/// What the report's words read of a run's log: its `run_started` events (the document:
/// fallbacks, `on_failure` edges, the nodes' order) and `node_finished` events, parsed from
/// the stored text; the others are not parsed at all (a 10,000-node run's whole log as
/// values was 20,000 payloads beside the document).
fn story_log(
    store: &dyn weft_store::RunStore,
    run_id: &str,
) -> weft_store::Result<Vec<weft_store::EventRecord>> {
    let raw = store.read_raw(run_id, 1, usize::MAX)?;
    let mut out = Vec::new();
    for r in raw {
        if r.kind != "run_started" && r.kind != "node_finished" {
            continue;
        }
        let Ok(payload) = serde_json::from_str::<Value>(&r.payload) else {
            continue;
        };
        out.push(r.with_payload(run_id, payload));
    }
    Ok(out)
}

/// The warnings of each `node_finished` in the log, by node address (`loop[1].step` inside
/// a fragment instance).
fn node_warnings(events: &[weft_store::EventRecord]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for record in events.iter().filter(|r| r.kind == "node_finished") {
        let Ok(weft_engine::RunEvent::NodeFinished { node, warnings, .. }) =
            weft_engine::RunEvent::from_record(record)
        else {
            continue;
        };
        let address = match weft_engine::scope_of(record) {
            Some(scope) => format!("{scope}.{node}"),
            None => node,
        };
        out.extend(warnings.into_iter().map(|w| (address.clone(), w)));
    }
    out
}

/// A graph output on one line: compact JSON, cut at [`OUTPUT_LINE_CHARS`] characters (the
/// whole value is in the record and `--json`).
fn output_line(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(OUTPUT_LINE_CHARS) {
        Some((cut, _)) => format!("{}… ({} bytes in all)", &text[..cut], text.len()),
        None => text,
    }
}

/// How much of one graph output the text report shows.
const OUTPUT_LINE_CHARS: usize = 200;

/// Writes the run record when the run has ended and its document asks for it
/// (`policy.record_run`; `super::record::write_if_asked`), and says where in text modes.
pub fn emit_record(
    mode: Mode,
    store: &dyn weft_store::RunStore,
    db: &Path,
    run_id: &str,
) -> anyhow::Result<()> {
    // The run is over either way: a record that cannot be written is a warning, never a
    // different outcome (`weft record` can build it again from the log).
    match super::record::write_if_asked(store, db, run_id) {
        Ok(Some(path)) if matches!(mode, Mode::Live | Mode::Lines) => {
            writeln!(anstream::stdout(), "record: {}", path.display())?;
        }
        Ok(_) => {}
        Err(e) => writeln!(
            anstream::stderr(),
            "warning: the run record was not written: {e:#}"
        )?,
    }
    Ok(())
}

/// A run that could not be carried out: the error on stderr, and with `--json` the final
/// object (`run_id` null when no run was created; `status` `refused` or `error`).
pub fn print_error(mode: Mode, run_id: Option<&str>, e: &EngineError) -> anyhow::Result<()> {
    writeln!(anstream::stderr(), "error: {e}")?;
    if mode == Mode::Json {
        let status = match e {
            EngineError::Driven(_) => "driven_elsewhere",
            e if is_refusal(e) => "refused",
            _ => "error",
        };
        let obj = json!({"run_id": run_id, "status": status, "error": e.to_string()});
        writeln!(anstream::stdout(), "{obj}")?;
    }
    Ok(())
}

/// The run exit code of a final status: 0 succeeded, 3 awaiting a person, 1 otherwise.
pub fn exit_code(status: FinalStatus) -> ExitCode {
    match status {
        FinalStatus::Succeeded => ExitCode::SUCCESS,
        FinalStatus::AwaitingHuman => ExitCode::from(AWAITING_HUMAN),
        _ => ExitCode::from(1),
    }
}

/// The exit code of a run that waits on a person (`docs/cli.md`).
pub const AWAITING_HUMAN: u8 = 3;

/// The exit code when another live process drives the run (`docs/cli.md`).
pub const DRIVEN_ELSEWHERE: u8 = 5;

/// The exit code of a run command that failed with `e`: 5 when another process drives
/// the run, else 1.
pub fn error_exit(e: &EngineError) -> ExitCode {
    match e {
        EngineError::Driven(_) => ExitCode::from(DRIVEN_ELSEWHERE),
        _ => ExitCode::from(1),
    }
}

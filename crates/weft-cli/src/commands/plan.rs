//! `weft plan`: validate, then show how the graph would run, for the level this weft runs,
//! with a note of what it would refuse (features above its level, subgraph references it
//! does not load), if anything.

use crate::input::{Input, check_references, is_refusal};
use crate::plan_view::Refusal;
use crate::render::findings;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use weft_ags::Severity;
use weft_ags::plan::Harness;

/// Loads and validates `file` like [`load_and_validate`]; when the validator finds no error,
/// the plan and the digest are computed on a second thread while this one places the
/// findings in the source (`locate`: a walk of the whole text), so a large document's
/// plan costs the longer of the two, not their sum (`docs/BENCHMARKS.md`, "Hostile
/// shapes"). `None` when they were not computed ahead: the caller computes them if the
/// document still has no error.
fn validate_and_plan(
    file: &Path,
    max_bytes: usize,
) -> (Input, Option<(weft_ags::plan::Plan, String)>) {
    let mut input = crate::input::load(file, max_bytes);
    let Some(doc) = &input.document else {
        return (input, None);
    };
    let mut found = weft_ags::validate::validate(&doc.value);
    let clean = !found.iter().chain(&input.findings).any(|f| f.is_error());
    let root = doc.value.as_object().filter(|_| clean);
    let ahead = std::thread::scope(|scope| {
        let planner = root.and_then(|root| {
            std::thread::Builder::new()
                .name("weft-plan".into())
                .spawn_scoped(scope, || plan_and_digest(root, Some(&doc.value)))
                .ok()
        });
        weft_ags::load::locate(&doc.source, &mut found);
        weft_ags::validate::sort_findings(&mut found);
        planner.map(|p| {
            p.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    });
    input.findings.extend(found);
    (input, ahead)
}

/// The plan of `root` for the engine's harness, and the digest of the document.
fn plan_and_digest(
    root: &serde_json::Map<String, serde_json::Value>,
    document: Option<&serde_json::Value>,
) -> (weft_ags::plan::Plan, String) {
    let plan = weft_ags::plan::plan_for(root, engine_harness());
    let digest = document
        .map(weft_ags::digest::graph_digest)
        .unwrap_or_default();
    (plan, digest)
}

/// The harness `weft run` is: the engine's conformance level and what it runs above it.
pub fn engine_harness() -> Harness<'static> {
    Harness {
        level: weft_engine::record::CONFORMANCE_LEVEL,
        supported_above: weft_engine::record::SUPPORTED_ABOVE_LEVEL,
    }
}

/// weft's refusals of a valid document (its references' WF1xx), for the plan's note.
pub fn refusals(input: &Input) -> Vec<Refusal> {
    let own = input
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Refusal)
        .map(|f| Refusal {
            code: f.code.as_str().to_string(),
            at: f.pointer.clone(),
            why: f.message.clone(),
        });
    let in_children = input
        .references
        .iter()
        .filter(|r| is_refusal(r))
        .map(|r| Refusal {
            code: r.code.clone().unwrap_or_default(),
            at: format!("{}:{}:{}", r.file.display(), r.line, r.column),
            why: r.message.clone(),
        });
    own.chain(in_children).collect()
}

pub fn run(file: &Path, json: bool, max_bytes: usize) -> anyhow::Result<ExitCode> {
    let (mut input, ahead) = validate_and_plan(file, max_bytes);
    check_references(&mut input, file);
    let root = input.document.as_ref().and_then(|d| d.value.as_object());
    let (Some(root), false) = (root, input.has_errors()) else {
        // Never plan a document with errors: the plan would describe a graph that cannot run.
        write!(anstream::stderr(), "{}", findings::human(&input))?;
        anstream::eprintln!("error: {} has errors; fix them before planning", input.path);
        return Ok(ExitCode::from(1));
    };
    let (plan, digest) = match ahead {
        Some(planned) => planned,
        None => plan_and_digest(root, input.document.as_ref().map(|d| &d.value)),
    };
    let mut stdout = std::io::stdout().lock();
    if json {
        // Written as it is serialised, buffered: no value tree and no string of the whole
        // report first (a 10,000-node plan with 10,000 findings is megabytes).
        let report = PlanJson {
            plan: &plan,
            graph_digest: &digest,
            findings: &input.findings,
        };
        let mut out = std::io::BufWriter::new(&mut stdout);
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
        out.flush()?;
    } else {
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        write!(
            stdout,
            "{}",
            crate::plan_view::render(&plan, &digest, color, &refusals(&input))
        )?;
        if !input.findings.is_empty() {
            // Finish the plan before advice goes to stderr, so the two never interleave.
            stdout.flush()?;
            drop(stdout);
            write!(anstream::stderr(), "{}", findings::human(&input))?;
        }
    }
    // The process exits next: freeing the parsed document, its findings and the plan one
    // allocation at a time would only delay it.
    std::mem::forget((input, plan));
    Ok(ExitCode::SUCCESS)
}

/// `weft plan --json`: the plan's members, then its digest and the document's findings.
#[derive(serde::Serialize)]
struct PlanJson<'a> {
    #[serde(flatten)]
    plan: &'a weft_ags::plan::Plan,
    graph_digest: &'a str,
    findings: &'a [weft_ags::diagnostic::Finding],
}

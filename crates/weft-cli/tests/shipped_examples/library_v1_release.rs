//! `library-v1-release` end to end on a small Python library (`fixtures/library`): the
//! audit, the API design judged by three `llm_judge` samples, the maintainer's approval at
//! `api_design_review` (exit 3, `weft approve`, `weft resume`), the three parallel tracks,
//! the quality report, the agent decision `ready_to_release`, the release artifacts, the
//! release manager's approval at `publish_approval` and at the `pre_upload` checkpoint
//! (`before_side_effects`), and the publication. Replay does not
//! redo the recorded session's edits, so the tree holds them; the criteria run the real
//! `ruff`, `mypy`, `pytest`, `git diff` and the fixture's scripts, on a wheel the test
//! builds for real. The package index is a local directory (`index/`, where the recorded
//! upload put the wheel): `verify_published.py` installs from it into a clean environment,
//! without the network.
//!
//! The graph's `success` also asks for `maintainer_signoff`, a graph-level `human`
//! criterion: once everything else has run, the run waits for a maintainer (`weft approve
//! RUN success/maintainer_signoff`), and the last `weft resume` finishes it `succeeded`.

use std::path::Path;

use serde_json::{Value, json};

use super::kit::{
    act, attempt, cassette, criterion, example, git, judgement, node, project, record, run_id,
    run_json, venv_python,
};

const FIXTURE: &str = "tests/shipped_examples/fixtures/library";

const AUDIT: &str = "# v1.0 audit of example-lib\n\n## Modules\n\n- `example_lib` (the only module): `parse`, `render` and `validate` for `key=value` settings files.\n\n## Symbols imported by callers\n\nSearching the dependants we know of: `parse` (every caller), `render` (two callers), `validate` (one caller). Nothing else is imported from outside the package.\n\n## Coverage today\n\nThe suite covers `parse` and `render` but not `validate`; statement coverage is 71 %.\n\n## Gaps blocking a credible v1.0, ranked\n\n1. (blocker) There is no declared public surface: `__all__` is missing, so every helper is de facto public.\n2. (major) `validate` has no tests and no documented behaviour for empty values.\n3. (minor) The README has no runnable quickstart.\n\nEach gap names the module it concerns; all three concern `example_lib`. None needs a new dependency. The package has no runtime dependencies today and should keep it that way. Type annotations are complete and mypy passes already; ruff passes with the project's defaults.\n\n## Method\n\nThe audit read every module, every test and the packaging metadata, and searched the three known dependants for imports from the package. Coverage was measured with the suite as it stands, on the current commit, without changing any code.\n";

fn design() -> String {
    let mut d = String::from(
        "# v1.0 public API of example-lib\n\nThe public surface is exactly `__all__ = [\"parse\", \"render\", \"validate\"]`. Everything else is private and may change without notice.\n\n",
    );
    for (name, sig, why) in [
        (
            "parse",
            "parse(text: str) -> dict[str, str]",
            "Every known caller uses it; it reads `key=value` lines and skips blanks and comments.",
        ),
        (
            "render",
            "render(settings: dict[str, str]) -> str",
            "Two callers; it writes settings back sorted by key so files stay diff-friendly.",
        ),
        (
            "validate",
            "validate(settings: dict[str, str]) -> list[str]",
            "One caller; it lists the keys whose value is empty. It gains tests in v1.0 (audit gap 2).",
        ),
    ] {
        d.push_str(&format!("## `{name}`\n\nSignature: `{sig}`. Stability: stable for the 1.x series; a change of signature needs a 2.0. {why} Deprecation path: none, nothing is replaced.\n\n"));
    }
    d.push_str("## Gaps from the audit\n\n- Gap 1 (blocker), no declared surface: resolved by `__all__` above.\n- Gap 2 (major), `validate` untested: resolved by the test track.\n- Gap 3 (minor), no quickstart: resolved by the documentation track.\n\n## What stays private\n\nNo other symbol exists today; anything added later starts private. The package keeps zero runtime dependencies, and its version is read from `example_lib.__version__`, which is set once, in the package, and in `pyproject.toml`, and nowhere else. The design deliberately keeps keyword-only arguments out: each function takes one positional argument. Exceptions: none of the three raises on well-formed text; a line without `=` is read as a key with an empty value, which `validate` then reports.\n\n## Compatibility\n\nCallers of the 0.x series keep working unchanged: the three functions keep their names, arguments and results, and no symbol they import today disappears.\n\n## Alternatives considered\n\nA `Settings` class wrapping the dict was rejected: it adds a type every caller must learn and buys nothing the three functions do not already give. A `strict` flag on `parse` was rejected as well: `validate` already reports the keys a strict parser would refuse, and one function per job keeps the surface small.\n");
    d
}

fn recorded_session() -> String {
    let judges: Vec<Value> = (0..3).map(|_| judgement(0.9)).collect();
    cassette(json!({
        "audit_codebase": {"attempts": [attempt("Surveying the package.", json!({
            "audit": AUDIT,
            "gap_list": [
                {"title": "No declared public surface", "severity": "blocker", "modules": ["example_lib"]},
                {"title": "validate untested", "severity": "major", "modules": ["example_lib"]},
            ]}))]},
        "define_public_api": {"attempts": [attempt("Writing the design.", json!({
            "design_doc": design(), "public_symbols": ["parse", "render", "validate"]}))]},
        "define_public_api/judge/addresses_gaps": {"attempts": judges},
        "implement_api": {"attempts": [attempt("Adding __all__.", json!({
            "changed_files": ["src/example_lib/__init__.py"]}))]},
        "write_test_suite": {"attempts": [attempt("Writing tests.", json!({
            "test_files": ["tests/test_api.py"], "coverage_percent": 100}))]},
        "write_documentation": {"attempts": [attempt("Writing the quickstart.", json!({
            "api_reference": ["docs/quickstart.md"],
            "quickstart": "See docs/quickstart.md."}))]},
        "write_documentation/judge/docs_readable": {"attempts": [judgement(0.8)]},
        "verify_quality": {"attempts": [attempt("Running the gate.", json!({
            "report": "ruff, mypy, pytest (3 passed): all green.", "failing_checks": []}))]},
        "release_readiness": {"attempts": [attempt("Weighing the report.", json!({
            "decision": "ready_to_release", "reasoning": "Every check passes; the docs are complete."}))]},
        "prepare_release": {"attempts": [attempt("Building the wheel.", json!({
            "artifacts": ["dist/example_lib-1.0.0-py3-none-any.whl"],
            "release_notes": "## 1.0.0\n\nThe public API is `parse`, `render`, `validate`."}))]},
        // Recorded but never played: the decision routed around the remediation.
        "remediate_gaps": {"attempts": [attempt("Fixing.", json!({"fixes": []}))]},
        "publish": {"attempts": [attempt("Uploading.", json!({
            "published_url": "https://test.pypi.org/project/example-lib/1.0.0/"}))]},
    }))
}

/// Copies the fixture tree `from` into `to`.
fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The library at its pre-release commit, with the recorded session's files in the tree and
/// the wheel built (for real) and uploaded to the local index.
fn released_library() -> tempfile::TempDir {
    let dir = project(
        &[(
            "library-v1-release.agraph.yaml",
            &example("library-v1-release.agraph.yaml"),
        )],
        &["python", "pytest", "ruff", "mypy"],
    );
    let d = dir.path();
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE), d);
    git(d, &["init", "-q"]);
    git(
        d,
        &[
            "add",
            "pyproject.toml",
            "src",
            "tests",
            "scripts",
            "docs",
            "README.md",
        ],
    );
    git(d, &["commit", "-q", "-m", "before v1.0"]);
    std::fs::create_dir_all(d.join("docs/internal")).unwrap();
    std::fs::write(d.join("docs/internal/v1-audit.md"), AUDIT).unwrap();
    std::fs::write(d.join("docs/internal/v1-api-design.md"), design()).unwrap();
    let built = std::process::Command::new(venv_python())
        .current_dir(d)
        .args([
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
        ])
        .args(["--no-cache-dir", "-w", "dist", "."])
        .status()
        .unwrap();
    assert!(built.success(), "building the wheel");
    std::fs::create_dir_all(d.join("index")).unwrap();
    std::fs::copy(
        d.join("dist/example_lib-1.0.0-py3-none-any.whl"),
        d.join("index/example_lib-1.0.0-py3-none-any.whl"),
    )
    .unwrap();
    std::fs::write(d.join("c.json"), recorded_session()).unwrap();
    dir
}

#[test]
fn library_v1_release_is_published_and_signed_off() {
    let dir = released_library();
    let d = dir.path();
    let waiting = run_json(
        d,
        &[
            "run",
            "library-v1-release.agraph.yaml",
            "--cassette",
            "c.json",
        ],
        3,
    );
    assert_eq!(waiting["status"], "awaiting_human", "{waiting}");
    assert_eq!(
        waiting["waiting"][0]["node"], "api_design_review",
        "{waiting}"
    );
    let run = run_id(&waiting);
    act(
        d,
        &[
            "approve",
            &run,
            "api_design_review",
            "--as",
            "alice",
            "--role",
            "maintainer",
        ],
    );
    let waiting = run_json(d, &["resume", &run, "--cassette", "c.json"], 3);
    assert_eq!(waiting["status"], "awaiting_human", "{waiting}");
    assert_eq!(
        waiting["report"]["waiting"][0]["node"], "publish_approval",
        "{waiting}"
    );
    act(
        d,
        &[
            "approve",
            &run,
            "publish_approval",
            "--as",
            "bob",
            "--role",
            "release-manager",
        ],
    );
    // The upload is a side effect: `pre_upload` asks once more, just before it.
    let waiting = run_json(d, &["resume", &run, "--cassette", "c.json"], 3);
    let wait = &waiting["report"]["waiting"][0];
    assert_eq!(wait["node"], "publish", "{waiting}");
    assert_eq!(wait["stage"], "before_side_effects", "{waiting}");
    act(
        d,
        &[
            "approve",
            &run,
            "publish",
            "--as",
            "bob",
            "--role",
            "release-manager",
        ],
    );
    // Everything ran; the maintainer's sign-off on the release is what is left.
    let waiting = run_json(d, &["resume", &run, "--cassette", "c.json"], 3);
    assert_eq!(
        waiting["report"]["waiting"][0]["node"], "success/maintainer_signoff",
        "{waiting}"
    );
    act(
        d,
        &[
            "approve",
            &run,
            "success/maintainer_signoff",
            "--as",
            "alice",
            "--role",
            "maintainer",
        ],
    );
    let done = run_json(d, &["resume", &run, "--cassette", "c.json"], 0);
    assert_eq!(done["status"], "succeeded", "{done}");
    let rec = record(d, &run);
    assert_eq!(rec["status"], "succeeded");
    for id in [
        "audit_codebase",
        "define_public_api",
        "api_design_review",
        "implement_api",
        "write_test_suite",
        "write_documentation",
        "verify_quality",
        "release_readiness",
        "prepare_release",
        "publish_approval",
        "publish",
    ] {
        assert_eq!(
            node(&rec, id)["status"],
            "succeeded",
            "{id}: {}",
            node(&rec, id)
        );
    }
    assert_eq!(node(&rec, "remediate_gaps")["status"], "skipped");
    // `attachments.current_readme` reads as the attachment's path (`docs/semantics.md`).
    let docs = node(&rec, "write_documentation");
    assert_eq!(docs["inputs"]["existing_readme"], "README.md", "{docs}");
    // The judge: three samples at the judge's tier, the median against the threshold.
    let design = &node(&rec, "define_public_api")["attempts"][0]["success"];
    assert_eq!(
        criterion(design, "addresses_gaps")["passed"],
        true,
        "{design}"
    );
    // The real tools on the recorded tree.
    let implement = &node(&rec, "implement_api")["attempts"][0]["success"];
    for id in [
        "lint_clean",
        "types_clean",
        "public_api_importable",
        "no_new_dependencies",
    ] {
        assert_eq!(
            criterion(implement, id)["passed"],
            true,
            "{id}: {implement}"
        );
    }
    let release = &node(&rec, "prepare_release")["attempts"][0]["success"];
    assert_eq!(
        criterion(release, "clean_install")["passed"],
        true,
        "{release}"
    );
    let publish = &node(&rec, "publish")["attempts"][0]["success"];
    assert_eq!(
        criterion(publish, "installable_from_index")["passed"],
        true,
        "{publish}"
    );
    // The people, by identity and role.
    let gate = node(&rec, "publish_approval");
    assert_eq!(gate["human_events"][0]["actor"], "bob", "{gate}");
    let upload = &node(&rec, "publish")["human_events"][0];
    assert_eq!(upload["checkpoint_id"], "pre_upload", "{upload}");
    assert_eq!(upload["outcome"], "approved", "{upload}");
    assert_eq!(
        rec["outputs"]["published_url"],
        "https://test.pypi.org/project/example-lib/1.0.0/"
    );
    // The graph's criteria, the maintainer's sign-off included.
    let graph = &rec["graph_success"];
    for id in [
        "published",
        "suite_green",
        "docs_present",
        "maintainer_signoff",
    ] {
        assert_eq!(criterion(graph, id)["passed"], true, "{id}: {graph}");
    }
}

//! `test-repair-loop` end to end: a Python project whose suite fails at `HEAD` (one wrong
//! function); the recorded session diagnosed and fixed it in the first iteration of
//! `repair_loop`, and the second iteration's run is green. Replay plays the recorded turns
//! and does not redo their effects, so the working tree holds what the session wrote (the
//! fix and the repair summary) on top of the failing commit; the criteria run the real
//! `pytest` (the graph's `suite_green` included) and the real `git diff` (no test deleted).

use serde_json::json;

use super::kit::{
    attempt, cassette, criterion, example, git, node, project, record, run_id, run_json, scoped,
    weft,
};

const BROKEN: &str = "def add(a, b):\n    return a - b\n";
const FIXED: &str = "def add(a, b):\n    return a + b\n";
const TESTS: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n";
const CONFTEST: &str = "import sys, pathlib\n\nsys.path.insert(0, str(pathlib.Path(__file__).parent.parent / \"src\"))\n";
const SUMMARY: &str = "# Test repair summary\n\nBroken: `tests/test_calc.py::test_add` failed because `calc.add` subtracted its\narguments instead of adding them.\n\nChanged: `src/calc.py`, `add` now returns `a + b`. No test was changed, skipped or\nremoved.\n\nReview first: `src/calc.py`; the rest of the suite was already green and stays green.\n";

pub(super) fn recorded_session() -> String {
    cassette(json!({
        "establish_baseline": {"attempts": [attempt("Running pytest -q once.", json!({
            "baseline_failures": ["tests/test_calc.py::test_add"],
            "baseline_report": "F.\nFAILED tests/test_calc.py::test_add - assert -1 == 5\n1 failed, 1 passed",
        }))]},
        "repair_loop[0].run_tests": {"attempts": [attempt("Running the suite.", json!({
            "failing_count": 1,
            "report": "FAILED tests/test_calc.py::test_add - assert -1 == 5\n1 failed, 1 passed",
        }))]},
        "repair_loop[0].diagnose": {"attempts": [attempt("Reading src/calc.py.", json!({
            "diagnosis": "`calc.add` returns `a - b`; it must return `a + b`.",
            "target_files": ["src/calc.py"],
        }))]},
        "repair_loop[0].apply_fix": {"attempts": [attempt("Editing src/calc.py.", json!({
            "summary": "`add` now returns `a + b`.",
        }))]},
        "repair_loop[1].run_tests": {"attempts": [attempt("Running the suite again.", json!({
            "failing_count": 0,
            "report": "..\n2 passed",
        }))]},
        "summarize_repair": {"attempts": [attempt("Writing the summary.", json!({
            "summary": SUMMARY,
        }))]},
    }))
}

/// The project at the failing commit, with the recorded session's edits in the tree.
pub(super) fn repaired_project() -> tempfile::TempDir {
    let dir = project(
        &[
            (
                "test-repair-loop.agraph.yaml",
                &example("test-repair-loop.agraph.yaml"),
            ),
            ("src/calc.py", BROKEN),
            ("tests/test_calc.py", TESTS),
            ("tests/conftest.py", CONFTEST),
        ],
        &["pytest"],
    );
    let d = dir.path();
    git(d, &["init", "-q"]);
    git(d, &["add", "src", "tests"]);
    git(d, &["commit", "-q", "-m", "failing baseline"]);
    std::fs::write(d.join("src/calc.py"), FIXED).unwrap();
    std::fs::create_dir_all(d.join("docs/internal")).unwrap();
    std::fs::write(d.join("docs/internal/test-repair-summary.md"), SUMMARY).unwrap();
    std::fs::write(d.join("c.json"), recorded_session()).unwrap();
    dir
}

#[test]
fn test_repair_loop_ends_green_after_two_iterations() {
    let dir = repaired_project();
    let d = dir.path();
    let report = run_json(
        d,
        &[
            "run",
            "test-repair-loop.agraph.yaml",
            "--cassette",
            "c.json",
        ],
        0,
    );
    assert_eq!(report["status"], "succeeded", "{report}");
    let run = run_id(&report);
    let rec = record(d, &run);
    assert_eq!(rec["status"], "succeeded");
    assert_eq!(rec["harness"]["name"], "weft");
    // The loop stopped as soon as the suite was green: two iterations, the second one's
    // diagnosis and fix skipped by the body's conditional edge.
    let repair = node(&rec, "repair_loop");
    assert_eq!(repair["status"], "succeeded", "{repair}");
    assert_eq!(repair["iterations"], 2, "{repair}");
    assert_eq!(
        scoped(&rec, "repair_loop[0].apply_fix")["status"],
        "succeeded"
    );
    assert_eq!(scoped(&rec, "repair_loop[1].diagnose")["status"], "skipped");
    assert_eq!(
        scoped(&rec, "repair_loop[1].apply_fix")["status"],
        "skipped"
    );
    // `carry`: the second iteration saw the first one's diagnosis as its param, and
    // `loop.iteration` was 1 in the first.
    let diagnose = scoped(&rec, "repair_loop[0].diagnose");
    assert_eq!(diagnose["inputs"]["iteration"], 1, "{diagnose}");
    assert_eq!(diagnose["inputs"]["previous"], "", "{diagnose}");
    // `collect` from the final iteration, `default()` for the fix it did not apply.
    assert_eq!(repair["outputs"]["remaining_failures"], 0, "{repair}");
    assert_eq!(
        repair["outputs"]["last_change"],
        "no fix applied in the final iteration"
    );
    assert_eq!(rec["outputs"]["remaining_failures"], 0);
    // The real criteria: `pytest --collect-only`, `git diff` (no test deleted) on the fix,
    // and the graph's `pytest -q` on the repaired tree.
    let fix = &scoped(&rec, "repair_loop[0].apply_fix")["attempts"][0]["success"];
    assert_eq!(criterion(fix, "still_collects")["passed"], true, "{fix}");
    assert_eq!(criterion(fix, "no_tests_removed")["passed"], true, "{fix}");
    let graph = &rec["graph_success"];
    assert_eq!(graph["passed"], true, "{graph}");
    assert_eq!(criterion(graph, "suite_green")["passed"], true, "{graph}");
}

/// The same project at the failing commit, the fix not in the tree: the recorded session
/// claims green, the real `pytest -q` of the graph's `success` says otherwise, and the run
/// fails: replayed claims do not overrule the real tools.
#[test]
fn test_repair_loop_fails_when_the_tree_is_still_broken() {
    let dir = repaired_project();
    let d = dir.path();
    std::fs::write(d.join("src/calc.py"), BROKEN).unwrap();
    let out = weft(
        d,
        &[
            "run",
            "test-repair-loop.agraph.yaml",
            "--cassette",
            "c.json",
            "--json",
        ],
    );
    assert_ne!(out.code, 0, "{}", out.stdout);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["status"], "failed", "{report}");
    let rec = record(d, &run_id(&report));
    let graph = &rec["graph_success"];
    assert_eq!(graph["passed"], false, "{graph}");
    assert_eq!(criterion(graph, "suite_green")["passed"], false, "{graph}");
}

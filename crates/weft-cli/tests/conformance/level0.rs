//! Level 0 (reader): every shipped example is clean under `--strict`, every invalid fixture
//! yields the code in its `# EXPECT:` header as an error (positioned in the source), the
//! digests of DIGEST.md §1.1 are reproduced, and the planner is deterministic and agrees
//! with hand counts (reachability, worst case, tiers, cost).

use std::path::{Path, PathBuf};

use super::shared;
use weft_ags::load::{Format, Limits, load_str};
use weft_ags::{Code, Finding, Severity, digest, plan, validate};

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

fn check(path: &Path) -> (Option<serde_json::Value>, Vec<Finding>) {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.display().to_string();
    let loaded = load_str(&name, &text, Format::from_path(path), &Limits::default());
    let mut findings = loaded.findings;
    let value = loaded.document.map(|doc| {
        findings.extend(validate::validate_document(&doc));
        doc.value
    });
    (value, findings)
}

fn render(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            format!(
                "  {} {} {} ({}:{})",
                f.severity,
                f.code,
                f.message,
                f.pointer,
                f.line.unwrap_or(0)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn examples_are_strictly_clean() -> bool {
    let mut ok = true;
    for path in files(&shared().join("examples")) {
        let (value, findings) = check(&path);
        assert!(value.is_some(), "{} did not load", path.display());
        // --strict: no error and no AGS advisory. weft's own advice (info) is allowed and
        // the examples do carry some (see docs/diagnostics.md).
        if findings.iter().any(|f| f.severity != Severity::Info) {
            eprintln!("{}:\n{}", path.display(), render(&findings));
            ok = false;
        }
    }
    ok
}

fn invalid_fixtures_report_their_code() -> bool {
    let mut ok = true;
    let dir = shared().join("conformance/invalid");
    let fixtures = files(&dir);
    assert!(fixtures.len() >= 20, "expected the 20 shipped fixtures");
    for path in fixtures {
        let text = std::fs::read_to_string(&path).unwrap();
        let expect = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# EXPECT: "))
            .and_then(|c| Code::parse(c.trim()))
            .unwrap_or_else(|| panic!("{} has no EXPECT header", path.display()));
        let (_, findings) = check(&path);
        let hit = findings
            .iter()
            .any(|f| f.code == expect && f.severity == Severity::Error);
        if !hit {
            eprintln!(
                "{}: expected {expect}, got:\n{}",
                path.display(),
                render(&findings)
            );
            ok = false;
        }
        // Every finding is positioned in the source, so the user can jump to it.
        for f in &findings {
            assert!(
                f.line.is_some(),
                "{}: {} has no line",
                path.display(),
                f.code
            );
        }
    }
    ok
}

const DIGESTS: &[(&str, &str)] = &[
    (
        "library-v1-release.agraph.json",
        "sha256-ZaKZTS3i9OBDZNnKSNF2ZI22BZmOh1CcVNM0VZGDe+A=",
    ),
    (
        "library-v1-release.agraph.yaml",
        "sha256-ZaKZTS3i9OBDZNnKSNF2ZI22BZmOh1CcVNM0VZGDe+A=",
    ),
    (
        "minimal.agraph.yaml",
        "sha256-UVrM3iZ07z2EVF96uVF7QoRcbOw9qFcZcswl3ARx0kc=",
    ),
    (
        "test-repair-loop.agraph.yaml",
        "sha256-s/bofwiJz+ChYPxrcjQ7rk/Ynsk0c0WBlz+l7gqkUxc=",
    ),
    (
        "docs-site-refresh.agraph.yaml",
        "sha256-bJXNxE1hnhAsOFMsYnD7CdoJUgSNccE3V1e7FNYc2Fo=",
    ),
    (
        "link-audit.agraph.yaml",
        "sha256-M/szuoLbr4uQS1njXRqjrHrXDjkXyrUunMBagXaRtxs=",
    ),
];

fn digests_match() -> bool {
    let vector = serde_json::json!({"b": 2, "a": 1});
    let mut ok =
        digest::graph_digest(&vector) == "sha256-QyWM/3g/5wNtikMDP4MK38YOwDc4JHNUisdCuIgpJ3c=";
    for (file, expected) in DIGESTS {
        let (value, _) = check(&shared().join("examples").join(file));
        let got = digest::graph_digest(&value.unwrap());
        if got != *expected {
            eprintln!("{file}: digest {got}, expected {expected}");
            ok = false;
        }
    }
    ok
}

fn plans_are_deterministic() -> bool {
    files(&shared().join("examples")).iter().all(|path| {
        let (value, _) = check(path);
        let root = value.unwrap();
        let root = root.as_object().unwrap();
        let a = serde_json::to_string(&plan::plan(root)).unwrap();
        let b = serde_json::to_string(&plan::plan(root)).unwrap();
        a == b
    })
}

fn library_plan() -> plan::Plan {
    let (value, _) = check(&shared().join("examples/library-v1-release.agraph.yaml"));
    plan::plan(value.unwrap().as_object().unwrap())
}

/// Unreachable nodes are found by the planner and reported by the validator (AG903).
fn reachability() -> bool {
    let doc = serde_json::json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "r", "title": "r", "objective": "o",
        "entrypoints": ["a"],
        "nodes": {"a": {"title": "A", "description": "d"}, "b": {"title": "B", "description": "d", "depends_on": ["a"]},
                  "island": {"title": "I", "description": "d"}}
    });
    let p = plan::plan(doc.as_object().unwrap());
    let unreachable = serde_json::to_value(&p.scopes[0].unreachable).unwrap();
    let warned = validate::validate(&doc)
        .iter()
        .any(|f| f.code == Code::AG903 && f.pointer == "/nodes/island");
    unreachable == serde_json::json!(["island"]) && warned
}

/// Worst-case executions multiply through retries, loops and maps: the canonical example
/// (24, checked by hand in tests/plan.rs) and a loop of a map of a retried task after an
/// entry task: 1 + loop (1 + 3 × (map 1 + 4 × 2 attempts)) = 29.
fn worst_case_executions() -> bool {
    let nested = serde_json::json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "w", "title": "w", "objective": "o",
        "entrypoints": ["start"],
        "nodes": {
            "start": {"title": "S", "description": "d"},
            "outer": {"type": "loop", "title": "L", "description": "d", "depends_on": ["start"],
                "loop": {"mode": "repeat", "max_iterations": 3, "body": {"entrypoints": ["fan"], "nodes": {
                    "fan": {"type": "map", "title": "M", "description": "d",
                        "map": {"over": "[1, 2, 3, 4]", "as": "x", "max_items": 4, "body": {"entrypoints": ["work"], "nodes": {
                            "work": {"title": "W", "description": "d", "failure": {"retry": {"max_attempts": 2}}}
                        }}}}
                }}}}
        }
    });
    let p = plan::plan(nested.as_object().unwrap());
    library_plan().worst_case_executions == 24 && p.worst_case_executions == 29
}

/// The tier histogram of the canonical example (counted by hand from the document).
fn tier_histogram() -> bool {
    let t = library_plan().tiers;
    (t.minimal, t.standard, t.advanced, t.frontier, t.unset) == (2, 4, 3, 1, 0)
}

/// Its cost projection: eleven estimates summing to $27.00; retries give $60.30 at worst,
/// over the $25 ceiling.
fn cost_estimate() -> bool {
    let c = library_plan().cost;
    c.expected_usd == 27.0 && c.worst_case_usd == 60.3 && c.exceeds_ceiling == Some(true)
}

/// The level-0 tokens: the three every level requires, then the reader extras.
pub fn checks() -> Vec<(&'static str, bool)> {
    vec![
        ("all-valid-fixtures", examples_are_strictly_clean()),
        (
            "all-invalid-diagnostics",
            invalid_fixtures_report_their_code(),
        ),
        ("rfc8785-digests", digests_match()),
        ("deterministic-topological-plan", plans_are_deterministic()),
        ("reachability", reachability()),
        ("worst-case-executions", worst_case_executions()),
        ("tier-histogram", tier_histogram()),
        ("cost-estimate", cost_estimate()),
    ]
}

//! `docs-site-refresh` with its child `link-audit` end to end: a small MkDocs site whose
//! two stale pages the recorded session refreshed (`refresh_pages`, a map of two items),
//! whose link audit (`link_audit`, a subgraph `ref` to the copied `link-audit.agraph.yaml`
//! with `expected_id`) found one broken link that `fix_links` repaired, and which
//! `verify_and_publish` (a subgraph `use` of the `publish_checks` fragment) built. Replay
//! does not redo the session's edits, so the tree holds them; the criteria run the real
//! `mkdocs build --strict` (which writes `site/`, then checked by `check_build`) and the real
//! `python scripts/check_links.py docs`.
//!
//! The graph's `success` also asks for `owner_signoff`, a graph-level `human` criterion:
//! once everything else has run and the graph's other criteria pass, the run waits for the
//! documentation owner (exit 3, `weft approve RUN success/owner_signoff`), and `weft resume`
//! finishes it `succeeded` (`docs/engine.md` §4b).

use serde_json::json;

use super::kit::{
    act, attempt, cassette, criterion, example, node, project, record, run_id, run_json, scoped,
    weft,
};

const MKDOCS: &str = "site_name: Example library\ndocs_dir: docs\nsite_dir: site\n";
const INDEX: &str = "# Example library\n\nYou install it with `pip install example`. Read the [guide](guide.md) next.\n";
const GUIDE: &str =
    "# Guide\n\nYou call `example.run()` to start. Back to the [home page](index.md).\n";
const REFERENCE: &str =
    "# Reference\n\n`example.run(timeout=30)` returns the result. See the [guide](guide.md).\n";
const CHECK_LINKS: &str = r#"import pathlib, re, sys

root = pathlib.Path(sys.argv[1])
broken = []
for page in sorted(root.rglob("*.md")):
    for target in re.findall(r"\]\(([^)#:]+\.md)\)", page.read_text()):
        if not (page.parent / target).is_file():
            broken.append(f"{page}: {target}")
print("\n".join(broken) or "no broken links")
sys.exit(1 if broken else 0)
"#;
const STALENESS: &str = "# Documentation staleness inventory\n\n| page | what is stale | severity |\n| --- | --- | --- |\n| docs/guide.md | `example.start()` was renamed `example.run()` in 0.9; the guide still says start | high |\n| docs/reference.md | `run` gained a `timeout` argument (default 30 s) that the reference does not mention, and it links to the removed old-guide page | medium |\n\nEvery other page was compared with the code it describes and is current.\n";
const AUDIT: &str = "# Link audit\n\nOne broken internal link, on a page changed this cycle:\n\n- docs/reference.md links to `old-guide.md`, which no longer exists. Suggested fix: point it at `guide.md`, which replaced it.\n\nAll other internal links resolve. No external links were found.\n";

pub(super) fn recorded_session() -> String {
    let pages = json!([
        {"path": "docs/guide.md", "reason": "`example.start()` is now `example.run()`", "severity": "high"},
        {"path": "docs/reference.md", "reason": "`run` gained `timeout`", "severity": "medium"},
    ]);
    let broken = json!([{"url": "old-guide.md", "source_page": "docs/reference.md",
        "reason": "the target does not exist", "suggestion": "guide.md"}]);
    let mut nodes = json!({
        "inventory_pages": {"attempts": [attempt("Comparing docs with the code.", json!({
            "pages": pages, "inventory": STALENESS}))]},
        "link_audit.crawl_links": {"attempts": [attempt("Walking the site.", json!({
            "links": [
                {"url": "guide.md", "source_page": "docs/index.md", "kind": "internal"},
                {"url": "old-guide.md", "source_page": "docs/reference.md", "kind": "internal"},
            ]}))]},
        "link_audit.check_links": {"attempts": [attempt("Resolving the links.", json!({
            "broken_links": broken, "audit_report": AUDIT}))]},
        "fix_links": {"attempts": [attempt("Fixing docs/reference.md.", json!({
            "fixes": "docs/reference.md: `old-guide.md` now points at `guide.md`."}))]},
        "verify_and_publish.build_site": {"attempts": [attempt("Running mkdocs build.", json!({
            "build_log": "INFO - Building documentation...\nINFO - Documentation built"}))]},
        "verify_and_publish.check_build": {"attempts": [attempt("Checking site/.", json!({
            "verdict": "site/index.html exists; every page is non-empty."}))]},
    });
    for (i, page) in ["docs/guide.md", "docs/reference.md"].iter().enumerate() {
        nodes[format!("refresh_pages[{i}].refresh_page")] = json!({"attempts": [attempt(
            "Rewriting the page.",
            json!({"summary": format!("{page}: brought in line with the code."),
                   "updated_path": page}),
        )]});
    }
    cassette(nodes)
}

pub(super) fn refreshed_site() -> tempfile::TempDir {
    let dir = project(
        &[
            (
                "docs-site-refresh.agraph.yaml",
                &example("docs-site-refresh.agraph.yaml"),
            ),
            ("link-audit.agraph.yaml", &example("link-audit.agraph.yaml")),
            ("mkdocs.yml", MKDOCS),
            ("docs/index.md", INDEX),
            ("docs/guide.md", GUIDE),
            ("docs/reference.md", REFERENCE),
            ("docs/internal/docs-staleness.md", STALENESS),
            ("docs/internal/link-audit.md", AUDIT),
            ("scripts/check_links.py", CHECK_LINKS),
        ],
        &["mkdocs", "python"],
    );
    std::fs::write(dir.path().join("c.json"), recorded_session()).unwrap();
    dir
}

#[test]
fn docs_site_refresh_ends_succeeded_after_the_owners_signoff() {
    let dir = refreshed_site();
    let d = dir.path();
    let waiting = run_json(
        d,
        &[
            "run",
            "docs-site-refresh.agraph.yaml",
            "--cassette",
            "c.json",
        ],
        3,
    );
    assert_eq!(waiting["status"], "awaiting_human", "{waiting}");
    let wait = &waiting["waiting"][0];
    assert_eq!(wait["node"], "success/owner_signoff", "{waiting}");
    assert_eq!(wait["stage"], "graph_success", "{waiting}");
    assert_eq!(wait["roles"], json!(["docs-owner"]), "{waiting}");
    let run = run_id(&waiting);
    let rec = record(d, &run);
    assert_eq!(rec["status"], "awaiting_human");
    for id in [
        "inventory_pages",
        "refresh_pages",
        "link_audit",
        "fix_links",
        "verify_and_publish",
    ] {
        assert_eq!(
            node(&rec, id)["status"],
            "succeeded",
            "{id}: {}",
            node(&rec, id)
        );
    }
    // The map: two items, collected in input order.
    let map = node(&rec, "refresh_pages");
    assert_eq!(map["items"], 2, "{map}");
    assert_eq!(
        map["outputs"]["updated_paths"],
        json!(["docs/guide.md", "docs/reference.md"])
    );
    assert_eq!(
        scoped(&rec, "refresh_pages[1].refresh_page")["inputs"]["position"],
        1
    );
    // The `ref` child: its own record, naming its parent, valid against the schema.
    let audit = node(&rec, "link_audit");
    let child_id = audit["child_run_id"].as_str().expect("a child run id");
    let child = record(d, child_id);
    assert_eq!(child["parent_run_id"], run.as_str(), "{child}");
    assert_eq!(child["graph_id"], "examples/link-audit");
    assert_eq!(child["status"], "succeeded", "{child}");
    assert_eq!(
        child["params"]["changed_pages"],
        json!(["docs/guide.md", "docs/reference.md"])
    );
    // Conditional routing on the child's output: one broken link, so `fix_links` ran and
    // its real re-check passed on the repaired tree.
    let fixes = &node(&rec, "fix_links")["attempts"][0]["success"];
    assert_eq!(criterion(fixes, "recheck_clean")["passed"], true, "{fixes}");
    // The `use` fragment built the site for real.
    assert!(d.join("site/index.html").is_file());
    let build = &scoped(&rec, "verify_and_publish.build_site")["attempts"][0]["success"];
    assert_eq!(
        criterion(build, "build_succeeds")["passed"],
        true,
        "{build}"
    );
    // A role the criterion does not list cannot sign off; the owner can.
    let refused = weft(
        d,
        &[
            "approve",
            &run,
            "success/owner_signoff",
            "--as",
            "eve",
            "--role",
            "intern",
        ],
    );
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    act(
        d,
        &[
            "approve",
            &run,
            "success/owner_signoff",
            "--as",
            "dana",
            "--role",
            "docs-owner",
        ],
    );
    let done = run_json(d, &["resume", &run, "--cassette", "c.json"], 0);
    assert_eq!(done["status"], "succeeded", "{done}");
    let rec = record(d, &run);
    assert_eq!(rec["status"], "succeeded");
    // The graph's own criteria: the real build and link check, and the owner's sign-off.
    let graph = &rec["graph_success"];
    assert_eq!(graph["passed"], true, "{graph}");
    assert_eq!(criterion(graph, "builds_clean")["passed"], true, "{graph}");
    assert_eq!(
        criterion(graph, "no_broken_links")["passed"],
        true,
        "{graph}"
    );
    assert_eq!(criterion(graph, "owner_signoff")["passed"], true, "{graph}");
    let signoff = &rec["x-weft-signoffs"][0];
    assert_eq!(signoff["criterion"], "owner_signoff", "{signoff}");
    assert_eq!(signoff["actor"], "dana", "{signoff}");
    assert_eq!(signoff["outcome"], "approved", "{signoff}");
}

/// The owner rejects: the criterion fails, and so does the run, every node kept.
#[test]
fn docs_site_refresh_fails_when_the_owner_rejects() {
    let dir = refreshed_site();
    let d = dir.path();
    let waiting = run_json(
        d,
        &[
            "run",
            "docs-site-refresh.agraph.yaml",
            "--cassette",
            "c.json",
        ],
        3,
    );
    let run = run_id(&waiting);
    act(
        d,
        &[
            "reject",
            &run,
            "success/owner_signoff",
            "--as",
            "dana",
            "--role",
            "docs-owner",
        ],
    );
    let out = weft(d, &["resume", &run, "--cassette", "c.json", "--json"]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    let rec = record(d, &run);
    assert_eq!(rec["status"], "failed");
    let graph = &rec["graph_success"];
    assert_eq!(
        criterion(graph, "owner_signoff")["passed"],
        false,
        "{graph}"
    );
    assert_eq!(node(&rec, "verify_and_publish")["status"], "succeeded");
}

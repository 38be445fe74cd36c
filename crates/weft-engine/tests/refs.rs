//! Local subgraph references: the shipped parent/child pair loads; every rule that keeps a
//! hostile plan from reaching outside its project or looping is enforced, each problem
//! positioned at the `ref` in the file that holds it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

use std::path::{Path, PathBuf};

use weft_engine::refs::{RefOptions, RefProblem, load_refs};

fn read(path: &Path) -> weft_ags::load::Document {
    weft_ags::load::read_file(path, &weft_ags::load::Limits::default())
        .unwrap()
        .document
        .unwrap()
}

/// A valid plan with one task, `params` as given (YAML text, may be empty), and extra
/// nodes (YAML text at node indentation).
fn plan(id: &str, params: &str, extra_nodes: &str) -> String {
    format!(
        "ags_version: \"1.0\"
kind: AgenticGraph
id: {id}
title: T
objective: Test references.
constraints: {{max_cost_usd: 1}}
{params}
entrypoints: [a]
nodes:
  a:
    title: A
    description: Write the release notes from the changelog, citing each merged pull request.
{extra_nodes}"
    )
}

fn sub(name: &str, reference: &str, params: &str) -> String {
    format!(
        "  {name}:
    type: subgraph
    title: S
    description: Run the child plan and report what it produced, for the parent to use.
    depends_on: [a]
    subgraph:
      ref: {reference}
{params}"
    )
}

struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        Project {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
    fn load(&self, name: &str) -> Result<Vec<weft_engine::refs::ChildRef>, Vec<RefProblem>> {
        let path = self.dir.path().join(name);
        load_refs(&path, &read(&path), &RefOptions::new(self.dir.path()))
    }
    fn problems(&self, name: &str) -> Vec<RefProblem> {
        self.load(name).expect_err("problems expected")
    }
}

fn one(problems: &[RefProblem], code: Option<&str>, needle: &str) -> RefProblem {
    let hits: Vec<&RefProblem> = problems
        .iter()
        .filter(|p| p.code.as_deref() == code && p.message.contains(needle))
        .collect();
    assert_eq!(hits.len(), 1, "{problems:#?}");
    hits[0].clone()
}

#[test]
fn the_shipped_parent_loads_its_child() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/ags/examples");
    let parent = examples.join("docs-site-refresh.agraph.yaml");
    let children = load_refs(&parent, &read(&parent), &RefOptions::new(&examples)).unwrap();
    assert_eq!(children.len(), 1);
    let child = &children[0];
    assert_eq!(child.uri, "./link-audit.agraph.yaml");
    assert_eq!(child.document["id"], "examples/link-audit");
    assert_eq!(
        child.digest,
        "sha256-M/szuoLbr4uQS1njXRqjrHrXDjkXyrUunMBagXaRtxs="
    );
    assert!(child.children.is_empty());
}

#[test]
fn pinned_ids_and_digests_are_checked() {
    let p = Project::new();
    p.write("child.agraph.yaml", &plan("child", "", ""));
    let good = weft_ags::digest::graph_digest(&read(&p.dir.path().join("child.agraph.yaml")).value);
    p.write(
        "ok.agraph.yaml",
        &plan(
            "parent",
            "",
            &sub(
                "s",
                &format!("{{uri: ./child.agraph.yaml, expected_id: child, integrity: \"{good}\"}}"),
                "",
            ),
        ),
    );
    assert_eq!(p.load("ok.agraph.yaml").unwrap()[0].digest, good);

    p.write(
        "bad.agraph.yaml",
        &plan(
            "parent",
            "",
            &sub(
                "s",
                "{uri: ./child.agraph.yaml, expected_id: someone-else, integrity: \"sha256-AAAA\"}",
                "",
            ),
        ),
    );
    let problems = p.problems("bad.agraph.yaml");
    assert_eq!(problems.len(), 2, "{problems:#?}");
    let id = one(
        &problems,
        Some("RT052"),
        "has id `child`, expected `someone-else`",
    );
    assert!(id.file.ends_with("bad.agraph.yaml"));
    assert_eq!(id.pointer, "/nodes/s/subgraph/ref/expected_id");
    assert_eq!((id.line, id.column), (19, 39), "{id}");
    let digest = one(&problems, Some("RT051"), "not the pinned sha256-AAAA");
    assert!(
        digest
            .help
            .as_deref()
            .unwrap()
            .contains("weft digest child.agraph.yaml")
    );
    assert!(
        digest.to_string().contains("bad.agraph.yaml:19:"),
        "{digest}"
    );
}

#[test]
fn remote_escaping_and_missing_references_are_refused() {
    let p = Project::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("x.agraph.yaml"),
        plan("outside", "", ""),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("x.agraph.yaml"),
        p.dir.path().join("link.agraph.yaml"),
    )
    .unwrap();
    let far = outside.path().join("x.agraph.yaml");
    let nodes = [
        sub(
            "remote",
            "{uri: \"https://example.org/x.agraph.yaml\", integrity: \"sha256-AAAA\"}",
            "",
        ),
        sub("up", &format!("{{uri: \"{}\"}}", far.display()), ""),
        sub("linked", "{uri: ./link.agraph.yaml}", ""),
        sub("missing", "{uri: ./nope.agraph.yaml}", ""),
    ]
    .concat();
    p.write("parent.agraph.yaml", &plan("parent", "", &nodes));
    let problems = p.problems("parent.agraph.yaml");
    assert_eq!(problems.len(), 4, "{problems:#?}");
    one(&problems, Some("WF101"), "is not a local file");
    let at = |node: &str| -> Vec<&RefProblem> {
        problems
            .iter()
            .filter(|x| x.pointer == format!("/nodes/{node}/subgraph/ref/uri"))
            .collect()
    };
    assert!(
        at("up")[0]
            .message
            .contains("outside the project directory")
    );
    assert_eq!(at("up")[0].code.as_deref(), Some("WF103"));
    let linked: Vec<_> = problems
        .iter()
        .filter(|x| x.pointer.starts_with("/nodes/linked"))
        .collect();
    assert_eq!(linked.len(), 1);
    assert!(
        linked[0].message.contains("outside the project"),
        "{linked:?}"
    );
    assert_eq!(linked[0].code.as_deref(), Some("WF103"));
    one(&problems, Some("WF102"), "cannot be read");
}

#[test]
fn recursion_through_files_is_ag131_with_the_chain() {
    let p = Project::new();
    p.write(
        "a.agraph.yaml",
        &plan("a", "", &sub("to_b", "{uri: ./sub/b.agraph.yaml}", "")),
    );
    p.write(
        "sub/b.agraph.yaml",
        &plan("b", "", &sub("to_a", "{uri: ../a.agraph.yaml}", "")),
    );
    let problems = p.problems("a.agraph.yaml");
    let cycle = one(&problems, Some("AG131"), "recursive subgraph reference");
    assert!(
        cycle
            .message
            .ends_with("a.agraph.yaml -> sub/b.agraph.yaml -> a.agraph.yaml"),
        "{cycle}"
    );
    assert!(cycle.file.ends_with("sub/b.agraph.yaml"));
}

#[test]
fn nesting_depth_and_total_references_are_bounded() {
    let p = Project::new();
    // d0 -> d1 -> d2 -> d3 with max_subgraph_depth 2 at the top.
    let top = plan("d0", "", &sub("next", "{uri: ./d1.agraph.yaml}", "")).replace(
        "constraints: {max_cost_usd: 1}",
        "constraints: {max_cost_usd: 1, max_subgraph_depth: 2}",
    );
    p.write("d0.agraph.yaml", &top);
    p.write(
        "d1.agraph.yaml",
        &plan("d1", "", &sub("next", "{uri: ./d2.agraph.yaml}", "")),
    );
    p.write(
        "d2.agraph.yaml",
        &plan("d2", "", &sub("next", "{uri: ./d3.agraph.yaml}", "")),
    );
    p.write("d3.agraph.yaml", &plan("d3", "", ""));
    let problems = p.problems("d0.agraph.yaml");
    // Reported where d1 names d2: d2 is entered at depth 2, and its own `ref` is a third
    // subgraph scope.
    let deep = one(
        &problems,
        Some("WF104"),
        "`./d2.agraph.yaml` nests subgraph, loop and map scopes 3 deep here (`next` inside it)",
    );
    assert!(deep.file.ends_with("d1.agraph.yaml"));

    // A fan-out bomb: each level names the next one 20 times.
    let fan = |next: &str| {
        (0..20)
            .map(|i| sub(&format!("s{i}"), &format!("{{uri: ./{next}}}"), ""))
            .collect::<String>()
    };
    p.write("f0.agraph.yaml", &plan("f0", "", &fan("f1.agraph.yaml")));
    p.write("f1.agraph.yaml", &plan("f1", "", &fan("f2.agraph.yaml")));
    p.write("f2.agraph.yaml", &plan("f2", "", &fan("f3.agraph.yaml")));
    p.write("f3.agraph.yaml", &plan("f3", "", ""));
    let problems = p.problems("f0.agraph.yaml");
    one(
        &problems,
        Some("WF105"),
        "more than 256 subgraph references",
    );
}

#[test]
fn params_must_match_what_the_child_declares_and_child_errors_point_into_the_child() {
    let p = Project::new();
    p.write(
        "child.agraph.yaml",
        &plan(
            "child",
            "params:\n  site: {type: string, description: The site.}\n  depth: {type: integer, description: How deep., default: 2}",
            "",
        ),
    );
    p.write(
        "parent.agraph.yaml",
        &plan(
            "parent",
            "",
            &sub(
                "s",
                "{uri: ./child.agraph.yaml}",
                "      params:\n        sitee: \"'x'\"\n",
            ),
        ),
    );
    let problems = p.problems("parent.agraph.yaml");
    assert_eq!(problems.len(), 2, "{problems:#?}");
    let typo = one(&problems, Some("AG203"), "declares no param `sitee`");
    assert!(typo.help.as_deref().unwrap().contains("site, depth"));
    one(&problems, Some("AG301"), "requires param `site`");

    p.write(
        "broken.agraph.yaml",
        "ags_version: \"1.0\"\nkind: AgenticGraph\nid: broken\n",
    );
    p.write(
        "uses-broken.agraph.yaml",
        &plan("p2", "", &sub("s", "{uri: ./broken.agraph.yaml}", "")),
    );
    let problems = p.problems("uses-broken.agraph.yaml");
    assert!(!problems.is_empty());
    assert!(
        problems
            .iter()
            .all(|x| x.file.ends_with("broken.agraph.yaml") && x.code.as_deref() == Some("AG001")),
        "{problems:#?}"
    );
}

/// A loop node named `name`, depending on `a`, whose body is `body_nodes` (YAML, indented
/// for the body's `nodes:`) entered at `entry`.
fn loop_of(name: &str, entry: &str, body_nodes: &str) -> String {
    format!(
        "  {name}:
    type: loop
    title: L
    description: Repeat the body once, so its nodes nest one scope deeper than this one.
    depends_on: [a]
    loop:
      mode: repeat
      max_iterations: 1
      body:
        entrypoints: [{entry}]
        nodes:
{body_nodes}"
    )
}

/// `text` with every line indented by `by` spaces.
fn indent(text: &str, by: usize) -> String {
    text.lines()
        .map(|l| format!("{}{l}\n", " ".repeat(by)))
        .collect()
}

#[test]
fn nesting_depth_adds_inline_scopes_across_a_ref() {
    // DIGEST §1.5: max_subgraph_depth caps "subgraph, loop and map scopes" together. A ref
    // inside a loop starts its child two scopes down; a loop inside the child is the third.
    let p = Project::new();
    let body = "          sub:
            type: subgraph
            title: S
            description: Run the child plan and report what it produced, for the loop to use.
            subgraph:
              ref: {uri: ./child.agraph.yaml}
";
    let parent = |max: u64| {
        plan("parent", "", &loop_of("outer", "sub", body)).replace(
            "constraints: {max_cost_usd: 1}",
            &format!("constraints: {{max_cost_usd: 1, max_subgraph_depth: {max}}}"),
        )
    };
    let inner = indent(
        "step:
  title: Step
  description: Write the release notes from the changelog, citing each merged pull request.
",
        10,
    );
    p.write(
        "child.agraph.yaml",
        &plan("child", "", &loop_of("again", "step", &inner)),
    );

    p.write("deep.agraph.yaml", &parent(2));
    let problems = p.problems("deep.agraph.yaml");
    let deep = one(
        &problems,
        Some("WF104"),
        "nests subgraph, loop and map scopes 3 deep here (`again` inside it); constraints.max_subgraph_depth is 2",
    );
    assert!(deep.file.ends_with("deep.agraph.yaml"), "{deep}");
    assert_eq!(
        deep.pointer,
        "/nodes/outer/loop/body/nodes/sub/subgraph/ref/uri"
    );

    // The same documents with room for three scopes load.
    p.write("roomy.agraph.yaml", &parent(3));
    let children = p
        .load("roomy.agraph.yaml")
        .expect("three scopes fit a limit of 3");
    assert_eq!(children.len(), 1);
}

//! Decisions end to end: graph ∩ node ∩ operator policy, first match wins, default deny,
//! normalisation before rules, and approval bindings that change with any bound part.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure"
)]

use serde_json::{Value, json};
use weft_policy::{
    Action, Context, Identity, OperatorPolicy, Source, Verdict, Workspace, decide, node_grants,
};

const POLICY: &str = r#"
[policy]
version = "t1"
[[policy.rules]]
decision = "deny"
permission = "fs:*:.git/**"
reason = "repository metadata is off limits"
[[policy.rules]]
decision = "allow"
permission = "fs:*"
[[policy.rules]]
decision = "ask"
permission = "shell:exec:*"
[[policy.rules]]
decision = "allow"
permission = "net:fetch:https://*.pypi.org"
"#;

fn action(v: Value) -> Action {
    serde_json::from_value(v).unwrap()
}

fn me() -> Identity {
    Identity {
        subject: "ana".into(),
        session: None,
    }
}

fn run(v: Value, node: Option<(&Value, &str)>, policy: &OperatorPolicy) -> weft_policy::Decision {
    let ws = Workspace::new("/w").unwrap();
    let grants = node.map(|(doc, id)| node_grants(doc, id).unwrap());
    let id = me();
    decide(
        &action(v),
        &Context {
            workspace: &ws,
            policy,
            node: grants.as_ref(),
            identity: &id,
        },
    )
}

fn policy() -> OperatorPolicy {
    OperatorPolicy::from_toml(POLICY).unwrap()
}

#[test]
fn the_first_matching_rule_wins() {
    let d = run(
        json!({"scope": "fs", "action": "write", "target": "a/../.git/config"}),
        None,
        &policy(),
    );
    assert_eq!(d.decision, Verdict::Deny);
    assert_eq!(d.reason, "repository metadata is off limits");
    assert!(matches!(d.source, Source::Rule { index: 0, .. }));
    assert_eq!(d.resource.unwrap().target.as_deref(), Some(".git/config"));
    let d = run(
        json!({"scope": "fs", "action": "write", "target": "src/x.rs"}),
        None,
        &policy(),
    );
    assert_eq!(d.decision, Verdict::Allow);
    assert!(matches!(d.source, Source::Rule { index: 1, .. }));
}

#[test]
fn no_matching_rule_is_a_deny() {
    let d = run(
        json!({"scope": "net", "action": "fetch", "target": "https://evil.org"}),
        None,
        &policy(),
    );
    assert_eq!(d.decision, Verdict::Deny);
    assert_eq!(d.source, Source::Default);
    let empty = OperatorPolicy::from_toml("").unwrap();
    let d = run(
        json!({"scope": "fs", "action": "read", "target": "a"}),
        None,
        &empty,
    );
    assert_eq!(d.decision, Verdict::Deny);
}

#[test]
fn an_escaping_path_is_denied_before_any_rule_so_it_cannot_be_approved() {
    let allow_all =
        OperatorPolicy::from_toml("[[policy.rules]]\ndecision = \"ask\"\npermission = \"fs:*\"\n")
            .unwrap();
    let d = run(
        json!({"scope": "fs", "action": "read", "target": "../../home/u/.ssh/id_rsa"}),
        None,
        &allow_all,
    );
    assert_eq!(d.decision, Verdict::Deny);
    assert_eq!(d.source, Source::Resource);
    assert!(d.approval.is_none());
}

#[test]
fn the_node_and_its_containers_are_intersected_with_the_policy() {
    let doc = json!({"nodes": {
        "w": {"type": "task", "requirements": {"permissions": ["fs:read:**", "fs:write:docs/**"], "workspace": "read_write"}},
        "l": {"type": "loop", "requirements": {"permissions": ["fs:read:src/**"]}, "loop": {"body": {"nodes": {
            "i": {"type": "task", "requirements": {"permissions": ["fs:read:**"]}}
        }}}}
    }});
    // The policy allows all fs, the node only docs/**.
    let d = run(
        json!({"scope": "fs", "action": "write", "target": "docs/a.md"}),
        Some((&doc, "w")),
        &policy(),
    );
    assert_eq!(d.decision, Verdict::Allow);
    assert_eq!(d.covered_by, ["fs:write:docs/**"]);
    let d = run(
        json!({"scope": "fs", "action": "write", "target": "src/a.rs"}),
        Some((&doc, "w")),
        &policy(),
    );
    assert_eq!((d.decision, d.source), (Verdict::Deny, Source::Node));
    // The inner node asks for everything; its loop only grants src/**.
    let d = run(
        json!({"scope": "fs", "action": "read", "target": "README.md"}),
        Some((&doc, "i")),
        &policy(),
    );
    assert_eq!(d.decision, Verdict::Deny);
    assert_eq!(
        d.source,
        Source::Graph {
            holder: "container 'l'".into()
        }
    );
    let d = run(
        json!({"scope": "fs", "action": "read", "target": "src/lib.rs"}),
        Some((&doc, "i")),
        &policy(),
    );
    assert_eq!(d.decision, Verdict::Allow);
    // The node allows, the policy does not.
    let d = run(
        json!({"scope": "fs", "action": "write", "target": "docs/.git/x"}),
        Some((&doc, "w")),
        &policy(),
    );
    assert_eq!(d.decision, Verdict::Allow, "docs/.git/x is not .git/**");
    let d = run(
        json!({"scope": "fs", "action": "write", "target": "docs/../.git/x"}),
        Some((&doc, "w")),
        &policy(),
    );
    assert_eq!((d.decision, d.source), (Verdict::Deny, Source::Node));
}

#[test]
fn ask_binds_the_exact_action() {
    let base = json!({"scope": "shell", "action": "exec", "target": "pytest -q", "tool": "shell_exec", "arguments": {"cwd": "."}});
    let d = run(base.clone(), None, &policy());
    assert_eq!(d.decision, Verdict::Ask);
    let digest = d.approval.unwrap().digest;
    assert!(digest.starts_with("sha256:"));
    // Same action written differently: same normalised resource, same binding.
    let spaced = json!({"scope": "shell", "action": "exec", "argv": ["pytest", "-q"], "tool": "shell_exec", "arguments": {"cwd": ".", "approved": true}});
    assert_eq!(
        run(spaced, None, &policy()).approval.unwrap().digest,
        digest
    );
    // A changed argument, command, tool or policy version: a new approval is needed.
    let mut changed = base.clone();
    changed["arguments"]["cwd"] = json!("src");
    assert_ne!(
        run(changed, None, &policy()).approval.unwrap().digest,
        digest
    );
    let mut changed = base.clone();
    changed["target"] = json!("pytest -x");
    assert_ne!(
        run(changed, None, &policy()).approval.unwrap().digest,
        digest
    );
    let mut changed = base.clone();
    changed["tool"] = json!("other");
    assert_ne!(
        run(changed, None, &policy()).approval.unwrap().digest,
        digest
    );
    let edited =
        OperatorPolicy::from_toml(&POLICY.replace("version = \"t1\"", "version = \"t2\"")).unwrap();
    assert_ne!(run(base, None, &edited).approval.unwrap().digest, digest);
}

#[test]
fn a_directory_rule_covers_the_directory_itself_and_every_spelling_of_it() {
    let p = policy();
    let verdict = |target: &str| {
        run(
            json!({"scope": "fs", "action": "write", "target": target}),
            None,
            &p,
        )
        .decision
    };
    // `.git/**` is about `.git` too: removing or replacing the directory is refused.
    for target in [
        ".git",
        ".git/config",
        ".GIT/config",
        ".Git",
        ".\u{FF47}\u{FF49}\u{FF54}/config",
        ".g\u{200B}it/config",
        ".git\u{FEFF}/hooks/pre-commit",
    ] {
        assert_eq!(verdict(target), Verdict::Deny, "{target:?}");
    }
    // Controls: a name that only shares a prefix, and ordinary files, are allowed.
    for target in [".github/workflows/ci.yml", ".gitignore", "src/git.rs"] {
        assert_eq!(verdict(target), Verdict::Allow, "{target:?}");
    }
}

#[test]
fn folding_never_widens_an_allow_rule() {
    let p = OperatorPolicy::from_toml(
        "[policy]\n[[policy.rules]]\ndecision = \"allow\"\npermission = \"fs:write:docs/**\"\n",
    )
    .unwrap();
    let verdict = |target: &str| {
        run(
            json!({"scope": "fs", "action": "write", "target": target}),
            None,
            &p,
        )
        .decision
    };
    assert_eq!(verdict("docs/a.md"), Verdict::Allow);
    assert_eq!(verdict("DOCS/a.md"), Verdict::Deny);
    assert_eq!(verdict("\u{FF44}ocs/a.md"), Verdict::Deny);
}

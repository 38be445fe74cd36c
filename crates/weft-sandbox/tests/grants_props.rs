//! Property test of permissions → confinement: every read and write root the OS sandbox gets
//! lies inside a root that the node *and* each container around it grant (intersection,
//! never union), and a `read_only` node gets no write root.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure"
)]

use proptest::prelude::*;
use serde_json::json;
use weft_policy::{Workspace, node_grants};
use weft_sandbox::from_grants::{confinement, literal_prefix};

fn glob() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![Just("a"), Just("b"), Just("c"), Just("*"), Just("**")],
        1..4,
    )
    .prop_map(|segs| segs.join("/"))
}

fn perms() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        (prop_oneof![Just("read"), Just("write")], glob()).prop_map(|(a, g)| format!("fs:{a}:{g}")),
        0..4,
    )
}

fn within(path: &str, root: &str) -> bool {
    root == "." || path == root || path.starts_with(&format!("{root}/"))
}

fn roots_of(perms: &[String], action: &str) -> Vec<String> {
    perms
        .iter()
        .filter_map(|p| p.strip_prefix(&format!("fs:{action}:")))
        .map(literal_prefix)
        .collect()
}

proptest! {
    #[test]
    fn confinement_roots_lie_inside_every_layer(node in perms(), outer in perms(), rw in any::<bool>()) {
        let workspace = if rw { "read_write" } else { "read_only" };
        let doc = json!({"nodes": {"l": {"type": "loop",
            "requirements": {"permissions": outer, "workspace": "read_write"},
            "loop": {"body": {"nodes": {"n": {"type": "task",
                "requirements": {"permissions": node, "workspace": workspace}}}}}}}});
        let grants = node_grants(&doc, "n").unwrap();
        let c = confinement(&Workspace::new("/w").unwrap(), &grants);
        for (roots, action) in [(&c.read_roots, "read"), (&c.write_roots, "write")] {
            for root in roots {
                let rel = root.strip_prefix("/w").unwrap().to_str().unwrap().trim_start_matches('/');
                let rel = if rel.is_empty() { "." } else { rel };
                for layer in [&node, &outer] {
                    let granted = roots_of(layer, action);
                    prop_assert!(granted.iter().any(|g| within(rel, g)), "{rel} not inside {granted:?}");
                }
            }
        }
        if !rw {
            prop_assert!(c.write_roots.is_empty());
        }
    }
}

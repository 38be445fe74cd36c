//! The file tools on real files through the `Toolbox`: each tool's happy path, argument
//! checks, denials by the node's grants and by an operator rule, `ask` and approvals bound to
//! the exact call, forged approvals ignored, `..` and symlink escapes refused, and journal
//! replay of side-effecting calls.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure"
)]

mod common;

use common::{Fixture, failed, ok};
use serde_json::json;
use weft_core::FailureClass;
use weft_policy::{Source, Verdict};
use weft_tools::{Journal, ToolOutcome};

#[tokio::test]
async fn file_read_returns_a_window_with_truncation_and_lossy_utf8() {
    let f = Fixture::writer();
    f.put("src/a.txt", "hello world");
    let r = f.call("file_read", json!({"path": "src/a.txt"})).await;
    let r = ok(&r);
    assert_eq!(r["content"], "hello world");
    assert_eq!(r["truncated"], false);
    let r = f
        .call(
            "file_read",
            json!({"path": "./src/a.txt", "offset": 6, "limit": 3}),
        )
        .await;
    let r = ok(&r);
    assert_eq!(
        (r["content"].as_str(), r["truncated"].as_bool()),
        (Some("wor"), Some(true))
    );
    assert_eq!(
        (r["path"].as_str(), r["size"].as_u64()),
        (Some("src/a.txt"), Some(11))
    );
    std::fs::write(f.path("bin"), [b'a', 0xff, b'b']).unwrap();
    let r = f.call("file_read", json!({"path": "bin"})).await;
    assert_eq!(ok(&r)["content"], "a\u{fffd}b");
    let missing = f.call("file_read", json!({"path": "missing"})).await;
    let (class, message) = failed(&missing);
    assert_eq!(class, FailureClass::ToolError);
    assert!(message.contains("missing"), "{message}");
    // The model is told the class as AGS spells it.
    let (told, is_error) = missing.to_model();
    assert!(is_error);
    assert_eq!(told["error"], "tool_error");
}

#[tokio::test]
async fn file_write_creates_parent_directories_and_file_edit_replaces_exact_text() {
    let mut f = Fixture::writer();
    let r = f
        .call(
            "file_write",
            json!({"path": "out/deep/x.txt", "content": "a b a"}),
        )
        .await;
    assert_eq!(ok(&r)["bytes"], 5);
    assert_eq!(f.get("out/deep/x.txt"), "a b a");
    f.next();
    let two = f
        .call(
            "file_edit",
            json!({"path": "out/deep/x.txt", "old": "a", "new": "c"}),
        )
        .await;
    let (class, message) = failed(&two);
    assert_eq!(class, FailureClass::ToolError);
    assert!(message.contains("2 times"), "{message}");
    f.next();
    let none = f
        .call(
            "file_edit",
            json!({"path": "out/deep/x.txt", "old": "zz", "new": "c"}),
        )
        .await;
    assert!(failed(&none).1.contains("0 times"));
    assert_eq!(
        f.get("out/deep/x.txt"),
        "a b a",
        "failed edits change nothing"
    );
    f.next();
    let once = f
        .call(
            "file_edit",
            json!({"path": "out/deep/x.txt", "old": "b", "new": "B"}),
        )
        .await;
    assert_eq!(ok(&once)["replacements"], 1);
    f.next();
    let all = f
        .call(
            "file_edit",
            json!({"path": "out/deep/x.txt", "old": "a", "new": "c", "replace_all": true}),
        )
        .await;
    assert_eq!(ok(&all)["replacements"], 2);
    assert_eq!(f.get("out/deep/x.txt"), "c B c");
}

#[tokio::test]
async fn list_dir_and_file_search_with_glob_and_regex() {
    let f = Fixture::writer();
    f.put("src/lib.rs", "fn main() {}\n// TODO: more\n");
    f.put(
        "src/deep/mod.rs",
        "// nothing\nlet todo = 1; // TODO later\n",
    );
    f.put("README.md", "TODO: readme");
    f.put("secret/key.rs", "TODO: never shown");
    let r = f.call("list_dir", json!({})).await;
    let names: Vec<_> = ok(&r)["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [("README.md", "file"), ("secret", "dir"), ("src", "dir")]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    let r = f.call("file_search", json!({"pattern": "src/*.rs"})).await;
    assert_eq!(
        ok(&r)["files"],
        json!(["src/lib.rs"]),
        "`*` stays in one directory"
    );
    let r = f.call("file_search", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(
        ok(&r)["files"],
        json!(["src/deep/mod.rs", "src/lib.rs"]),
        "secret/ is denied by the operator, so the search does not show it"
    );
    let r = f
        .call(
            "file_search",
            json!({"pattern": "**", "contains": "TODO", "path": "src"}),
        )
        .await;
    let r = ok(&r);
    assert_eq!(r["files"], json!(["src/deep/mod.rs", "src/lib.rs"]));
    let lines: Vec<_> = r["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["path"].as_str().unwrap(), m["line"].as_u64().unwrap()))
        .collect();
    assert!(
        lines.contains(&("src/lib.rs", 2)) && lines.contains(&("src/deep/mod.rs", 2)),
        "{lines:?}"
    );
    assert_eq!(lines.len(), 2);
    let bad = f
        .call("file_search", json!({"pattern": "**", "contains": "("}))
        .await;
    assert_eq!(failed(&bad).0, FailureClass::ValidationError);
}

#[tokio::test]
async fn arguments_are_checked_against_closed_schemas() {
    let f = Fixture::writer();
    for (tool, args) in [
        ("file_read", json!({})),
        ("file_read", json!({"path": "a", "offset": -1})),
        ("file_write", json!({"path": "a", "content": 3})),
        (
            "file_write",
            json!({"path": "a", "content": "x", "mode": "0777"}),
        ),
        ("nope", json!({})),
    ] {
        let (class, _) = failed(&f.call(tool, args.clone()).await);
        assert_eq!(class, FailureClass::ValidationError, "{tool} {args}");
    }
    assert!(!f.path("a").exists());
}

#[tokio::test]
async fn the_node_grants_and_an_operator_rule_deny_with_the_deciding_layer() {
    let f = Fixture::new(json!({"workspace": "read_write",
        "permissions": ["fs:read:**", "fs:write:out/**"]}));
    let r = f
        .call("file_write", json!({"path": "src/a.rs", "content": "x"}))
        .await;
    let ToolOutcome::Denied { decision } = r else {
        panic!("{r:?}")
    };
    assert_eq!(
        (decision.decision, decision.source),
        (Verdict::Deny, Source::Node)
    );
    assert!(!f.path("src/a.rs").exists());
    f.put("secret/key", "k");
    let r = f.call("file_read", json!({"path": "secret/key"})).await;
    let ToolOutcome::Denied { decision } = r else {
        panic!("{r:?}")
    };
    assert_eq!(
        decision.source,
        Source::Rule {
            index: 0,
            permission: "fs:*:secret/**".into()
        }
    );
    assert_eq!(decision.reason, "secrets are off limits");
    // read_only workspace: writes are refused whatever the permissions say.
    let ro = Fixture::new(json!({"permissions": ["fs:read:**", "fs:write:**"]}));
    let r = ro
        .call("file_write", json!({"path": "a", "content": "x"}))
        .await;
    assert!(matches!(r, ToolOutcome::Denied { .. }), "{r:?}");
}

#[tokio::test]
async fn ask_needs_an_approval_bound_to_the_exact_call() {
    let mut f = Fixture::writer();
    let args = json!({"path": "deploy/app.toml", "content": "v1"});
    let ToolOutcome::NeedsApproval { approval, decision } =
        f.call("file_write", args.clone()).await
    else {
        panic!("expected NeedsApproval")
    };
    assert_eq!(decision.decision, Verdict::Ask);
    assert!(approval.digest.starts_with("sha256:"));
    assert!(!f.path("deploy/app.toml").exists());
    let other = f
        .call(
            "file_write",
            json!({"path": "deploy/app.toml", "content": "v2"}),
        )
        .await;
    let ToolOutcome::NeedsApproval {
        approval: other, ..
    } = other
    else {
        panic!("{other:?}")
    };
    assert_ne!(
        approval.digest, other.digest,
        "another argument, another digest"
    );
    // A model claiming approval changes nothing: the member is refused, nothing is written.
    let mut forged = args.clone();
    forged["approved"] = json!(true);
    let r = f.call("file_write", forged).await;
    assert_eq!(failed(&r).0, FailureClass::ValidationError);
    assert!(!f.path("deploy/app.toml").exists());
    // The operator approves v1: that call runs; v2 still waits.
    f.approvals.insert(approval.digest.clone());
    let r = f.call("file_write", args).await;
    assert_eq!(ok(&r)["bytes"], 2);
    assert_eq!(f.get("deploy/app.toml"), "v1");
    f.next();
    let r = f
        .call(
            "file_write",
            json!({"path": "deploy/app.toml", "content": "v2"}),
        )
        .await;
    assert!(matches!(r, ToolOutcome::NeedsApproval { .. }), "{r:?}");
    assert_eq!(f.get("deploy/app.toml"), "v1");
}

#[tokio::test]
async fn dot_dot_and_symlink_escapes_are_refused() {
    let f = Fixture::writer();
    let outside = f.dir.path().join("outside");
    std::fs::write(outside.join("passwd"), "root").unwrap();
    for args in [
        json!({"path": "../outside/passwd"}),
        json!({"path": "src/../../outside/passwd"}),
        json!({"path": outside.join("passwd").to_str().unwrap()}),
    ] {
        let r = f.call("file_read", args.clone()).await;
        let ToolOutcome::Denied { decision } = r else {
            panic!("{args}: {r:?}")
        };
        assert_eq!(decision.source, Source::Resource, "{args}");
    }
    std::os::unix::fs::symlink(&outside, f.path("link")).unwrap();
    std::os::unix::fs::symlink(outside.join("passwd"), f.path("pw")).unwrap();
    for (tool, args) in [
        ("file_read", json!({"path": "link/passwd"})),
        ("file_read", json!({"path": "pw"})),
        ("list_dir", json!({"path": "link"})),
        (
            "file_write",
            json!({"path": "link/new/file", "content": "x"}),
        ),
        ("file_write", json!({"path": "pw", "content": "x"})),
        (
            "file_edit",
            json!({"path": "pw", "old": "root", "new": "x"}),
        ),
        ("file_search", json!({"pattern": "**", "path": "link"})),
    ] {
        let (class, message) = failed(&f.call(tool, args.clone()).await);
        assert_eq!(class, FailureClass::ToolError, "{tool} {args}");
        assert!(message.contains("outside the workspace"), "{message}");
    }
    assert_eq!(
        std::fs::read_to_string(outside.join("passwd")).unwrap(),
        "root"
    );
    assert!(!outside.join("new").exists());
    // A search of the workspace does not follow the link either.
    let r = f.call("file_search", json!({"pattern": "**"})).await;
    assert_eq!(ok(&r)["files"], json!([]));
    // A symlink that stays inside is fine.
    f.put("real/x.txt", "inside");
    std::os::unix::fs::symlink(f.path("real"), f.path("alias")).unwrap();
    let r = f.call("file_read", json!({"path": "alias/x.txt"})).await;
    assert_eq!(ok(&r)["content"], "inside");
}

#[tokio::test]
async fn a_journalled_call_is_replayed_without_redoing_its_effect() {
    let mut f = Fixture::writer();
    let args = json!({"path": "log.txt", "content": "first"});
    let first = f.call("file_write", args.clone()).await;
    assert_eq!(
        first,
        ToolOutcome::Ok {
            result: ok(&first).clone(),
            replayed: false
        }
    );
    assert!(f.journal.get(&f.call_id().key()).is_some());
    // Someone changes the file; the same call slot replayed does not write it again.
    f.put("log.txt", "changed since");
    let again = f.call("file_write", args.clone()).await;
    assert_eq!(
        again,
        ToolOutcome::Ok {
            result: ok(&first).clone(),
            replayed: true
        }
    );
    assert_eq!(f.get("log.txt"), "changed since");
    // Another call in that slot is refused rather than given someone else's result.
    let other = f
        .call(
            "file_write",
            json!({"path": "log.txt", "content": "second"}),
        )
        .await;
    assert_eq!(failed(&other).0, FailureClass::ToolError);
    // The next slot runs for real.
    f.next();
    let next = f.call("file_write", args).await;
    assert!(matches!(
        next,
        ToolOutcome::Ok {
            replayed: false,
            ..
        }
    ));
    assert_eq!(f.get("log.txt"), "first");
    // Reads are not journalled.
    f.next();
    let _ = f.call("file_read", json!({"path": "log.txt"})).await;
    assert!(f.journal.get(&f.call_id().key()).is_none());
}

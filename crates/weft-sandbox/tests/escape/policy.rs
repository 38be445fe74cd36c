//! Class 8, the operator's policy (and class 6, weft's own state): what `weft.toml` refuses
//! stays refused inside a sandboxed command whose grants reach it — `deny fs:*:.git/**`
//! keeps `.git` (the directory itself included) unwritable under `fs:write:**`, a refused
//! read is hidden — and weft's `.weft` (store, audit log, scratch copies, tool directory)
//! is never writable by a job. The confinement comes from the grants and the policy through
//! the same decision `weft policy explain` gives.

use weft_policy::{OperatorPolicy, Workspace, node_grants};
use weft_sandbox::{Confinement, from_grants};

use crate::common::*;

const GIT_DENIED: &str = "[policy]\n\
    [[policy.rules]]\ndecision = \"deny\"\npermission = \"fs:*:.git/**\"\n\
    [[policy.rules]]\ndecision = \"deny\"\npermission = \"fs:read:secrets/**\"\n\
    [[policy.rules]]\ndecision = \"allow\"\npermission = \"fs:*\"\n";

/// A node granted the whole workspace, read and write, narrowed by `policy`.
fn everything(ws: &std::path::Path, policy: Option<&str>) -> Confinement {
    let doc = serde_json::json!({"nodes": {"n": {"type": "task", "requirements": {
        "permissions": ["fs:read:**", "fs:write:**"], "workspace": "read_write"}}}});
    let grants = node_grants(&doc, "n").unwrap();
    let root = Workspace::new(ws.to_str().unwrap()).unwrap();
    let mut c = from_grants::confinement(&root, &grants);
    if let Some(text) = policy {
        from_grants::apply_policy(&mut c, &root, &OperatorPolicy::from_toml(text).unwrap());
    }
    c
}

fn repository(ws: &std::path::Path) {
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(ws.join("secrets")).unwrap();
    std::fs::write(ws.join("secrets/key"), "SECRET\n").unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_git_directory_stays_unwritable_under_a_full_write_grant() {
    let (_dir, ws) = workspace();
    repository(&ws);
    let c = everything(&ws, Some(GIT_DENIED));
    let script = "printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config; \
                  echo evil > .git/hooks/pre-commit; mv .git git-moved; rm -rf .git; \
                  echo ok > allowed.txt; echo ok > .gitignore; echo done";
    let o = run_in(&ws, &sh(script), &c, &env()).await.unwrap();
    assert_eq!(text(&o.stdout), "done\n", "{}", text(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!ws.join(".git/hooks/pre-commit").exists());
    assert!(
        !ws.join("git-moved").exists(),
        "the .git directory was moved"
    );
    // Controls: the rest of the workspace is writable, `.gitignore` included.
    assert_eq!(
        std::fs::read_to_string(ws.join("allowed.txt")).unwrap(),
        "ok\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".gitignore")).unwrap(),
        "ok\n"
    );
    // Without the policy the same grant writes `.git/config`: the refusal is the policy's.
    let o = run_in(
        &ws,
        &sh("echo x >> .git/config"),
        &everything(&ws, None),
        &env(),
    )
    .await
    .unwrap();
    assert_eq!(o.exit_code, Some(0), "{}", text(&o.stderr));
    assert!(
        std::fs::read_to_string(ws.join(".git/config"))
            .unwrap()
            .ends_with("x\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_read_is_hidden_under_a_full_read_grant() {
    let (_dir, ws) = workspace();
    repository(&ws);
    let c = everything(&ws, Some(GIT_DENIED));
    let o = run_in(
        &ws,
        &sh("cat secrets/key; ls secrets; echo end"),
        &c,
        &env(),
    )
    .await
    .unwrap();
    assert_eq!(text(&o.stdout), "end\n", "{}", text(&o.stderr));
    let o = run_in(&ws, &sh("cat secrets/key"), &everything(&ws, None), &env())
        .await
        .unwrap();
    assert_eq!(text(&o.stdout), "SECRET\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn weft_state_is_never_writable_by_a_job() {
    let (_dir, ws) = workspace();
    std::fs::create_dir_all(ws.join(".weft/bin")).unwrap();
    std::fs::write(ws.join(".weft/weft.db"), "store").unwrap();
    std::fs::write(ws.join(".weft/audit.jsonl"), "{}\n").unwrap();
    let c = everything(&ws, None);
    let script = "echo forged > .weft/weft.db; echo '{}' >> .weft/audit.jsonl; \
                  printf '#!/bin/sh\\necho planted\\n' > .weft/bin/grep; chmod +x .weft/bin/grep; \
                  mv .weft weft-moved; echo ok > out/fine; echo done";
    let o = run_in(&ws, &sh(script), &c, &env()).await.unwrap();
    assert_eq!(text(&o.stdout), "done\n", "{}", text(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(ws.join(".weft/weft.db")).unwrap(),
        "store"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".weft/audit.jsonl")).unwrap(),
        "{}\n"
    );
    assert!(!ws.join(".weft/bin/grep").exists(), "a tool was planted");
    assert!(!ws.join("weft-moved").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("out/fine")).unwrap(),
        "ok\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_kept_elsewhere_in_the_workspace_is_read_only_too() {
    let (_dir, ws) = workspace();
    std::fs::write(ws.join("state.db"), "store").unwrap();
    std::fs::create_dir_all(ws.join(".weft")).unwrap();
    std::fs::write(ws.join(".weft/weft.db"), "store").unwrap();
    let mut c = everything(&ws, None);
    from_grants::protect(&mut c, &[ws.join("state.db"), ws.join(".weft/weft.db")]);
    let script = "echo forged > state.db; echo forged > .weft/weft.db; rm -f state.db; \
                  echo ok > other.db; echo done";
    let o = run_in(&ws, &sh(script), &c, &env()).await.unwrap();
    assert_eq!(text(&o.stdout), "done\n", "{}", text(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(ws.join("state.db")).unwrap(),
        "store"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".weft/weft.db")).unwrap(),
        "store"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("other.db")).unwrap(),
        "ok\n"
    );
}

const GLOBS_DENIED: &str = "[policy]\n\
    [[policy.rules]]\ndecision = \"deny\"\npermission = \"fs:read:**/*.pem\"\n\
    [[policy.rules]]\ndecision = \"deny\"\npermission = \"fs:write:**/*.lock\"\n\
    [[policy.rules]]\ndecision = \"allow\"\npermission = \"fs:*\"\n";

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_that_starts_with_a_glob_binds_commands_too() {
    let (_dir, ws) = workspace();
    std::fs::create_dir_all(ws.join("secrets/deep/er")).unwrap();
    std::fs::write(ws.join("secrets/key.pem"), "PEM-TOP\n").unwrap();
    std::fs::write(ws.join("secrets/deep/er/nested.pem"), "PEM-NESTED\n").unwrap();
    std::fs::create_dir_all(ws.join("bundle.pem")).unwrap();
    std::fs::write(ws.join("bundle.pem/inside.txt"), "PEM-DIR\n").unwrap();
    std::fs::write(ws.join("secrets/readme.txt"), "readable\n").unwrap();
    std::fs::write(ws.join("Cargo.lock"), "locked\n").unwrap();
    let c = everything(&ws, Some(GLOBS_DENIED));
    let script = "cat secrets/key.pem && echo read-top; cat secrets/deep/er/nested.pem; \
                  cat bundle.pem/inside.txt; cat secrets/readme.txt; \
                  echo changed > Cargo.lock; echo changed >> Cargo.lock; rm -f Cargo.lock; \
                  mv secrets/key.pem moved.pem; echo new > new.lock; echo done";
    let o = run_in(&ws, &sh(script), &c, &env()).await.unwrap();
    let out = text(&o.stdout);
    assert_eq!(out, "readable\ndone\n", "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("secrets/key.pem: Permission denied"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("Cargo.lock")).unwrap(),
        "locked\n"
    );
    assert!(ws.join("secrets/key.pem").exists() && !ws.join("moved.pem").exists());
    // A file made by the job is its own: the guarantee is for what exists when it starts.
    assert_eq!(
        std::fs::read_to_string(ws.join("new.lock")).unwrap(),
        "new\n"
    );
    // Control: without the policy the same grant reads and writes them all.
    let o = run_in(
        &ws,
        &sh("cat secrets/key.pem secrets/deep/er/nested.pem bundle.pem/inside.txt; echo x >> Cargo.lock"),
        &everything(&ws, None),
        &env(),
    )
    .await
    .unwrap();
    assert_eq!(text(&o.stdout), "PEM-TOP\nPEM-NESTED\nPEM-DIR\n");
    assert_eq!(
        std::fs::read_to_string(ws.join("Cargo.lock")).unwrap(),
        "locked\nx\n"
    );
}

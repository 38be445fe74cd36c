//! Class 1, symlinked grant roots: a grant root inside the workspace is opened beneath it
//! without following links, so a link — to a directory or a file, at the root or on its way,
//! planted before the run or by an earlier job — cannot carry a read or write grant outside.
//! The job is refused, and the refusal names the link.

use std::path::{Path, PathBuf};

use weft_policy::{Workspace, node_grants};
use weft_sandbox::{Confinement, SandboxError, from_grants};

use crate::common::*;

fn confined(ws: &Path, read: Vec<PathBuf>, write: Vec<PathBuf>) -> Confinement {
    Confinement {
        read_roots: read,
        write_roots: write,
        workspace: Some(ws.to_path_buf()),
        ..Confinement::minimal()
    }
}

/// Runs `script` and expects the refusal naming `link`.
async fn refused(ws: &Path, c: &Confinement, script: &str, link: &Path) {
    match run_in(ws, &sh(script), c, &env()).await {
        Err(SandboxError::Blocked(why)) => {
            assert!(why.contains("symbolic link"), "{why}");
            assert!(why.contains(&link.display().to_string()), "{why}");
        }
        other => panic!("ran through the link {}: {other:?}", link.display()),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_root_that_is_a_directory_link_is_refused() {
    let (dir, ws) = workspace();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::remove_dir(ws.join("out")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("out")).unwrap();
    let c = confined(&ws, vec![ws.clone()], vec![ws.join("out")]);
    refused(&ws, &c, "echo x > out/escaped", &ws.join("out")).await;
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    // Control: a real directory is writable.
    std::fs::remove_file(ws.join("out")).unwrap();
    std::fs::create_dir(ws.join("out")).unwrap();
    let o = run_in(&ws, &sh("echo x > out/made"), &c, &env())
        .await
        .unwrap();
    assert_eq!(o.exit_code, Some(0), "{}", text(&o.stderr));
    assert!(ws.join("out/made").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_root_that_links_to_a_secret_is_refused() {
    let (dir, ws) = workspace();
    let secrets = dir.path().join("secrets");
    std::fs::create_dir(&secrets).unwrap();
    std::fs::write(secrets.join("key"), "SECRET\n").unwrap();
    std::os::unix::fs::symlink(&secrets, ws.join("docs")).unwrap();
    let c = confined(&ws, vec![ws.join("docs")], Vec::new());
    refused(&ws, &c, "cat docs/key", &ws.join("docs")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_root_that_is_a_link_is_refused() {
    let (dir, ws) = workspace();
    let target = dir.path().join("bashrc");
    std::fs::write(&target, "original\n").unwrap();
    std::os::unix::fs::symlink(&target, ws.join("NOTES.md")).unwrap();
    let c = confined(&ws, vec![ws.clone()], vec![ws.join("NOTES.md")]);
    refused(&ws, &c, "echo evil > NOTES.md", &ws.join("NOTES.md")).await;
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "original\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_link_on_the_way_to_a_root_is_refused() {
    let (dir, ws) = workspace();
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(outside.join("gen")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("a")).unwrap();
    let c = confined(&ws, vec![ws.clone()], vec![ws.join("a/gen")]);
    refused(&ws, &c, "echo x > a/gen/escaped", &ws.join("a")).await;
    assert!(!outside.join("gen/escaped").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_link_planted_by_an_earlier_job_is_refused_by_the_next() {
    let (dir, ws) = workspace();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::remove_dir(ws.join("out")).unwrap();
    // The first job may write the whole workspace and plants the link.
    let first = confined(&ws, vec![ws.clone()], vec![ws.clone()]);
    let plant = format!("ln -s '{}' out", outside.display());
    let o = run_in(&ws, &sh(&plant), &first, &env()).await.unwrap();
    assert_eq!(o.exit_code, Some(0), "{}", text(&o.stderr));
    let second = confined(&ws, vec![ws.clone()], vec![ws.join("out")]);
    refused(&ws, &second, "echo x > out/escaped", &ws.join("out")).await;
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

#[test]
fn missing_write_roots_are_not_created_through_a_link() {
    let (dir, ws) = workspace();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::remove_dir(ws.join("out")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("out")).unwrap();
    let doc = serde_json::json!({"nodes": {"n": {"type": "task", "requirements": {
        "permissions": ["fs:write:out/gen/**"], "workspace": "read_write"}}}});
    let grants = node_grants(&doc, "n").unwrap();
    let root = Workspace::new(ws.to_str().unwrap()).unwrap();
    let c = from_grants::confinement(&root, &grants);
    from_grants::create_write_dirs(&c, &grants, &root).unwrap();
    assert!(
        !outside.join("gen").exists(),
        "a directory was made outside"
    );
    // Control: without the link the root is made.
    std::fs::remove_file(ws.join("out")).unwrap();
    from_grants::create_write_dirs(&c, &grants, &root).unwrap();
    assert!(ws.join("out/gen").is_dir());
}

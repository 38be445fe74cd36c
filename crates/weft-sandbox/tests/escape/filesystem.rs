//! Files outside the grants: writes outside the write roots, a secret read directly or through
//! a symlink placed inside the workspace.

use weft_sandbox::Confinement;

use crate::common::*;

#[tokio::test(flavor = "multi_thread")]
async fn writes_outside_the_write_roots_are_refused() {
    let (dir, ws) = workspace();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        write_roots: vec![ws.join("out")],
        ..Confinement::minimal()
    };
    let outside = dir.path().join("escaped.txt");
    let script = format!(
        "echo ok > out/inside.txt; echo no > ws-root.txt; echo no > '{}'; echo done",
        outside.display()
    );
    let o = run_in(&ws, &sh(&script), &c, &env()).await.unwrap();
    assert_eq!(text(&o.stdout), "done\n");
    assert_eq!(
        std::fs::read_to_string(ws.join("out/inside.txt")).unwrap(),
        "ok\n"
    );
    assert!(
        !ws.join("ws-root.txt").exists(),
        "the read-only part of the workspace was written"
    );
    assert!(
        !outside.exists(),
        "a file outside the workspace was written"
    );
    assert!(
        text(&o.stderr).contains(write_refused()),
        "{}",
        text(&o.stderr)
    );
    // A symlink inside the write root that points outside does not carry the write out.
    let target = dir.path().join("via-link.txt");
    std::os::unix::fs::symlink(&target, ws.join("out/link")).unwrap();
    let o = run_in(&ws, &sh("echo no > out/link; echo done"), &c, &env())
        .await
        .unwrap();
    assert_eq!(text(&o.stdout), "done\n");
    assert!(
        !target.exists(),
        "a write followed a symlink out of the write root"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fake_home_ssh_key_cannot_be_read_directly_or_through_a_symlink() {
    let (dir, ws) = workspace();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "SECRET-KEY-MATERIAL\n").unwrap();
    std::os::unix::fs::symlink(home.join(".ssh/id_ed25519"), ws.join("innocent.txt")).unwrap();
    let mut env = env();
    env.push(("HOME".into(), home.display().to_string()));
    let c = Confinement {
        read_roots: vec![ws.clone()],
        ..Confinement::minimal()
    };
    let script = "cat \"$HOME/.ssh/id_ed25519\"; cat innocent.txt; ls \"$HOME/.ssh\"; echo end";
    let o = run_in(&ws, &sh(script), &c, &env).await.unwrap();
    assert!(!text(&o.stdout).contains("SECRET"), "{}", text(&o.stdout));
    assert!(
        !text(&o.stdout).contains("id_ed25519"),
        "the directory was listed"
    );
    assert_eq!(text(&o.stdout), "end\n");
    // Control: with the home as a read root, the same script reads the key.
    let c = Confinement {
        read_roots: vec![ws.clone(), home.clone()],
        ..Confinement::minimal()
    };
    let o = run_in(&ws, &sh(script), &c, &env).await.unwrap();
    assert!(text(&o.stdout).contains("SECRET-KEY-MATERIAL"));
}

//! Class 2, root keeps root (the identity): a job never runs as uid 0. Started by a root
//! weft it runs as the step user (65534 unless the operator chose another), its roots
//! mounted idmapped: it writes in its write roots, and what it writes lands owned by the
//! workspace's owner; a file only root may read stays closed to it. Started by anyone else
//! it runs as that user.

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use weft_sandbox::{Confinement, StepUser};

use crate::common::*;

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Prints the job's real, effective and saved uids and gids, and its groups.
const IDS: &str = "import os\nprint(*os.getresuid(), *os.getresgid(), sorted(os.getgroups()))";

fn ids(o: &weft_sandbox::Outcome) -> String {
    text(&o.stdout).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_never_runs_as_root_and_writes_land_as_the_workspace_owner() {
    let (dir, ws) = workspace();
    // A workspace owned by someone other than root or the step user, where the test may
    // arrange it (root): the job's writes must land as this owner, not as the job's uid.
    let owner = if is_root() {
        for p in [ws.as_path(), ws.join("out").as_path()] {
            std::os::unix::fs::chown(p, Some(4321), Some(4322)).unwrap();
        }
        (4321, 4322)
    } else {
        (
            rustix::process::getuid().as_raw(),
            rustix::process::getgid().as_raw(),
        )
    };
    std::fs::write(ws.join("mine.txt"), "the owner's own\n").unwrap();
    std::fs::set_permissions(ws.join("mine.txt"), std::fs::Permissions::from_mode(0o600)).unwrap();
    if is_root() {
        std::os::unix::fs::chown(ws.join("mine.txt"), Some(owner.0), Some(owner.1)).unwrap();
    }
    // A file only its creator may read outside the roots, and, where the test is root (so
    // the file is root's, not the workspace owner's), one inside the read root, which
    // Landlock allows and only the job's identity refuses.
    let outside = dir.path().join("outside-root-only.txt");
    let mut closed = vec![outside.clone()];
    if is_root() {
        closed.push(ws.join("root-only.txt"));
    }
    for p in &closed {
        std::fs::write(p, "ROOT-ONLY\n").unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let c = Confinement {
        read_roots: vec![ws.clone()],
        write_roots: vec![ws.join("out")],
        workspace: Some(ws.clone()),
        ..Confinement::minimal()
    };
    let o = run_in(&ws, &python(IDS, ""), &c, &env()).await.unwrap();
    let expected = if is_root() {
        "65534 65534 65534 65534 65534 65534 []".to_owned()
    } else {
        let (u, g) = owner;
        format!("{u} {u} {u} {g} {g} {g}")
    };
    assert!(
        ids(&o).starts_with(&expected),
        "{} {}",
        ids(&o),
        text(&o.stderr)
    );
    let script = format!(
        "echo written > out/new.txt && cat mine.txt; cat root-only.txt 2>&1; cat '{}'; echo done",
        outside.display()
    );
    let o = run_in(&ws, &sh(&script), &c, &env()).await.unwrap();
    let meta = std::fs::metadata(ws.join("out/new.txt")).unwrap();
    assert_eq!(
        (meta.uid(), meta.gid()),
        owner,
        "the write landed as the job's uid"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("out/new.txt")).unwrap(),
        "written\n"
    );
    let out = text(&o.stdout);
    assert!(
        out.starts_with("the owner's own\n"),
        "{out} {}",
        text(&o.stderr)
    );
    assert!(out.ends_with("done\n"), "{out}");
    assert!(
        !out.contains("ROOT-ONLY"),
        "a root-only file was read: {out}"
    );
    // Control: the test process itself reads both.
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "ROOT-ONLY\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_operator_chooses_the_step_user_and_uid_0_is_refused() {
    let (_dir, ws) = workspace();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        workspace: Some(ws.clone()),
        step_user: Some(StepUser {
            uid: 4242,
            gid: 4243,
            allow_root: false,
        }),
        ..Confinement::minimal()
    };
    let o = run_in(&ws, &python(IDS, ""), &c, &env()).await.unwrap();
    let me = rustix::process::getuid().as_raw();
    let expected = if is_root() { 4242 } else { me };
    assert!(
        ids(&o).starts_with(&format!("{expected} {expected} {expected} ")),
        "{} {}",
        ids(&o),
        text(&o.stderr)
    );
    let zero = Confinement {
        step_user: Some(StepUser {
            uid: 0,
            gid: 0,
            allow_root: false,
        }),
        ..c
    };
    let o = run_in(&ws, &python(IDS, ""), &zero, &env()).await;
    if is_root() {
        let e = o.expect_err("a step user of uid 0 ran");
        assert!(e.to_string().contains("must not be 0"), "{e}");
    } else {
        // Not root: the job runs as weft's own uid whatever the step user says.
        assert!(ids(&o.unwrap()).starts_with(&format!("{me} ")));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_behind_a_closed_directory_blocks_a_root_job_unless_the_fallback_is_allowed() {
    let (dir, ws) = workspace();
    // Closed to others; open to its group, root's (so root without capabilities enters it).
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o750)).unwrap();
    if is_root() {
        // A directory of the workspace's owner is passed through an idmapped mount (below);
        // one of a third user is not.
        std::os::unix::fs::chown(dir.path(), Some(4321), Some(0)).unwrap();
    }
    let mut c = Confinement {
        read_roots: vec![ws.clone()],
        workspace: Some(ws.clone()),
        step_user: Some(StepUser::default()),
        ..Confinement::minimal()
    };
    let o = run_in(&ws, &python(IDS, ""), &c, &env()).await;
    let me = rustix::process::getuid().as_raw();
    if !is_root() {
        // Not root: the directory is the user's own, and the job runs as that user.
        assert!(ids(&o.unwrap()).starts_with(&format!("{me} ")));
        return;
    }
    let e = o.expect_err("a root job ran behind a closed directory");
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("cannot enter {}", dir.path().display())),
        "{msg}"
    );
    assert!(msg.contains("WEFT_SANDBOX_ROOT_FALLBACK"), "{msg}");
    // With the fallback allowed, the job runs as uid 0 without capabilities and says so.
    c.step_user = Some(StepUser {
        allow_root: true,
        ..StepUser::default()
    });
    let o = run_in(&ws, &python(IDS, ""), &c, &env()).await.unwrap();
    assert!(ids(&o).starts_with("0 0 0 "), "{}", ids(&o));
    assert!(
        text(&o.stderr).contains("runs as uid 0 without capabilities"),
        "{}",
        text(&o.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_closed_directory_of_the_workspace_owner_lets_the_job_pass_and_nothing_more() {
    // `/root/project` with `/root` at 0700: the owner's closed directory above the workspace.
    let (dir, ws) = workspace();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(dir.path().join("beside.txt"), "BESIDE\n").unwrap();
    std::fs::write(ws.join("inside.txt"), "inside\n").unwrap();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        write_roots: vec![ws.join("out")],
        workspace: Some(ws.clone()),
        ..Confinement::minimal()
    };
    // Landlock has no right for `chmod`: only a root weft's job, whose view of the directory
    // is a read-only mount, is refused it (a non-root weft's job may chmod its user's files).
    let chmod = if is_root() { "chmod 777 \"$D\";" } else { "" };
    let script = format!(
        "D='{dir}'; cat {ws}/inside.txt; echo w > {ws}/out/w.txt; cat '{beside}'; ls \"$D\"; \
         echo no > \"$D/planted\"; {chmod} echo done",
        ws = ws.display(),
        beside = dir.path().join("beside.txt").display(),
        dir = dir.path().display()
    );
    let o = run_in(&ws, &sh(&script), &c, &env()).await.unwrap();
    assert_eq!(text(&o.stdout), "inside\ndone\n", "{}", text(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(ws.join("out/w.txt")).unwrap(),
        "w\n"
    );
    assert!(!dir.path().join("planted").exists());
    let mode = std::fs::metadata(dir.path()).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o700, "the closed directory's mode was changed");
}

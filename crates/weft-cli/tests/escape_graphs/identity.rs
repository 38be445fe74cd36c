//! Class 2, the identity: a step never runs as uid 0. Under a root weft it runs as the step
//! user (65534, or `WEFT_SANDBOX_UID`), writes landing as the workspace's owner, and a file
//! only root may read stays closed, inside the workspace and out; a closed directory of the
//! owner above the workspace lets it pass and nothing more.

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use crate::harness::*;

fn ids() -> Vec<(&'static str, String)> {
    vec![(
        "ids",
        "printf '%s %s %s' $(id -u) $(id -g) \"$(id -G)\"".into(),
    )]
}

#[test]
fn a_step_never_runs_as_root_and_writes_land_as_the_workspace_owner() {
    let mut scene = Scene::new();
    scene.writable("out");
    let owner = if is_root() {
        std::os::unix::fs::chown(&scene.ws, Some(4321), Some(4322)).unwrap();
        (4321, 4322)
    } else {
        let m = std::fs::metadata(&scene.ws).unwrap();
        (m.uid(), m.gid())
    };
    let mut closed = vec![scene.outside.join("root-only.txt")];
    if is_root() {
        closed.push(scene.ws.join("root-only.txt"));
    }
    for p in &closed {
        scene.canary(p);
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let mut list = ids();
    list.push(("write", "echo written > out/new.txt".into()));
    list.push(("root_only", "cat root-only.txt".into()));
    list.push((
        "root_only_outside",
        format!("cat '{}'", scene.outside.join("root-only.txt").display()),
    ));
    let a = scene.run(&one_step(read_write(&["out/**"]), &list), &How::sandboxed());
    let expected = if is_root() {
        "65534 65534 65534".to_owned()
    } else {
        format!("{} {}", owner.0, owner.1)
    };
    a.held()
        .attempted("step", "ids", "done", &expected)
        .attempted("step", "write", "done", "")
        .attempted("step", "root_only", "refused", "root-only.txt")
        .attempted("step", "root_only_outside", "refused", "Permission denied");
    for made in ["out", "out/new.txt"] {
        let m = std::fs::metadata(scene.ws.join(made)).unwrap();
        assert_eq!((m.uid(), m.gid()), owner, "{made} landed as another owner");
    }
}

#[test]
fn the_operator_chooses_the_step_user() {
    let scene = Scene::new();
    let a = scene.run(
        &one_step(read_only(), &ids()),
        &How::sandboxed()
            .env("WEFT_SANDBOX_UID", "4242")
            .env("WEFT_SANDBOX_GID", "4243"),
    );
    let me = std::fs::metadata("/proc/self").unwrap().uid();
    let expected = if is_root() {
        "4242 4243".to_owned()
    } else {
        format!("{me} ")
    };
    a.held().attempted("step", "ids", "done", &expected);
    // uid 0 is never a step user: a root weft's step falls back to 65534.
    let z = scene.run(
        &one_step(read_only(), &ids()),
        &How::sandboxed()
            .env("WEFT_SANDBOX_UID", "0")
            .env("WEFT_SANDBOX_GID", "0"),
    );
    let expected = if is_root() {
        "65534 65534".to_owned()
    } else {
        format!("{me} ")
    };
    z.held().attempted("step", "ids", "done", &expected);
}

#[test]
fn a_closed_directory_of_the_owner_lets_the_step_pass_and_nothing_more() {
    let mut scene = Scene::new();
    scene.writable("out");
    // `/root/project` with `/root` at 0700.
    std::fs::set_permissions(&scene.base, std::fs::Permissions::from_mode(0o700)).unwrap();
    scene.canary(&scene.base.join("beside.txt"));
    scene.file("inside.txt", "inside\n");
    let base = scene.base.display().to_string();
    let mut list = vec![
        ("inside", "cat inside.txt".to_owned()),
        ("write", "echo w > out/w.txt".into()),
        ("beside", format!("cat '{base}/beside.txt'")),
        ("list", format!("ls '{base}'")),
        ("plant", format!("echo no > '{base}/planted'")),
    ];
    if is_root() {
        // Landlock has no right for `chmod`: only a root weft's step, whose view of the
        // directory is a read-only mount, is refused it.
        list.push(("chmod", format!("chmod 777 '{base}'")));
    }
    let a = scene.run(&one_step(read_write(&["out/**"]), &list), &How::sandboxed());
    a.held()
        .attempted("step", "inside", "done", "inside")
        .attempted("step", "write", "done", "")
        .attempted("step", "beside", "refused", "beside.txt")
        .attempted("step", "list", "refused", "Permission denied")
        .attempted("step", "plant", "refused", "planted");
    if is_root() {
        a.attempted("step", "chmod", "refused", "Read-only file system");
    }
}

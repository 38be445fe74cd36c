//! Metadata outside the grants, which Landlock does not govern: `chmod`, `chown` to the
//! step's own ids (it clears the set-uid bit), `touch -d` (utimensat) and `setxattr` /
//! `removexattr` of a `user.` attribute, each on a canary in `outside` owned by the user weft
//! runs as. The snapshot catches mode and owner; times and attributes are compared here.
//! As root the step user owns none of them (`EPERM`); as any other user the job's mounts are
//! read-only but its write roots (`EROFS`).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use crate::harness::*;

/// Mode, owner, modification time and the names of the extended attributes.
fn meta(p: &Path) -> (u32, u32, u32, i64, String) {
    let m = std::fs::symlink_metadata(p).unwrap();
    let xattrs = std::process::Command::new("/usr/bin/python3")
        .args([
            "-c",
            "import os,sys; print(sorted(os.listxattr(sys.argv[1])))",
        ])
        .arg(p)
        .output()
        .unwrap();
    (
        m.mode(),
        m.uid(),
        m.gid(),
        m.mtime(),
        String::from_utf8_lossy(&xattrs.stdout).into_owned(),
    )
}

/// The canaries in `dir`, set-uid, tagged `user.keep` where the file system allows; returns
/// whether it does.
fn plant(dir: &Path) -> bool {
    std::fs::create_dir_all(dir).unwrap();
    let mut xattr = true;
    for name in [
        "m-chmod",
        "m-chown",
        "m-utime",
        "m-setxattr",
        "m-removexattr",
    ] {
        let p = dir.join(name);
        std::fs::write(&p, "canary\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o4754)).unwrap();
        let tag = std::process::Command::new("/usr/bin/python3")
            .args([
                "-c",
                "import os,sys; os.setxattr(sys.argv[1], 'user.keep', b'1')",
            ])
            .arg(&p)
            .output()
            .unwrap();
        if !tag.status.success() {
            xattr = false;
        }
    }
    if !xattr {
        eprintln!(
            "skipping the setxattr and removexattr attacks: {} takes no user extended attributes",
            dir.display()
        );
    }
    xattr
}

fn attacks(dir: &Path, xattr: bool) -> Vec<(&'static str, String)> {
    let d = dir.display().to_string();
    let mut list = vec![
        ("chmod", format!("chmod 666 '{d}/m-chmod'")),
        (
            "chown",
            format!("chown \"$(id -u):$(id -g)\" '{d}/m-chown'"),
        ),
        ("utime", format!("touch -d 2001-01-01 '{d}/m-utime'")),
    ];
    if xattr {
        list.push((
            "setxattr",
            format!(
                "/usr/bin/python3 -c \"import os; os.setxattr('{d}/m-setxattr', 'user.weft', \
                 b'x')\""
            ),
        ));
        list.push((
            "removexattr",
            format!("/usr/bin/python3 -c \"import os; os.removexattr('{d}/m-removexattr', 'user.keep')\""),
        ));
    }
    list
}

#[test]
fn metadata_outside_the_grants_cannot_be_changed() {
    let mut scene = Scene::new();
    scene.writable("out");
    std::fs::create_dir_all(scene.ws.join("out")).unwrap();
    let xattr = plant(&scene.outside);
    let list = attacks(&scene.outside, xattr);
    let names: Vec<&str> = list.iter().map(|(n, _)| *n).collect();
    let canary = |n: &str| scene.outside.join(format!("m-{n}"));
    let before: Vec<_> = names.iter().map(|n| meta(&canary(n))).collect();
    let a = scene.run(&one_step(read_write(&["out/**"]), &list), &How::sandboxed());
    let shows = if is_root() {
        "Operation not permitted"
    } else {
        "Read-only file system"
    };
    a.held();
    for n in &names {
        let shows = if is_root() && (n.ends_with("xattr") || *n == "utime") {
            // Others may not write the canary: `touch` fails opening it, the attribute calls
            // on access.
            "Permission denied"
        } else {
            shows
        };
        a.attempted("step", n, "refused", shows);
    }
    for (n, b) in names.iter().zip(&before) {
        assert_eq!(b, &meta(&canary(n)), "the {n} canary changed");
    }
    // Control: unconfined, the same graph changes every canary.
    let control = Scene::new();
    std::fs::create_dir_all(control.ws.join("out")).unwrap();
    let xattr = plant(&control.outside);
    let list = attacks(&control.outside, xattr);
    let canary = |n: &str| control.outside.join(format!("m-{n}"));
    let before: Vec<_> = list.iter().map(|(n, _)| meta(&canary(n))).collect();
    let c = control.run(
        &one_step(read_write(&["out/**"]), &list),
        &How::unconfined(),
    );
    for ((n, _), b) in list.iter().zip(&before) {
        c.attempted("step", n, "done", "");
        assert_ne!(
            b,
            &meta(&canary(n)),
            "the control left the {n} canary as it was"
        );
    }
}

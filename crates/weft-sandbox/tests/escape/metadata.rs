//! Metadata outside the grants: Landlock governs no `chmod`, `chown`, `utimensat` or
//! `setxattr`, so each is tried against a canary outside every root that the user weft runs
//! as owns (the case a non-root weft is in: the job runs as weft's own uid). Each canary must
//! keep its mode, owner, times and extended attributes; the control runs the same attacks
//! unconfined and changes them all, so the check can fail.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use weft_sandbox::Confinement;

use crate::common::*;

/// Each attack in its own system call, on its own canary: `NAME ok` or `NAME ERROR`.
const ATTACKS: &str = r#"
import os, sys
d = sys.argv[1]
def t(name, f):
    try:
        f(os.path.join(d, name))
        print(name, "ok")
    except OSError as e:
        print(name, e.strerror)
t("chmod", lambda p: os.chmod(p, 0o666))
t("chown", lambda p: os.chown(p, os.getuid(), os.getgid()))
t("utime", lambda p: os.utime(p, (0, 0)))
if sys.argv[2] == "xattr":
    t("setxattr", lambda p: os.setxattr(p, "user.weft", b"escaped"))
    t("removexattr", lambda p: os.removexattr(p, "user.keep"))
"#;

/// What the attacks may change of a canary.
#[derive(Debug, PartialEq, Eq)]
struct Meta {
    mode: u32,
    uid: u32,
    gid: u32,
    mtime: i64,
    xattrs: Vec<String>,
}

fn meta(p: &Path) -> Meta {
    let m = std::fs::symlink_metadata(p).unwrap();
    let mut buf = vec![0u8; 4096];
    let n = rustix::fs::listxattr(p, &mut buf).unwrap_or(0);
    let mut xattrs: Vec<String> = buf[..n]
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    xattrs.sort();
    Meta {
        mode: m.mode(),
        uid: m.uid(),
        gid: m.gid(),
        mtime: m.mtime(),
        xattrs,
    }
}

/// The canaries in a fresh directory others may enter (so a refusal is not the directory's):
/// set-uid (a `chown` clears it), with `user.keep` set where the file system takes user
/// extended attributes. Returns the directory and whether it does.
fn canaries(base: &Path) -> (PathBuf, bool) {
    let d = base.join("outside");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut xattr = true;
    for name in ["chmod", "chown", "utime", "setxattr", "removexattr"] {
        let p = d.join(name);
        std::fs::write(&p, "canary\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o4754)).unwrap();
        let set = rustix::fs::setxattr(&p, "user.keep", b"1", rustix::fs::XattrFlags::empty());
        if let Err(e) = set {
            eprintln!(
                "skipping the setxattr and removexattr attacks: {} takes no user extended \
                 attributes ({e})",
                d.display()
            );
            xattr = false;
        }
    }
    (d, xattr)
}

fn python_attacks(d: &Path, xattr: bool) -> Vec<String> {
    python(ATTACKS, &d.display().to_string())
        .into_iter()
        .chain([if xattr { "xattr" } else { "none" }.to_owned()])
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn metadata_outside_the_grants_cannot_be_changed() {
    let (dir, ws) = workspace();
    let (d, xattr) = canaries(dir.path());
    let names: &[&str] = if xattr {
        &["chmod", "chown", "utime", "setxattr", "removexattr"]
    } else {
        &["chmod", "chown", "utime"]
    };
    let before: Vec<Meta> = names.iter().map(|n| meta(&d.join(n))).collect();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        write_roots: vec![ws.join("out")],
        ..Confinement::minimal()
    };
    let o = run_in(&ws, &python_attacks(&d, xattr), &c, &env())
        .await
        .unwrap();
    let out = text(&o.stdout);
    assert_eq!(out.lines().count(), names.len(), "{out}{}", text(&o.stderr));
    for line in out.lines() {
        assert!(!line.ends_with(" ok"), "an attack succeeded: {out}");
    }
    let after: Vec<Meta> = names.iter().map(|n| meta(&d.join(n))).collect();
    for ((n, b), a) in names.iter().zip(&before).zip(&after) {
        assert_eq!(b, a, "the {n} canary changed; the job printed: {out}");
    }
    // Inside the write root the same calls succeed: the refusal is the sandbox's.
    let (inside, _) = canaries(&ws.join("out"));
    let o = run_in(&ws, &python_attacks(&inside, false), &c, &env())
        .await
        .unwrap();
    assert_eq!(
        text(&o.stdout),
        "chmod ok\nchown ok\nutime ok\n",
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn unconfined_the_same_attacks_change_the_canaries() {
    let dir = tempfile::tempdir().unwrap();
    let (d, xattr) = canaries(dir.path());
    let names: &[&str] = if xattr {
        &["chmod", "chown", "utime", "setxattr", "removexattr"]
    } else {
        &["chmod", "chown", "utime"]
    };
    let before: Vec<Meta> = names.iter().map(|n| meta(&d.join(n))).collect();
    let argv = python_attacks(&d, xattr);
    let o = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .unwrap();
    let out = text(&o.stdout);
    assert_eq!(out.lines().count(), names.len(), "{out}");
    assert!(out.lines().all(|l| l.ends_with(" ok")), "{out}");
    for (n, b) in names.iter().zip(&before) {
        assert_ne!(
            b,
            &meta(&d.join(n)),
            "the control left the {n} canary as it was"
        );
    }
}

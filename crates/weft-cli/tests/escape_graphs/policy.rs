//! Class 8, the operator's policy: under `fs:read:**` and `fs:write:**`, what `weft.toml`
//! refuses stays refused inside the step — `deny fs:*:.git/**` keeps `.git` (the directory
//! itself included) unwritable, a denied directory is hidden, and rules that start with a glob
//! (`**/*.pem` unreadable, `**/*.lock` unwritable) bind the files that exist when it starts.

use crate::harness::*;

const POLICY: &str = "[policy]\n\
    [[policy.rules]]\ndecision = \"deny\"\npermission = \"fs:*:.git/**\"\n\
    [[policy.rules]]\ndecision = \"deny\"\npermission = \"fs:read:private/**\"\n\
    [[policy.rules]]\ndecision = \"deny\"\npermission = \"fs:read:**/*.pem\"\n\
    [[policy.rules]]\ndecision = \"deny\"\npermission = \"fs:write:**/*.lock\"\n\
    [[policy.rules]]\ndecision = \"allow\"\npermission = \"fs:*\"\n";

fn repository(scene: &mut Scene) {
    scene.file(".git/config", "[core]\n");
    std::fs::create_dir_all(scene.ws.join(".git/hooks")).unwrap();
    scene.canary(&scene.ws.join("private/key"));
    scene.canary(&scene.ws.join("secrets/key.pem"));
    scene.canary(&scene.ws.join("secrets/deep/er/nested.pem"));
    scene.canary(&scene.ws.join("bundle.pem/inside.txt"));
    scene.file("secrets/readme.txt", "readable\n");
    scene.file("Cargo.lock", "locked\n");
    scene.file("weft.toml", POLICY);
    scene.writable(".");
    for p in [
        ".git",
        "private",
        "secrets/key.pem",
        "secrets/deep",
        "bundle.pem",
        "Cargo.lock",
    ] {
        scene.protect(p);
    }
}

fn attacks() -> Vec<(&'static str, String)> {
    [
        (
            "git_config",
            "printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config",
        ),
        ("git_hook", "echo evil > .git/hooks/pre-commit"),
        ("move_git", "mv .git git-moved"),
        ("remove_git", "rm -r .git"),
        ("read_private", "cat private/key"),
        ("list_private", "ls private"),
        ("read_pem", "cat secrets/key.pem"),
        ("read_nested", "cat secrets/deep/er/nested.pem"),
        ("read_bundle", "cat bundle.pem/inside.txt"),
        ("move_pem", "mv secrets/key.pem moved.pem"),
        ("lock_write", "echo changed > Cargo.lock"),
        ("lock_remove", "rm Cargo.lock"),
        ("readme", "cat secrets/readme.txt"),
        ("new_lock", "echo new > new.lock"),
        ("gitignore", "echo ok > .gitignore"),
    ]
    .into_iter()
    .map(|(n, c)| (n, c.to_owned()))
    .collect()
}

#[test]
fn what_the_operator_policy_refuses_stays_refused_under_a_full_grant() {
    let mut scene = Scene::new();
    repository(&mut scene);
    let g = one_step(read_write(&["**"]), &attacks());
    let a = scene.run(&g, &How::sandboxed().arg("--config").arg("weft.toml"));
    a.held()
        .attempted("step", "git_config", "refused", ".git/config")
        .attempted("step", "git_hook", "refused", "pre-commit")
        .attempted("step", "move_git", "refused", ".git")
        .attempted("step", "remove_git", "refused", ".git")
        .attempted("step", "read_private", "refused", "private/key")
        .attempted("step", "list_private", "refused", "private")
        .attempted(
            "step",
            "read_pem",
            "refused",
            "secrets/key.pem: Permission denied",
        )
        .attempted("step", "read_nested", "refused", "nested.pem")
        .attempted("step", "read_bundle", "refused", "bundle.pem")
        .attempted("step", "move_pem", "refused", "key.pem")
        .attempted("step", "lock_write", "refused", "Cargo.lock")
        .attempted("step", "lock_remove", "refused", "Cargo.lock")
        .attempted("step", "readme", "done", "readable")
        .attempted("step", "new_lock", "done", "")
        .attempted("step", "gitignore", "done", "");
    // Control: without the policy the same grant reads and writes them all.
    let mut control = Scene::new();
    repository(&mut control);
    let c = control.run(&g, &How::sandboxed());
    assert!(
        c.changed.iter().any(|p| p.contains(".git")),
        "{:?}",
        c.changed
    );
    assert!(
        c.changed.iter().any(|p| p.contains("Cargo.lock")),
        "{:?}",
        c.changed
    );
    assert!(c.leaked.len() >= 4, "{:?}", c.leaked);
}

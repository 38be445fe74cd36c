//! Files outside the grants: writes outside the write roots (the workspace's read-only part,
//! a sibling directory), through a link inside a write root, and reads of a secret outside
//! the read roots, directly, through a link in the workspace, or by listing its directory.

use crate::harness::*;

#[test]
fn writes_and_reads_outside_the_grants_are_refused() {
    let mut scene = Scene::new();
    scene.writable("out");
    let outside = scene.outside.display().to_string();
    std::os::unix::fs::symlink(
        scene.outside.join("via-link.txt"),
        scene.file("out/.keep", "").with_file_name("link"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        scene.outside.join("secret.txt"),
        scene.ws.join("innocent.txt"),
    )
    .unwrap();
    let g = one_step(
        read_write(&["out/**"]),
        &[
            ("inside", "echo ok > out/inside.txt".into()),
            ("ws_root", "echo no > ws-root.txt".into()),
            ("sibling", format!("echo no > '{outside}/escaped.txt'")),
            ("overwrite", format!("echo no > '{outside}/secret.txt'")),
            ("through_link", "echo no > out/link".into()),
            ("read", format!("cat '{outside}/secret.txt'")),
            ("read_link", "cat innocent.txt".into()),
            ("list", format!("ls '{outside}/listing'")),
        ],
    );
    let a = scene.run(&g, &How::sandboxed());
    a.held()
        .attempted("step", "inside", "done", "")
        .attempted("step", "ws_root", "refused", "ws-root.txt")
        .attempted("step", "sibling", "refused", write_refused())
        .attempted("step", "overwrite", "refused", write_refused())
        .attempted("step", "through_link", "refused", write_refused())
        .attempted("step", "read", "refused", "Permission denied")
        .attempted("step", "read_link", "refused", "Permission denied")
        .attempted("step", "list", "refused", "Permission denied");
    assert!(scene.ws.join("out/inside.txt").exists());
    // Control: unconfined, the same graph writes and reads outside.
    let control = Scene::new();
    std::fs::create_dir_all(control.ws.join("out")).unwrap();
    let g = one_step(
        read_write(&["out/**"]),
        &[
            (
                "sibling",
                format!("echo no > '{}/escaped.txt'", control.outside.display()),
            ),
            (
                "read",
                format!("cat '{}/secret.txt'", control.outside.display()),
            ),
        ],
    );
    let c = control.run(&g, &How::unconfined());
    assert!(
        c.changed.iter().any(|p| p.contains("outside/escaped.txt")),
        "{:?}",
        c.changed
    );
    assert!(!c.leaked.is_empty(), "the control read no canary");
}

//! Fail-closed through a graph: a step the sandbox cannot confine as required is blocked,
//! never run unconfined — a root weft's step behind a third user's closed directory (the
//! step user could not enter it), unless the operator opted into the uid-0 fallback.

use std::os::unix::fs::PermissionsExt;

use crate::harness::*;

#[test]
fn a_step_that_cannot_be_confined_is_blocked_and_runs_nothing() {
    let mut scene = Scene::new();
    scene.writable("out");
    std::fs::set_permissions(&scene.base, std::fs::Permissions::from_mode(0o750)).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&scene.base, Some(4321), Some(0)).unwrap();
    }
    let g = one_step(
        read_write(&["out/**"]),
        &[("ran", "echo ran > out/ran; id -u".into())],
    );
    let a = scene.run(&g, &How::sandboxed());
    a.held();
    if !is_root() {
        // Not root: the directory is the user's own, and the step runs as that user.
        a.attempted("step", "ran", "done", "");
        return;
    }
    a.blocked("step", "cannot enter");
    a.blocked("step", "WEFT_SANDBOX_ROOT_FALLBACK");
    assert!(!scene.ws.join("out/ran").exists(), "the step ran");
    // With the fallback the step runs as uid 0 without capabilities, and says so.
    let f = scene.run(&g, &How::sandboxed().env("WEFT_SANDBOX_ROOT_FALLBACK", "1"));
    f.held().attempted("step", "ran", "done", "0");
}

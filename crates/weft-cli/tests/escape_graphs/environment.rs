//! The environment: a step sees `PATH`, `HOME` and `LANG` only — not a secret in weft's own
//! environment, not a loader variable weft was started with.

use crate::harness::*;

#[test]
fn only_the_allowlisted_environment_reaches_the_step() {
    let mut scene = Scene::new();
    let secret = fresh("env");
    scene.secret_elsewhere(&secret, "weft's environment");
    let g = one_step(read_only(), &[("env", "env".into())]);
    let how = |sandbox| How {
        sandbox,
        ..How::default()
    }
    .env("WEFT_ESCAPE_SECRET", &secret)
    .env("LD_PRELOAD", "/nonexistent/evil.so");
    let a = scene.run(&g, &how(true));
    a.held().attempted("step", "env", "done", "PATH=");
    let log = a.log("step");
    let mut names: Vec<&str> = log
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim_start_matches("<env> done ")))
        .collect();
    names.sort_unstable();
    names.dedup();
    // `PWD` is the shell's own, not weft's.
    names.retain(|n| *n != "PWD");
    assert_eq!(names, ["HOME", "LANG", "PATH"], "{log}");
    // Control: unconfined, the step sees weft's environment, the secret included.
    let c = scene.run(&g, &how(false));
    assert!(!c.leaked.is_empty(), "the control saw no secret");
}

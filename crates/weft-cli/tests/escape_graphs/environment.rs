//! The environment: a step sees `PATH`, `HOME` and `LANG` only — not a secret in weft's own
//! environment, not a loader variable weft was started with — and cannot read weft's (or any
//! other process's) environment through `/proc`.

use crate::harness::*;

#[test]
fn only_the_allowlisted_environment_reaches_the_step() {
    let mut scene = Scene::new();
    let secret = fresh("env");
    scene.secret_elsewhere(&secret, "weft's environment");
    let g = one_step(
        read_only(),
        &[
            ("env", "env".into()),
            ("proc_init", "cat /proc/1/environ".into()),
            (
                "proc_all",
                "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -a WEFT_ESCAPE_SECRET"
                    .into(),
            ),
        ],
    );
    let how = |sandbox| {
        How {
            sandbox,
            ..How::default()
        }
        .env("WEFT_ESCAPE_SECRET", &secret)
        .env("LD_PRELOAD", "/nonexistent/evil.so")
    };
    let a = scene.run(&g, &how(true));
    a.held()
        .attempted("step", "env", "done", "PATH=")
        .attempted("step", "proc_init", "refused", "Permission denied")
        .attempted("step", "proc_all", "refused", "");
    let log = a.log("step");
    let mut names: Vec<&str> = log
        .lines()
        .filter_map(|l| {
            l.split_once('=')
                .map(|(k, _)| k.trim_start_matches("<env> done "))
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    // `PWD` is the shell's own, not weft's.
    names.retain(|n| *n != "PWD");
    assert_eq!(names, ["HOME", "LANG", "PATH"], "{log}");
    // Control: unconfined, the step reads weft's environment through `/proc`.
    let c = scene.run(&g, &how(false));
    assert!(!c.leaked.is_empty(), "the control saw no secret");
}

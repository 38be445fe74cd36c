//! Class 7, what runs around a step: a step plants `.weft/bin/grep` and `core.fsmonitor` in
//! `.git/config`, each of which would write outside; the node's own `command` criterion then
//! runs `git status` and `grep`. Confined, nothing outside changes.

use serde_json::json;

use crate::harness::*;

fn planted(scene: &mut Scene) -> serde_json::Value {
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&scene.ws)
        .status()
        .unwrap();
    assert!(init.success());
    scene.writable(".");
    let (tool, hook) = (
        scene.outside.join("tool-ran"),
        scene.outside.join("hook-ran"),
    );
    let plant = attempts(&[
        (
            "tool",
            format!(
                "mkdir -p .weft/bin && printf '#!/bin/sh\\ntouch {}\\n' > .weft/bin/grep && \
                 chmod +x .weft/bin/grep",
                tool.display()
            ),
        ),
        (
            "hook",
            format!("git config core.fsmonitor 'touch {}'", hook.display()),
        ),
    ]);
    let mut step = exec(&plant, Some(read_write(&["**"])));
    step["success"] = json!({"criteria": [{"id": "clean", "kind": "command",
        "description": "The tree is readable.",
        "run": "git status --short; grep -q x /dev/null; true"}]});
    graph(json!({"step": step}), &["step"])
}

#[test]
fn criteria_do_not_run_what_a_step_planted_unconfined() {
    let mut scene = Scene::new();
    let g = planted(&mut scene);
    let a = scene.run(&g, &How::sandboxed());
    a.held()
        .attempted("step", "tool", "refused", ".weft/bin")
        .attempted("step", "hook", "done", "");
    let config = std::fs::read_to_string(scene.ws.join(".git/config")).unwrap();
    assert!(
        config.contains("fsmonitor"),
        "the plant did not land: {config}"
    );
    // Control: unconfined, the criterion runs both plants.
    let mut control = Scene::new();
    let g = planted(&mut control);
    let c = control.run(&g, &How::unconfined());
    for ran in ["outside/tool-ran", "outside/hook-ran"] {
        assert!(
            c.changed.iter().any(|p| p.contains(ran)),
            "{ran}: {:?}",
            c.changed
        );
    }
}

//! Class 6, the run's own state: under `fs:write:**` a step can neither rewrite the store,
//! the audit log or a store kept elsewhere in the workspace (`--db`), nor plant a tool in
//! `.weft/bin`, nor move or remove `.weft`, nor forge the command a `weft resume` runs after
//! a gate.

use serde_json::json;

use crate::harness::*;

#[test]
fn a_step_cannot_touch_the_store_the_audit_log_or_the_tool_directory() {
    let mut scene = Scene::new();
    scene.writable(".");
    // A first run makes the store and its audit directory.
    let ok = one_step(read_only(), &[("first", "true".into())]);
    scene.run(&ok, &How::sandboxed()).held();
    let first = scene.run(&ok, &How::sandboxed().arg("--db").arg("state.db"));
    first.attempted("step", "first", "done", "");
    let g = one_step(
        read_write(&["**"]),
        &[
            ("forge_store", "echo forged > .weft/weft.db".into()),
            ("forge_audit", "echo '{}' >> .weft/audit/forged".into()),
            (
                "plant_tool",
                "mkdir -p .weft/bin && echo planted > .weft/bin/grep".into(),
            ),
            ("move_state", "mv .weft weft-moved".into()),
            ("remove_state", "rm -r .weft".into()),
            ("allowed", "echo ok > allowed.txt".into()),
        ],
    );
    let a = scene.run(&g, &How::sandboxed());
    a.held()
        .attempted("step", "forge_store", "refused", "weft.db")
        .attempted("step", "forge_audit", "refused", "forged")
        .attempted("step", "plant_tool", "refused", ".weft/bin")
        .attempted("step", "move_state", "refused", ".weft")
        .attempted("step", "remove_state", "refused", ".weft")
        .attempted("step", "allowed", "done", "");
    assert!(!scene.ws.join("weft-moved").exists());
    // The store named by `--db` is read-only in its step too.
    let g = one_step(
        read_write(&["**"]),
        &[
            ("forge_db", "echo forged > state.db".into()),
            ("remove_db", "rm state.db".into()),
        ],
    );
    let b = scene.run(&g, &How::sandboxed().arg("--db").arg("state.db"));
    b.held()
        .attempted("step", "forge_db", "refused", "state.db")
        .attempted("step", "remove_db", "refused", "state.db");
    let db = std::fs::read(scene.ws.join("state.db")).unwrap();
    assert!(
        db.starts_with(b"SQLite format 3"),
        "the --db store was overwritten"
    );
}

/// Rewrites the command stored for `after` in the run's log: what a step with write access to
/// the store would do before a gate, so that `weft resume` ran its command instead.
const FORGE: &str = "import sqlite3\nc=sqlite3.connect('.weft/weft.db')\n\
    n=c.execute(\"update events set payload=replace(payload,'echo safe > ok.txt',\
    'echo forged > forged.txt')\").rowcount\nc.commit()\nprint('rewrote', n)";

#[test]
fn a_step_cannot_forge_what_a_resume_runs_after_a_gate() {
    let mut scene = Scene::new();
    scene.writable("ok.txt");
    scene.file("forge.py", FORGE);
    let g = graph(
        json!({
            "forge": exec(&attempts(&[("forge", "python3 forge.py".into())]),
                Some(read_write(&["**"]))),
            "go": {"type": "gate", "title": "Go", "description": "A person lets it run.",
                "depends_on": ["forge"], "gate": {"mode": "approve", "prompt": "Run it?"}},
            "after": {"title": "t", "description": "d", "depends_on": ["go"],
                "x-weft-exec": {"run": "echo safe > ok.txt"},
                "requirements": read_write(&["**"])}
        }),
        &["forge"],
    );
    let a = scene.run(&g, &How::sandboxed());
    a.held()
        .attempted("forge", "forge", "refused", "readonly database");
    let run = a.report["run_id"].as_str().unwrap().to_owned();
    let approve = scene.weft(
        &[
            "approve".into(),
            run.clone(),
            "go".into(),
            "--as".into(),
            "ana".into(),
        ],
        &How::default(),
    );
    assert!(approve.status.success(), "{approve:?}");
    let resume = scene.weft(
        &["resume".into(), run, "--sandbox".into(), "--json".into()],
        &How::default(),
    );
    assert!(resume.status.success(), "{resume:?}");
    assert!(
        !scene.ws.join("forged.txt").exists(),
        "the forged command ran"
    );
    assert_eq!(
        std::fs::read_to_string(scene.ws.join("ok.txt")).unwrap(),
        "safe\n"
    );
}

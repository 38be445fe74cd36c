//! Class 1, symlinked grant roots: a grant root that is a link, or goes through one — to a
//! directory or a file, planted before the run or by an earlier step of the same run — blocks
//! the step with a message naming the link; nothing outside is read, written or made.

use std::os::unix::fs::symlink;

use serde_json::json;

use crate::harness::*;

/// Each node must be blocked, the error naming its link; returns the graph's nodes.
fn linked_roots(scene: &mut Scene) -> Vec<(&'static str, &'static str)> {
    let o = scene.outside.clone();
    std::fs::create_dir_all(o.join("target")).unwrap();
    symlink(o.join("target"), scene.ws.join("out")).unwrap();
    scene.canary(&o.join("secrets/key"));
    symlink(o.join("secrets"), scene.ws.join("docs")).unwrap();
    scene.canary(&o.join("bashrc"));
    symlink(o.join("bashrc"), scene.ws.join("NOTES.md")).unwrap();
    std::fs::create_dir_all(o.join("adir/gen")).unwrap();
    symlink(o.join("adir"), scene.ws.join("a")).unwrap();
    std::fs::create_dir_all(o.join("deep")).unwrap();
    symlink(o.join("deep"), scene.ws.join("made")).unwrap();
    vec![
        ("dir_link", "/out"),
        ("read_link", "/docs"),
        ("file_link", "/NOTES.md"),
        ("on_the_way", "/a"),
        ("missing_root", "/made"),
    ]
}

fn linked_graph() -> serde_json::Value {
    graph(
        json!({
            "dir_link": exec("echo x > out/escaped; true", Some(read_write(&["out/**"]))),
            "read_link": exec("cat docs/key; true",
                Some(json!({"permissions": ["fs:read:docs/**"]}))),
            "file_link": exec("echo evil > NOTES.md; true", Some(read_write(&["NOTES.md"]))),
            "on_the_way": exec("echo x > a/gen/escaped; true", Some(read_write(&["a/gen/**"]))),
            "missing_root": exec("echo x > made/gen/escaped; true",
                Some(read_write(&["made/gen/**"]))),
        }),
        &[
            "dir_link",
            "read_link",
            "file_link",
            "on_the_way",
            "missing_root",
        ],
    )
}

#[test]
fn a_grant_root_through_a_link_blocks_the_step_and_names_the_link() {
    let mut scene = Scene::new();
    let expected = linked_roots(&mut scene);
    let a = scene.run(&linked_graph(), &How::sandboxed());
    a.held();
    for (node, link) in expected {
        a.blocked(node, "symbolic link").blocked(node, link);
    }
    // Control: unconfined, the same graph writes and reads through every link.
    let mut control = Scene::new();
    linked_roots(&mut control);
    let c = control.run(&linked_graph(), &How::unconfined());
    // (`made/gen` does not exist: unconfined, nothing creates it, so that node just fails.)
    for path in ["target/escaped", "adir/gen/escaped"] {
        assert!(
            c.changed.iter().any(|p| p.contains(path)),
            "{path}: {:?}",
            c.changed
        );
    }
    assert!(c.changed.iter().any(|p| p.contains("outside/bashrc")));
    assert!(!c.leaked.is_empty());
}

#[test]
fn a_link_planted_by_an_earlier_step_blocks_the_next() {
    let mut scene = Scene::new();
    // The first step may write the whole workspace: the link it makes there is its grant.
    scene.writable(".");
    let plant = format!(
        "ln -s '{}' out && echo planted",
        scene.outside.join("listing").display()
    );
    let mut write = exec(
        "echo x > out/escaped; cat out/*; true",
        Some(read_write(&["out/**"])),
    );
    write["depends_on"] = json!(["plant"]);
    let g = graph(
        json!({"plant": exec(&plant, Some(read_write(&["**"]))), "write": write}),
        &["plant"],
    );
    let a = scene.run(&g, &How::sandboxed());
    a.held()
        .blocked("write", "symbolic link")
        .blocked("write", "/out");
    assert!(a.log("plant").contains("planted"), "the plant failed");
}

//! Class 5, grants by a node's full scope address: two loop bodies each hold a node `step`;
//! the read-only body's `step` must not run with the other's grants, and a body node that
//! declares nothing inside a read-only loop is confined all the same.

use serde_json::{Value, json};

use crate::harness::*;

fn looped(requirements: Value, nodes: Value) -> Value {
    let entrypoints: Vec<String> = nodes.as_object().unwrap().keys().cloned().collect();
    json!({"type": "loop", "title": "t", "description": "d", "requirements": requirements,
        "loop": {"mode": "repeat", "max_iterations": 1,
            "body": {"entrypoints": entrypoints, "nodes": nodes}}})
}

fn bodies() -> Value {
    let everything = read_write(&["**"]);
    graph(
        json!({
            // Declared first, so a lookup by the last id finds this `step` for both bodies.
            "writer": looped(everything.clone(), json!({
                "step": exec("echo rw > rw.txt", Some(everything))})),
            "reader": looped(read_only(), json!({
                "step": exec(&attempts(&[("write", "echo ro > ro.txt".into())]),
                    Some(read_only())),
                "bare": exec(&attempts(&[("write", "echo bare > bare.txt".into())]), None)}))
        }),
        &["writer", "reader"],
    )
}

#[test]
fn grants_follow_the_full_address_and_an_undeclared_body_node_is_confined() {
    let mut scene = Scene::new();
    scene.writable("rw.txt");
    let a = scene.run(&bodies(), &How::sandboxed());
    a.held();
    assert!(
        scene.ws.join("rw.txt").exists(),
        "the writer's step did not write"
    );
    for body_node in ["step", "bare"] {
        let log = a.log_where(|node| node == format!("reader[0].{body_node}"));
        assert!(log.contains("<write> refused"), "{body_node}: {log}");
    }
    // Control: unconfined, both reader nodes write.
    let mut control = Scene::new();
    control.writable("rw.txt");
    let c = control.run(&bodies(), &How::unconfined());
    for made in ["ro.txt", "bare.txt"] {
        assert!(
            c.changed.iter().any(|p| p.contains(made)),
            "{made}: {:?}",
            c.changed
        );
    }
}

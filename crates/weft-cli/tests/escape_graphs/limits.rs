//! Limits and lifetime through a graph: the process cap (default 256 for a node's command)
//! refuses a thousand forks and holds a fork bomb, the node's wall-clock limit and the output
//! cap kill the whole job, and a child that left the job's session (`setsid`) does not outlive
//! it. (A graph cannot set a CPU-time cap; `escape/limits.rs` covers `RLIMIT_CPU`.)

use serde_json::json;

use crate::harness::*;

/// The processes whose environment holds `marker` (`HOME=<workspace>`: every process a step
/// starts inherits it, across `exec` too, and the scene's workspace is unique).
fn survivors(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        if environ
            .windows(marker.len())
            .any(|w| w == marker.as_bytes())
        {
            found.push(format!(
                "{name}: {}",
                String::from_utf8_lossy(&cmdline).replace('\0', " ")
            ));
        }
    }
    found
}

/// None may be left; the kernel gets a bounded moment to reap what was already killed.
fn assert_none_survive(marker: &str, why: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let left = survivors(marker);
        if left.is_empty() {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{why}: {left:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_step_cannot_outgrow_its_limits_or_outlive_its_run() {
    let mut scene = Scene::new();
    scene.writable("out");
    let mark = format!("HOME={}\0", scene.ws.display());
    let forks = "i=0; while [ $i -lt 1000 ]; do sleep 600 & i=$((i+1)); done; echo all-forked";
    let mut wall = exec(
        "sleep 300 & echo started > out/child; wait",
        Some(read_write(&["out/**"])),
    );
    wall["constraints"] = json!({"max_wall_clock_seconds": 1});
    let setsid = "setsid sh -c 'echo $$ > out/escaped.pid; exec sleep 600' & \
                  while [ ! -s out/escaped.pid ]; do sleep 0.05; done; echo started";
    // A fork bomb is held at the cap until it gives up or the wall clock kills the whole job.
    let mut bomb = exec(
        "bomb() { bomb | bomb & }; bomb; wait; sleep 600",
        Some(read_only()),
    );
    bomb["constraints"] = json!({"max_wall_clock_seconds": 2});
    let g = graph(
        json!({
            "bomb": bomb,
            "forks": exec(forks, Some(read_only())),
            "wall": wall,
            "flood": exec("yes flood", Some(read_only())),
            "setsid": exec(setsid, Some(read_write(&["out/**"]))),
        }),
        &["forks", "wall", "flood", "setsid", "bomb"],
    );
    let a = scene.run(&g, &How::sandboxed());
    a.held();
    let forks_error = a.error("forks");
    assert!(forks_error.contains("fork"), "{forks_error}");
    assert!(!forks_error.contains("all-forked"), "{forks_error}");
    assert!(a.error("wall").contains("time"), "{}", a.error("wall"));
    assert!(
        scene.ws.join("out/child").exists(),
        "the background sleep never started"
    );
    assert!(
        a.error("flood").contains("output cap"),
        "{}",
        a.error("flood")
    );
    assert_eq!(a.log("setsid").trim(), "started");
    // Held at the cap: it gives up when its forks fail, or the wall clock kills it.
    let bomb = a.error("bomb");
    assert!(bomb.contains("fork") || bomb.contains("time"), "{bomb}");
    assert_none_survive(&mark, "a process of a step outlived its run");
}

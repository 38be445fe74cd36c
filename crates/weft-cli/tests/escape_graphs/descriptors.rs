//! Class 3, inherited descriptors: what weft's caller left open (a file outside the
//! workspace on descriptor 7, a connected socket on 8) is closed before the step starts.

use std::io::Read;
use std::net::TcpListener;

use crate::harness::*;

/// Writes to every descriptor from 3 to 1023 it finds open, and prints the list.
const PROBE: &str = "import os\nseen=[]\nfor fd in range(3,1024):\n  try:\n    os.fstat(fd)\n    \
                     seen.append(fd)\n    os.write(fd,b'ESCAPED')\n  except OSError: pass\nprint(seen)";

/// Runs the probe in `scene` under a caller that leaks a file and a socket; returns the run
/// and the bytes that arrived through the socket.
fn leaked(scene: &Scene, sandbox: bool) -> (Attempt, Vec<u8>) {
    let log = scene.outside.join("caller.log");
    std::fs::write(&log, "").unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    scene.file("probe.py", PROBE);
    let g = one_step(read_only(), &[("descriptors", "python3 probe.py".into())]);
    let how = How {
        sandbox,
        leak_fds: Some((log, listener.local_addr().unwrap().port())),
        ..How::default()
    };
    let a = scene.run(&g, &how);
    let (mut accepted, _) = listener.accept().unwrap();
    accepted.set_nonblocking(true).unwrap();
    let mut got = vec![0u8; 64];
    let n = accepted.read(&mut got).unwrap_or(0);
    got.truncate(n);
    (a, got)
}

#[test]
fn descriptors_the_caller_left_open_do_not_reach_the_step() {
    let scene = Scene::new();
    let (a, arrived) = leaked(&scene, true);
    a.held().attempted("step", "descriptors", "done", "[]");
    assert!(
        arrived.is_empty(),
        "bytes arrived through the inherited socket"
    );
    // Control: unconfined, the step writes through both.
    let control = Scene::new();
    let (c, arrived) = leaked(&control, false);
    assert!(
        c.changed.iter().any(|p| p.contains("outside/caller.log")),
        "{:?}",
        c.changed
    );
    assert_eq!(arrived, b"ESCAPED");
}

//! Class 3, inherited descriptors: whatever weft's caller left open (a file outside the
//! workspace, a connected socket) is closed before the command starts, so it can neither
//! write through them nor see them.

use std::io::Read;
use std::os::fd::AsRawFd;

use rustix::io::{FdFlags, fcntl_setfd};
use weft_sandbox::{Confinement, NetAccess};

use crate::common::*;

/// Tries every descriptor from 3 to 1023, or only those its argument lists: reports the open
/// ones and writes to each. The unconfined control names the two the test opened, so it
/// never writes to a descriptor the test process itself inherited (a harness's files).
const PROBE: &str = "import os,sys\nfds=[int(f) for f in ' '.join(sys.argv[1:]).split()] \
                     or range(3,1024)\nseen=[]\nfor fd in fds:\n  try:\n    os.fstat(fd)\n    \
                     seen.append(fd)\n    os.write(fd,b'ESCAPED')\n  except OSError: pass\nprint(seen)";

#[tokio::test(flavor = "multi_thread")]
async fn descriptors_the_caller_left_open_do_not_reach_the_command() {
    let (dir, ws) = workspace();
    let outside = dir.path().join("outside.txt");
    let file = std::fs::File::create(&outside).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let stream = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (mut accepted, _) = listener.accept().unwrap();
    // As a careless caller would: inheritable across exec.
    fcntl_setfd(&file, FdFlags::empty()).unwrap();
    fcntl_setfd(&stream, FdFlags::empty()).unwrap();
    let (file_fd, socket_fd) = (file.as_raw_fd(), stream.as_raw_fd());
    let c = Confinement {
        read_roots: vec![ws.clone()],
        net: NetAccess::Full,
        ..Confinement::minimal()
    };
    let argv = python(PROBE, "");
    let o = run_in(&ws, &argv, &c, &env()).await.unwrap();
    assert_eq!(text(&o.stdout), "[]\n", "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "");
    accepted.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 16];
    assert!(
        accepted.read(&mut buf).is_err(),
        "bytes arrived through the inherited socket"
    );
    // Control: a child started without the sandbox holds both and writes through them.
    let control_argv = python(PROBE, &format!("{file_fd} {socket_fd}"));
    let control = std::process::Command::new(&control_argv[0])
        .args(&control_argv[1..])
        .output()
        .unwrap();
    let seen = text(&control.stdout);
    assert!(
        seen.contains(&file_fd.to_string()) && seen.contains(&socket_fd.to_string()),
        "{seen}"
    );
    assert!(
        std::fs::read_to_string(&outside)
            .unwrap()
            .contains("ESCAPED")
    );
    drop((file, stream));
}

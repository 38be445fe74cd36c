//! Class 2, root keeps root: a step holds no capability and cannot get one back, makes no
//! device node, cannot rename the host, sees none of the host's SysV IPC objects (a canary in
//! a shared memory segment and in a message queue), reaches none of the caller's kernel keys (a canary as a key's
//! payload), and opens no raw or packet socket even with full network.

use serde_json::json;

use crate::harness::*;

#[test]
fn a_step_holds_no_capability_and_makes_no_device_node() {
    let mut scene = Scene::new();
    scene.writable("out");
    // `exec`, so the probe is the process the helper became and its /proc entry is its own.
    let caps = exec(
        "exec python3 -c \"print(''.join(l for l in open('/proc/self/status') \
         if l.startswith(('Cap', 'NoNewPrivs'))))\"",
        Some(read_only()),
    );
    scene.file(
        "mknod.py",
        "import os,stat\nfor n,m in (('pyc',stat.S_IFCHR),('pyb',stat.S_IFBLK)):\n  \
         os.mknod('out/'+n, m|0o600, os.makedev(7,0))\n",
    );
    let devices = exec(
        &attempts(&[
            ("kmsg", "mknod out/kmsg c 1 11".into()),
            ("mem", "mknod out/mem c 1 1".into()),
            ("sda", "mknod out/sda b 8 0".into()),
            ("python", "python3 mknod.py".into()),
            ("fifo", "mknod out/fifo p".into()),
            (
                "hostname",
                "python3 -c \"import socket; socket.sethostname('weft-escaped')\"".into(),
            ),
        ]),
        Some(read_write(&["out/**"])),
    );
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let g = graph(
        json!({"caps": caps, "devices": devices}),
        &["caps", "devices"],
    );
    let a = scene.run(&g, &How::sandboxed());
    a.held()
        .attempted("devices", "kmsg", "refused", "kmsg")
        .attempted("devices", "mem", "refused", "mem")
        .attempted("devices", "sda", "refused", "sda")
        .attempted("devices", "python", "refused", "PermissionError")
        .attempted("devices", "fifo", "done", "")
        .attempted("devices", "hostname", "refused", "PermissionError");
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap(),
        hostname
    );
    assert!(scene.ws.join("out/fifo").exists(), "a FIFO is no device");
    let status = a.log("caps");
    for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        let line = status
            .lines()
            .find(|l| l.starts_with(set))
            .unwrap_or_else(|| panic!("{status}"));
        assert!(line.ends_with("0000000000000000"), "{line}");
    }
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
}

/// Makes a SysV shared memory segment, mode 0666, holding `secret`; returns its id.
fn shared_memory(secret: &str) -> String {
    let code = "import ctypes,sys\nlibc=ctypes.CDLL(None)\nlibc.shmat.restype=ctypes.c_void_p\n\
                i=libc.shmget(0,4096,0o1666)\np=libc.shmat(i,None,0)\n\
                ctypes.memmove(p,sys.argv[1].encode(),len(sys.argv[1]))\nprint(i)";
    let out = std::process::Command::new("python3")
        .args(["-c", code, secret])
        .output()
        .unwrap();
    let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(id.parse::<i64>().is_ok_and(|i| i >= 0), "shmget: {out:?}");
    id
}

/// Makes a SysV message queue, mode 0666, holding one message `secret`; returns its id.
fn message_queue(secret: &str) -> String {
    let code = "import ctypes,sys\nlibc=ctypes.CDLL(None)\ni=libc.msgget(0,0o1666)\n\
                m=sys.argv[1].encode()\nbuf=ctypes.create_string_buffer(8+len(m))\n\
                ctypes.memmove(ctypes.addressof(buf),(1).to_bytes(8,'little'),8)\n\
                ctypes.memmove(ctypes.addressof(buf)+8,m,len(m))\n\
                print(i if libc.msgsnd(i,buf,len(m),0)==0 else -1)";
    let out = std::process::Command::new("python3")
        .args(["-c", code, secret])
        .output()
        .unwrap();
    let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(id.parse::<i64>().is_ok_and(|i| i >= 0), "msgget: {out:?}");
    id
}

/// Receives the queue's first message without waiting (`IPC_NOWAIT | MSG_NOERROR`).
const MSG_READ: &str = "import ctypes,sys\nlibc=ctypes.CDLL(None,use_errno=True)\n\
    buf=ctypes.create_string_buffer(208)\nn=libc.msgrcv(int(sys.argv[1]),buf,200,0,0o14000)\n\
    if n<0: sys.exit('msgrcv: errno %d' % ctypes.get_errno())\nprint(buf.raw[8:8+n].decode())";

/// Adds a user key whose payload is `secret` to this user's keyring; returns its serial.
fn user_key(secret: &str) -> String {
    let code = "import ctypes,sys\nlibc=ctypes.CDLL(None)\n\
                print(libc.syscall(int(sys.argv[3]),b'user',sys.argv[1].encode(),sys.argv[2].encode(),\
                len(sys.argv[2]),-4))";
    let name = fresh("key");
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            code,
            &name,
            secret,
            &nix::libc::SYS_add_key.to_string(),
        ])
        .output()
        .unwrap();
    let serial = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        serial.parse::<i64>().is_ok_and(|s| s > 0),
        "add_key: {out:?}"
    );
    serial
}

const SHM_READ: &str = "import ctypes,sys\nlibc=ctypes.CDLL(None,use_errno=True)\n\
    libc.shmat.restype=ctypes.c_void_p\np=libc.shmat(int(sys.argv[1]),None,0o10000)\n\
    if p in (None, ctypes.c_void_p(-1).value): sys.exit('shmat: errno %d' % ctypes.get_errno())\n\
    print(ctypes.string_at(p,200).split(b'\\0')[0].decode())";

/// KEYCTL_READ (11) of the key by serial.
const KEY_READ: &str = "import ctypes,sys\nlibc=ctypes.CDLL(None,use_errno=True)\n\
    buf=ctypes.create_string_buffer(200)\nn=libc.syscall(int(sys.argv[2]),11,int(sys.argv[1]),buf,200)\n\
    if n<0: sys.exit('keyctl: errno %d' % ctypes.get_errno())\nprint(buf.value.decode())";

fn ipc_graph(scene: &Scene, shm: &str, msg: &str, serial: &str) -> serde_json::Value {
    scene.file("shm.py", SHM_READ);
    scene.file("msg.py", MSG_READ);
    scene.file("key.py", KEY_READ);
    one_step(
        read_only(),
        &[
            ("shm", format!("python3 shm.py {shm}")),
            ("msg", format!("python3 msg.py {msg}")),
            (
                "key",
                format!("python3 key.py {serial} {}", nix::libc::SYS_keyctl),
            ),
        ],
    )
}

#[test]
fn the_hosts_shared_memory_and_the_callers_keys_are_out_of_reach() {
    let mut scene = Scene::new();
    let (shm_secret, msg_secret, key_secret) = (fresh("shm"), fresh("msg"), fresh("key"));
    let (shm, msg) = (shared_memory(&shm_secret), message_queue(&msg_secret));
    let serial = user_key(&key_secret);
    scene.secret_elsewhere(&shm_secret, "a SysV shared memory segment");
    scene.secret_elsewhere(&msg_secret, "a SysV message queue");
    scene.secret_elsewhere(&key_secret, "a key in the caller's user keyring");
    let a = scene.run(&ipc_graph(&scene, &shm, &msg, &serial), &How::sandboxed());
    let mut control = Scene::new();
    control.secret_elsewhere(&shm_secret, "a SysV shared memory segment");
    control.secret_elsewhere(&msg_secret, "a SysV message queue");
    control.secret_elsewhere(&key_secret, "a key in the caller's user keyring");
    let c = control.run(
        &ipc_graph(&control, &shm, &msg, &serial),
        &How::unconfined(),
    );
    let _ = std::process::Command::new("ipcrm")
        .args(["-m", &shm, "-q", &msg])
        .output();
    let _ = std::process::Command::new("python3")
        .args([
            "-c",
            "import ctypes,sys\nctypes.CDLL(None).syscall(int(sys.argv[2]),9,int(sys.argv[1]),-4)",
            &serial,
            &nix::libc::SYS_keyctl.to_string(),
        ])
        .output();
    a.held()
        .attempted("step", "shm", "refused", "shmat: errno")
        .attempted("step", "msg", "refused", "msgrcv: errno")
        .attempted("step", "key", "refused", "keyctl: errno");
    // Control: unconfined, the same graph reads both secrets.
    assert!(
        c.leaked.iter().any(|l| l.contains("shared memory")),
        "{:?}",
        c.leaked
    );
    assert!(
        c.leaked.iter().any(|l| l.contains("message queue")),
        "{:?}",
        c.leaked
    );
    assert!(
        c.leaked.iter().any(|l| l.contains("keyring")),
        "{:?}",
        c.leaked
    );
}

#[test]
fn raw_and_packet_sockets_are_refused_even_with_full_network() {
    let scene = Scene::new();
    scene.file(
        "sock.py",
        "import socket,sys\nkinds={'raw':(socket.AF_INET,socket.SOCK_RAW,socket.IPPROTO_ICMP),\
         'raw6':(socket.AF_INET6,socket.SOCK_RAW,socket.IPPROTO_ICMPV6),\
         'packet':(socket.AF_PACKET,socket.SOCK_RAW,0),\
         'icmp':(socket.AF_INET,socket.SOCK_DGRAM,socket.IPPROTO_ICMP),\
         'tcp':(socket.AF_INET,socket.SOCK_STREAM,0)}\nsocket.socket(*kinds[sys.argv[1]])\n",
    );
    let list: Vec<(&str, String)> = ["raw", "raw6", "packet", "icmp", "tcp"]
        .iter()
        .map(|k| (*k, format!("python3 sock.py {k}")))
        .collect();
    let g = one_step(
        json!({"permissions": ["fs:read:**"], "network": "full"}),
        &list,
    );
    let a = scene.run(&g, &How::sandboxed());
    a.held()
        .attempted("step", "raw", "refused", "PermissionError")
        .attempted("step", "raw6", "refused", "PermissionError")
        .attempted("step", "packet", "refused", "PermissionError")
        .attempted("step", "icmp", "refused", "PermissionError")
        .attempted("step", "tcp", "done", "");
    if is_root() {
        // Control: a root weft's unconfined step opens a raw socket.
        let c = scene.run(&g, &How::unconfined());
        c.attempted("step", "raw", "done", "");
    }
}

//! Class 2, root keeps root: whoever starts weft, a job holds no capability and cannot get
//! one back, makes no device node, sees none of the host's SysV IPC objects, cannot rename
//! the host, open a raw or packet socket, or reach the caller's kernel keyrings. Run as root
//! (CI) these are the attacks that escaped; run as an unprivileged user they must hold too.

use weft_sandbox::{Confinement, NetAccess};

use crate::common::*;

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn python_args(code: &str, args: &[String]) -> Vec<String> {
    let mut argv = vec![
        "/usr/bin/python3".to_owned(),
        "-c".to_owned(),
        code.to_owned(),
    ];
    argv.extend(args.iter().cloned());
    argv
}

/// The same program outside the sandbox (the control).
fn unconfined(argv: &[String]) -> std::process::Output {
    std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_holds_no_capability_in_any_set_and_has_no_new_privs() {
    let (_dir, ws) = workspace();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        ..Confinement::minimal()
    };
    // The command is the process the helper became, so its own /proc entry is readable.
    let code = "print(''.join(l for l in open('/proc/self/status') \
                if l.startswith(('Cap', 'NoNewPrivs', 'Uid'))))";
    let argv = python_args(code, &[]);
    let o = run_in(&ws, &argv, &c, &env()).await.unwrap();
    let status = text(&o.stdout);
    for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        let line = status
            .lines()
            .find(|l| l.starts_with(set))
            .unwrap_or_else(|| panic!("no {set} in {status:?}, stderr {}", text(&o.stderr)));
        assert!(line.ends_with("0000000000000000"), "{line}");
    }
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    // Control: outside the sandbox root holds a full bounding set.
    let control = text(&unconfined(&argv).stdout);
    assert!(
        !control.contains("CapBnd:\t0000000000000000"),
        "the control already has an empty bounding set: {control}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn no_character_or_block_device_can_be_made_in_a_write_root() {
    let (_dir, ws) = workspace();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        write_roots: vec![ws.join("out")],
        workspace: Some(ws.clone()),
        ..Confinement::minimal()
    };
    // The kernel log (char 1:11), memory (1:1), a disk (block 8:0) and a loop device (7:0),
    // by the shell's mknod and by the syscall from Python; a FIFO is the control.
    let script = "mknod out/kmsg c 1 11; mknod out/mem c 1 1; mknod out/sda b 8 0; \
                  mknod out/fifo p; \
                  python3 -c 'import os,stat\nfor n,m in ((\"pyc\",stat.S_IFCHR),(\"pyb\",stat.S_IFBLK)):\n  \
                  try: os.mknod(\"out/\"+n, m|0o600, os.makedev(7,0)); print(\"made\",n)\n  \
                  except OSError as e: print(\"refused\",n,e.errno)'; ls out";
    let o = run_in(&ws, &sh(script), &c, &env()).await.unwrap();
    let out = text(&o.stdout);
    for name in ["kmsg", "mem", "sda", "pyc", "pyb"] {
        assert!(
            !ws.join("out").join(name).exists(),
            "device node {name} was made: {out} {}",
            text(&o.stderr)
        );
    }
    assert!(
        out.contains("refused pyc") && out.contains("refused pyb"),
        "{out}"
    );
    assert!(
        ws.join("out/fifo").exists(),
        "a FIFO is no device and must stay allowed: {}",
        text(&o.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_hostname_cannot_be_changed() {
    let (_dir, ws) = workspace();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        ..Confinement::minimal()
    };
    let before = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let code = "import socket\ntry:\n  socket.sethostname('weft-escaped'); print('renamed')\n\
                except OSError as e: print('refused', e.errno)";
    let o = run_in(&ws, &python_args(code, &[]), &c, &env())
        .await
        .unwrap();
    assert!(
        text(&o.stdout).starts_with("refused"),
        "{} {}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap(),
        before
    );
}

/// Makes a SysV shared memory segment and message queue with `ipcmk`, returns their ids.
fn host_ipc_objects() -> (String, String) {
    let id = |flag: &str| {
        let out = std::process::Command::new("ipcmk")
            .args(
                [flag, if flag == "-M" { "4096" } else { "" }]
                    .iter()
                    .filter(|a| !a.is_empty()),
            )
            .output()
            .unwrap();
        let line = text(&out.stdout);
        line.rsplit(':')
            .next()
            .unwrap()
            .trim()
            .parse::<i64>()
            .unwrap_or_else(|_| panic!("ipcmk {flag}: {line} {}", text(&out.stderr)))
            .to_string()
    };
    (id("-M"), id("-Q"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_hosts_sysv_shared_memory_and_message_queues_are_not_visible() {
    let (_dir, ws) = workspace();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        ..Confinement::minimal()
    };
    let (shm, msg) = host_ipc_objects();
    // IPC_STAT (2) on the host's ids: 0 where they are visible.
    let code = "import ctypes,sys\nlibc=ctypes.CDLL(None)\nbuf=ctypes.create_string_buffer(512)\n\
                print(libc.shmctl(int(sys.argv[1]),2,buf), libc.msgctl(int(sys.argv[2]),2,buf))";
    let argv = python_args(code, &[shm.clone(), msg.clone()]);
    let o = run_in(&ws, &argv, &c, &env()).await.unwrap();
    let control = unconfined(&argv);
    let _ = std::process::Command::new("ipcrm")
        .args(["-m", &shm, "-q", &msg])
        .output();
    assert_eq!(text(&o.stdout), "-1 -1\n", "{}", text(&o.stderr));
    assert_eq!(text(&control.stdout), "0 0\n", "{}", text(&control.stderr));
}

#[tokio::test(flavor = "multi_thread")]
async fn raw_and_packet_sockets_are_refused_even_with_full_network() {
    let (_dir, ws) = workspace();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        net: NetAccess::Full,
        ..Confinement::minimal()
    };
    let code = "import socket\n\
                tries = (('raw', (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)), \
                ('raw6', (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)), \
                ('packet', (socket.AF_PACKET, socket.SOCK_RAW, 0)), \
                ('icmp', (socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)), \
                ('tcp', (socket.AF_INET, socket.SOCK_STREAM, 0)))\n\
                for name, args in tries:\n  \
                try: socket.socket(*args); print(name, 'opened')\n  \
                except OSError: print(name, 'refused')";
    let argv = python_args(code, &[]);
    let o = run_in(&ws, &argv, &c, &env()).await.unwrap();
    assert_eq!(
        text(&o.stdout),
        "raw refused\nraw6 refused\npacket refused\nicmp refused\ntcp opened\n",
        "{}",
        text(&o.stderr)
    );
    if is_root() {
        // Control: root outside the sandbox opens a raw socket.
        assert!(text(&unconfined(&argv).stdout).contains("raw opened"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_callers_kernel_keyring_is_out_of_reach() {
    let (_dir, ws) = workspace();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        ..Confinement::minimal()
    };
    let description = marker("key");
    // add_key("user", description, "SECRET", KEY_SPEC_USER_KEYRING) in this process's user
    // keyring, then the job reads it by serial (KEYCTL_READ) and looks it up (request_key).
    let add = "import ctypes,sys\nlibc=ctypes.CDLL(None)\n\
               print(libc.syscall(int(sys.argv[1]),b'user',sys.argv[2].encode(),b'SECRET',6,-4))";
    let serial = text(
        &unconfined(&python_args(
            add,
            &[libc::SYS_add_key.to_string(), description.clone()],
        ))
        .stdout,
    )
    .trim()
    .to_owned();
    assert!(serial.parse::<i64>().unwrap() > 0, "add_key: {serial}");
    let read = "import ctypes,sys\nlibc=ctypes.CDLL(None)\nbuf=ctypes.create_string_buffer(64)\n\
                n=libc.syscall(int(sys.argv[1]),11,int(sys.argv[3]),buf,64)\n\
                r=libc.syscall(int(sys.argv[2]),b'user',sys.argv[4].encode(),None,0)\n\
                print(n, buf.value.decode(), r > 0)";
    let argv = python_args(
        read,
        &[
            libc::SYS_keyctl.to_string(),
            libc::SYS_request_key.to_string(),
            serial.clone(),
            description,
        ],
    );
    let o = run_in(&ws, &argv, &c, &env()).await.unwrap();
    let control = unconfined(&argv);
    // Unlink the key from the user keyring (KEYCTL_UNLINK).
    let _ = unconfined(&python_args(
        "import ctypes,sys\nctypes.CDLL(None).syscall(int(sys.argv[1]),9,int(sys.argv[2]),-4)",
        &[libc::SYS_keyctl.to_string(), serial],
    ));
    assert_eq!(text(&o.stdout), "-1  False\n", "{}", text(&o.stderr));
    assert_eq!(
        text(&control.stdout),
        "6 SECRET True\n",
        "{}",
        text(&control.stderr)
    );
}

//! The network: no socket without a grant, only the granted TCP ports with one.

use std::time::Duration;

use weft_sandbox::{Confinement, NetAccess};

use crate::common::*;

#[tokio::test(flavor = "multi_thread")]
async fn the_network_is_unreachable_without_a_grant() {
    let (_dir, ws) = workspace();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        ..Confinement::minimal()
    };
    let o = run_in(&ws, &python(CONNECT, &port.to_string()), &c, &env())
        .await
        .unwrap();
    assert_ne!(o.exit_code, Some(0));
    assert!(
        text(&o.stderr).contains("PermissionError"),
        "{}",
        text(&o.stderr)
    );
    assert!(listener.accept().is_err(), "the listener was reached");
    // UDP (which Landlock does not cover) is refused by the seccomp filter.
    let udp = "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', 9))";
    let o = run_in(&ws, &python(udp, ""), &c, &env()).await.unwrap();
    assert!(
        text(&o.stderr).contains("PermissionError"),
        "{}",
        text(&o.stderr)
    );
    // A granted port is reachable; another port is not.
    let granted = Confinement {
        net: NetAccess::Ports { ports: vec![port] },
        ..c.clone()
    };
    let o = run_in(&ws, &python(CONNECT, &port.to_string()), &granted, &env())
        .await
        .unwrap();
    assert_eq!(text(&o.stdout), "connected\n", "{}", text(&o.stderr));
    assert!(listener.accept().is_ok());
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    other.set_nonblocking(true).unwrap();
    let other_port = other.local_addr().unwrap().port();
    let o = run_in(
        &ws,
        &python(CONNECT, &other_port.to_string()),
        &granted,
        &env(),
    )
    .await
    .unwrap();
    assert!(
        text(&o.stderr).contains("PermissionError"),
        "{}",
        text(&o.stderr)
    );
    assert!(other.accept().is_err());
}

/// Every way to another TCP port than the granted one: Fast Open (`sendto` with
/// `MSG_FASTOPEN`, which connects without `connect`), `sendmsg` with the same flag, a listen
/// without bind (which binds a port implicitly), and a raw socket.
const OTHER_PATHS: &str = "import socket,sys\nport=int(sys.argv[1])\n\
def attempt(name,f):\n  try: f(); print(name,'reached')\n  except OSError: print(name,'refused')\n\
def tfo():\n  s=socket.socket(); s.sendto(b'x', socket.MSG_FASTOPEN, ('127.0.0.1',port))\n\
def tfo_msg():\n  s=socket.socket(); s.sendmsg([b'x'], [], socket.MSG_FASTOPEN, ('127.0.0.1',port))\n\
def listen():\n  s=socket.socket(); s.listen(1)\n\
def raw():\n  socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)\n\
for n,f in (('fastopen',tfo),('fastopen_msg',tfo_msg),('listen',listen),('raw',raw)): attempt(n,f)";

#[tokio::test(flavor = "multi_thread")]
async fn a_port_grant_reaches_no_other_port_by_any_syscall() {
    let (_dir, ws) = workspace();
    let granted = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    other.set_nonblocking(true).unwrap();
    let (port, other_port) = (
        granted.local_addr().unwrap().port(),
        other.local_addr().unwrap().port(),
    );
    let c = Confinement {
        read_roots: vec![ws.clone()],
        net: NetAccess::Ports { ports: vec![port] },
        ..Confinement::minimal()
    };
    let argv = python(OTHER_PATHS, &other_port.to_string());
    let o = run_in(&ws, &argv, &c, &env()).await.unwrap();
    assert_eq!(
        text(&o.stdout),
        "fastopen refused\nfastopen_msg refused\nlisten refused\nraw refused\n",
        "{}",
        text(&o.stderr)
    );
    assert!(other.accept().is_err(), "the other port was reached");
    // The granted port stays reachable (the filter is not a blanket refusal).
    let o = run_in(&ws, &python(CONNECT, &port.to_string()), &c, &env())
        .await
        .unwrap();
    assert_eq!(text(&o.stdout), "connected\n", "{}", text(&o.stderr));
    // Control: outside the sandbox Fast Open reaches the other port.
    let control = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .unwrap();
    assert!(
        text(&control.stdout).contains("fastopen reached"),
        "{}",
        text(&control.stdout)
    );
    std::thread::sleep(Duration::from_millis(100));
    assert!(other.accept().is_ok(), "the control did not connect");
}

/// Every way to send a UDP datagram: `sendto` on a fresh socket, `connect` then `send`, and a
/// `SOCK_DGRAM` socket asked for by protocol number.
const UDP_PATHS: &str = "import socket,sys\nport=int(sys.argv[1])\n\
def attempt(name,f):\n  try: f(); print(name,'sent')\n  except OSError: print(name,'refused')\n\
def sendto():\n  socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'sendto', ('127.0.0.1',port))\n\
def connected():\n  s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(('127.0.0.1',port)); s.send(b'connected')\n\
def by_protocol():\n  socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP).sendto(b'proto', ('127.0.0.1',port))\n\
def v6():\n  socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).sendto(b'v6', ('::ffff:127.0.0.1',port))\n\
for n,f in (('sendto',sendto),('connected',connected),('by_protocol',by_protocol),('v6',v6)): attempt(n,f)";

#[tokio::test(flavor = "multi_thread")]
async fn a_port_grant_sends_no_udp_datagram_anywhere() {
    let (_dir, ws) = workspace();
    let granted = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let c = Confinement {
        read_roots: vec![ws.clone()],
        net: NetAccess::Ports {
            ports: vec![granted.local_addr().unwrap().port()],
        },
        ..Confinement::minimal()
    };
    let argv = python(UDP_PATHS, &udp_port.to_string());
    let o = run_in(&ws, &argv, &c, &env()).await.unwrap();
    assert_eq!(
        text(&o.stdout),
        "sendto refused\nconnected refused\nby_protocol refused\nv6 refused\n",
        "{}",
        text(&o.stderr)
    );
    let mut buf = [0u8; 64];
    assert!(
        udp.recv_from(&mut buf).is_err(),
        "a datagram from the job arrived"
    );
    // Control: outside the sandbox the same program's datagrams arrive.
    let control = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .unwrap();
    assert!(
        text(&control.stdout).contains("sendto sent"),
        "{}",
        text(&control.stdout)
    );
    let (n, _) = udp.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"sendto");
}

/// Resolves each name, then connects to the first by name: one line per name.
const RESOLVE: &str = "import socket,sys\nport=int(sys.argv[1])\n\
def look(label,h):\n  try: socket.getaddrinfo(h, port); print(label, 'resolved')\n  except OSError: print(label, 'unresolved')\n\
look('localhost','localhost'); look('hostname', socket.gethostname())\n\
try: socket.create_connection(('localhost', port), timeout=5); print('connected by name')\n\
except OSError as e: print('not connected', e)";

#[tokio::test(flavor = "multi_thread")]
async fn a_port_grant_resolves_its_granted_names_and_no_others() {
    let (_dir, ws) = workspace();
    let granted = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = granted.local_addr().unwrap().port();
    let mut c = Confinement {
        read_roots: vec![ws.clone()],
        net: NetAccess::Ports { ports: vec![port] },
        resolve: vec!["localhost".into()],
        ..Confinement::minimal()
    };
    let argv = python(RESOLVE, &port.to_string());
    let o = run_in(&ws, &argv, &c, &env()).await.unwrap();
    assert_eq!(
        text(&o.stdout),
        "localhost resolved\nhostname unresolved\nconnected by name\n",
        "{}",
        text(&o.stderr)
    );
    // Control: without the name in the grant nothing resolves (the job has no DNS and no
    // /etc/hosts of the host's).
    c.resolve.clear();
    let o = run_in(&ws, &argv, &c, &env()).await.unwrap();
    assert!(
        text(&o.stdout).starts_with("localhost unresolved\nhostname unresolved\nnot connected"),
        "{}",
        text(&o.stdout)
    );
}

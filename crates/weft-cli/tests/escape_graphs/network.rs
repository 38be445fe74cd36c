//! Class 4, the network: no socket without a grant; under a port grant only that TCP port,
//! by any syscall (Fast Open by `sendto` and `sendmsg`, a listen without bind, a raw socket),
//! no UDP datagram by any path, and only the granted name resolves.

use std::net::{TcpListener, UdpSocket};
use std::time::Duration;

use serde_json::json;

use crate::harness::*;

/// `net.py WHAT PORT`: one way to reach `PORT` on the loopback; exits non-zero when refused.
const NET: &str = "import socket,sys\nwhat,port=sys.argv[1],int(sys.argv[2])\n\
lo=('127.0.0.1',port)\n\
def connect(): socket.create_connection(lo,timeout=5); print('connected')\n\
def fastopen(): socket.socket().sendto(b'x', socket.MSG_FASTOPEN, lo)\n\
def fastopen_msg(): socket.socket().sendmsg([b'x'], [], socket.MSG_FASTOPEN, lo)\n\
def listen(): socket.socket().listen(1)\n\
def raw(): socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)\n\
def udp(): socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'udp', lo)\n\
def udp_connected():\n  s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(lo); s.send(b'udp')\n\
def udp_protocol(): socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP).sendto(b'udp', lo)\n\
def udp_v6(): socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).sendto(b'udp', ('::ffff:127.0.0.1',port))\n\
def resolve_granted(): socket.getaddrinfo('localhost', port); print('resolved')\n\
def resolve_other(): socket.getaddrinfo(socket.gethostname(), port); print('resolved')\n\
def by_name(): socket.create_connection(('localhost',port),timeout=5); print('connected')\n\
globals()[what]()";

struct Targets {
    granted: TcpListener,
    other: TcpListener,
    udp: UdpSocket,
}

impl Targets {
    fn new() -> Targets {
        let t = Targets {
            granted: TcpListener::bind("127.0.0.1:0").unwrap(),
            other: TcpListener::bind("127.0.0.1:0").unwrap(),
            udp: UdpSocket::bind("127.0.0.1:0").unwrap(),
        };
        t.other.set_nonblocking(true).unwrap();
        t.granted.set_nonblocking(true).unwrap();
        t.udp
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        t
    }

    fn port(l: &TcpListener) -> u16 {
        l.local_addr().unwrap().port()
    }

    fn other_reached(&self) -> bool {
        std::thread::sleep(Duration::from_millis(50));
        self.other.accept().is_ok()
    }

    fn datagram_arrived(&self) -> bool {
        self.udp.recv_from(&mut [0u8; 16]).is_ok()
    }

    fn graph(&self) -> serde_json::Value {
        let (granted, other) = (Self::port(&self.granted), Self::port(&self.other));
        let udp = self.udp.local_addr().unwrap().port();
        let run = |list: &[(&str, &str, u16)]| {
            let list: Vec<(&str, String)> = list
                .iter()
                .map(|(n, what, port)| (*n, format!("python3 net.py {what} {port}")))
                .collect();
            attempts(&list)
        };
        let none = run(&[("connect", "connect", granted), ("udp", "udp", udp)]);
        let restricted = run(&[
            ("granted", "connect", granted),
            ("other", "connect", other),
            ("fastopen", "fastopen", other),
            ("fastopen_msg", "fastopen_msg", other),
            ("listen", "listen", other),
            ("raw", "raw", other),
            ("udp", "udp", udp),
            ("udp_connected", "udp_connected", udp),
            ("udp_protocol", "udp_protocol", udp),
            ("udp_v6", "udp_v6", udp),
            ("resolve_granted", "resolve_granted", granted),
            ("resolve_other", "resolve_other", granted),
            ("by_name", "by_name", granted),
        ]);
        graph(
            json!({
                "none": exec(&none, Some(read_only())),
                "restricted": exec(&restricted, Some(json!({
                    "permissions": ["fs:read:**", format!("net:connect:http://localhost:{granted}")],
                    "network": "restricted"}))),
            }),
            &["none", "restricted"],
        )
    }
}

#[test]
fn only_the_granted_port_is_reachable_by_any_syscall_and_no_datagram_leaves() {
    let scene = Scene::new();
    scene.file("net.py", NET);
    let t = Targets::new();
    let a = scene.run(&t.graph(), &How::sandboxed());
    a.held()
        .attempted("none", "connect", "refused", "PermissionError")
        .attempted("none", "udp", "refused", "PermissionError")
        .attempted("restricted", "granted", "done", "connected")
        .attempted("restricted", "by_name", "done", "connected")
        .attempted("restricted", "resolve_granted", "done", "resolved")
        .attempted("restricted", "resolve_other", "refused", "gaierror");
    for name in [
        "other",
        "fastopen",
        "fastopen_msg",
        "listen",
        "raw",
        "udp",
        "udp_connected",
        "udp_protocol",
        "udp_v6",
    ] {
        a.attempted("restricted", name, "refused", "PermissionError");
    }
    assert!(!t.other_reached(), "the other port was reached");
    assert!(!t.datagram_arrived(), "a datagram from the step arrived");
    // Control: unconfined, the same graph reaches the other port and sends datagrams.
    let c = scene.run(&t.graph(), &How::unconfined());
    c.attempted("restricted", "other", "done", "connected");
    assert!(t.other_reached(), "the control did not connect");
    assert!(
        t.datagram_arrived(),
        "the control's datagram did not arrive"
    );
}

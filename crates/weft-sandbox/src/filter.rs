//! The job's seccomp filters (Linux), refusing with `EACCES`:
//!
//! - `socket(2)`: every family without a net grant; with one, every family but `AF_INET` and
//!   `AF_INET6`, the types `SOCK_RAW`, `SOCK_RDM`, `SOCK_SEQPACKET`, `SOCK_DCCP` and
//!   `SOCK_PACKET`, and every protocol but the default, TCP and UDP (SCTP, MPTCP and ICMP
//!   would pass beside Landlock's TCP rules); with a grant of ports (not `full`) also every
//!   datagram socket (`SOCK_DGRAM`, `IPPROTO_UDP`): UDP would reach any host and port;
//! - with a net grant of ports (not `full`): `listen(2)` (a listen without `bind` binds a
//!   port implicitly, which Landlock's bind rule does not see) and `sendto`, `sendmsg`,
//!   `sendmmsg` with `MSG_FASTOPEN` (a TCP Fast Open connects without `connect(2)`);
//! - `io_uring_setup` (its ring performs socket and file operations around the filter);
//! - `mknod`/`mknodat` of a character or block device (FIFOs and sockets stay allowed);
//! - `keyctl`, `add_key`, `request_key`: the kernel keyrings of the user who started weft
//!   are out of reach.

use std::collections::BTreeMap;

use seccompiler::{
    BackendError, BpfProgram, Error, SeccompAction, SeccompCmpArgLen, SeccompCmpOp,
    SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

use crate::confinement::NetAccess;

const MSG_FASTOPEN: u64 = 0x2000_0000;
const S_IFMT: u64 = 0o170_000;
/// The obsolete packet socket type (libc deprecates its constant in favour of `AF_PACKET`,
/// which the family rule refuses; the type is refused as well).
const SOCK_PACKET: libc::c_int = 10;

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, BackendError> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
}

fn ne(arg: u8, value: libc::c_int) -> Result<SeccompCondition, BackendError> {
    cond(arg, SeccompCmpOp::Ne, u64::from(value.unsigned_abs()))
}

fn masked(arg: u8, mask: u64, value: u64) -> Result<SeccompCondition, BackendError> {
    cond(arg, SeccompCmpOp::MaskedEq(mask), value)
}

/// The rules of `socket(2)` for `net` (an empty list matches every call).
fn socket_rules(net: &NetAccess) -> Result<Vec<SeccompRule>, BackendError> {
    if *net == NetAccess::None {
        return Ok(Vec::new());
    }
    let mut rules = vec![
        SeccompRule::new(vec![ne(0, libc::AF_INET)?, ne(0, libc::AF_INET6)?])?,
        SeccompRule::new(vec![
            ne(2, 0)?,
            ne(2, libc::IPPROTO_TCP)?,
            ne(2, libc::IPPROTO_UDP)?,
        ])?,
    ];
    if matches!(net, NetAccess::Ports { .. }) {
        // UDP: Landlock has no rule for it and seccomp cannot see a datagram's destination,
        // so a port grant (which names TCP ports) allows no datagram socket at all.
        rules.push(SeccompRule::new(vec![masked(
            1,
            0xf,
            u64::from(libc::SOCK_DGRAM.unsigned_abs()),
        )?])?);
        rules.push(SeccompRule::new(vec![cond(
            2,
            SeccompCmpOp::Eq,
            u64::from(libc::IPPROTO_UDP.unsigned_abs()),
        )?])?);
    }
    for ty in [
        libc::SOCK_RAW,
        libc::SOCK_RDM,
        libc::SOCK_SEQPACKET,
        libc::SOCK_DCCP,
        SOCK_PACKET,
    ] {
        rules.push(SeccompRule::new(vec![masked(
            1,
            0xf,
            u64::from(ty.unsigned_abs()),
        )?])?);
    }
    Ok(rules)
}

/// `mknod(path, mode, dev)` / `mknodat(dirfd, path, mode, dev)` of a device: `mode` is
/// argument `arg`.
fn device_rules(arg: u8) -> Result<Vec<SeccompRule>, BackendError> {
    [libc::S_IFCHR, libc::S_IFBLK]
        .into_iter()
        .map(|kind| SeccompRule::new(vec![masked(arg, S_IFMT, u64::from(kind))?]))
        .collect()
}

/// The filters of a job with network access `net` (see the module docs). Each survives
/// `execve`; the first refuses with `EACCES`.
pub(crate) fn filters(net: &NetAccess) -> Result<Vec<BpfProgram>, Error> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, socket_rules(net)?);
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    rules.insert(libc::SYS_mknodat, device_rules(2)?);
    #[cfg(target_arch = "x86_64")]
    rules.insert(libc::SYS_mknod, device_rules(1)?);
    for keyring in [libc::SYS_keyctl, libc::SYS_add_key, libc::SYS_request_key] {
        rules.insert(keyring, Vec::new());
    }
    if matches!(net, NetAccess::Ports { .. }) {
        rules.insert(libc::SYS_listen, Vec::new());
        let fast_open = |arg: u8| -> Result<Vec<SeccompRule>, BackendError> {
            Ok(vec![SeccompRule::new(vec![masked(
                arg,
                MSG_FASTOPEN,
                MSG_FASTOPEN,
            )?])?])
        };
        rules.insert(libc::SYS_sendto, fast_open(3)?);
        rules.insert(libc::SYS_sendmsg, fast_open(2)?);
        rules.insert(libc::SYS_sendmmsg, fast_open(3)?);
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES.unsigned_abs()),
        arch,
    )?;
    Ok(vec![BpfProgram::try_from(filter)?])
}

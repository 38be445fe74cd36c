//! The Linux mechanisms behind [`crate::helper::confine`]: rlimits (rustix), Landlock
//! filesystem, TCP and scope rules (ABI 6: handled fs rights including truncate and device
//! ioctls, TCP bind/connect, abstract-socket and signal scoping), and a seccomp filter that
//! refuses `socket(2)` for every family but those the grant allows, and `io_uring_setup`
//! (whose ring could perform socket operations around the filter).

use std::collections::BTreeMap;
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, LandlockStatus, NetPort, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};
use rustix::process::{Resource, Rlimit, setrlimit};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::confinement::{Confinement, NetAccess, SYSTEM_READ_PATHS, SYSTEM_WRITE_PATHS};
use crate::helper::{ApplyError, Enforcement};

/// The Landlock ABI weft's rules are written against.
const ABI_USED: ABI = ABI::V6;

pub(crate) fn confine(c: &Confinement) -> Result<Enforcement, ApplyError> {
    rlimits(c)?;
    let (abi, status, no_new_privs) = landlock(c)?;
    let filter = socket_filter(&c.net).map_err(|e| ApplyError::Seccomp(e.to_string()))?;
    seccompiler::apply_filter(&filter).map_err(|e| ApplyError::Seccomp(e.to_string()))?;
    Ok(Enforcement {
        landlock_abi: abi,
        landlock: status,
        no_new_privs,
        seccomp: true,
        rlimits: true,
        pid_namespace: false,
        user_namespace: false,
        namespace_error: None,
    })
}

fn rlimits(c: &Confinement) -> Result<(), ApplyError> {
    let set = |r: Resource, name: &'static str, soft: u64, hard: u64| {
        setrlimit(
            r,
            Rlimit {
                current: Some(soft),
                maximum: Some(hard),
            },
        )
        .map_err(|e| ApplyError::Rlimit(name, e.into()))
    };
    // No core dumps: a crashing tool must not write its memory (and secrets) to disk.
    set(Resource::Core, "RLIMIT_CORE", 0, 0)?;
    if let Some(s) = c.cpu_seconds {
        // SIGXCPU at the soft limit, SIGKILL at the hard one for a process that ignores it.
        set(Resource::Cpu, "RLIMIT_CPU", s, s.saturating_add(1))?;
    }
    if let Some(b) = c.max_file_bytes {
        set(Resource::Fsize, "RLIMIT_FSIZE", b, b)?;
    }
    Ok(())
}

fn ll(e: impl std::fmt::Display) -> ApplyError {
    ApplyError::Landlock(e.to_string())
}

fn landlock(c: &Confinement) -> Result<(u32, String, bool), ApplyError> {
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI_USED))
        .map_err(ll)?;
    if c.net != NetAccess::Full {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI_USED))
            .map_err(ll)?;
    }
    let ruleset = ruleset.scope(Scope::from_all(ABI_USED)).map_err(ll)?;
    let mut created = ruleset.create().map_err(ll)?;
    let read = AccessFs::from_read(ABI_USED);
    let all = AccessFs::from_all(ABI_USED);
    for p in SYSTEM_READ_PATHS
        .iter()
        .map(Path::new)
        .chain(c.read_roots.iter().map(|p| p.as_path()))
    {
        created = allow(created, p, read)?;
    }
    for p in SYSTEM_WRITE_PATHS
        .iter()
        .map(Path::new)
        .chain(c.write_roots.iter().map(|p| p.as_path()))
    {
        created = allow(created, p, all)?;
    }
    if let NetAccess::Ports { ports } = &c.net {
        for &port in ports {
            created = created
                .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
                .map_err(ll)?;
        }
    }
    let status = created.restrict_self().map_err(ll)?;
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi as u32,
        _ => 0,
    };
    let name = match status.ruleset {
        RulesetStatus::FullyEnforced => "fully_enforced",
        RulesetStatus::PartiallyEnforced => "partially_enforced",
        RulesetStatus::NotEnforced => "not_enforced",
    };
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(ApplyError::NotEnforced {
            status: name.replace('_', " "),
            abi,
        });
    }
    Ok((abi, name.to_owned(), status.no_new_privs))
}

/// Adds a path-beneath rule; a missing path grants nothing and is skipped. A file gets only
/// the rights that apply to files (Landlock refuses directory rights on a file).
fn allow(
    created: RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<RulesetCreated, ApplyError> {
    let Ok(fd) = PathFd::new(path) else {
        return Ok(created);
    };
    let access = if path.is_dir() {
        access
    } else {
        access & AccessFs::from_file(ABI_USED)
    };
    created.add_rule(PathBeneath::new(fd, access)).map_err(ll)
}

fn socket_filter(net: &NetAccess) -> Result<BpfProgram, seccompiler::Error> {
    let allowed: &[libc::c_int] = match net {
        NetAccess::None => &[],
        NetAccess::Ports { .. } | NetAccess::Full => &[libc::AF_INET, libc::AF_INET6],
    };
    let mut conditions = Vec::new();
    for &family in allowed {
        conditions.push(SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            u64::from(family.unsigned_abs()),
        )?);
    }
    // An empty rule list matches the syscall whatever its arguments.
    let socket_rules = if conditions.is_empty() {
        Vec::new()
    } else {
        vec![SeccompRule::new(conditions)?]
    };
    let rules: BTreeMap<i64, Vec<SeccompRule>> = [
        (libc::SYS_socket, socket_rules),
        (libc::SYS_io_uring_setup, Vec::new()),
    ]
    .into_iter()
    .collect();
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES.unsigned_abs()),
        arch,
    )?;
    Ok(BpfProgram::try_from(filter)?)
}

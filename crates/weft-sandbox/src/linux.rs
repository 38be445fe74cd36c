//! The Linux mechanisms behind [`crate::helper::confine`], in order: inherited descriptors
//! closed (`fds`), every capability dropped (`caps`), `no_new_privs`, rlimits (rustix),
//! Landlock filesystem, TCP and scope rules (ABI 6: handled fs rights including truncate and
//! device ioctls, no device-node creation anywhere, TCP bind/connect, abstract-socket and
//! signal scoping; grant roots opened beneath the workspace without following links,
//! `beneath`), and a seccomp filter (`filter`).

use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, LandlockStatus, NetPort, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};
use rustix::process::{Resource, Rlimit, setrlimit};

use crate::confinement::{Confinement, NetAccess, SYSTEM_READ_PATHS, SYSTEM_WRITE_PATHS};
use crate::enforcement::{ApplyError, Enforcement};

/// The Landlock ABI weft's rules are written against.
const ABI_USED: ABI = ABI::V6;

pub(crate) fn confine(c: &Confinement) -> Result<Enforcement, ApplyError> {
    crate::fds::close_inherited().map_err(ApplyError::Descriptors)?;
    crate::caps::drop_all().map_err(|e| ApplyError::Capabilities(e.to_string()))?;
    rustix::thread::set_no_new_privs(true)
        .map_err(|e| ApplyError::Capabilities(format!("cannot set no_new_privs: {e}")))?;
    rlimits(c)?;
    let (abi, status, no_new_privs) = landlock(c)?;
    for filter in crate::filter::filters(&c.net).map_err(|e| ApplyError::Seccomp(e.to_string()))? {
        seccompiler::apply_filter(&filter).map_err(|e| ApplyError::Seccomp(e.to_string()))?;
    }
    Ok(Enforcement {
        landlock_abi: abi,
        landlock: status,
        no_new_privs,
        seccomp: true,
        rlimits: true,
        capabilities_dropped: true,
        descriptors_closed: true,
        device_nodes_refused: true,
        keyring_refused: true,
        net_filter: true,
        ..Enforcement::default()
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
    // Every right but making device nodes: handled and granted nowhere, so refused everywhere.
    let all = AccessFs::from_all(ABI_USED) & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let ws = c.workspace.as_deref();
    // The hosts file of a port grant, shown as `/etc/hosts` (`protect::show_hosts`).
    let hosts = crate::protect::hosts_file(c).map(|_| Path::new("/etc/hosts"));
    for p in SYSTEM_READ_PATHS
        .iter()
        .map(Path::new)
        .chain(hosts)
        .chain(c.read_roots.iter().map(|p| p.as_path()))
    {
        created = allow(created, ws, p, read)?;
    }
    for p in SYSTEM_WRITE_PATHS
        .iter()
        .map(Path::new)
        .chain(c.write_roots.iter().map(|p| p.as_path()))
    {
        created = allow(created, ws, p, all)?;
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

/// Adds a path-beneath rule on the root as [`crate::beneath::open_root`] opens it; a missing
/// path grants nothing and is skipped, a root through a symbolic link refuses the job. A file
/// gets only the rights that apply to files (Landlock refuses directory rights on a file).
fn allow(
    created: RulesetCreated,
    workspace: Option<&Path>,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<RulesetCreated, ApplyError> {
    let root =
        crate::beneath::open_root(workspace, path).map_err(|e| ApplyError::Root(e.to_string()))?;
    let Some(root) = root else {
        return Ok(created);
    };
    let access = if root.is_dir {
        access
    } else {
        access & AccessFs::from_file(ABI_USED)
    };
    created
        .add_rule(PathBeneath::new(root.fd, access))
        .map_err(ll)
}

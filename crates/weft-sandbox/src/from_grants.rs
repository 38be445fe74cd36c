//! A node's effective permissions as a [`Confinement`]. Landlock works on directory trees, so
//! each fs glob becomes its literal prefix (`src/**` → `src`, `docs/*.md` → `docs`, `**` →
//! the workspace); the exact globs stay with the policy layer, which checks every tool call.
//! The node's layer and each container's are intersected: a root survives only where every
//! layer grants it or something above it (the deeper path wins).

use std::path::{Path, PathBuf};

use weft_policy::{
    Action, Context, Grants, Identity, Network, NodeGrants, OperatorPolicy, Scope, Verdict,
    Workspace, WorkspaceAccess, decide,
};

use crate::confinement::{Confinement, DEFAULT_MAX_PROCESSES, NetAccess};

/// weft's own state under a workspace (the store, the audit log, scratch copies, the tool
/// directory `.weft/bin`): read-only for every job whose write roots hold it.
pub const STATE_DIRS: &[&str] = &[".weft"];

/// The confinement of a node's commands in `workspace`: the default process cap, other
/// limits left unset; weft's state ([`STATE_DIRS`]) read-only.
pub fn confinement(workspace: &Workspace, grants: &NodeGrants) -> Confinement {
    let layers: Vec<&Grants> = std::iter::once(&grants.node)
        .chain(&grants.containers)
        .collect();
    let read = intersect_all(layers.iter().map(|g| roots(g, "read")).collect());
    let write = intersect_all(layers.iter().map(|g| roots(g, "write")).collect());
    let net = layers
        .iter()
        .map(|g| net(g))
        .reduce(narrower)
        .unwrap_or(NetAccess::None);
    let abs = |rel: Vec<String>| -> Vec<PathBuf> {
        rel.iter()
            .map(|r| PathBuf::from(workspace.absolute(r)))
            .collect()
    };
    let resolve = match &net {
        NetAccess::Ports { .. } => hosts_of(&grants.node),
        _ => Vec::new(),
    };
    let mut c = Confinement {
        read_roots: abs(read),
        write_roots: abs(write),
        net,
        resolve,
        max_processes: Some(DEFAULT_MAX_PROCESSES),
        workspace: Some(PathBuf::from(workspace.root())),
        ..Confinement::minimal()
    };
    let state: Vec<PathBuf> = STATE_DIRS
        .iter()
        .map(|d| PathBuf::from(workspace.absolute(d)))
        .collect();
    protect(&mut c, &state);
    c
}

/// Keeps `paths` read-only for the job (those a write root holds; others it cannot change
/// anyway): weft's store, audit log or scratch copies where they were put elsewhere in the
/// workspace.
pub fn protect(c: &mut Confinement, paths: &[PathBuf]) {
    for p in paths {
        let held = c.write_roots.iter().any(|r| p.starts_with(r));
        if held && !c.read_only.contains(p) {
            c.read_only.push(p.clone());
        }
    }
}

/// Narrows `c` by the operator policy through the same decision `weft policy explain` and
/// every tool call get ([`weft_policy::decide`], without a node: the node's grants are
/// already in `c`). A write or read root the policy refuses is dropped; inside the roots, the
/// literal directory of every refusing fs rule (`.git` for `deny fs:*:.git/**`) that the
/// policy refuses to write is kept read-only, and one it refuses to read is hidden. A
/// refusing rule whose glob says more than its literal directory (`**/*.pem`, `src/*.key`)
/// protects each file and directory that exists under the roots and the policy refuses, one
/// by one (the roots are walked; docs/permissions.md §6). A policy with no rules is not
/// applied: the sandbox is then bounded by the grants alone.
pub fn apply_policy(c: &mut Confinement, workspace: &Workspace, policy: &OperatorPolicy) {
    if policy.rules().is_empty() {
        return;
    }
    let identity = Identity {
        subject: "weft-sandbox".into(),
        session: None,
    };
    let cx = Context {
        workspace,
        policy,
        node: None,
        identity: &identity,
    };
    let allowed = |action: &str, rel: &str| {
        let a = Action {
            scope: "fs".into(),
            action: action.into(),
            target: Some(rel.into()),
            argv: None,
            tool: None,
            arguments: None,
        };
        decide(&a, &cx).decision == Verdict::Allow
    };
    let root = PathBuf::from(workspace.root());
    let rel = |p: &Path| -> Option<String> {
        let r = p.strip_prefix(&root).ok()?.to_str()?.to_owned();
        Some(if r.is_empty() { ".".into() } else { r })
    };
    c.write_roots
        .retain(|r| rel(r).is_none_or(|r| allowed("write", &r)));
    c.read_roots
        .retain(|r| rel(r).is_none_or(|r| allowed("read", &r)));
    for rule in policy.rules() {
        let p = rule.pattern.permission();
        if p.scope != Scope::Fs {
            continue;
        }
        let prefix = p
            .target
            .as_deref()
            .map_or_else(|| ".".to_owned(), literal_prefix);
        let at = PathBuf::from(workspace.absolute(&prefix));
        let beneath = |roots: &[PathBuf]| roots.iter().any(|r| at.starts_with(r) && at != *r);
        for action in ["write", "read"] {
            if p.action != "*" && p.action != action {
                continue;
            }
            let held = match action {
                "write" => beneath(&c.write_roots),
                _ => beneath(&c.write_roots) || beneath(&c.read_roots),
            };
            if !held || allowed(action, &prefix) {
                continue;
            }
            let list = if action == "write" {
                &mut c.read_only
            } else {
                &mut c.hidden
            };
            if !list.contains(&at) {
                list.push(at.clone());
            }
        }
    }
    let globbed: Vec<PathBuf> = policy
        .rules()
        .iter()
        .filter(|r| r.decision != Verdict::Allow)
        .map(|r| r.pattern.permission())
        .filter(|p| p.scope == Scope::Fs)
        .filter_map(|p| p.target.as_deref().filter(|t| beyond_prefix(t)))
        .map(|t| PathBuf::from(workspace.absolute(&literal_prefix(t))))
        .collect();
    if !globbed.is_empty() {
        protect_matches(c, &globbed, &rel, &allowed);
    }
}

/// Whether a glob says more than its literal directory: `**/*.pem` and `src/*.key` do,
/// `.git/**` and `**` do not (the directory stands for the whole of them).
fn beyond_prefix(target: &str) -> bool {
    let prefix = literal_prefix(target);
    let whole = if prefix == "." {
        "**".to_owned()
    } else {
        format!("{prefix}/**")
    };
    target.contains(['*', '?', '[', '{']) && target.trim_start_matches("./") != whole
}

/// The refusing rules whose target starts with (or holds) a glob (`deny fs:read:**/*.pem`):
/// the OS knows no globs, so every existing file or directory under the roots that the
/// policy refuses, below the literal directories `starts` of those rules, is protected on its
/// own — read-only where writing it is refused, hidden where reading it is. Symbolic links
/// are not followed (a link is its own name; what it points to is checked under its own).
/// A refused directory is hidden whole and not entered.
fn protect_matches(
    c: &mut Confinement,
    starts: &[PathBuf],
    rel: &dyn Fn(&Path) -> Option<String>,
    allowed: &dyn Fn(&str, &str) -> bool,
) {
    let roots: Vec<PathBuf> = c.read_roots.iter().chain(&c.write_roots).cloned().collect();
    let mut walk: Vec<PathBuf> = Vec::new();
    for at in starts {
        for r in &roots {
            let start = if at.starts_with(r) {
                at.clone()
            } else if r.starts_with(at) {
                r.clone()
            } else {
                continue;
            };
            if !walk.iter().any(|w| start.starts_with(w)) {
                walk.retain(|w| !w.starts_with(&start));
                walk.push(start);
            }
        }
    }
    let writable = |p: &Path, c: &Confinement| {
        c.write_roots.iter().any(|r| p.starts_with(r))
            && !c.read_only.iter().any(|r| p.starts_with(r))
    };
    let readable = |p: &Path, c: &Confinement| !c.hidden.iter().any(|h| p.starts_with(h));
    while let Some(dir) = walk.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_symlink() {
                continue;
            }
            let Some(r) = rel(&path) else { continue };
            if readable(&path, c) && !allowed("read", &r) {
                c.hidden.push(path);
                continue;
            }
            if writable(&path, c) && !allowed("write", &r) {
                c.read_only.push(path.clone());
            }
            if kind.is_dir() {
                walk.push(path);
            }
        }
    }
}

/// Creates the write roots that do not exist yet and stand for a directory (the literal
/// prefix of a glob such as `out/**`), so the node can write into them: Landlock can only
/// grant what exists. An exact path (`fs:write:NOTES.md`) is not created. Only roots of
/// `confinement` are considered, so nothing outside the intersection is made.
pub fn create_write_dirs(
    confinement: &Confinement,
    grants: &NodeGrants,
    workspace: &Workspace,
) -> std::io::Result<()> {
    let dir_roots: Vec<String> = grants
        .node
        .permissions
        .iter()
        .map(|m| m.permission())
        .filter(|p| p.scope == Scope::Fs && (p.action == "write" || p.action == "*"))
        .filter_map(|p| p.target.as_deref())
        .filter(|t| t.contains(['*', '?', '[', '{']))
        .map(|t| workspace.absolute(&literal_prefix(t)))
        .collect();
    let base = std::path::Path::new(&workspace.root()).to_path_buf();
    // weft's state directories a write root holds exist before the job, so they are kept
    // read-only (a missing one could be created, and `.weft/bin` planted, by the job).
    for dir in STATE_DIRS {
        let at = base.join(dir);
        if confinement.read_only.contains(&at) && std::fs::symlink_metadata(&at).is_err() {
            create_beneath(&base, &at)?;
        }
    }
    for root in &confinement.write_roots {
        let is_dir_root = root
            .to_str()
            .is_some_and(|r| dir_roots.iter().any(|d| d == r));
        if is_dir_root {
            create_beneath(&base, root)?;
        }
    }
    Ok(())
}

/// Creates the missing directories of `root` one component at a time from `base`, never
/// through a symbolic link: at a link it stops (the helper then refuses the grant and names
/// the link), so `out -> /elsewhere` with `fs:write:out/gen/**` makes nothing outside.
fn create_beneath(base: &std::path::Path, root: &std::path::Path) -> std::io::Result<()> {
    let Ok(rel) = root.strip_prefix(base) else {
        return Ok(());
    };
    let mut at = base.to_path_buf();
    // A root weft makes them the workspace owner's: a root weft's job runs as the step user,
    // who stands for the workspace's owner only (docs/permissions.md §6, "Identity").
    let owner = owner_for_root(base);
    for part in rel.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            // A link (refused by the helper) or a file (nothing to make): stop here.
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::create_dir(&at) {
                Ok(()) => {
                    if let Some((uid, gid)) = owner {
                        std::os::unix::fs::lchown(&at, Some(uid), Some(gid))?;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            },
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The owner of `base` when this process is root and `base` is someone else's (what it
/// makes there is then given to that owner); `None` otherwise.
fn owner_for_root(base: &Path) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    if !rustix::process::geteuid().is_root() {
        return None;
    }
    let m = std::fs::metadata(base).ok()?;
    (m.uid() != 0 || m.gid() != 0).then(|| (m.uid(), m.gid()))
}

/// The workspace-relative roots a layer grants for `action` (`read` or `write`).
fn roots(g: &Grants, action: &str) -> Vec<String> {
    let refused = matches!(
        (g.workspace, action),
        (WorkspaceAccess::None, _) | (WorkspaceAccess::ReadOnly, "write")
    );
    if refused {
        return Vec::new();
    }
    g.permissions
        .iter()
        .map(|m| m.permission())
        .filter(|p| p.scope == Scope::Fs && (p.action == action || p.action == "*"))
        .map(|p| {
            p.target
                .as_deref()
                .map_or_else(|| ".".to_owned(), literal_prefix)
        })
        .collect()
}

/// The path segments before the first glob metacharacter (`.` when there are none).
pub fn literal_prefix(glob: &str) -> String {
    let mut segs = Vec::new();
    for seg in glob.split('/') {
        if seg.contains(['*', '?', '[', '{', '\\']) {
            break;
        }
        if !seg.is_empty() && seg != "." {
            segs.push(seg);
        }
    }
    if segs.is_empty() {
        ".".into()
    } else {
        segs.join("/")
    }
}

fn within(path: &str, root: &str) -> bool {
    root == "." || path == root || path.starts_with(&format!("{root}/"))
}

/// Intersects two root sets: for each pair where one contains the other, the deeper.
fn intersect(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for x in a {
        for y in b {
            let deeper = if within(x, y) {
                Some(x)
            } else if within(y, x) {
                Some(y)
            } else {
                None
            };
            if let Some(d) = deeper.filter(|d| !out.contains(d)) {
                out.push(d.clone());
            }
        }
    }
    out
}

fn intersect_all(sets: Vec<Vec<String>>) -> Vec<String> {
    sets.into_iter()
        .reduce(|a, b| intersect(&a, &b))
        .unwrap_or_default()
}

fn net(g: &Grants) -> NetAccess {
    match g.network {
        Network::None => NetAccess::None,
        Network::Full => NetAccess::Full,
        Network::Restricted => {
            let mut ports: Vec<u16> = g
                .permissions
                .iter()
                .map(|m| m.permission())
                .filter(|p| p.scope == Scope::Net)
                .flat_map(|p| ports_of(p.target.as_deref()))
                .collect();
            ports.sort_unstable();
            ports.dedup();
            if ports.is_empty() {
                NetAccess::None
            } else {
                NetAccess::Ports { ports }
            }
        }
    }
}

/// The host names of a layer's `net:` origins that name one host (no glob, not an address):
/// what a job under a port grant may resolve.
fn hosts_of(g: &Grants) -> Vec<String> {
    let mut hosts: Vec<String> = g
        .permissions
        .iter()
        .map(|m| m.permission())
        .filter(|p| p.scope == Scope::Net)
        .filter_map(|p| p.target.as_deref())
        .filter_map(|t| t.split_once("://").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split('/').next())
        .map(|authority| authority.rsplit_once('@').map_or(authority, |(_, h)| h))
        .filter(|a| !a.starts_with('['))
        .map(|a| {
            a.split(':')
                .next()
                .unwrap_or_default()
                .trim_end_matches('.')
        })
        .filter(|h| !h.is_empty() && !h.contains(['*', '?', '[', '{']))
        .filter(|h| h.parse::<std::net::IpAddr>().is_err())
        .map(str::to_ascii_lowercase)
        .collect();
    hosts.sort();
    hosts.dedup();
    hosts
}

/// The TCP ports an origin pattern implies: its explicit port, or its scheme's default; a
/// pattern without a readable scheme implies 80 and 443.
fn ports_of(target: Option<&str>) -> Vec<u16> {
    let Some(t) = target else {
        return vec![80, 443];
    };
    let Some((scheme, rest)) = t.split_once("://") else {
        return vec![80, 443];
    };
    let authority = rest.split('/').next().unwrap_or_default();
    if let Some(port) = authority
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse::<u16>().ok())
    {
        return vec![port];
    }
    match scheme.to_ascii_lowercase().as_str() {
        "http" | "ws" => vec![80],
        "https" | "wss" => vec![443],
        _ => vec![80, 443],
    }
}

fn narrower(a: NetAccess, b: NetAccess) -> NetAccess {
    match (a, b) {
        (NetAccess::None, _) | (_, NetAccess::None) => NetAccess::None,
        (NetAccess::Full, x) | (x, NetAccess::Full) => x,
        (NetAccess::Ports { ports: p }, NetAccess::Ports { ports: q }) => {
            let both: Vec<u16> = p.into_iter().filter(|x| q.contains(x)).collect();
            if both.is_empty() {
                NetAccess::None
            } else {
                NetAccess::Ports { ports: both }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn globs_become_their_literal_directories() {
        assert_eq!(literal_prefix("src/**"), "src");
        assert_eq!(literal_prefix("./docs/*.md"), "docs");
        assert_eq!(literal_prefix("**"), ".");
        assert_eq!(literal_prefix("CONTRIBUTING.md"), "CONTRIBUTING.md");
    }

    #[test]
    fn only_globs_that_say_more_than_their_directory_are_walked_for() {
        for walked in ["**/*.pem", "src/*.key", "a/**/b", "*.lock", "./**/x"] {
            assert!(beyond_prefix(walked), "{walked}");
        }
        for literal in [".git/**", "**", "./**", "secrets/**", "NOTES.md"] {
            assert!(!beyond_prefix(literal), "{literal}");
        }
    }

    #[test]
    fn layers_intersect_to_the_deeper_root() {
        let doc = json!({"nodes": {"l": {"type": "loop",
            "requirements": {"permissions": ["fs:read:src/**", "fs:write:src/gen/**"], "workspace": "read_write",
                             "network": "restricted"},
            "loop": {"body": {"nodes": {"i": {"type": "task", "requirements": {
                "permissions": ["fs:read:**", "fs:write:**", "net:fetch:https://a.org", "net:fetch:http://b.org:8080"],
                "workspace": "read_write", "network": "restricted"}}}}}}}});
        let ws = Workspace::new("/w").unwrap();
        let g = weft_policy::node_grants(&doc, "i").unwrap();
        let c = confinement(&ws, &g);
        assert_eq!(c.read_roots, [PathBuf::from("/w/src")]);
        assert_eq!(c.write_roots, [PathBuf::from("/w/src/gen")]);
        // The loop grants no net: permission, so nothing is left.
        assert_eq!(c.net, NetAccess::None);
        let outer = weft_policy::node_grants(&doc, "l").unwrap();
        assert_eq!(confinement(&ws, &outer).net, NetAccess::None);
    }

    #[test]
    fn only_missing_directory_roots_inside_the_intersection_are_created() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap();
        let doc = json!({"nodes": {"l": {"type": "loop",
            "requirements": {"permissions": ["fs:write:gen/**", "fs:write:NOTES.md"], "workspace": "read_write"},
            "loop": {"body": {"nodes": {"i": {"type": "task", "requirements": {
                "permissions": ["fs:write:gen/**", "fs:write:other/**", "fs:write:NOTES.md"],
                "workspace": "read_write"}}}}}}}});
        let ws = Workspace::new(root).unwrap();
        let g = weft_policy::node_grants(&doc, "i").unwrap();
        let c = confinement(&ws, &g);
        create_write_dirs(&c, &g, &ws).unwrap();
        assert!(dir.path().join("gen").is_dir());
        assert!(
            !dir.path().join("other").exists(),
            "outside the loop's grant"
        );
        assert!(
            !dir.path().join("NOTES.md").exists(),
            "an exact path is not a directory"
        );
    }

    #[test]
    fn restricted_network_becomes_ports() {
        let doc = json!({"nodes": {"n": {"type": "task", "requirements": {
            "permissions": ["net:fetch:https://a.org", "net:fetch:http://b.org:8080"], "network": "restricted"}}}});
        let g = weft_policy::node_grants(&doc, "n").unwrap();
        let c = confinement(&Workspace::new("/w").unwrap(), &g);
        assert_eq!(
            c.net,
            NetAccess::Ports {
                ports: vec![443, 8080]
            }
        );
        // read_only (the default): no write roots.
        assert!(c.write_roots.is_empty());
        assert_eq!(c.resolve, ["a.org", "b.org"]);
    }

    #[test]
    fn only_single_named_hosts_are_resolved_for_a_job() {
        let doc = json!({"nodes": {"n": {"type": "task", "requirements": {
            "permissions": ["net:fetch:https://*.pypi.org", "net:fetch:https://10.0.0.1:8443",
                            "net:fetch:https://files.example.org", "net:fetch:http://[::1]:80"],
            "network": "restricted"}}}});
        let g = weft_policy::node_grants(&doc, "n").unwrap();
        let c = confinement(&Workspace::new("/w").unwrap(), &g);
        assert_eq!(c.resolve, ["files.example.org"]);
        let full = json!({"nodes": {"n": {"type": "task", "requirements": {
            "permissions": ["net:fetch:https://a.org"], "network": "full"}}}});
        let g = weft_policy::node_grants(&full, "n").unwrap();
        assert!(
            confinement(&Workspace::new("/w").unwrap(), &g)
                .resolve
                .is_empty()
        );
    }
}

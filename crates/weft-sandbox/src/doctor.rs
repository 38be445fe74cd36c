//! `weft sandbox doctor`: what this machine enforces. The report comes from the helper
//! confining itself (`--probe`), so it states what the kernel actually applied, not what it
//! claims to support. The process cap is checked on this side (a pids cgroup is made and
//! removed) or taken from the probe's user namespace. A [`Sandbox`] refuses every job while
//! anything it requires is missing.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde::Serialize;
use tokio::process::Command;

use crate::confinement::Confinement;
use crate::helper::Enforcement;
use crate::run::{Helper, Job, Outcome, SandboxError, run};

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What is checked.
    pub name: &'static str,
    /// Whether weft needs it to run a confined job.
    pub required: bool,
    /// Whether it is fully enforced (or, for tools, present).
    pub enforced: bool,
    /// Details.
    pub detail: String,
}

/// What is enforced on this machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Each check.
    pub checks: Vec<Check>,
    /// The Landlock ABI the kernel offers (0 when none).
    pub landlock_abi: u32,
}

impl Report {
    /// `true` when every required check is enforced.
    pub fn fully_enforced(&self) -> bool {
        self.checks.iter().all(|c| c.enforced || !c.required)
    }

    /// The required checks that are not enforced, with their details.
    pub fn missing(&self) -> Vec<String> {
        self.checks
            .iter()
            .filter(|c| c.required && !c.enforced)
            .map(|c| format!("{} ({})", c.name, c.detail))
            .collect()
    }

    /// What a job confined by `c` needs and this machine lacks: every required check, the
    /// process cap only when `c` sets one.
    pub fn missing_for(&self, c: &Confinement) -> Vec<String> {
        self.checks
            .iter()
            .filter(|k| k.required && !k.enforced)
            .filter(|k| k.name != PROCESS_CAP || c.max_processes.is_some())
            .filter(|k| {
                // The fallback to uid 0 is a root weft's; a non-root weft has none.
                k.name != STEP_IDENTITY
                    || !rustix::process::geteuid().is_root()
                    || !c
                        .step_user
                        .unwrap_or_else(crate::confinement::StepUser::from_env)
                        .allow_root
            })
            .map(|k| format!("{} ({})", k.name, k.detail))
            .collect()
    }
}

#[derive(serde::Deserialize)]
struct Probe {
    ok: bool,
    enforcement: Option<Enforcement>,
    error: Option<String>,
}

/// Runs the helper's probe and reports.
pub async fn doctor(helper: &Helper) -> Report {
    let probe = Command::new(&helper.program)
        .args(&helper.prefix)
        .arg("--probe")
        .env_clear()
        .envs(
            ["WEFT_SANDBOX_UID", "WEFT_SANDBOX_GID"]
                .into_iter()
                .filter_map(|k| std::env::var(k).ok().map(|v| (k, v))),
        )
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .await;
    let parsed: Result<Probe, String> = match probe {
        Ok(out) => {
            serde_json::from_slice(&out.stdout).map_err(|e| format!("unreadable probe output: {e}"))
        }
        Err(e) => Err(format!("cannot start {}: {e}", helper.program.display())),
    };
    let (enf, why) = match parsed {
        Ok(Probe {
            ok: true,
            enforcement: Some(e),
            ..
        }) => (Some(e), String::new()),
        Ok(p) => (None, p.error.unwrap_or_else(|| "the probe failed".into())),
        Err(e) => (None, e),
    };
    let mut checks = Vec::new();
    let abi = enf.as_ref().map_or(0, |e| e.landlock_abi);
    let landlock_ok = enf.as_ref().is_some_and(|e| e.landlock == "fully_enforced");
    let detail = |ok: bool, what: String| if ok { what } else { why.clone() };
    checks.push(Check {
        name: "landlock_fs",
        required: true,
        enforced: landlock_ok,
        detail: detail(
            landlock_ok,
            format!(
                "ABI {abi}: reads, writes, truncation and device ioctls outside the roots refused"
            ),
        ),
    });
    checks.push(Check {
        name: "landlock_net",
        required: true,
        enforced: landlock_ok,
        detail: detail(
            landlock_ok,
            "TCP bind and connect limited to granted ports".into(),
        ),
    });
    checks.push(Check {
        name: "landlock_scope",
        required: true,
        enforced: landlock_ok,
        detail: detail(
            landlock_ok,
            "abstract unix sockets and signals to outside processes refused".into(),
        ),
    });
    let seccomp = enf.as_ref().is_some_and(|e| e.seccomp && e.no_new_privs);
    checks.push(Check {
        name: "seccomp",
        required: true,
        enforced: seccomp,
        detail: detail(
            seccomp,
            "socket families other than granted IP refused; io_uring refused; no_new_privs".into(),
        ),
    });
    let protections: [Protection; 6] = [
        (
            "capabilities",
            |e| e.capabilities_dropped,
            "every capability set emptied (bounding, ambient, effective, permitted, \
             inheritable) and checked empty; no_new_privs",
        ),
        (
            "namespaces",
            |e| e.ipc_uts_namespaces && e.pid_namespace,
            "own PID, IPC and UTS namespaces: the host's SysV IPC objects are not visible, a \
             hostname change stays inside",
        ),
        (
            "descriptors",
            |e| e.descriptors_closed,
            "every inherited descriptor above 2 closed before the command starts",
        ),
        (
            "device_nodes",
            |e| e.device_nodes_refused,
            "making character and block devices refused (Landlock make_char/make_block, \
             seccomp mknod)",
        ),
        (
            "keyring",
            |e| e.keyring_refused,
            "keyctl, add_key and request_key refused: the caller's kernel keyrings are out of \
             reach",
        ),
        (
            "network_filter",
            |e| e.net_filter,
            "raw, packet and non-TCP/UDP sockets refused; with a port grant, UDP sockets, \
             listen() and TCP Fast Open refused too",
        ),
    ];
    for (name, enforced, what) in protections {
        let ok = enf.as_ref().is_some_and(enforced);
        checks.push(Check {
            name,
            required: true,
            enforced: ok,
            detail: match &enf {
                Some(e) if !ok && name == "namespaces" => e
                    .namespace_error
                    .clone()
                    .unwrap_or_else(|| "not made".into()),
                Some(_) if !ok => "not enforced by the probe".into(),
                _ => detail(ok, what.into()),
            },
        });
    }
    let identity = enf.as_ref().is_some_and(|e| e.unprivileged_identity);
    checks.push(Check {
        name: STEP_IDENTITY,
        required: true,
        enforced: identity,
        detail: match &enf {
            Some(e) if identity => e.identity_detail.clone(),
            Some(e) if !rustix::process::geteuid().is_root() => format!(
                "a non-root weft's jobs cannot get their own user and mount namespace with \
                 every mount read-only but the write roots here ({}); they are blocked, since \
                 Landlock alone lets them chmod, chown, touch or tag weft's user's files \
                 outside the grants",
                e.identity_detail
            ),
            Some(e) => format!(
                "a root weft's jobs cannot run unprivileged here ({}); they are blocked unless \
                 WEFT_SANDBOX_ROOT_FALLBACK=1 runs them as uid 0 without capabilities",
                e.identity_detail
            ),
            None => why.clone(),
        },
    });
    let rlimits = enf.as_ref().is_some_and(|e| e.rlimits);
    checks.push(Check {
        name: "rlimits",
        required: true,
        enforced: rlimits,
        detail: detail(rlimits, "CPU seconds, file size, no core dumps".into()),
    });
    let pidns = enf.as_ref().is_some_and(|e| e.pid_namespace);
    let user = enf.as_ref().is_some_and(|e| e.user_namespace);
    checks.push(Check {
        name: PID_NAMESPACE,
        required: true,
        enforced: pidns,
        detail: match &enf {
            Some(e) if e.pid_namespace => format!(
                "{}: every process of a job dies with it, setsid ones included",
                if user {
                    "user + PID namespace"
                } else {
                    "PID namespace"
                }
            ),
            Some(e) => e
                .namespace_error
                .clone()
                .unwrap_or_else(|| "no PID namespace".into()),
            None => why.clone(),
        },
    });
    let (cap, cap_detail) = process_cap(pidns && user);
    checks.push(Check {
        name: PROCESS_CAP,
        required: true,
        enforced: cap,
        detail: cap_detail,
    });
    let bwrap = find_program("bwrap");
    checks.push(Check {
        name: "bubblewrap",
        required: false,
        enforced: bwrap.is_some(),
        detail: bwrap.map_or_else(
            || "not installed (optional; weft's sandbox does not need it)".into(),
            |p| format!("{} (optional; not used by weft's sandbox yet)", p.display()),
        ),
    });
    Report {
        checks,
        landlock_abi: abi,
    }
}

/// A protection the probe reports: its check's name, whether the probe enforced it, and what
/// it does.
type Protection = (&'static str, fn(&Enforcement) -> bool, &'static str);

/// The name of the process-cap check: required only by jobs that set a cap.
pub const PROCESS_CAP: &str = "process_cap";
/// The name of the unprivileged-identity check: required unless the job's step user allows
/// the fallback to uid 0.
pub const STEP_IDENTITY: &str = "step_identity";
/// The name of the PID-namespace check.
pub const PID_NAMESPACE: &str = "pid_namespace";

/// Which mechanism caps a job's processes here: a pids cgroup weft can make (tried for
/// real), else `RLIMIT_NPROC` in the job's user namespace when weft is not root.
fn process_cap(user_namespace: bool) -> (bool, String) {
    if let Some(h) = crate::cgroup::hierarchy() {
        return match crate::cgroup::Pids::create(h, 1) {
            Ok(_made_and_removed) => (true, h.describe()),
            Err(e) => (
                false,
                format!("cannot make a job cgroup under {}: {e}", h.base.display()),
            ),
        };
    }
    if user_namespace {
        return (
            true,
            "RLIMIT_NPROC in the job's user namespace (counted per namespace since Linux 5.14)"
                .into(),
        );
    }
    (
        false,
        "no writable pids cgroup, and RLIMIT_NPROC does not bind root: jobs with a process \
         cap are blocked"
            .into(),
    )
}

fn find_program(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin", "/usr/local/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// A helper together with what it enforces here; refuses jobs while anything required is
/// missing, so a node is `blocked` rather than run unsandboxed.
#[derive(Clone, Debug)]
pub struct Sandbox {
    helper: Helper,
    report: Report,
}

impl Sandbox {
    /// Probes the machine through `helper`.
    pub async fn probe(helper: Helper) -> Sandbox {
        let report = doctor(&helper).await;
        Sandbox { helper, report }
    }

    /// [`Sandbox::probe`] on a fresh current-thread runtime (for callers without one).
    pub fn probe_blocking(helper: Helper) -> std::io::Result<Sandbox> {
        let report = doctor_blocking(&helper)?;
        Ok(Sandbox { helper, report })
    }

    /// The report.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// Runs `job` confined, or refuses with [`SandboxError::Blocked`] when anything it needs
    /// is not enforced here (a missing process cap blocks only jobs that set one).
    pub async fn run(&self, job: &Job<'_>) -> Result<Outcome, SandboxError> {
        let missing = self.report.missing_for(job.confinement);
        if !missing.is_empty() {
            return Err(SandboxError::Blocked(format!(
                "not enforced on this machine: {}",
                missing.join("; ")
            )));
        }
        run(&self.helper, job).await
    }
}

/// [`doctor`] on a fresh current-thread runtime, for callers without one (the CLI).
pub fn doctor_blocking(helper: &Helper) -> std::io::Result<Report> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(doctor(helper)))
}

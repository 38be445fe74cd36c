//! The job's pids cgroup, on the parent side: the process cap of a job when weft may create
//! cgroups (root, here). One directory per job under a `weft` directory of the pids
//! hierarchy — cgroup v2 (`pids.max`, `cgroup.kill`) when its pids controller is available,
//! else the cgroup v1 `pids` hierarchy (`pids.max`; killed process by process). The helper
//! moves itself into the directory (`--cgroup DIR`) before it starts anything, so every
//! process of the job is counted; the directory is emptied and removed after the job, and
//! `pids.events` tells whether the cap refused a fork. A weft killed mid-job cannot remove its
//! job directories, so the first use of the hierarchy in a process sweeps the directories of
//! weft processes that are gone ([`sweep`]): what still runs inside is killed, then the
//! directory removed.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Which cgroup hierarchy a job directory lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// The unified hierarchy (`cgroup.kill` kills everything at once).
    V2,
    /// The v1 `pids` hierarchy.
    V1,
}

/// The pids hierarchy weft can create job directories in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hierarchy {
    /// The directory job directories are made in (`…/weft`).
    pub base: PathBuf,
    /// Its version.
    pub version: Version,
}

impl Hierarchy {
    /// Says where the cap lives, for the doctor.
    pub fn describe(&self) -> String {
        match self.version {
            Version::V2 => format!(
                "cgroup v2 pids.max + cgroup.kill under {}",
                self.base.display()
            ),
            Version::V1 => format!("cgroup v1 pids.max under {}", self.base.display()),
        }
    }
}

/// Finds (and prepares) the pids hierarchy once per process: cgroup v2 where its pids
/// controller is available, else cgroup v1. `None` when neither is there or weft may not
/// write it.
pub fn hierarchy() -> Option<&'static Hierarchy> {
    static FOUND: OnceLock<Option<Hierarchy>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let found = find()?;
            sweep(&found);
            Some(found)
        })
        .as_ref()
}

/// What [`sweep`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// Job directories of gone weft processes removed.
    pub removed: usize,
    /// Such directories whose processes did not die in time (left for the next sweep).
    pub left: usize,
}

/// Removes the job directories (`job-<pid>-<n>`) whose weft process `pid` is gone, killing
/// whatever still runs in them first (a job orphaned by a `kill -9` of weft). A directory
/// whose pid is alive is never touched: it may be another weft's live job.
pub fn sweep(h: &Hierarchy) -> Swept {
    let mut swept = Swept::default();
    let Ok(entries) = std::fs::read_dir(&h.base) else {
        return swept;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = owner_pid(&name.to_string_lossy()) else {
            continue;
        };
        if alive(owner) {
            continue;
        }
        let dir = entry.path();
        // SIGKILL is delivered at once, but the processes leave the cgroup only once reaped.
        let emptied = (0..50).any(|_| {
            kill_all(&dir, h.version) || {
                std::thread::sleep(Duration::from_millis(10));
                false
            }
        });
        if emptied && std::fs::remove_dir(&dir).is_ok() {
            swept.removed += 1;
        } else {
            swept.left += 1;
        }
    }
    swept
}

/// The owner pid in a job directory's name, `job-<pid>-<n>`.
fn owner_pid(name: &str) -> Option<i32> {
    let (pid, n) = name.strip_prefix("job-")?.split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Whether a process `pid` exists (signal 0: `EPERM` still means it exists).
fn alive(pid: i32) -> bool {
    match rustix::process::Pid::from_raw(pid) {
        Some(pid) => !matches!(
            rustix::process::test_kill_process(pid),
            Err(rustix::io::Errno::SRCH)
        ),
        None => true,
    }
}

/// The hierarchy, only where this process may make job directories in it: a `weft`
/// directory that a root weft made once is not writable by a non-root weft, which then caps
/// its jobs with `RLIMIT_NPROC` in their user namespace instead (docs/permissions.md §6).
fn find() -> Option<Hierarchy> {
    let h = find_any()?;
    let writable = rustix::fs::access(
        &h.base,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    );
    writable.is_ok().then_some(h)
}

fn find_any() -> Option<Hierarchy> {
    for mount in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
        if let Some(h) = v2(Path::new(mount)) {
            return Some(h);
        }
    }
    let v1 = Path::new("/sys/fs/cgroup/pids");
    if v1.join("cgroup.procs").is_file() {
        let base = v1.join("weft");
        if std::fs::create_dir_all(&base).is_ok() && base.join("pids.max").is_file() {
            return Some(Hierarchy {
                base,
                version: Version::V1,
            });
        }
    }
    None
}

/// A cgroup2 mount whose root offers the pids controller: `weft/` is made under it with
/// pids enabled for its children (a directory without processes, so the "no internal
/// processes" rule holds).
fn v2(mount: &Path) -> Option<Hierarchy> {
    let controllers = std::fs::read_to_string(mount.join("cgroup.controllers")).ok()?;
    if !controllers.split_whitespace().any(|c| c == "pids") {
        return None;
    }
    let enable = |dir: &Path| -> Option<()> {
        let file = dir.join("cgroup.subtree_control");
        let on = std::fs::read_to_string(&file).ok()?;
        if !on.split_whitespace().any(|c| c == "pids") {
            std::fs::write(&file, "+pids").ok()?;
        }
        Some(())
    };
    enable(mount)?;
    let base = mount.join("weft");
    std::fs::create_dir_all(&base).ok()?;
    enable(&base)?;
    Some(Hierarchy {
        base,
        version: Version::V2,
    })
}

/// One job's cgroup directory. Dropping it kills what is left inside and removes it (best
/// effort, without waiting); [`Pids::finish`] does it properly.
#[derive(Debug)]
pub struct Pids {
    dir: Option<PathBuf>,
    version: Version,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

impl Pids {
    /// Makes a job directory allowing `max` processes.
    pub fn create(h: &Hierarchy, max: u32) -> std::io::Result<Pids> {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = h.base.join(format!("job-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir)?;
        let pids = Pids {
            dir: Some(dir.clone()),
            version: h.version,
        };
        // On failure `pids` is dropped, which removes the directory again.
        std::fs::write(dir.join("pids.max"), max.to_string())?;
        Ok(pids)
    }

    /// The directory the helper joins.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Whether the cap refused a fork (`max` in `pids.events`).
    pub fn cap_reached(&self) -> bool {
        let Some(dir) = &self.dir else { return false };
        std::fs::read_to_string(dir.join("pids.events")).is_ok_and(|events| {
            events.lines().any(|l| {
                l.strip_prefix("max ")
                    .and_then(|n| n.trim().parse::<u64>().ok())
                    .is_some_and(|n| n > 0)
            })
        })
    }

    /// Kills what is left, waits (boundedly) until the directory is empty, removes it, and
    /// returns whether the cap was reached.
    pub async fn finish(mut self) -> bool {
        let reached = self.cap_reached();
        if let Some(dir) = self.dir.take() {
            for _ in 0..500 {
                if kill_all(&dir, self.version) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let _ = std::fs::remove_dir(&dir);
        }
        reached
    }
}

impl Drop for Pids {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            kill_all(&dir, self.version);
            let _ = std::fs::remove_dir(&dir);
        }
    }
}

/// Sends `SIGKILL` to every process in `dir`; `true` once it holds none.
fn kill_all(dir: &Path, version: Version) -> bool {
    let Ok(procs) = std::fs::read_to_string(dir.join("cgroup.procs")) else {
        return true;
    };
    let pids: Vec<i32> = procs
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    if pids.is_empty() {
        return true;
    }
    if version == Version::V2 && std::fs::write(dir.join("cgroup.kill"), "1").is_ok() {
        return false;
    }
    for pid in pids.into_iter().filter_map(rustix::process::Pid::from_raw) {
        // ESRCH (already gone) is fine.
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
    false
}

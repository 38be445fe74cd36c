//! Installing one environment on first use: its directory, a lock, its script.
#![allow(
    clippy::result_large_err,
    reason = "test support: an error is rare, ends the test, and carries the script's output"
)]

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// An environment a test needs, made by a script of this repository.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// What it is, for messages.
    pub what: &'static str,
    /// The variable that points at another directory than the default.
    pub env_var: &'static str,
    /// The default directory's name under `~/.cache/weft`.
    pub cache_name: &'static str,
    /// The installer, relative to the repository root; it reads `env_var`.
    pub script: &'static str,
    /// What the installer needs from the machine, for the failure message.
    pub needs: &'static str,
}

/// Why an environment could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(
        "{what}: HOME is not set, so there is no ~/.cache/weft to install into; set {env_var} to a directory"
    )]
    NoHome {
        what: &'static str,
        env_var: &'static str,
    },
    #[error("{what}: cannot take the install lock {}: {source}", path.display())]
    Lock {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{what}: cannot start {script}: {source}")]
    Start {
        what: &'static str,
        script: &'static str,
        source: std::io::Error,
    },
    #[error(
        "{what} could not be installed into {} by {script} ({status}); it needs {needs}. \
         Its last output:\n{tail}\n(Or set {env_var} to a directory where it is installed.)",
        dir.display()
    )]
    Failed {
        what: &'static str,
        dir: PathBuf,
        script: &'static str,
        status: String,
        needs: &'static str,
        env_var: &'static str,
        tail: String,
    },
}

/// How many of the script's last output lines a failure shows.
const TAIL_LINES: usize = 20;

impl Setup {
    /// The directory: `$env_var`, else `~/.cache/weft/<cache_name>`.
    pub fn dir(&self) -> Result<PathBuf, SetupError> {
        if let Some(dir) = std::env::var_os(self.env_var).filter(|d| !d.is_empty()) {
            return Ok(PathBuf::from(dir));
        }
        Ok(cache_root(self)?.join(self.cache_name))
    }

    /// The directory, installed by the script if it is not already (once per process; the
    /// script itself does nothing when everything is there). Panics with the reason when it
    /// cannot be installed: the test that needs it fails, it is never skipped.
    pub fn ensure(&self) -> PathBuf {
        self.try_ensure().unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Setup::ensure`] without the panic.
    pub fn try_ensure(&self) -> Result<PathBuf, SetupError> {
        static DONE: OnceLock<Mutex<HashMap<&'static str, PathBuf>>> = OnceLock::new();
        let done = DONE.get_or_init(Mutex::default);
        // Held across the install: two threads of one test binary install once.
        let mut done = done
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(dir) = done.get(self.cache_name) {
            return Ok(dir.clone());
        }
        let dir = self.dir()?;
        self.install(&dir)?;
        done.insert(self.cache_name, dir.clone());
        Ok(dir)
    }

    /// Runs the script under an exclusive lock on `<dir>.lock` (by default
    /// `~/.cache/weft/<cache_name>.lock`), so two test processes never build the same
    /// directory at once; the second waits, then its script finds everything made.
    fn install(&self, dir: &Path) -> Result<(), SetupError> {
        let mut lock_path = dir.as_os_str().to_owned();
        lock_path.push(".lock");
        let lock_path = PathBuf::from(lock_path);
        let lock_err = |source| SetupError::Lock {
            what: self.what,
            path: lock_path.clone(),
            source,
        };
        if let Some(parent) = lock_path.parent() {
            std::fs::create_dir_all(parent).map_err(lock_err)?;
        }
        let lock = File::create(&lock_path).map_err(lock_err)?;
        lock.lock().map_err(lock_err)?;
        let script = repo_root().join(self.script);
        let output = Command::new("bash")
            .arg(&script)
            .env(self.env_var, dir)
            .output()
            .map_err(|source| SetupError::Start {
                what: self.what,
                script: self.script,
                source,
            })?;
        // The lock is released when `lock` is dropped, after the script has finished.
        drop(lock);
        if output.status.success() {
            return Ok(());
        }
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
        Err(SetupError::Failed {
            what: self.what,
            dir: dir.to_path_buf(),
            script: self.script,
            status: output.status.to_string(),
            needs: self.needs,
            env_var: self.env_var,
            tail,
        })
    }
}

/// `~/.cache/weft`.
fn cache_root(setup: &Setup) -> Result<PathBuf, SetupError> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|home| PathBuf::from(home).join(".cache/weft"))
        .ok_or(SetupError::NoHome {
            what: setup.what,
            env_var: setup.env_var,
        })
}

/// This checkout's root (where `scripts/` is).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a panic here is a test failure")]

    use super::*;

    fn setup(script: &'static str) -> Setup {
        Setup {
            what: "the self-test environment",
            env_var: "WEFT_SELFTEST_DIR",
            cache_name: "selftest",
            script,
            needs: "nothing but bash",
        }
    }

    /// Four installs at once into one directory: the lock runs them one after another, so
    /// exactly one installs and the others find it made.
    #[test]
    fn concurrent_installs_run_one_at_a_time_and_install_once() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("env");
        let slow = setup("crates/weft-test-support/tests/fixtures/slow-install.sh");
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| slow.install(&dir).unwrap());
            }
        });
        let log = std::fs::read_to_string(tmp.path().join("env.log")).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 12, "{log}");
        for run in lines.chunks(3) {
            assert_eq!(run[0], "start", "runs overlapped:\n{log}");
            assert_eq!(run[2], "end", "runs overlapped:\n{log}");
        }
        assert_eq!(
            lines.iter().filter(|l| **l == "installed").count(),
            1,
            "{log}"
        );
        assert!(tmp.path().join("env.lock").exists());
    }

    /// A script that fails: the error names what, where, the script, what it needs, the way
    /// around it, and the script's last lines (not the first ones).
    #[test]
    fn a_failed_install_says_what_it_needs_and_shows_the_last_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("env");
        let failing = setup("crates/weft-test-support/tests/fixtures/failing-install.sh");
        let message = failing.install(&dir).unwrap_err().to_string();
        for wanted in [
            "the self-test environment could not be installed into",
            "failing-install.sh (exit status: 3)",
            "it needs nothing but bash",
            "line 30",
            "error: python3 -m venv failed",
            "set WEFT_SELFTEST_DIR to a directory where it is installed",
        ] {
            assert!(message.contains(wanted), "{wanted:?} not in:\n{message}");
        }
        assert!(!message.contains("line 1\n"), "{message}");
    }
}

//! What every class of the escape suite shares: the helper binary, a job runner, a scratch
//! workspace, and the `/proc` scan for processes a job left behind.

use std::path::{Path, PathBuf};
use std::time::Duration;

use weft_sandbox::{Confinement, Helper, Job, Outcome, SandboxError};

/// The helper binary: cargo's build of it, or `WEFT_SANDBOX_EXEC` where the suite runs from
/// a copy (`.ci/run` runs it as an unprivileged user, who cannot reach cargo's target
/// directory under root's home).
pub fn helper_path() -> String {
    std::env::var("WEFT_SANDBOX_EXEC")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_weft-sandbox-exec").to_owned())
}

pub fn helper() -> Helper {
    Helper::binary(helper_path())
}

pub fn env() -> Vec<(String, String)> {
    vec![
        ("PATH".into(), "/usr/bin:/bin".into()),
        ("LANG".into(), "C.UTF-8".into()),
    ]
}

pub fn sh(script: &str) -> Vec<String> {
    vec!["/bin/sh".into(), "-c".into(), script.into()]
}

pub async fn run_in(
    cwd: &Path,
    argv: &[String],
    c: &Confinement,
    env: &[(String, String)],
) -> Result<Outcome, SandboxError> {
    let job = Job {
        argv,
        cwd,
        env,
        stdin: None,
        confinement: c,
        timeout: Duration::from_secs(60),
        max_output: 1 << 20,
    };
    weft_sandbox::run::run(&helper(), &job).await
}

pub fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("out")).unwrap();
    (dir, ws)
}

/// What a write outside the write roots fails with: Landlock's `EACCES` for a root weft's
/// job; for any other the mount is read-only first (`EROFS`, the crate's `read_only_view`).
pub fn write_refused() -> &'static str {
    if rustix::process::geteuid().is_root() {
        "Permission denied"
    } else {
        "Read-only file system"
    }
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub const CONNECT: &str = "import socket,sys\ns=socket.create_connection(('127.0.0.1',int(sys.argv[1])),timeout=5)\nprint('connected')";

pub fn python(code: &str, arg: &str) -> Vec<String> {
    vec![
        "/usr/bin/python3".into(),
        "-c".into(),
        code.into(),
        arg.into(),
    ]
}

/// A marker no other process on the machine carries, passed in the job's environment (which
/// every process of the job inherits, across `exec` too).
pub fn marker(what: &str) -> String {
    format!(
        "weft-escape-{what}-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    )
}

/// The processes (pid, cmdline) whose environment or command line holds `marker`.
/// Fails unless no process carrying `marker` is left. When `run` returns every process of
/// the job has been sent SIGKILL and can run no further instruction, but one the kernel has
/// not scheduled yet still shows in `/proc` for a moment on a loaded machine: so the check
/// allows the kernel a bounded time to finish them.
pub fn assert_none_survive(marker: &str, why: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let left = survivors(marker);
        if left.is_empty() {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{why}: {left:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

pub fn survivors(marker: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let read = |f: &str| std::fs::read(entry.path().join(f)).unwrap_or_default();
        let (environ, cmdline) = (read("environ"), read("cmdline"));
        let holds = |b: &[u8]| b.windows(marker.len()).any(|w| w == marker.as_bytes());
        if holds(&environ) || holds(&cmdline) {
            found.push((name, text(&cmdline).replace('\0', " ")));
        }
    }
    found
}

pub fn marked_env(marker: &str) -> Vec<(String, String)> {
    let mut env = env();
    env.push(("WEFT_TEST_MARKER".into(), marker.into()));
    env
}

//! The harness every class shares: a scene (a workspace beside an `outside` directory, canary
//! secrets planted where no grant reaches), one `weft run` of an AGS graph with a snapshot of
//! every file before and after, and the two verdicts — what changed outside the allowed set,
//! and which canary reached anywhere the step could send it.

use std::collections::BTreeMap;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// The weft binary: cargo's build, or `WEFT_BIN` where the suite runs from a copy (`.ci/run`
/// runs it as `nobody`, who cannot reach cargo's target directory under root's home).
pub fn weft_bin() -> PathBuf {
    std::env::var_os("WEFT_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_weft")), PathBuf::from)
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

/// What a write outside the write roots fails with: Landlock's `EACCES` for a root weft's
/// job; for any other the mount is read-only first (`EROFS`, weft-sandbox's
/// `read_only_view`).
pub fn write_refused() -> &'static str {
    if is_root() {
        "Permission denied"
    } else {
        "Read-only file system"
    }
}

/// A string no file on the machine holds before the test plants it.
pub fn fresh(what: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "CANARY-{what}-{}-{nanos:x}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// One file-system entry as the snapshot sees it (links not followed).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    kind: &'static str,
    mode: u32,
    uid: u32,
    gid: u32,
    /// A file's bytes (the scenes are small, so the content itself rather than a hash), a
    /// link's target; nothing for a directory, whose size varies by file system.
    content: Vec<u8>,
}

fn entry(path: &Path) -> Option<Entry> {
    let m = std::fs::symlink_metadata(path).ok()?;
    let t = m.file_type();
    let (kind, content) = if t.is_symlink() {
        let target = std::fs::read_link(path).unwrap_or_default();
        ("link", target.into_os_string().into_encoded_bytes())
    } else if t.is_dir() {
        ("dir", Vec::new())
    } else if t.is_file() {
        (
            "file",
            std::fs::read(path).unwrap_or_else(|e| e.to_string().into_bytes()),
        )
    } else if t.is_char_device() {
        ("char device", m.rdev().to_le_bytes().to_vec())
    } else if t.is_block_device() {
        ("block device", m.rdev().to_le_bytes().to_vec())
    } else {
        ("fifo or socket", Vec::new())
    };
    Some(Entry {
        kind,
        mode: m.mode(),
        uid: m.uid(),
        gid: m.gid(),
        content,
    })
}

fn walk(root: &Path, into: &mut BTreeMap<PathBuf, Entry>) {
    let Some(e) = entry(root) else { return };
    let is_dir = e.kind == "dir";
    into.insert(root.to_path_buf(), e);
    if is_dir && let Ok(children) = std::fs::read_dir(root) {
        for child in children.flatten() {
            walk(&child.path(), into);
        }
    }
}

/// How one `weft run` is started.
#[derive(Clone, Debug, Default)]
pub struct How {
    /// `--sandbox`; false is the control.
    pub sandbox: bool,
    /// More arguments before the graph (`--config weft.toml`).
    pub args: Vec<String>,
    /// More environment for weft itself.
    pub env: Vec<(String, String)>,
    /// Descriptor 7 left open on this file and 8 on a TCP connection to this port, by a
    /// careless caller.
    pub leak_fds: Option<(PathBuf, u16)>,
}

impl How {
    pub fn sandboxed() -> How {
        How {
            sandbox: true,
            ..How::default()
        }
    }

    pub fn unconfined() -> How {
        How::default()
    }

    pub fn arg(mut self, a: &str) -> How {
        self.args.push(a.to_owned());
        self
    }

    pub fn env(mut self, k: &str, v: &str) -> How {
        self.env.push((k.to_owned(), v.to_owned()));
        self
    }
}

/// A workspace `ws` beside `outside`, under one temporary directory.
pub struct Scene {
    _dir: tempfile::TempDir,
    pub base: PathBuf,
    pub ws: PathBuf,
    pub outside: PathBuf,
    /// (secret, where it was planted): each must reach no sink.
    canaries: Vec<(String, PathBuf)>,
    /// Under the workspace: where the attack may write (its grant).
    writable: Vec<PathBuf>,
    /// Inside `writable`: what must stay as it is all the same (the policy's, weft's state).
    protected: Vec<PathBuf>,
}

/// The store's own files, which weft (not the step) writes during the run; a step that
/// replaced them is caught by [`Attempt::store_intact`].
const STORE_FILES: [&str; 4] = ["weft.db", "weft.db-wal", "weft.db-shm", "weft.db-journal"];

impl Scene {
    /// A scene with a secret in `outside/secret.txt` and a secret *name* in
    /// `outside/listing/` (a directory listing that reached a sink shows it).
    pub fn new() -> Scene {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let base = dir.path().to_path_buf();
        let ws = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(outside.join("listing")).unwrap();
        let mut scene = Scene {
            _dir: dir,
            base,
            ws,
            outside,
            canaries: Vec::new(),
            writable: Vec::new(),
            protected: Vec::new(),
        };
        scene.canary(&scene.outside.join("secret.txt"));
        let name = fresh("name");
        std::fs::write(scene.outside.join("listing").join(&name), "x").unwrap();
        scene.canaries.push((name, scene.outside.join("listing")));
        scene
    }

    /// Plants a fresh secret as the whole content of `path` (parents made) and returns it.
    pub fn canary(&mut self, path: &Path) -> String {
        let secret = fresh("secret");
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, format!("{secret}\n")).unwrap();
        self.canaries.push((secret.clone(), path.to_path_buf()));
        secret
    }

    /// Registers a secret planted elsewhere (a shared memory segment, a key).
    pub fn secret_elsewhere(&mut self, secret: &str, origin: &str) {
        self.canaries
            .push((secret.to_owned(), PathBuf::from(origin)));
    }

    /// Writes `content` at `rel` in the workspace.
    pub fn file(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.ws.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, content).unwrap();
        p
    }

    /// The attack may change what lies under `rel` (the workspace itself for `.`).
    pub fn writable(&mut self, rel: &str) {
        self.writable.push(self.ws.join(rel));
    }

    /// Inside a writable part, `rel` must not change all the same.
    pub fn protect(&mut self, rel: &str) {
        self.protected.push(self.ws.join(rel));
    }

    fn exempt(&self, path: &Path) -> bool {
        if path == self.ws.join("g.agraph.json") {
            return true;
        }
        let weft = self.ws.join(".weft");
        if path == weft || STORE_FILES.iter().any(|f| path == weft.join(f)) {
            return true;
        }
        // The audit log weft itself appends to and the run records it writes.
        if path.starts_with(weft.join("audit")) || path.starts_with(weft.join("records")) {
            return true;
        }
        // Anything else of weft's state is never the step's, whatever its grant.
        if path.starts_with(&weft) || self.protected.iter().any(|p| path.starts_with(p)) {
            return false;
        }
        self.writable.iter().any(|w| path.starts_with(w))
    }

    fn snapshot(&self) -> BTreeMap<PathBuf, Entry> {
        let mut all = BTreeMap::new();
        walk(&self.base, &mut all);
        all.retain(|p, _| !self.exempt(p));
        all
    }

    /// Runs `graph` through `weft run` as `how` says, and judges what happened.
    pub fn run(&self, graph: &Value, how: &How) -> Attempt {
        std::fs::write(self.ws.join("g.agraph.json"), graph.to_string()).unwrap();
        let before = self.snapshot();
        let mut args: Vec<String> = vec!["run".into(), "--json".into()];
        if how.sandbox {
            args.push("--sandbox".into());
        }
        args.extend(how.args.iter().cloned());
        args.push("g.agraph.json".into());
        let out = self.weft(&args, how);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let report: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|_| panic!("weft run gave no report: {stdout} {stderr}"));
        let events = report["run_id"].as_str().map_or_else(String::new, |id| {
            let mut args: Vec<String> = vec!["events".into(), id.into()];
            if let Some(i) = how.args.iter().position(|a| a == "--db") {
                args.extend(how.args[i..].iter().take(2).cloned());
            }
            let e = self.weft(&args, &How::default());
            String::from_utf8_lossy(&e.stdout).into_owned()
        });
        let after = self.snapshot();
        let mut changed = diff(&before, &after, &self.base);
        // A device node is never the step's to make, even inside its write roots.
        let mut everything = BTreeMap::new();
        walk(&self.base, &mut everything);
        for (p, e) in everything {
            if e.kind.ends_with("device") {
                changed.push(format!("made a {} at {}", e.kind, p.display()));
            }
        }
        let leaked = self.leaks(&[
            ("weft's stdout", stdout.as_bytes()),
            ("weft's stderr", stderr.as_bytes()),
            ("the run's events", events.as_bytes()),
        ]);
        Attempt {
            report,
            events,
            stderr,
            changed,
            leaked,
            ws: self.ws.clone(),
        }
    }

    /// Runs weft with `args` in the workspace.
    pub fn weft(&self, args: &[String], how: &How) -> std::process::Output {
        let bin = weft_bin();
        let mut cmd = match &how.leak_fds {
            None => {
                let mut c = Command::new(&bin);
                c.args(args);
                c
            }
            Some((file, port)) => {
                let mut c = Command::new("/usr/bin/python3");
                c.arg("-c")
                    .arg(
                        "import os,socket,subprocess,sys\n\
                         fd=os.open(sys.argv[1], os.O_WRONLY|os.O_APPEND)\nos.dup2(fd, 7)\n\
                         s=socket.create_connection(('127.0.0.1', int(sys.argv[2])))\n\
                         os.dup2(s.fileno(), 8)\n\
                         r=subprocess.run(sys.argv[3:], pass_fds=[7, 8], capture_output=True)\n\
                         sys.stdout.buffer.write(r.stdout); sys.stderr.buffer.write(r.stderr)",
                    )
                    .arg(file)
                    .arg(port.to_string())
                    .arg(&bin)
                    .args(args);
                c
            }
        };
        for (k, v) in &how.env {
            cmd.env(k, v);
        }
        cmd.current_dir(&self.ws).output().unwrap()
    }

    /// Each canary found in a sink: the sinks given, the store's bytes, and every file under
    /// the scene but the canary's own.
    fn leaks(&self, sinks: &[(&str, &[u8])]) -> Vec<String> {
        let mut files = BTreeMap::new();
        walk(&self.base, &mut files);
        let mut found = Vec::new();
        for (secret, origin) in &self.canaries {
            let needle = secret.as_bytes();
            let holds = |b: &[u8]| b.windows(needle.len()).any(|w| w == needle);
            for (name, bytes) in sinks {
                if holds(bytes) {
                    found.push(format!("{} (from {}) in {name}", secret, origin.display()));
                }
            }
            for (path, e) in &files {
                if e.kind == "file" && path != origin && holds(&e.content) {
                    found.push(format!(
                        "{} (from {}) in {}",
                        secret,
                        origin.display(),
                        path.display()
                    ));
                }
            }
        }
        found
    }
}

fn diff(
    before: &BTreeMap<PathBuf, Entry>,
    after: &BTreeMap<PathBuf, Entry>,
    base: &Path,
) -> Vec<String> {
    let name = |p: &Path| p.strip_prefix(base).unwrap_or(p).display().to_string();
    let mut changes = Vec::new();
    for (p, b) in before {
        match after.get(p) {
            None => changes.push(format!("removed {}", name(p))),
            Some(a) if a != b => {
                let mut what = Vec::new();
                if a.kind != b.kind {
                    what.push(format!("type {} -> {}", b.kind, a.kind));
                }
                if a.mode != b.mode {
                    what.push(format!("mode {:o} -> {:o}", b.mode, a.mode));
                }
                if (a.uid, a.gid) != (b.uid, b.gid) {
                    what.push(format!("owner {}:{} -> {}:{}", b.uid, b.gid, a.uid, a.gid));
                }
                if a.content != b.content {
                    what.push(format!(
                        "content ({} -> {} bytes)",
                        b.content.len(),
                        a.content.len()
                    ));
                }
                changes.push(format!("changed {} ({})", name(p), what.join(", ")));
            }
            Some(_) => {}
        }
    }
    for (p, a) in after {
        if !before.contains_key(p) {
            changes.push(format!("added {} ({})", name(p), a.kind));
        }
    }
    changes
}

/// One `weft run` and its verdicts.
pub struct Attempt {
    pub report: Value,
    pub events: String,
    pub stderr: String,
    /// Each path outside the allowed set that was changed, added or removed.
    pub changed: Vec<String>,
    /// Each canary that reached a sink, and where.
    pub leaked: Vec<String>,
    ws: PathBuf,
}

impl Attempt {
    /// Fails naming every change outside the allowed set and every canary that got out.
    pub fn held(&self) -> &Attempt {
        assert!(
            self.changed.is_empty() && self.leaked.is_empty(),
            "ESCAPED\nchanged outside the allowed set: {:#?}\ncanaries read: {:#?}\nreport: {}\n\
             weft's stderr: {}",
            self.changed,
            self.leaked,
            self.report,
            self.stderr
        );
        self.store_intact()
    }

    /// The store is still a SQLite database whose events weft reads.
    pub fn store_intact(&self) -> &Attempt {
        let db = std::fs::read(self.ws.join(".weft/weft.db")).unwrap_or_default();
        assert!(
            db.starts_with(b"SQLite format 3"),
            "the store was overwritten"
        );
        assert!(
            self.events.contains("run_started"),
            "no events: {}",
            self.events
        );
        self
    }

    /// The node's entry in the run report.
    pub fn node(&self, id: &str) -> &Value {
        self.report["nodes"]
            .as_array()
            .and_then(|n| n.iter().find(|n| n["id"] == id))
            .unwrap_or_else(|| panic!("no node {id}: {}", self.report))
    }

    /// The node's `log` output (the attack's stdout), from the run's events.
    pub fn log(&self, id: &str) -> String {
        self.log_where(|node| node == id)
    }

    /// The `log` output of the node whose address `pick` accepts (`reader[0].step` in a body).
    pub fn log_where(&self, pick: impl Fn(&str) -> bool) -> String {
        let mut found = None;
        for line in self.events.lines() {
            let Ok(e) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let p = &e["payload"];
            // The full address: `reader[0].step` for a body's node.
            let address = match (p["scope"].as_str(), p["node"].as_str()) {
                (Some(scope), Some(node)) => format!("{scope}.{node}"),
                (None, Some(node)) => node.to_owned(),
                _ => continue,
            };
            if pick(&address)
                && let Some(log) = p["outputs"]["log"].as_str()
            {
                found = Some(log.to_owned());
            }
        }
        found.unwrap_or_else(|| {
            panic!(
                "the node gave no log (did it run?): {}\n{}",
                self.report, self.events
            )
        })
    }

    /// What `attempt NAME` printed in node `id`'s log: asserts it was `verdict` (`refused`
    /// or `done`) and its output holds `shows` (the attempt's own error: a typo in the
    /// attack does not pass as a refusal).
    pub fn attempted(&self, id: &str, name: &str, verdict: &str, shows: &str) -> &Attempt {
        let log = self.log(id);
        let head = format!("<{name}> ");
        let part = log
            .split(END)
            .find_map(|p| p.trim_start().strip_prefix(&head))
            .unwrap_or_else(|| panic!("attempt {name} did not run: {log}"));
        assert!(
            part.starts_with(verdict) && part.contains(shows),
            "attempt {name}: expected {verdict} showing {shows:?}, got: {part}"
        );
        self
    }

    /// The node was blocked (not run) and its error holds `shows`.
    pub fn blocked(&self, id: &str, shows: &str) -> &Attempt {
        let node = self.node(id);
        assert_eq!(node["state"], "blocked", "{node}");
        let error = self.error(id);
        assert!(error.contains(shows), "{id}: {error:?} lacks {shows:?}");
        self
    }

    /// The node's failure, when it failed.
    pub fn error(&self, id: &str) -> String {
        self.node(id)["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

const END: &str = "<end>";

/// A shell script that runs each `(name, command)` and prints, for each, `<name> done` or
/// `<name> refused` with everything the command printed, then exits 0 (so the output is the
/// node's `log`). What the command printed is the attacker's haul: it goes through the sinks.
pub fn attempts(list: &[(&str, String)]) -> String {
    let mut s = String::from(
        "t() { if o=$(eval \"$2\" 2>&1); then v=done; else v=refused; fi; \
         printf '<%s> %s %s\\n<end>\\n' \"$1\" \"$v\" \"$o\"; }\n",
    );
    for (name, cmd) in list {
        s.push_str(&format!("t {} {}\n", quote(name), quote(cmd)));
    }
    s.push_str("true\n");
    s
}

/// Single-quotes `s` for `sh`.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

pub fn graph(nodes: Value, entrypoints: &[&str]) -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "t/escape", "title": "Escape",
        "objective": "Try to escape the sandbox.",
        "policy": {"on_node_failure": "continue"},
        "entrypoints": entrypoints,
        "nodes": nodes
    })
}

/// An `exec` node running `run`, its stdout the string output `log`.
pub fn exec(run: &str, requirements: Option<Value>) -> Value {
    let mut node = json!({"title": "t", "description": "d", "x-weft-exec": {"run": run},
        "outputs": {"log": {"type": "string", "description": "what the attack printed"}}});
    if let Some(r) = requirements {
        node["requirements"] = r;
    }
    node
}

/// One node `step` running `attempts(list)` under `requirements`.
pub fn one_step(requirements: Value, list: &[(&str, String)]) -> Value {
    graph(
        json!({"step": exec(&attempts(list), Some(requirements))}),
        &["step"],
    )
}

pub fn read_write(write: &[&str]) -> Value {
    let mut permissions = vec!["fs:read:**".to_owned()];
    permissions.extend(write.iter().map(|w| format!("fs:write:{w}")));
    json!({"permissions": permissions, "workspace": "read_write"})
}

pub fn read_only() -> Value {
    json!({"permissions": ["fs:read:**"]})
}

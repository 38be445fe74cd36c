//! The command line of each coding-agent CLI. Approvals are never bypassed: weft never
//! passes `--dangerously-skip-permissions`, `--permission-mode bypassPermissions`,
//! `--full-auto` or `--dangerously-bypass-approvals-and-sandbox`. The CLI's own permission
//! flags are set from the node's grants, never wider than weft's sandbox around it:
//!
//! - Claude Code: `--permission-mode default` (every tool use that needs approval is asked
//!   for; with `-p` nobody can answer, so it is refused and reported in
//!   `permission_denials`), and `--allowedTools` pre-approving only the file tools the node's
//!   confinement allows anyway: `Read Glob Grep` when it has a read root, `Edit Write` when
//!   it has a write root. Shell, web and MCP tools are never pre-approved.
//!   `--max-turns` carries `max_agent_steps`.
//! - Codex: `--sandbox read-only`, or `workspace-write` when the confinement has a write
//!   root; `codex exec` never asks (it has no one to ask), so a command outside its sandbox
//!   fails instead of running. `--skip-git-repo-check` because a node's workspace need not be
//!   a repository.
//!
//! Both read the brief from stdin (`-p` with no prompt argument; `exec -`), so it never
//! appears in a process list.

use std::path::Path;

use super::CliKind;

/// What the node's confinement allows, as the CLI flags need it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access {
    pub read: bool,
    pub write: bool,
}

/// The argv of one run (the program first).
pub fn argv(
    kind: CliKind,
    command: &Path,
    model: &str,
    access: Access,
    max_turns: Option<u64>,
    workspace: &Path,
) -> Vec<String> {
    let mut v = vec![command.display().to_string()];
    let mut push = |items: &[&str]| v.extend(items.iter().map(|s| (*s).to_string()));
    match kind {
        CliKind::ClaudeCode => {
            push(&["-p", "--output-format", "stream-json", "--verbose"]);
            push(&["--model", model, "--permission-mode", "default"]);
            let mut tools = Vec::new();
            if access.read || access.write {
                tools.extend(["Read", "Glob", "Grep"]);
            }
            if access.write {
                tools.extend(["Edit", "Write"]);
            }
            if !tools.is_empty() {
                push(&["--allowedTools", &tools.join(" ")]);
            }
            if let Some(n) = max_turns {
                push(&["--max-turns", &n.to_string()]);
            }
        }
        CliKind::Codex => {
            let sandbox = if access.write {
                "workspace-write"
            } else {
                "read-only"
            };
            push(&["exec", "--json", "--model", model, "--sandbox", sandbox]);
            push(&["--skip-git-repo-check", "--cd"]);
            push(&[&workspace.display().to_string(), "-"]);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const BYPASS: [&str; 4] = [
        "--dangerously-skip-permissions",
        "bypassPermissions",
        "--full-auto",
        "--dangerously-bypass-approvals-and-sandbox",
    ];

    #[test]
    fn approvals_are_never_bypassed_and_tools_follow_the_grants() {
        let w = Path::new("/w");
        let none = Access::default();
        let rw = Access {
            read: true,
            write: true,
        };
        for kind in [CliKind::ClaudeCode, CliKind::Codex] {
            for access in [none, rw] {
                let a = argv(kind, Path::new("/bin/x"), "m", access, Some(3), w);
                assert!(!a.iter().any(|s| BYPASS.contains(&s.as_str())), "{a:?}");
            }
        }
        let c = argv(CliKind::ClaudeCode, Path::new("claude"), "m", none, None, w);
        assert!(!c.contains(&"--allowedTools".to_string()), "{c:?}");
        let c = argv(
            CliKind::ClaudeCode,
            Path::new("claude"),
            "m",
            rw,
            Some(3),
            w,
        );
        assert!(
            c.contains(&"Read Glob Grep Edit Write".to_string()),
            "{c:?}"
        );
        assert!(c.ends_with(&["--max-turns".to_string(), "3".to_string()]));
        let x = argv(CliKind::Codex, Path::new("codex"), "m", none, None, w);
        assert!(x.contains(&"read-only".to_string()), "{x:?}");
    }
}

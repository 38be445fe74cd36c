//! AGS permission strings (`scope:action[:target]`, DIGEST §1.2 and §1.14) parsed into a typed
//! model. A permission is a *request* in a document and a *pattern* in operator rules; the same
//! grammar serves both (operator rules may also use `*` as the action).

use std::fmt;

/// The nine AGS permission scopes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Files of the workspace; targets are path globs relative to the workspace root.
    Fs,
    /// Network; targets are origins (`https://host[:port]`) or origin globs.
    Net,
    /// Commands; targets are globs over the command line (argv joined by `shlex`).
    Shell,
    /// Git operations.
    Git,
    /// Process control.
    Process,
    /// Secrets by name.
    Secret,
    /// MCP tools; weft's target form is `SERVER/TOOL` (a glob).
    Mcp,
    /// People (approvals, input).
    Human,
    /// Domain resources the fixed scopes cannot name.
    Custom,
}

impl Scope {
    /// Parses a scope name.
    pub fn parse(s: &str) -> Option<Scope> {
        Some(match s {
            "fs" => Scope::Fs,
            "net" => Scope::Net,
            "shell" => Scope::Shell,
            "git" => Scope::Git,
            "process" => Scope::Process,
            "secret" => Scope::Secret,
            "mcp" => Scope::Mcp,
            "human" => Scope::Human,
            "custom" => Scope::Custom,
            _ => return None,
        })
    }

    /// The scope's name as written in documents.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Fs => "fs",
            Scope::Net => "net",
            Scope::Shell => "shell",
            Scope::Git => "git",
            Scope::Process => "process",
            Scope::Secret => "secret",
            Scope::Mcp => "mcp",
            Scope::Human => "human",
            Scope::Custom => "custom",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One permission: `scope:action[:target]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Permission {
    /// The scope.
    pub scope: Scope,
    /// The action (`[a-z_]+`; `*` in operator rules means any action).
    pub action: String,
    /// The target pattern; `None` means any target.
    pub target: Option<String>,
}

/// Why a permission string is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PermissionError {
    /// The scope is not one of the nine AGS scopes.
    #[error(
        "'{0}': unknown scope (one of fs, net, shell, git, process, secret, mcp, human, custom)"
    )]
    Scope(String),
    /// The action is empty or not `[a-z_]+`.
    #[error("'{0}': the action must be lower-case letters and '_'")]
    Action(String),
    /// The target is present but empty.
    #[error("'{0}': the target after the second ':' is empty")]
    EmptyTarget(String),
    /// A NUL byte cannot name anything.
    #[error("a permission cannot contain a NUL byte")]
    Nul,
}

impl Permission {
    /// Parses a document permission (`^(scope):[a-z_]+(:.+)?$`).
    pub fn parse(text: &str) -> Result<Permission, PermissionError> {
        Permission::parse_with(text, false)
    }

    /// Parses an operator rule pattern: like [`Permission::parse`], and the action may be `*`.
    pub fn parse_pattern(text: &str) -> Result<Permission, PermissionError> {
        Permission::parse_with(text, true)
    }

    fn parse_with(text: &str, wildcard_action: bool) -> Result<Permission, PermissionError> {
        if text.contains('\0') {
            return Err(PermissionError::Nul);
        }
        let mut parts = text.splitn(3, ':');
        let scope_text = parts.next().unwrap_or_default();
        let scope = Scope::parse(scope_text).ok_or_else(|| PermissionError::Scope(text.into()))?;
        let action = parts.next().unwrap_or_default();
        let action_ok = (wildcard_action && action == "*")
            || (!action.is_empty() && action.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
        if !action_ok {
            return Err(PermissionError::Action(text.into()));
        }
        let target = match parts.next() {
            None => None,
            Some("") => return Err(PermissionError::EmptyTarget(text.into())),
            Some(t) => Some(t.to_owned()),
        };
        Ok(Permission {
            scope,
            action: action.to_owned(),
            target,
        })
    }

    /// `true` when this permission lets its holder change something (the DIGEST §6.11 mutation
    /// classifier: `fs:write`, `fs:delete`, `git:commit`, `git:push`, `net:post`, `shell:exec`).
    pub fn is_mutating(&self) -> bool {
        matches!(
            (self.scope, self.action.as_str()),
            (Scope::Fs, "write" | "delete")
                | (Scope::Git, "commit" | "push")
                | (Scope::Net, "post")
                | (Scope::Shell, "exec")
        )
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.scope, self.action)?;
        if let Some(t) = &self.target {
            write!(f, ":{t}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_parts_and_keeps_colons_in_the_target() {
        let p = Permission::parse("net:fetch:https://upload.pypi.org").unwrap();
        assert_eq!(p.scope, Scope::Net);
        assert_eq!(p.action, "fetch");
        assert_eq!(p.target.as_deref(), Some("https://upload.pypi.org"));
        assert_eq!(p.to_string(), "net:fetch:https://upload.pypi.org");
        assert_eq!(Permission::parse("fs:read").unwrap().target, None);
    }

    #[test]
    fn refuses_unknown_scopes_bad_actions_and_empty_targets() {
        assert!(matches!(
            Permission::parse("disk:read:x"),
            Err(PermissionError::Scope(_))
        ));
        assert!(matches!(
            Permission::parse("fs:Read:x"),
            Err(PermissionError::Action(_))
        ));
        assert!(matches!(
            Permission::parse("fs:*:x"),
            Err(PermissionError::Action(_))
        ));
        assert!(Permission::parse_pattern("fs:*:x").is_ok());
        assert!(matches!(
            Permission::parse("fs:read:"),
            Err(PermissionError::EmptyTarget(_))
        ));
        assert!(matches!(
            Permission::parse("fs"),
            Err(PermissionError::Action(_))
        ));
    }

    #[test]
    fn classifies_mutations() {
        assert!(Permission::parse("fs:write:src/**").unwrap().is_mutating());
        assert!(
            Permission::parse("shell:exec:pytest*")
                .unwrap()
                .is_mutating()
        );
        assert!(!Permission::parse("fs:read:**").unwrap().is_mutating());
    }
}

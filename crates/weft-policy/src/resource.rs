//! Actions (what a tool is about to do, as JSON) and their normalised resources. Matching and
//! approvals only ever see the normalised form: fs paths relative to the workspace (lexical,
//! `..` cannot escape), net targets as lower-cased origins, shell commands as argv (split by
//! `shlex`, re-joined canonically), MCP calls as `SERVER/TOOL`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::path::{PathError, Workspace};
use crate::permission::Scope;

/// An action to decide on: `{"scope", "action", "target"?, "argv"?, "tool"?, "arguments"?}`,
/// the same `scope:action:target` shape as a permission.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Action {
    /// The permission scope (`fs`, `net`, `shell`, …).
    pub scope: String,
    /// The action (`read`, `write`, `exec`, `fetch`, `call`, …).
    pub action: String,
    /// What it acts on: a path (fs), a URL (net), a command line (shell), `SERVER/TOOL` (mcp).
    #[serde(default)]
    pub target: Option<String>,
    /// For shell: the argv itself, instead of a command line in `target`.
    #[serde(default)]
    pub argv: Option<Vec<String>>,
    /// The logical tool making the call (`file_write`, `shell_exec`, …); bound into approvals.
    #[serde(default)]
    pub tool: Option<String>,
    /// The call's arguments; bound into approvals (canonical JSON).
    #[serde(default)]
    pub arguments: Option<Value>,
}

/// The normalised form of an action.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Resource {
    /// The scope.
    pub scope: Scope,
    /// The action.
    pub action: String,
    /// The normalised target (`None` when the action names none).
    pub target: Option<String>,
    /// For shell: the argv the target was joined from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// For fs: the absolute path the workspace-relative target stands for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub absolute: Option<String>,
}

/// Why an action cannot be normalised (and is therefore denied before any rule is consulted).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    /// Unknown scope.
    #[error("unknown scope '{0}'")]
    Scope(String),
    /// The action is not `[a-z_]+`.
    #[error("the action '{0}' must be lower-case letters and '_'")]
    Action(String),
    /// A path that is not inside the workspace.
    #[error(transparent)]
    Path(#[from] PathError),
    /// The scope needs a target and there is none.
    #[error("a {0} action needs a target")]
    MissingTarget(Scope),
    /// A command line `shlex` cannot split (an unclosed quote), or an empty one.
    #[error("the command line cannot be split into arguments: {0}")]
    Command(String),
    /// A URL without `scheme://host`.
    #[error("'{0}' is not an absolute URL (scheme://host)")]
    Url(String),
    /// A NUL byte.
    #[error("a target cannot contain a NUL byte")]
    Nul,
}

impl Action {
    /// Normalises the action against `workspace`.
    pub fn normalise(&self, workspace: &Workspace) -> Result<Resource, ResourceError> {
        let scope =
            Scope::parse(&self.scope).ok_or_else(|| ResourceError::Scope(self.scope.clone()))?;
        if self.action.is_empty()
            || !self
                .action
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_')
        {
            return Err(ResourceError::Action(self.action.clone()));
        }
        if self.target.as_deref().is_some_and(|t| t.contains('\0'))
            || self.argv.iter().flatten().any(|a| a.contains('\0'))
        {
            return Err(ResourceError::Nul);
        }
        let mut resource = Resource {
            scope,
            action: self.action.clone(),
            target: None,
            argv: None,
            absolute: None,
        };
        match scope {
            Scope::Fs => {
                let path = self
                    .target
                    .as_deref()
                    .ok_or(ResourceError::MissingTarget(scope))?;
                let relative = workspace.normalise(path)?;
                resource.absolute = Some(workspace.absolute(&relative));
                resource.target = Some(relative);
            }
            Scope::Net => {
                let url = self
                    .target
                    .as_deref()
                    .ok_or(ResourceError::MissingTarget(scope))?;
                resource.target = Some(origin(url).ok_or_else(|| ResourceError::Url(url.into()))?);
            }
            Scope::Shell => {
                let argv = match (&self.argv, &self.target) {
                    (Some(argv), _) => argv.clone(),
                    (None, Some(line)) => {
                        shlex::split(line).ok_or_else(|| ResourceError::Command(line.clone()))?
                    }
                    (None, None) => return Err(ResourceError::MissingTarget(scope)),
                };
                if argv.is_empty() {
                    return Err(ResourceError::Command(String::new()));
                }
                let line = shlex::try_join(argv.iter().map(String::as_str))
                    .map_err(|e| ResourceError::Command(e.to_string()))?;
                resource.target = Some(line);
                resource.argv = Some(argv);
            }
            _ => resource.target = self.target.clone(),
        }
        Ok(resource)
    }

    /// The logical tool name bound into approvals: `tool`, or `scope:action` when absent.
    pub fn tool_name(&self) -> String {
        self.tool
            .clone()
            .unwrap_or_else(|| format!("{}:{}", self.scope, self.action))
    }
}

/// The origin of an absolute URL: lower-cased `scheme://host[:port]`, the scheme's default
/// port dropped, credentials dropped, a trailing dot of the host dropped. `None` when `url` has
/// no `scheme://host`.
pub fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    {
        return None;
    }
    let scheme = scheme.to_ascii_lowercase();
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    // Credentials never become part of a resource (they would land in explanations and logs).
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
        let (h, after) = v6.split_once(']')?;
        (
            format!("[{}]", h.to_ascii_lowercase()),
            after.strip_prefix(':'),
        )
    } else {
        match host_port.rsplit_once(':') {
            Some((h, p)) => (h.to_ascii_lowercase(), Some(p)),
            None => (host_port.to_ascii_lowercase(), None),
        }
    };
    let host = host.trim_end_matches('.').to_owned();
    if host.is_empty() {
        return None;
    }
    let default_port = match scheme.as_str() {
        "http" | "ws" => Some("80"),
        "https" | "wss" => Some("443"),
        _ => None,
    };
    match port {
        Some(p) if !p.is_empty() && Some(p) != default_port => {
            if !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some(format!("{scheme}://{host}:{p}"))
        }
        _ => Some(format!("{scheme}://{host}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn act(scope: &str, action: &str, target: &str) -> Action {
        Action {
            scope: scope.into(),
            action: action.into(),
            target: Some(target.into()),
            argv: None,
            tool: None,
            arguments: None,
        }
    }

    fn ws() -> Workspace {
        Workspace::new("/w").unwrap()
    }

    #[test]
    fn fs_targets_become_workspace_relative() {
        let r = act("fs", "write", "/w/src/../docs/a.md")
            .normalise(&ws())
            .unwrap();
        assert_eq!(r.target.as_deref(), Some("docs/a.md"));
        assert_eq!(r.absolute.as_deref(), Some("/w/docs/a.md"));
        assert!(matches!(
            act("fs", "read", "../../root/.ssh/id_rsa").normalise(&ws()),
            Err(ResourceError::Path(PathError::Escapes(_)))
        ));
    }

    #[test]
    fn net_targets_become_origins() {
        assert_eq!(
            origin("HTTPS://Upload.PyPI.org:443/legacy/?x").as_deref(),
            Some("https://upload.pypi.org")
        );
        assert_eq!(
            origin("http://user:pw@Example.COM.:8080/").as_deref(),
            Some("http://example.com:8080")
        );
        assert_eq!(origin("http://[::1]:80").as_deref(), Some("http://[::1]"));
        assert_eq!(origin("example.com"), None);
        assert_eq!(origin("https://:443"), None);
    }

    #[test]
    fn shell_command_lines_are_split_and_rejoined() {
        let r = act("shell", "exec", "pytest  -q 'tests/a b.py'")
            .normalise(&ws())
            .unwrap();
        assert_eq!(r.argv.as_deref().unwrap(), ["pytest", "-q", "tests/a b.py"]);
        assert_eq!(r.target.as_deref(), Some("pytest -q 'tests/a b.py'"));
        assert!(matches!(
            act("shell", "exec", "echo 'unclosed").normalise(&ws()),
            Err(ResourceError::Command(_))
        ));
        assert!(matches!(
            act("shell", "exec", "   ").normalise(&ws()),
            Err(ResourceError::Command(_))
        ));
    }

    #[test]
    fn unknown_scopes_and_nul_bytes_are_refused() {
        assert!(matches!(
            act("disk", "read", "x").normalise(&ws()),
            Err(ResourceError::Scope(_))
        ));
        assert!(matches!(
            act("fs", "read", "a\0b").normalise(&ws()),
            Err(ResourceError::Nul)
        ));
    }
}

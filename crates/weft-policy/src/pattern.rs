//! A permission used as a pattern over normalised resources. Targets are globs: fs globs are
//! matched against workspace-relative paths with `*` not crossing `/` (`**` does); net globs
//! against lower-cased origins; shell globs against the canonical command line; others
//! against the target as written. A pattern without a target matches every target.

use globset::{GlobBuilder, GlobMatcher};

pub use crate::error::PatternError;
use crate::permission::{Permission, Scope};
use crate::resource::{Resource, origin};

/// A compiled permission pattern.
#[derive(Clone, Debug)]
pub struct Matcher {
    permission: Permission,
    glob: Option<GlobMatcher>,
    /// For an fs pattern `DIR/**`: `DIR`, which the pattern covers too (a rule about a
    /// directory's contents is about the directory: `deny fs:*:.git/**` refuses removing or
    /// replacing `.git` itself).
    dir_itself: Option<String>,
    /// For an fs pattern: the glob over the folded spelling ([`crate::fold`]), used by
    /// [`Matcher::matches_folded`].
    folded: Option<GlobMatcher>,
}

impl Matcher {
    /// Compiles `permission` into a matcher.
    pub fn new(permission: Permission) -> Result<Matcher, PatternError> {
        let text = permission.to_string();
        let compile = |pattern: &str, literal_separator: bool| {
            GlobBuilder::new(pattern)
                .literal_separator(literal_separator)
                .backslash_escape(true)
                .build()
                .map(|g| g.compile_matcher())
                .map_err(|e| PatternError::Glob {
                    text: text.clone(),
                    error: e.kind().to_string(),
                })
        };
        let (mut glob, mut dir_itself, mut folded) = (None, None, None);
        if let Some(target) = &permission.target {
            let (pattern, literal_separator) = match permission.scope {
                Scope::Fs => (fs_pattern(target, &text)?, true),
                Scope::Net => (net_pattern(target), false),
                _ => (target.clone(), false),
            };
            glob = Some(compile(&pattern, literal_separator)?);
            if permission.scope == Scope::Fs {
                dir_itself = pattern
                    .strip_suffix("/**")
                    .filter(|d| !d.contains(['*', '?', '[', '{', '\\']))
                    .map(str::to_owned);
                folded = Some(compile(&crate::fold::fold(&pattern), true)?);
            }
        }
        Ok(Matcher {
            permission,
            glob,
            dir_itself,
            folded,
        })
    }

    /// Parses and compiles a document permission.
    pub fn parse(text: &str) -> Result<Matcher, crate::Error> {
        Ok(Matcher::new(Permission::parse(text)?)?)
    }

    /// The permission this matcher was built from.
    pub fn permission(&self) -> &Permission {
        &self.permission
    }

    /// `true` when the pattern covers `resource`.
    pub fn matches(&self, resource: &Resource) -> bool {
        if self.permission.scope != resource.scope {
            return false;
        }
        if self.permission.action != "*" && self.permission.action != resource.action {
            return false;
        }
        match (&self.glob, &resource.target) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(glob), Some(target)) => {
                glob.is_match(target) || self.dir_itself.as_deref() == Some(target.as_str())
            }
        }
    }

    /// [`Matcher::matches`], or for fs the folded spellings match ([`crate::fold`]: case,
    /// full-width forms, invisible characters). Used by refusing operator rules only.
    pub fn matches_folded(&self, resource: &Resource) -> bool {
        if self.matches(resource) {
            return true;
        }
        let (Some(folded), Some(target)) = (&self.folded, &resource.target) else {
            return false;
        };
        if resource.scope != Scope::Fs
            || (self.permission.action != "*" && self.permission.action != resource.action)
        {
            return false;
        }
        let target = crate::fold::fold(target);
        let dir = self.dir_itself.as_deref().map(crate::fold::fold);
        folded.is_match(&target) || dir.as_deref() == Some(target.as_str())
    }
}

/// fs patterns: `./` prefixes dropped; absolute patterns and `..` refused.
fn fs_pattern(target: &str, text: &str) -> Result<String, PatternError> {
    if target.starts_with('/') {
        return Err(PatternError::AbsoluteFs(text.into()));
    }
    if target.split('/').any(|s| s == "..") {
        return Err(PatternError::ParentFs(text.into()));
    }
    let mut t = target;
    while let Some(rest) = t.strip_prefix("./") {
        t = rest;
    }
    Ok(if t.is_empty() || t == "." {
        ".".into()
    } else {
        t.trim_end_matches('/').to_owned()
    })
}

/// net patterns: a plain origin is normalised like a resource; a glob is lower-cased.
fn net_pattern(target: &str) -> String {
    let has_glob = target.contains(['*', '?', '[', '{']);
    if has_glob {
        target.to_ascii_lowercase()
    } else {
        origin(target).unwrap_or_else(|| target.to_ascii_lowercase())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::Workspace;
    use crate::resource::Action;

    fn res(scope: &str, action: &str, target: &str) -> Resource {
        Action {
            scope: scope.into(),
            action: action.into(),
            target: Some(target.into()),
            argv: None,
            tool: None,
            arguments: None,
        }
        .normalise(&Workspace::new("/w").unwrap())
        .unwrap()
    }

    fn m(text: &str) -> Matcher {
        Matcher::parse(text).unwrap()
    }

    #[test]
    fn fs_star_stays_in_one_directory_and_double_star_crosses() {
        assert!(m("fs:write:src/*").matches(&res("fs", "write", "src/a.rs")));
        assert!(!m("fs:write:src/*").matches(&res("fs", "write", "src/x/a.rs")));
        assert!(m("fs:write:src/**").matches(&res("fs", "write", "src/x/a.rs")));
        assert!(m("fs:read:**").matches(&res("fs", "read", ".")));
        assert!(m("fs:read:./docs/**").matches(&res("fs", "read", "docs/a")));
        assert!(!m("fs:read:**").matches(&res("fs", "write", "a")));
    }

    #[test]
    fn fs_patterns_cannot_be_absolute_or_climb() {
        assert!(matches!(
            Matcher::parse("fs:read:/etc/**"),
            Err(crate::Error::Pattern(PatternError::AbsoluteFs(_)))
        ));
        assert!(matches!(
            Matcher::parse("fs:read:../**"),
            Err(crate::Error::Pattern(PatternError::ParentFs(_)))
        ));
    }

    #[test]
    fn net_patterns_compare_origins() {
        assert!(m("net:fetch:HTTPS://Upload.pypi.org/").matches(&res(
            "net",
            "fetch",
            "https://upload.pypi.org:443/legacy"
        )));
        assert!(!m("net:fetch:https://upload.pypi.org").matches(&res(
            "net",
            "fetch",
            "https://evil.org/upload.pypi.org"
        )));
        assert!(m("net:fetch:https://*.pypi.org").matches(&res(
            "net",
            "fetch",
            "https://test.pypi.org/x"
        )));
        assert!(m("net:fetch:*").matches(&res("net", "fetch", "http://a.b")));
    }

    #[test]
    fn shell_patterns_match_the_canonical_command_line() {
        assert!(m("shell:exec:pytest*").matches(&res("shell", "exec", "pytest   -q")));
        assert!(!m("shell:exec:pytest*").matches(&res("shell", "exec", "rm -rf /")));
        assert!(m("shell:exec:git status").matches(&res("shell", "exec", "git  status")));
    }

    #[test]
    fn wildcard_actions_and_missing_targets() {
        let any = Matcher::new(Permission::parse_pattern("git:*").unwrap()).unwrap();
        assert!(any.matches(&res("git", "push", "origin")));
        assert!(!any.matches(&res("fs", "read", "a")));
    }
}

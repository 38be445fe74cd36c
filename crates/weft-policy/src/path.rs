//! Lexical path normalisation against the workspace root: `.` and empty segments are dropped,
//! `..` pops a segment and may never climb above the root. No file system is consulted
//! (symlinks are the OS sandbox's business: Landlock checks the resolved object), so the same
//! input always normalises to the same workspace-relative path.

/// Why a path cannot name something inside the workspace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// `..` climbs above the workspace root.
    #[error("'{0}' climbs above the workspace root")]
    Escapes(String),
    /// An absolute path outside the workspace root.
    #[error("'{0}' is outside the workspace")]
    Outside(String),
    /// A NUL byte cannot be part of a path.
    #[error("a path cannot contain a NUL byte")]
    Nul,
    /// The workspace root must be an absolute path.
    #[error("the workspace root '{0}' is not an absolute path")]
    RootNotAbsolute(String),
}

/// The workspace root, lexically normalised, as its segments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workspace {
    segments: Vec<String>,
}

impl Workspace {
    /// A workspace rooted at the absolute path `root` (normalised lexically).
    pub fn new(root: &str) -> Result<Workspace, PathError> {
        if root.contains('\0') {
            return Err(PathError::Nul);
        }
        if !root.starts_with('/') {
            return Err(PathError::RootNotAbsolute(root.into()));
        }
        // Above `/` there is nothing: `/..` is `/`, as the kernel resolves it.
        let mut segments = Vec::new();
        for seg in root.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    segments.pop();
                }
                s => segments.push(s.to_owned()),
            }
        }
        Ok(Workspace { segments })
    }

    /// The root as an absolute path.
    pub fn root(&self) -> String {
        format!("/{}", self.segments.join("/"))
    }

    /// Normalises `path` (absolute, or relative to the root) to a workspace-relative path with
    /// `/` separators and no `.`/`..` segments; the root itself is `.`.
    pub fn normalise(&self, path: &str) -> Result<String, PathError> {
        if path.contains('\0') {
            return Err(PathError::Nul);
        }
        let mut rest: Vec<&str> = Vec::new();
        let relative_part = if let Some(abs) = path.strip_prefix('/') {
            // An absolute path must lie under the root once normalised on its own.
            let mut segs: Vec<&str> = Vec::new();
            for seg in abs.split('/') {
                match seg {
                    "" | "." => {}
                    ".." => {
                        segs.pop();
                    }
                    s => segs.push(s),
                }
            }
            let inside = segs.len() >= self.segments.len()
                && segs.iter().zip(&self.segments).all(|(a, b)| a == b);
            if !inside {
                return Err(PathError::Outside(path.into()));
            }
            return Ok(join_relative(
                segs.get(self.segments.len()..).unwrap_or_default(),
            ));
        } else {
            path
        };
        for seg in relative_part.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    if rest.pop().is_none() {
                        return Err(PathError::Escapes(path.into()));
                    }
                }
                s => rest.push(s),
            }
        }
        Ok(join_relative(&rest))
    }

    /// The absolute form of a workspace-relative normalised path.
    pub fn absolute(&self, relative: &str) -> String {
        if relative == "." {
            self.root()
        } else if self.segments.is_empty() {
            format!("/{relative}")
        } else {
            format!("{}/{relative}", self.root())
        }
    }
}

fn join_relative(segs: &[&str]) -> String {
    if segs.is_empty() {
        ".".to_owned()
    } else {
        segs.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> Workspace {
        Workspace::new("/work/proj/").unwrap()
    }

    #[test]
    fn relative_paths_drop_dots_and_pop_parents() {
        assert_eq!(ws().normalise("./src//a/../b.rs").unwrap(), "src/b.rs");
        assert_eq!(ws().normalise("src/..").unwrap(), ".");
        assert_eq!(ws().normalise("").unwrap(), ".");
    }

    #[test]
    fn parents_cannot_climb_above_the_root() {
        assert!(matches!(ws().normalise("../x"), Err(PathError::Escapes(_))));
        assert!(matches!(
            ws().normalise("a/../../x"),
            Err(PathError::Escapes(_))
        ));
    }

    #[test]
    fn absolute_paths_must_be_under_the_root() {
        assert_eq!(ws().normalise("/work/proj/src/x").unwrap(), "src/x");
        assert_eq!(ws().normalise("/work/other/../proj/y").unwrap(), "y");
        assert!(matches!(
            ws().normalise("/work/projx/y"),
            Err(PathError::Outside(_))
        ));
        assert!(matches!(
            ws().normalise("/work/proj/../z"),
            Err(PathError::Outside(_))
        ));
        assert!(matches!(
            ws().normalise("/etc/passwd"),
            Err(PathError::Outside(_))
        ));
    }

    #[test]
    fn the_root_must_be_absolute() {
        assert!(Workspace::new("rel").is_err());
        assert_eq!(Workspace::new("/a/./b/../c").unwrap().root(), "/a/c");
        assert_eq!(ws().absolute("src/x"), "/work/proj/src/x");
    }
}

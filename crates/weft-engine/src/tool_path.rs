//! The `PATH` that `exec` commands and `command` criteria run with: weft's fixed default,
//! after the project's own tool directory `.weft/bin` when the project has one.
//!
//! The default is fixed (not the engine's own `PATH`) so that a command behaves the same
//! on every host. A project whose commands need tools outside it (`pytest`, `mkdocs`, a
//! `python` that is not `/usr/bin/python`) puts them, or symlinks to them, in
//! `<project>/.weft/bin`: the directory belongs to the project, travels with it, and is
//! named in one place, so a run still depends on nothing of the host it was not told about.

use std::path::Path;

/// weft's fixed `PATH` for commands.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The project's tool directory, relative to the project directory.
pub const PROJECT_BIN: &str = ".weft/bin";

/// The `PATH` for a command run in `project_dir`: `<project_dir>/.weft/bin` first when it
/// is a directory, then [`DEFAULT_PATH`]. A project directory whose path cannot be put in
/// `PATH` (it contains `:`, or is not UTF-8) gets the default alone.
pub fn command_path(project_dir: &Path) -> String {
    let bin = project_dir.join(PROJECT_BIN);
    let absolute = std::path::absolute(&bin).unwrap_or(bin);
    match absolute.to_str() {
        Some(dir) if !dir.contains(':') && absolute.is_dir() => format!("{dir}:{DEFAULT_PATH}"),
        _ => DEFAULT_PATH.to_string(),
    }
}

/// The criteria limits for a `success` block evaluated in `project_dir`: the defaults, with
/// [`command_path`] as the `PATH` of `command` criteria.
pub fn criteria_limits(project_dir: &Path) -> weft_criteria::Limits {
    weft_criteria::Limits {
        command_path: command_path(project_dir),
        ..weft_criteria::Limits::default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn without_a_tool_directory_the_path_is_the_default() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(command_path(dir.path()), DEFAULT_PATH);
    }

    #[test]
    fn the_project_tool_directory_comes_first() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(PROJECT_BIN)).unwrap();
        let path = command_path(dir.path());
        let bin = dir.path().join(PROJECT_BIN);
        assert_eq!(path, format!("{}:{DEFAULT_PATH}", bin.display()));
        assert_eq!(
            criteria_limits(dir.path()).command_path,
            path,
            "criteria use the same PATH"
        );
    }

    #[test]
    fn a_file_named_like_the_tool_directory_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".weft")).unwrap();
        std::fs::write(dir.path().join(PROJECT_BIN), "not a directory").unwrap();
        assert_eq!(command_path(dir.path()), DEFAULT_PATH);
    }
}

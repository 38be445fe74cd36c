//! Running the `weft` binary from a test: the binary cargo built for this test run
//! ([`weft`], a command in a directory) and what a finished run of it said ([`Out`],
//! [`call`]). For the CLI's integration tests, which each had their own copy.

#![allow(
    clippy::expect_used,
    reason = "test support: a panic here is a failed test with its message"
)]

use std::path::Path;
use std::process::{Command, Output};

/// `weft` (the binary of this test run) with `dir` as its working directory.
pub fn weft(dir: &Path) -> Command {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("weft"));
    command.current_dir(dir);
    command
}

/// What a finished process said: its exit code (-1 when a signal ended it), stdout and
/// stderr as text.
#[derive(Clone, Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// The output of a finished process, its streams read as UTF-8.
    pub fn of(output: Output) -> Out {
        Out {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
        }
    }
}

/// `weft ARGS` in `dir`, to completion.
pub fn call(dir: &Path, args: &[&str]) -> Out {
    Out::of(weft(dir).args(args).output().expect("weft starts"))
}

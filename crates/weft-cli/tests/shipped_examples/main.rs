//! The shipped AGS examples (`../shared/ags/examples`) end to end through the real `weft`
//! binary, each in a temporary project holding a copy of the document: model work is
//! replayed from cassettes (`weft-cassette/1`), people act through `weft approve|reject|
//! provide` and `weft resume`, and the commands the examples' criteria run (`pytest`,
//! `mkdocs`, `ruff`, `mypy`, `python`, `git`) are the real tools, the Python ones found
//! through the project's `.weft/bin`
//! (`docs/engine.md` §3m). Every run record, and every subgraph child's record, is
//! validated against the AGS run-record schema.
//!
//! The tools come from a virtual environment: `$WEFT_EXAMPLES_VENV`, else
//! `$HOME/.cache/weft/examples-venv`, made on first use by `scripts/examples-venv.sh`
//! (through `weft_test_support`). When it cannot be made, the test fails and says why.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::disallowed_methods,
    reason = "tests: a panic is a failure with a message"
)]

mod docs_site_refresh;
/// The seeded kill harness shared with the other SIGKILL tests.
#[path = "../kill/mod.rs"]
mod harness;
mod kill;
mod kit;
mod library_v1_release;
mod test_repair_loop;

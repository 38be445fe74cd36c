//! `weft sandbox doctor`: what this machine enforces for confined commands (Landlock ABI,
//! seccomp, rlimits, bubblewrap presence), from the sandbox helper confining itself. Exit 0
//! when everything required is fully enforced, 1 otherwise. The helper itself is the hidden
//! `weft sandbox-exec` (handled in `main` before argument parsing).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context as _;
use weft_sandbox::Helper;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Report what is enforced here (exit 0 fully, 1 not: nodes needing it are blocked).
    Doctor {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: &Command) -> anyhow::Result<ExitCode> {
    let Command::Doctor { json } = command;
    let weft = std::env::current_exe().context("cannot find the weft binary to run the helper")?;
    let report =
        weft_sandbox::doctor_blocking(&Helper::weft(weft)).context("cannot start a runtime")?;
    let mut out = anstream::stdout().lock();
    if *json {
        let value = serde_json::json!({
            "fully_enforced": report.fully_enforced(),
            "landlock_abi": report.landlock_abi,
            "checks": report.checks,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
    } else {
        for c in &report.checks {
            let mark = match (c.enforced, c.required) {
                (true, _) => "ok  ",
                (false, true) => "MISSING",
                (false, false) => "absent",
            };
            writeln!(out, "{mark:<8}{:<15}{}", c.name, c.detail)?;
        }
        let verdict = if report.fully_enforced() {
            "fully enforced: confined nodes run here"
        } else {
            "NOT fully enforced: nodes that need the sandbox are blocked"
        };
        writeln!(out, "{verdict}")?;
    }
    Ok(if report.fully_enforced() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

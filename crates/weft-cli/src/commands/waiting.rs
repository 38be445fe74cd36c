//! Prints what a suspended run waits on, with the exact commands that decide it and then
//! continue the run (`weft run`, `weft resume`, `weft status`).

use std::io::Write;
use std::path::Path;

use weft_engine::human::Waiting;

/// `--db PATH` when the store is not the default one, so printed commands work as is.
fn db_flag(db: &Path) -> String {
    if db == Path::new(".weft/weft.db") {
        String::new()
    } else {
        format!(" --db {}", db.display())
    }
}

/// One block per waiting node, then the resume command.
pub fn print(
    out: &mut impl Write,
    run_id: &str,
    db: &Path,
    waits: &[Waiting],
) -> std::io::Result<()> {
    let db = db_flag(db);
    writeln!(out, "waiting on a person:")?;
    for w in waits {
        let roles = if w.roles.is_empty() {
            String::new()
        } else {
            format!("; roles: {}", w.roles.join(", "))
        };
        let deadline = weft_engine::human::deadline_text(w)
            .map(|d| format!("; times out at {d} ({})", w.on_timeout))
            .unwrap_or_default();
        writeln!(
            out,
            "  {} ({}, {}{roles}{deadline})",
            w.node, w.stage, w.mode
        )?;
        if let Some(p) = &w.prompt {
            writeln!(out, "    prompt: {p}")?;
        }
        for item in &w.present {
            writeln!(out, "    present: {item}")?;
        }
        let role = w
            .roles
            .first()
            .map(|r| format!(" --role {r}"))
            .unwrap_or_default();
        match w.mode.as_str() {
            "input" => {
                let sets: Vec<String> = w
                    .collect
                    .keys()
                    .map(|k| format!(" --set {k}=JSON"))
                    .collect();
                writeln!(
                    out,
                    "    weft provide {run_id} {}{}{role}{db}",
                    w.node,
                    sets.concat()
                )?;
            }
            "review" => {
                let sets: Vec<String> = w
                    .editable
                    .iter()
                    .map(|k| format!(" [--set {k}=JSON]"))
                    .collect();
                writeln!(
                    out,
                    "    weft approve {run_id} {}{}{role}{db}",
                    w.node,
                    sets.concat()
                )?;
            }
            _ => writeln!(out, "    weft approve {run_id} {}{role}{db}", w.node)?,
        }
        writeln!(out, "    weft reject {run_id} {}{role}{db}", w.node)?;
    }
    writeln!(out, "then: weft resume {run_id}{db}")?;
    Ok(())
}

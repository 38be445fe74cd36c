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
        format!(" --db {}", shell_word(&db.display().to_string()))
    }
}

/// `word` as one shell word: as it is when it holds only characters no shell treats
/// specially, else in single quotes. An address like `m[1].review` is a glob pattern to
/// the shell, so the printed commands quote it and can be pasted as they are.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
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
        let node = shell_word(&w.node);
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
            .map(|r| format!(" --role {}", shell_word(r)))
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
                    "    weft provide {run_id} {node}{}{role}{db}",
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
                    "    weft approve {run_id} {node}{}{role}{db}",
                    sets.concat()
                )?;
            }
            _ => writeln!(out, "    weft approve {run_id} {node}{role}{db}")?,
        }
        writeln!(out, "    weft reject {run_id} {node}{role}{db}")?;
    }
    writeln!(out, "then: weft resume {run_id}{db}")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::shell_word;

    #[test]
    fn words_the_shell_would_change_are_single_quoted() {
        assert_eq!(shell_word("review"), "review");
        assert_eq!(shell_word("success/owner"), "success/owner");
        assert_eq!(shell_word(".weft/other.db"), ".weft/other.db");
        assert_eq!(shell_word("m[1].review"), "'m[1].review'");
        assert_eq!(shell_word("l[0].m[2].success/ok"), "'l[0].m[2].success/ok'");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }
}

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

/// `word` as one shell word (`shlex`): as it is when no shell would change it, else
/// quoted. An address like `m[1].review` is a glob pattern to the shell, so the printed
/// commands quote it and can be pasted as they are. (Names and paths hold no NUL, the one
/// thing that cannot be quoted; such a word is printed as it is.)
fn shell_word(word: &str) -> String {
    shlex::try_quote(word).map_or_else(|_| word.to_string(), |q| q.into_owned())
}

/// One block per waiting node, then the resume command.
pub fn print(
    out: &mut impl Write,
    run_id: &str,
    db_path: &Path,
    waits: &[Waiting],
) -> std::io::Result<()> {
    // Who runs this command is who the printed commands decide as; `--as` is printed so the
    // decision is attributed even where `$USER` is unset, and so it can be changed.
    let actor = format!(
        " --as {}",
        shell_word(&crate::identity::Actor::current().name)
    );
    let flags = format!("{}{actor}", db_flag(db_path));
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
                    "    weft provide {run_id} {node}{}{role}{flags}",
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
                    "    weft approve {run_id} {node}{}{role}{flags}",
                    sets.concat()
                )?;
            }
            _ => writeln!(out, "    weft approve {run_id} {node}{role}{flags}")?,
        }
        writeln!(out, "    weft reject {run_id} {node}{role}{flags}")?;
    }
    writeln!(out, "then: weft resume {run_id}{}", db_flag(db_path))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::shell_word;

    #[test]
    fn words_the_shell_would_change_are_quoted_and_read_back_whole() {
        for plain in ["review", "success/owner", ".weft/other.db"] {
            assert_eq!(shell_word(plain), plain);
        }
        assert_eq!(shell_word("m[1].review"), "'m[1].review'");
        for word in ["m[1].review", "l[0].m[2].success/ok", "a b", "it's", ""] {
            let quoted = shell_word(word);
            assert_ne!(quoted, word, "{word:?} is not quoted");
            assert_eq!(
                shlex::split(&quoted),
                Some(vec![word.to_string()]),
                "{quoted}"
            );
        }
    }
}

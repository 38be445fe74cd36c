//! Every command's `--help` against `docs/cli.md`, the CLI's contract: each command and
//! subcommand `weft --help` lists has a `` ## `weft …` `` section there; every long flag its
//! `--help` lists is named in that section (its heading or text; `--max-bytes` in "Reading
//! limits", which covers every command that reads a document); and every section's command
//! exists. A flag added without its documentation, or a section left for a command that is
//! gone, fails here.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

use assert_cmd::Command;

const CLI_MD: &str = include_str!("../../../docs/cli.md");

fn help(path: &[&str]) -> String {
    let out = Command::cargo_bin("weft")
        .unwrap()
        .args(path)
        .arg("--help")
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    assert!(out.status.success(), "weft {path:?} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The lines of `section` (`Commands:`, `Options:`) of a clap help text.
fn block<'a>(text: &'a str, section: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| l.trim() != section)
        .skip(1)
        .take_while(|l| l.starts_with(' ') || l.is_empty())
        .collect()
}

/// The subcommands a help text lists (without `help`).
fn commands(text: &str) -> Vec<String> {
    block(text, "Commands:")
        .iter()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The long flags a help text lists (without `--help` and `--version`).
fn flags(text: &str) -> Vec<String> {
    block(text, "Options:")
        .iter()
        // An option's own line (`  -o, --output <PATH>`), not its wrapped description.
        .filter(|l| l.starts_with("  -"))
        .map(|l| l.trim_start().split("  ").next().unwrap_or_default())
        .flat_map(|l| l.split([' ', ',', '=', '[', '<']))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .filter(|w| !matches!(*w, "--help" | "--version"))
        .map(str::to_string)
        .collect()
}

/// `docs/cli.md`'s `## ` sections: heading and text.
fn sections() -> Vec<(String, String)> {
    CLI_MD
        .split("\n## ")
        .skip(1)
        .map(|s| {
            let (heading, text) = s.split_once('\n').unwrap_or((s, ""));
            (heading.to_string(), text.to_string())
        })
        .collect()
}

/// The section documenting `weft PATH…`: its heading names the command words, where a
/// word may be one of `a|b|c`.
fn section_of(path: &[String]) -> Option<(String, String)> {
    sections().into_iter().find(|(heading, _)| {
        heading.split(" / ").any(|form| {
            let Some(words) = form.strip_prefix("`weft ") else {
                return false;
            };
            let words: Vec<&str> = words.trim_end_matches('`').split_whitespace().collect();
            words.len() >= path.len()
                && path
                    .iter()
                    .zip(&words)
                    .all(|(p, w)| w.split('|').any(|alt| alt == p))
        })
    })
}

/// Every command path: `["run"]`, `["audit", "verify"]`, …
fn command_paths() -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for command in commands(&help(&[])) {
        let nested = commands(&help(&[&command]));
        if nested.is_empty() {
            paths.push(vec![command]);
        } else {
            for sub in nested {
                paths.push(vec![command.clone(), sub]);
            }
        }
    }
    paths
}

#[test]
fn every_command_and_flag_in_the_help_is_documented_in_cli_md() {
    let reading_limits = sections()
        .into_iter()
        .find(|(h, _)| h.starts_with("Reading limits"))
        .map(|(_, t)| t)
        .expect("docs/cli.md has a Reading limits section");
    let paths = command_paths();
    assert!(paths.len() > 20, "too few commands found: {paths:?}");
    let mut missing = Vec::new();
    for path in &paths {
        let words: Vec<&str> = path.iter().map(String::as_str).collect();
        let Some((heading, text)) = section_of(path) else {
            missing.push(format!("weft {}: no section", words.join(" ")));
            continue;
        };
        for flag in flags(&help(&words)) {
            let named = |t: &str| {
                t.match_indices(&flag).any(|(i, _)| {
                    // `--db` must not be found inside `--dbx`.
                    !t[i + flag.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                })
            };
            if !named(&heading) && !named(&text) && !named(&reading_limits) {
                missing.push(format!("weft {} {flag}", words.join(" ")));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "documented nowhere in docs/cli.md:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn every_command_section_of_cli_md_names_a_command_weft_has() {
    let paths = command_paths();
    let mut stale = Vec::new();
    for (heading, _) in sections() {
        for form in heading.split(" / ") {
            let Some(words) = form.strip_prefix("`weft ") else {
                continue;
            };
            let words: Vec<&str> = words
                .split_whitespace()
                .take_while(|w| !w.starts_with(['-', '[']) && !w.chars().all(char::is_uppercase))
                .collect();
            let known = paths.iter().any(|p| {
                p.len() <= words.len()
                    && p.iter()
                        .zip(&words)
                        .all(|(a, w)| w.split('|').any(|alt| alt == a))
            });
            // The sandbox helper bypasses clap (`weft sandbox-exec`), on purpose.
            if !known && words.first() != Some(&"sandbox-exec") {
                stale.push(heading.clone());
            }
        }
    }
    assert!(
        stale.is_empty(),
        "sections for commands weft does not have:\n  {}",
        stale.join("\n  ")
    );
}

/// The help's claims about what weft can execute stay true: it runs graphs, and `weft run`
/// runs model nodes on live providers (`--config`), not only from cassettes.
#[test]
fn the_run_help_says_what_runs() {
    let top = help(&[]);
    assert!(top.contains("conformance level 3"), "{top}");
    let text = help(&["run"]);
    assert!(!text.contains("root scope"), "{text}");
    assert!(text.contains("--config"), "{text}");
    assert!(text.contains("live"), "{text}");
}

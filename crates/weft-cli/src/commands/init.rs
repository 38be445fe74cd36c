//! `weft init [DIR]`: the first files of a weft project. `weft.toml` routes every tier to
//! the local model (hosted providers as commented alternatives), and `hello.agraph.yaml` is
//! a starter graph that `weft validate --strict` accepts and `weft run` runs with no model.
//! Existing files are never overwritten (exit 1, naming them). Prints the next commands.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

/// What `weft init` writes: name, text.
const FILES: [(&str, &str); 2] = [
    ("weft.toml", include_str!("../../templates/init/weft.toml")),
    (
        STARTER,
        include_str!("../../templates/init/hello.agraph.yaml"),
    ),
];

/// The starter graph's file name.
const STARTER: &str = "hello.agraph.yaml";

pub fn run(dir: &Path) -> anyhow::Result<ExitCode> {
    let targets: Vec<(PathBuf, &str)> = FILES
        .iter()
        .map(|(name, text)| (dir.join(name), *text))
        .collect();
    let existing: Vec<String> = targets
        .iter()
        .filter(|(path, _)| path.exists())
        .map(|(path, _)| path.display().to_string())
        .collect();
    if !existing.is_empty() {
        writeln!(
            anstream::stderr(),
            "error: {} already exist{}; weft init writes nothing over a file (move {} away, or \
             init another directory: weft init DIR)",
            existing.join(" and "),
            if existing.len() == 1 { "s" } else { "" },
            if existing.len() == 1 { "it" } else { "them" },
        )?;
        return Ok(ExitCode::from(1));
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (path, text) in &targets {
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let cd = if dir == Path::new(".") {
        String::new()
    } else {
        format!("  cd {}\n", dir.display())
    };
    write!(
        anstream::stdout(),
        "wrote weft.toml: every tier on the local model at http://127.0.0.1:8090 (hosted \
         providers commented out)\n\
         wrote {STARTER}: a starter graph of two shell steps (and a model step, commented out)\n\
         next:\n\
         {cd}  weft validate --strict {STARTER}   # every problem, with its code and fix\n\
         \x20 weft run {STARTER}                  # runs it; the log is .weft/weft.db\n\
         \x20 weft status                                 # the latest run's nodes\n\
         \x20 weft config check                           # what weft.toml routes where\n"
    )?;
    Ok(ExitCode::SUCCESS)
}

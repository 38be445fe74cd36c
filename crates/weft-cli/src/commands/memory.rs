//! `weft memory`: the knowledge-graph memory (docs/memory.md). Glue over `weft-memory`:
//! read the file or the arguments, call the store, print. Exit 0 done, 1 refused (a
//! malformed line, an unknown id or name, a decision the state does not allow), 2 usage or
//! storage errors.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use weft_memory::{
    Config, ExportFormat, Memory, MemoryError, Outcome, SubgraphQuery, Verdict, parse_jsonl,
};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The memory store (created on first use) [default: the --config file's `[memory] db`,
    /// else .weft/memory.db].
    #[arg(long, value_name = "PATH", global = true)]
    db: Option<PathBuf>,
    /// A weft.toml whose `[memory]` table gives the store and the embedder `query --search`
    /// uses (`[memory.embedder]`: the passages nearest to the search's embedding seed the
    /// walk too).
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Stage candidate triples from a JSONL file (one object per line: subject, predicate,
    /// object, source; optional chunk, extractor, run, valid_from, valid_to). A malformed
    /// line is reported with its number and nothing of the file is staged.
    Ingest {
        #[arg(value_name = "FILE.jsonl")]
        file: PathBuf,
    },
    /// Promote staged candidates (their claims) to canonical facts: a person's decision.
    Promote(Decision),
    /// Reject candidates (their claims); a canonical one is retired, not deleted.
    Reject(Decision),
    /// Serve a bounded subgraph around seed entities (and/or a passage search).
    Query {
        /// A seed entity name (repeatable).
        #[arg(long = "seed", value_name = "NAME")]
        seeds: Vec<String>,
        /// Free text searched in the passages; their edges seed the walk.
        #[arg(long, value_name = "TEXT")]
        search: Option<String>,
        #[arg(long, default_value_t = 2)]
        hops: u32,
        #[arg(long, default_value_t = 500)]
        max_edges: usize,
        #[arg(long, default_value_t = 2000)]
        tokens: usize,
        /// Only edges with this predicate (repeatable).
        #[arg(long = "predicate", value_name = "NAME")]
        predicates: Vec<String>,
        /// Print `{"edges":[...],"tokens":N,...}`.
        #[arg(long)]
        json: bool,
    },
    /// Merge the entity ALIAS names into the one CANONICAL names; prints the merge id.
    Merge {
        alias: String,
        canonical: String,
        /// Why the two are one (kept with the merge).
        #[arg(long, default_value = "")]
        evidence: String,
        /// Who decided the merge (default: $USER).
        #[arg(long = "as", value_name = "WHO")]
        who: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Undo a merge: its aliases and moved edges go back exactly.
    Unmerge {
        merge_id: i64,
        #[arg(long = "as", value_name = "WHO")]
        who: Option<String>,
    },
    /// Counts of candidates, facts, entities, aliases, merges and passages.
    Stats {
        #[arg(long)]
        json: bool,
    },
    /// Export the facts: N-Quads to stdout (or --out FILE), or Markdown, one file per
    /// entity, into --out DIR (default `memory-md`).
    Export {
        #[arg(long, value_enum)]
        format: Format,
        #[arg(long, value_name = "PATH")]
        out: Option<PathBuf>,
    },
}

#[derive(clap::Args, Debug)]
struct Decision {
    /// Candidate ids.
    #[arg(
        value_name = "ID",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    ids: Vec<i64>,
    /// Every staged claim.
    #[arg(long)]
    all: bool,
    /// Who decides (recorded).
    #[arg(long = "as", value_name = "WHO", required = true)]
    who: String,
    /// Why (recorded).
    #[arg(long, default_value = "")]
    why: String,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum Format {
    Nquads,
    Markdown,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn who_or_user(who: Option<&String>) -> String {
    who.cloned()
        .or_else(super::run::who)
        .unwrap_or_else(|| "unknown".to_string())
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    match execute(args) {
        Err(error) => match error.downcast_ref::<MemoryError>() {
            Some(
                MemoryError::MalformedLine { .. }
                | MemoryError::NotFound(_)
                | MemoryError::Refused(_),
            ) => {
                anstream::eprintln!("error: {error:#}");
                Ok(ExitCode::from(1))
            }
            _ => Err(error),
        },
        ok => ok,
    }
}

/// The `[memory]` table of `--config`, when given (a file without one is refused).
fn memory_config(args: &Args) -> anyhow::Result<Option<weft_agents::MemoryConfig>> {
    let Some(path) = &args.config else {
        return Ok(None);
    };
    let memory = weft_host::ConfigFile::load(path)?.memory()?;
    memory.map(Some).ok_or_else(|| {
        anyhow::anyhow!(
            "{} has no [memory] table (docs/memory.md §8)",
            path.display()
        )
    })
}

/// The embedding of a search's text by the configured embedder.
fn embed(embedder: &weft_agents::EmbedderConfig, text: &str) -> anyhow::Result<Vec<f32>> {
    let embedder = embedder.open()?;
    let mut vectors = embedder
        .embed_blocking(&[text.to_string()])
        .map_err(|e| anyhow::anyhow!("the embedder at {}: {e}", embedder.url()))?;
    vectors
        .pop()
        .ok_or_else(|| anyhow::anyhow!("the embedder at {}: no embedding", embedder.url()))
}

fn execute(args: &Args) -> anyhow::Result<ExitCode> {
    let mut out = anstream::stdout();
    let config = memory_config(args)?;
    let db = args
        .db
        .clone()
        .or_else(|| config.as_ref().map(|m| m.db.clone()))
        .unwrap_or_else(|| PathBuf::from(".weft/memory.db"));
    match &args.command {
        Command::Ingest { file } => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let parsed = parse_jsonl(&text).map_err(|e| match e {
                MemoryError::MalformedLine { line, reason } => MemoryError::MalformedLine {
                    line,
                    reason: format!("{}: {reason}; nothing was staged", file.display()),
                },
                other => other,
            })?;
            let (lines, batch): (Vec<usize>, Vec<_>) = parsed.into_iter().unzip();
            let memory = Memory::open(&db, Config::default())?;
            let report = memory.ingest(batch, now_ms())?;
            writeln!(out, "staged {} candidate(s)", report.staged.len())?;
            if let (Some(first), Some(last)) = (report.staged.first(), report.staged.last()) {
                writeln!(out, "  ids {first}..={last}")?;
            }
            for (index, id, reason) in &report.rejected {
                let line = lines.get(*index).copied().unwrap_or(0);
                writeln!(out, "rejected line {line} (candidate {id}): {reason}")?;
            }
        }
        Command::Promote(d) | Command::Reject(d) => {
            let verdict = if matches!(args.command, Command::Promote(_)) {
                Verdict::Promote
            } else {
                Verdict::Reject
            };
            let memory = Memory::open(&db, Config::default())?;
            let outcomes = if d.all {
                memory.decide_all(verdict, &d.who, &d.why, now_ms())?
            } else {
                memory.decide(d.ids.clone(), verdict, &d.who, &d.why, now_ms())?
            };
            for (id, outcome) in outcomes {
                match outcome {
                    Outcome::Promoted { triple } => {
                        writeln!(out, "{id}: promoted as edge {triple}")?
                    }
                    Outcome::Rejected => writeln!(out, "{id}: rejected")?,
                    Outcome::Pending { .. } => writeln!(out, "{id}: still staged")?,
                }
            }
        }
        Command::Query {
            seeds,
            search,
            hops,
            max_edges,
            tokens,
            predicates,
            json,
        } => {
            let memory = Memory::open(&db, Config::default())?;
            let query = SubgraphQuery {
                seeds: seeds.clone(),
                passage_search: search.clone(),
                hops: *hops,
                max_edges: *max_edges,
                max_tokens: *tokens,
                predicates: (!predicates.is_empty()).then(|| predicates.clone()),
                ..SubgraphQuery::default()
            };
            let embedder = config.as_ref().and_then(|m| m.embedder.as_ref());
            let served = match (embedder, search) {
                (Some(embedder), Some(text)) => {
                    memory.subgraph_near(&query, &embed(embedder, text)?, query.passage_limit)?
                }
                _ => memory.subgraph(&query)?,
            };
            if *json {
                writeln!(out, "{}", serde_json::to_string(&served)?)?;
            } else {
                for name in &served.unresolved_seeds {
                    anstream::eprintln!("warning: no entity named `{name}`");
                }
                write!(out, "{}", served.to_text())?;
                writeln!(
                    out,
                    "# {} edge(s), ~{} tokens",
                    served.edges.len(),
                    served.tokens
                )?;
            }
        }
        Command::Merge {
            alias,
            canonical,
            evidence,
            who,
            json,
        } => {
            let memory = Memory::open(&db, Config::default())?;
            let who = who_or_user(who.as_ref());
            let report = memory.merge(alias, canonical, evidence, &who, now_ms())?;
            if *json {
                writeln!(out, "{}", serde_json::to_string(&report)?)?;
            } else {
                writeln!(out, "{}", report.merge_id)?;
                if report.flagged_for_review {
                    anstream::eprintln!(
                        "note: merge {} moved {} edges and is flagged for review",
                        report.merge_id,
                        report.moved_edges
                    );
                }
            }
        }
        Command::Unmerge { merge_id, who } => {
            let memory = Memory::open(&db, Config::default())?;
            let report = memory.unmerge(*merge_id, &who_or_user(who.as_ref()), now_ms())?;
            writeln!(
                out,
                "merge {} undone: {} alias(es) and {} edge(s) restored",
                report.merge_id, report.moved_aliases, report.moved_edges
            )?;
        }
        Command::Stats { json } => {
            let memory = Memory::open(&db, Config::default())?;
            let stats = memory.stats()?;
            let value = serde_json::to_value(&stats)?;
            if *json {
                writeln!(out, "{value}")?;
            } else if let Some(map) = value.as_object() {
                for (key, count) in map {
                    writeln!(out, "{key:<22}{count}")?;
                }
            }
        }
        Command::Export { format, out: path } => {
            let memory = Memory::open(&db, Config::default())?;
            match (ExportFormat::from(*format), path) {
                (ExportFormat::NQuads, Some(path)) => {
                    let mut file = std::io::BufWriter::new(
                        std::fs::File::create(path)
                            .with_context(|| format!("cannot create {}", path.display()))?,
                    );
                    let n = memory.export_nquads(&mut file)?;
                    file.flush()?;
                    anstream::eprintln!("{n} quad(s) written to {}", path.display());
                }
                (ExportFormat::NQuads, None) => {
                    let mut lock = std::io::stdout().lock();
                    memory.export_nquads(&mut lock)?;
                }
                (ExportFormat::Markdown, path) => {
                    let dir = path.clone().unwrap_or_else(|| PathBuf::from("memory-md"));
                    let n = memory.export_markdown(&dir)?;
                    writeln!(out, "{n} file(s) written to {}", dir.display())?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

impl From<Format> for ExportFormat {
    fn from(format: Format) -> Self {
        match format {
            Format::Nquads => ExportFormat::NQuads,
            Format::Markdown => ExportFormat::Markdown,
        }
    }
}

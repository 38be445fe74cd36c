//! `weft`: the command-line interface. This crate is glue: argument parsing (clap), reading
//! files, and rendering the data the library crates return. Exit codes follow the AGS
//! validator contract: 0 clean, 1 a document failed (or could not be read), 2 `--strict`
//! found only warnings or the command line itself was wrong. `weft run` / `weft resume` exit 3
//! when the run waits on a person; `weft cancel` exits 4 when no driver finished the cancel.

mod commands;
mod identity;
mod input;
mod plan_view;
mod progress;
mod render;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc, not the system allocator: a run allocates and frees many small JSON values per
/// event (payloads, node views, outputs), and with glibc malloc that bookkeeping was about a
/// third of the engine's time per node (`docs/BENCHMARKS.md` measures both). Built without
/// transparent huge pages (the workspace's `no_thp`), which cost resident memory, not speed,
/// at weft's sizes.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// weft: plans as files, runs as durable records. It validates and plans AGS 1.0 work
/// graphs, and runs them at conformance level 3: shell steps, model steps (live providers,
/// a local model, or recorded turns), people at checkpoints, in a resumable event log.
#[derive(Parser, Debug)]
#[command(name = "weft", version, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Options every command that reads a document shares.
#[derive(clap::Args, Debug, Clone)]
struct ReadArgs {
    /// Refuse documents larger than this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = weft_ags::load::Limits::default().max_bytes)]
    max_bytes: usize,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Validate AGS documents: schema, references, data flow and advisories, all in one pass.
    Validate {
        /// Fail (exit 2) when there are warnings (AG9xx) but no errors.
        #[arg(long)]
        strict: bool,
        /// Like --strict, and weft's own advice (WF9xx) fails too.
        #[arg(long)]
        pedantic: bool,
        /// Print `{"documents":[{path, ok, findings}]}` instead of text.
        #[arg(long)]
        json: bool,
        /// Print only a status line per failing document, and the total.
        #[arg(long, short, conflicts_with = "json")]
        quiet: bool,
        /// Refuse (AG303) documents that use features above this conformance level.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(0..=3))]
        level: Option<u8>,
        #[command(flatten)]
        read: ReadArgs,
        /// Documents to validate (`.agraph.yaml`, `.agraph.json`), directories to search for
        /// them, or `-` for standard input.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Show the execution plan: order, parallel groups, critical path, worst case, cost, gates.
    Plan {
        /// Print the plan as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        read: ReadArgs,
        /// The document to plan.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Print the document's graph_digest (sha256 of its RFC 8785 canonical form).
    Digest {
        #[command(flatten)]
        read: ReadArgs,
        /// The document to digest.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Convert a document between JSON and YAML, keeping key order and x- extensions.
    Convert {
        /// The output format.
        #[arg(long, value_enum)]
        to: commands::convert::Target,
        /// Write here instead of standard output.
        #[arg(long, short, value_name = "PATH")]
        output: Option<PathBuf>,
        #[command(flatten)]
        read: ReadArgs,
        /// The document to convert.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Print the AGS 1.0 JSON Schema weft validates against.
    Schema {
        /// Print the run-record schema instead.
        #[arg(long)]
        run_record: bool,
    },
    /// Explain a diagnostic code (e.g. `weft explain AG201`).
    Explain {
        /// The code, e.g. AG111 or WF906.
        code: String,
    },
    /// Run a work graph to its end: shell steps (`x-weft-exec`), model steps on live
    /// providers (--config weft.toml) or replayed (--cassette), people at checkpoints, loops,
    /// maps and subgraphs (docs/engine.md). Exit 0 when the run succeeded, 3 when it waits on
    /// a person, 1 when it failed, is partial or was cancelled.
    Run {
        /// The document to run.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Recorded model turns the `replay` agent plays for model nodes (docs/engine.md §3f).
        #[arg(long, value_name = "PATH")]
        cassette: Option<PathBuf>,
        /// Run model nodes on live providers: the routing profile of this weft.toml
        /// (docs/agents.md §6).
        #[arg(long, value_name = "PATH", conflicts_with = "cassette")]
        config: Option<PathBuf>,
        /// A param value, `KEY=VALUE` (VALUE parsed as JSON when it is JSON, else a string).
        #[arg(long = "param", value_name = "KEY=VALUE")]
        params: Vec<String>,
        /// Run at most this many nodes at once (default: `constraints.max_parallel_nodes`).
        #[arg(long, value_name = "N")]
        max_parallel: Option<usize>,
        /// The event store.
        #[arg(long, value_name = "PATH", default_value = ".weft/weft.db")]
        db: PathBuf,
        /// Print the run report as JSON.
        #[arg(long)]
        json: bool,
        /// Print each event as one JSON line as it is appended, and nothing else.
        #[arg(long, conflicts_with = "json")]
        jsonl: bool,
        /// Check and plan only: print what would run; create and write nothing.
        #[arg(long, conflicts_with = "jsonl")]
        dry_run: bool,
        /// Run the commands of `x-weft-exec` nodes that declare permissions in the OS
        /// sandbox, confined to what they grant (blocked where it cannot be enforced).
        #[arg(long)]
        sandbox: bool,
    },
    /// Resume a stopped run from its log, applying its decisions (docs/engine.md §2a). Exit 0
    /// when the run ends succeeded (or had already succeeded), 3 when it still waits on a
    /// person, 1 otherwise or when the resume is refused.
    Resume {
        /// The run id.
        #[arg(value_name = "RUN")]
        run: String,
        /// Optional: the document, checked against the run's graph digest (RT053).
        #[arg(value_name = "FILE")]
        file: Option<PathBuf>,
        /// The event store.
        #[arg(long, value_name = "PATH", default_value = ".weft/weft.db")]
        db: PathBuf,
        /// Resume even when FILE's graph digest differs from the run's.
        #[arg(long)]
        force: bool,
        /// Failed or blocked nodes to run again, comma-separated (none of their dependents may
        /// have started).
        #[arg(long, value_name = "A,B", value_delimiter = ',')]
        retry_nodes: Vec<String>,
        /// Run again the nodes that were running when the run stopped.
        #[arg(long)]
        retry_uncertain: bool,
        /// Recorded model turns for the model nodes still to run (as `weft run --cassette`).
        #[arg(long, value_name = "PATH")]
        cassette: Option<PathBuf>,
        /// Live providers for the model nodes still to run (as `weft run --config`).
        #[arg(long, value_name = "PATH", conflicts_with = "cassette")]
        config: Option<PathBuf>,
        /// Run the nodes still to run in the OS sandbox, as `weft run --sandbox` does.
        #[arg(long)]
        sandbox: bool,
        /// Print the resume report as JSON.
        #[arg(long)]
        json: bool,
        /// Print each event this resume appends as one JSON line, and nothing else.
        #[arg(long, conflicts_with = "json")]
        jsonl: bool,
    },
    /// Approve a node that waits on a person (a gate, an escalation); in review mode
    /// `--set` edits a declared output. Exit 0 recorded, 1 refused (docs/cli.md).
    Approve(commands::decide::DecideArgs),
    /// Reject a node that waits on a person. Exit 0 recorded, 1 refused.
    Reject(commands::decide::DecideArgs),
    /// Provide the values a node waits for (input gates, `human_takeover`): `--set
    /// NAME=VALUE`, checked against the wait's `collect`. Exit 0 recorded, 1 refused.
    Provide(commands::decide::DecideArgs),
    /// Cancel a run: exit 0 cancelled, 1 refused, 4 requested but no driver finished it
    /// within --wait (`weft resume RUN` completes it).
    Cancel {
        /// The run id.
        #[arg(value_name = "RUN")]
        run: String,
        /// The event store.
        #[arg(long, value_name = "PATH", default_value = ".weft/weft.db")]
        db: PathBuf,
        /// How long to wait for a live driver to finish the run, in seconds.
        #[arg(long, value_name = "SECS", default_value_t = 5.0)]
        wait: f64,
        #[command(flatten)]
        who: commands::decide::Identity,
    },
    /// Change the graph of a run that has not finished (cancel a node, add an edge): exit
    /// 0 appended, 1 refused (docs/cli.md).
    Mutate(commands::mutate::MutateArgs),
    /// Print a run's stored events as JSON lines; `--follow`: as they are committed.
    Events {
        /// The run id (with `--follow`, leave it out to follow every run of the store).
        #[arg(value_name = "RUN", required_unless_present = "follow")]
        run: Option<String>,
        /// The event store.
        #[arg(long, value_name = "PATH", default_value = ".weft/weft.db")]
        db: PathBuf,
        /// Keep printing events as any process commits them; exits when the run ends
        /// (every run: until interrupted).
        #[arg(long)]
        follow: bool,
        /// Start after this cursor: a seq of RUN, or with no RUN a `position` printed by
        /// `--follow` (resumes a follower that stopped, losing and repeating nothing).
        #[arg(long, value_name = "CURSOR", default_value_t = 0)]
        after: u64,
    },
    /// Print a stored run's AGS run record (JSON), built from its event log.
    Record {
        /// The run id (default: the store's latest run).
        #[arg(value_name = "RUN")]
        run: Option<String>,
        /// The event store.
        #[arg(long, value_name = "PATH", default_value = ".weft/weft.db")]
        db: PathBuf,
    },
    /// Show a stored run's status and node states.
    Status {
        /// The run id (default: the store's latest run).
        #[arg(value_name = "RUN")]
        run: Option<String>,
        /// The event store.
        #[arg(long, value_name = "PATH", default_value = ".weft/weft.db")]
        db: PathBuf,
        /// Print `{run_id, status, started_at, finished_at, nodes}` as JSON.
        #[arg(long)]
        json: bool,
        /// Render the status again each time events are committed; exits when the run ends.
        #[arg(long)]
        watch: bool,
    },
    /// List the runs of a store: id, status, creation time, graph digest.
    Runs {
        /// The event store.
        #[arg(long, value_name = "PATH", default_value = ".weft/weft.db")]
        db: PathBuf,
        /// Print `{"runs": [...]}` as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check the hash-chained audit log (docs/audit.md).
    Audit {
        #[command(subcommand)]
        command: commands::audit::Command,
    },
    /// Permissions and operator policy (docs/permissions.md).
    Policy {
        #[command(subcommand)]
        command: commands::policy::Command,
    },
    /// The OS sandbox for commands (docs/permissions.md).
    Sandbox {
        #[command(subcommand)]
        command: commands::sandbox::Command,
    },
    /// The routing profile in weft.toml: providers and the model that serves each tier.
    Config {
        #[command(subcommand)]
        command: commands::config::Command,
    },
    /// Start a project: write a commented weft.toml for the local model (hosted providers as
    /// commented alternatives) and a starter graph, hello.agraph.yaml, that `weft run` runs.
    /// Never overwrites a file (exit 1).
    Init {
        /// The directory to write them in.
        #[arg(value_name = "DIR", default_value = ".")]
        dir: PathBuf,
    },
    /// Draft a work graph for an objective with a model of weft.toml, validated and repaired
    /// until clean under --strict, written for review (never run). Exit 0 clean, 1 not clean
    /// after the rounds (draft written as *.draft.yaml) or the model failed, 2 bad input.
    Generate(commands::generate::Args),
    /// Where each model call of a document is routed by weft.toml, and why.
    Routing {
        #[command(subcommand)]
        command: commands::routing::Command,
    },
    /// The knowledge-graph memory: stage, verify, merge, query, export (docs/memory.md).
    Memory(commands::memory::Args),
}

fn main() -> ExitCode {
    // The sandbox helper (`weft sandbox-exec --policy JSON -- CMD…`) confines this process and
    // then executes CMD: it bypasses clap so nothing else runs first (docs/permissions.md).
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|a| a == "sandbox-exec") {
        let code = weft_sandbox::helper::main(args.collect());
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Validate {
            strict,
            pedantic,
            json,
            quiet,
            level,
            read,
            files,
        } => commands::validate::run(&commands::validate::Options {
            quiet,
            strict: strict || pedantic,
            pedantic,
            json,
            level,
            max_bytes: read.max_bytes,
            files,
        }),
        Command::Plan { json, read, file } => commands::plan::run(&file, json, read.max_bytes),
        Command::Digest { read, file } => commands::digest::run(&file, read.max_bytes),
        Command::Convert {
            to,
            output,
            read,
            file,
        } => commands::convert::run(&file, to, output.as_deref(), read.max_bytes),
        Command::Schema { run_record } => commands::schema::run(run_record),
        Command::Explain { code } => commands::explain::run(&code),
        Command::Audit { command } => commands::audit::run(&command),
        Command::Policy { command } => commands::policy::run(&command),
        Command::Sandbox { command } => commands::sandbox::run(&command),
        Command::Config { command } => commands::config::run(&command),
        Command::Routing { command } => commands::routing::run(&command),
        Command::Generate(args) => commands::generate::run(&args),
        Command::Init { dir } => commands::init::run(&dir),
        Command::Memory(args) => commands::memory::run(&args),
        Command::Run {
            file,
            cassette,
            config,
            params,
            max_parallel,
            db,
            json,
            jsonl,
            dry_run,
            sandbox,
        } => commands::run::run(
            &file,
            &params,
            max_parallel,
            &db,
            &commands::run::Flags {
                json,
                jsonl,
                dry_run,
                cassette,
                sandbox,
                config,
            },
        ),
        Command::Resume {
            run,
            file,
            db,
            force,
            retry_nodes,
            retry_uncertain,
            cassette,
            config,
            sandbox,
            json,
            jsonl,
        } => commands::resume::run(
            &run,
            file.as_deref(),
            &db,
            commands::resume::Flags {
                force,
                retry_nodes,
                retry_uncertain,
                cassette,
                config,
                sandbox,
                json,
                jsonl,
            },
        ),
        Command::Approve(a) => commands::decide::run(&a, weft_engine::human::Verb::Approve),
        Command::Reject(a) => commands::decide::run(&a, weft_engine::human::Verb::Reject),
        Command::Provide(a) => commands::decide::run(&a, weft_engine::human::Verb::Provide),
        Command::Cancel { run, db, wait, who } => commands::cancel::run(&run, &db, wait, &who),
        Command::Mutate(args) => commands::mutate::run(&args),
        Command::Events {
            run,
            db,
            follow,
            after,
        } => commands::events::run(run.as_deref(), &db, follow, after),
        Command::Record { run, db } => commands::record::run(run.as_deref(), &db),
        Command::Status {
            run,
            db,
            json,
            watch: false,
        } => commands::status::run(run.as_deref(), &db, json),
        Command::Status {
            run,
            db,
            json,
            watch: true,
        } => commands::status_watch::run(run.as_deref(), &db, json),
        Command::Runs { db, json } => commands::runs::run(&db, json),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            // A broken pipe (`weft plan x | head`) is not a failure.
            if err
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            anstream::eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}

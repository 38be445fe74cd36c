//! The MuSiQue-100 benchmark of the memory store (docs/BENCHMARKS.md): replays the real
//! extractor output for 1,890 passages as candidates from three simulated extractors with
//! seeded noise, promotes by a 2-of-3 verifier majority, resolves acronyms by merges, then
//! serves each question a bounded subgraph and scores it. Builds the store twice to check
//! determinism.
//!
//! `cargo run --release -p weft-memory --example musique -- --data DIR` (or
//! `bench/memory-musique.sh`).

mod data;
mod extractors;
mod metrics;
mod resolver;

use std::path::PathBuf;
use std::process::ExitCode;

use weft_memory::{Config, Memory, Passage, PromotionPolicy, SubgraphQuery};

use crate::extractors::Noise;

const EXTRACTORS: usize = 3;
const SEED: u64 = 0x5EED_2026;

/// A query setting the report measures.
#[derive(Clone)]
pub struct Setting {
    pub name: &'static str,
    pub passages: usize,
    pub hops: u32,
    pub max_edges: usize,
    pub max_tokens: usize,
    pub degree_limit: usize,
    /// Rank each hop's edges by the question's words (`SubgraphQuery::focus`).
    pub focus: bool,
}

const UNBOUNDED: usize = usize::MAX;

const SETTINGS: [Setting; 7] = [
    Setting {
        name: "names only, 3 hops, unbounded (the baseline's query, on this store)",
        passages: 0,
        hops: 3,
        max_edges: UNBOUNDED,
        max_tokens: UNBOUNDED,
        degree_limit: UNBOUNDED,
        focus: false,
    },
    Setting {
        name: "names only, 3 hops, 1,000 tokens",
        passages: 0,
        hops: 3,
        max_edges: 500,
        max_tokens: 1000,
        degree_limit: UNBOUNDED,
        focus: false,
    },
    Setting {
        name: "names + 3 passages, 2 hops, 1,000 tokens, hubs > 25 not expanded",
        passages: 3,
        hops: 2,
        max_edges: 500,
        max_tokens: 1000,
        degree_limit: 25,
        focus: false,
    },
    Setting {
        name: "names + 3 passages, 2 hops, 1,000 tokens, hubs > 25 not expanded, focus",
        passages: 3,
        hops: 2,
        max_edges: 500,
        max_tokens: 1000,
        degree_limit: 25,
        focus: true,
    },
    Setting {
        name: "names + 5 passages, 3 hops, 1,500 tokens, hubs > 25 not expanded, focus",
        passages: 5,
        hops: 3,
        max_edges: 500,
        max_tokens: 1500,
        degree_limit: 25,
        focus: true,
    },
    Setting {
        name: "names + 8 passages, 2 hops, 1,500 tokens, hubs > 25 not expanded, focus",
        passages: 8,
        hops: 2,
        max_edges: 500,
        max_tokens: 1500,
        degree_limit: 25,
        focus: true,
    },
    Setting {
        name: "names + 5 passages, 3 hops, 2,000 tokens, hubs > 25 not expanded",
        passages: 5,
        hops: 3,
        max_edges: 500,
        max_tokens: 2000,
        degree_limit: 25,
        focus: false,
    },
];

struct Build {
    memory: Memory,
    build_report: metrics::BuildReport,
}

fn build(data: &data::Dataset, path: &std::path::Path) -> Result<Build, String> {
    let config = Config {
        promotion: PromotionPolicy {
            k: 2,
            n: EXTRACTORS as u32,
        },
        ..Config::default()
    };
    let memory = Memory::open(path, config).map_err(|e| e.to_string())?;
    let passages = data
        .docs
        .iter()
        .enumerate()
        .map(|(i, d)| Passage {
            source: "musique".into(),
            chunk: format!("P{i}"),
            text: format!("{}\n{}", d.title, d.text),
        })
        .collect();
    memory.add_passages(passages).map_err(|e| e.to_string())?;
    let noise = Noise {
        drop: 0.15,
        corrupt: 0.05,
    };
    let mut report = metrics::BuildReport::default();
    let mut emitted: Vec<(usize, Vec<i64>, Vec<bool>)> = Vec::new();
    for e in 0..EXTRACTORS {
        let emissions = extractors::replay(&data.docs, e, &noise, SEED);
        report.malformed += emissions.malformed.len();
        let (candidates, originals): (Vec<_>, Vec<bool>) = emissions.candidates.into_iter().unzip();
        report.emitted += candidates.len();
        let ingest = memory
            .ingest(candidates, 1 + e as i64)
            .map_err(|e| e.to_string())?;
        report.ontology_rejected += ingest.rejected.len();
        let mut kept = Vec::new();
        let mut kept_originals = Vec::new();
        let rejected: std::collections::HashSet<usize> =
            ingest.rejected.iter().map(|r| r.0).collect();
        let mut staged = ingest.staged.iter();
        for (i, original) in originals.iter().enumerate() {
            if !rejected.contains(&i)
                && let Some(&id) = staged.next()
            {
                kept.push(id);
                kept_originals.push(*original);
            }
        }
        emitted.push((e, kept, kept_originals));
    }
    // Each simulated extractor verifies the claims it emitted itself: a claim needs two.
    for (e, ids, _) in &emitted {
        let votes = ids
            .iter()
            .map(|&id| (id, format!("sim{e}"), true))
            .collect();
        memory
            .vote_batch(votes, 10 + *e as i64)
            .map_err(|e| e.to_string())?;
    }
    for (_, ids, originals) in &emitted {
        for (&id, &original) in ids.iter().zip(originals) {
            let status = memory.provenance(id).map_err(|e| e.to_string())?.status;
            match (status.as_str(), original) {
                ("promoted", true) => report.promoted_original += 1,
                ("promoted", false) => report.promoted_corrupted += 1,
                (_, false) => report.held_corrupted += 1,
                _ => report.held_original += 1,
            }
        }
    }
    for (short, full, evidence) in resolver::acronym_pairs(&data.docs) {
        let graph = memory.graph();
        let (a, b) = (graph.resolve(&short), graph.resolve(&full));
        drop(graph);
        if a.is_some() && b.is_some() && a != b {
            let merge = memory
                .merge(&short, &full, &evidence, "acronym-resolver", 20)
                .map_err(|e| e.to_string())?;
            report.merges += 1;
            report.merges_flagged += usize::from(merge.flagged_for_review);
        }
    }
    report.current_edges = memory.graph().current_edges();
    Ok(Build {
        memory,
        build_report: report,
    })
}

fn query_for(setting: &Setting, question: &data::Question, memory: &Memory) -> SubgraphQuery {
    SubgraphQuery {
        seeds: metrics::name_seeds(&question.question, &memory.graph()),
        passage_search: (setting.passages > 0).then(|| question.question.clone()),
        passage_limit: setting.passages,
        hops: setting.hops,
        max_edges: setting.max_edges,
        max_tokens: setting.max_tokens,
        predicates: None,
        expand_degree_limit: setting.degree_limit,
        focus: setting.focus.then(|| question.question.clone()),
    }
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut dir = PathBuf::from("../shared/data/musique100");
    while let Some(arg) = args.next() {
        if arg == "--data"
            && let Some(value) = args.next()
        {
            dir = PathBuf::from(value);
        }
    }
    let data = match data::load(&dir) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let scratch = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut hashes = Vec::new();
    let mut outputs = Vec::new();
    for round in 0..2 {
        let started = std::time::Instant::now();
        let built = match build(&data, &scratch.path().join(format!("run{round}.db"))) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        };
        let build_time = started.elapsed();
        let store_hash = built.memory.store_hash().unwrap_or_default();
        let mut served_text = String::new();
        if round == 0 {
            println!(
                "MuSiQue-100 replay: {} questions, {} passages",
                data.questions.len(),
                data.docs.len()
            );
            built.build_report.print();
            println!(
                "build (ingest, votes, merges): {:.2} s",
                build_time.as_secs_f64()
            );
            println!();
            println!(
                "| setting | answer recall | support recall | all supports | hop 1 | hop 2 | hop 3 | hop 4 | median tokens | p90 tokens | provenance valid | ms/question |"
            );
            println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
        }
        for setting in &SETTINGS {
            let mut query_time = std::time::Duration::ZERO;
            let mut scores = metrics::Scores::default();
            for question in &data.questions {
                let started = std::time::Instant::now();
                let query = query_for(setting, question, &built.memory);
                let served = built.memory.subgraph(&query);
                query_time += started.elapsed();
                let served = match served {
                    Ok(s) => s,
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::from(1);
                    }
                };
                served_text.push_str(&serde_json::to_string(&served).unwrap_or_default());
                scores.add(question, &served, &built.memory, &data);
            }
            let per_question = query_time.as_secs_f64() * 1000.0 / data.questions.len() as f64;
            if round == 0 {
                scores.print_row(setting.name, per_question);
            }
        }
        hashes.push(store_hash);
        outputs.push(metrics::sha256_hex(served_text.as_bytes()));
    }
    println!();
    println!("store hash, run 1: {}", hashes[0]);
    println!("store hash, run 2: {}", hashes[1]);
    println!(
        "served subgraphs hash, run 1 / 2: {} / {}",
        outputs[0], outputs[1]
    );
    let deterministic = hashes[0] == hashes[1] && outputs[0] == outputs[1];
    println!("deterministic: {deterministic}");
    if deterministic {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

//! Durable memory for weft: a knowledge graph of typed triples over canonical entity ids,
//! every edge with its provenance, bitemporal validity, staged until verified.
//!
//! - SQLite (WAL) is the system of record: staging, votes and decisions, entities, aliases
//!   and merges, canonical triples, passages (FTS5), discovery-loop state (`schema.rs`).
//! - One writer thread owns every write (`writer/`); callers hold [`Memory`] clones.
//! - An in-memory adjacency index over current edges (`graph.rs`) is rebuilt on open and
//!   changed after each commit under one write lock; queries walk it (`query.rs`).
//! - Optional vector recall (`vectors.rs`): passage embeddings the caller computes, the
//!   nearest passages by cosine seeding a subgraph like a full-text search's.
//!
//! Format and rules: `docs/memory.md`.

mod discovery;
mod error;
mod export;
mod graph;
mod jsonl;
mod lexicon;
mod memory;
mod model;
pub mod normalize;
mod query;
mod reads;
mod schema;
mod vectors;
mod writer;

pub use discovery::{DiscoveryLoop, Finder, Proposal, Verifier};
pub use error::{MemoryError, Result};
pub use export::ExportFormat;
pub use graph::{Bounds, Cutoff, Graph, Selection};
pub use jsonl::parse_jsonl;
pub use memory::{Memory, Passage};
pub use model::{
    CandidateStatus, Config, IngestReport, LoopState, MergeReport, Millis, NewCandidate, Ontology,
    Outcome, PromotionPolicy, Provenance, Stats, TripleRecord, Verdict,
};
pub use query::{
    AnswerCheck, Claim, NamedEdge, Seed, ServedEdge, Subgraph, SubgraphQuery, Ungrounded,
    check_answer,
};
pub use reads::{MergeRecord, ProvenanceRecord};
pub use schema::SCHEMA_VERSION;
pub use vectors::{NearPassage, PassageVector};

//! The data model: candidate triples with their provenance, the ontology that admits them,
//! the promotion policy, the records the store returns, and a discovery loop's state (here,
//! below both the loop and the writer that stores it).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::normalize::{entity_key, predicate_key};

/// Milliseconds since the Unix epoch. The store has no clock: every write carries its time.
pub type Millis = i64;

/// Where a candidate came from: every canonical edge points at exactly one of these (the
/// candidate row that first carried it), so an answer can cite it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The source document (a file, a URL, a passage title).
    pub source: String,
    /// The chunk of the source the triple was extracted from.
    pub chunk: String,
    /// The extractor and its version, e.g. `gpt-3.5-turbo-1106/hipporag-v1`.
    pub extractor: String,
    /// The run that extracted it (a weft run id, or any caller-chosen id).
    pub run_id: String,
}

/// A triple as an extractor proposes it: names, not ids; staged until verified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewCandidate {
    pub subject: String,
    pub predicate: String,
    pub object: String,
    pub provenance: Provenance,
    /// When the fact became true in the world, if the extractor knows.
    pub valid_from: Option<Millis>,
    /// When it stopped being true, if the extractor knows.
    pub valid_to: Option<Millis>,
}

/// The members a JSONL candidate line may have (docs/memory.md §Ingest).
const LINE_MEMBERS: [&str; 9] = [
    "subject",
    "predicate",
    "object",
    "source",
    "chunk",
    "extractor",
    "run",
    "valid_from",
    "valid_to",
];

impl NewCandidate {
    /// Reads one candidate from a JSON object: `subject`, `predicate`, `object`, `source`
    /// (strings, required), `chunk`, `extractor`, `run` (strings, optional), `valid_from`,
    /// `valid_to` (integers, ms since the epoch, optional). Unknown members are refused so
    /// that a misspelt provenance member is not silently lost.
    pub fn from_json(value: &Value) -> Result<Self, String> {
        let Value::Object(map) = value else {
            return Err(format!("expected a JSON object, found {}", kind(value)));
        };
        if let Some(unknown) = map.keys().find(|k| !LINE_MEMBERS.contains(&k.as_str())) {
            return Err(format!(
                "unknown member `{unknown}` (allowed: {})",
                LINE_MEMBERS.join(", ")
            ));
        }
        let text = |name: &str, required: bool| -> Result<String, String> {
            match map.get(name) {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(other) => Err(format!("`{name}` must be a string, found {}", kind(other))),
                None if required => Err(format!("missing `{name}`")),
                None => Ok(String::new()),
            }
        };
        let time = |name: &str| -> Result<Option<Millis>, String> {
            match map.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) => n.as_i64().map(Some).ok_or_else(|| {
                    format!("`{name}` must be an integer (ms since the epoch), found {n}")
                }),
                Some(other) => Err(format!(
                    "`{name}` must be an integer (ms since the epoch), found {}",
                    kind(other)
                )),
            }
        };
        Ok(NewCandidate {
            subject: text("subject", true)?,
            predicate: text("predicate", true)?,
            object: text("object", true)?,
            provenance: Provenance {
                source: text("source", true)?,
                chunk: text("chunk", false)?,
                extractor: text("extractor", false)?,
                run_id: text("run", false)?,
            },
            valid_from: time("valid_from")?,
            valid_to: time("valid_to")?,
        })
    }

    /// The name keys of subject, predicate and object.
    pub(crate) fn keys(&self) -> Keys {
        Keys {
            subject: entity_key(&self.subject),
            predicate: predicate_key(&self.predicate),
            object: entity_key(&self.object),
        }
    }

    /// The staging group: candidates that say the same thing from the same chunk are one
    /// claim, voted on and promoted together.
    pub(crate) fn group_key(&self, keys: &Keys) -> String {
        format!(
            "{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
            keys.subject,
            keys.predicate,
            keys.object,
            self.provenance.source,
            self.provenance.chunk
        )
    }
}

/// The normalised keys of a candidate's names, computed once per candidate.
pub(crate) struct Keys {
    pub subject: String,
    pub predicate: String,
    pub object: String,
}

/// FNV-1a (64-bit) of a group key, as SQLite's signed integer: stable across builds, so it
/// can be stored.
pub(crate) fn group_hash(group: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in group.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash as i64
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Which triples are admitted as candidates at all. Violations are rejected with a reason
/// (kept as rejected candidates for the record, never as facts).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ontology {
    /// When set, only these predicates (by predicate key) are admitted.
    pub predicates: Option<BTreeSet<String>>,
    /// Predicates with one value per subject at a time: a new object contradicts the old
    /// one, whose validity is then closed (never deleted).
    pub functional: BTreeSet<String>,
    /// The longest entity name or predicate admitted, in characters.
    pub max_name_chars: usize,
}

impl Default for Ontology {
    fn default() -> Self {
        Ontology {
            predicates: None,
            functional: BTreeSet::new(),
            max_name_chars: 256,
        }
    }
}

impl Ontology {
    /// Why a candidate is not admitted, or `None` when it is.
    pub fn violation(&self, candidate: &NewCandidate) -> Option<String> {
        self.violation_with(candidate, &candidate.keys())
    }

    pub(crate) fn violation_with(&self, candidate: &NewCandidate, keys: &Keys) -> Option<String> {
        for (role, name, key) in [
            ("subject", &candidate.subject, &keys.subject),
            ("predicate", &candidate.predicate, &keys.predicate),
            ("object", &candidate.object, &keys.object),
        ] {
            if key.is_empty() {
                return Some(format!("the {role} is empty (or only punctuation)"));
            }
            if name.chars().count() > self.max_name_chars {
                return Some(format!(
                    "the {role} is longer than {} characters",
                    self.max_name_chars
                ));
            }
        }
        if candidate.provenance.source.trim().is_empty() {
            return Some("the provenance has no source".to_string());
        }
        if keys.subject == keys.object {
            return Some("the subject and the object are the same entity".to_string());
        }
        if let (Some(from), Some(to)) = (candidate.valid_from, candidate.valid_to)
            && to <= from
        {
            return Some(format!("valid_to ({to}) is not after valid_from ({from})"));
        }
        let predicate = &keys.predicate;
        if let Some(allowed) = &self.predicates
            && !allowed.contains(predicate)
        {
            return Some(format!(
                "the predicate `{predicate}` is not in the ontology"
            ));
        }
        None
    }
}

/// How verifier votes promote: a claim becomes canonical once `k` distinct verifiers
/// approve it, and is rejected once more than `n - k` reject it (k can no longer be reached).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromotionPolicy {
    pub k: u32,
    pub n: u32,
}

impl Default for PromotionPolicy {
    fn default() -> Self {
        PromotionPolicy { k: 2, n: 3 }
    }
}

/// The store's rules, fixed when it is opened.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Config {
    pub ontology: Ontology,
    pub promotion: PromotionPolicy,
    /// A merge that moves more edges than this is applied but flagged for review.
    pub review_merge_degree: Option<usize>,
}

impl Config {
    /// The degree above which merges are flagged (default 50).
    pub fn review_threshold(&self) -> usize {
        self.review_merge_degree.unwrap_or(50)
    }
}

/// What became of a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidateStatus {
    Staged,
    Promoted,
    Rejected,
}

impl CandidateStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CandidateStatus::Staged => "staged",
            CandidateStatus::Promoted => "promoted",
            CandidateStatus::Rejected => "rejected",
        }
    }
}

/// A person's (or a verifier majority's) decision on staged candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Promote,
    Reject,
}

/// What an ingest batch did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IngestReport {
    /// Candidate ids of the staged rows, in input order.
    pub staged: Vec<i64>,
    /// (input index, candidate id, reason) of rows the ontology refused.
    pub rejected: Vec<(usize, i64, String)>,
}

/// What a vote or decision did to a candidate's claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Still staged: the votes so far.
    Pending {
        approvals: u32,
        rejections: u32,
    },
    /// Canonical now, as this edge (possibly one promoted earlier for the same claim).
    Promoted {
        triple: i64,
    },
    Rejected,
}

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MergeReport {
    pub merge_id: i64,
    pub alias_entity: i64,
    pub canonical_entity: i64,
    pub moved_edges: usize,
    pub moved_aliases: usize,
    /// More edges moved than the review threshold: applied, but listed for a person.
    pub flagged_for_review: bool,
}

/// One canonical edge as stored, with its bitemporal fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TripleRecord {
    pub id: i64,
    pub subject: String,
    pub predicate: String,
    pub object: String,
    pub provenance: i64,
    pub valid_from: Option<Millis>,
    pub valid_to: Option<Millis>,
    pub learned_at: Millis,
    pub retired_at: Option<Millis>,
    /// The edge whose promotion closed this one's validity (a contradiction).
    pub closed_by: Option<i64>,
}

/// Counts for `weft memory stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    pub candidates_staged: i64,
    pub candidates_promoted: i64,
    pub candidates_rejected: i64,
    pub triples_current: i64,
    pub triples_closed: i64,
    pub entities: i64,
    pub aliases: i64,
    pub merges_active: i64,
    pub merges_undone: i64,
    pub merges_flagged: i64,
    pub passages: i64,
}

/// A discovery loop's state as stored (`discovery.rs`; the writer loads and saves it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopState {
    pub run_id: String,
    pub dry_rounds_to_stop: u32,
    pub rounds: u32,
    pub dry_rounds: u32,
    pub budget_max: u64,
    pub budget_used: u64,
    pub done: bool,
    /// Keys of every proposal seen, sorted.
    pub seen: Vec<String>,
    /// Canonical triple ids this loop confirmed, sorted.
    pub confirmed: Vec<i64>,
}

/// What one discovery round sends to the writer.
pub(crate) struct RoundInput {
    pub run_id: String,
    pub new_keys: Vec<String>,
    pub confirmed: Vec<(NewCandidate, String)>,
    pub spent: u64,
}

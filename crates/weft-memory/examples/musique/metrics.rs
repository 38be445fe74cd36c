//! Scoring served subgraphs against MuSiQue's gold answers, decompositions and supporting
//! paragraphs.

use std::collections::HashSet;

use sha2::{Digest, Sha256};
use weft_memory::normalize::entity_key;
use weft_memory::{Graph, Memory, Subgraph};

use crate::data::{Dataset, Question};

#[derive(Default)]
pub struct BuildReport {
    pub emitted: usize,
    pub malformed: usize,
    pub ontology_rejected: usize,
    pub promoted_original: usize,
    pub promoted_corrupted: usize,
    pub held_original: usize,
    pub held_corrupted: usize,
    pub merges: usize,
    pub merges_flagged: usize,
    pub current_edges: usize,
}

impl BuildReport {
    pub fn print(&self) {
        println!(
            "candidates emitted by 3 simulated extractors: {} (malformed triples refused: {}; ontology rejections: {})",
            self.emitted, self.malformed, self.ontology_rejected
        );
        let promoted = self.promoted_original + self.promoted_corrupted;
        let corrupted = self.promoted_corrupted + self.held_corrupted;
        println!(
            "2-of-3 promotion: {} emissions promoted, {} of them corrupted ({:.4}); corrupted emissions held back: {} of {} ({:.3}); original emissions held back: {}",
            promoted,
            self.promoted_corrupted,
            self.promoted_corrupted as f64 / promoted.max(1) as f64,
            self.held_corrupted,
            corrupted,
            self.held_corrupted as f64 / corrupted.max(1) as f64,
            self.held_original
        );
        println!(
            "acronym merges: {} ({} flagged for review); current edges: {}",
            self.merges, self.merges_flagged, self.current_edges
        );
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

const STOP: [&str; 24] = [
    "what", "who", "when", "where", "which", "how", "is", "was", "the", "of", "in", "a", "an",
    "and", "did", "does", "to", "by", "for", "on", "at", "it", "that", "he",
];

/// Seeds by name: the longest runs of question words that name an entity, at most five,
/// not overlapping (the baseline's rule, through the alias map).
pub fn name_seeds(question: &str, graph: &Graph) -> Vec<String> {
    let words: Vec<&str> = question.split_whitespace().collect();
    let mut used = vec![false; words.len()];
    let mut seeds = Vec::new();
    for n in (1..=8.min(words.len())).rev() {
        for start in 0..=(words.len() - n) {
            if seeds.len() == 5 {
                return seeds;
            }
            if used[start..start + n].iter().any(|u| *u) {
                continue;
            }
            let phrase = words[start..start + n].join(" ");
            let key = entity_key(&phrase);
            if key.len() < 3 || STOP.contains(&key.as_str()) || graph.resolve(&phrase).is_none() {
                continue;
            }
            used[start..start + n].iter_mut().for_each(|u| *u = true);
            seeds.push(phrase);
        }
    }
    seeds
}

#[derive(Default)]
pub struct Scores {
    questions: usize,
    answer_hits: usize,
    support_found: usize,
    support_total: usize,
    all_supports: usize,
    hop_hits: [usize; 4],
    hop_total: [usize; 4],
    tokens: Vec<usize>,
    edges: usize,
    valid_provenance: usize,
}

fn found(name: &str, keys: &HashSet<String>, ids: &HashSet<u32>, graph: &Graph) -> bool {
    keys.contains(&entity_key(name)) || graph.resolve(name).is_some_and(|id| ids.contains(&id))
}

impl Scores {
    pub fn add(&mut self, q: &Question, served: &Subgraph, memory: &Memory, data: &Dataset) {
        let graph = memory.graph();
        let mut keys = HashSet::new();
        let mut ids = HashSet::new();
        for edge in served.named_edges() {
            for name in [edge.subject, edge.object] {
                keys.insert(entity_key(name));
                if let Some(id) = graph.resolve(name) {
                    ids.insert(id);
                }
            }
        }
        self.questions += 1;
        if std::iter::once(&q.answer)
            .chain(&q.answer_aliases)
            .any(|a| found(a, &keys, &ids, &graph))
        {
            self.answer_hits += 1;
        }
        for (i, step) in q.question_decomposition.iter().enumerate().take(4) {
            self.hop_total[i] += 1;
            if found(&step.answer, &keys, &ids, &graph) {
                self.hop_hits[i] += 1;
            }
        }
        drop(graph);
        let chunks: HashSet<&str> = served.named_edges().map(|e| e.chunk).collect();
        let mut all = true;
        for p in q.paragraphs.iter().filter(|p| p.is_supporting) {
            self.support_total += 1;
            let chunk = data
                .chunk_of
                .get(&(p.title.clone(), p.paragraph_text.clone()));
            if chunk.is_some_and(|c| chunks.contains(c.as_str())) {
                self.support_found += 1;
            } else {
                all = false;
            }
        }
        self.all_supports += usize::from(all);
        self.tokens.push(served.tokens);
        for edge in served.named_edges() {
            self.edges += 1;
            let valid = memory.provenance(edge.provenance).is_ok_and(|p| {
                p.status == "promoted"
                    && p.triple == Some(edge.id)
                    && p.provenance.chunk == edge.chunk
                    && p.provenance.source == edge.source
                    && data.chunks.contains(edge.chunk)
            });
            self.valid_provenance += usize::from(valid);
        }
    }

    pub fn print_row(&mut self, name: &str, ms_per_question: f64) {
        self.tokens.sort_unstable();
        let pct = |q: f64| {
            self.tokens
                .get(((self.tokens.len() as f64 - 1.0) * q).round() as usize)
                .copied()
                .unwrap_or(0)
        };
        let ratio = |a: usize, b: usize| a as f64 / b.max(1) as f64;
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} | {:.3} ({} edges) | {:.2} |",
            ratio(self.answer_hits, self.questions),
            ratio(self.support_found, self.support_total),
            ratio(self.all_supports, self.questions),
            ratio(self.hop_hits[0], self.hop_total[0]),
            ratio(self.hop_hits[1], self.hop_total[1]),
            ratio(self.hop_hits[2], self.hop_total[2]),
            ratio(self.hop_hits[3], self.hop_total[3]),
            pct(0.5),
            pct(0.9),
            ratio(self.valid_provenance, self.edges),
            self.edges,
            ms_per_question
        );
    }
}

//! Simulated extractors: each replays the real extractor output with seeded noise (drops
//! and corrupted objects), so that promotion by a verifier majority has something to filter.

use serde_json::{Value, json};
use weft_memory::NewCandidate;

use crate::data::Doc;

/// SplitMix64: a tiny deterministic generator (no dependency, same stream everywhere).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

pub struct Noise {
    pub drop: f64,
    pub corrupt: f64,
}

/// One extractor's emissions: (candidate, is_original) per triple it kept, and the count of
/// lines it could not turn into a candidate (malformed triples), with their reasons.
pub struct Emissions {
    pub candidates: Vec<(NewCandidate, bool)>,
    pub malformed: Vec<String>,
}

pub fn replay(docs: &[Doc], extractor: usize, noise: &Noise, seed: u64) -> Emissions {
    let mut rng = Rng::new(seed ^ ((extractor as u64 + 1) * 0xA24B_AED4_963E_E407));
    let mut out = Emissions {
        candidates: Vec::new(),
        malformed: Vec::new(),
    };
    let objects: Vec<String> = docs
        .iter()
        .flat_map(|d| d.extracted_triples.iter())
        .filter_map(|t| t.get(2).and_then(Value::as_str).map(str::to_string))
        .collect();
    for (i, doc) in docs.iter().enumerate() {
        for triple in &doc.extracted_triples {
            let line = json!({
                "subject": triple.get(0),
                "predicate": triple.get(1),
                "object": triple.get(2),
                "source": "musique",
                "chunk": format!("P{i}"),
                "extractor": format!("gpt-3.5-turbo-1106/hipporag-v1#sim{extractor}"),
                "run": "musique-bench",
            });
            let mut candidate = match NewCandidate::from_json(&line) {
                Ok(c) => c,
                Err(reason) => {
                    out.malformed.push(reason);
                    continue;
                }
            };
            if triple.as_array().is_some_and(|a| a.len() != 3) {
                out.malformed.push(format!(
                    "a triple of {} elements",
                    triple.as_array().map_or(0, Vec::len)
                ));
                continue;
            }
            if rng.unit() < noise.drop {
                continue;
            }
            let original = if rng.unit() < noise.corrupt && !objects.is_empty() {
                let pick = (rng.next() % objects.len() as u64) as usize;
                candidate.object = objects[pick].clone();
                false
            } else {
                true
            };
            out.candidates.push((candidate, original));
        }
    }
    out
}

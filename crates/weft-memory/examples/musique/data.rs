//! Loading MuSiQue-100: the questions and the replayed extractor output (HippoRAG's OpenIE).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
pub struct Question {
    pub question: String,
    pub answer: String,
    #[serde(default)]
    pub answer_aliases: Vec<String>,
    pub paragraphs: Vec<Paragraph>,
    pub question_decomposition: Vec<Step>,
}

#[derive(Deserialize)]
pub struct Paragraph {
    pub title: String,
    pub paragraph_text: String,
    pub is_supporting: bool,
}

#[derive(Deserialize)]
pub struct Step {
    pub answer: String,
}

#[derive(Deserialize)]
struct Extraction {
    docs: Vec<Doc>,
}

#[derive(Deserialize)]
pub struct Doc {
    pub title: String,
    pub text: String,
    pub extracted_triples: Vec<Value>,
}

pub struct Dataset {
    pub questions: Vec<Question>,
    pub docs: Vec<Doc>,
    /// (title, text) → chunk name (`P<index>` in the extractor file's order).
    pub chunk_of: HashMap<(String, String), String>,
    /// Every chunk name, for the provenance check.
    pub chunks: HashSet<String>,
}

pub fn load(dir: &Path) -> Result<Dataset, String> {
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .map_err(|e| format!("{}: {e}", dir.join(name).display()))
    };
    let questions: Vec<Question> = serde_json::from_str(&read("questions.json")?)
        .map_err(|e| format!("questions.json: {e}"))?;
    // The file ends with two summary fields written as NaN, which JSON does not allow.
    let extraction = read("openie-gpt-3.5-turbo-1106.json")?.replace(": NaN", ": null");
    let extraction: Extraction =
        serde_json::from_str(&extraction).map_err(|e| format!("openie file: {e}"))?;
    let chunk_of = extraction
        .docs
        .iter()
        .enumerate()
        .map(|(i, d)| ((d.title.clone(), d.text.clone()), format!("P{i}")))
        .collect();
    let chunks = (0..extraction.docs.len())
        .map(|i| format!("P{i}"))
        .collect();
    Ok(Dataset {
        chunks,
        questions,
        docs: extraction.docs,
        chunk_of,
    })
}

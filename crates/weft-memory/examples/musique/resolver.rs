//! A deterministic resolver pass beyond name normalisation: an acronym and the name it
//! abbreviates, both extracted from the same passage, are one entity (merged with that
//! evidence, undoable like any merge).

use std::collections::BTreeMap;

use weft_memory::normalize::entity_key;

use crate::data::Doc;

const MINOR: [&str; 6] = ["of", "the", "and", "for", "in", "on"];

fn initials(name: &str) -> String {
    name.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !MINOR.contains(&w.to_lowercase().as_str()))
        .filter_map(|w| w.chars().next())
        .flat_map(char::to_uppercase)
        .collect()
}

fn is_acronym(name: &str) -> bool {
    let n = name.trim();
    (2..=6).contains(&n.chars().count()) && n.chars().all(|c| c.is_ascii_uppercase())
}

/// (acronym, full name, evidence) pairs, in a deterministic order.
pub fn acronym_pairs(docs: &[Doc]) -> Vec<(String, String, String)> {
    let mut pairs: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (i, doc) in docs.iter().enumerate() {
        let names: Vec<&str> = doc
            .extracted_triples
            .iter()
            .filter_map(|t| t.as_array())
            .filter(|t| t.len() == 3)
            .flat_map(|t| [t[0].as_str(), t[2].as_str()])
            .flatten()
            .collect();
        for short in names.iter().filter(|n| is_acronym(n)) {
            if let Some(full) = names
                .iter()
                .filter(|n| n.split_whitespace().count() >= 2 && initials(n) == short.trim())
                .min()
            {
                pairs.entry(entity_key(short)).or_insert_with(|| {
                    (
                        full.to_string(),
                        format!("acronym of `{full}` in passage P{i}"),
                    )
                });
            }
        }
    }
    pairs
        .into_iter()
        .map(|(short, (full, evidence))| (short, full, evidence))
        .collect()
}

//! Where a key is in the text of a `weft.toml`, for messages: computed only when a section
//! is refused (the tree the sections read carries no positions).

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// 1-based line and column (in characters) of byte `offset` of `text`.
pub(super) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

/// The position of the deepest part of the dotted `key` (`tiers.minimal.provider`,
/// `policy.rules[1]`) the text holds: the key itself, else its nearest table.
pub(super) fn key(text: &str, key: &str) -> Option<(usize, usize)> {
    let root = DeTable::parse(text).ok()?;
    let mut table: &DeTable<'_> = root.get_ref();
    let mut found: Option<usize> = None;
    for part in key.split('.') {
        let (name, index) = match part.split_once('[') {
            Some((name, rest)) => (name, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        let Some((k, v)) = table.iter().find(|(k, _)| {
            let k: &str = k.get_ref();
            k == name
        }) else {
            break;
        };
        found = Some(k.span().start);
        let mut value: &Spanned<DeValue<'_>> = v;
        if let (Some(i), DeValue::Array(items)) = (index, v.get_ref()) {
            match items.get(i) {
                Some(item) => {
                    found = Some(item.span().start);
                    value = item;
                }
                None => break,
            }
        }
        match value.get_ref() {
            DeValue::Table(t) => table = t,
            _ => break,
        }
    }
    found.map(|offset| line_column(text, offset))
}

//! Renderers: the library returns data, these turn it into text for people or JSON for
//! programs. Colour comes from `anstream`, which strips it when stdout is not a terminal or
//! `NO_COLOR` is set.

pub mod findings;
pub mod markdown;
pub mod snippet;

/// The width of a text column: its longest entry in characters, at least `min`.
pub fn column_width<'a>(entries: impl IntoIterator<Item = &'a str>, min: usize) -> usize {
    entries
        .into_iter()
        .map(|e| e.chars().count())
        .max()
        .unwrap_or(0)
        .max(min)
}

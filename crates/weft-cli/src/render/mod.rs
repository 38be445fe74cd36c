//! Renderers: the library returns data, these turn it into text for people or JSON for
//! programs. Colour comes from `anstream`, which strips it when stdout is not a terminal or
//! `NO_COLOR` is set.

pub mod findings;
pub mod markdown;
pub mod snippet;

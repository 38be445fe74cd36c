//! Writing a value back as JSON or YAML (for `weft convert`), keeping member order.
//!
//! The YAML emitter is deliberately conservative: block style; a string is written plain
//! only when it is provably read back as the same string by this loader AND by YAML 1.1
//! readers (so `yes`, `on`, `1.0`, `0x1F`, timestamps and anything starting with a digit are
//! quoted); multi-line strings use a `|` / `|-` literal block only when that is exact, and
//! everything else is double-quoted with escapes. `load(to_yaml(v)) == v` for every object.

use super::yaml::{Plain, resolve_plain};
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// Pretty JSON: 2-space indent, member order kept, trailing newline.
pub fn to_json_pretty(value: &Value) -> String {
    let mut out = serde_json::to_string_pretty(value).unwrap_or_default();
    out.push('\n');
    out
}

/// Block-style YAML that this loader reads back to an equal value.
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => write_map(&mut out, map, 0, false),
        Value::Array(items) if !items.is_empty() => write_seq(&mut out, items, 0, false),
        other => {
            write_inline(&mut out, other);
            out.push('\n');
        }
    }
    out
}

/// Implicit keys longer than this are written as explicit `? key` entries (YAML limits
/// implicit keys to 1024 characters).
const MAX_IMPLICIT_KEY: usize = 1000;

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// Members at `indent`. With `inline_first`, the first line is already indented (after `- `).
fn write_map(out: &mut String, map: &Map<String, Value>, indent: usize, inline_first: bool) {
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 || !inline_first {
            pad(out, indent);
        }
        let start = out.len();
        write_scalar_string(out, key);
        if out.len() - start > MAX_IMPLICIT_KEY {
            let key_text = out.split_off(start);
            out.push_str("? ");
            out.push_str(&key_text);
            out.push('\n');
            pad(out, indent);
        }
        out.push(':');
        write_after_indicator(out, value, indent);
    }
}

/// Items at `indent`. With `inline_first`, the first line is already indented.
fn write_seq(out: &mut String, items: &[Value], indent: usize, inline_first: bool) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 || !inline_first {
            pad(out, indent);
        }
        out.push('-');
        match item {
            Value::Object(map) if !map.is_empty() => {
                out.push(' ');
                write_map(out, map, indent + 2, true);
            }
            Value::Array(inner) if !inner.is_empty() => {
                out.push(' ');
                write_seq(out, inner, indent + 2, true);
            }
            other => write_after_indicator(out, other, indent),
        }
    }
}

/// The rest of a line after `key:` or `-`, and any nested block, for a node at `indent`.
fn write_after_indicator(out: &mut String, value: &Value, indent: usize) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            write_map(out, map, indent + 2, false);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            write_seq(out, items, indent + 2, false);
        }
        Value::String(s) if literal_block_ok(s) => {
            let body = s.strip_suffix('\n');
            out.push_str(if body.is_some() { " |\n" } else { " |-\n" });
            for line in body.unwrap_or(s).split('\n') {
                if !line.is_empty() {
                    pad(out, indent + 2);
                    out.push_str(line);
                }
                out.push('\n');
            }
        }
        other => {
            out.push(' ');
            write_inline(out, other);
            out.push('\n');
        }
    }
}

/// A scalar or an empty collection on one line.
fn write_inline(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => write_scalar_string(out, s),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        // Non-empty collections never reach here; keep the output valid anyway.
        other => out.push_str(&serde_json::to_string(other).unwrap_or_default()),
    }
}

fn write_scalar_string(out: &mut String, s: &str) {
    if plain_ok(s) {
        out.push_str(s);
    } else {
        write_double_quoted(out, s);
    }
}

/// Strings YAML 1.1 readers take for booleans (this loader reads them as strings).
const YAML11_BOOLS: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off",
    "OFF",
];

/// Can `s` be written as a plain scalar and read back as the same string?
fn plain_ok(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if !(first.is_alphabetic() || first == '_' || first == '/') {
        return false;
    }
    if s.ends_with(' ') || YAML11_BOOLS.contains(&s) {
        return false;
    }
    let chars_ok = s.chars().all(|c| {
        c.is_alphanumeric()
            || matches!(c, ' ' | '_' | '-' | '.' | '/' | '(' | ')' | '+' | '@' | '=')
    });
    chars_ok && resolve_plain(s) == Plain::Str
}

/// Is a `|` (one trailing newline) or `|-` (none) literal block exactly `s`?
fn literal_block_ok(s: &str) -> bool {
    if !s.contains('\n') {
        return false;
    }
    let body = s.strip_suffix('\n').unwrap_or(s);
    if body.ends_with('\n') || body.is_empty() {
        return false;
    }
    let printable = body
        .chars()
        .all(|c| c == '\n' || (c >= ' ' && c != '\u{7f}' && !needs_escape(c)));
    if !printable {
        return false;
    }
    let mut lines = body.split('\n');
    // The first non-empty line fixes the indentation: it must not start with a space.
    let first_ok = lines
        .clone()
        .find(|l| !l.is_empty())
        .is_some_and(|l| !l.starts_with(' '));
    let lines_ok = lines.all(|l| !l.ends_with(' '));
    first_ok && lines_ok
}

/// Characters outside YAML's printable set, or line breaks in YAML 1.1.
fn needs_escape(c: char) -> bool {
    let u = c as u32;
    u < 0x20
        || (0x7f..=0x9f).contains(&u)
        || matches!(u, 0x2028 | 0x2029 | 0xfeff | 0xfffe | 0xffff)
}

fn write_double_quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            '\u{85}' => out.push_str("\\N"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if needs_escape(c) => {
                let u = c as u32;
                if u <= 0xff {
                    let _ = write!(out, "\\x{u:02X}");
                } else {
                    let _ = write!(out, "\\u{u:04X}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ambiguous_strings_are_quoted() {
        for s in [
            "yes",
            "null",
            "1.0",
            "~",
            "",
            "0x1F",
            " a",
            "a ",
            "a: b",
            "#x",
            "- a",
            "a\nb",
            "No",
            "1_000",
            "2026-08-28",
            ".inf",
            "true",
            "@x",
            "a #b",
            "%x",
            "*a",
            "&a",
            "!t",
        ] {
            assert!(!plain_ok(s), "{s:?} must be quoted");
        }
        for s in ["hello world", "library-v1", "x-owner", "src/lib.rs", "été"] {
            assert!(plain_ok(s), "{s:?} can be plain");
        }
    }
}

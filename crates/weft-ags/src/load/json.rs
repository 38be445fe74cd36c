//! JSON (RFC 8259) loading: `serde_json` for the syntax, plus a small position scanner.
//!
//! `serde_json` parses into our own seed, which keeps the FIRST occurrence of a duplicate
//! key (serde_json's `Value` would keep the last) and enforces the depth limit. Syntax errors
//! come with serde_json's line and column (converted from bytes to characters).
//!
//! serde_json forgets positions, so when duplicates were seen (rare) and for [`positions`]
//! (used by `locate`), a token scanner walks the text once with a stack of frames and reports
//! object keys and array items with their 1-based line/column. The scanner never fails: on
//! text it does not understand it simply stops.

use super::{Limits, Parsed, Positions, duplicate_key, empty_document, root_not_object, to_u32};
use crate::diagnostic::{Code, Finding, pointer_push, pointer_push_into};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;

/// Sentinel message of the depth error raised inside the seed.
const TOO_DEEP: &str = "\u{1}weft: nesting limit exceeded";

pub(super) fn parse(text: &str, limits: &Limits) -> Parsed {
    let first = text
        .char_indices()
        .find(|(_, c)| !matches!(c, ' ' | '\t' | '\n' | '\r'));
    let Some((start, _)) = first else {
        return Parsed {
            value: None,
            findings: vec![empty_document()],
        };
    };
    let mut state = State {
        max_depth: limits.depth(),
        duplicates: 0,
    };
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let result = Seed {
        depth: 0,
        state: &mut state,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    let value = match result {
        Ok(v) => v,
        Err(e) => {
            return Parsed {
                value: None,
                findings: vec![syntax_finding(text, &e, limits)],
            };
        }
    };
    if !value.is_object() {
        let (line, column) = super::text_position(text.get(..start).unwrap_or_default());
        return Parsed {
            value: None,
            findings: vec![root_not_object(&value, line, column)],
        };
    }
    let findings = if state.duplicates > 0 {
        duplicates(text)
    } else {
        Vec::new()
    };
    Parsed {
        value: Some(value),
        findings,
    }
}

fn syntax_finding(text: &str, e: &serde_json::Error, limits: &Limits) -> Finding {
    let (line, column) = char_position(text, e.line(), e.column());
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full);
    if message.contains(TOO_DEEP) {
        return super::too_deep(String::new(), limits, line, column);
    }
    Finding::new(Code::AG001, "", format!("JSON syntax error: {message}"))
        .help("fix the JSON at this position (RFC 8259: double-quoted strings and keys, no trailing commas, no comments)")
        .at(line, column)
}

/// serde_json counts columns in bytes; findings count characters. serde_json's column 0
/// means "just after the line break": point at the end of the previous line instead.
fn char_position(text: &str, line: usize, byte_column: usize) -> (u32, u32) {
    if byte_column == 0 && line > 1 {
        let prev = text.split('\n').nth(line - 2).unwrap_or("");
        return (to_u32(line - 1), to_u32(prev.chars().count() + 1));
    }
    let line_text = text.split('\n').nth(line.saturating_sub(1)).unwrap_or("");
    let mut end = byte_column.min(line_text.len());
    while end > 0 && !line_text.is_char_boundary(end) {
        end -= 1;
    }
    let column = line_text.get(..end).map_or(0, |s| s.chars().count()).max(1);
    (to_u32(line.max(1)), to_u32(column))
}

struct State {
    max_depth: usize,
    duplicates: usize,
}

/// Builds a `Value` keeping the first of duplicate keys and refusing deep nesting.
struct Seed<'a> {
    depth: usize,
    state: &'a mut State,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl Seed<'_> {
    fn enter<E: de::Error>(&mut self) -> Result<usize, E> {
        let depth = self.depth + 1;
        if depth > self.state.max_depth {
            return Err(E::custom(TOO_DEEP));
        }
        Ok(depth)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number is not finite"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        let depth = self.enter()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Seed {
            depth,
            state: &mut *self.state,
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let depth = self.enter()?;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(Seed {
                depth,
                state: &mut *self.state,
            })?;
            if object.contains_key(&key) {
                // Keep the first occurrence; the scanner reports this one with its position.
                self.state.duplicates += 1;
            } else {
                object.insert(key, value);
            }
        }
        Ok(Value::Object(object))
    }
}

/// Every duplicate key of the text, each reported at its own key.
fn duplicates(text: &str) -> Vec<Finding> {
    enum Frame {
        Object {
            ptr: String,
            keys: HashMap<String, (u32, u32)>,
            current: Option<String>,
        },
        Array {
            ptr: String,
            index: usize,
        },
    }
    let mut findings = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    walk(text, |ev| {
        match ev {
            Event::Key(key, pos) => {
                if let Some(Frame::Object { ptr, keys, current }) = stack.last_mut() {
                    let child = pointer_push(ptr, &key);
                    if let Some(&first) = keys.get(key.as_ref()) {
                        findings.push(duplicate_key(child.clone(), &key, pos, first));
                    } else {
                        keys.insert(key.into_owned(), pos);
                    }
                    *current = Some(child);
                }
            }
            Event::Value(kind, _) => {
                let child = match stack.last_mut() {
                    None => String::new(),
                    Some(Frame::Object { current, .. }) => current.take().unwrap_or_default(),
                    Some(Frame::Array { ptr, index }) => {
                        let c = pointer_push(ptr, &index.to_string());
                        *index += 1;
                        c
                    }
                };
                match kind {
                    Kind::Object => stack.push(Frame::Object {
                        ptr: child,
                        keys: HashMap::new(),
                        current: None,
                    }),
                    Kind::Array => stack.push(Frame::Array {
                        ptr: child,
                        index: 0,
                    }),
                    Kind::Scalar => {}
                }
            }
            Event::Close => {
                stack.pop();
            }
        }
        true
    });
    findings
}

/// Positions of the pointers in `needed` (escaped, without the root): members at their key,
/// items at their start. The first occurrence of a duplicated key wins, as in the value.
pub(super) fn positions(text: &str, needed: &HashSet<String>) -> Positions {
    struct Frame {
        /// `None` for subtrees no needed pointer goes through.
        ptr: Option<String>,
        array: bool,
        index: usize,
        current: Option<String>,
    }
    let mut found = Positions::new();
    let mut stack: Vec<Frame> = Vec::new();
    // Value positions are only looked up for anchored findings: without any, no member's
    // value pointer is built.
    let values_needed = needed.iter().any(|p| p.ends_with(super::VALUE));
    // The child pointer is built in one reused buffer and only copied when it is needed:
    // in a frame some finding points into, every member would otherwise cost an allocation.
    let mut scratch = String::new();
    let record = |found: &mut Positions, p: &str, pos| -> Option<String> {
        if needed.contains(p) {
            found.entry(p.to_owned()).or_insert(pos);
            Some(p.to_owned())
        } else {
            None
        }
    };
    walk(text, |ev| {
        match ev {
            Event::Key(key, pos) => {
                if let Some(frame) = stack.last_mut() {
                    frame.current = match &frame.ptr {
                        Some(ptr) if !frame.array => {
                            pointer_push_into(&mut scratch, ptr, &key);
                            record(&mut found, &scratch, pos)
                        }
                        _ => None,
                    };
                }
            }
            Event::Value(kind, pos) => {
                let child = match stack.last_mut() {
                    None => Some(String::new()),
                    Some(frame) if frame.array => {
                        let index = frame.index;
                        frame.index += 1;
                        match &frame.ptr {
                            Some(ptr) => {
                                pointer_push_into(&mut scratch, ptr, &index.to_string());
                                record(&mut found, &scratch, pos)
                            }
                            None => None,
                        }
                    }
                    Some(frame) => {
                        let member = frame.current.take();
                        if let Some(m) = member.as_deref().filter(|_| values_needed) {
                            scratch.clear();
                            scratch.push_str(m);
                            scratch.push_str(super::VALUE);
                            if needed.contains(scratch.as_str()) {
                                found.entry(scratch.clone()).or_insert(pos);
                            }
                        }
                        member
                    }
                };
                if kind != Kind::Scalar {
                    stack.push(Frame {
                        ptr: child,
                        array: kind == Kind::Array,
                        index: 0,
                        current: None,
                    });
                }
            }
            Event::Close => {
                stack.pop();
            }
        }
        true
    });
    found
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Object,
    Array,
    Scalar,
}

enum Event<'t> {
    /// An object key (unescaped) at its opening quote.
    Key(Cow<'t, str>, (u32, u32)),
    /// The start of a value: an object, an array or a scalar.
    Value(Kind, (u32, u32)),
    /// The end of an object or array.
    Close,
}

/// Walks the JSON tokens of `text`, calling `f` for each event until `f` returns false or
/// the text ends or stops making sense.
fn walk<'t>(text: &'t str, mut f: impl FnMut(Event<'t>) -> bool) {
    let bytes = text.as_bytes();
    let mut i = 0usize;
    let mut line = 1usize;
    let mut col = 1usize; // 1-based character column of the character at bytes[i]
    // For each open container: (is an object, expects a key next).
    let mut frames: Vec<(bool, bool)> = Vec::new();

    loop {
        let Some(&b) = bytes.get(i) else { return };
        let pos = (to_u32(line), to_u32(col));
        let end = match b {
            b' ' | b'\t' | b'\r' | b'\n' | b':' => i + 1,
            b'{' | b'[' => {
                let object = b == b'{';
                let kind = if object { Kind::Object } else { Kind::Array };
                if !f(Event::Value(kind, pos)) {
                    return;
                }
                frames.push((object, object));
                i + 1
            }
            b'}' | b']' => {
                if frames.pop().is_none() || !f(Event::Close) {
                    return;
                }
                i + 1
            }
            b',' => {
                if let Some((object, expect)) = frames.last_mut() {
                    *expect = *object;
                }
                i + 1
            }
            b'"' => {
                let end = string_end(bytes, i);
                let ev = match frames.last_mut() {
                    Some((true, expect @ true)) => {
                        *expect = false;
                        let raw = text.get(i + 1..end.saturating_sub(1)).unwrap_or("");
                        Event::Key(unescape(raw), pos)
                    }
                    _ => Event::Value(Kind::Scalar, pos),
                };
                if !f(ev) {
                    return;
                }
                end
            }
            _ => {
                let mut end = i;
                while let Some(&c) = bytes.get(end) {
                    if c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.') {
                        end += 1;
                    } else {
                        break;
                    }
                }
                if end == i || !f(Event::Value(Kind::Scalar, pos)) {
                    return;
                }
                end
            }
        };
        // Advance to `end`, keeping line and (character) column up to date.
        while i < end {
            match bytes.get(i) {
                Some(b'\n') => {
                    line += 1;
                    col = 1;
                }
                Some(&c) if c & 0xC0 != 0x80 => col += 1,
                _ => {}
            }
            i += 1;
        }
    }
}

/// Index just past the closing quote of the string starting at `start` (or the text's end).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Decodes JSON string escapes (invalid ones are kept as written: the text was already
/// validated by serde_json whenever this matters).
fn unescape(raw: &str) -> Cow<'_, str> {
    if !raw.contains('\\') {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('u') => {
                let hi = hex4(&mut chars);
                let code = match hi {
                    Some(h @ 0xD800..=0xDBFF) => {
                        let mut look = chars.clone();
                        if look.next() == Some('\\') && look.next() == Some('u') {
                            match hex4(&mut look) {
                                Some(l @ 0xDC00..=0xDFFF) => {
                                    chars = look;
                                    0x10000 + ((h - 0xD800) << 10) + (l - 0xDC00)
                                }
                                _ => 0xFFFD,
                            }
                        } else {
                            0xFFFD
                        }
                    }
                    Some(c) => c,
                    None => 0xFFFD,
                };
                out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Cow::Owned(out)
}

fn hex4(chars: &mut std::str::Chars<'_>) -> Option<u32> {
    let mut v = 0u32;
    for _ in 0..4 {
        v = v * 16 + chars.next()?.to_digit(16)?;
    }
    Some(v)
}

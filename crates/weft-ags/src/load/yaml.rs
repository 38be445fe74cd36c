//! YAML 1.2 (core schema) loading, from `saphyr-parser` events into a `serde_json::Value`.
//!
//! Events are first assembled into a small arena of nodes in which an alias is a reference
//! to its anchor's node, never a copy. Every node knows its size with aliases expanded
//! (saturating), so alias expansion is budgeted (`Limits::max_alias_nodes`) before anything
//! is copied: a "billion laughs" document fails after a few events, with no allocation.
//! The arena is then turned into a `Value`, checking the depth again (aliases can deepen a
//! document).
//!
//! Scalars resolve with the YAML 1.2 core schema ([`resolve_plain`]); the emitter uses the
//! same function to decide which strings need quotes.

use super::{
    Limits, Parsed, Positions, duplicate_key, empty_document, root_not_object, to_u32, too_deep,
};
use crate::diagnostic::{Code, Finding, pointer_push};
use saphyr_parser::{Event, Parser, ScalarStyle, Span, Tag};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

type Pos = (u32, u32);

/// How the YAML 1.2 core schema reads a plain (unquoted, untagged) scalar.
#[derive(Debug, PartialEq)]
pub(crate) enum Plain {
    /// A null, bool, int or float.
    Value(Value),
    /// Anything else: a string.
    Str,
    /// `.inf`, `.nan` and their variants, or a float that overflows to infinity.
    NonFinite,
    /// An integer that fits neither i64 nor u64.
    OutOfRange,
}

/// Resolves a plain scalar with the YAML 1.2 core schema (tag resolution, §10.3.2).
pub(crate) fn resolve_plain(s: &str) -> Plain {
    if is_null(s) {
        return Plain::Value(Value::Null);
    }
    if let Some(b) = as_bool(s) {
        return Plain::Value(Value::Bool(b));
    }
    if let Some(int) = resolve_int(s) {
        return int;
    }
    if is_non_finite(s) {
        return Plain::NonFinite;
    }
    if is_float(s) {
        return float_value(s);
    }
    Plain::Str
}

fn is_null(s: &str) -> bool {
    matches!(s, "" | "~" | "null" | "Null" | "NULL")
}

fn as_bool(s: &str) -> Option<bool> {
    match s {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

fn is_non_finite(s: &str) -> bool {
    let unsigned = s.strip_prefix(['-', '+']).unwrap_or(s);
    matches!(unsigned, ".inf" | ".Inf" | ".INF") || matches!(s, ".nan" | ".NaN" | ".NAN")
}

/// `[-+]?[0-9]+`, `0o[0-7]+` or `0x[0-9a-fA-F]+`, or `None` if `s` is not an int.
fn resolve_int(s: &str) -> Option<Plain> {
    let radix = |digits: &str, radix: u32| {
        u64::from_str_radix(digits, radix)
            .map(|v| Plain::Value(Value::from(v)))
            .unwrap_or(Plain::OutOfRange)
    };
    if let Some(d) = s.strip_prefix("0o") {
        return (!d.is_empty() && d.bytes().all(|b| matches!(b, b'0'..=b'7'))).then(|| radix(d, 8));
    }
    if let Some(d) = s.strip_prefix("0x") {
        return (!d.is_empty() && d.bytes().all(|b| b.is_ascii_hexdigit())).then(|| radix(d, 16));
    }
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(if let Ok(v) = s.parse::<i64>() {
        Plain::Value(Value::from(v))
    } else if let Ok(v) = s.parse::<u64>() {
        Plain::Value(Value::from(v))
    } else {
        Plain::OutOfRange
    })
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
fn is_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

fn float_value(s: &str) -> Plain {
    match s.parse::<f64>().ok().and_then(Number::from_f64) {
        Some(n) => Plain::Value(Value::Number(n)),
        None => Plain::NonFinite,
    }
}

/// A node of the arena. Children are indices into the arena.
enum Node {
    Scalar(Value),
    Seq(Vec<usize>),
    Map(Vec<(String, usize)>),
    Alias(usize),
}

enum Pending {
    /// The next node is a key.
    Key,
    /// The next node is the value of this (string) key.
    Value(String),
    /// The next node is the value of a rejected (non-string or duplicate) key: drop it.
    Skip,
}

enum FrameKind {
    Seq(Vec<usize>),
    Map {
        entries: Vec<(String, usize)>,
        keys: HashMap<String, Pos>,
        pending: Pending,
    },
}

struct Frame {
    kind: FrameKind,
    anchor: usize,
    start: Pos,
}

/// Stops the event loop: a fatal finding was pushed.
struct Fatal;

struct Builder<'l> {
    limits: &'l Limits,
    nodes: Vec<Node>,
    /// Size of each node with aliases expanded (saturating).
    sizes: Vec<u64>,
    positions: Vec<Pos>,
    anchors: HashMap<usize, usize>,
    stack: Vec<Frame>,
    findings: Vec<Finding>,
    /// A non-fatal finding that still makes the value unusable (e.g. `.inf`).
    invalid: bool,
    alias_total: u64,
    root: Option<usize>,
    /// The root is an empty, untagged plain scalar: an empty document.
    root_empty: bool,
}

pub(super) fn parse(text: &str, limits: &Limits) -> Parsed {
    let mut b = Builder {
        limits,
        nodes: Vec::new(),
        sizes: Vec::new(),
        positions: Vec::new(),
        anchors: HashMap::new(),
        stack: Vec::new(),
        findings: Vec::new(),
        invalid: false,
        alias_total: 0,
        root: None,
        root_empty: false,
    };
    if b.run(text).is_err() {
        return Parsed {
            value: None,
            findings: b.findings,
        };
    }
    let root = match b.root {
        Some(root) if !b.root_empty => root,
        _ => {
            b.findings.push(empty_document());
            return Parsed {
                value: None,
                findings: b.findings,
            };
        }
    };
    let mut via = None;
    let value = b.build(root, 0, &mut via);
    let value = match value {
        Ok(v) if !b.invalid => v,
        _ => {
            return Parsed {
                value: None,
                findings: b.findings,
            };
        }
    };
    if !value.is_object() {
        let (line, column) = b.positions.get(root).copied().unwrap_or((1, 1));
        b.findings.push(root_not_object(&value, line, column));
        return Parsed {
            value: None,
            findings: b.findings,
        };
    }
    Parsed {
        value: Some(value),
        findings: b.findings,
    }
}

fn pos_of(span: &Span) -> Pos {
    (
        to_u32(span.start.line()),
        to_u32(span.start.col().saturating_add(1)),
    )
}

impl Builder<'_> {
    fn run(&mut self, text: &str) -> Result<(), Fatal> {
        let mut documents = 0usize;
        for event in Parser::new_from_str(text) {
            let (event, span) = match event {
                Ok(ev) => ev,
                Err(e) => {
                    let m = e.marker();
                    self.findings.push(
                        Finding::new(Code::AG001, "", format!("YAML syntax error: {}", e.info()))
                            .help("fix the YAML syntax at this position")
                            .at(to_u32(m.line().max(1)), to_u32(m.col().saturating_add(1))),
                    );
                    return Err(Fatal);
                }
            };
            let pos = pos_of(&span);
            match event {
                Event::DocumentStart(_) => {
                    documents += 1;
                    if documents > 1 {
                        self.findings.push(
                            Finding::new(
                                Code::AG001,
                                "",
                                "the file holds more than one YAML document",
                            )
                            .help("keep one graph per file: remove the `---` separator and everything after it, or split the file")
                            .at(pos.0, pos.1),
                        );
                        return Err(Fatal);
                    }
                }
                Event::Scalar(text, style, anchor, tag) => {
                    let empty = text.is_empty() && style == ScalarStyle::Plain && tag.is_none();
                    let value = self.scalar(&text, style, tag.as_deref(), pos);
                    let idx = self.push(Node::Scalar(value), 1, pos);
                    self.anchor(anchor, idx);
                    if self.stack.is_empty() {
                        self.root_empty = empty;
                    }
                    self.complete(idx, pos)?;
                }
                Event::Alias(id) => {
                    let Some(&target) = self.anchors.get(&id) else {
                        self.findings.push(
                            Finding::new(Code::AG001, self.pointer(), "alias refers to an anchor that is still being defined (a recursive alias)")
                                .help("remove the alias: a value cannot contain itself")
                                .at(pos.0, pos.1),
                        );
                        return Err(Fatal);
                    };
                    let size = self.sizes.get(target).copied().unwrap_or(1);
                    self.alias_total = self.alias_total.saturating_add(size);
                    if self.alias_total > self.limits.max_alias_nodes as u64 {
                        self.findings.push(
                            Finding::new(
                                Code::AG001,
                                self.pointer(),
                                format!(
                                    "alias expansion produces more than {} values",
                                    self.limits.max_alias_nodes
                                ),
                            )
                            .help("write the repeated values out instead of nesting aliases, or raise Limits::max_alias_nodes if the document is trusted")
                            .at(pos.0, pos.1),
                        );
                        return Err(Fatal);
                    }
                    let idx = self.push(Node::Alias(target), size, pos);
                    self.complete(idx, pos)?;
                }
                Event::SequenceStart(anchor, tag) => {
                    self.open(false, anchor, tag.as_deref(), pos)?;
                }
                Event::MappingStart(anchor, tag) => {
                    self.open(true, anchor, tag.as_deref(), pos)?;
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    let Some(frame) = self.stack.pop() else {
                        continue;
                    };
                    let (node, size) = match frame.kind {
                        FrameKind::Seq(items) => {
                            let size = self.sum(items.iter().copied());
                            (Node::Seq(items), size)
                        }
                        FrameKind::Map { entries, .. } => {
                            let size = self.sum(entries.iter().map(|(_, i)| *i));
                            (Node::Map(entries), size)
                        }
                    };
                    let idx = self.push(node, size, frame.start);
                    self.anchor(frame.anchor, idx);
                    self.complete(idx, frame.start)?;
                }
                Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {}
            }
        }
        Ok(())
    }
}

impl Builder<'_> {
    fn push(&mut self, node: Node, size: u64, pos: Pos) -> usize {
        self.nodes.push(node);
        self.sizes.push(size);
        self.positions.push(pos);
        self.nodes.len() - 1
    }

    fn anchor(&mut self, anchor: usize, idx: usize) {
        if anchor != 0 {
            self.anchors.insert(anchor, idx);
        }
    }

    /// 1 + the sizes of the children, saturating.
    fn sum(&self, children: impl Iterator<Item = usize>) -> u64 {
        children.fold(1u64, |acc, i| {
            acc.saturating_add(self.sizes.get(i).copied().unwrap_or(1))
        })
    }

    /// The JSON pointer of the node being built now (its parents' keys and indices).
    fn pointer(&self) -> String {
        let mut p = String::new();
        for frame in &self.stack {
            match &frame.kind {
                FrameKind::Seq(items) => p = pointer_push(&p, &items.len().to_string()),
                FrameKind::Map {
                    pending: Pending::Value(key),
                    ..
                } => p = pointer_push(&p, key),
                // Inside a key or a dropped value: the map itself is the best pointer.
                FrameKind::Map { .. } => break,
            }
        }
        p
    }

    /// The pointer of the innermost open mapping (for findings about one of its keys).
    fn map_pointer(&self) -> String {
        let mut p = String::new();
        let n = self.stack.len().saturating_sub(1);
        for frame in self.stack.iter().take(n) {
            match &frame.kind {
                FrameKind::Seq(items) => p = pointer_push(&p, &items.len().to_string()),
                FrameKind::Map {
                    pending: Pending::Value(key),
                    ..
                } => p = pointer_push(&p, key),
                FrameKind::Map { .. } => break,
            }
        }
        p
    }

    fn open(
        &mut self,
        is_map: bool,
        anchor: usize,
        tag: Option<&Tag>,
        pos: Pos,
    ) -> Result<(), Fatal> {
        if self.stack.len() >= self.limits.depth() {
            self.findings
                .push(too_deep(self.pointer(), self.limits, pos.0, pos.1));
            return Err(Fatal);
        }
        if let Some(tag) = tag {
            let expected = if is_map { "map" } else { "seq" };
            match core_tag(tag) {
                Some(t) if t == expected => {}
                Some(t) if CORE_SCALAR_TAGS.contains(&t) => {
                    self.findings.push(
                        Finding::new(
                            Code::AG001,
                            self.pointer(),
                            format!(
                                "tag '{}' does not fit a {}",
                                tag_display(tag),
                                if is_map { "mapping" } else { "sequence" }
                            ),
                        )
                        .help("remove the tag")
                        .at(pos.0, pos.1),
                    );
                }
                _ if is_non_specific(tag) => {}
                _ => self.custom_tag(tag, pos),
            }
        }
        let kind = if is_map {
            FrameKind::Map {
                entries: Vec::new(),
                keys: HashMap::new(),
                pending: Pending::Key,
            }
        } else {
            FrameKind::Seq(Vec::new())
        };
        self.stack.push(Frame {
            kind,
            anchor,
            start: pos,
        });
        Ok(())
    }

    fn custom_tag(&mut self, tag: &Tag, pos: Pos) {
        self.findings.push(
            Finding::new(
                Code::AG001,
                self.pointer(),
                format!("custom tag '{}' is not allowed", tag_display(tag)),
            )
            .help("remove the tag: AGS documents use only the YAML 1.2 core schema")
            .at(pos.0, pos.1),
        );
    }

    /// Resolves one scalar; reports tag problems and unrepresentable numbers.
    fn scalar(&mut self, text: &str, style: ScalarStyle, tag: Option<&Tag>, pos: Pos) -> Value {
        let plain = style == ScalarStyle::Plain;
        if let Some(tag) = tag {
            if is_non_specific(tag) {
                return Value::String(text.to_owned());
            }
            match core_tag(tag) {
                Some(t) if CORE_SCALAR_TAGS.contains(&t) => {
                    if let Some(v) = self.tagged(t, text, pos) {
                        return v;
                    }
                    self.findings.push(
                        Finding::new(
                            Code::AG001,
                            self.pointer(),
                            format!("'{text}' is not a valid {}", tag_display(tag)),
                        )
                        .help("remove the tag or fix the value")
                        .at(pos.0, pos.1),
                    );
                }
                Some("map" | "seq") => {
                    self.findings.push(
                        Finding::new(
                            Code::AG001,
                            self.pointer(),
                            format!("tag '{}' does not fit a scalar", tag_display(tag)),
                        )
                        .help("remove the tag")
                        .at(pos.0, pos.1),
                    );
                }
                _ => self.custom_tag(tag, pos),
            }
        }
        if !plain {
            return Value::String(text.to_owned());
        }
        self.plain(text, pos)
    }

    /// An untagged plain scalar.
    fn plain(&mut self, text: &str, pos: Pos) -> Value {
        match resolve_plain(text) {
            Plain::Value(v) => v,
            Plain::Str => Value::String(text.to_owned()),
            Plain::NonFinite => {
                self.number_error(text, pos, "is not a finite number: JSON and the canonical form (RFC 8785) cannot represent it");
                Value::Null
            }
            Plain::OutOfRange => {
                self.number_error(
                    text,
                    pos,
                    "is out of range: integers must fit in 64 bits (signed or unsigned)",
                );
                Value::Null
            }
        }
    }

    fn number_error(&mut self, text: &str, pos: Pos, what: &str) {
        self.invalid = true;
        self.findings.push(
            Finding::new(
                Code::AG001,
                self.pointer(),
                format!("number '{text}' {what}"),
            )
            .help(format!(
                "quote it (\"{text}\") if it is meant as a string, or use a representable number"
            ))
            .at(pos.0, pos.1),
        );
    }

    /// A scalar with a core tag, or `None` if the text does not fit the tag.
    fn tagged(&mut self, tag: &str, text: &str, pos: Pos) -> Option<Value> {
        match tag {
            "str" => Some(Value::String(text.to_owned())),
            "null" => is_null(text).then_some(Value::Null),
            "bool" => as_bool(text).map(Value::Bool),
            "int" => match resolve_int(text)? {
                Plain::Value(v) => Some(v),
                _ => Some(self.plain(text, pos)),
            },
            "float" => {
                if let Some(Plain::Value(Value::Number(n))) = resolve_int(text) {
                    return n.as_f64().and_then(Number::from_f64).map(Value::Number);
                }
                if is_float(text) || is_non_finite(text) {
                    Some(self.plain(text, pos))
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// Attaches a finished node to the open collection (or makes it the root).
    fn complete(&mut self, idx: usize, pos: Pos) -> Result<(), Fatal> {
        let key = match self.stack.last() {
            None => {
                self.root = Some(idx);
                return Ok(());
            }
            Some(Frame {
                kind:
                    FrameKind::Map {
                        pending: Pending::Key,
                        keys,
                        ..
                    },
                ..
            }) => {
                // This node is a key: check it before taking the frame mutably.
                let key = self.key_text(idx);
                if let Ok(k) = &key
                    && let Some(&first) = keys.get(k)
                {
                    let ptr = pointer_push(&self.map_pointer(), k);
                    self.findings.push(duplicate_key(ptr, k, pos, first));
                    Some(None)
                } else if let Err(kind) = &key {
                    let finding = Finding::new(
                        Code::AG001,
                        self.map_pointer(),
                        format!("mapping keys must be strings, found {kind}; the entry is ignored"),
                    )
                    .help("quote the key (for example \"1\": ...) or use a string key")
                    .at(pos.0, pos.1);
                    self.findings.push(finding);
                    Some(None)
                } else {
                    Some(key.ok())
                }
            }
            Some(_) => None,
        };
        let Some(frame) = self.stack.last_mut() else {
            return Ok(());
        };
        match (&mut frame.kind, key) {
            (FrameKind::Seq(items), _) => items.push(idx),
            (FrameKind::Map { keys, pending, .. }, Some(key)) => {
                *pending = match key {
                    Some(k) => {
                        keys.insert(k.clone(), pos);
                        Pending::Value(k)
                    }
                    None => Pending::Skip,
                };
            }
            (
                FrameKind::Map {
                    entries, pending, ..
                },
                None,
            ) => {
                if let Pending::Value(k) = std::mem::replace(pending, Pending::Key) {
                    entries.push((k, idx));
                }
            }
        }
        Ok(())
    }

    /// The string a node stands for as a mapping key, or what it is instead.
    fn key_text(&self, idx: usize) -> Result<String, &'static str> {
        let mut idx = idx;
        // An alias key refers to its anchor's node (never another alias).
        for _ in 0..2 {
            match self.nodes.get(idx) {
                Some(Node::Scalar(Value::String(s))) => return Ok(s.clone()),
                Some(Node::Scalar(v)) => return Err(super::value_kind(v)),
                Some(Node::Seq(_)) => return Err("a sequence"),
                Some(Node::Map(_)) => return Err("a mapping"),
                Some(Node::Alias(t)) => idx = *t,
                None => break,
            }
        }
        Err("an alias")
    }

    /// Turns arena node `idx` into a value. `via` is the position of the outermost alias
    /// being expanded, where a depth error is reported.
    fn build(&mut self, idx: usize, depth: usize, via: &mut Option<Pos>) -> Result<Value, Fatal> {
        let pos = self.positions.get(idx).copied().unwrap_or((1, 1));
        let deeper = |b: &mut Self, via: &Option<Pos>| -> Result<usize, Fatal> {
            if depth >= b.limits.depth() {
                let at = via.unwrap_or(pos);
                b.findings
                    .push(too_deep(String::new(), b.limits, at.0, at.1));
                return Err(Fatal);
            }
            Ok(depth + 1)
        };
        let children: Vec<(Option<String>, usize)> = match self.nodes.get(idx) {
            None => return Ok(Value::Null),
            Some(Node::Scalar(v)) => return Ok(v.clone()),
            Some(Node::Alias(target)) => {
                let target = *target;
                let outer = via.is_none();
                if outer {
                    *via = Some(pos);
                }
                let v = self.build(target, depth, via);
                if outer {
                    *via = None;
                }
                return v;
            }
            Some(Node::Seq(items)) => items.iter().map(|&i| (None, i)).collect(),
            Some(Node::Map(entries)) => {
                entries.iter().map(|(k, i)| (Some(k.clone()), *i)).collect()
            }
        };
        let depth = deeper(self, via)?;
        let is_map = matches!(self.nodes.get(idx), Some(Node::Map(_)));
        if is_map {
            let mut map = Map::with_capacity(children.len());
            for (key, child) in children {
                let v = self.build(child, depth, via)?;
                map.insert(key.unwrap_or_default(), v);
            }
            Ok(Value::Object(map))
        } else {
            let mut items = Vec::with_capacity(children.len());
            for (_, child) in children {
                items.push(self.build(child, depth, via)?);
            }
            Ok(Value::Array(items))
        }
    }
}

const CORE_SCALAR_TAGS: &[&str] = &["str", "int", "float", "bool", "null"];

/// The suffix of a `tag:yaml.org,2002:` tag (`!!str`, `!<tag:yaml.org,2002:str>`).
fn core_tag(tag: &Tag) -> Option<&str> {
    if tag.handle == "tag:yaml.org,2002:" {
        return Some(tag.suffix.as_str());
    }
    if tag.handle.is_empty() || tag.handle == "!<" {
        return tag.suffix.strip_prefix("tag:yaml.org,2002:");
    }
    None
}

/// The non-specific tag `!`: the node is a string (scalars) or a plain collection.
fn is_non_specific(tag: &Tag) -> bool {
    (tag.handle == "!" && tag.suffix.is_empty()) || (tag.handle.is_empty() && tag.suffix == "!")
}

/// A tag as its author probably wrote it.
fn tag_display(tag: &Tag) -> String {
    match tag.handle.as_str() {
        "tag:yaml.org,2002:" => format!("!!{}", tag.suffix),
        "!" => format!("!{}", tag.suffix),
        "" => format!("!<{}>", tag.suffix),
        h => format!("{h}{}", tag.suffix),
    }
}

/// Positions of the pointers in `needed` (escaped, without the root): members at their key,
/// items at their start. The first occurrence of a duplicated key wins, as in the value.
pub(super) fn positions(text: &str, needed: &HashSet<String>) -> Positions {
    enum Role {
        Map {
            expect_key: bool,
            current: Option<String>,
        },
        Seq {
            index: usize,
        },
    }
    struct Frame {
        ptr: Option<String>,
        role: Role,
    }
    let mut found = Positions::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut documents = 0usize;
    let record = |found: &mut Positions, p: String, pos: Pos| -> Option<String> {
        if needed.contains(&p) {
            found.entry(p.clone()).or_insert(pos);
            Some(p)
        } else {
            None
        }
    };
    for event in Parser::new_from_str(text) {
        let Ok((event, span)) = event else { break };
        let pos = pos_of(&span);
        // The key string, if this event is a scalar that resolves to a string.
        let (opens, closes, key): (bool, bool, Option<Cow<'_, str>>) = match &event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    break;
                }
                continue;
            }
            Event::Scalar(s, style, _, tag) => {
                let string = tag.as_deref().map_or_else(
                    || *style != ScalarStyle::Plain || resolve_plain(s) == Plain::Str,
                    |t| core_tag(t) == Some("str") || is_non_specific(t),
                );
                (false, false, string.then(|| s.clone()))
            }
            Event::Alias(_) => (false, false, None),
            Event::SequenceStart(..) | Event::MappingStart(..) => (true, false, None),
            Event::SequenceEnd | Event::MappingEnd => (false, true, None),
            _ => continue,
        };
        if closes {
            stack.pop();
        } else {
            // A node starts here: find its pointer from the parent frame.
            let child = match stack.last_mut() {
                None => Some(String::new()),
                Some(Frame {
                    ptr,
                    role:
                        Role::Map {
                            expect_key,
                            current,
                        },
                }) => {
                    if *expect_key {
                        *current = match (ptr.as_deref(), &key) {
                            (Some(p), Some(k)) if !opens => {
                                record(&mut found, pointer_push(p, k), pos)
                            }
                            _ => None,
                        };
                        None
                    } else {
                        let member = current.take();
                        if let Some(m) = &member {
                            let key = format!("{m}{}", super::VALUE);
                            if needed.contains(&key) {
                                found.entry(key).or_insert(pos);
                            }
                        }
                        member
                    }
                }
                Some(Frame {
                    ptr,
                    role: Role::Seq { index },
                }) => {
                    let i = *index;
                    *index += 1;
                    ptr.as_deref()
                        .and_then(|p| record(&mut found, pointer_push(p, &i.to_string()), pos))
                }
            };
            if opens {
                let role = if matches!(event, Event::MappingStart(..)) {
                    Role::Map {
                        expect_key: true,
                        current: None,
                    }
                } else {
                    Role::Seq { index: 0 }
                };
                stack.push(Frame { ptr: child, role });
                continue;
            }
        }
        // A node ended (scalar, alias or collection): its parent map alternates key/value.
        if let Some(Frame {
            role: Role::Map { expect_key, .. },
            ..
        }) = stack.last_mut()
        {
            *expect_key = !*expect_key;
        }
    }
    found
}

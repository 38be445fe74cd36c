//! Loading AGS text (JSON or YAML 1.2 core) into an order-preserving [`serde_json::Value`].
//!
//! Everything the loader rejects is a [`Finding`] (`AG001`, or `AG005` for duplicate keys)
//! with a message, a help and a 1-based line/column (columns count Unicode scalar values).
//! Loading never panics and never fails: [`Loaded::document`] is `Some` whenever a value
//! could be built, even when recoverable findings were reported (a custom tag, a
//! non-string key, a duplicate key), and `None` after a fatal one (syntax error, limit
//! exceeded, non-finite number, root not an object, ...).
//!
//! - [`load_str`] loads text already in memory, [`read_file`] reads a file (the only IO of
//!   the crate) with the size limit checked before reading.
//! - [`locate`] fills in the source position of findings that only have a JSON pointer
//!   (the validator's), in one pass over the source.
//! - [`to_json_pretty`] and [`to_yaml`] write a value back (for `weft convert`).
//!
//! The decisions (YAML 1.2 core schema, limits, BOM, duplicate-key recovery) are described
//! in `docs/loading.md`.

pub mod emit;
mod json;
mod text_index;
mod yaml;

pub use emit::{to_json_pretty, to_yaml};
pub use text_index::TextIndex;

use crate::diagnostic::{Code, Finding};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Nesting deeper than this is refused whatever [`Limits::max_depth`] says: the loader, the
/// canonical serializer and `serde_json`'s `Drop` all recurse once per level.
pub const HARD_MAX_DEPTH: usize = 512;

/// The two serializations of an AGS document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// RFC 8259 JSON (`.agraph.json`).
    Json,
    /// YAML 1.2, core schema (`.agraph.yaml`).
    Yaml,
}

impl Format {
    /// The format a path's extension names: `.json` is JSON, `.yaml`/`.yml` YAML
    /// (case-insensitive). Any other extension gives YAML, which also reads JSON text;
    /// [`read_file`] sniffs the content instead (see [`Format::sniff`]).
    pub fn from_path(p: &Path) -> Format {
        Format::from_extension(p).unwrap_or(Format::Yaml)
    }

    /// The format a path's extension names, if it names one.
    pub fn from_extension(p: &Path) -> Option<Format> {
        let ext = p.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "json" => Some(Format::Json),
            "yaml" | "yml" => Some(Format::Yaml),
            _ => None,
        }
    }

    /// Guesses from the content: the first non-blank character `{` means JSON, anything else
    /// YAML. A leading byte order mark is skipped.
    pub fn sniff(text: &str) -> Format {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        match text.trim_start().chars().next() {
            Some('{') => Format::Json,
            _ => Format::Yaml,
        }
    }

    /// `"json"` or `"yaml"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Yaml => "yaml",
        }
    }
}

/// Limits against hostile or runaway input. Exceeding any of them is a fatal `AG001`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted source, in bytes. Default 4 MiB: the largest real workflow graphs
    /// are tens of kilobytes, and 4 MiB still loads in tens of milliseconds.
    pub max_bytes: usize,
    /// Deepest accepted nesting of objects and arrays (the root object is depth 1).
    /// Default 128 (AGS documents nest well under 20 levels; this is also `serde_json`'s
    /// own default). Values above [`HARD_MAX_DEPTH`] act as [`HARD_MAX_DEPTH`].
    pub max_depth: usize,
    /// Most values YAML alias expansion may produce in total (each alias counts the size
    /// of the subtree it copies, nested aliases included). Default 100 000: generous for
    /// `defaults`-style reuse, and it stops a "billion laughs" document after at most that
    /// many values, before anything is copied.
    pub max_alias_nodes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 4 * 1024 * 1024,
            max_depth: 128,
            max_alias_nodes: 100_000,
        }
    }
}

impl Limits {
    pub(crate) fn depth(&self) -> usize {
        self.max_depth.min(HARD_MAX_DEPTH)
    }
}

/// The text a document came from, kept for positions and messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The path as given (or a label such as `<stdin>`), for messages.
    pub name: String,
    /// The full source text.
    pub text: String,
    /// How `text` was parsed.
    pub format: Format,
}

/// A parsed document: the data and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    /// The parsed data; object members keep their source order.
    pub value: serde_json::Value,
    /// The source text.
    pub source: Source,
}

/// The result of loading: the document if one could be built, and every finding.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    /// `Some` unless a fatal finding stopped loading.
    pub document: Option<Document>,
    /// Everything wrong with the text, each with a position.
    pub findings: Vec<Finding>,
}

impl Loaded {
    fn fatal(findings: Vec<Finding>) -> Loaded {
        Loaded {
            document: None,
            findings,
        }
    }
}

/// Loads `text` as `format`. `name` is only used in messages and kept in the [`Source`].
pub fn load_str(name: &str, text: &str, format: Format, limits: &Limits) -> Loaded {
    load_text(name, std::borrow::Cow::Borrowed(text), format, limits)
}

/// [`load_str`] of text the caller owns: a file's text is kept as the [`Source`] as it was
/// read, not copied (2.5 MB on issue 12's minified documents).
fn load_text(
    name: &str,
    text: std::borrow::Cow<'_, str>,
    format: Format,
    limits: &Limits,
) -> Loaded {
    if text.len() > limits.max_bytes {
        return Loaded::fatal(vec![too_large(text.len() as u64, limits)]);
    }
    if text.starts_with('\u{feff}') {
        return Loaded::fatal(vec![
            Finding::new(
                Code::AG001,
                "",
                "the document starts with a UTF-8 byte order mark (BOM)",
            )
            .help("save the file as UTF-8 without a byte order mark")
            .at(1, 1),
        ]);
    }
    let parsed = match format {
        Format::Json => json::parse(&text, limits),
        Format::Yaml => yaml::parse(&text, limits),
    };
    let document = parsed.value.map(|value| Document {
        value,
        source: Source {
            name: name.to_owned(),
            text: text.into_owned(),
            format,
        },
    });
    Loaded {
        document,
        findings: parsed.findings,
    }
}

/// Reads and loads a file. The format comes from the extension ([`Format::from_extension`])
/// or, failing that, from the content ([`Format::sniff`]).
///
/// The size limit is checked on the file's metadata before anything is read (and again on
/// what is read). Text that is not UTF-8 is an `AG001` finding with the byte offset and
/// position of the first bad byte; only a failure to open or read the file is an `Err`.
#[allow(
    clippy::disallowed_methods,
    reason = "the one place of weft-ags that reads files (see the crate docs)"
)]
pub fn read_file(path: &Path, limits: &Limits) -> std::io::Result<Loaded> {
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size > limits.max_bytes as u64 {
        return Ok(Loaded::fatal(vec![too_large(size, limits)]));
    }
    // Read into a buffer of the file's size: growing one by doubling copied a large
    // document several times over.
    let capacity = usize::try_from(size).map_or(0, |n| n.saturating_add(1));
    read_into(
        &path.display().to_string(),
        file,
        Format::from_extension(path),
        limits,
        Vec::with_capacity(capacity),
    )
}

/// Reads a document from any reader (standard input, a socket), with the same limits and
/// checks as [`read_file`]: at most `max_bytes + 1` bytes are read, invalid UTF-8 is an
/// AG001 finding with its position, and without a `format` the content is sniffed.
pub fn read_from(
    name: &str,
    reader: impl std::io::Read,
    format: Option<Format>,
    limits: &Limits,
) -> std::io::Result<Loaded> {
    read_into(name, reader, format, limits, Vec::new())
}

/// [`read_from`] into `bytes` (empty; its capacity a guess of the size).
fn read_into(
    name: &str,
    reader: impl std::io::Read,
    format: Option<Format>,
    limits: &Limits,
    mut bytes: Vec<u8>,
) -> std::io::Result<Loaded> {
    use std::io::Read as _;

    // One byte more than the limit tells an input that is too large (or a file that grew).
    let cap = (limits.max_bytes as u64).saturating_add(1);
    reader.take(cap).read_to_end(&mut bytes)?;
    if bytes.len() > limits.max_bytes {
        return Ok(Loaded::fatal(vec![too_large(bytes.len() as u64, limits)]));
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let bad = e.utf8_error().valid_up_to();
            let valid = e.as_bytes().get(..bad).unwrap_or_default();
            // The prefix is valid UTF-8 by definition of `valid_up_to`.
            let prefix = std::str::from_utf8(valid).unwrap_or_default();
            let (line, column) = text_position(prefix);
            return Ok(Loaded::fatal(vec![
                Finding::new(
                    Code::AG001,
                    "",
                    format!("the file is not valid UTF-8: invalid byte sequence at byte {bad}"),
                )
                .help("save the file as UTF-8")
                .at(line, column),
            ]));
        }
    };
    let format = format.unwrap_or_else(|| Format::sniff(&text));
    Ok(load_text(
        name,
        std::borrow::Cow::Owned(text),
        format,
        limits,
    ))
}

/// Fills in `line`/`column` of every finding that has none, from its JSON pointer: the
/// position of the nearest ancestor that exists in the source. Object members resolve to
/// their key, array items to the start of the item, `""` to 1:1. The source is walked once
/// for all findings, and not at all when every finding already has a position.
pub fn locate(source: &Source, findings: &mut [Finding]) {
    let wanted: Vec<usize> = findings
        .iter()
        .enumerate()
        .filter(|(_, f)| f.line.is_none())
        .map(|(i, _)| i)
        .collect();
    if wanted.is_empty() {
        return;
    }
    let targets: Vec<(&str, Option<(&str, u32)>)> = wanted
        .iter()
        .filter_map(|&i| findings.get(i))
        .map(|f| {
            let anchor = f.anchor.as_deref().map(|a| (a, f.anchor_shift));
            (f.pointer.as_str(), anchor)
        })
        .collect();
    let found = resolve(source, &targets);
    for (i, (line, column)) in wanted.into_iter().zip(found) {
        if let Some(f) = findings.get_mut(i) {
            f.line = Some(line);
            f.column = Some(column);
        }
    }
}

/// The (line, column) of each JSON pointer in the source, resolved like [`locate`] does for
/// findings: for problems the engine reports against a document outside the validator's
/// code table (runtime codes such as RT051 on a subgraph `ref`).
pub fn positions_of(source: &Source, pointers: &[&str]) -> Vec<(u32, u32)> {
    let targets: Vec<(&str, Option<(&str, u32)>)> = pointers.iter().map(|p| (*p, None)).collect();
    resolve(source, &targets)
}

/// Positions of (pointer, optional anchor snippet inside the value and the characters from
/// it to the problem) targets; one walk of the source for all of them.
fn resolve(source: &Source, targets: &[(&str, Option<(&str, u32)>)]) -> Vec<(u32, u32)> {
    let mut needed: HashSet<String> = HashSet::new();
    for (pointer, anchor) in targets {
        for prefix in pointer_prefixes(pointer) {
            // Many findings share their prefixes (`/nodes`): copy each once.
            if !needed.contains(prefix) {
                needed.insert(prefix.to_owned());
            }
        }
        if anchor.is_some() {
            needed.insert(format!("{pointer}{VALUE}"));
        }
    }
    let positions = match source.format {
        Format::Json => json::positions(&source.text, &needed),
        Format::Yaml => yaml::positions(&source.text, &needed),
    };
    let index = TextIndex::new(&source.text);
    targets
        .iter()
        .map(|(pointer, anchor)| {
            let anchored = anchor.and_then(|(snippet, shift)| {
                let start = positions.get(&format!("{pointer}{VALUE}"))?;
                let (line, column) = find_after(&index, *start, snippet)?;
                Some((line, column.saturating_add(shift)))
            });
            anchored.unwrap_or_else(|| {
                pointer_prefixes(pointer)
                    .rev()
                    .find_map(|p| positions.get(p).copied())
                    .unwrap_or((1, 1))
            })
        })
        .collect()
}

/// How far after a value's start its anchor text is looked for: a value never spans far from
/// its start in a sane document, and a bound keeps a missing anchor from costing a scan of
/// the rest of the text per finding.
const ANCHOR_LINES: u32 = 64;
const ANCHOR_BYTES: usize = 64 * 1024;

/// The position of the first `needle` at or after `from`, within [`ANCHOR_LINES`] lines and
/// [`ANCHOR_BYTES`] bytes, if any.
fn find_after(index: &TextIndex<'_>, from: (u32, u32), needle: &str) -> Option<(u32, u32)> {
    let text = index.text();
    let byte = index.byte_of(from.0, from.1)?;
    let by_lines = index
        .line_start(from.0.saturating_add(ANCHOR_LINES))
        .unwrap_or(text.len());
    let window_end = text_index::floor_char_boundary(
        text,
        by_lines
            .min(byte.saturating_add(ANCHOR_BYTES))
            .min(text.len()),
    );
    let hay = text.get(byte..window_end)?;
    let at = byte + hay.find(needle)?;
    Some(index.position_of(at))
}

/// Every proper and improper prefix of a pointer that ends at a segment boundary, shortest
/// first, without `""` (the root, which is always 1:1).
fn pointer_prefixes(pointer: &str) -> impl DoubleEndedIterator<Item = &str> {
    let ends: Vec<usize> = if pointer.starts_with('/') {
        pointer
            .match_indices('/')
            .map(|(i, _)| i)
            .skip(1)
            .chain(std::iter::once(pointer.len()))
            .collect()
    } else {
        Vec::new()
    };
    ends.into_iter().filter_map(move |end| pointer.get(..end))
}

/// Positions found by a walk over the source, by escaped JSON pointer. A pointer followed by
/// [`VALUE`] names the start of that member's *value* rather than its key.
pub(crate) type Positions = HashMap<String, (u32, u32)>;

/// Suffix marking a value position in [`Positions`] (not a valid pointer character).
pub(crate) const VALUE: &str = "\u{0}value";

/// The result of one parser: the value (`None` after a fatal finding) and the findings.
pub(crate) struct Parsed {
    pub(crate) value: Option<serde_json::Value>,
    pub(crate) findings: Vec<Finding>,
}

fn too_large(size: u64, limits: &Limits) -> Finding {
    Finding::new(
        Code::AG001,
        "",
        format!(
            "the document is {size} bytes, more than the limit of {} bytes",
            limits.max_bytes
        ),
    )
    .help("raise the limit with --max-bytes (Limits::max_bytes) if the document is trusted")
    .at(1, 1)
}

/// 1-based line and column just after `prefix` (columns count characters).
pub(crate) fn text_position(prefix: &str) -> (u32, u32) {
    let line = prefix.bytes().filter(|&b| b == b'\n').count() + 1;
    let last = prefix.rfind('\n').map_or(0, |i| i + 1);
    let column = prefix.get(last..).map_or(0, |s| s.chars().count()) + 1;
    (to_u32(line), to_u32(column))
}

/// Saturating conversion for line and column numbers.
pub(crate) fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Finding for an empty document (shared by both formats).
pub(crate) fn empty_document() -> Finding {
    Finding::new(Code::AG001, "", "document is empty")
        .help("write an AGS graph object, starting with `ags_version`")
        .at(1, 1)
}

/// Finding for a root that is not an object (shared by both formats).
pub(crate) fn root_not_object(found: &serde_json::Value, line: u32, column: u32) -> Finding {
    Finding::new(
        Code::AG001,
        "",
        format!(
            "document root must be an object, found {}",
            value_kind(found)
        ),
    )
    .help("make the top level a mapping of fields such as `ags_version` and `nodes`")
    .at(line, column)
}

/// Finding for a duplicate key (shared by both formats).
pub(crate) fn duplicate_key(
    pointer: String,
    key: &str,
    at: (u32, u32),
    first: (u32, u32),
) -> Finding {
    Finding::new(
        Code::AG005,
        pointer,
        format!(
            "duplicate key '{key}' (first defined at line {}, column {})",
            first.0, first.1
        ),
    )
    .help("remove or rename one of the two entries")
    .at(at.0, at.1)
}

/// Finding for nesting beyond the limit (shared by both formats).
pub(crate) fn too_deep(pointer: String, limits: &Limits, line: u32, column: u32) -> Finding {
    Finding::new(
        Code::AG001,
        pointer,
        format!(
            "the document nests objects and arrays deeper than the limit of {} levels",
            limits.depth()
        ),
    )
    .help("flatten the document, or raise Limits::max_depth if it is trusted")
    .at(line, column)
}

pub(crate) fn value_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_stop_at_segment_boundaries() {
        let all: Vec<&str> = pointer_prefixes("/nodes/a~1b/x").collect();
        assert_eq!(all, ["/nodes", "/nodes/a~1b", "/nodes/a~1b/x"]);
        assert_eq!(pointer_prefixes("").count(), 0);
        assert_eq!(pointer_prefixes("nodes").count(), 0);
        let trailing: Vec<&str> = pointer_prefixes("/a/").collect();
        assert_eq!(trailing, ["/a", "/a/"]);
    }

    #[test]
    fn positions_count_characters() {
        assert_eq!(text_position(""), (1, 1));
        assert_eq!(text_position("ab\ncé"), (2, 3));
    }
}

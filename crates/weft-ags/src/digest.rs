//! RFC 8785 canonical JSON (JCS) and the AGS `graph_digest` (1.0.1 errata).
//!
//! The canonical form sorts object members by the UTF-16 code units of their names,
//! escapes strings minimally and writes every number as ECMAScript's
//! `Number.prototype.toString` of its IEEE-754 double (integers included), through
//! `ryu-js`. A `serde_json::Value` cannot hold NaN or infinities (the loader rejects them),
//! so every value has a canonical form.
//!
//! `graph_digest` is `sha256-` followed by the standard, padded base64 of the SHA-256 of the
//! canonical bytes. It is taken over the document as parsed: `x-` keys included, defaults
//! not merged.

use std::borrow::Cow;

use base64::Engine as _;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};
use sha2::{Digest as _, Sha256};

/// The RFC 8785 canonical form of `value`.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, &mut Vec::new());
    out
}

/// `sha256-` + base64 (standard alphabet, padded) of the SHA-256 of [`canonical_json`].
///
/// The canonical text is hashed as it is written, through a small buffer, never held whole:
/// a large document's text grew by reallocation into fresh pages, which cost more than the
/// hash.
pub fn graph_digest(value: &Value) -> String {
    digest_of(|sink| write_value(sink, value, &mut Vec::new()))
}

/// `sha256-` + base64 of the canonical text `write` gives a [`HashSink`].
fn digest_of(write: impl FnOnce(&mut HashSink)) -> String {
    let mut sink = HashSink {
        hasher: Sha256::new(),
        buf: String::with_capacity(HashSink::FLUSH_AT + 64),
    };
    write(&mut sink);
    sink.flush();
    let hash = sink.hasher.finalize();
    let mut out = String::from("sha256-");
    base64::engine::general_purpose::STANDARD.encode_string(hash, &mut out);
    out
}

/// [`graph_digest`] of the JSON `text`, read in one pass without building a
/// `serde_json::Value`: strings without escapes are borrowed from the text, and only each
/// object's list of members is allocated. `None` when the text is not JSON or nests deeper
/// than `serde_json`'s limit of 128 levels (parsing it as a value gives that error). Of a
/// name repeated in one object the last value counts, as in a parsed `Value`.
///
/// What the audit chain digests every event's stored payload with: a `run_started`
/// payload holds the whole document, and reading nested text level by level scanned it
/// once per level.
pub fn text_digest(text: &str) -> Option<String> {
    let tree: Tree<'_> = serde_json::from_str(text).ok()?;
    Some(digest_of(|sink| write_tree(sink, &tree)))
}

/// A JSON value as [`text_digest`] reads it: strings borrowed where the text allows.
enum Tree<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Tree<'a>>),
    /// Members in text order, a repeated name as often as it is written.
    Object(Vec<(Cow<'a, str>, Tree<'a>)>),
}

fn write_tree(out: &mut impl Sink, tree: &Tree<'_>) {
    match tree {
        Tree::Null => out.push_str("null"),
        Tree::Bool(true) => out.push_str("true"),
        Tree::Bool(false) => out.push_str("false"),
        Tree::Number(n) => write_number(out, n),
        Tree::String(s) => write_string(out, s),
        Tree::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_tree(out, item);
            }
            out.push(']');
        }
        Tree::Object(members) => {
            let mut order: Vec<&(Cow<'_, str>, Tree<'_>)> = members.iter().collect();
            // Stable, so that of a repeated name the last written is the last here.
            order.sort_by(|a, b| utf16_order(&a.0, &b.0));
            out.push('{');
            let mut first = true;
            for (i, (name, member)) in order.iter().map(|m| (&m.0, &m.1)).enumerate() {
                if order.get(i + 1).is_some_and(|next| next.0 == *name) {
                    continue;
                }
                if !first {
                    out.push(',');
                }
                first = false;
                write_string(out, name);
                out.push(':');
                write_tree(out, member);
            }
            out.push('}');
        }
    }
}

impl<'de> Deserialize<'de> for Tree<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TreeVisitor)
    }
}

struct TreeVisitor;

impl<'de> Visitor<'de> for TreeVisitor {
    type Value = Tree<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Tree<'de>, E> {
        Ok(Tree::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Tree<'de>, E> {
        Ok(Tree::Bool(b))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Tree<'de>, E> {
        Ok(Tree::Number(n.into()))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Tree<'de>, E> {
        Ok(Tree::Number(n.into()))
    }
    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Tree<'de>, E> {
        Number::from_f64(n)
            .map(Tree::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Tree<'de>, E> {
        Ok(Tree::String(Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Tree<'de>, E> {
        Ok(Tree::String(Cow::Owned(s.to_owned())))
    }
    fn visit_string<E>(self, s: String) -> Result<Tree<'de>, E> {
        Ok(Tree::String(Cow::Owned(s)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tree<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Tree::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tree<'de>, A::Error> {
        let mut members = Vec::new();
        // A name is read as any value is: a string, borrowed where it has no escape.
        while let Some(name) = map.next_key()? {
            let Tree::String(name) = name else {
                return Err(serde::de::Error::custom(
                    "a member name that is not a string",
                ));
            };
            members.push((name, map.next_value()?));
        }
        Ok(Tree::Object(members))
    }
}

/// Where canonical text goes: a `String`, or the hash of [`graph_digest`].
trait Sink {
    fn push_str(&mut self, s: &str);
    fn push(&mut self, c: char);
}

impl Sink for String {
    fn push_str(&mut self, s: &str) {
        String::push_str(self, s);
    }
    fn push(&mut self, c: char) {
        String::push(self, c);
    }
}

/// Canonical text hashed in chunks of about [`HashSink::FLUSH_AT`] bytes.
struct HashSink {
    hasher: Sha256,
    buf: String,
}

impl HashSink {
    const FLUSH_AT: usize = 8192;

    fn flush(&mut self) {
        self.hasher.update(self.buf.as_bytes());
        self.buf.clear();
    }
}

impl Sink for HashSink {
    fn push_str(&mut self, s: &str) {
        self.buf.push_str(s);
        if self.buf.len() >= Self::FLUSH_AT {
            self.flush();
        }
    }
    fn push(&mut self, c: char) {
        self.buf.push(c);
        if self.buf.len() >= Self::FLUSH_AT {
            self.flush();
        }
    }
}

/// An object's members in canonical order; kept in a pool between objects, so a document
/// costs one list per nesting depth rather than one per object.
type Members<'a> = Vec<(&'a String, &'a Value)>;

fn write_value<'a>(out: &mut impl Sink, value: &'a Value, pool: &mut Vec<Members<'a>>) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, pool);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut members = pool.pop().unwrap_or_default();
            members.clear();
            members.extend(map.iter());
            // RFC 8785 §3.2.3: sort by the UTF-16 code units of the names. Names are
            // unique, so an unstable sort gives the one order; when every name is below
            // U+E000 (the usual case: checked once per object, not per comparison) that
            // order is the bytes'.
            if members.iter().all(|(name, _)| bytewise(name)) {
                members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            } else {
                members.sort_unstable_by(|a, b| utf16_order(a.0, b.0));
            }
            out.push('{');
            for (i, &(name, member)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, name);
                out.push(':');
                write_value(out, member, pool);
            }
            out.push('}');
            pool.push(members);
        }
    }
}

/// The order of two names by their UTF-16 code units. UTF-8 bytes sort like code points,
/// and code points like UTF-16 code units except that a supplementary character (a
/// surrogate pair, 0xD800..) sorts before U+E000..U+FFFF in UTF-16: so bytes decide unless a
/// name holds a lead byte of either (0xEE and up), the rare case compared the long way.
/// Whether `name` orders the same by its UTF-8 bytes as by its UTF-16 code units against
/// any other such name: no character at or above U+E000 (lead byte 0xEE or more), where
/// UTF-16's surrogates reorder.
fn bytewise(name: &str) -> bool {
    name.bytes().all(|x| x < 0xEE)
}

fn utf16_order(a: &str, b: &str) -> std::cmp::Ordering {
    if bytewise(a) && bytewise(b) {
        a.as_bytes().cmp(b.as_bytes())
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

/// ECMAScript `Number.prototype.toString` of the number as an IEEE-754 double.
fn write_number(out: &mut impl Sink, n: &Number) {
    // Integers go through f64 too (RFC 8785 §3.2.2.3): 2^53 + 1 becomes 9007199254740992.
    #[allow(
        clippy::cast_precision_loss,
        reason = "JCS defines numbers as IEEE doubles"
    )]
    let f = if let Some(i) = n.as_i64() {
        i as f64
    } else if let Some(u) = n.as_u64() {
        u as f64
    } else {
        n.as_f64().unwrap_or(0.0)
    };
    if f == 0.0 {
        // Covers -0.0, which ECMAScript prints as "0".
        out.push('0');
    } else if f.is_finite() {
        out.push_str(ryu_js::Buffer::new().format_finite(f));
    } else {
        // Unreachable for a serde_json::Value; write null rather than an invalid token.
        out.push_str("null");
    }
}

/// A JSON string with RFC 8785's minimal escaping.
fn write_string(out: &mut impl Sink, s: &str) {
    out.push('"');
    // The common case, nothing to escape, copied whole.
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(s);
        out.push('"');
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let b = c as u32;
                out.push_str("\\u00");
                out.push(char::from(HEX[((b >> 4) & 0xf) as usize]));
                out.push(char::from(HEX[(b & 0xf) as usize]));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn control_characters_use_short_or_lowercase_escapes() {
        let v = json!("\u{1}\u{1f}\u{8}\u{c}\"\\/\u{7f}");
        assert_eq!(
            canonical_json(&v),
            "\"\\u0001\\u001f\\b\\f\\\"\\\\/\u{7f}\""
        );
    }

    #[test]
    fn the_digest_hashes_the_canonical_text() {
        // Long enough to cross the hashing buffer several times.
        let v = json!({"b": "x".repeat(20_000), "a": [1, 2.5, "é\n"], "c": {"z": null}});
        let text = canonical_json(&v);
        let mut expected = String::from("sha256-");
        base64::engine::general_purpose::STANDARD
            .encode_string(Sha256::digest(text.as_bytes()), &mut expected);
        assert_eq!(graph_digest(&v), expected);
    }

    #[test]
    fn nested_and_sibling_objects_each_sort_their_own_names() {
        // The member lists are pooled across objects: each object still sorts its own.
        let v = json!({
            "z": {"b": {"d": 1, "c": 2}, "a": [{"y": 1, "x": 2}, {"w": 3}]},
            "m": {"k": 1, "j": {}}
        });
        assert_eq!(
            canonical_json(&v),
            r#"{"m":{"j":{},"k":1},"z":{"a":[{"x":2,"y":1},{"w":3}],"b":{"c":2,"d":1}}}"#
        );
    }

    #[test]
    fn names_sort_by_utf16_code_units() {
        // U+FF5E (one UTF-16 unit 0xFF5E) sorts after U+1F600 (surrogates 0xD83D 0xDE00),
        // although its UTF-8 bytes sort before; ASCII names sort by bytes.
        let v = json!({"\u{ff5e}": 1, "\u{1f600}": 2, "b": 3, "a": 4, "é": 5});
        assert_eq!(
            canonical_json(&v),
            "{\"a\":4,\"b\":3,\"é\":5,\"\u{1f600}\":2,\"\u{ff5e}\":1}"
        );
    }
}

#[cfg(test)]
mod text_digest_tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::{graph_digest, text_digest};

    fn same_as_the_value_digest(text: &str) {
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            text_digest(text).as_deref(),
            Some(graph_digest(&value).as_str()),
            "{text}"
        );
    }

    #[test]
    fn escapes_numbers_repeats_and_layout_digest_as_the_parsed_value() {
        for text in [
            r#"{"b":1,"a":[1,2.50,{"z":null,"y":true}],"c":"x\u0001\"\\é"}"#,
            r#"{"\ud83d\ude00":1,"\ue000":2,"a":-0,"big":9007199254740993,"e":1e21,"f":1.5e-7}"#,
            r#"  [ {"k" : "v" } , [] , {} , "s", false ]  "#,
            r#""just a string""#,
            "12.0",
            r#"{"dup":1,"other":2,"dup":3}"#,
            r#"{"esc\"aped":{"n\u0041me":"v\n","name":"w"},"name":1}"#,
        ] {
            same_as_the_value_digest(text);
        }
    }

    #[test]
    fn text_that_is_not_json_or_too_deep_has_no_digest() {
        assert_eq!(text_digest("{not json"), None);
        assert_eq!(text_digest(r#"{"a":1} trailing"#), None);
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(text_digest(&deep), None);
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "\\PC{0,8}".prop_map(Value::String),
            "[\"\\\\\\n\u{1}\u{e000}\u{1f600}a-z]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(("[a-c\u{e000}\u{1f600}\"]{0,3}", inner), 0..6)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Any JSON text, compact or pretty, digests as its parsed value does.
        #[test]
        fn any_text_digests_as_its_value(value in json_value(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            prop_assert_eq!(text_digest(&text), Some(graph_digest(&value)));
        }
    }
}

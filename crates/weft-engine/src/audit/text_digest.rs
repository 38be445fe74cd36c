//! An event's `event_digest` taken from its stored text, without building the payload as a
//! `serde_json::Value`: a `run_started` payload holds the whole document, and parsing it
//! again in the store's writer thread, while the driver still holds its own values of it,
//! was the peak of a large run's opening (`docs/BENCHMARKS.md`).
//!
//! The digest is the same as [`weft_ags::digest::graph_digest`] of the parsed payload, byte
//! for byte: the same RFC 8785 text, hashed as it is written. Objects are read one level at
//! a time as borrowed raw slices of the text, their members sorted by the UTF-16 code units
//! of their names and each written in turn; scalars are written by `weft-ags`'s canonical
//! form of the one value, so numbers and strings have one definition.

use base64::Engine as _;
use serde::de::{Deserializer as _, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;
use sha2::{Digest as _, Sha256};

/// The nesting depth the text form follows; a deeper payload is digested from its value.
const MAX_DEPTH: usize = 128;

/// `sha256-` + base64 of the SHA-256 of the canonical form of the JSON `text`, or `None`
/// where the text is not JSON or nests deeper than [`MAX_DEPTH`] (the caller then parses it
/// as a value, which gives the error or the digest).
pub fn digest_of_text(text: &str) -> Option<String> {
    let raw: &RawValue = serde_json::from_str(text).ok()?;
    let mut sink = HashSink::default();
    write_raw(&mut sink, raw, 0)?;
    sink.flush();
    let mut out = String::from("sha256-");
    base64::engine::general_purpose::STANDARD.encode_string(sink.hasher.finalize(), &mut out);
    Some(out)
}

/// The top-level members of a JSON object text, each as its raw text; `None` when the text
/// is not an object.
pub fn object_members(text: &str) -> Option<Vec<(String, &RawValue)>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let members = de.deserialize_map(MembersVisitor).ok()?;
    de.end().ok()?;
    Some(members)
}

#[derive(Default)]
struct HashSink {
    hasher: Sha256,
    buf: String,
}

impl HashSink {
    const FLUSH_AT: usize = 8192;

    fn push_str(&mut self, s: &str) {
        self.buf.push_str(s);
        if self.buf.len() >= Self::FLUSH_AT {
            self.flush();
        }
    }

    fn flush(&mut self) {
        self.hasher.update(self.buf.as_bytes());
        self.buf.clear();
    }
}

fn write_raw(out: &mut HashSink, raw: &RawValue, depth: usize) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    let text = raw.get();
    match text.as_bytes().first()? {
        b'{' => {
            let mut members = object_members(text)?;
            // RFC 8785 §3.2.3, as `weft_ags::digest`: by the names' UTF-16 code units. The
            // sort is stable, so of a repeated name the last is the value's and kept.
            members.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push_str("{");
            let mut first = true;
            for (i, (name, member)) in members.iter().enumerate() {
                if members.get(i + 1).is_some_and(|next| next.0 == *name) {
                    continue;
                }
                if !first {
                    out.push_str(",");
                }
                first = false;
                out.push_str(&weft_ags::digest::canonical_json(&Value::String(
                    name.clone(),
                )));
                out.push_str(":");
                write_raw(out, member, depth + 1)?;
            }
            out.push_str("}");
        }
        b'[' => {
            let items: Vec<&RawValue> = serde_json::from_str(text).ok()?;
            out.push_str("[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(",");
                }
                write_raw(out, item, depth + 1)?;
            }
            out.push_str("]");
        }
        _ => {
            let scalar: Value = serde_json::from_str(text).ok()?;
            out.push_str(&weft_ags::digest::canonical_json(&scalar));
        }
    }
    Some(())
}

/// An object's members in text order, a repeated name as often as it is written (a parsed
/// `serde_json::Value` keeps its last value).
struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Vec<(String, &'de RawValue)>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Vec::new();
        while let Some(member) = map.next_entry::<String, &'de RawValue>()? {
            members.push(member);
        }
        Ok(members)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _seq: A) -> Result<Self::Value, A::Error> {
        Err(serde::de::Error::custom("an array, not an object"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn same_as_the_value_digest(text: &str) {
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            digest_of_text(text).as_deref(),
            Some(weft_ags::digest::graph_digest(&value).as_str()),
            "{text}"
        );
    }

    #[test]
    fn the_text_digest_is_the_value_digest() {
        for text in [
            r#"{"b":1,"a":[1,2.50,{"z":null,"y":true}],"c":"x\u0001\"\\é"}"#,
            r#"{"\ud83d\ude00":1,"\ue000":2,"a":-0,"big":9007199254740993,"e":1e21,"f":1.5e-7}"#,
            r#"  [ {"k" : "v" } , [] , {} , "s", false ]  "#,
            r#""just a string""#,
            "12.0",
            r#"{"dup":1,"other":2,"dup":3}"#,
        ] {
            same_as_the_value_digest(text);
        }
        let document = json!({"nodes": (0..50).map(|i| (format!("n{i}"), json!({
            "type": "decision", "depends_on": [format!("n{}", i + 1)], "x-weight": i as f64 / 3.0
        }))).collect::<serde_json::Map<_, _>>(), "title": "T"});
        let payload = json!({"v": 1, "graph": document, "params": {"token": "s"}});
        same_as_the_value_digest(&serde_json::to_string_pretty(&payload).unwrap());
    }

    #[test]
    fn text_that_is_not_json_has_no_digest() {
        assert_eq!(digest_of_text("{not json"), None);
        assert_eq!(digest_of_text(r#"{"a":1} trailing"#), None);
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(digest_of_text(&deep), None);
    }

    #[test]
    fn members_are_raw_slices_in_text_order() {
        let members = object_members(r#"{"b": [1, 2], "a": {"x": 1}}"#).unwrap();
        let got: Vec<(&str, &str)> = members.iter().map(|(n, v)| (n.as_str(), v.get())).collect();
        assert_eq!(got, [("b", "[1, 2]"), ("a", r#"{"x": 1}"#)]);
        assert!(object_members("[1]").is_none());
    }
}

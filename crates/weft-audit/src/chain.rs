//! The v1 line format: how a line is hashed and written, and how one line is checked
//! against the chain state before it. Everything that defines the bytes lives here.

use crate::error::LineProblem;
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};
use weft_ags::digest::canonical_json;

/// The `v` every line of this format carries.
pub const FORMAT_VERSION: u64 = 1;

/// The `prev` of the first line: the hash of the empty chain.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The longest line (newline included) the verifier reads; a longer one is refused rather
/// than buffered, so a corrupt file cannot exhaust memory.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// The members of a v1 line, in JCS order. Exact: an extra member is an error, because an
/// unhashed member would be a place to hide data.
const MEMBERS: [&str; 5] = ["entry", "hash", "prev", "seq", "v"];

/// The hash of a line: SHA-256 (lowercase hex) of the JCS form of the line without `hash`.
pub(crate) fn line_hash(seq: u64, prev: &str, entry: &Value) -> String {
    let after = LineAfterHash::of(prev, seq);
    line_hash_of(&canonical_json(entry), &after)
}

/// The members of a line after `hash`, in their JCS form: `"prev":…,"seq":…,"v":1}`.
/// A line's JCS text is its members' in key order (`entry`, `hash`, `prev`, `seq`, `v`), so
/// the line and the text its hash covers are put together around the entry's canonical
/// text, written once.
struct LineAfterHash(String);

impl LineAfterHash {
    fn of(prev: &str, seq: u64) -> LineAfterHash {
        LineAfterHash(format!(
            "\"prev\":{},\"seq\":{},\"v\":{}}}",
            canonical_json(&Value::from(prev)),
            canonical_json(&Value::from(seq)),
            canonical_json(&Value::from(FORMAT_VERSION)),
        ))
    }
}

/// [`line_hash`] of an entry already in its canonical text.
fn line_hash_of(entry: &str, after: &LineAfterHash) -> String {
    let mut hasher = Sha256::new();
    for part in [r#"{"entry":"#, entry, ",", &after.0] {
        hasher.update(part.as_bytes());
    }
    hex(&hasher.finalize())
}

/// The complete line for `entry` at `seq` after `prev` (newline included) and its hash:
/// exactly the bytes `AuditWriter` appends. Public so tools and tests can build chains.
pub fn encode_line(seq: u64, prev: &str, entry: &Value) -> (String, String) {
    let entry = canonical_json(entry);
    let after = LineAfterHash::of(prev, seq);
    let hash = line_hash_of(&entry, &after);
    let mut text = String::with_capacity(entry.len() + after.0.len() + hash.len() + 24);
    for part in [
        r#"{"entry":"#,
        &entry,
        r#","hash":""#,
        &hash,
        r#"","#,
        &after.0,
        "\n",
    ] {
        text.push_str(part);
    }
    (text, hash)
}

#[cfg(test)]
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex of `digest`.
fn hex(digest: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(2 * digest.len());
    for &b in digest {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

/// 64 lowercase hex digits: the only spelling of a hash the format allows, so that string
/// comparison is hash comparison.
pub(crate) fn is_hash(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Checks one line (without its newline) that should carry `expected_seq` and link to
/// `expected_prev`; returns its hash. The order of the checks decides which problem is
/// reported when several apply: version first (a newer file should say so), then shape,
/// canonical form, position in the chain, and last the hash itself.
pub(crate) fn check_line(
    bytes: &[u8],
    expected_seq: u64,
    expected_prev: &str,
) -> Result<String, LineProblem> {
    let malformed = |why: &str| LineProblem::Malformed(why.to_owned());
    if bytes.is_empty() {
        return Err(malformed("empty line"));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| malformed("not UTF-8"))?;
    let value: Value =
        serde_json::from_str(text).map_err(|e| LineProblem::Malformed(format!("not JSON: {e}")))?;
    let Value::Object(map) = &value else {
        return Err(malformed("not a JSON object"));
    };
    match map.get("v") {
        None => return Err(malformed("no \"v\" member")),
        Some(v) if v.as_u64() == Some(FORMAT_VERSION) => {}
        Some(v) => {
            return Err(LineProblem::Version {
                found: v.to_string(),
            });
        }
    }
    for name in map.keys() {
        if !MEMBERS.contains(&name.as_str()) {
            return Err(LineProblem::Malformed(format!(
                "unexpected member {name:?}"
            )));
        }
    }
    for name in MEMBERS {
        if !map.contains_key(name) {
            return Err(LineProblem::Malformed(format!("no {name:?} member")));
        }
    }
    let seq = map
        .get("seq")
        .and_then(Value::as_u64)
        .filter(|&s| s > 0)
        .ok_or_else(|| malformed("\"seq\" is not a positive integer"))?;
    let prev = hash_member(map, "prev")?;
    let stored = hash_member(map, "hash")?;
    let entry = map.get("entry").filter(|e| e.is_object());
    let entry = entry.ok_or_else(|| malformed("\"entry\" is not an object"))?;
    if canonical_json(&value) != text {
        return Err(LineProblem::NotCanonical);
    }
    if seq != expected_seq {
        return Err(LineProblem::SeqMismatch {
            expected: expected_seq,
            found: seq,
        });
    }
    if prev != expected_prev {
        return Err(LineProblem::PrevMismatch {
            expected: expected_prev.to_owned(),
            found: prev.to_owned(),
        });
    }
    let computed = line_hash(seq, prev, entry);
    if computed != stored {
        return Err(LineProblem::HashMismatch {
            stored: stored.to_owned(),
            computed,
        });
    }
    Ok(computed)
}

fn hash_member<'a>(map: &'a Map<String, Value>, name: &str) -> Result<&'a str, LineProblem> {
    map.get(name)
        .and_then(Value::as_str)
        .filter(|s| is_hash(s))
        .ok_or_else(|| LineProblem::Malformed(format!("{name:?} is not 64 lowercase hex digits")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hash_is_sha256_of_the_line_without_its_hash_member() {
        let entry = json!({"kind": "run_started", "run_id": "r1", "at_ms": 5, "data": {}});
        let (line, hash) = encode_line(1, GENESIS, &entry);
        let without = line
            .trim_end()
            .replace(&format!(",\"hash\":\"{hash}\""), "");
        assert_eq!(sha256_hex(without.as_bytes()), hash);
        assert_eq!(
            without,
            format!(
                "{{\"entry\":{{\"at_ms\":5,\"data\":{{}},\"kind\":\"run_started\",\"run_id\":\"r1\"}},\"prev\":\"{GENESIS}\",\"seq\":1,\"v\":1}}"
            )
        );
        assert_eq!(check_line(line.trim_end().as_bytes(), 1, GENESIS), Ok(hash));
    }

    /// The line as one value, in JCS: what [`encode_line`] puts together from parts.
    fn whole_line(seq: u64, prev: &str, entry: &Value) -> String {
        let mut body = Map::new();
        body.insert("entry".into(), entry.clone());
        body.insert("prev".into(), Value::from(prev));
        body.insert("seq".into(), Value::from(seq));
        body.insert("v".into(), Value::from(FORMAT_VERSION));
        let hash = sha256_hex(canonical_json(&Value::Object(body.clone())).as_bytes());
        body.insert("hash".into(), Value::from(hash));
        format!("{}\n", canonical_json(&Value::Object(body)))
    }

    #[test]
    fn the_line_put_together_is_the_canonical_line_value() {
        let entries = [
            json!({}),
            json!({"kind": "node_finished", "data": {"outputs": {"é": "a\"b\\c\n", "z": [1.5, -0.0, 1e21, null]}},
                   "at_ms": 1_700_000_000_000_i64, "actor": "ann", "prev": "x", "hash": "y"}),
            json!({"nested": {"b": {"a": [true, false, {"\u{1f600}": "\u{7f}"}]}}, "n": u64::MAX}),
        ];
        for (i, entry) in entries.iter().enumerate() {
            for (seq, prev) in [(1, GENESIS), (u64::MAX, "ab"), (42, "\"quoted\"")] {
                let (line, hash) = encode_line(seq, prev, entry);
                assert_eq!(line, whole_line(seq, prev, entry), "entry {i}, seq {seq}");
                assert_eq!(hash, line_hash(seq, prev, entry));
            }
        }
    }

    /// Any JSON value: strings of any characters, numbers of every kind, nesting.
    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            any::<String>().prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
                proptest::collection::btree_map(any::<String>(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn any_entry_makes_the_canonical_line_value(
            entry in any_json(), seq in proptest::prelude::any::<u64>(), prev in "[0-9a-f\"\\\\]{0,64}",
        ) {
            let (line, hash) = encode_line(seq, &prev, &entry);
            proptest::prop_assert_eq!(&line, &whole_line(seq, &prev, &entry));
            proptest::prop_assert_eq!(hash, line_hash(seq, &prev, &entry));
        }
    }

    #[test]
    fn a_newer_version_is_reported_as_such() {
        let line = format!(
            "{{\"entry\":{{}},\"hash\":\"{GENESIS}\",\"prev\":\"{GENESIS}\",\"seq\":1,\"v\":2}}"
        );
        assert_eq!(
            check_line(line.as_bytes(), 1, GENESIS),
            Err(LineProblem::Version { found: "2".into() })
        );
    }
}

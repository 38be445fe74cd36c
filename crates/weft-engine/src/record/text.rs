//! The run record as the text `weft run` writes to `records/<run id>.json` (what
//! `serde_json::to_string_pretty` makes of the record, and a newline), without the record
//! ever being one value tree: each node run and each `edges_taken` entry is rendered as it
//! is built ([`Items::Texts`]), so a 10,000-node record costs its text, not about six times
//! that in values (`docs/BENCHMARKS.md`, "`weft run` as the command: the record streamed").

use std::io::Write;

use serde_json::{Map, Value};

/// The node runs or the `edges_taken` entries of a record being built: values (the record
/// as a [`Value`], `build_record`) or their rendered text ([`RecordText`]).
pub(super) enum Items {
    Values(Vec<Value>),
    /// Each item as pretty JSON at the depth it has in the record (inside its array), in
    /// a box of its exact size: a 10,000-node record holds its node runs' text, no more.
    Texts(Vec<Box<str>>),
}

/// The depth of a node run or an edge in the record: the record's object, then the array.
const ITEM_DEPTH: usize = 2;

impl Items {
    pub(super) fn new(texts: bool) -> Items {
        if texts {
            Items::Texts(Vec::new())
        } else {
            Items::Values(Vec::new())
        }
    }

    pub(super) fn push(&mut self, item: Value) {
        match self {
            Items::Values(list) => list.push(item),
            // Copied into a fresh box: shrinking the printed string in place may keep its
            // whole block (mimalloc keeps a block shrunk by less than half).
            Items::Texts(list) => list.push(Box::from(pretty_at(&item, ITEM_DEPTH).as_str())),
        }
    }

    pub(super) fn extend(&mut self, items: impl IntoIterator<Item = Value>) {
        for item in items {
            self.push(item);
        }
    }

    /// The items as a JSON array (the text form parsed back).
    pub(super) fn into_value(self) -> Value {
        match self {
            Items::Values(list) => Value::Array(list),
            Items::Texts(list) => Value::Array(
                list.iter()
                    .map(|t| serde_json::from_str(t).unwrap_or(Value::Null))
                    .collect(),
            ),
        }
    }
}

/// `value` as `serde_json::to_string_pretty` writes it at `depth` inside a larger value: the
/// same text with every line after the first indented `depth` more levels (two spaces each;
/// every newline of pretty JSON is structural, a string's own newlines are escaped). Written
/// indented as it is printed, not printed and then copied with its newlines replaced.
fn pretty_at(value: &Value, depth: usize) -> String {
    let mut out = Indented {
        text: Vec::new(),
        depth,
    };
    // Writing a `Value` into memory cannot fail (its keys are strings).
    let _ = serde_json::to_writer_pretty(&mut out, value);
    String::from_utf8(out.text).unwrap_or_default()
}

/// Pretty JSON being written `depth` levels deeper than the printer thinks: each newline
/// it writes is followed by the extra indentation.
struct Indented {
    text: Vec<u8>,
    depth: usize,
}

impl Write for Indented {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // The printer writes each newline alone, before an indentation, and its other
        // pieces (punctuation, escaped strings, numbers) without one.
        if !buf.contains(&b'\n') {
            self.text.extend_from_slice(buf);
            return Ok(buf.len());
        }
        for line in buf.split_inclusive(|&b| b == b'\n') {
            self.text.extend_from_slice(line);
            if line.ends_with(b"\n") {
                for _ in 0..self.depth {
                    self.text.extend_from_slice(b"  ");
                }
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A run record ready to be written: its members in order, the node runs and the edges
/// already rendered. [`RecordText::write_pretty`] writes exactly what
/// `serde_json::to_string_pretty` makes of the same record as a [`Value`].
pub struct RecordText {
    /// The members before `nodes`.
    pub(super) head: Map<String, Value>,
    pub(super) nodes: Vec<Box<str>>,
    pub(super) edges: Vec<Box<str>>,
    /// The members after `edges_taken`.
    pub(super) tail: Map<String, Value>,
}

impl RecordText {
    /// The record's `status`.
    pub fn status(&self) -> Option<&str> {
        self.head.get("status").and_then(Value::as_str)
    }

    /// Writes the record as pretty JSON (no newline after it).
    pub fn write_pretty(&self, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(b"{")?;
        let mut first = true;
        let mut member = |out: &mut dyn Write, key: &str| -> std::io::Result<()> {
            out.write_all(if first { b"\n  " } else { b",\n  " })?;
            first = false;
            serde_json::to_writer(&mut *out, key)?;
            out.write_all(b": ")
        };
        for (key, value) in &self.head {
            member(out, key)?;
            out.write_all(pretty_at(value, 1).as_bytes())?;
        }
        for (key, items) in [("nodes", &self.nodes), ("edges_taken", &self.edges)] {
            member(out, key)?;
            write_array(out, items)?;
        }
        for (key, value) in &self.tail {
            member(out, key)?;
            out.write_all(pretty_at(value, 1).as_bytes())?;
        }
        out.write_all(if first { b"}" } else { b"\n}" })
    }
}

/// A member array of the record of rendered items, as the pretty printer writes it.
fn write_array(out: &mut dyn Write, items: &[Box<str>]) -> std::io::Result<()> {
    if items.is_empty() {
        return out.write_all(b"[]");
    }
    out.write_all(b"[")?;
    for (i, item) in items.iter().enumerate() {
        out.write_all(if i == 0 { b"\n    " } else { b",\n    " })?;
        out.write_all(item.as_bytes())?;
    }
    out.write_all(b"\n  ]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The text of `head`, `nodes`, `edges` and `tail` written by [`RecordText`], against
    /// what the pretty printer makes of the same record as one value.
    fn written_and_expected(head: Value, nodes: Vec<Value>, edges: Vec<Value>, tail: Value) {
        let (Value::Object(head), Value::Object(tail)) = (head, tail) else {
            panic!("head and tail are objects");
        };
        let mut whole = head.clone();
        whole.insert("nodes".into(), Value::Array(nodes.clone()));
        whole.insert("edges_taken".into(), Value::Array(edges.clone()));
        whole.extend(tail.clone());
        let (mut n, mut e) = (Items::new(true), Items::new(true));
        n.extend(nodes);
        e.extend(edges);
        let (Items::Texts(nodes), Items::Texts(edges)) = (n, e) else {
            panic!("asked for texts");
        };
        let text = RecordText {
            head,
            nodes,
            edges,
            tail,
        };
        let mut out = Vec::new();
        text.write_pretty(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            serde_json::to_string_pretty(&Value::Object(whole)).unwrap()
        );
    }

    #[test]
    fn the_written_record_is_the_pretty_printed_value() {
        written_and_expected(
            json!({"ags_version": "1.0", "status": "succeeded", "outputs": {},
                   "params": {"a": [1, 2.5, -3, null, true], "b": {"c": {"d": []}}},
                   "harness": {"supported_features": ["x", "y"]},
                   "context": {"text": "two\nlines \"quoted\" \u{e9}\t", "k\ney": 1e300}}),
            vec![
                json!({"node_id": "a", "outputs": {"s": "x\ny"}, "attempts": [{"n": 1}],
                       "usage": {"cost_usd": 0.1}}),
                json!({"node_id": "b", "inputs": {}, "x-weft-patches": []}),
            ],
            vec![],
            json!({"x-weft-signoffs": [{"criterion": "c", "at": "t"}]}),
        );
        written_and_expected(
            json!({"status": "failed"}),
            vec![],
            vec![json!({"from": "a"})],
            json!({}),
        );
    }
}

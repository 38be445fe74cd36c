//! The top-level members of a stored event payload as borrowed raw text: the audit entry
//! of a large payload (a `run_started` holds the whole document) parses only the members
//! its table reads, and takes the payload's digest from the text
//! (`weft_ags::digest::text_digest`), never building the payload as a `serde_json::Value`
//! in the store's writer thread while the driver still holds its own values of it.

use serde::de::{Deserializer as _, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// The top-level members of a JSON object text, each as its raw text; `None` when the text
/// is not an object.
pub fn object_members(text: &str) -> Option<Vec<(String, &RawValue)>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let members = de.deserialize_map(MembersVisitor).ok()?;
    de.end().ok()?;
    Some(members)
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

    #[test]
    fn members_are_raw_slices_in_text_order() {
        let members = object_members(r#"{"b": [1, 2], "a": {"x": 1}}"#).unwrap();
        let got: Vec<(&str, &str)> = members.iter().map(|(n, v)| (n.as_str(), v.get())).collect();
        assert_eq!(got, [("b", "[1, 2]"), ("a", r#"{"x": 1}"#)]);
        assert!(object_members("[1]").is_none());
    }
}

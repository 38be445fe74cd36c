//! Export: N-Quads (one quad per current edge, the named graph its provenance) and Markdown
//! (one file per entity, facts as wikilinks, for people who read memory in an editor).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use crate::error::{MemoryError, Result, SqliteContext};
use crate::memory::Memory;

/// The export formats of `weft memory export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    NQuads,
    Markdown,
}

const LABEL: &str = "<http://www.w3.org/2000/01/rdf-schema#label>";

/// An IRI-safe form of a predicate name: unreserved characters kept, others %-encoded.
fn iri_part(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// An N-Triples string literal.
fn literal(text: &str) -> String {
    let mut out = String::from("\"");
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A file name for an entity: its name with path-hostile characters replaced.
fn file_stem(name: &str) -> String {
    let stem: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.' | ',' | '(' | ')') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let stem = stem.trim().trim_start_matches('.').to_string();
    if stem.is_empty() {
        "_".to_string()
    } else {
        stem
    }
}

impl Memory {
    /// Writes the current edges as N-Quads: entities `<weft:entity/ID>` with their names as
    /// `rdfs:label`, predicates `<weft:predicate/NAME>`, each quad in the named graph
    /// `<weft:provenance/ID>` of its provenance.
    pub fn export_nquads(&self, out: &mut dyn Write) -> Result<usize> {
        let io = |e: std::io::Error| MemoryError::Refused(format!("writing the export: {e}"));
        let graph = self.graph();
        let mut labelled = vec![false; graph.entity_count()];
        let mut count = 0;
        for rec in &graph.edges {
            if !rec.current {
                continue;
            }
            for entity in [rec.s, rec.o] {
                if let Some(flag) = labelled.get_mut(entity as usize)
                    && !*flag
                {
                    *flag = true;
                    writeln!(
                        out,
                        "<weft:entity/{entity}> {LABEL} {} .",
                        literal(graph.name(entity))
                    )
                    .map_err(io)?;
                }
            }
            let predicate = graph.predicate(rec.p);
            writeln!(
                out,
                "<weft:entity/{}> <weft:predicate/{}> <weft:entity/{}> <weft:provenance/{}> .",
                rec.s,
                iri_part(predicate),
                rec.o,
                rec.provenance
            )
            .map_err(io)?;
            count += 1;
        }
        Ok(count)
    }

    /// Writes one Markdown file per entity that has edges into `dir`: its aliases, and its
    /// facts (current and closed, with validity and provenance) as `[[wikilinks]]`.
    /// Returns the number of files written.
    pub fn export_markdown(&self, dir: &Path) -> Result<usize> {
        let io = |e: std::io::Error| MemoryError::Refused(format!("writing the export: {e}"));
        std::fs::create_dir_all(dir).map_err(io)?;
        let triples = self.triples()?;
        let aliases: Vec<(i64, String, String)> = self.with_reader(|conn| {
            conn.prepare(
                "SELECT e.id, e.name, a.surface FROM aliases a JOIN entities e ON e.id = a.entity ORDER BY e.id, a.alias",
            )
            .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect())
            .ctx("reading aliases")
        })?;
        // One page per name: entities that share a canonical name (never merged) share a page.
        let mut pages: BTreeMap<String, String> = BTreeMap::new();
        let mut stems: BTreeMap<String, String> = BTreeMap::new();
        let stem_of = |name: &str, stems: &mut BTreeMap<String, String>| -> String {
            stems
                .entry(name.to_string())
                .or_insert_with(|| file_stem(name))
                .clone()
        };
        for (_, name, surface) in &aliases {
            let stem = stem_of(name, &mut stems);
            let page = pages
                .entry(stem)
                .or_insert_with(|| format!("# {name}\n\nAliases:"));
            let _ = write!(page, " {surface};");
        }
        for t in &triples {
            let subject = stem_of(&t.subject, &mut stems);
            let object = stem_of(&t.object, &mut stems);
            let mut line = format!("\n- {} [[{object}]]", t.predicate);
            if let Some(from) = t.valid_from {
                let _ = write!(line, " (valid from {from}");
                match t.valid_to {
                    Some(to) => {
                        let _ = write!(line, " to {to})");
                    }
                    None => line.push(')'),
                }
            } else if let Some(to) = t.valid_to {
                let _ = write!(line, " (valid until {to})");
            }
            if t.retired_at.is_some() {
                line.push_str(" (retired)");
            }
            let _ = write!(line, " — p:{}", t.provenance);
            let page = pages
                .entry(subject)
                .or_insert_with(|| format!("# {}\n", t.subject));
            if !page.contains("\n\n## Facts") {
                page.push_str("\n\n## Facts");
            }
            page.push_str(&line);
        }
        for (stem, page) in &pages {
            let mut file = std::fs::File::create(dir.join(format!("{stem}.md"))).map_err(io)?;
            file.write_all(page.as_bytes()).map_err(io)?;
            file.write_all(b"\n").map_err(io)?;
        }
        Ok(pages.len())
    }
}

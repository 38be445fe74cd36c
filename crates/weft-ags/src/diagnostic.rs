//! Findings: the one data model every check produces and every renderer consumes.
//!
//! A [`Finding`] is data, never an error value: loading and validation always finish and
//! return everything they found in one pass. Renderers (human, JSON) live in the CLI.

use serde::Serialize;
use std::fmt;

/// How much a finding matters. `--strict` turns warnings (and refusals) into failures
/// (exit code 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// weft's own authoring advice (`WF9xx`): never fails `--strict`, only `--pedantic`.
    Info,
    /// Advisory: the document is usable, but something is probably wrong.
    Warning,
    /// weft's own refusal (`WF1xx`): the document is valid AGS, but this weft will not run
    /// it (a subgraph `ref` it does not fetch, a child it cannot read). Not the spec's
    /// verdict: it never makes a document invalid; `weft run` refuses it before anything
    /// runs.
    Refusal,
    /// The document must not be planned or run.
    Error,
}

impl Severity {
    /// The lowercase name used in JSON output and run records.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Refusal => "refusal",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! codes {
    ($( $code:ident => $sev:ident, $title:literal; )*) => {
        /// Every diagnostic code weft emits: the AGS 1.0 catalogue (`AGnnn`, SPEC §18.1)
        /// plus weft's own refusals (`WF1nn`) and advice (`WF9nn`). Each is explained in
        /// `docs/diagnostics.md`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $( #[doc = $title] $code, )* }

        impl Code {
            /// All codes, in catalogue order.
            pub const ALL: &'static [Code] = &[ $( Code::$code, )* ];

            /// The code as written in documents and output, e.g. `"AG111"`.
            pub fn as_str(self) -> &'static str {
                match self { $( Code::$code => stringify!($code), )* }
            }

            /// The severity the catalogue assigns to this code.
            pub fn severity(self) -> Severity {
                match self { $( Code::$code => Severity::$sev, )* }
            }

            /// A one-line title of what the code means.
            pub fn title(self) -> &'static str {
                match self { $( Code::$code => $title, )* }
            }

            /// Parses `"AG111"` (case-sensitive) back into a code.
            pub fn parse(s: &str) -> Option<Code> {
                match s { $( stringify!($code) => Some(Code::$code), )* _ => None }
            }
        }
    };
}

codes! {
    AG001 => Error, "document fails the JSON Schema or cannot be parsed";
    AG002 => Error, "unsupported ags_version";
    AG003 => Error, "unrecognised non-x- field";
    AG004 => Error, "unknown enum value";
    AG005 => Error, "duplicate mapping key";
    AG101 => Error, "type block does not match the node type";
    AG102 => Error, "gate node declares intelligence";
    AG103 => Error, "sequence edge declares when";
    AG104 => Error, "input declares more than one of from/template/value";
    AG111 => Error, "cycle in the effective edge set";
    AG112 => Error, "entrypoint has incoming edges";
    AG113 => Error, "reference to an unknown node";
    AG114 => Error, "depends_on names an unknown node";
    AG115 => Error, "entrypoint is not a node of the graph";
    AG116 => Error, "join_count exceeds the incoming edges";
    AG117 => Error, "reserved node id";
    AG121 => Error, "expression branch without when";
    AG122 => Error, "reserved output name decision declared";
    AG123 => Error, "default_branch is not a declared label";
    AG124 => Error, "duplicate branch labels";
    AG131 => Error, "recursive subgraph reference";
    AG132 => Error, "use names an unknown fragment";
    AG133 => Error, "fragment entrypoint is not a node of the fragment";
    AG141 => Error, "tier and level disagree";
    AG142 => Error, "escalate_to is below the tier";
    AG151 => Error, "alternate node lacks required outputs";
    AG152 => Error, "compensation node declares its own compensation";
    AG153 => Error, "fallback names an unknown criterion or output";
    AG201 => Error, "reads outputs of a node that is not a transitive predecessor";
    AG202 => Error, "fragment expression reads outside the fragment";
    AG203 => Error, "undeclared name";
    AG204 => Error, "invalid expression";
    AG205 => Error, "expression references secrets";
    AG206 => Error, "undeclared output";
    AG211 => Error, "interpolation in expression position";
    AG301 => Error, "missing required param";
    AG302 => Error, "param value fails enum or schema";
    AG303 => Error, "graph needs a higher conformance level";
    AG901 => Warning, "edge declared by both depends_on and edges";
    AG902 => Warning, "side-effecting node declares no success block";
    AG903 => Warning, "node unreachable from any entrypoint";
    AG904 => Warning, "output never read";
    AG905 => Warning, "frontier-tier node without rationale";
    AG906 => Warning, "success has no deterministic required criterion";
    AG907 => Warning, "strict determinism without a seed";
    AG908 => Warning, "cost cannot be previewed";
    AG909 => Warning, "non-local subgraph reference without integrity";
    WF101 => Refusal, "subgraph ref is not a local file";
    WF102 => Refusal, "referenced document cannot be read";
    WF103 => Refusal, "referenced document is outside the project";
    WF104 => Refusal, "subgraph references nest deeper than max_subgraph_depth";
    WF105 => Refusal, "too many subgraph references";
    WF901 => Info, "under-specified brief";
    WF902 => Info, "only artifact_present gates a standard-or-higher node";
    WF903 => Info, "judge-only or single-sample judge gates a fan-out";
    WF904 => Info, "tier inflation: no node uses the minimal tier";
    WF905 => Info, "tier deflation: a minimal node is asked to decide";
    WF906 => Info, "depends_on without matching data flow";
    WF907 => Info, "external criterion is not portable";
    WF908 => Info, "permissive container whose children declare nothing";
    WF909 => Info, "expression is certainly ill-typed";
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One problem found in a document.
///
/// `pointer` is an RFC 6901 JSON Pointer into the parsed document (`""` is the root);
/// `line`/`column` are 1-based positions in the source text, when the source is known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    pub pointer: String,
    pub line: Option<u32>,
    pub column: Option<u32>,
    /// How to fix it, in one sentence. Omitted from JSON when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// For a problem inside a string value (an expression, a template hole): the text at
    /// the problem, so the position can point into the value rather than at its key.
    #[serde(skip)]
    pub anchor: Option<String>,
    /// Characters from the start of `anchor` to the problem: the anchor is the start of a
    /// path (distinctive), the problem one of its words (`chek` in `nodes.chek.outputs.x`).
    #[serde(skip)]
    pub anchor_shift: u32,
}

impl Finding {
    /// A finding with the catalogue severity of `code`, no position yet.
    pub fn new(code: Code, pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Finding {
            code,
            severity: code.severity(),
            message: message.into(),
            pointer: pointer.into(),
            line: None,
            column: None,
            help: None,
            anchor: None,
            anchor_shift: 0,
        }
    }

    /// Points the position at `text` inside the string value at `pointer` (the first
    /// occurrence at or after the value's start); the key's position is the fallback.
    pub fn anchored(self, text: &str) -> Self {
        self.anchored_at(text, 0)
    }

    /// Like [`Finding::anchored`], with the position `shift` characters after the start of
    /// `text` (on the same line: the caller keeps line breaks out of the shifted part).
    pub fn anchored_at(mut self, text: &str, shift: usize) -> Self {
        let snippet: String = text.lines().next().unwrap_or("").chars().take(32).collect();
        if !snippet.trim().is_empty() {
            self.anchor = Some(snippet);
            self.anchor_shift = u32::try_from(shift).unwrap_or(0);
        }
        self
    }

    /// Adds the one-sentence fix.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Sets the source position explicitly (the loader knows it before a pointer exists).
    pub fn at(mut self, line: u32, column: u32) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self
    }

    /// Is this an error (as opposed to an advisory)?
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Appends `segment` to a JSON Pointer, escaping `~` and `/` (RFC 6901).
pub fn pointer_push(base: &str, segment: &str) -> String {
    let mut out = String::with_capacity(base.len() + segment.len() + 1);
    pointer_push_into(&mut out, base, segment);
    out
}

/// [`pointer_push`] into `out` (cleared first), reusing its allocation.
pub fn pointer_push_into(out: &mut String, base: &str, segment: &str) {
    out.clear();
    out.push_str(base);
    out.push('/');
    for c in segment.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_their_names() {
        for &code in Code::ALL {
            assert_eq!(Code::parse(code.as_str()), Some(code));
        }
        assert_eq!(Code::parse("AG999"), None);
    }

    #[test]
    fn advisories_are_warnings_advice_is_info_refusals_weft_s_and_the_rest_errors() {
        for &code in Code::ALL {
            let expected = match &code.as_str()[..3] {
                "AG9" => Severity::Warning,
                "WF9" => Severity::Info,
                "WF1" => Severity::Refusal,
                _ => Severity::Error,
            };
            assert_eq!(code.severity(), expected, "{code}");
        }
    }

    #[test]
    fn pointer_segments_are_escaped() {
        assert_eq!(pointer_push("/nodes", "a/b~c"), "/nodes/a~1b~0c");
        assert_eq!(pointer_push("", "nodes"), "/nodes");
    }
}

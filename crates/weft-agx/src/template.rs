//! `${{ expr }}` templates: parsing, detection and rendering.
//!
//! A hole starts at `${{` and ends at the first `}}` after it (as in the reference
//! validator, so a hole cannot contain `}}`). The spec has no escape; weft adds one: `$${{`
//! is the literal text `${{`. At every position the escape is recognised before a hole, so
//! `$${{ x }}` renders as `${{ x }}`. Nothing else is special: a lone `$`, `$$` or `}}` is
//! literal text.

use crate::ast::Expr;
use crate::context::Context;
use crate::error::ParseError;
use crate::eval::{EvalError, eval};
use crate::parser::{MAX_SOURCE_LEN, parse};
use crate::value::stringify;

/// A piece of a template.
#[derive(Clone, Debug, PartialEq)]
pub enum Segment {
    /// Literal text (escapes already resolved).
    Text(String),
    /// A `${{ expr }}` hole.
    Hole {
        /// The parsed expression; its spans are relative to `source`.
        expr: Expr,
        /// The hole's expression text, without the surrounding whitespace.
        source: String,
        /// Byte offset of `source` within the template.
        offset: usize,
    },
}

/// A parsed template: text and holes in order, with no two `Text` segments adjacent.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Template {
    /// The segments in order.
    pub segments: Vec<Segment>,
}

impl Template {
    /// The holes' expressions with their offsets in the template.
    pub fn holes(&self) -> impl Iterator<Item = (&Expr, usize)> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Hole { expr, offset, .. } => Some((expr, *offset)),
            Segment::Text(_) => None,
        })
    }
}

const OPEN: &str = "${{";
const ESCAPE: &str = "$${{";
const CLOSE: &str = "}}";

/// One step of the template scanner.
enum Piece {
    /// `$${{` at this offset.
    Escape(usize),
    /// `${{` at this offset.
    Open(usize),
}

/// Finds the next escape or hole opener at or after `from`.
fn next_piece(src: &str, from: usize) -> Option<Piece> {
    let rest = src.get(from..)?;
    let at = rest.find(OPEN)?;
    // `${{` preceded by a `$` that is itself not consumed is an escape. Because the search
    // moves left to right and stops at the first `${{`, checking the byte before it is
    // enough: `$${{` always contains the first `${{` one byte in.
    let abs = from + at;
    if abs > from && src.as_bytes().get(abs - 1) == Some(&b'$') {
        Some(Piece::Escape(abs - 1))
    } else {
        Some(Piece::Open(abs))
    }
}

/// Parses a template. Errors carry offsets relative to the template string.
pub fn parse_template(src: &str) -> Result<Template, ParseError> {
    if src.len() > MAX_SOURCE_LEN {
        return Err(ParseError::new(
            format!("template is longer than {MAX_SOURCE_LEN} bytes"),
            MAX_SOURCE_LEN,
        ));
    }
    let mut segments = Vec::new();
    let mut text = String::new();
    let mut pos = 0;
    while let Some(piece) = next_piece(src, pos) {
        match piece {
            Piece::Escape(at) => {
                text.push_str(&src[pos..at]);
                text.push_str(OPEN);
                pos = at + ESCAPE.len();
            }
            Piece::Open(at) => {
                text.push_str(&src[pos..at]);
                let inner_start = at + OPEN.len();
                let Some(len) = src[inner_start..].find(CLOSE) else {
                    return Err(ParseError::new("unterminated '${{' (missing '}}')", at));
                };
                let inner = &src[inner_start..inner_start + len];
                let trimmed = inner.trim_start();
                let offset = inner_start + (inner.len() - trimmed.len());
                let source = trimmed.trim_end();
                if source.is_empty() {
                    return Err(ParseError::new("empty '${{ }}' interpolation", at));
                }
                let expr = parse(source).map_err(|e| e.shifted(offset))?;
                if !text.is_empty() {
                    segments.push(Segment::Text(std::mem::take(&mut text)));
                }
                segments.push(Segment::Hole {
                    expr,
                    source: source.to_string(),
                    offset,
                });
                pos = inner_start + len + CLOSE.len();
            }
        }
    }
    text.push_str(&src[pos..]);
    if !text.is_empty() {
        segments.push(Segment::Text(text));
    }
    Ok(Template { segments })
}

/// The byte offset of the first unescaped `${{` in `src`, if any (AG211 in expression
/// positions). An escaped `$${{` does not count.
pub fn has_interpolation(src: &str) -> Option<usize> {
    let mut pos = 0;
    while let Some(piece) = next_piece(src, pos) {
        match piece {
            Piece::Escape(at) => pos = at + ESCAPE.len(),
            Piece::Open(at) => return Some(at),
        }
    }
    None
}

/// Renders a template: text as-is, holes evaluated and [`stringify`]d. Error spans are
/// relative to the template string.
pub fn render(template: &Template, ctx: &dyn Context) -> Result<String, EvalError> {
    let mut out = String::new();
    for segment in &template.segments {
        match segment {
            Segment::Text(text) => out.push_str(text),
            Segment::Hole { expr, offset, .. } => {
                let value = eval(expr, ctx).map_err(|e| EvalError {
                    span: e.span.shifted(*offset),
                    message: e.message,
                })?;
                out.push_str(&stringify(&value));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Span;
    use crate::context::MapContext;
    use serde_json::json;

    fn ctx() -> MapContext {
        MapContext::from_value(json!({
            "params": {"name": "world", "n": 2, "f": 1.0, "l": [1, 2.5], "z": null, "b": true},
        }))
    }

    fn show(src: &str) -> String {
        render(&parse_template(src).unwrap(), &ctx()).unwrap()
    }

    #[test]
    fn segments() {
        let t = parse_template("Hello ${{ params.name }}!").unwrap();
        assert_eq!(t.segments.len(), 3);
        assert_eq!(t.segments[0], Segment::Text("Hello ".into()));
        let Segment::Hole {
            expr,
            source,
            offset,
        } = &t.segments[1]
        else {
            panic!("not a hole")
        };
        assert_eq!(source, "params.name");
        assert_eq!(*offset, 10);
        assert_eq!(
            &"Hello ${{ params.name }}!"[*offset..*offset + source.len()],
            source
        );
        assert_eq!(expr.span(), Span::new(0, 11));
        assert_eq!(t.segments[2], Segment::Text("!".into()));
        assert_eq!(t.holes().count(), 1);
        assert_eq!(parse_template("").unwrap().segments, vec![]);
        assert_eq!(
            parse_template("plain } }} $ $$ {{").unwrap().segments,
            vec![Segment::Text("plain } }} $ $$ {{".into())]
        );
        let t = parse_template("${{a}}${{b}}").unwrap();
        assert_eq!(t.holes().map(|(_, o)| o).collect::<Vec<_>>(), vec![3, 9]);
    }

    #[test]
    fn rendering() {
        assert_eq!(show("Hello ${{ params.name }}!"), "Hello world!");
        assert_eq!(show("${{params.n + 1}}"), "3");
        assert_eq!(show("[${{ params.z }}]"), "[]");
        assert_eq!(
            show("${{ params.f }} ${{ params.b }} ${{ params.l }}"),
            "1 true [1,2.5]"
        );
        assert_eq!(show("${{ 7 / 2 }}"), "3.5");
        assert_eq!(show("${{ '{{' }}"), "{{");
        assert_eq!(show("a${{ '}' }}b"), "a}b");
        assert_eq!(show("no holes"), "no holes");
    }

    #[test]
    fn escapes() {
        assert_eq!(show("$${{ not a hole }}"), "${{ not a hole }}");
        assert_eq!(
            parse_template("$${{ x }}").unwrap().segments,
            vec![Segment::Text("${{ x }}".into())]
        );
        assert_eq!(show("$${{ x }} ${{ params.n }}"), "${{ x }} 2");
        assert_eq!(show("$$${{ x }}"), "$${{ x }}");
        assert_eq!(show("$ ${{ params.n }}"), "$ 2");
        assert_eq!(show("$${{$${{"), "${{${{");
        assert_eq!(show("${{ params.n }}$${{"), "2${{");
    }

    #[test]
    fn errors() {
        let e = parse_template("a ${{ b").unwrap_err();
        assert_eq!(e.offset, 2);
        assert_eq!(e.message, "unterminated '${{' (missing '}}') at offset 2");
        let e = parse_template("x ${{   }} y").unwrap_err();
        assert_eq!(e.offset, 2);
        assert!(e.message.starts_with("empty '${{ }}' interpolation"));
        assert_eq!(parse_template("${{}}").unwrap_err().offset, 0);
        // Hole errors are re-anchored to the template.
        let e = parse_template("abc ${{ 1 + }}").unwrap_err();
        assert_eq!(e.message, "unexpected end of expression at offset 11");
        assert_eq!(e.offset, 11);
        let e = parse_template("ok ${{ x }} then ${{ a = b }}").unwrap_err();
        assert_eq!(e.offset, 23);
        assert_eq!(e.message, "unexpected character '=' at offset 23");
        // A `}}` inside a string ends the hole early, as in the reference.
        assert!(parse_template("${{ '}}' }}").is_err());
        assert!(parse_template(&"a".repeat(MAX_SOURCE_LEN + 1)).is_err());
    }

    #[test]
    fn render_errors_point_into_the_template() {
        let t = parse_template("n = ${{ params.n + 'x' }}").unwrap();
        let e = render(&t, &ctx()).unwrap_err();
        assert_eq!(e.span, Span::new(8, 22));
        let t = parse_template("${{ missing.name }}").unwrap();
        let e = render(&t, &ctx()).unwrap_err();
        assert_eq!(e.message, "unknown name 'missing.name'");
        assert_eq!(e.span, Span::new(4, 16));
    }

    #[test]
    fn interpolation_detection() {
        assert_eq!(has_interpolation("true"), None);
        assert_eq!(has_interpolation("${{ true }}"), Some(0));
        assert_eq!(has_interpolation("a == '${{ x }}'"), Some(6));
        assert_eq!(has_interpolation("$${{ x }}"), None);
        assert_eq!(has_interpolation("$${{ x }} ${{"), Some(10));
        assert_eq!(has_interpolation("$$${{"), None);
        assert_eq!(has_interpolation("${ {"), None);
        assert_eq!(has_interpolation("{{ x }}"), None);
    }
}

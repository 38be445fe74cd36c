//! The AGX parser: tokens to [`Expr`], following the grammar of DIGEST §2.2.
//!
//! Binary operators are parsed by precedence climbing, which is equivalent to the
//! or/and/in/eq/cmp/add/mul cascade of the spec but recurses once per parenthesis rather than
//! once per level, keeping stack use small. Two limits keep every later pass (evaluation,
//! analysis, printing, dropping) safe from stack overflow: sources over
//! [`MAX_SOURCE_LEN`] bytes are rejected, and so is any tree deeper than [`MAX_DEPTH`]
//! (a left-associative chain `a + b + c ...` counts one level per operator, because that is
//! how deep the tree it builds is).

use serde_json::Value;

use crate::ast::{BinaryOp, Expr, Span, UnaryOp};
use crate::error::ParseError;
use crate::lexer::{Keyword, Sym, Token, TokenKind, keyword_literal, tokenize};

/// The longest accepted expression or template source, in bytes (64 KiB).
pub const MAX_SOURCE_LEN: usize = 64 * 1024;

/// The deepest accepted syntax tree (and the deepest bracket nesting).
pub const MAX_DEPTH: usize = 128;

/// Parses one AGX expression (the whole of `src`).
pub fn parse(src: &str) -> Result<Expr, ParseError> {
    if src.len() > MAX_SOURCE_LEN {
        return Err(ParseError::new(
            format!("expression is longer than {MAX_SOURCE_LEN} bytes"),
            MAX_SOURCE_LEN,
        ));
    }
    let tokens = tokenize(src)?;
    let mut parser = Parser {
        src,
        tokens,
        pos: 0,
        nesting: 0,
    };
    let (expr, _) = parser.expression()?;
    let tok = parser.peek();
    if tok.kind != TokenKind::Eof {
        return Err(ParseError::new(
            format!("trailing input at token {}", parser.describe(tok)),
            tok.start,
        ));
    }
    Ok(expr)
}

/// An expression together with the depth of its tree.
type Parsed = (Expr, usize);

struct Parser<'a> {
    src: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    /// Current bracket/parenthesis/call nesting, which is what the recursion follows.
    nesting: usize,
}

impl Parser<'_> {
    fn peek(&self) -> &Token {
        // The token list always ends with Eof and `pos` never moves past it.
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn advance(&mut self) -> Token {
        let tok = self.peek().clone();
        if tok.kind != TokenKind::Eof {
            self.pos += 1;
        }
        tok
    }

    fn at_sym(&self, sym: Sym) -> bool {
        self.peek().kind == TokenKind::Sym(sym)
    }

    /// `'x'` for a token in messages: its source text, shortened if long.
    fn describe(&self, tok: &Token) -> String {
        if tok.kind == TokenKind::Eof {
            return "end of expression".to_string();
        }
        let text = self.src.get(tok.start..tok.end).unwrap_or("");
        let mut short: String = text.chars().take(32).collect();
        if short.len() < text.len() {
            short.push('…');
        }
        format!("'{short}'")
    }

    fn too_deep(at: usize) -> ParseError {
        ParseError::new(
            format!("expression is nested more than {MAX_DEPTH} levels deep"),
            at,
        )
    }

    fn check_depth(depth: usize, at: usize) -> Result<(), ParseError> {
        if depth > MAX_DEPTH {
            Err(Self::too_deep(at))
        } else {
            Ok(())
        }
    }

    fn expression(&mut self) -> Result<Parsed, ParseError> {
        self.binary(1)
    }

    fn binary_op(&self) -> Option<BinaryOp> {
        Some(match self.peek().kind {
            TokenKind::Keyword(Keyword::Or) | TokenKind::Sym(Sym::OrOr) => BinaryOp::Or,
            TokenKind::Keyword(Keyword::And) | TokenKind::Sym(Sym::AndAnd) => BinaryOp::And,
            TokenKind::Keyword(Keyword::In) => BinaryOp::In,
            TokenKind::Sym(Sym::EqEq) => BinaryOp::Eq,
            TokenKind::Sym(Sym::NotEq) => BinaryOp::Ne,
            TokenKind::Sym(Sym::Lt) => BinaryOp::Lt,
            TokenKind::Sym(Sym::Le) => BinaryOp::Le,
            TokenKind::Sym(Sym::Gt) => BinaryOp::Gt,
            TokenKind::Sym(Sym::Ge) => BinaryOp::Ge,
            TokenKind::Sym(Sym::Plus) => BinaryOp::Add,
            TokenKind::Sym(Sym::Minus) => BinaryOp::Sub,
            TokenKind::Sym(Sym::Star) => BinaryOp::Mul,
            TokenKind::Sym(Sym::Slash) => BinaryOp::Div,
            TokenKind::Sym(Sym::Percent) => BinaryOp::Rem,
            _ => return None,
        })
    }

    /// Precedence climbing: parses operators binding at least as tightly as `min_prec`.
    fn binary(&mut self, min_prec: u8) -> Result<Parsed, ParseError> {
        let (mut left, mut depth) = self.unary()?;
        while let Some(op) = self.binary_op() {
            let prec = op.precedence();
            if prec < min_prec {
                break;
            }
            let op_at = self.advance().start;
            // Left-associative: the right operand only takes tighter operators.
            let (right, right_depth) = self.binary(prec + 1)?;
            depth = depth.max(right_depth) + 1;
            Self::check_depth(depth, op_at)?;
            let span = left.span().to(right.span());
            left = Expr::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
                span,
            };
        }
        Ok((left, depth))
    }

    fn unary(&mut self) -> Result<Parsed, ParseError> {
        // Prefix operators are collected in a loop (not by recursion) so that a long run
        // of `!!!!` cannot exhaust the stack before the depth limit is checked.
        let mut ops = Vec::new();
        loop {
            let op = match self.peek().kind {
                TokenKind::Sym(Sym::Bang) | TokenKind::Keyword(Keyword::Not) => UnaryOp::Not,
                TokenKind::Sym(Sym::Minus) => UnaryOp::Neg,
                _ => break,
            };
            let start = self.advance().start;
            if ops.len() >= MAX_DEPTH {
                return Err(Self::too_deep(start));
            }
            ops.push((op, start));
        }
        let (mut expr, mut depth) = self.primary()?;
        for (op, start) in ops.into_iter().rev() {
            depth += 1;
            Self::check_depth(depth, start)?;
            let span = Span::new(start, expr.span().end);
            expr = Expr::Unary {
                op,
                operand: Box::new(expr),
                span,
            };
        }
        Ok((expr, depth))
    }

    fn enter(&mut self, at: usize) -> Result<(), ParseError> {
        self.nesting += 1;
        if self.nesting > MAX_DEPTH {
            return Err(Self::too_deep(at));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.nesting = self.nesting.saturating_sub(1);
    }

    fn expect_close(&mut self, close: Sym, what: &str) -> Result<usize, ParseError> {
        let tok = self.peek();
        if tok.kind == TokenKind::Sym(close) {
            Ok(self.advance().end)
        } else {
            Err(ParseError::new(
                format!("expected {what}, found {}", self.describe(tok)),
                tok.start,
            ))
        }
    }

    /// `expression ("," expression)*` up to `close`, which is consumed. Returns the items,
    /// their maximum depth and the end offset of `close`.
    fn list(
        &mut self,
        close: Sym,
        close_text: &str,
    ) -> Result<(Vec<Expr>, usize, usize), ParseError> {
        let mut items = Vec::new();
        let mut depth = 0;
        if self.at_sym(close) {
            let end = self.advance().end;
            return Ok((items, depth, end));
        }
        loop {
            let (item, d) = self.expression()?;
            depth = depth.max(d);
            items.push(item);
            if self.at_sym(Sym::Comma) {
                self.advance();
                continue;
            }
            let end = self.expect_close(close, &format!("',' or '{close_text}'"))?;
            return Ok((items, depth, end));
        }
    }

    fn primary(&mut self) -> Result<Parsed, ParseError> {
        let tok = self.advance();
        let span = Span::new(tok.start, tok.end);
        match tok.kind {
            TokenKind::Number(n) => Ok((
                Expr::Literal {
                    value: Value::Number(n),
                    span,
                },
                1,
            )),
            TokenKind::Str(s) => Ok((
                Expr::Literal {
                    value: Value::String(s),
                    span,
                },
                1,
            )),
            TokenKind::Keyword(k) => match keyword_literal(k) {
                Some(value) => Ok((Expr::Literal { value, span }, 1)),
                None => Err(ParseError::new(
                    format!("unexpected keyword '{}'", k.as_str()),
                    tok.start,
                )),
            },
            TokenKind::Sym(Sym::LParen) => {
                self.enter(tok.start)?;
                let inner = self.expression()?;
                self.expect_close(Sym::RParen, "')'")?;
                self.leave();
                Ok(inner)
            }
            TokenKind::Sym(Sym::LBracket) => {
                self.enter(tok.start)?;
                let (items, depth, end) = self.list(Sym::RBracket, "]")?;
                self.leave();
                let depth = depth + 1;
                Self::check_depth(depth, tok.start)?;
                Ok((
                    Expr::Array {
                        items,
                        span: Span::new(tok.start, end),
                    },
                    depth,
                ))
            }
            TokenKind::Ident(name) => self.name(name, span),
            TokenKind::Eof => Err(ParseError::new("unexpected end of expression", tok.start)),
            TokenKind::Sym(_) => Err(ParseError::new(
                format!("unexpected token {}", self.describe(&tok)),
                tok.start,
            )),
        }
    }

    /// A call `f(...)` or a dotted path `a.b.c`, after its first identifier.
    fn name(&mut self, name: String, name_span: Span) -> Result<Parsed, ParseError> {
        if self.at_sym(Sym::LParen) {
            self.advance();
            self.enter(name_span.start)?;
            let (args, depth, end) = self.list(Sym::RParen, ")")?;
            self.leave();
            let depth = depth + 1;
            Self::check_depth(depth, name_span.start)?;
            return Ok((
                Expr::Call {
                    name,
                    args,
                    span: Span::new(name_span.start, end),
                    name_span,
                },
                depth,
            ));
        }
        let mut segments = vec![name];
        let mut end = name_span.end;
        while self.at_sym(Sym::Dot) {
            self.advance();
            let tok = self.peek();
            // Any identifier-shaped word is a segment here, keywords included: node ids
            // such as `in` or `not` are legal and must be reachable as paths.
            let segment = match &tok.kind {
                TokenKind::Ident(s) => s.clone(),
                TokenKind::Keyword(k) => k.as_str().to_string(),
                _ => {
                    return Err(ParseError::new(
                        format!(
                            "expected identifier after '.', found {}",
                            self.describe(tok)
                        ),
                        tok.start,
                    ));
                }
            };
            end = tok.end;
            self.advance();
            segments.push(segment);
        }
        let tok = self.peek();
        if tok.kind == TokenKind::Sym(Sym::LParen) {
            return Err(ParseError::new(
                "unexpected token '(': only a bare function name can be called",
                tok.start,
            ));
        }
        if tok.kind == TokenKind::Sym(Sym::LBracket) {
            return Err(ParseError::new(
                "unexpected token '[': AGX has no indexing (use get())",
                tok.start,
            ));
        }
        Ok((
            Expr::Path {
                segments,
                span: Span::new(name_span.start, end),
            },
            1,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The canonical, fully parenthesised form of a parse.
    fn p(src: &str) -> String {
        match parse(src) {
            Ok(e) => e.to_string(),
            Err(e) => panic!("{src}: {e}"),
        }
    }

    fn err(src: &str) -> ParseError {
        match parse(src) {
            Ok(e) => panic!("{src} parsed as {e}"),
            Err(e) => e,
        }
    }

    #[test]
    fn minus_pitfalls() {
        assert_eq!(p("x-1"), "(x - 1)");
        assert_eq!(p("1-2"), "(1 - 2)");
        assert_eq!(p("loop.iteration -1"), "(loop.iteration - 1)");
        assert_eq!(p("loop.iteration - -1"), "(loop.iteration - (-1))");
        assert_eq!(p("-1"), "(-1)");
        assert_eq!(p("- -x"), "(-(-x))");
        assert_eq!(p("2--1"), "(2 - (-1))");
        // A hyphenated node id is subtraction of two paths, as in the reference.
        assert_eq!(p("nodes.my-a.outputs.o"), "(nodes.my - a.outputs.o)");
    }

    #[test]
    fn numbers() {
        assert_eq!(p("1e3"), "1000.0");
        assert_eq!(p("1E+3"), "1000.0");
        assert_eq!(p("2.5e-3"), "0.0025");
        assert_eq!(p("0.5"), "0.5");
        assert_eq!(p("007"), "7");
        assert_eq!(err(".5").offset, 0);
        assert_eq!(err("1.").offset, 1);
        assert_eq!(err("x * .5").offset, 4);
    }

    #[test]
    fn precedence_table() {
        // Each line: tighter level on the right binds first.
        assert_eq!(p("a || b && c"), "(a || (b && c))");
        assert_eq!(p("a && b in c"), "(a && (b in c))");
        assert_eq!(p("a in b == c"), "(a in (b == c))");
        assert_eq!(p("a == b < c"), "(a == (b < c))");
        assert_eq!(p("a < b + c"), "(a < (b + c))");
        assert_eq!(p("a + b * c"), "(a + (b * c))");
        assert_eq!(p("a * -b"), "(a * (-b))");
        assert_eq!(p("a * b + c"), "((a * b) + c)");
        assert_eq!(p("a or b and c"), "(a || (b && c))");
        assert_eq!(p("(a || b) && c"), "((a || b) && c)");
        // Left associativity at every level.
        assert_eq!(p("a || b || c"), "((a || b) || c)");
        assert_eq!(p("a and b and c"), "((a && b) && c)");
        assert_eq!(p("a in b in c"), "((a in b) in c)");
        assert_eq!(p("a == b != c"), "((a == b) != c)");
        assert_eq!(p("1 < 2 < 3"), "((1 < 2) < 3)");
        assert_eq!(p("a <= b >= c > d"), "(((a <= b) >= c) > d)");
        assert_eq!(p("a - b + c"), "((a - b) + c)");
        assert_eq!(p("a / b * c % d"), "(((a / b) * c) % d)");
        // Unary binds tightest.
        assert_eq!(p("not a in b"), "((!a) in b)");
        assert_eq!(p("!a && b"), "((!a) && b)");
        assert_eq!(p("-a * b"), "((-a) * b)");
        assert_eq!(p("not not a"), "(!(!a))");
    }

    #[test]
    fn primaries() {
        assert_eq!(p("null"), "null");
        assert_eq!(p("true"), "true");
        assert_eq!(p("false"), "false");
        assert_eq!(p("'a\"b'"), r#""a\"b""#);
        assert_eq!(p("[]"), "[]");
        assert_eq!(p("[1, 'a', [true]]"), r#"[1, "a", [true]]"#);
        assert_eq!(p("f()"), "f()");
        assert_eq!(p("get(a.b, 'c', 1 + 2)"), r#"get(a.b, "c", (1 + 2))"#);
        assert_eq!(p("nodes.in.outputs.and"), "nodes.in.outputs.and");
        assert_eq!(p("a.true.null.not.or"), "a.true.null.not.or");
        assert_eq!(p("  ( ( x ) )  "), "x");
        assert_eq!(p("a\n&&\tb"), "(a && b)");
    }

    #[test]
    fn spans() {
        let e = parse("  a.b + f(1, 'x')").unwrap();
        assert_eq!(e.span(), Span::new(2, 17));
        let Expr::Binary { left, right, .. } = e else {
            panic!("not binary")
        };
        assert_eq!(left.span(), Span::new(2, 5));
        assert_eq!(right.span(), Span::new(8, 17));
        let Expr::Call {
            name_span, args, ..
        } = *right
        else {
            panic!("not a call")
        };
        assert_eq!(name_span, Span::new(8, 9));
        assert_eq!(args[1].span(), Span::new(13, 16));
        assert_eq!(parse("-x").unwrap().span(), Span::new(0, 2));
        assert_eq!(parse("[1]").unwrap().span(), Span::new(0, 3));
    }

    #[test]
    fn error_messages() {
        let cases: &[(&str, &str)] = &[
            ("", "unexpected end of expression at offset 0"),
            ("a &&", "unexpected end of expression at offset 4"),
            ("(a", "expected ')', found end of expression at offset 2"),
            ("(a b", "expected ')', found 'b' at offset 3"),
            ("a b", "trailing input at token 'b' at offset 2"),
            ("x)", "trailing input at token ')' at offset 1"),
            ("and", "unexpected keyword 'and' at offset 0"),
            ("a || or", "unexpected keyword 'or' at offset 5"),
            ("in x", "unexpected keyword 'in' at offset 0"),
            (
                "a.",
                "expected identifier after '.', found end of expression at offset 2",
            ),
            (
                "a.1",
                "expected identifier after '.', found '1' at offset 2",
            ),
            (
                "a.'b'",
                "expected identifier after '.', found ''b'' at offset 2",
            ),
            ("*a", "unexpected token '*' at offset 0"),
            ("a = 1", "unexpected character '=' at offset 2"),
            (
                "[1, 2",
                "expected ',' or ']', found end of expression at offset 5",
            ),
            ("f(1 2)", "expected ',' or ')', found '2' at offset 4"),
            ("[1,]", "unexpected token ']' at offset 3"),
            ("f(,)", "unexpected token ',' at offset 2"),
            ("a not in b", "trailing input at token 'not' at offset 2"),
            (
                "a[0]",
                "unexpected token '[': AGX has no indexing (use get()) at offset 1",
            ),
            (
                "a.b(1)",
                "unexpected token '(': only a bare function name can be called at offset 3",
            ),
            ("{'a': 1}", "unexpected character '{' at offset 0"),
            ("now() > 0 &&", "unexpected end of expression at offset 12"),
            ("'abc", "unterminated string at offset 0"),
        ];
        for (src, want) in cases {
            let e = err(src);
            assert_eq!(e.message, *want, "{src}");
            assert_eq!(e.to_string(), *want);
            assert!(e.message.ends_with(&format!("at offset {}", e.offset)));
            assert_eq!(e.message, format!("{} at offset {}", e.reason, e.offset));
        }
    }

    #[test]
    fn long_tokens_are_shortened_in_messages() {
        let e = err(&format!("a {}", "b".repeat(100)));
        assert!(e.message.contains(&format!("'{}…'", "b".repeat(32))), "{e}");
    }

    #[test]
    fn limits() {
        let ok = format!("{}x{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert_eq!(p(&ok), "x");
        let deep = format!(
            "{}x{}",
            "(".repeat(MAX_DEPTH + 1),
            ")".repeat(MAX_DEPTH + 1)
        );
        assert!(err(&deep).message.contains("nested more than 128"));
        assert!(err(&"[".repeat(100_000)).message.contains("longer than"));
        assert!(
            err(&"[".repeat(60_000))
                .message
                .contains("nested more than")
        );
        assert!(
            err(&"f(".repeat(10_000))
                .message
                .contains("nested more than")
        );
        assert!(
            err(&format!("{}x", "!".repeat(10_000)))
                .message
                .contains("nested")
        );
        assert!(
            err(&format!("{}x", "- ".repeat(10_000)))
                .message
                .contains("nested")
        );
        // A long left-associative chain builds a deep tree, so it is limited too.
        let chain = vec!["1"; MAX_DEPTH].join(" + ");
        assert_eq!(parse(&chain).map(|_| ()), Ok(()));
        let chain = vec!["1"; MAX_DEPTH + 1].join(" + ");
        assert!(err(&chain).message.contains("nested"));
        // Neither unary runs nor brackets alone exceed the limit, but the tree does.
        let mixed = format!("{}{}1{}", "!".repeat(100), "[".repeat(50), "]".repeat(50));
        assert!(err(&mixed).message.contains("nested"));
        let wide = format!("[{}]", vec!["1"; 10_000].join(","));
        assert_eq!(parse(&wide).map(|_| ()), Ok(()));
        let exact = "a".repeat(MAX_SOURCE_LEN);
        assert_eq!(parse(&exact).map(|_| ()), Ok(()));
        assert!(parse(&"a".repeat(MAX_SOURCE_LEN + 1)).is_err());
    }
}

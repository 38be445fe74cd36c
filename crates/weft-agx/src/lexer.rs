//! The AGX lexer: source text to tokens.
//!
//! This is a real lexer rather than a set of regexes because the reference implementations
//! got the minus sign wrong in both directions (DIGEST §2.7): a number never includes a sign,
//! so `x-1`, `1-2` and `loop.iteration -1` all lex as three tokens and parse as subtraction.
//! The lexer runs once over the whole source (bounded by [`crate::MAX_SOURCE_LEN`]), so it is
//! linear in the input.

use serde_json::{Number, Value};

use crate::ParseError;

/// A keyword. After a `.` the parser accepts keywords as path segments (`nodes.in`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keyword {
    True,
    False,
    Null,
    And,
    Or,
    Not,
    In,
}

impl Keyword {
    fn from_word(word: &str) -> Option<Keyword> {
        Some(match word {
            "true" => Keyword::True,
            "false" => Keyword::False,
            "null" => Keyword::Null,
            "and" => Keyword::And,
            "or" => Keyword::Or,
            "not" => Keyword::Not,
            "in" => Keyword::In,
            _ => return None,
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Keyword::True => "true",
            Keyword::False => "false",
            Keyword::Null => "null",
            Keyword::And => "and",
            Keyword::Or => "or",
            Keyword::Not => "not",
            Keyword::In => "in",
        }
    }
}

/// Punctuation and operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sym {
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Dot,
    EqEq,
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Bang,
    AndAnd,
    OrOr,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TokenKind {
    Number(Number),
    Str(String),
    Ident(String),
    Keyword(Keyword),
    Sym(Sym),
    Eof,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    pub kind: TokenKind,
    pub start: usize,
    pub end: usize,
}

/// Splits `src` into tokens, ending with one `Eof` token at `src.len()`.
pub(crate) fn tokenize(src: &str) -> Result<Vec<Token>, ParseError> {
    let mut lexer = Lexer {
        src,
        bytes: src.as_bytes(),
        pos: 0,
        tokens: Vec::new(),
    };
    lexer.run()?;
    Ok(lexer.tokens)
}

struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    tokens: Vec<Token>,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos + ahead).copied()
    }

    fn push(&mut self, kind: TokenKind, start: usize) {
        self.tokens.push(Token {
            kind,
            start,
            end: self.pos,
        });
    }

    fn run(&mut self) -> Result<(), ParseError> {
        while let Some(b) = self.peek(0) {
            let start = self.pos;
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => self.pos += 1,
                b'0'..=b'9' => self.number()?,
                b'A'..=b'Z' | b'a'..=b'z' | b'_' => self.word(),
                b'"' | b'\'' => self.string()?,
                b'.' => {
                    // `.5` is a common slip; a digit after a `.` that does not follow a
                    // name can only be an attempt at a number.
                    let after_name = matches!(
                        self.tokens.last().map(|t| &t.kind),
                        Some(TokenKind::Ident(_) | TokenKind::Keyword(_))
                    );
                    if !after_name && self.peek(1).is_some_and(|c| c.is_ascii_digit()) {
                        return Err(ParseError::new(
                            "a number must start with a digit (write '0.5', not '.5')",
                            start,
                        ));
                    }
                    self.sym(Sym::Dot, 1);
                }
                _ => self.operator(b, start)?,
            }
        }
        self.push(TokenKind::Eof, self.pos);
        Ok(())
    }

    fn sym(&mut self, sym: Sym, len: usize) {
        let start = self.pos;
        self.pos += len;
        self.push(TokenKind::Sym(sym), start);
    }

    fn operator(&mut self, b: u8, start: usize) -> Result<(), ParseError> {
        let next = self.peek(1);
        let (sym, len) = match (b, next) {
            (b'(', _) => (Sym::LParen, 1),
            (b')', _) => (Sym::RParen, 1),
            (b'[', _) => (Sym::LBracket, 1),
            (b']', _) => (Sym::RBracket, 1),
            (b',', _) => (Sym::Comma, 1),
            (b'=', Some(b'=')) => (Sym::EqEq, 2),
            (b'!', Some(b'=')) => (Sym::NotEq, 2),
            (b'!', _) => (Sym::Bang, 1),
            (b'<', Some(b'=')) => (Sym::Le, 2),
            (b'<', _) => (Sym::Lt, 1),
            (b'>', Some(b'=')) => (Sym::Ge, 2),
            (b'>', _) => (Sym::Gt, 1),
            (b'+', _) => (Sym::Plus, 1),
            (b'-', _) => (Sym::Minus, 1),
            (b'*', _) => (Sym::Star, 1),
            (b'/', _) => (Sym::Slash, 1),
            (b'%', _) => (Sym::Percent, 1),
            (b'&', Some(b'&')) => (Sym::AndAnd, 2),
            (b'|', Some(b'|')) => (Sym::OrOr, 2),
            _ => {
                // Report the whole character, not a UTF-8 fragment.
                let c = self.src[start..].chars().next().unwrap_or('?');
                return Err(ParseError::new(
                    format!("unexpected character {}", quote_char(c)),
                    start,
                ));
            }
        };
        self.sym(sym, len);
        Ok(())
    }

    fn word(&mut self) {
        let start = self.pos;
        while self
            .peek(0)
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            self.pos += 1;
        }
        let word = &self.src[start..self.pos];
        let kind = match Keyword::from_word(word) {
            Some(k) => TokenKind::Keyword(k),
            None => TokenKind::Ident(word.to_string()),
        };
        self.push(kind, start);
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// NUMBER := [0-9]+ ('.' [0-9]+)? ([eE] [+-]? [0-9]+)?
    fn number(&mut self) -> Result<(), ParseError> {
        let start = self.pos;
        self.digits();
        let mut float = false;
        if self.peek(0) == Some(b'.') {
            let dot = self.pos;
            self.pos += 1;
            if self.digits() == 0 {
                return Err(ParseError::new(
                    "expected a digit after '.' in number (write '1.0', not '1.')",
                    dot,
                ));
            }
            float = true;
        }
        if matches!(self.peek(0), Some(b'e' | b'E')) {
            let e = self.pos;
            self.pos += 1;
            if matches!(self.peek(0), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(ParseError::new("expected digits in number exponent", e));
            }
            float = true;
        }
        let text = &self.src[start..self.pos];
        let number = if float {
            None
        } else {
            text.parse::<i64>().ok().map(Number::from)
        };
        // Integers too large for i64 fall back to a float, as JSON parsers do.
        let number = match number {
            Some(n) => n,
            None => text
                .parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .ok_or_else(|| ParseError::new("number out of range", start))?,
        };
        self.push(TokenKind::Number(number), start);
        Ok(())
    }

    fn string(&mut self) -> Result<(), ParseError> {
        let start = self.pos;
        let quote = self.bytes[start];
        self.pos += 1;
        let mut out = String::new();
        loop {
            // Copy the run of plain characters in one go (keeps UTF-8 intact and is fast).
            let run_start = self.pos;
            while self.peek(0).is_some_and(|c| c != quote && c != b'\\') {
                self.pos += 1;
            }
            out.push_str(&self.src[run_start..self.pos]);
            match self.peek(0) {
                None => return Err(ParseError::new("unterminated string", start)),
                Some(b'\\') => self.escape(&mut out)?,
                Some(_) => {
                    self.pos += 1;
                    break;
                }
            }
        }
        self.push(TokenKind::Str(out), start);
        Ok(())
    }

    fn escape(&mut self, out: &mut String) -> Result<(), ParseError> {
        let backslash = self.pos;
        self.pos += 1;
        let Some(c) = self.peek(0) else {
            return Err(ParseError::new("unterminated string", backslash));
        };
        self.pos += 1;
        let decoded = match c {
            b'\\' => '\\',
            b'\'' => '\'',
            b'"' => '"',
            b'/' => '/',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'u' => self.unicode_escape(backslash)?,
            _ => {
                let c = self.src[backslash + 1..].chars().next().unwrap_or('?');
                // Step over the whole character so no later slice lands inside it.
                self.pos = backslash + 1 + c.len_utf8();
                return Err(ParseError::new(
                    format!("invalid escape '\\{c}' in string"),
                    backslash,
                ));
            }
        };
        out.push(decoded);
        Ok(())
    }

    fn hex4(&mut self, at: usize) -> Result<u32, ParseError> {
        let digits = self.bytes.get(self.pos..self.pos + 4);
        let value = digits
            .filter(|d| d.iter().all(u8::is_ascii_hexdigit))
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| u32::from_str_radix(d, 16).ok())
            .ok_or_else(|| ParseError::new("expected four hex digits after '\\u'", at))?;
        self.pos += 4;
        Ok(value)
    }

    fn unicode_escape(&mut self, backslash: usize) -> Result<char, ParseError> {
        let high = self.hex4(backslash)?;
        let code = if (0xD800..0xDC00).contains(&high) {
            // A high surrogate must be followed by an escaped low surrogate (JSON style).
            let low_at = self.pos;
            if self.peek(0) != Some(b'\\') || self.peek(1) != Some(b'u') {
                return Err(ParseError::new(
                    "unpaired surrogate in '\\u' escape",
                    backslash,
                ));
            }
            self.pos += 2;
            let low = self.hex4(low_at)?;
            if !(0xDC00..0xE000).contains(&low) {
                return Err(ParseError::new(
                    "unpaired surrogate in '\\u' escape",
                    backslash,
                ));
            }
            0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
        } else {
            high
        };
        char::from_u32(code)
            .ok_or_else(|| ParseError::new("unpaired surrogate in '\\u' escape", backslash))
    }
}

/// `'c'` for messages; control characters are shown escaped so messages stay one line.
fn quote_char(c: char) -> String {
    if c.is_control() {
        format!("'{}'", c.escape_default())
    } else {
        format!("'{c}'")
    }
}

/// The literal value of a keyword literal, if it is one.
pub(crate) fn keyword_literal(k: Keyword) -> Option<Value> {
    match k {
        Keyword::True => Some(Value::Bool(true)),
        Keyword::False => Some(Value::Bool(false)),
        Keyword::Null => Some(Value::Null),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<TokenKind> {
        tokenize(src).unwrap().into_iter().map(|t| t.kind).collect()
    }

    fn err(src: &str) -> ParseError {
        tokenize(src).unwrap_err()
    }

    fn int(i: i64) -> TokenKind {
        TokenKind::Number(Number::from(i))
    }

    #[test]
    fn minus_is_never_part_of_a_number() {
        assert_eq!(
            kinds("1-2"),
            vec![int(1), TokenKind::Sym(Sym::Minus), int(2), TokenKind::Eof]
        );
        assert_eq!(
            kinds("x-1"),
            vec![
                TokenKind::Ident("x".into()),
                TokenKind::Sym(Sym::Minus),
                int(1),
                TokenKind::Eof
            ]
        );
        assert_eq!(kinds("-1")[0], TokenKind::Sym(Sym::Minus));
    }

    #[test]
    fn numbers() {
        assert_eq!(kinds("42")[0], int(42));
        assert_eq!(
            kinds("1e3")[0],
            TokenKind::Number(Number::from_f64(1000.0).unwrap())
        );
        assert_eq!(
            kinds("2.5E-1")[0],
            TokenKind::Number(Number::from_f64(0.25).unwrap())
        );
        assert_eq!(
            kinds("1.5")[0],
            TokenKind::Number(Number::from_f64(1.5).unwrap())
        );
        // Too big for i64: a float, like JSON.
        assert_eq!(
            kinds("9223372036854775808")[0],
            TokenKind::Number(Number::from_f64(9_223_372_036_854_775_808.0).unwrap())
        );
        assert_eq!(kinds("9223372036854775807")[0], int(i64::MAX));
    }

    #[test]
    fn bad_numbers() {
        let e = err(".5");
        assert_eq!(e.offset, 0);
        assert!(e.message.contains("must start with a digit"), "{e}");
        let e = err("1.");
        assert_eq!(e.offset, 1);
        assert!(e.message.contains("expected a digit after '.'"), "{e}");
        let e = err("x + 1.e5");
        assert_eq!(e.offset, 5);
        assert_eq!(err("1e").offset, 1);
        assert_eq!(err("1e+").offset, 1);
        assert!(err("1e999").message.contains("out of range"));
    }

    #[test]
    fn dot_after_name_is_a_dot() {
        // `a.5` is a path error for the parser, not a number error.
        assert_eq!(
            kinds("a.5"),
            vec![
                TokenKind::Ident("a".into()),
                TokenKind::Sym(Sym::Dot),
                int(5),
                TokenKind::Eof
            ]
        );
    }

    #[test]
    fn keywords_and_identifiers() {
        assert_eq!(
            kinds("in inx _a1 not"),
            vec![
                TokenKind::Keyword(Keyword::In),
                TokenKind::Ident("inx".into()),
                TokenKind::Ident("_a1".into()),
                TokenKind::Keyword(Keyword::Not),
                TokenKind::Eof
            ]
        );
    }

    #[test]
    fn operators() {
        use Sym::*;
        let got: Vec<TokenKind> = kinds("== != < <= > >= + - * / % ! && || ( ) [ ] , .");
        let want: Vec<TokenKind> = [
            EqEq, NotEq, Lt, Le, Gt, Ge, Plus, Minus, Star, Slash, Percent, Bang, AndAnd, OrOr,
            LParen, RParen, LBracket, RBracket, Comma, Dot,
        ]
        .into_iter()
        .map(TokenKind::Sym)
        .chain([TokenKind::Eof])
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn unexpected_characters() {
        let e = err("a = b");
        assert_eq!(e.message, "unexpected character '=' at offset 2");
        assert_eq!(e.offset, 2);
        assert_eq!(err("a & b").offset, 2);
        assert_eq!(err("a | b").offset, 2);
        assert_eq!(err("{").message, "unexpected character '{' at offset 0");
        assert_eq!(err("é").message, "unexpected character 'é' at offset 0");
        assert_eq!(err("$").offset, 0);
    }

    #[test]
    fn strings_and_escapes() {
        assert_eq!(kinds("'a\"b'")[0], TokenKind::Str("a\"b".into()));
        assert_eq!(kinds("\"a'b\"")[0], TokenKind::Str("a'b".into()));
        assert_eq!(
            kinds(r#""\\ \' \" \/ \n \r \t \b \f \u00e9""#)[0],
            TokenKind::Str("\\ ' \" / \n \r \t \u{8} \u{c} é".into())
        );
        assert_eq!(
            kinds(r#""\ud83d\ude00""#)[0],
            TokenKind::Str("\u{1F600}".into())
        );
        assert_eq!(kinds("'héllo'")[0], TokenKind::Str("héllo".into()));
    }

    #[test]
    fn bad_strings() {
        let e = err("x == 'abc");
        assert_eq!(e.offset, 5);
        assert!(e.message.starts_with("unterminated string"), "{e}");
        let e = err(r#""a\qb""#);
        assert_eq!(e.offset, 2);
        assert!(e.message.contains("invalid escape '\\q'"), "{e}");
        assert_eq!(err(r#""\u12""#).offset, 1);
        assert_eq!(err(r#""\ud83d""#).offset, 1);
        assert_eq!(err(r#""\ud83d\u0041""#).offset, 1);
        assert_eq!(err(r#""\udc00""#).offset, 1);
        assert_eq!(err("'abc\\").offset, 4);
        assert!(err("'\\é'").message.contains("invalid escape '\\é'"));
    }
}

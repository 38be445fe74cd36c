//! Positions in a source text without rescanning it: byte offset ↔ 1-based (line, column),
//! columns counting Unicode scalar values as everywhere in findings.
//!
//! One linear pass records where each line starts and, for text that is not pure ASCII, the
//! byte offset of every [`STRIDE`]-th character. A lookup is then a binary search and at
//! most [`STRIDE`] characters of stepping, whatever the length of the line: a minified JSON
//! document is one line of hundreds of kilobytes, and counting characters from the start of
//! the line for each of thousands of findings made positioning and rendering quadratic.

/// Characters between two checkpoints of a non-ASCII text.
const STRIDE: usize = 64;

/// Line starts and character checkpoints of one text.
#[derive(Clone, Debug)]
pub struct TextIndex<'t> {
    text: &'t str,
    /// Byte offset of the start of each line (the first is 0).
    line_starts: Vec<usize>,
    /// For non-ASCII text: the character index of each line start (same indices).
    line_chars: Vec<usize>,
    /// For non-ASCII text: the byte offset of characters 0, STRIDE, 2·STRIDE, …
    checkpoints: Vec<usize>,
    /// Every character is one byte: character index and byte offset coincide.
    ascii: bool,
}

impl<'t> TextIndex<'t> {
    /// Indexes `text` in one pass.
    pub fn new(text: &'t str) -> TextIndex<'t> {
        let ascii = text.is_ascii();
        let mut line_starts = vec![0];
        let mut line_chars = Vec::new();
        let mut checkpoints = Vec::new();
        if ascii {
            line_starts.extend(newline_ends(text));
        } else {
            line_chars.push(0);
            for (chars, (byte, c)) in text.char_indices().enumerate() {
                if chars % STRIDE == 0 {
                    checkpoints.push(byte);
                }
                if c == '\n' {
                    line_starts.push(byte + 1);
                    line_chars.push(chars + 1);
                }
            }
        }
        TextIndex {
            text,
            line_starts,
            line_chars,
            checkpoints,
            ascii,
        }
    }

    /// The indexed text.
    pub fn text(&self) -> &'t str {
        self.text
    }

    /// Number of lines (a text ending in a newline has an empty last line).
    pub fn lines(&self) -> usize {
        self.line_starts.len()
    }

    /// The text of 1-based `line`, without its line break.
    pub fn line(&self, line: u32) -> Option<&'t str> {
        let i = (line as usize).checked_sub(1)?;
        let start = *self.line_starts.get(i)?;
        let end = self
            .line_starts
            .get(i + 1)
            .map_or(self.text.len(), |&next| next - 1);
        self.text.get(start..end)
    }

    /// Byte offset where 1-based `line` starts.
    pub fn line_start(&self, line: u32) -> Option<usize> {
        self.line_starts
            .get((line as usize).checked_sub(1)?)
            .copied()
    }

    /// Byte offset of the character at 1-based (`line`, `column`); a column past the end of
    /// the line gives the line's end.
    pub fn byte_of(&self, line: u32, column: u32) -> Option<usize> {
        let i = (line as usize).checked_sub(1)?;
        let start = *self.line_starts.get(i)?;
        let line_text = self.line(line)?;
        let offset = (column as usize).saturating_sub(1);
        if self.ascii {
            return Some(start + offset.min(line_text.len()));
        }
        let first = *self.line_chars.get(i)?;
        let byte = self.byte_of_char(first + offset);
        Some(byte.min(start + line_text.len()))
    }

    /// 1-based (line, column) of byte offset `byte` (clamped to the text, and to the start of
    /// the character it falls in).
    pub fn position_of(&self, byte: usize) -> (u32, u32) {
        let byte = floor_char_boundary(self.text, byte.min(self.text.len()));
        // The last line start at or before `byte`.
        let i = self.line_starts.partition_point(|&s| s <= byte).max(1) - 1;
        let start = self.line_starts.get(i).copied().unwrap_or(0);
        let column = if self.ascii {
            byte - start
        } else {
            let first = self.line_chars.get(i).copied().unwrap_or(0);
            self.char_of_byte(byte).saturating_sub(first)
        };
        (super::to_u32(i + 1), super::to_u32(column + 1))
    }

    /// Byte offset of the character with index `chars` (the text's end past the last).
    fn byte_of_char(&self, chars: usize) -> usize {
        let Some(&base) = self.checkpoints.get(chars / STRIDE) else {
            return self.text.len();
        };
        let rest = self.text.get(base..).unwrap_or_default();
        rest.char_indices()
            .nth(chars % STRIDE)
            .map_or(self.text.len(), |(b, _)| base + b)
    }

    /// Character index of the character starting at byte offset `byte` (a char boundary).
    fn char_of_byte(&self, byte: usize) -> usize {
        let k = self.checkpoints.partition_point(|&b| b <= byte).max(1) - 1;
        let base = self.checkpoints.get(k).copied().unwrap_or(0);
        let between = self.text.get(base..byte).map_or(0, |s| s.chars().count());
        k * STRIDE + between
    }
}

/// Byte offsets just after each `\n` of an ASCII text.
fn newline_ends(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.bytes()
        .enumerate()
        .filter(|&(_, b)| b == b'\n')
        .map(|(i, _)| i + 1)
}

/// The largest char boundary at or before `byte`.
pub(crate) fn floor_char_boundary(text: &str, mut byte: usize) -> usize {
    while byte > 0 && !text.is_char_boundary(byte) {
        byte -= 1;
    }
    byte
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every char boundary of `text` maps to its (line, column) and back.
    fn round_trips(text: &str) {
        let index = TextIndex::new(text);
        for (byte, _) in text
            .char_indices()
            .chain(std::iter::once((text.len(), ' ')))
        {
            let expected = crate::load::text_position(&text[..byte]);
            assert_eq!(index.position_of(byte), expected, "byte {byte} of {text:?}");
            assert_eq!(
                index.byte_of(expected.0, expected.1),
                Some(byte),
                "{expected:?} of {text:?}"
            );
        }
    }

    #[test]
    fn ascii_and_multibyte_texts_round_trip() {
        round_trips("");
        round_trips("ab\ncd\n\nef");
        round_trips("é\n");
        let long: String = (0..500)
            .map(|i| if i % 7 == 0 { "ü—\n" } else { "a😀b" })
            .collect();
        round_trips(&long);
        let one_line: String = "x€yz".repeat(300);
        round_trips(&one_line);
    }

    #[test]
    fn lines_come_without_their_break_and_columns_clamp_to_the_line() {
        let index = TextIndex::new("ab\ncdé\n");
        assert_eq!(index.lines(), 3);
        assert_eq!(index.line(1), Some("ab"));
        assert_eq!(index.line(2), Some("cdé"));
        assert_eq!(index.line(3), Some(""));
        assert_eq!(index.line(4), None);
        assert_eq!(index.line(0), None);
        assert_eq!(index.byte_of(2, 99), Some(7));
        assert_eq!(index.byte_of(1, 99), Some(2));
        // A byte inside a character counts as the character.
        assert_eq!(index.position_of(6), (2, 3));
    }
}

//! The source excerpt under a finding: its line, or on a long line a window around the
//! column (as rustc and ruff cut minified sources), with the caret kept under the column.
//!
//! A minified JSON document is one line of hundreds of kilobytes; printing that line under
//! each of thousands of findings made `weft validate` write gigabytes. The window costs
//! O([`MAX_CHARS`]) per finding whatever the length of the line.

/// Most characters of source shown under a finding (ellipses included).
pub const MAX_CHARS: usize = 120;

/// Characters kept left of the column when a long line is cut: enough to see the key or
/// the start of the expression the caret points into.
const LEFT_CHARS: usize = 40;

/// Marks where a long line was cut.
const CUT: char = '…';

/// A line as shown under a finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Excerpt {
    /// The shown text: the whole line (trailing white space removed), or a window of it
    /// with `…` where it was cut.
    pub text: String,
    /// What goes before the caret on the next line: a space per shown character before
    /// the column (a tab for a tab, so the caret lines up however tabs are shown).
    pub caret_pad: String,
}

/// The excerpt of `line` for the character starting at byte `at` (the column of the
/// finding; past the end of the line means its end). `at` need not be a char boundary: it
/// is moved back to one.
pub fn excerpt(line: &str, at: usize) -> Excerpt {
    let line = line.trim_end();
    let mut at = at.min(line.len());
    while !line.is_char_boundary(at) {
        at -= 1;
    }
    let fits = line.len() <= MAX_CHARS || line.chars().nth(MAX_CHARS).is_none();
    if fits {
        return Excerpt {
            text: line.to_string(),
            caret_pad: pad(line.get(..at).unwrap_or_default()),
        };
    }
    // Room for the shown characters once both cuts are marked.
    let room = MAX_CHARS - 2;
    let start = back_chars(line, at, LEFT_CHARS);
    let left = line.get(start..at).map_or(0, |s| s.chars().count());
    let end = forward_chars(line, at, room - left);
    // Near the end of the line, give the unused room to the left.
    let start = if end == line.len() {
        let right = line.get(at..).map_or(0, |s| s.chars().count());
        back_chars(line, at, room.saturating_sub(right))
    } else {
        start
    };
    let mut text = String::with_capacity(end - start + 2 * CUT.len_utf8());
    let mut caret_pad = String::new();
    if start > 0 {
        text.push(CUT);
        caret_pad.push(' ');
    }
    text.push_str(line.get(start..end).unwrap_or_default());
    caret_pad.push_str(&pad(line.get(start..at).unwrap_or_default()));
    if end < line.len() {
        text.push(CUT);
    }
    Excerpt { text, caret_pad }
}

/// A space per character of `shown` (a tab for a tab).
fn pad(shown: &str) -> String {
    shown
        .chars()
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect()
}

/// The byte offset `n` characters before `at` (or 0).
fn back_chars(line: &str, at: usize, n: usize) -> usize {
    if n == 0 {
        return at;
    }
    line.get(..at)
        .and_then(|s| s.char_indices().rev().nth(n - 1))
        .map_or(0, |(b, _)| b)
}

/// The byte offset `n` characters after `at` (or the line's end).
fn forward_chars(line: &str, at: usize, n: usize) -> usize {
    line.get(at..)
        .and_then(|s| s.char_indices().nth(n))
        .map_or(line.len(), |(b, _)| at + b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The character under the caret, read back from the excerpt.
    fn under_caret(e: &Excerpt) -> Option<char> {
        e.text.chars().nth(e.caret_pad.chars().count())
    }

    #[test]
    fn a_short_line_is_shown_whole() {
        let e = excerpt("    depends_on: [a, ghost]   ", 20);
        assert_eq!(e.text, "    depends_on: [a, ghost]");
        assert_eq!(e.caret_pad, " ".repeat(20));
        assert_eq!(under_caret(&e), Some('g'));
    }

    #[test]
    fn a_long_line_is_cut_around_the_column() {
        let line = format!("{}TARGET{}", "a".repeat(5000), "b".repeat(5000));
        let e = excerpt(&line, 5000);
        assert!(
            e.text.starts_with('…') && e.text.ends_with('…'),
            "{}",
            e.text
        );
        assert_eq!(e.text.chars().count(), MAX_CHARS);
        assert_eq!(under_caret(&e), Some('T'));
        assert_eq!(e.caret_pad.chars().count(), 1 + LEFT_CHARS);
    }

    #[test]
    fn near_either_end_only_one_side_is_cut() {
        let line = format!("START{}END", "x".repeat(1000));
        let head = excerpt(&line, 0);
        assert!(head.text.starts_with("START") && head.text.ends_with('…'));
        assert_eq!(head.text.chars().count(), MAX_CHARS - 1);
        assert_eq!(under_caret(&head), Some('S'));
        let tail = excerpt(&line, line.len() - 3);
        assert!(tail.text.starts_with('…') && tail.text.ends_with("END"));
        assert_eq!(tail.text.chars().count(), MAX_CHARS - 1);
        assert_eq!(under_caret(&tail), Some('E'));
        // A column past the end points just after the last character.
        let past = excerpt(&line, line.len() + 10);
        assert_eq!(under_caret(&past), None);
        assert_eq!(past.caret_pad.chars().count(), past.text.chars().count());
    }

    #[test]
    fn multibyte_text_is_cut_on_character_boundaries() {
        let line = format!("{}é→{}", "ü😀".repeat(400), "日本".repeat(400));
        let at = line.find('→').unwrap();
        let e = excerpt(&line, at);
        assert_eq!(under_caret(&e), Some('→'));
        assert_eq!(e.text.chars().count(), MAX_CHARS);
        // A byte inside a character counts as that character.
        let inside = excerpt(&line, at + 1);
        assert_eq!(under_caret(&inside), Some('→'));
    }

    #[test]
    fn tabs_before_the_column_stay_tabs() {
        let e = excerpt("\tkey:\tvalue", 6);
        assert_eq!(e.caret_pad, "\t    \t");
        assert_eq!(under_caret(&e), Some('v'));
    }
}

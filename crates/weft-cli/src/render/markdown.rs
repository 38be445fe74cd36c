//! The Markdown of weft's own documentation (`docs/diagnostics.md`'s sections) for a
//! terminal: headings and `**labels**` in bold instead of `#` and `**`, code blocks indented
//! without their fences, links as `text (target)`. Inline `code` keeps its backticks, as
//! rustc's messages do. Styles are ANSI; `anstream` strips them when stdout is not a
//! terminal or `NO_COLOR` is set.

use anstyle::Style;

fn bold(s: &str) -> String {
    let b = Style::new().bold();
    format!("{}{s}{}", b.render(), b.render_reset())
}

/// `**x**` in bold and `[text](target)` as `text (target)`, within one line.
fn inline(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("**")
            && let Some(end) = after.find("**")
        {
            out.push_str(&bold(&after[..end]));
            rest = &after[end + 2..];
            continue;
        }
        if let Some(after) = rest.strip_prefix('[')
            && let Some(close) = after.find("](")
            && let Some(end) = after[close + 2..].find(')')
        {
            let text = &after[..close];
            let target = &after[close + 2..close + 2 + end];
            out.push_str(&format!("{text} ({target})"));
            rest = &after[close + 2 + end + 1..];
            continue;
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    out
}

/// `markdown` for a terminal.
pub fn for_terminal(markdown: &str) -> String {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            out.push(if line.is_empty() {
                String::new()
            } else {
                format!("    {line}")
            });
            continue;
        }
        let heading = line.trim_start_matches('#');
        if heading.len() < line.len() && heading.starts_with(' ') {
            out.push(bold(heading.trim()));
            continue;
        }
        out.push(inline(line));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a terminal without colour shows: the text without its ANSI styles.
    fn plain(s: &str) -> String {
        let mut out = String::new();
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                for d in chars.by_ref() {
                    if d == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn markup_becomes_styles_and_indentation() {
        let text = "### AG201 — a title\n\n**Severity:** error, see [the spec](../ags.md).\n\n\
                    ```yaml\n  a:\n    b: 1\n```\nKeep `code`.";
        let shown = for_terminal(text);
        assert_eq!(
            plain(&shown),
            "AG201 — a title\n\nSeverity: error, see the spec (../ags.md).\n\n      a:\n        b: 1\nKeep `code`."
        );
        assert!(shown.contains(&bold("Severity:")), "{shown:?}");
        assert!(shown.contains(&bold("AG201 — a title")), "{shown:?}");
        // An unclosed `**` is text, not a style.
        assert_eq!(plain(&for_terminal("a ** b")), "a ** b");
    }
}

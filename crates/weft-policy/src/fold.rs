//! How fs names are compared by the operator's refusing rules (`deny`, `ask`): a resource
//! path is also matched in a folded spelling, so `.GIT/config`, `.ｇｉｔ/config` (full-width)
//! or `.g\u{200B}it/config` (a zero-width space) is refused by `deny fs:*:.git/**` as
//! `.git/config` is. An `allow` rule and a node's own permissions match the exact spelling
//! only, so folding never widens what is allowed. On Linux file systems names are compared
//! byte for byte (`.GIT` is another directory than `.git`), so refusing the variants costs a
//! legitimate path nothing in practice, and on a case-insensitive file system (macOS, a
//! `casefold` directory) it closes the variant that would reach the same file.
//!
//! Folding: characters that render as nothing (soft hyphen, zero-width spaces and joiners,
//! bidirectional controls, word joiners, variation selectors, the byte order mark, tag
//! characters) are removed; full-width ASCII forms (U+FF01–U+FF5E) and the ideographic space
//! become their ASCII characters; the result is lower-cased (Unicode simple lowercase).

/// The folded spelling of `s` (see the module docs).
pub fn fold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if invisible(c) {
            continue;
        }
        let c = match u32::from(c) {
            0xFF01..=0xFF5E => char::from_u32(u32::from(c) - 0xFEE0).unwrap_or(c),
            0x3000 => ' ',
            _ => c,
        };
        out.extend(c.to_lowercase());
    }
    out
}

/// Default-ignorable code points that render as nothing.
fn invisible(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD
            | 0x034F
            | 0x061C
            | 0x115F
            | 0x1160
            | 0x17B4
            | 0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

#[cfg(test)]
mod tests {
    use super::fold;

    #[test]
    fn case_width_and_invisible_characters_fold_away() {
        assert_eq!(fold(".GIT/Config"), ".git/config");
        assert_eq!(fold(".\u{FF47}\u{FF49}\u{FF54}/config"), ".git/config");
        assert_eq!(fold(".g\u{200B}i\u{FEFF}t/config"), ".git/config");
        assert_eq!(fold(".\u{FF27}\u{200D}IT"), ".git");
        assert_eq!(fold("src/main.rs"), "src/main.rs");
    }
}

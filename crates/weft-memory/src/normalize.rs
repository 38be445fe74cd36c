//! Name normalisation: the key under which surface forms of an entity meet in the alias map.
//!
//! Deterministic and cheap: lower-case, Latin-1 accents folded to ASCII, punctuation as
//! spaces, whitespace collapsed, and a leading English article dropped ("The Beatles" and
//! "beatles" meet). Anything smarter is a merge, recorded with its evidence and undoable.

/// The alias key of an entity name.
pub fn entity_key(name: &str) -> String {
    let folded = fold(name);
    for article in ["the ", "a ", "an "] {
        if let Some(rest) = folded.strip_prefix(article)
            && !rest.is_empty()
        {
            return rest.to_string();
        }
    }
    folded
}

/// The key of a predicate: lower-case, punctuation as spaces, whitespace collapsed.
pub fn predicate_key(name: &str) -> String {
    fold(name)
}

/// The words of a name, as the token estimate counts them.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    for ch in text.chars() {
        match fold_char(ch) {
            c if c.is_alphanumeric() => {
                if pending_space && !out.is_empty() {
                    out.push(' ');
                }
                pending_space = false;
                for lower in c.to_lowercase() {
                    out.push(lower);
                }
            }
            // Apostrophes join ("O'Brien" and "OBrien" meet); everything else separates.
            '\'' | '\u{2019}' => {}
            _ => pending_space = true,
        }
    }
    out
}

fn fold_char(ch: char) -> char {
    match ch {
        'À'..='Å' | 'à'..='å' | 'ā' | 'ă' | 'ą' => 'a',
        'Ç' | 'ç' | 'ć' | 'č' => 'c',
        'È'..='Ë' | 'è'..='ë' | 'ē' | 'ė' | 'ę' | 'ě' => 'e',
        'Ì'..='Ï' | 'ì'..='ï' | 'ī' | 'į' | 'ı' => 'i',
        'Ñ' | 'ñ' | 'ń' | 'ň' => 'n',
        'Ò'..='Ö' | 'Ø' | 'ò'..='ö' | 'ø' | 'ō' | 'ő' => 'o',
        'Ù'..='Ü' | 'ù'..='ü' | 'ū' | 'ů' | 'ű' => 'u',
        'Ý' | 'ý' | 'ÿ' => 'y',
        'ś' | 'š' | 'ş' | 'Š' => 's',
        'ź' | 'ż' | 'ž' | 'Ž' => 'z',
        'ł' | 'Ł' => 'l',
        'ř' => 'r',
        'ğ' => 'g',
        'ß' => 's',
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surface_forms_meet() {
        assert_eq!(entity_key("The Beatles"), "beatles");
        assert_eq!(entity_key("  beatles "), "beatles");
        assert_eq!(entity_key("Zoë  Saldaña"), "zoe saldana");
        assert_eq!(entity_key("G. Stanley Hall"), "g stanley hall");
        assert_eq!(entity_key("O'Brien"), "obrien");
        // An article alone is a name, not an empty key.
        assert_eq!(entity_key("The"), "the");
        assert_ne!(entity_key("Theatre"), "atre");
    }

    #[test]
    fn predicates_fold_case_and_spacing() {
        assert_eq!(predicate_key("Published  BY"), "published by");
        assert_eq!(predicate_key("born-in"), "born in");
    }
}

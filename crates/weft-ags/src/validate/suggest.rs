//! "Did you mean …?" suggestions for misspelt names.

/// The closest candidate to `name`, if one is close enough to be a plausible typo
/// (Damerau–Levenshtein distance ≤ 2, and less than half the name's length).
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = 2.min(name.chars().count().saturating_sub(1) / 2 + 1);
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(name, c), c))
        .filter(|&(d, _)| d > 0 && d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::did_you_mean;

    #[test]
    fn suggests_close_names_only() {
        let known = ["depends_on", "description", "decision"];
        assert_eq!(did_you_mean("depend_on", known), Some("depends_on"));
        assert_eq!(did_you_mean("decison", known), Some("decision"));
        assert_eq!(did_you_mean("zzz", known), None);
        assert_eq!(did_you_mean("ab", ["xy"]), None);
    }
}

//! API keys: read only from an environment variable named in config, held in a [`Secret`]
//! whose `Debug` and `Display` print `***`, so a key cannot reach a log, an error or a run
//! record by formatting.

use std::fmt;

/// A secret value. The only way to the text is [`Secret::expose`], used where a request
/// header is built.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// Reads the secret from the environment variable `var`; `Err` names the variable (never
    /// a value).
    pub fn from_env(var: &str) -> Result<Secret, String> {
        match std::env::var(var) {
            Ok(v) if !v.is_empty() => Ok(Secret(v)),
            Ok(_) => Err(format!("environment variable {var} is empty")),
            Err(_) => Err(format!("environment variable {var} is not set")),
        }
    }

    /// The secret text, for the request header that carries it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting_never_shows_the_value() {
        let s = Secret::new("sk-live-123");
        assert_eq!(format!("{s}"), "***");
        assert_eq!(format!("{s:?}"), "***");
        assert_eq!(format!("{:?}", Some(&s)), "Some(***)");
        assert_eq!(s.expose(), "sk-live-123");
    }

    #[test]
    fn a_missing_variable_is_named_not_guessed() {
        let e = Secret::from_env("WEFT_TEST_SURELY_UNSET_VARIABLE").unwrap_err();
        assert!(e.contains("WEFT_TEST_SURELY_UNSET_VARIABLE"), "{e}");
    }
}

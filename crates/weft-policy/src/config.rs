//! The operator policy: the `[policy]` table of `weft.toml`. Only that table is read; other
//! tables (`[providers]`, `[tiers]`, …) belong to other parts of weft and are ignored here.
//!
//! ```toml
//! [policy]
//! version = "2026-11-30"          # optional label, bound into approvals
//! [[policy.rules]]
//! decision = "deny"                # allow | ask | deny
//! permission = "fs:*:.git/**"      # scope:action[:target glob]; action may be `*`
//! reason = "the repository's metadata is off limits"
//! ```
//!
//! Rules are tried in order, the first match wins, and an action no rule matches is denied.

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::pattern::Matcher;
use crate::permission::Permission;

/// A policy decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Go ahead.
    Allow,
    /// Go ahead only with a person's approval bound to this exact action.
    Ask,
    /// Refused.
    Deny,
}

impl Verdict {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        }
    }
}

/// One operator rule.
#[derive(Clone, Debug)]
pub struct Rule {
    /// Its decision.
    pub decision: Verdict,
    /// Its pattern.
    pub pattern: Matcher,
    /// The operator's reason, if given.
    pub reason: Option<String>,
}

impl Rule {
    /// Whether the rule covers `resource`: an `allow` by the exact spelling only; a `deny` or
    /// `ask` also by the folded spelling of an fs path (case, full-width forms, invisible
    /// characters: [`crate::fold`]), so a variant spelling cannot slip past a refusal.
    pub fn covers(&self, resource: &crate::Resource) -> bool {
        match self.decision {
            Verdict::Allow => self.pattern.matches(resource),
            Verdict::Ask | Verdict::Deny => self.pattern.matches_folded(resource),
        }
    }
}

/// The operator policy.
#[derive(Clone, Debug)]
pub struct OperatorPolicy {
    rules: Vec<Rule>,
    version: String,
}

/// Why the `[policy]` table cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Not TOML, or a `[policy]` table of the wrong shape.
    #[error("weft.toml: {0}")]
    Toml(String),
    /// A rule's permission is malformed.
    #[error("weft.toml: policy.rules[{index}]: {error}")]
    Rule {
        /// The rule's index.
        index: usize,
        /// What is wrong.
        error: crate::Error,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    version: Option<String>,
    #[serde(default)]
    rules: Vec<RuleTable>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleTable {
    decision: Verdict,
    permission: String,
    reason: Option<String>,
}

impl OperatorPolicy {
    /// Reads the `[policy]` table of a `weft.toml` text. No table means no rules: every action
    /// is denied.
    pub fn from_toml(text: &str) -> Result<OperatorPolicy, ConfigError> {
        let table: toml::Table =
            toml::from_str(text).map_err(|e| ConfigError::Toml(e.to_string()))?;
        OperatorPolicy::from_table(&table)
    }

    /// The `[policy]` table of a parsed `weft.toml` (`weft-host` parses the file once).
    pub fn from_table(file: &toml::Table) -> Result<OperatorPolicy, ConfigError> {
        let policy: Option<Table> = file
            .get("policy")
            .cloned()
            .map(toml::Value::try_into)
            .transpose()
            .map_err(|e: toml::de::Error| {
                ConfigError::Toml(format!("[policy]: {}", e.message()))
            })?;
        let table = policy.unwrap_or(Table {
            version: None,
            rules: Vec::new(),
        });
        let mut rules = Vec::with_capacity(table.rules.len());
        for (index, r) in table.rules.into_iter().enumerate() {
            let pattern = Permission::parse_pattern(&r.permission)
                .map_err(crate::Error::from)
                .and_then(|p| Matcher::new(p).map_err(crate::Error::from))
                .map_err(|error| ConfigError::Rule { index, error })?;
            rules.push(Rule {
                decision: r.decision,
                pattern,
                reason: r.reason,
            });
        }
        Ok(OperatorPolicy::new(table.version, rules))
    }

    /// A policy from rules. Its version is the label (or `unversioned`) plus a digest of the
    /// rules, so editing a rule invalidates earlier approvals even if the label is not bumped.
    pub fn new(label: Option<String>, rules: Vec<Rule>) -> OperatorPolicy {
        let mut hasher = Sha256::new();
        for r in &rules {
            hasher.update(r.decision.as_str());
            hasher.update([0]);
            hasher.update(r.pattern.permission().to_string());
            hasher.update([0]);
        }
        let digest = hasher.finalize();
        let short: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        let label = label.unwrap_or_else(|| "unversioned".into());
        OperatorPolicy {
            rules,
            version: format!("{label}+{short}"),
        }
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The policy version bound into approvals.
    pub fn version(&self) -> &str {
        &self.version
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_the_policy_table() {
        let p = OperatorPolicy::from_toml(
            r#"
            [providers.local]
            kind = "openai"
            [policy]
            version = "v1"
            [[policy.rules]]
            decision = "ask"
            permission = "shell:exec:*"
            "#,
        )
        .unwrap();
        assert_eq!(p.rules().len(), 1);
        assert_eq!(p.rules()[0].decision, Verdict::Ask);
        assert!(p.version().starts_with("v1+"));
    }

    #[test]
    fn no_table_means_no_rules() {
        let p = OperatorPolicy::from_toml("[tiers]\nx = 1\n").unwrap();
        assert!(p.rules().is_empty());
    }

    #[test]
    fn bad_rules_are_errors_with_their_index() {
        let e = OperatorPolicy::from_toml(
            "[[policy.rules]]\ndecision = \"allow\"\npermission = \"disk:x\"\n",
        )
        .unwrap_err();
        assert!(matches!(e, ConfigError::Rule { index: 0, .. }));
        assert!(OperatorPolicy::from_toml("[policy]\nrulez = []\n").is_err());
        assert!(
            OperatorPolicy::from_toml(
                "[[policy.rules]]\ndecision = \"maybe\"\npermission = \"fs:read\"\n"
            )
            .is_err()
        );
    }

    #[test]
    fn the_version_changes_with_the_rules() {
        let a = OperatorPolicy::from_toml(
            "[[policy.rules]]\ndecision = \"allow\"\npermission = \"fs:read\"\n",
        )
        .unwrap();
        let b = OperatorPolicy::from_toml(
            "[[policy.rules]]\ndecision = \"allow\"\npermission = \"fs:write\"\n",
        )
        .unwrap();
        assert_ne!(a.version(), b.version());
    }
}

//! `[policy]`: the operator's rules for tool actions (`weft_policy`).

use super::SectionError;

pub(super) fn read(table: &toml::Table) -> Result<weft_policy::OperatorPolicy, SectionError> {
    weft_policy::OperatorPolicy::from_table(table).map_err(|e| {
        let key = match &e {
            weft_policy::ConfigError::Rule { index, .. } => format!("policy.rules[{index}]"),
            weft_policy::ConfigError::Toml(_) => "policy".to_string(),
        };
        SectionError::from_display(
            key,
            &e,
            "see docs/permissions.md (`weft policy explain` shows what a rule decides)",
        )
    })
}

//! The routing profile of `weft.toml`: the `[providers.<name>]` tables (which API, where,
//! which environment variable or keyring entry holds the key, time limits and retries) and the
//! `[tiers.<tier>]` tables (the provider, model, context window and prices that serve a tier).
//! Other tables of the file (`[policy]`, …) belong to other parts of weft and are ignored
//! here. Keys are never read from the file: only the name of the variable or the keyring
//! reference that holds one.
//! Format: `docs/agents.md`, "Configuration".

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use weft_engine::agent::{AgentRegistry, Model, Tier};

use crate::agent::{LoopSettings, MODEL, ModelAgent, Price};
use crate::cli::{CliConfig, CliKind};
use crate::http::{HttpSettings, RetryPolicy};
use crate::keyring_ref::KeyringRef;
use crate::provider::{ProviderConfig, ProviderKind};

/// Why a routing profile was refused: the key path and the reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("weft.toml is not valid TOML: {0}")]
    Syntax(String),
    #[error("weft.toml: `{path}`: {message}")]
    Invalid { path: String, message: String },
    #[error("weft.toml: {0}")]
    Build(String),
}

fn invalid(path: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        path: path.into(),
        message: message.into(),
    }
}

/// The part of the file this crate reads.
struct File {
    providers: BTreeMap<String, toml::Value>,
    tiers: BTreeMap<String, toml::Value>,
    limits: Option<LimitsTable>,
}

/// `[limits]`: what one answer of a model may hold.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsTable {
    max_output_bytes: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderTable {
    kind: String,
    base_url: String,
    api_key_env: Option<String>,
    api_key_keyring: Option<String>,
    timeout_seconds: Option<f64>,
    connect_timeout_seconds: Option<f64>,
    max_attempts: Option<u32>,
    max_retry_after_seconds: Option<f64>,
    max_body_bytes: Option<u64>,
}

/// A provider table with a coding-agent CLI `kind` (`cli`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CliTable {
    kind: String,
    command: String,
    api_key_env: Option<String>,
    api_key_keyring: Option<String>,
    #[serde(default)]
    read_paths: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TierTable {
    provider: String,
    model: String,
    context_tokens: Option<u64>,
    input_price_per_million: Option<f64>,
    output_price_per_million: Option<f64>,
}

/// One tier of the profile.
#[derive(Clone, Debug, PartialEq)]
pub struct TierRoute {
    pub model: Model,
    /// `None` when the file gives no price (its cost is then not accounted).
    pub price: Option<Price>,
}

/// A parsed, checked routing profile.
#[derive(Clone, Debug, PartialEq)]
pub struct RoutingProfile {
    pub providers: Vec<ProviderConfig>,
    /// Coding-agent CLI providers (`kind = "claude-code"` / `"codex"`).
    pub clis: Vec<CliConfig>,
    /// In tier order (`minimal` first).
    pub tiers: Vec<TierRoute>,
    /// `[limits] max_output_bytes`: the most JSON text one output value of a model may
    /// hold; `None` keeps the loop's own setting.
    pub max_output_bytes: Option<usize>,
}

impl RoutingProfile {
    /// Parses and checks the routing tables of a `weft.toml` text.
    pub fn parse(text: &str) -> Result<RoutingProfile, ConfigError> {
        let table: toml::Table =
            toml::from_str(text).map_err(|e| ConfigError::Syntax(e.to_string()))?;
        RoutingProfile::from_table(&table)
    }

    /// Checks the routing tables (`[providers.*]`, `[tiers.*]`, `[limits]`) of a parsed
    /// `weft.toml` (`weft-host` parses the file once and hands each reader its tables).
    pub fn from_table(table: &toml::Table) -> Result<RoutingProfile, ConfigError> {
        let section = |key: &str| table.get(key).cloned();
        let file = File {
            providers: section("providers")
                .map(|v| v.try_into())
                .transpose()
                .map_err(|e: toml::de::Error| invalid("providers", e.message().to_string()))?
                .unwrap_or_default(),
            tiers: section("tiers")
                .map(|v| v.try_into())
                .transpose()
                .map_err(|e: toml::de::Error| invalid("tiers", e.message().to_string()))?
                .unwrap_or_default(),
            limits: section("limits")
                .map(|v| v.try_into())
                .transpose()
                .map_err(|e: toml::de::Error| invalid("limits", e.message().to_string()))?,
        };
        let mut providers = Vec::new();
        let mut clis = Vec::new();
        for (name, value) in file.providers {
            let path = format!("providers.{name}");
            let is_cli = value
                .get("kind")
                .and_then(toml::Value::as_str)
                .and_then(CliKind::parse)
                .is_some();
            if is_cli {
                let t: CliTable = value
                    .try_into()
                    .map_err(|e: toml::de::Error| invalid(&path, e.message().to_string()))?;
                clis.push(cli(&path, &name, t)?);
                continue;
            }
            let t: ProviderTable = value
                .try_into()
                .map_err(|e: toml::de::Error| invalid(&path, e.message().to_string()))?;
            providers.push(provider(&path, &name, t)?);
        }
        let mut tiers = Vec::new();
        for (name, value) in file.tiers {
            let path = format!("tiers.{name}");
            let tier = Tier::parse(&name).ok_or_else(|| {
                invalid(&path, "not a tier (minimal, standard, advanced, frontier)")
            })?;
            let t: TierTable = value
                .try_into()
                .map_err(|e: toml::de::Error| invalid(&path, e.message().to_string()))?;
            if !providers.iter().any(|p| p.name == t.provider)
                && !clis.iter().any(|c| c.name == t.provider)
            {
                return Err(invalid(
                    format!("{path}.provider"),
                    format!("no `[providers.{}]` table", t.provider),
                ));
            }
            if t.model.is_empty() {
                return Err(invalid(format!("{path}.model"), "is empty"));
            }
            let price = match (t.input_price_per_million, t.output_price_per_million) {
                (None, None) => None,
                (i, o) => Some(Price {
                    input_per_million: non_negative(&format!("{path}.input_price_per_million"), i)?,
                    output_per_million: non_negative(
                        &format!("{path}.output_price_per_million"),
                        o,
                    )?,
                }),
            };
            tiers.push(TierRoute {
                model: Model {
                    tier,
                    model: t.model,
                    provider: t.provider,
                    context_tokens: t.context_tokens,
                },
                price,
            });
        }
        tiers.sort_by_key(|t| t.model.tier);
        let max_output_bytes = match file.limits.and_then(|l| l.max_output_bytes) {
            None => None,
            Some(n) if n >= 16 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            Some(n) => {
                return Err(invalid(
                    "limits.max_output_bytes",
                    format!("{n} bytes cannot hold an output: give at least 16"),
                ));
            }
        };
        Ok(RoutingProfile {
            providers,
            clis,
            tiers,
            max_output_bytes,
        })
    }

    /// The model agent this profile describes: every provider built (keys read from the
    /// environment now) and every tier in its routing profile.
    pub fn model_agent(&self, mut settings: LoopSettings) -> Result<ModelAgent, ConfigError> {
        if let Some(max) = self.max_output_bytes {
            settings.max_output_bytes = max;
        }
        let mut agent = ModelAgent::new(settings);
        for p in &self.providers {
            agent = agent.with_provider(p.build().map_err(|e| ConfigError::Build(e.to_string()))?);
        }
        for c in &self.clis {
            agent = agent.with_cli(c.clone());
        }
        for t in &self.tiers {
            agent = agent.with_model(t.model.clone(), t.price);
        }
        Ok(agent)
    }

    /// The agents of a run on this profile: the engine's defaults (`exec`, and `replay`
    /// without a cassette) and the [`ModelAgent`], named as the model agent.
    pub fn registry(&self, settings: LoopSettings) -> Result<AgentRegistry, ConfigError> {
        let mut registry = AgentRegistry::with_defaults(None);
        registry.register(Arc::new(self.model_agent(settings)?));
        registry.set_model_agent(MODEL);
        Ok(registry)
    }
}

fn provider(path: &str, name: &str, t: ProviderTable) -> Result<ProviderConfig, ConfigError> {
    let kind = ProviderKind::parse(&t.kind).ok_or_else(|| {
        invalid(
            format!("{path}.kind"),
            format!(
                "`{}` is not `openai`, `anthropic`, `claude-code` or `codex`",
                t.kind
            ),
        )
    })?;
    if !(t.base_url.starts_with("http://") || t.base_url.starts_with("https://")) {
        return Err(invalid(
            format!("{path}.base_url"),
            format!("`{}` is not an http:// or https:// URL", t.base_url),
        ));
    }
    if let Some(var) = &t.api_key_env
        && (var.is_empty() || var.contains(['=', '\0']))
    {
        return Err(invalid(
            format!("{path}.api_key_env"),
            "must name an environment variable (the key itself never goes in this file)",
        ));
    }
    let mut config = ProviderConfig::new(name, kind, &t.base_url);
    config.api_key_keyring = match &t.api_key_keyring {
        None => None,
        Some(_) if t.api_key_env.is_some() => {
            return Err(invalid(
                path,
                "sets both api_key_env and api_key_keyring: keep the one that holds the key \
                 (exactly one key source per provider)",
            ));
        }
        Some(r) => {
            Some(KeyringRef::parse(r).map_err(|e| invalid(format!("{path}.api_key_keyring"), e))?)
        }
    };
    config.api_key_env = t.api_key_env;
    let defaults = HttpSettings::default();
    config.http = HttpSettings {
        timeout: seconds(
            &format!("{path}.timeout_seconds"),
            t.timeout_seconds,
            defaults.timeout,
        )?,
        connect_timeout: seconds(
            &format!("{path}.connect_timeout_seconds"),
            t.connect_timeout_seconds,
            defaults.connect_timeout,
        )?,
        retry: RetryPolicy {
            max_attempts: match t.max_attempts {
                Some(0) => {
                    return Err(invalid(
                        format!("{path}.max_attempts"),
                        "must be at least 1",
                    ));
                }
                Some(n) => n,
                None => defaults.retry.max_attempts,
            },
            max_retry_after: seconds(
                &format!("{path}.max_retry_after_seconds"),
                t.max_retry_after_seconds,
                defaults.retry.max_retry_after,
            )?,
            ..defaults.retry
        },
        max_body_bytes: match t.max_body_bytes {
            None => defaults.max_body_bytes,
            Some(n) if n >= 1024 => usize::try_from(n).unwrap_or(usize::MAX),
            Some(n) => {
                return Err(invalid(
                    format!("{path}.max_body_bytes"),
                    format!("{n} bytes cannot hold an answer: give at least 1024"),
                ));
            }
        },
    };
    Ok(config)
}

fn cli(path: &str, name: &str, t: CliTable) -> Result<CliConfig, ConfigError> {
    let kind = CliKind::parse(&t.kind)
        .ok_or_else(|| invalid(format!("{path}.kind"), "not a coding-agent CLI kind"))?;
    let absolute = |key: &str, p: &str| {
        if std::path::Path::new(p).is_absolute() {
            Ok(std::path::PathBuf::from(p))
        } else {
            Err(invalid(
                format!("{path}.{key}"),
                format!("`{p}` is not an absolute path"),
            ))
        }
    };
    let command = absolute("command", &t.command)?;
    let read_paths = t
        .read_paths
        .iter()
        .map(|p| absolute("read_paths", p))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(var) = &t.api_key_env
        && (var.is_empty() || var.contains(['=', '\0']))
    {
        return Err(invalid(
            format!("{path}.api_key_env"),
            "must name an environment variable (the key itself never goes in this file)",
        ));
    }
    let api_key_keyring = match &t.api_key_keyring {
        None => None,
        Some(_) if t.api_key_env.is_some() => {
            return Err(invalid(
                format!("{path}.api_key_keyring"),
                "sets both api_key_env and api_key_keyring: keep the one that holds the key",
            ));
        }
        Some(r) => {
            Some(KeyringRef::parse(r).map_err(|e| invalid(format!("{path}.api_key_keyring"), e))?)
        }
    };
    Ok(CliConfig {
        name: name.to_string(),
        kind,
        command,
        api_key_env: t.api_key_env,
        api_key_keyring,
        read_paths,
    })
}

fn seconds(path: &str, value: Option<f64>, default: Duration) -> Result<Duration, ConfigError> {
    match value {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(invalid(
            path,
            format!("{s} is not a positive number of seconds"),
        )),
    }
}

fn non_negative(path: &str, value: Option<f64>) -> Result<f64, ConfigError> {
    match value {
        None => Err(invalid(path, "give both prices, or neither")),
        Some(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Some(v) => Err(invalid(path, format!("{v} is not a price"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROFILE: &str = r#"
[policy]
default = "deny"   # another part of weft reads this table

[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:8090/"

[providers.claude]
kind = "anthropic"
base_url = "https://api.anthropic.com"
api_key_env = "ANTHROPIC_API_KEY"
timeout_seconds = 120
max_attempts = 3

[tiers.advanced]
provider = "claude"
model = "claude-sonnet"
context_tokens = 200000
input_price_per_million = 3.0
output_price_per_million = 15.0

[tiers.minimal]
provider = "local"
model = "smollm2"
context_tokens = 4096
"#;

    #[test]
    fn providers_and_tiers_parse_and_other_tables_are_ignored() {
        let p = RoutingProfile::parse(PROFILE).unwrap();
        assert_eq!(p.providers.len(), 2);
        let claude = p.providers.iter().find(|c| c.name == "claude").unwrap();
        assert_eq!(claude.kind, ProviderKind::Anthropic);
        assert_eq!(claude.api_key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
        assert_eq!(claude.http.timeout, Duration::from_secs(120));
        assert_eq!(claude.http.retry.max_attempts, 3);
        let local = p.providers.iter().find(|c| c.name == "local").unwrap();
        assert_eq!(
            local.base_url, "http://127.0.0.1:8090",
            "the trailing slash is dropped"
        );
        let tiers: Vec<(Tier, &str, Option<f64>)> = p
            .tiers
            .iter()
            .map(|t| {
                (
                    t.model.tier,
                    t.model.model.as_str(),
                    t.price.map(|p| p.output_per_million),
                )
            })
            .collect();
        assert_eq!(
            tiers,
            vec![
                (Tier::Minimal, "smollm2", None),
                (Tier::Advanced, "claude-sonnet", Some(15.0))
            ]
        );
    }

    #[test]
    fn mistakes_name_their_key() {
        let cases = [
            (
                "[providers.x]\nkind = \"gemini\"\nbase_url = \"http://h\"",
                "providers.x.kind",
            ),
            (
                "[providers.x]\nkind = \"openai\"\nbase_url = \"ftp://h\"",
                "providers.x.base_url",
            ),
            (
                "[providers.x]\nkind = \"openai\"\nbase_url = \"http://h\"\napi_key = \"sk-1\"",
                "providers.x",
            ),
            (
                "[tiers.huge]\nprovider = \"x\"\nmodel = \"m\"",
                "tiers.huge",
            ),
            (
                "[tiers.minimal]\nprovider = \"nowhere\"\nmodel = \"m\"",
                "tiers.minimal.provider",
            ),
            (
                "[providers.x]\nkind = \"openai\"\nbase_url = \"http://h\"\n[tiers.minimal]\nprovider = \"x\"\nmodel = \"m\"\ninput_price_per_million = 1.0",
                "tiers.minimal.output_price_per_million",
            ),
            (
                "[providers.x]\nkind = \"openai\"\nbase_url = \"http://h\"\nmax_attempts = 0",
                "providers.x.max_attempts",
            ),
        ];
        for (text, path) in cases {
            match RoutingProfile::parse(text) {
                Err(ConfigError::Invalid { path: p, message }) => assert_eq!(p, path, "{message}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(matches!(
            RoutingProfile::parse("[providers"),
            Err(ConfigError::Syntax(_))
        ));
    }

    #[test]
    fn coding_agent_clis_are_providers_with_a_command() {
        let text = r#"
[providers.cc]
kind = "claude-code"
command = "/opt/claude/bin/claude"
api_key_env = "ANTHROPIC_API_KEY"
read_paths = ["/opt/claude"]

[providers.cx]
kind = "codex"
command = "/usr/local/bin/codex"

[tiers.advanced]
provider = "cc"
model = "claude-sonnet-4-5"

[tiers.frontier]
provider = "cx"
model = "gpt-5-codex"
"#;
        let p = RoutingProfile::parse(text).unwrap();
        assert!(p.providers.is_empty());
        let kinds: Vec<CliKind> = p.clis.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [CliKind::ClaudeCode, CliKind::Codex]);
        assert_eq!(
            p.clis[0].read_paths,
            [std::path::PathBuf::from("/opt/claude")]
        );
        assert!(p.model_agent(LoopSettings::default()).unwrap().has_cli());
        let relative = text.replace("/usr/local/bin/codex", "codex");
        let e = RoutingProfile::parse(&relative).unwrap_err().to_string();
        assert!(
            e.contains("providers.cx.command") && e.contains("absolute"),
            "{e}"
        );
        let with_url = text.replace(
            "kind = \"codex\"",
            "kind = \"codex\"\nbase_url = \"http://x\"",
        );
        let e = RoutingProfile::parse(&with_url).unwrap_err().to_string();
        assert!(e.contains("base_url"), "{e}");
        let keyring = text.replace(
            "kind = \"codex\"",
            "kind = \"codex\"\napi_key_keyring = \"weft/codex\"",
        );
        let p = RoutingProfile::parse(&keyring).unwrap();
        assert_eq!(
            p.clis[1].api_key_keyring.as_ref().unwrap().to_string(),
            "weft/codex"
        );
        let both = text.replace(
            "read_paths = [",
            "api_key_keyring = \"weft/claude\"\nread_paths = [",
        );
        let e = RoutingProfile::parse(&both).unwrap_err().to_string();
        assert!(
            e.contains("providers.cc.api_key_keyring") && e.contains("both"),
            "{e}"
        );
    }

    #[test]
    fn a_key_comes_from_a_variable_or_a_keyring_reference_never_both() {
        let with = |key: &str| {
            format!("[providers.p]\nkind = \"openai\"\nbase_url = \"https://x\"\n{key}\n")
        };
        let p = RoutingProfile::parse(&with("api_key_keyring = \"weft/openai\"")).unwrap();
        let r = p.providers[0].api_key_keyring.clone().unwrap();
        assert_eq!((r.service.as_str(), r.account.as_str()), ("weft", "openai"));
        assert_eq!(p.providers[0].api_key_env, None);
        let both = with("api_key_env = \"K\"\napi_key_keyring = \"weft/openai\"");
        let e = RoutingProfile::parse(&both).unwrap_err().to_string();
        assert!(
            e.contains("`providers.p`") && e.contains("keep the one"),
            "{e}"
        );
        let e = RoutingProfile::parse(&with("api_key_keyring = \"sk-live-123\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("providers.p.api_key_keyring"), "{e}");
        assert!(
            e.contains("SERVICE/ACCOUNT") && !e.contains("sk-live-123"),
            "{e}"
        );
    }
}

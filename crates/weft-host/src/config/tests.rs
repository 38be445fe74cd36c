//! The file parsed once into its sections; refusals located at the key at fault.

use std::path::Path;

use super::*;

fn parse(text: &str) -> Result<WeftConfig, ConfigError> {
    WeftConfig::parse(Path::new("weft.toml"), text)
}

fn refusal(text: &str) -> Located {
    match parse(text) {
        Err(ConfigError::Invalid(l)) => l,
        other => panic!("{text}: expected a refusal, got {other:?}"),
    }
}

#[test]
fn every_section_is_read_from_one_parse() {
    let c = parse(
        r#"
[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:9"

[tiers.minimal]
provider = "local"
model = "small"

[workspace]
isolate = "declared"

[policy]
version = "v1"
[[policy.rules]]
decision = "ask"
permission = "shell:exec:*"

[mcp.servers.files]
command = "/bin/true"
"#,
    )
    .unwrap();
    assert_eq!(c.routing.providers[0].name, "local");
    assert_eq!(c.routing.tiers[0].model.model, "small");
    assert_eq!(c.workspace.isolate, weft_engine::IsolateMode::Declared);
    assert_eq!(c.policy.rules().len(), 1);
    assert!(c.policy.version().starts_with("v1+"));
    assert!(c.mcp.servers.contains_key("files"));
    // An empty file is every section's default.
    let empty = parse("").unwrap();
    assert!(empty.routing.tiers.is_empty() && empty.policy.rules().is_empty());
    assert_eq!(empty.workspace.isolate, weft_engine::IsolateMode::Agents);
}

#[test]
fn a_refusal_names_the_file_line_column_key_and_a_hint() {
    let l = refusal(
        "[providers.p]\nkind = \"openai\"\nbase_url = \"http://x\"\n\n[tiers.minimal]\nprovider = \"nowhere\"\nmodel = \"m\"\n",
    );
    assert_eq!(l.position, Some((6, 1)), "{l}");
    assert!(
        l.message
            .contains("`tiers.minimal.provider`: no `[providers.nowhere]` table"),
        "{l}"
    );
    let shown = l.to_string();
    assert!(
        shown.starts_with("weft.toml:6:1: `tiers.minimal.provider`"),
        "{shown}"
    );
    assert!(shown.contains("help: see docs/agents.md"), "{shown}");

    let l = refusal("[workspace]\n  isolate = \"some\"\n");
    assert_eq!(l.position, Some((2, 3)), "{l}");
    assert!(l.message.contains("workspace.isolate"), "{l}");

    let l = refusal(
        "[[policy.rules]]\ndecision = \"allow\"\npermission = \"fs:read:*\"\n[[policy.rules]]\ndecision = \"allow\"\npermission = \"disk:x\"\n",
    );
    assert_eq!(l.position, Some((4, 1)), "the second rule's table: {l}");
    assert!(l.message.contains("policy.rules[1]"), "{l}");
    assert!(l.help.contains("docs/permissions.md"));

    let l = refusal("# servers\n[mcp.servers.files]\nurl = \"ftp://x\"\n");
    assert_eq!(l.position, Some((2, 14)), "the server's name: {l}");
    assert!(
        l.message
            .contains("[mcp.servers.files]: `url` must be http:// or https://"),
        "{l}"
    );

    // A shape error inside a section: the section's key, the reader's reason.
    let l = refusal("[policy]\ncolour = \"red\"\n");
    assert_eq!(l.position, Some((1, 2)), "{l}");
    assert!(l.message.contains("colour"), "{l}");
}

#[test]
fn one_section_is_read_alone_from_the_parsed_file() {
    // A wrong routing table does not stop a reader of `[policy]` alone.
    let file = ConfigFile::parse(
        Path::new("weft.toml"),
        "[tiers.standard]\nmodel = \"m\"\n\n[[policy.rules]]\ndecision = \"deny\"\npermission = \"fs:*\"\n".into(),
    )
    .unwrap();
    assert_eq!(file.policy().unwrap().rules().len(), 1);
    let ConfigError::Invalid(l) = file.routing().unwrap_err() else {
        panic!("expected a located refusal")
    };
    assert_eq!(l.position, Some((1, 8)), "{l}");
    assert!(l.message.contains("missing field `provider`"), "{l}");
    assert!(WeftConfig::of_file(&file).is_err());
}

#[test]
fn text_that_is_not_toml_is_refused_where_it_breaks() {
    let l = refusal("[tiers.minimal]\nprovider = \"p\"\nmodel = \n");
    assert_eq!(l.position.map(|(line, _)| line), Some(3), "{l}");
    assert!(l.message.starts_with("not valid TOML"), "{l}");
}

#[test]
fn a_missing_file_points_to_weft_init() {
    let dir = tempfile::tempdir().unwrap();
    let e = WeftConfig::load(&dir.path().join("weft.toml")).unwrap_err();
    let shown = e.to_string();
    assert!(shown.starts_with("cannot read "), "{shown}");
    assert!(shown.contains("`weft init` writes"), "{shown}");
}

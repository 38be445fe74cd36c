//! One entry point to every parser of what a provider sends — the two HTTP wire formats
//! (whole answers and streams), the coding-agent CLIs' JSON-lines streams, and the
//! `retry-after` header — for the fuzz target (`fuzz/fuzz_targets/provider_answer.rs`) and
//! the property tests below. Each parser may refuse its input (a classified
//! `ProviderError`); none may panic, whatever the bytes.

use serde_json::Value;

use crate::cli::stream::{Dialect, parse as parse_cli};
use crate::http::parse_retry_after;
use crate::{anthropic, openai};

/// Feeds `bytes` to the parser its first byte selects (the rest is the input), and
/// returns whether that parser accepted it.
pub fn parse_any(bytes: &[u8]) -> bool {
    let Some((&which, rest)) = bytes.split_first() else {
        return false;
    };
    let text = String::from_utf8_lossy(rest);
    match which % 7 {
        0 => json(&text).is_some_and(|v| openai::parse_response(&v).is_ok()),
        1 => openai_stream(&text),
        2 => json(&text).is_some_and(|v| anthropic::parse_response(&v).is_ok()),
        3 => anthropic_stream(&text),
        4 => parse_cli(Dialect::ClaudeCode, &text).is_ok(),
        5 => parse_cli(Dialect::Codex, &text).is_ok(),
        _ => parse_retry_after(&text).is_some(),
    }
}

fn json(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

/// Events are separated by blank lines; each is its `data`.
fn openai_stream(text: &str) -> bool {
    let mut acc = openai::StreamAccumulator::default();
    for data in text.split("\n\n") {
        match acc.push(data) {
            Ok(crate::http::Flow::Continue) => {}
            Ok(crate::http::Flow::Done) => return acc.finish().is_ok(),
            Err(_) => return false,
        }
    }
    false
}

/// Events are separated by blank lines; each is `name\ndata`.
fn anthropic_stream(text: &str) -> bool {
    let mut acc = anthropic::StreamAccumulator::default();
    for event in text.split("\n\n") {
        let (name, data) = event.split_once('\n').unwrap_or(("", event));
        match acc.push(name, data) {
            Ok(crate::http::Flow::Continue) => {}
            Ok(crate::http::Flow::Done) => return acc.finish().is_ok(),
            Err(_) => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// JSON-ish text: the shapes the parsers look for, with hostile values in them.
    fn hostile_value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            Just("-1".to_string()),
            Just("1e300".to_string()),
            Just("18446744073709551615".to_string()),
            Just("18446744073709551616".to_string()),
            Just("1.5".to_string()),
            Just("\"x\"".to_string()),
            Just("[]".to_string()),
            Just("{}".to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec(
                    (
                        prop_oneof![
                            Just("usage"),
                            Just("prompt_tokens"),
                            Just("completion_tokens"),
                            Just("input_tokens"),
                            Just("output_tokens"),
                            Just("choices"),
                            Just("message"),
                            Just("tool_calls"),
                            Just("function"),
                            Just("arguments"),
                            Just("content"),
                            Just("index"),
                            Just("type"),
                            Just("delta"),
                            Just("error"),
                            Just("total_cost_usd"),
                            Just("result"),
                        ],
                        inner
                    ),
                    0..5
                )
                .prop_map(|kv| format!(
                    "{{{}}}",
                    kv.iter()
                        .map(|(k, v)| format!("\"{k}\":{v}"))
                        .collect::<Vec<_>>()
                        .join(",")
                )),
            ]
        })
    }

    proptest! {
        #[test]
        fn no_parser_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            let _ = parse_any(&bytes);
        }

        #[test]
        fn no_parser_panics_on_hostile_json(which in 0u8..7, body in hostile_value(), lines in 1usize..4) {
            let joined = match which {
                1 => (0..lines).map(|_| body.clone()).chain(["[DONE]".to_string()]).collect::<Vec<_>>().join("\n\n"),
                3 => (0..lines).map(|_| format!("message_delta\n{body}")).collect::<Vec<_>>().join("\n\n"),
                4 | 5 => (0..lines).map(|_| body.clone()).collect::<Vec<_>>().join("\n"),
                _ => body.clone(),
            };
            let mut input = vec![which];
            input.extend_from_slice(joined.as_bytes());
            let _ = parse_any(&input);
        }
    }
}

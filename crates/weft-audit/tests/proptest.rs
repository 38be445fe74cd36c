//! Any single-byte change anywhere in a valid log is detected: the verifier fails (a line
//! that no longer parses is a failure too).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

use proptest::prelude::*;
use serde_json::json;
use weft_audit::{GENESIS, encode_line};

/// Seven lines exercising strings with escapes, non-ASCII text, floats and nesting.
fn valid_log() -> Vec<u8> {
    let mut out = String::new();
    let mut prev = GENESIS.to_owned();
    for i in 1..=7u64 {
        let entry = json!({
            "kind": "criterion_verdict", "run_id": format!("run-{i}"), "at_ms": 1_700_000_000_000u64 + i,
            "actor": "ops\"lead\u{e9}", "data": {"score": 0.5 + i as f64, "tags": ["a\nb", null, true], "n": {"m": -(i as i64)}}
        });
        let (line, hash) = encode_line(i, &prev, &entry);
        out.push_str(&line);
        prev = hash;
    }
    out.into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn any_single_byte_change_is_detected(at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut log = valid_log();
        prop_assert!(weft_audit::verify(&log[..], None).is_ok());
        let i = at.index(log.len());
        prop_assume!(log[i] != byte);
        log[i] = byte;
        prop_assert!(weft_audit::verify(&log[..], None).is_err());
    }
}

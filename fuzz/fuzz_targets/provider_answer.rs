//! Fuzz target: no parser of what a model provider sends may panic, whatever the bytes.
//!
//! The first byte picks the parser (OpenAI or Anthropic, whole answer or stream; Claude
//! Code or Codex JSON lines; the `retry-after` header); the rest is its input. Refusals
//! (classified `ProviderError`s) are expected; only a panic is a bug.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = weft_agents::untrusted::parse_any(data);
});

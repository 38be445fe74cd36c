//! Test doubles shared by the integration tests (docs/agents.md, "Test doubles"): the
//! loopback model server is `weft_test_support::loopback`; what is this crate's own is its
//! recorded fixtures.

#![allow(dead_code)]
// each test binary uses a part of it
// A test double: a panic here is a failed test with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod loopback {
    use std::path::PathBuf;

    pub use weft_test_support::loopback::*;

    /// The path of a fixture file.
    pub fn fixture_path(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    /// A fixture's text.
    pub fn fixture(name: &str) -> String {
        std::fs::read_to_string(fixture_path(name)).expect("the fixture exists")
    }

    /// The events of an SSE fixture, each with its terminating blank line, exactly as
    /// recorded.
    pub fn sse_events(name: &str) -> Vec<String> {
        sse_events_of(&fixture(name))
    }

    /// The SSE fixture `name` as a reply, framed as `framing`.
    pub fn sse(name: &str, framing: Framing) -> Reply {
        Reply::sse(sse_events(name), framing)
    }

    /// [`sse`] cut after `after` events.
    pub fn sse_cut(name: &str, framing: Framing, after: usize) -> Reply {
        Reply::sse_cut(sse_events(name), framing, after)
    }
}

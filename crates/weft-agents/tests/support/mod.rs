//! Test doubles shared by the integration tests (docs/agents.md, "Test doubles").

#![allow(dead_code)]
// each test binary uses a part of it
// A test double: a panic here is a failed test with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod loopback;

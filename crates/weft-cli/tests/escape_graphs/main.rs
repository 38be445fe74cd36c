//! The escape suite through the real binary: every attack of the weft-sandbox escape suite
//! (`crates/weft-sandbox/tests/escape/`, one module per class there and here) as an AGS
//! graph whose `exec` nodes run it through `weft run --sandbox`. For each, the harness
//! snapshots every file outside the allowed set (the step's write roots less what the policy
//! and weft's state keep) before and after and fails naming each changed, added or removed
//! path; canary secrets planted outside the grants must reach none of the step's output, the
//! run's events, the store or any file; each attempt must show its own error (a typo in an
//! attack does not pass as a refusal); and for several classes the same graph without
//! `--sandbox` does change or read the canary, so the check can fail. `.ci/run` runs the
//! suite as root and again as `nobody` (`WEFT_BIN` names the copied binary).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure"
)]

mod harness;

mod address;
mod criteria;
mod descriptors;
mod environment;
mod fail_closed;
mod filesystem;
mod grant_roots;
mod identity;
mod limits;
mod metadata;
mod network;
mod policy;
mod privileges;
mod state;

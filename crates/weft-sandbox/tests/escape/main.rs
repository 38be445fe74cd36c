//! The escape suite, on real processes through the real helper binary, one module per class
//! of escape (docs/permissions.md, "Threat model"): each attack is paired with a control that
//! shows the same command succeeds where the grant allows it, so a refusal is the sandbox's
//! doing. The suite runs as root and, in `.ci/run`, again as an unprivileged user.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure"
)]

mod common;
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

//! The environment: only the allowlist reaches the command; loader variables are refused.

use weft_sandbox::{Confinement, SandboxError};

use crate::common::*;

#[tokio::test(flavor = "multi_thread")]
async fn only_the_allowlisted_environment_is_visible() {
    let (_dir, ws) = workspace();
    // cargo sets this in the test's own environment; it must not reach the command.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let c = Confinement {
        read_roots: vec![ws.clone()],
        ..Confinement::minimal()
    };
    let mut env = env();
    env.push(("VISIBLE".into(), "yes".into()));
    let o = run_in(&ws, &["/usr/bin/env".to_owned()], &c, &env)
        .await
        .unwrap();
    let mut names: Vec<String> = text(&o.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, _)| k.to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["LANG", "PATH", "VISIBLE"]);
    // Loader variables are refused outright.
    env.push(("LD_PRELOAD".into(), "/tmp/evil.so".into()));
    let e = run_in(&ws, &["/usr/bin/env".to_owned()], &c, &env)
        .await
        .unwrap_err();
    assert!(
        matches!(e, SandboxError::Env(ref n) if n == "LD_PRELOAD"),
        "{e}"
    );
}

//! `shell_exec` on real processes through the real OS sandbox. This binary is its own
//! sandbox helper: called with one of the helper's modes (`--probe`, `--policy JSON -- CMD…`
//! and the supervisor's re-executions of itself, `weft_sandbox::helper::MODES`) it runs
//! `weft_sandbox::helper::main`, what `weft sandbox-exec` runs;
//! otherwise it runs the tests below in order and fails on the first panic.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure"
)]

mod common;

use std::future::Future;
use std::pin::Pin;

use common::{Fixture, failed, ok};
use serde_json::json;
use weft_core::FailureClass;
use weft_policy::Source;
use weft_sandbox::{Helper, Sandbox};
use weft_tools::ToolOutcome;

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args
        .first()
        .is_some_and(|a| weft_sandbox::helper::MODES.iter().any(|m| a == *m))
    {
        std::process::exit(weft_sandbox::helper::main(args));
    }
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    type Test = fn() -> Pin<Box<dyn Future<Output = ()>>>;
    let tests: [(&str, Test); 5] = [
        (
            "runs_an_argv_without_a_shell_with_the_idempotency_key",
            || Box::pin(runs_an_argv_without_a_shell_with_the_idempotency_key()),
        ),
        ("writes_follow_the_node_confinement", || {
            Box::pin(writes_follow_the_node_confinement())
        }),
        ("operator_rules_and_node_grants_deny_commands", || {
            Box::pin(operator_rules_and_node_grants_deny_commands())
        }),
        ("a_journalled_command_is_not_run_again", || {
            Box::pin(a_journalled_command_is_not_run_again())
        }),
        ("without_a_sandbox_the_command_is_blocked_never_run", || {
            Box::pin(without_a_sandbox_the_command_is_blocked_never_run())
        }),
    ];
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut ran = 0;
    for (name, test) in tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        runtime.block_on(test());
        println!("test {name} ... ok");
        ran += 1;
    }
    println!("test result: ok. {ran} passed");
}

async fn sandboxed() -> Fixture {
    let mut f = Fixture::writer();
    let me = std::env::current_exe().unwrap();
    let sandbox = Sandbox::probe(Helper::binary(me)).await;
    assert!(
        sandbox.report().fully_enforced(),
        "the sandbox is not enforced here: {:?}",
        sandbox.report().missing()
    );
    f.sandbox = Some(sandbox);
    f
}

async fn runs_an_argv_without_a_shell_with_the_idempotency_key() {
    let mut f = sandboxed().await;
    f.put("x", "keep me");
    let r = f
        .call("shell_exec", json!({"command": "echo a; rm x"}))
        .await;
    let r = ok(&r);
    assert_eq!(r["argv"], json!(["echo", "a;", "rm", "x"]));
    assert_eq!(
        r["stdout"], "a; rm x\n",
        "one argv: `;` is an argument of echo"
    );
    assert_eq!(r["exit_code"], 0);
    assert_eq!(f.get("x"), "keep me");
    f.next();
    let r = f.call("shell_exec", json!({"command": "env"})).await;
    let env = ok(&r)["stdout"].as_str().unwrap().to_owned();
    let key = f.call_id().key();
    assert!(
        env.contains(&format!("WEFT_IDEMPOTENCY_KEY={key}")),
        "{env}"
    );
    let names: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
    for name in &names {
        assert!(
            ["PATH", "HOME", "LANG", "WEFT_IDEMPOTENCY_KEY", "PWD"].contains(name),
            "{name} leaked into the command's environment"
        );
    }
    f.next();
    let r = f
        .call("shell_exec", json!({"command": "sh -c 'exit 3'"}))
        .await;
    assert_eq!(
        ok(&r)["exit_code"],
        3,
        "a failing command is a result, not an error"
    );
    let r = f
        .call("shell_exec", json!({"command": "echo 'unclosed"}))
        .await;
    assert!(matches!(r, ToolOutcome::Denied { .. }), "{r:?}");
}

async fn writes_follow_the_node_confinement() {
    let mut f = sandboxed().await;
    let r = f
        .call("shell_exec", json!({"command": "touch made-by-shell"}))
        .await;
    assert_eq!(ok(&r)["exit_code"], 0, "{r:?}");
    assert!(f.path("made-by-shell").exists());
    // A node that may write only under out/: the OS refuses the rest.
    let mut narrow = Fixture::new(json!({"workspace": "read_write",
        "permissions": ["fs:read:**", "fs:write:out/**", "shell:exec:*"]}));
    narrow.sandbox = f.sandbox.take();
    let r = narrow
        .call("shell_exec", json!({"command": "touch out/ok root-file"}))
        .await;
    let r = ok(&r);
    assert_ne!(r["exit_code"], 0, "{r}");
    assert!(narrow.path("out/ok").exists());
    assert!(!narrow.path("root-file").exists());
    narrow.next();
    let outside = narrow.dir.path().join("outside");
    let r = narrow
        .call(
            "shell_exec",
            json!({"command": format!("cat {}", narrow.dir.path().join("outside").display())}),
        )
        .await;
    assert_ne!(
        ok(&r)["exit_code"],
        0,
        "outside the workspace is not readable"
    );
    assert!(outside.exists());
}

async fn operator_rules_and_node_grants_deny_commands() {
    let f = sandboxed().await;
    f.put("x", "keep me");
    let r = f.call("shell_exec", json!({"command": "rm x"})).await;
    let ToolOutcome::Denied { decision } = r else {
        panic!("{r:?}")
    };
    assert_eq!(
        decision.source,
        Source::Rule {
            index: 3,
            permission: "shell:exec:rm*".into()
        }
    );
    assert_eq!(f.get("x"), "keep me");
    let mut only_git = Fixture::new(json!({"workspace": "read_write",
        "permissions": ["fs:read:**", "shell:exec:git status"]}));
    only_git.sandbox = f.sandbox.clone();
    let r = only_git
        .call("shell_exec", json!({"command": "touch y"}))
        .await;
    let ToolOutcome::Denied { decision } = r else {
        panic!("{r:?}")
    };
    assert_eq!(decision.source, Source::Node);
    assert!(!only_git.path("y").exists());
}

async fn a_journalled_command_is_not_run_again() {
    let mut f = sandboxed().await;
    let args = json!({"command": "mkdir once"});
    let first = f.call("shell_exec", args.clone()).await;
    assert_eq!(ok(&first)["exit_code"], 0);
    // Run again for real, mkdir would fail (the directory exists); replayed, it does not run.
    let again = f.call("shell_exec", args.clone()).await;
    assert_eq!(
        again,
        ToolOutcome::Ok {
            result: ok(&first).clone(),
            replayed: true
        }
    );
    f.next();
    let real = f.call("shell_exec", args).await;
    assert_ne!(ok(&real)["exit_code"], 0, "a new call slot runs for real");
}

async fn without_a_sandbox_the_command_is_blocked_never_run() {
    let f = Fixture::writer();
    let r = f.call("shell_exec", json!({"command": "touch z"})).await;
    assert_eq!(failed(&r).0, FailureClass::Blocked);
    let broken = Sandbox::probe(Helper::binary("/nonexistent/weft-sandbox-exec")).await;
    let mut g = Fixture::writer();
    g.sandbox = Some(broken);
    let r = g.call("shell_exec", json!({"command": "touch z"})).await;
    assert_eq!(failed(&r).0, FailureClass::Blocked);
    assert!(!f.path("z").exists() && !g.path("z").exists());
}

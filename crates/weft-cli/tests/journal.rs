//! The tool journal in the run's log (`docs/engine.md` §3o), through real processes: a model
//! node (a loopback provider double) edits a file with `file_edit`, `weft run` is killed
//! with SIGKILL right after that call's `tool_effect` reached the log, and `weft resume`
//! finishes the run: the resumed attempt's same call slot is answered from the log
//! (`replayed`), so the edit happened exactly once. The effect is in `weft events`, the run
//! record and the audit log. The node works in its own copy of the project (the default
//! `[workspace] isolate = "agents"`), kept while the attempt runs: the resumed attempt
//! continues in the dead one's copy, and its edit is merged once, as a recorded patch.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

mod kill;
use weft_test_support::scripted as provider;

use provider::{Answer, scripted, tool_call};
use serde_json::{Value, json};
use weft_store::{EventLog, Store};

const DOC: &str = r#"ags_version: "1.0"
kind: AgenticGraph
id: t/journal
title: A model node with a side effect
objective: Add one entry to the log file, then report.
entrypoints: [edit]
nodes:
  edit:
    title: Edit
    description: Add the entry to log.txt with file_edit, then emit the outcome.
    requirements:
      tools: [file_edit]
      permissions: ["fs:read:log.txt", "fs:write:log.txt"]
      workspace: read_write
    constraints:
      max_wall_clock_seconds: 60
    outputs:
      outcome:
        type: string
        description: What was done.
"#;

fn profile(port: u16) -> String {
    format!(
        "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}\"\nmax_attempts = 1\n\
         [tiers.standard]\nprovider = \"p\"\nmodel = \"mid\"\n\
         [[policy.rules]]\ndecision = \"allow\"\npermission = \"fs:read:log.txt\"\n\
         [[policy.rules]]\ndecision = \"allow\"\npermission = \"fs:write:log.txt\"\n"
    )
}

#[test]
fn a_killed_run_resumes_without_doing_a_journalled_effect_again() {
    // The edit appends a line: done twice, the file would have it twice.
    let edit = tool_call(
        "file_edit",
        json!({"path": "log.txt", "old": "entries:\n", "new": "entries:\n- one\n"}),
    );
    let (port, seen) = scripted(vec![
        // `weft run`: the edit, then the next turn hangs until the process is killed.
        Answer::Body(edit.clone()),
        Answer::Hang,
        // `weft resume`: the model asks for the same edit again, then reports.
        Answer::Body(edit),
        Answer::Body(tool_call("emit_output", json!({"outcome": "added"}))),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("weft.toml"), profile(port)).unwrap();
    std::fs::write(d.join("j.agraph.yaml"), DOC).unwrap();
    std::fs::write(d.join("log.txt"), "entries:\n").unwrap();

    let run = [
        "run",
        "j.agraph.yaml",
        "--config",
        "weft.toml",
        "--db",
        "j.db",
    ];
    // Killed once the model was asked for its next turn (the hanging one).
    let asked = || {
        while seen.lock().unwrap().len() < 2 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    };
    let (run_id, effect_seen) = kill::kill_at_kind(d, &run, "tool_effect", asked);
    assert!(effect_seen, "no tool_effect before the kill");
    // The edit is in the attempt's kept copy, not in the project yet.
    assert_eq!(
        std::fs::read_to_string(d.join("log.txt")).unwrap(),
        "entries:\n"
    );
    let copy = d.join(format!(".weft/scratch/{run_id}/edit/1/work/log.txt"));
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), "entries:\n- one\n");

    let out = kill::weft()
        .current_dir(d)
        .args(["resume", &run_id, "--db", "j.db", "--config", "weft.toml"])
        .args(["--retry-uncertain", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{stderr}"));
    assert_eq!(report["status"], "succeeded", "{report} {stderr}");
    // Exactly once, merged from the copy, which is gone.
    assert_eq!(
        std::fs::read_to_string(d.join("log.txt")).unwrap(),
        "entries:\n- one\n"
    );
    assert!(!copy.exists());
    // The resumed attempt's model was told the call's (journalled) result.
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 4, "{requests:?}");
    assert!(requests[3].contains("replacements"), "{}", requests[3]);

    // The log: one effect, by attempt 1, under the key the resumed attempt 2 used too.
    let store = Store::open(d.join("j.db")).unwrap();
    let log = store.read(&run_id, 1, usize::MAX).unwrap();
    let effects: Vec<&Value> = log
        .iter()
        .filter(|r| r.kind == "tool_effect")
        .map(|r| &r.payload)
        .collect();
    assert_eq!(effects.len(), 1, "{effects:?}");
    let effect = effects[0];
    assert_eq!(
        (&effect["node"], &effect["attempt"], &effect["tool"]),
        (&json!("edit"), &json!(1), &json!("file_edit"))
    );
    assert_eq!(effect["result"]["replacements"], 1);
    assert!(effect["key"].as_str().unwrap().starts_with("idem-"));
    assert!(effect["arguments"].as_str().unwrap().starts_with("sha256:"));
    assert!(
        !effect.to_string().contains("- one"),
        "arguments stay out of the log: {effect}"
    );
    let patches: Vec<&Value> = log
        .iter()
        .filter(|r| r.kind == "node_patch")
        .map(|r| &r.payload)
        .collect();
    assert_eq!(patches.len(), 1, "{patches:?}");
    assert_eq!(
        (
            &patches[0]["attempt"],
            &patches[0]["applied"],
            &patches[0]["files"]
        ),
        (&json!(2), &json!(true), &json!(["log.txt"]))
    );
    kill::check_log(&store, &run_id, "resumed");
    kill::check_audit(d, &store, &run_id, "resumed");

    // `weft events` and the run record show it.
    let events = kill::weft()
        .current_dir(d)
        .args(["events", &run_id, "--db", "j.db"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&events.stdout).contains("\"tool_effect\""));
    let record = kill::weft()
        .current_dir(d)
        .args(["record", &run_id, "--db", "j.db"])
        .output()
        .unwrap();
    let record: Value = serde_json::from_slice(&record.stdout).unwrap();
    let node = &record["nodes"][0];
    assert_eq!(node["x-weft-effects"][0]["tool"], "file_edit", "{node}");
    // Usage on the attempt that spent it: the resumed attempt 2 made two turns of 10 + 5
    // tokens; abandoned attempt 1 logged none before the kill (its spend is unknown).
    let attempts = node["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{node}");
    assert_eq!(
        (
            &attempts[1]["attempt"],
            &attempts[1]["usage"]["input_tokens"],
            &attempts[1]["usage"]["output_tokens"]
        ),
        (&json!(2), &json!(20), &json!(10)),
        "{node}"
    );
    assert_eq!(attempts[0]["usage"]["input_tokens"], 0, "{node}");
    assert_eq!(node["x-weft-effects"][0]["key"], effect["key"]);
}

//! Property tests of the matcher: lexical normalisation never escapes the workspace and is
//! idempotent; a workspace-confined fs pattern never matches a path outside its directory;
//! the first matching rule decides; with no matching rule the answer is deny.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure"
)]

use proptest::prelude::*;
use weft_policy::{
    Action, Context, Identity, Matcher, OperatorPolicy, Permission, Rule, Source, Verdict,
    Workspace, decide,
};

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("..".to_owned()),
        Just(".".to_owned()),
        Just(String::new()),
        "[a-c]{1,2}".prop_map(String::from),
        Just(".git".to_owned()),
    ]
}

fn path() -> impl Strategy<Value = String> {
    (any::<bool>(), prop::collection::vec(segment(), 0..8)).prop_map(|(abs, segs)| {
        let body = segs.join("/");
        if abs { format!("/w/{body}") } else { body }
    })
}

fn fs_action(path: &str, write: bool) -> Action {
    serde_json::from_value(serde_json::json!({
        "scope": "fs", "action": if write { "write" } else { "read" }, "target": path
    }))
    .unwrap()
}

/// A reference model of lexical resolution: the workspace-relative segments, or `None` when
/// the path climbs above the root or lies outside `/w`.
fn model(path: &str) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    if let Some(abs) = path.strip_prefix('/') {
        // Absolute: resolve from `/` (where `..` stays at `/`), then it must lie under /w.
        for s in abs.split('/') {
            match s {
                "" | "." => {}
                ".." => {
                    out.pop();
                }
                s => out.push(s.to_owned()),
            }
        }
        return (out.first().map(String::as_str) == Some("w")).then(|| out.split_off(1));
    }
    for s in path.split('/') {
        match s {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            s => out.push(s.to_owned()),
        }
    }
    Some(out)
}

proptest! {
    #[test]
    fn normalised_paths_never_escape_and_agree_with_the_model(p in path()) {
        let ws = Workspace::new("/w").unwrap();
        match (ws.normalise(&p), model(&p)) {
            (Ok(n), Some(m)) => {
                prop_assert!(!n.split('/').any(|s| s == ".." || s.is_empty()));
                let expected = if m.is_empty() { ".".to_owned() } else { m.join("/") };
                prop_assert_eq!(&n, &expected);
                // Idempotent: normalising again changes nothing.
                prop_assert_eq!(ws.normalise(&n).unwrap(), n.clone());
                prop_assert!(ws.absolute(&n).starts_with("/w"));
            }
            (Err(_), None) => {}
            (got, want) => prop_assert!(false, "{p}: got {got:?}, model {want:?}"),
        }
    }

    #[test]
    fn a_directory_pattern_never_matches_outside_its_directory(p in path(), write in any::<bool>()) {
        let ws = Workspace::new("/w").unwrap();
        let m = Matcher::parse("fs:write:a/**").unwrap();
        if let Ok(r) = fs_action(&p, write).normalise(&ws) {
            let target = r.target.clone().unwrap();
            if m.matches(&r) {
                prop_assert!(write);
                // `a/**` covers the directory `a` itself and what is beneath it.
                prop_assert!(target == "a" || target.starts_with("a/"), "{target}");
            }
        }
    }

    #[test]
    fn the_first_matching_rule_decides_and_no_match_denies(
        p in path(),
        write in any::<bool>(),
        rules in prop::collection::vec((0u8..3, 0usize..5), 0..6),
    ) {
        let patterns = ["fs:*:.git/**", "fs:read", "fs:write:a/**", "fs:*:**", "shell:exec:*"];
        let verdicts = [Verdict::Allow, Verdict::Ask, Verdict::Deny];
        let built: Vec<Rule> = rules.iter().map(|&(v, i)| Rule {
            decision: verdicts[usize::from(v)],
            pattern: Matcher::new(Permission::parse_pattern(patterns[i]).unwrap()).unwrap(),
            reason: None,
        }).collect();
        let policy = OperatorPolicy::new(None, built.clone());
        let ws = Workspace::new("/w").unwrap();
        let id = Identity { subject: "s".into(), session: None };
        let action = fs_action(&p, write);
        let d = decide(&action, &Context { workspace: &ws, policy: &policy, node: None, identity: &id });
        match action.normalise(&ws) {
            Err(_) => prop_assert_eq!((d.decision, d.source), (Verdict::Deny, Source::Resource)),
            Ok(r) => match built.iter().position(|rule| rule.pattern.matches(&r)) {
                None => prop_assert_eq!((d.decision, d.source), (Verdict::Deny, Source::Default)),
                Some(i) => {
                    prop_assert_eq!(d.decision, built[i].decision);
                    let is_rule_i = matches!(d.source, Source::Rule { index, .. } if index == i);
                    prop_assert!(is_rule_i);
                    prop_assert_eq!(d.approval.is_some(), built[i].decision == Verdict::Ask);
                }
            },
        }
    }
}

//! Host tools (`weft_tools::host`) through the `Toolbox`: registered beside the built-in
//! tools, their arguments checked against their own schema, each call decided by the policy
//! as `custom:call:host/NAME` (node grants, then the operator's rules; an `ask` needs an
//! approval bound to the exact call), a side-effecting one journalled and replayed without
//! running again, and names that clash or do not fit refused at registration.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use common::{Fixture, ok};
use serde_json::{Value, json};
use weft_core::FailureClass;
use weft_policy::{OperatorPolicy, Source, Verdict};
use weft_tools::{HostFuture, HostTool, HostToolError, ToolError, ToolOutcome, Toolbox};

/// `bump {by}`: adds to a counter and answers the new value as text; `by: 0` fails.
#[derive(Default)]
struct Bump {
    count: AtomicU32,
    side_effect: bool,
}

impl HostTool for Bump {
    fn name(&self) -> &str {
        "bump"
    }
    fn description(&self) -> &str {
        "Add to the counter."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "additionalProperties": false, "required": ["by"],
            "properties": {"by": {"type": "integer", "minimum": 0}}})
    }
    fn side_effect(&self) -> bool {
        self.side_effect
    }
    fn call<'a>(&'a self, arguments: &'a Value) -> HostFuture<'a> {
        Box::pin(async move {
            let by = arguments["by"].as_u64().unwrap_or(0) as u32;
            if by == 0 {
                return Err(ToolError::tool("nothing to add"));
            }
            let now = self.count.fetch_add(by, Ordering::SeqCst) + by;
            Ok(Value::String(format!("count {now}")))
        })
    }
}

const ALLOW: &str = r#"
[policy]
[[policy.rules]]
decision = "ask"
permission = "custom:call:host/bump"
[[policy.rules]]
decision = "allow"
permission = "custom:call:host/*"
"#;

fn fixture(bump: &Arc<Bump>, permissions: Value, policy: &str) -> Fixture {
    let mut f = Fixture::new(json!({"permissions": permissions}));
    f.toolbox = Toolbox::new()
        .unwrap()
        .with_host_tool(bump.clone())
        .unwrap();
    f.policy = OperatorPolicy::from_toml(policy).unwrap();
    f
}

#[tokio::test]
async fn a_granted_allowed_host_tool_runs_and_its_arguments_are_checked() {
    let bump = Arc::new(Bump::default());
    let allow_all =
        "[policy]\n[[policy.rules]]\ndecision = \"allow\"\npermission = \"custom:call:host/*\"\n";
    let f = fixture(&bump, json!(["custom:call:host/bump"]), allow_all);
    let r = f.call("bump", json!({"by": 2})).await;
    assert_eq!(ok(&r), &json!("count 2"));
    let r = f.call("bump", json!({"by": -1})).await;
    assert!(
        matches!(&r, ToolOutcome::Failed { class, .. } if *class == FailureClass::ValidationError),
        "{r:?}"
    );
    let r = f.call("bump", json!({"by": 0})).await;
    assert!(
        matches!(&r, ToolOutcome::Failed { class, message } if *class == FailureClass::ToolError && message == "nothing to add"),
        "{r:?}"
    );
    assert_eq!(bump.count.load(Ordering::SeqCst), 2);
    // Unknown tools name the host tools beside the built-in ones.
    let r = f.call("nope", json!({})).await;
    let ToolOutcome::Failed { message, .. } = r else {
        panic!("{r:?}")
    };
    assert!(message.contains("bump"), "{message}");
}

#[tokio::test]
async fn a_host_tool_needs_the_node_grant_and_an_operator_rule() {
    let bump = Arc::new(Bump::default());
    // Not granted to the node: denied by the node layer, whatever the operator says.
    let f = fixture(&bump, json!(["fs:read:**"]), ALLOW);
    let r = f.call("bump", json!({"by": 1})).await;
    let ToolOutcome::Denied { decision } = r else {
        panic!("{r:?}")
    };
    assert_eq!(decision.source, Source::Node);
    // Granted, but the operator's rules (the fixture's: fs and shell only) do not match.
    let f = fixture(&bump, json!(["custom:call:host/bump"]), common::POLICY);
    let r = f.call("bump", json!({"by": 1})).await;
    let ToolOutcome::Denied { decision } = r else {
        panic!("{r:?}")
    };
    assert_eq!(decision.decision, Verdict::Deny);
    assert_eq!(bump.count.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_ask_needs_an_approval_bound_to_the_exact_call() {
    let bump = Arc::new(Bump::default());
    let mut f = fixture(&bump, json!(["custom:call:host/bump"]), ALLOW);
    let r = f.call("bump", json!({"by": 3})).await;
    let ToolOutcome::NeedsApproval { approval, .. } = r else {
        panic!("{r:?}")
    };
    assert_eq!(bump.count.load(Ordering::SeqCst), 0);
    f.approvals.insert(approval.digest.clone());
    assert_eq!(
        ok(&f.call("bump", json!({"by": 3})).await),
        &json!("count 3")
    );
    // Another argument is another action: the approval does not cover it.
    let r = f.call("bump", json!({"by": 4})).await;
    assert!(matches!(r, ToolOutcome::NeedsApproval { .. }), "{r:?}");
}

#[tokio::test]
async fn a_side_effecting_host_call_is_journalled_and_replayed() {
    let bump = Arc::new(Bump {
        side_effect: true,
        ..Bump::default()
    });
    let allow_all = "[policy]\n[[policy.rules]]\ndecision = \"allow\"\npermission = \"custom:*\"\n";
    let f = fixture(&bump, json!(["custom:call:host/bump"]), allow_all);
    let first = f.call("bump", json!({"by": 5})).await;
    let again = f.call("bump", json!({"by": 5})).await;
    assert_eq!(ok(&first), &json!("count 5"));
    assert_eq!(
        again,
        ToolOutcome::Ok {
            result: json!("count 5"),
            replayed: true
        }
    );
    assert_eq!(bump.count.load(Ordering::SeqCst), 5, "ran once");
}

#[test]
fn names_that_clash_or_do_not_fit_are_refused() {
    struct Named(&'static str);
    impl HostTool for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            "x"
        }
        fn parameters(&self) -> Value {
            json!({"type": "object"})
        }
        fn call<'a>(&'a self, _arguments: &'a Value) -> HostFuture<'a> {
            Box::pin(async { Ok(Value::Null) })
        }
    }
    let add = |name: &'static str| {
        Toolbox::new()
            .unwrap()
            .with_host_tool(Arc::new(Named(name)))
    };
    assert!(matches!(add("file_read"), Err(HostToolError::Taken(_))));
    assert!(matches!(add("mcp__srv__x"), Err(HostToolError::Name(_))));
    assert!(matches!(add("Bad Name"), Err(HostToolError::Name(_))));
    let twice = add("lookup")
        .unwrap()
        .with_host_tool(Arc::new(Named("lookup")));
    assert!(matches!(twice, Err(HostToolError::Taken(_))));
    let bad_schema = Toolbox::new().unwrap().with_host_tool(Arc::new(BadSchema));
    assert!(matches!(bad_schema, Err(HostToolError::Schema(_))));
}

struct BadSchema;
impl HostTool for BadSchema {
    fn name(&self) -> &str {
        "bad"
    }
    fn description(&self) -> &str {
        "x"
    }
    fn parameters(&self) -> Value {
        json!({"type": 12})
    }
    fn call<'a>(&'a self, _arguments: &'a Value) -> HostFuture<'a> {
        Box::pin(async { Ok(Value::Null) })
    }
}

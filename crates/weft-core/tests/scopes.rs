//! Scope addresses: the syntax round-trips and rejects what is not an address.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

use proptest::prelude::*;
use weft_core::{NodeAddr, ScopePath};

#[test]
fn addresses_print_and_parse() {
    let a = NodeAddr::parse("fix_loop[2].run_tests").unwrap();
    assert_eq!(a.node, "run_tests");
    assert_eq!(a.scope.depth(), 1);
    assert_eq!(a.scope.steps()[0].container, "fix_loop");
    assert_eq!(a.scope.steps()[0].index, Some(2));
    assert_eq!(a.to_string(), "fix_loop[2].run_tests");

    let nested = NodeAddr::parse("docs[0].audit.check-links").unwrap();
    assert_eq!(nested.scope.to_string(), "docs[0].audit");
    assert_eq!(nested.scope.steps()[1].index, None);

    let root = NodeAddr::parse("build").unwrap();
    assert!(root.scope.is_root());
    assert_eq!(root, NodeAddr::root("build"));
    assert_eq!(root.to_string(), "build");
}

#[test]
fn malformed_addresses_are_refused_with_the_reason() {
    for (text, why) in [
        ("", "node id"),
        ("a..b", "node id"),
        ("a[2]", "node id"),
        ("a[02].b", "leading zeros"),
        ("a[].b", "decimal"),
        ("a[-1].b", "decimal"),
        ("a[1.b", "end with"),
        ("a[99999999999].b", "decimal"),
        ("A.b", "node id"),
        ("a.b-", "node id"),
        ("_a.b", "node id"),
    ] {
        let err = NodeAddr::parse(text).unwrap_err();
        assert!(err.to_string().contains(why), "{text}: {err}");
    }
}

fn id_strategy() -> impl Strategy<Value = String> {
    "[a-z0-9]([a-z0-9_-]{0,6}[a-z0-9])?"
}

proptest! {
    #[test]
    fn every_address_round_trips(
        steps in proptest::collection::vec((id_strategy(), proptest::option::of(0u32..5000)), 0..4),
        node in id_strategy(),
    ) {
        let mut scope = ScopePath::root();
        for (c, i) in &steps {
            scope = scope.child(c, *i);
        }
        let addr = NodeAddr { scope, node };
        let text = addr.to_string();
        prop_assert_eq!(NodeAddr::parse(&text).unwrap(), addr);
    }

    #[test]
    fn parsing_never_panics(text in "[a-z0-9_.\\[\\]-]{0,24}") {
        let _ = NodeAddr::parse(&text);
    }
}

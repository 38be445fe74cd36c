//! Keys from a keyring reference (`api_key_keyring`), over real HTTP on 127.0.0.1: the test
//! stores a key in the Linux kernel keyring through the same crate weft reads it with
//! (`linux-keyutils`), builds
//! the provider from config, and checks the key is sent and never shows in `Debug`, errors or
//! what an answer records; a missing entry is a `permission_denied` error naming the
//! reference, never a panic.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::loopback::{Loopback, Reply, fixture};
use weft_agents::{
    ChatRequest, FailureClass, KeyringRef, Message, ProviderConfig, ProviderKind, RoutingProfile,
};

const KEY: &str = "sk-weft-keyring-test-SECRET-4242";

/// A reference no other run of this test uses, and its entry in the user keyring (where
/// `keyctl padd user DESCRIPTION @u` puts one), removed when dropped.
struct Stored {
    reference: KeyringRef,
    key: linux_keyutils::Key,
}

impl Stored {
    fn new(account: &str, key: &str) -> Stored {
        let reference =
            KeyringRef::parse(&format!("weft-test-{}/{account}", std::process::id())).unwrap();
        let user = linux_keyutils::KeyRing::from_special_id(
            linux_keyutils::KeyRingIdentifier::User,
            false,
        )
        .expect("the kernel keyring is available here");
        let key = user
            .add_key(&reference.description(), key)
            .expect("the user keyring is writable here");
        Stored { reference, key }
    }
}

impl Drop for Stored {
    fn drop(&mut self) {
        let _ = self.key.invalidate();
    }
}

fn request() -> ChatRequest {
    ChatRequest::new("m", vec![Message::user("hi")])
}

#[tokio::test]
async fn a_key_from_the_kernel_keyring_is_sent_and_never_shown() {
    let stored = Stored::new("openai", KEY);
    let server = Loopback::start(vec![
        Reply::EchoHeaders401,
        Reply::json(200, fixture("openai_tool_call.json")),
    ])
    .await;
    // Through the config file, as an operator writes it.
    let toml = format!(
        "[providers.kr]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key_keyring = \"{}\"\n",
        server.base_url, stored.reference
    );
    let profile = RoutingProfile::parse(&toml).unwrap();
    let config: &ProviderConfig = &profile.providers[0];
    assert!(!format!("{config:?}").contains(KEY));
    let p = config.build().expect("provider");
    let e = p.chat(&request()).await.unwrap_err();
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str()),
        "the key is sent"
    );
    assert_eq!(e.class, FailureClass::PermissionDenied);
    assert!(
        e.evidence
            .as_deref()
            .unwrap_or_default()
            .contains("Bearer ***"),
        "the echoed header is kept, redacted: {e}"
    );
    let read = format!("{:?}", stored.reference.read());
    assert_eq!(read, "Ok(***)");
    for shown in [format!("{e}"), format!("{e:?}"), read] {
        assert!(!shown.contains(KEY), "{shown}");
    }
    let answer = p.chat(&request()).await.expect("answer");
    let recorded = serde_json::to_string(&answer).expect("json");
    assert!(!recorded.contains(KEY));
}

#[tokio::test]
async fn a_missing_entry_is_permission_denied_naming_the_reference() {
    let mut config = ProviderConfig::new("kr", ProviderKind::Anthropic, "http://127.0.0.1:9");
    let reference =
        KeyringRef::parse(&format!("weft-test-{}/never-stored", std::process::id())).unwrap();
    config.api_key_keyring = Some(reference.clone());
    let e = config.build().err().expect("no entry, no provider");
    assert_eq!(e.class, FailureClass::PermissionDenied);
    assert!(e.message.contains(&reference.to_string()), "{e}");
    assert!(e.message.contains("no entry"), "{e}");
    assert!(e.message.contains(&reference.description()), "{e}");
    // Both sources at once are refused too (a hand-built config; the file parser refuses it
    // earlier).
    let stored = Stored::new("both", KEY);
    config.api_key_keyring = Some(stored.reference.clone());
    config.api_key_env = Some("WEFT_AGENTS_TEST_UNSET_KEY".into());
    let e = config.build().err().expect("two sources, no provider");
    assert_eq!(e.class, FailureClass::PermissionDenied);
    assert!(e.message.contains("both"), "{e}");
    assert!(!format!("{e:?}").contains(KEY));
}

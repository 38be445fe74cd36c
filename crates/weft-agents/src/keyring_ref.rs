//! `api_key_keyring = "SERVICE/ACCOUNT"`: an API key read from the OS keyring instead of the
//! environment. On Linux that is the kernel keyring (keyutils), which needs no daemon: a
//! `user` key described `keyring-rs:ACCOUNT@SERVICE` (the `keyring` crate's keyutils naming,
//! so an entry stored by a tool built on it is found too), searched from the session keyring
//! (and the keyrings linked to it) and the user keyring. Reading changes nothing in the
//! keyring. A trailing newline (`keyctl padd` from `echo`) is dropped. Errors name the
//! reference, never a value; the value only ever lives in a [`Secret`].

use std::fmt;

use crate::secret::Secret;

/// A keyring entry named in config: `SERVICE/ACCOUNT`, split at the last `/` (a service
/// may contain `/`, an account may not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyringRef {
    /// The service (`weft`, `https://api.openai.com`).
    pub service: String,
    /// The account within it (`openai`).
    pub account: String,
}

impl KeyringRef {
    /// Parses `SERVICE/ACCOUNT`; `Err` says what the shape must be.
    pub fn parse(text: &str) -> Result<KeyringRef, String> {
        // The text is not echoed: a key pasted here by mistake must not reach an error.
        let shape = || {
            "is not a keyring reference `SERVICE/ACCOUNT` (both non-empty, e.g. `weft/openai`; \
             the key itself never goes in this file)"
                .to_owned()
        };
        let (service, account) = text.rsplit_once('/').ok_or_else(shape)?;
        if service.is_empty() || account.is_empty() || text.contains(['\0', '\n']) {
            return Err(shape());
        }
        Ok(KeyringRef {
            service: service.to_owned(),
            account: account.to_owned(),
        })
    }

    /// The keyutils description of the entry (what `keyctl` shows and `keyctl padd` takes).
    pub fn description(&self) -> String {
        format!("keyring-rs:{}@{}", self.account, self.service)
    }

    /// Reads the secret; `Err` names the reference and why (no entry, no keyring here),
    /// never a value.
    pub fn read(&self) -> Result<Secret, String> {
        read(self).map_err(|why| format!("keyring reference `{self}`: {why}"))
    }
}

impl fmt::Display for KeyringRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.service, self.account)
    }
}

#[cfg(target_os = "linux")]
fn read(r: &KeyringRef) -> Result<Secret, String> {
    use linux_keyutils::{KeyError, KeyRing, KeyRingIdentifier};
    let description = r.description();
    let unavailable = |e: KeyError| {
        format!("the kernel keyring is unavailable here ({e:?}); use api_key_env instead")
    };
    // The session keyring's search follows the keyrings linked to it (the user keyring, a
    // persistent keyring); the user keyring is searched on its own too, for a session
    // keyring that does not link it. Searching changes nothing.
    let mut found = None;
    for id in [KeyRingIdentifier::Session, KeyRingIdentifier::User] {
        let ring = match KeyRing::from_special_id(id, false) {
            Ok(ring) => ring,
            Err(KeyError::KeyringDoesNotExist | KeyError::KeyDoesNotExist) => continue,
            Err(e) => return Err(unavailable(e)),
        };
        match ring.search(&description) {
            Ok(key) => {
                found = Some(key);
                break;
            }
            Err(KeyError::KeyDoesNotExist | KeyError::KeyringDoesNotExist) => {}
            Err(KeyError::AccessDenied) => {
                return Err(format!("access to the entry `{description}` is denied"));
            }
            Err(KeyError::KeyExpired | KeyError::KeyRevoked | KeyError::KeyRejected) => {
                return Err(format!(
                    "the entry `{description}` has expired or was revoked"
                ));
            }
            Err(e) => return Err(unavailable(e)),
        }
    }
    let Some(key) = found else {
        return Err(format!(
            "no entry `{description}` in the kernel keyring (store one with `keyctl padd user \
             '{description}' @u`, the key on stdin)"
        ));
    };
    let bytes = key
        .read_to_vec()
        .map_err(|e| format!("the entry `{description}` cannot be read ({e:?})"))?;
    match String::from_utf8(bytes) {
        Ok(v) if !v.trim().is_empty() => Ok(Secret::new(v.trim_end_matches(['\n', '\r']))),
        Ok(_) => Err(format!("the entry `{description}` is empty")),
        // Never the bytes.
        Err(_) => Err(format!("the entry `{description}` is not UTF-8")),
    }
}

#[cfg(not(target_os = "linux"))]
fn read(_: &KeyringRef) -> Result<Secret, String> {
    Err(
        "weft reads keyring references from the Linux kernel keyring only; use api_key_env on \
         this platform"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_is_service_slash_account_split_at_the_last_slash() {
        let r = KeyringRef::parse("weft/openai").unwrap();
        assert_eq!((r.service.as_str(), r.account.as_str()), ("weft", "openai"));
        assert_eq!(r.to_string(), "weft/openai");
        assert_eq!(r.description(), "keyring-rs:openai@weft");
        let r = KeyringRef::parse("https://api.openai.com/ci").unwrap();
        assert_eq!(r.service, "https://api.openai.com");
        assert_eq!(r.account, "ci");
        for bad in ["", "weft", "/openai", "weft/", "sk-live-123"] {
            let e = KeyringRef::parse(bad).unwrap_err();
            assert!(e.contains("SERVICE/ACCOUNT"), "{e}");
        }
        // A key pasted in place of a reference is not echoed.
        let e = KeyringRef::parse("sk-live-123").unwrap_err();
        assert!(!e.contains("sk-live"), "{e}");
    }
}

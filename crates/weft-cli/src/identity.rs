//! Who is using weft, when a command records a person (a decision, a cancel, who started a
//! run, the subject of an approval): `--as`, else `$USER` or `$LOGNAME`, else the OS account
//! of this process's user (its password-database entry), so a decision made in a shell
//! without `$USER` (services, containers) is still attributed to someone. The source is kept
//! so the command can say which identity it recorded and how to record another.

use nix::unistd::{Uid, User};

/// Where the identity came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `--as`.
    Flag,
    /// An environment variable (`USER`, `LOGNAME`).
    Env(&'static str),
    /// The password-database entry of this uid.
    OsAccount(u32),
    /// A uid with no entry in the password database (written `uid:N`).
    Uid(u32),
}

/// A person's identity and where weft found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub name: String,
    pub source: Source,
}

impl Actor {
    /// `--as ID`, else the environment's, else the OS account's.
    pub fn resolve(flag: Option<&str>) -> Self {
        if let Some(name) = flag {
            return Self {
                name: name.to_string(),
                source: Source::Flag,
            };
        }
        Self::current()
    }

    /// The identity of whoever runs this process (no `--as`).
    pub fn current() -> Self {
        for var in ["USER", "LOGNAME"] {
            if let Some(name) = std::env::var(var).ok().filter(|v| !v.is_empty()) {
                return Self {
                    name,
                    source: Source::Env(var),
                };
            }
        }
        let uid = Uid::current();
        match User::from_uid(uid) {
            Ok(Some(user)) if !user.name.is_empty() => Self {
                name: user.name,
                source: Source::OsAccount(uid.as_raw()),
            },
            _ => Self {
                name: format!("uid:{}", uid.as_raw()),
                source: Source::Uid(uid.as_raw()),
            },
        }
    }

    /// Where the name came from, in words, with how to record someone else.
    pub fn provenance(&self) -> String {
        match &self.source {
            Source::Flag => "from --as".to_string(),
            Source::Env(var) => format!("from ${var}; --as ID records someone else"),
            Source::OsAccount(uid) => format!(
                "the OS account of uid {uid}, as $USER and $LOGNAME are unset; --as ID records \
                 someone else"
            ),
            Source::Uid(uid) => format!(
                "uid {uid} has no account name and $USER and $LOGNAME are unset; --as ID names \
                 who decided"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_and_says_so() {
        let actor = Actor::resolve(Some("ann"));
        assert_eq!(actor.name, "ann");
        assert_eq!(actor.provenance(), "from --as");
    }

    #[test]
    fn the_os_account_is_this_uids_entry() {
        // What the fallback reads, checked against the system's own `id -un` (the tests may
        // run with $USER set, so the fallback itself is tested through the binary).
        let uid = Uid::current();
        let expected = std::process::Command::new("id")
            .arg("-un")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        let entry = User::from_uid(uid).ok().flatten().map(|u| u.name);
        assert_eq!(entry, expected);
    }
}

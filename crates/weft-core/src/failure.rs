//! Why an attempt failed: the one failure classification that the agents, the tools, MCP and
//! the engine's failure ladder share (AGS §14, DIGEST §1.16), and `retry.retry_on`, the set of
//! classes a node retries.
//!
//! The spelling of a class (serde, [`Display`](std::fmt::Display), [`FromStr`]) is the AGS
//! name, which is also what the event log and the run record write (`error: "class: message"`),
//! so the type changes nothing on the wire.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The class of a failed attempt. The first nine are the AGS classes; [`Blocked`] and
/// [`Cancelled`] are weft's own, for attempts that could not run or were stopped, which AGS
/// names as node states but not as classes (a document cannot list them in `retry_on`).
///
/// [`Blocked`]: FailureClass::Blocked
/// [`Cancelled`]: FailureClass::Cancelled
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// Worth trying again as is: a connection that failed or was cut, a rate limit or a 5xx
    /// after the bounded retries, a server or tool process that died or would not start.
    /// Retried by default.
    Transient,
    /// The model or its provider answered something unusable: a 4xx other than auth and rate
    /// limits, an `error` event, malformed tool arguments, an unparseable body, no provider.
    ModelError,
    /// A tool or command failed: a non-zero exit, a file-system error, an MCP server that
    /// answered with an error, a container whose fragment failed. Retried by default.
    ToolError,
    /// The attempt, a request or a tool call ran past its time limit (`max_wall_clock_seconds`,
    /// a provider or MCP timeout); `timeout_action` decides what follows.
    Timeout,
    /// A node or graph limit was reached (steps, tokens, cost, executions).
    BudgetExceeded,
    /// The outputs were delivered but a required success criterion failed, or a decision
    /// matched no branch. Retried by default (with the failed criteria as feedback).
    CriteriaFailed,
    /// A required output was not delivered (`degrade_outputs` may absorb it).
    OutputMissing,
    /// Something did not fit its declared shape: an output's `type` or `schema` (RT031,
    /// RT032), a tool's arguments, a `map.over` that is not a list.
    ValidationError,
    /// The policy or the provider refused: a denied or unapproved tool action, rejected
    /// credentials, a node outside the run's permissions.
    PermissionDenied,
    /// weft's own: a requirement of the attempt is unavailable (no agent, no sandbox, no
    /// cassette, a required MCP server): the node ends `blocked`, with no retry or fallback.
    Blocked,
    /// weft's own: the attempt was stopped before it finished (a cancelled run, a dropped
    /// provider request).
    Cancelled,
}

impl FailureClass {
    /// Every class, in declaration order.
    pub const ALL: [FailureClass; 11] = [
        FailureClass::Transient,
        FailureClass::ModelError,
        FailureClass::ToolError,
        FailureClass::Timeout,
        FailureClass::BudgetExceeded,
        FailureClass::CriteriaFailed,
        FailureClass::OutputMissing,
        FailureClass::ValidationError,
        FailureClass::PermissionDenied,
        FailureClass::Blocked,
        FailureClass::Cancelled,
    ];

    /// The classes AGS defines (those a document may list in `retry_on`, with `any`).
    pub const AGS: [FailureClass; 9] = [
        FailureClass::Transient,
        FailureClass::ModelError,
        FailureClass::ToolError,
        FailureClass::Timeout,
        FailureClass::BudgetExceeded,
        FailureClass::CriteriaFailed,
        FailureClass::OutputMissing,
        FailureClass::ValidationError,
        FailureClass::PermissionDenied,
    ];

    /// The class as AGS, the event log and the run record spell it.
    pub const fn as_str(self) -> &'static str {
        match self {
            FailureClass::Transient => "transient",
            FailureClass::ModelError => "model_error",
            FailureClass::ToolError => "tool_error",
            FailureClass::Timeout => "timeout",
            FailureClass::BudgetExceeded => "budget_exceeded",
            FailureClass::CriteriaFailed => "criteria_failed",
            FailureClass::OutputMissing => "output_missing",
            FailureClass::ValidationError => "validation_error",
            FailureClass::PermissionDenied => "permission_denied",
            FailureClass::Blocked => "blocked",
            FailureClass::Cancelled => "cancelled",
        }
    }

    /// Whether AGS defines the class (`blocked` and `cancelled` are weft's).
    pub const fn is_ags(self) -> bool {
        !matches!(self, FailureClass::Blocked | FailureClass::Cancelled)
    }

    /// Whether a node that declares no `retry_on` retries the class: AGS's default list is
    /// `[transient, tool_error, criteria_failed]`.
    pub const fn retried_by_default(self) -> bool {
        RetryOn::DEFAULT.retries(self)
    }

    /// The class of a logged error, `class: message` as the event log writes it, with the
    /// message; `None` when the error does not start with a class.
    pub fn split_logged(error: &str) -> Option<(FailureClass, &str)> {
        let (class, message) = error.split_once(": ")?;
        Some((class.parse().ok()?, message))
    }

    const fn bit(self) -> u16 {
        1 << self as u16
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a failure class.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown failure class `{name}`; the classes are {}", class_list())]
pub struct UnknownFailureClass {
    pub name: String,
}

fn class_list() -> String {
    FailureClass::ALL.map(FailureClass::as_str).join(", ")
}

impl FromStr for FailureClass {
    type Err = UnknownFailureClass;

    fn from_str(name: &str) -> Result<FailureClass, UnknownFailureClass> {
        FailureClass::ALL
            .into_iter()
            .find(|c| c.as_str() == name)
            .ok_or_else(|| UnknownFailureClass {
                name: name.to_owned(),
            })
    }
}

/// `retry.retry_on`: the classes a node retries, or `any` (a set; the order a document lists
/// them in means nothing).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RetryOn {
    classes: u16,
    any: bool,
}

impl RetryOn {
    /// AGS's default: `[transient, tool_error, criteria_failed]`.
    pub const DEFAULT: RetryOn = RetryOn {
        classes: FailureClass::Transient.bit()
            | FailureClass::ToolError.bit()
            | FailureClass::CriteriaFailed.bit(),
        any: false,
    };

    /// `[any]`: every class.
    pub const ANY: RetryOn = RetryOn {
        classes: 0,
        any: true,
    };

    /// No class (`retry_on: []`).
    pub const NONE: RetryOn = RetryOn {
        classes: 0,
        any: false,
    };

    /// The listed classes.
    pub fn of(classes: impl IntoIterator<Item = FailureClass>) -> RetryOn {
        let classes = classes.into_iter().fold(0, |bits, c| bits | c.bit());
        RetryOn {
            classes,
            any: false,
        }
    }

    /// `retry_on` as a document spells it: class names and `any`.
    pub fn parse<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<RetryOn, UnknownRetryOn> {
        let mut set = RetryOn::NONE;
        for name in names {
            if name == "any" {
                set.any = true;
            } else {
                let class = name.parse::<FailureClass>().map_err(|_| UnknownRetryOn {
                    name: name.to_owned(),
                })?;
                set.classes |= class.bit();
            }
        }
        Ok(set)
    }

    /// Whether a failure of `class` is retried. `any` covers every class but
    /// [`FailureClass::Blocked`]: another attempt cannot make an unavailable requirement
    /// available.
    pub const fn retries(self, class: FailureClass) -> bool {
        self.classes & class.bit() != 0 || (self.any && !matches!(class, FailureClass::Blocked))
    }

    /// Whether the set is `any`.
    pub const fn is_any(self) -> bool {
        self.any
    }

    /// The classes listed by name, in [`FailureClass::ALL`] order.
    pub fn classes(self) -> impl Iterator<Item = FailureClass> {
        FailureClass::ALL
            .into_iter()
            .filter(move |c| self.classes & c.bit() != 0)
    }
}

impl Default for RetryOn {
    fn default() -> RetryOn {
        RetryOn::DEFAULT
    }
}

impl fmt::Debug for RetryOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        list.entries(self.classes().map(FailureClass::as_str));
        if self.any {
            list.entry(&"any");
        }
        list.finish()
    }
}

/// A `retry_on` entry that is neither a failure class nor `any`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown `retry_on` entry `{name}`; it takes `any` or a class: {}",
    class_list()
)]
pub struct UnknownRetryOn {
    pub name: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_round_trips_through_serde_display_and_from_str() {
        for class in FailureClass::ALL {
            let json = serde_json::to_value(class).unwrap();
            assert_eq!(json, serde_json::Value::from(class.as_str()));
            assert_eq!(serde_json::from_value::<FailureClass>(json).unwrap(), class);
            assert_eq!(class.to_string(), class.as_str());
            assert_eq!(class.as_str().parse::<FailureClass>(), Ok(class));
        }
    }

    #[test]
    fn the_spelling_is_the_ags_one() {
        let ags: Vec<&str> = FailureClass::AGS.map(FailureClass::as_str).to_vec();
        assert_eq!(
            ags,
            [
                "transient",
                "model_error",
                "tool_error",
                "timeout",
                "budget_exceeded",
                "criteria_failed",
                "output_missing",
                "validation_error",
                "permission_denied"
            ]
        );
        assert!(FailureClass::AGS.iter().all(|c| c.is_ags()));
        assert!(!FailureClass::Blocked.is_ags() && !FailureClass::Cancelled.is_ags());
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_valid_classes() {
        let e = "policy_denied".parse::<FailureClass>().unwrap_err();
        assert_eq!(e.name, "policy_denied");
        let text = e.to_string();
        for class in FailureClass::ALL {
            assert!(text.contains(class.as_str()), "{text}");
        }
        // Case and spacing are not guessed at.
        assert!("Timeout".parse::<FailureClass>().is_err());
        assert!(" timeout".parse::<FailureClass>().is_err());
        assert!(serde_json::from_str::<FailureClass>("\"any\"").is_err());
    }

    #[test]
    fn a_logged_error_gives_back_its_class() {
        assert_eq!(
            FailureClass::split_logged("tool_error: exit code 3: boom"),
            Some((FailureClass::ToolError, "exit code 3: boom"))
        );
        assert_eq!(FailureClass::split_logged("RT012: no server"), None);
        assert_eq!(FailureClass::split_logged("timeout"), None);
    }

    #[test]
    fn the_default_retry_on_is_the_ags_one() {
        let retried: Vec<FailureClass> = FailureClass::ALL
            .into_iter()
            .filter(|c| c.retried_by_default())
            .collect();
        assert_eq!(
            retried,
            [
                FailureClass::Transient,
                FailureClass::ToolError,
                FailureClass::CriteriaFailed
            ]
        );
        assert_eq!(RetryOn::default(), RetryOn::DEFAULT);
        assert_eq!(
            RetryOn::parse(["criteria_failed", "transient", "tool_error"]),
            Ok(RetryOn::DEFAULT)
        );
    }

    #[test]
    fn retry_on_retries_what_it_lists_and_any_all_but_blocked() {
        let timeouts = RetryOn::parse(["timeout"]).unwrap();
        assert!(timeouts.retries(FailureClass::Timeout));
        assert!(!timeouts.retries(FailureClass::ToolError));
        assert_eq!(
            timeouts.classes().collect::<Vec<_>>(),
            [FailureClass::Timeout]
        );
        let any = RetryOn::parse(["any"]).unwrap();
        assert!(any.is_any());
        assert_eq!(any, RetryOn::ANY);
        for class in FailureClass::ALL {
            assert_eq!(
                any.retries(class),
                class != FailureClass::Blocked,
                "{class}"
            );
            assert!(!RetryOn::NONE.retries(class));
        }
        assert_eq!(format!("{any:?}"), r#"["any"]"#);
        assert_eq!(
            format!("{:?}", RetryOn::DEFAULT),
            r#"["transient", "tool_error", "criteria_failed"]"#
        );
        let e = RetryOn::parse(["transient", "flaky"]).unwrap_err();
        assert_eq!(e.name, "flaky");
        assert!(e.to_string().contains("`any`"), "{e}");
    }
}

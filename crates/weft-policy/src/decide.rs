//! The decision for one action: effective permission = graph ∩ node ∩ operator policy.
//!
//! In order: the action is normalised (an action that cannot be, such as a path climbing out
//! of the workspace, is denied before any rule, so nobody can approve it); when a node is
//! given, its own requirements and every container around it must each cover the resource
//! (intersection, never union); then the operator rules are tried in order and the first
//! match decides; no match is a deny. An `ask` carries an [`Approval`] binding.

use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::canonical::canonical;
use crate::config::{OperatorPolicy, Verdict};
use crate::document::NodeGrants;
use crate::grants::Check;
use crate::path::Workspace;
use crate::resource::{Action, Resource};

/// Who is acting (never taken from a document or a model).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Identity {
    /// The subject (an operator name, a service account).
    pub subject: String,
    /// The session, when the caller has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// What an approval must be bound to: a changed tool, argument, resource, identity or policy
/// version gives another digest, so an earlier approval no longer applies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Approval {
    /// `sha256:<hex>` of the canonical binding.
    pub digest: String,
    /// The logical tool.
    pub tool: String,
    /// The identity.
    pub identity: Identity,
    /// The policy version.
    pub policy_version: String,
}

/// Which layer decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "layer")]
pub enum Source {
    /// The action could not be normalised.
    Resource,
    /// The node's own requirements do not cover it.
    Node,
    /// A container around the node does not cover it.
    Graph {
        /// The container, e.g. `container 'fix'`.
        holder: String,
    },
    /// An operator rule matched.
    Rule {
        /// Its index in `policy.rules`.
        index: usize,
        /// The rule's permission pattern.
        permission: String,
    },
    /// No operator rule matched.
    Default,
}

/// A decision with its explanation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decision {
    /// allow, ask or deny.
    pub decision: Verdict,
    /// Why, in words.
    pub reason: String,
    /// The layer that decided.
    pub source: Source,
    /// The normalised resource (absent when normalisation failed).
    pub resource: Option<Resource>,
    /// What covered the resource in each document layer (node first), when a node was given.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub covered_by: Vec<String>,
    /// The policy version.
    pub policy_version: String,
    /// For `ask`: the approval binding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
}

/// What a decision is made against.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    /// The workspace root paths are normalised against.
    pub workspace: &'a Workspace,
    /// The operator policy.
    pub policy: &'a OperatorPolicy,
    /// The node's layers, when the action is a node's.
    pub node: Option<&'a NodeGrants>,
    /// Who acts.
    pub identity: &'a Identity,
}

/// Decides `action` (see the module docs).
pub fn decide(action: &Action, cx: &Context<'_>) -> Decision {
    let version = cx.policy.version().to_owned();
    let deny = |reason: String,
                source: Source,
                resource: Option<Resource>,
                covered: Vec<String>| Decision {
        decision: Verdict::Deny,
        reason,
        source,
        resource,
        covered_by: covered,
        policy_version: version.clone(),
        approval: None,
    };
    let resource = match action.normalise(cx.workspace) {
        Ok(r) => r,
        Err(e) => return deny(e.to_string(), Source::Resource, None, Vec::new()),
    };
    let mut covered = Vec::new();
    if let Some(layers) = cx.node {
        match layers.node.check(&resource) {
            Check::Covered(by) => covered.push(by),
            Check::Refused(why) => return deny(why, Source::Node, Some(resource), covered),
        }
        for container in &layers.containers {
            match container.check(&resource) {
                Check::Covered(by) => covered.push(by),
                Check::Refused(why) => {
                    let holder = container.holder.clone();
                    return deny(why, Source::Graph { holder }, Some(resource), covered);
                }
            }
        }
    }
    let Some((index, rule)) = cx
        .policy
        .rules()
        .iter()
        .enumerate()
        .find(|(_, r)| r.covers(&resource))
    else {
        return deny(
            "no operator rule matches (the default is deny)".into(),
            Source::Default,
            Some(resource),
            covered,
        );
    };
    let permission = rule.pattern.permission().to_string();
    let reason = rule.reason.clone().unwrap_or_else(|| {
        format!(
            "policy.rules[{index}] ({permission}) says {}",
            rule.decision.as_str()
        )
    });
    let approval =
        (rule.decision == Verdict::Ask).then(|| approval(action, &resource, cx.identity, &version));
    Decision {
        decision: rule.decision,
        reason,
        source: Source::Rule { index, permission },
        resource: Some(resource),
        covered_by: covered,
        policy_version: version,
        approval,
    }
}

/// The approval binding of an action: sha256 of the canonical JSON of tool, normalised
/// resource, arguments (without `approved` / `approval_id`, which a model may forge),
/// identity and policy version.
pub fn approval(
    action: &Action,
    resource: &Resource,
    identity: &Identity,
    policy_version: &str,
) -> Approval {
    let mut arguments = action.arguments.clone().unwrap_or(Value::Null);
    if let Some(map) = arguments.as_object_mut() {
        map.shift_remove("approved");
        map.shift_remove("approval_id");
    }
    let tool = action.tool_name();
    let binding = json!({
        "tool": tool,
        "resource": {
            "scope": resource.scope.as_str(),
            "action": resource.action,
            "target": resource.target,
            "argv": resource.argv,
        },
        "arguments": arguments,
        "identity": {"subject": identity.subject, "session": identity.session},
        "policy_version": policy_version,
    });
    let digest = Sha256::digest(canonical(&binding).as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Approval {
        digest: format!("sha256:{hex}"),
        tool,
        identity: identity.clone(),
        policy_version: policy_version.to_owned(),
    }
}

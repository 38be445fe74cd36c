//! What a node (or a container around it) asks for: its `requirements` block as a typed
//! ceiling. `permissions` are the ceiling's patterns; `workspace` (`none` | `read_only`, the
//! default, | `read_write`) bounds fs access and `network` (`none`, the default, |
//! `restricted` | `full`) bounds net access, whatever the permissions say (DIGEST §1.14).

use serde_json::{Map, Value};

use crate::pattern::Matcher;
use crate::permission::Scope;
use crate::resource::Resource;

/// `requirements.network`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// No network (the AGS default).
    None,
    /// Only the origins of `net:` permissions.
    Restricted,
    /// Any origin.
    Full,
}

/// `requirements.workspace`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceAccess {
    /// No file access.
    None,
    /// Reads only (the AGS default).
    ReadOnly,
    /// Reads and writes, within the fs permissions.
    ReadWrite,
}

/// One layer of requested permissions.
#[derive(Clone, Debug)]
pub struct Grants {
    /// Who asked: `node 'x'` or `container 'loop1'`.
    pub holder: String,
    /// Whether the requirements list `permissions` at all (an empty list counts: it grants
    /// nothing, which is different from not saying).
    pub declared: bool,
    /// The permission patterns.
    pub permissions: Vec<Matcher>,
    /// The network bound.
    pub network: Network,
    /// The workspace bound.
    pub workspace: WorkspaceAccess,
}

/// Why a requirements block cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    /// A malformed permission.
    #[error("{holder}: {error}")]
    Permission {
        /// Who declared it.
        holder: String,
        /// What is wrong.
        error: crate::Error,
    },
    /// An unknown `network` or `workspace` value.
    #[error("{holder}: requirements.{field} '{value}' is not one of {allowed}")]
    Value {
        /// Who declared it.
        holder: String,
        /// The field.
        field: &'static str,
        /// The value.
        value: String,
        /// The allowed values.
        allowed: &'static str,
    },
}

/// The outcome of checking a resource against one layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// Covered; the string says by what (a permission, or `network: full`).
    Covered(String),
    /// Not covered; the string says why.
    Refused(String),
}

impl Grants {
    /// Reads a (defaults-merged) `requirements` object; `None` means no block (all defaults).
    pub fn from_requirements(
        holder: String,
        req: Option<&Map<String, Value>>,
    ) -> Result<Grants, GrantError> {
        let mut permissions = Vec::new();
        let perms = req
            .and_then(|r| r.get("permissions"))
            .and_then(Value::as_array);
        let declared = perms.is_some();
        for text in perms.into_iter().flatten().filter_map(Value::as_str) {
            let m = Matcher::parse(text).map_err(|error| GrantError::Permission {
                holder: holder.clone(),
                error,
            })?;
            permissions.push(m);
        }
        let field = |name: &str| req.and_then(|r| r.get(name)).and_then(Value::as_str);
        let network = match field("network") {
            None | Some("none") => Network::None,
            Some("restricted") => Network::Restricted,
            Some("full") => Network::Full,
            Some(other) => {
                return Err(GrantError::Value {
                    holder,
                    field: "network",
                    value: other.into(),
                    allowed: "none, restricted, full",
                });
            }
        };
        let workspace = match field("workspace") {
            None | Some("read_only") => WorkspaceAccess::ReadOnly,
            Some("none") => WorkspaceAccess::None,
            Some("read_write") => WorkspaceAccess::ReadWrite,
            Some(other) => {
                return Err(GrantError::Value {
                    holder,
                    field: "workspace",
                    value: other.into(),
                    allowed: "none, read_only, read_write",
                });
            }
        };
        Ok(Grants {
            holder,
            declared,
            permissions,
            network,
            workspace,
        })
    }

    /// Checks `resource` against this layer.
    pub fn check(&self, resource: &Resource) -> Check {
        match resource.scope {
            Scope::Fs => match self.workspace {
                WorkspaceAccess::None => {
                    return Check::Refused(format!("{} declares workspace: none", self.holder));
                }
                WorkspaceAccess::ReadOnly if resource.action != "read" => {
                    return Check::Refused(format!(
                        "{} declares workspace: read_only, and fs:{} changes files",
                        self.holder, resource.action
                    ));
                }
                _ => {}
            },
            Scope::Net => match self.network {
                Network::None => {
                    return Check::Refused(format!("{} declares network: none", self.holder));
                }
                Network::Full => return Check::Covered("network: full".into()),
                Network::Restricted => {}
            },
            _ => {}
        }
        match self.permissions.iter().find(|m| m.matches(resource)) {
            Some(m) => Check::Covered(m.permission().to_string()),
            None => Check::Refused(format!(
                "{} requests no permission covering it",
                self.holder
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::Workspace;
    use crate::resource::Action;
    use serde_json::json;

    fn grants(v: Value) -> Grants {
        Grants::from_requirements("node 'n'".into(), v.as_object()).unwrap()
    }

    fn res(scope: &str, action: &str, target: &str) -> Resource {
        Action {
            scope: scope.into(),
            action: action.into(),
            target: Some(target.into()),
            argv: None,
            tool: None,
            arguments: None,
        }
        .normalise(&Workspace::new("/w").unwrap())
        .unwrap()
    }

    #[test]
    fn workspace_read_only_refuses_writes_even_with_a_write_permission() {
        let g = grants(json!({"permissions": ["fs:write:**"]}));
        assert!(matches!(
            g.check(&res("fs", "write", "a")),
            Check::Refused(_)
        ));
        let g = grants(json!({"permissions": ["fs:write:**"], "workspace": "read_write"}));
        assert_eq!(
            g.check(&res("fs", "write", "a")),
            Check::Covered("fs:write:**".into())
        );
    }

    #[test]
    fn network_bounds_net_permissions() {
        let p = json!(["net:fetch:https://a.org"]);
        let none = grants(json!({"permissions": p}));
        assert!(matches!(
            none.check(&res("net", "fetch", "https://a.org")),
            Check::Refused(_)
        ));
        let restricted = grants(json!({"permissions": p, "network": "restricted"}));
        assert!(matches!(
            restricted.check(&res("net", "fetch", "https://a.org/x")),
            Check::Covered(_)
        ));
        assert!(matches!(
            restricted.check(&res("net", "fetch", "https://b.org")),
            Check::Refused(_)
        ));
        let full = grants(json!({"network": "full"}));
        assert!(matches!(
            full.check(&res("net", "fetch", "https://b.org")),
            Check::Covered(_)
        ));
    }

    #[test]
    fn an_empty_list_is_declared_and_grants_nothing() {
        let empty = grants(json!({"permissions": [], "workspace": "read_write"}));
        assert!(empty.declared);
        assert!(matches!(
            empty.check(&res("fs", "read", "a")),
            Check::Refused(_)
        ));
        assert!(!grants(json!({"workspace": "read_write"})).declared);
    }

    #[test]
    fn bad_values_are_errors() {
        assert!(
            Grants::from_requirements("n".into(), json!({"network": "some"}).as_object()).is_err()
        );
        assert!(
            Grants::from_requirements("n".into(), json!({"permissions": ["disk:x"]}).as_object())
                .is_err()
        );
    }
}

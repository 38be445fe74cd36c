//! Secrets never belong in an audit entry: once hashed into the chain they cannot be
//! removed without breaking it. `redact` replaces named members before hashing.

use serde_json::Value;

/// What a redacted member's value becomes.
pub const REDACTED: &str = "[redacted]";

/// Member names `AuditWriter` redacts unless told otherwise (compared ASCII
/// case-insensitively, exact names only, so `tokens_used` survives while `token` does not).
pub const DEFAULT_SECRET_FIELDS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "client_secret",
    "token",
    "access_token",
    "refresh_token",
    "api_key",
    "apikey",
    "authorization",
    "cookie",
    "private_key",
];

/// Replaces the value of every object member named in `fields` (ASCII case-insensitive),
/// at any depth, with [`REDACTED`]. Returns how many members were replaced.
pub fn redact<S: AsRef<str>>(value: &mut Value, fields: &[S]) -> usize {
    match value {
        Value::Object(map) => {
            let mut count = 0;
            for (name, member) in map.iter_mut() {
                if fields.iter().any(|f| f.as_ref().eq_ignore_ascii_case(name)) {
                    *member = Value::from(REDACTED);
                    count += 1;
                } else {
                    count += redact(member, fields);
                }
            }
            count
        }
        Value::Array(items) => items.iter_mut().map(|item| redact(item, fields)).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn named_members_are_replaced_at_any_depth_and_nothing_else() {
        let mut v = json!({
            "data": {"API_KEY": "sk-1", "tokens_used": 12,
                     "headers": [{"Authorization": "Bearer x", "accept": "json"}]},
            "token": {"nested": "whole value goes"}
        });
        assert_eq!(redact(&mut v, DEFAULT_SECRET_FIELDS), 3);
        assert_eq!(
            v,
            json!({
                "data": {"API_KEY": "[redacted]", "tokens_used": 12,
                         "headers": [{"Authorization": "[redacted]", "accept": "json"}]},
                "token": "[redacted]"
            })
        );
    }
}

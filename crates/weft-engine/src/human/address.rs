//! The address of a node inside a fragment instance, as people name it to decide its
//! wait: the instance's path, a dot, the node id (`work[3].review`, `fix[1].m[0].ok`, a
//! subgraph child's `child.ok`). A node id never holds a dot (AGS `node_id`), so a name
//! without one is a root node's id.

/// Splits `name` into the instance path and the node id; `None` for a root node's id.
pub fn split_address(name: &str) -> Option<(&str, &str)> {
    let (path, node) = name.rsplit_once('.')?;
    (!path.is_empty() && !path.ends_with('.') && !node.is_empty() && !node.contains('['))
        .then_some((path, node))
}

#[cfg(test)]
mod tests {
    use super::split_address;

    #[test]
    fn an_address_splits_at_its_last_dot_and_a_root_id_does_not() {
        assert_eq!(split_address("work[3].review"), Some(("work[3]", "review")));
        assert_eq!(split_address("l[0].m[2].d"), Some(("l[0].m[2]", "d")));
        assert_eq!(split_address("child.ok"), Some(("child", "ok")));
        assert_eq!(split_address("review"), None);
        assert_eq!(split_address("success/tone"), None);
        // Malformed: no node id after the path, or no path before it.
        assert_eq!(split_address("work[3]"), None);
        assert_eq!(split_address("work[3]."), None);
        assert_eq!(split_address(".ok"), None);
        assert_eq!(split_address("a.b[1]"), None);
    }
}

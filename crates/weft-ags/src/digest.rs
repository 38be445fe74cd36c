//! RFC 8785 canonical JSON and the `graph_digest`. (Being written.)

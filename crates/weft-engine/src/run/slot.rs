//! A node's state in its driver, beside its task (`job.rs`) and its outputs (shared with
//! the views that read them, so kept as one slice of their own): one [`NodeSlot`] per
//! node of the scheduler's graph, in the graph's order, grown with it (`grow.rs`).

use serde_json::Value;

/// What the driver keeps of one node while the run goes on.
#[derive(Clone, Debug)]
pub(super) struct NodeSlot {
    /// Attempts started so far.
    pub(super) attempts: u32,
    /// The attempt number a `Start` logs first: 1, or (on resume) the next after an
    /// abandoned attempt.
    pub(super) first_attempt: u32,
    /// When its first attempt started (ms).
    pub(super) started_at: Option<i64>,
    /// Once it finished, how long it took (`nodes.<id>.duration_seconds`).
    pub(super) duration: Option<f64>,
    /// `RT062` warnings noted before its attempt ran (an input that evaluated as `false`),
    /// logged with its `node_finished`.
    pub(super) expression_notes: Vec<String>,
    /// Its error, once it failed.
    pub(super) error: Option<String>,
    /// Its inputs as resolved at start, reused verbatim by every retry.
    pub(super) inputs: Option<Value>,
}

impl NodeSlot {
    /// A node that has not started.
    pub(super) fn new() -> NodeSlot {
        NodeSlot {
            attempts: 0,
            first_attempt: 1,
            started_at: None,
            duration: None,
            expression_notes: Vec::new(),
            error: None,
            inputs: None,
        }
    }
}

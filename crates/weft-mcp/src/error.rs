//! Why an MCP server or call failed, classified with the one failure class
//! ([`weft_core::FailureClass`]) so the agent loop can tell a tool's own error (the model may
//! try again differently) from a server that died or did not answer in time.

use weft_core::FailureClass;

/// An MCP failure with its evidence.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}{}", evidence_suffix(.evidence))]
pub struct McpError {
    /// `tool_error`: the server answered with an error (JSON-RPC error or `isError: true`),
    /// or the call was malformed; `transient`: the server could not be started, closed its
    /// pipes or crashed (another try may work); `timeout`: no answer within the limit.
    pub class: FailureClass,
    pub message: String,
    /// The last bytes the server wrote to stderr, when it wrote any.
    pub evidence: Option<String>,
}

fn evidence_suffix(evidence: &Option<String>) -> String {
    match evidence {
        Some(e) if !e.trim().is_empty() => format!(" (server stderr: {})", e.trim()),
        _ => String::new(),
    }
}

impl McpError {
    pub fn new(class: FailureClass, message: impl Into<String>) -> McpError {
        McpError {
            class,
            message: message.into(),
            evidence: None,
        }
    }

    pub fn tool(message: impl Into<String>) -> McpError {
        McpError::new(FailureClass::ToolError, message)
    }

    pub fn transient(message: impl Into<String>) -> McpError {
        McpError::new(FailureClass::Transient, message)
    }

    pub fn timeout(message: impl Into<String>) -> McpError {
        McpError::new(FailureClass::Timeout, message)
    }

    /// The same error with the server's stderr tail as evidence.
    pub fn with_evidence(mut self, evidence: Option<String>) -> McpError {
        self.evidence = evidence.filter(|e| !e.trim().is_empty());
        self
    }
}

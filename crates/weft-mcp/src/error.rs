//! Why an MCP server or call failed, classified so the agent loop can tell a tool's own error
//! (the model may try again differently) from a server that died or did not answer in time.

/// The class of an MCP failure (the `class` of a failed tool outcome).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpErrorClass {
    /// The server answered with an error (JSON-RPC error or `isError: true`), or the call was
    /// malformed.
    ToolError,
    /// The server could not be started, closed its pipes or crashed: another try may work.
    Transient,
    /// No answer within the limit.
    Timeout,
}

impl McpErrorClass {
    /// The class as a failure class string.
    pub fn as_str(self) -> &'static str {
        match self {
            McpErrorClass::ToolError => "tool_error",
            McpErrorClass::Transient => "transient",
            McpErrorClass::Timeout => "timeout",
        }
    }
}

/// An MCP failure with its evidence.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}{}", evidence_suffix(.evidence))]
pub struct McpError {
    pub class: McpErrorClass,
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
    pub fn new(class: McpErrorClass, message: impl Into<String>) -> McpError {
        McpError {
            class,
            message: message.into(),
            evidence: None,
        }
    }

    pub fn tool(message: impl Into<String>) -> McpError {
        McpError::new(McpErrorClass::ToolError, message)
    }

    pub fn transient(message: impl Into<String>) -> McpError {
        McpError::new(McpErrorClass::Transient, message)
    }

    pub fn timeout(message: impl Into<String>) -> McpError {
        McpError::new(McpErrorClass::Timeout, message)
    }

    /// The same error with the server's stderr tail as evidence.
    pub fn with_evidence(mut self, evidence: Option<String>) -> McpError {
        self.evidence = evidence.filter(|e| !e.trim().is_empty());
        self
    }
}

//! Usage and limits of one attempt: what an agent spent ([`Usage`]) and what it may still
//! spend ([`Limits`]), with the check a model agent makes before and after each turn.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What work cost: agent steps (model turns), tool calls, tokens and money.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub agent_steps: u64,
    #[serde(default)]
    pub tool_calls: u64,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cost_usd: f64,
    /// Model turns whose provider reported no usage: their tokens (and cost) are weft's
    /// local estimate, so limits still hold; the record says so (`x-weft-estimated_turns`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub estimated_turns: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Adds `other` (saturating).
    pub fn add(&mut self, other: &Usage) {
        self.agent_steps = self.agent_steps.saturating_add(other.agent_steps);
        self.tool_calls = self.tool_calls.saturating_add(other.tool_calls);
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cost_usd += other.cost_usd;
        self.estimated_turns = self.estimated_turns.saturating_add(other.estimated_turns);
    }

    /// `self - other`, each member floored at zero (what `self` adds beyond `other`).
    pub fn saturating_sub(&self, other: &Usage) -> Usage {
        Usage {
            agent_steps: self.agent_steps.saturating_sub(other.agent_steps),
            tool_calls: self.tool_calls.saturating_sub(other.tool_calls),
            input_tokens: self.input_tokens.saturating_sub(other.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(other.output_tokens),
            cost_usd: (self.cost_usd - other.cost_usd).max(0.0),
            estimated_turns: self.estimated_turns.saturating_sub(other.estimated_turns),
        }
    }

    /// `self + other`.
    pub fn plus(&self, other: &Usage) -> Usage {
        let mut u = *self;
        u.add(other);
        u
    }

    /// Nothing spent (an `exec` attempt, an expression decision).
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }
}

/// What one attempt may spend. Token and cost limits are what is *left*: the node's limits
/// less what its earlier attempts spent, capped by what the run has left.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// The attempt's time limit.
    pub wall_clock: Duration,
    pub max_agent_steps: Option<u64>,
    pub max_tool_calls: Option<u64>,
    pub max_input_tokens: Option<u64>,
    pub max_output_tokens: Option<u64>,
    pub max_total_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
}

impl Limits {
    /// Only a time limit.
    pub fn wall_clock(wall_clock: Duration) -> Limits {
        Limits {
            wall_clock,
            max_agent_steps: None,
            max_tool_calls: None,
            max_input_tokens: None,
            max_output_tokens: None,
            max_total_tokens: None,
            max_cost_usd: None,
        }
    }

    /// What is left of these limits once `spent` is spent (steps, tool calls, tokens and
    /// cost; the time limit stays as it is): the judges of an attempt spend from what the
    /// attempt's own turns left.
    pub fn less(&self, spent: &Usage) -> Limits {
        let left = |l: Option<u64>, s: u64| l.map(|l| l.saturating_sub(s));
        Limits {
            wall_clock: self.wall_clock,
            max_agent_steps: left(self.max_agent_steps, spent.agent_steps),
            max_tool_calls: left(self.max_tool_calls, spent.tool_calls),
            max_input_tokens: left(self.max_input_tokens, spent.input_tokens),
            max_output_tokens: left(self.max_output_tokens, spent.output_tokens),
            max_total_tokens: left(self.max_total_tokens, spent.total_tokens()),
            max_cost_usd: self.max_cost_usd.map(|c| (c - spent.cost_usd).max(0.0)),
        }
    }

    /// The first limit `used` exceeds, as a `budget_exceeded` message (`None`: within all).
    pub fn exceeded(&self, used: &Usage) -> Option<String> {
        let over = |name: &str, limit: Option<u64>, value: u64| {
            limit
                .filter(|l| value > *l)
                .map(|l| format!("{name} {l} exceeded ({value})"))
        };
        over("max_agent_steps", self.max_agent_steps, used.agent_steps)
            .or_else(|| over("max_tool_calls", self.max_tool_calls, used.tool_calls))
            .or_else(|| over("max_input_tokens", self.max_input_tokens, used.input_tokens))
            .or_else(|| {
                over(
                    "max_output_tokens",
                    self.max_output_tokens,
                    used.output_tokens,
                )
            })
            .or_else(|| {
                over(
                    "max_total_tokens",
                    self.max_total_tokens,
                    used.total_tokens(),
                )
            })
            .or_else(|| {
                self.max_cost_usd
                    .filter(|l| used.cost_usd > *l + 1e-12)
                    .map(|l| format!("max_cost_usd {l} exceeded ({})", used.cost_usd))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_exceeded_limit_is_named() {
        let mut l = Limits::wall_clock(Duration::from_secs(1));
        let used = Usage {
            agent_steps: 3,
            tool_calls: 2,
            input_tokens: 100,
            output_tokens: 50,
            cost_usd: 0.5,
            estimated_turns: 0,
        };
        assert_eq!(l.exceeded(&used), None);
        l.max_total_tokens = Some(150);
        assert_eq!(l.exceeded(&used), None);
        l.max_total_tokens = Some(149);
        assert_eq!(
            l.exceeded(&used).as_deref(),
            Some("max_total_tokens 149 exceeded (150)")
        );
        l.max_agent_steps = Some(2);
        assert!(l.exceeded(&used).unwrap().starts_with("max_agent_steps 2"));
        let mut c = Limits::wall_clock(Duration::from_secs(1));
        c.max_cost_usd = Some(0.25);
        assert!(c.exceeded(&used).unwrap().starts_with("max_cost_usd"));
        assert_eq!(used.plus(&used).total_tokens(), 300);
    }
}

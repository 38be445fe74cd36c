//! Budgets across attempts and nodes (`docs/semantics.md`, "Budgets"): the graph's
//! `constraints` (`max_node_executions`, `max_total_tokens`, `max_cost_usd`,
//! `max_wall_clock_seconds`) and what each node's attempts may still spend.
//!
//! [`RunBudget`] is a fold over the run's log: executions are `node_started` events, usage
//! is what `node_finished` (and, in a live run, each finished attempt) reports, so a
//! resumed run starts from the same totals. A graph limit that is reached stops new work:
//! no further attempt or node starts (a node that would start settles `cancelled` with a
//! `budget_exceeded` error) and the run ends with `RT061`.

use std::time::Duration;

use serde_json::{Map, Value};
use weft_ags::model::{Fields, obj_of};

use super::Driver;
use super::job::Work;
use super::node::AttemptEnv;
use crate::agent::{Limits, Usage, route};
use crate::events::RunEvent;

/// The graph's limits and what the run has spent.
/// The graph's limits (`constraints` of the run's document) and when the run started.
#[derive(Debug, Default)]
struct GraphLimits {
    max_node_executions: Option<u64>,
    max_total_tokens: Option<u64>,
    max_cost_usd: Option<f64>,
    max_wall_clock: Option<Duration>,
    /// `constraints.deadline` (DIGEST §1.5), in epoch ms: a global limit like the others.
    deadline_ms: Option<i64>,
    /// When the run started (`run_started`), for the wall clock.
    started_ms: i64,
}

/// The run's totals, shared by the root's driver and every fragment instance's: a child's
/// executions and usage count against the run's global limits (DIGEST §1.8: "the child's
/// usage counts against the parent's global budgets"). All drivers of a run are polled by
/// one task, so the lock is never contended.
#[derive(Debug, Default)]
pub(super) struct Totals {
    /// Attempts started (`node_started`), all nodes of all scopes.
    pub(super) executions: u64,
    pub(super) used: Usage,
    /// Why new work stopped (the RT061 reason), once a graph limit is reached.
    pub(super) stopped: Option<String>,
}

#[derive(Debug, Default)]
pub(super) struct RunBudget {
    limits: std::sync::Arc<GraphLimits>,
    totals: std::sync::Arc<std::sync::Mutex<Totals>>,
    /// Per node of this driver's scope: what its attempts spent, by attempt number (index
    /// `n - 1`; an attempt abandoned by a dead process keeps its slot, at zero).
    pub(super) attempts: Vec<Vec<Usage>>,
}

impl RunBudget {
    /// The limits of `root`'s `constraints`, for a run of `nodes` nodes started at
    /// `started_ms`.
    pub(super) fn new(root: &Map<String, Value>, nodes: usize, started_ms: i64) -> RunBudget {
        let c = obj_of(root, "constraints");
        let field = |k: &str| c.and_then(|c| c.field(k));
        RunBudget {
            limits: std::sync::Arc::new(GraphLimits {
                max_node_executions: field("max_node_executions").and_then(Value::as_u64),
                max_total_tokens: field("max_total_tokens").and_then(Value::as_u64),
                max_cost_usd: field("max_cost_usd").and_then(Value::as_f64),
                max_wall_clock: field("max_wall_clock_seconds")
                    .and_then(Value::as_f64)
                    .filter(|s| s.is_finite() && *s > 0.0)
                    .map(Duration::from_secs_f64),
                deadline_ms: field("deadline")
                    .and_then(Value::as_str)
                    .and_then(crate::timefmt::parse_rfc3339_ms),
                started_ms,
            }),
            totals: Default::default(),
            attempts: vec![Vec::new(); nodes],
        }
    }

    /// The budget of a fragment instance of `nodes` nodes under this one: the run's limits
    /// and totals, its own per-node attempts.
    pub(super) fn for_fragment(&self, nodes: usize) -> RunBudget {
        RunBudget {
            limits: std::sync::Arc::clone(&self.limits),
            totals: std::sync::Arc::clone(&self.totals),
            attempts: vec![Vec::new(); nodes],
        }
    }

    fn totals(&self) -> std::sync::MutexGuard<'_, Totals> {
        self.totals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What the run's agents spent in all (every scope).
    pub(super) fn used(&self) -> Usage {
        self.totals().used
    }

    /// Why new work stopped (RT061), once a graph limit is reached.
    pub(super) fn stopped(&self) -> Option<String> {
        self.totals().stopped.clone()
    }

    /// Folds a stored log into the per-node attempts and, with `totals` (the root on
    /// resume, over every scope's events), into the run's totals: executions from
    /// `node_started`, usage by the one spend fold of a log ([`crate::view::SpendLedger`],
    /// which `weft status`, the progress display and the record use too). `index_of` finds
    /// this scope's nodes; `events` are one scope's log.
    pub(super) fn replay<'e>(
        &mut self,
        events: impl IntoIterator<Item = &'e RunEvent>,
        index_of: impl Fn(&str) -> Option<usize>,
        totals: bool,
    ) {
        let mut ledger = crate::view::SpendLedger::default();
        let mut executions = 0u64;
        for e in events {
            ledger.apply(None, e);
            match e {
                RunEvent::NodeStarted { .. } => executions += 1,
                RunEvent::AttemptSpent {
                    node,
                    attempt,
                    usage,
                } => {
                    if let Some(i) = index_of(node) {
                        set_at(&mut self.attempts[i], *attempt, usage);
                    }
                }
                RunEvent::NodeFinished {
                    node,
                    attempt_usage,
                    ..
                } => {
                    if let Some(i) = index_of(node) {
                        self.attempts[i].clone_from(attempt_usage);
                    }
                }
                _ => {}
            }
        }
        if totals {
            let mut t = self.totals();
            t.executions += executions;
            t.used.add(&ledger.total());
        }
    }

    /// Adds the executions and usage of events outside this scope (a resumed run's
    /// fragment instances) to the run's totals.
    pub(super) fn replay_totals(&mut self, events: &[RunEvent]) {
        self.replay(events, |_| None, true);
    }

    /// Does the graph set any limit? (A map item takes its light path only when none can
    /// stop it: `map_item.rs`.)
    pub(super) fn has_limits(&self) -> bool {
        let l = &self.limits;
        l.max_node_executions.is_some()
            || l.max_total_tokens.is_some()
            || l.max_cost_usd.is_some()
            || l.max_wall_clock.is_some()
            || l.deadline_ms.is_some()
    }

    /// Counts one attempt started where no limit applies ([`RunBudget::has_limits`] is
    /// `false`): [`RunBudget::admit`], which then always admits.
    pub(super) fn count_execution(&self) -> Result<(), String> {
        let mut t = self.totals();
        if let Some(r) = &t.stopped {
            return Err(r.clone());
        }
        t.executions += 1;
        Ok(())
    }

    /// May one more attempt start now? Counts it when it may; otherwise records (once) and
    /// returns why not.
    pub(super) fn admit(&mut self, now_ms: i64) -> Result<(), String> {
        let limits = std::sync::Arc::clone(&self.limits);
        let mut t = self.totals();
        if let Some(r) = &t.stopped {
            return Err(r.clone());
        }
        let elapsed = Duration::from_millis(u64::try_from(now_ms - limits.started_ms).unwrap_or(0));
        let reason = if let Some(max) = limits.max_node_executions.filter(|m| t.executions >= *m) {
            Some(format!(
                "max_node_executions {max} reached: no further node or attempt starts"
            ))
        } else if let Some(max) = limits
            .max_total_tokens
            .filter(|m| t.used.total_tokens() >= *m)
        {
            Some(format!(
                "max_total_tokens {max} reached ({} spent)",
                t.used.total_tokens()
            ))
        } else if let Some(max) = limits.max_cost_usd.filter(|m| t.used.cost_usd >= *m) {
            Some(format!(
                "max_cost_usd {max} reached ({} spent)",
                t.used.cost_usd
            ))
        } else if let Some(d) = limits.deadline_ms.filter(|d| now_ms >= *d) {
            Some(format!("deadline {} passed", crate::timefmt::rfc3339_ms(d)))
        } else {
            limits
                .max_wall_clock
                .filter(|m| elapsed >= *m)
                .map(|m| format!("max_wall_clock_seconds {} reached", m.as_secs_f64()))
        };
        if let Some(r) = reason {
            t.stopped = Some(r.clone());
            return Err(r);
        }
        t.executions += 1;
        Ok(())
    }

    /// Records what attempt `number` of `node` spent (added to what it spent before:
    /// a fallback's judge bills the same attempt).
    pub(super) fn spent(&mut self, node: usize, number: u32, usage: Usage) {
        self.totals().used.add(&usage);
        if let Some(a) = self.attempts.get_mut(node) {
            add_at(a, number, &usage);
        }
    }

    /// What attempt `number` of `node` has spent so far.
    pub(super) fn attempt_spent(&self, node: usize, number: u32) -> Usage {
        self.attempts
            .get(node)
            .and_then(|a| a.get(number.saturating_sub(1) as usize))
            .copied()
            .unwrap_or_default()
    }

    /// What `node`'s attempts spent in all.
    pub(super) fn node_total(&self, node: usize) -> Usage {
        self.attempts
            .get(node)
            .into_iter()
            .flatten()
            .fold(Usage::default(), |acc, u| acc.plus(u))
    }

    /// The limits of the next attempt of `node`: the node's own, less what its earlier
    /// attempts spent (node limits are summed across attempts), capped by what the run has
    /// left (budget nesting: min(node, remaining global)).
    pub(super) fn limits_for(&self, node: usize, own: &Limits, now_ms: i64) -> Limits {
        let spent = self.node_total(node);
        let left = |limit: Option<u64>, used: u64| limit.map(|l| l.saturating_sub(used));
        let min = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        let used = self.used();
        let global_tokens = left(self.limits.max_total_tokens, used.total_tokens());
        let global_cost = self
            .limits
            .max_cost_usd
            .map(|m| (m - used.cost_usd).max(0.0));
        let node_cost = own.max_cost_usd.map(|m| (m - spent.cost_usd).max(0.0));
        let mut wall_clock = own.wall_clock;
        if let Some(max) = self.limits.max_wall_clock {
            let elapsed =
                Duration::from_millis(u64::try_from(now_ms - self.limits.started_ms).unwrap_or(0));
            wall_clock = wall_clock.min(max.saturating_sub(elapsed));
        }
        if let Some(deadline) = self.limits.deadline_ms {
            let left = u64::try_from(deadline - now_ms).unwrap_or(0);
            wall_clock = wall_clock.min(Duration::from_millis(left));
        }
        Limits {
            wall_clock,
            // Steps and tool calls bound one attempt's inner loop.
            max_agent_steps: own.max_agent_steps,
            max_tool_calls: own.max_tool_calls,
            max_input_tokens: left(own.max_input_tokens, spent.input_tokens),
            max_output_tokens: left(own.max_output_tokens, spent.output_tokens),
            max_total_tokens: min(
                left(own.max_total_tokens, spent.total_tokens()),
                global_tokens,
            ),
            max_cost_usd: match (node_cost, global_cost) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

impl Driver<'_> {
    /// Admits attempt `number` of `node` under the run's budget and routes it: the
    /// environment it runs with, or `Err((blocked, reason))` — `blocked: false` when a graph
    /// limit stopped new work, `true` when the node cannot be routed (RT011).
    pub(super) fn admit_attempt(
        &mut self,
        node: usize,
        number: u32,
    ) -> Result<AttemptEnv, (bool, String)> {
        let job = std::sync::Arc::clone(&self.jobs[node]);
        let route = match &job.work {
            Work::Model => {
                let models = self
                    .agents
                    .model_agent()
                    .map(|a| a.models())
                    .unwrap_or_default();
                Some(route::route(&models, &job.tier, number).map_err(|e| (true, e))?)
            }
            _ => None,
        };
        let now = self.clock.now_ms();
        self.budget
            .admit(now)
            .map_err(|r| (false, format!("RT061: {r}")))?;
        Ok(AttemptEnv {
            agents: std::sync::Arc::clone(&self.agents),
            clock: std::sync::Arc::clone(&self.clock),
            number,
            route,
            limits: self.budget.limits_for(node, &job.limits, now),
            scope: self.scope.path.clone(),
            approvals: self
                .human
                .tool_approvals
                .get(&node)
                .cloned()
                .unwrap_or_default(),
            // No agent, no tools: an expression's attempt gets no journal to build.
            journal: (!matches!(job.work, Work::Expression))
                .then(|| self.journal.for_attempt(node, number)),
            scratch: job
                .isolated
                .then(|| self.scratch_place(&job, self.journal.key_attempt(node, number))),
            keep_out: if job.isolated {
                super::isolate::own_files(self.store.path(), &job.workspace)
            } else {
                Vec::new()
            },
        })
    }
}

/// Adds `usage` to attempt `number`'s slot, making room for it.
fn add_at(attempts: &mut Vec<Usage>, number: u32, usage: &Usage) {
    let k = number.max(1) as usize - 1;
    if attempts.len() <= k {
        attempts.resize(k + 1, Usage::default());
    }
    attempts[k].add(usage);
}

/// Sets attempt `number`'s slot to `usage`, making room for it.
fn set_at(attempts: &mut Vec<Usage>, number: u32, usage: &Usage) {
    let k = number.max(1) as usize - 1;
    if attempts.len() <= k {
        attempts.resize(k + 1, Usage::default());
    }
    attempts[k] = *usage;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(n: u64) -> Usage {
        Usage {
            input_tokens: n,
            ..Usage::default()
        }
    }

    #[test]
    fn spend_logged_before_a_wait_is_counted_once_however_often_it_is_logged() {
        let spent = |attempt, n| RunEvent::AttemptSpent {
            node: "a".into(),
            attempt,
            usage: tokens(n),
        };
        let finished = RunEvent::NodeFinished {
            node: "a".into(),
            outcome: crate::NodeOutcome::Succeeded,
            outputs: serde_json::json!({}),
            redacted: Vec::new(),
            verdict: None,
            guards: Vec::new(),
            attempts: 2,
            error: None,
            absorbed_by: None,
            absorbed_failure: None,
            usage: Some(tokens(170)),
            attempt_usage: vec![tokens(100), tokens(70)],
            warnings: Vec::new(),
        };
        // Attempt 1 logged at a first wait, again at a second one beside attempt 2.
        let waiting = [spent(1, 100), spent(1, 100), spent(2, 50)];
        for (index_of, scope) in [(Some(0), "this scope"), (None, "another scope")] {
            let mut b = RunBudget::new(&serde_json::Map::new(), 1, 0);
            b.replay(&waiting, |_| index_of, true);
            assert_eq!(b.used().input_tokens, 150, "{scope}");
            // A resume folds a scope's whole log in one call.
            let mut whole = RunBudget::new(&serde_json::Map::new(), 1, 0);
            let all: Vec<&RunEvent> = waiting.iter().chain([&finished]).collect();
            whole.replay(all, |_| index_of, true);
            assert_eq!(whole.used().input_tokens, 170, "{scope}");
            if index_of.is_some() {
                assert_eq!(whole.attempts[0], [tokens(100), tokens(70)]);
            }
        }
    }
}

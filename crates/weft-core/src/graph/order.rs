//! The topological order as sparse labels, kept valid by local repairs.
//!
//! Every live node has a label (`rank`); every live edge goes from a lower label to a higher
//! one, and `order` lists live nodes by label. Labels are spaced [`GAP`] apart when assigned
//! in bulk, so the parts of a split fit in the gap their node leaves without moving anyone.
//!
//! An edge `x → y` with `rank[x] > rank[y]` is repaired as Pearce and Kelly do ("A dynamic
//! topological sort algorithm for directed acyclic graphs", 2006): the nodes reachable from
//! `y` with a label below `rank[x]` (the forward region; reaching `x` means a cycle) and the
//! nodes reaching `x` with a label above `rank[y]` (the backward region) swap places within
//! the pool of their own labels, the backward region first, each keeping its internal
//! order. Nothing outside the two regions moves, so the cost is proportional to the region
//! between the edge's ends, not to the graph. The searches only read: the caller runs them
//! while validating and applies their result only once the whole mutation is accepted.
//!
//! When a gap runs out (many splits at one place) or labels would overflow, every live node
//! is relabelled in order, `GAP` apart: O(V), rare, and reported as `relabeled_all` so the
//! scheduler re-keys its ready set.

use super::{Change, WorkGraph};
use std::collections::{HashMap, HashSet};

/// The distance between labels assigned in bulk (room for about four billion split parts
/// at one place before a relabel).
pub(crate) const GAP: u64 = 1 << 32;

impl WorkGraph {
    /// The label after every live node, or `None` when it would overflow.
    pub(crate) fn label_after_last(&self) -> Option<u64> {
        match self.order.last_key_value() {
            Some((&last, _)) => last.checked_add(GAP),
            None => Some(GAP),
        }
    }

    /// Gives a new (or relabelled) node its label.
    pub(crate) fn set_label(&mut self, node: usize, label: u64) {
        if self.rank[node] != u64::MAX {
            self.order.remove(&self.rank[node]);
        }
        self.rank[node] = label;
        self.order.insert(label, node);
    }

    /// Appends a new node at the end of the order.
    pub(crate) fn append_label(&mut self, node: usize, change: &mut Change) {
        let label = match self.label_after_last() {
            Some(label) => label,
            None => {
                self.relabel_all(change);
                self.label_after_last().unwrap_or(u64::MAX - 1)
            }
        };
        self.set_label(node, label);
    }

    /// Takes a retired node out of the order.
    pub(crate) fn drop_label(&mut self, node: usize, change: &mut Change) {
        let old = self.rank[node];
        if old != u64::MAX {
            self.order.remove(&old);
            self.rank[node] = u64::MAX;
            change.reranked.push((node, old));
        }
    }

    /// Relabels every live node in order, `GAP` apart.
    pub(crate) fn relabel_all(&mut self, change: &mut Change) {
        let nodes: Vec<usize> = self.order.values().copied().collect();
        self.order.clear();
        for (i, node) in nodes.into_iter().enumerate() {
            let label = (i as u64 + 1).saturating_mul(GAP);
            self.rank[node] = label;
            self.order.insert(label, node);
        }
        change.relabeled_all = true;
    }

    /// `k` increasing labels strictly between the live neighbours of `node`'s label (the node
    /// itself is about to be retired, so its own label is free too), or `None` when the gap
    /// is too small.
    pub(crate) fn labels_in_place_of(&self, node: usize, k: usize) -> Option<Vec<u64>> {
        let at = self.rank[node];
        let below = self
            .order
            .range(..at)
            .next_back()
            .map(|(&l, _)| l)
            .unwrap_or(0);
        let above = match self.order.range(at + 1..).next() {
            Some((&l, _)) => l,
            None => at.checked_add(GAP)?,
        };
        let room = above - below; // labels below+1 ..= above-1 are free
        let k = k as u64;
        if room <= k {
            return None;
        }
        let step = room / (k + 1);
        Some((1..=k).map(|i| below + i * step).collect())
    }

    /// The live nodes reachable from `starts` (themselves included) whose label is at most
    /// `bound`. Reaching `stop` means the edge being added closes a cycle: `Err` carries the
    /// path from a start to `stop`.
    pub(crate) fn forward_region(
        &self,
        starts: &[usize],
        bound: u64,
        stop: usize,
    ) -> Result<Vec<usize>, Vec<usize>> {
        let mut parent: HashMap<usize, usize> = HashMap::new();
        let mut seen: HashSet<usize> = HashSet::new();
        let mut stack: Vec<usize> = Vec::new();
        let mut region = Vec::new();
        for &s in starts {
            if self.rank[s] <= bound && seen.insert(s) {
                stack.push(s);
            }
        }
        while let Some(n) = stack.pop() {
            if n == stop {
                let mut path = vec![n];
                let mut at = n;
                while let Some(&p) = parent.get(&at) {
                    path.push(p);
                    at = p;
                }
                path.reverse();
                return Err(path);
            }
            region.push(n);
            for &e in &self.outgoing[n] {
                let to = self.edges[e].to;
                if self.rank[to] <= bound && seen.insert(to) {
                    parent.insert(to, n);
                    stack.push(to);
                }
            }
        }
        Ok(region)
    }

    /// The live nodes reaching `starts` (themselves included) whose label is above `bound`.
    pub(crate) fn backward_region(&self, starts: &[usize], bound: u64) -> Vec<usize> {
        let mut seen: HashSet<usize> = HashSet::new();
        let mut stack: Vec<usize> = starts
            .iter()
            .copied()
            .filter(|&s| self.rank[s] > bound && self.rank[s] != u64::MAX && seen.insert(s))
            .collect();
        let mut region = Vec::new();
        while let Some(n) = stack.pop() {
            region.push(n);
            for &e in &self.incoming[n] {
                let from = self.edges[e].from;
                if self.rank[from] > bound && seen.insert(from) {
                    stack.push(from);
                }
            }
        }
        region
    }

    /// Reassigns the pool of labels of `back`, `middle` and `fwd` (plus `extra`, a label
    /// freed by a retired node) so that `back` comes first, then `middle`, then `fwd`, each
    /// region keeping its internal order.
    pub(crate) fn reorder(
        &mut self,
        mut back: Vec<usize>,
        middle: Option<usize>,
        mut fwd: Vec<usize>,
        extra: Option<u64>,
        change: &mut Change,
    ) {
        back.sort_unstable_by_key(|&n| self.rank[n]);
        fwd.sort_unstable_by_key(|&n| self.rank[n]);
        let mut pool: Vec<u64> = back
            .iter()
            .chain(&fwd)
            .map(|&n| self.rank[n])
            .chain(middle.map(|m| self.rank[m]).filter(|&l| l != u64::MAX))
            .chain(extra)
            .collect();
        pool.sort_unstable();
        let nodes: Vec<usize> = back.into_iter().chain(middle).chain(fwd).collect();
        for &n in &nodes {
            let old = self.rank[n];
            if old != u64::MAX {
                self.order.remove(&old);
            }
        }
        for (n, label) in nodes.into_iter().zip(pool) {
            let old = self.rank[n];
            if old != label {
                if old != u64::MAX {
                    change.reranked.push((n, old));
                }
                self.rank[n] = label;
            }
            self.order.insert(label, n);
        }
    }
}

//! The index's names (entities, predicates, passages' source and chunk) in append-only
//! tables that a served subgraph shares with the index: one reference count per subgraph,
//! none per name, and no lock. A slot is set once and never changes, and the segments
//! holding the slots never move, so a subgraph names its edges whenever it is written out,
//! from ids it took under the index's read lock (ids only ever grow; a failed transaction
//! adds no name to the index).

use std::sync::OnceLock;

/// Slots in the first segment (as a power of two); segment `k` holds `1 << (FIRST_BITS + k)`.
const FIRST_BITS: u32 = 6;
/// Enough segments for every `u32` id: id + 2^FIRST_BITS < 2^33.
const SEGMENTS: usize = 33 - FIRST_BITS as usize;

/// An append-only table of `T` by dense `u32` id.
pub(crate) struct Lexicon<T> {
    segments: [OnceLock<Box<[OnceLock<T>]>>; SEGMENTS],
}

impl<T> Default for Lexicon<T> {
    fn default() -> Self {
        Lexicon {
            segments: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

impl<T> std::fmt::Debug for Lexicon<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let segments = self.segments.iter().filter(|s| s.get().is_some()).count();
        write!(f, "Lexicon({segments} segments)")
    }
}

/// The segment of an id and its offset there.
fn place(id: u32) -> (usize, usize) {
    let shifted = u64::from(id) + (1 << FIRST_BITS);
    let top = 63 - shifted.leading_zeros();
    ((top - FIRST_BITS) as usize, (shifted - (1 << top)) as usize)
}

impl<T> Lexicon<T> {
    pub(crate) fn get(&self, id: u32) -> Option<&T> {
        let (segment, offset) = place(id);
        self.segments.get(segment)?.get()?.get(offset)?.get()
    }

    /// Sets slot `id`; false when it was set already (the index assigns each id once, so
    /// the caller reports that as a broken index).
    pub(crate) fn set(&self, id: u32, value: T) -> bool {
        let (segment, offset) = place(id);
        let Some(cell) = self.segments.get(segment) else {
            return false;
        };
        let slots = cell.get_or_init(|| {
            (0..1usize << (FIRST_BITS as usize + segment))
                .map(|_| OnceLock::new())
                .collect()
        });
        slots
            .get(offset)
            .is_some_and(|slot| slot.set(value).is_ok())
    }
}

/// Every name the index serves, by id.
#[derive(Debug, Default)]
pub(crate) struct Names {
    pub entities: Lexicon<Box<str>>,
    pub predicates: Lexicon<Box<str>>,
    /// Per chunk id: the passage's source and its chunk.
    pub chunks: Lexicon<(Box<str>, Box<str>)>,
}

impl Names {
    pub(crate) fn entity(&self, id: u32) -> &str {
        self.entities.get(id).map_or("", |name| name)
    }

    pub(crate) fn predicate(&self, id: u32) -> &str {
        self.predicates.get(id).map_or("", |name| name)
    }

    pub(crate) fn chunk(&self, id: u32) -> (&str, &str) {
        self.chunks
            .get(id)
            .map_or(("", ""), |(source, chunk)| (source, chunk))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_map_to_distinct_slots_across_segment_bounds_and_are_set_once() {
        let table: Lexicon<u32> = Lexicon::default();
        let ids: Vec<u32> = (0..300)
            .chain([1_000, 65_535, 65_536, 1 << 20, u32::MAX - 64, u32::MAX])
            .collect();
        for &id in &ids[..300] {
            assert!(table.set(id, id.wrapping_mul(7)));
        }
        for &id in &ids[..300] {
            assert_eq!(table.get(id), Some(&id.wrapping_mul(7)));
            assert!(!table.set(id, 0), "slot {id} set twice");
        }
        assert_eq!(table.get(300), None);
        // The places of the far ids are distinct and in range (no segment is allocated).
        let places: std::collections::HashSet<_> = ids.iter().map(|&id| place(id)).collect();
        assert_eq!(places.len(), ids.len());
        assert_eq!(place(u32::MAX).0, SEGMENTS - 1);
        assert_eq!(place(63), (0, 63));
        assert_eq!(place(64), (1, 0));
    }
}

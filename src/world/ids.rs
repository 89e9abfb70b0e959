//! Generational ids: what makes a removed cloth, collider or obstacle an error instead of a
//! silent hit on whatever took its place (hecs `entities.rs`, in miniature).
//!
//! An id is `(index, generation)`: `index` is a slot of the world's table, `generation`
//! changes every time the slot is freed, so an id of a removed object never matches again.
//! Generations start at 1; a slot whose generation reaches `u32::MAX` is retired instead of
//! reused, so a generation is never repeated. The world keeps its cloths, colliders and
//! obstacles dense, in creation order (the order every stage and every output follows);
//! [`Ids`] maps an id to its place there. The C ABI's handles are these ids plus the world's
//! own id (`ffi::handles`).

use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name {
            index: u32,
            generation: u32,
        }

        impl $name {
            /// The id's slot and generation (what the C ABI's handles carry).
            #[must_use]
            pub fn parts(self) -> (u32, u32) {
                (self.index, self.generation)
            }

            /// The id with this slot and generation; a world refuses it unless it issued it.
            #[must_use]
            pub fn from_parts(index: u32, generation: u32) -> Self {
                Self { index, generation }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($what, " #{} (generation {})"), self.index, self.generation)
            }
        }

        impl Id for $name {
            fn parts(self) -> (u32, u32) {
                (self.index, self.generation)
            }
            fn from_parts(index: u32, generation: u32) -> Self {
                Self { index, generation }
            }
        }
    };
}

id_type!(
    /// A cloth of a [`crate::world::World`], from `add_cloth` or `add_isometric_cloth`.
    ClothId,
    "cloth"
);
id_type!(
    /// An analytic collider of a [`crate::world::World`], from `add_collider`.
    ColliderId,
    "collider"
);
id_type!(
    /// A triangle-mesh obstacle of a [`crate::world::World`], from `add_obstacle` (an analytic
    /// collider's tessellation is one too, edited through its collider).
    ObstacleId,
    "obstacle"
);

/// What [`Ids`] needs of an id type.
pub(crate) trait Id: Copy {
    fn parts(self) -> (u32, u32);
    fn from_parts(index: u32, generation: u32) -> Self;
}

/// The ids of a dense, creation-ordered list: the id of each place, and the place of each live
/// id. Removal keeps the order of the rest (each later place moves down one).
#[derive(Debug)]
pub(crate) struct Ids<K> {
    dense: Vec<K>,
    places: SlotTable<u32>,
}

impl<K> Default for Ids<K> {
    fn default() -> Self {
        Self {
            dense: Vec::new(),
            places: SlotTable::default(),
        }
    }
}

impl<K: Id> Ids<K> {
    /// The id of a new last place, or `None` when every `u32` slot is taken.
    pub(crate) fn push(&mut self) -> Option<K> {
        let place = u32::try_from(self.dense.len()).ok()?;
        let (index, generation) = self.places.insert(place)?;
        let id = K::from_parts(index, generation);
        self.dense.push(id);
        Some(id)
    }

    /// The place of a live id.
    pub(crate) fn place(&self, id: K) -> Option<usize> {
        let (index, generation) = id.parts();
        self.places.get(index, generation).map(|&p| p as usize)
    }

    /// Forgets a live id and returns its place; the places after it move down one.
    pub(crate) fn remove(&mut self, id: K) -> Option<usize> {
        let (index, generation) = id.parts();
        let place = self.places.remove(index, generation)?;
        self.dense.remove(place as usize);
        for p in self.places.values_mut() {
            if *p > place {
                *p -= 1;
            }
        }
        Some(place as usize)
    }

    /// The ids in place order.
    pub(crate) fn as_slice(&self) -> &[K] {
        &self.dense
    }
}

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// Slots with generations and a free list.
#[derive(Debug)]
pub(crate) struct SlotTable<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
}

impl<T> Default for SlotTable<T> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> SlotTable<T> {
    /// Stores `value`; returns its `(index, generation)`. `None` when every
    /// `u32` index is taken.
    pub(crate) fn insert(&mut self, value: T) -> Option<(u32, u32)> {
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            slot.value = Some(value);
            return Some((index, slot.generation));
        }
        let index = u32::try_from(self.slots.len()).ok()?;
        self.slots.push(Slot {
            generation: 1,
            value: Some(value),
        });
        Some((index, 1))
    }

    /// The value of a live `(index, generation)`.
    pub(crate) fn get(&self, index: u32, generation: u32) -> Option<&T> {
        let slot = self.slots.get(index as usize)?;
        if slot.generation == generation {
            slot.value.as_ref()
        } else {
            None
        }
    }

    /// The value of a live `(index, generation)`, mutably.
    pub(crate) fn get_mut(&mut self, index: u32, generation: u32) -> Option<&mut T> {
        let slot = self.slots.get_mut(index as usize)?;
        if slot.generation == generation {
            slot.value.as_mut()
        } else {
            None
        }
    }

    /// Removes a live `(index, generation)`; the slot's generation advances.
    pub(crate) fn remove(&mut self, index: u32, generation: u32) -> Option<T> {
        let slot = self.slots.get_mut(index as usize)?;
        if slot.generation != generation {
            return None;
        }
        let value = slot.value.take()?;
        if slot.generation < u32::MAX {
            slot.generation += 1;
            self.free.push(index);
        }
        Some(value)
    }

    /// Live entries as `(index, generation, value)`, in slot order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, u32, &T)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.value.as_ref().map(|v| (i as u32, s.generation, v)))
    }

    /// Number of slots, live or free (the bound of [`SlotTable::slot`]).
    pub(crate) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// The live value in slot `k`, if any.
    pub(crate) fn slot(&self, k: usize) -> Option<&T> {
        self.slots.get(k).and_then(|s| s.value.as_ref())
    }

    /// Live values, mutably, in slot order.
    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.slots.iter_mut().filter_map(|s| s.value.as_mut())
    }

    /// Number of live entries.
    #[cfg(any(test, feature = "scene"))]
    pub(crate) fn len(&self) -> usize {
        self.slots.iter().filter(|s| s.value.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    /// The table refused an insert (it never does below `u32::MAX` slots).
    const FULL: &str = "slot table full";

    #[test]
    fn removed_handles_stay_dead_after_reuse() -> Result<(), &'static str> {
        let mut t = SlotTable::default();
        let (i, g) = t.insert("a").ok_or(FULL)?;
        assert_eq!(g, 1);
        assert_eq!(t.remove(i, g), Some("a"));
        assert_eq!(t.get(i, g), None);
        assert_eq!(t.remove(i, g), None);
        let (j, h) = t.insert("b").ok_or(FULL)?;
        assert_eq!((j, h), (i, 2));
        assert_eq!(t.get(i, g), None);
        assert_eq!(t.get(j, h), Some(&"b"));
        assert_eq!(t.get(0, 0), None);
        assert_eq!(t.get(7, 1), None);
        Ok(())
    }

    #[test]
    fn a_slot_at_the_last_generation_is_retired() -> Result<(), &'static str> {
        let mut t = SlotTable::default();
        let (i, _) = t.insert(1).ok_or(FULL)?;
        t.slots[i as usize].generation = u32::MAX;
        assert_eq!(t.remove(i, u32::MAX), Some(1));
        let (j, g) = t.insert(2).ok_or(FULL)?;
        assert_ne!(j, i);
        assert_eq!(g, 1);
        assert_eq!(t.get(i, u32::MAX), None);
        Ok(())
    }

    #[test]
    fn ids_keep_creation_order_and_refuse_a_removed_id() -> Result<(), &'static str> {
        let mut ids: Ids<ClothId> = Ids::default();
        let a = ids.push().ok_or(FULL)?;
        let b = ids.push().ok_or(FULL)?;
        let c = ids.push().ok_or(FULL)?;
        assert_eq!(ids.remove(a), Some(0));
        assert_eq!(ids.remove(a), None);
        assert_eq!(
            (ids.place(a), ids.place(b), ids.place(c)),
            (None, Some(0), Some(1))
        );
        let d = ids.push().ok_or(FULL)?;
        assert_ne!(d, a, "a freed slot comes back with a new generation");
        assert_eq!(d.parts().0, a.parts().0);
        assert_eq!(ids.as_slice(), &[b, c, d]);
        assert_eq!(ids.place(d), Some(2));
        Ok(())
    }

    proptest! {
        /// Random insert/remove/lookup sequences agree with a HashMap model
        /// keyed by every handle ever issued.
        #[test]
        fn matches_a_hashmap_model(ops in proptest::collection::vec((0u8..3, 0usize..64), 1..200)) {
            let mut t = SlotTable::default();
            let mut issued: Vec<(u32, u32)> = Vec::new();
            let mut live: HashMap<(u32, u32), usize> = HashMap::new();
            for (n, (op, pick)) in ops.into_iter().enumerate() {
                match op {
                    0 => {
                        let h = t.insert(n).ok_or_else(|| TestCaseError::fail(FULL))?;
                        prop_assert!(!issued.contains(&h), "handle {:?} issued twice", h);
                        issued.push(h);
                        live.insert(h, n);
                    }
                    1 if !issued.is_empty() => {
                        let h = issued[pick % issued.len()];
                        prop_assert_eq!(t.remove(h.0, h.1), live.remove(&h));
                    }
                    _ if !issued.is_empty() => {
                        let h = issued[pick % issued.len()];
                        prop_assert_eq!(t.get(h.0, h.1), live.get(&h));
                    }
                    _ => {}
                }
                prop_assert_eq!(t.len(), live.len());
            }
        }
    }
}

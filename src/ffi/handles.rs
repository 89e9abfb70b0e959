//! Generational handle tables: what makes a stale or foreign handle an error
//! instead of a crash (hecs `entities.rs`, in miniature).
//!
//! A handle is `(world, index, generation)`. `world` is the creating world's
//! id, so a handle from another world never matches; `generation` changes
//! every time a slot is freed, so a handle to a removed object never matches
//! again. Generations start at 1 (an all-zero handle is never valid); a slot
//! whose generation reaches `u32::MAX` is retired instead of reused, so a
//! generation is never repeated.

/// A cloth in a world, as C sees it. Compare all three fields for equality.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct weft_cloth {
    /// Id of the world that created it.
    pub world: u32,
    /// Slot in the world's cloth table.
    pub index: u32,
    /// Generation of the slot when the cloth was created.
    pub generation: u32,
}

/// A collider (analytic or triangle mesh) in a world, as C sees it.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct weft_collider {
    /// Id of the world that created it.
    pub world: u32,
    /// Slot in the world's collider table.
    pub index: u32,
    /// Generation of the slot when the collider was created.
    pub generation: u32,
}

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// Slots with generations and a free list.
#[derive(Debug)]
pub(crate) struct HandleTable<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
}

impl<T> Default for HandleTable<T> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> HandleTable<T> {
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
    #[cfg(test)]
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

    /// Number of slots, live or free (the bound of [`HandleTable::slot`]).
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
    const FULL: &str = "handle table full";

    #[test]
    fn removed_handles_stay_dead_after_reuse() -> Result<(), &'static str> {
        let mut t = HandleTable::default();
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
        let mut t = HandleTable::default();
        let (i, _) = t.insert(1).ok_or(FULL)?;
        t.slots[i as usize].generation = u32::MAX;
        assert_eq!(t.remove(i, u32::MAX), Some(1));
        let (j, g) = t.insert(2).ok_or(FULL)?;
        assert_ne!(j, i);
        assert_eq!(g, 1);
        assert_eq!(t.get(i, u32::MAX), None);
        Ok(())
    }

    proptest! {
        /// Random insert/remove/lookup sequences agree with a HashMap model
        /// keyed by every handle ever issued.
        #[test]
        fn matches_a_hashmap_model(ops in proptest::collection::vec((0u8..3, 0usize..64), 1..200)) {
            let mut t = HandleTable::default();
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

//! Symbolic part of the block sparse matrix: which 3×3 blocks exist.
//!
//! A [`BlockPattern`] is built once, when a cloth is created, from the vertex pairs its
//! energies couple. It is symmetric (both `(i, j)` and `(j, i)` are stored), every row holds
//! its diagonal block, and each row's columns are sorted ascending. Elements look their
//! blocks up once with [`BlockPattern::slot`] and keep the returned [`BlockSlot`]s, so that
//! assembly during a step is a plain indexed add (STYLE "Runtime": no search, no hashing,
//! no growth).
//!
//! Storage is compressed sparse rows: `row_offsets` (`n + 1` entries), `cols` (one per
//! block) and `diag` (the slot of each row's diagonal block). Indices are `u32`: a pattern
//! holds at most `u32::MAX` blocks, which [`BlockPattern::from_pairs`] checks.
#![deny(unsafe_code)]

use std::ops::Range;

/// Index of a stored block in a [`BlockCsr`](super::BlockCsr)'s value array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockSlot(pub u32);

impl BlockSlot {
    /// The slot as an index into the value array.
    #[inline]
    #[must_use]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Symmetric block sparsity pattern, built once (cloth creation). Rows sorted by column; the
/// diagonal always present.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockPattern {
    /// `row_offsets[i]..row_offsets[i + 1]` are the slots of row `i`; `n + 1` entries.
    row_offsets: Vec<u32>,
    /// Column of each stored block, ascending within a row.
    cols: Vec<u32>,
    /// Slot of each row's diagonal block.
    diag: Vec<u32>,
}

impl BlockPattern {
    /// n block rows; each (i, j) pair adds both (i, j) and (j, i); duplicates merged; diagonals
    /// always added.
    ///
    /// Runs in `O(m log m)` for `m` pairs; meant for cloth creation, not for a step.
    ///
    /// # Panics
    /// If a pair names a row `>= n`, if `n` does not fit in `u32`, or if the pattern would
    /// hold more than `u32::MAX` blocks.
    #[must_use]
    pub fn from_pairs(n: usize, pairs: impl IntoIterator<Item = (u32, u32)>) -> BlockPattern {
        assert!(
            u32::try_from(n).is_ok(),
            "BlockPattern: {n} rows do not fit in u32 indices"
        );
        let mut entries: Vec<(u32, u32)> = Vec::new();
        for (i, j) in pairs {
            assert!(
                (i as usize) < n && (j as usize) < n,
                "BlockPattern::from_pairs: pair ({i}, {j}) out of range for {n} rows"
            );
            entries.push((i, j));
            if i != j {
                entries.push((j, i));
            }
        }
        // `n` fits in u32 (asserted above), so every row index does.
        entries.extend((0..n as u32).map(|i| (i, i)));
        entries.sort_unstable();
        entries.dedup();
        assert!(
            u32::try_from(entries.len()).is_ok(),
            "BlockPattern: {} blocks do not fit in u32 slots",
            entries.len()
        );

        let mut row_offsets = vec![0u32; n + 1];
        for &(i, _) in &entries {
            row_offsets[i as usize + 1] += 1;
        }
        for i in 0..n {
            row_offsets[i + 1] += row_offsets[i];
        }
        let cols: Vec<u32> = entries.iter().map(|&(_, j)| j).collect();
        let diag = (0..n)
            .map(|i| {
                let range = row_offsets[i] as usize..row_offsets[i + 1] as usize;
                let pos = cols[range.clone()]
                    .binary_search(&(i as u32))
                    .expect("every row holds its diagonal: it was inserted above");
                (range.start + pos) as u32
            })
            .collect();
        BlockPattern {
            row_offsets,
            cols,
            diag,
        }
    }

    /// Number of block rows (vertices).
    #[inline]
    #[must_use]
    pub fn num_rows(&self) -> usize {
        self.diag.len()
    }

    /// Number of stored 3×3 blocks (both triangles and the diagonal).
    #[inline]
    #[must_use]
    pub fn num_blocks(&self) -> usize {
        self.cols.len()
    }

    /// Binary search; for creation-time slot tables only, never inside a step.
    #[must_use]
    pub fn slot(&self, i: u32, j: u32) -> Option<BlockSlot> {
        let i = i as usize;
        if i >= self.num_rows() {
            return None;
        }
        let range = self.row_range(i);
        self.cols[range.clone()]
            .binary_search(&j)
            .ok()
            .map(|pos| BlockSlot((range.start + pos) as u32))
    }

    /// Slot of the diagonal block of row `i`.
    ///
    /// # Panics
    /// If `i >= self.num_rows()`.
    #[inline]
    #[must_use]
    pub fn diag_slot(&self, i: usize) -> BlockSlot {
        BlockSlot(self.diag[i])
    }

    /// Columns of the blocks stored in row `i`, ascending.
    ///
    /// # Panics
    /// If `i >= self.num_rows()`.
    #[inline]
    #[must_use]
    pub fn row_cols(&self, i: usize) -> &[u32] {
        &self.cols[self.row_range(i)]
    }

    /// Slots of row `i`: `row_range(i)` indexes both `cols()` and the value array.
    ///
    /// # Panics
    /// If `i >= self.num_rows()`.
    #[inline]
    #[must_use]
    pub fn row_range(&self, i: usize) -> Range<usize> {
        self.row_offsets[i] as usize..self.row_offsets[i + 1] as usize
    }

    /// Compressed row offsets: `num_rows() + 1` entries, the first 0, the last `num_blocks()`.
    #[inline]
    #[must_use]
    pub fn row_offsets(&self) -> &[u32] {
        &self.row_offsets
    }

    /// Column of every stored block, in slot order.
    #[inline]
    #[must_use]
    pub fn cols(&self) -> &[u32] {
        &self.cols
    }

    /// Slot of block `(j, i)` for every slot `(i, j)`, in slot order (the pattern is
    /// symmetric, so it always exists). Binary searches: creation time only.
    #[must_use]
    pub fn transpose_slots(&self) -> Vec<BlockSlot> {
        let mut out = Vec::with_capacity(self.num_blocks());
        for i in 0..self.num_rows() {
            for &j in self.row_cols(i) {
                out.push(
                    self.slot(j, i as u32)
                        .expect("the pattern is symmetric by construction"),
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dense_reference(n: usize, pairs: &[(u32, u32)]) -> Vec<bool> {
        let mut d = vec![false; n * n];
        for i in 0..n {
            d[i * n + i] = true;
        }
        for &(i, j) in pairs {
            d[i as usize * n + j as usize] = true;
            d[j as usize * n + i as usize] = true;
        }
        d
    }

    fn pairs_strategy() -> impl Strategy<Value = (usize, Vec<(u32, u32)>)> {
        (1usize..40).prop_flat_map(|n| {
            let idx = 0..n as u32;
            (Just(n), prop::collection::vec((idx.clone(), idx), 0..120))
        })
    }

    proptest! {
        #[test]
        fn from_pairs_equals_dense_reference((n, pairs) in pairs_strategy()) {
            let p = BlockPattern::from_pairs(n, pairs.iter().copied());
            let dense = dense_reference(n, &pairs);
            prop_assert_eq!(p.num_rows(), n);
            prop_assert_eq!(p.num_blocks(), dense.iter().filter(|&&b| b).count());
            prop_assert_eq!(p.row_offsets()[0], 0);
            prop_assert_eq!(p.row_offsets()[n] as usize, p.num_blocks());
            for i in 0..n {
                let cols = p.row_cols(i);
                prop_assert!(cols.windows(2).all(|w| w[0] < w[1]), "row {} not sorted", i);
                let expected: Vec<u32> =
                    (0..n as u32).filter(|&j| dense[i * n + j as usize]).collect();
                prop_assert_eq!(cols, &expected[..]);
                let d = p.diag_slot(i);
                prop_assert_eq!(p.cols()[d.index()], i as u32);
                prop_assert!(p.row_range(i).contains(&d.index()));
                for j in 0..n as u32 {
                    match p.slot(i as u32, j) {
                        Some(s) => {
                            prop_assert!(dense[i * n + j as usize]);
                            prop_assert!(p.row_range(i).contains(&s.index()));
                            prop_assert_eq!(p.cols()[s.index()], j);
                        }
                        None => prop_assert!(!dense[i * n + j as usize]),
                    }
                }
            }
            let t = p.transpose_slots();
            for i in 0..n {
                for s in p.row_range(i) {
                    let ts = t[s].index();
                    prop_assert_eq!(p.cols()[ts] as usize, i);
                    prop_assert_eq!(t[ts].index(), s);
                }
            }
        }
    }

    #[test]
    fn slot_lookups_on_a_chain() {
        let p = BlockPattern::from_pairs(4, [(0, 1), (2, 1), (1, 0), (3, 3)]);
        assert_eq!(p.num_blocks(), 4 + 4);
        assert_eq!(p.row_cols(0), &[0, 1]);
        assert_eq!(p.row_cols(1), &[0, 1, 2]);
        assert_eq!(p.row_cols(2), &[1, 2]);
        assert_eq!(p.row_cols(3), &[3]);
        assert_eq!(p.slot(1, 2), Some(BlockSlot(4)));
        assert_eq!(p.slot(2, 1), Some(BlockSlot(5)));
        assert_eq!(p.diag_slot(1), BlockSlot(3));
        assert_eq!(p.slot(0, 3), None);
        assert_eq!(p.slot(7, 0), None);
    }

    #[test]
    fn empty_pattern_has_no_blocks() {
        let p = BlockPattern::from_pairs(0, std::iter::empty());
        assert_eq!(p.num_rows(), 0);
        assert_eq!(p.num_blocks(), 0);
        assert_eq!(p.row_offsets(), &[0]);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn out_of_range_pair_panics() {
        let _ = BlockPattern::from_pairs(3, [(0, 3)]);
    }
}

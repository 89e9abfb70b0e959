//! A nested-dissection fill-reducing ordering of a symmetric sparsity pattern (George 1973;
//! the level-structure separators of George and Liu 1981, ch. 8), with approximate minimum
//! degree (Amestoy, Davis and Duff 1996, faer's) on the small parts it ends with.
//!
//! The graph of a cloth's Gauss–Newton system is a surface mesh: its rows couple only rows
//! that share a node. On such graphs a minimum-degree ordering is local and greedy, while
//! dissection splits the mesh by a short separator, orders both halves first and the separator
//! last, and recurses: the dense blocks of the factor are then the separators, of size about
//! the square root of the part they split. `docs/methods/sparse-cholesky.md` §1 has the
//! measured fill and factor times against AMD on the cloth systems.
//!
//! Each part is split at one level of a breadth-first search from a pseudo-peripheral row:
//! every path from a row of a lower level to a row of a higher level crosses that level, so it
//! separates them. Of the levels that leave both halves between 30 % and 70 % of the part, the
//! smallest is taken; a separator row with no neighbour in the upper half then joins the lower
//! half (it separates nothing). Parts that fall apart are ordered one component at a time.
//! Everything is sequential and depends only on the pattern, so the ordering is the same on
//! every run and for every thread count.
#![deny(unsafe_code)]

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::sparse::SymbolicSparseColMatRef;
use faer::sparse::linalg::amd;

/// Parts of at most this many rows are not split further: AMD orders them.
const LEAF_ROWS: usize = 128;

/// The nested-dissection order of the graph of a symmetric pattern, given as CSR with both
/// triangles (`cols[offsets[a]..offsets[a + 1]]` are the neighbours of row `a`; the diagonal,
/// if stored, is ignored). Returns `order` with `order[k]` the row eliminated `k`-th.
///
/// # Panics
/// If `offsets` is not a CSR offset array over `cols` with `n + 1` entries, or a column is out
/// of range.
#[must_use]
pub fn nested_dissection_order(offsets: &[u32], cols: &[u32]) -> Vec<u32> {
    let n = offsets.len() - 1;
    assert_eq!(
        offsets[n] as usize,
        cols.len(),
        "nested dissection: offsets"
    );
    assert!(
        cols.iter().all(|&c| (c as usize) < n),
        "nested dissection: column out of range"
    );
    let mut d = Dissection {
        offsets,
        cols,
        part: vec![0; n],
        level: vec![0; n],
        queue: Vec::with_capacity(n),
        local: vec![u32::MAX; n],
        order: vec![0; n],
        stamp: 0,
    };
    // Parts still to order: their rows and the first slot of `order` they fill.
    let mut stack: Vec<(Vec<u32>, usize)> = vec![((0..n as u32).collect(), 0)];
    while let Some((rows, first)) = stack.pop() {
        d.stamp += 1;
        for &r in &rows {
            d.part[r as usize] = d.stamp;
        }
        if rows.len() <= LEAF_ROWS {
            d.order_leaf(&rows, first);
            continue;
        }
        let components = d.components(&rows);
        if components.len() > 1 {
            let mut at = first;
            for c in components {
                let len = c.len();
                stack.push((c, at));
                at += len;
            }
            continue;
        }
        match d.bisect(&rows) {
            Some((lower, separator, upper)) => {
                let sep_first = first + lower.len() + upper.len();
                d.order[sep_first..sep_first + separator.len()].copy_from_slice(&separator);
                let upper_first = first + lower.len();
                stack.push((lower, first));
                stack.push((upper, upper_first));
            }
            None => d.order_leaf(&rows, first),
        }
    }
    d.order
}

/// The scratch of one ordering.
struct Dissection<'a> {
    offsets: &'a [u32],
    cols: &'a [u32],
    /// The stamp of the part a row belongs to (rows of the current part carry `stamp`).
    part: Vec<u32>,
    /// Breadth-first level within the current part (`u32::MAX`: not reached).
    level: Vec<u32>,
    queue: Vec<u32>,
    /// Index of a row within the current leaf (`u32::MAX` elsewhere).
    local: Vec<u32>,
    order: Vec<u32>,
    stamp: u32,
}

impl<'a> Dissection<'a> {
    /// The rows coupled to row `r`, itself left out; borrows the pattern only, so the caller
    /// may update the scratch while it walks them.
    fn neighbours(&self, r: u32) -> impl Iterator<Item = u32> + use<'a> {
        let r = r as usize;
        let cols: &'a [u32] = self.cols;
        cols[self.offsets[r] as usize..self.offsets[r + 1] as usize]
            .iter()
            .copied()
            .filter(move |&c| c as usize != r)
    }

    fn in_part(&self, r: u32) -> bool {
        self.part[r as usize] == self.stamp
    }

    fn degree(&self, r: u32) -> usize {
        self.neighbours(r).filter(|&c| self.in_part(c)).count()
    }

    /// Breadth-first levels of the current part from `root`; returns the rows in visiting
    /// order (in `queue`) and the number of levels.
    fn levels_from(&mut self, root: u32, rows: &[u32]) -> u32 {
        for &r in rows {
            self.level[r as usize] = u32::MAX;
        }
        self.queue.clear();
        self.queue.push(root);
        self.level[root as usize] = 0;
        let mut head = 0;
        let mut depth = 0;
        while head < self.queue.len() {
            let r = self.queue[head];
            head += 1;
            let l = self.level[r as usize];
            depth = depth.max(l + 1);
            for c in self.neighbours(r) {
                if self.in_part(c) && self.level[c as usize] == u32::MAX {
                    self.level[c as usize] = l + 1;
                    self.queue.push(c);
                }
            }
        }
        depth
    }

    /// The connected components of the current part, each in breadth-first order.
    fn components(&mut self, rows: &[u32]) -> Vec<Vec<u32>> {
        for &r in rows {
            self.level[r as usize] = u32::MAX;
        }
        let mut out = Vec::new();
        for &s in rows {
            if self.level[s as usize] != u32::MAX {
                continue;
            }
            let mut comp = vec![s];
            self.level[s as usize] = 0;
            let mut head = 0;
            while head < comp.len() {
                let r = comp[head];
                head += 1;
                for c in self.neighbours(r) {
                    if self.in_part(c) && self.level[c as usize] == u32::MAX {
                        self.level[c as usize] = 0;
                        comp.push(c);
                    }
                }
            }
            out.push(comp);
        }
        out
    }

    /// Splits the current (connected) part into `(lower, separator, upper)`, or `None` when
    /// its level structure is too shallow to separate it.
    fn bisect(&mut self, rows: &[u32]) -> Option<(Vec<u32>, Vec<u32>, Vec<u32>)> {
        // A pseudo-peripheral root (George and Liu 1979): from a row of least degree, restart
        // from a least-degree row of the last level while the depth grows.
        // The levels kept are those of the last search: a row of the last level is at least
        // `depth − 1` from the root, so a search from it is at least as deep.
        let root = rows
            .iter()
            .copied()
            .min_by_key(|&r| (self.degree(r), r))
            .expect("a part has rows");
        let mut depth = self.levels_from(root, rows);
        for _ in 0..8 {
            let last = depth - 1;
            let candidate = self
                .queue
                .iter()
                .rev()
                .take_while(|&&r| self.level[r as usize] == last)
                .copied()
                .min_by_key(|&r| (self.degree(r), r))
                .expect("the last level has rows");
            let d = self.levels_from(candidate, rows);
            if d <= depth {
                break;
            }
            depth = d;
        }
        if depth < 3 {
            return None;
        }
        let mut sizes = vec![0usize; depth as usize];
        for &r in rows {
            sizes[self.level[r as usize] as usize] += 1;
        }
        // The smallest level that leaves at least 30 % of the part on either side; else the
        // level holding the median row.
        let n = rows.len();
        let mut below = 0;
        let mut best: Option<(usize, u32)> = None;
        let mut median = None;
        for (l, &s) in sizes.iter().enumerate() {
            let above = n - below - s;
            let balanced = 10 * below >= 3 * n && 10 * above >= 3 * n;
            if balanced && best.is_none_or(|(bs, _)| s < bs) {
                best = Some((s, l as u32));
            }
            if median.is_none() && 2 * (below + s) >= n {
                median = Some(l as u32);
            }
            below += s;
        }
        let k = match (best, median) {
            (Some((_, k)), _) => k,
            (None, Some(m)) => m.clamp(1, depth - 2),
            (None, None) => return None,
        };
        let mut lower = Vec::new();
        let mut separator = Vec::new();
        let mut upper = Vec::new();
        for &r in rows {
            let l = self.level[r as usize];
            if l < k {
                lower.push(r);
            } else if l > k {
                upper.push(r);
            } else if self
                .neighbours(r)
                .any(|c| self.level_in_part(c) == Some(k + 1))
            {
                separator.push(r);
            } else {
                // Touches no upper row: it separates nothing.
                lower.push(r);
            }
        }
        if lower.is_empty() || upper.is_empty() {
            return None;
        }
        Some((lower, separator, upper))
    }

    fn level_in_part(&self, r: u32) -> Option<u32> {
        self.in_part(r).then_some(self.level[r as usize])
    }

    /// Orders a small part by AMD on its own graph into `order[first..]`.
    fn order_leaf(&mut self, rows: &[u32], first: usize) {
        let m = rows.len();
        if m <= 2 {
            self.order[first..first + m].copy_from_slice(rows);
            return;
        }
        for (i, &r) in rows.iter().enumerate() {
            self.local[r as usize] = i as u32;
        }
        // The part's graph in CSC with both triangles (AMD reads the pattern of A + Aᵀ).
        let mut col_ptr = Vec::with_capacity(m + 1);
        let mut row_idx = Vec::new();
        col_ptr.push(0u32);
        for &r in rows {
            for c in self.neighbours(r) {
                if self.part[c as usize] == self.stamp {
                    row_idx.push(self.local[c as usize]);
                }
            }
            col_ptr.push(row_idx.len() as u32);
        }
        let pattern = SymbolicSparseColMatRef::new_unsorted_checked(m, m, &col_ptr, None, &row_idx);
        let mut perm = vec![0u32; m];
        let mut perm_inv = vec![0u32; m];
        let mut mem = MemBuffer::new(amd::order_maybe_unsorted_scratch::<u32>(m, row_idx.len()));
        let ordered = amd::order_maybe_unsorted(
            &mut perm,
            &mut perm_inv,
            pattern,
            amd::Control::default(),
            MemStack::new(&mut mem),
        )
        .is_ok();
        for (k, slot) in self.order[first..first + m].iter_mut().enumerate() {
            *slot = if ordered {
                rows[perm[k] as usize]
            } else {
                rows[k]
            };
        }
        for &r in rows {
            self.local[r as usize] = u32::MAX;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 5-point graph of an `n × n` grid, CSR with both triangles and the diagonal.
    fn grid(n: usize) -> (Vec<u32>, Vec<u32>) {
        let mut offsets = vec![0u32];
        let mut cols = Vec::new();
        for i in 0..n {
            for j in 0..n {
                let mut row = vec![(i * n + j) as u32];
                if i > 0 {
                    row.push(((i - 1) * n + j) as u32);
                }
                if i + 1 < n {
                    row.push(((i + 1) * n + j) as u32);
                }
                if j > 0 {
                    row.push((i * n + j - 1) as u32);
                }
                if j + 1 < n {
                    row.push((i * n + j + 1) as u32);
                }
                row.sort_unstable();
                cols.extend(row);
                offsets.push(cols.len() as u32);
            }
        }
        (offsets, cols)
    }

    /// The same graph with its rows renumbered `r → (r · 7919) mod N`.
    fn scrambled(offsets: &[u32], cols: &[u32]) -> (Vec<u32>, Vec<u32>) {
        let n = offsets.len() - 1;
        let p = |r: u32| ((r as u64 * 7919) % n as u64) as u32;
        let mut inv = vec![0u32; n];
        for r in 0..n as u32 {
            inv[p(r) as usize] = r;
        }
        let mut o = vec![0u32];
        let mut c = Vec::new();
        for &old in &inv {
            let old = old as usize;
            let mut row: Vec<u32> = cols[offsets[old] as usize..offsets[old + 1] as usize]
                .iter()
                .map(|&x| p(x))
                .collect();
            row.sort_unstable();
            c.extend(row);
            o.push(c.len() as u32);
        }
        (o, c)
    }

    #[test]
    fn order_is_a_permutation() {
        for n in [1, 7, 40, 41] {
            let (offsets, cols) = grid(n);
            let (offsets, cols) = if n == 41 {
                scrambled(&offsets, &cols)
            } else {
                (offsets, cols)
            };
            let order = nested_dissection_order(&offsets, &cols);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..(n * n) as u32).collect::<Vec<_>>(), "grid {n}");
        }
    }

    #[test]
    fn disconnected_and_tiny_patterns_are_ordered() {
        // Two grids side by side and an isolated row.
        let (o1, c1) = grid(20);
        let m = 400u32;
        let mut offsets = o1.clone();
        let mut cols = c1.clone();
        for a in 0..400 {
            for &c in &c1[o1[a] as usize..o1[a + 1] as usize] {
                cols.push(c + m);
            }
            offsets.push(cols.len() as u32);
        }
        cols.push(2 * m);
        offsets.push(cols.len() as u32);
        let order = nested_dissection_order(&offsets, &cols);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..=2 * m).collect::<Vec<_>>());
        let one = nested_dissection_order(&[0, 1], &[0]);
        assert_eq!(one, vec![0]);
    }
}

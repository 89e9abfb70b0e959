//! Incomplete Cholesky IC(0) of a [`SymCsr`] on its own pattern: the preconditioner of
//! `docs/methods/isometric-model.md §A17` for `K = G W Gᵀ + D` when Jacobi is too weak (the λ-block
//! behaves like a graph Laplacian, and the conforming rows (3.3) couple rows two hops apart).
//!
//! `K ≈ L Lᵀ` with `L` lower triangular and the sparsity of the lower triangle of `K` (no
//! fill-in). The pattern is copied once at creation ([`IncompleteCholesky::new`]);
//! [`IncompleteCholesky::factor`] refills the values in place and [`IncompleteCholesky::solve`]
//! applies `(L Lᵀ)⁻¹`; neither allocates. Both run sequentially in row order (the recurrences
//! are sequential), so the result is bit-identical for any thread count.
//!
//! # Choices
//!
//! - Zero rows (`K_aa = 0`: a constraint whose vertices are all pinned,
//!   `docs/methods/isometric-model.md §A12`) are inert: their column of `L` is 0 and the
//!   preconditioner returns 0 there, as the Jacobi PCG does.
//! - Breakdown (a pivot `≤ 1e-12 · K_aa`, possible for IC(0) even on SPD matrices, and near the
//!   planar redundancy of `docs/methods/isometric-model.md §A3`) restarts the factorisation of the
//!   shifted matrix `K + α diag(K)` (Manteuffel's shift), `α = 10⁻⁴, 10⁻³, …`; a large enough shift
//!   makes the matrix diagonally dominant, where IC(0) cannot break down. The shift used is
//!   reported.
#![deny(unsafe_code)]

use super::csr::SymCsr;

/// The IC(0) factor of a [`SymCsr`], preallocated on its pattern.
#[derive(Clone, Debug)]
pub struct IncompleteCholesky {
    /// Lower-triangle CSR of `L`, columns ascending, the diagonal last in each row.
    offsets: Vec<u32>,
    cols: Vec<u32>,
    /// For each stored entry of `L`, its slot in the source `SymCsr`.
    source: Vec<u32>,
    vals: Vec<f64>,
    /// `1 / L_ii` (0 for inert rows).
    inv_diag: Vec<f64>,
    /// Dense scratch row, zero between uses.
    work: Vec<f64>,
    shift: f64,
}

impl IncompleteCholesky {
    /// Copies the lower pattern of `k` (values are filled by [`IncompleteCholesky::factor`]).
    #[must_use]
    #[allow(clippy::needless_range_loop)] // slot s indexes the column and is recorded
    pub fn new(k: &SymCsr) -> Self {
        let (ro, cols, _) = k.raw();
        let n = k.num_rows();
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0u32);
        let mut lcols = Vec::new();
        let mut source = Vec::new();
        for a in 0..n {
            for s in ro[a] as usize..ro[a + 1] as usize {
                if cols[s] as usize <= a {
                    lcols.push(cols[s]);
                    source.push(s as u32);
                }
            }
            offsets.push(lcols.len() as u32);
        }
        let nnz = lcols.len();
        IncompleteCholesky {
            offsets,
            cols: lcols,
            source,
            vals: vec![0.0; nnz],
            inv_diag: vec![0.0; n],
            work: vec![0.0; n],
            shift: 0.0,
        }
    }

    /// Rows.
    #[must_use]
    pub fn len(&self) -> usize {
        self.inv_diag.len()
    }

    /// True for the 0×0 factor.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.inv_diag.is_empty()
    }

    /// The diagonal shift `α` of the last factorisation (0 when none was needed).
    #[must_use]
    pub fn shift(&self) -> f64 {
        self.shift
    }

    /// Factors `k` (same pattern as at creation): `L Lᵀ ≈ K + α diag(K)`, `α` as small as the
    /// breakdown test allows (module doc). Allocates nothing.
    ///
    /// # Panics
    /// If `k` has a different size from the matrix given to [`IncompleteCholesky::new`].
    pub fn factor(&mut self, k: &SymCsr) {
        assert_eq!(k.num_rows(), self.len(), "IC(0): size changed");
        let mut alpha = 0.0;
        loop {
            if self.try_factor(k, alpha) {
                self.shift = alpha;
                return;
            }
            alpha = if alpha == 0.0 { 1e-4 } else { alpha * 10.0 };
        }
    }

    /// One attempt with shift `alpha`; false on a breakdown pivot.
    fn try_factor(&mut self, k: &SymCsr, alpha: f64) -> bool {
        let (_, _, kv) = k.raw();
        let n = self.len();
        let w = &mut self.work;
        for i in 0..n {
            let r = self.offsets[i] as usize..self.offsets[i + 1] as usize;
            let diag_slot = r.end - 1;
            debug_assert_eq!(self.cols[diag_slot] as usize, i);
            for s in r.clone() {
                w[self.cols[s] as usize] = kv[self.source[s] as usize];
            }
            let kii = kv[self.source[diag_slot] as usize];
            // Off-diagonal L_ik, k ascending; w[j] already holds L_ij for j < k.
            let mut sum_sq = 0.0;
            for s in r.start..diag_slot {
                let c = self.cols[s] as usize;
                let rc = self.offsets[c] as usize..self.offsets[c + 1] as usize - 1;
                let mut acc = w[c];
                for t in rc {
                    acc -= self.vals[t] * w[self.cols[t] as usize];
                }
                let l = acc * self.inv_diag[c];
                w[c] = l;
                sum_sq += l * l;
            }
            let ok = if kii > 0.0 {
                let piv = kii * (1.0 + alpha) - sum_sq;
                if piv.is_finite() && piv > 1e-12 * kii {
                    let lii = piv.sqrt();
                    self.vals[diag_slot] = lii;
                    self.inv_diag[i] = 1.0 / lii;
                    true
                } else {
                    false
                }
            } else {
                // Inert zero row: its column of L is 0.
                self.vals[diag_slot] = 0.0;
                self.inv_diag[i] = 0.0;
                true
            };
            for s in r.start..diag_slot {
                let c = self.cols[s] as usize;
                self.vals[s] = if kii > 0.0 { w[c] } else { 0.0 };
            }
            for s in r {
                w[self.cols[s] as usize] = 0.0;
            }
            if !ok {
                return false;
            }
        }
        true
    }

    /// `s = (L Lᵀ)⁻¹ r` (0 on inert rows). Allocates nothing.
    ///
    /// # Panics
    /// If `r` or `s` has the wrong length.
    pub fn solve(&self, r: &[f64], s: &mut [f64]) {
        let n = self.len();
        assert!(r.len() == n && s.len() == n, "IC(0): wrong lengths");
        // L y = r.
        for i in 0..n {
            let rg = self.offsets[i] as usize..self.offsets[i + 1] as usize - 1;
            let mut acc = r[i];
            for t in rg {
                acc -= self.vals[t] * s[self.cols[t] as usize];
            }
            s[i] = acc * self.inv_diag[i];
        }
        // Lᵀ s = y, column-oriented over the rows of L, descending.
        for i in (0..n).rev() {
            let si = s[i] * self.inv_diag[i];
            s[i] = si;
            let rg = self.offsets[i] as usize..self.offsets[i + 1] as usize - 1;
            for t in rg {
                s[self.cols[t] as usize] -= self.vals[t] * si;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::SplitMix64;
    use glam::DVec3;

    /// A chain of springs-like rows on a path of vertices: a tridiagonal-like `K` for which
    /// IC(0) is exact (no fill-in), plus a random general pattern.
    fn chain(n: usize) -> (Vec<u32>, Vec<u32>) {
        let mut o = vec![0u32];
        let mut v = Vec::new();
        for a in 0..n {
            v.extend([a as u32, a as u32 + 1]);
            o.push(v.len() as u32);
        }
        (o, v)
    }

    #[test]
    fn exact_on_a_pattern_without_fill_in() {
        let n = 12;
        let (o, v) = chain(n);
        let mut rng = SplitMix64::new(1);
        let g: Vec<DVec3> = v.iter().map(|_| rng.vec3(1.0)).collect();
        let w: Vec<f64> = (0..=n).map(|_| rng.uniform(0.5, 2.0)).collect();
        let mut k = SymCsr::from_stencils(n + 1, &o, &v);
        k.assemble(&g, &w, &vec![0.0; n]);
        let mut ic = IncompleteCholesky::new(&k);
        ic.factor(&k);
        assert_eq!(ic.shift(), 0.0);
        // (L Lᵀ)⁻¹ K z = z for a tridiagonal K.
        let z: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).sin()).collect();
        let mut kz = vec![0.0; n];
        k.mul_vec(&z, &mut kz);
        let mut back = vec![0.0; n];
        ic.solve(&kz, &mut back);
        for i in 0..n {
            assert!(
                (back[i] - z[i]).abs() <= 1e-10,
                "{i}: {} vs {}",
                back[i],
                z[i]
            );
        }
    }

    #[test]
    fn zero_rows_are_inert_and_factor_is_spd() {
        // Rows on a 2-D grid of vertices (fill-in dropped), one row with only pinned vertices.
        let side = 6usize;
        let id = |i: usize, j: usize| (i * side + j) as u32;
        let mut o = vec![0u32];
        let mut v = Vec::new();
        for i in 0..side {
            for j in 0..side {
                if i + 1 < side {
                    v.extend([id(i, j), id(i + 1, j)]);
                    o.push(v.len() as u32);
                }
                if j + 1 < side {
                    v.extend([id(i, j), id(i, j + 1)]);
                    o.push(v.len() as u32);
                }
            }
        }
        let rows = o.len() - 1;
        let mut rng = SplitMix64::new(4);
        let g: Vec<DVec3> = v.iter().map(|_| rng.vec3(1.0)).collect();
        let mut w = vec![1.0; side * side];
        w[0] = 0.0;
        w[1] = 0.0;
        w[side] = 0.0;
        let mut d = vec![1e-3; rows];
        // Row 0 joins vertices 0 and 6, both pinned: with D = 0 it is a zero row.
        d[0] = 0.0;
        let mut k = SymCsr::from_stencils(side * side, &o, &v);
        k.assemble(&g, &w, &d);
        let mut ic = IncompleteCholesky::new(&k);
        ic.factor(&k);
        let r: Vec<f64> = (0..rows).map(|i| ((i * 5 % 7) as f64) - 3.0).collect();
        let mut s = vec![0.0; rows];
        ic.solve(&r, &mut s);
        // The preconditioner is SPD: r·M⁻¹r > 0, and it is symmetric: e_a·M⁻¹e_b = e_b·M⁻¹e_a.
        let rs: f64 = r.iter().zip(&s).map(|(a, b)| a * b).sum();
        assert!(rs > 0.0);
        let mut ea = vec![0.0; rows];
        let mut eb = vec![0.0; rows];
        let (mut sa, mut sb) = (vec![0.0; rows], vec![0.0; rows]);
        ea[3] = 1.0;
        eb[17] = 1.0;
        ic.solve(&ea, &mut sa);
        ic.solve(&eb, &mut sb);
        assert!((sa[17] - sb[3]).abs() <= 1e-12 * sa[17].abs().max(1e-300));
        assert!(s.iter().all(|v| v.is_finite()));
        assert_eq!(s[0], 0.0);
    }
}

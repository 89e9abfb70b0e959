//! Incomplete block `L D Lᵀ` preconditioners on the fixed block pattern: block IC(0) and
//! block symmetric Gauss–Seidel.
//!
//! `docs/methods/baraff-witkin.md` §2.8 leaves the preconditioner `P` open (BW98 used a diagonal one; the
//! block diagonal is the variant of [`BlockJacobi`](super::BlockJacobi)). This module builds two
//! stronger ones with the same shape,
//!
//! ```text
//! P = (I + L) D (I + L)ᵀ,    L strictly block-lower on the pattern of A,  D block diagonal,
//! ```
//!
//! so both are applied by the same forward solve, block-diagonal solve and backward solve:
//!
//! - **Block IC(0)** ([`Preconditioner::BlockIc0`]): the incomplete block Cholesky
//!   factorisation without fill-in, `Ã ≈ (I + L) D (I + L)ᵀ` exact on the pattern. Row by row
//!   (up-looking), with `F_ik = L_ik D_k`:
//!   `F_ik = Ã_ik − Σ_{j<k} F_ij L_kjᵀ` (the sum over the `j` both rows hold),
//!   `L_ik = F_ik D_k⁻¹`, `D_i = Ã_ii − Σ_{k<i} F_ik L_ikᵀ`.
//! - **Block symmetric Gauss–Seidel** ([`Preconditioner::BlockSgs`]): `D_i = Ã_ii`,
//!   `L_ik = Ã_ik D_k⁻¹`, i.e. `P = (D + Ã_L) D⁻¹ (D + Ã_L)ᵀ` with `Ã_L` the strict lower part
//!   (SSOR with ω = 1). No Schur-complement updates: cheaper to build, weaker.
//!
//! # The filter
//! The matrix factored is not `A` but the filtered matrix of the system PCG actually solves
//! (`docs/methods/baraff-witkin.md` §2.8 note: CG on `S A S y = S (b − A z)`),
//!
//! ```text
//! Ã_ij = S_i A_ij S_j  (i ≠ j),      Ã_ii = S_i A_ii S_i + c_i (I − S_i),
//! ```
//!
//! with `c_i` the largest diagonal entry of `A_ii` (a choice the sources leave open: any
//! `c_i > 0` decouples the constrained directions; the scale of the block keeps `D_i` well
//! conditioned, so rounding in `f32` does not mix the two subspaces). `Ã` maps `range(S)` and
//! `range(I − S)` to themselves, and so (inductively over the recurrences above) do `L`, `D` and
//! `P⁻¹`; the solver still applies `S P⁻¹ S` (it filters the output, and its residual is
//! filtered), which removes the rounding that leaks across. A fixed vertex (`S_i = 0`) is a
//! decoupled `c_i I` row.
//!
//! # Breakdown
//! IC(0) can meet a non-positive pivot block even on an SPD matrix. A pivot block `D_i` is
//! accepted when its Cholesky pivots exceed [`MIN_RELATIVE_PIVOT`] times the largest diagonal
//! entry of `Ã_ii` and its inverse is finite in `f32` (the rule of
//! [`invert_diagonal_block`]). Otherwise the factorisation restarts on `Ã + α diag(Ã)`
//! (Manteuffel's shift, as in [`IncompleteCholesky`](super::IncompleteCholesky)) with
//! `α = 10⁻³, 10⁻², 10⁻¹`; if that still fails, [`IncompleteBlockLdl::factor`] reports
//! [`FactorOutcome::Failed`] and the solver uses block Jacobi for that solve (reported in its
//! [`PcgReport`](super::PcgReport)). Block SGS cannot break down: its `D_i⁻¹` are the block
//! Jacobi inverses of `Ã_ii` with their SPD fallbacks.
//!
//! # Numbers and determinism
//! Blocks are `f32` (`L`, `D⁻¹`) like `A`; each pivot block `D_i` is accumulated, checked and
//! inverted in `f64`, where the cancellation of the Schur complement happens. The
//! factorisation and both triangular solves run sequentially in row order (the recurrences are
//! sequential), so they are bit-identical for any thread count. Storage (the lower pattern,
//! `L`, `D⁻¹` and one dense scratch row) is allocated once, at creation; `factor` and `apply`
//! allocate nothing.
#![deny(unsafe_code)]

use glam::{DMat3, DVec3, Mat3, Mat3A, Vec3, Vec3A};

use super::block_csr::BlockCsr;
use super::pattern::BlockPattern;
use super::pcg::Filter;
use super::precond::{MIN_RELATIVE_PIVOT, invert_diagonal_block};

/// The preconditioner of the filtered PCG.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Preconditioner {
    /// Inverse of the 3×3 block diagonal ([`BlockJacobi`](super::BlockJacobi)).
    #[default]
    BlockJacobi,
    /// Block symmetric Gauss–Seidel on the filtered matrix (module doc).
    BlockSgs,
    /// Block incomplete Cholesky IC(0) of the filtered matrix (module doc).
    BlockIc0,
}

/// What [`IncompleteBlockLdl::factor`] produced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FactorOutcome {
    /// Factored with diagonal shift `α` (0: none needed).
    Factored {
        /// The Manteuffel shift `α` of `Ã + α diag(Ã)`.
        shift: f32,
    },
    /// Every shift broke down: the factor is unusable; use block Jacobi.
    Failed,
}

/// The shifts `α` of the IC(0) attempts, in order (module doc).
const SHIFT_LEVELS: [f64; 4] = [0.0, 1e-3, 1e-2, 1e-1];

/// Solves factored at a shift level above 0 before the next solve tries one level lower.
const SHIFT_DECAY_SOLVES: u32 = 8;

/// An incomplete block `(I + L) D (I + L)ᵀ` factor, preallocated on a block pattern.
#[derive(Clone, Debug)]
pub struct IncompleteBlockLdl {
    /// `offsets[i]..offsets[i + 1]`: row `i` of the strict lower part, in `cols` and `l`.
    offsets: Vec<u32>,
    /// Column of each strict-lower block, ascending within a row.
    cols: Vec<u32>,
    /// Slot in `A` of each strict-lower block (the lower part of row `i` is contiguous in
    /// `A`, so this is `first_slot[i] + k`).
    first_slot: Vec<u32>,
    /// Slot in `A` of each diagonal block.
    diag_slot: Vec<u32>,
    /// Strict-lower blocks `L_ik` (`Mat3A`: the SIMD products are the factorisation's and the
    /// triangular solves' inner loops).
    l: Vec<Mat3A>,
    /// `D_i⁻¹`.
    d_inv: Vec<Mat3A>,
    /// Dense scratch row of `F_ik` (zero between rows).
    work: Vec<Mat3A>,
    /// Index in `SHIFT_LEVELS` of the first IC(0) attempt of the next factorisation.
    level: usize,
    /// Factorisations done at `level` since it was entered.
    solves_at_level: u32,
}

impl IncompleteBlockLdl {
    /// Storage for the strict lower part of `pattern` (values are set by
    /// [`IncompleteBlockLdl::factor`]).
    #[must_use]
    pub fn new(pattern: &BlockPattern) -> Self {
        let n = pattern.num_rows();
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0u32);
        let mut cols = Vec::new();
        let mut first_slot = Vec::with_capacity(n);
        let mut diag_slot = Vec::with_capacity(n);
        for i in 0..n {
            let range = pattern.row_range(i);
            let d = pattern.diag_slot(i).index();
            first_slot.push(range.start as u32);
            diag_slot.push(d as u32);
            cols.extend_from_slice(&pattern.cols()[range.start..d]);
            offsets.push(cols.len() as u32);
        }
        let nnz = cols.len();
        IncompleteBlockLdl {
            offsets,
            cols,
            first_slot,
            diag_slot,
            l: vec![Mat3A::ZERO; nnz],
            d_inv: vec![Mat3A::IDENTITY; n],
            work: vec![Mat3A::ZERO; n],
            level: 0,
            solves_at_level: 0,
        }
    }

    /// Number of block rows.
    #[inline]
    #[must_use]
    pub fn num_rows(&self) -> usize {
        self.d_inv.len()
    }

    /// Number of strict-lower blocks stored.
    #[inline]
    #[must_use]
    pub fn num_lower_blocks(&self) -> usize {
        self.cols.len()
    }

    /// Factors the filtered matrix `Ã` of `a` and `filters` (module doc) as `kind`
    /// ([`Preconditioner::BlockIc0`] or [`Preconditioner::BlockSgs`]). Allocates nothing.
    ///
    /// # Panics
    /// If `a` or `filters` does not have `num_rows()` rows, or `kind` is
    /// [`Preconditioner::BlockJacobi`] (which has no factor).
    pub fn factor(
        &mut self,
        a: &BlockCsr,
        filters: &[Filter],
        kind: Preconditioner,
    ) -> FactorOutcome {
        self.factor_with(a, |i| filters[i], kind)
    }

    /// [`IncompleteBlockLdl::factor`] with every vertex free (`Ã = A`).
    ///
    /// # Panics
    /// As [`IncompleteBlockLdl::factor`].
    pub fn factor_unfiltered(&mut self, a: &BlockCsr, kind: Preconditioner) -> FactorOutcome {
        self.factor_with(a, |_| Filter::Free, kind)
    }

    pub(crate) fn factor_with(
        &mut self,
        a: &BlockCsr,
        filter: impl Fn(usize) -> Filter,
        kind: Preconditioner,
    ) -> FactorOutcome {
        assert_eq!(
            a.num_rows(),
            self.num_rows(),
            "IncompleteBlockLdl::factor: matrix size differs from the factor's"
        );
        match kind {
            Preconditioner::BlockSgs => {
                self.factor_sgs(a, &filter);
                FactorOutcome::Factored { shift: 0.0 }
            }
            Preconditioner::BlockIc0 => {
                // Start at the level that worked last time (one lower every
                // SHIFT_DECAY_SOLVES solves at a level > 0), then climb on breakdown.
                if self.level > 0 && self.solves_at_level >= SHIFT_DECAY_SOLVES {
                    self.level -= 1;
                    self.solves_at_level = 0;
                }
                for (level, &alpha) in SHIFT_LEVELS.iter().enumerate().skip(self.level) {
                    if self.try_factor_ic0(a, &filter, alpha) {
                        if level != self.level {
                            self.level = level;
                            self.solves_at_level = 0;
                        }
                        self.solves_at_level += 1;
                        return FactorOutcome::Factored {
                            shift: alpha as f32,
                        };
                    }
                }
                self.level = 0;
                self.solves_at_level = 0;
                FactorOutcome::Failed
            }
            Preconditioner::BlockJacobi => {
                panic!("IncompleteBlockLdl::factor: block Jacobi has no factor")
            }
        }
    }

    /// `Ã_ii` in `f64` (symmetrised) and its scale `c_i` (largest diagonal entry of `A_ii`).
    fn filtered_diagonal(a: &BlockCsr, slot: usize, f: Filter) -> (DMat3, f64) {
        let b = a.values()[slot].as_dmat3();
        let b = (b + b.transpose()) * 0.5;
        let scale = DVec3::new(b.x_axis.x, b.y_axis.y, b.z_axis.z).max_element();
        let c = if scale.is_finite() && scale > 0.0 {
            scale
        } else {
            1.0
        };
        let m = match f {
            Filter::Free => b,
            Filter::Fixed => DMat3::from_diagonal(DVec3::splat(c)),
            _ => {
                let s = f.matrix().as_dmat3();
                s * b * s + (DMat3::IDENTITY - s) * c
            }
        };
        (m, c)
    }

    /// `Ã_ik = S_i A_ik S_k` for `i ≠ k`.
    #[inline]
    fn filtered_off_diagonal(m: Mat3, fi: Filter, fk: Filter) -> Mat3A {
        match (fi, fk) {
            (Filter::Free, Filter::Free) => Mat3A::from(m),
            (Filter::Fixed, _) | (_, Filter::Fixed) => Mat3A::ZERO,
            _ => Mat3A::from(fi.matrix() * m * fk.matrix()),
        }
    }

    /// Block SGS: `D_i = Ã_ii` (inverted by the block-Jacobi rules), `L_ik = Ã_ik D_k⁻¹`.
    fn factor_sgs(&mut self, a: &BlockCsr, filter: &impl Fn(usize) -> Filter) {
        let values = a.values();
        let n = self.num_rows();
        for i in 0..n {
            let (d, _) = Self::filtered_diagonal(a, self.diag_slot[i] as usize, filter(i));
            self.d_inv[i] = Mat3A::from(invert_diagonal_block(d.as_mat3()).0);
        }
        for i in 0..n {
            let fi = filter(i);
            let first = self.first_slot[i] as usize;
            let row = self.offsets[i] as usize..self.offsets[i + 1] as usize;
            for (k, s) in row.clone().enumerate() {
                let c = self.cols[s] as usize;
                let m = Self::filtered_off_diagonal(values[first + k], fi, filter(c));
                self.l[s] = m * self.d_inv[c];
            }
        }
    }

    /// One IC(0) attempt on `Ã + α diag(Ã)`; false on a breakdown pivot (module doc).
    fn try_factor_ic0(
        &mut self,
        a: &BlockCsr,
        filter: &impl Fn(usize) -> Filter,
        alpha: f64,
    ) -> bool {
        let values = a.values();
        let n = self.num_rows();
        let w = &mut self.work;
        for i in 0..n {
            let fi = filter(i);
            let first = self.first_slot[i] as usize;
            let row = self.offsets[i] as usize..self.offsets[i + 1] as usize;
            for (k, s) in row.clone().enumerate() {
                let c = self.cols[s] as usize;
                w[c] = Self::filtered_off_diagonal(values[first + k], fi, filter(c));
            }
            let (aii, _) = Self::filtered_diagonal(a, self.diag_slot[i] as usize, fi);
            let diag = DVec3::new(aii.x_axis.x, aii.y_axis.y, aii.z_axis.z);
            let scale = diag.abs().max_element();
            let mut d = aii + DMat3::from_diagonal(diag * alpha);
            // F_ik, k ascending: w[j] holds F_ij for the j < k of row i (0 off the pattern).
            for s in row.clone() {
                let c = self.cols[s] as usize;
                let mut f = w[c];
                let rc = self.offsets[c] as usize..self.offsets[c + 1] as usize;
                for t in rc {
                    f -= w[self.cols[t] as usize] * self.l[t].transpose();
                }
                w[c] = f;
                let l = f * self.d_inv[c];
                self.l[s] = l;
                // F_ik L_ikᵀ (= F_ik D_k⁻¹ F_ikᵀ, symmetric up to rounding; D_i is
                // symmetrised below).
                d -= f.as_dmat3() * l.as_dmat3().transpose();
            }
            for s in row {
                w[self.cols[s] as usize] = Mat3A::ZERO;
            }
            let d = (d + d.transpose()) * 0.5;
            match invert_pivot(&d, scale) {
                Some(inv) => self.d_inv[i] = Mat3A::from(inv),
                None => return false,
            }
        }
        true
    }

    /// `out = P⁻¹ r = (I + L)⁻ᵀ D⁻¹ (I + L)⁻¹ r`: forward solve, block-diagonal solve, backward
    /// solve, sequential in row order. Allocates nothing.
    ///
    /// # Panics
    /// If `r` or `out` does not have `num_rows()` entries.
    pub fn apply(&self, r: &[Vec3], out: &mut [Vec3]) {
        let n = self.num_rows();
        assert!(
            r.len() == n && out.len() == n,
            "IncompleteBlockLdl::apply: wrong lengths"
        );
        // (I + L) y = r, then w = D⁻¹ y (row i is final once its lower part is read).
        for i in 0..n {
            let row = self.offsets[i] as usize..self.offsets[i + 1] as usize;
            let mut acc = Vec3A::from(r[i]);
            for t in row {
                acc -= self.l[t] * Vec3A::from(out[self.cols[t] as usize]);
            }
            out[i] = acc.into();
        }
        for (o, d) in out.iter_mut().zip(&self.d_inv) {
            *o = (*d * Vec3A::from(*o)).into();
        }
        // (I + L)ᵀ x = w, column-oriented over the rows of L, descending.
        for i in (0..n).rev() {
            let xi = Vec3A::from(out[i]);
            let row = self.offsets[i] as usize..self.offsets[i + 1] as usize;
            for t in row {
                let c = self.cols[t] as usize;
                out[c] = (Vec3A::from(out[c]) - self.l[t].transpose() * xi).into();
            }
        }
    }
}

/// `D⁻¹` in `f32` when the symmetric `d` passes the pivot test of
/// [`invert_diagonal_block`]'s rule 1 relative to `scale`; `None` on a breakdown.
fn invert_pivot(d: &DMat3, scale: f64) -> Option<Mat3> {
    if !(scale.is_finite() && scale > 0.0) {
        return None;
    }
    let min_pivot = MIN_RELATIVE_PIVOT * scale;
    let e = |i: usize, j: usize| d.col(j)[i];
    let p0 = e(0, 0);
    if p0.is_nan() || p0 <= min_pivot {
        return None;
    }
    let l00 = p0.sqrt();
    let l10 = e(1, 0) / l00;
    let l20 = e(2, 0) / l00;
    let p1 = e(1, 1) - l10 * l10;
    if p1.is_nan() || p1 <= min_pivot {
        return None;
    }
    let l11 = p1.sqrt();
    let l21 = (e(2, 1) - l20 * l10) / l11;
    let p2 = e(2, 2) - l20 * l20 - l21 * l21;
    if p2.is_nan() || p2 <= min_pivot {
        return None;
    }
    let inv = d.inverse();
    let inv = ((inv + inv.transpose()) * 0.5).as_mat3();
    inv.is_finite().then_some(inv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::block_csr::tests::{Rng, random_spd};

    /// `random_spd` with no extra pairs is a chain: its block IC(0) has no fill-in.
    fn chain_spd(n: usize, seed: u64) -> BlockCsr {
        random_spd(n, 0, seed)
    }

    fn filters(n: usize, rng: &mut Rng) -> Vec<Filter> {
        (0..n)
            .map(|_| match rng.below(5) {
                0 | 1 => Filter::Free,
                2 => Filter::one_direction(rng.vec3()),
                3 => Filter::two_directions(rng.vec3(), rng.vec3()),
                _ => Filter::Fixed,
            })
            .collect()
    }

    /// `S A S x` for `x ∈ range(S)`.
    fn filtered_product(a: &BlockCsr, f: &[Filter], x: &[Vec3]) -> Vec<Vec3> {
        let mut y = vec![Vec3::ZERO; x.len()];
        a.mul_vec(x, &mut y);
        y.iter().zip(f).map(|(v, f)| f.apply(*v)).collect()
    }

    #[test]
    fn ic0_is_exact_without_fill_in_and_keeps_the_filtered_subspace() {
        let n = 40;
        let a = chain_spd(n, 5);
        let mut rng = Rng::new(6);
        let f = filters(n, &mut rng);
        let mut ldl = IncompleteBlockLdl::new(a.pattern());
        assert_eq!(ldl.num_lower_blocks(), n - 1);
        let outcome = ldl.factor(&a, &f, Preconditioner::BlockIc0);
        assert_eq!(outcome, FactorOutcome::Factored { shift: 0.0 });
        // x ∈ range(S): P⁻¹ (S A S x) = x, since P = Ã exactly on a chain.
        let x: Vec<Vec3> = f.iter().map(|f| f.apply(rng.vec3())).collect();
        let y = filtered_product(&a, &f, &x);
        let mut back = vec![Vec3::ZERO; n];
        ldl.apply(&y, &mut back);
        let scale = x.iter().fold(0.0f32, |m, v| m.max(v.length()));
        for i in 0..n {
            assert!(
                (back[i] - x[i]).length() <= 1e-4 * scale,
                "row {i}: {:?} vs {:?} ({:?})",
                back[i],
                x[i],
                f[i]
            );
            // The constrained part of P⁻¹ y stays at rounding level.
            assert!(
                f[i].constrained(back[i]).length() <= 1e-5 * scale,
                "row {i}"
            );
        }
    }

    #[test]
    fn factors_are_symmetric_positive_definite() {
        for kind in [Preconditioner::BlockSgs, Preconditioner::BlockIc0] {
            let n = 30;
            let a = random_spd(n, 3, 21);
            let mut rng = Rng::new(22);
            let f = filters(n, &mut rng);
            let mut ldl = IncompleteBlockLdl::new(a.pattern());
            assert!(matches!(
                ldl.factor(&a, &f, kind),
                FactorOutcome::Factored { .. }
            ));
            let mut cols = Vec::new();
            for k in 0..3 * n {
                let mut e = vec![Vec3::ZERO; n];
                e[k / 3][k % 3] = 1.0;
                let mut out = vec![Vec3::ZERO; n];
                ldl.apply(&e, &mut out);
                cols.push(out);
            }
            for p in 0..3 * n {
                let diag = cols[p][p / 3][p % 3];
                assert!(diag > 0.0, "{kind:?}: P⁻¹_{p}{p} = {diag}");
                for q in 0..p {
                    let (x, y) = (cols[p][q / 3][q % 3], cols[q][p / 3][p % 3]);
                    assert!(
                        (x - y).abs() <= 1e-4 * (x.abs() + y.abs() + 1e-3),
                        "{kind:?}: ({p}, {q}) {x} vs {y}"
                    );
                }
            }
            let r: Vec<Vec3> = (0..n).map(|_| rng.vec3()).collect();
            let mut s = vec![Vec3::ZERO; n];
            ldl.apply(&r, &mut s);
            let rs: f32 = r.iter().zip(&s).map(|(a, b)| a.dot(*b)).sum();
            assert!(rs > 0.0, "{kind:?}");
        }
    }

    #[test]
    fn fixed_rows_are_decoupled_identity_scaled() {
        let n = 10;
        let a = random_spd(n, 2, 31);
        let mut f = vec![Filter::Free; n];
        f[4] = Filter::Fixed;
        let mut ldl = IncompleteBlockLdl::new(a.pattern());
        ldl.factor(&a, &f, Preconditioner::BlockIc0);
        // A residual on the fixed row alone comes back on that row alone, scaled by 1 / c_4.
        let mut r = vec![Vec3::ZERO; n];
        r[4] = Vec3::new(1.0, 2.0, 3.0);
        let mut out = vec![Vec3::ZERO; n];
        ldl.apply(&r, &mut out);
        let b = a.block(a.pattern().diag_slot(4));
        let c = b.x_axis.x.max(b.y_axis.y).max(b.z_axis.z);
        for (i, o) in out.iter().enumerate() {
            if i == 4 {
                assert!((*o * c - r[4]).length() <= 1e-5 * r[4].length(), "{o:?}");
            } else {
                assert_eq!(*o, Vec3::ZERO, "row {i}");
            }
        }
    }
}

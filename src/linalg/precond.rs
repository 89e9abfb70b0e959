//! Block-Jacobi preconditioner: the inverse of the 3×3 block diagonal.
//!
//! `docs/methods/baraff-witkin.md` §2.8 names a diagonal preconditioner (BW98) and the inverse of the 3×3
//! block diagonal as a natural variant; this is the variant. Each diagonal block `B_i` is
//! inverted in `f64` and stored as an `f32` block, so applying the preconditioner is one 3×3
//! product per row. The operator stored and applied is `P⁻¹ ≈ A⁻¹` (`docs/methods/baraff-witkin.md` §2.8:
//! whatever the name, the operator applied to the residual must approximate `A⁻¹`).
//!
//! # Fallbacks
//! PCG needs `P⁻¹` symmetric positive definite. For each block, in this order:
//! 1. `B = ½(B + Bᵀ)` (in `f64`) is Cholesky-factorised; if every pivot exceeds
//!    [`MIN_RELATIVE_PIVOT`]` · max_k |B_kk|` and the inverse is finite in `f32`, the
//!    (symmetrised) inverse of `B` is used. The pivot bound keeps the block's condition number
//!    near or below 10⁶, so rounding the inverse to `f32` (relative error ~6·10⁻⁸) cannot make
//!    it indefinite.
//! 2. Otherwise (singular, indefinite or too ill-conditioned for `f32`), if every diagonal
//!    entry is positive and finite: `diag(1 / B_kk)` (the BW98 Jacobi preconditioner).
//! 3. Otherwise: `I / max_k |B_kk|` when that maximum is positive and finite, else `I`.
//!
//! Each fallback is SPD, so an indefinite block never makes the preconditioner itself
//! indefinite; an indefinite `A` is detected by the PCG (`c · q <= 0`).
#![deny(unsafe_code)]

use glam::{DMat3, DVec3, Mat3, Vec3};

use super::block_csr::BlockCsr;
use super::reduce;

/// Inverse of the 3x3 block diagonal (each block inverted in f64; a singular/non-positive block
/// falls back to the inverse of its diagonal, then to identity scaled — see the module doc).
#[derive(Clone, Debug)]
pub struct BlockJacobi {
    inv: Vec<Mat3>,
}

/// Smallest Cholesky pivot, relative to the largest diagonal entry, for which a block is
/// inverted in full (rule 1 of the module doc).
pub const MIN_RELATIVE_PIVOT: f64 = 1e-6;

/// Which rule of the module doc produced a block inverse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockInverseKind {
    /// Full 3×3 inverse (rule 1).
    Full,
    /// Inverse of the diagonal (rule 2).
    Diagonal,
    /// Scaled identity (rule 3).
    ScaledIdentity,
}

/// Inverse of one symmetric diagonal block by the rules of the module doc, in `f64`.
#[must_use]
pub fn invert_diagonal_block(b: Mat3) -> (Mat3, BlockInverseKind) {
    let b = b.as_dmat3();
    let b = (b + b.transpose()) * 0.5;
    let d = DVec3::new(b.x_axis.x, b.y_axis.y, b.z_axis.z);
    let scale = d.abs().max_element();
    if scale.is_finite() && scale > 0.0 && cholesky_pivots_positive(&b, MIN_RELATIVE_PIVOT * scale)
    {
        let inv = b.inverse();
        let inv = ((inv + inv.transpose()) * 0.5).as_mat3();
        if inv.is_finite() {
            return (inv, BlockInverseKind::Full);
        }
    }
    if d.is_finite() && d.min_element() > 0.0 {
        let inv = Mat3::from_diagonal(d.recip().as_vec3());
        if inv.is_finite() {
            return (inv, BlockInverseKind::Diagonal);
        }
    }
    let s = (1.0 / scale) as f32;
    if scale.is_finite() && scale > 0.0 && s.is_finite() {
        (
            Mat3::from_diagonal(Vec3::splat(s)),
            BlockInverseKind::ScaledIdentity,
        )
    } else {
        (Mat3::IDENTITY, BlockInverseKind::ScaledIdentity)
    }
}

/// Whether the Cholesky factorisation of the symmetric `b` has every pivot `> min_pivot`.
fn cholesky_pivots_positive(b: &DMat3, min_pivot: f64) -> bool {
    // Column-major: b.col(j)[i] = B_ij; symmetric, so row/column order does not matter.
    let a = |i: usize, j: usize| b.col(j)[i];
    let p0 = a(0, 0);
    if p0.is_nan() || p0 <= min_pivot {
        return false;
    }
    let l00 = p0.sqrt();
    let l10 = a(1, 0) / l00;
    let l20 = a(2, 0) / l00;
    let p1 = a(1, 1) - l10 * l10;
    if p1.is_nan() || p1 <= min_pivot {
        return false;
    }
    let l11 = p1.sqrt();
    let l21 = (a(2, 1) - l20 * l10) / l11;
    let p2 = a(2, 2) - l20 * l20 - l21 * l21;
    p2 > min_pivot
}

impl BlockJacobi {
    /// A preconditioner for `n` block rows, initially the identity.
    #[must_use]
    pub fn new(n: usize) -> Self {
        BlockJacobi {
            inv: vec![Mat3::IDENTITY; n],
        }
    }

    /// Number of block rows.
    #[inline]
    #[must_use]
    pub fn num_rows(&self) -> usize {
        self.inv.len()
    }

    /// Recomputes every block inverse from the diagonal of `a` (parallel over fixed chunks;
    /// allocates nothing).
    ///
    /// # Panics
    /// If `a` does not have `num_rows()` block rows.
    pub fn update(&mut self, a: &BlockCsr) {
        assert_eq!(
            a.num_rows(),
            self.inv.len(),
            "BlockJacobi::update: matrix size differs from the preconditioner's"
        );
        let pattern = a.pattern();
        let values = a.values();
        reduce::for_each_chunk(&mut self.inv[..], |first, chunk: &mut [Mat3]| {
            for (k, inv) in chunk.iter_mut().enumerate() {
                *inv = invert_diagonal_block(values[pattern.diag_slot(first + k).index()]).0;
            }
        });
    }

    /// `out = P⁻¹ r` (parallel over fixed chunks).
    ///
    /// # Panics
    /// If `r` or `out` does not have `num_rows()` entries.
    pub fn apply(&self, r: &[Vec3], out: &mut [Vec3]) {
        assert_eq!(
            r.len(),
            self.inv.len(),
            "BlockJacobi::apply: r has the wrong length"
        );
        assert_eq!(
            out.len(),
            self.inv.len(),
            "BlockJacobi::apply: out has the wrong length"
        );
        reduce::for_each_chunk(out, |first, chunk: &mut [Vec3]| {
            for (k, o) in chunk.iter_mut().enumerate() {
                *o = self.inv[first + k] * r[first + k];
            }
        });
    }

    /// `(P⁻¹ r)_i` for one row.
    ///
    /// # Panics
    /// If `i >= num_rows()`.
    #[inline]
    #[must_use]
    pub fn apply_row(&self, i: usize, r: Vec3) -> Vec3 {
        self.inv[i] * r
    }

    /// The stored block inverses.
    #[inline]
    #[must_use]
    pub fn inverse_blocks(&self) -> &[Mat3] {
        &self.inv
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::block_csr::tests::{Rng, in_pool, random_spd};

    fn max_abs(m: Mat3) -> f32 {
        m.abs().to_cols_array().into_iter().fold(0.0, f32::max)
    }

    #[test]
    fn spd_blocks_are_inverted_exactly() {
        let mut rng = Rng::new(3);
        for _ in 0..200 {
            let g = rng.mat3();
            let b = g * g.transpose() + Mat3::IDENTITY * 0.05;
            let (inv, kind) = invert_diagonal_block(b);
            assert_eq!(kind, BlockInverseKind::Full);
            let err = max_abs((inv.as_dmat3() * b.as_dmat3()).as_mat3() - Mat3::IDENTITY);
            assert!(err < 1e-3, "B⁻¹B - I = {err}");
            assert_eq!(inv, inv.transpose());
        }
    }

    #[test]
    fn fallbacks_are_spd_and_documented_order() {
        // Indefinite but positive diagonal: diagonal inverse.
        let b = Mat3::from_cols(Vec3::new(1.0, 2.0, 0.0), Vec3::new(2.0, 1.0, 0.0), Vec3::Z);
        let (inv, kind) = invert_diagonal_block(b);
        assert_eq!(kind, BlockInverseKind::Diagonal);
        assert_eq!(inv, Mat3::IDENTITY);
        // Singular with positive diagonal: diagonal inverse.
        let b = Mat3::from_cols(Vec3::splat(2.0), Vec3::splat(2.0), Vec3::splat(2.0));
        let (inv, kind) = invert_diagonal_block(b);
        assert_eq!(kind, BlockInverseKind::Diagonal);
        assert_eq!(inv, Mat3::from_diagonal(Vec3::splat(0.5)));
        // A non-positive diagonal entry: identity scaled by 1 / max |B_kk|.
        let b = Mat3::from_diagonal(Vec3::new(4.0, -8.0, 1.0));
        let (inv, kind) = invert_diagonal_block(b);
        assert_eq!(kind, BlockInverseKind::ScaledIdentity);
        assert_eq!(inv, Mat3::from_diagonal(Vec3::splat(0.125)));
        // Zero or non-finite: identity.
        assert_eq!(
            invert_diagonal_block(Mat3::ZERO),
            (Mat3::IDENTITY, BlockInverseKind::ScaledIdentity)
        );
        let nan = Mat3::from_diagonal(Vec3::new(f32::NAN, 1.0, 1.0));
        assert_eq!(
            invert_diagonal_block(nan),
            (Mat3::IDENTITY, BlockInverseKind::ScaledIdentity)
        );
    }

    #[test]
    fn update_and_apply_match_blockwise_inverse() {
        let a = random_spd(300, 3, 11);
        let mut p = BlockJacobi::new(300);
        p.update(&a);
        let mut rng = Rng::new(12);
        let r: Vec<Vec3> = (0..300).map(|_| rng.vec3()).collect();
        let mut out = vec![Vec3::ZERO; 300];
        p.apply(&r, &mut out);
        for i in 0..300 {
            let b = a.block(a.pattern().diag_slot(i));
            let back = b * out[i];
            assert!(
                (back - r[i]).length() <= 1e-4 * (1.0 + r[i].length()),
                "row {i}"
            );
            assert_eq!(out[i], p.apply_row(i, r[i]));
        }
    }

    #[test]
    fn update_bits_independent_of_thread_count() {
        let n = 20_000;
        let a = random_spd(n, 2, 13);
        let run = |threads| {
            in_pool(threads, || {
                let mut p = BlockJacobi::new(n);
                p.update(&a);
                p.inverse_blocks().to_vec()
            })
        };
        let one = run(1);
        let four = run(4);
        assert!(one.iter().zip(&four).all(|(x, y)| {
            x.to_cols_array().map(f32::to_bits) == y.to_cols_array().map(f32::to_bits)
        }));
    }
}

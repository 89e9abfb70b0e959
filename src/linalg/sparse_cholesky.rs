//! Sparse direct solves of `K z = b` for the scalar SPD systems of Wang 2012 eq. 3.25 / 3.30:
//! a supernodal Cholesky `P K Pᵀ = L Lᵀ` (faer) on the fixed [`SymCsr`] pattern.
//!
//! **Choice**: the factorisation is faer's (supernodal LLᵀ with an approximate-minimum-degree
//! fill-reducing ordering, Amestoy, Davis and Duff 1996), not written here: a well-kept
//! supernodal Cholesky beats one of our own on every count that matters (blocking, dense
//! kernels, elimination-tree parallelism).
//!
//! Life cycle, and where memory is taken:
//! - [`SparseCholesky::new`]: symbolic analysis of the pattern (ordering, elimination tree,
//!   supernodes) once per pattern, and every buffer the numeric phase needs: the lower
//!   triangle in CSC form with a map from its entries to the [`SymCsr`] slots, the values of
//!   `L` (`len_val`), and one scratch arena sized by faer's `_scratch` queries for the larger
//!   of a numeric factorisation and a solve (so neither allocates).
//! - [`SparseCholesky::factor`]: the numeric factorisation of the current values (each
//!   Gauss–Newton iteration).
//! - [`SparseCholesky::solve_in_place`]: the two triangular solves.
//!
//! Determinism: with [`Par::Seq`] the factor is a fixed sequence of operations. The thread
//! count is a setting ([`CholeskyThreads`]); the tests compare the bits of both.
#![deny(unsafe_code)]

use std::sync::Arc;

use faer::Par;
use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::cholesky::llt::factor::{LltParams, LltRegularization};
use faer::perm::PermRef;
use faer::sparse::SparseColMatRef;
use faer::sparse::SymbolicSparseColMatRef;
use faer::sparse::linalg::cholesky::{
    CholeskySymbolicParams, LltRef, SymbolicCholesky, SymmetricOrdering,
    factorize_symbolic_cholesky,
};
use faer::{Conj, MatMut, Side, Spec};

use super::csr::SymCsr;

/// Fill-reducing ordering of the symbolic analysis.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ordering {
    /// Approximate minimum degree (Amestoy, Davis and Duff 1996), faer's default.
    #[default]
    Amd,
    /// The rows in their own order (the families stacked as built): no reordering.
    Natural,
}

/// Threads of the numeric factorisation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CholeskyThreads {
    /// Sequential.
    #[default]
    One,
    /// faer's elimination-tree and dense-kernel parallelism on the current rayon pool, at most
    /// this many threads.
    Pool(u8),
}

impl CholeskyThreads {
    fn par(self) -> Par {
        match self {
            CholeskyThreads::One | CholeskyThreads::Pool(0 | 1) => Par::Seq,
            CholeskyThreads::Pool(n) => Par::rayon(usize::from(n)),
        }
    }
}

/// Why a numeric factorisation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CholeskyError {
    /// The matrix is not numerically positive definite (rank-deficient hard rows).
    #[error("matrix not positive definite")]
    NotPositiveDefinite,
    /// The symbolic analysis failed (out of memory).
    #[error("symbolic analysis failed")]
    Symbolic,
}

/// A sparse Cholesky factor on a fixed [`SymCsr`] pattern: symbolic analysis once, numeric
/// factorisations and solves without allocation.
pub struct SparseCholesky {
    /// Shared by clones (immutable after the analysis).
    symbolic: Arc<SymbolicCholesky<u32>>,
    /// Lower triangle of `K` in CSC form: column `c` holds rows `≥ c`.
    col_ptr: Vec<u32>,
    row_idx: Vec<u32>,
    values: Vec<f64>,
    /// For each lower-triangle entry, its slot in the [`SymCsr`] values.
    src_slots: Vec<u32>,
    l_values: Vec<f64>,
    mem: MemBuffer,
    /// The size of `mem`.
    req: StackReq,
    par: Par,
    factored: bool,
    ordering: Ordering,
    threads: CholeskyThreads,
}

impl Clone for SparseCholesky {
    fn clone(&self) -> Self {
        SparseCholesky {
            symbolic: Arc::clone(&self.symbolic),
            col_ptr: self.col_ptr.clone(),
            row_idx: self.row_idx.clone(),
            values: self.values.clone(),
            src_slots: self.src_slots.clone(),
            l_values: self.l_values.clone(),
            mem: MemBuffer::new(self.req),
            req: self.req,
            par: self.par,
            factored: self.factored,
            ordering: self.ordering,
            threads: self.threads,
        }
    }
}

impl std::fmt::Debug for SparseCholesky {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparseCholesky")
            .field("rows", &(self.col_ptr.len() - 1))
            .field("entries", &self.row_idx.len())
            .field("factor_entries", &self.l_values.len())
            .field("ordering", &self.ordering)
            .field("threads", &self.threads)
            .field("factored", &self.factored)
            .finish_non_exhaustive()
    }
}

impl SparseCholesky {
    /// Symbolic analysis of `k`'s pattern with `ordering`, and every buffer of the numeric
    /// phase (see the module doc). Allocates; run once per pattern.
    ///
    /// # Errors
    /// [`CholeskyError::Symbolic`] when faer's analysis fails (out of memory).
    #[allow(clippy::needless_range_loop)] // CSR slots index `cols` and the slot map
    pub fn new(
        k: &SymCsr,
        ordering: Ordering,
        threads: CholeskyThreads,
    ) -> Result<Self, CholeskyError> {
        let n = k.num_rows();
        let (offsets, cols, _) = k.raw();
        let mut col_ptr = Vec::with_capacity(n + 1);
        let mut row_idx = Vec::new();
        let mut src_slots = Vec::new();
        col_ptr.push(0u32);
        for a in 0..n {
            for s in offsets[a] as usize..offsets[a + 1] as usize {
                // K is symmetric: CSR row `a` read as CSC column `a`; keep rows `≥ a`.
                if cols[s] as usize >= a {
                    row_idx.push(cols[s]);
                    src_slots.push(s as u32);
                }
            }
            col_ptr.push(row_idx.len() as u32);
        }
        let pattern = SymbolicSparseColMatRef::new_checked(n, n, &col_ptr, None, &row_idx);
        // The natural order as an explicit permutation: faer's `Identity` skips the conversion
        // to the upper triangle its analysis reads, so it would misread this lower triangle.
        let identity: Vec<u32> = (0..n as u32).collect();
        let ord = match ordering {
            Ordering::Amd => SymmetricOrdering::Amd,
            Ordering::Natural => {
                SymmetricOrdering::Custom(PermRef::new_checked(&identity, &identity, n))
            }
        };
        let symbolic = factorize_symbolic_cholesky(
            pattern,
            Side::Lower,
            ord,
            CholeskySymbolicParams::default(),
        )
        .map_err(|_| CholeskyError::Symbolic)?;
        let par = threads.par();
        let req = StackReq::any_of(&[
            symbolic.factorize_numeric_llt_scratch::<f64>(par, Spec::<LltParams, f64>::default()),
            symbolic.solve_in_place_scratch::<f64>(1, par),
        ]);
        let l_values = vec![0.0; symbolic.len_val()];
        let values = vec![0.0; row_idx.len()];
        Ok(SparseCholesky {
            symbolic: Arc::new(symbolic),
            col_ptr,
            row_idx,
            values,
            src_slots,
            l_values,
            mem: MemBuffer::new(req),
            req,
            par,
            factored: false,
            ordering,
            threads,
        })
    }

    /// The ordering and threads it was built with.
    #[must_use]
    pub fn config(&self) -> (Ordering, CholeskyThreads) {
        (self.ordering, self.threads)
    }

    /// Number of stored values of `L` (its memory in `f64`s).
    #[must_use]
    pub fn factor_entries(&self) -> usize {
        self.l_values.len()
    }

    /// Numeric factorisation of `k`'s current values (same pattern as at creation).
    /// Allocates nothing.
    ///
    /// # Errors
    /// [`CholeskyError::NotPositiveDefinite`] when a pivot is not positive; the factor is then
    /// unusable until the next successful call.
    ///
    /// # Panics
    /// If `k` does not have the pattern the factor was built on.
    pub fn factor(&mut self, k: &SymCsr) -> Result<(), CholeskyError> {
        let (_, _, vals) = k.raw();
        assert_eq!(k.num_rows() + 1, self.col_ptr.len(), "SparseCholesky: size");
        for (v, &s) in self.values.iter_mut().zip(&self.src_slots) {
            *v = vals[s as usize];
        }
        let n = k.num_rows();
        let a = SparseColMatRef::new(
            SymbolicSparseColMatRef::new_checked(n, n, &self.col_ptr, None, &self.row_idx),
            &self.values,
        );
        let stack = MemStack::new(&mut self.mem);
        let result = self.symbolic.factorize_numeric_llt::<f64>(
            &mut self.l_values,
            a,
            Side::Lower,
            LltRegularization::default(),
            self.par,
            stack,
            Spec::<LltParams, f64>::default(),
        );
        self.factored = result.is_ok();
        result
            .map(|_| ())
            .map_err(|_| CholeskyError::NotPositiveDefinite)
    }

    /// `b ← K⁻¹ b` with the last successful factor. Allocates nothing.
    ///
    /// # Panics
    /// If no factorisation succeeded since the last failure, or `b` has the wrong length.
    pub fn solve_in_place(&mut self, b: &mut [f64]) {
        assert!(self.factored, "SparseCholesky: solve without a factor");
        let n = b.len();
        assert_eq!(n + 1, self.col_ptr.len(), "SparseCholesky: rhs size");
        let llt = LltRef::<'_, u32, f64>::new(&self.symbolic, &self.l_values);
        let stack = MemStack::new(&mut self.mem);
        let rhs = MatMut::from_column_major_slice_mut(b, n, 1);
        llt.solve_in_place_with_conj(Conj::No, rhs, self.par, stack);
    }
}

#[cfg(test)]
mod tests {
    use glam::DVec3;

    use super::*;
    use crate::testing::SplitMix64;
    use faer::linalg::solvers::Solve;

    /// A random SPD system on random stencils: `K = G W Gᵀ + D`, `D > 0` on some rows.
    fn system(rows: usize, verts: usize, seed: u64) -> (SymCsr, Vec<f64>) {
        let mut rng = SplitMix64::new(seed);
        let mut offsets = vec![0u32];
        let mut vertices = Vec::new();
        for _ in 0..rows {
            let k = 1 + (rng.uniform(0.0, 3.99) as usize);
            let mut s: Vec<u32> = Vec::new();
            while s.len() < k {
                let v = (rng.uniform(0.0, verts as f64 - 1e-9)) as u32;
                if !s.contains(&v) {
                    s.push(v);
                }
            }
            vertices.extend(s);
            offsets.push(vertices.len() as u32);
        }
        let g: Vec<DVec3> = vertices.iter().map(|_| rng.vec3(1.0)).collect();
        let w: Vec<f64> = (0..verts).map(|_| rng.uniform(0.5, 2.0)).collect();
        let d: Vec<f64> = (0..rows).map(|_| rng.uniform(0.01, 1.0)).collect();
        let mut k = SymCsr::from_stencils(verts, &offsets, &vertices);
        k.assemble(&g, &w, &d);
        let b = (0..rows).map(|_| rng.uniform(-1.0, 1.0)).collect();
        (k, b)
    }

    #[test]
    fn sparse_solve_matches_dense_cholesky() {
        for (seed, ordering) in [
            (1, Ordering::Amd),
            (2, Ordering::Natural),
            (3, Ordering::Amd),
        ] {
            let (k, b) = system(60, 25, seed);
            let n = k.num_rows();
            let dense = k.to_dense();
            let m = faer::Mat::<f64>::from_fn(n, n, |r, c| dense[r * n + c]);
            let reference = m
                .llt(faer::Side::Lower)
                .expect("SPD")
                .solve(faer::Mat::<f64>::from_fn(n, 1, |r, _| b[r]));
            let mut chol =
                SparseCholesky::new(&k, ordering, CholeskyThreads::One).expect("symbolic");
            chol.factor(&k).expect("SPD");
            let mut z = b.clone();
            chol.solve_in_place(&mut z);
            let scale = (0..n).fold(0.0f64, |m, i| m.max(reference[(i, 0)].abs()));
            for i in 0..n {
                assert!(
                    (z[i] - reference[(i, 0)]).abs() <= 1e-10 * scale,
                    "{ordering:?} row {i}: {} vs {}",
                    z[i],
                    reference[(i, 0)]
                );
            }
        }
    }

    #[test]
    fn singular_matrix_is_reported() {
        // Four hard rows (D = 0) along x on two vertices: rows 0 and 2 (and 1 and 3) are equal,
        // so K has rank 2 and the third pivot is exactly 0.
        let offsets = [0u32, 1, 2, 3, 4];
        let vertices = [0u32, 1, 0, 1];
        let mut k = SymCsr::from_stencils(2, &offsets, &vertices);
        k.assemble(&[DVec3::X; 4], &[1.0, 1.0], &[0.0; 4]);
        let mut chol =
            SparseCholesky::new(&k, Ordering::Amd, CholeskyThreads::One).expect("symbolic");
        assert_eq!(chol.factor(&k), Err(CholeskyError::NotPositiveDefinite));
        // A regularised copy factors.
        k.assemble(&[DVec3::X; 4], &[1.0, 1.0], &[1e-3; 4]);
        assert_eq!(chol.factor(&k), Ok(()));
    }

    #[test]
    fn factor_bits_independent_of_threads() {
        // The parallel factor splits its work by the thread count of the setting, not by the
        // threads the pool has: the same setting gives the same bits in a pool of 1 and of 2.
        let (k, b) = system(3000, 1200, 7);
        let run = |pool: usize, threads: CholeskyThreads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(pool)
                .build()
                .expect("pool")
                .install(|| {
                    let mut chol =
                        SparseCholesky::new(&k, Ordering::Amd, threads).expect("symbolic");
                    chol.factor(&k).expect("SPD");
                    let mut z = b.clone();
                    chol.solve_in_place(&mut z);
                    z
                })
        };
        for threads in [CholeskyThreads::One, CholeskyThreads::Pool(2)] {
            let a = run(1, threads);
            let c = run(2, threads);
            assert!(
                a.iter().zip(&c).all(|(p, q)| p.to_bits() == q.to_bits()),
                "{threads:?}"
            );
        }
    }
}

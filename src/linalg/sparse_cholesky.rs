//! Sparse direct solves of `K z = b` for the scalar SPD systems of Wang 2012 eq. 3.25 / 3.30:
//! a supernodal Cholesky `P K Pᵀ = L Lᵀ` (faer) on the fixed [`SymCsr`] pattern.
//!
//! **Choice**: the factorisation is faer's (supernodal LLᵀ with an approximate-minimum-degree
//! fill-reducing ordering, Amestoy, Davis and Duff 1996), not written here: a well-kept
//! supernodal Cholesky beats one of our own on every count that matters (blocking, dense
//! kernels). Its numeric phase is sequential over the supernodes; [`CholeskyThreads::Subtrees`]
//! runs the same left-looking loop over faer's structure in weft ([`SupernodalLlt`]) to factor
//! independent subtrees at the same time.
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
use faer::sparse::linalg::SupernodalThreshold;
use faer::sparse::linalg::cholesky::{
    CholeskySymbolicParams, LltRef, SymbolicCholesky, SymbolicCholeskyRaw, SymmetricOrdering,
    factorize_symbolic_cholesky,
};
use faer::{Conj, MatMut, Side, Spec};

use super::csr::SymCsr;
use super::nested_dissection::nested_dissection_order;
use super::supernodal_llt::SupernodalLlt;

/// Fill-reducing ordering of the symbolic analysis.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ordering {
    /// Approximate minimum degree (Amestoy, Davis and Duff 1996), faer's default.
    #[default]
    Amd,
    /// The rows in their own order (the families stacked as built): no reordering.
    Natural,
    /// Nested dissection by level-structure separators, AMD on the small parts
    /// ([`super::nested_dissection`]).
    NestedDissection,
}

/// Threads of the numeric factorisation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CholeskyThreads {
    /// Sequential.
    #[default]
    One,
    /// faer's dense-kernel parallelism on the current rayon pool, at most this many threads.
    Pool(u8),
    /// The two independent subtrees below the top separator as two tasks of the current rayon
    /// pool, every supernode's kernels sequential ([`SupernodalLlt`]): the same bits for any
    /// pool, different from [`CholeskyThreads::One`]'s (another update kernel).
    Subtrees,
}

impl CholeskyThreads {
    fn par(self) -> Par {
        match self {
            CholeskyThreads::One | CholeskyThreads::Pool(0 | 1) | CholeskyThreads::Subtrees => {
                Par::Seq
            }
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
    /// `Σ_j |L_{*j}|²` over the columns of `L`.
    flops: f64,
    mem: MemBuffer,
    /// The size of `mem`.
    req: StackReq,
    par: Par,
    factored: bool,
    ordering: Ordering,
    threads: CholeskyThreads,
    /// The numeric phase of [`CholeskyThreads::Subtrees`] (a supernodal analysis only).
    subtrees: Option<SupernodalLlt>,
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
            flops: self.flops,
            mem: MemBuffer::new(self.req),
            req: self.req,
            par: self.par,
            factored: self.factored,
            ordering: self.ordering,
            threads: self.threads,
            subtrees: self.subtrees.clone(),
        }
    }
}

impl std::fmt::Debug for SparseCholesky {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparseCholesky")
            .field("rows", &(self.col_ptr.len() - 1))
            .field("entries", &self.row_idx.len())
            .field("factor_entries", &self.l_values.len())
            .field("factor_flops", &self.flops)
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
        let (fwd, inv): (Vec<u32>, Vec<u32>) = match ordering {
            Ordering::Amd => (Vec::new(), Vec::new()),
            Ordering::Natural => ((0..n as u32).collect(), (0..n as u32).collect()),
            Ordering::NestedDissection => {
                let fwd = nested_dissection_order(offsets, cols);
                let mut inv = vec![0u32; n];
                for (k, &r) in fwd.iter().enumerate() {
                    inv[r as usize] = k as u32;
                }
                (fwd, inv)
            }
        };
        let ord = match ordering {
            Ordering::Amd => SymmetricOrdering::Amd,
            Ordering::Natural | Ordering::NestedDissection => {
                SymmetricOrdering::Custom(PermRef::new_checked(&fwd, &inv, n))
            }
        };
        let symbolic = factorize_symbolic_cholesky(
            pattern,
            Side::Lower,
            ord,
            CholeskySymbolicParams {
                // The subtree factor works on supernodes; faer picks the simplicial form on
                // small or very sparse systems.
                supernodal_flop_ratio_threshold: if threads == CholeskyThreads::Subtrees {
                    SupernodalThreshold::FORCE_SUPERNODAL
                } else {
                    SupernodalThreshold::AUTO
                },
                ..CholeskySymbolicParams::default()
            },
        )
        .map_err(|_| CholeskyError::Symbolic)?;
        let par = threads.par();
        let req = StackReq::any_of(&[
            symbolic.factorize_numeric_llt_scratch::<f64>(par, Spec::<LltParams, f64>::default()),
            symbolic.solve_in_place_scratch::<f64>(1, par),
        ]);
        let l_values = vec![0.0; symbolic.len_val()];
        let flops = column_count_squares(&symbolic);
        let values = vec![0.0; row_idx.len()];
        let subtrees = match (threads, symbolic.raw()) {
            (CholeskyThreads::Subtrees, SymbolicCholeskyRaw::Supernodal(sym)) => {
                let inv: Vec<u32> = match symbolic.perm() {
                    Some(p) => p.arrays().1.to_vec(),
                    None => (0..n as u32).collect(),
                };
                Some(SupernodalLlt::new(sym, &col_ptr, &row_idx, &inv))
            }
            _ => None,
        };
        Ok(SparseCholesky {
            symbolic: Arc::new(symbolic),
            col_ptr,
            row_idx,
            values,
            src_slots,
            l_values,
            flops,
            mem: MemBuffer::new(req),
            req,
            par,
            factored: false,
            ordering,
            threads,
            subtrees,
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

    /// Whether the last numeric factorisation succeeded (a solve may use it).
    #[must_use]
    pub fn is_factored(&self) -> bool {
        self.factored
    }

    /// The work of a numeric factorisation, `Σ_j |L_{*j}|²` over the columns of `L` (the
    /// multiply–adds of a column Cholesky, to within lower-order terms): how the orderings are
    /// compared independently of the machine.
    #[must_use]
    pub fn factor_flops(&self) -> f64 {
        self.flops
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
        if let (Some(llt), SymbolicCholeskyRaw::Supernodal(sym)) =
            (self.subtrees.as_mut(), self.symbolic.raw())
        {
            let result = llt.factor(sym, &self.values, &mut self.l_values, true);
            self.factored = result.is_ok();
            return result.map_err(|_| CholeskyError::NotPositiveDefinite);
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

/// `Σ_j |L_{*j}|²` from the symbolic factor: a supernode of `k` columns and `p` rows below its
/// diagonal block has columns of `p + 1 … p + k` entries.
fn column_count_squares(symbolic: &SymbolicCholesky<u32>) -> f64 {
    match symbolic.raw() {
        SymbolicCholeskyRaw::Supernodal(s) => {
            let begin = s.supernode_begin();
            let end = s.supernode_end();
            let rows = s.col_ptr_for_row_idx();
            (0..s.n_supernodes())
                .map(|i| {
                    let k = f64::from(end[i] - begin[i]);
                    let p = f64::from(rows[i + 1] - rows[i]);
                    // Σ_{c = p+1}^{p+k} c² = S(p + k) − S(p), S(m) = m(m + 1)(2m + 1)/6.
                    let sq = |m: f64| m * (m + 1.0) * (2.0 * m + 1.0) / 6.0;
                    sq(p + k) - sq(p)
                })
                .sum()
        }
        SymbolicCholeskyRaw::Simplicial(s) => s
            .col_ptr()
            .windows(2)
            .map(|w| f64::from(w[1] - w[0]).powi(2))
            .sum(),
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

    /// Factors `k` with `ordering`, solves `k z = b` and checks `z` against faer's dense
    /// Cholesky to 1e-10 of the largest entry.
    fn assert_solves_like_dense(k: &SymCsr, b: &[f64], ordering: Ordering) {
        assert_solves_like_dense_with(k, b, ordering, CholeskyThreads::One);
    }

    /// [`assert_solves_like_dense`] with the given threads.
    fn assert_solves_like_dense_with(
        k: &SymCsr,
        b: &[f64],
        ordering: Ordering,
        threads: CholeskyThreads,
    ) {
        let n = k.num_rows();
        let dense = k.to_dense();
        let m = faer::Mat::<f64>::from_fn(n, n, |r, c| dense[r * n + c]);
        let reference = m
            .llt(faer::Side::Lower)
            .expect("SPD")
            .solve(faer::Mat::<f64>::from_fn(n, 1, |r, _| b[r]));
        let mut chol = SparseCholesky::new(k, ordering, threads).expect("symbolic");
        chol.factor(k).expect("SPD");
        let mut z = b.to_vec();
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

    #[test]
    fn sparse_solve_matches_dense_cholesky() {
        for (seed, ordering) in [
            (1, Ordering::Amd),
            (2, Ordering::Natural),
            (3, Ordering::Amd),
            (4, Ordering::NestedDissection),
        ] {
            let (k, b) = system(60, 25, seed);
            assert_solves_like_dense(&k, &b, ordering);
        }
    }

    /// `K = G W Gᵀ + D` of the edge rows of an `m × m` vertex grid with diagonals (one row per
    /// edge, two vertices a row, `D = 10⁻³`): the graph of a cloth's distance rows.
    fn grid_edge_system(m: usize, seed: u64) -> (SymCsr, Vec<f64>) {
        let mut rng = SplitMix64::new(seed);
        let id = |i: usize, j: usize| (i * m + j) as u32;
        let mut vertices = Vec::new();
        for i in 0..m {
            for j in 0..m {
                if j + 1 < m {
                    vertices.extend([id(i, j), id(i, j + 1)]);
                }
                if i + 1 < m {
                    vertices.extend([id(i, j), id(i + 1, j)]);
                }
                if i + 1 < m && j + 1 < m {
                    vertices.extend([id(i, j), id(i + 1, j + 1)]);
                }
            }
        }
        let rows = vertices.len() / 2;
        let offsets: Vec<u32> = (0..=rows as u32).map(|a| 2 * a).collect();
        let g: Vec<DVec3> = vertices.iter().map(|_| rng.vec3(1.0)).collect();
        let w: Vec<f64> = (0..m * m).map(|_| rng.uniform(0.5, 2.0)).collect();
        let mut k = SymCsr::from_stencils(m * m, &offsets, &vertices);
        k.assemble(&g, &w, &vec![1e-3; rows]);
        let b = (0..rows).map(|_| rng.uniform(-1.0, 1.0)).collect();
        (k, b)
    }

    #[test]
    fn nested_dissection_solves_a_mesh_system_like_the_dense_cholesky() {
        // 675 rows: large enough that the dissection splits the graph before AMD takes over.
        let (k, b) = grid_edge_system(16, 11);
        assert_solves_like_dense(&k, &b, Ordering::NestedDissection);
    }

    #[test]
    fn nested_dissection_work_on_a_mesh_is_far_below_natural_and_near_amd() {
        let (k, _) = grid_edge_system(60, 12);
        let work = |o| {
            let c = SparseCholesky::new(&k, o, CholeskyThreads::One).expect("symbolic");
            (c.factor_entries(), c.factor_flops())
        };
        let (amd, natural, nd) = (
            work(Ordering::Amd),
            work(Ordering::Natural),
            work(Ordering::NestedDissection),
        );
        eprintln!("grid (entries, flops): amd {amd:?}, natural {natural:?}, nd {nd:?}");
        assert!(2 * nd.0 < natural.0, "nd {nd:?}, natural {natural:?}");
        assert!(nd.0 * 10 < amd.0 * 12, "nd {nd:?}, amd {amd:?}");
    }

    #[test]
    fn subtree_factor_solves_a_mesh_system_like_the_dense_cholesky_with_two_busy_tasks() {
        // 2,523 rows: supernodal, and split by the dissection into two halves and a separator.
        let (k, b) = grid_edge_system(30, 13);
        for ordering in [Ordering::NestedDissection, Ordering::Amd] {
            let chol =
                SparseCholesky::new(&k, ordering, CholeskyThreads::Subtrees).expect("symbolic");
            let split = chol
                .subtrees
                .as_ref()
                .expect("supernodal")
                .split()
                .expect("split");
            eprintln!("{ordering:?}: {split:?}");
            if ordering == Ordering::NestedDissection {
                assert!(split.work[0].min(split.work[1]) > 0.25 * split.work.iter().sum::<f64>());
            }
            assert_solves_like_dense_with(&k, &b, ordering, CholeskyThreads::Subtrees);
        }
    }

    #[test]
    fn factor_flops_count_the_columns_of_l() {
        // A chain of rows sharing one vertex with the next (tridiagonal K) and a fan of rows
        // on one common vertex (dense K), both in their natural order: L has columns of 2 … 2, 1
        // entries and of n, n − 1, … 1 entries.
        let n = 40u32;
        let chain: Vec<u32> = (0..n).flat_map(|a| [a, a + 1]).collect();
        let fan: Vec<u32> = (0..n).flat_map(|a| [0, a + 1]).collect();
        let offsets: Vec<u32> = (0..=n).map(|a| 2 * a).collect();
        for (vertices, expected) in [
            (chain, f64::from(4 * (n - 1) + 1)),
            (fan, (1..=n).map(|c| f64::from(c * c)).sum()),
        ] {
            let mut k = SymCsr::from_stencils(n as usize + 1, &offsets, &vertices);
            k.assemble(
                &vec![DVec3::X; vertices.len()],
                &vec![1.0; n as usize + 1],
                &vec![1.0; n as usize],
            );
            let chol =
                SparseCholesky::new(&k, Ordering::Natural, CholeskyThreads::One).expect("symbolic");
            assert_eq!(chol.factor_flops(), expected);
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
        for threads in [
            CholeskyThreads::One,
            CholeskyThreads::Pool(2),
            CholeskyThreads::Subtrees,
        ] {
            let a = run(1, threads);
            let c = run(2, threads);
            assert!(
                a.iter().zip(&c).all(|(p, q)| p.to_bits() == q.to_bits()),
                "{threads:?}"
            );
        }
    }
}

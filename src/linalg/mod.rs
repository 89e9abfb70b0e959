//! Fixed-pattern 3x3 block sparse matrices and the filtered PCG.
//!
//! - [`pattern`]: the symbolic part, [`BlockPattern`], built once at cloth creation; elements
//!   keep [`BlockSlot`]s so that assembly is an indexed add.
//! - [`block_csr`]: [`BlockCsr`], `f32` 3×3 blocks on a shared pattern, and `y = A x`.
//! - [`scatter`]: [`ScatterPlan`], assembly as a parallel scatter: elements add their blocks
//!   straight into the matrix, the writers kept apart by row ranges in phases fixed at
//!   creation, so every sum has one order for any thread count.
//! - [`precond`]: [`BlockJacobi`], the inverse of the block diagonal (inverted in `f64`).
//! - [`block_ldl`]: [`IncompleteBlockLdl`], block IC(0) and block symmetric Gauss–Seidel of
//!   the filtered matrix on the same pattern (the [`Preconditioner`] choice of the PCG).
//! - [`pcg`]: the per-vertex [`Filter`] (`docs/methods/baraff-witkin.md` (2.15)) and the modified PCG of
//!   Baraff–Witkin ([`solve_filtered_pcg`], eq. 2.16), the unfiltered [`solve_pcg`] and the
//!   constraint impulse of §2.7.
//! - [`csr`]: [`SymCsr`], the scalar symmetric `G W Gᵀ + D` of Wang 2012 eq. 3.25/3.30 on a
//!   pattern built once from row stencils; [`scalar_pcg`]: Jacobi PCG in `f64` on it or on any
//!   [`SymOperator`]; [`sparse_cholesky`]: [`SparseCholesky`], a supernodal sparse Cholesky
//!   (faer, AMD ordering) of a [`SymCsr`], symbolic analysis once per pattern;
//!   [`supernodal_llt`]: its numeric phase with independent subtrees in parallel.
//! - [`cg`]: the conjugate-gradient iteration both PCGs run ([`cg::iterate`]), over the
//!   [`cg::CgSystem`] passes each supplies in its own numbers.
//! - [`reduce`]: the fixed-chunk parallel loops and `f64` reductions everything above uses.
//! - `isa`: the product pass and the IC(0) factorisation compiled a second time with AVX,
//!   chosen at run time; the same IEEE operations, so the same bits.
//!
//! Determinism: every loop runs over fixed chunks of rows; a reduction adds its per-chunk
//! `f64` partials in chunk order. Results are bit-identical for any rayon thread count, and
//! loops run in the caller's rayon pool (`pool.install`). Nothing here allocates after the
//! matrix and the [`PcgWorkspace`] exist.
#![deny(unsafe_code)]

pub mod block_csr;
pub mod block_ldl;
pub mod cg;
mod crew;
pub mod csr;
pub mod ic0;
mod isa;
pub mod nested_dissection;
pub mod pattern;
pub mod pcg;
mod pcg_crew;
pub mod precond;
pub mod reduce;
pub mod scalar_pcg;
pub mod scatter;
pub mod sparse_cholesky;
pub mod supernodal_llt;

pub use block_csr::BlockCsr;
pub use block_ldl::{FactorOutcome, IncompleteBlockLdl, Preconditioner};
pub use csr::SymCsr;
pub use ic0::IncompleteCholesky;
pub use pattern::{BlockPattern, BlockSlot};
pub use pcg::{
    Filter, PcgReport, PcgSettings, PcgWorkspace, constraint_impulse, solve_filtered_pcg, solve_pcg,
};
pub use precond::BlockJacobi;
pub use scalar_pcg::{ScalarPcgWorkspace, SymOperator, solve_scalar_pcg, solve_scalar_pcg_with};
pub use scatter::{RowWindow, ScatterPlan};
pub use sparse_cholesky::{CholeskyError, CholeskyThreads, Ordering, SparseCholesky};

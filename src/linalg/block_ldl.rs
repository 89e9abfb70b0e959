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
//! # Parallel solves: parts and a separator
//! The recurrences run row after row, so in the natural order the factorisation and both
//! triangular solves are sequential. The factor is therefore built in a *domain-decomposition
//! order* (a symmetric permutation of `Ã`, fixed at creation): the rows of `A` are cut into
//! `P` contiguous ranges of the natural order (*parts*); a row that couples to a row of a
//! later part is a *separator* row; the factor's order is the interior rows of part 0, of
//! part 1, …, then every separator row. No interior row then couples to an interior row of
//! another part, so on the pattern (IC(0) adds no fill-in) each part's rows of `L` reach only
//! its own rows, and the separator's reach anything before them:
//!
//! ```text
//! forward   (I + L) y = r       the parts in parallel, then the separator rows in order
//! backward  (I + L)ᵀ x = D⁻¹ y  the separator rows, then the parts in parallel
//! factor                        the parts in parallel, then the separator rows in order
//! ```
//!
//! This is IC(0) of the permuted matrix, a different incomplete factor from the natural
//! order's (the dropped fill-in differs), so it changes the iterates, not the method. The
//! Baraff–Witkin solver does not use it ([`IncompleteBlockLdl::new`] is the natural order): on
//! the drapes at two threads the extra iterations of the weaker factor cost more than the
//! parallel solves save (`docs/performance-history.md`); it is there for hosts with more cores
//! ([`IncompleteBlockLdl::with_parts`], [`suggested_parts`]).
//! `P = num_rows / PART_ROWS` (at least 2, at most [`MAX_PARTS`]), from the size alone and
//! never from the thread count, so the results are the same for any number of threads; below
//! the linear algebra's parallel threshold ([`reduce::PARALLEL_MIN_ROWS`] rows) `P = 1`, the
//! natural order. More parts mean more separator rows and a weaker factor (more CG
//! iterations), so `P` grows slowly with the size. On a cloth grid numbered row by row a separator is about two grid rows per cut (the
//! hinges' wing pairs reach two rows); a mesh whose numbering couples distant rows would give
//! a large separator, and when it exceeds an eighth of the rows fewer parts are used, down
//! to `P = 1`. With parts, the backward solve is written row by row (`x_c = D_c⁻¹ y_c −
//! Σ_{i>c} L_icᵀ x_i`, a gather over a transposed copy of `L` made after each factorisation)
//! so that every row writes only itself. In the natural order (`P = 1`, the solver's) both
//! solves are one sequential sweep each ([`IncompleteBlockLdl::apply_in_order`]) and the
//! backward one scatters from the rows of `L` (`w_c −= L_icᵀ x_i` once `x_i` is solved), so no
//! transposed copy is made; each `w_c` receives its terms in the same order as the gather
//! (`i` descending), so the two forms give the same bits.
//!
//! # The symbolic factorisation
//! In `F_ik = Ã_ik − Σ_{j<k} F_ij L_kjᵀ` only the `j` that rows `i` and `k` both hold add
//! anything. The pattern lists them once, at creation, for every block `(i, k)` (as the slot
//! of `L_kj` and the place of `j` in row `i`), so the factorisation multiplies no zero blocks:
//! on a cloth grid with hinge wing pairs about a third of the products of a dense scratch row
//! are left. The terms are taken in ascending `j`, the order of the scratch-row loop, so the
//! factor's values are the same.
//!
//! # Numbers and determinism
//! Blocks are `f32` (`L`, `Lᵀ` with parts, `D⁻¹`) like `A`: the factor only steers the
//! iteration, and its round-off changes how fast CG converges, not what it converges to. Each
//! pivot block `D_i` is accumulated, checked and inverted in `f64`, where the cancellation of
//! the Schur complement happens (`A = M − h D − h² K` of a stiff cloth cancels four to five
//! digits in its smooth modes). Each row's arithmetic is fixed by the order above, whichever
//! thread runs it, so the factor and the solves are bit-identical for any thread count.
//! Storage (the ordering, the lower and upper patterns, the symbolic update lists, `L`, `Lᵀ`,
//! `D⁻¹`, one scratch row and the solve vector) is allocated once, at creation; `factor` and
//! `apply` allocate nothing.
#![deny(unsafe_code)]

use crate::runtime::executor::join;
use std::ops::Range;

use glam::{DMat3, DVec3, Mat3, Mat3A, Vec3, Vec3A};

use super::block_csr::BlockCsr;
use super::pattern::BlockPattern;
use super::pcg::Filter;
use super::precond::{MIN_RELATIVE_PIVOT, invert_diagonal_block};
use super::reduce;

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

/// Rows of `A` per part of the ordering (module doc, "Parallel solves"): the number of parts
/// is `num_rows / PART_ROWS`, at least 2 and at most [`MAX_PARTS`], from the matrix size
/// alone. Each part's separator rows weaken the factor (on drape-101, 40 frames: 2,435 CG
/// iterations in the natural order, 2,806 with 2 parts, 3,045 with 4), so parts are few.
pub const PART_ROWS: usize = 4096;

/// Most parts of the ordering.
pub const MAX_PARTS: usize = 16;

/// A partition is used only while its separator holds at most `1 / SEPARATOR_SHARE` of the
/// rows; otherwise fewer parts are tried, down to one (the natural order).
const SEPARATOR_SHARE: usize = 8;

/// The symbolic part of the factor: the ordering and the patterns of `L` and `Lᵀ`, built once.
#[derive(Clone, Debug)]
struct FactorPattern {
    /// `perm[i]`: the row of `A` (vertex) that is row `i` of the factor.
    perm: Vec<u32>,
    /// `iperm[v]`: the row of the factor that holds vertex `v`.
    iperm: Vec<u32>,
    /// `part_start[p]..part_start[p + 1]`: the interior rows of part `p`; the last entry is
    /// the first separator row.
    part_start: Vec<u32>,
    /// `offsets[i]..offsets[i + 1]`: row `i` of the strict lower part, in `cols`, `src` and `l`.
    offsets: Vec<u32>,
    /// Column (factor row) of each strict-lower block, ascending within a row.
    cols: Vec<u32>,
    /// Slot in `A` of each strict-lower block: `A_{perm[i], perm[cols[s]]}`.
    src: Vec<u32>,
    /// Slot in `A` of each diagonal block `A_{perm[i], perm[i]}`.
    diag_slot: Vec<u32>,
    /// `upper_offsets[c]..upper_offsets[c + 1]`: the blocks `L_ic` of column `c` (`i > c`), by
    /// descending `i`, in `upper_rows`, `upper_src` and `lt`.
    upper_offsets: Vec<u32>,
    /// Row `i` of each block of column `c`, descending.
    upper_rows: Vec<u32>,
    /// `update_offsets[t]..update_offsets[t + 1]`: the terms `F_ij L_kjᵀ` of block `t = (i, k)`
    /// in `updates`: the `j` that rows `i` and `k` both hold, ascending.
    update_offsets: Vec<u32>,
    /// Each term as (slot of `L_kj`, position of `j` in row `i`'s strict lower part).
    updates: Vec<(u32, u32)>,
    /// Index in `l` of each block of column `c`.
    upper_src: Vec<u32>,
}

impl FactorPattern {
    fn new(pattern: &BlockPattern, parts: usize) -> Self {
        let n = pattern.num_rows();
        let (perm, part_start) = ordering(pattern, parts);
        let mut iperm = vec![0u32; n];
        for (i, &v) in perm.iter().enumerate() {
            iperm[v as usize] = i as u32;
        }
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0u32);
        let mut cols = Vec::new();
        let mut src = Vec::new();
        let mut diag_slot = Vec::with_capacity(n);
        let mut row: Vec<(u32, u32)> = Vec::new();
        for &v in &perm {
            let v = v as usize;
            let i = iperm[v];
            row.clear();
            for s in pattern.row_range(v) {
                let c = iperm[pattern.cols()[s] as usize];
                if c < i {
                    row.push((c, s as u32));
                }
            }
            row.sort_unstable();
            cols.extend(row.iter().map(|&(c, _)| c));
            src.extend(row.iter().map(|&(_, s)| s));
            offsets.push(cols.len() as u32);
            diag_slot.push(pattern.diag_slot(v).index() as u32);
        }
        // Lᵀ by rows: the blocks of each column, rows descending (the order in which the
        // column-oriented backward solve would subtract them).
        let mut counts = vec![0u32; n + 1];
        for &c in &cols {
            counts[c as usize + 1] += 1;
        }
        for c in 0..n {
            counts[c + 1] += counts[c];
        }
        let upper_offsets = counts.clone();
        let mut upper_rows = vec![0u32; cols.len()];
        let mut upper_src = vec![0u32; cols.len()];
        for i in (0..n).rev() {
            let row = offsets[i] as usize..offsets[i + 1] as usize;
            for (s, &c) in row.clone().zip(&cols[row]) {
                let c = c as usize;
                let u = counts[c] as usize;
                upper_rows[u] = i as u32;
                upper_src[u] = s as u32;
                counts[c] += 1;
            }
        }
        // The symbolic IC(0): for each block (i, k), the j < k on both rows' patterns.
        let mut update_offsets = Vec::with_capacity(cols.len() + 1);
        update_offsets.push(0u32);
        let mut updates = Vec::new();
        let mut position = vec![u32::MAX; n];
        for i in 0..n {
            let row = offsets[i] as usize..offsets[i + 1] as usize;
            for (p, &j) in cols[row.clone()].iter().enumerate() {
                position[j as usize] = p as u32;
            }
            for &k in &cols[row.clone()] {
                let k = k as usize;
                for u in offsets[k] as usize..offsets[k + 1] as usize {
                    let p = position[cols[u] as usize];
                    if p != u32::MAX {
                        updates.push((u as u32, p));
                    }
                }
                update_offsets.push(updates.len() as u32);
            }
            for &j in &cols[row] {
                position[j as usize] = u32::MAX;
            }
        }
        FactorPattern {
            update_offsets,
            updates,
            perm,
            iperm,
            part_start,
            offsets,
            cols,
            src,
            diag_slot,
            upper_offsets,
            upper_rows,
            upper_src,
        }
    }

    fn num_rows(&self) -> usize {
        self.perm.len()
    }

    fn num_parts(&self) -> usize {
        self.part_start.len() - 1
    }

    fn separator_start(&self) -> usize {
        self.part_start[self.num_parts()] as usize
    }

    fn part_rows(&self, p: usize) -> Range<usize> {
        self.part_start[p] as usize..self.part_start[p + 1] as usize
    }

    fn lower(&self, i: usize) -> Range<usize> {
        self.offsets[i] as usize..self.offsets[i + 1] as usize
    }

    fn upper(&self, c: usize) -> Range<usize> {
        self.upper_offsets[c] as usize..self.upper_offsets[c + 1] as usize
    }

    /// Runs `f(p, rows of part p)` for every part, in parallel (rayon's join over halves);
    /// `s` holds the rows of `parts`. True when every `f` is.
    fn run_parts<S: PartRows>(
        &self,
        parts: Range<usize>,
        s: S,
        f: &(impl Fn(usize, S) -> bool + Sync),
    ) -> bool {
        if parts.len() <= 1 {
            return parts.is_empty() || f(parts.start, s);
        }
        let mid = (parts.start + parts.end) / 2;
        let (lo, hi) = s.split(
            self,
            self.part_start[parts.start] as usize,
            self.part_start[mid] as usize,
        );
        let (a, b) = join(
            || self.run_parts(parts.start..mid, lo, f),
            || self.run_parts(mid..parts.end, hi, f),
        );
        a && b
    }
}

/// Mutable per-row storage that [`FactorPattern::run_parts`] hands out part by part.
trait PartRows: Sized + Send {
    /// Splits rows that start at row `first` at row `mid`.
    fn split(self, pat: &FactorPattern, first: usize, mid: usize) -> (Self, Self);
}

impl PartRows for &mut [Vec3A] {
    fn split(self, _: &FactorPattern, first: usize, mid: usize) -> (Self, Self) {
        self.split_at_mut(mid - first)
    }
}

impl PartRows for FactorRows<'_> {
    fn split(self, pat: &FactorPattern, first: usize, mid: usize) -> (Self, Self) {
        let (l0, l1) = self
            .l
            .split_at_mut((pat.offsets[mid] - pat.offsets[first]) as usize);
        let (d0, d1) = self.d_inv.split_at_mut(mid - first);
        let (w0, w1) = self.work.split_at_mut(mid - first);
        (
            FactorRows {
                l: l0,
                d_inv: d0,
                work: w0,
            },
            FactorRows {
                l: l1,
                d_inv: d1,
                work: w1,
            },
        )
    }
}

/// The number of parts for `pattern` in the parallel order ([`IncompleteBlockLdl::with_parts`]):
/// from its size ([`PART_ROWS`], [`MAX_PARTS`]; one below the linear algebra's parallel
/// threshold, at least two above it), fewer while the separator is too large.
#[must_use]
pub fn suggested_parts(pattern: &BlockPattern) -> usize {
    let n = pattern.num_rows();
    if n < reduce::PARALLEL_MIN_ROWS {
        return 1;
    }
    let mut parts = (n / PART_ROWS).clamp(2, MAX_PARTS);
    while parts > 1 {
        let separator = (0..n).filter(|&v| is_separator(pattern, parts, v)).count();
        if separator * SEPARATOR_SHARE <= n {
            break;
        }
        parts -= 1;
    }
    parts
}

/// The part of row `v` of `A`: `parts` contiguous ranges of the natural order.
#[inline]
fn part_of(v: usize, parts: usize, n: usize) -> usize {
    v * parts / n
}

/// Whether row `v` couples to a row of a later part (module doc, "Parallel solves").
fn is_separator(pattern: &BlockPattern, parts: usize, v: usize) -> bool {
    let n = pattern.num_rows();
    let p = part_of(v, parts, n);
    pattern
        .row_cols(v)
        .iter()
        .any(|&u| part_of(u as usize, parts, n) > p)
}

/// The factor's order: each part's interior rows ascending, part after part, then the
/// separator rows ascending; and the first row of each part (the last entry: the
/// separator's first row).
fn ordering(pattern: &BlockPattern, parts: usize) -> (Vec<u32>, Vec<u32>) {
    let n = pattern.num_rows();
    let parts = parts.clamp(1, n.max(1));
    let separator: Vec<bool> = (0..n)
        .map(|v| parts > 1 && is_separator(pattern, parts, v))
        .collect();
    let mut perm = Vec::with_capacity(n);
    let mut part_start = vec![0u32];
    let mut v = 0;
    for p in 0..parts {
        while v < n && part_of(v, parts, n) == p {
            if !separator[v] {
                perm.push(v as u32);
            }
            v += 1;
        }
        part_start.push(perm.len() as u32);
    }
    perm.extend((0..n as u32).filter(|&v| separator[v as usize]));
    (perm, part_start)
}

/// An incomplete block `(I + L) D (I + L)ᵀ` factor, preallocated on a block pattern.
#[derive(Clone, Debug)]
pub struct IncompleteBlockLdl {
    pat: FactorPattern,
    /// Strict-lower blocks `L_ik` (`Mat3A`: the SIMD products are the factorisation's and the
    /// triangular solves' inner loops).
    l: Vec<Mat3A>,
    /// `L_icᵀ` in the order of `upper_rows` (the backward solve's gather).
    lt: Vec<Mat3A>,
    /// `D_i⁻¹`.
    d_inv: Vec<Mat3A>,
    /// Dense scratch row of `F_ik` (zero between rows).
    work: Vec<Mat3A>,
    /// The triangular solves' vector, in the factor's order.
    y: Vec<Vec3A>,
    /// Index in `SHIFT_LEVELS` of the first IC(0) attempt of the next factorisation.
    level: usize,
    /// Factorisations done at `level` since it was entered.
    solves_at_level: u32,
}

/// The mutable rows of one part during the factorisation: its blocks of `L`, `D⁻¹` and
/// scratch, starting at its first row.
struct FactorRows<'a> {
    l: &'a mut [Mat3A],
    d_inv: &'a mut [Mat3A],
    work: &'a mut [Mat3A],
}

impl IncompleteBlockLdl {
    /// Storage for the strict lower part of `pattern` in the natural order, one part with
    /// sequential solves (values are set by [`IncompleteBlockLdl::factor`]). The solver uses
    /// this: on two cores the parts' weaker factor costs more CG iterations than their parallel
    /// solves save (module doc, "Parallel solves"); [`IncompleteBlockLdl::with_parts`] with
    /// [`suggested_parts`] gives the parallel order.
    #[must_use]
    pub fn new(pattern: &BlockPattern) -> Self {
        Self::with_parts(pattern, 1)
    }

    /// [`IncompleteBlockLdl::new`] with `parts` parts (1: the natural order, sequential
    /// solves), whatever the separator's size.
    #[must_use]
    pub fn with_parts(pattern: &BlockPattern, parts: usize) -> Self {
        let pat = FactorPattern::new(pattern, parts);
        let n = pat.num_rows();
        let nnz = pat.cols.len();
        IncompleteBlockLdl {
            pat,
            l: vec![Mat3A::ZERO; nnz],
            lt: vec![Mat3A::ZERO; nnz],
            d_inv: vec![Mat3A::IDENTITY; n],
            work: vec![Mat3A::ZERO; n],
            y: vec![Vec3A::ZERO; n],
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
        self.pat.cols.len()
    }

    /// Number of parts of the ordering (1: the natural order).
    #[inline]
    #[must_use]
    pub fn num_parts(&self) -> usize {
        self.pat.num_parts()
    }

    /// Number of separator rows (solved after the parts, sequentially).
    #[inline]
    #[must_use]
    pub fn num_separator_rows(&self) -> usize {
        self.num_rows() - self.pat.separator_start()
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
        filter: impl Fn(usize) -> Filter + Sync,
        kind: Preconditioner,
    ) -> FactorOutcome {
        assert_eq!(
            a.num_rows(),
            self.num_rows(),
            "IncompleteBlockLdl::factor: matrix size differs from the factor's"
        );
        let outcome = match kind {
            Preconditioner::BlockSgs => {
                self.factor_sgs(a, &filter);
                FactorOutcome::Factored { shift: 0.0 }
            }
            Preconditioner::BlockIc0 => self.factor_ic0(a, &filter),
            Preconditioner::BlockJacobi => {
                panic!("IncompleteBlockLdl::factor: block Jacobi has no factor")
            }
        };
        if outcome != FactorOutcome::Failed && self.pat.num_parts() > 1 {
            // Lᵀ by rows for the parts' gathers; one part scatters from `l` instead.
            let (l, src) = (&self.l, &self.pat.upper_src);
            reduce::for_each_chunk(&mut self.lt[..], |first, chunk: &mut [Mat3A]| {
                for (k, t) in chunk.iter_mut().enumerate() {
                    *t = l[src[first + k] as usize].transpose();
                }
            });
        }
        outcome
    }

    /// IC(0) at the lowest shift that does not break down (module doc, "Breakdown").
    fn factor_ic0(
        &mut self,
        a: &BlockCsr,
        filter: &(impl Fn(usize) -> Filter + Sync),
    ) -> FactorOutcome {
        // Start at the level that worked last time (one lower every SHIFT_DECAY_SOLVES
        // solves at a level > 0), then climb on breakdown.
        if self.level > 0 && self.solves_at_level >= SHIFT_DECAY_SOLVES {
            self.level -= 1;
            self.solves_at_level = 0;
        }
        for (level, &alpha) in SHIFT_LEVELS.iter().enumerate().skip(self.level) {
            if self.try_factor_ic0(a, filter, alpha) {
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
        let pat = &self.pat;
        for i in 0..pat.num_rows() {
            let f = filter(pat.perm[i] as usize);
            let (d, _) = Self::filtered_diagonal(a, pat.diag_slot[i] as usize, f);
            self.d_inv[i] = Mat3A::from(invert_diagonal_block(d.as_mat3()).0);
        }
        for i in 0..pat.num_rows() {
            let fi = filter(pat.perm[i] as usize);
            for s in pat.lower(i) {
                let c = pat.cols[s] as usize;
                let fc = filter(pat.perm[c] as usize);
                let m = Self::filtered_off_diagonal(values[pat.src[s] as usize], fi, fc);
                self.l[s] = m * self.d_inv[c];
            }
        }
    }

    /// One IC(0) attempt on `Ã + α diag(Ã)`; false on a breakdown pivot (module doc). The
    /// parts' interiors are factored in parallel (each reads only its own rows), then the
    /// separator rows in order.
    fn try_factor_ic0(
        &mut self,
        a: &BlockCsr,
        filter: &(impl Fn(usize) -> Filter + Sync),
        alpha: f64,
    ) -> bool {
        let pat = &self.pat;
        let rows = FactorRows {
            l: &mut self.l[..],
            d_inv: &mut self.d_inv[..],
            work: &mut self.work[..],
        };
        let sep = pat.separator_start();
        let (interior, _) = rows.split(pat, 0, sep);
        let parts_ok = pat.run_parts(0..pat.num_parts(), interior, &|p, s| {
            let rows = pat.part_rows(p);
            let base = (rows.start, pat.offsets[rows.start] as usize);
            ic0_rows(pat, a, filter, alpha, rows, base, s)
        });
        parts_ok
            && ic0_rows(
                pat,
                a,
                filter,
                alpha,
                sep..pat.num_rows(),
                (0, 0),
                FactorRows {
                    l: &mut self.l[..],
                    d_inv: &mut self.d_inv[..],
                    work: &mut self.work[..],
                },
            )
    }

    /// `out = P⁻¹ r = (I + L)⁻ᵀ D⁻¹ (I + L)⁻¹ r`: the forward solve (the parts in parallel,
    /// then the separator), then the block-diagonal and backward solve (the separator, then
    /// the parts in parallel). Each row's arithmetic is the same for any thread count.
    /// Allocates nothing.
    ///
    /// # Panics
    /// If `r` or `out` does not have `num_rows()` entries.
    pub fn apply(&mut self, r: &[Vec3], out: &mut [Vec3]) {
        self.apply_then(r, out, |_, x| (x, 0.0));
    }

    /// [`IncompleteBlockLdl::apply`] with `out_i = finish(i, (P⁻¹ r)_i).0`, in the same pass
    /// that takes `P⁻¹ r` back to the rows of `A`; returns the sum of `finish(i, ·).1` over the
    /// fixed chunks of [`reduce`], added in chunk order (bit-identical for any thread count).
    ///
    /// # Panics
    /// If `r` or `out` does not have `num_rows()` entries.
    pub fn apply_then(
        &mut self,
        r: &[Vec3],
        out: &mut [Vec3],
        finish: impl Fn(usize, Vec3) -> (Vec3, f64) + Sync + Send,
    ) -> f64 {
        let n = self.num_rows();
        assert!(
            r.len() == n && out.len() == n,
            "IncompleteBlockLdl::apply: wrong lengths"
        );
        if self.num_parts() == 1 {
            self.apply_in_order(&mut Plain(r), out);
            return reduce::sum_chunks_mut(out, |first, chunk: &mut [Vec3]| {
                let mut acc = 0.0;
                for (k, o) in chunk.iter_mut().enumerate() {
                    let (x, part) = finish(first + k, *o);
                    *o = x;
                    acc += part;
                }
                acc
            });
        }
        let IncompleteBlockLdl {
            pat,
            l,
            lt,
            d_inv,
            y,
            ..
        } = self;
        let (pat, l, lt, d_inv) = (&*pat, &l[..], &lt[..], &d_inv[..]);
        let sep = pat.separator_start();
        // (I + L) y = r.
        pat.run_parts(0..pat.num_parts(), &mut y[..sep], &|p, ys: &mut [Vec3A]| {
            let rows = pat.part_rows(p);
            let base = rows.start;
            forward_rows(pat, l, r, rows, ys, base);
            true
        });
        forward_rows(pat, l, r, sep..n, &mut y[..], 0);
        // x = D⁻¹ y − Lᵀ x, rows descending.
        let (interior, separator) = y.split_at_mut(sep);
        backward_rows(pat, lt, d_inv, sep..n, (separator, sep), (&[], n));
        let separator = &*separator;
        pat.run_parts(0..pat.num_parts(), interior, &|p, ys: &mut [Vec3A]| {
            let rows = pat.part_rows(p);
            let base = rows.start;
            backward_rows(pat, lt, d_inv, rows, (ys, base), (separator, sep));
            true
        });
        let (y, iperm) = (&y[..], &pat.iperm);
        reduce::sum_chunks_mut(out, |first, chunk: &mut [Vec3]| {
            let mut acc = 0.0;
            for (k, o) in chunk.iter_mut().enumerate() {
                let i = first + k;
                let (x, part) = finish(i, y[iperm[i] as usize].into());
                *o = x;
                acc += part;
            }
            acc
        })
    }
}

impl IncompleteBlockLdl {
    /// `out = P⁻¹ r` for a factor in the natural order (one part), with `r_i = rhs(i)` read
    /// once, in ascending `i`, by the forward solve: the caller's vector update that produces
    /// `r` runs inside the sweep instead of in a pass of its own. Two sequential sweeps over
    /// `L`: the forward solve `(I + L) y = r` with `w = D⁻¹ y`, then the backward solve
    /// `(I + L)ᵀ x = w` column by column, each solved `x_i` scattered from row `i` of `L`
    /// (`w_c −= L_icᵀ x_i`, `i` descending), so `Lᵀ` is never formed. Every `w_c` receives its
    /// terms in the order of the row-oriented gather (`i` descending), so the bits are those
    /// of [`IncompleteBlockLdl::apply`] in any order of parts. Allocates nothing.
    ///
    /// # Panics
    /// If the factor has more than one part, or `out` does not have `num_rows()` entries.
    pub fn apply_in_order(&mut self, sweep: &mut impl Sweep, out: &mut [Vec3]) {
        let n = self.num_rows();
        assert!(
            self.num_parts() == 1 && out.len() == n,
            "IncompleteBlockLdl::apply_in_order: one part and num_rows() entries"
        );
        let IncompleteBlockLdl {
            pat, l, d_inv, y, ..
        } = self;
        let (offsets, cols) = (&pat.offsets[..], &pat.cols[..]);
        for i in 0..n {
            let mut acc = Vec3A::from(sweep.rhs(i));
            let row = offsets[i] as usize..offsets[i + 1] as usize;
            for (lb, &c) in l[row.clone()].iter().zip(&cols[row]) {
                acc -= *lb * y[c as usize];
            }
            y[i] = acc;
            out[i] = (d_inv[i] * acc).into();
        }
        for i in (0..n).rev() {
            let xi = Vec3A::from(out[i]);
            let row = offsets[i] as usize..offsets[i + 1] as usize;
            for (lb, &c) in l[row.clone()].iter().zip(&cols[row]) {
                let w = &mut out[c as usize];
                *w = (Vec3A::from(*w) - lb.transpose() * xi).into();
            }
            out[i] = sweep.finish(i, xi.into());
        }
    }
}

/// What [`IncompleteBlockLdl::apply_in_order`] reads and writes around its two sweeps.
pub trait Sweep {
    /// Row `i` of the right-hand side, asked once, in ascending `i`, by the forward sweep.
    fn rhs(&mut self, i: usize) -> Vec3;
    /// What to store as row `i` of the output, given `(P⁻¹ r)_i`; called once, in
    /// descending `i`, by the backward sweep, after row `i` has been used.
    fn finish(&mut self, i: usize, x: Vec3) -> Vec3;
}

/// IC(0) of the rows `rows` (module doc), `F_ik`, `L_ik` and `D_i` up-looking. `s` holds the
/// rows from row `base.0` (and the `L` blocks from slot `base.1`) on: a part's own rows, or
/// the whole factor for the separator; every row a part's recurrences read lies in that part.
fn ic0_rows(
    pat: &FactorPattern,
    a: &BlockCsr,
    filter: &impl Fn(usize) -> Filter,
    alpha: f64,
    rows: Range<usize>,
    (base, l_base): (usize, usize),
    s: FactorRows<'_>,
) -> bool {
    let values = a.values();
    let FactorRows { l, d_inv, work: w } = s;
    for i in rows {
        let fi = filter(pat.perm[i] as usize);
        let row = pat.lower(i);
        // w[p]: F_ij of the row's p-th block (a part's row has fewer lower blocks than the
        // part has rows, so its scratch holds them).
        for (p, t) in row.clone().enumerate() {
            let c = pat.cols[t] as usize;
            let fc = filter(pat.perm[c] as usize);
            w[p] = IncompleteBlockLdl::filtered_off_diagonal(values[pat.src[t] as usize], fi, fc);
        }
        let (aii, _) = IncompleteBlockLdl::filtered_diagonal(a, pat.diag_slot[i] as usize, fi);
        let diag = DVec3::new(aii.x_axis.x, aii.y_axis.y, aii.z_axis.z);
        let scale = diag.abs().max_element();
        let mut d = aii + DMat3::from_diagonal(diag * alpha);
        // F_ik, k ascending, from the F_ij of the j < k that rows i and k both hold.
        for (p, t) in row.enumerate() {
            let c = pat.cols[t] as usize;
            let mut f = w[p];
            let terms = pat.update_offsets[t] as usize..pat.update_offsets[t + 1] as usize;
            for &(u, q) in &pat.updates[terms] {
                f -= w[q as usize] * l[u as usize - l_base].transpose();
            }
            w[p] = f;
            let lv = f * d_inv[c - base];
            l[t - l_base] = lv;
            // F_ik L_ikᵀ (= F_ik D_k⁻¹ F_ikᵀ, symmetric up to rounding; D_i is symmetrised
            // below).
            d -= f.as_dmat3() * lv.as_dmat3().transpose();
        }
        let d = (d + d.transpose()) * 0.5;
        match invert_pivot(&d, scale) {
            Some(inv) => d_inv[i - base] = Mat3A::from(inv),
            None => return false,
        }
    }
    true
}

/// `y_i = r_{perm i} − Σ_{c<i} L_ic y_c` for the rows `rows`; `y` holds the rows from `base`
/// on (a part's own rows, or all rows for the separator).
fn forward_rows(
    pat: &FactorPattern,
    l: &[Mat3A],
    r: &[Vec3],
    rows: Range<usize>,
    y: &mut [Vec3A],
    base: usize,
) {
    for i in rows {
        let mut acc = Vec3A::from(r[pat.perm[i] as usize]);
        for t in pat.lower(i) {
            acc -= l[t] * y[pat.cols[t] as usize - base];
        }
        y[i - base] = acc;
    }
}

/// `x_c = D_c⁻¹ y_c − Σ_{i>c} L_icᵀ x_i` (i descending) for the rows `rows`, descending. `y`
/// holds the rows from `base` on: a part's own rows, with the solved separator in
/// `separator` (its rows from `sep` on), or the separator itself (`separator` empty).
fn backward_rows(
    pat: &FactorPattern,
    lt: &[Mat3A],
    d_inv: &[Mat3A],
    rows: Range<usize>,
    (y, base): (&mut [Vec3A], usize),
    (separator, sep): (&[Vec3A], usize),
) {
    for c in rows.rev() {
        let mut x = d_inv[c] * y[c - base];
        for u in pat.upper(c) {
            let i = pat.upper_rows[u] as usize;
            let xi = if i >= sep {
                separator[i - sep]
            } else {
                y[i - base]
            };
            x -= lt[u] * xi;
        }
        y[c - base] = x;
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

/// The plain right-hand side, output unchanged.
struct Plain<'a>(&'a [Vec3]);

impl Sweep for Plain<'_> {
    #[inline]
    fn rhs(&mut self, i: usize) -> Vec3 {
        self.0[i]
    }
    #[inline]
    fn finish(&mut self, _: usize, x: Vec3) -> Vec3 {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::block_csr::tests::{Rng, in_pool, random_spd};

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

    /// IC(0) with a dense scratch row indexed by column, every `j < k` of row `k` taken (the
    /// products with blocks off row `i`'s pattern are zero): the reference for the symbolic
    /// update lists. Natural order, no shift; returns `L` and `D⁻¹`.
    fn dense_scratch_ic0(a: &BlockCsr, f: &[Filter]) -> (Vec<Mat3A>, Vec<Mat3A>) {
        let pat = FactorPattern::new(a.pattern(), 1);
        let n = pat.num_rows();
        let mut l = vec![Mat3A::ZERO; pat.cols.len()];
        let mut d_inv = vec![Mat3A::ZERO; n];
        let mut w = vec![Mat3A::ZERO; n];
        for i in 0..n {
            for t in pat.lower(i) {
                let c = pat.cols[t] as usize;
                w[c] = IncompleteBlockLdl::filtered_off_diagonal(
                    a.values()[pat.src[t] as usize],
                    f[i],
                    f[c],
                );
            }
            let (mut d, _) =
                IncompleteBlockLdl::filtered_diagonal(a, pat.diag_slot[i] as usize, f[i]);
            let scale = DVec3::new(d.x_axis.x, d.y_axis.y, d.z_axis.z)
                .abs()
                .max_element();
            for t in pat.lower(i) {
                let c = pat.cols[t] as usize;
                let mut x = w[c];
                for u in pat.lower(c) {
                    x -= w[pat.cols[u] as usize] * l[u].transpose();
                }
                w[c] = x;
                l[t] = x * d_inv[c];
                d -= x.as_dmat3() * l[t].as_dmat3().transpose();
            }
            for t in pat.lower(i) {
                w[pat.cols[t] as usize] = Mat3A::ZERO;
            }
            let d = (d + d.transpose()) * 0.5;
            d_inv[i] = Mat3A::from(invert_pivot(&d, scale).expect("an SPD test matrix"));
        }
        (l, d_inv)
    }

    #[test]
    fn symbolic_terms_give_the_dense_scratch_factor() {
        for seed in 0..8 {
            let n = 60;
            let a = random_spd(n, 3, 300 + seed);
            let mut rng = Rng::new(400 + seed);
            let f = filters(n, &mut rng);
            let mut ldl = IncompleteBlockLdl::new(a.pattern());
            let outcome = ldl.factor(&a, &f, Preconditioner::BlockIc0);
            assert_eq!(outcome, FactorOutcome::Factored { shift: 0.0 });
            let (l, d_inv) = dense_scratch_ic0(&a, &f);
            // `==` on the entries: the same values (a skipped zero product can only flip the
            // sign of a zero).
            assert_eq!(ldl.l, l, "seed {seed}");
            assert_eq!(ldl.d_inv, d_inv, "seed {seed}");
        }
        // On a cloth grid most of the dense loop's products are with zero blocks.
        let pat = FactorPattern::new(&grid_pattern(65), 1);
        let dense: usize = pat.cols.iter().map(|&k| pat.lower(k as usize).len()).sum();
        let kept = pat.updates.len();
        assert!(3 * kept < dense, "{kept} of {dense} products kept");
    }

    /// The sweeps ask for each right-hand-side row once, ascending, and hand each solved row
    /// back once, descending, after it has been used; the result is that of `apply`.
    #[test]
    fn apply_in_order_reads_and_finishes_each_row_once_in_order() {
        struct Recorder<'a> {
            r: &'a [Vec3],
            asked: Vec<usize>,
            finished: Vec<usize>,
        }
        impl Sweep for Recorder<'_> {
            fn rhs(&mut self, i: usize) -> Vec3 {
                self.asked.push(i);
                self.r[i]
            }
            fn finish(&mut self, i: usize, x: Vec3) -> Vec3 {
                self.finished.push(i);
                x * 2.0
            }
        }
        let n = 50;
        let a = random_spd(n, 3, 77);
        let mut rng = Rng::new(78);
        let f = filters(n, &mut rng);
        let r: Vec<Vec3> = (0..n).map(|_| rng.vec3()).collect();
        let mut ldl = IncompleteBlockLdl::new(a.pattern());
        ldl.factor(&a, &f, Preconditioner::BlockIc0);
        let mut plain = vec![Vec3::ZERO; n];
        ldl.apply(&r, &mut plain);
        let mut rec = Recorder {
            r: &r,
            asked: Vec::new(),
            finished: Vec::new(),
        };
        let mut out = vec![Vec3::ZERO; n];
        ldl.apply_in_order(&mut rec, &mut out);
        assert_eq!(rec.asked, (0..n).collect::<Vec<_>>());
        assert_eq!(rec.finished, (0..n).rev().collect::<Vec<_>>());
        assert!(out.iter().zip(&plain).all(|(o, p)| *o == *p * 2.0));
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

    /// Inverse of a dense row-major `m × m` matrix by Gauss–Jordan with partial pivoting.
    fn dense_inverse(mut a: Vec<f64>, m: usize) -> Vec<f64> {
        let mut inv = vec![0.0; m * m];
        for i in 0..m {
            inv[i * m + i] = 1.0;
        }
        for col in 0..m {
            let p = (col..m)
                .max_by(|&x, &y| a[x * m + col].abs().total_cmp(&a[y * m + col].abs()))
                .expect("a non-empty range");
            for k in 0..m {
                a.swap(col * m + k, p * m + k);
                inv.swap(col * m + k, p * m + k);
            }
            let d = a[col * m + col];
            for k in 0..m {
                a[col * m + k] /= d;
                inv[col * m + k] /= d;
            }
            for row in (0..m).filter(|&r| r != col) {
                let f = a[row * m + col];
                for k in 0..m {
                    a[row * m + k] -= f * a[col * m + k];
                    inv[row * m + k] -= f * inv[col * m + k];
                }
            }
        }
        inv
    }

    #[test]
    fn ic0_in_parts_matches_the_matrix_on_its_pattern() {
        // IC(0) in any order: P = (I + L) D (I + L)ᵀ equals A on the pattern of A.
        let n = 30;
        let a = random_spd(n, 2, 17);
        let m = 3 * n;
        for parts in [1, 3] {
            let mut ldl = IncompleteBlockLdl::with_parts(a.pattern(), parts);
            assert_eq!(ldl.num_parts(), parts);
            assert_eq!(
                ldl.factor_unfiltered(&a, Preconditioner::BlockIc0),
                FactorOutcome::Factored { shift: 0.0 }
            );
            // P⁻¹ column by column, then P.
            let mut p_inv = vec![0.0f64; m * m];
            for k in 0..m {
                let mut e = vec![Vec3::ZERO; n];
                e[k / 3][k % 3] = 1.0;
                let mut out = vec![Vec3::ZERO; n];
                ldl.apply(&e, &mut out);
                for j in 0..m {
                    p_inv[j * m + k] = f64::from(out[j / 3][j % 3]);
                }
            }
            let p = dense_inverse(p_inv, m);
            let scale = a
                .values()
                .iter()
                .flat_map(|b| b.to_cols_array())
                .fold(0.0f32, |x, y| x.max(y.abs()));
            let mut worst = 0.0f64;
            for i in 0..n {
                for (&j, slot) in a.pattern().row_cols(i).iter().zip(a.pattern().row_range(i)) {
                    let b = a.values()[slot];
                    for (r, c) in (0..3).flat_map(|r| (0..3).map(move |c| (r, c))) {
                        let pij = p[(3 * i + r) * m + 3 * j as usize + c];
                        worst = worst.max((pij - f64::from(b.col(c)[r])).abs());
                    }
                }
            }
            assert!(
                worst <= 1e-3 * f64::from(scale),
                "parts {parts}: {worst} of {scale}"
            );
        }
    }

    /// The block pattern of a `side × side` grid with both diagonals and the wing pairs two
    /// rows apart (the reach of a cloth's hinges).
    fn grid_pattern(side: u32) -> BlockPattern {
        let mut pairs = Vec::new();
        for r in 0..side {
            for c in 0..side {
                let v = r * side + c;
                for (dr, dc) in [(0, 1), (1, -1), (1, 0), (1, 1), (2, 0), (0, 2), (2, 1)] {
                    let (r2, c2) = (r as i64 + dr, c as i64 + dc);
                    if r2 < side as i64 && (0..side as i64).contains(&c2) {
                        pairs.push((v, (r2 as u32) * side + c2 as u32));
                    }
                }
            }
        }
        BlockPattern::from_pairs((side * side) as usize, pairs)
    }

    #[test]
    fn parts_follow_the_size_and_keep_the_separator_small() {
        // The solver's factor: one part, the natural order, at any size.
        for side in [33, 101] {
            let ldl = IncompleteBlockLdl::new(&grid_pattern(side));
            assert_eq!((ldl.num_parts(), ldl.num_separator_rows()), (1, 0));
        }
        // Below the parallel threshold the suggestion is one part too.
        assert_eq!(suggested_parts(&grid_pattern(33)), 1);
        for side in [65, 101, 129] {
            let pattern = grid_pattern(side);
            let ldl = IncompleteBlockLdl::with_parts(&pattern, suggested_parts(&pattern));
            let n = (side * side) as usize;
            assert_eq!(
                ldl.num_parts(),
                (n / PART_ROWS).clamp(2, MAX_PARTS),
                "side {side}"
            );
            // About two grid rows a boundary (one more vertex where it falls inside a row).
            let boundaries = ldl.num_parts() - 1;
            let sep = ldl.num_separator_rows();
            assert!(
                (2 * side as usize * boundaries..=(2 * side as usize + 1) * boundaries)
                    .contains(&sep),
                "side {side}: {sep}"
            );
        }
        // Random couplings across the whole range: no partition keeps a small separator.
        let a = random_spd(5000, 2, 3);
        assert_eq!(suggested_parts(a.pattern()), 1);
    }

    #[test]
    fn factor_and_apply_bits_independent_of_thread_count() {
        let n = 20_000;
        let a = random_spd(n, 2, 41);
        let mut rng = Rng::new(42);
        let f = filters(n, &mut rng);
        let r: Vec<Vec3> = (0..n).map(|_| rng.vec3()).collect();
        let run = |threads| {
            in_pool(threads, || {
                let mut ldl = IncompleteBlockLdl::with_parts(a.pattern(), 5);
                let outcome = ldl.factor(&a, &f, Preconditioner::BlockIc0);
                let mut out = vec![Vec3::ZERO; n];
                ldl.apply(&r, &mut out);
                (outcome, out)
            })
        };
        let (outcome, one) = run(1);
        assert!(matches!(outcome, FactorOutcome::Factored { .. }));
        for threads in [2, 4] {
            let (o, many) = run(threads);
            assert_eq!(o, outcome);
            assert!(
                one.iter()
                    .zip(&many)
                    .all(|(x, y)| x.to_array().map(f32::to_bits) == y.to_array().map(f32::to_bits)),
                "{threads} threads"
            );
        }
    }

    #[test]
    fn factors_are_symmetric_positive_definite() {
        for (kind, parts) in [
            (Preconditioner::BlockSgs, 1),
            (Preconditioner::BlockIc0, 1),
            (Preconditioner::BlockSgs, 3),
            (Preconditioner::BlockIc0, 3),
        ] {
            let n = 30;
            let a = random_spd(n, 3, 21);
            let mut rng = Rng::new(22);
            let f = filters(n, &mut rng);
            let mut ldl = IncompleteBlockLdl::with_parts(a.pattern(), parts);
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

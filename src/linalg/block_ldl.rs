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
//! # Parallel solves: two parts and a separator
//! The recurrences run row after row, so in the natural order the factorisation and both
//! triangular solves are sequential. The factor is therefore built in a *domain-decomposition
//! order* (a symmetric permutation of `Ã`, fixed at creation from the pattern alone): the rows
//! of `A` are cut at the middle of the natural order into two halves; the rows of the first
//! half from the first one that couples to a row of the second half on are the *separator*;
//! the rest of the first half is part 0, the second half is part 1. In the natural order the
//! three are contiguous ranges, `[0, a)`, `[a, b)`, `[b, n)`. The factor's order is part 0
//! ascending, part 1 *descending*, then the separator ascending:
//!
//! ```text
//! natural   part 0 ──►│ separator │◄── part 1
//! factor    part 0 ascending, part 1 descending, separator ascending
//! ```
//!
//! No row of part 0 couples to a row of part 1, so on the pattern (IC(0) adds no fill-in) each
//! part's rows of `L` reach only its own rows, and the separator's reach anything before them:
//!
//! ```text
//! factor                        the two parts in parallel, then the separator rows in order
//! forward   (I + L) y = r       the two parts in parallel, then the separator rows in order
//! backward  (I + L)ᵀ x = D⁻¹ y  the separator rows, then the two parts in parallel
//! ```
//!
//! This is IC(0) of the permuted matrix, a different incomplete factor from the natural
//! order's (the dropped fill-in differs), so it changes the iterates, not the method. Both
//! parts are eliminated *towards* the separator: a part's last rows are those next to it.
//! Measured on the drapes (`docs/methods/filtered-pcg-cost.md`), that costs a few per cent
//! more CG iterations than the natural order, where part 1 taken ascending (away from the
//! separator) costs about three times as many, and more parts cost more again.
//!
//! The split depends on the pattern alone, never on the thread count, so the results are the
//! same for any number of threads. [`IncompleteBlockLdl::new`] (the solver's) uses it from
//! [`TWO_PART_MIN_ROWS`] rows on, while the separator holds at most `1 / SEPARATOR_SHARE` of
//! the rows; otherwise the natural order. On a cloth grid numbered row by row the separator
//! is about two grid rows (the hinges' wing pairs reach two rows); a mesh whose numbering
//! couples distant rows gives a large separator and keeps the natural order.
//!
//! The solves keep the caller's vectors in the natural order: row `i` of the factor is row
//! `perm[i]` of `A`, and the columns of `L` are stored a second time as rows of `A`, so a
//! part's sweep reads and writes only its own contiguous range of every vector, and the
//! forward sweep can carry the caller's per-row work ([`Sweep`]: the CG update of `dv` and
//! `r` before a row is read, the filter and `r · s` after it is solved). Both solves are
//! sweeps over the rows of `L`: the forward one `y_i = r_i − Σ_c L_ic y_c` with `w_i = D_i⁻¹
//! y_i`, the backward one column-oriented, each solved `x_i` scattered from row `i` of `L`
//! (`w_c −= L_icᵀ x_i`, `i` descending), so `Lᵀ` is never formed; the separator's scatter
//! reaches the parts' rows before their own backward sweeps start.
//!
//! The factorisation and the solves are written as steps (each part's rows, then the
//! separator's: [`FactorShape`], [`PartSolves`]) that this module runs with `join` and that
//! `super::pcg_crew` runs as the phases of its crew, on the storage lent out by rows
//! ([`FactorStorage`]); the same functions either way, so the same bits.
//!
//! # The backward solve's working vector
//! The backward solve's scatter stores `w_c` and a later row (often the next) loads it again.
//! `w` is therefore a vector of its own with 16-byte rows (`Vec3A`), `D⁻¹ y` as the forward
//! solve leaves it, and the caller's output row is written once, from `sweep.finish`. Kept in
//! the caller's 12-byte `Vec3` rows, each update was compiled as a store of bytes 0–8 and one
//! of bytes 8–12, and the next load of the row as bytes 0–4 and 4–12: a load that spans two
//! stores cannot take its data from the store buffer, so it waited for both stores to reach
//! the cache. With whole 16-byte rows the store and the load are one instruction each and the
//! load is forwarded. The arithmetic is the same (the fourth lane is never read), so are the
//! bits.
//!
//! # The backward solve's scatter order
//! Each row scatters its blocks in *descending* column order. A row's columns are distinct, so
//! every `w_c` still gets one update from each row, and the updates of one `w_c` still come
//! in descending rows: the order within a row changes no value. What it changes is the
//! dependency chain between rows: the row solved next reads its `x` from `w`, and on a grid
//! its own column is usually the largest of the row before it. Scattered last (ascending
//! columns), that update waited behind the row's other blocks' work, and the next row with
//! it; scattered first, the next row's `x` is ready while the rest of the row's stores
//! drain. Measured in `docs/methods/filtered-pcg-cost.md`.

//! # The symbolic factorisation
//! In `F_ik = Ã_ik − Σ_{j<k} F_ij L_kjᵀ` only the `j` that rows `i` and `k` both hold add
//! anything. The pattern lists them once, at creation, for every block `(i, k)` (as the slot
//! of `L_kj` and the place of `j` in row `i`), so the factorisation multiplies no zero blocks:
//! on a cloth grid with hinge wing pairs about a third of the products of a dense scratch row
//! are left. The terms are taken in ascending `j`, the order of the scratch-row loop, so the
//! factor's values are the same.
//!
//! # The pivot's sum in `f64` lanes
//! Each block of a row subtracts `F_ik L_ikᵀ` from the pivot `D_i`, accumulated in `f64`. As
//! `DMat3` arithmetic that is 27 scalar products and 27 scalar sums and differences a block,
//! after 18 scalar conversions of the two `f32` blocks. The sum is kept instead as three
//! columns of four `f64` lanes (the fourth zero, never read), and column `k` of the product is
//! formed as `(F₀ l₀ₖ + F₁ l₁ₖ) + F₂ l₂ₖ` on whole columns (`Fⱼ` the columns of `F_ik`, `lⱼₖ`
//! entry `k` of column `j` of `L_ik`): the order of glam's `DMat3` product, lane by lane, so
//! the same bits, in a form the compiler turns into packed `f64` products (four lanes in the
//! AVX copy, `super::isa`). Measured in `docs/methods/filtered-pcg-cost.md`.
//!
//! # Numbers and determinism
//! Blocks are `f32` (`L`, `D⁻¹`) like `A`: the factor only steers the
//! iteration, and its round-off changes how fast CG converges, not what it converges to. Each
//! pivot block `D_i` is accumulated, checked and inverted in `f64`, where the cancellation of
//! the Schur complement happens (`A = M − h D − h² K` of a stiff cloth cancels four to five
//! digits in its smooth modes). Each row's arithmetic is fixed by the order above, whichever
//! thread runs it, and the sums a solve returns are added per range (separator, part 0,
//! part 1) in that order, so the factor and the solves are bit-identical for any thread
//! count. Storage (the ordering, the lower pattern, the symbolic update lists, `L`, `D⁻¹`,
//! one scratch row and the solve vector) is allocated once, at creation; `factor` and the
//! solves allocate nothing.
#![deny(unsafe_code)]

use crate::runtime::executor::join;
use std::ops::Range;

use glam::{DMat3, DVec3, Mat3, Mat3A, Vec3, Vec3A};

use super::block_csr::BlockCsr;
use super::isa::with_best_isa;
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

/// Rows from which [`IncompleteBlockLdl::new`] factors in two parts (module doc, "Parallel
/// solves"): the linear algebra's parallel threshold, below which its other loops run on the
/// calling thread too and a fork-join would cost about what a part's sweep does. Smaller
/// systems keep the natural order and its fewer CG iterations.
pub const TWO_PART_MIN_ROWS: usize = super::reduce::PARALLEL_MIN_ROWS;

/// Two parts are used only while the separator holds at most `1 / SEPARATOR_SHARE` of the
/// rows; otherwise the natural order.
const SEPARATOR_SHARE: usize = 8;

/// The symbolic part of the factor: the ordering and the pattern of `L`, built once.
#[derive(Clone, Debug)]
struct FactorPattern {
    /// `perm[i]`: the row of `A` (vertex) that is row `i` of the factor.
    perm: Vec<u32>,
    /// `part_start[p]..part_start[p + 1]`: the rows of part `p` (one or two parts); the last
    /// entry is the first separator row.
    part_start: Vec<u32>,
    /// `(a, b)`: in the natural order, part 0 is `[0, a)`, the separator `[a, b)` and part 1
    /// `[b, n)` (`(n, n)` with one part).
    natural: (usize, usize),
    /// `offsets[i]..offsets[i + 1]`: row `i` of the strict lower part, in `cols`, `src` and `l`.
    offsets: Vec<u32>,
    /// Column (factor row) of each strict-lower block, ascending within a row.
    cols: Vec<u32>,
    /// The same column as a row of `A` (`perm[cols[s]]`): what the solves index.
    natural_cols: Vec<u32>,
    /// Slot in `A` of each strict-lower block: `A_{perm[i], perm[cols[s]]}`.
    src: Vec<u32>,
    /// Slot in `A` of each diagonal block `A_{perm[i], perm[i]}`.
    diag_slot: Vec<u32>,
    /// `update_offsets[t]..update_offsets[t + 1]`: the terms `F_ij L_kjᵀ` of block `t = (i, k)`
    /// in `updates`: the `j` that rows `i` and `k` both hold, ascending.
    update_offsets: Vec<u32>,
    /// Each term as (slot of `L_kj`, position of `j` in row `i`'s strict lower part).
    updates: Vec<(u32, u32)>,
}

impl FactorPattern {
    fn new(pattern: &BlockPattern, two_parts: bool) -> Self {
        let n = pattern.num_rows();
        let (perm, part_start, natural) = ordering(pattern, two_parts);
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
        let natural_cols = cols.iter().map(|&c| perm[c as usize]).collect();
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
            part_start,
            natural,
            offsets,
            cols,
            natural_cols,
            src,
            diag_slot,
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
}

/// The separator of the two-part split of `pattern` (module doc, "Parallel solves"): `(a, b)`
/// with `b = n / 2` and `a` the first row before `b` that couples to a row from `b` on (`b`
/// when none does).
fn two_part_split(pattern: &BlockPattern) -> (usize, usize) {
    let b = pattern.num_rows() / 2;
    let a = (0..b)
        .find(|&v| pattern.row_cols(v).iter().any(|&u| u as usize >= b))
        .unwrap_or(b);
    (a, b)
}

/// Whether [`IncompleteBlockLdl::new`] factors `pattern` in two parts: from
/// [`TWO_PART_MIN_ROWS`] rows on, with a separator of at most `1 / SEPARATOR_SHARE` of them.
#[must_use]
pub fn uses_two_parts(pattern: &BlockPattern) -> bool {
    let n = pattern.num_rows();
    let (a, b) = two_part_split(pattern);
    n >= TWO_PART_MIN_ROWS && (b - a) * SEPARATOR_SHARE <= n
}

/// The factor's order (module doc, "Parallel solves"): with two parts, part 0 ascending, part 1
/// descending, then the separator ascending; the first row of each part (the last entry: the
/// separator's first row); and the natural ranges `(a, b)` of the separator.
fn ordering(pattern: &BlockPattern, two_parts: bool) -> (Vec<u32>, Vec<u32>, (usize, usize)) {
    let n = pattern.num_rows();
    if !two_parts || n < 2 {
        return ((0..n as u32).collect(), vec![0, n as u32], (n, n));
    }
    let (a, b) = two_part_split(pattern);
    let mut perm: Vec<u32> = (0..a as u32).collect();
    perm.extend((b as u32..n as u32).rev());
    perm.extend(a as u32..b as u32);
    let part_start = vec![0, a as u32, (a + n - b) as u32];
    (perm, part_start, (a, b))
}

/// An incomplete block `(I + L) D (I + L)ᵀ` factor, preallocated on a block pattern.
#[derive(Clone, Debug)]
pub struct IncompleteBlockLdl {
    pat: FactorPattern,
    /// Strict-lower blocks `L_ik` (`Mat3A`: the SIMD products are the factorisation's and the
    /// triangular solves' inner loops).
    l: Vec<Mat3A>,
    /// `D_i⁻¹`, in the factor's order.
    d_inv: Vec<Mat3A>,
    /// Dense scratch row of `F_ik` (zero between rows).
    work: Vec<Mat3A>,
    /// The forward solve's `y`, by rows of `A`.
    y: Vec<Vec3A>,
    /// The backward solve's working vector (`D⁻¹ y`, then `x`), by rows of `A`: 16-byte
    /// rows, so that its scatter's stores and the next row's loads are whole vectors (module
    /// doc, "The backward solve's working vector").
    x: Vec<Vec3A>,
    /// The shift of the next IC(0) attempt.
    levels: ShiftLevels,
}

/// Which shift the next IC(0) factorisation tries first (module doc, "Breakdown").
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ShiftLevels {
    /// Index in `SHIFT_LEVELS` of the first IC(0) attempt of the next factorisation.
    level: usize,
    /// Factorisations done at `level` since it was entered.
    solves_at_level: u32,
}

impl ShiftLevels {
    /// Runs `attempt(α)` (one IC(0) of `Ã + α diag(Ã)`, true unless it broke down) from the
    /// level that worked last time (one lower every `SHIFT_DECAY_SOLVES` solves at a level
    /// above 0) up, until an attempt succeeds.
    pub(crate) fn factor(&mut self, mut attempt: impl FnMut(f64) -> bool) -> FactorOutcome {
        if self.level > 0 && self.solves_at_level >= SHIFT_DECAY_SOLVES {
            self.level -= 1;
            self.solves_at_level = 0;
        }
        for (level, &alpha) in SHIFT_LEVELS.iter().enumerate().skip(self.level) {
            if attempt(alpha) {
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
}

/// The mutable rows of one part during the factorisation: its blocks of `L`, `D⁻¹` and
/// scratch, starting at its first row.
struct FactorRows<'a> {
    l: &'a mut [Mat3A],
    d_inv: &'a mut [Mat3A],
    work: &'a mut [Mat3A],
}

impl FactorRows<'_> {
    /// Splits the rows that start at factor row `first` at factor row `mid`.
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

impl IncompleteBlockLdl {
    /// Storage for the strict lower part of `pattern` in the solver's order: two parts and a
    /// separator when [`uses_two_parts`] says so, else the natural order (module doc,
    /// "Parallel solves"). Values are set by [`IncompleteBlockLdl::factor`].
    #[must_use]
    pub fn new(pattern: &BlockPattern) -> Self {
        Self::with_order(pattern, uses_two_parts(pattern))
    }

    /// [`IncompleteBlockLdl::new`] in the natural order (one part, sequential solves).
    #[must_use]
    pub fn natural(pattern: &BlockPattern) -> Self {
        Self::with_order(pattern, false)
    }

    /// [`IncompleteBlockLdl::new`] in two parts and a separator, whatever the size of either.
    #[must_use]
    pub fn in_two_parts(pattern: &BlockPattern) -> Self {
        Self::with_order(pattern, true)
    }

    fn with_order(pattern: &BlockPattern, two_parts: bool) -> Self {
        let pat = FactorPattern::new(pattern, two_parts);
        let n = pat.num_rows();
        let nnz = pat.cols.len();
        IncompleteBlockLdl {
            pat,
            l: vec![Mat3A::ZERO; nnz],
            d_inv: vec![Mat3A::IDENTITY; n],
            work: vec![Mat3A::ZERO; n],
            y: vec![Vec3A::ZERO; n],
            x: vec![Vec3A::ZERO; n],
            levels: ShiftLevels::default(),
        }
    }

    /// Number of block rows.
    #[inline]
    #[must_use]
    pub fn num_rows(&self) -> usize {
        self.d_inv.len()
    }

    /// The shift the next factorisation tries first: state that one solve leaves for the next.
    #[must_use]
    pub(crate) fn shift_levels(&self) -> ShiftLevels {
        self.levels
    }

    /// Puts back shift levels read by [`IncompleteBlockLdl::shift_levels`].
    pub(crate) fn set_shift_levels(&mut self, levels: ShiftLevels) {
        self.levels = levels;
    }

    /// Number of strict-lower blocks stored.
    #[inline]
    #[must_use]
    pub fn num_lower_blocks(&self) -> usize {
        self.pat.cols.len()
    }

    /// Number of parts of the ordering (1: the natural order; 2).
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
        self.factor_with(a, |i| &filters[i], kind)
    }

    /// [`IncompleteBlockLdl::factor`] with every vertex free (`Ã = A`).
    ///
    /// # Panics
    /// As [`IncompleteBlockLdl::factor`].
    pub fn factor_unfiltered(&mut self, a: &BlockCsr, kind: Preconditioner) -> FactorOutcome {
        self.factor_with(a, |_| &Filter::Free, kind)
    }

    pub(crate) fn factor_with<'f>(
        &mut self,
        a: &BlockCsr,
        filter: impl Fn(usize) -> &'f Filter + Sync,
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
            Preconditioner::BlockIc0 => self.factor_ic0(a, &filter),
            Preconditioner::BlockJacobi => {
                panic!("IncompleteBlockLdl::factor: block Jacobi has no factor")
            }
        }
    }

    /// IC(0) at the lowest shift that does not break down (module doc, "Breakdown").
    fn factor_ic0<'f>(
        &mut self,
        a: &BlockCsr,
        filter: &(impl Fn(usize) -> &'f Filter + Sync),
    ) -> FactorOutcome {
        let IncompleteBlockLdl {
            pat,
            l,
            d_inv,
            work,
            levels,
            ..
        } = self;
        let shape = FactorShape { pat };
        levels.factor(|alpha| {
            let all = FactorRows { l, d_inv, work };
            shape.try_factor_ic0(a, filter, alpha, all)
        })
    }

    /// `Ã_ii` in `f64` (symmetrised) and its scale `c_i` (largest diagonal entry of `A_ii`).
    #[inline(always)] // into ic0_rows's AVX copy (`super::isa`)
    fn filtered_diagonal(a: &BlockCsr, slot: usize, f: &Filter) -> (DMat3, f64) {
        let b = a.block_a(slot).as_dmat3();
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
    #[inline(always)] // into ic0_rows's AVX copy (`super::isa`)
    fn filtered_off_diagonal(m: Mat3, fi: &Filter, fk: &Filter) -> Mat3A {
        match (fi, fk) {
            (Filter::Free, Filter::Free) => Mat3A::from(m),
            (Filter::Fixed, _) | (_, Filter::Fixed) => Mat3A::ZERO,
            _ => Mat3A::from(fi.matrix() * m * fk.matrix()),
        }
    }

    /// [`IncompleteBlockLdl::filtered_off_diagonal`] of `A`'s block `slot`, a free pair's
    /// read straight into a `Mat3A` ([`BlockCsr::block_a`]; the same lanes).
    #[inline(always)] // into ic0_rows's AVX copy (`super::isa`)
    fn filtered_off_diagonal_at(a: &BlockCsr, slot: usize, fi: &Filter, fk: &Filter) -> Mat3A {
        match (fi, fk) {
            (Filter::Free, Filter::Free) => a.block_a(slot),
            _ => Self::filtered_off_diagonal(a.values()[slot], fi, fk),
        }
    }

    /// Block SGS: `D_i = Ã_ii` (inverted by the block-Jacobi rules), `L_ik = Ã_ik D_k⁻¹`.
    fn factor_sgs<'f>(&mut self, a: &BlockCsr, filter: &impl Fn(usize) -> &'f Filter) {
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

    /// `out = P⁻¹ r = (I + L)⁻ᵀ D⁻¹ (I + L)⁻¹ r` ([`IncompleteBlockLdl::sweep`] with `r` as
    /// it is). Allocates nothing.
    ///
    /// # Panics
    /// If `r` or `out` does not have `num_rows()` entries.
    pub fn apply(&mut self, r: &[Vec3], out: &mut [Vec3]) {
        self.apply_then(r, out, |_, x| (x, 0.0));
    }

    /// [`IncompleteBlockLdl::apply`] with `out_i = finish(i, (P⁻¹ r)_i).0`; returns the sum of
    /// `finish(i, ·).1` in the order of [`IncompleteBlockLdl::sweep`] (bit-identical for any
    /// thread count).
    ///
    /// # Panics
    /// If `r` or `out` does not have `num_rows()` entries.
    pub fn apply_then(
        &mut self,
        r: &[Vec3],
        out: &mut [Vec3],
        finish: impl Fn(usize, Vec3) -> (Vec3, f64) + Sync,
    ) -> f64 {
        assert_eq!(
            r.len(),
            self.num_rows(),
            "IncompleteBlockLdl::apply: wrong lengths"
        );
        self.sweep(Plain { r, finish: &finish }, out)
    }

    /// `out = P⁻¹ r` with `r_i = sweep.rhs(i)` read once a row by the forward solve, and `out_i`
    /// the first value of `sweep.finish(i, (P⁻¹ r)_i)`; returns the sum of the second values.
    /// The caller's work on a row (an update that produces `r_i`, a filter and a product of
    /// the result) thus runs inside the solves instead of in passes of its own (module doc,
    /// "Parallel solves").
    ///
    /// In the natural order: the forward solve rows ascending, then the backward solve rows
    /// descending, the sum in that order. In two parts: the forward solves of the parts in
    /// parallel (part 0 ascending, part 1 descending) and of the separator; the backward solve
    /// of the separator; then the backward solves of the parts in parallel; the sum is the
    /// separator's, plus part 0's, plus part 1's. `sweep` is split at the natural rows `a` and
    /// `b` ([`Sweep::split_at`]), one piece a range. Allocates nothing.
    ///
    /// # Panics
    /// If `out` does not have `num_rows()` entries.
    pub fn sweep<S: Sweep>(&mut self, sweep: S, out: &mut [Vec3]) -> f64 {
        let n = self.num_rows();
        assert_eq!(out.len(), n, "IncompleteBlockLdl::sweep: wrong length");
        let (parts, y, x) = self.part_solves();
        if parts.ldl.pat.num_parts() == 1 {
            let mut sweep = sweep;
            parts.ldl.forward(0..n, &mut sweep, (y, x), 0);
            return parts.ldl.backward(0..n, &mut sweep, (x, out), 0);
        }
        let (a, b) = parts.ldl.pat.natural;
        let (mut s0, rest) = sweep.split_at(a);
        let (mut separator, mut s1) = rest.split_at(b);
        {
            let (y0, y_rest) = y.split_at_mut(a);
            let y1 = &mut y_rest[b - a..];
            let (x0, x_rest) = x.split_at_mut(a);
            let x1 = &mut x_rest[b - a..];
            join(
                || parts.forward_part(0, &mut s0, y0, x0),
                || parts.forward_part(1, &mut s1, y1, x1),
            );
        }
        let dot = parts.separator(&mut separator, y, x, out);
        let (x0, x_rest) = x.split_at_mut(a);
        let x1 = &mut x_rest[b - a..];
        let (o0, o_rest) = out.split_at_mut(a);
        let o1 = &mut o_rest[b - a..];
        let (dot0, dot1) = join(
            || parts.backward_part(0, &mut s0, x0, o0),
            || parts.backward_part(1, &mut s1, x1, o1),
        );
        dot + dot0 + dot1
    }

    /// The solves of [`IncompleteBlockLdl::sweep`] one step at a time, for a caller that
    /// runs the two parts on threads of its own (`super::crew`), and the vectors they use
    /// (by rows of `A`): the forward solve's `y` and the backward solve's working vector.
    pub(crate) fn part_solves(&mut self) -> (PartSolves<'_>, &mut [Vec3A], &mut [Vec3A]) {
        let IncompleteBlockLdl {
            pat,
            l,
            d_inv,
            y,
            x,
            ..
        } = self;
        let ldl = Solves { pat, l, d_inv };
        (PartSolves { ldl }, &mut y[..], &mut x[..])
    }

    /// The factor's storage, for a caller that factors and solves it in steps on threads of
    /// its own (`super::pcg_crew`).
    pub(crate) fn storage(&mut self) -> FactorStorage<'_> {
        let IncompleteBlockLdl {
            pat,
            l,
            d_inv,
            work,
            y,
            x,
            levels,
        } = self;
        FactorStorage {
            shape: FactorShape { pat },
            l,
            d_inv,
            work,
            y,
            x,
            levels,
        }
    }
}

/// The steps of the two-part solves ([`IncompleteBlockLdl::sweep`]): each part's forward
/// solve, the separator's two solves, each part's backward solve. Every row's arithmetic is
/// the same whichever thread runs a step; the steps must run in that order, each part's
/// after the separator's before it.
pub(crate) struct PartSolves<'a> {
    ldl: Solves<'a>,
}

impl PartSolves<'_> {
    /// The rows of `A` of part `p` (0: `[0, a)`, 1: `[b, n)`), a contiguous range of every
    /// vector.
    pub(crate) fn natural_rows(&self, p: usize) -> Range<usize> {
        let (a, b) = self.ldl.pat.natural;
        if p == 0 {
            0..a
        } else {
            b..self.ldl.pat.num_rows()
        }
    }

    /// The rows of `A` of the separator, `[a, b)`.
    pub(crate) fn separator_rows(&self) -> Range<usize> {
        let (a, b) = self.ldl.pat.natural;
        a..b
    }

    /// The forward solve of part `p`; `y` and the working vector `x` hold its rows
    /// ([`Self::natural_rows`]).
    pub(crate) fn forward_part(
        &self,
        p: usize,
        sweep: &mut impl Sweep,
        y: &mut [Vec3A],
        x: &mut [Vec3A],
    ) {
        let base = self.natural_rows(p).start;
        self.ldl
            .forward(self.ldl.pat.part_rows(p), sweep, (y, x), base);
    }

    /// The separator's forward and backward solves (after both parts' forward solves);
    /// `y`, the working vector `x` and `out` are whole. Returns the separator's sum of
    /// [`Sweep::finish`] terms.
    pub(crate) fn separator(
        &self,
        sweep: &mut impl Sweep,
        y: &mut [Vec3A],
        x: &mut [Vec3A],
        out: &mut [Vec3],
    ) -> f64 {
        let rows = self.ldl.pat.separator_start()..self.ldl.pat.num_rows();
        self.ldl.forward(rows.clone(), sweep, (y, &mut *x), 0);
        self.ldl.backward(rows, sweep, (x, out), 0)
    }

    /// The backward solve of part `p` (after the separator's); the working vector `x` and
    /// `out` hold its rows. Returns the part's sum of [`Sweep::finish`] terms.
    pub(crate) fn backward_part(
        &self,
        p: usize,
        sweep: &mut impl Sweep,
        x: &mut [Vec3A],
        out: &mut [Vec3],
    ) -> f64 {
        let base = self.natural_rows(p).start;
        self.ldl
            .backward(self.ldl.pat.part_rows(p), sweep, (x, out), base)
    }
}

/// The factor's storage lent out for a caller that factors and solves on threads of its own
/// (`super::pcg_crew`): the shape, the blocks, the solves' vectors and the shift levels.
pub(crate) struct FactorStorage<'a> {
    pub(crate) shape: FactorShape<'a>,
    /// `L`'s blocks, by slot.
    pub(crate) l: &'a mut [Mat3A],
    /// `D⁻¹`, by factor row.
    pub(crate) d_inv: &'a mut [Mat3A],
    /// The factorisation's scratch, by factor row.
    pub(crate) work: &'a mut [Mat3A],
    /// The forward solve's `y`, by rows of `A`.
    pub(crate) y: &'a mut [Vec3A],
    /// The backward solve's working vector, by rows of `A`.
    pub(crate) x: &'a mut [Vec3A],
    pub(crate) levels: &'a mut ShiftLevels,
}

/// The factor's order and pattern, to factor and solve it in steps (the two parts, then the
/// separator) on storage held elsewhere ([`FactorStorage`]).
#[derive(Clone, Copy)]
pub(crate) struct FactorShape<'a> {
    pat: &'a FactorPattern,
}

impl<'a> FactorShape<'a> {
    /// Number of factor rows.
    pub(crate) fn num_rows(&self) -> usize {
        self.pat.num_rows()
    }

    /// Number of blocks of `L`.
    pub(crate) fn num_lower_blocks(&self) -> usize {
        self.pat.cols.len()
    }

    /// Part `p`'s factor rows (its rows of `D⁻¹` and of the scratch) and its slots of `L`:
    /// what [`FactorShape::factor_part`] writes. The parts' ranges are disjoint.
    pub(crate) fn part_storage(&self, p: usize) -> (Range<usize>, Range<usize>) {
        let rows = self.pat.part_rows(p);
        let slots = self.pat.offsets[rows.start] as usize..self.pat.offsets[rows.end] as usize;
        (rows, slots)
    }

    /// IC(0) of part `p`'s rows of `Ã + α diag(Ã)`; false on a breakdown pivot. `l`, `d_inv`
    /// and `work` are the part's ranges ([`FactorShape::part_storage`]).
    pub(crate) fn factor_part<'f>(
        &self,
        p: usize,
        a: &BlockCsr,
        filter: &impl Fn(usize) -> &'f Filter,
        alpha: f64,
        (l, d_inv, work): (&mut [Mat3A], &mut [Mat3A], &mut [Mat3A]),
    ) -> bool {
        let pat = self.pat;
        let rows = pat.part_rows(p);
        let base = (rows.start, pat.offsets[rows.start] as usize);
        ic0_rows(
            pat,
            a,
            filter,
            alpha,
            rows,
            base,
            FactorRows { l, d_inv, work },
        )
    }

    /// IC(0) of the separator's rows (after both parts); the storage is whole.
    pub(crate) fn factor_separator<'f>(
        &self,
        a: &BlockCsr,
        filter: &impl Fn(usize) -> &'f Filter,
        alpha: f64,
        (l, d_inv, work): (&mut [Mat3A], &mut [Mat3A], &mut [Mat3A]),
    ) -> bool {
        let pat = self.pat;
        let rows = pat.separator_start()..pat.num_rows();
        ic0_rows(
            pat,
            a,
            filter,
            alpha,
            rows,
            (0, 0),
            FactorRows { l, d_inv, work },
        )
    }

    /// One IC(0) attempt on `Ã + α diag(Ã)`; false on a breakdown pivot (module doc). The
    /// parts' interiors are factored in parallel (each reads only its own rows), then the
    /// separator rows in order.
    fn try_factor_ic0<'f>(
        &self,
        a: &BlockCsr,
        filter: &(impl Fn(usize) -> &'f Filter + Sync),
        alpha: f64,
        all: FactorRows<'_>,
    ) -> bool {
        let pat = self.pat;
        let FactorRows { l, d_inv, work } = all;
        let sep = pat.separator_start();
        if pat.num_parts() == 1 {
            // The natural order: one part, no separator (`sep` is `n`).
            let all = FactorRows { l, d_inv, work };
            return ic0_rows(pat, a, filter, alpha, 0..sep, (0, 0), all);
        }
        let parts = FactorRows {
            l: &mut *l,
            d_inv: &mut *d_inv,
            work: &mut *work,
        };
        let (parts, _) = parts.split(pat, 0, sep);
        let (part0, part1) = parts.split(pat, 0, pat.part_start[1] as usize);
        let part = |p: usize, s: FactorRows<'_>| {
            self.factor_part(p, a, filter, alpha, (s.l, s.d_inv, s.work))
        };
        let (ok0, ok1) = join(|| part(0, part0), || part(1, part1));
        ok0 && ok1 && self.factor_separator(a, filter, alpha, (l, d_inv, work))
    }

    /// The solves of the factor `l`, `d_inv` (whole).
    pub(crate) fn solves<'b>(&self, l: &'b [Mat3A], d_inv: &'b [Mat3A]) -> PartSolves<'b>
    where
        'a: 'b,
    {
        PartSolves {
            ldl: Solves {
                pat: self.pat,
                l,
                d_inv,
            },
        }
    }
}

/// What [`IncompleteBlockLdl::sweep`] reads and writes around its two solves, by rows of `A`.
pub trait Sweep: Send + Sized {
    /// Row `v` of the right-hand side, asked once, by the forward solve.
    fn rhs(&mut self, v: usize) -> Vec3;
    /// What to store as row `v` of the output given `(P⁻¹ r)_v`, and a term of the returned
    /// sum; called once, by the backward solve, after row `v` has been used.
    fn finish(&mut self, v: usize, x: Vec3) -> (Vec3, f64);
    /// The rows before `v` and the rows from `v` on, each asked only about its own rows.
    #[must_use]
    fn split_at(self, v: usize) -> (Self, Self);
}

/// The factor as the solves read it.
struct Solves<'a> {
    pat: &'a FactorPattern,
    l: &'a [Mat3A],
    d_inv: &'a [Mat3A],
}

impl Solves<'_> {
    /// `y_v = r_v − Σ_c L_ic y_c` and `w_v = D_i⁻¹ y_v` (`v = perm[i]`) for the factor rows
    /// `rows`, ascending; `y` and `w` hold the rows of `A` from `base` on.
    fn forward(
        &self,
        rows: Range<usize>,
        sweep: &mut impl Sweep,
        (y, w): (&mut [Vec3A], &mut [Vec3A]),
        base: usize,
    ) {
        let pat = self.pat;
        for ((&v, ends), d_inv) in pat.perm[rows.clone()]
            .iter()
            .zip(pat.offsets[rows.start..rows.end + 1].windows(2))
            .zip(&self.d_inv[rows])
        {
            let v = v as usize;
            let mut acc = Vec3A::from(sweep.rhs(v));
            let row = ends[0] as usize..ends[1] as usize;
            for (lb, &c) in self.l[row.clone()].iter().zip(&pat.natural_cols[row]) {
                acc -= *lb * y[c as usize - base];
            }
            y[v - base] = acc;
            w[v - base] = *d_inv * acc;
        }
    }

    /// The backward solve `(I + L)ᵀ x = w` for the factor rows `rows`, descending: `x_v = w_v`,
    /// then `w_c −= L_icᵀ x_v` for the row's blocks, then `out_v = sweep.finish(v, x_v).0`;
    /// returns the sum of the `.1`, in that order. `w` (the working vector, `D⁻¹ y` from the
    /// forward solve; its row `v` is spent once row `v` is done) and `out` hold the rows of `A`
    /// from `base` on.
    ///
    /// A row's blocks are scattered in descending column order (module doc, "The backward
    /// solve's scatter order").
    fn backward(
        &self,
        rows: Range<usize>,
        sweep: &mut impl Sweep,
        (w, out): (&mut [Vec3A], &mut [Vec3]),
        base: usize,
    ) -> f64 {
        let pat = self.pat;
        let mut sum = 0.0;
        for (&v, ends) in pat.perm[rows.clone()]
            .iter()
            .zip(pat.offsets[rows.start..rows.end + 1].windows(2))
            .rev()
        {
            let v = v as usize;
            let xi = w[v - base];
            let row = ends[0] as usize..ends[1] as usize;
            // Descending columns: the block of the row solved next (usually the last column)
            // goes first, so that row's `x` is ready while the others are scattered.
            for (lb, &c) in self.l[row.clone()].iter().zip(&pat.natural_cols[row]).rev() {
                let wc = &mut w[c as usize - base];
                *wc -= lb.transpose() * xi;
            }
            let (x, term) = sweep.finish(v, xi.into());
            out[v - base] = x;
            sum += term;
        }
        sum
    }
}

/// IC(0) of the rows `rows` (module doc), `F_ik`, `L_ik` and `D_i` up-looking. `s` holds the
/// rows from row `base.0` (and the `L` blocks from slot `base.1`) on: a part's own rows, or
/// the whole factor for the separator; every row a part's recurrences read lies in that part.
fn ic0_rows<'f>(
    pat: &FactorPattern,
    a: &BlockCsr,
    filter: &impl Fn(usize) -> &'f Filter,
    alpha: f64,
    rows: Range<usize>,
    base: (usize, usize),
    s: FactorRows<'_>,
) -> bool {
    with_best_isa(
        #[inline(always)]
        || ic0_rows_here(pat, a, filter, alpha, rows, base, s),
    )
}

/// [`ic0_rows`] as compiled for the caller's target.
#[inline(always)]
fn ic0_rows_here<'f>(
    pat: &FactorPattern,
    a: &BlockCsr,
    filter: &impl Fn(usize) -> &'f Filter,
    alpha: f64,
    rows: Range<usize>,
    (base, l_base): (usize, usize),
    s: FactorRows<'_>,
) -> bool {
    let FactorRows { l, d_inv, work: w } = s;
    for i in rows {
        // The filters by reference: a `Filter` taken by value (28 bytes) was kept on the
        // stack and read back with loads that spanned two of its stores
        // (`docs/methods/filtered-pcg-cost.md`).
        let fi = filter(pat.perm[i] as usize);
        let row = pat.lower(i);
        // w[p]: F_ij of the row's p-th block (a part's row has fewer lower blocks than the
        // part has rows, so its scratch holds them).
        for (p, t) in row.clone().enumerate() {
            let c = pat.cols[t] as usize;
            let fc = filter(pat.perm[c] as usize);
            w[p] = IncompleteBlockLdl::filtered_off_diagonal_at(a, pat.src[t] as usize, fi, fc);
        }
        let (aii, _) = IncompleteBlockLdl::filtered_diagonal(a, pat.diag_slot[i] as usize, fi);
        let diag = DVec3::new(aii.x_axis.x, aii.y_axis.y, aii.z_axis.z);
        let scale = diag.abs().max_element();
        let mut d = PivotSum::new(aii + DMat3::from_diagonal(diag * alpha));
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
            d.subtract_product(f, lv);
        }
        let d = d.to_dmat3();
        let d = (d + d.transpose()) * 0.5;
        match invert_pivot(&d, scale) {
            Some(inv) => d_inv[i - base] = inv,
            None => return false,
        }
    }
    true
}

/// A pivot block `D_i` while IC(0) accumulates it, by columns of four `f64` lanes (the fourth
/// zero), so that `D_i −= F_ik L_ikᵀ` runs as SIMD products of whole columns (module doc,
/// "The pivot's sum in `f64` lanes").
#[derive(Clone, Copy)]
struct PivotSum([[f64; 4]; 3]);

impl PivotSum {
    #[inline(always)]
    fn new(d: DMat3) -> Self {
        let column = |c: DVec3| [c.x, c.y, c.z, 0.0];
        PivotSum([column(d.x_axis), column(d.y_axis), column(d.z_axis)])
    }

    #[inline(always)]
    fn to_dmat3(self) -> DMat3 {
        let column = |c: [f64; 4]| DVec3::new(c[0], c[1], c[2]);
        DMat3::from_cols(column(self.0[0]), column(self.0[1]), column(self.0[2]))
    }

    /// `D −= F Lᵀ` in `f64`, the operations of `D -= F.as_dmat3() * L.as_dmat3().transpose()`
    /// (glam's `DMat3` product: column `k` of `F Lᵀ` is `(F₀ l₀ₖ + F₁ l₁ₖ) + F₂ l₂ₖ` with `Fⱼ`
    /// the columns of `F` and `lⱼₖ` entry `k` of column `j` of `L`), lane by lane.
    #[inline(always)]
    fn subtract_product(&mut self, f: Mat3A, l: Mat3A) {
        let wide = |c: Vec3A| [c.x as f64, c.y as f64, c.z as f64, 0.0];
        let (f0, f1, f2) = (wide(f.x_axis), wide(f.y_axis), wide(f.z_axis));
        let (l0, l1, l2) = (wide(l.x_axis), wide(l.y_axis), wide(l.z_axis));
        for (k, dk) in self.0.iter_mut().enumerate() {
            let (a, b, c) = (l0[k], l1[k], l2[k]);
            *dk = [
                dk[0] - ((f0[0] * a + f1[0] * b) + f2[0] * c),
                dk[1] - ((f0[1] * a + f1[1] * b) + f2[1] * c),
                dk[2] - ((f0[2] * a + f1[2] * b) + f2[2] * c),
                dk[3] - ((f0[3] * a + f1[3] * b) + f2[3] * c),
            ];
        }
    }
}

/// `D⁻¹` in `f32` when the symmetric `d` passes the pivot test of
/// [`invert_diagonal_block`]'s rule 1 relative to `scale`; `None` on a breakdown.
#[inline(always)] // into ic0_rows's AVX copy (`super::isa`)
fn invert_pivot(d: &DMat3, scale: f64) -> Option<Mat3A> {
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
    let inv = (inv + inv.transpose()) * 0.5;
    // Each column rounded to `f32` into its `Vec3A` directly (`Vec3A::new`, lane 3 the
    // column's z, as `Mat3A::from` of the `Mat3` sets it): through a packed `Mat3` the
    // compiler copied the block via the stack with loads the stores could not forward.
    let column = |c: DVec3| Vec3A::new(c.x as f32, c.y as f32, c.z as f32);
    let inv = Mat3A::from_cols(column(inv.x_axis), column(inv.y_axis), column(inv.z_axis));
    inv.is_finite().then_some(inv)
}

/// A given right-hand side and a per-row finish ([`IncompleteBlockLdl::apply_then`]).
struct Plain<'a, F> {
    r: &'a [Vec3],
    finish: &'a F,
}

impl<F: Fn(usize, Vec3) -> (Vec3, f64) + Sync> Sweep for Plain<'_, F> {
    #[inline]
    fn rhs(&mut self, v: usize) -> Vec3 {
        self.r[v]
    }
    #[inline]
    fn finish(&mut self, v: usize, x: Vec3) -> (Vec3, f64) {
        (self.finish)(v, x)
    }
    fn split_at(self, _: usize) -> (Self, Self) {
        let Plain { r, finish } = self;
        (Plain { r, finish }, Plain { r, finish })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::block_csr::tests::{Rng, in_pool, random_spd};
    use crate::linalg::reduce::dot_f64;

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
    /// products with blocks off row `i`'s pattern are zero), row after row on one thread: the
    /// reference for the symbolic update lists and for the parts factored in parallel. No
    /// shift; returns `L` and `D⁻¹` in the factor's order.
    fn dense_scratch_ic0(a: &BlockCsr, f: &[Filter], two_parts: bool) -> (Vec<Mat3A>, Vec<Mat3A>) {
        let pat = FactorPattern::new(a.pattern(), two_parts);
        let f: Vec<Filter> = pat.perm.iter().map(|&v| f[v as usize]).collect();
        let n = pat.num_rows();
        let mut l = vec![Mat3A::ZERO; pat.cols.len()];
        let mut d_inv = vec![Mat3A::ZERO; n];
        let mut w = vec![Mat3A::ZERO; n];
        for i in 0..n {
            for t in pat.lower(i) {
                let c = pat.cols[t] as usize;
                w[c] = IncompleteBlockLdl::filtered_off_diagonal(
                    a.values()[pat.src[t] as usize],
                    &f[i],
                    &f[c],
                );
            }
            let (mut d, _) =
                IncompleteBlockLdl::filtered_diagonal(a, pat.diag_slot[i] as usize, &f[i]);
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
            d_inv[i] = invert_pivot(&d, scale).expect("an SPD test matrix");
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
            let mut ldl = IncompleteBlockLdl::natural(a.pattern());
            let outcome = ldl.factor(&a, &f, Preconditioner::BlockIc0);
            assert_eq!(outcome, FactorOutcome::Factored { shift: 0.0 });
            let (l, d_inv) = dense_scratch_ic0(&a, &f, false);
            // `==` on the entries: the same values (a skipped zero product can only flip the
            // sign of a zero).
            assert_eq!(ldl.l, l, "seed {seed}");
            assert_eq!(ldl.d_inv, d_inv, "seed {seed}");
        }
        // On a cloth grid most of the dense loop's products are with zero blocks.
        let pat = FactorPattern::new(&grid_pattern(65), false);
        let dense: usize = pat.cols.iter().map(|&k| pat.lower(k as usize).len()).sum();
        let kept = pat.updates.len();
        assert!(3 * kept < dense, "{kept} of {dense} products kept");
    }

    /// A sweep that records which rows it is asked about, and checks that each piece is asked
    /// only about its own rows.
    struct Recorder<'a> {
        r: &'a [Vec3],
        rows: Range<usize>,
        log: &'a std::sync::Mutex<Vec<(bool, usize)>>,
    }

    impl Sweep for Recorder<'_> {
        fn rhs(&mut self, v: usize) -> Vec3 {
            assert!(self.rows.contains(&v), "row {v} outside {:?}", self.rows);
            self.log.lock().expect("no panic holds it").push((false, v));
            self.r[v]
        }
        fn finish(&mut self, v: usize, x: Vec3) -> (Vec3, f64) {
            assert!(self.rows.contains(&v), "row {v} outside {:?}", self.rows);
            self.log.lock().expect("no panic holds it").push((true, v));
            (x * 2.0, 1.0)
        }
        fn split_at(self, v: usize) -> (Self, Self) {
            let Recorder { r, rows, log } = self;
            (
                Recorder {
                    r,
                    rows: rows.start..v,
                    log,
                },
                Recorder {
                    r,
                    rows: v..rows.end,
                    log,
                },
            )
        }
    }

    /// The solves ask for each right-hand-side row once and hand each solved row back once,
    /// after every row has been asked for, each piece of the sweep only its own rows; in the
    /// natural order ascending, then descending. The result is that of `apply`.
    #[test]
    fn sweep_reads_and_finishes_each_row_once() {
        let side = 12;
        let n = side * side;
        let a = grid_spd(side as u32, 77);
        let mut rng = Rng::new(78);
        let f = filters(n, &mut rng);
        let r: Vec<Vec3> = (0..n).map(|_| rng.vec3()).collect();
        for mut ldl in [
            IncompleteBlockLdl::natural(a.pattern()),
            IncompleteBlockLdl::in_two_parts(a.pattern()),
        ] {
            ldl.factor(&a, &f, Preconditioner::BlockIc0);
            let mut plain = vec![Vec3::ZERO; n];
            ldl.apply(&r, &mut plain);
            let log = std::sync::Mutex::new(Vec::new());
            let rec = Recorder {
                r: &r,
                rows: 0..n,
                log: &log,
            };
            let mut out = vec![Vec3::ZERO; n];
            let sum = ldl.sweep(rec, &mut out);
            assert_eq!(sum, n as f64);
            let log = log.into_inner().expect("no panic holds it");
            let asked: Vec<usize> = log.iter().filter(|e| !e.0).map(|e| e.1).collect();
            let finished: Vec<usize> = log.iter().filter(|e| e.0).map(|e| e.1).collect();
            // Every row is asked for before any is finished (the forward solve ends first).
            assert!(log[..n].iter().all(|e| !e.0));
            if ldl.num_parts() == 1 {
                assert_eq!(asked, (0..n).collect::<Vec<_>>());
                assert_eq!(finished, (0..n).rev().collect::<Vec<_>>());
            } else {
                for mut rows in [asked, finished] {
                    rows.sort_unstable();
                    assert_eq!(rows, (0..n).collect::<Vec<_>>());
                }
            }
            assert!(out.iter().zip(&plain).all(|(o, p)| *o == *p * 2.0));
        }
    }

    #[test]
    fn ic0_is_exact_without_fill_in_and_keeps_the_filtered_subspace() {
        let n = 40;
        let a = chain_spd(n, 5);
        let mut rng = Rng::new(6);
        let f = filters(n, &mut rng);
        let mut ldl = IncompleteBlockLdl::natural(a.pattern());
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
        for parts in [1, 2] {
            let mut ldl = if parts == 1 {
                IncompleteBlockLdl::natural(a.pattern())
            } else {
                IncompleteBlockLdl::in_two_parts(a.pattern())
            };
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

    /// An SPD matrix on [`grid_pattern`], built like `random_spd`: a mass on the diagonal and
    /// a spring block on every pair.
    fn grid_spd(side: u32, seed: u64) -> BlockCsr {
        let pattern = std::sync::Arc::new(grid_pattern(side));
        let n = pattern.num_rows();
        let mut rng = Rng::new(seed);
        let mut a = BlockCsr::new(pattern.clone());
        for i in 0..n {
            let m = 1.0 + rng.unit().abs();
            a.add(pattern.diag_slot(i), Mat3::from_diagonal(Vec3::splat(m)));
        }
        for i in 0..n {
            for &j in pattern.row_cols(i) {
                let j = j as usize;
                if j <= i {
                    continue;
                }
                let d = rng.vec3().normalize_or(Vec3::X);
                let k = 20.0 * (1.0 + rng.unit());
                let kb = k * (Mat3::from_cols(d * d.x, d * d.y, d * d.z) + Mat3::IDENTITY * 0.1);
                let slot = |r: usize, c: usize| pattern.slot(r as u32, c as u32).expect("a pair");
                a.add(pattern.diag_slot(i), kb);
                a.add(pattern.diag_slot(j), kb);
                a.add(slot(i, j), -kb);
                a.add(slot(j, i), -kb);
            }
        }
        a
    }

    #[test]
    fn two_parts_follow_the_size_and_keep_the_separator_small() {
        // Below the threshold: the natural order.
        let small = grid_pattern(63);
        assert!(small.num_rows() < TWO_PART_MIN_ROWS);
        let ldl = IncompleteBlockLdl::new(&small);
        assert_eq!((ldl.num_parts(), ldl.num_separator_rows()), (1, 0));
        for side in [65, 101, 129] {
            let pattern = grid_pattern(side);
            let ldl = IncompleteBlockLdl::new(&pattern);
            assert_eq!(ldl.num_parts(), 2, "side {side}");
            // About two grid rows (the wing pairs' reach), wherever the middle falls in a row.
            let sep = ldl.num_separator_rows();
            let side = side as usize;
            assert!(
                (2 * side..=2 * side + 2).contains(&sep),
                "side {side}: {sep}"
            );
            // The natural ranges: part 0, the separator, part 1, meeting at the middle.
            let (a, b) = ldl.pat.natural;
            assert_eq!((b - a, b), (sep, pattern.num_rows() / 2));
            assert_eq!(ldl.pat.part_start[1] as usize, a);
        }
        // Random couplings across the whole range: the separator would be most of a half.
        let a = random_spd(5000, 2, 3);
        assert!(!uses_two_parts(a.pattern()));
        assert_eq!(IncompleteBlockLdl::new(a.pattern()).num_parts(), 1);
    }

    /// The forward and backward solves in the factor's order, row after row on one thread,
    /// with the backward sum taken separator first (rows descending), then part 0, then part
    /// 1, each descending: the reference for the parallel solves. Returns `P⁻¹ r` by rows of
    /// `A` and `Σ r · P⁻¹ r`.
    fn sequential_solves(ldl: &IncompleteBlockLdl, r: &[Vec3]) -> (Vec<Vec3>, f64) {
        let pat = &ldl.pat;
        let n = pat.num_rows();
        let mut y = vec![Vec3A::ZERO; n];
        let mut w = vec![Vec3::ZERO; n];
        for i in 0..n {
            let mut acc = Vec3A::from(r[pat.perm[i] as usize]);
            for t in pat.lower(i) {
                acc -= ldl.l[t] * y[pat.cols[t] as usize];
            }
            y[i] = acc;
            w[i] = (ldl.d_inv[i] * acc).into();
        }
        // sums[0]: the separator's; sums[1 + p]: part p's.
        let mut sums = vec![0.0f64; pat.num_parts() + 1];
        for i in (0..n).rev() {
            let xi = Vec3A::from(w[i]);
            for t in pat.lower(i) {
                let c = pat.cols[t] as usize;
                w[c] = (Vec3A::from(w[c]) - ldl.l[t].transpose() * xi).into();
            }
            let range = (0..pat.num_parts())
                .find(|&p| pat.part_rows(p).contains(&i))
                .map_or(0, |p| p + 1);
            sums[range] += dot_f64(r[pat.perm[i] as usize], w[i]);
        }
        let mut out = vec![Vec3::ZERO; n];
        for i in 0..n {
            out[pat.perm[i] as usize] = w[i];
        }
        (out, sums.iter().sum())
    }

    fn bits(v: &[Vec3]) -> Vec<[u32; 3]> {
        v.iter().map(|x| x.to_array().map(f32::to_bits)).collect()
    }

    /// The two parts factored and solved in parallel give the bits of the same factor and
    /// solves run row after row on one thread, at 1, 2 and 4 threads.
    #[test]
    fn parallel_parts_equal_the_sequential_reference_bit_for_bit() {
        let side = 48;
        let n = (side * side) as usize;
        let a = grid_spd(side, 41);
        let mut rng = Rng::new(42);
        let f = filters(n, &mut rng);
        let r: Vec<Vec3> = (0..n).map(|_| rng.vec3()).collect();
        let (l_ref, d_ref) = dense_scratch_ic0(&a, &f, true);
        for threads in [1, 2, 4] {
            let (ldl, out, sum) = in_pool(threads, || {
                let mut ldl = IncompleteBlockLdl::in_two_parts(a.pattern());
                let outcome = ldl.factor(&a, &f, Preconditioner::BlockIc0);
                assert_eq!(outcome, FactorOutcome::Factored { shift: 0.0 });
                let mut out = vec![Vec3::ZERO; n];
                let sum = ldl.apply_then(&r, &mut out, |v, x| (x, dot_f64(r[v], x)));
                (ldl, out, sum)
            });
            assert_eq!(ldl.num_parts(), 2);
            assert!(ldl.num_separator_rows() < n / 8);
            assert_eq!(ldl.l, l_ref, "{threads} threads");
            assert_eq!(ldl.d_inv, d_ref, "{threads} threads");
            let (out_ref, sum_ref) = sequential_solves(&ldl, &r);
            assert_eq!(bits(&out), bits(&out_ref), "{threads} threads");
            assert_eq!(sum.to_bits(), sum_ref.to_bits(), "{threads} threads");
        }
    }

    #[test]
    fn factors_are_symmetric_positive_definite() {
        for (kind, parts) in [
            (Preconditioner::BlockSgs, 1),
            (Preconditioner::BlockIc0, 1),
            (Preconditioner::BlockSgs, 2),
            (Preconditioner::BlockIc0, 2),
        ] {
            let n = 30;
            let a = random_spd(n, 3, 21);
            let mut rng = Rng::new(22);
            let f = filters(n, &mut rng);
            let mut ldl = if parts == 1 {
                IncompleteBlockLdl::natural(a.pattern())
            } else {
                IncompleteBlockLdl::in_two_parts(a.pattern())
            };
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

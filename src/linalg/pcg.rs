//! Filtered (modified) preconditioned conjugate gradients of Baraff–Witkin.
//!
//! Equation labels `eq. 2.n` are those of `docs/methods/baraff-witkin.md`, `eq. 4.n` those of
//! `docs/methods/dihedral-bending.md` (weft's own statements of the model, with the papers they follow).
//!
//! Solves the constrained system of `docs/methods/baraff-witkin.md` (2.16),
//!
//! ```text
//! S (A dv - b) = 0,    (I - S) dv = z,
//! ```
//!
//! with `S = blockdiag(S_i)` the per-vertex filters of (2.15) ([`Filter`]) and `z` the
//! prescribed velocity changes in the constrained directions (`z_i ∈ range(I - S_i)`). The
//! iteration is `docs/methods/baraff-witkin.md` §2.8's `filtered_pcg`, i.e. CG on `S A S y = S (b - A z)` with
//! `dv = z + y`, preconditioned by `S P⁻¹ S` with `P⁻¹` the block-Jacobi inverse
//! ([`BlockJacobi`]) or, chosen when the workspace is made
//! ([`PcgWorkspace::with_preconditioner`]), the block IC(0) or block symmetric Gauss–Seidel of
//! the filtered matrix ([`IncompleteBlockLdl`]), refactored at the start of every solve.
//!
//! Choices where accounts of the method differ (tested below; `docs/methods/baraff-witkin.md` §2.8):
//! - `d_0` is measured on `S (b - A z)`, not on `S b` (§2.8 note, appendix item 6), so the
//!   relative tolerance means what it says when `z != 0`.
//! - `P⁻¹` is the operator applied to the residual; `d_0` and `d_new` use that same operator.
//! - `dv` is a warm start: its free components `S dv` are the initial guess for `y`; its
//!   constrained components are ignored and replaced by `z`. Pass zeros for BW's cold start.
//! - `d_0 = 0` (every vertex fixed, or `S (b - A z) = 0`) returns `dv = z` at once.
//!
//! # Numbers and determinism
//! Vectors and blocks are `f32`; every dot product that steers the iteration (`d_0`, `d_new`,
//! `c · q`) is accumulated in `f64` over the fixed chunks of [`reduce`], so the iterates are
//! bit-identical for any rayon thread count. Each iteration is three passes over the rows:
//! `q = S A c` fused with `c · q`; the `dv`, `r` updates fused with `s = S P⁻¹ r` and `r · s`;
//! and the new direction `c = S (s + β c)` (on the calling thread below
//! `SERIAL_VECTOR_ROWS` rows). With block Jacobi the second pass is one chunked loop. With
//! the incomplete factor it is the factor's two triangular solves
//! ([`IncompleteBlockLdl::sweep`]; in two parts and a separator on larger cloths, the parts in
//! parallel): the forward solve reads `r_i` right after updating `dv_i` and `r_i`, and the
//! backward solve filters each `s_i` and adds `r_i · s_i` as soon as it is solved, in one
//! `f64` sum per range of rows added in a fixed order (the same for any thread count).
//! With the factor in two parts, on a rayon worker, the same passes (the same functions, the
//! same sums in the same order) run as the phases of a two-thread crew, one fork-join a solve
//! instead of several an iteration, the direction pass split into chunks too
//! (`pcg_crew`, `docs/methods/threading.md`). Nothing allocates once the workspace exists.
//!
//! Departure from the §2.8 pseudocode: `s` is filtered (`s = S P⁻¹ r`, so
//! `d = r · S P⁻¹ S r`). In exact arithmetic `r ∈ range(S)` and nothing changes; in `f32`, `r`
//! carries rounding noise in the constrained directions that no filtered step can remove,
//! and with `s = P⁻¹ r` that noise floors `d_new` near `(ε_f32)² d_0`: the iteration then
//! stalls with shrinking `c` until `α` overflows (seen in testing at tolerance 10⁻⁶).
//!
//! # Exactness of the constrained components
//! Every search direction is filtered, so `dv` keeps its initial constrained part. For
//! [`Filter::Fixed`] rows `dv_i = z_i` exactly (bitwise, except that a `-0.0` in `z` may come
//! back as `+0.0`); for axis-aligned constraint directions the constrained coordinates are
//! exact too, because `S_i` then zeroes them exactly. For general directions they hold to the
//! rounding of one projection (`|p·dv - p·z| ~ ε |dv|`), as a projection in floating point
//! must: the solve ends by re-imposing `dv_i = z_i + S_i dv_i`, so the drift of the filtered
//! updates (a few ulps per iteration) does not accumulate.
#![deny(unsafe_code)]

use glam::{Mat3, Vec3};

use super::block_csr::BlockCsr;
use super::block_ldl::{FactorOutcome, IncompleteBlockLdl, Preconditioner, ShiftLevels};
use super::cg::{self, CgSystem};
use super::isa::with_best_isa;
use super::pattern::BlockPattern;
use super::pcg_crew;
use super::precond::BlockJacobi;
use super::reduce::{self, dot_f64};

/// The per-vertex filter S_i of Baraff–Witkin (`docs/methods/baraff-witkin.md` (2.15)): p, q unit and orthogonal.
///
/// Baraff & Witkin 1998; `docs/methods/baraff-witkin.md` (2.15). The variants are public so a caller can
/// build them directly, but `S_i` is an orthogonal projector only when the directions are
/// unit length and orthogonal; [`Filter::one_direction`] and [`Filter::two_directions`]
/// normalise and orthogonalise, [`Filter::is_valid`] checks.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Filter {
    /// No constraint: `S_i = I`.
    #[default]
    Free,
    /// Velocity prescribed along unit `p`: `S_i = I - p pᵀ`.
    OneDirection(Vec3),
    /// Velocity prescribed along unit, orthogonal `p` and `q`: `S_i = I - p pᵀ - q qᵀ`.
    TwoDirections(Vec3, Vec3),
    /// Velocity fully prescribed: `S_i = 0`.
    Fixed,
}

impl Filter {
    /// A one-direction filter along `p` (normalised). A zero or non-finite `p` gives
    /// [`Filter::Free`].
    #[must_use]
    pub fn one_direction(p: Vec3) -> Filter {
        match p.try_normalize() {
            Some(p) => Filter::OneDirection(p),
            None => Filter::Free,
        }
    }

    /// A two-direction filter along `p` and `q`, made orthonormal by Gram–Schmidt (`p` kept,
    /// `q` made orthogonal to it). Degenerate inputs drop to fewer directions.
    #[must_use]
    pub fn two_directions(p: Vec3, q: Vec3) -> Filter {
        let Some(p) = p.try_normalize() else {
            return Filter::one_direction(q);
        };
        match (q - p * p.dot(q)).try_normalize() {
            Some(q) => Filter::TwoDirections(p, q),
            None => Filter::OneDirection(p),
        }
    }

    /// `S a`: the part of `a` in the free directions.
    #[inline]
    #[must_use]
    pub fn apply(&self, a: Vec3) -> Vec3 {
        match *self {
            Filter::Free => a,
            Filter::OneDirection(p) => a - p * p.dot(a),
            Filter::TwoDirections(p, q) => a - p * p.dot(a) - q * q.dot(a),
            Filter::Fixed => Vec3::ZERO,
        }
    }

    /// `(I - S) a`: the part of `a` in the constrained directions.
    #[inline]
    #[must_use]
    pub fn constrained(&self, a: Vec3) -> Vec3 {
        match *self {
            Filter::Free => Vec3::ZERO,
            Filter::OneDirection(p) => p * p.dot(a),
            Filter::TwoDirections(p, q) => p * p.dot(a) + q * q.dot(a),
            Filter::Fixed => a,
        }
    }

    /// The matrix `S_i`.
    #[must_use]
    pub fn matrix(&self) -> Mat3 {
        Mat3::from_cols(
            self.apply(Vec3::X),
            self.apply(Vec3::Y),
            self.apply(Vec3::Z),
        )
    }

    /// Number of free directions: 3, 2, 1 or 0.
    #[must_use]
    pub fn free_dimensions(&self) -> u32 {
        match self {
            Filter::Free => 3,
            Filter::OneDirection(_) => 2,
            Filter::TwoDirections(..) => 1,
            Filter::Fixed => 0,
        }
    }

    /// Whether the directions are unit length and orthogonal within `tol`.
    #[must_use]
    pub fn is_valid(&self, tol: f32) -> bool {
        let unit = |p: Vec3| p.is_finite() && (p.length() - 1.0).abs() <= tol;
        match *self {
            Filter::Free | Filter::Fixed => true,
            Filter::OneDirection(p) => unit(p),
            Filter::TwoDirections(p, q) => unit(p) && unit(q) && p.dot(q).abs() <= tol,
        }
    }
}

/// Where the solver reads each row's filter: a per-vertex slice, or "all free" (the plain
/// PCG, monomorphised so the filter costs nothing).
pub(super) trait FilterSet: Sync {
    /// Every filter is [`Filter::Free`].
    const ALL_FREE: bool;
    fn get(&self, i: usize) -> Filter;
    /// Filter `i` where it is stored: for a reader that looks only at its kind first (the
    /// factorisation, which otherwise copies it through the stack).
    fn get_ref(&self, i: usize) -> &Filter;
}

impl FilterSet for &[Filter] {
    const ALL_FREE: bool = false;
    #[inline(always)]
    fn get(&self, i: usize) -> Filter {
        self[i]
    }
    #[inline(always)]
    fn get_ref(&self, i: usize) -> &Filter {
        &self[i]
    }
}

/// Every vertex free.
struct AllFree;

impl FilterSet for AllFree {
    const ALL_FREE: bool = true;
    #[inline(always)]
    fn get(&self, _i: usize) -> Filter {
        Filter::Free
    }
    #[inline(always)]
    fn get_ref(&self, _i: usize) -> &Filter {
        &Filter::Free
    }
}

/// Iteration budget and stopping test of the PCG.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PcgSettings {
    /// Iteration cap (the runtime's CG budget); 0 returns the initial iterate.
    pub max_iterations: u32,
    /// Relative tolerance `ε` on the preconditioned residual norm: the solve converges when
    /// `sqrt(r·P⁻¹r / d_0) <= ε` with `d_0` measured on `S (b - A z)`.
    pub tolerance: f64,
}

/// Outcome of a PCG solve: data for the step statistics, never an error.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PcgReport {
    /// Completed iterations (SpMVs inside the loop).
    pub iterations: u32,
    /// `sqrt(d_new / d_0)` at exit (the recursively updated residual); 0 when there was
    /// nothing to solve; NaN when the input or the iteration produced non-finite values.
    pub relative_residual: f64,
    /// The tolerance was met.
    pub converged: bool,
    /// should_stop said stop.
    pub interrupted: bool,
    /// c·q <= 0 met: `A` is not positive definite on `range(S)`.
    pub indefinite: bool,
    /// Diagonal shift `α` the block IC(0) factorisation needed (0: none, or another
    /// preconditioner; [`IncompleteBlockLdl`]).
    pub preconditioner_shift: f32,
    /// The workspace's preconditioner could not be built (IC(0) broke down at every shift)
    /// and this solve used block Jacobi instead.
    pub preconditioner_fallback: bool,
}

/// Scratch for one system size; created with the cloth.
#[derive(Clone, Debug)]
pub struct PcgWorkspace {
    /// Filtered residual `S (b - A dv)`.
    r: Vec<Vec3>,
    /// Search direction.
    c: Vec<Vec3>,
    /// `S A c`.
    q: Vec<Vec3>,
    /// Filtered preconditioned residual `S P⁻¹ r`.
    s: Vec<Vec3>,
    precond: BlockJacobi,
    /// The preconditioner every solve uses (block Jacobi when `factor` cannot be built).
    kind: Preconditioner,
    /// Factor storage for [`Preconditioner::BlockIc0`] / [`Preconditioner::BlockSgs`].
    factor: Option<IncompleteBlockLdl>,
}

impl PcgWorkspace {
    /// Workspace for systems of `n` block rows, preconditioned by block Jacobi.
    #[must_use]
    pub fn new(n: usize) -> Self {
        PcgWorkspace {
            r: vec![Vec3::ZERO; n],
            c: vec![Vec3::ZERO; n],
            q: vec![Vec3::ZERO; n],
            s: vec![Vec3::ZERO; n],
            precond: BlockJacobi::new(n),
            kind: Preconditioner::BlockJacobi,
            factor: None,
        }
    }

    /// Workspace for systems on `pattern`, preconditioned by `kind`; the factor storage of
    /// [`Preconditioner::BlockIc0`] / [`Preconditioner::BlockSgs`] is allocated here, once.
    #[must_use]
    pub fn with_preconditioner(pattern: &BlockPattern, kind: Preconditioner) -> Self {
        let mut ws = PcgWorkspace::new(pattern.num_rows());
        ws.kind = kind;
        if kind != Preconditioner::BlockJacobi {
            ws.factor = Some(IncompleteBlockLdl::new(pattern));
        }
        ws
    }

    /// The preconditioner the solves use.
    #[inline]
    #[must_use]
    pub fn preconditioner_kind(&self) -> Preconditioner {
        self.kind
    }

    /// Number of block rows this workspace serves.
    #[inline]
    #[must_use]
    pub fn num_rows(&self) -> usize {
        self.r.len()
    }

    /// What one solve leaves for the next: the factor's shift levels (default without a
    /// factor).
    #[must_use]
    pub(crate) fn shift_levels(&self) -> ShiftLevels {
        self.factor
            .as_ref()
            .map_or_else(ShiftLevels::default, IncompleteBlockLdl::shift_levels)
    }

    /// Puts back shift levels read by [`PcgWorkspace::shift_levels`].
    pub(crate) fn set_shift_levels(&mut self, levels: ShiftLevels) {
        if let Some(factor) = self.factor.as_mut() {
            factor.set_shift_levels(levels);
        }
    }

    /// The block-Jacobi preconditioner of the last solve that used it (updated from `A` at
    /// the start of such a solve).
    #[inline]
    #[must_use]
    pub fn preconditioner(&self) -> &BlockJacobi {
        &self.precond
    }

    /// The filtered residual `S (b - A dv)` of the last solve, as updated by the recursion.
    #[inline]
    #[must_use]
    pub fn residual(&self) -> &[Vec3] {
        &self.r
    }
}

/// Modified PCG of Baraff–Witkin (`docs/methods/baraff-witkin.md` §2.8): solves S(A dv - b) = 0, (I - S) dv = z.
///
/// Baraff & Witkin 1998; `docs/methods/baraff-witkin.md` (2.16). Symbols: `a` = `A` (SPD on `range(S)`,
/// (2.14)), `b` = right-hand side, `z` = prescribed constrained components (must lie in
/// `range(I - S_i)` per vertex), `filters[i]` = `S_i` of (2.15).
///
/// - d_0 is measured on S(b - A z) (`docs/methods/baraff-witkin.md` §2.8 note), not on `S b`.
/// - `dv` is a warm start: the initial iterate is `z_i + S_i dv_i` (exactly `z_i` for fixed
///   rows); pass zeros for a cold start. On return it holds the current iterate.
/// - `should_stop(iteration)` is called before every iteration, including the first, with the
///   number of iterations done so far (the frame deadline). When it returns true the solve
///   stops and keeps the current iterate, which minimises the `A`-norm error over the Krylov
///   space explored so far (the best CG has).
/// - c·q <= 0 (A not SPD on range S) stops and reports `indefinite`, keeping the last iterate.
/// - The preconditioner in `ws` is recomputed from `a` (and, for the incomplete factors, the
///   filters) first; an IC(0) that breaks down at every shift gives way to block Jacobi for
///   this solve (`preconditioner_fallback` in the report).
/// - Non-finite `a`, `b` or `z` gives `relative_residual = NaN`, `converged = false`; a
///   non-finite warm start is replaced by the cold start `z`.
///
/// Allocates nothing.
///
/// # Panics
/// If `b`, `z`, `filters` or `dv` does not have one entry per block row of `a`, or `ws` was
/// created for another size.
#[allow(clippy::too_many_arguments)] // the signature is the integrator's contract
pub fn solve_filtered_pcg(
    a: &BlockCsr,
    b: &[Vec3],
    z: &[Vec3],
    filters: &[Filter],
    settings: &PcgSettings,
    ws: &mut PcgWorkspace,
    dv: &mut [Vec3],
    should_stop: &mut dyn FnMut(u32) -> bool,
) -> PcgReport {
    let n = a.num_rows();
    assert_eq!(z.len(), n, "solve_filtered_pcg: z has the wrong length");
    assert_eq!(
        filters.len(),
        n,
        "solve_filtered_pcg: filters have the wrong length"
    );
    debug_assert!(
        filters.iter().all(|f| f.is_valid(1e-4)),
        "solve_filtered_pcg: a filter's directions are not orthonormal"
    );
    solve(a, b, Some(z), filters, settings, ws, dv, should_stop)
}

/// Plain PCG for an SPD system `A dv = b`: [`solve_filtered_pcg`] with every vertex free and
/// `z = 0` (the filter code is compiled out). `dv` is a warm start; the rest as there.
///
/// # Panics
/// If `b` or `dv` does not have one entry per block row of `a`, or `ws` was created for
/// another size.
pub fn solve_pcg(
    a: &BlockCsr,
    b: &[Vec3],
    settings: &PcgSettings,
    ws: &mut PcgWorkspace,
    dv: &mut [Vec3],
    should_stop: &mut dyn FnMut(u32) -> bool,
) -> PcgReport {
    solve(a, b, None, AllFree, settings, ws, dv, should_stop)
}

/// The constraint impulse `λ = (I - S)(A dv - b)` of `docs/methods/baraff-witkin.md` §2.7, per vertex: what the
/// constraints apply over the step (contact release, §2.9, reads its sign along the normal).
///
/// Baraff & Witkin 1998; `docs/methods/baraff-witkin.md` (2.16) (the residual in the constrained
/// directions). Allocates nothing.
///
/// # Panics
/// If a slice does not have one entry per block row of `a`.
pub fn constraint_impulse(
    a: &BlockCsr,
    b: &[Vec3],
    dv: &[Vec3],
    filters: &[Filter],
    out: &mut [Vec3],
) {
    let n = a.num_rows();
    assert!(
        b.len() == n && dv.len() == n && filters.len() == n && out.len() == n,
        "constraint_impulse: slice lengths differ from the matrix size"
    );
    reduce::for_each_chunk(out, |first, chunk: &mut [Vec3]| {
        for (k, o) in chunk.iter_mut().enumerate() {
            let i = first + k;
            *o = filters[i].constrained(a.row_product(i, dv) - b[i]);
        }
    });
}

/// The shared solver; `z = None` means `z = 0`.
#[allow(clippy::too_many_arguments)]
fn solve<F: FilterSet>(
    a: &BlockCsr,
    b: &[Vec3],
    z: Option<&[Vec3]>,
    filters: F,
    settings: &PcgSettings,
    ws: &mut PcgWorkspace,
    dv: &mut [Vec3],
    should_stop: &mut dyn FnMut(u32) -> bool,
) -> PcgReport {
    let n = a.num_rows();
    assert_eq!(b.len(), n, "PCG: b has the wrong length");
    assert_eq!(dv.len(), n, "PCG: dv has the wrong length");
    assert_eq!(ws.num_rows(), n, "PCG: workspace built for another size");
    let filters = &filters;
    let mut report = PcgReport::default();
    let PcgWorkspace {
        r,
        c,
        q,
        s,
        precond,
        kind,
        factor,
    } = ws;
    let pre = match (factor.as_mut(), *kind) {
        (Some(f), Preconditioner::BlockIc0 | Preconditioner::BlockSgs) => {
            let outcome = if pcg_crew::usable(f, n) {
                // The whole solve, the factorisation included, on a two-thread crew
                // (`pcg_crew`); it comes back only if the factor broke down at every shift,
                // with `dv` untouched.
                let vectors = pcg_crew::Vectors {
                    dv: &mut *dv,
                    r,
                    c,
                    q,
                    s,
                };
                match pcg_crew::solve(a, b, z, filters, settings, *kind, f, vectors, should_stop) {
                    Some(report) => return report,
                    None => FactorOutcome::Failed,
                }
            } else {
                f.factor_with(a, |i| filters.get_ref(i), *kind)
            };
            match outcome {
                FactorOutcome::Factored { shift } => {
                    report.preconditioner_shift = shift;
                    None
                }
                FactorOutcome::Failed => {
                    report.preconditioner_fallback = true;
                    Some(())
                }
            }
        }
        _ => Some(()),
    };
    let mut pre = match (pre, factor.as_mut()) {
        (None, Some(f)) => Pre::Factor(f),
        _ => {
            precond.update(a);
            Pre::Jacobi(precond)
        }
    };

    // Initial iterate dv = z + S dv_in; `warm` = |S dv_in|² says whether it differs from z.
    let mut warm = impose_constraints(filters, z, dv);
    // `!= 0` (not `> 0`) keeps a NaN in z visible.
    let z = z.filter(|z| reduce::norm_squared(z) != 0.0);
    if !warm.is_finite() {
        // A non-finite warm start (a failed previous step) is dropped: cold start.
        reset_to(z, dv);
        warm = 0.0;
    }

    // d_0 on S(b - A z) (`docs/methods/baraff-witkin.md` §2.8 note).
    let d0 = residual_pass(a, b, z, filters, &mut pre, r, s);
    if !d0.is_finite() {
        report.relative_residual = f64::NAN;
        return report;
    }
    if d0 <= 0.0 {
        // Nothing to solve: y = 0, dv = z.
        reset_to(z, dv);
        report.converged = true;
        return report;
    }
    let d_new = if warm > 0.0 {
        residual_pass(a, b, Some(&dv[..]), filters, &mut pre, r, s)
    } else {
        d0
    };

    let threshold = settings.tolerance * settings.tolerance * d0;
    let mut system = FilteredSystem {
        a,
        filters,
        pre,
        dv: &mut *dv,
        r,
        c,
        q,
        s,
    };
    let d_new = cg::iterate(
        &mut system,
        d_new,
        threshold,
        settings.max_iterations,
        should_stop,
        &mut report,
    );
    finish(filters, z, dv, d0, d_new, report)
}

/// The end of a solve after the iteration: the constraints re-imposed, the residual reported.
fn finish<F: FilterSet>(
    filters: &F,
    z: Option<&[Vec3]>,
    dv: &mut [Vec3],
    d0: f64,
    d_new: f64,
    mut report: PcgReport,
) -> PcgReport {
    if !F::ALL_FREE {
        // Rounding in the filtered steps lets the constrained components of a general
        // direction drift by a few ulps per iteration; re-projecting bounds the drift by the
        // rounding of one projection. Exact rows (fixed, axis-aligned) are unchanged.
        impose_constraints(filters, z, dv);
    }
    report.relative_residual = relative_residual(d0, d_new);
    report
}

/// `sqrt(d_new / d_0)`, NaN when `d_new` is not finite.
pub(super) fn relative_residual(d0: f64, d_new: f64) -> f64 {
    if d_new.is_finite() {
        (d_new.max(0.0) / d0).sqrt()
    } else {
        f64::NAN
    }
}

/// The filtered system as the CG iteration ([`cg::iterate`]) drives it: `f32` vectors, the
/// filter applied in every pass, `α` and `β` rounded to `f32`.
struct FilteredSystem<'a, 'p, F: FilterSet> {
    a: &'a BlockCsr,
    filters: &'a F,
    pre: Pre<'p>,
    dv: &'a mut [Vec3],
    r: &'a mut [Vec3],
    c: &'a mut [Vec3],
    q: &'a mut [Vec3],
    s: &'a mut [Vec3],
}

impl<F: FilterSet> CgSystem for FilteredSystem<'_, '_, F> {
    fn direction(&mut self, beta: Option<f64>) {
        direction_pass(self.filters, self.s, beta.map(|b| b as f32), self.c);
    }

    fn product(&mut self) -> f64 {
        filtered_product_pass(self.a, self.filters, self.c, self.q)
    }

    fn step_is_finite(&self, alpha: f64) -> bool {
        (alpha as f32).is_finite()
    }

    fn update(&mut self, alpha: f64) -> f64 {
        update_pass(
            alpha as f32,
            self.filters,
            self.c,
            self.q,
            &mut self.pre,
            self.dv,
            self.r,
            self.s,
        )
    }
}

/// `dv = z` (`z = None`: `dv = 0`).
fn reset_to(z: Option<&[Vec3]>, dv: &mut [Vec3]) {
    reduce::for_each_chunk(dv, |first, chunk: &mut [Vec3]| {
        for (k, d) in chunk.iter_mut().enumerate() {
            *d = z.map_or(Vec3::ZERO, |z| z[first + k]);
        }
    });
}

/// `dv_i = z_i + S_i dv_i` (exactly `z_i` for fixed rows); returns `|S dv_in|²`.
fn impose_constraints<F: FilterSet>(filters: &F, z: Option<&[Vec3]>, dv: &mut [Vec3]) -> f64 {
    reduce::sum_chunks_mut(dv, |first, chunk: &mut [Vec3]| {
        constrain_rows(filters, z, first, chunk)
    })
}

/// [`impose_constraints`] on the rows `first..first + dv.len()` (one chunk of the fixed
/// summation order; `z` is whole); returns the chunk's `|S dv_in|²`, summed in row order.
#[inline]
pub(super) fn constrain_rows<F: FilterSet>(
    filters: &F,
    z: Option<&[Vec3]>,
    first: usize,
    dv: &mut [Vec3],
) -> f64 {
    let mut acc = 0.0;
    for (k, d) in dv.iter_mut().enumerate() {
        let i = first + k;
        let f = filters.get(i);
        let y = f.apply(*d);
        acc += dot_f64(y, y);
        *d = match (z, f) {
            (Some(z), Filter::Fixed) => z[i],
            (Some(z), _) => z[i] + y,
            (None, _) => y,
        };
    }
    acc
}

/// The preconditioner a solve applies: block Jacobi (fused into the row passes) or an
/// incomplete block factor (its triangular solves after the pass).
enum Pre<'a> {
    Jacobi(&'a BlockJacobi),
    Factor(&'a mut IncompleteBlockLdl),
}

/// `r = S (b - A x)`, `s = S P⁻¹ r`; returns `r · s`. `x = None` means `x = 0`.
fn residual_pass<F: FilterSet>(
    a: &BlockCsr,
    b: &[Vec3],
    x: Option<&[Vec3]>,
    filters: &F,
    pre: &mut Pre<'_>,
    r: &mut [Vec3],
    s: &mut [Vec3],
) -> f64 {
    match pre {
        Pre::Jacobi(precond) => {
            reduce::sum_chunks_mut((r, s), |first, (rc, sc): (&mut [Vec3], &mut [Vec3])| {
                let mut acc = 0.0;
                for (k, (ri, si)) in rc.iter_mut().zip(sc.iter_mut()).enumerate() {
                    let i = first + k;
                    let ax = x.map_or(Vec3::ZERO, |x| a.row_product(i, x));
                    let f = filters.get(i);
                    *ri = f.apply(b[i] - ax);
                    *si = f.apply(precond.apply_row(i, *ri));
                    acc += dot_f64(*ri, *si);
                }
                acc
            })
        }
        Pre::Factor(factor) => {
            reduce::for_each_chunk(&mut *r, |first, rc: &mut [Vec3]| {
                residual_rows(a, b, x, filters, first, rc);
            });
            factor.sweep(ResidualSweep { r, filters }, s)
        }
    }
}

/// `r = S (b - A x)` on the rows `first..first + r.len()` (`x` whole; `None` means 0), in
/// the AVX copy when the CPU has it (`super::isa`; the same operations, so the same bits).
#[inline]
pub(super) fn residual_rows<F: FilterSet>(
    a: &BlockCsr,
    b: &[Vec3],
    x: Option<&[Vec3]>,
    filters: &F,
    first: usize,
    r: &mut [Vec3],
) {
    with_best_isa(
        #[inline(always)]
        || residual_rows_here(a, b, x, filters, first, r),
    );
}

/// [`residual_rows`] as compiled for the caller's target.
#[inline(always)]
fn residual_rows_here<F: FilterSet>(
    a: &BlockCsr,
    b: &[Vec3],
    x: Option<&[Vec3]>,
    filters: &F,
    first: usize,
    r: &mut [Vec3],
) {
    for (k, ri) in r.iter_mut().enumerate() {
        let i = first + k;
        let ax = x.map_or(Vec3::ZERO, |x| a.row_product(i, x));
        *ri = filters.get(i).apply(b[i] - ax);
    }
}

/// `s = S P⁻¹ r` with the terms of `r · s`, for [`IncompleteBlockLdl::sweep`]: `r` as it is
/// (whole), each solved row filtered.
pub(super) struct ResidualSweep<'a, F: FilterSet> {
    pub(super) r: &'a [Vec3],
    pub(super) filters: &'a F,
}

impl<F: FilterSet> super::block_ldl::Sweep for ResidualSweep<'_, F> {
    #[inline]
    fn rhs(&mut self, v: usize) -> Vec3 {
        self.r[v]
    }
    #[inline]
    fn finish(&mut self, v: usize, x: Vec3) -> (Vec3, f64) {
        let s = if F::ALL_FREE {
            x
        } else {
            self.filters.get_ref(v).apply(x)
        };
        (s, dot_f64(self.r[v], s))
    }
    fn split_at(self, _: usize) -> (Self, Self) {
        let ResidualSweep { r, filters } = self;
        (ResidualSweep { r, filters }, ResidualSweep { r, filters })
    }
}

/// The CG update `dv += α c`, `r −= α q` as the forward solve's right-hand side, and
/// `s = S P⁻¹ r` with the terms of `r · s` from the backward solve
/// ([`IncompleteBlockLdl::sweep`]). `dv` and `r` hold the rows from `base` on.
pub(super) struct UpdateSweep<'a, F: FilterSet> {
    pub(super) base: usize,
    pub(super) alpha: f32,
    pub(super) c: &'a [Vec3],
    pub(super) q: &'a [Vec3],
    pub(super) dv: &'a mut [Vec3],
    pub(super) r: &'a mut [Vec3],
    pub(super) filters: &'a F,
}

impl<F: FilterSet> super::block_ldl::Sweep for UpdateSweep<'_, F> {
    #[inline]
    fn rhs(&mut self, v: usize) -> Vec3 {
        let k = v - self.base;
        self.dv[k] += self.c[v] * self.alpha;
        self.r[k] -= self.q[v] * self.alpha;
        self.r[k]
    }
    #[inline]
    fn finish(&mut self, v: usize, x: Vec3) -> (Vec3, f64) {
        let s = if F::ALL_FREE {
            x
        } else {
            self.filters.get_ref(v).apply(x)
        };
        (s, dot_f64(self.r[v - self.base], s))
    }
    fn split_at(self, v: usize) -> (Self, Self) {
        let k = v - self.base;
        let (dv0, dv1) = self.dv.split_at_mut(k);
        let (r0, r1) = self.r.split_at_mut(k);
        let piece = |base, dv, r| UpdateSweep {
            base,
            alpha: self.alpha,
            c: self.c,
            q: self.q,
            dv,
            r,
            filters: self.filters,
        };
        (piece(self.base, dv0, r0), piece(v, dv1, r1))
    }
}

/// Rows below which the direction pass runs on the calling thread: its vectors (`s`, `c`,
/// the filters) fit in a core's cache and the pass costs a few microseconds, the price of a
/// fork-join. The pass writes each row from that row alone, so the bits are the same either way.
const SERIAL_VECTOR_ROWS: usize = 16_384;

/// `c = S (s + β c)`, or `c = S s` for the first direction.
fn direction_pass<F: FilterSet>(filters: &F, s: &[Vec3], beta: Option<f32>, c: &mut [Vec3]) {
    if c.len() < SERIAL_VECTOR_ROWS {
        direction_rows(filters, 0, s, beta, c);
        return;
    }
    reduce::for_each_chunk(c, |first, chunk: &mut [Vec3]| {
        direction_rows(filters, first, &s[first..first + chunk.len()], beta, chunk);
    });
}

/// The direction pass on the rows `first..first + c.len()`; `s` holds the same rows.
#[inline]
pub(super) fn direction_rows<F: FilterSet>(
    filters: &F,
    first: usize,
    s: &[Vec3],
    beta: Option<f32>,
    c: &mut [Vec3],
) {
    for (k, (ci, si)) in c.iter_mut().zip(s).enumerate() {
        let v = match beta {
            Some(beta) => *si + *ci * beta,
            None => *si,
        };
        *ci = filters.get_ref(first + k).apply(v);
    }
}

/// `q = S (A c)`; returns `c · q`.
fn filtered_product_pass<F: FilterSet>(
    a: &BlockCsr,
    filters: &F,
    c: &[Vec3],
    q: &mut [Vec3],
) -> f64 {
    reduce::sum_chunks_mut(q, |first, chunk: &mut [Vec3]| {
        product_rows(a, filters, c, first, chunk)
    })
}

/// The product pass on the rows `first..first + q.len()` (one chunk of the fixed summation
/// order); `c` is whole. Returns the chunk's `c · q`, summed in row order. Runs its AVX copy
/// where the CPU has AVX (`super::isa`: fewer instructions, the same bits).
#[inline]
pub(super) fn product_rows<F: FilterSet>(
    a: &BlockCsr,
    filters: &F,
    c: &[Vec3],
    first: usize,
    q: &mut [Vec3],
) -> f64 {
    with_best_isa(
        #[inline(always)]
        || product_rows_here(a, filters, c, first, q),
    )
}

/// [`product_rows`] as compiled for the caller's target.
#[inline(always)]
fn product_rows_here<F: FilterSet>(
    a: &BlockCsr,
    filters: &F,
    c: &[Vec3],
    first: usize,
    q: &mut [Vec3],
) -> f64 {
    let mut acc = 0.0;
    // The rows' offsets and `c` zipped with `q`: fewer bounds checks a row.
    let offsets = &a.pattern().row_offsets()[first..first + q.len() + 1];
    let rows_c = &c[first..first + q.len()];
    for (k, ((qi, ends), ci)) in q.iter_mut().zip(offsets.windows(2)).zip(rows_c).enumerate() {
        let slots = ends[0] as usize..ends[1] as usize;
        *qi = filters.get_ref(first + k).apply(a.slots_product(slots, c));
        acc += dot_f64(*ci, *qi);
    }
    acc
}

/// `dv += α c`, `r -= α q`, `s = S P⁻¹ r`; returns `r · s`.
#[allow(clippy::too_many_arguments)] // one fused pass over seven arrays
fn update_pass<F: FilterSet>(
    alpha: f32,
    filters: &F,
    c: &[Vec3],
    q: &[Vec3],
    pre: &mut Pre<'_>,
    dv: &mut [Vec3],
    r: &mut [Vec3],
    s: &mut [Vec3],
) -> f64 {
    match pre {
        Pre::Jacobi(precond) => reduce::sum_chunks_mut(
            (dv, (r, s)),
            |first, (dvc, (rc, sc)): (&mut [Vec3], (&mut [Vec3], &mut [Vec3]))| {
                let mut acc = 0.0;
                for (k, ((d, ri), si)) in dvc
                    .iter_mut()
                    .zip(rc.iter_mut())
                    .zip(sc.iter_mut())
                    .enumerate()
                {
                    let i = first + k;
                    *d += c[i] * alpha;
                    *ri -= q[i] * alpha;
                    *si = filters.get(i).apply(precond.apply_row(i, *ri));
                    acc += dot_f64(*ri, *si);
                }
                acc
            },
        ),
        Pre::Factor(factor) => {
            // The update inside the forward solve, the filter and r · s inside the backward.
            let sweep = UpdateSweep {
                base: 0,
                alpha,
                c,
                q,
                dv,
                r,
                filters,
            };
            factor.sweep(sweep, s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::block_csr::tests::{Rng, dense_mul, in_pool, random_spd};
    use crate::linalg::pattern::BlockPattern;
    use faer::linalg::solvers::Solve;
    use glam::DVec3;
    use std::sync::Arc;

    fn never(_: u32) -> bool {
        false
    }

    fn settings(max_iterations: u32, tolerance: f64) -> PcgSettings {
        PcgSettings {
            max_iterations,
            tolerance,
        }
    }

    /// A mix of all four filter kinds, some with axis-aligned directions.
    fn random_filters(n: usize, rng: &mut Rng) -> Vec<Filter> {
        (0..n)
            .map(|_| match rng.below(8) {
                0..=2 => Filter::Free,
                3 => Filter::one_direction(rng.vec3()),
                4 => Filter::OneDirection(Vec3::Y),
                5 => Filter::two_directions(rng.vec3(), rng.vec3()),
                6 => Filter::TwoDirections(Vec3::X, Vec3::Z),
                _ => Filter::Fixed,
            })
            .collect()
    }

    /// Prescribed values in range(I - S_i), away from zero so bit comparisons are meaningful.
    fn random_z(filters: &[Filter], rng: &mut Rng) -> Vec<Vec3> {
        filters
            .iter()
            .map(|f| f.constrained(rng.vec3() + Vec3::splat(2.0)))
            .collect()
    }

    /// Orthonormal basis of range(S_i) in f64.
    fn free_basis(f: &Filter) -> Vec<DVec3> {
        match *f {
            Filter::Free => vec![DVec3::X, DVec3::Y, DVec3::Z],
            Filter::OneDirection(p) => {
                let (u, v) = p.as_dvec3().normalize().any_orthonormal_pair();
                vec![u, v]
            }
            Filter::TwoDirections(p, q) => vec![p.as_dvec3().cross(q.as_dvec3()).normalize()],
            Filter::Fixed => vec![],
        }
    }

    /// Direct solve of (2.16) in f64: dv = z + Q w with (Qᵀ A Q) w = Qᵀ (b - A z), by a dense
    /// Cholesky factorisation (faer).
    fn reduced_direct_solve(a: &BlockCsr, b: &[Vec3], z: &[Vec3], filters: &[Filter]) -> Vec<f64> {
        let n3 = 3 * a.num_rows();
        let d = a.to_dense();
        let mut cols: Vec<Vec<f64>> = Vec::new();
        for (i, f) in filters.iter().enumerate() {
            for u in free_basis(f) {
                let mut col = vec![0.0; n3];
                col[3 * i..3 * i + 3].copy_from_slice(&u.to_array());
                cols.push(col);
            }
        }
        let m = cols.len();
        let az = dense_mul(&d, z);
        let rhs0: Vec<f64> = (0..n3)
            .map(|k| f64::from(b[k / 3][k % 3]) - az[k])
            .collect();
        let aq: Vec<Vec<f64>> = cols
            .iter()
            .map(|col| {
                (0..n3)
                    .map(|r| (0..n3).map(|c| d[r * n3 + c] * col[c]).sum())
                    .collect()
            })
            .collect();
        let dotv = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f64>();
        let k = faer::Mat::<f64>::from_fn(m, m, |r, c| dotv(&cols[r], &aq[c]));
        let rhs = faer::Mat::<f64>::from_fn(m, 1, |r, _| dotv(&cols[r], &rhs0));
        let w = k
            .llt(faer::Side::Lower)
            .expect("SPD reduced matrix")
            .solve(&rhs);
        let mut dv: Vec<f64> = z.iter().flat_map(|v| v.to_array()).map(f64::from).collect();
        for (j, col) in cols.iter().enumerate() {
            for (x, c) in dv.iter_mut().zip(col) {
                *x += w[(j, 0)] * c;
            }
        }
        dv
    }

    fn max_abs_diff(dv: &[Vec3], reference: &[f64]) -> (f64, f64) {
        let scale = reference.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = dv
            .iter()
            .flat_map(|v| v.to_array())
            .zip(reference)
            .fold(0.0f64, |m, (x, r)| m.max((f64::from(x) - r).abs()));
        (err, scale)
    }

    /// Bits of the constrained coordinates that must be exact: whole rows of fixed vertices,
    /// the constrained axes of axis-aligned filters.
    fn assert_constrained_exact(dv: &[Vec3], z: &[Vec3], filters: &[Filter]) {
        for (i, f) in filters.iter().enumerate() {
            let axes: &[usize] = match f {
                Filter::Fixed => &[0, 1, 2],
                Filter::OneDirection(p) if *p == Vec3::Y => &[1],
                Filter::TwoDirections(p, q) if *p == Vec3::X && *q == Vec3::Z => &[0, 2],
                _ => &[],
            };
            for &k in axes {
                assert_eq!(
                    dv[i][k].to_bits(),
                    z[i][k].to_bits(),
                    "row {i} axis {k}: {f:?}"
                );
            }
            // General directions: to rounding.
            let gap = f.constrained(dv[i]) - z[i];
            assert!(
                gap.length() <= 1e-6 * (1.0 + dv[i].length()),
                "row {i}: {gap:?} dv {:?} z {:?} {f:?}",
                dv[i],
                z[i]
            );
        }
    }

    fn random_rhs(n: usize, rng: &mut Rng) -> Vec<Vec3> {
        (0..n).map(|_| rng.vec3() * 10.0).collect()
    }

    #[test]
    fn filter_is_an_orthogonal_projector() {
        let mut rng = Rng::new(21);
        for _ in 0..100 {
            for f in [
                Filter::Free,
                Filter::one_direction(rng.vec3()),
                Filter::two_directions(rng.vec3(), rng.vec3()),
                Filter::OneDirection(Vec3::Z),
                Filter::Fixed,
            ] {
                assert!(f.is_valid(1e-5), "{f:?}");
                let s = f.matrix();
                let close =
                    |x: Mat3, y: Mat3| (x - y).abs().to_cols_array().iter().all(|&e| e < 1e-5);
                assert!(close(s * s, s), "S² != S for {f:?}");
                assert!(close(s, s.transpose()), "S != Sᵀ for {f:?}");
                let trace = s.x_axis.x + s.y_axis.y + s.z_axis.z;
                assert_eq!(
                    trace.round() as u32,
                    f.free_dimensions(),
                    "trace = rank for {f:?}"
                );
                let a = rng.vec3() * 5.0;
                assert!(
                    (f.apply(a) + f.constrained(a) - a).length() < 1e-5,
                    "apply + constrained != I"
                );
                assert!((f.apply(a) - s * a).length() < 1e-5);
                assert!(
                    f.apply(a).dot(f.constrained(a)).abs() < 1e-4,
                    "parts not orthogonal"
                );
            }
        }
        assert_eq!(Filter::one_direction(Vec3::ZERO), Filter::Free);
        assert_eq!(
            Filter::two_directions(Vec3::X, Vec3::X * 2.0),
            Filter::OneDirection(Vec3::X)
        );
        assert_eq!(
            Filter::two_directions(Vec3::ZERO, Vec3::Y),
            Filter::OneDirection(Vec3::Y)
        );
        assert!(!Filter::OneDirection(Vec3::splat(1.0)).is_valid(1e-3));
        assert!(!Filter::TwoDirections(Vec3::X, Vec3::new(0.6, 0.8, 0.0)).is_valid(1e-3));
        // Axis-aligned filters zero the constrained coordinate exactly.
        let a = Vec3::new(0.3, -7.1, 2.9);
        assert_eq!(
            Filter::OneDirection(Vec3::Y).apply(a),
            Vec3::new(0.3, 0.0, 2.9)
        );
        assert_eq!(Filter::Fixed.apply(a), Vec3::ZERO);
        assert_eq!(Filter::Free.apply(a), a);
    }

    #[test]
    fn unfiltered_solve_matches_dense_cholesky() {
        for seed in 0..64u64 {
            let n = 4 + (seed as usize * 3) % 30;
            let a = random_spd(n, 1 + seed as usize % 3, seed);
            let mut rng = Rng::new(100 + seed);
            let b = random_rhs(n, &mut rng);
            let mut ws = PcgWorkspace::new(n);
            let mut dv = vec![Vec3::ZERO; n];
            let report = solve_pcg(&a, &b, &settings(1000, 1e-6), &mut ws, &mut dv, &mut never);
            assert!(report.converged, "seed {seed}: {report:?}");
            assert!(!report.interrupted && !report.indefinite);
            let reference =
                reduced_direct_solve(&a, &b, &vec![Vec3::ZERO; n], &vec![Filter::Free; n]);
            let (err, scale) = max_abs_diff(&dv, &reference);
            assert!(
                err <= 5e-4 * scale,
                "seed {seed}: error {err} at scale {scale}"
            );
        }
    }

    #[test]
    fn filtered_solve_matches_reduced_direct_solve() {
        for seed in 0..64u64 {
            let n = 3 + (seed as usize * 5) % 35;
            let a = random_spd(n, 1 + seed as usize % 4, 1000 + seed);
            let mut rng = Rng::new(200 + seed);
            let filters = random_filters(n, &mut rng);
            let z = random_z(&filters, &mut rng);
            let b = random_rhs(n, &mut rng);
            let mut ws = PcgWorkspace::new(n);
            // Garbage warm start in the constrained directions must be overwritten by z.
            let mut dv: Vec<Vec3> = (0..n).map(|_| rng.vec3() * 100.0).collect();
            let s = settings(1000, 1e-6);
            let report = solve_filtered_pcg(&a, &b, &z, &filters, &s, &mut ws, &mut dv, &mut never);
            assert!(report.converged, "seed {seed}: {report:?}");
            assert_constrained_exact(&dv, &z, &filters);
            let reference = reduced_direct_solve(&a, &b, &z, &filters);
            let (err, scale) = max_abs_diff(&dv, &reference);
            assert!(
                err <= 5e-4 * scale,
                "seed {seed}: error {err} at scale {scale}"
            );
        }
    }

    /// A factored-preconditioner solve converged without a shift or a fallback, kept the
    /// constrained components exact, and reached the dense reduced solve of (2.16) to 5e-4 of
    /// its largest entry.
    fn assert_factored_solve_exact(
        report: &PcgReport,
        a: &BlockCsr,
        b: &[Vec3],
        z: &[Vec3],
        filters: &[Filter],
        dv: &[Vec3],
        what: &str,
    ) {
        assert!(report.converged, "{what}: {report:?}");
        assert!(!report.preconditioner_fallback && report.preconditioner_shift == 0.0);
        assert_constrained_exact(dv, z, filters);
        let reference = reduced_direct_solve(a, b, z, filters);
        let (err, scale) = max_abs_diff(dv, &reference);
        assert!(err <= 5e-4 * scale, "{what}: error {err} at scale {scale}");
    }

    const FACTORED: [Preconditioner; 2] = [Preconditioner::BlockSgs, Preconditioner::BlockIc0];

    /// The filtered solve with the incomplete-factor preconditioners (built from the filtered
    /// matrix, applied as `S P⁻¹ S`) reaches the dense reduced solve of (2.16), keeps the
    /// constrained components exact, and needs fewer iterations than block Jacobi in total.
    #[test]
    fn factored_preconditioners_match_reduced_direct_solve() {
        for kind in FACTORED {
            let (mut it_kind, mut it_jacobi) = (0, 0);
            for seed in 0..64u64 {
                let n = 3 + (seed as usize * 5) % 35;
                let a = random_spd(n, 1 + seed as usize % 4, 1000 + seed);
                let mut rng = Rng::new(200 + seed);
                let filters = random_filters(n, &mut rng);
                let z = random_z(&filters, &mut rng);
                let b = random_rhs(n, &mut rng);
                let mut ws = PcgWorkspace::with_preconditioner(a.pattern(), kind);
                assert_eq!(ws.preconditioner_kind(), kind);
                let garbage: Vec<Vec3> = (0..n).map(|_| rng.vec3() * 100.0).collect();
                let mut dv = garbage.clone();
                let s = settings(1000, 1e-6);
                let report =
                    solve_filtered_pcg(&a, &b, &z, &filters, &s, &mut ws, &mut dv, &mut never);
                let what = format!("{kind:?} seed {seed}");
                assert_factored_solve_exact(&report, &a, &b, &z, &filters, &dv, &what);
                let mut jacobi = PcgWorkspace::new(n);
                let mut dvj = garbage;
                let rj =
                    solve_filtered_pcg(&a, &b, &z, &filters, &s, &mut jacobi, &mut dvj, &mut never);
                it_kind += report.iterations;
                it_jacobi += rj.iterations;
            }
            assert!(
                it_kind < it_jacobi,
                "{kind:?}: {it_kind} vs block Jacobi {it_jacobi}"
            );
        }
    }

    /// A workspace whose factor is in two parts and a separator, whatever their sizes.
    fn workspace_in_two_parts(pattern: &BlockPattern, kind: Preconditioner) -> PcgWorkspace {
        let mut ws = PcgWorkspace::with_preconditioner(pattern, kind);
        ws.factor = Some(IncompleteBlockLdl::in_two_parts(pattern));
        ws
    }

    #[test]
    fn factors_in_two_parts_match_reduced_direct_solve() {
        for kind in FACTORED {
            for seed in 0..32u64 {
                let n = 8 + (seed as usize * 7) % 40;
                // A chain with a few long couplings: both parts and the separator non-empty.
                let a = random_spd(n, seed as usize % 2, 3000 + seed);
                let mut rng = Rng::new(400 + seed);
                let filters = random_filters(n, &mut rng);
                let z = random_z(&filters, &mut rng);
                let b = random_rhs(n, &mut rng);
                let mut ws = workspace_in_two_parts(a.pattern(), kind);
                let ldl = ws.factor.as_ref().expect("a factored workspace");
                assert_eq!(ldl.num_parts(), 2);
                assert!(ldl.num_separator_rows() > 0 && ldl.num_separator_rows() < n);
                let mut dv: Vec<Vec3> = (0..n).map(|_| rng.vec3()).collect();
                let s = settings(1000, 1e-6);
                let report =
                    solve_filtered_pcg(&a, &b, &z, &filters, &s, &mut ws, &mut dv, &mut never);
                let what = format!("{kind:?} seed {seed}");
                assert_factored_solve_exact(&report, &a, &b, &z, &filters, &dv, &what);
            }
        }
    }

    #[test]
    fn factored_preconditioners_unfiltered_match_dense_cholesky() {
        for kind in FACTORED {
            for seed in 0..32u64 {
                let n = 4 + (seed as usize * 3) % 30;
                let a = random_spd(n, 1 + seed as usize % 3, seed);
                let mut rng = Rng::new(100 + seed);
                let b = random_rhs(n, &mut rng);
                let mut ws = PcgWorkspace::with_preconditioner(a.pattern(), kind);
                let mut dv = vec![Vec3::ZERO; n];
                let report = solve_pcg(&a, &b, &settings(1000, 1e-6), &mut ws, &mut dv, &mut never);
                assert!(report.converged, "{kind:?} seed {seed}: {report:?}");
                let reference =
                    reduced_direct_solve(&a, &b, &vec![Vec3::ZERO; n], &vec![Filter::Free; n]);
                let (err, scale) = max_abs_diff(&dv, &reference);
                assert!(
                    err <= 5e-4 * scale,
                    "{kind:?} seed {seed}: {err} at {scale}"
                );
            }
        }
    }

    /// Kershaw's 4×4 SPD matrix (diagonal `d`, a 4-cycle) in `s I₃` blocks: IC(0) breaks down
    /// on it for `d = 3` at every shift, and for `d = 3.2` without a shift.
    fn kershaw(d: f32) -> BlockCsr {
        let pattern = Arc::new(BlockPattern::from_pairs(
            4,
            [(0, 1), (1, 2), (2, 3), (0, 3)],
        ));
        let mut a = BlockCsr::new(pattern);
        let entries = [
            (0, 0, d),
            (1, 1, d),
            (2, 2, d),
            (3, 3, d),
            (0, 1, -2.0),
            (1, 2, -2.0),
            (2, 3, -2.0),
            (0, 3, 2.0),
        ];
        for (i, j, v) in entries {
            let m = Mat3::from_diagonal(Vec3::splat(v));
            let sij = a.pattern().slot(i, j).expect("in pattern");
            a.add(sij, m);
            if i != j {
                let sji = a.pattern().slot(j, i).expect("in pattern");
                a.add(sji, m);
            }
        }
        a
    }

    #[test]
    fn ic0_breakdown_is_shifted_or_falls_back_to_block_jacobi() {
        let b: Vec<Vec3> = (0..4)
            .map(|i| Vec3::new(1.0, -0.5, 2.0) * (i as f32 + 1.0))
            .collect();
        for (d, expect_fallback) in [(3.2, false), (3.0, true)] {
            let a = kershaw(d);
            let mut ws = PcgWorkspace::with_preconditioner(a.pattern(), Preconditioner::BlockIc0);
            let mut dv = vec![Vec3::ZERO; 4];
            let report = solve_pcg(&a, &b, &settings(100, 1e-6), &mut ws, &mut dv, &mut never);
            assert!(report.converged && !report.indefinite, "d {d}: {report:?}");
            assert_eq!(
                report.preconditioner_fallback, expect_fallback,
                "d {d}: {report:?}"
            );
            if expect_fallback {
                assert_eq!(report.preconditioner_shift, 0.0);
            } else {
                assert!(report.preconditioner_shift > 0.0, "d {d}: {report:?}");
            }
            let reference = reduced_direct_solve(&a, &b, &[Vec3::ZERO; 4], &[Filter::Free; 4]);
            let (err, scale) = max_abs_diff(&dv, &reference);
            assert!(err <= 1e-4 * scale, "d {d}: {err} at {scale}");
        }
    }

    #[test]
    fn ic0_on_an_indefinite_matrix_falls_back_and_reports() {
        // Negative diagonal block: no shift can help; block Jacobi takes over and the PCG
        // reports the indefinite direction. With that vertex fixed, IC(0) of the filtered matrix
        // is fine.
        let (n, a, b) = indefinite_chain();
        let mut ws = PcgWorkspace::with_preconditioner(a.pattern(), Preconditioner::BlockIc0);
        let mut dv = vec![Vec3::ZERO; n];
        let report = solve_pcg(&a, &b, &settings(1000, 1e-6), &mut ws, &mut dv, &mut never);
        assert!(
            report.preconditioner_fallback && report.indefinite,
            "{report:?}"
        );
        assert!(dv.iter().all(|v| v.is_finite()));
        let mut filters = vec![Filter::Free; n];
        filters[3] = Filter::Fixed;
        let z = vec![Vec3::ZERO; n];
        let b: Vec<Vec3> = (0..n).map(|i| Vec3::splat(i as f32 + 1.0)).collect();
        let report = solve_filtered_pcg(
            &a,
            &b,
            &z,
            &filters,
            &settings(1000, 1e-6),
            &mut ws,
            &mut dv,
            &mut never,
        );
        assert!(report.converged && !report.indefinite, "{report:?}");
        assert!(!report.preconditioner_fallback, "{report:?}");
    }

    #[test]
    fn constrained_components_exact_after_any_iteration_count() {
        let n = 40;
        let a = random_spd(n, 3, 5);
        let mut rng = Rng::new(6);
        let filters = random_filters(n, &mut rng);
        let z = random_z(&filters, &mut rng);
        let b = random_rhs(n, &mut rng);
        for kind in [
            Preconditioner::BlockJacobi,
            Preconditioner::BlockSgs,
            Preconditioner::BlockIc0,
        ] {
            let mut ws = PcgWorkspace::with_preconditioner(a.pattern(), kind);
            for cap in 0..12 {
                let mut dv = vec![Vec3::splat(-3.0); n];
                let report = solve_filtered_pcg(
                    &a,
                    &b,
                    &z,
                    &filters,
                    &settings(cap, 1e-12),
                    &mut ws,
                    &mut dv,
                    &mut never,
                );
                assert_eq!(report.iterations, cap, "the cap is honoured");
                assert!(!report.converged);
                assert_constrained_exact(&dv, &z, &filters);
            }
        }
    }

    #[test]
    fn tolerance_is_honoured_on_the_true_residual() {
        let n = 60;
        let a = random_spd(n, 3, 31);
        let mut rng = Rng::new(32);
        let filters = random_filters(n, &mut rng);
        let z = random_z(&filters, &mut rng);
        let b = random_rhs(n, &mut rng);
        let mut ws = PcgWorkspace::new(n);
        let mut precond = BlockJacobi::new(n);
        precond.update(&a);
        // Preconditioned norm of S(b - A x), recomputed from scratch.
        let pnorm2 = |x: &[Vec3]| -> f64 {
            let mut ax = vec![Vec3::ZERO; n];
            a.mul_vec(x, &mut ax);
            (0..n)
                .map(|i| {
                    let r = filters[i].apply(b[i] - ax[i]);
                    dot_f64(r, precond.apply_row(i, r))
                })
                .sum()
        };
        let d0 = pnorm2(&z);
        let mut last_iterations = 0;
        for tol in [1e-1, 1e-2, 1e-3, 1e-4] {
            let mut dv = vec![Vec3::ZERO; n];
            let report = solve_filtered_pcg(
                &a,
                &b,
                &z,
                &filters,
                &settings(500, tol),
                &mut ws,
                &mut dv,
                &mut never,
            );
            assert!(
                report.converged && report.relative_residual <= tol,
                "{tol}: {report:?}"
            );
            let true_rel = (pnorm2(&dv) / d0).sqrt();
            assert!(
                true_rel <= 1.5 * tol,
                "tol {tol}: true relative residual {true_rel}"
            );
            assert!(report.iterations >= last_iterations);
            last_iterations = report.iterations;
        }
        assert!(
            last_iterations > 3,
            "the system must need several iterations"
        );
    }

    #[test]
    fn d0_is_measured_on_the_residual_at_z() {
        // b = A z exactly in the free directions: S(b - A z) = 0, so there is nothing to solve
        // (with d_0 on S b the solver would iterate).
        let n = 10;
        let a = random_spd(n, 2, 41);
        let mut rng = Rng::new(42);
        let mut filters = random_filters(n, &mut rng);
        filters[0] = Filter::Fixed;
        let z = random_z(&filters, &mut rng);
        let mut b = vec![Vec3::ZERO; n];
        a.mul_vec(&z, &mut b);
        let mut ws = PcgWorkspace::new(n);
        let mut dv: Vec<Vec3> = (0..n).map(|_| rng.vec3()).collect();
        let report = solve_filtered_pcg(
            &a,
            &b,
            &z,
            &filters,
            &settings(100, 1e-6),
            &mut ws,
            &mut dv,
            &mut never,
        );
        assert_eq!(report.iterations, 0, "{report:?}");
        assert!(report.converged);
        assert_eq!(dv, z);
    }

    #[test]
    fn should_stop_interrupts_and_keeps_the_iterate() {
        let n = 50;
        let a = random_spd(n, 3, 51);
        let mut rng = Rng::new(52);
        let filters = random_filters(n, &mut rng);
        let z = random_z(&filters, &mut rng);
        let b = random_rhs(n, &mut rng);
        let mut ws = PcgWorkspace::new(n);
        let mut calls = Vec::new();
        let mut stop = |it: u32| {
            calls.push(it);
            it >= 4
        };
        let mut dv = vec![Vec3::ZERO; n];
        let report = solve_filtered_pcg(
            &a,
            &b,
            &z,
            &filters,
            &settings(500, 1e-8),
            &mut ws,
            &mut dv,
            &mut stop,
        );
        assert_eq!(calls, vec![0, 1, 2, 3, 4]);
        assert!(report.interrupted && !report.converged);
        assert_eq!(report.iterations, 4);
        // The kept iterate is exactly the one a 4-iteration cap produces.
        let mut capped = vec![Vec3::ZERO; n];
        let r4 = solve_filtered_pcg(
            &a,
            &b,
            &z,
            &filters,
            &settings(4, 1e-8),
            &mut ws,
            &mut capped,
            &mut never,
        );
        assert_eq!(dv, capped);
        assert_eq!(
            report.relative_residual.to_bits(),
            r4.relative_residual.to_bits()
        );
        assert!(report.relative_residual < 1.0);
        assert_constrained_exact(&dv, &z, &filters);
    }

    /// A chain of six blocks with a negative diagonal block at vertex 3, and a load there.
    fn indefinite_chain() -> (usize, BlockCsr, Vec<Vec3>) {
        let n = 6;
        let pattern = Arc::new(BlockPattern::from_pairs(
            n,
            (1..n as u32).map(|i| (i - 1, i)),
        ));
        let mut a = BlockCsr::new(pattern);
        for i in 0..n {
            let d = if i == 3 { -2.0 } else { 4.0 };
            a.add(
                a.pattern().diag_slot(i),
                Mat3::from_diagonal(Vec3::splat(d)),
            );
        }
        let b: Vec<Vec3> = (0..n)
            .map(|i| Vec3::splat(if i == 3 { 1.0 } else { 0.0 }))
            .collect();
        (n, a, b)
    }

    #[test]
    fn indefinite_matrix_is_reported_not_looped_on() {
        let (n, a, b) = indefinite_chain();
        let mut ws = PcgWorkspace::new(n);
        let mut dv = vec![Vec3::ZERO; n];
        let report = solve_pcg(&a, &b, &settings(1000, 1e-6), &mut ws, &mut dv, &mut never);
        assert!(report.indefinite && !report.converged, "{report:?}");
        assert_eq!(report.iterations, 0);
        assert!(dv.iter().all(|v| v.is_finite()));
        // The same vertex fixed: the matrix is SPD on range(S) and the solve succeeds.
        let mut filters = vec![Filter::Free; n];
        filters[3] = Filter::Fixed;
        let z = vec![Vec3::ZERO; n];
        let b: Vec<Vec3> = (0..n).map(|i| Vec3::splat(i as f32 + 1.0)).collect();
        let report = solve_filtered_pcg(
            &a,
            &b,
            &z,
            &filters,
            &settings(1000, 1e-6),
            &mut ws,
            &mut dv,
            &mut never,
        );
        assert!(report.converged && !report.indefinite, "{report:?}");
    }

    #[test]
    fn all_fixed_returns_z() {
        let n = 20;
        let a = random_spd(n, 2, 61);
        let mut rng = Rng::new(62);
        let filters = vec![Filter::Fixed; n];
        let z: Vec<Vec3> = (0..n).map(|_| rng.vec3() + Vec3::splat(3.0)).collect();
        let b = random_rhs(n, &mut rng);
        let mut ws = PcgWorkspace::new(n);
        let mut dv = vec![Vec3::splat(9.0); n];
        let mut calls = 0;
        let report = solve_filtered_pcg(
            &a,
            &b,
            &z,
            &filters,
            &settings(100, 1e-6),
            &mut ws,
            &mut dv,
            &mut |_| {
                calls += 1;
                false
            },
        );
        assert_eq!(
            report,
            PcgReport {
                converged: true,
                ..PcgReport::default()
            }
        );
        assert_eq!(calls, 0);
        assert!(
            dv.iter()
                .zip(&z)
                .all(|(x, y)| x.to_array().map(f32::to_bits) == y.to_array().map(f32::to_bits))
        );
    }

    #[test]
    fn zero_rhs_gives_zero_without_iterating() {
        let n = 8;
        let a = random_spd(n, 2, 71);
        let mut ws = PcgWorkspace::new(n);
        let mut dv = vec![Vec3::ONE; n];
        let report = solve_pcg(
            &a,
            &vec![Vec3::ZERO; n],
            &settings(100, 1e-6),
            &mut ws,
            &mut dv,
            &mut never,
        );
        assert!(report.converged && report.iterations == 0 && report.relative_residual == 0.0);
        assert!(dv.iter().all(|v| *v == Vec3::ZERO));
    }

    #[test]
    fn non_finite_input_reports_nan() {
        let n = 8;
        let a = random_spd(n, 2, 81);
        let mut b = vec![Vec3::ONE; n];
        b[2].y = f32::NAN;
        let mut ws = PcgWorkspace::new(n);
        let mut dv = vec![Vec3::ZERO; n];
        let report = solve_pcg(&a, &b, &settings(100, 1e-6), &mut ws, &mut dv, &mut never);
        assert!(report.relative_residual.is_nan() && !report.converged && report.iterations == 0);
    }

    #[test]
    fn non_finite_warm_start_falls_back_to_cold_start() {
        let n = 30;
        let a = random_spd(n, 2, 85);
        let mut rng = Rng::new(86);
        let filters = random_filters(n, &mut rng);
        let z = random_z(&filters, &mut rng);
        let b = random_rhs(n, &mut rng);
        let s = settings(500, 1e-5);
        let mut ws = PcgWorkspace::new(n);
        let mut cold = vec![Vec3::ZERO; n];
        let rc = solve_filtered_pcg(&a, &b, &z, &filters, &s, &mut ws, &mut cold, &mut never);
        let mut poisoned = vec![Vec3::splat(f32::NAN); n];
        let rp = solve_filtered_pcg(&a, &b, &z, &filters, &s, &mut ws, &mut poisoned, &mut never);
        assert_eq!(rc, rp);
        assert_eq!(cold, poisoned);
    }

    #[test]
    fn warm_start_saves_iterations_and_reaches_the_same_answer() {
        let n = 80;
        let a = random_spd(n, 3, 91);
        let mut rng = Rng::new(92);
        let filters = random_filters(n, &mut rng);
        let z = random_z(&filters, &mut rng);
        let b = random_rhs(n, &mut rng);
        let s = settings(1000, 1e-5);
        let mut ws = PcgWorkspace::new(n);
        let mut cold = vec![Vec3::ZERO; n];
        let rc = solve_filtered_pcg(&a, &b, &z, &filters, &s, &mut ws, &mut cold, &mut never);
        // Warm start from the answer of a slightly different right-hand side.
        let b2: Vec<Vec3> = b.iter().map(|v| *v * 1.01).collect();
        let mut warm = vec![Vec3::ZERO; n];
        solve_filtered_pcg(&a, &b2, &z, &filters, &s, &mut ws, &mut warm, &mut never);
        let rw = solve_filtered_pcg(&a, &b, &z, &filters, &s, &mut ws, &mut warm, &mut never);
        assert!(rc.converged && rw.converged);
        assert!(
            rw.iterations < rc.iterations,
            "warm {} vs cold {}",
            rw.iterations,
            rc.iterations
        );
        let reference = reduced_direct_solve(&a, &b, &z, &filters);
        for dv in [&cold, &warm] {
            let (err, scale) = max_abs_diff(dv, &reference);
            assert!(err <= 1e-3 * scale, "error {err} at scale {scale}");
        }
        assert_constrained_exact(&warm, &z, &filters);
    }

    #[test]
    fn constraint_impulse_matches_dense() {
        let n = 15;
        let a = random_spd(n, 2, 101);
        let mut rng = Rng::new(102);
        let filters = random_filters(n, &mut rng);
        let dv: Vec<Vec3> = (0..n).map(|_| rng.vec3()).collect();
        let b = random_rhs(n, &mut rng);
        let mut out = vec![Vec3::ZERO; n];
        constraint_impulse(&a, &b, &dv, &filters, &mut out);
        let adv = dense_mul(&a.to_dense(), &dv);
        for i in 0..n {
            let res = Vec3::new(
                adv[3 * i] as f32,
                adv[3 * i + 1] as f32,
                adv[3 * i + 2] as f32,
            ) - b[i];
            let expected = filters[i].constrained(res);
            assert!(
                (out[i] - expected).length() <= 1e-4 * (1.0 + expected.length()),
                "row {i}"
            );
            assert!(filters[i].apply(out[i]).length() <= 1e-4 * (1.0 + out[i].length()));
        }
    }

    #[test]
    fn the_crew_gives_the_fork_join_bits_from_any_start() {
        // The crew runs the factorisation and the set-up too: warm, cold and non-finite
        // starts, a zero `z`, every vertex free, and an IC(0) that breaks down at every shift
        // (the crew hands the solve back, block Jacobi takes it) give the fork-join bits.
        let n = 9_000;
        let a = random_spd(n, 3, 131);
        let mut negated = a.clone();
        for m in negated.values_mut() {
            *m = -*m;
        }
        let mut rng = Rng::new(132);
        let filters = random_filters(n, &mut rng);
        let z = random_z(&filters, &mut rng);
        let zero = vec![Vec3::ZERO; n];
        let b = random_rhs(n, &mut rng);
        let warm: Vec<Vec3> = (0..n).map(|_| rng.vec3()).collect();
        let mut poisoned = warm.clone();
        poisoned[17].y = f32::NAN;
        for kind in FACTORED {
            for (matrix, start, z, free) in [
                (&a, &warm, &z, false),
                (&a, &poisoned, &z, false),
                (&a, &warm, &zero, false),
                (&a, &zero, &zero, false),
                (&a, &warm, &zero, true),
                (&negated, &warm, &z, false),
            ] {
                let run = || {
                    let mut ws = workspace_in_two_parts(a.pattern(), kind);
                    let mut dv = start.clone();
                    let settings = settings(50, 1e-6);
                    let report = if free {
                        solve_pcg(matrix, &b, &settings, &mut ws, &mut dv, &mut never)
                    } else {
                        solve_filtered_pcg(
                            matrix, &b, z, &filters, &settings, &mut ws, &mut dv, &mut never,
                        )
                    };
                    (bits(&dv), report, bits(ws.residual()))
                };
                let serial = run();
                for threads in [2, 3] {
                    let crew = in_pool(threads, run);
                    assert_eq!(serial.1, crew.1, "{kind:?} {threads}");
                    assert_eq!(
                        serial.1.relative_residual.to_bits(),
                        crew.1.relative_residual.to_bits()
                    );
                    assert!(
                        serial.0 == crew.0 && serial.2 == crew.2,
                        "{kind:?} {threads}"
                    );
                }
                let negative = std::ptr::eq(matrix, &negated);
                assert_eq!(
                    serial.1.preconditioner_fallback,
                    negative && kind == Preconditioner::BlockIc0,
                    "{kind:?} {:?}",
                    serial.1
                );
                assert!(negative || serial.1.iterations > 0, "{:?}", serial.1);
            }
        }
    }

    #[test]
    fn the_crew_gives_the_fork_join_bits() {
        // From the test's own thread (not a rayon worker) the solve takes the fork-join
        // passes; inside a pool, the crew (`pcg_crew`). Same bits, same report, also when
        // the deadline or the cap stops the iteration part-way.
        let n = 9_000;
        let a = random_spd(n, 3, 121);
        let mut rng = Rng::new(122);
        let filters = random_filters(n, &mut rng);
        let z = random_z(&filters, &mut rng);
        let b = random_rhs(n, &mut rng);
        for kind in FACTORED {
            for (cap, stop_at) in [(200, u32::MAX), (7, u32::MAX), (200, 5), (0, u32::MAX)] {
                let run = || {
                    // A fresh workspace: the factor's shift level carries over between solves.
                    let mut ws = workspace_in_two_parts(a.pattern(), kind);
                    let mut dv = vec![Vec3::ZERO; n];
                    let mut calls = Vec::new();
                    let report = solve_filtered_pcg(
                        &a,
                        &b,
                        &z,
                        &filters,
                        &settings(cap, 1e-6),
                        &mut ws,
                        &mut dv,
                        &mut |it| {
                            calls.push(it);
                            it >= stop_at
                        },
                    );
                    (bits(&dv), report, calls, bits(ws.residual()))
                };
                let serial = run();
                assert!(rayon::current_thread_index().is_none());
                for threads in [1, 2, 4] {
                    let crew = in_pool(threads, run);
                    assert_eq!(serial.1, crew.1, "{kind:?} cap {cap} stop {stop_at}");
                    assert_eq!(
                        serial.1.relative_residual.to_bits(),
                        crew.1.relative_residual.to_bits()
                    );
                    assert_eq!(serial.2, crew.2, "the deadline asked the same");
                    assert!(
                        serial.0 == crew.0 && serial.3 == crew.3,
                        "{kind:?} {threads}"
                    );
                }
                if cap == 200 && stop_at == u32::MAX {
                    assert!(
                        serial.1.converged && serial.1.iterations >= 5,
                        "{:?}",
                        serial.1
                    );
                }
            }
        }
    }

    #[test]
    fn the_product_pass_gives_the_same_bits_in_either_isa_copy() {
        // `product_rows` runs the AVX copy on a CPU with AVX; `product_rows_here` called from
        // here is compiled for the build's target. Same bits (`super::isa`).
        let n = 3_000;
        let a = random_spd(n, 3, 131);
        let mut rng = Rng::new(132);
        let filters = random_filters(n, &mut rng);
        let c = random_rhs(n, &mut rng);
        for (first, len) in [(0, n), (1_024, 1_024), (n - 7, 7)] {
            let (mut q_best, mut q_base) = (vec![Vec3::ZERO; len], vec![Vec3::ZERO; len]);
            let best = product_rows(&a, &&filters[..], &c, first, &mut q_best);
            let base = product_rows_here(&a, &&filters[..], &c, first, &mut q_base);
            assert_eq!(best.to_bits(), base.to_bits());
            assert_eq!(bits(&q_best), bits(&q_base));
        }
    }

    fn bits(v: &[Vec3]) -> Vec<[u32; 3]> {
        v.iter().map(|x| x.to_array().map(f32::to_bits)).collect()
    }

    #[test]
    fn solve_bits_independent_of_thread_count() {
        let n = 20_000;
        let a = random_spd(n, 3, 111);
        let mut rng = Rng::new(112);
        let filters = random_filters(n, &mut rng);
        let z = random_z(&filters, &mut rng);
        let b = random_rhs(n, &mut rng);
        for (kind, two_parts) in [
            (Preconditioner::BlockJacobi, false),
            (Preconditioner::BlockIc0, false),
            (Preconditioner::BlockIc0, true),
        ] {
            let run = |threads| {
                in_pool(threads, || {
                    let mut ws = if two_parts {
                        workspace_in_two_parts(a.pattern(), kind)
                    } else {
                        PcgWorkspace::with_preconditioner(a.pattern(), kind)
                    };
                    let mut dv = vec![Vec3::ZERO; n];
                    let report = solve_filtered_pcg(
                        &a,
                        &b,
                        &z,
                        &filters,
                        &settings(60, 1e-7),
                        &mut ws,
                        &mut dv,
                        &mut never,
                    );
                    (dv, report)
                })
            };
            let (dv1, r1) = run(1);
            assert!(r1.iterations > 10, "{r1:?}");
            for threads in [2, 4] {
                let (dvt, rt) = run(threads);
                assert_eq!(r1.iterations, rt.iterations);
                assert_eq!(
                    r1.relative_residual.to_bits(),
                    rt.relative_residual.to_bits()
                );
                assert!(
                    dv1.iter()
                        .zip(&dvt)
                        .all(|(x, y)| x.to_array().map(f32::to_bits)
                            == y.to_array().map(f32::to_bits))
                );
            }
        }
    }
}

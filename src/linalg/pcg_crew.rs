//! The filtered PCG solve ([`super::pcg`]) with the incomplete factor in two parts, from the
//! factorisation to the last pass, run by a two-thread crew ([`super::crew`]): one fork-join a
//! solve instead of several a pass.
//!
//! Used for the block IC(0) (or SGS) factor in two parts and a separator, when the solve runs
//! in a rayon worker (not under a host dispatcher) and its chunk sums fit one batch
//! ([`usable`]). A solve is a sequence of phases and the leader's work between them:
//!
//! | phase | tasks | each task writes (rows) | reads, shared |
//! |---|---|---|---|
//! | IC(0) of a part at shift `α` | parts 0, 1 | `L`, `D⁻¹`, scratch (the part's) | — |
//! | constraints `dv = z + S dv`, `\|S dv\|²`, `\|z\|²` (start, end) | one a chunk | `dv` (its chunk), its chunk's sums | — |
//! | residual `r = S (b − A x)`, `x` = `z` or `dv` | one a chunk | `r` (its chunk) | `dv` (all) |
//! | forward solve of a part, `r` as it is | parts 0, 1 | `y`, `x` (the part's) | `r` (all), `L`, `D⁻¹` |
//! | backward solve of a part, filter, `r · s` | parts 0, 1 | `x`, `s` (the part's), its part's sum | `r` (all), `L`, `D⁻¹` |
//! | direction `c = S (s + β c)` | one a chunk | `c` (its chunk) | `s` (its chunk) |
//! | product `q = S A c`, `c · q` | one a chunk | `q` (its chunk), its chunk's sum | `c` (all) |
//! | forward solve of a part, with `dv += α c`, `r −= α q` | parts 0, 1 | `dv`, `r`, `y`, `x` (the part's) | `c`, `q` (all), `L`, `D⁻¹` |
//! | backward solve of a part, filter, `r · s` | parts 0, 1 | `x`, `s`, `dv`, `r` (the part's; `dv`, `r` only read), its part's sum | `c`, `q` (all, unused), `L`, `D⁻¹` |
//!
//! (`b`, `z`, `A`, the filters and the factor's pattern are never written during a solve.)
//! The leader runs, while no phase is open: the separator's rows of the factorisation after
//! the parts' (and the next shift after a breakdown, `ShiftLevels`), the sums of the
//! constraints' phase (in chunk order) and the choices they make (a non-finite warm start
//! reset to `z`, `z` dropped when it is zero), each preconditioner solve's separator between
//! the forward and the backward phase, `c · q` (the chunk sums in chunk order, as
//! [`super::reduce::sum_chunks_mut`] adds them) and `α`, `r · s` (separator, part 0, part 1:
//! the order of [`IncompleteBlockLdl::sweep`]) and `β`, and the stopping tests. Every row's
//! arithmetic and every sum's order are those of the fork-join code in [`super::pcg`] (the
//! same functions run them), so the factor and the iterates are bit-identical to it for any
//! thread count, and to each other whichever thread ran which task.
//!
//! The table is rule 1 of the crew's safety argument ([`super::crew`] module doc): in every
//! phase the written rows of distinct tasks are disjoint, and nothing a task reads shared is
//! written by a task of the same phase. The unsafe blocks below borrow exactly the table's
//! rows.
#![allow(unsafe_code)]

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use glam::{Mat3A, Vec3, Vec3A};

use super::block_csr::BlockCsr;
use super::block_ldl::{
    FactorOutcome, FactorShape, FactorStorage, IncompleteBlockLdl, PartSolves, Preconditioner,
};
use super::cg;
use super::crew::{self, Leader, OnCallingThread, Padded, Phases, SharedRows};
use super::pcg::{
    FilterSet, PcgReport, PcgSettings, ResidualSweep, UpdateSweep, constrain_rows, direction_rows,
    product_rows, relative_residual, residual_rows,
};
use super::reduce::{BATCH_CHUNKS, CHUNK_ROWS, dot_serial, num_chunks};
use crate::runtime::executor::parallel_here;

/// Phase kinds (module doc's table).
const DIRECTION_FIRST: u32 = 0;
const DIRECTION: u32 = 1;
const PRODUCT: u32 = 2;
const FORWARD: u32 = 3;
const BACKWARD: u32 = 4;
const FACTOR: u32 = 5;
const CONSTRAIN_START: u32 = 6;
const CONSTRAIN_END: u32 = 7;
const RESIDUAL_AT_Z: u32 = 8;
const RESIDUAL_AT_DV: u32 = 9;
const FORWARD_RESIDUAL: u32 = 10;
const BACKWARD_RESIDUAL: u32 = 11;

/// Whether a solve with `factor` on `n` rows runs in a crew: two parts, at most one batch of
/// chunk sums, on a rayon worker of a pool with another thread to help (module doc). In a
/// pool of one thread the fork-join passes run instead: the same bits, without the crew's
/// join and its phase hand-overs.
pub(super) fn usable(factor: &IncompleteBlockLdl, n: usize) -> bool {
    factor.num_parts() == 2
        && num_chunks(n) <= BATCH_CHUNKS
        && parallel_here()
        && rayon::current_thread_index().is_some()
        && rayon::current_num_threads() > 1
}

/// The solver's vectors, each one entry a row.
pub(super) struct Vectors<'a> {
    pub(super) dv: &'a mut [Vec3],
    pub(super) r: &'a mut [Vec3],
    pub(super) c: &'a mut [Vec3],
    pub(super) q: &'a mut [Vec3],
    pub(super) s: &'a mut [Vec3],
}

/// One solve's data as the crew's tasks see it.
struct CrewSolve<'a, F: FilterSet> {
    a: &'a BlockCsr,
    b: &'a [Vec3],
    /// The caller's `z`, as given (the constraints imposed at the start use it so).
    z: Option<&'a [Vec3]>,
    /// Whether `z` is used: given and `|z|² ≠ 0` (a NaN keeps it), stored by the leader after
    /// the constraints' first phase.
    z_used: AtomicBool,
    filters: &'a F,
    shape: FactorShape<'a>,
    /// The factor's blocks: `L` by slot, `D⁻¹` and the factorisation's scratch by factor row.
    l: SharedRows<'a, Mat3A>,
    d_inv: SharedRows<'a, Mat3A>,
    scratch: SharedRows<'a, Mat3A>,
    dv: SharedRows<'a, Vec3>,
    r: SharedRows<'a, Vec3>,
    c: SharedRows<'a, Vec3>,
    q: SharedRows<'a, Vec3>,
    s: SharedRows<'a, Vec3>,
    /// The forward solve's `y`, by rows of `A`.
    y: SharedRows<'a, Vec3A>,
    /// The backward solve's working vector `x`, by rows of `A`.
    x: SharedRows<'a, Vec3A>,
    /// The factorisation's shift as `f64` bits, and whether each part's attempt succeeded.
    shift: AtomicU64,
    part_factored: [AtomicBool; 2],
    /// `α` and `β` as `f32` bits, stored by the leader before it opens a phase.
    alpha: AtomicU32,
    beta: AtomicU32,
    /// `c · q` (or `|S dv_in|²`) of each chunk (`f64` bits), each on its own cache lines:
    /// neighbouring chunks' sums are written by different threads.
    chunk_sums: [Padded<AtomicU64>; BATCH_CHUNKS],
    /// `|z|²` of each chunk, apart like `chunk_sums`.
    z_sums: [Padded<AtomicU64>; BATCH_CHUNKS],
    /// `r · s` of each part's backward solve (`f64` bits), apart like the chunks' sums.
    part_sums: [Padded<AtomicU64>; 2],
}

/// Chunk `k` of `n` rows.
fn chunk(k: usize, n: usize) -> Range<usize> {
    k * CHUNK_ROWS..((k + 1) * CHUNK_ROWS).min(n)
}

/// Sum of the first `k` sums, in order.
fn sum_in_order(sums: &[Padded<AtomicU64>], k: usize) -> f64 {
    let mut total = 0.0f64;
    for p in &sums[..k] {
        total += f64::from_bits(p.load(Ordering::Relaxed));
    }
    total
}

impl<F: FilterSet> CrewSolve<'_, F> {
    /// The factor's solves.
    ///
    /// # Safety
    /// While they live, no one writes `L` or `D⁻¹` (every phase but the factor's, and the
    /// leader between phases outside the factorisation).
    unsafe fn solves(&self) -> PartSolves<'_> {
        // SAFETY: the caller's contract.
        unsafe {
            self.shape.solves(
                self.l.rows(0..self.l.len()),
                self.d_inv.rows(0..self.d_inv.len()),
            )
        }
    }

    /// `z` if it is used (`z_used`).
    fn z_used(&self) -> Option<&[Vec3]> {
        self.z.filter(|_| self.z_used.load(Ordering::Relaxed))
    }

    /// The CG update and finish over the rows `rows` (a part or the separator).
    ///
    /// # Safety
    /// While the sweep lives, no task writes `c` or `q`, and no one else borrows the rows
    /// `rows` of `dv` or `r` (the forward and backward phases, and the leader between them).
    unsafe fn update_sweep(&self, rows: Range<usize>) -> UpdateSweep<'_, F> {
        let n = self.c.len();
        // SAFETY: the caller's contract.
        unsafe {
            UpdateSweep {
                base: rows.start,
                alpha: f32::from_bits(self.alpha.load(Ordering::Relaxed)),
                c: self.c.rows(0..n),
                q: self.q.rows(0..n),
                dv: self.dv.rows_mut(rows.clone()),
                r: self.r.rows_mut(rows),
                filters: self.filters,
            }
        }
    }

    /// The residual as it is, with the filter and `r · s` at the finish.
    ///
    /// # Safety
    /// While the sweep lives, no one writes `r`.
    unsafe fn residual_sweep(&self) -> ResidualSweep<'_, F> {
        // SAFETY: the caller's contract.
        let r = unsafe { self.r.rows(0..self.r.len()) };
        ResidualSweep {
            r,
            filters: self.filters,
        }
    }

    /// The separator's two solves with the CG update; returns its `r · s` terms' sum. Run by
    /// the leader while no phase is open.
    fn separator(&self) -> f64 {
        let n = self.c.len();
        // SAFETY: no phase is open and every task of the last one is done (crew module doc,
        // rule 2), so the leader's borrows are the only ones.
        unsafe {
            let parts = self.solves();
            let mut sweep = self.update_sweep(parts.separator_rows());
            parts.separator(
                &mut sweep,
                self.y.rows_mut(0..n),
                self.x.rows_mut(0..n),
                self.s.rows_mut(0..n),
            )
        }
    }

    /// The separator's two solves of the residual as it is; returns its `r · s` terms' sum.
    /// Run by the leader while no phase is open.
    fn separator_residual(&self) -> f64 {
        let n = self.c.len();
        // SAFETY: as in `separator`.
        unsafe {
            let mut sweep = self.residual_sweep();
            self.solves().separator(
                &mut sweep,
                self.y.rows_mut(0..n),
                self.x.rows_mut(0..n),
                self.s.rows_mut(0..n),
            )
        }
    }

    /// The separator's rows of the factorisation at the shift of the last factor phase. Run
    /// by the leader while no phase is open.
    fn factor_separator(&self) -> bool {
        let alpha = f64::from_bits(self.shift.load(Ordering::Relaxed));
        let filters = self.filters;
        // SAFETY: as in `separator`.
        let storage = unsafe {
            (
                self.l.rows_mut(0..self.l.len()),
                self.d_inv.rows_mut(0..self.d_inv.len()),
                self.scratch.rows_mut(0..self.scratch.len()),
            )
        };
        self.shape
            .factor_separator(self.a, &|i| filters.get_ref(i), alpha, storage)
    }

    /// `dv = z` (`z` if used, else 0). Run by the leader while no phase is open.
    fn reset(&self) {
        let z = self.z_used();
        // SAFETY: as in `separator`.
        let dv = unsafe { self.dv.rows_mut(0..self.dv.len()) };
        for (i, d) in dv.iter_mut().enumerate() {
            *d = z.map_or(Vec3::ZERO, |z| z[i]);
        }
    }
}

/// The solve's passes as the crew's phases, run by the leader (also as the CG iteration's
/// [`cg::CgSystem`]). A phase in which a task panicked makes every later pass return NaN (or
/// a failed factorisation), which stops the solve; the panic itself reaches the caller
/// through the crew's `rayon::join`.
struct CrewCg<'l, 'c, 'w, F: FilterSet> {
    lead: &'l mut Leader<'c, CrewSolve<'w, F>>,
    work: &'c CrewSolve<'w, F>,
    chunks: usize,
    failed: bool,
}

impl<F: FilterSet> CrewCg<'_, '_, '_, F> {
    /// Runs a phase of `tasks` tasks unless an earlier one failed; false if any has.
    fn phase(&mut self, kind: u32, tasks: usize) -> bool {
        self.failed = self.failed || !self.lead.phase(kind, tasks);
        !self.failed
    }

    /// One IC(0) attempt at shift `alpha`: the parts, then the separator; false on a
    /// breakdown.
    fn factor(&mut self, alpha: f64) -> bool {
        self.work.shift.store(alpha.to_bits(), Ordering::Relaxed);
        self.phase(FACTOR, 2)
            && self.work.part_factored[0].load(Ordering::Relaxed)
            && self.work.part_factored[1].load(Ordering::Relaxed)
            && self.work.factor_separator()
    }

    /// Imposes the constraints on the warm start; returns `|S dv_in|²` and `|z|²`.
    fn constrain_start(&mut self) -> (f64, f64) {
        if !self.phase(CONSTRAIN_START, self.chunks) {
            return (f64::NAN, f64::NAN);
        }
        (
            sum_in_order(&self.work.chunk_sums, self.chunks),
            sum_in_order(&self.work.z_sums, self.chunks),
        )
    }

    /// `r = S (b − A x)` (`kind`: at `z` or at `dv`), `s = S P⁻¹ r`; returns `r · s`.
    fn residual(&mut self, kind: u32) -> f64 {
        if !self.phase(kind, self.chunks) || !self.phase(FORWARD_RESIDUAL, 2) {
            return f64::NAN;
        }
        let separator = self.work.separator_residual();
        if !self.phase(BACKWARD_RESIDUAL, 2) {
            return f64::NAN;
        }
        self.with_part_sums(separator)
    }

    /// `separator` plus the parts' sums of the last backward phase: the order of
    /// `IncompleteBlockLdl::sweep`, `(separator + part 0) + part 1`.
    fn with_part_sums(&self, separator: f64) -> f64 {
        separator
            + f64::from_bits(self.work.part_sums[0].load(Ordering::Relaxed))
            + f64::from_bits(self.work.part_sums[1].load(Ordering::Relaxed))
    }
}

impl<F: FilterSet> cg::CgSystem for CrewCg<'_, '_, '_, F> {
    fn direction(&mut self, beta: Option<f64>) {
        let kind = match beta {
            Some(beta) => {
                self.work
                    .beta
                    .store((beta as f32).to_bits(), Ordering::Relaxed);
                DIRECTION
            }
            None => DIRECTION_FIRST,
        };
        self.phase(kind, self.chunks);
    }

    fn product(&mut self) -> f64 {
        if !self.phase(PRODUCT, self.chunks) {
            return f64::NAN;
        }
        sum_in_order(&self.work.chunk_sums, self.chunks)
    }

    fn step_is_finite(&self, alpha: f64) -> bool {
        (alpha as f32).is_finite()
    }

    fn update(&mut self, alpha: f64) -> f64 {
        self.work
            .alpha
            .store((alpha as f32).to_bits(), Ordering::Relaxed);
        if !self.phase(FORWARD, 2) {
            return f64::NAN;
        }
        let separator = self.work.separator();
        if !self.phase(BACKWARD, 2) {
            return f64::NAN;
        }
        self.with_part_sums(separator)
    }
}

impl<F: FilterSet> Phases for CrewSolve<'_, F> {
    fn run(&self, kind: u32, task: usize) {
        let n = self.c.len();
        match kind {
            FACTOR => {
                let (rows, slots) = self.shape.part_storage(task);
                let alpha = f64::from_bits(self.shift.load(Ordering::Relaxed));
                let filters = self.filters;
                // SAFETY: table row "IC(0) of a part": the part's rows of `D⁻¹` and the
                // scratch and its slots of `L` mutably (the parts' are disjoint, asserted in
                // `solve`); nothing else of the factor is borrowed in the phase.
                let storage = unsafe {
                    (
                        self.l.rows_mut(slots),
                        self.d_inv.rows_mut(rows.clone()),
                        self.scratch.rows_mut(rows),
                    )
                };
                let ok =
                    self.shape
                        .factor_part(task, self.a, &|i| filters.get_ref(i), alpha, storage);
                self.part_factored[task].store(ok, Ordering::Relaxed);
            }
            CONSTRAIN_START | CONSTRAIN_END => {
                let rows = chunk(task, n);
                // SAFETY: table row "constraints": this chunk's `dv` mutably; chunks are
                // disjoint.
                let dv = unsafe { self.dv.rows_mut(rows.clone()) };
                if kind == CONSTRAIN_START {
                    let warm = constrain_rows(self.filters, self.z, rows.start, dv);
                    let zz = self.z.map_or(0.0, |z| {
                        let z = &z[rows];
                        dot_serial(z, z)
                    });
                    self.chunk_sums[task].store(warm.to_bits(), Ordering::Relaxed);
                    self.z_sums[task].store(zz.to_bits(), Ordering::Relaxed);
                } else {
                    constrain_rows(self.filters, self.z_used(), rows.start, dv);
                }
            }
            RESIDUAL_AT_Z | RESIDUAL_AT_DV => {
                let rows = chunk(task, n);
                // SAFETY: table row "residual": this chunk's `r` mutably, all of `dv` shared;
                // no task of the phase writes `dv`, chunks are disjoint.
                let (x, r) = unsafe {
                    let x = if kind == RESIDUAL_AT_Z {
                        self.z_used()
                    } else {
                        Some(self.dv.rows(0..n))
                    };
                    (x, self.r.rows_mut(rows.clone()))
                };
                residual_rows(self.a, self.b, x, self.filters, rows.start, r);
            }
            DIRECTION_FIRST | DIRECTION => {
                let rows = chunk(task, n);
                let beta =
                    (kind == DIRECTION).then(|| f32::from_bits(self.beta.load(Ordering::Relaxed)));
                // SAFETY: table row "direction": this chunk's `c` mutably and `s` shared; no
                // task of the phase writes `s`, chunks are disjoint.
                let (s, c) = unsafe { (self.s.rows(rows.clone()), self.c.rows_mut(rows.clone())) };
                direction_rows(self.filters, rows.start, s, beta, c);
            }
            PRODUCT => {
                let rows = chunk(task, n);
                // SAFETY: table row "product": this chunk's `q` mutably, all of `c` shared;
                // no task of the phase writes `c`, chunks are disjoint.
                let (c, q) = unsafe { (self.c.rows(0..n), self.q.rows_mut(rows.clone())) };
                let sum = product_rows(self.a, self.filters, c, rows.start, q);
                self.chunk_sums[task].store(sum.to_bits(), Ordering::Relaxed);
            }
            FORWARD | FORWARD_RESIDUAL => {
                // SAFETY: table rows "forward solve": `L`, `D⁻¹` shared (no task of the
                // phase writes them); the part's rows of `y`, `x` (and with the update `dv`,
                // `r`) mutably (the parts are disjoint, asserted in `solve`); `c`, `q` (with
                // the update) or `r` (without) shared, written by no task of the phase.
                unsafe {
                    let parts = self.solves();
                    let rows = parts.natural_rows(task);
                    let (y, x) = (self.y.rows_mut(rows.clone()), self.x.rows_mut(rows.clone()));
                    if kind == FORWARD {
                        let mut sweep = self.update_sweep(rows);
                        parts.forward_part(task, &mut sweep, y, x);
                    } else {
                        parts.forward_part(task, &mut self.residual_sweep(), y, x);
                    }
                }
            }
            BACKWARD | BACKWARD_RESIDUAL => {
                // SAFETY: table rows "backward solve": as the forward solve's, with the
                // part's rows of `x`, `s` (and with the update `dv`, `r`) mutably.
                let sum = unsafe {
                    let parts = self.solves();
                    let rows = parts.natural_rows(task);
                    let (x, s) = (self.x.rows_mut(rows.clone()), self.s.rows_mut(rows.clone()));
                    if kind == BACKWARD {
                        let mut sweep = self.update_sweep(rows);
                        parts.backward_part(task, &mut sweep, x, s)
                    } else {
                        parts.backward_part(task, &mut self.residual_sweep(), x, s)
                    }
                };
                self.part_sums[task].store(sum.to_bits(), Ordering::Relaxed);
            }
            _ => unreachable!("pcg_crew: no phase of kind {kind}"),
        }
    }
}

/// The filtered PCG solve of [`super::pcg`] (`solve_filtered_pcg`, `solve_pcg`) with the
/// incomplete factor in two parts, the factorisation, the set-up, the iteration and the end
/// run by a crew (module doc): the same factor, stopping tests, report and result, bit for
/// bit. `None` when IC(0) broke down at every shift, with `dv` untouched (the caller falls
/// back to block Jacobi). Call only when [`usable`] says so.
#[allow(clippy::too_many_arguments)] // the solver's arguments
pub(super) fn solve<F: FilterSet>(
    a: &BlockCsr,
    b: &[Vec3],
    z: Option<&[Vec3]>,
    filters: &F,
    settings: &PcgSettings,
    kind: Preconditioner,
    factor: &mut IncompleteBlockLdl,
    vectors: Vectors<'_>,
    should_stop: &mut dyn FnMut(u32) -> bool,
) -> Option<PcgReport> {
    let n = vectors.c.len();
    let chunks = num_chunks(n);
    // Block SGS has no parts to factor in parallel: factored here, on the calling thread.
    let factored = (kind != Preconditioner::BlockIc0)
        .then(|| factor.factor_with(a, |i| filters.get_ref(i), kind));
    let FactorStorage {
        shape,
        l,
        d_inv,
        work: scratch,
        y,
        x,
        levels,
    } = factor.storage();
    assert!(
        shape.num_rows() == n && shape.num_lower_blocks() == l.len(),
        "crew: the factor does not fit the system"
    );
    // The SAFETY arguments of the parts' tasks rest on the two parts being disjoint ranges of
    // the rows (and of `L`'s slots); the split guarantees it, and this keeps a broken split
    // from becoming overlapping `&mut` rows.
    {
        let (r0, s0) = shape.part_storage(0);
        let (r1, s1) = shape.part_storage(1);
        assert!(
            r0.end <= r1.start && s0.end <= s1.start && r1.end <= n && s1.end <= l.len(),
            "crew: the factor's parts overlap"
        );
        let parts = shape.solves(l, d_inv);
        let (part0, part1) = (parts.natural_rows(0), parts.natural_rows(1));
        assert!(
            part0.end <= part1.start && part1.start <= part1.end && part1.end == n,
            "crew: the factor's parts {part0:?} and {part1:?} do not split {n} rows"
        );
    }
    let work = CrewSolve {
        a,
        b,
        z,
        z_used: AtomicBool::new(false),
        filters,
        shape,
        l: SharedRows::new(l),
        d_inv: SharedRows::new(d_inv),
        scratch: SharedRows::new(scratch),
        dv: SharedRows::new(vectors.dv),
        r: SharedRows::new(vectors.r),
        c: SharedRows::new(vectors.c),
        q: SharedRows::new(vectors.q),
        s: SharedRows::new(vectors.s),
        y: SharedRows::new(y),
        x: SharedRows::new(x),
        shift: AtomicU64::new(0),
        part_factored: [AtomicBool::new(false), AtomicBool::new(false)],
        alpha: AtomicU32::new(0),
        beta: AtomicU32::new(0),
        chunk_sums: [const { Padded(AtomicU64::new(0)) }; BATCH_CHUNKS],
        z_sums: [const { Padded(AtomicU64::new(0)) }; BATCH_CHUNKS],
        part_sums: [const { Padded(AtomicU64::new(0)) }; 2],
    };
    let work = &work;
    let mut should_stop = OnCallingThread::new(should_stop);
    let (tolerance, max_iterations) = (settings.tolerance, settings.max_iterations);
    crew::lead(work, move |lead| {
        let mut run = CrewCg {
            lead,
            work,
            chunks,
            failed: false,
        };
        let mut report = PcgReport::default();
        let outcome = match factored {
            Some(outcome) => outcome,
            None => levels.factor(|alpha| run.factor(alpha)),
        };
        match outcome {
            FactorOutcome::Factored { shift } => report.preconditioner_shift = shift,
            FactorOutcome::Failed => return None,
        }
        // Initial iterate dv = z + S dv_in; `warm` = |S dv_in|² says whether it differs
        // from z; z is dropped when it is zero (`!= 0`, not `> 0`, keeps a NaN visible).
        let (mut warm, zz) = run.constrain_start();
        work.z_used
            .store(z.is_some() && zz != 0.0, Ordering::Relaxed);
        if !warm.is_finite() {
            // A non-finite warm start (a failed previous step) is dropped: cold start.
            work.reset();
            warm = 0.0;
        }
        // d_0 on S(b - A z) (`docs/methods/baraff-witkin.md` §2.8 note).
        let d0 = run.residual(RESIDUAL_AT_Z);
        if !d0.is_finite() {
            report.relative_residual = f64::NAN;
            return Some(report);
        }
        if d0 <= 0.0 {
            // Nothing to solve: y = 0, dv = z.
            work.reset();
            report.converged = true;
            return Some(report);
        }
        let d_new = if warm > 0.0 {
            run.residual(RESIDUAL_AT_DV)
        } else {
            d0
        };
        let threshold = tolerance * tolerance * d0;
        let d_new = cg::iterate(
            &mut run,
            d_new,
            threshold,
            max_iterations,
            should_stop.get(),
            &mut report,
        );
        if !F::ALL_FREE {
            // The constraints re-imposed (`super::pcg`'s finish).
            run.phase(CONSTRAIN_END, chunks);
        }
        report.relative_residual = relative_residual(d0, d_new);
        Some(report)
    })
}

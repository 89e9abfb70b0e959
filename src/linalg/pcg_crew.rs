//! The filtered PCG's iteration ([`super::cg::iterate`]) with its passes run by a two-thread
//! crew ([`super::crew`]): one fork-join a solve instead of several an iteration.
//!
//! Used for the block IC(0) (or SGS) factor in two parts and a separator, when the solve runs
//! in a rayon worker (not under a host dispatcher) and its chunk sums fit one batch
//! ([`usable`]). An iteration is four phases and the leader's work between them:
//!
//! | phase | tasks | each task writes (rows) | reads, shared |
//! |---|---|---|---|
//! | direction `c = S (s + β c)` | one a chunk | `c` (its chunk) | `s` (its chunk) |
//! | product `q = S A c`, `c · q` | one a chunk | `q` (its chunk), its chunk's sum | `c` (all) |
//! | forward solve of a part, with `dv += α c`, `r −= α q` | parts 0, 1 | `dv`, `r`, `y`, `x` (the part's) | `c`, `q` (all) |
//! | backward solve of a part, filter, `r · s` | parts 0, 1 | `x`, `s`, `dv`, `r` (the part's; `dv`, `r` only read), its part's sum | `c`, `q` (all, unused) |
//!
//! Between the product and the forward phase the leader forms `c · q` (the chunk sums in
//! chunk order, as [`super::reduce::sum_chunks_mut`] adds them) and `α`; between the forward
//! and the backward phase it runs the separator's two solves (whole `y`, `x`, `s`; the separator's
//! `dv`, `r`); after the backward phase it forms `r · s` (separator, part 0, part 1: the order
//! of [`IncompleteBlockLdl::sweep`]) and `β`. Every row's arithmetic and every sum's order
//! are those of the passes in [`super::pcg`] (the same functions run them), so the iterates
//! are bit-identical to the fork-join code's for any thread count, and to each other
//! whichever thread ran which task.
//!
//! The table is rule 1 of the crew's safety argument ([`super::crew`] module doc): in every
//! phase the written rows of distinct tasks are disjoint, and nothing a task reads shared is
//! written by a task of the same phase. The unsafe blocks below borrow exactly the table's
//! rows.
#![allow(unsafe_code)]

use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use glam::{Vec3, Vec3A};

use super::block_csr::BlockCsr;
use super::block_ldl::{IncompleteBlockLdl, PartSolves};
use super::cg;
use super::crew::{self, Leader, OnCallingThread, Padded, Phases, SharedRows};
use super::pcg::{FilterSet, PcgReport, UpdateSweep, direction_rows, product_rows};
use super::reduce::{BATCH_CHUNKS, CHUNK_ROWS, num_chunks};
use crate::runtime::executor::parallel_here;

/// Phase kinds (module doc's table).
const DIRECTION_FIRST: u32 = 0;
const DIRECTION: u32 = 1;
const PRODUCT: u32 = 2;
const FORWARD: u32 = 3;
const BACKWARD: u32 = 4;

/// Whether a solve with `factor` on `n` rows runs its iteration in a crew: two parts, at most
/// one batch of chunk sums, on a rayon worker of a pool with another thread to help (module
/// doc). In a pool of one thread the fork-join passes run instead: the same bits, without the
/// crew's join and its phase hand-overs.
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
    filters: &'a F,
    parts: PartSolves<'a>,
    dv: SharedRows<'a, Vec3>,
    r: SharedRows<'a, Vec3>,
    c: SharedRows<'a, Vec3>,
    q: SharedRows<'a, Vec3>,
    s: SharedRows<'a, Vec3>,
    /// The forward solve's `y`, by rows of `A`.
    y: SharedRows<'a, Vec3A>,
    /// The backward solve's working vector `x`, by rows of `A`.
    x: SharedRows<'a, Vec3A>,
    /// `α` and `β` as `f32` bits, stored by the leader before it opens a phase.
    alpha: AtomicU32,
    beta: AtomicU32,
    /// `c · q` of each chunk (`f64` bits), each on its own cache lines: neighbouring chunks'
    /// sums are written by different threads.
    chunk_sums: [Padded<AtomicU64>; BATCH_CHUNKS],
    /// `r · s` of each part's backward solve (`f64` bits), apart like the chunks' sums.
    part_sums: [Padded<AtomicU64>; 2],
}

/// Chunk `k` of `n` rows.
fn chunk(k: usize, n: usize) -> Range<usize> {
    k * CHUNK_ROWS..((k + 1) * CHUNK_ROWS).min(n)
}

impl<F: FilterSet> CrewSolve<'_, F> {
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

    /// The separator's two solves; returns its `r · s` terms' sum. Run by the leader while
    /// no phase is open.
    fn separator(&self) -> f64 {
        let n = self.c.len();
        // SAFETY: no phase is open and every task of the last one is done (crew module doc,
        // rule 2), so the leader's borrows are the only ones.
        unsafe {
            let mut sweep = self.update_sweep(self.parts.separator_rows());
            self.parts.separator(
                &mut sweep,
                self.y.rows_mut(0..n),
                self.x.rows_mut(0..n),
                self.s.rows_mut(0..n),
            )
        }
    }
}

/// The CG iteration's passes ([`cg::CgSystem`]) as the crew's phases, run by the leader. A
/// phase in which a task panicked makes every later pass return NaN, which stops the
/// iteration; the panic itself reaches the caller through the crew's `rayon::join`.
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
        let mut cq = 0.0f64;
        for p in &self.work.chunk_sums[..self.chunks] {
            cq += f64::from_bits(p.load(Ordering::Relaxed));
        }
        cq
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
        separator
            + f64::from_bits(self.work.part_sums[0].load(Ordering::Relaxed))
            + f64::from_bits(self.work.part_sums[1].load(Ordering::Relaxed))
    }
}

impl<F: FilterSet> Phases for CrewSolve<'_, F> {
    fn run(&self, kind: u32, task: usize) {
        let n = self.c.len();
        match kind {
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
            FORWARD => {
                let rows = self.parts.natural_rows(task);
                // SAFETY: table row "forward": the part's rows of `dv`, `r`, `y`, `x`
                // mutably (the parts are disjoint, asserted in `iterate`), `c` and `q` shared (no task writes them).
                unsafe {
                    let mut sweep = self.update_sweep(rows.clone());
                    let (y, x) = (self.y.rows_mut(rows.clone()), self.x.rows_mut(rows));
                    self.parts.forward_part(task, &mut sweep, y, x);
                }
            }
            BACKWARD => {
                let rows = self.parts.natural_rows(task);
                // SAFETY: table row "backward": the part's rows of `x`, `s`, `dv`, `r`
                // mutably (the parts are disjoint, asserted in `iterate`), `c` and `q` shared
                // (no task writes them).
                let sum = unsafe {
                    let mut sweep = self.update_sweep(rows.clone());
                    let (x, s) = (self.x.rows_mut(rows.clone()), self.s.rows_mut(rows));
                    self.parts.backward_part(task, &mut sweep, x, s)
                };
                self.part_sums[task].store(sum.to_bits(), Ordering::Relaxed);
            }
            _ => unreachable!("pcg_crew: no phase of kind {kind}"),
        }
    }
}

/// [`super::cg::iterate`] for the filtered system with the incomplete factor in two parts,
/// the passes run by a crew (module doc): the same stopping tests, report and result, bit
/// for bit. Call only when [`usable`] says so.
#[allow(clippy::too_many_arguments)] // cg::iterate's arguments and the system's parts
pub(super) fn iterate<F: FilterSet>(
    vectors: Vectors<'_>,
    a: &BlockCsr,
    filters: &F,
    factor: &mut IncompleteBlockLdl,
    d_new: f64,
    threshold: f64,
    max_iterations: u32,
    should_stop: &mut dyn FnMut(u32) -> bool,
    report: &mut PcgReport,
) -> f64 {
    let n = vectors.c.len();
    let chunks = num_chunks(n);
    let (parts, y, x) = factor.part_solves();
    // The SAFETY arguments of the forward and backward tasks rest on the two parts being
    // disjoint ranges of the `n` rows; the split guarantees it, and this keeps a broken split
    // from becoming overlapping `&mut` rows.
    let (part0, part1) = (parts.natural_rows(0), parts.natural_rows(1));
    assert!(
        part0.end <= part1.start && part1.start <= part1.end && part1.end == n,
        "crew: the factor's parts {part0:?} and {part1:?} do not split {n} rows"
    );
    let work = CrewSolve {
        a,
        filters,
        parts,
        dv: SharedRows::new(vectors.dv),
        r: SharedRows::new(vectors.r),
        c: SharedRows::new(vectors.c),
        q: SharedRows::new(vectors.q),
        s: SharedRows::new(vectors.s),
        y: SharedRows::new(y),
        x: SharedRows::new(x),
        alpha: AtomicU32::new(0),
        beta: AtomicU32::new(0),
        chunk_sums: [const { Padded(AtomicU64::new(0)) }; BATCH_CHUNKS],
        part_sums: [const { Padded(AtomicU64::new(0)) }; 2],
    };
    let work = &work;
    let mut should_stop = OnCallingThread::new(should_stop);
    let mut out = *report;
    let (d_new, out) = crew::lead(work, move |lead| {
        let mut system = CrewCg {
            lead,
            work,
            chunks,
            failed: false,
        };
        let d_new = cg::iterate(
            &mut system,
            d_new,
            threshold,
            max_iterations,
            should_stop.get(),
            &mut out,
        );
        (d_new, out)
    });
    *report = out;
    d_new
}

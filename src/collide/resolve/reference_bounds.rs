//! The neighbour tests' separating-axis bounds kept from a reference configuration, so that a
//! search clears most of their layer bits without recomputing the bounds
//! (`docs/methods/collision-detection.md`, *Neighbour bounds kept from a reference*).
#![deny(unsafe_code)]

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use glam::Vec3;

use crate::linalg::reduce::for_each_chunk;

/// A search whose bounds from the reference left more than this fraction of the tests they
/// were kept for to the full computation makes the next substep's search set a new reference.
const REFRESH_FRACTION: u32 = 4;

/// The allowance for the `f32` rounding of a relative displacement (a difference of two stored
/// deviations, its length), relative to the largest deviation: 2⁻¹⁸ (64 u₃₂, over the 20 u₃₂
/// the rounding needs).
const DRIFT_RELATIVE: f64 = 1.0 / 262_144.0;
/// The absolute allowance (m) for the `f64` rounding of the comparisons.
const DRIFT_ABSOLUTE: f64 = 1e-12;

/// Per neighbour test ([`NeighbourTests`](super::broad_phase::NeighbourTests), by index) the lower
/// end of its `f32` screen ([`screened_bounds`](super::detect::screened_bounds)) at the
/// reference positions, tagged with the reference's number; the reference positions of the
/// cloth vertices; and per search each vertex's displacement from them and over the substep,
/// less their means.
#[derive(Debug, Default)]
pub(super) struct ReferenceBounds {
    /// The cloth vertices' positions at x^n of the search that set the reference.
    x: Vec<Vec3>,
    /// Per cloth vertex: its displacement from `x` to the search's x^n, less the first vertex's.
    moved: Vec<Vec3>,
    /// Per cloth vertex: its displacement over the substep (x^n to x^n + h v), less the first
    /// vertex's.
    step: Vec<Vec3>,
    /// The reference's number; 0 before the first.
    epoch: u32,
    /// Per neighbour test: `epoch << 32 | low.to_bits()`, written by the search that set the
    /// reference for each test it bounded (one writer per test: the chunk holding it).
    lows: Vec<AtomicU64>,
    /// Tests whose bound the last full search computed (all it recorded, when it set the
    /// reference; those the kept bounds did not decide, otherwise), and how many the search
    /// that set the reference recorded.
    computed: AtomicU32,
    recorded: u32,
    /// The last full search set the reference.
    just_set: bool,
}

impl ReferenceBounds {
    /// No reference yet, for `tests` neighbour tests of a cloth of `vertices` vertices.
    pub(super) fn new(tests: usize, vertices: usize) -> Self {
        Self {
            x: vec![Vec3::ZERO; vertices],
            moved: vec![Vec3::ZERO; vertices],
            step: vec![Vec3::ZERO; vertices],
            epoch: 0,
            lows: (0..tests).map(|_| AtomicU64::new(0)).collect(),
            computed: AtomicU32::new(0),
            recorded: 0,
            just_set: false,
        }
    }

    /// The current reference's number (0: none).
    #[cfg(test)]
    pub(super) fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The bounds computed in full since the last full search began.
    #[cfg(test)]
    pub(super) fn computed(&self) -> u32 {
        self.computed.load(Ordering::Relaxed)
    }

    /// What a search at positions `x0` and end positions `x1` (cloth vertices) does with the
    /// kept bounds: `None` without a reference (and no `refresh` allowed). With `refresh` (the
    /// substep's full search), a new reference at `x0`, the search recording each bound it
    /// computes, when there is none or when the last full search computed more than a
    /// [`REFRESH_FRACTION`]th of the bounds recorded. Otherwise the vertices' displacements the
    /// kept bounds are reduced by.
    pub(super) fn prepare(
        &mut self,
        x0: &[Vec3],
        x1: &[Vec3],
        refresh: bool,
    ) -> Option<ReferenceView<'_>> {
        if self.epoch == 0 && !refresh {
            return None;
        }
        if refresh {
            let computed = self.computed.swap(0, Ordering::Relaxed);
            let stale = if self.epoch == 0 {
                true
            } else if self.just_set {
                // The search that set the reference: its count is what it recorded.
                self.recorded = computed;
                false
            } else {
                computed.saturating_mul(REFRESH_FRACTION) > self.recorded
            };
            self.just_set = stale;
            if stale {
                self.epoch = match self.epoch.checked_add(1) {
                    Some(e) => e,
                    None => {
                        // Numbers are never reused: forget every kept bound first.
                        for low in &self.lows {
                            low.store(0, Ordering::Relaxed);
                        }
                        1
                    }
                };
                self.x.copy_from_slice(x0);
                return Some(ReferenceView {
                    lows: &self.lows,
                    computed: &self.computed,
                    epoch: self.epoch,
                    record: true,
                    moved: &self.moved,
                    step: &self.step,
                    start_allowance: f64::INFINITY,
                    swept_allowance: f64::INFINITY,
                });
            }
        }
        let moved = deviations(x0, &self.x, &mut self.moved);
        let step = deviations(x1, x0, &mut self.step);
        Some(ReferenceView {
            lows: &self.lows,
            computed: &self.computed,
            epoch: self.epoch,
            record: false,
            moved: &self.moved,
            step: &self.step,
            start_allowance: moved * DRIFT_RELATIVE + DRIFT_ABSOLUTE,
            swept_allowance: step * DRIFT_RELATIVE + DRIFT_ABSOLUTE,
        })
    }
}

/// `out[i] = (a_i − b_i) − c` in `f32`, computed in `f64` from the `f32` positions, `c` the
/// first difference (any common vector `c` gives `|d_i − d_j| = |(d_i − c) − (d_j − c)|`; taking
/// one out keeps a common translation out of the stored values, so their rounding is relative to
/// the deviations, not to the translation). Returns the largest `|out[i]|`, or `+∞` when an
/// input is not finite.
///
/// In fixed chunks of vertices, in parallel for many ([`for_each_chunk`]): each output is its
/// vertex's, and each chunk's largest squared length is folded into the result by the largest bit
/// pattern. The squared lengths are `+0` or positive or NaN, whose bit patterns order as their
/// values with every NaN above `+∞`, so the result is the largest, or NaN when one is, whatever
/// the order the chunks finish in.
fn deviations(a: &[Vec3], b: &[Vec3], out: &mut [Vec3]) -> f64 {
    let Some(c) = a
        .first()
        .zip(b.first())
        .map(|(a, b)| a.as_dvec3() - b.as_dvec3())
    else {
        return 0.0;
    };
    let largest_bits = AtomicU64::new(0.0f64.to_bits());
    for_each_chunk(out, |first, out| {
        let mut largest = 0.0f64;
        for ((o, p), q) in out.iter_mut().zip(&a[first..]).zip(&b[first..]) {
            let e = (p.as_dvec3() - q.as_dvec3()) - c;
            let l = e.length_squared();
            // NaN is kept: `+∞` below.
            largest = if l > largest || l.is_nan() {
                l
            } else {
                largest
            };
            *o = e.as_vec3();
        }
        largest_bits.fetch_max(largest.to_bits(), Ordering::Relaxed);
    });
    let largest = f64::from_bits(largest_bits.into_inner());
    if largest.is_finite() {
        largest.sqrt()
    } else {
        f64::INFINITY
    }
}

/// A search's use of [`ReferenceBounds`]: record each computed bound, or bound the features'
/// distance now by a kept one less their relative displacement since.
#[derive(Clone, Copy)]
pub(super) struct ReferenceView<'a> {
    lows: &'a [AtomicU64],
    computed: &'a AtomicU32,
    epoch: u32,
    /// This search sets the reference: it records, and clears nothing by the kept bounds.
    pub(super) record: bool,
    moved: &'a [Vec3],
    step: &'a [Vec3],
    /// The allowances for the rounding of [`ReferenceView::drift`]'s two parts.
    start_allowance: f64,
    swept_allowance: f64,
}

impl ReferenceView<'_> {
    /// The kept lower end of test `k`'s screen, if it was recorded at the current reference.
    #[inline]
    pub(super) fn low(&self, k: usize) -> Option<f32> {
        let word = self.lows[k].load(Ordering::Relaxed);
        ((word >> 32) as u32 == self.epoch).then(|| f32::from_bits(word as u32))
    }

    /// Records `low` for test `k` at the current reference.
    #[inline]
    pub(super) fn record(&self, k: usize, low: f32) {
        let word = (u64::from(self.epoch) << 32) | u64::from(low.to_bits());
        self.lows[k].store(word, Ordering::Relaxed);
    }

    /// Counts `n` bounds computed in full (once per chunk of the search).
    #[inline]
    pub(super) fn count(&self, n: u32) {
        if n > 0 {
            self.computed.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Upper bounds of `max |Δ_i − Δ_j|` over the test's vertices `verts`, `i` among the first
    /// `split` and `j` among the rest: `Δ` the displacement from the reference (first), and,
    /// with `swept`, the displacement from the reference plus that over the substep (second;
    /// the sum of the two maxima; `+∞` without `swept`). NaN or `+∞` when a position is not
    /// finite.
    #[inline]
    pub(super) fn drift(&self, verts: &[u32; 4], split: usize, swept: bool) -> (f64, f64) {
        let start = largest_difference(self.moved, verts, split) + self.start_allowance;
        let swept = if swept {
            start + largest_difference(self.step, verts, split) + self.swept_allowance
        } else {
            f64::INFINITY
        };
        (start, swept)
    }
}

/// `max |d_i − d_j|` over `i` among the first `split` of `verts` and `j` among the rest, in
/// `f32`. A NaN entry may be skipped: every entry is then NaN and the allowance `+∞`
/// ([`deviations`]), so no comparison clears by it.
#[inline(always)]
fn largest_difference(d: &[Vec3], verts: &[u32; 4], split: usize) -> f64 {
    let [a, b, c, e] = [
        d[verts[0] as usize],
        d[verts[1] as usize],
        d[verts[2] as usize],
        d[verts[3] as usize],
    ];
    let larger = |x: f32, y: f32| if x > y { x } else { y };
    let m = if split == 1 {
        larger(
            larger((a - b).length_squared(), (a - c).length_squared()),
            (a - e).length_squared(),
        )
    } else {
        larger(
            larger((a - c).length_squared(), (a - e).length_squared()),
            larger((b - c).length_squared(), (b - e).length_squared()),
        )
    };
    f64::from(m.sqrt())
}

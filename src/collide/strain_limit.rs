//! Strain limiting by velocity impulses: keeps every stretch edge's predicted end-of-step length within
//! `[(1 − s_c) L0, (1 + s_t) L0]` by momentum-conserving impulse pairs on the step-average velocities.
//!
//! Bridson, Fedkiw & Anderson 2002 after Provot 1995 (`docs/methods/bridson-collisions.md` §3.2, eq. 3.5).
//! The stage runs on `v^{n+1/2}` right after the internal dynamics (`docs/methods/bridson-collisions.md` §3.1 step 3),
//! before repulsion and CCD, and again before every CCD round, with the collisions resolved so far kept
//! (see "Contacts"). Positions are never edited: only velocities change.
//!
//! # Symbols
//!
//! | paper | here | unit |
//! |---|---|---|
//! | `x_i` (= `x^n_i`) | `x[i]`, start-of-step position | m |
//! | `v_i` (= `v^{n+1/2}_i`) | `v[i]`, step-average velocity | m/s |
//! | `w_i = 1/m_i` | `inv_mass[i]`, 0 = pinned or kinematic | 1/kg |
//! | `h` | `h`, the (sub)step | s |
//! | `L0` | `rest[e]` | m |
//! | `s_t`, `s_c` | [`StrainLimit::max_stretch`], [`StrainLimit::max_compress`] | – |
//! | strain-rate limit `r` (Bridson et al. 2002 §3) | [`StrainLimiter::set_rate_limit`] | – |
//!
//! # The impulse pair (`docs/methods/bridson-collisions.md` (3.5))
//!
//! For edge `e = (i, j)`: `d = (x_j + h v_j) − (x_i + h v_i)`, `L = |d|`, `L*` the target length (the violated bound moved inward by the tolerance, see below),
//! `γ = (L* − L)/h`. With the *impulse* `p = γ d̂ / (w_i + w_j)` (kg·m/s) the velocities change by
//! `v_i −= w_i p`, `v_j += w_j p`. Then `m_i Δv_i + m_j Δv_j = −p + p = 0` (momentum), and the predicted
//! difference becomes `d + h (w_i + w_j) p = d + (L* − L) d̂ = L* d̂`: its length is exactly `L*` after one
//! correction. A pinned end (`w = 0`) takes no impulse and the free end takes all of it; an edge with both
//! ends pinned (`w_i + w_j = 0`) is skipped and its violation is not reported (no velocity can fix it).
//! When `L` vanishes (`L ≤ 1e-9 L0`) `d̂` is undefined; the start-of-step direction `x_j − x_i` is used
//! instead (the identity above holds for any unit direction when `d = 0`); if that vanishes too the edge
//! cannot be corrected and is left as it is (its violation stays in the report).
//!
//! # Admissible lengths
//!
//! weft keeps `s_c` separate from `s_t` and exposes the strain *rate* limit of Bridson et al. 2002 §3
//! separately from the strain limit. The strain interval is `[(1 − s_c) L0, (1 + s_t) L0]`. The optional
//! rate limit `r` ([`StrainLimiter::set_rate_limit`], off by default) bounds the length change over the step relative to the
//! start-of-step length `L_n = |x_j − x_i|`: `[(1 − r) L_n, (1 + r) L_n]`. The admissible interval is the
//! intersection. **Choice**: when the two are disjoint the *strain* limit wins and the target is the strain
//! bound nearest to the rate interval (the smallest change that restores the strain limit). Giving the rate
//! limit priority would leave a collapsed edge (`L_n ≈ 0`) unable to ever regrow, since its allowed change
//! is relative to its own length.
//!
//! # Violation and tolerance
//!
//! An edge's violation is its strain beyond the admissible interval, `dist(L, [lo, hi]) / L0`. An edge is
//! corrected when its violation exceeds 1% of the tolerance ([`StrainLimiter::set_tolerance`], default
//! [`DEFAULT_TOLERANCE`] = `1e-4`), and its target `L*` is then not the violated bound itself but a point
//! one tolerance *inside* it (`hi − τ L0` or `lo + τ L0`; mid-interval when the interval is narrower than
//! `2 τ L0`). **Choice**: clamping exactly to the bound (Bridson 2002, Provot 1995) leaves every corrected
//! edge on its bound, where the `f32` round-off of the stored velocities (a few `1e-7` of `h |v| / L0`)
//! re-triggers it forever, so a tolerance has to excuse violations up to τ and the limit then only holds to
//! `s + τ` (drape-65 ended at 4.01% for a 4% limit). With the inset target a corrected edge sits far from
//! its bound, round-off cannot re-trigger it, and a converged pass leaves every edge within `s + τ/100` of
//! the limit. [`StrainReport`] gives the largest violation before and after the sweeps. Edges with a
//! non-positive rest length are skipped (mesh validation rejects them), and a non-finite violation is
//! never corrected (the pipeline's finiteness check reports non-finite state).
//!
//! # Contacts: collisions kept while sweeping
//!
//! Inside the collision stage the limiter runs again before every CCD round (`resolve`). Without
//! more, the two fight: a CCD impulse pushes a vertex out of a body (or another cloth layer), its
//! edges come out long, the next limiter call pulls the vertex back into the collision, the next
//! round pushes it out again. Measured on the stress samples, the round cap ended that tug of war
//! with the last collision impulse, edges up to 16 % long against a 10 % limit, although nothing
//! forced them: the neighbours could have followed the pushed vertex. So every collision a CCD round
//! resolves is *kept* ([`StrainLimiter::keep_contact`]) until the stage ends
//! ([`StrainLimiter::forget_contacts`]), in two ways:
//!
//! * **As a constraint of the sweeps.** After each sweep over the edges, every kept collision whose
//!   relative normal velocity `n̂ · Σ_k c_k v_k` (stencil coefficients `c_k`, unit normal `n̂`) fell
//!   below the collision impulse's own target `u* = max(0, (s_min − d0)/h)` (Bridson, Fedkiw &
//!   Anderson 2002, collision impulses with a minimum separation; `d0` the start separation, `s_min`
//!   the minimum separation) by more than the trigger is restored, by the same inelastic impulse
//!   `Δv_k = c_k w_k j n̂`, `j = (u* − n̂ · Σ c_k v_k) / Σ c_k² w_k`, aimed at `u*` exactly: aiming
//!   one slack beyond it re-pushed every kept collision of a pile at every sweep and fed the pile
//!   energy (pile-33 rose to 0.70 J from 0.51 J over 90 frames; aimed at `u*`, at most 0.57 J). The
//!   trigger is `h` times the shortfall above `TRIGGER_FRACTION · τ ℓ` (`ℓ` the shortest rest
//!   length). Vertices that do not move (pinned, obstacle) enter with
//!   their velocity at the time the collision is kept, which the stage never changes. Edges and kept
//!   collisions are thus one Gauss–Seidel iteration over all constraints, as in position-based
//!   dynamics (Müller et al. 2007), on velocities; a sweep counts as active if it corrected an edge or
//!   a collision, and a pass ends when neither needs a correction.
//! * **As holds.** A kept collision whose other side is entirely kinematic (an obstacle or collider
//!   mesh, pinned vertices) *holds* its moving vertices: each records the normal pointing away from
//!   the body (up to two distinct ones; a third holds the vertex in every direction). An edge
//!   correction that would move a held end into its body (`n̂ · Δv < 0`) leaves that end alone and
//!   moves the other end by the whole correction, as a pinned end would, when the other end is free to
//!   take it. When both ends are held so, both take their usual share and the kept collisions restore
//!   what the edge took from them. **Why**: with the constraint alone the limiter converged, but
//!   slowly: the pushed vertex and its neighbours traded the correction back and forth each sweep, and
//!   a 5 cm ball at 20 m/s through a hanging sheet left edges at 14.4 % after the 100-sweep cap; with
//!   the holds the neighbours follow at once (11.6 %). Moving held ends tangentially instead (an
//!   anisotropic inverse mass `w (I − n̂ n̂ᵀ)`) was tried and diverged on that scene.
//!
//! Momentum: an edge correction with one end held is absorbed by the body, as with a pinned end. A
//! collision kept with a non-kinematic other side (cloth against cloth) conserves momentum like the
//! edge pairs.
//!
//! # Forced edges
//!
//! An edge is *forced* when each of its ends is *driven*: kinematic (inverse mass 0: pinned, on a pin
//! track) or held against a kinematic body by a collision kept in the current stage
//! ([`StrainLimiter::drive`]: forced by pins when both ends are kinematic, by bodies otherwise). No correction the limiter may make can then move either end without
//! moving a vertex whose velocity a pin or a body prescribes, so such an edge may end longer than the
//! limit. Every other edge has an end the limiter may move, and a pass that converges leaves it
//! within the limit when the limits can all be met at once. The test is local: a free vertex tied by
//! its edges to two driven vertices that move apart may have no admissible place, and its edges
//! count as free although nothing the limiter does can fix them (measured: a sheet's pinned corner
//! pulled 5 cm away from its pinned neighbour, 5 cm edges, leaves the free edges below it at 28 %). Static bodies count as kinematic too (their prescribed velocity is zero). What
//! the impact zones do after the last limiter call (a zone moving rigidly, or with an obstacle) is not
//! a hold: an edge the zones stretch counts as free.
//!
//! # Sweeps (`docs/methods/bridson-collisions.md` §3.2)
//!
//! Corrections interfere through shared vertices, so the pass is iterated until no edge needs a correction
//! or the sweep cap [`StrainLimit::iterations`] is reached; the leftover violation is reported, never
//! printed.
//!
//! * **Jacobi** ([`StrainMethod::Jacobi`]): every edge's impulse is computed from the same velocities, then
//!   all are applied at once, *under-relaxed*. **Departure**: `docs/methods/bridson-collisions.md` says "averaged per vertex"; dividing
//!   each vertex's summed change by its own number of corrections breaks momentum conservation whenever the
//!   two ends of an edge have different counts. weft scales each *edge's* impulse pair instead, by
//!   `ω_e = 1 / max(c_i, c_j)` where `c_k` is the number of corrected edges at vertex `k` (counted only for
//!   ends that move, `w > 0`). Each pair then stays momentum-conserving, and a vertex's total change
//!   `Σ_e ω_e Δv^e` is bounded by the per-vertex average `(1/c_i) Σ_e |Δv^e|`. A lone edge (`c = 1`) still
//!   gets exactly `L*`. Each vertex gathers its edges' contributions in ascending edge order.
//! * **Gauss–Seidel** ([`StrainMethod::GaussSeidel`], the default): each correction is applied at once, so
//!   later edges see earlier ones; it converges in far fewer sweeps. For a deterministic parallel order the
//!   edges are **coloured** when the limiter is created (greedy, in edge order: each edge takes the smallest
//!   colour not used by an edge at either end, at most `2Δ − 1` colours for maximum vertex degree `Δ`).
//!   Edges of one colour share no vertex. A sweep processes the colours in order; within a colour the
//!   impulses are computed in parallel from the current velocities and then scattered serially (two vector
//!   adds per edge). Because no two edges of a colour touch the same vertex, this equals applying the
//!   corrections one by one in the order (colour, edge index).
//!   An edge is evaluated again only when an end's velocity changed since its previous evaluation (in
//!   the previous sweep, or in the measurement on entry for the first sweep; a tick per colour and
//!   vertex): otherwise the evaluation would read the same velocities and, as it corrected nothing then
//!   (a correction changes an end), correct nothing now. The first sweep thus evaluates the edges the
//!   entry measurement found violated and those whose ends its own earlier colours changed, not the
//!   whole sheet a second time. The skipped edge keeps the violation it had, so a sweep gives the bits
//!   of a sweep over every edge. At an impact most of a sheet is within its limit while the corrections
//!   spread from the contact over hundreds of sweeps, so most edges are skipped. To skip them without
//!   visiting them, every velocity change puts the edges at the changed vertex on their colour's
//!   *work list* (once each); a colour whose list holds under a quarter of its edges is evaluated and
//!   scattered through the list alone, on the calling thread, so a late sweep costs the edges near
//!   the spreading corrections rather than the whole sheet. Longer lists take the test against the
//!   ticks above (in parallel chunks): both select the same edges.
//!
//! # Over-relaxation (`docs/methods/strain-limiting-sweeps.md`)
//!
//! From the third sweep of a pass on ([`RELAXED_FROM`]), Gauss–Seidel moves a violated edge past its
//! target: an edge at predicted length `L` with target `L*` is aimed at
//! `clamp(L* + (ω − 1)(L* − L), lo + τ L0, hi − τ L0)`, `ω` = [`RELAXATION`], the impulse pair
//! otherwise as above (same direction, same momentum balance, same holds). This is successive
//! over-relaxation of the projections: at an impact the corrections spread from the contact like a
//! diffusion, which plain Gauss–Seidel carries about one ring per sweep; over-relaxed, drape-65's
//! impact frame takes about 300 sweeps instead of 2,600, and a settled frame about 6 instead of 20.
//! The guarantee does not depend on `ω`: a pass still ends with success only after a sweep in which
//! no edge's violation `dist(L, [lo, hi]) / L0` (which `ω` does not enter) exceeded the trigger, so
//! every edge is then within the limit exactly as before. The clamp keeps each aimed length inside
//! the admissible interval, so no correction creates a violation on the other side; a lone edge and
//! a pass that ends within two sweeps are corrected exactly as without it. Jacobi is not
//! over-relaxed.
//!
//! # Determinism and allocation
//!
//! Parallel loops run over fixed chunks of [`CHUNK`] edges or vertices and write disjoint outputs; the only
//! reductions are a maximum (exact, order-free) and an integer count. Results are bit-identical for any
//! rayon thread count, and below [`PARALLEL_MIN`] items the same chunks run on the calling thread without
//! touching rayon. Loops run in the caller's rayon pool (`pool.install`). All buffers are sized in
//! [`StrainLimiter::new`]; [`StrainLimiter::apply`] does not allocate.
#![deny(unsafe_code)]

use crate::runtime::executor::parallel_here;
use glam::{DVec3, Vec3};
use rayon::prelude::*;

use super::response::Stencil;
use crate::mesh::VertexEdges;

/// Edges or vertices per chunk: the unit of parallel work.
pub const CHUNK: usize = 256;

/// Loops over fewer items than this run on the calling thread (same chunks, same bits).
pub const PARALLEL_MIN: usize = 2048;

/// A Gauss–Seidel colour is swept through its work list while the list holds less than this
/// fraction's inverse of the colour's edges, else by testing every edge of the colour.
const LIST_FRACTION: usize = 4;

/// Over-relaxation `ω` of the Gauss–Seidel edge corrections (module doc, "Over-relaxation"): an
/// edge `δ` beyond its target is moved `ω δ`, clamped to the admissible interval less the margins.
/// Measured on drape-65 (180 frames, over-relaxed from the third sweep): 7,247 sweeps in all at
/// ω = 1, 2,847 at 1.8, 2,282 at 1.9, 1,579 at 1.95, 2,337 at 2.0; the impact frame 2,656, 509,
/// 360, 287 and 245 sweeps.
pub const RELAXATION: f64 = 1.95;

/// The sweep of a pass (counted from 0) from which the corrections are over-relaxed: a pass that
/// still corrects an edge after two plain sweeps is spreading a correction over the sheet (module
/// doc, "Over-relaxation"). The limiter's calls of drape-65's first 40 frames replayed at
/// ω = 1.9: 819 sweeps from sweep 0, 894 from 1, 939 from 2, 1,012 from 3; over 180 frames at
/// ω = 1.95, 1,212 from sweep 0 and 1,579 from 2. From 2, a lone edge is corrected exactly.
const RELAXED_FROM: u32 = 2;

/// Default violation tolerance `|L* − L| / L0` below which an edge counts as satisfied: a round-off
/// allowance for the `f32` velocities, not a physical parameter (module doc).
pub const DEFAULT_TOLERANCE: f32 = 1e-4;

/// An edge is corrected once its violation exceeds this fraction of the tolerance: far above the
/// `f32` round-off of a corrected edge (which sits a whole tolerance inside its bound), far below any
/// strain a user can see.
const TRIGGER_FRACTION: f64 = 1e-2;

/// Relative margin of the squared-length test that finds an edge inside its interval without a
/// square root (`Problem::evaluate`): ~1e4 times the rounding of `sqrt` and of the squares.
const INSIDE_MARGIN: f64 = 1e-12;

/// Below this fraction of the rest length the predicted edge vector has no usable direction and the
/// start-of-step direction is used instead.
const DEGENERATE_LENGTH: f64 = 1e-9;

/// How the coupled edge corrections are iterated (`docs/methods/bridson-collisions.md` §3.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StrainMethod {
    /// All corrections of a sweep from the same velocities, applied together, under-relaxed per edge.
    /// Slower to converge.
    Jacobi,
    /// Corrections applied at once in the fixed order (colour, edge index). Faster to converge.
    #[default]
    GaussSeidel,
}

/// Parameters of the strain limiter (`docs/methods/bridson-collisions.md` §3.2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StrainLimit {
    /// `s_t`: the largest allowed stretch, as a fraction of the rest length (`≥ 0`, default 0.1).
    pub max_stretch: f32,
    /// `s_c`: the largest allowed compression, as a fraction of the rest length (`0..=1`, default 0.1).
    /// `0` forbids compression (the "zero compression" reading of the paper's talk slides).
    pub max_compress: f32,
    /// Sweep cap (default 100; a pass stops as soon as every edge is within the limit). `0` only
    /// measures.
    pub iterations: u32,
    /// Jacobi or coloured Gauss–Seidel (default Gauss–Seidel).
    pub method: StrainMethod,
}

impl Default for StrainLimit {
    fn default() -> Self {
        Self {
            max_stretch: 0.1,
            max_compress: 0.1,
            iterations: 100,
            method: StrainMethod::GaussSeidel,
        }
    }
}

/// A [`StrainLimit`] field outside its valid range.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum StrainLimitError {
    /// `max_stretch` is negative or not finite.
    #[error("strain limit: max_stretch must be finite and >= 0, got {0}")]
    MaxStretch(f32),
    /// `max_compress` is outside `0..=1` or not finite.
    #[error("strain limit: max_compress must be in [0, 1], got {0}")]
    MaxCompress(f32),
    /// The rate limit is negative or not finite.
    #[error("strain limit: the rate limit must be finite and >= 0, got {0}")]
    RateLimit(f32),
    /// The tolerance is negative or not finite.
    #[error("strain limit: tolerance must be finite and >= 0, got {0}")]
    Tolerance(f32),
}

impl StrainLimit {
    /// Checks every field against its documented range.
    ///
    /// # Errors
    /// The first field out of range.
    pub fn validate(&self) -> Result<(), StrainLimitError> {
        let non_negative = |s: f32| s.is_finite() && s >= 0.0;
        if !non_negative(self.max_stretch) {
            return Err(StrainLimitError::MaxStretch(self.max_stretch));
        }
        if !(non_negative(self.max_compress) && self.max_compress <= 1.0) {
            return Err(StrainLimitError::MaxCompress(self.max_compress));
        }
        Ok(())
    }

    /// The admissible predicted-length interval `[lo, hi]` of an edge with rest length `l0` and
    /// start-of-step length `l_start` (both m): the strain interval intersected with the rate interval
    /// of the optional rate limit `rate`; when they are disjoint, the strain bound nearest to the rate
    /// interval (module doc).
    #[must_use]
    pub fn admissible_lengths(&self, rate: Option<f32>, l0: f64, l_start: f64) -> (f64, f64) {
        let a = (1.0 - f64::from(self.max_compress)) * l0;
        let b = (1.0 + f64::from(self.max_stretch)) * l0;
        let Some(r) = rate else {
            return (a, b);
        };
        let r = f64::from(r);
        let c = (1.0 - r) * l_start;
        let d = (1.0 + r) * l_start;
        let lo = a.max(c);
        let hi = b.min(d);
        if lo <= hi {
            (lo, hi)
        } else if d < a {
            (a, a)
        } else {
            (b, b)
        }
    }
}

/// What one strain-limiting call did. Violations are `|L* − L| / L0` (dimensionless strain beyond the
/// admissible interval), maximised over the edges that can be corrected (both-pinned edges excluded).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StrainReport {
    /// Sweeps that applied at least one correction (`≤` the cap).
    pub sweeps: u32,
    /// Edges whose violation exceeded the tolerance on entry.
    pub corrected_edges: u32,
    /// Largest violation on entry.
    pub max_violation_before: f32,
    /// Largest violation on exit: at most the tolerance unless the cap was hit (or an edge is degenerate).
    pub max_violation_after: f32,
}

/// One edge's pending correction: the impulse `p` of `docs/methods/bridson-collisions.md` (3.5) (`v_i −= w_i p`, `v_j += w_j p`).
#[derive(Clone, Copy, Debug, Default)]
struct EdgeImpulse {
    p: DVec3,
    active: bool,
    /// Whether each end takes its share (`Problem::taking`, decided when the impulse was computed):
    /// the Gauss–Seidel scatter applies it without asking the holds again.
    takes: [bool; 2],
    /// The edge's violation when it was evaluated (Gauss–Seidel keeps it for the edges a sweep skips).
    violation: f32,
}

/// A collision the limiter keeps resolved while it sweeps (module doc, "Contacts"): the relative normal
/// velocity `Σ_k c_k n̂ · v_k` of its moving vertices must stay at least `min_speed`.
#[derive(Clone, Copy, Debug)]
struct KeptContact {
    /// The stencil's vertices that move (`w > 0`, cloth vertices); unused slots have `c = 0`.
    verts: [u32; 4],
    /// Signed stencil coefficients of `verts`.
    c: [f64; 4],
    /// Unit normal, from the first side toward the second.
    n: DVec3,
    /// Smallest admissible `Σ_k c_k n̂ · v_k` over the moving vertices (m/s): the collision's target
    /// relative normal velocity minus the part the fixed vertices carry.
    min_speed: f64,
    /// `Σ_k c_k² w_k` over the moving vertices (1/kg), positive.
    den: f64,
}

/// The free directions of a vertex held against kinematic bodies (module doc, "Contacts"): up to two
/// unit normals `n̂` pointing away from the bodies; a third distinct one holds the vertex in every
/// direction.
#[derive(Clone, Copy, Debug, Default)]
struct Held {
    normals: [DVec3; 2],
    /// Number of normals in use; 3 = held in every direction.
    count: u8,
}

/// A new normal within this cosine of one already held adds nothing.
const SAME_NORMAL_COS: f64 = 0.99;

impl Held {
    /// Adds the free direction `n` (unit).
    fn add(&mut self, n: DVec3) {
        let c = usize::from(self.count.min(2));
        if self.count >= 3 || self.normals[..c].iter().any(|k| k.dot(n) > SAME_NORMAL_COS) {
            return;
        }
        if c == 2 {
            self.count = 3;
        } else {
            self.normals[c] = n;
            self.count += 1;
        }
    }

    /// Whether a correction moving the vertex along `u` would move it into a body that holds it
    /// (`n̂ · u < 0` for one of its normals).
    #[inline]
    fn blocks(&self, u: DVec3) -> bool {
        match self.count {
            0 => false,
            3 => true,
            c => self.normals[..usize::from(c)]
                .iter()
                .any(|k| k.dot(u) < 0.0),
        }
    }
}

/// What drives an edge's two ends ([`StrainLimiter::drive`], module doc, "Forced edges").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeDrive {
    /// An end the limiter may move: the edge is within the limit once a pass converges.
    Free,
    /// Forced: both ends kinematic (pinned, on a pin track).
    Pins,
    /// Forced: each end kinematic or held against a kinematic body, at least one held.
    Bodies,
}

/// Largest violation and number of active corrections over a set of edges.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    max_violation: f32,
    active: u32,
}

impl Tally {
    /// Order-free combination: `max` is exact and the count is an integer sum.
    #[inline]
    fn combine(self, other: Self) -> Self {
        Self {
            max_violation: self.max_violation.max(other.max_violation),
            active: self.active + other.active,
        }
    }
}

/// The inputs of one `apply` call, shared by the passes.
#[derive(Clone, Copy)]
struct Problem<'a> {
    limit: &'a StrainLimit,
    rate: Option<f32>,
    h: f64,
    tolerance: f64,
    x: &'a [Vec3],
    inv_mass: &'a [f32],
    edges: &'a [[u32; 2]],
    rest: &'a [f32],
    /// `τ ℓ` (m), `ℓ` the shortest positive rest length: the kept collisions' tolerance, as a length.
    contact_slack: f64,
    /// Per vertex, the directions kept collisions forbid.
    held: &'a [Held],
    /// Whether any collision is kept (else no vertex is held, and [`Problem::taking`] need not
    /// look).
    holding: bool,
    /// Over-relaxation `ω` of the Gauss–Seidel corrections (module doc, "Over-relaxation"); 1 for
    /// Jacobi and for measuring.
    relaxation: f64,
}

impl Problem<'_> {
    /// The inverse masses with which the ends `i`, `j` of an edge take a correction that moves `i` along
    /// `u` and `j` along `−u`: an end held against a body that the move would push it into takes none
    /// while the other end moves freely; when both are held so, both take theirs (the kept collisions
    /// are restored after the sweep). Module doc, "Contacts".
    #[inline]
    fn taking(&self, i: usize, j: usize, u: DVec3) -> (f64, f64) {
        let wi = f64::from(self.inv_mass[i]);
        let wj = f64::from(self.inv_mass[j]);
        if !self.holding {
            return (wi, wj);
        }
        let bi = wi > 0.0 && self.held[i].blocks(u);
        let bj = wj > 0.0 && self.held[j].blocks(-u);
        match (bi, bj) {
            (true, false) if wj > 0.0 => (0.0, wj),
            (false, true) if wi > 0.0 => (wi, 0.0),
            _ => (wi, wj),
        }
    }

    /// [`Problem::evaluate`] of edge `e` stored in its Gauss–Seidel slot (with its violation);
    /// returns the slot's tally.
    #[inline]
    fn evaluate_into(&self, e: usize, v: &[Vec3], slot: &mut EdgeImpulse) -> Tally {
        let (impulse, violation) = self.evaluate(e, v);
        *slot = EdgeImpulse {
            violation,
            ..impulse
        };
        Tally {
            max_violation: violation,
            active: u32::from(impulse.active),
        }
    }

    /// Whether edge `e` passes the squared-length test of [`Problem::evaluate`] without a rate limit:
    /// it is then well inside its interval, and `evaluate` would return no impulse and violation 0.
    /// False when unsure (a rate limit is set, or the test fails). The same operations as
    /// `evaluate`'s, without its other work, for the measurement on entry, where most edges are
    /// inside.
    #[inline(always)]
    fn clearly_inside(&self, e: usize, v: &[Vec3]) -> bool {
        if self.rate.is_some() {
            return false;
        }
        let [i, j] = self.edges[e];
        let (i, j) = (i as usize, j as usize);
        let l0 = f64::from(self.rest[e]);
        let x_ij = self.x[j].as_dvec3() - self.x[i].as_dvec3();
        let d = x_ij + self.h * (v[j].as_dvec3() - v[i].as_dvec3());
        let (lo, hi) = self.limit.admissible_lengths(None, l0, 0.0);
        let l2 = d.length_squared();
        l2 > lo * lo * (1.0 + INSIDE_MARGIN) && l2 < hi * hi * (1.0 - INSIDE_MARGIN)
    }

    /// Evaluates edge `e` against the velocities `v`: its violation and, when it exceeds the tolerance
    /// and can be fixed, the impulse of `docs/methods/bridson-collisions.md` (3.5). Bridson–Fedkiw–Anderson 2002,
    /// `docs/methods/bridson-collisions.md` (3.5).
    #[inline]
    fn evaluate(&self, e: usize, v: &[Vec3]) -> (EdgeImpulse, f32) {
        let [i, j] = self.edges[e];
        let (i, j) = (i as usize, j as usize);
        let wi = f64::from(self.inv_mass[i]);
        let wj = f64::from(self.inv_mass[j]);
        let l0 = f64::from(self.rest[e]);
        let w_sum = wi + wj;
        if !(w_sum > 0.0 && l0 > 0.0) {
            return (EdgeImpulse::default(), 0.0);
        }
        let x_ij = self.x[j].as_dvec3() - self.x[i].as_dvec3();
        let d = x_ij + self.h * (v[j].as_dvec3() - v[i].as_dvec3());
        let l_start = if self.rate.is_some() {
            x_ij.length()
        } else {
            0.0 // unread without a rate limit
        };
        let (lo, hi) = self.limit.admissible_lengths(self.rate, l0, l_start);
        // Most edges are well inside their interval: decided on the squared length, with a margin
        // far above the rounding of a square root, so no edge near a bound takes this path.
        let l2 = d.length_squared();
        if l2 > lo * lo * (1.0 + INSIDE_MARGIN) && l2 < hi * hi * (1.0 - INSIDE_MARGIN) {
            return (EdgeImpulse::default(), 0.0);
        }
        let l = l2.sqrt();
        let violation = if l < lo {
            (lo - l) / l0
        } else if l > hi {
            (l - hi) / l0
        } else {
            0.0
        };
        // Written so that a NaN violation is never corrected.
        let needs_correction = violation > self.tolerance * TRIGGER_FRACTION;
        if !needs_correction {
            return (EdgeImpulse::default(), violation as f32);
        }
        // The target sits `tolerance` inside the violated bound (module doc, "Violation and
        // tolerance"), or mid-interval when the interval is narrower than two margins.
        let margin = self.tolerance * l0;
        let l_star = if hi - lo <= 2.0 * margin {
            0.5 * (lo + hi)
        } else if l < lo {
            lo + margin
        } else {
            hi - margin
        };
        let dir = if l > DEGENERATE_LENGTH * l0 {
            d / l
        } else {
            let l_start = x_ij.length();
            let has_direction = l_start > DEGENERATE_LENGTH * l0;
            if !has_direction {
                return (EdgeImpulse::default(), violation as f32);
            }
            x_ij / l_start
        };
        let l_star = if self.relaxation != 1.0 && hi - lo > 2.0 * margin {
            (l_star + (self.relaxation - 1.0) * (l_star - l)).clamp(lo + margin, hi - margin)
        } else {
            l_star
        };
        let gamma = (l_star - l) / self.h;
        // An end a kept collision holds does not move into its body when the other end can take the
        // whole correction (module doc, "Contacts").
        let (wi, wj) = self.taking(i, j, -gamma.signum() * dir);
        let w_take = wi + wj;
        let impulse = EdgeImpulse {
            p: dir * (gamma / w_take),
            active: true,
            takes: [wi > 0.0, wj > 0.0],
            violation: violation as f32,
        };
        (impulse, violation as f32)
    }
}

/// The shortest positive length of `lengths` (m), 0 when there is none.
fn shortest_positive(lengths: &[f32]) -> f64 {
    let shortest = lengths
        .iter()
        .copied()
        .filter(|&l| l > 0.0)
        .fold(f32::INFINITY, f32::min);
    if shortest.is_finite() {
        f64::from(shortest)
    } else {
        0.0
    }
}

/// Restores every kept collision whose relative normal velocity fell short of its minimum by more
/// than the trigger, to that minimum (module doc, "Contacts"), serially in the order the
/// collisions were kept; every vertex changed gets `tick` in `changed_at`, and its edges are listed
/// in `work` when given. Returns the number of corrections.
fn project_contacts(
    contacts: &[KeptContact],
    problem: &Problem<'_>,
    v: &mut [Vec3],
    changed_at: &mut [u64],
    tick: u64,
    mut work: Option<&mut WorkLists>,
) -> u32 {
    let mut active = 0;
    let trigger = TRIGGER_FRACTION * problem.contact_slack;
    for k in contacts {
        let speed: f64 = k
            .verts
            .iter()
            .zip(&k.c)
            .filter(|(_, c)| **c != 0.0)
            .map(|(&i, &c)| c * k.n.dot(v[i as usize].as_dvec3()))
            .sum();
        // Written so that a NaN deficit is never corrected.
        let short = problem.h * (k.min_speed - speed) > trigger;
        if !short {
            continue;
        }
        let j = (k.min_speed - speed) / k.den;
        for (&i, &c) in k.verts.iter().zip(&k.c) {
            if c != 0.0 {
                let w = f64::from(problem.inv_mass[i as usize]);
                let vi = &mut v[i as usize];
                *vi = (vi.as_dvec3() + (c * w * j) * k.n).as_vec3();
                changed_at[i as usize] = tick;
                if let Some(lists) = work.as_mut() {
                    lists.vertex_changed(i as usize);
                }
            }
        }
        active += 1;
    }
    active
}

/// Runs `f(first_index, chunk)` over the fixed chunks of `out`, in parallel from [`PARALLEL_MIN`] items.
fn for_chunks<T: Send, F: Fn(usize, &mut [T]) + Sync>(out: &mut [T], f: F) {
    if out.len() < PARALLEL_MIN || !parallel_here() {
        for (k, chunk) in out.chunks_mut(CHUNK).enumerate() {
            f(k * CHUNK, chunk);
        }
    } else {
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(k, chunk)| f(k * CHUNK, chunk));
    }
}

/// Like [`for_chunks`], combining the chunks' tallies (order-free, so any schedule gives the same bits).
fn tally_chunks<T: Send, F: Fn(usize, &mut [T]) -> Tally + Sync>(out: &mut [T], f: F) -> Tally {
    if out.len() < PARALLEL_MIN || !parallel_here() {
        out.chunks_mut(CHUNK)
            .enumerate()
            .fold(Tally::default(), |acc, (k, chunk)| {
                acc.combine(f(k * CHUNK, chunk))
            })
    } else {
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .map(|(k, chunk)| f(k * CHUNK, chunk))
            .reduce(Tally::default, Tally::combine)
    }
}

/// Strain-limiting workspace of one cloth: vertex–edge adjacency, Jacobi accumulators and counts, and the
/// edge colouring for the deterministic parallel Gauss–Seidel sweep (module doc). Sized once in
/// [`StrainLimiter::new`].
#[derive(Clone, Debug)]
pub struct StrainLimiter {
    num_vertices: usize,
    /// Incident edge indices of each vertex, ascending.
    adjacency: VertexEdges,
    /// Per-vertex number of active corrections (Jacobi).
    counts: Vec<u32>,
    /// Pending impulses: by edge index (Jacobi, measuring) or by colour slot (Gauss–Seidel).
    impulses: Vec<EdgeImpulse>,
    /// Optional strain-rate limit `r` (module doc).
    rate_limit: Option<f32>,
    /// Violation tolerance (module doc).
    tolerance: f32,
    /// Edge indices sorted by (colour, edge index).
    colour_order: Vec<u32>,
    /// Offsets into `colour_order`, one per colour plus one.
    colour_start: Vec<u32>,
    /// Collisions of the current collision stage kept resolved by the sweeps (module doc, "Contacts").
    contacts: Vec<KeptContact>,
    /// Per vertex: the directions its kept collisions with kinematic bodies forbid.
    held: Vec<Held>,
    /// Gauss–Seidel: per vertex, the tick of the pass at which its velocity last changed (module doc,
    /// "Sweeps": only edges with a changed end are evaluated again).
    changed_at: Vec<u64>,
    /// Gauss–Seidel: skip the edges whose ends did not change (always, except in the test that
    /// compares with full sweeps).
    skip_unchanged: bool,
    /// Gauss–Seidel: the over-relaxation `ω` of the edge corrections ([`RELAXATION`]; 1, plain
    /// Gauss–Seidel, in the tests that compare with it; module doc, "Over-relaxation").
    relaxation: f64,
    /// Gauss–Seidel: the edges to evaluate again, by colour (module doc, "Sweeps").
    work: WorkLists,
    /// Colours swept through their work list (for the test that the lists are used).
    #[cfg(test)]
    listed_colours: u32,
}

/// Gauss–Seidel work lists (module doc, "Sweeps"): per colour, the slots (indices into the colour
/// order) whose edge has an end that changed since the edge's last evaluation, each listed once.
#[derive(Clone, Debug)]
struct WorkLists {
    /// The colour of each slot.
    slot_colour: Vec<u32>,
    /// Per vertex, the slot and colour of each incident edge: vertex `i`'s are
    /// `incident[incident_start[i]..incident_start[i + 1]]`, in the adjacency's order.
    incident: Vec<[u32; 2]>,
    incident_start: Vec<usize>,
    /// Colour `c`'s list is `queue[start[c]..start[c] + len[c]]` (`start` as the colour order's).
    queue: Vec<u32>,
    start: Vec<u32>,
    len: Vec<u32>,
    /// Whether a slot is listed.
    queued: Vec<bool>,
    /// The list of the colour being swept, taken out of `queue` (capacity: the largest colour).
    current: Vec<u32>,
}

impl WorkLists {
    /// Empty lists for the colouring `colour_order` / `colour_start` of the edges of `adjacency`.
    fn new(colour_order: &[u32], colour_start: &[u32], adjacency: &VertexEdges) -> Self {
        let num_edges = colour_order.len();
        let mut slot_of = vec![0u32; num_edges];
        let mut slot_colour = vec![0u32; num_edges];
        for (c, w) in colour_start.windows(2).enumerate() {
            for slot in w[0]..w[1] {
                slot_of[colour_order[slot as usize] as usize] = slot;
                slot_colour[slot as usize] = c as u32;
            }
        }
        let largest_colour = colour_start
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .max()
            .unwrap_or(0);
        let mut incident = Vec::with_capacity(2 * num_edges);
        let mut incident_start = Vec::with_capacity(adjacency.num_vertices() + 1);
        incident_start.push(0);
        for k in 0..adjacency.num_vertices() {
            incident.extend(adjacency.edges(k).iter().map(|&e| {
                let slot = slot_of[e as usize];
                [slot, slot_colour[slot as usize]]
            }));
            incident_start.push(incident.len());
        }
        Self {
            slot_colour,
            incident,
            incident_start,
            queue: vec![0; num_edges],
            start: colour_start.to_vec(),
            len: vec![0; colour_start.len().saturating_sub(1)],
            queued: vec![false; num_edges],
            current: Vec::with_capacity(largest_colour),
        }
    }

    /// Lists `slot` of colour `c`, unless it is listed already.
    #[inline]
    fn list(&mut self, slot: u32, c: u32) {
        if self.queued[slot as usize] {
            return;
        }
        self.queued[slot as usize] = true;
        let c = c as usize;
        self.queue[(self.start[c] + self.len[c]) as usize] = slot;
        self.len[c] += 1;
    }

    /// Empties every list.
    fn clear(&mut self) {
        self.len.fill(0);
        self.queued.fill(false);
    }

    /// Lists every edge at vertex `i`, whose velocity just changed.
    #[inline]
    fn vertex_changed(&mut self, i: usize) {
        for k in self.incident_start[i]..self.incident_start[i + 1] {
            let [slot, c] = self.incident[k];
            self.list(slot, c);
        }
    }

    /// The number of slots listed for colour `c`.
    fn listed(&self, c: usize) -> usize {
        self.len[c] as usize
    }

    /// Moves colour `c`'s list into `current`, unlisting its slots.
    fn take(&mut self, c: usize) {
        let list = &self.queue[self.start[c] as usize..(self.start[c] + self.len[c]) as usize];
        self.current.clear();
        self.current.extend_from_slice(list);
        for &slot in list {
            self.queued[slot as usize] = false;
        }
        self.len[c] = 0;
    }
}

impl StrainLimiter {
    /// Builds the workspace for a cloth with `num_vertices` vertices and the unique edges `edges`: the
    /// adjacency, the buffers, and the greedy edge colouring (module doc).
    ///
    /// # Panics
    /// As [`VertexEdges::build`]: an edge index out of range, an edge joining a vertex to
    /// itself, or more than `u32::MAX` vertices or edge ends.
    #[must_use]
    pub fn new(num_vertices: usize, edges: &[[u32; 2]]) -> Self {
        let adjacency = VertexEdges::build(num_vertices, edges);
        // Greedy colouring in edge order: the smallest colour unused at both ends. `stamp[c] == e` marks
        // colour c as taken for edge e.
        const UNCOLOURED: u32 = u32::MAX;
        let mut colour = vec![UNCOLOURED; edges.len()];
        let max_degree = adjacency.max_degree();
        let mut stamp = vec![UNCOLOURED; 2 * max_degree + 1];
        let mut num_colours = 0usize;
        for (e, &[i, j]) in edges.iter().enumerate() {
            for k in [i as usize, j as usize] {
                for &f in adjacency.edges(k) {
                    let c = colour[f as usize];
                    if c != UNCOLOURED {
                        stamp[c as usize] = e as u32;
                    }
                }
            }
            let c = stamp
                .iter()
                .position(|&s| s != e as u32)
                .expect("at most 2Δ − 2 neighbouring edges, so one of 2Δ − 1 colours is free");
            colour[e] = c as u32;
            num_colours = num_colours.max(c + 1);
        }
        // Counting sort by colour, stable in edge index.
        let mut colour_start = vec![0u32; num_colours + 1];
        for &c in &colour {
            colour_start[c as usize + 1] += 1;
        }
        for c in 0..num_colours {
            colour_start[c + 1] += colour_start[c];
        }
        let mut next: Vec<u32> = colour_start[..num_colours].to_vec();
        let mut colour_order = vec![0u32; edges.len()];
        for (e, &c) in colour.iter().enumerate() {
            colour_order[next[c as usize] as usize] = e as u32;
            next[c as usize] += 1;
        }
        let work = WorkLists::new(&colour_order, &colour_start, &adjacency);
        Self {
            num_vertices,
            adjacency,
            counts: vec![0; num_vertices],
            impulses: vec![EdgeImpulse::default(); edges.len()],
            colour_order,
            colour_start,
            rate_limit: None,
            tolerance: DEFAULT_TOLERANCE,
            contacts: Vec::with_capacity(num_vertices),
            held: vec![Held::default(); num_vertices],
            changed_at: vec![0; num_vertices],
            skip_unchanged: true,
            relaxation: RELAXATION,
            work,
            #[cfg(test)]
            listed_colours: 0,
        }
    }

    /// Forgets the kept collisions: called at the start of every collision stage.
    pub fn forget_contacts(&mut self) {
        for k in &self.contacts {
            for (&i, &c) in k.verts.iter().zip(&k.c) {
                if c != 0.0 {
                    self.held[i as usize] = Held::default();
                }
            }
        }
        self.contacts.clear();
    }

    /// Whether a collision kept since [`StrainLimiter::forget_contacts`] holds cloth vertex `i` against a
    /// kinematic body (module doc, "Contacts"): its velocity into that body is the body's, not the
    /// cloth's.
    ///
    /// # Panics
    /// If `i` is out of range.
    #[must_use]
    pub fn holds(&self, i: usize) -> bool {
        self.held[i].count > 0
    }

    /// The normals (unit, away from the bodies) along which the collisions kept since
    /// [`StrainLimiter::forget_contacts`] hold cloth vertex `i` against kinematic bodies: empty
    /// when none holds it, `None` when it is held in every direction.
    ///
    /// # Panics
    /// If `i` is out of range.
    #[must_use]
    pub fn held_normals(&self, i: usize) -> Option<&[DVec3]> {
        let held = &self.held[i];
        (held.count < 3).then(|| &held.normals[..usize::from(held.count)])
    }

    /// What drives edge `[i, j]` (module doc, "Forced edges"): [`EdgeDrive::Free`] when an end is
    /// neither kinematic (`inv_mass` 0) nor held against a kinematic body by a collision kept since
    /// [`StrainLimiter::forget_contacts`]; otherwise [`EdgeDrive::Pins`] when both ends are kinematic,
    /// [`EdgeDrive::Bodies`] when an end is held.
    ///
    /// # Panics
    /// If an index is out of range.
    #[must_use]
    pub fn drive(&self, [i, j]: [u32; 2], inv_mass: &[f32]) -> EdgeDrive {
        let kinematic = |k: u32| {
            let w = inv_mass[k as usize];
            w.is_nan() || w <= 0.0
        };
        let (pi, pj) = (kinematic(i), kinematic(j));
        let (hi, hj) = (self.holds(i as usize), self.holds(j as usize));
        if !((pi || hi) && (pj || hj)) {
            EdgeDrive::Free
        } else if pi && pj {
            EdgeDrive::Pins
        } else {
            EdgeDrive::Bodies
        }
    }

    /// Number of collisions kept since [`StrainLimiter::forget_contacts`].
    #[must_use]
    pub fn kept_contacts(&self) -> usize {
        self.contacts.len()
    }

    /// Keeps a collision resolved in the sweeps that follow (module doc, "Contacts"): the stencil's
    /// relative normal velocity `n̂ · Σ_k c_k v_k` must stay at least `max(0, (s_min − d0)/h)`, the target
    /// of the collision impulse (Bridson, Fedkiw & Anderson 2002). Against a side that is entirely
    /// kinematic, the moving vertices are also held (module doc).
    ///
    /// `stencil` indexes the collision stage's vertex space: the cloth's vertices first (the first
    /// [`StrainLimiter::num_vertices`]), then obstacle vertices; `v` and `inv_mass` cover that whole space.
    /// Vertices that do not move (`inv_mass` 0, or beyond the cloth) enter with their velocity now, which
    /// the stage never changes. `d0` is the stencil's signed separation at `x^n` (m), `s_min` the minimum
    /// separation (m), `h` the step (s). A collision without a moving vertex is not kept.
    ///
    /// Returns true when the list had to grow (an allocation: the caller reports it as a pool overflow).
    pub fn keep_contact(
        &mut self,
        stencil: &Stencil,
        d0: f64,
        s_min: f64,
        h: f32,
        v: &[Vec3],
        inv_mass: &[f32],
    ) -> bool {
        let h = f64::from(h);
        let n = stencil.normal();
        if h.is_nan() || h <= 0.0 || n == DVec3::ZERO {
            return false;
        }
        let target = ((s_min - d0) / h).max(0.0);
        let mut kept = KeptContact {
            verts: [0; 4],
            c: [0.0; 4],
            n,
            min_speed: target,
            den: 0.0,
        };
        let mut slot = 0;
        // Whether each side's weighted vertices all stay fixed (a kinematic body or pins).
        let first = stencil.kind().first_count();
        let mut side_fixed = [true; 2];
        for (k, (&i, &c)) in stencil
            .verts()
            .iter()
            .zip(&stencil.coefficients())
            .enumerate()
        {
            let w = inv_mass.get(i as usize).copied().unwrap_or(0.0);
            if c != 0.0 && (i as usize) < self.num_vertices && w > 0.0 {
                side_fixed[usize::from(k >= first)] = false;
            }
        }
        for (&i, &c) in stencil.verts().iter().zip(&stencil.coefficients()) {
            let w = inv_mass.get(i as usize).copied().unwrap_or(0.0);
            let moves = (i as usize) < self.num_vertices && w > 0.0;
            if moves {
                kept.verts[slot] = i;
                kept.c[slot] = c;
                kept.den += c * c * f64::from(w);
                slot += 1;
            } else if let Some(vi) = v.get(i as usize) {
                kept.min_speed -= c * n.dot(vi.as_dvec3());
            }
        }
        if !(kept.den > 0.0 && kept.min_speed.is_finite()) {
            return false;
        }
        // Against a kinematic side, the moving vertices are held: free only away from it.
        if side_fixed[0] || side_fixed[1] {
            for (&i, &c) in kept.verts.iter().zip(&kept.c) {
                if c != 0.0 {
                    self.held[i as usize].add(n * c.signum());
                }
            }
        }
        let grew = self.contacts.len() == self.contacts.capacity();
        self.contacts.push(kept);
        grew
    }

    /// Sets the optional strain-rate limit `r` (Bridson et al. 2002 §3): the
    /// predicted length may differ from the start-of-step length by at most `r` times it. `None` (the
    /// default) disables it. Where it conflicts with the strain interval the strain limit wins (module doc).
    ///
    /// # Errors
    /// [`StrainLimitError::RateLimit`] if `r` is negative or not finite; the setting is then unchanged.
    pub fn set_rate_limit(&mut self, rate: Option<f32>) -> Result<(), StrainLimitError> {
        if let Some(r) = rate
            && !(r.is_finite() && r >= 0.0)
        {
            return Err(StrainLimitError::RateLimit(r));
        }
        self.rate_limit = rate;
        Ok(())
    }

    /// The strain-rate limit, see [`StrainLimiter::set_rate_limit`].
    #[must_use]
    pub fn rate_limit(&self) -> Option<f32> {
        self.rate_limit
    }

    /// Sets the violation tolerance: edges with `|L* − L| / L0` at or below it are accepted (default
    /// [`DEFAULT_TOLERANCE`]).
    ///
    /// # Errors
    /// [`StrainLimitError::Tolerance`] if `tolerance` is negative or not finite; the setting is then
    /// unchanged.
    pub fn set_tolerance(&mut self, tolerance: f32) -> Result<(), StrainLimitError> {
        if !(tolerance.is_finite() && tolerance >= 0.0) {
            return Err(StrainLimitError::Tolerance(tolerance));
        }
        self.tolerance = tolerance;
        Ok(())
    }

    /// The violation tolerance, see [`StrainLimiter::set_tolerance`].
    #[must_use]
    pub fn tolerance(&self) -> f32 {
        self.tolerance
    }

    /// Number of vertices the workspace was built for.
    #[must_use]
    pub fn num_vertices(&self) -> usize {
        self.num_vertices
    }

    /// Number of edges the workspace was built for.
    #[must_use]
    pub fn num_edges(&self) -> usize {
        self.impulses.len()
    }

    /// Number of colours of the Gauss–Seidel edge colouring.
    #[must_use]
    pub fn num_colours(&self) -> usize {
        self.colour_start.len() - 1
    }

    /// The edges of colour `c`, ascending. No two of them share a vertex.
    ///
    /// # Panics
    /// If `c >= self.num_colours()`.
    #[must_use]
    pub fn colour_edges(&self, c: usize) -> &[u32] {
        &self.colour_order[self.colour_start[c] as usize..self.colour_start[c + 1] as usize]
    }

    /// Limits strain by velocity impulses: keeps every edge's predicted length
    /// `|x_j + h v_j − x_i − h v_i|` within the admissible interval (the strain interval
    /// `[(1 − s_c) L0, (1 + s_t) L0]` of `limit`, intersected with the rate interval if a rate limit is
    /// set) up to the tolerance, iterating Jacobi or
    /// coloured Gauss–Seidel sweeps until no edge needs a correction or `limit.iterations` sweeps ran.
    /// Bridson–Fedkiw–Anderson 2002, `docs/methods/bridson-collisions.md` (3.5).
    ///
    /// `h` is the step (s), `x` the start-of-step positions `x^n` (m), `v` the step-average velocities
    /// `v^{n+1/2}` (m/s, updated in place), `inv_mass` the inverse masses (1/kg, 0 = pinned: such a vertex
    /// is never changed), `edges`/`rest` the cloth's unique edges and rest lengths (m) — the same edges, in
    /// the same order, as given to [`StrainLimiter::new`]. Momentum `Σ m v` of the free vertices is
    /// conserved except for the impulses that pinned ends absorb. Does not allocate.
    ///
    /// # Panics
    /// If the slice lengths disagree with the workspace, or `h` is not positive and finite. Debug builds
    /// also check `limit.validate()`.
    #[allow(clippy::too_many_arguments)] // the signature is the pipeline's contract (SoA slices)
    pub fn apply(
        &mut self,
        limit: &StrainLimit,
        h: f32,
        x: &[Vec3],
        v: &mut [Vec3],
        inv_mass: &[f32],
        edges: &[[u32; 2]],
        rest: &[f32],
    ) -> StrainReport {
        let n = self.num_vertices;
        assert!(
            x.len() == n && v.len() == n && inv_mass.len() == n,
            "StrainLimiter::apply: x, v and inv_mass must have {n} entries"
        );
        assert!(
            edges.len() == self.impulses.len() && rest.len() == self.impulses.len(),
            "StrainLimiter::apply: edges and rest must have the {} entries given to new",
            self.impulses.len()
        );
        assert!(
            h.is_finite() && h > 0.0,
            "StrainLimiter::apply: h = {h} is not positive"
        );
        debug_assert!(limit.validate().is_ok(), "{:?}", limit.validate());
        // Moved out for the call (no allocation), so the sweeps can borrow `self` mutably.
        let held = std::mem::take(&mut self.held);
        let problem = Problem {
            limit,
            rate: self.rate_limit,
            h: f64::from(h),
            tolerance: f64::from(self.tolerance),
            x,
            inv_mass,
            edges,
            rest,
            // Read only with kept collisions: not worth a pass over the edges otherwise.
            contact_slack: if self.contacts.is_empty() {
                0.0
            } else {
                f64::from(self.tolerance) * shortest_positive(rest)
            },
            held: &held,
            holding: !self.contacts.is_empty(),
            relaxation: 1.0,
        };
        let report = match limit.method {
            StrainMethod::Jacobi => self.run_jacobi(&problem, v),
            StrainMethod::GaussSeidel => self.run_gauss_seidel(&problem, v),
        };
        self.held = held;
        report
    }

    /// Evaluates every edge against `v` into `impulses` (by edge index): the Jacobi corrections, and the
    /// measurement for both methods.
    fn evaluate_all(impulses: &mut [EdgeImpulse], problem: &Problem<'_>, v: &[Vec3]) -> Tally {
        tally_chunks(impulses, |first, chunk| {
            let mut tally = Tally::default();
            for (k, slot) in chunk.iter_mut().enumerate() {
                let (impulse, violation) = problem.evaluate(first + k, v);
                *slot = impulse;
                tally = tally.combine(Tally {
                    max_violation: violation,
                    active: u32::from(impulse.active),
                });
            }
            tally
        })
    }

    /// Evaluates every edge against `v` into its Gauss–Seidel slot (colour order), each slot keeping
    /// its violation: the measurement on entry, from which the first sweep lists the edges to correct.
    fn evaluate_slots(&mut self, problem: &Problem<'_>, v: &[Vec3]) -> Tally {
        let order = &self.colour_order;
        tally_chunks(&mut self.impulses, |first, chunk| {
            let mut tally = Tally::default();
            for (k, slot) in chunk.iter_mut().enumerate() {
                let e = order[first + k] as usize;
                if problem.clearly_inside(e, v) {
                    *slot = EdgeImpulse::default();
                    continue;
                }
                tally = tally.combine(problem.evaluate_into(e, v, slot));
            }
            tally
        })
    }

    /// Jacobi sweeps: evaluate all, stop if nothing is active or the cap is reached, else apply.
    fn run_jacobi(&mut self, problem: &Problem<'_>, v: &mut [Vec3]) -> StrainReport {
        let mut report = StrainReport::default();
        loop {
            let tally = Self::evaluate_all(&mut self.impulses, problem, v);
            if report.sweeps == 0 {
                report.corrected_edges = tally.active;
                report.max_violation_before = tally.max_violation;
            }
            if tally.active == 0 || report.sweeps >= problem.limit.iterations {
                report.max_violation_after = tally.max_violation;
                return report;
            }
            self.apply_jacobi(problem, v);
            project_contacts(&self.contacts, problem, v, &mut self.changed_at, 0, None);
            report.sweeps += 1;
        }
    }

    /// Applies the pending Jacobi impulses, each pair scaled by `ω_e = 1 / max(c_i, c_j)` (module doc).
    fn apply_jacobi(&mut self, problem: &Problem<'_>, v: &mut [Vec3]) {
        let Self {
            adjacency,
            counts,
            impulses,
            ..
        } = self;
        let (adjacency, impulses) = (&*adjacency, &*impulses);
        let incident = |k: usize| adjacency.edges(k);
        // c_k: active corrections at vertex k.
        for_chunks(counts, |first, chunk| {
            for (o, c) in chunk.iter_mut().enumerate() {
                *c = incident(first + o)
                    .iter()
                    .filter(|&&e| impulses[e as usize].active)
                    .count() as u32;
            }
        });
        let counts = &*counts;
        let inv_mass = problem.inv_mass;
        let edges = problem.edges;
        // Each vertex gathers its share, in ascending edge order.
        for_chunks(v, |first, chunk| {
            for (o, vi) in chunk.iter_mut().enumerate() {
                let i = first + o;
                let wi = inv_mass[i];
                let moves = wi > 0.0;
                if !moves {
                    continue;
                }
                let mut dv = DVec3::ZERO;
                for &e in incident(i) {
                    let impulse = impulses[e as usize];
                    if !impulse.active {
                        continue;
                    }
                    let [a, b] = edges[e as usize];
                    let (sign, j) = if a as usize == i {
                        (-1.0, b as usize)
                    } else {
                        (1.0, a as usize)
                    };
                    let cj = if inv_mass[j] > 0.0 { counts[j] } else { 0 };
                    let omega = 1.0 / f64::from(counts[i].max(cj));
                    // An end held against a body this correction would push it into takes none
                    // of it (module doc, "Contacts").
                    let (wa, wb) = problem.taking(a as usize, b as usize, -impulse.p);
                    let w = if a as usize == i { wa } else { wb };
                    if w > 0.0 {
                        dv += impulse.p * (sign * omega);
                    }
                }
                if dv != DVec3::ZERO {
                    *vi = (vi.as_dvec3() + dv * f64::from(wi)).as_vec3();
                }
            }
        });
    }

    /// Gauss–Seidel sweeps: measure, then colour-ordered sweeps until one applies nothing or the cap is
    /// reached.
    fn run_gauss_seidel(&mut self, problem: &Problem<'_>, v: &mut [Vec3]) -> StrainReport {
        let entry = self.evaluate_slots(problem, v);
        let mut report = StrainReport {
            sweeps: 0,
            corrected_edges: entry.active,
            max_violation_before: entry.max_violation,
            max_violation_after: entry.max_violation,
        };
        if entry.active == 0 {
            return report;
        }
        let relaxed = Problem {
            relaxation: self.relaxation,
            ..*problem
        };
        self.changed_at.fill(0);
        self.work.clear();
        if self.skip_unchanged {
            // The first sweep evaluates the edges that need a correction now and those whose ends
            // its earlier corrections change (module doc, "Sweeps").
            for (slot, impulse) in self.impulses.iter().enumerate() {
                if impulse.active {
                    self.work.list(slot as u32, self.work.slot_colour[slot]);
                }
            }
        }
        loop {
            if report.sweeps >= problem.limit.iterations {
                report.max_violation_after =
                    Self::evaluate_all(&mut self.impulses, problem, v).max_violation;
                return report;
            }
            let sweep_problem = if report.sweeps >= RELAXED_FROM {
                &relaxed
            } else {
                problem
            };
            let mut sweep = self.sweep_gauss_seidel(sweep_problem, v, report.sweeps);
            let tick = self.tick(report.sweeps, self.num_colours());
            sweep.active += project_contacts(
                &self.contacts,
                problem,
                v,
                &mut self.changed_at,
                tick,
                Some(&mut self.work),
            );
            if sweep.active == 0 {
                // Nothing changed in this sweep, so the violations each slot holds from its last
                // evaluation are those of the final state.
                report.max_violation_after = self
                    .impulses
                    .iter()
                    .fold(0.0, |m: f32, slot| m.max(slot.violation));
                return report;
            }
            report.sweeps += 1;
        }
    }

    /// The tick of colour `c` of sweep `s` (`c` = the number of colours: the kept collisions after the
    /// colours). Ticks start at 1; `changed_at` is 0 for a vertex the pass has not changed.
    fn tick(&self, s: u32, c: usize) -> u64 {
        1 + u64::from(s) * (self.num_colours() as u64 + 1) + c as u64
    }

    /// Sweep `s` of Gauss–Seidel in (colour, edge) order; returns the largest violation met before each
    /// evaluated edge's own correction and the number of corrections applied.
    ///
    /// From the second sweep on, an edge neither of whose ends changed since the edge's evaluation in
    /// the previous sweep is not evaluated again: its velocities, hence its evaluation, are the same,
    /// and that evaluation applied nothing (a correction changes an end). It keeps its violation, so
    /// the sweep gives the bits a sweep over every edge gives. A colour whose work list is short is
    /// swept through the list; otherwise every slot of the colour is tested against `changed_at`
    /// (the same set of edges: both record every change since the edge's last evaluation).
    fn sweep_gauss_seidel(&mut self, problem: &Problem<'_>, v: &mut [Vec3], s: u32) -> Tally {
        let mut sweep = Tally::default();
        let stride = self.num_colours() as u64 + 1;
        for c in 0..self.num_colours() {
            let tick = self.tick(s, c);
            let range = self.colour_start[c] as usize..self.colour_start[c + 1] as usize;
            let listed = self.work.listed(c);
            let skipping = self.skip_unchanged;
            self.work.take(c);
            let by_list = skipping && listed * LIST_FRACTION < range.len();
            let tally = if by_list {
                #[cfg(test)]
                {
                    self.listed_colours += 1;
                }
                self.evaluate_listed(problem, v)
            } else {
                // Changes at or after the edge's previous evaluation (which the edge's own
                // correction followed, at the same tick) need a new one; in the first sweep every
                // edge is evaluated.
                let since = if skipping && s > 0 { tick - stride } else { 0 };
                self.evaluate_colour(problem, v, range.clone(), since)
            };
            sweep = sweep.combine(tally);
            if tally.active == 0 {
                continue;
            }
            // Serial scatter; the edges of a colour are vertex-disjoint, so the order does not matter.
            let Self {
                colour_order,
                impulses,
                changed_at,
                work,
                ..
            } = self;
            let listed_slots = std::mem::take(&mut work.current);
            let slots: &mut dyn Iterator<Item = usize> = if by_list {
                &mut listed_slots.iter().map(|&slot| slot as usize)
            } else {
                &mut range.clone()
            };
            for slot in slots {
                let (e, impulse) = (colour_order[slot], impulses[slot]);
                if !impulse.active {
                    continue;
                }
                let [i, j] = problem.edges[e as usize];
                let (i, j) = (i as usize, j as usize);
                if impulse.takes[0] {
                    let wi = f64::from(problem.inv_mass[i]);
                    v[i] = (v[i].as_dvec3() - impulse.p * wi).as_vec3();
                    changed_at[i] = tick;
                    work.vertex_changed(i);
                }
                if impulse.takes[1] {
                    let wj = f64::from(problem.inv_mass[j]);
                    v[j] = (v[j].as_dvec3() + impulse.p * wj).as_vec3();
                    changed_at[j] = tick;
                    work.vertex_changed(j);
                }
            }
            work.current = listed_slots;
        }
        sweep
    }

    /// Evaluates the slots in `range` (one colour) whose edge has an end changed at or after tick
    /// `since`; every other slot of the colour becomes inactive and keeps its violation.
    fn evaluate_colour(
        &mut self,
        problem: &Problem<'_>,
        v: &[Vec3],
        range: std::ops::Range<usize>,
        since: u64,
    ) -> Tally {
        let order = &self.colour_order[range.clone()];
        let changed_at: &[u64] = &self.changed_at;
        tally_chunks(&mut self.impulses[range], |first, chunk| {
            let mut tally = Tally::default();
            for (k, slot) in chunk.iter_mut().enumerate() {
                let e = order[first + k] as usize;
                let [i, j] = problem.edges[e];
                let stale = changed_at[i as usize].max(changed_at[j as usize]) >= since;
                if stale {
                    problem.evaluate_into(e, v, slot);
                } else {
                    slot.active = false;
                }
                tally = tally.combine(Tally {
                    max_violation: slot.violation,
                    active: u32::from(slot.active),
                });
            }
            tally
        })
    }

    /// Evaluates the slots of the colour's work list (`work.current`) on the calling thread. The
    /// tally covers those slots only: the others apply nothing in this sweep (the scatter reads
    /// the list), and keep the violation the end of the pass reads from them.
    fn evaluate_listed(&mut self, problem: &Problem<'_>, v: &[Vec3]) -> Tally {
        let mut tally = Tally::default();
        for &slot in &self.work.current {
            let e = self.colour_order[slot as usize] as usize;
            tally = tally.combine(problem.evaluate_into(e, v, &mut self.impulses[slot as usize]));
        }
        tally
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    // ---------------------------------------------------------------------------------------------
    // Fixtures.

    /// Deterministic uniform numbers in [-1, 1) (64-bit LCG, top bits).
    pub(crate) struct Lcg(pub(crate) u64);

    impl Lcg {
        pub(crate) fn next(&mut self) -> f32 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        }
        pub(crate) fn vec3(&mut self) -> Vec3 {
            Vec3::new(self.next(), self.next(), self.next())
        }
    }

    /// An `nx × ny` grid in the x–z plane, spacing `dx`, with alternating (checkerboard) diagonals:
    /// positions and unique edges.
    pub(crate) fn grid(nx: usize, ny: usize, dx: f32) -> (Vec<Vec3>, Vec<[u32; 2]>) {
        let id = |i: usize, j: usize| (j * nx + i) as u32;
        let mut x = Vec::new();
        for j in 0..ny {
            for i in 0..nx {
                x.push(Vec3::new(i as f32 * dx, 0.0, j as f32 * dx));
            }
        }
        let mut edges = Vec::new();
        for j in 0..ny {
            for i in 0..nx {
                if i + 1 < nx {
                    edges.push([id(i, j), id(i + 1, j)]);
                }
                if j + 1 < ny {
                    edges.push([id(i, j), id(i, j + 1)]);
                }
                if i + 1 < nx && j + 1 < ny {
                    if (i + j) % 2 == 0 {
                        edges.push([id(i, j), id(i + 1, j + 1)]);
                    } else {
                        edges.push([id(i + 1, j), id(i, j + 1)]);
                    }
                }
            }
        }
        (x, edges)
    }

    /// A perturbed grid problem: rest lengths from the regular grid, positions jittered by `jitter · dx`,
    /// random velocities of size `speed`, masses in [0.5, 1.5].
    struct Cloth {
        x: Vec<Vec3>,
        v: Vec<Vec3>,
        inv_mass: Vec<f32>,
        edges: Vec<[u32; 2]>,
        rest: Vec<f32>,
    }

    fn perturbed_grid(nx: usize, ny: usize, jitter: f32, speed: f32, seed: u64) -> Cloth {
        let dx = 0.02;
        let (x0, edges) = grid(nx, ny, dx);
        let rest = edges
            .iter()
            .map(|&[i, j]| x0[i as usize].distance(x0[j as usize]))
            .collect();
        let mut rng = Lcg(seed);
        let x = x0.iter().map(|&p| p + rng.vec3() * (jitter * dx)).collect();
        let v = (0..x0.len()).map(|_| rng.vec3() * speed).collect();
        let inv_mass = (0..x0.len())
            .map(|_| 1.0 / (1.0 + 0.5 * rng.next()))
            .collect();
        Cloth {
            x,
            v,
            inv_mass,
            edges,
            rest,
        }
    }

    const H: f32 = 1.0 / 60.0;

    fn limit(method: StrainMethod, iterations: u32) -> StrainLimit {
        StrainLimit {
            max_stretch: 0.1,
            max_compress: 0.1,
            iterations,
            method,
        }
    }

    /// Predicted length `|x_j + h v_j − x_i − h v_i|` in f64.
    fn predicted(x: &[Vec3], v: &[Vec3], h: f32, [i, j]: [u32; 2]) -> f64 {
        let (i, j) = (i as usize, j as usize);
        let h = f64::from(h);
        ((x[j].as_dvec3() + h * v[j].as_dvec3()) - (x[i].as_dvec3() + h * v[i].as_dvec3())).length()
    }

    /// Largest `|clamp(L) − L| / L0` over all edges with a free end, computed independently.
    fn max_violation(c: &Cloth, v: &[Vec3], lim: &StrainLimit) -> f64 {
        c.edges
            .iter()
            .zip(&c.rest)
            .filter(|&(&[i, j], _)| c.inv_mass[i as usize] + c.inv_mass[j as usize] > 0.0)
            .map(|(&e, &l0)| {
                let l0 = f64::from(l0);
                let l = predicted(&c.x, v, H, e);
                let lo = (1.0 - f64::from(lim.max_compress)) * l0;
                let hi = (1.0 + f64::from(lim.max_stretch)) * l0;
                (l.clamp(lo, hi) - l).abs() / l0
            })
            .fold(0.0, f64::max)
    }

    fn momentum(v: &[Vec3], inv_mass: &[f32]) -> DVec3 {
        v.iter()
            .zip(inv_mass)
            .filter(|&(_, &w)| w > 0.0)
            .map(|(v, &w)| v.as_dvec3() / f64::from(w))
            .sum()
    }

    fn run(c: &Cloth, lim: &StrainLimit) -> (Vec<Vec3>, StrainReport) {
        run_h(c, lim, H)
    }

    fn run_h(c: &Cloth, lim: &StrainLimit, h: f32) -> (Vec<Vec3>, StrainReport) {
        let mut limiter = StrainLimiter::new(c.x.len(), &c.edges);
        let mut v = c.v.clone();
        let report = limiter.apply(lim, h, &c.x, &mut v, &c.inv_mass, &c.edges, &c.rest);
        (v, report)
    }

    /// One edge along x of rest length 1 at rest positions, with velocities giving predicted length `l`.
    fn single_edge(l: f32, inv_mass: [f32; 2]) -> Cloth {
        Cloth {
            x: vec![Vec3::ZERO, Vec3::X],
            v: vec![
                Vec3::new(0.0, 0.3, 0.0),
                Vec3::new((l - 1.0) / H, -0.2, 0.1),
            ],
            inv_mass: inv_mass.to_vec(),
            edges: vec![[0, 1]],
            rest: vec![1.0],
        }
    }

    /// The default tolerance, by which targets sit inside the violated bound.
    const TAU: f64 = DEFAULT_TOLERANCE as f64;

    // ---------------------------------------------------------------------------------------------
    // Tests.

    #[test]
    fn single_edge_reaches_l_star_after_one_pass() {
        for method in [StrainMethod::Jacobi, StrainMethod::GaussSeidel] {
            // (predicted x extent, L*; None = admissible, L* = L)
            // Targets sit one tolerance inside the violated bound (module doc).
            for (l, l_star) in [
                (1.5f32, Some(1.1 - TAU)),
                (0.5, Some(0.9 + TAU)),
                (1.05, None),
            ] {
                let c = single_edge(l, [1.0, 0.25]);
                let l_before = predicted(&c.x, &c.v, H, [0, 1]);
                let l_star = l_star.unwrap_or(l_before);
                let (v, report) = run(&c, &limit(method, 1));
                let l_after = predicted(&c.x, &v, H, [0, 1]);
                assert!(
                    (l_after - l_star).abs() < 1e-6,
                    "{method:?}: {l_before} -> {l_after}, expected {l_star}"
                );
                let needs = (l_before - l_star).abs() > 1e-3;
                assert_eq!(report.corrected_edges, u32::from(needs), "{method:?} {l}");
                assert_eq!(report.sweeps, u32::from(needs), "{method:?} {l}");
                assert!(report.max_violation_after <= DEFAULT_TOLERANCE);
                if needs {
                    // The violation is measured from the bound, not from the inset target.
                    let expected = ((l_before - l_star).abs() - TAU) as f32;
                    assert!((report.max_violation_before - expected).abs() < 1e-5);
                } else {
                    assert_eq!(v, c.v, "a satisfied edge is left alone");
                }
                // Momentum, and the impulses lie along the predicted edge vector d.
                let (p0, p1) = (momentum(&c.v, &c.inv_mass), momentum(&v, &c.inv_mass));
                assert!((p1 - p0).length() < 1e-5, "{method:?}: {p0} -> {p1}");
                let d = ((c.x[1] + H * c.v[1]) - (c.x[0] + H * c.v[0])).as_dvec3();
                for (new, old) in v.iter().zip(&c.v) {
                    let dv = (*new - *old).as_dvec3();
                    assert!(dv.cross(d).length() <= 1e-5 * dv.length() * d.length());
                }
            }
        }
    }

    #[test]
    fn pinned_end_takes_no_impulse_free_end_takes_all() {
        for method in [StrainMethod::Jacobi, StrainMethod::GaussSeidel] {
            let c = single_edge(1.6, [0.0, 2.0]);
            let (v, report) = run(&c, &limit(method, 4));
            assert_eq!(v[0], c.v[0], "{method:?}: the pinned end is untouched");
            assert!((predicted(&c.x, &v, H, [0, 1]) - (1.1 - TAU)).abs() < 1e-6);
            // The free end took the whole correction γ d̂ with γ = (1.1 − τ − 1.6)/h (d̂ ≈ x̂ here).
            let gamma = (1.1 - TAU - predicted(&c.x, &c.v, H, [0, 1])) / f64::from(H);
            let dv = (v[1] - c.v[1]).as_dvec3();
            assert!((dv.length() - gamma.abs()).abs() < 1e-3 * gamma.abs());
            assert_eq!(report.sweeps, 1);
        }
    }

    #[test]
    fn edge_with_both_ends_pinned_is_skipped() {
        for method in [StrainMethod::Jacobi, StrainMethod::GaussSeidel] {
            let c = single_edge(2.0, [0.0, 0.0]);
            let (v, report) = run(&c, &limit(method, 8));
            assert_eq!(v, c.v);
            assert_eq!(report, StrainReport::default());
        }
    }

    #[test]
    fn momentum_is_conserved_on_a_perturbed_grid() {
        for method in [StrainMethod::Jacobi, StrainMethod::GaussSeidel] {
            let c = perturbed_grid(12, 10, 0.25, 0.6, 7);
            let (v, report) = run(&c, &limit(method, 50));
            assert!(report.corrected_edges > 20, "{report:?}");
            let p0 = momentum(&c.v, &c.inv_mass);
            let p1 = momentum(&v, &c.inv_mass);
            let scale: f64 = v
                .iter()
                .zip(&c.inv_mass)
                .map(|(v, &w)| f64::from(v.length() / w))
                .sum();
            assert!(
                (p1 - p0).length() < 1e-6 * scale,
                "{method:?}: {p0} -> {p1} (scale {scale})"
            );
        }
    }

    #[test]
    fn both_methods_converge_on_a_perturbed_grid() {
        let c = perturbed_grid(16, 14, 0.3, 0.8, 11);
        let mut sweeps = [0u32; 2];
        for (k, method) in [StrainMethod::Jacobi, StrainMethod::GaussSeidel]
            .into_iter()
            .enumerate()
        {
            let lim = limit(method, 2000);
            let before = max_violation(&c, &c.v, &lim);
            let (v, report) = run(&c, &lim);
            let after = max_violation(&c, &v, &lim);
            println!(
                "{method:?}: {} sweeps, {} edges corrected, violation {before:.3e} -> {after:.3e}",
                report.sweeps, report.corrected_edges
            );
            assert!(
                before > 0.1,
                "the fixture must violate the limits: {before}"
            );
            assert!(
                report.sweeps < lim.iterations,
                "{method:?} did not converge"
            );
            assert!(
                after <= f64::from(DEFAULT_TOLERANCE) * 1.01,
                "{method:?}: {after}"
            );
            assert!((f64::from(report.max_violation_before) - before).abs() < 1e-5 * before);
            assert!((f64::from(report.max_violation_after) - after).abs() < 1e-6);
            sweeps[k] = report.sweeps;
        }
        assert!(
            sweeps[1] < sweeps[0],
            "Gauss–Seidel should need fewer sweeps than Jacobi: {sweeps:?}"
        );
    }

    /// A sheet falling at 1.7 m/s whose middle disc (radius 7 spacings) has stopped, as on a sphere:
    /// the edges around the disc are predicted 28–60 % long against a 1 % limit, and the correction
    /// has to spread over the sheet.
    fn stopped_disc(n: usize) -> Cloth {
        let mut c = perturbed_grid(n, n, 0.0, 0.0, 3);
        c.inv_mass.fill(1.0);
        let centre = c.x[(n / 2) * n + n / 2];
        for (v, x) in c.v.iter_mut().zip(&c.x) {
            let stopped = x.distance(centre) < 7.0 * 0.02;
            *v = if stopped {
                Vec3::ZERO
            } else {
                Vec3::new(0.0, -1.7, 0.0)
            };
        }
        c
    }

    #[test]
    fn over_relaxed_sweeps_spread_an_impact_in_far_fewer_sweeps_and_end_within_the_limit() {
        let c = stopped_disc(40);
        let lim = StrainLimit {
            max_stretch: 0.0099,
            max_compress: 0.0099,
            ..limit(StrainMethod::GaussSeidel, 20_000)
        };
        let mut sweeps = Vec::new();
        for relaxation in [1.0, RELAXATION] {
            let mut limiter = StrainLimiter::new(c.x.len(), &c.edges);
            limiter.relaxation = relaxation;
            let mut v = c.v.clone();
            let report = limiter.apply(&lim, H, &c.x, &mut v, &c.inv_mass, &c.edges, &c.rest);
            let before = max_violation(&c, &c.v, &lim);
            let after = max_violation(&c, &v, &lim);
            println!("ω = {relaxation}: {report:?}, violation {before:.3e} -> {after:.3e}");
            assert!(
                before > 0.25,
                "the fixture must violate the limit: {before}"
            );
            assert!(
                report.sweeps < lim.iterations,
                "ω = {relaxation} did not converge"
            );
            // Success means every edge within the limit (the trigger is τ/100).
            assert!(
                after <= f64::from(DEFAULT_TOLERANCE) * TRIGGER_FRACTION * 1.01,
                "ω = {relaxation}: {after}"
            );
            let (p0, p1) = (momentum(&c.v, &c.inv_mass), momentum(&v, &c.inv_mass));
            assert!((p1 - p0).length() < 1e-6 * p0.length(), "{p0} -> {p1}");
            sweeps.push(report.sweeps);
        }
        assert!(
            3 * sweeps[1] < sweeps[0],
            "over-relaxation should cut the sweeps at least threefold: {sweeps:?}"
        );
    }

    #[test]
    fn a_pass_that_ends_within_two_sweeps_is_not_over_relaxed() {
        // One stretched edge between two free vertices: one correcting sweep, one to confirm.
        let c = single_edge(1.5, [1.0, 0.25]);
        let lim = limit(StrainMethod::GaussSeidel, 100);
        let mut out = Vec::new();
        for relaxation in [1.0, RELAXATION] {
            let mut limiter = StrainLimiter::new(c.x.len(), &c.edges);
            limiter.relaxation = relaxation;
            let mut v = c.v.clone();
            let report = limiter.apply(&lim, H, &c.x, &mut v, &c.inv_mass, &c.edges, &c.rest);
            assert_eq!(report.sweeps, 1);
            out.push(v);
        }
        assert_eq!(out[0], out[1]);
        let l = predicted(&c.x, &out[1], H, [0, 1]);
        assert!(
            (l - (1.1 - f64::from(DEFAULT_TOLERANCE))).abs() < 1e-6,
            "{l}"
        );
    }

    #[test]
    fn skipping_unchanged_edges_gives_the_bits_of_full_sweeps() {
        // A sheet at rest but for a few fast vertices, and a kept collision holding one of them: the
        // corrections spread from a few places, so most edges are skipped in most sweeps.
        let mut c = perturbed_grid(40, 36, 0.0, 0.0, 5);
        let mut rng = Lcg(17);
        for k in [3usize, 400, 777, 1201] {
            c.v[k] = rng.vec3() * 3.0;
        }
        // A body triangle beyond the cloth's vertices, moving up under vertex 400 at 2 m/s.
        let n = c.x.len() as u32;
        let stencil = Stencil::point_triangle([n, n + 1, n + 2], 400, [1.0 / 3.0; 3], DVec3::Y);
        let mut stage_v = c.v.clone();
        stage_v.extend([Vec3::new(0.0, 2.0, 0.0); 3]);
        let mut stage_w = c.inv_mass.clone();
        stage_w.extend([0.0; 3]);
        let lim = limit(StrainMethod::GaussSeidel, 5000);
        let mut out = Vec::new();
        for skip in [true, false] {
            let mut limiter = StrainLimiter::new(c.x.len(), &c.edges);
            limiter.skip_unchanged = skip;
            limiter.keep_contact(&stencil, 1e-3, 1e-4, H, &stage_v, &stage_w);
            assert!(limiter.holds(400));
            let mut v = c.v.clone();
            let report = limiter.apply(&lim, H, &c.x, &mut v, &c.inv_mass, &c.edges, &c.rest);
            // Skipping sweeps most colours through their short work lists.
            assert_eq!(
                limiter.listed_colours > 10,
                skip,
                "{}",
                limiter.listed_colours
            );
            out.push((v, report));
        }
        let (skipped, full) = (&out[0], &out[1]);
        assert!(
            full.1.sweeps > 10 && full.1.sweeps < lim.iterations,
            "{:?}",
            full.1
        );
        assert_eq!(skipped.1, full.1);
        for (a, b) in skipped.0.iter().zip(&full.0) {
            assert_eq!(
                a.to_array().map(f32::to_bits),
                b.to_array().map(f32::to_bits)
            );
        }
    }

    #[test]
    fn results_are_bit_identical_for_1_and_4_threads() {
        // 100 × 100 vertices, ~30k edges in 6–8 colours: every loop (edges, vertices, and the larger
        // colours) is above PARALLEL_MIN, so the rayon paths run.
        let c = perturbed_grid(100, 100, 0.3, 0.8, 3);
        let limiter = StrainLimiter::new(c.x.len(), &c.edges);
        let largest_colour = (0..limiter.num_colours())
            .map(|k| limiter.colour_edges(k).len())
            .max()
            .unwrap_or(0);
        assert!(c.x.len() >= PARALLEL_MIN && largest_colour >= PARALLEL_MIN);
        for method in [StrainMethod::Jacobi, StrainMethod::GaussSeidel] {
            let lim = limit(method, 40);
            let results: Vec<_> = [1usize, 4]
                .into_iter()
                .map(|threads| {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .build()
                        .expect("building a rayon pool");
                    pool.install(|| run(&c, &lim))
                })
                .collect();
            let bits = |v: &[Vec3]| -> Vec<[u32; 3]> {
                v.iter()
                    .map(|p| [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()])
                    .collect()
            };
            assert!(results[0].1.sweeps > 0);
            assert_eq!(results[0].1, results[1].1, "{method:?}");
            assert!(bits(&results[0].0) == bits(&results[1].0), "{method:?}");
        }
    }

    #[test]
    fn iteration_cap_is_honoured_and_leftover_reported() {
        let c = perturbed_grid(12, 10, 0.3, 0.8, 5);
        for method in [StrainMethod::Jacobi, StrainMethod::GaussSeidel] {
            // Cap 0: measure only.
            let lim = limit(method, 0);
            let (v, report) = run(&c, &lim);
            assert_eq!(v, c.v);
            assert_eq!(report.sweeps, 0);
            assert!(report.corrected_edges > 0);
            assert_eq!(report.max_violation_after, report.max_violation_before);
            // Cap 1: one sweep, a leftover violation, reported as measured.
            let lim = limit(method, 1);
            let (v, report) = run(&c, &lim);
            let after = max_violation(&c, &v, &lim);
            assert_eq!(report.sweeps, 1, "{method:?}");
            assert!(after > f64::from(DEFAULT_TOLERANCE), "{method:?}: {after}");
            assert!(after < f64::from(report.max_violation_before));
            assert!((f64::from(report.max_violation_after) - after).abs() < 1e-6);
        }
    }

    #[test]
    fn stretch_and_compression_limits_are_separate() {
        let lim = |s_t, s_c| StrainLimit {
            max_stretch: s_t,
            max_compress: s_c,
            iterations: 4,
            method: StrainMethod::GaussSeidel,
        };
        // (s_t, s_c, predicted x extent, expected length one tolerance inside the violated bound; None = untouched)
        let cases = [
            (0.2, 0.0, 1.15f32, None),
            (0.2, 0.0, 1.3, Some(1.2f64 - TAU)),
            (0.2, 0.0, 0.95, Some(1.0 + TAU)),
            (0.0, 0.3, 0.8, None),
            (0.0, 0.3, 0.6, Some(0.7 + TAU)),
            (0.0, 0.3, 1.05, Some(1.0 - TAU)),
        ];
        for (s_t, s_c, l, expected) in cases {
            let c = single_edge(l, [1.0, 1.0]);
            let (v, _) = run(&c, &lim(s_t, s_c));
            if expected.is_none() {
                assert_eq!(v, c.v, "s_t {s_t}, s_c {s_c}: {l} is admissible");
            }
            let expected = expected.unwrap_or_else(|| predicted(&c.x, &c.v, H, [0, 1]));
            let got = predicted(&c.x, &v, H, [0, 1]);
            assert!(
                (got - expected).abs() < 2e-6,
                "s_t {s_t}, s_c {s_c}: {l} -> {got}, expected {expected}"
            );
        }
    }

    #[test]
    fn admissible_lengths_intersect_strain_and_rate() {
        let lim = limit(StrainMethod::GaussSeidel, 1);
        let close = |(lo, hi): (f64, f64), (a, b): (f64, f64)| {
            assert!((lo - a).abs() < 1e-7 && (hi - b).abs() < 1e-7, "{lo}, {hi}");
        };
        close(lim.admissible_lengths(None, 2.0, 5.0), (1.8, 2.2));
        close(lim.admissible_lengths(Some(0.05), 2.0, 2.0), (1.9, 2.1));
        close(
            lim.admissible_lengths(Some(0.05), 2.0, 1.95),
            (1.8525, 2.0475),
        );
        // Disjoint: the strain bound nearest to the rate interval wins.
        close(lim.admissible_lengths(Some(0.1), 2.0, 3.0), (2.2, 2.2));
        close(lim.admissible_lengths(Some(0.1), 2.0, 1.0), (1.8, 1.8));
        close(lim.admissible_lengths(Some(0.1), 2.0, 0.0), (1.8, 1.8));
    }

    #[test]
    fn rate_limit_bounds_the_length_change() {
        let mut c = single_edge(1.08, [1.0, 1.0]);
        let mut limiter = StrainLimiter::new(2, &c.edges);
        assert_eq!(
            limiter.set_rate_limit(Some(-1.0)),
            Err(StrainLimitError::RateLimit(-1.0))
        );
        limiter
            .set_rate_limit(Some(0.05))
            .expect("a valid rate limit");
        let lim = limit(StrainMethod::Jacobi, 4);
        let mut v = c.v.clone();
        let _ = limiter.apply(&lim, H, &c.x, &mut v, &c.inv_mass, &c.edges, &c.rest);
        assert!((predicted(&c.x, &v, H, [0, 1]) - (1.05 - TAU)).abs() < 2e-6);
        // Start 60% stretched: the rate interval [1.44, 1.76] misses [0.9, 1.1]; strain wins -> 1.1
        // (a one-point interval: the target is the point itself).
        c.x[1] = Vec3::new(1.6, 0.0, 0.0);
        c.v[1] = Vec3::ZERO;
        c.v[0] = Vec3::ZERO;
        let mut v = c.v.clone();
        let _ = limiter.apply(&lim, H, &c.x, &mut v, &c.inv_mass, &c.edges, &c.rest);
        assert!((predicted(&c.x, &v, H, [0, 1]) - 1.1).abs() < 2e-6);
    }

    #[test]
    fn coincident_predicted_ends_use_the_start_direction() {
        // Predicted length exactly 0 (h = 0.25 and v = −2 m/s are exact): pushed apart along
        // x_j − x_i to (1 − s_c) L0, one tolerance inside: 0.45 + τ·0.5.
        let h = 0.25;
        let c = Cloth {
            x: vec![Vec3::ZERO, Vec3::new(0.0, 0.5, 0.0)],
            v: vec![Vec3::ZERO, Vec3::new(0.0, -2.0, 0.0)],
            inv_mass: vec![1.0, 1.0],
            edges: vec![[0, 1]],
            rest: vec![0.5],
        };
        assert_eq!(predicted(&c.x, &c.v, h, [0, 1]), 0.0);
        let (v, report) = run_h(&c, &limit(StrainMethod::GaussSeidel, 2), h);
        assert!((predicted(&c.x, &v, h, [0, 1]) - (0.45 + TAU * 0.5)).abs() < 1e-6);
        assert!(v[0].x == 0.0 && v[0].z == 0.0 && v[1].x == 0.0 && v[1].z == 0.0);
        assert_eq!(report.sweeps, 1);
    }

    #[test]
    fn colouring_is_a_proper_edge_colouring() {
        let (x, edges) = grid(9, 7, 1.0);
        let limiter = StrainLimiter::new(x.len(), &edges);
        let mut seen = vec![false; edges.len()];
        for c in 0..limiter.num_colours() {
            let mut used = vec![false; x.len()];
            for &e in limiter.colour_edges(c) {
                assert!(!seen[e as usize], "edge {e} coloured twice");
                seen[e as usize] = true;
                for k in edges[e as usize] {
                    assert!(!used[k as usize], "colour {c} touches vertex {k} twice");
                    used[k as usize] = true;
                }
            }
            assert!(limiter.colour_edges(c).windows(2).all(|w| w[0] < w[1]));
        }
        assert!(seen.iter().all(|&s| s));
        // Maximum degree 6 on this grid: greedy needs at most 2·6 − 1 colours.
        assert!(limiter.num_colours() <= 11, "{}", limiter.num_colours());
    }

    #[test]
    fn validate_rejects_out_of_range_parameters() {
        let ok = limit(StrainMethod::Jacobi, 1);
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!(StrainLimit::default().validate(), Ok(()));
        let bad = StrainLimit {
            max_stretch: -0.1,
            ..ok
        };
        assert_eq!(bad.validate(), Err(StrainLimitError::MaxStretch(-0.1)));
        let bad = StrainLimit {
            max_compress: 1.5,
            ..ok
        };
        assert_eq!(bad.validate(), Err(StrainLimitError::MaxCompress(1.5)));
        let mut limiter = StrainLimiter::new(2, &[[0, 1]]);
        assert!(limiter.set_tolerance(f32::NAN).is_err());
        assert_eq!(limiter.tolerance(), DEFAULT_TOLERANCE);
    }

    /// The stage-space velocities of a body (3 obstacle vertices, after the cloth's) moving at `speed`
    /// along +z, and the point–triangle stencil of cloth vertex `point` above its triangle.
    fn body_below(point: u32, speed: f32) -> (Stencil, [Vec3; 3]) {
        let stencil = Stencil::point_triangle([2, 3, 4], point, [1.0 / 3.0; 3], DVec3::Z);
        (stencil, [Vec3::new(0.0, 0.0, speed); 3])
    }

    #[test]
    fn a_vertex_held_against_a_moving_body_leaves_the_correction_to_its_free_neighbour() {
        // Vertex 0 was pushed to the body's 30 m/s along +z; vertex 1, 1 m away along x, lags: the
        // predicted edge is sqrt(1 + 0.5²) = 1.118 m against a 1.1 m limit. Shortening it moves 0
        // toward 1, partly into the body (−z): held, 0 keeps its velocity and 1 takes it all.
        let c = Cloth {
            x: vec![Vec3::ZERO, Vec3::X],
            v: vec![Vec3::new(0.0, 0.0, 30.0), Vec3::ZERO],
            inv_mass: vec![1.0, 1.0],
            edges: vec![[0, 1]],
            rest: vec![1.0],
        };
        let (stencil, body) = body_below(0, 30.0);
        let stage_v = [c.v[0], c.v[1], body[0], body[1], body[2]];
        let stage_w = [1.0, 1.0, 0.0, 0.0, 0.0];
        let lim = limit(StrainMethod::GaussSeidel, 10);
        let mut limiter = StrainLimiter::new(2, &c.edges);
        // d0 = 1 mm above the body, s_min = 0.1 mm: the target u* is 0, met by equal velocities.
        let grew = limiter.keep_contact(&stencil, 1e-3, 1e-4, H, &stage_v, &stage_w);
        assert!(!grew);
        assert!(limiter.holds(0) && !limiter.holds(1));
        assert_eq!(limiter.drive([0, 1], &c.inv_mass), EdgeDrive::Free);
        let mut v = c.v.clone();
        let report = limiter.apply(&lim, H, &c.x, &mut v, &c.inv_mass, &c.edges, &c.rest);
        assert_eq!(v[0], c.v[0], "the held vertex keeps the body's velocity");
        assert!(
            (predicted(&c.x, &v, H, [0, 1]) - (1.1 - TAU)).abs() < 1e-6,
            "{report:?}"
        );
        assert_eq!(report.sweeps, 1);
        // Without the kept collision the limiter shares the correction: vertex 0 is pulled back.
        let (free, _) = run(&c, &lim);
        assert!(free[0].z < 29.9, "{:?}", free[0]);
        // A new stage forgets the hold.
        limiter.forget_contacts();
        assert!(!limiter.holds(0) && limiter.kept_contacts() == 0);
    }

    #[test]
    fn a_kept_collision_between_layers_stays_resolved_and_momentum_is_conserved() {
        // Vertex 0 sits 1 mm above a cloth triangle (2, 3, 4, another layer) that moves up at 30 m/s,
        // and was pushed to the same speed; its edge to vertex 1 (at rest, 1 m along x) predicts
        // 1.118 m. The limiter alone would pull 0 back through the triangle: the kept collision holds
        // it to the triangle's normal velocity, so the triangle slows, 0 stays over it, and 1 follows.
        let x = vec![
            Vec3::new(0.0, 0.0, 0.001),
            Vec3::new(1.0, 0.0, 0.001),
            Vec3::new(-0.1, -0.1, 0.0),
            Vec3::new(0.1, -0.1, 0.0),
            Vec3::new(0.0, 0.1, 0.0),
        ];
        let up = Vec3::new(0.0, 0.0, 30.0);
        let c = Cloth {
            v: vec![up, Vec3::ZERO, up, up, up],
            inv_mass: vec![1.0; 5],
            edges: vec![[0, 1], [2, 3], [3, 4], [2, 4]],
            rest: Vec::new(),
            x,
        };
        let rest: Vec<f32> = c
            .edges
            .iter()
            .map(|&[i, j]| c.x[i as usize].distance(c.x[j as usize]))
            .collect();
        let c = Cloth { rest, ..c };
        let (stencil, _) = body_below(0, 30.0);
        let lim = limit(StrainMethod::GaussSeidel, 500);
        let mut limiter = StrainLimiter::new(5, &c.edges);
        let _ = limiter.keep_contact(&stencil, 1e-3, 1e-4, H, &c.v, &c.inv_mass);
        assert!(!limiter.holds(0), "the other side moves: no hold");
        let mut v = c.v.clone();
        let report = limiter.apply(&lim, H, &c.x, &mut v, &c.inv_mass, &c.edges, &c.rest);
        assert!(
            report.sweeps > 1 && report.sweeps < lim.iterations,
            "{report:?}"
        );
        assert!(
            max_violation(&c, &v, &lim) <= f64::from(DEFAULT_TOLERANCE) * 1.01,
            "{report:?}"
        );
        let relative = v[0].z - (v[2].z + v[3].z + v[4].z) / 3.0;
        assert!(
            relative >= -1e-4,
            "vertex 0 sinks into the layer at {relative} m/s"
        );
        let (p0, p1) = (momentum(&c.v, &c.inv_mass), momentum(&v, &c.inv_mass));
        assert!((p1 - p0).length() < 1e-4, "{p0} -> {p1}");
        // Without the kept collision, vertex 0 is pulled through the triangle (1 mm apart at x^n).
        let (free, _) = run(&c, &lim);
        let relative = free[0].z - (free[2].z + free[3].z + free[4].z) / 3.0;
        assert!(1e-3 + H * relative < 0.0, "{relative}");
    }

    #[test]
    fn an_edge_is_forced_only_when_both_ends_are_driven() {
        // A chain 0 – 1 – 2; an obstacle edge (stage vertices 3, 4) holds cloth edge 0 – 1.
        let edges = [[0, 1], [1, 2]];
        let mut limiter = StrainLimiter::new(3, &edges);
        let stencil = Stencil::edge_edge([3, 4], 0.5, [0, 1], 0.5, DVec3::Y);
        let v = [Vec3::ZERO; 5];
        let w = [1.0, 1.0, 1.0, 0.0, 0.0];
        let _ = limiter.keep_contact(&stencil, 1e-3, 1e-4, H, &v, &w);
        assert!(limiter.holds(0) && limiter.holds(1) && !limiter.holds(2));
        assert_eq!(limiter.drive([0, 1], &w), EdgeDrive::Bodies);
        assert_eq!(limiter.drive([1, 2], &w), EdgeDrive::Free);
        // Pinning vertex 2 drives the other end too; pinning both ends is forcing by pins.
        assert_eq!(limiter.drive([1, 2], &[1.0, 1.0, 0.0]), EdgeDrive::Bodies);
        assert_eq!(limiter.drive([1, 2], &[1.0, 0.0, 0.0]), EdgeDrive::Pins);
        // Against a side of moving cloth vertices (here 3 and 4 are cloth) nothing is held.
        let mut limiter = StrainLimiter::new(5, &[[0, 1], [1, 2], [3, 4]]);
        let _ = limiter.keep_contact(&stencil, 1e-3, 1e-4, H, &v, &[1.0; 5]);
        assert_eq!(limiter.kept_contacts(), 1);
        assert!(!limiter.holds(0));
        assert_eq!(limiter.drive([0, 1], &[1.0; 5]), EdgeDrive::Free);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn new_rejects_out_of_range_edges() {
        let _ = StrainLimiter::new(2, &[[0, 2]]);
    }
    // `apply_does_not_allocate` lives in tests/no_alloc.rs (a counting global allocator there).
}

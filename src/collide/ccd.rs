//! Continuous collision detection (CCD) for linearly moving point–triangle and edge–edge pairs.
//!
//! Bridson, Fedkiw & Anderson 2002 after Provot 1997 (`docs/methods/bridson-collisions.md` §3.9). During a
//! substep each vertex moves on a straight line, `x_k(s) = start_k + s (end_k − start_k)` for the normalised
//! time `s = t / h ∈ [0, 1]` (`docs/methods/bridson-collisions.md`: "use `s = t/h` and the displacements `h v_k`"). A collision needs the four
//! points to be coplanar at some `s` (eq. 3.14); at each coplanar instant, in time order, the static proximity
//! test of [`super::proximity`] with a small tolerance decides whether the primitives actually touch. All
//! arithmetic is `f64`.
//!
//! # Vertex order, weights and normal
//!
//! * [`ccd_point_triangle`]: `x0` is the vertex, `(x1, x2, x3)` the triangle. [`ccd_edge_edge`]: `(x0, x1)` is
//!   edge `p`, `(x2, x3)` edge `q`. The first group (vertex / edge `p`) is the *second side* of `docs/methods/bridson-collisions.md` §3.6,
//!   the triangle / edge `q` the *first side*.
//! * [`CcdHit::weights`] are **signed**: `Σ_i w_i x_i` is the contact point of the first group minus the
//!   contact point of the second. Point–triangle `[1, −w1, −w2, −w3]` (barycentrics of the proximity at `t`),
//!   edge–edge `[1 − a, a, −(1 − b), −b]`. They sum to zero. With them the `docs/methods/bridson-collisions.md` (3.10) response is one
//!   formula for both kinds: `v_N = n·Σ w_i v_i`, `J = Δ / Σ w_i² / m_i`, `v_i += w_i J / m_i · n`.
//! * [`CcdHit::normal`] points from the second group toward the first *as they stood at `s = 0`*, so a real
//!   crossing has `v_N < 0` and the start separation `d0 = n·Σ w_i start_i` is positive
//!   ([`CcdHit::signed_separation`]). Its axis is the triangle normal at `t`, or `(x1 − x0) × (x3 − x2)` at `t`
//!   for edges. Orientation rule: the sign of `d0`; if `|d0|` is at round-off level (the pair *starts* in
//!   contact, so no side exists) the normal points along the relative motion, i.e. the pair is taken to leave
//!   the contact the way it moves and the response only has to enforce the minimum separation; if there is
//!   no normal motion either, the winding normal is kept. Parallel or degenerate edges have no cross-product
//!   axis: the normal is then the part of the start offset `Σ w_i start_i` perpendicular to the edges (else
//!   of the relative motion, else any perpendicular).
//!
//! # Robust roots of the coplanarity cubic (`docs/methods/bridson-collisions.md` (3.14–3.15))
//!
//! `p(s) = c3 s³ + c2 s² + c1 s + c0` with the coefficients of eq. 3.15 (differences to the first vertex, in
//! the order of `docs/methods/bridson-collisions.md`: triangle 1, 2, 3, point 4; edges 1–2 and 3–4). Let `S` be the product of the three
//! difference vectors' maximum lengths over the step; `|p(s)| ≤ S` on `[0, 1]`.
//!
//! 1. **Identically zero** (`max |c_k| ≤ COPLANAR_RELATIVE · S`): the four points stay coplanar for the whole
//!    step, the cubic has no isolated roots, see *Coplanar motion* below.
//! 2. **Never divide by `c3`.** The roots of `p' = 3 c3 s² + 2 c2 s + c1` in `(0, 1)` (stable quadratic formula;
//!    linear or constant when its leading coefficients vanish) split `[0, 1]` into at most three intervals on
//!    which `p` is monotone. A cubic whose leading coefficients are ~0 is thereby handled as a quadratic or a
//!    line without a special case.
//! 3. On each interval `[sa, sb]`: if `|p(sa)| ≤ τ` (`τ` of *Contact at the ends* below) record `sa` — this catches double
//!    roots (a graze, no sign change) and contact at `s = 0`; **and also**, if `p` changes sign, refine the
//!    root by safeguarded Newton (bisection whenever Newton leaves the bracket) to [`ROOT_TIME_TOLERANCE`].
//!    `docs/methods/bridson-collisions.md` writes "otherwise" here; that misses crossings of nearly planar configurations, where
//!    `|p| ≤ τ` holds over a long stretch and the vertex slides inside the triangle before the sign change
//!    (found by the property tests). Record `s = 1` if `|p(1)| ≤ τ` (contact exactly at the end), with
//!    `p(1)` the orientation of the end positions themselves, not the sum of the coefficients.
//! 4. Sort the candidates; at each, place the vertices at `x(s)` and run the proximity test with tolerance
//!    `thickness` (η_c of `docs/methods/bridson-collisions.md`). The first that passes is the hit. Extra candidates cost one proximity test
//!    each and can only make the answer earlier, never miss a contact.
//!
//! # Coplanar motion
//!
//! When the cubic is identically zero the contact is a 2-D problem in the common plane, solved exactly rather
//! than by sub-sampling (`docs/methods/bridson-collisions.md` suggests a few sub-samples; those can step over a fast vertex that clips a
//! corner). The set of instants at which the primitives touch is closed, so its first element is either
//! `s = 0` or an instant at which a vertex of one primitive crosses the line of an edge of the other
//! (point–triangle: the vertex crosses one of the three edge lines; edge–edge: one of the four endpoints crosses
//! the other edge's line). Collinearity of a moving vertex `x` with a moving edge `(y, z)` is the quadratic
//! `N·((z − y) × (x − y)) = 0` for a fixed reference normal `N` of the plane (the largest of the plane normals
//! at `s = 0, ½, 1`). Because `(z − y) × (x − y)` vanishes at every collinear instant, whatever `N` is, no
//! collinear instant is lost, even if the plane rotates; an instant where `N` happens to be perpendicular
//! to the plane is only an extra candidate. If that quadratic is itself identically zero (the vertex slides
//! along the edge's line), the candidates are the instants at which it passes the edge's endpoints along the
//! line; if all four points of an edge pair stay collinear, likewise for the four endpoint pairs. The candidates
//! (plus `s = 0` and `s = 1`) then go through step 4. A triangle that is degenerate for the whole step is only
//! tested at `s = 0` and `s = 1` (see below); contact with it inside the step is its edges' business, which
//! the edge–edge tests cover.
//!
//! # Contact at the ends of the step
//!
//! A pair that touches at `s = 0` or `s = 1` (distance 0: coplanar, and the vertex on the closed triangle or
//! the closed edges meeting) is a hit at that instant, whatever the motion before or after. Three things
//! could hide it from the steps above, and each is handled:
//!
//! * **The value at the end.** `p(1)` summed from the coefficients carries their round-off, which can exceed
//!   `τ` (each coefficient is a sum of triple products up to several times `S`) and give `p(1)` the wrong
//!   sign: an exact contact at `s = 1` with no sign change before it was then neither a root nor a sign
//!   change. `p(1)` is the orientation of the end positions, which are the inputs (`x(1) = end` exactly),
//!   so its error is a few ulps of `S`. `p(0) = c0` is already the orientation of the start positions.
//! * **Rounded coordinates.** Positions far from the origin round to `ε M` (`M` the largest coordinate
//!   magnitude), which for a small pair far away can be far more than `ε S` in `p`: a vertex placed on a
//!   triangle 3 m from the origin ends up 1e-16 m off its plane, not coplanar within `ε S` for a 1 mm
//!   triangle. `τ = ROOT_RELATIVE · (S + 3 M L²)` (`L` the longest difference vector) adds the change of
//!   `p` under that rounding of all positions: `|δp| ≤ ε M (L₁L₂ + L₁L₃ + L₂L₃) ≤ 3 ε M L²`. It is a
//!   plane distance of about `ROOT_RELATIVE · 3 M`, 1e-14 m at 1 m from the origin: round-off, not a
//!   hover distance.
//! * **Slivers.** The proximity test of eq. 3.6 rejects a triangle whose altitude is below
//!   `MIN_RELATIVE_ALTITUDE` of its longest edge (the normal equations are singular). At a candidate
//!   instant where the triangle is such a sliver, the vertex is tested against the closed triangle as the
//!   union of its edges (`closest_point_triangle`), with the normal across the sliver's line. The cubic
//!   vanishes wherever the triangle degenerates, so those instants are candidates already.
//!
//! # Zero motion and contact at `t = 0`
//!
//! A hit needs a coplanar instant at which the primitives are within `thickness`. With zero motion the cubic
//! is the constant `c0`: a stationary pair reports a hit (at `t = 0`) only if it is already coplanar and within
//! `thickness` (e.g. a vertex lying in the triangle); a stationary vertex hovering above the triangle, even
//! closer than `thickness`, is not a CCD hit — that proximity belongs to repulsion (`docs/methods/bridson-collisions.md` §3.7).
//!
//! # Minimum separation (`docs/methods/bridson-collisions.md` §3.9)
//!
//! Stopping a collision exactly at `v_N = 0` leaves the pair touching, and round-off in the next step (the
//! state is stored as `f32`) can put it on the wrong side. The response therefore aims for a separation
//! `s_min = MIN_SEPARATION_FRACTION · η` ([`min_separation`]) at the end of the step:
//! `v_N^new = max(0, (s_min − d0) / h)` ([`separating_normal_velocity`]) with `d0` the start separation along the
//! hit normal ([`CcdHit::signed_separation`] of the start positions). `s_min = 0.1 η` is a small fraction of
//! the thickness, as `docs/methods/bridson-collisions.md` asks, and must stay well above the spacing of `f32` positions, which is what
//! "round-off creeping the cloth through" means here: within 10 m of the origin that spacing is ~1 µm, so a
//! 1 mm thickness gives `s_min` = 100 ulps; η should not go below ~0.1 mm at that range (`s_min` ≥ 10 ulps).
//! The CCD tolerance passed as `thickness` should be smaller still: `CCD_TOLERANCE_FRACTION · η` (η_c ≪ η).
//! Inside a query the `f32` positions are exact in `f64`, so η_c only has to absorb root-finding round-off
//! (~1e-15 relative), which it does by many orders.
#![deny(unsafe_code)]

use glam::DVec3;

use super::proximity::{
    MIN_RELATIVE_ALTITUDE, closest_point_triangle, proximity_edge_edge, proximity_point_triangle,
};

/// Minimum separation kept by collision impulses, as a fraction of the cloth thickness η:
/// `s_min = MIN_SEPARATION_FRACTION · η` (`docs/methods/bridson-collisions.md` §3.9; reasoning in the module doc).
pub const MIN_SEPARATION_FRACTION: f64 = 0.1;

/// Suggested CCD tolerance η_c as a fraction of the cloth thickness η (`docs/methods/bridson-collisions.md` §3.9 step 4: η_c ≪ η, not 0).
/// Pass `CCD_TOLERANCE_FRACTION · η` as the `thickness` of [`ccd_point_triangle`] / [`ccd_edge_edge`].
pub const CCD_TOLERANCE_FRACTION: f64 = 0.01;

/// The coplanarity cubic is identically zero (coplanar motion) when all its coefficients are at most this
/// fraction of the bound `S` on `|p|` (`docs/methods/bridson-collisions.md` §3.9 step 1 uses `ℓ³ · 1e-12`). The same test decides whether
/// a collinearity quadratic of the coplanar fallback is identically zero.
pub const COPLANAR_RELATIVE: f64 = 1e-12;

/// Root tolerance `τ = ROOT_RELATIVE · S` (`docs/methods/bridson-collisions.md` §3.9 step 3): `|p(s)| ≤ τ` counts as a root. Evaluating
/// the cubic from the eq. 3.15 coefficients costs a few ulps of `S`, so `τ` is that error with a margin of
/// about ten.
pub const ROOT_RELATIVE: f64 = 64.0 * f64::EPSILON;

/// Root refinement stops when the bracket or the Newton step is below this (in normalised time `s`).
pub const ROOT_TIME_TOLERANCE: f64 = 1e-15;

/// A start separation or relative displacement below this fraction of the pair's length scale is treated
/// as zero when orienting the normal (round-off level).
const SIDE_RELATIVE: f64 = 1e-12;

/// Edges closer to parallel than this (`sin² θ`) have no usable cross-product contact axis: its direction
/// would carry a relative error of `ε / sin θ` ≥ 2e-8.
const AXIS_SIN2: f64 = 1e-16;

/// Cap on root refinement. Safeguarded Newton takes a Newton step only when it shrinks the step at least as
/// fast as bisection would, so the bracket width falls below `ROOT_TIME_TOLERANCE` well within this cap.
const MAX_REFINE_ITERATIONS: usize = 128;

/// The first contact of a moving pair: the result of [`ccd_point_triangle`] and [`ccd_edge_edge`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CcdHit {
    /// Normalised time of contact in `[0, 1]` (fraction of the substep).
    pub t: f64,
    /// Signed weights, `Σ w_i = 0`: `Σ w_i x_i` is the first group's contact point minus the second's.
    /// Point–triangle `[1, −w1, −w2, −w3]`, edge–edge `[1 − a, a, −(1 − b), −b]`, from the proximity at `t`.
    pub weights: [f64; 4],
    /// Unit contact normal at `t`, from the second group (triangle / edge `q`) toward the first
    /// (vertex / edge `p`) as they stood at `t = 0`; see the module doc for the orientation rule.
    pub normal: DVec3,
    /// Distance reported by the proximity test at `t` (< the `thickness` passed in), m.
    pub distance: f64,
}

impl CcdHit {
    /// Signed separation `n · Σ w_i x_i` of the contact points along the hit normal for positions `x`
    /// (m). For the start positions this is `d0` of the minimum-separation rule, `≥ 0` by construction.
    #[must_use]
    #[inline]
    pub fn signed_separation(&self, x: &[DVec3; 4]) -> f64 {
        self.normal.dot(weighted(&self.weights, x))
    }
}

/// Minimum separation `s_min` for cloth thickness `eta` (m): `MIN_SEPARATION_FRACTION · eta`.
/// Bridson 2002, `docs/methods/bridson-collisions.md` §3.9 ("minimum separation").
#[must_use]
#[inline]
pub fn min_separation(eta: f64) -> f64 {
    MIN_SEPARATION_FRACTION * eta
}

/// Target relative normal velocity after a collision impulse, `max(0, (s_min − d0) / h)`, so that the
/// linearised separation at the end of the step is at least `s_min`. Bridson 2002, `docs/methods/bridson-collisions.md` §3.9
/// (minimum separation; *derived* form).
///
/// Symbols: `d0` start separation along the hit normal (m, [`CcdHit::signed_separation`] of the start
/// positions), `s_min` (m, [`min_separation`]), `h` step (s, `> 0`). The impulse is needed only when this
/// exceeds the current `v_N`; the change is then `Δ = target − v_N`.
#[must_use]
#[inline]
pub fn separating_normal_velocity(d0: f64, s_min: f64, h: f64) -> f64 {
    ((s_min - d0) / h).max(0.0)
}

/// Vertex `x0` against triangle `(x1, x2, x3)`, each vertex moving linearly from `start[i]` to `end[i]`:
/// the first instant in `[0, 1]` at which the vertex is coplanar with the triangle and within `thickness`
/// of it. Bridson 2002, `docs/methods/bridson-collisions.md` (3.14) (coplanarity cubic, coefficients eq. 3.15), then the
/// proximity test of eq. 3.6 at each root.
///
/// Symbols: `docs/methods/bridson-collisions.md`'s point 4 = `x0`, triangle 1, 2, 3 = `x1, x2, x3`; `thickness` = η_c (m, `> 0`; see
/// [`CCD_TOLERANCE_FRACTION`]). Root isolation, the coplanar-motion fallback, the normal orientation and the
/// zero-motion behaviour are described in the module doc. Returns `None` when there is no contact, for a
/// non-positive `thickness`, and for non-finite input.
#[must_use]
pub fn ccd_point_triangle(start: [DVec3; 4], end: [DVec3; 4], thickness: f64) -> Option<CcdHit> {
    let disp = displacements(&start, &end);
    // the order of `docs/methods/bridson-collisions.md`: base x1, then x2, x3 and the point x0.
    let cubic = coplanarity_cubic(
        [start[1], start[2], start[3], start[0]],
        [disp[1], disp[2], disp[3], disp[0]],
    );
    let mut times = Times::new();
    if cubic.poly.max_abs() <= COPLANAR_RELATIVE * cubic.scale {
        coplanar_point_triangle_times(&start, &disp, &mut times);
    } else {
        let at_end = orientation([end[1], end[2], end[3], end[0]]);
        let tau = root_tolerance(&cubic, &start, &end);
        push_roots_in_unit_interval(cubic.poly, at_end, tau, &mut times);
    }
    let side_eps = SIDE_RELATIVE * cubic.length;
    times
        .sorted()
        .iter()
        .find_map(|&s| point_triangle_hit(&start, &end, &disp, s, thickness, side_eps))
}

/// Edge `(x0, x1)` against edge `(x2, x3)`, each vertex moving linearly from `start[i]` to `end[i]`: the first
/// instant in `[0, 1]` at which the edges are coplanar and within `thickness` of each other. Bridson 2002,
/// `docs/methods/bridson-collisions.md` (3.14) (coplanarity cubic, coefficients eq. 3.15), then the closest points of eq. 3.7
/// at each root.
///
/// Symbols: `docs/methods/bridson-collisions.md`'s edge 1–2 = `(x0, x1)` (edge `p`), edge 3–4 = `(x2, x3)` (edge `q`); `thickness` = η_c
/// (m, `> 0`). Parallel edges are coplanar at every instant, so edges that stay parallel take the exact
/// coplanar-motion path of the module doc. Returns `None` when there is no contact, for a non-positive
/// `thickness`, and for non-finite input.
#[must_use]
pub fn ccd_edge_edge(start: [DVec3; 4], end: [DVec3; 4], thickness: f64) -> Option<CcdHit> {
    let disp = displacements(&start, &end);
    let cubic = coplanarity_cubic(start, disp);
    let mut times = Times::new();
    if cubic.poly.max_abs() <= COPLANAR_RELATIVE * cubic.scale {
        coplanar_edge_edge_times(&start, &disp, &mut times);
    } else {
        let tau = root_tolerance(&cubic, &start, &end);
        push_roots_in_unit_interval(cubic.poly, orientation(end), tau, &mut times);
    }
    let side_eps = SIDE_RELATIVE * cubic.length;
    times
        .sorted()
        .iter()
        .find_map(|&s| edge_edge_hit(&start, &end, &disp, s, thickness, side_eps))
}

// ---------------------------------------------------------------------------------------------------------
// Hits at a candidate instant.

fn point_triangle_hit(
    start: &[DVec3; 4],
    end: &[DVec3; 4],
    disp: &[DVec3; 4],
    s: f64,
    thickness: f64,
    side_eps: f64,
) -> Option<CcdHit> {
    let x = positions_at(start, end, s);
    let Some(prox) = proximity_point_triangle(x[0], [x[1], x[2], x[3]], thickness) else {
        return if is_sliver([x[1], x[2], x[3]]) {
            degenerate_triangle_hit(start, disp, &x, s, thickness, side_eps)
        } else {
            None
        };
    };
    let [w1, w2, w3] = prox.weights;
    let weights = [1.0, -w1, -w2, -w3];
    // The proximity accepted the triangle, so it is not a sliver and its winding normal is well defined.
    let axis = (x[2] - x[1]).cross(x[3] - x[1]).normalize();
    let normal = orient_axis(
        axis,
        weighted(&weights, start),
        weighted(&weights, disp),
        side_eps,
    );
    Some(CcdHit {
        t: s,
        weights,
        normal,
        distance: prox.distance,
    })
}

fn edge_edge_hit(
    start: &[DVec3; 4],
    end: &[DVec3; 4],
    disp: &[DVec3; 4],
    s: f64,
    thickness: f64,
    side_eps: f64,
) -> Option<CcdHit> {
    let x = positions_at(start, end, s);
    let prox = proximity_edge_edge([x[0], x[1]], [x[2], x[3]], thickness)?;
    let (a, b) = (prox.a, prox.b);
    let weights = [1.0 - a, a, -(1.0 - b), -b];
    let g0 = weighted(&weights, start);
    let gd = weighted(&weights, disp);
    let ep = x[1] - x[0];
    let eq = x[3] - x[2];
    let cross = ep.cross(eq);
    let cross2 = cross.length_squared();
    let normal = if cross2 > AXIS_SIN2 * ep.length_squared() * eq.length_squared() && cross2 > 0.0 {
        orient_axis(cross / cross2.sqrt(), g0, gd, side_eps)
    } else {
        // Parallel or degenerate edges: no cross-product axis.
        let longer = if ep.length_squared() >= eq.length_squared() {
            ep
        } else {
            eq
        };
        normal_across_line(longer, g0, gd, side_eps)
    };
    Some(CcdHit {
        t: s,
        weights,
        normal,
        distance: prox.distance,
    })
}

/// True for a triangle the proximity test of eq. 3.6 rejects as a sliver: altitude below
/// `MIN_RELATIVE_ALTITUDE` of its longest edge (zero area included). NaN input is not a sliver.
#[inline]
fn is_sliver(tri: [DVec3; 3]) -> bool {
    let edges = [tri[1] - tri[0], tri[2] - tri[1], tri[0] - tri[2]];
    let longest2 = edges[0]
        .length_squared()
        .max(edges[1].length_squared())
        .max(edges[2].length_squared());
    let min_n = MIN_RELATIVE_ALTITUDE * longest2;
    edges[0].cross(edges[2]).length_squared() <= min_n * min_n
}

/// The hit of a vertex and a triangle that is a sliver at instant `s` (positions `x`, [`is_sliver`]), which
/// the proximity test of eq. 3.6 rejects: a zero-area triangle is the union of its edges, so the vertex
/// touches it when it is within `thickness` of the nearest point of the closed triangle. The weights are
/// that point's barycentrics; the normal is perpendicular to the sliver's longest edge
/// ([`normal_across_line`]). `None` for a vertex farther away. Rare, so kept out of line.
#[cold]
#[inline(never)]
fn degenerate_triangle_hit(
    start: &[DVec3; 4],
    disp: &[DVec3; 4],
    x: &[DVec3; 4],
    s: f64,
    thickness: f64,
    side_eps: f64,
) -> Option<CcdHit> {
    let tri = [x[1], x[2], x[3]];
    let longest = largest([tri[1] - tri[0], tri[2] - tri[1], tri[0] - tri[2]]);
    let (closest, [w1, w2, w3]) = closest_point_triangle(x[0], tri);
    let distance = (x[0] - closest).length();
    if distance.is_nan() || distance >= thickness {
        return None;
    }
    let weights = [1.0, -w1, -w2, -w3];
    let normal = normal_across_line(
        longest,
        weighted(&weights, start),
        weighted(&weights, disp),
        side_eps,
    );
    Some(CcdHit {
        t: s,
        weights,
        normal,
        distance,
    })
}

/// A unit normal for a contact whose features lie along one line `line` (parallel edges, a sliver) or
/// collapse to a point (`line = 0`): the part of the start offset `g0` of the contact points perpendicular
/// to the line, else of their relative motion `gd`, else any perpendicular. Such an axis points from the
/// second group toward the first at `s = 0` by construction.
fn normal_across_line(line: DVec3, g0: DVec3, gd: DVec3, side_eps: f64) -> DVec3 {
    let u = line.normalize_or_zero();
    let perp = |v: DVec3| v - v.dot(u) * u;
    let from_start = perp(g0);
    let from_motion = perp(gd);
    if from_start.length() > side_eps {
        from_start.normalize()
    } else if from_motion.length() > side_eps {
        from_motion.normalize()
    } else if u != DVec3::ZERO {
        u.any_orthonormal_vector()
    } else {
        DVec3::Z
    }
}

/// Orients a unit contact axis from the second group toward the first as they stood at `s = 0`: by the sign
/// of the start separation `axis · g0`; if that is at round-off level, along the relative motion `gd`; else
/// unchanged.
fn orient_axis(axis: DVec3, g0: DVec3, gd: DVec3, eps: f64) -> DVec3 {
    let d0 = axis.dot(g0);
    if d0.abs() > eps {
        return axis * d0.signum();
    }
    let moved = axis.dot(gd);
    if moved.abs() > eps {
        return axis * moved.signum();
    }
    axis
}

// ---------------------------------------------------------------------------------------------------------
// Coplanar motion: exact candidate instants.

/// Candidates for a vertex and a triangle that stay coplanar: `s = 0`, `s = 1` and every instant at which the
/// vertex crosses one of the three edge lines.
fn coplanar_point_triangle_times(start: &[DVec3; 4], disp: &[DVec3; 4], out: &mut Times) {
    out.push(0.0);
    out.push(1.0);
    let at = |k: usize, s: f64| start[k] + s * disp[k];
    let normal_at = |s: f64| (at(2, s) - at(1, s)).cross(at(3, s) - at(1, s));
    let reference = largest([normal_at(0.0), normal_at(0.5), normal_at(1.0)]);
    if reference == DVec3::ZERO {
        // Degenerate for the whole step (a quadratic vector vanishing at three instants is identically
        // zero): the proximity test rejects it at every instant; edge–edge tests cover its edges.
        return;
    }
    for (i, j) in [(1, 2), (2, 3), (3, 1)] {
        push_collinear_times(
            reference,
            (start[0], disp[0]),
            (start[i], disp[i]),
            (start[j], disp[j]),
            out,
        );
    }
}

/// Candidates for two edges that stay coplanar: `s = 0`, `s = 1` and every instant at which an endpoint of one
/// edge crosses the other edge's line (or, for edges that stay on one line, passes an endpoint of the other).
fn coplanar_edge_edge_times(start: &[DVec3; 4], disp: &[DVec3; 4], out: &mut Times) {
    out.push(0.0);
    out.push(1.0);
    let at = |k: usize, s: f64| start[k] + s * disp[k];
    let mut plane_normals = [DVec3::ZERO; 15];
    let mut lengths = [DVec3::ZERO; 18];
    for (n, s) in [0.0, 0.5, 1.0].into_iter().enumerate() {
        let ep = at(1, s) - at(0, s);
        let eq = at(3, s) - at(2, s);
        let x20 = at(2, s) - at(0, s);
        let x30 = at(3, s) - at(0, s);
        let x02 = -x20;
        let x12 = at(1, s) - at(2, s);
        plane_normals[5 * n..5 * n + 5].copy_from_slice(&[
            ep.cross(eq),
            ep.cross(x20),
            ep.cross(x30),
            eq.cross(x02),
            eq.cross(x12),
        ]);
        lengths[6 * n..6 * n + 6].copy_from_slice(&[ep, eq, x20, x30, x12, at(3, s) - at(1, s)]);
    }
    let reference = largest(plane_normals);
    let line = largest(lengths);
    let length = line.length();
    if reference.length() > COPLANAR_RELATIVE * length * length {
        let p0 = (start[0], disp[0]);
        let p1 = (start[1], disp[1]);
        let q0 = (start[2], disp[2]);
        let q1 = (start[3], disp[3]);
        push_collinear_times(reference, p0, q0, q1, out);
        push_collinear_times(reference, p1, q0, q1, out);
        push_collinear_times(reference, q0, p0, p1, out);
        push_collinear_times(reference, q1, p0, p1, out);
    } else if line != DVec3::ZERO {
        // All four points stay on one line: the segments first meet when two endpoints pass each other.
        for i in [0, 1] {
            for j in [2, 3] {
                push_passing_times(line, (start[i], disp[i]), (start[j], disp[j]), out);
            }
        }
    }
    // All four points coincide for the whole step: `s = 0` is the contact.
}

/// Pushes the instants at which the moving point `x` is collinear with the moving edge `(y, z)`:
/// roots of `N·((z − y) × (x − y))`, a quadratic in `s`. If that is identically zero (the point slides along the
/// edge's line), pushes the instants at which it passes `y` or `z` along the line instead.
fn push_collinear_times(
    reference: DVec3,
    x: (DVec3, DVec3),
    y: (DVec3, DVec3),
    z: (DVec3, DVec3),
    out: &mut Times,
) {
    let a = z.0 - y.0;
    let da = z.1 - y.1;
    let b = x.0 - y.0;
    let db = x.1 - y.1;
    let poly = Poly3 {
        c: [
            reference.dot(a.cross(b)),
            reference.dot(a.cross(db) + da.cross(b)),
            reference.dot(da.cross(db)),
            0.0,
        ],
    };
    let scale = reference.length() * max_length(a, da) * max_length(b, db);
    if poly.max_abs() > COPLANAR_RELATIVE * scale {
        push_roots_in_unit_interval(poly, poly.eval(1.0), ROOT_RELATIVE * scale, out);
        return;
    }
    let line = largest([a, a + 0.5 * da, a + da, b, b + 0.5 * db, b + db]);
    if line != DVec3::ZERO {
        push_passing_times(line, x, y, out);
        push_passing_times(line, x, z, out);
    }
}

/// Pushes the instant at which moving points `x` and `y` pass each other along direction `line`: the root of
/// the linear `(x − y)·line`.
fn push_passing_times(line: DVec3, x: (DVec3, DVec3), y: (DVec3, DVec3), out: &mut Times) {
    let b = x.0 - y.0;
    let db = x.1 - y.1;
    let poly = Poly3 {
        c: [line.dot(b), line.dot(db), 0.0, 0.0],
    };
    let scale = line.length() * max_length(b, db);
    push_roots_in_unit_interval(poly, poly.eval(1.0), ROOT_RELATIVE * scale, out);
}

// ---------------------------------------------------------------------------------------------------------
// The coplanarity cubic and robust roots.

/// A polynomial of degree ≤ 3 in `s`; `c[k]` multiplies `s^k`.
#[derive(Clone, Copy, Debug)]
struct Poly3 {
    c: [f64; 4],
}

impl Poly3 {
    #[inline]
    fn eval(&self, s: f64) -> f64 {
        let [c0, c1, c2, c3] = self.c;
        ((c3 * s + c2) * s + c1) * s + c0
    }

    #[inline]
    fn eval_with_derivative(&self, s: f64) -> (f64, f64) {
        let [c0, c1, c2, c3] = self.c;
        let p = ((c3 * s + c2) * s + c1) * s + c0;
        let dp = (3.0 * c3 * s + 2.0 * c2) * s + c1;
        (p, dp)
    }

    #[inline]
    fn max_abs(&self) -> f64 {
        self.c.iter().fold(0.0_f64, |m, c| m.max(c.abs()))
    }
}

/// The coplanarity cubic of a moving quadruple and its scales.
struct Cubic {
    poly: Poly3,
    /// `S`: bound on `|p(s)|` over `[0, 1]` (m³).
    scale: f64,
    /// Largest difference-vector length over the step (m).
    length: f64,
}

/// Coplanarity cubic `p(s) = ((x1 − x0) × (x2 − x0))·(x3 − x0)` at `x_k(s) = x[k] + s d[k]`.
/// Bridson 2002, `docs/methods/bridson-collisions.md` (3.15) (with the indices of `docs/methods/bridson-collisions.md` 1, 2, 3, 4 = `x[0..4]`, displacements
/// over the substep in place of velocities, so `s ∈ [0, 1]`).
fn coplanarity_cubic(x: [DVec3; 4], d: [DVec3; 4]) -> Cubic {
    let x21 = x[1] - x[0];
    let v21 = d[1] - d[0];
    let x31 = x[2] - x[0];
    let v31 = d[2] - d[0];
    let x41 = x[3] - x[0];
    let v41 = d[3] - d[0];
    let vv = v21.cross(v31);
    let mixed = x21.cross(v31) + v21.cross(x31);
    let xx = x21.cross(x31);
    let poly = Poly3 {
        c: [
            xx.dot(x41),
            mixed.dot(x41) + xx.dot(v41),
            vv.dot(x41) + mixed.dot(v41),
            vv.dot(v41),
        ],
    };
    // Squared lengths: two square roots instead of six on the hot path.
    let max_length2 = |a: DVec3, da: DVec3| a.length_squared().max((a + da).length_squared());
    let (l21, l31, l41) = (
        max_length2(x21, v21),
        max_length2(x31, v31),
        max_length2(x41, v41),
    );
    Cubic {
        poly,
        scale: (l21 * l31 * l41).sqrt(),
        length: l21.max(l31).max(l41).sqrt(),
    }
}

/// Orientation `((x1 − x0) × (x2 − x0))·(x3 − x0)` of four points: the coplanarity cubic's value at an
/// instant whose positions are known exactly (`s = 1`: the end positions themselves), evaluated from them
/// rather than from the coefficients.
#[inline]
fn orientation(x: [DVec3; 4]) -> f64 {
    (x[1] - x[0]).cross(x[2] - x[0]).dot(x[3] - x[0])
}

/// Root tolerance `τ` of the coplanarity cubic for the motion `start → end` (module doc, *Contact at the
/// ends*): `ROOT_RELATIVE · (S + 3 M L²)`, the evaluation error `~ε S` plus the change of `p` when every
/// position moves by the rounding `ε M` of its coordinates (`M` the largest coordinate magnitude, `L` the
/// longest difference vector).
#[inline]
fn root_tolerance(cubic: &Cubic, start: &[DVec3; 4], end: &[DVec3; 4]) -> f64 {
    let magnitude = start
        .iter()
        .chain(end)
        .fold(DVec3::ZERO, |m, x| m.max(x.abs()))
        .max_element();
    ROOT_RELATIVE * (cubic.scale + 3.0 * magnitude * cubic.length * cubic.length)
}

/// Appends the roots of `p` in `[0, 1]` to `out`, by the robust procedure of `docs/methods/bridson-collisions.md` §3.9 steps 2–3 (see the
/// module doc): monotone intervals between the critical points, `|p| ≤ tau` at an interval start counts as a
/// root, and every sign change (also after such a start) is refined by safeguarded Newton. `p_end` is the
/// value at `s = 1`, computed by the caller from the end positions when it has them (the coefficients'
/// round-off would otherwise decide whether a contact exactly at the end is seen).
fn push_roots_in_unit_interval(p: Poly3, p_end: f64, tau: f64, out: &mut Times) {
    let [_, c1, c2, c3] = p.c;
    let mut knots = [0.0; 4];
    let mut n = 1;
    let (critical, count) = quadratic_roots(3.0 * c3, 2.0 * c2, c1);
    for &r in &critical[..count] {
        if r > 0.0 && r < 1.0 {
            knots[n] = r;
            n += 1;
        }
    }
    knots[n] = 1.0;
    n += 1;
    let mut sa = knots[0];
    let mut pa = p.eval(sa);
    for &sb in &knots[1..n] {
        let pb = if sb == 1.0 { p_end } else { p.eval(sb) };
        if pa.abs() <= tau {
            out.push(sa);
        }
        // Not `else`: when the whole configuration is nearly planar, `|p| ≤ τ` can hold over a long
        // stretch, and the real crossing (where an in-plane motion may have brought the vertex inside)
        // lies further on.
        if (pa < 0.0 && pb > 0.0) || (pa > 0.0 && pb < 0.0) {
            out.push(refine_root(p, sa, sb, pa));
        }
        sa = sb;
        pa = pb;
    }
    if pa.abs() <= tau {
        out.push(1.0);
    }
}

/// Real roots of `a s² + b s + c`, ascending, without dividing by a small `a` in the cancelling branch
/// (`q = −(b + sign(b)√disc)/2`, roots `q/a` and `c/q`). Degree drops to linear when `a = 0` and to none
/// when `a = b = 0`. A negative discriminant gives no roots. Non-finite roots are left out.
fn quadratic_roots(a: f64, b: f64, c: f64) -> ([f64; 2], usize) {
    let mut roots = [0.0; 2];
    let mut n = 0;
    let mut push = |r: f64| {
        if r.is_finite() {
            roots[n] = r;
            n += 1;
        }
    };
    if a == 0.0 {
        if b != 0.0 {
            push(-c / b);
        }
    } else {
        let disc = b * b - 4.0 * a * c;
        if disc >= 0.0 {
            let q = -0.5 * (b + disc.sqrt().copysign(b));
            if q == 0.0 {
                // b = 0 and disc = 0, hence c = 0: double root at 0.
                push(0.0);
            } else {
                push(q / a);
                push(c / q);
            }
        }
    }
    if n == 2 && roots[0] > roots[1] {
        roots.swap(0, 1);
    }
    (roots, n)
}

/// Root of `p` in `[lo, hi]`, where `p(lo) = p_lo` and `p(hi)` have opposite signs: safeguarded Newton
/// ("rtsafe"): a Newton step is taken only if it stays inside the bracket and is at most half the step before
/// last, otherwise the bracket is bisected, so convergence is never slower than bisection.
fn refine_root(p: Poly3, mut lo: f64, mut hi: f64, p_lo: f64) -> f64 {
    let lo_negative = p_lo < 0.0;
    let mut s = 0.5 * (lo + hi);
    let mut step = hi - lo;
    let mut step_before = step;
    for _ in 0..MAX_REFINE_ITERATIONS {
        let (ps, dps) = p.eval_with_derivative(s);
        if ps == 0.0 {
            return s;
        }
        if (ps < 0.0) == lo_negative {
            lo = s;
        } else {
            hi = s;
        }
        let newton = s - ps / dps;
        let next = if newton > lo && newton < hi && (2.0 * ps).abs() <= (step_before * dps).abs() {
            newton
        } else {
            0.5 * (lo + hi)
        };
        step_before = step;
        step = (next - s).abs();
        s = next;
        if step <= ROOT_TIME_TOLERANCE || hi - lo <= ROOT_TIME_TOLERANCE {
            break;
        }
    }
    s
}

// ---------------------------------------------------------------------------------------------------------
// Small helpers.

/// Candidate instants, at most `CAPACITY`. The largest producer is the coplanar edge–edge path: `s = 0`,
/// `s = 1` and four collinearity tests of at most four instants each (a quadratic's two monotone intervals
/// plus `s = 1`, or two passing instants of two each), 18 in all.
struct Times {
    t: [f64; Times::CAPACITY],
    len: usize,
}

impl Times {
    const CAPACITY: usize = 24;

    fn new() -> Self {
        Self {
            t: [0.0; Self::CAPACITY],
            len: 0,
        }
    }

    #[inline]
    fn push(&mut self, s: f64) {
        debug_assert!(self.len < Self::CAPACITY, "candidate buffer sized above");
        if self.len < Self::CAPACITY {
            self.t[self.len] = s;
            self.len += 1;
        }
    }

    /// Candidates in increasing order (insertion sort: at most a few dozen values).
    fn sorted(&mut self) -> &[f64] {
        let t = &mut self.t[..self.len];
        for i in 1..t.len() {
            let mut j = i;
            while j > 0 && t[j - 1] > t[j] {
                t.swap(j - 1, j);
                j -= 1;
            }
        }
        t
    }
}

#[inline]
fn displacements(start: &[DVec3; 4], end: &[DVec3; 4]) -> [DVec3; 4] {
    [
        end[0] - start[0],
        end[1] - start[1],
        end[2] - start[2],
        end[3] - start[3],
    ]
}

/// Positions at normalised time `s`; exactly `end` at `s = 1`.
#[inline]
fn positions_at(start: &[DVec3; 4], end: &[DVec3; 4], s: f64) -> [DVec3; 4] {
    if s >= 1.0 {
        return *end;
    }
    std::array::from_fn(|k| start[k] + s * (end[k] - start[k]))
}

#[inline]
fn weighted(w: &[f64; 4], x: &[DVec3; 4]) -> DVec3 {
    w[0] * x[0] + w[1] * x[1] + w[2] * x[2] + w[3] * x[3]
}

/// Largest length of `a + s da` over `s ∈ [0, 1]` (attained at an end: the norm is convex).
#[inline]
fn max_length(a: DVec3, da: DVec3) -> f64 {
    a.length().max((a + da).length())
}

/// The longest of `vs` (zero if all are zero).
fn largest<const N: usize>(vs: [DVec3; N]) -> DVec3 {
    vs.into_iter().fold(DVec3::ZERO, |best, v| {
        if v.length_squared() > best.length_squared() {
            v
        } else {
            best
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    use std::cell::Cell;

    const ETA_C: f64 = 1e-6;

    fn v(x: f64, y: f64, z: f64) -> DVec3 {
        DVec3::new(x, y, z)
    }

    /// Unit right triangle in the plane z = 0, static.
    fn floor() -> [DVec3; 3] {
        [DVec3::ZERO, DVec3::X, DVec3::Y]
    }

    fn pt(p0: DVec3, p1: DVec3, tri0: [DVec3; 3], tri1: [DVec3; 3]) -> ([DVec3; 4], [DVec3; 4]) {
        (
            [p0, tri0[0], tri0[1], tri0[2]],
            [p1, tri1[0], tri1[1], tri1[2]],
        )
    }

    fn relative_normal_displacement(hit: &CcdHit, start: &[DVec3; 4], end: &[DVec3; 4]) -> f64 {
        hit.signed_separation(end) - hit.signed_separation(start)
    }

    /// Checks the hit's internal consistency: weights rebuild a gap of length `distance` at `t`, the normal
    /// is unit, and the start separation is not negative.
    fn check_hit(hit: &CcdHit, start: &[DVec3; 4], end: &[DVec3; 4], thickness: f64) {
        assert!((0.0..=1.0).contains(&hit.t), "{hit:?}");
        assert!(hit.weights.iter().sum::<f64>().abs() < 1e-12, "{hit:?}");
        assert!((hit.normal.length() - 1.0).abs() < 1e-12, "{hit:?}");
        assert!(hit.distance < thickness, "{hit:?}");
        let x: [DVec3; 4] = std::array::from_fn(|k| start[k] + hit.t * (end[k] - start[k]));
        let gap = weighted(&hit.weights, &x);
        assert!(gap.length() < thickness + 1e-12, "{hit:?} gap {gap}");
        // Not negative beyond the round-off level (SIDE_RELATIVE times the pair's size, below 1e-11 here).
        assert!(hit.signed_separation(start) >= -1e-11, "{hit:?}");
    }

    #[test]
    fn vertex_passes_through_static_triangle_mid_step() {
        let (start, end) = pt(v(0.2, 0.3, 1.0), v(0.2, 0.3, -1.0), floor(), floor());
        let hit = ccd_point_triangle(start, end, ETA_C).expect("crosses at s = 0.5");
        assert!((hit.t - 0.5).abs() < 1e-14, "{hit:?}");
        for (w, e) in hit.weights.iter().zip([1.0, -0.5, -0.2, -0.3]) {
            assert!((w - e).abs() < 1e-12, "{hit:?}");
        }
        // Started above: normal +z, approaching (v_N < 0), d0 = 1.
        assert!((hit.normal - DVec3::Z).length() < 1e-14);
        assert!(relative_normal_displacement(&hit, &start, &end) < 0.0);
        assert!((hit.signed_separation(&start) - 1.0).abs() < 1e-12);
        check_hit(&hit, &start, &end, ETA_C);
    }

    #[test]
    fn vertex_and_moving_triangle_cross_at_the_true_time() {
        // Triangle rises from z = 0 to z = 0.5, vertex falls from z = 1 to z = −1: 1 − 2s = 0.5 s at s = 0.4.
        let up = floor().map(|x| x + v(0.0, 0.0, 0.5));
        let (start, end) = pt(v(0.25, 0.25, 1.0), v(0.25, 0.25, -1.0), floor(), up);
        let hit = ccd_point_triangle(start, end, ETA_C).expect("crosses at s = 0.4");
        assert!((hit.t - 0.4).abs() < 1e-14, "{hit:?}");
        assert!((hit.normal - DVec3::Z).length() < 1e-14);
        check_hit(&hit, &start, &end, ETA_C);
        // From below the normal flips.
        let (start, end) = pt(v(0.25, 0.25, -1.0), v(0.25, 0.25, 1.0), floor(), up);
        let hit = ccd_point_triangle(start, end, ETA_C).expect("crosses at s = 2/3");
        assert!((hit.t - 2.0 / 3.0).abs() < 1e-14, "{hit:?}");
        assert!((hit.normal + DVec3::Z).length() < 1e-14);
        assert!(relative_normal_displacement(&hit, &start, &end) < 0.0);
        check_hit(&hit, &start, &end, ETA_C);
    }

    #[test]
    fn crossing_edges() {
        // Edge p along y at x = 0.5 falls through edge q along x: they cross at s = 0.5, a = b = 0.5.
        let start = [v(0.5, -0.5, 1.0), v(0.5, 0.5, 1.0), DVec3::ZERO, DVec3::X];
        let end = [v(0.5, -0.5, -1.0), v(0.5, 0.5, -1.0), DVec3::ZERO, DVec3::X];
        let hit = ccd_edge_edge(start, end, ETA_C).expect("edges cross");
        assert!((hit.t - 0.5).abs() < 1e-14, "{hit:?}");
        for (w, e) in hit.weights.iter().zip([0.5, 0.5, -0.5, -0.5]) {
            assert!((w - e).abs() < 1e-12, "{hit:?}");
        }
        assert!((hit.normal - DVec3::Z).length() < 1e-14, "{hit:?}");
        assert!(relative_normal_displacement(&hit, &start, &end) < 0.0);
        check_hit(&hit, &start, &end, ETA_C);
        // Shifted past the end of q by more than the tolerance: a near miss.
        let shift = v(0.5 + 1e-4, 0.0, 0.0);
        let miss_start = [start[0] + shift, start[1] + shift, start[2], start[3]];
        let miss_end = [end[0] + shift, end[1] + shift, end[2], end[3]];
        assert_eq!(ccd_edge_edge(miss_start, miss_end, ETA_C), None);
        // ... and just within it.
        let graze = v(0.5 + 0.5 * ETA_C, 0.0, 0.0);
        let hit = ccd_edge_edge(
            [start[0] + graze, start[1] + graze, start[2], start[3]],
            [end[0] + graze, end[1] + graze, end[2], end[3]],
            ETA_C,
        )
        .expect("passes within the tolerance of q's end");
        assert!((hit.t - 0.5).abs() < 1e-12);
        assert!(
            (hit.weights[3] + 1.0).abs() < 1e-12,
            "clamped to q's end: {hit:?}"
        );
    }

    #[test]
    fn parallel_edges_that_meet() {
        let q = [DVec3::ZERO, DVec3::X];
        // In the plane z = 0: p slides from y = 1 to y = −1, collinear with q at s = 0.5.
        let start = [v(0.25, 1.0, 0.0), v(0.75, 1.0, 0.0), q[0], q[1]];
        let end = [v(0.25, -1.0, 0.0), v(0.75, -1.0, 0.0), q[0], q[1]];
        let hit = ccd_edge_edge(start, end, ETA_C).expect("parallel edges meet");
        assert!((hit.t - 0.5).abs() < 1e-14, "{hit:?}");
        assert!(
            (hit.normal - DVec3::Y).length() < 1e-12,
            "came from +y: {hit:?}"
        );
        assert!(relative_normal_displacement(&hit, &start, &end) < 0.0);
        check_hit(&hit, &start, &end, ETA_C);
        // Falling from above (the common plane is y = 0): meet at s = 0.5 with normal +z.
        let start = [v(0.25, 0.0, 1.0), v(0.75, 0.0, 1.0), q[0], q[1]];
        let end = [v(0.25, 0.0, -1.0), v(0.75, 0.0, -1.0), q[0], q[1]];
        let hit = ccd_edge_edge(start, end, ETA_C).expect("parallel edges meet");
        assert!((hit.t - 0.5).abs() < 1e-14, "{hit:?}");
        assert!((hit.normal - DVec3::Z).length() < 1e-12, "{hit:?}");
        check_hit(&hit, &start, &end, ETA_C);
        // Parallel, passing beside each other (offset 0.5 in y): always coplanar, never touching.
        let off = v(0.0, 0.5, 0.0);
        let start = [start[0] + off, start[1] + off, q[0], q[1]];
        let end = [end[0] + off, end[1] + off, q[0], q[1]];
        assert_eq!(ccd_edge_edge(start, end, ETA_C), None);
        // Collinear throughout, sliding into each other along the line: touch at s = 0.25.
        let start = [v(-2.0, 0.0, 0.0), v(-1.5, 0.0, 0.0), q[0], q[1]];
        let end = [v(0.0, 0.0, 0.0), v(0.5, 0.0, 0.0), q[0], q[1]];
        let hit = ccd_edge_edge(start, end, ETA_C).expect("collinear edges meet");
        assert!((hit.t - 0.75).abs() < 1e-12, "{hit:?}");
        check_hit(&hit, &start, &end, ETA_C);
    }

    #[test]
    fn coplanar_vertex_slides_into_triangle() {
        // In the plane z = 0, the vertex enters through the hypotenuse x + y = 1 at x = 0.8: s = 2/3.
        let (start, end) = pt(v(2.0, 0.2, 0.0), v(0.2, 0.2, 0.0), floor(), floor());
        let hit = ccd_point_triangle(start, end, ETA_C).expect("slides in");
        assert!((hit.t - 2.0 / 3.0).abs() < 1e-12, "{hit:?}");
        assert!((hit.weights[1]).abs() < 1e-12, "on edge x2–x3: {hit:?}");
        // No side at s = 0 and no normal motion: the winding normal.
        assert!((hit.normal - DVec3::Z).length() < 1e-12, "{hit:?}");
        check_hit(&hit, &start, &end, ETA_C);
        // Sliding past the triangle: no hit.
        let (start, end) = pt(v(2.0, 1.2, 0.0), v(-1.0, 1.2, 0.0), floor(), floor());
        assert_eq!(ccd_point_triangle(start, end, ETA_C), None);
        // Sliding in along the line of edge x1–x2 (collinear throughout): enters at x = 1, s = 0.5.
        let (start, end) = pt(v(1.5, 0.0, 0.0), v(0.5, 0.0, 0.0), floor(), floor());
        let hit = ccd_point_triangle(start, end, ETA_C).expect("enters through x2");
        assert!((hit.t - 0.5).abs() < 1e-12, "{hit:?}");
    }

    #[test]
    fn coplanar_motion_with_rotating_plane() {
        // x3 swings from (0, 1, 0) to (0, 0, 1); the vertex x0(s) = α(s) x̂ + ¼ x3(s) stays in the plane with
        // barycentric w3 = ¼ and w2 = α(s) = 1.5 − 1.25 s: it enters when α + ¼ = 1, at s = 0.6.
        let x3 = |s: f64| v(0.0, 1.0 - s, s);
        let x0 = |s: f64| v(1.5 - 1.25 * s, 0.0, 0.0) + 0.25 * x3(s);
        let start = [x0(0.0), DVec3::ZERO, DVec3::X, x3(0.0)];
        let end = [x0(1.0), DVec3::ZERO, DVec3::X, x3(1.0)];
        let disp = displacements(&start, &end);
        let cubic = coplanarity_cubic(
            [start[1], start[2], start[3], start[0]],
            [disp[1], disp[2], disp[3], disp[0]],
        );
        assert!(
            cubic.poly.max_abs() <= COPLANAR_RELATIVE * cubic.scale,
            "coplanar throughout"
        );
        let hit = ccd_point_triangle(start, end, ETA_C).expect("enters at s = 0.6");
        assert!((hit.t - 0.6).abs() < 1e-12, "{hit:?}");
        check_hit(&hit, &start, &end, ETA_C);
    }

    #[test]
    fn contact_at_start_and_at_end() {
        // Exactly on the triangle at s = 0, moving down: hit at 0; no side existed, so the normal follows the
        // motion (the pair leaves the contact downward) and d0 = 0.
        let (start, end) = pt(v(0.2, 0.2, 0.0), v(0.2, 0.2, -1.0), floor(), floor());
        let hit = ccd_point_triangle(start, end, ETA_C).expect("touching at s = 0");
        assert_eq!(hit.t, 0.0);
        assert!((hit.normal + DVec3::Z).length() < 1e-14, "{hit:?}");
        assert!(hit.signed_separation(&start).abs() < 1e-15);
        assert!(relative_normal_displacement(&hit, &start, &end) > 0.0);
        // Arriving exactly at s = 1.
        let (start, end) = pt(v(0.2, 0.2, 1.0), v(0.2, 0.2, 0.0), floor(), floor());
        let hit = ccd_point_triangle(start, end, ETA_C).expect("touching at s = 1");
        assert_eq!(hit.t, 1.0);
        assert!((hit.normal - DVec3::Z).length() < 1e-14);
        check_hit(&hit, &start, &end, ETA_C);
        // Edges: touching at s = 0 and arriving at s = 1.
        let q = [DVec3::ZERO, DVec3::X];
        let p0 = [v(0.5, -0.5, 0.0), v(0.5, 0.5, 0.0)];
        let p1 = [v(0.5, -0.5, 1.0), v(0.5, 0.5, 1.0)];
        let hit = ccd_edge_edge(
            [p0[0], p0[1], q[0], q[1]],
            [p1[0], p1[1], q[0], q[1]],
            ETA_C,
        )
        .expect("touching at s = 0");
        assert_eq!(hit.t, 0.0);
        assert!(
            (hit.normal - DVec3::Z).length() < 1e-14,
            "leaves upward: {hit:?}"
        );
        let hit = ccd_edge_edge(
            [p1[0], p1[1], q[0], q[1]],
            [p0[0], p0[1], q[0], q[1]],
            ETA_C,
        )
        .expect("touching at s = 1");
        assert_eq!(hit.t, 1.0);
        assert!((hit.normal - DVec3::Z).length() < 1e-14, "{hit:?}");
    }

    /// Exactly touching configurations of both queries, each at `s = 0` (then leaving: up, down, or sliding
    /// away in the plane) and at `s = 1` (arriving: from above or below, when the end is the first contact,
    /// or sliding in the plane, when an earlier contact on the way in may come first), at unit size about
    /// the origin and shrunk to a millimetre 3 m away (where the placed contact is exact only to the
    /// coordinates' rounding).
    #[test]
    fn exactly_touching_pairs_hit_at_the_end_where_they_touch() {
        let tri = [DVec3::ZERO, DVec3::X, DVec3::Y];
        // Vertex spots on the closed triangle: a corner, an edge point, an interior point; and the
        // triangle collapsed onto its edge x1–x2 with the vertex on it.
        let spots: [(DVec3, [DVec3; 3]); 4] = [
            (DVec3::X, tri),
            (v(0.5, 0.5, 0.0), tri),
            (v(0.25, 0.25, 0.0), tri),
            (v(0.25, 0.0, 0.0), [DVec3::ZERO, DVec3::X, v(0.5, 0.0, 0.0)]),
        ];
        // Edge q along x; edge p touching it: end to end, end on q's interior, crossing, overlapping on one
        // line, and p collapsed to a point on q.
        let q = [DVec3::ZERO, DVec3::X];
        let touching_edges: [[DVec3; 2]; 5] = [
            [DVec3::X, v(1.0, 1.0, 0.0)],
            [v(0.5, 0.0, 0.0), v(0.5, 1.0, 0.0)],
            [v(0.5, -0.5, 0.0), v(0.5, 0.5, 0.0)],
            [v(0.75, 0.0, 0.0), v(1.75, 0.0, 0.0)],
            [v(0.5, 0.0, 0.0), v(0.5, 0.0, 0.0)],
        ];
        let moves = [v(0.0, 0.0, 1.0), v(0.0, 0.0, -1.0), v(3.0, 3.0, 0.0)];
        for (scale, offset) in [(1.0, 0.0), (1e-3, 3.0)] {
            let m = |x: DVec3| x * scale + DVec3::splat(offset);
            let eta_c = ETA_C * scale;
            for &motion in &moves {
                let away = |x: DVec3| m(x + motion);
                for &(p, t) in &spots {
                    let touching = [p, t[0], t[1], t[2]].map(m);
                    let apart = [away(p), m(t[0]), m(t[1]), m(t[2])];
                    let hit = ccd_point_triangle(touching, apart, eta_c);
                    let hit = hit.unwrap_or_else(|| {
                        panic!("{p} on {t:?} at s = 0, {motion}, scale {scale}")
                    });
                    assert_eq!(hit.t, 0.0, "{hit:?}");
                    check_hit(&hit, &touching, &apart, eta_c);
                    let hit = ccd_point_triangle(apart, touching, eta_c);
                    let hit = hit.unwrap_or_else(|| {
                        panic!("{p} on {t:?} at s = 1, {motion}, scale {scale}")
                    });
                    assert!(
                        hit.t > 1.0 - 1e-9 || motion.z == 0.0,
                        "contact at the end: {hit:?}"
                    );
                    check_hit(&hit, &apart, &touching, eta_c);
                }
                for &p in &touching_edges {
                    let touching = [p[0], p[1], q[0], q[1]].map(m);
                    let apart = [away(p[0]), away(p[1]), m(q[0]), m(q[1])];
                    let hit = ccd_edge_edge(touching, apart, eta_c);
                    let hit = hit
                        .unwrap_or_else(|| panic!("{p:?} on q at s = 0, {motion}, scale {scale}"));
                    assert_eq!(hit.t, 0.0, "{hit:?}");
                    check_hit(&hit, &touching, &apart, eta_c);
                    let hit = ccd_edge_edge(apart, touching, eta_c);
                    let hit = hit
                        .unwrap_or_else(|| panic!("{p:?} on q at s = 1, {motion}, scale {scale}"));
                    assert!(
                        hit.t > 1.0 - 1e-9 || motion.z == 0.0,
                        "contact at the end: {hit:?}"
                    );
                    check_hit(&hit, &apart, &touching, eta_c);
                }
            }
        }
    }

    /// Pairs that stay coplanar and touching for the whole step (sliding along each other in their plane,
    /// or resting): the contact is at `s = 0`.
    #[test]
    fn pairs_touching_throughout_hit_at_the_start() {
        let slide = v(0.1, 0.0, 0.0);
        let tri = [DVec3::ZERO, DVec3::X, DVec3::Y];
        for (p, d) in [
            (v(0.25, 0.0, 0.0), slide),
            (v(0.2, 0.2, 0.0), slide),
            (v(0.2, 0.2, 0.0), DVec3::ZERO),
        ] {
            let start = [p, tri[0], tri[1], tri[2]];
            let end = [p + d, tri[0], tri[1], tri[2]];
            let hit = ccd_point_triangle(start, end, ETA_C).expect("touching throughout");
            assert_eq!(hit.t, 0.0, "{hit:?}");
            check_hit(&hit, &start, &end, ETA_C);
        }
        let q = [DVec3::ZERO, DVec3::X];
        for p in [
            [v(0.5, 0.0, 0.0), v(0.5, 1.0, 0.0)],
            [v(0.5, 0.0, 0.0), v(1.5, 0.0, 0.0)],
        ] {
            let start = [p[0], p[1], q[0], q[1]];
            let end = [p[0] + slide, p[1] + slide, q[0], q[1]];
            let hit = ccd_edge_edge(start, end, ETA_C).expect("touching throughout");
            assert_eq!(hit.t, 0.0, "{hit:?}");
            check_hit(&hit, &start, &end, ETA_C);
        }
    }

    #[test]
    fn zero_motion_hits_only_coplanar_contact() {
        let still = |p: DVec3| pt(p, p, floor(), floor());
        // Lying in the triangle: coplanar and within the tolerance at s = 0.
        let (start, end) = still(v(0.3, 0.3, 0.0));
        let hit = ccd_point_triangle(start, end, ETA_C).expect("resting in the triangle");
        assert_eq!(hit.t, 0.0);
        assert!((hit.normal - DVec3::Z).length() < 1e-14);
        // Hovering closer than the tolerance but not coplanar: a proximity, not a CCD hit.
        let (start, end) = still(v(0.3, 0.3, 0.5 * ETA_C));
        assert_eq!(ccd_point_triangle(start, end, ETA_C), None);
        let (start, end) = still(v(3.0, 0.3, 0.0));
        assert_eq!(ccd_point_triangle(start, end, ETA_C), None);
        // Edges at rest: crossing ones hit at 0, separated ones never.
        let crossing = [v(0.5, -0.5, 0.0), v(0.5, 0.5, 0.0), DVec3::ZERO, DVec3::X];
        assert_eq!(
            ccd_edge_edge(crossing, crossing, ETA_C).map(|h| h.t),
            Some(0.0)
        );
        let apart = [v(0.5, -0.5, 0.1), v(0.5, 0.5, 0.1), DVec3::ZERO, DVec3::X];
        assert_eq!(ccd_edge_edge(apart, apart, ETA_C), None);
    }

    #[test]
    fn near_miss_is_not_a_hit() {
        // Crosses the plane 1e-4 outside edge x1–x3 (x = −1e-4): δ-band reach is ~ETA_C.
        let (start, end) = pt(v(-1e-4, 0.5, 1.0), v(-1e-4, 0.5, -1.0), floor(), floor());
        assert_eq!(ccd_point_triangle(start, end, ETA_C), None);
        // Within the band it is a hit.
        let (start, end) = pt(
            v(-0.5 * ETA_C, 0.5, 1.0),
            v(-0.5 * ETA_C, 0.5, -1.0),
            floor(),
            floor(),
        );
        assert!(ccd_point_triangle(start, end, ETA_C).is_some());
        // Stops just short of the plane.
        let (start, end) = pt(v(0.2, 0.2, 1.0), v(0.2, 0.2, 1e-9), floor(), floor());
        assert_eq!(ccd_point_triangle(start, end, ETA_C), None);
    }

    #[test]
    fn degenerate_cubics() {
        // All coefficients ~0: everything static in one plane, or everything at one point.
        let (start, end) = pt(v(2.0, 2.0, 0.0), v(2.0, 2.0, 0.0), floor(), floor());
        let disp = displacements(&start, &end);
        let cubic = coplanarity_cubic(
            [start[1], start[2], start[3], start[0]],
            [disp[1], disp[2], disp[3], disp[0]],
        );
        assert_eq!(cubic.poly.max_abs(), 0.0);
        assert_eq!(ccd_point_triangle(start, end, ETA_C), None);
        // A triangle collapsed to a point, and the vertex on it: they touch.
        let origin = [DVec3::ZERO; 4];
        assert_eq!(
            ccd_point_triangle(origin, origin, ETA_C).map(|h| h.t),
            Some(0.0)
        );
        assert_eq!(ccd_edge_edge(origin, origin, ETA_C).map(|h| h.t), Some(0.0));
        // Leading coefficient zero (static triangle: the cubic is linear).
        let (start, end) = pt(v(0.1, 0.1, 0.3), v(0.1, 0.1, -0.1), floor(), floor());
        let hit = ccd_point_triangle(start, end, ETA_C).expect("linear cubic");
        assert!((hit.t - 0.75).abs() < 1e-14);
        // Non-finite input and a non-positive tolerance give no hit (and no panic).
        let (mut start, end) = pt(v(0.2, 0.3, 1.0), v(0.2, 0.3, -1.0), floor(), floor());
        assert_eq!(ccd_point_triangle(start, end, 0.0), None);
        start[2] = DVec3::NAN;
        assert_eq!(ccd_point_triangle(start, end, ETA_C), None);
        assert_eq!(ccd_edge_edge(start, end, ETA_C), None);
    }

    #[test]
    fn grazing_double_root_is_found() {
        // x3 swings through the plane z = 0 while the vertex descends and drifts so that
        // p(s) = 0.2 (s − ½)²: the vertex touches the triangle at s = ½ without crossing.
        let x3 = |s: f64| v(0.0, 1.0, 1.0 - 2.0 * s);
        let x0 = |s: f64| v(0.25, 0.3 + 0.1 * s, 0.35 - 0.7 * s);
        let start = [x0(0.0), DVec3::ZERO, DVec3::X, x3(0.0)];
        let end = [x0(1.0), DVec3::ZERO, DVec3::X, x3(1.0)];
        let disp = displacements(&start, &end);
        let cubic = coplanarity_cubic(
            [start[1], start[2], start[3], start[0]],
            [disp[1], disp[2], disp[3], disp[0]],
        );
        for (c, e) in cubic.poly.c.iter().zip([0.05, -0.2, 0.2, 0.0]) {
            assert!((c - e).abs() < 1e-15, "{:?}", cubic.poly);
        }
        let hit = ccd_point_triangle(start, end, ETA_C).expect("grazes at s = 0.5");
        // Round-off may put p(½) a hair below zero, giving a root √(ε/0.2)-close before ½.
        assert!(hit.t <= 0.5 + 1e-12 && hit.t > 0.5 - 1e-6, "{hit:?}");
        check_hit(&hit, &start, &end, ETA_C);
    }

    #[test]
    fn scale_and_translation_invariance() {
        // Relative tolerances: the same crossing at micro- and kilo-scale, far from the origin.
        for (scale, offset) in [(1e-6, 0.0), (1e3, 0.0), (1.0, 1e4), (1e-3, 10.0)] {
            let m = |x: DVec3| x * scale + DVec3::splat(offset);
            let up = floor().map(|x| m(x + v(0.0, 0.0, 0.5)));
            let (start, end) = pt(
                m(v(0.25, 0.25, 1.0)),
                m(v(0.25, 0.25, -1.0)),
                floor().map(m),
                up,
            );
            let hit = ccd_point_triangle(start, end, ETA_C * scale).expect("crosses at 0.4");
            assert!(
                (hit.t - 0.4).abs() < 1e-9,
                "scale {scale} offset {offset}: {hit:?}"
            );
            let q = [m(DVec3::ZERO), m(DVec3::X)];
            let start = [m(v(0.5, -0.5, 1.0)), m(v(0.5, 0.5, 1.0)), q[0], q[1]];
            let end = [m(v(0.5, -0.5, -1.0)), m(v(0.5, 0.5, -1.0)), q[0], q[1]];
            let hit = ccd_edge_edge(start, end, ETA_C * scale).expect("crosses at 0.5");
            assert!(
                (hit.t - 0.5).abs() < 1e-9,
                "scale {scale} offset {offset}: {hit:?}"
            );
        }
    }

    #[test]
    fn roots_of_low_degree_and_clustered_polynomials() {
        let roots = |c: [f64; 4]| {
            let mut out = Times::new();
            let p = Poly3 { c };
            push_roots_in_unit_interval(p, p.eval(1.0), 1e-14, &mut out);
            out.sorted().to_vec()
        };
        // (s − 0.2)(s − 0.5)(s − 0.9) = s³ − 1.6 s² + 0.73 s − 0.09.
        let r = roots([-0.09, 0.73, -1.6, 1.0]);
        assert_eq!(r.len(), 3, "{r:?}");
        for (r, e) in r.iter().zip([0.2, 0.5, 0.9]) {
            assert!((r - e).abs() < 1e-14, "{r} vs {e}");
        }
        // Tiny leading coefficient: effectively the quadratic (s − 0.3)(s − 0.6).
        let r = roots([0.18, -0.9, 1.0, 1e-17]);
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(
            (r[0] - 0.3).abs() < 1e-14 && (r[1] - 0.6).abs() < 1e-14,
            "{r:?}"
        );
        // Linear, constant zero, constant non-zero, roots outside [0, 1].
        assert_eq!(roots([-0.25, 1.0, 0.0, 0.0]), vec![0.25]);
        assert_eq!(roots([0.0; 4]), vec![0.0, 1.0]);
        assert!(roots([1.0, 0.0, 0.0, 0.0]).is_empty());
        assert!(
            roots([2.0, -3.0, 1.0, 0.0]).is_empty() || roots([2.0, -3.0, 1.0, 0.0]) == vec![1.0]
        );
        assert!(roots([6.0, -5.0, 1.0, 0.0]).is_empty(), "roots 2 and 3");
        // Two roots 1e-9 apart around 0.5: (s − 0.5)² − 2.5e-19.
        let r = roots([0.25 - 2.5e-19, -1.0, 1.0, 0.0]);
        assert!(
            !r.is_empty() && r.iter().all(|r| (r - 0.5).abs() < 1e-8),
            "{r:?}"
        );
    }

    // -------------------------------------------------------------------------------------------------
    // Property tests against an independent dense sampler.

    /// First instant in `[0, 1]` at which `orient` changes sign and `accept` holds there, found by sampling
    /// `SAMPLES + 1` instants and bisecting each sign change to machine precision.
    fn sampled_first_crossing(
        orient: impl Fn(f64) -> f64,
        accept: impl Fn(f64) -> bool,
    ) -> Option<f64> {
        const SAMPLES: usize = 2000;
        let mut s_prev = 0.0;
        let mut o_prev = orient(0.0);
        for k in 1..=SAMPLES {
            let s = k as f64 / SAMPLES as f64;
            let o = orient(s);
            if (o_prev < 0.0 && o > 0.0) || (o_prev > 0.0 && o < 0.0) {
                let (mut lo, mut hi) = (s_prev, s);
                for _ in 0..80 {
                    let mid = 0.5 * (lo + hi);
                    let om = orient(mid);
                    if (om < 0.0) == (o_prev < 0.0) {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                let crossing = 0.5 * (lo + hi);
                if accept(crossing) {
                    return Some(crossing);
                }
            }
            s_prev = s;
            o_prev = o;
        }
        None
    }

    fn lerp4(start: &[DVec3; 4], end: &[DVec3; 4], s: f64) -> [DVec3; 4] {
        std::array::from_fn(|k| start[k].lerp(end[k], s))
    }

    /// Independent point-in-triangle test at a coplanar instant: the normal equations of the projection
    /// solved directly, every barycentric weight above `margin`, and a non-sliver triangle.
    fn strictly_inside(x: &[DVec3; 4], margin: f64) -> bool {
        let (e1, e2, r) = (x[2] - x[1], x[3] - x[1], x[0] - x[1]);
        let (a, b, c) = (e1.dot(e1), e1.dot(e2), e2.dot(e2));
        let det = a * c - b * b;
        if det <= 1e-6 * a * c {
            return false;
        }
        let u = (c * e1.dot(r) - b * e2.dot(r)) / det;
        let w = (a * e2.dot(r) - b * e1.dot(r)) / det;
        u > margin && w > margin && 1.0 - u - w > margin
    }

    /// Independent segment-crossing test at a coplanar instant: the lines are far from parallel and the
    /// line–line closest parameters are strictly inside both segments.
    fn segments_cross(x: &[DVec3; 4], margin: f64) -> bool {
        let (d1, d2, r) = (x[1] - x[0], x[3] - x[2], x[2] - x[0]);
        let (a, b, c) = (d1.dot(d1), d1.dot(d2), d2.dot(d2));
        let det = a * c - b * b;
        if det <= 1e-6 * a * c {
            return false;
        }
        let s = (c * d1.dot(r) - b * d2.dot(r)) / det;
        let t = (b * d1.dot(r) - a * d2.dot(r)) / det;
        s > margin && s < 1.0 - margin && t > margin && t < 1.0 - margin
    }

    fn orientation(x: &[DVec3; 4]) -> f64 {
        (x[1] - x[0]).cross(x[2] - x[0]).dot(x[3] - x[0])
    }

    fn point_strategy(r: f64) -> impl Strategy<Value = DVec3> {
        (-r..r, -r..r, -r..r).prop_map(|(x, y, z)| DVec3::new(x, y, z))
    }

    /// Start and end positions: generic random motion, a static second group, small motion of the second
    /// group with a fast first group, or the first group aimed through the middle of the second.
    fn trajectories() -> impl Strategy<Value = ([DVec3; 4], [DVec3; 4])> {
        let quad = || prop::array::uniform4(point_strategy(1.0));
        (quad(), quad(), 0..4u8).prop_map(|(start, end, family)| match family {
            0 => (start, end),
            1 => (start, [end[0], end[1], start[2], start[3]]),
            2 => {
                let small = |k: usize| start[k] + 0.1 * (end[k] - start[k]);
                (start, [end[0], end[1], small(2), small(3)])
            }
            _ => {
                let middle = 0.25 * (start[2] + start[3] + end[2] + end[3]);
                let aim = |k: usize| 2.0 * middle - start[k] + 0.2 * (end[k] - start[k]);
                (start, [aim(0), aim(1), end[2], end[3]])
            }
        })
    }

    fn deterministic_runner(cases: u32) -> TestRunner {
        let config = Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        };
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
    }

    #[test]
    fn ccd_point_triangle_finds_every_sampled_crossing() {
        let found = Cell::new(0u32);
        let mut runner = deterministic_runner(3000);
        let result = runner.run(&trajectories(), |(start, end)| {
            // Vertex x0 against triangle (x1, x2, x3); orientation sign of the tetrahedron (x1, x2, x3, x0).
            let orient = |s: f64| {
                let x = lerp4(&start, &end, s);
                orientation(&[x[1], x[2], x[3], x[0]])
            };
            let inside = |s: f64| strictly_inside(&lerp4(&start, &end, s), 1e-4);
            let hit = ccd_point_triangle(start, end, ETA_C);
            if let Some(crossing) = sampled_first_crossing(orient, inside) {
                found.set(found.get() + 1);
                let hit = hit.ok_or_else(|| {
                    TestCaseError::fail(format!("missed the crossing at {crossing}"))
                })?;
                prop_assert!(hit.t <= crossing + 1e-9, "{hit:?} later than {crossing}");
            }
            if let Some(hit) = hit {
                check_hit(&hit, &start, &end, ETA_C);
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{e}");
        }
        // The families above cross often enough for the property to mean something.
        assert!(found.get() > 300, "only {} sampled crossings", found.get());
    }

    #[test]
    fn ccd_edge_edge_finds_every_sampled_crossing() {
        let found = Cell::new(0u32);
        let mut runner = deterministic_runner(3000);
        let result = runner.run(&trajectories(), |(start, end)| {
            let orient = |s: f64| orientation(&lerp4(&start, &end, s));
            let cross = |s: f64| segments_cross(&lerp4(&start, &end, s), 1e-4);
            let hit = ccd_edge_edge(start, end, ETA_C);
            if let Some(crossing) = sampled_first_crossing(orient, cross) {
                found.set(found.get() + 1);
                let hit = hit.ok_or_else(|| {
                    TestCaseError::fail(format!("missed the crossing at {crossing}"))
                })?;
                prop_assert!(hit.t <= crossing + 1e-9, "{hit:?} later than {crossing}");
            }
            if let Some(hit) = hit {
                check_hit(&hit, &start, &end, ETA_C);
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{e}");
        }
        assert!(found.get() > 300, "only {} sampled crossings", found.get());
    }

    // -------------------------------------------------------------------------------------------------
    // Contact exactly at the ends of the step, against an independent reference.

    /// Independent distance from `x` to the closed triangle `t` (a degenerate triangle is the union of its
    /// edges): the plane distance when the projection is inside, else the nearest edge.
    fn reference_point_triangle_distance(x: DVec3, t: [DVec3; 3]) -> f64 {
        let n = (t[1] - t[0]).cross(t[2] - t[0]);
        let inside = (0..3).all(|k| {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            n.dot((b - a).cross(x - a)) >= 0.0
        });
        if n.length_squared() > 0.0 && inside {
            return (x - t[0]).dot(n).abs() / n.length();
        }
        (0..3)
            .map(|k| reference_point_segment_distance(x, t[k], t[(k + 1) % 3]))
            .fold(f64::INFINITY, f64::min)
    }

    fn reference_point_segment_distance(x: DVec3, a: DVec3, b: DVec3) -> f64 {
        let e = b - a;
        let l2 = e.length_squared();
        let u = if l2 > 0.0 {
            ((x - a).dot(e) / l2).clamp(0.0, 1.0)
        } else {
            0.0
        };
        (x - (a + u * e)).length()
    }

    /// Independent distance between closed segments: the line–line optimum when it lies inside both, else the
    /// nearest of the four endpoint-to-segment distances (one of them is the minimum otherwise).
    fn reference_segment_distance(p: [DVec3; 2], q: [DVec3; 2]) -> f64 {
        let ends = reference_point_segment_distance(p[0], q[0], q[1])
            .min(reference_point_segment_distance(p[1], q[0], q[1]))
            .min(reference_point_segment_distance(q[0], p[0], p[1]))
            .min(reference_point_segment_distance(q[1], p[0], p[1]));
        let (d1, d2, r) = (p[1] - p[0], q[1] - q[0], q[0] - p[0]);
        let n = d1.cross(d2);
        let n2 = n.length_squared();
        if n2 <= 1e-24 * d1.length_squared() * d2.length_squared() {
            return ends;
        }
        let a = r.cross(d2).dot(n) / n2;
        let b = r.cross(d1).dot(n) / n2;
        if (0.0..=1.0).contains(&a) && (0.0..=1.0).contains(&b) {
            ends.min(((p[0] + a * d1) - (q[0] + b * d2)).length())
        } else {
            ends
        }
    }

    /// Largest distance between any two of the points, start and end: the configuration's size.
    fn extent(start: &[DVec3; 4], end: &[DVec3; 4]) -> f64 {
        let mut l: f64 = 0.0;
        for x in [start, end] {
            for i in 0..4 {
                for j in 0..i {
                    l = l.max((x[i] - x[j]).length());
                }
            }
        }
        l
    }

    /// Touching: the reference distance at the instant is at the round-off level of the configuration's
    /// size (exact contacts, and contacts placed by rounded arithmetic far from the origin).
    fn touching(distance: f64, size: f64) -> bool {
        distance <= 1e-12 * size
    }

    /// Coordinates on a grid of halves in [−1, 1]: exact coincidences, collinear and coplanar configurations,
    /// contacts exactly at `s = 0` and `s = 1`, degenerate cubics.
    fn grid_quad() -> impl Strategy<Value = [DVec3; 4]> {
        let c = || (-2i32..=2).prop_map(|k| f64::from(k) * 0.5);
        prop::array::uniform4((c(), c(), c()).prop_map(|(x, y, z)| DVec3::new(x, y, z)))
    }

    /// Random motion with the first group snapped onto the second at `s = 0` or `s = 1`: the vertex (or an
    /// endpoint of edge `p`, or the middle of edge `p`) placed on a vertex, an edge point or an interior
    /// point of the second group, approaching, leaving, or sliding in the plane.
    fn snapped_trajectories(
        point_triangle: bool,
    ) -> impl Strategy<Value = ([DVec3; 4], [DVec3; 4])> {
        let quad = || prop::array::uniform4(point_strategy(1.0));
        (quad(), quad(), 0..2u8, 0..6u8, 0..3u8).prop_map(
            move |(mut start, mut end, at_end, spot, motion)| {
                let (x, other) = if at_end == 1 {
                    (&mut end, &mut start)
                } else {
                    (&mut start, &mut end)
                };
                let target = if point_triangle {
                    match spot {
                        0 => x[1],
                        1 => 0.5 * (x[1] + x[2]),
                        2 => 0.25 * x[1] + 0.75 * x[3],
                        3 => 0.5 * x[1] + 0.25 * (x[2] + x[3]),
                        4 => (x[1] + x[2] + x[3]) / 3.0,
                        _ => x[3],
                    }
                } else {
                    match spot {
                        0 | 1 => x[2 + usize::from(spot)],
                        2 => 0.5 * (x[2] + x[3]),
                        _ => 0.25 * x[2] + 0.75 * x[3],
                    }
                };
                if point_triangle || spot < 4 {
                    x[0] = target;
                } else {
                    // Edge p crossing edge q at its middle.
                    let half = 0.5 * (x[1] - x[0]);
                    x[0] = target - half;
                    x[1] = target + half;
                }
                match motion {
                    // The second group static: the first group approaches or leaves it alone.
                    0 => {
                        other[1..].copy_from_slice(&x[1..]);
                        if !point_triangle {
                            other[1] = x[1] + (other[0] - x[0]);
                        }
                    }
                    // Everything in the plane z = 0: coplanar throughout.
                    1 => {
                        for p in x.iter_mut().chain(other.iter_mut()) {
                            p.z = 0.0;
                        }
                    }
                    _ => {}
                }
                (start, end)
            },
        )
    }

    /// Checks one query against the reference: a crossing the dense sampler finds mid-step, or a contact
    /// at `s = 0` or `s = 1` (the vertex on the closed triangle, degenerate or not, or the closed edges
    /// meeting, to round-off), must be reported, no later than it happens.
    fn agrees_with_reference(
        start: [DVec3; 4],
        end: [DVec3; 4],
        eta_c: f64,
        point_triangle: bool,
        end_contacts: &Cell<u32>,
    ) -> Result<(), TestCaseError> {
        let size = extent(&start, &end);
        let contact_at = |x: &[DVec3; 4]| {
            if point_triangle {
                touching(
                    reference_point_triangle_distance(x[0], [x[1], x[2], x[3]]),
                    size,
                )
            } else {
                touching(reference_segment_distance([x[0], x[1]], [x[2], x[3]]), size)
            }
        };
        let hit = if point_triangle {
            ccd_point_triangle(start, end, eta_c)
        } else {
            ccd_edge_edge(start, end, eta_c)
        };
        let expected = if contact_at(&start) {
            Some(0.0)
        } else {
            let mid = if point_triangle {
                let orient = |s: f64| {
                    let x = lerp4(&start, &end, s);
                    orientation(&[x[1], x[2], x[3], x[0]])
                };
                sampled_first_crossing(orient, |s| strictly_inside(&lerp4(&start, &end, s), 1e-4))
            } else {
                let orient = |s: f64| orientation(&lerp4(&start, &end, s));
                sampled_first_crossing(orient, |s| segments_cross(&lerp4(&start, &end, s), 1e-4))
            };
            mid.or_else(|| contact_at(&end).then_some(1.0))
        };
        if let Some(s) = expected {
            if s == 0.0 || s == 1.0 {
                end_contacts.set(end_contacts.get() + 1);
            }
            let hit = hit.ok_or_else(|| {
                TestCaseError::fail(format!(
                    "missed the contact at s = {s}: {start:?} -> {end:?}"
                ))
            })?;
            prop_assert!(hit.t <= s + 1e-9, "{hit:?} later than {s}");
        }
        if let Some(hit) = hit {
            check_hit(&hit, &start, &end, eta_c);
        }
        Ok(())
    }

    fn run_against_reference(point_triangle: bool) {
        let end_contacts = Cell::new(0u32);
        let mut runner = deterministic_runner(4000);
        // The snapped motions also shrunk to a millimetre, 3 m from the origin: their contacts then carry
        // the rounding of coordinates much larger than the pair.
        let far = |x: DVec3| x * 1e-3 + DVec3::splat(3.0);
        let cases = prop_oneof![
            (grid_quad(), grid_quad()),
            snapped_trajectories(point_triangle),
            snapped_trajectories(point_triangle).prop_map(move |(a, b)| (a.map(far), b.map(far))),
        ];
        let result = runner.run(&cases, |(start, end)| {
            let eta_c = ETA_C * extent(&start, &end);
            agrees_with_reference(start, end, eta_c, point_triangle, &end_contacts)
        });
        if let Err(e) = result {
            panic!("{e}");
        }
        assert!(
            end_contacts.get() > 1000,
            "only {} contacts at s = 0 or s = 1",
            end_contacts.get()
        );
    }

    #[test]
    fn ccd_point_triangle_reports_exact_contact_at_both_ends() {
        run_against_reference(true);
    }

    #[test]
    fn ccd_edge_edge_reports_exact_contact_at_both_ends() {
        run_against_reference(false);
    }
}

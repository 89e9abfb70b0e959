//! Detection of listed candidate tests: the box pre-tests that skip most of them, exact CCD, and
//! the parallel pass that flags each test in list order.
#![deny(unsafe_code)]

use super::*;
use crate::runtime::executor::parallel_here;

/// Candidates per parallel detection task (fixed, so the work split does not
/// depend on the thread count; each flag depends on its candidate alone).
pub(super) const DETECT_CHUNK: usize = 1024;
/// Below this many candidates detection runs on the calling thread.
pub(super) const DETECT_PARALLEL_MIN: usize = 4096;

/// Sets `found[k] = test(&candidates[k])` for every candidate, in parallel
/// chunks from [`DETECT_PARALLEL_MIN`] candidates. True if `found` had to grow
/// (a pool overflow).
pub(super) fn detect_parallel(
    candidates: &[Candidate],
    found: &mut ArenaVec<'_, bool>,
    test: impl Fn(&Candidate) -> bool + Sync,
) -> bool {
    let capacity = found.capacity();
    found.clear();
    found.resize(candidates.len(), false);
    let run = |(out, cs): (&mut [bool], &[Candidate])| {
        for (f, c) in out.iter_mut().zip(cs) {
            *f = test(c);
        }
    };
    if candidates.len() >= DETECT_PARALLEL_MIN && parallel_here() {
        found
            .as_mut_slice()
            .par_chunks_mut(DETECT_CHUNK)
            .zip(candidates.par_chunks(DETECT_CHUNK))
            .for_each(run);
    } else {
        run((found.as_mut_slice(), candidates));
    }
    found.capacity() != capacity
}

/// The box margin that makes [`near`] a conservative pre-test of a contact
/// closer than `eta` (m). Edge–edge: the segments' closest points are within
/// `eta`, so their boxes grown by `eta` overlap. Point–triangle
/// ([`proximity_point_triangle`]): the point is within `eta` of the plane and
/// its projection `q = Σ w_k x_k` has barycentric weights in `[−δ, 1 + δ]`,
/// `δ = eta / L` (L the longest edge). On any axis `q − max_k x_k = Σ w_k (x_k − max)`,
/// at most the sum of the negative weights' magnitudes times the triangle's extent
/// on that axis; that sum is at most δ (one negative weight is ≥ −δ; with two, the
/// third is `1 + |w_a| + |w_b| ≤ 1 + δ`), and the extent is at most L, so `q` lies
/// within `δ L = eta` of the triangle's box (below its minimum likewise), and the
/// point within `eta` of `q`: `2 eta` in all. A sliver's CCD contact
/// (`ccd::degenerate_triangle_hit`) is within `eta` of the solid triangle, inside
/// that. Grown by 1 % and 1 µm for f32/f64 rounding.
pub(super) fn margin(kind: Kind, eta: f64) -> f32 {
    let k = match kind {
        Kind::PointTriangle => 2.0,
        Kind::EdgeEdge => 1.0,
    };
    (k * 1.01 * eta + 1e-6) as f32
}

/// True unless the axis-aligned boxes of the points `a` and of the points `b`
/// are more than `margin` apart on some axis.
#[inline]
pub(super) fn near(a: &[Vec3], b: &[Vec3], margin: f32) -> bool {
    let bounds = |p: &[Vec3]| {
        p.iter().fold(
            (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
            |(lo, hi), x| (lo.min(*x), hi.max(*x)),
        )
    };
    let (alo, ahi) = bounds(a);
    let (blo, bhi) = bounds(b);
    (alo - margin).cmple(bhi).all() && (blo - margin).cmple(ahi).all()
}

/// η of candidate `c`: `eta` plus the largest `extra` thickness of its cloth vertices (the
/// first `n` of the space: 0 for one cloth, a member's excess over the thinnest member in a
/// shared stage, [`Members`]) plus the largest of its obstacle vertices
/// ([`ClothCollision::set_obstacle_thickness`]).
pub(super) fn pair_eta(extra: &[f32], n: usize, c: &Candidate, eta: f32) -> f32 {
    let (mut cloth, mut obstacle) = (0.0f32, 0.0f32);
    for &v in &c.verts {
        let e = extra[v as usize];
        if (v as usize) < n {
            cloth = cloth.max(e);
        } else {
            obstacle = obstacle.max(e);
        }
    }
    eta + cloth + obstacle
}

/// Conservative pre-test of [`ccd`]: a contact within `eta_c` at an instant
/// of the linear motion `start → end` lies inside both sides' swept boxes
/// (every position along a linear motion is inside the box of its ends), so
/// disjoint swept boxes grown by [`margin`] mean no hit. Skips the coplanarity
/// cubic for most candidates without changing any result.
#[inline]
pub(super) fn swept_near(kind: Kind, start: &[Vec3; 4], end: &[Vec3; 4], eta_c: f64) -> bool {
    let split = kind.split();
    let a = [start[0], end[0], start[1], end[1]];
    let b = [start[1], end[1], start[2], end[2], start[3], end[3]];
    let m = margin(kind, eta_c);
    if split == 1 {
        near(&a[..2], &b, m)
    } else {
        near(&a, &b[2..], m)
    }
}

/// Conservative pre-test of [`ccd`] for features that stay apart: true when the features are
/// farther apart at the start than their relative motion can close to a contact within `eta_c`.
///
/// The distance between the two sides is 1-Lipschitz in their relative displacement: at time
/// `t` every point of side A (a convex combination of its vertices) has moved by the same
/// combination of their displacements `d_i`, and likewise on side B, so any pair of points
/// has come closer by at most `t max_{i,j} |d_i − d_j|` (`i` over A's vertices, `j` over B's).
/// A hit at time `s` needs the features within `2 eta_c` of each other: an edge–edge hit within
/// `eta_c` ([`proximity_edge_edge`]); a point–triangle hit within `eta_c` of the plane with the
/// projection's negative weights summing to at most `δ = eta_c / L` (see [`margin`]), which puts
/// it within `δ L = eta_c` of the solid triangle, `2 eta_c` in all (a sliver's hit: within `eta_c`).
/// So a start distance beyond `2 eta_c` plus that largest relative displacement (grown by 1 %
/// and 1 nm for rounding) excludes every hit, and the costly root isolation of near-coplanar
/// neighbours moving together is skipped without changing any result. NaN never excludes.
///
/// The start distance is first bounded from below by the sides' bounding spheres
/// ([`distance_lower_bound`]); only when that bound is too small to decide is the exact closest
/// pair computed. The cheap bound decides only beyond [`BOUND_SLACK`] more than the threshold,
/// so every answer is the one the exact distance alone gives.
#[inline]
pub(super) fn stay_apart(kind: Kind, start: &[DVec3; 4], end: &[DVec3; 4], eta_c: f64) -> bool {
    let (closing, limit) = closing_and_limit(kind, start, end, eta_c);
    if distance_lower_bound(kind, start) - closing > limit + BOUND_SLACK {
        return true;
    }
    let distance = match kind {
        Kind::PointTriangle => {
            let (closest, _) = closest_point_triangle(start[0], [start[1], start[2], start[3]]);
            (start[0] - closest).length()
        }
        Kind::EdgeEdge => {
            closest_points_edge_edge([start[0], start[1]], [start[2], start[3]]).distance
        }
    };
    distance - closing > limit
}

/// The cheap half of [`stay_apart`]: true when [`distance_lower_bound`] alone shows the features
/// farther apart at the start than their relative motion can close to a contact within `eta_c`
/// (a true answer is one [`stay_apart`] gives too).
/// `bound` is [`distance_lower_bound`] at `start`, computed once by the caller.
#[inline]
pub(super) fn apart_by_bound(
    kind: Kind,
    bound: f64,
    start: &[DVec3; 4],
    end: &[DVec3; 4],
    eta_c: f64,
) -> bool {
    let (closing, limit) = closing_and_limit(kind, start, end, eta_c);
    bound - closing > limit + BOUND_SLACK
}

/// The largest relative displacement of the two sides of a test from `start` to `end`, and the
/// distance within which a CCD hit at `eta_c` lies ([`stay_apart`]).
#[inline]
pub(super) fn closing_and_limit(
    kind: Kind,
    start: &[DVec3; 4],
    end: &[DVec3; 4],
    eta_c: f64,
) -> (f64, f64) {
    let split = kind.split();
    let d: [DVec3; 4] = std::array::from_fn(|k| end[k] - start[k]);
    let mut closing = 0.0f64;
    for a in &d[..split] {
        for b in &d[split..] {
            closing = closing.max((*a - *b).length_squared());
        }
    }
    (closing.sqrt(), ccd_limit(eta_c))
}

/// The distance within which a CCD hit at `eta_c` lies, grown for rounding ([`stay_apart`]).
#[inline]
pub(super) fn ccd_limit(eta_c: f64) -> f64 {
    2.0 * 1.01 * eta_c + 1e-9
}

/// How far (m) beyond a threshold [`distance_lower_bound`] must lie before it decides a
/// pre-test alone: it covers the rounding of the bound and of the exact distance it stands in
/// for (both in `f64` on `f32` positions, errors of order 1e-15 m per metre of coordinate).
pub(super) const BOUND_SLACK: f64 = 1e-7;

/// A lower bound of the distance between the two sides of a test at positions `q` (`[point,
/// tri0, tri1, tri2]` or `[p0, p1, q0, q1]`): the gap between the sides' projections on the
/// axis `u` joining their centres (a triangle's centroid, an edge's midpoint). Every point of a
/// side projects between its vertices' projections, and two points' distance is at least the
/// distance of their projections on a unit axis, so the sides are at least that gap apart
/// (a separating-axis bound). Point–triangle: `min_k u · (p − x_k)`; edge–edge, with `m` from
/// one midpoint to the other: `|m| − (|u · e_p| + |u · e_q|) / 2` for the edge vectors `e`.
/// A few products and one square root, against the exact closest pair's case analysis; it
/// separates the features a cloth's spacing keeps apart (a vertex and the triangle next to
/// it, two parallel edges of a row), which are most listed tests. Negative when the sides'
/// projections overlap; NaN when the centres coincide or an input is NaN (a comparison with
/// it then decides nothing).
#[inline]
pub(super) fn distance_lower_bound(kind: Kind, q: &[DVec3; 4]) -> f64 {
    match kind {
        Kind::PointTriangle => {
            let m = q[0] - (q[1] + q[2] + q[3]) / 3.0;
            let gap = m
                .dot(q[0] - q[1])
                .min(m.dot(q[0] - q[2]))
                .min(m.dot(q[0] - q[3]));
            gap / m.length()
        }
        Kind::EdgeEdge => {
            let m = 0.5 * ((q[2] + q[3]) - (q[0] + q[1]));
            let len = m.length();
            len - 0.5 * (m.dot(q[1] - q[0]).abs() + m.dot(q[3] - q[2]).abs()) / len
        }
    }
}

/// The screen's allowance for its own rounding relative to `D² / L` ([`screened_lower_bound`]):
/// 2⁻¹⁴, over ten times the 82 u₃₂ the analysis needs (u₃₂ = 2⁻²⁴).
const SCREEN_QUADRATIC: f32 = 1.0 / 16384.0;
/// Its allowance relative to `D`: 2⁻¹⁷ (32 u₃₂, over the 10 u₃₂ needed, with the rounding of
/// the allowance itself and of the final subtraction).
const SCREEN_LINEAR: f32 = 1.0 / 131_072.0;
/// Its allowance for the `f64` computation's rounding, relative to `X D / L` (`X` the largest
/// coordinate): 2⁻⁴⁰, over thirty times the 252 u₆₄ needed (u₆₄ = 2⁻⁵³).
const SCREEN_F64: f32 = 1.0 / 1_099_511_627_776.0;
/// Below this `L` (m) the screen decides nothing: the bound is then below `L / 2`, far under
/// every threshold, and no product can underflow to distort the analysis.
const SCREEN_MIN_LENGTH: f32 = 1.0 / 1_099_511_627_776.0;
/// The screens' absolute allowance (m) for products that underflow: 2⁻⁴⁰.
const SCREEN_UNDERFLOW: f32 = 1.0 / 1_099_511_627_776.0;
/// √3 rounded up: the largest component of a vector times this bounds its length.
const SQRT_3_UP: f32 = 1.732_051;

/// Bounds, computed in `f32`, of what [`distance_lower_bound`] computes in `f64` at the same
/// positions `q`: the screen that decides most tests before the `f64` bound
/// (`docs/methods/collision-detection.md`, *An `f32` screen before the bound*). The same bound
/// written from differences of the positions, `b̂`, less and plus an allowance `E` for the
/// rounding of both computations: `E = 2⁻¹⁴ D² / L + 2⁻¹⁷ D + 2⁻⁴⁰ X D / L`, with `D` an upper
/// bound of the differences' lengths, `L` the length of the axis vector and `X` (`coord`) at
/// least the largest coordinate magnitude of `q`. The lower end always holds; the upper end is
/// `+∞` unless `L ≥ 2⁻¹⁷ D` and `L ≥ 2⁻⁴⁰ X`, where the analysis bounds the error both ways.
/// NaN (no comparison decides) for a NaN input or `L` below [`SCREEN_MIN_LENGTH`].
#[inline]
pub(super) fn screened_bounds(kind: Kind, q: &[Vec3; 4], coord: f32) -> (f32, f32) {
    // Per kind: the length of the axis vector `m` (three times the point's offset from the
    // centroid, twice the offset between the midpoints), the bound, and the largest component
    // of the differences it is computed from.
    let (len, bound, reach) = match kind {
        Kind::PointTriangle => {
            let d = [q[0] - q[1], q[0] - q[2], q[0] - q[3]];
            let m = d[0] + d[1] + d[2];
            let len = m.length();
            let gap = smaller(smaller(m.dot(d[0]), m.dot(d[1])), m.dot(d[2]));
            (len, gap / len, largest_component(&d))
        }
        Kind::EdgeEdge => {
            let (a, c, d) = (q[1] - q[0], q[2] - q[0], q[3] - q[0]);
            let e = q[3] - q[2];
            let m = (c + d) - a;
            let len = m.length();
            let spread = m.dot(a).abs() + m.dot(e).abs();
            (
                len,
                0.5 * (len - spread / len),
                largest_component(&[a, c, d, e]),
            )
        }
    };
    if len.is_nan() || len < SCREEN_MIN_LENGTH {
        return (f32::NAN, f32::NAN);
    }
    let d = SQRT_3_UP * reach;
    let allowance =
        SCREEN_QUADRATIC * d * d / len + SCREEN_LINEAR * d + SCREEN_F64 * coord * d / len;
    let both_ways = len >= SCREEN_LINEAR * d && len >= SCREEN_F64 * coord;
    let upper = if both_ways {
        bound + allowance
    } else {
        f32::INFINITY
    };
    (bound - allowance, upper)
}

/// The larger of `a` and `b` by one comparison (`b` when either is NaN): the screens' maximum,
/// without [`f32::max`]'s NaN handling (a NaN input already makes the screen decide nothing).
#[inline]
fn larger(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

/// The smaller of `a` and `b` by one comparison (`b` when either is NaN).
#[inline]
fn smaller(a: f32, b: f32) -> f32 {
    if a < b { a } else { b }
}

/// The largest component magnitude of the vectors `v`.
#[inline]
fn largest_component(v: &[Vec3]) -> f32 {
    v.iter().fold(0.0, |m, x| {
        let a = x.abs();
        larger(larger(larger(m, a.x), a.y), a.z)
    })
}

/// The largest coordinate magnitude of the points `x` (the screen's `X`, [`screened_lower_bound`]).
pub(super) fn largest_coordinate(x: &[Vec3]) -> f32 {
    largest_component(x)
}

/// Bounds, computed in `f32`, of the largest relative displacement that [`stay_apart`]
/// computes in `f64` for a test moving from `start` to `end`: the same maximum in `f32` less and
/// plus 2⁻¹⁷ times the largest displacement component (the rounding of both, about 9 u₃₂ and
/// 9 u₆₄ of the largest displacement, times √3) and 2⁻⁴⁰ m (products that underflow).
#[inline]
pub(super) fn screened_closing(kind: Kind, start: &[Vec3; 4], end: &[Vec3; 4]) -> (f32, f32) {
    let split = kind.split();
    let d: [Vec3; 4] = std::array::from_fn(|k| end[k] - start[k]);
    let mut closing = 0.0f32;
    for a in &d[..split] {
        for b in &d[split..] {
            closing = larger(closing, (*a - *b).length_squared());
        }
    }
    let closing = closing.sqrt();
    let allowance = SCREEN_LINEAR * SQRT_3_UP * largest_component(&d) + SCREEN_UNDERFLOW;
    (closing - allowance, closing + allowance)
}

/// The largest `f32` at or below `x` (positive finite), rounding downwards: a screen value
/// strictly below it is below `x`.
#[inline]
pub(super) fn f32_at_most(x: f64) -> f32 {
    let y = x as f32;
    if f64::from(y) > x {
        // For a positive `f32`, the next one down has the previous bit pattern.
        f32::from_bits(y.to_bits() - 1)
    } else {
        y
    }
}

/// The smallest `f32` strictly above `x`'s `f32` rounding upwards, for a positive finite `x`
/// (a threshold): a screen that passes it passes only values above `x` even after the `f64`
/// side's last rounding.
#[inline]
pub(super) fn f32_above(x: f64) -> f32 {
    // For a non-negative finite `f32`, the next one up has the next bit pattern.
    let next_up = |y: f32| f32::from_bits(y.to_bits() + 1);
    let y = x as f32;
    let up = if f64::from(y) < x { next_up(y) } else { y };
    next_up(up)
}

/// Conservative pre-test of the proximity tests ([`proximity_point_triangle`],
/// [`proximity_edge_edge`]) at positions `p`: true when the sides' bounding spheres are farther
/// apart than [`margin`] (plus [`BOUND_SLACK`]), beyond which neither test can accept (a
/// point–triangle contact lies within `2 eta` of the solid triangle, an edge–edge one within
/// `eta`; the derivation at [`margin`]).
#[inline]
pub(super) fn surely_far(kind: Kind, p: &[DVec3; 4], eta: f64) -> bool {
    far_by_bound(kind, distance_lower_bound(kind, p), eta)
}

/// [`surely_far`] from the [`distance_lower_bound`] `bound`, computed once by the caller.
#[inline]
pub(super) fn far_by_bound(kind: Kind, bound: f64, eta: f64) -> bool {
    bound > f64::from(margin(kind, eta)) + BOUND_SLACK
}

/// Whether a stencil moving from `start` to `end` collides within `eta_c`: the cheap swept-box
/// test, the start-distance test ([`stay_apart`]), then CCD.
pub(super) fn collides(kind: Kind, start: &[Vec3; 4], end: &[Vec3; 4], eta_c: f64) -> bool {
    if !swept_near(kind, start, end, eta_c) {
        return false;
    }
    let (start, end) = (start.map(Vec3::as_dvec3), end.map(Vec3::as_dvec3));
    !stay_apart(kind, &start, &end, eta_c) && ccd(kind, start, end, eta_c).is_some()
}

pub(super) fn ccd(kind: Kind, start: [DVec3; 4], end: [DVec3; 4], eta_c: f64) -> Option<CcdHit> {
    match kind {
        Kind::PointTriangle => ccd_point_triangle(start, end, eta_c),
        Kind::EdgeEdge => ccd_edge_edge(start, end, eta_c),
    }
}

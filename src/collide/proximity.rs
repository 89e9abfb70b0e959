//! Static proximity queries between cloth primitives: point–triangle and edge–edge.
//!
//! These are the exact geometric tests of Bridson, Fedkiw & Anderson 2002 (`docs/methods/bridson-collisions.md` §3.4–§3.5),
//! in `f64`. The repulsion stage runs them at the start-of-step positions x^n with the cloth thickness η;
//! the CCD ([`super::ccd`]) runs them at each coplanar instant with a small tolerance.
//!
//! # Conventions
//!
//! * **Sides and normal.** A query has a *first argument* (the point, or edge `p`) and a *second argument*
//!   (the triangle, or edge `q`). Every reported normal is a unit vector pointing **from the second argument
//!   toward the first** (from the triangle toward the point; from edge `q` toward edge `p`). This is the
//!   `docs/methods/bridson-collisions.md` §3.6 convention with "first side" = triangle / edge `q` and "second side" = point / edge `p`,
//!   so a positive relative normal velocity means separation.
//! * **Weights.** Point–triangle weights `w` are barycentric coordinates of the projection of the point onto
//!   the triangle's plane, `Σ w_k = 1`. Edge–edge parameters are `a` on `p` and `b` on `q`:
//!   `p(a) = p0 + a (p1 − p0)`, `q(b) = q0 + b (q1 − q0)`, both in `[0, 1]`.
//!
//! # Derivations
//!
//! **Point–triangle (`docs/methods/bridson-collisions.md` (3.6)).** With `x13 = x1 − x3`, `x23 = x2 − x3`, `x43 = x4 − x3` the normal
//! equations `G w = r` have Gram matrix `G = [x13·x13, x13·x23; x13·x23, x23·x23]` and determinant
//! `det G = |x13 × x23|² = |n|²`. Cramer's rule gives `w1 = (x23·x23 · x13·x43 − x13·x23 · x23·x43) / det G`;
//! by Lagrange's identity `(a·c)(b·d) − (a·d)(b·c) = (a×b)·(c×d)` the two numerators are
//! `n·(x43 × x23)` and `n·(x13 × x43)`. Evaluating them as cross products avoids the cancellation in
//! `AC − B²`, which loses `1/sin²θ` digits on thin triangles; the result is the same solution of (3.6).
//!
//! **Characteristic length** (`docs/methods/bridson-collisions.md`). The inside test accepts `w_k ∈ [−δ, 1 + δ]` with
//! `δ = η / L_char`. We take `L_char` = the **longest edge**. A weight `w_k` equals the signed distance of the
//! projection to the opposite edge's line divided by the altitude `h_k`, and every altitude is at most the
//! longest edge, so the accepted band reaches at most `δ·h_k ≤ η` beyond any edge line: the test never
//! accepts a point farther than η outside an edge. (`√area` would let the band grow beyond η for the long
//! altitudes of a sliver.) Points near an edge or corner but outside the band are left to the edge–edge tests
//! between the point's edges and the triangle's edges, as `docs/methods/bridson-collisions.md` §3.4 prescribes.
//!
//! **Edge–edge (`docs/methods/bridson-collisions.md` (3.7))** with the clamping procedure of §3.5 (): the squared distance
//! is a convex quadratic on the unit square; the sequence *line–line optimum of `a`, clamp; best `b` for that
//! `a`; if `b` was clamped, best `a` for the clamped `b`* returns a minimiser. Parallel edges
//! (`|x21 × x43|² ≤ PARALLEL_SIN2 · A · C`, a round-off tolerance) take `a = 0`, which is optimal for parallel
//! lines, and continue with the same clamping. Zero-length edges reduce to point–segment and point–point
//! through the same sequence (the division that would be by zero is skipped and its parameter set to 0;
//! a zero-length `q` counts as `b` clamped to 0, so `a` is then re-optimised).
#![deny(unsafe_code)]

use glam::DVec3;

/// Triangles whose altitude onto their longest edge is below this fraction of that edge are slivers:
/// (`docs/methods/bridson-collisions.md` (3.6)) is singular for them, and [`proximity_point_triangle`] rejects them (the edge–edge
/// tests against the triangle's edges cover them).
pub const MIN_RELATIVE_ALTITUDE: f64 = 1e-8;

/// Two edges are parallel when `sin²` of their angle is at most this (`|x21 × x43|² ≤ PARALLEL_SIN2 · A · C`,
/// `docs/methods/bridson-collisions.md` §3.5 step 1): a round-off tolerance. The cross product and the numerator of (3.7) are evaluated
/// as cross products, accurate to a few ulps of `|x21||x43|`, so the line–line solve is meaningful down to
/// `sin θ` of a few `f64::EPSILON`; this threshold (`sin θ ≤ 1e-12`) sits about a thousand times above that.
/// Taking `a = 0` for parallel edges then costs at most `sin θ · |x21|` ≈ `1e-12 |x21|` of distance.
pub const PARALLEL_SIN2: f64 = 1e-24;

/// When two closest points are closer than this fraction of the edges' length scale their difference has
/// no reliable direction, and [`closest_points_edge_edge`] falls back to the edges' cross product for the
/// normal.
pub const COINCIDENT_RELATIVE: f64 = 1e-12;

/// A point close to a triangle: the result of [`proximity_point_triangle`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PointTriangleProximity {
    /// Distance from the point to the triangle's plane, along the normal (m). Equals the Euclidean distance
    /// to the triangle when all weights are in `[0, 1]`.
    pub distance: f64,
    /// Barycentric weights of the point's projection onto the plane, `Σ w_k = 1`; each in `[−δ, 1 + δ]`.
    pub weights: [f64; 3],
    /// Unit triangle normal, oriented from the triangle toward the point (the triangle's winding normal
    /// `(x2 − x1) × (x3 − x1)` when the point lies exactly in the plane).
    pub normal: DVec3,
}

/// Closest points of two edges: the result of [`closest_points_edge_edge`] and [`proximity_edge_edge`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EdgeEdgeProximity {
    /// Distance between the closest points `p(a)` and `q(b)` (m).
    pub distance: f64,
    /// Parameter of the closest point on edge `p`, in `[0, 1]`: `p(a) = p0 + a (p1 − p0)`.
    pub a: f64,
    /// Parameter of the closest point on edge `q`, in `[0, 1]`: `q(b) = q0 + b (q1 − q0)`.
    pub b: f64,
    /// Unit vector from edge `q` toward edge `p`: `(p(a) − q(b)) / distance`. When the closest points
    /// coincide (to [`COINCIDENT_RELATIVE`]), `(p1 − p0) × (q1 − q0)` normalised; when the edges are also
    /// parallel, an arbitrary unit vector perpendicular to them.
    pub normal: DVec3,
}

/// Point–triangle proximity: is `p` within `eta` of triangle `tri`? Bridson 2002, `docs/methods/bridson-collisions.md` (3.6).
///
/// Symbols: `tri = [x1, x2, x3]`, `p = x4`, `eta = η` (m). The pair is close when the distance along the unit
/// normal is `< eta` (plane test) and every barycentric weight of the projection, solved from (3.6), lies in
/// `[−δ, 1 + δ]` with `δ = eta / L_char`, `L_char` = the longest edge (see the module doc for the reason).
///
/// Departures: sliver triangles (altitude below [`MIN_RELATIVE_ALTITUDE`] times the longest edge, including
/// zero-area ones) return `None` instead of solving a singular (3.6); the weights are not clamped, so inside
/// the δ band one of them may be slightly negative, as in the paper.
///
/// Returns `None` for `eta ≤ 0` or non-finite input.
#[must_use]
pub fn proximity_point_triangle(
    p: DVec3,
    tri: [DVec3; 3],
    eta: f64,
) -> Option<PointTriangleProximity> {
    let [x1, x2, x3] = tri;
    let x13 = x1 - x3;
    let x23 = x2 - x3;
    let x43 = p - x3;
    let longest2 = x13
        .length_squared()
        .max(x23.length_squared())
        .max((x2 - x1).length_squared());
    let n = x13.cross(x23);
    let n2 = n.length_squared();
    let min_n = MIN_RELATIVE_ALTITUDE * longest2;
    if n2.is_nan() || n2 <= min_n * min_n {
        return None;
    }
    let n_len = n2.sqrt();
    let n_hat = n / n_len;
    let signed = x43.dot(n_hat);
    if signed.is_nan() || signed.abs() >= eta {
        return None;
    }
    let w1 = n.dot(x43.cross(x23)) / n2;
    let w2 = n.dot(x13.cross(x43)) / n2;
    let w3 = 1.0 - w1 - w2;
    let delta = eta / longest2.sqrt();
    let inside = |w: f64| (-delta..=1.0 + delta).contains(&w);
    if !(inside(w1) && inside(w2) && inside(w3)) {
        return None;
    }
    // n = x13 × x23 = (x1 − x3) × (x2 − x3) = (x2 − x1) × (x3 − x1): the winding normal.
    let normal = if signed >= 0.0 { n_hat } else { -n_hat };
    Some(PointTriangleProximity {
        distance: signed.abs(),
        weights: [w1, w2, w3],
        normal,
    })
}

/// Closest point to `p` on segment `seg = [s0, s1]`, and its parameter `t ∈ [0, 1]`
/// (`point = s0 + t (s1 − s0)`). A zero-length segment returns `(s0, 0)`.
#[must_use]
#[inline]
pub fn closest_point_segment(p: DVec3, seg: [DVec3; 2]) -> (DVec3, f64) {
    let e = seg[1] - seg[0];
    let len2 = e.length_squared();
    let t = if len2 > 0.0 {
        ((p - seg[0]).dot(e) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    (seg[0] + t * e, t)
}

/// Exact closest point to `p` on the solid triangle `tri`, with its barycentric weights
/// (`point = Σ w_k tri[k]`, `w_k ≥ 0`, `Σ w_k = 1`).
///
/// If the projection onto the plane lies inside the triangle (barycentric weights from the cross-product form
/// of `docs/methods/bridson-collisions.md` (3.6), all `≥ 0`) it is the answer; otherwise the closest point lies on the boundary and is the
/// nearest of the three edges' closest points (Voronoi regions of the edges and vertices). Sliver and
/// degenerate triangles (altitude below [`MIN_RELATIVE_ALTITUDE`] times the longest edge) are treated as the
/// union of their edges, which is exact for zero area.
#[must_use]
pub fn closest_point_triangle(p: DVec3, tri: [DVec3; 3]) -> (DVec3, [f64; 3]) {
    let [x1, x2, x3] = tri;
    let x13 = x1 - x3;
    let x23 = x2 - x3;
    let x43 = p - x3;
    let longest2 = x13
        .length_squared()
        .max(x23.length_squared())
        .max((x2 - x1).length_squared());
    let n = x13.cross(x23);
    let n2 = n.length_squared();
    let min_n = MIN_RELATIVE_ALTITUDE * longest2;
    if n2 > min_n * min_n {
        let w1 = n.dot(x43.cross(x23)) / n2;
        let w2 = n.dot(x13.cross(x43)) / n2;
        let w3 = 1.0 - w1 - w2;
        if w1 >= 0.0 && w2 >= 0.0 && w3 >= 0.0 {
            return (w1 * x1 + w2 * x2 + w3 * x3, [w1, w2, w3]);
        }
    }
    // Boundary: edges (x1, x2), (x2, x3), (x3, x1).
    let (c12, t12) = closest_point_segment(p, [x1, x2]);
    let (c23, t23) = closest_point_segment(p, [x2, x3]);
    let (c31, t31) = closest_point_segment(p, [x3, x1]);
    let d12 = (p - c12).length_squared();
    let d23 = (p - c23).length_squared();
    let d31 = (p - c31).length_squared();
    if d12 <= d23 && d12 <= d31 {
        (c12, [1.0 - t12, t12, 0.0])
    } else if d23 <= d31 {
        (c23, [0.0, 1.0 - t23, t23])
    } else {
        (c31, [t31, 0.0, 1.0 - t31])
    }
}

/// Closest points of edges `p = [p0, p1]` and `q = [q0, q1]`. Bridson 2002, `docs/methods/bridson-collisions.md` (3.7),
/// with the clamping procedure of `docs/methods/bridson-collisions.md` §3.5.
///
/// Symbols: `p0, p1, q0, q1 = x1, x2, x3, x4`; `A = x21·x21`, `B = x21·x43`, `C = x43·x43`,
/// `D = x21·x31`, `E = x43·x31`, `Γ = |x21 × x43|²`. Steps: `a = clamp((CD − BE)/Γ)` (or `a = 0` when the
/// edges are parallel, `Γ ≤ PARALLEL_SIN2·A·C`); `b = (aB − E)/C`; if `b < 0` then `b = 0`,
/// `a = clamp(D/A)`; if `b > 1` then `b = 1`, `a = clamp((D + B)/A)`.
///
/// Departures: `Γ` and `CD − BE` are evaluated as cross products (`|x21 × x43|²` and
/// `(x21 × x43)·(x31 × x43)`, Lagrange's identity), not by subtraction, which would cancel for nearly
/// parallel edges; a division by a zero
/// `A` or `C` (zero-length edge) is replaced by parameter 0, which makes the procedure point–segment or
/// point–point. The normal points from `q` toward `p` (the brief's convention; `docs/methods/bridson-collisions.md` §3.5 states the
/// opposite direction, `q − p`), see [`EdgeEdgeProximity::normal`] for the coincident and parallel fallbacks.
#[must_use]
pub fn closest_points_edge_edge(p: [DVec3; 2], q: [DVec3; 2]) -> EdgeEdgeProximity {
    let x21 = p[1] - p[0];
    let x43 = q[1] - q[0];
    let x31 = q[0] - p[0];
    let a_ = x21.length_squared();
    let b_ = x21.dot(x43);
    let c_ = x43.length_squared();
    let d_ = x21.dot(x31);
    let e_ = x43.dot(x31);
    let cross = x21.cross(x43);
    let gamma = cross.length_squared();

    // Step 1: line–line optimum of `a`, clamped (any `a` is optimal for parallel lines).
    // `CD − BE = (x21 × x43)·(x31 × x43)` (Lagrange's identity), evaluated without cancellation.
    let mut a = if gamma > PARALLEL_SIN2 * a_ * c_ && gamma > 0.0 {
        (cross.dot(x31.cross(x43)) / gamma).clamp(0.0, 1.0)
    } else {
        0.0
    };
    // Step 2: best `b` for that `a`. A zero-length `q` has only `b = 0`, treated as clamped below.
    let mut b = if c_ > 0.0 { (a * b_ - e_) / c_ } else { -1.0 };
    // Step 3: if `b` leaves [0, 1], clamp it and take the best `a` for the clamped `b`.
    if b < 0.0 {
        b = 0.0;
        a = if a_ > 0.0 {
            (d_ / a_).clamp(0.0, 1.0)
        } else {
            0.0
        };
    } else if b > 1.0 {
        b = 1.0;
        a = if a_ > 0.0 {
            ((d_ + b_) / a_).clamp(0.0, 1.0)
        } else {
            0.0
        };
    }

    let pa = p[0] + a * x21;
    let qb = q[0] + b * x43;
    let diff = pa - qb;
    let distance = diff.length();
    let scale = a_.max(c_).max(x31.length_squared()).sqrt();
    let normal = if distance > COINCIDENT_RELATIVE * scale {
        diff / distance
    } else if gamma > PARALLEL_SIN2 * a_ * c_ && gamma > 0.0 {
        cross / gamma.sqrt()
    } else if a_ >= c_ && a_ > 0.0 {
        x21.any_orthonormal_vector()
    } else if c_ > 0.0 {
        x43.any_orthonormal_vector()
    } else {
        DVec3::Z
    };
    EdgeEdgeProximity {
        distance,
        a,
        b,
        normal,
    }
}

/// Edge–edge proximity: the closest points of `p` and `q` ([`closest_points_edge_edge`], `docs/methods/bridson-collisions.md`
/// eq. 3.7) when they are closer than `eta` (m). Bridson 2002, `docs/methods/bridson-collisions.md` (3.7).
///
/// Returns `None` for `eta ≤ 0` or non-finite input.
#[must_use]
pub fn proximity_edge_edge(p: [DVec3; 2], q: [DVec3; 2], eta: f64) -> Option<EdgeEdgeProximity> {
    let prox = closest_points_edge_edge(p, q);
    (prox.distance < eta).then_some(prox)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::SplitMix64 as Rng;

    /// Minimiser of a convex function on `[lo, hi]` by ternary search.
    fn ternary_min(mut lo: f64, mut hi: f64, f: impl Fn(f64) -> f64) -> f64 {
        for _ in 0..100 {
            let m1 = lo + (hi - lo) / 3.0;
            let m2 = hi - (hi - lo) / 3.0;
            if f(m1) <= f(m2) {
                hi = m2;
            } else {
                lo = m1;
            }
        }
        0.5 * (lo + hi)
    }

    /// Brute force: closest point of the solid triangle by nested ternary search over
    /// `x1 + u (x2 − x1) + v (x3 − x1)`, `u ∈ [0, 1]`, `v ∈ [0, 1 − u]` (the partial minimum over `v` of a
    /// jointly convex function is convex in `u`), plus the best of a dense barycentric grid.
    fn brute_point_triangle(p: DVec3, tri: [DVec3; 3]) -> (DVec3, f64) {
        let e1 = tri[1] - tri[0];
        let e2 = tri[2] - tri[0];
        let at = |u: f64, v: f64| tri[0] + u * e1 + v * e2;
        let best_v = |u: f64| ternary_min(0.0, 1.0 - u, |v| (p - at(u, v)).length_squared());
        let u = ternary_min(0.0, 1.0, |u| (p - at(u, best_v(u))).length_squared());
        let mut best = at(u, best_v(u));
        let n = 60;
        for i in 0..=n {
            for j in 0..=n - i {
                let c = at(i as f64 / n as f64, j as f64 / n as f64);
                if (p - c).length_squared() < (p - best).length_squared() {
                    best = c;
                }
            }
        }
        (best, (p - best).length())
    }

    /// Brute force: closest pair of two segments by nested ternary search plus a dense grid; returns the
    /// difference `p(a) − q(b)`, which is unique even when `(a, b)` is not.
    fn brute_edge_edge(p: [DVec3; 2], q: [DVec3; 2]) -> DVec3 {
        let pa = |a: f64| p[0] + a * (p[1] - p[0]);
        let qb = |b: f64| q[0] + b * (q[1] - q[0]);
        let best_b = |a: f64| ternary_min(0.0, 1.0, |b| (pa(a) - qb(b)).length_squared());
        let a = ternary_min(0.0, 1.0, |a| (pa(a) - qb(best_b(a))).length_squared());
        let mut best = pa(a) - qb(best_b(a));
        let n = 100;
        for i in 0..=n {
            for j in 0..=n {
                let g = pa(i as f64 / n as f64) - qb(j as f64 / n as f64);
                if g.length_squared() < best.length_squared() {
                    best = g;
                }
            }
        }
        best
    }

    fn unit_triangle() -> [DVec3; 3] {
        [DVec3::ZERO, DVec3::X, DVec3::Y]
    }

    #[test]
    fn cross_product_weights_solve_the_normal_equations() {
        // The closed form must be the solution of `docs/methods/bridson-collisions.md` (3.6) as printed (Gram matrix of x13, x23).
        let mut rng = Rng(1);
        for _ in 0..500 {
            let tri = [rng.vec3(1.0), rng.vec3(1.0), rng.vec3(1.0)];
            let x13 = tri[0] - tri[2];
            let x23 = tri[1] - tri[2];
            if x13.cross(x23).length() < 0.05 {
                continue;
            }
            let (n, _) = (x13.cross(x23), 0);
            let p = tri[2] + rng.uniform(0.0, 0.5) * x13 + rng.uniform(0.0, 0.5) * x23 + 1e-3 * n;
            let x43 = p - tri[2];
            let (a, b, c) = (x13.dot(x13), x13.dot(x23), x23.dot(x23));
            let (r1, r2) = (x13.dot(x43), x23.dot(x43));
            let det = a * c - b * b;
            let w1 = (c * r1 - b * r2) / det;
            let w2 = (a * r2 - b * r1) / det;
            let prox = proximity_point_triangle(p, tri, 1.0).expect("point is near the interior");
            assert!(
                (prox.weights[0] - w1).abs() < 1e-9,
                "{:?} vs {w1}",
                prox.weights
            );
            assert!(
                (prox.weights[1] - w2).abs() < 1e-9,
                "{:?} vs {w2}",
                prox.weights
            );
            assert!((prox.weights.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn closest_point_triangle_matches_brute_force() {
        let mut rng = Rng(2);
        for case in 0..300 {
            let tri = [rng.vec3(1.0), rng.vec3(1.0), rng.vec3(1.0)];
            // Mix points near the triangle with points far outside it.
            let p = if case % 3 == 0 {
                rng.vec3(5.0)
            } else {
                rng.vec3(1.2)
            };
            let (c, w) = closest_point_triangle(p, tri);
            let d = (p - c).length();
            let (c_bf, d_bf) = brute_point_triangle(p, tri);
            assert!(d <= d_bf + 1e-12, "case {case}: exact {d} > sampled {d_bf}");
            assert!(
                d_bf - d < 1e-9,
                "case {case}: exact {d} vs brute force {d_bf}"
            );
            // The projection onto a convex set is unique: |c − c_bf|² ≤ d_bf² − d².
            let bound = (d_bf * d_bf - d * d).max(0.0).sqrt() + 1e-7;
            assert!((c - c_bf).length() <= bound, "case {case}: {c} vs {c_bf}");
            assert!(w.iter().all(|&w| w >= 0.0), "case {case}: {w:?}");
            assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            let rebuilt = w[0] * tri[0] + w[1] * tri[1] + w[2] * tri[2];
            assert!((rebuilt - c).length() < 1e-12, "case {case}");
        }
    }

    #[test]
    fn proximity_point_triangle_matches_brute_force_over_the_interior() {
        let mut rng = Rng(3);
        let eta = 0.05;
        let mut checked = 0;
        for _ in 0..300 {
            let tri = [rng.vec3(1.0), rng.vec3(1.0), rng.vec3(1.0)];
            let n = (tri[1] - tri[0]).cross(tri[2] - tri[0]);
            if n.length() < 0.05 {
                continue;
            }
            let n_hat = n.normalize();
            let u = rng.uniform(0.01, 0.98);
            let v = rng.uniform(0.01, 0.99 - u);
            let w = [1.0 - u - v, u, v];
            let offset = rng.uniform(-0.99 * eta, 0.99 * eta);
            let p = w[0] * tri[0] + w[1] * tri[1] + w[2] * tri[2] + offset * n_hat;
            let prox = proximity_point_triangle(p, tri, eta).expect("inside and within eta");
            let (c_bf, d_bf) = brute_point_triangle(p, tri);
            assert!((prox.distance - d_bf).abs() < 1e-9);
            assert!((prox.distance - offset.abs()).abs() < 1e-12);
            for k in 0..3 {
                assert!(
                    (prox.weights[k] - w[k]).abs() < 1e-9,
                    "{:?} vs {w:?}",
                    prox.weights
                );
            }
            let projection =
                prox.weights[0] * tri[0] + prox.weights[1] * tri[1] + prox.weights[2] * tri[2];
            assert!((projection - c_bf).length() < 1e-6);
            // From the triangle toward the point.
            assert!((prox.normal.length() - 1.0).abs() < 1e-12);
            assert!((p - projection).dot(prox.normal) >= 0.0);
            assert!((prox.normal - offset.signum() * n_hat).length() < 1e-12);
            checked += 1;
        }
        assert!(checked > 200);
    }

    #[test]
    fn proximity_point_triangle_plane_test_rejects_beyond_eta() {
        let eta = 0.01;
        let p_in = DVec3::new(0.25, 0.25, 0.999 * eta);
        let p_out = DVec3::new(0.25, 0.25, 1.001 * eta);
        assert!(proximity_point_triangle(p_in, unit_triangle(), eta).is_some());
        assert!(proximity_point_triangle(p_out, unit_triangle(), eta).is_none());
        assert!(proximity_point_triangle(-p_out, unit_triangle(), eta).is_none());
        assert!(proximity_point_triangle(p_in, unit_triangle(), 0.0).is_none());
    }

    #[test]
    fn proximity_point_triangle_band_is_eta_over_longest_edge() {
        // Unit right triangle: longest edge √2, so δ = η/√2. Beyond edge x2–x3 (w1 < 0) the band is
        // δ · h1 with h1 = 1/√2 (altitude from x1) — at most η, as the module doc argues.
        let eta = 0.01;
        let delta = eta / 2f64.sqrt();
        let beyond_edge_23 = |w1: f64| {
            // Point with barycentric (w1, (1 − w1)/2, (1 − w1)/2), in the plane.
            let w = (1.0 - w1) / 2.0;
            DVec3::new(w, w, 0.0)
        };
        let inside = proximity_point_triangle(beyond_edge_23(-0.9 * delta), unit_triangle(), eta)
            .expect("within the band");
        assert!((inside.weights[0] + 0.9 * delta).abs() < 1e-12);
        assert!(
            proximity_point_triangle(beyond_edge_23(-1.1 * delta), unit_triangle(), eta).is_none()
        );
        // Physical reach of the band beyond edge 2–3: δ · h1 ≤ η.
        let reach = (beyond_edge_23(-delta) - DVec3::new(0.5, 0.5, 0.0)).length();
        assert!(reach <= eta && reach > 0.4 * eta, "reach {reach}");
        // Beyond vertex x1 along −x (w2 < 0).
        assert!(
            proximity_point_triangle(DVec3::new(-0.9 * delta, 0.3, 0.0), unit_triangle(), eta)
                .is_some()
        );
        assert!(
            proximity_point_triangle(DVec3::new(-1.1 * delta, 0.3, 0.0), unit_triangle(), eta)
                .is_none()
        );
    }

    #[test]
    fn proximity_point_on_vertex_and_edge() {
        let tri = [
            DVec3::new(0.1, 0.2, 0.3),
            DVec3::new(1.3, 0.1, 0.2),
            DVec3::new(0.4, 1.1, -0.2),
        ];
        let winding = (tri[1] - tri[0]).cross(tri[2] - tri[0]).normalize();
        for (k, &vertex) in tri.iter().enumerate() {
            let prox = proximity_point_triangle(vertex, tri, 1e-3).expect("on a vertex");
            assert!(prox.distance < 1e-14);
            for j in 0..3 {
                let expected = if j == k { 1.0 } else { 0.0 };
                assert!(
                    (prox.weights[j] - expected).abs() < 1e-12,
                    "{:?}",
                    prox.weights
                );
            }
            assert!((prox.normal - winding).length() < 1e-12);
            let (c, w) = closest_point_triangle(vertex, tri);
            assert!((c - vertex).length() < 1e-14);
            assert!((w[k] - 1.0).abs() < 1e-12);
        }
        let mid = 0.5 * (tri[1] + tri[2]);
        let prox = proximity_point_triangle(mid, tri, 1e-3).expect("on an edge");
        assert!(prox.weights[0].abs() < 1e-12);
        assert!((prox.weights[1] - 0.5).abs() < 1e-12);
        assert!((prox.weights[2] - 0.5).abs() < 1e-12);
    }

    #[test]
    fn point_far_outside() {
        let tri = unit_triangle();
        assert!(proximity_point_triangle(DVec3::new(5.0, 5.0, 0.0), tri, 0.1).is_none());
        assert!(proximity_point_triangle(DVec3::new(0.2, 0.2, 5.0), tri, 0.1).is_none());
        // Vertex region of x2, edge region of x1–x3.
        let (c, w) = closest_point_triangle(DVec3::new(5.0, -1.0, 2.0), tri);
        assert_eq!(c, DVec3::X);
        assert_eq!(w, [0.0, 1.0, 0.0]);
        let (c, w) = closest_point_triangle(DVec3::new(-3.0, 0.25, 1.0), tri);
        assert!((c - DVec3::new(0.0, 0.25, 0.0)).length() < 1e-15);
        assert!((w[0] - 0.75).abs() < 1e-15 && w[1] == 0.0 && (w[2] - 0.25).abs() < 1e-15);
    }

    #[test]
    fn point_below_triangle_gets_flipped_normal() {
        let prox = proximity_point_triangle(DVec3::new(0.2, 0.3, -0.004), unit_triangle(), 0.01)
            .expect("close below");
        assert_eq!(prox.normal, -DVec3::Z);
        assert!((prox.distance - 0.004).abs() < 1e-15);
    }

    #[test]
    fn sliver_triangles_are_rejected_and_closest_point_uses_edges() {
        let collinear = [DVec3::ZERO, DVec3::X, 2.0 * DVec3::X];
        let p = DVec3::new(0.5, 0.0, 0.0);
        assert!(proximity_point_triangle(p, collinear, 0.1).is_none());
        let nearly = [DVec3::ZERO, DVec3::X, DVec3::new(2.0, 1e-12, 0.0)];
        assert!(proximity_point_triangle(p, nearly, 0.1).is_none());
        let q = DVec3::new(1.5, 0.3, 0.4);
        let (c, w) = closest_point_triangle(q, collinear);
        assert!((c - DVec3::new(1.5, 0.0, 0.0)).length() < 1e-15);
        let rebuilt = w[0] * collinear[0] + w[1] * collinear[1] + w[2] * collinear[2];
        assert!((rebuilt - c).length() < 1e-15);
        let all_same = [DVec3::ONE; 3];
        let (c, w) = closest_point_triangle(q, all_same);
        assert_eq!(c, DVec3::ONE);
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-15);
    }

    fn check_edge_edge(p: [DVec3; 2], q: [DVec3; 2], what: &str) {
        let r = closest_points_edge_edge(p, q);
        assert!(
            (0.0..=1.0).contains(&r.a) && (0.0..=1.0).contains(&r.b),
            "{what}: {r:?}"
        );
        let g = (p[0] + r.a * (p[1] - p[0])) - (q[0] + r.b * (q[1] - q[0]));
        assert!((g.length() - r.distance).abs() < 1e-12, "{what}");
        let g_bf = brute_edge_edge(p, q);
        let d_bf = g_bf.length();
        // Edges within PARALLEL_SIN2 of parallel take `a = 0`, off by at most `sin θ · |x21|` ≈ 1e-12 here.
        assert!(
            r.distance <= d_bf + 1e-11,
            "{what}: exact {} > sampled {d_bf}",
            r.distance
        );
        assert!(
            d_bf - r.distance < 1e-9,
            "{what}: exact {} vs brute force {d_bf}",
            r.distance
        );
        // The closest difference vector is unique (projection of 0 onto the convex set p − q).
        let bound = (d_bf * d_bf - r.distance * r.distance).max(0.0).sqrt() + 1e-7;
        assert!((g - g_bf).length() <= bound, "{what}: {g} vs {g_bf}");
        assert!((r.normal.length() - 1.0).abs() < 1e-12, "{what}");
        if r.distance > 1e-9 {
            assert!(
                (r.normal - g / r.distance).length() < 1e-12,
                "{what}: from q toward p"
            );
        }
    }

    #[test]
    fn closest_points_edge_edge_match_brute_force() {
        let mut rng = Rng(4);
        for case in 0..400 {
            let p = [rng.vec3(1.0), rng.vec3(1.0)];
            let q = match case % 5 {
                // Generic.
                0 | 1 => [rng.vec3(1.0), rng.vec3(1.0)],
                // Exactly parallel (same direction scaled, possibly reversed), offset.
                2 => {
                    let base = rng.vec3(1.0);
                    let dir = (p[1] - p[0]) * rng.uniform(-1.5, 1.5);
                    [base, base + dir]
                }
                // Nearly parallel, sin θ from 1e-3 down to 1e-14.
                3 => {
                    let base = rng.vec3(1.0);
                    let tilt = 10f64.powi(-3 - (case / 5) % 12);
                    let dir = (p[1] - p[0]) + tilt * rng.vec3(1.0);
                    [base, base + dir]
                }
                // Zero-length edge q (point–segment).
                _ => {
                    let x = rng.vec3(1.0);
                    [x, x]
                }
            };
            check_edge_edge(p, q, &format!("case {case}"));
            check_edge_edge(q, p, &format!("case {case} swapped"));
        }
    }

    #[test]
    fn parallel_edges() {
        // Overlapping parallel edges one unit apart.
        let p = [DVec3::new(0.0, 1.0, 0.0), DVec3::new(2.0, 1.0, 0.0)];
        let q = [DVec3::new(1.0, 0.0, 0.0), DVec3::new(3.0, 0.0, 0.0)];
        let r = closest_points_edge_edge(p, q);
        assert!((r.distance - 1.0).abs() < 1e-15);
        assert!((r.normal - DVec3::Y).length() < 1e-15);
        check_edge_edge(p, q, "overlapping parallel");
        // Collinear, disjoint: the gap between the facing endpoints.
        let p = [DVec3::ZERO, DVec3::X];
        let q = [DVec3::new(3.0, 0.0, 0.0), DVec3::new(2.0, 0.0, 0.0)];
        let r = closest_points_edge_edge(p, q);
        assert!((r.distance - 1.0).abs() < 1e-15);
        assert_eq!((r.a, r.b), (1.0, 1.0));
        assert!((r.normal + DVec3::X).length() < 1e-15);
        // Collinear, overlapping: distance 0, normal perpendicular to the line.
        let q = [DVec3::new(0.5, 0.0, 0.0), DVec3::new(2.0, 0.0, 0.0)];
        let r = closest_points_edge_edge(p, q);
        assert!(r.distance < 1e-15);
        assert!(r.normal.dot(DVec3::X).abs() < 1e-12);
        assert!((r.normal.length() - 1.0).abs() < 1e-12);
        check_edge_edge(p, q, "collinear overlapping");
    }

    #[test]
    fn degenerate_edges() {
        let x = DVec3::new(0.3, 0.7, -0.2);
        let seg = [DVec3::ZERO, DVec3::new(1.0, 1.0, 0.0)];
        let r = closest_points_edge_edge([x, x], seg);
        let (c, t) = closest_point_segment(x, seg);
        assert!((r.distance - (x - c).length()).abs() < 1e-15);
        assert!((r.b - t).abs() < 1e-15);
        let r = closest_points_edge_edge(seg, [x, x]);
        assert!((r.a - t).abs() < 1e-15);
        // Point–point.
        let y = DVec3::new(1.0, 2.0, 2.0);
        let r = closest_points_edge_edge([x, x], [y, y]);
        assert!((r.distance - (x - y).length()).abs() < 1e-15);
        assert!((r.normal - (x - y).normalize()).length() < 1e-15);
        let r = closest_points_edge_edge([x, x], [x, x]);
        assert_eq!(r.distance, 0.0);
        assert!((r.normal.length() - 1.0).abs() < 1e-15);
        assert_eq!(closest_point_segment(y, [x, x]), (x, 0.0));
    }

    #[test]
    fn crossing_edges_use_the_cross_product_normal() {
        let p = [DVec3::new(0.5, -1.0, 0.0), DVec3::new(0.5, 1.0, 0.0)];
        let q = [DVec3::ZERO, DVec3::X];
        let r = closest_points_edge_edge(p, q);
        assert!(r.distance < 1e-15);
        assert!((r.a - 0.5).abs() < 1e-15 && (r.b - 0.5).abs() < 1e-15);
        // (p1 − p0) × (q1 − q0) = (0, 2, 0) × (1, 0, 0) = (0, 0, −2).
        assert!((r.normal + DVec3::Z).length() < 1e-15);
        // Lifted above q: the normal points from q toward p.
        let lift = DVec3::new(0.0, 0.0, 0.25);
        let r = closest_points_edge_edge([p[0] + lift, p[1] + lift], q);
        assert!((r.distance - 0.25).abs() < 1e-15);
        assert!((r.normal - DVec3::Z).length() < 1e-15);
    }

    #[test]
    fn proximity_edge_edge_threshold() {
        let q = [DVec3::ZERO, DVec3::X];
        let p = |h: f64| [DVec3::new(0.5, -1.0, h), DVec3::new(0.5, 1.0, h)];
        assert!(proximity_edge_edge(p(0.009), q, 0.01).is_some());
        assert!(proximity_edge_edge(p(0.011), q, 0.01).is_none());
        assert!(proximity_edge_edge(p(0.0), q, 0.0).is_none());
        let nan = [DVec3::NAN, DVec3::X];
        assert!(proximity_edge_edge(nan, q, 1.0).is_none());
        assert!(proximity_point_triangle(DVec3::NAN, unit_triangle(), 1.0).is_none());
    }
}

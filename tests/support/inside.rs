//! Vertex-level containment for the independent checker: cloth vertices inside an analytic
//! solid (deeper than a tolerance) and cloth vertices inside a closed obstacle mesh.
//!
//! Written, like `intersection.rs`, without `src/collide`: a triangle pair test finds a cloth
//! that crosses an obstacle's surface in the frame checked, but not a cloth that has gone
//! through it in an earlier frame and now lies wholly inside (a sheet slipped into a peg). These
//! two tests find that.
//!
//! # Solids
//! The depth of a point inside a solid is its distance to the solid's surface, positive inside:
//! `-(x − o)·n̂` below a plane through `o` with outward normal `n`, `r − |x − c|` in a ball,
//! `r − dist(x, [a, b])` in a capsule, `min_i (h_i − |y_i|)` in a box with `y` the point in the
//! box's frame. Computed in `f64` from the `f32` inputs.
//!
//! # Closed meshes
//! A point is inside a closed triangle mesh when its winding number is ±1; the winding number
//! is the sum of the signed solid angles of the triangles seen from the point over 4π, each
//! from Van Oosterom and Strackee 1983 ("The solid angle of a plane triangle"):
//! `tan(Ω/2) = a·(b×c) / (|a||b||c| + (a·b)|c| + (b·c)|a| + (c·a)|b|)` with `a, b, c` the corners
//! relative to the point. In `f64` the sum is within about 1e-9 of an integer for points not on
//! the surface; a point counts as inside when `|w| > 1/2`, which is exact away from the surface
//! (a point on the surface touches a triangle, which the triangle tests report). A mesh is
//! closed when every edge is shared by exactly two triangles; open meshes are skipped (they
//! have no inside).
#![deny(unsafe_code)]

use glam::{DVec3, Vec3};

use super::intersection::{Solid, TriSoup};

/// `(solid index, vertex, depth in metres)` of every vertex more than `tolerance` inside a solid,
/// in solid then vertex order.
///
/// # Panics
/// If `tolerance` is negative or not finite.
#[must_use]
pub fn vertices_inside_solids(
    positions: &[Vec3],
    solids: &[Solid],
    tolerance: f32,
) -> Vec<(usize, u32, f32)> {
    assert!(
        tolerance.is_finite() && tolerance >= 0.0,
        "tolerance must be finite and non-negative, got {tolerance}"
    );
    let mut hits = Vec::new();
    for (s, solid) in solids.iter().enumerate() {
        for (v, p) in positions.iter().enumerate() {
            let depth = vertex_depth(solid, p.as_dvec3());
            if depth > f64::from(tolerance) {
                hits.push((s, v as u32, depth as f32));
            }
        }
    }
    hits
}

/// Depth (m) of point `x` inside `solid`: positive inside, negative outside.
#[must_use]
pub fn vertex_depth(solid: &Solid, x: DVec3) -> f64 {
    match *solid {
        Solid::Plane { point, normal } => {
            -(x - point.as_dvec3()).dot(normal.as_dvec3().normalize())
        }
        Solid::Sphere { centre, radius } => f64::from(radius) - (x - centre.as_dvec3()).length(),
        Solid::Capsule { a, b, radius } => {
            let (a, b) = (a.as_dvec3(), b.as_dvec3());
            let ab = b - a;
            let len2 = ab.length_squared();
            let s = if len2 > 0.0 {
                ((x - a).dot(ab) / len2).clamp(0.0, 1.0)
            } else {
                0.0
            };
            f64::from(radius) - (x - (a + ab * s)).length()
        }
        Solid::Box {
            centre,
            half_extents,
            rotation,
        } => {
            let r = rotation.as_dquat().normalize().inverse();
            let y = r * (x - centre.as_dvec3());
            (half_extents.as_dvec3() - y.abs()).min_element()
        }
    }
}

/// True when every edge of `mesh` is shared by exactly two of its triangles.
#[must_use]
pub fn is_closed(mesh: &TriSoup) -> bool {
    let mut edges: Vec<(u32, u32)> = mesh
        .triangles
        .iter()
        .flat_map(|t| [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])])
        .map(|(a, b)| (a.min(b), a.max(b)))
        .collect();
    if edges.is_empty() {
        return false;
    }
    edges.sort_unstable();
    let mut i = 0;
    while i < edges.len() {
        let mut j = i;
        while j < edges.len() && edges[j] == edges[i] {
            j += 1;
        }
        if j - i != 2 {
            return false;
        }
        i = j;
    }
    true
}

/// Winding number of closed `mesh` around point `x` (±1 inside, 0 outside).
#[must_use]
pub fn winding_number(mesh: &TriSoup, x: DVec3) -> f64 {
    let mut sum = 0.0;
    for tri in mesh.triangles {
        let [a, b, c] = tri.map(|i| mesh.positions[i as usize].as_dvec3() - x);
        let (la, lb, lc) = (a.length(), b.length(), c.length());
        let numerator = a.dot(b.cross(c));
        let denominator = la * lb * lc + a.dot(b) * lc + b.dot(c) * la + c.dot(a) * lb;
        sum += 2.0 * numerator.atan2(denominator);
    }
    sum / (4.0 * std::f64::consts::PI)
}

/// Every vertex of `positions` inside closed `mesh` (ascending); empty for an open mesh.
#[must_use]
pub fn vertices_inside_mesh(positions: &[Vec3], mesh: &TriSoup) -> Vec<u32> {
    if !is_closed(mesh) {
        return Vec::new();
    }
    let (lo, hi) = mesh.positions.iter().fold(
        (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
        |(lo, hi), p| (lo.min(*p), hi.max(*p)),
    );
    positions
        .iter()
        .enumerate()
        .filter(|(_, p)| p.cmpge(lo).all() && p.cmple(hi).all())
        .filter(|(_, p)| winding_number(mesh, p.as_dvec3()).abs() > 0.5)
        .map(|(v, _)| v as u32)
        .collect()
}

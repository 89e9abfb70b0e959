//! Clearance of a cloth: how far its vertices stay from analytic solids, obstacle meshes and the
//! cloth's own non-adjacent triangles and edges, measured in `f64` from the `f32` state.
//!
//! A measurement for the "thickness kept" contract (at rest a cloth stays at least 90 % of its
//! thickness from everything it touches and never inside an analytic shape). Like the
//! intersection checker it is written against weft's public state only, not `src/collide`.
//!
//! - **Solids**: exact signed distance of each vertex to the solid's surface (negative inside),
//!   and the signed distance of each triangle (its nearest point), which is smaller by the sag of
//!   a flat face over a curved surface.
//! - **Obstacle meshes**: distance of each vertex to the nearest obstacle triangle.
//! - **Self**: distance of each vertex to the nearest cloth triangle that does not contain it,
//!   and of each edge to the nearest cloth edge it shares no vertex with. Only distances below a
//!   search radius are found; larger ones are reported as the radius.
#![deny(unsafe_code)]

use std::collections::HashMap;

use glam::{DQuat, DVec3, Vec3};

use super::intersection::{
    Solid, TriSoup, distance_point_segment, distance_point_triangle, distance_segment_segment,
};

/// Signed distance (m) from `p` to the surface of `solid`: positive outside, negative inside.
pub fn point_solid_distance(solid: &Solid, p: Vec3) -> f64 {
    let p = p.as_dvec3();
    match *solid {
        Solid::Plane { point, normal } => (p - point.as_dvec3()).dot(normal.as_dvec3().normalize()),
        Solid::Sphere { centre, radius } => (p - centre.as_dvec3()).length() - f64::from(radius),
        Solid::Capsule { a, b, radius } => {
            distance_point_segment(p, a.as_dvec3(), b.as_dvec3()) - f64::from(radius)
        }
        Solid::Box {
            centre,
            half_extents,
            rotation,
        } => {
            let r = DQuat::from_xyzw(
                f64::from(rotation.x),
                f64::from(rotation.y),
                f64::from(rotation.z),
                f64::from(rotation.w),
            )
            .normalize();
            let q = r.inverse() * (p - centre.as_dvec3());
            let d = q.abs() - half_extents.as_dvec3();
            let outside = d.max(DVec3::ZERO).length();
            outside + d.max_element().min(0.0)
        }
    }
}

/// Signed distance (m) from the closed triangle `tri` to the surface of a sphere or capsule: the
/// distance of its nearest point (the solid is a ball around a point or a segment, so this is
/// the distance from that core to the triangle minus the radius). `None` for planes and boxes,
/// whose nearest point over a triangle is one of its vertices (plane) or needs a search (box).
pub fn triangle_solid_distance(solid: &Solid, tri: [Vec3; 3]) -> Option<f64> {
    let [a, b, c] = tri.map(Vec3::as_dvec3);
    match *solid {
        Solid::Sphere { centre, radius } => {
            Some(distance_point_triangle(centre.as_dvec3(), a, b, c) - f64::from(radius))
        }
        Solid::Capsule { a: p, b: q, radius } => {
            let (p, q) = (p.as_dvec3(), q.as_dvec3());
            // The segment's nearest point to the triangle: convex in the segment parameter, so a
            // ternary search converges to it.
            let at = |s: f64| distance_point_triangle(p + (q - p) * s, a, b, c);
            let (mut lo, mut hi) = (0.0, 1.0);
            for _ in 0..100 {
                let m1 = lo + (hi - lo) / 3.0;
                let m2 = hi - (hi - lo) / 3.0;
                if at(m1) <= at(m2) {
                    hi = m2;
                } else {
                    lo = m1;
                }
            }
            Some(at(0.5 * (lo + hi)) - f64::from(radius))
        }
        Solid::Plane { .. } | Solid::Box { .. } => None,
    }
}

/// The smallest clearances of one cloth state.
#[derive(Clone, Debug)]
pub struct Clearance {
    /// Per solid: the smallest signed vertex distance (m) and the vertex.
    pub solid_vertex: Vec<(f64, u32)>,
    /// Per solid: the smallest signed triangle distance (m), for spheres and capsules.
    pub solid_triangle: Vec<Option<f64>>,
    /// Smallest vertex–obstacle-triangle distance (m), `radius` if none is closer.
    pub obstacle: f64,
    /// Smallest distance between a vertex and a cloth triangle without it, or two cloth edges
    /// without a common vertex (m); `radius` if none is closer.
    pub self_distance: f64,
}

/// Measures [`Clearance`] of `cloth` against `solids` and the obstacle `meshes`; obstacle and self
/// distances are searched up to `radius` (m).
pub fn measure(cloth: &TriSoup, solids: &[Solid], meshes: &[TriSoup], radius: f64) -> Clearance {
    let solid_vertex = solids
        .iter()
        .map(|s| {
            cloth
                .positions
                .iter()
                .enumerate()
                .map(|(i, &p)| (point_solid_distance(s, p), i as u32))
                .fold((f64::INFINITY, 0), |m, d| if d.0 < m.0 { d } else { m })
        })
        .collect();
    let solid_triangle = solids
        .iter()
        .map(|s| {
            cloth
                .triangles
                .iter()
                .map(|t| triangle_solid_distance(s, t.map(|i| cloth.positions[i as usize])))
                .try_fold(f64::INFINITY, |m, d| d.map(|d| m.min(d)))
        })
        .collect();
    let mut obstacle = radius;
    for mesh in meshes {
        let grid = CellGrid::of_triangles(mesh, radius);
        for &p in cloth.positions {
            for &t in grid.near(p.as_dvec3(), p.as_dvec3()) {
                let [a, b, c] =
                    mesh.triangles[t as usize].map(|i| mesh.positions[i as usize].as_dvec3());
                obstacle = obstacle.min(distance_point_triangle(p.as_dvec3(), a, b, c));
            }
        }
    }
    Clearance {
        solid_vertex,
        solid_triangle,
        obstacle,
        self_distance: self_distance(cloth, radius),
    }
}

/// Smallest vertex–triangle (triangle without the vertex) and edge–edge (no common vertex)
/// distance of a cloth, up to `radius`.
pub fn self_distance(cloth: &TriSoup, radius: f64) -> f64 {
    let x = |i: u32| cloth.positions[i as usize].as_dvec3();
    let mut best = radius;
    let grid = CellGrid::of_triangles(cloth, radius);
    for (i, &p) in cloth.positions.iter().enumerate() {
        let p = p.as_dvec3();
        for &t in grid.near(p, p) {
            let tri = cloth.triangles[t as usize];
            if tri.contains(&(i as u32)) {
                continue;
            }
            best = best.min(distance_point_triangle(p, x(tri[0]), x(tri[1]), x(tri[2])));
        }
    }
    let mut edges: Vec<[u32; 2]> = cloth
        .triangles
        .iter()
        .flat_map(|t| [[t[0], t[1]], [t[1], t[2]], [t[2], t[0]]])
        .map(|[a, b]| [a.min(b), a.max(b)])
        .collect();
    edges.sort_unstable();
    edges.dedup();
    let edge_grid = CellGrid::of_edges(cloth.positions, &edges, radius);
    for (k, e) in edges.iter().enumerate() {
        let (p, q) = (x(e[0]), x(e[1]));
        for &f in edge_grid.near(p.min(q), p.max(q)) {
            let g = edges[f as usize];
            if f as usize <= k || g.contains(&e[0]) || g.contains(&e[1]) {
                continue;
            }
            best = best.min(distance_segment_segment(p, q, x(g[0]), x(g[1])));
        }
    }
    best
}

/// Items (triangles or edges) binned by their boxes grown by a radius into cubic cells.
struct CellGrid {
    cell: f64,
    bins: HashMap<[i64; 3], Vec<u32>>,
    empty: Vec<u32>,
}

impl CellGrid {
    fn of_triangles(soup: &TriSoup, radius: f64) -> Self {
        let boxes: Vec<(DVec3, DVec3)> = soup
            .triangles
            .iter()
            .map(|t| {
                let p = t.map(|i| soup.positions[i as usize].as_dvec3());
                (p[0].min(p[1]).min(p[2]), p[0].max(p[1]).max(p[2]))
            })
            .collect();
        Self::of_boxes(&boxes, radius)
    }

    fn of_edges(x: &[Vec3], edges: &[[u32; 2]], radius: f64) -> Self {
        let boxes: Vec<(DVec3, DVec3)> = edges
            .iter()
            .map(|e| {
                let (p, q) = (x[e[0] as usize].as_dvec3(), x[e[1] as usize].as_dvec3());
                (p.min(q), p.max(q))
            })
            .collect();
        Self::of_boxes(&boxes, radius)
    }

    /// Cells as large as the mean box extent plus the radius, so an item spans a few cells.
    fn of_boxes(boxes: &[(DVec3, DVec3)], radius: f64) -> Self {
        let mean = boxes
            .iter()
            .map(|(lo, hi)| (*hi - *lo).max_element())
            .sum::<f64>()
            / boxes.len().max(1) as f64;
        let cell = (mean + 2.0 * radius).max(1e-9);
        let mut bins: HashMap<[i64; 3], Vec<u32>> = HashMap::new();
        for (k, (lo, hi)) in boxes.iter().enumerate() {
            let (a, b) = (key(*lo - radius, cell), key(*hi + radius, cell));
            for i in a[0]..=b[0] {
                for j in a[1]..=b[1] {
                    for l in a[2]..=b[2] {
                        bins.entry([i, j, l]).or_default().push(k as u32);
                    }
                }
            }
        }
        Self {
            cell,
            bins,
            empty: Vec::new(),
        }
    }

    /// Items whose grown box may meet the box `[lo, hi]` (with repeats when it spans cells).
    fn near(&self, lo: DVec3, hi: DVec3) -> impl Iterator<Item = &u32> {
        let (a, b) = (key(lo, self.cell), key(hi, self.cell));
        (a[0]..=b[0])
            .flat_map(move |i| {
                (a[1]..=b[1]).flat_map(move |j| (a[2]..=b[2]).map(move |l| [i, j, l]))
            })
            .flat_map(move |k| self.bins.get(&k).unwrap_or(&self.empty).iter())
    }
}

fn key(p: DVec3, cell: f64) -> [i64; 3] {
    (p / cell).floor().as_i64vec3().to_array()
}

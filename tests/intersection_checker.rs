//! Tests of the independent intersection checker in `tests/support/intersection.rs`: known
//! configurations, the adjacency rules, exactness of the predicates, the grid broad phase
//! against brute force, and the solid penetration depths.
#![deny(unsafe_code)]

mod support;

use glam::{DVec3, Quat, Vec3};
use support::{
    IntersectionReport, Solid, TriSoup, find_intersections, find_intersections_brute_force,
    orient3d,
};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// SplitMix64: a small seeded generator so the random tests are reproducible.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    fn vec(&mut self, lo: f64, hi: f64) -> Vec3 {
        Vec3::new(
            self.range(lo, hi) as f32,
            self.range(lo, hi) as f32,
            self.range(lo, hi) as f32,
        )
    }
}

fn v(x: f32, y: f32, z: f32) -> Vec3 {
    Vec3::new(x, y, z)
}

/// Checks a cloth soup with both the grid and the brute force, asserts they agree, and returns
/// the report.
fn check(positions: &[Vec3], triangles: &[[u32; 3]]) -> IntersectionReport {
    let cloth = TriSoup {
        positions,
        triangles,
    };
    let grid = find_intersections(&cloth, &[], &[], 0.0);
    let brute = find_intersections_brute_force(&cloth, &[], &[], 0.0);
    assert_eq!(grid, brute, "grid and brute force disagree");
    grid
}

/// Two triangles with no shared index, tested in both orders; returns whether they intersect.
fn pair(p: [Vec3; 3], q: [Vec3; 3]) -> bool {
    let a = check(&[p, q].concat(), &[[0, 1, 2], [3, 4, 5]]);
    let b = check(&[q, p].concat(), &[[0, 1, 2], [3, 4, 5]]);
    assert_eq!(
        a.self_pairs.len(),
        b.self_pairs.len(),
        "order changes the answer"
    );
    // Rotating the vertex order of a triangle must not change the answer either.
    let c = check(
        &[[p[1], p[2], p[0]], [q[2], q[0], q[1]]].concat(),
        &[[0, 1, 2], [3, 4, 5]],
    );
    assert_eq!(
        a.self_pairs.len(),
        c.self_pairs.len(),
        "vertex order changes the answer"
    );
    !a.self_pairs.is_empty()
}

/// Triangles `(v, a1, b1)` and `(v, a2, b2)` sharing vertex index 0, both orders and rotations.
fn shared_vertex(v: Vec3, a1: Vec3, b1: Vec3, a2: Vec3, b2: Vec3) -> bool {
    let pos = [v, a1, b1, a2, b2];
    let a = check(&pos, &[[0, 1, 2], [0, 3, 4]]);
    let b = check(&pos, &[[3, 4, 0], [2, 0, 1]]);
    assert_eq!(
        a.self_pairs.len(),
        b.self_pairs.len(),
        "order changes the answer"
    );
    !a.self_pairs.is_empty()
}

/// N×N vertices on the xy plane with spacing `h`, two triangles per cell.
fn grid_sheet(n: usize, h: f32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let mut positions = Vec::with_capacity(n * n);
    for j in 0..n {
        for i in 0..n {
            positions.push(v(i as f32 * h, j as f32 * h, 0.0));
        }
    }
    let id = |i: usize, j: usize| (j * n + i) as u32;
    let mut triangles = Vec::with_capacity(2 * (n - 1) * (n - 1));
    for j in 0..n - 1 {
        for i in 0..n - 1 {
            triangles.push([id(i, j), id(i + 1, j), id(i + 1, j + 1)]);
            triangles.push([id(i, j), id(i + 1, j + 1), id(i, j + 1)]);
        }
    }
    (positions, triangles)
}

fn depth_hits(tri: [Vec3; 3], solid: Solid, tolerance: f32) -> Vec<f32> {
    let positions = tri.to_vec();
    let triangles = [[0, 1, 2]];
    let cloth = TriSoup {
        positions: &positions,
        triangles: &triangles,
    };
    let report = find_intersections(&cloth, &[], &[solid], tolerance);
    assert_eq!(
        report,
        find_intersections_brute_force(&cloth, &[], &[solid], tolerance)
    );
    report.solid_hits.iter().map(|h| h.2).collect()
}

// ---------------------------------------------------------------------------------------------
// Known configurations
// ---------------------------------------------------------------------------------------------

#[test]
fn disjoint_triangles_are_clean() {
    let p = [v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(0.0, 1.0, 0.0)];
    assert!(!pair(
        p,
        [v(0.0, 0.0, 0.1), v(1.0, 0.0, 0.1), v(0.0, 1.0, 0.1)]
    ));
    // Planes cross, triangles do not: q passes beside p's hypotenuse.
    assert!(!pair(
        p,
        [v(0.6, 0.6, -1.0), v(0.6, 0.6, 1.0), v(2.0, 2.0, 0.0)]
    ));
}

#[test]
fn crossing_triangles_are_reported() {
    let p = [v(0.0, 0.0, 0.0), v(2.0, 0.0, 0.0), v(0.0, 2.0, 0.0)];
    assert!(pair(
        p,
        [v(0.5, 0.5, -1.0), v(0.5, 0.5, 1.0), v(0.5, -1.0, 0.0)]
    ));
    // Both triangles cross each other's interior (neither has a vertex on the other).
    assert!(pair(
        [v(-1.0, 0.0, -1.0), v(1.0, 0.0, -1.0), v(0.0, 0.0, 1.0)],
        [v(0.0, -1.0, 0.0), v(0.0, 1.0, 0.5), v(0.0, 1.0, -0.5)]
    ));
}

#[test]
fn vertex_poking_through_is_reported() {
    let p = [v(0.0, 0.0, 0.0), v(2.0, 0.0, 0.0), v(0.0, 2.0, 0.0)];
    assert!(pair(
        p,
        [v(0.3, 0.3, -0.01), v(3.0, 3.0, 1.0), v(3.0, 2.0, 1.0)]
    ));
    assert!(!pair(
        p,
        [v(0.3, 0.3, 0.01), v(3.0, 3.0, 1.0), v(3.0, 2.0, 1.0)]
    ));
}

#[test]
fn exact_touching_counts_as_intersecting() {
    let p = [v(0.0, 0.0, 0.0), v(2.0, 0.0, 0.0), v(0.0, 2.0, 0.0)];
    // A vertex exactly on the interior of the other triangle.
    assert!(pair(
        p,
        [v(0.3, 0.3, 0.0), v(3.0, 3.0, 1.0), v(3.0, 2.0, 1.0)]
    ));
    // A vertex exactly on an edge, and exactly on a corner.
    assert!(pair(
        p,
        [v(1.0, 1.0, 0.0), v(3.0, 3.0, 1.0), v(3.0, 2.0, 1.0)]
    ));
    assert!(pair(
        p,
        [v(2.0, 0.0, 0.0), v(3.0, 3.0, 1.0), v(3.0, 2.0, 1.0)]
    ));
    // Two edges crossing at one point, planes transverse.
    assert!(pair(
        p,
        [v(1.0, -1.0, 1.0), v(1.0, 1.0, -1.0), v(1.0, -1.0, -1.0)]
    ));
    // On the plane but just outside the triangle.
    assert!(!pair(
        p,
        [v(1.0, 1.0 + 1e-6, 0.0), v(3.0, 3.0, 1.0), v(3.0, 2.0, 1.0)]
    ));
}

#[test]
fn coplanar_configurations() {
    let p = [v(0.0, 0.0, 0.0), v(2.0, 0.0, 0.0), v(0.0, 2.0, 0.0)];
    // Overlapping, one inside the other, overlapping with no vertex inside the other (star).
    assert!(pair(
        p,
        [v(1.0, 0.5, 0.0), v(3.0, 0.5, 0.0), v(1.0, 3.0, 0.0)]
    ));
    assert!(pair(
        p,
        [v(0.2, 0.2, 0.0), v(0.5, 0.2, 0.0), v(0.2, 0.5, 0.0)]
    ));
    assert!(pair(
        [v(0.0, 0.0, 0.0), v(3.0, 0.0, 0.0), v(1.5, 2.0, 0.0)],
        [v(0.0, 1.3, 0.0), v(1.5, -0.7, 0.0), v(3.0, 1.3, 0.0)]
    ));
    // Touching along an edge segment, and at a single vertex on an edge.
    assert!(pair(
        p,
        [v(0.5, 0.0, 0.0), v(1.5, 0.0, 0.0), v(1.0, -1.0, 0.0)]
    ));
    assert!(pair(
        p,
        [v(1.0, 1.0, 0.0), v(3.0, 2.0, 0.0), v(2.0, 3.0, 0.0)]
    ));
    // Disjoint in the same plane.
    assert!(!pair(
        p,
        [v(1.5, 1.5, 0.0), v(3.0, 2.0, 0.0), v(2.0, 3.0, 0.0)]
    ));
    // The same in a tilted plane: exact dyadic coordinates keep it exactly coplanar.
    let tilt = |x: f32, y: f32| v(x, y, 0.5 * x + 0.25 * y);
    let pt = [tilt(0.0, 0.0), tilt(2.0, 0.0), tilt(0.0, 2.0)];
    assert!(pair(pt, [tilt(1.0, 1.0), tilt(3.0, 2.0), tilt(2.0, 3.0)]));
    assert!(!pair(pt, [tilt(1.5, 1.5), tilt(3.0, 2.0), tilt(2.0, 3.0)]));
}

#[test]
fn triangles_sharing_an_edge_are_never_reported() {
    let a = v(0.0, 0.0, 0.0);
    let b = v(2.0, 0.0, 0.0);
    let c = v(1.0, 2.0, 0.0);
    // Folded flat onto itself, folded through (crossing), and identical positions.
    for d in [v(1.0, 1.0, 0.0), v(1.0, 1.0, 0.0001), v(1.0, 3.0, -0.5), c] {
        let r = check(&[a, b, c, d], &[[0, 1, 2], [1, 0, 3]]);
        assert!(r.is_clean(), "{}", r.summary());
    }
    // Duplicate triangles share all three vertices.
    assert!(check(&[a, b, c], &[[0, 1, 2], [2, 1, 0]]).is_clean());
}

#[test]
fn triangles_sharing_one_vertex_and_otherwise_apart_are_clean() {
    let o = v(0.0, 0.0, 0.0);
    // Coplanar fan neighbours touching only at the shared vertex.
    assert!(!shared_vertex(
        o,
        v(1.0, 0.0, 0.0),
        v(1.0, 1.0, 0.0),
        v(0.0, 1.0, 0.0),
        v(-1.0, 1.0, 0.0)
    ));
    // Opposite wedges: their cones meet only at the apex.
    assert!(!shared_vertex(
        o,
        v(1.0, 0.0, 0.0),
        v(1.0, 1.0, 0.0),
        v(-1.0, 0.0, 0.0),
        v(-1.0, -1.0, 0.0)
    ));
    // Bent out of plane, and a triangle hanging below the other's edge.
    assert!(!shared_vertex(
        o,
        v(1.0, 0.0, 0.0),
        v(0.0, 1.0, 0.0),
        v(-1.0, 0.0, 1.0),
        v(0.0, -1.0, 1.0)
    ));
    assert!(!shared_vertex(
        o,
        v(1.0, 0.0, 0.0),
        v(0.0, 1.0, 0.0),
        v(1.0, 1.0, -1.0),
        v(1.0, 0.5, -1.0)
    ));
}

#[test]
fn triangles_folded_through_a_shared_vertex_are_reported() {
    let o = v(0.0, 0.0, 0.0);
    let (a1, b1) = (v(2.0, 0.0, 0.0), v(0.0, 2.0, 0.0));
    // An incident edge passes through the other triangle's interior.
    assert!(shared_vertex(
        o,
        a1,
        b1,
        v(1.0, 1.0, -1.0),
        v(-1.0, 0.0, 1.0)
    ));
    // Coplanar overlap: one incident edge lies inside the other wedge.
    assert!(shared_vertex(
        o,
        a1,
        b1,
        v(1.0, 0.5, 0.0),
        v(-1.0, 1.0, 0.0)
    ));
    // Coplanar, one triangle inside the other's wedge entirely.
    assert!(shared_vertex(o, a1, b1, v(0.5, 0.2, 0.0), v(0.2, 0.5, 0.0)));
    // Incident edges along the same ray, with different far vertices.
    assert!(shared_vertex(
        o,
        a1,
        b1,
        v(1.0, 0.0, 0.0),
        v(0.0, -1.0, 0.0)
    ));
    // Crossing wedges whose interiors meet: only the opposite edges see it.
    assert!(shared_vertex(
        o,
        v(1.0, -1.0, 0.0),
        v(1.0, 1.0, 0.0),
        v(1.0, 0.0, -1.0),
        v(1.0, 0.0, 1.0)
    ));
    // The far edge of one triangle crosses the other away from the shared vertex.
    assert!(shared_vertex(
        o,
        a1,
        b1,
        v(1.5, -0.5, 1.0),
        v(-0.5, 1.5, -1.0)
    ));
}

#[test]
fn degenerate_triangles_are_segments_and_points() {
    let p = [v(0.0, 0.0, 0.0), v(2.0, 0.0, 0.0), v(0.0, 2.0, 0.0)];
    // A needle (collinear corners) through the interior, and beside it.
    assert!(pair(
        p,
        [v(0.5, 0.5, -1.0), v(0.5, 0.5, 0.0), v(0.5, 0.5, 1.0)]
    ));
    assert!(!pair(
        p,
        [v(1.5, 1.5, -1.0), v(1.5, 1.5, 0.0), v(1.5, 1.5, 1.0)]
    ));
    // A point triangle inside, and off the plane.
    let x = v(0.5, 0.5, 0.0);
    assert!(pair(p, [x, x, x]));
    assert!(!pair(p, [v(0.5, 0.5, 1e-7); 3]));
    // Two needles crossing, and two skew needles.
    let n1 = [v(-1.0, 0.0, 0.0), v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0)];
    assert!(pair(
        n1,
        [v(0.0, -1.0, 0.0), v(0.0, 1.0, 0.0), v(0.0, 0.5, 0.0)]
    ));
    assert!(!pair(
        n1,
        [v(0.0, -1.0, 0.1), v(0.0, 1.0, 0.1), v(0.0, 0.5, 0.1)]
    ));
    // Collinear overlapping needles, and collinear needles with a gap.
    assert!(pair(
        n1,
        [v(0.5, 0.0, 0.0), v(2.0, 0.0, 0.0), v(3.0, 0.0, 0.0)]
    ));
    assert!(!pair(
        n1,
        [v(1.5, 0.0, 0.0), v(2.0, 0.0, 0.0), v(3.0, 0.0, 0.0)]
    ));
    // A needle sharing a vertex: along the other's edge (reported), pointing away (clean),
    // passing through the shared vertex with both arms outside (clean).
    let o = v(0.0, 0.0, 0.0);
    assert!(shared_vertex(
        o,
        v(1.0, 0.0, 0.0),
        v(2.0, 0.0, 0.0),
        p[1],
        p[2]
    ));
    assert!(!shared_vertex(
        o,
        v(-1.0, 0.0, 0.0),
        v(-2.0, 0.0, 0.0),
        p[1],
        p[2]
    ));
    assert!(!shared_vertex(
        o,
        v(-1.0, -1.0, -1.0),
        v(1.0, 1.0, 1.0),
        p[1],
        p[2]
    ));
    assert!(!shared_vertex(
        o,
        v(-1.0, 1.0, 0.0),
        v(1.0, -1.0, 0.0),
        v(2.0, 2.0, 0.0),
        v(1.0, 2.0, 0.0)
    ));
    // ... and with an arm inside the other triangle, out of plane and in plane.
    assert!(shared_vertex(
        o,
        v(-1.0, -1.0, -1.0),
        v(1.0, 1.0, 0.0),
        p[1],
        p[2]
    ));
    assert!(shared_vertex(
        o,
        v(-1.0, -1.0, 0.0),
        v(1.0, 1.0, 0.0),
        p[1],
        p[2]
    ));
}

#[test]
fn obstacle_meshes_have_no_adjacency_exclusion() {
    let cloth_pos = [
        v(0.0, 0.0, 0.0),
        v(1.0, 0.0, 0.0),
        v(0.0, 1.0, 0.0),
        v(1.0, 1.0, 0.0),
    ];
    let cloth_tri = [[0, 1, 2], [1, 3, 2]];
    let cloth = TriSoup {
        positions: &cloth_pos,
        triangles: &cloth_tri,
    };
    // An obstacle with a triangle that shares the cloth's edge positions, one far away, and
    // one crossing the second cloth triangle.
    let obst_pos = [
        v(0.0, 0.0, 0.0),
        v(1.0, 0.0, 0.0),
        v(0.5, -1.0, 0.5),
        v(5.0, 5.0, 5.0),
        v(6.0, 5.0, 5.0),
        v(5.0, 6.0, 5.0),
        v(0.8, 0.8, -1.0),
        v(0.8, 0.8, 1.0),
        v(2.0, 2.0, 0.0),
    ];
    let obst_tri = [[0, 1, 2], [3, 4, 5], [6, 7, 8]];
    let obstacle = TriSoup {
        positions: &obst_pos,
        triangles: &obst_tri,
    };
    let far = TriSoup {
        positions: &obst_pos,
        triangles: &obst_tri[1..2],
    };
    let report = find_intersections(&cloth, &[far, obstacle], &[], 0.0);
    assert_eq!(
        report,
        find_intersections_brute_force(&cloth, &[far, obstacle], &[], 0.0)
    );
    assert_eq!(
        report.mesh_pairs,
        vec![(1, 0, 0), (1, 1, 0), (1, 1, 2)],
        "{}",
        report.summary()
    );
    assert!(report.self_pairs.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Exactness
// ---------------------------------------------------------------------------------------------

/// Exact orient3d in i128 for coordinates that are multiples of 2^-20 below 16 in magnitude.
fn orient3d_i128(p: [Vec3; 4]) -> i32 {
    let q = p.map(|x| {
        x.to_array()
            .map(|c| (f64::from(c) * (1u64 << 20) as f64) as i128)
    });
    let d = |i: usize| [q[i][0] - q[0][0], q[i][1] - q[0][1], q[i][2] - q[0][2]];
    let (u, w, z) = (d(1), d(2), d(3));
    let det = u[0] * (w[1] * z[2] - w[2] * z[1])
        + u[1] * (w[2] * z[0] - w[0] * z[2])
        + u[2] * (w[0] * z[1] - w[1] * z[0]);
    det.signum() as i32
}

fn orient3d_naive(p: [Vec3; 4]) -> i32 {
    let [a, b, c, d] = p.map(Vec3::as_dvec3);
    let det = (b - a).cross(c - a).dot(d - a);
    if det > 0.0 {
        1
    } else if det < 0.0 {
        -1
    } else {
        0
    }
}

#[test]
fn orient3d_is_exact_on_near_coplanar_points() {
    let mut rng = Rng(7);
    let unit = (1u64 << 20) as f64;
    let snap = |x: f64| ((x * unit).round() / unit) as f32;
    let (mut naive_wrong, mut zeros) = (0, 0);
    for round in 0..20_000 {
        let p = |rng: &mut Rng, r: f64| {
            DVec3::new(rng.range(-r, r), rng.range(-r, r), rng.range(-r, r))
        };
        let pts = if round % 2 == 0 {
            // d near plane abc, rounded to the 2^-20 lattice.
            let (a, b, c) = (p(&mut rng, 15.0), p(&mut rng, 15.0), p(&mut rng, 15.0));
            let (s, t) = (rng.range(-2.0, 2.0), rng.range(-2.0, 2.0));
            let d = (a + (b - a) * s + (c - a) * t).clamp(DVec3::splat(-15.9), DVec3::splat(15.9));
            [a, b, c, d].map(|x| Vec3::new(snap(x.x), snap(x.y), snap(x.z)))
        } else {
            // d = a + s U + t W on the lattice: exactly coplanar, or one lattice step off.
            let [a, u, w] = [p(&mut rng, 4.0), p(&mut rng, 4.0), p(&mut rng, 4.0)].map(|x| {
                DVec3::new(
                    f64::from(snap(x.x)),
                    f64::from(snap(x.y)),
                    f64::from(snap(x.z)),
                )
            });
            let (s, t) = (rng.below(3) as f64 - 1.0, rng.below(3) as f64 - 1.0);
            let mut d = a + u * s + w * t;
            if rng.below(2) == 0 {
                d[rng.below(3)] += if rng.below(2) == 0 { 1.0 } else { -1.0 } / unit;
            }
            [a, a + u, a + w, d].map(|x| x.as_vec3())
        };
        let exact = orient3d_i128(pts);
        assert_eq!(orient3d(pts[0], pts[1], pts[2], pts[3]), exact, "{pts:?}");
        // Exact predicates are invariant under even permutations, flip under odd ones.
        assert_eq!(orient3d(pts[1], pts[2], pts[0], pts[3]), exact);
        assert_eq!(orient3d(pts[1], pts[0], pts[2], pts[3]), -exact);
        assert_eq!(orient3d(pts[3], pts[1], pts[2], pts[0]), -exact);
        naive_wrong += usize::from(orient3d_naive(pts) != exact);
        zeros += usize::from(exact == 0);
    }
    println!("near-coplanar: naive f64 wrong {naive_wrong} times, exact zero {zeros} times");
    assert!(
        naive_wrong > 0,
        "the sample never needed the exact fallback"
    );
    assert!(zeros > 0, "the sample never hit an exactly coplanar case");
}

#[test]
fn orient3d_handles_extreme_magnitudes() {
    // A tiny offset from a plane of huge coordinates, and tiny coordinates throughout.
    let big = 1.0e30_f32;
    let (a, b, c) = (v(-big, -big, 0.0), v(big, -big, 0.0), v(0.0, big, 0.0));
    assert_eq!(orient3d(a, b, c, v(1.0e20, 3.0e29, 1.0e-30)), 1);
    assert_eq!(orient3d(a, b, c, v(1.0e20, 3.0e29, -1.0e-30)), -1);
    assert_eq!(orient3d(a, b, c, v(1.0e20, 3.0e29, 0.0)), 0);
    let t = 1.0e-40_f32; // subnormal
    assert_eq!(
        orient3d(v(0.0, 0.0, 0.0), v(t, 0.0, 0.0), v(0.0, t, 0.0), v(t, t, t)),
        1
    );
    // Points on the line x = y = z (with exactly representable multiples) are coplanar with
    // anything through that line.
    let q = 0.1_f32;
    assert_eq!(
        orient3d(
            v(q, q, q),
            v(2.0 * q, 2.0 * q, 2.0 * q),
            v(4.0 * q, 4.0 * q, 4.0 * q),
            v(3.0, -7.0, 1.0)
        ),
        0
    );
}

/// Independent check of two triangles in general position: the interval method (each
/// triangle's crossing of the other's plane projected on the planes' common line), in `f64`.
/// Returns `None` when the configuration is too close to a boundary case to decide in floats.
fn interval_method(p: [Vec3; 3], q: [Vec3; 3]) -> Option<bool> {
    let p = p.map(Vec3::as_dvec3);
    let q = q.map(Vec3::as_dvec3);
    let margin = 1e-6;
    let plane = |t: [DVec3; 3]| {
        let n = (t[1] - t[0]).cross(t[2] - t[0]).normalize();
        (n, n.dot(t[0]))
    };
    let (n1, d1) = plane(p);
    let (n2, d2) = plane(q);
    let dq = q.map(|x| n1.dot(x) - d1);
    let dp = p.map(|x| n2.dot(x) - d2);
    if dq.iter().chain(&dp).any(|x| x.abs() < margin) {
        return None;
    }
    if dq.iter().all(|&x| x > 0.0) || dq.iter().all(|&x| x < 0.0) {
        return Some(false);
    }
    if dp.iter().all(|&x| x > 0.0) || dp.iter().all(|&x| x < 0.0) {
        return Some(false);
    }
    let line = n1.cross(n2);
    if line.length() < 1e-3 {
        return None;
    }
    let interval = |t: [DVec3; 3], d: [f64; 3]| {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for i in 0..3 {
            let j = (i + 1) % 3;
            if (d[i] > 0.0) != (d[j] > 0.0) {
                let x = t[i] + (t[j] - t[i]) * (d[i] / (d[i] - d[j]));
                lo = lo.min(line.dot(x));
                hi = hi.max(line.dot(x));
            }
        }
        (lo, hi)
    };
    let (lo1, hi1) = interval(p, dp);
    let (lo2, hi2) = interval(q, dq);
    let overlap = hi1.min(hi2) - lo1.max(lo2);
    if overlap.abs() < margin {
        None
    } else {
        Some(overlap > 0.0)
    }
}

#[test]
fn narrow_phase_agrees_with_the_interval_method() {
    let mut rng = Rng(11);
    let (mut hits, mut misses) = (0, 0);
    for _ in 0..4_000 {
        let p = [rng.vec(-1.0, 1.0), rng.vec(-1.0, 1.0), rng.vec(-1.0, 1.0)];
        let q = [rng.vec(-1.0, 1.0), rng.vec(-1.0, 1.0), rng.vec(-1.0, 1.0)];
        if let Some(expected) = interval_method(p, q) {
            assert_eq!(pair(p, q), expected, "{p:?} {q:?}");
            if expected { hits += 1 } else { misses += 1 }
        }
    }
    assert!(
        hits > 200 && misses > 200,
        "unbalanced sample: {hits} hits, {misses} misses"
    );
}

/// Independent check of the shared-vertex rule in general position: the triangles meet beyond
/// `v` iff one direction of the planes' common line lies in both wedges at `v`.
fn cone_method(v: Vec3, a1: Vec3, b1: Vec3, a2: Vec3, b2: Vec3) -> Option<bool> {
    let [v, a1, b1, a2, b2] = [v, a1, b1, a2, b2].map(Vec3::as_dvec3);
    let (u1, w1, u2, w2) = (a1 - v, b1 - v, a2 - v, b2 - v);
    let (n1, n2) = (u1.cross(w1).normalize(), u2.cross(w2).normalize());
    let line = n1.cross(n2);
    if line.length() < 1e-3 {
        return None;
    }
    let line = line.normalize();
    // Signed in-wedge margin: positive strictly inside, negative strictly outside.
    let inside = |d: DVec3, u: DVec3, w: DVec3, n: DVec3| {
        n.dot(u.normalize().cross(d))
            .min(n.dot(d.cross(w.normalize())))
    };
    let mut result = false;
    for d in [line, -line] {
        let m = inside(d, u1, w1, n1).min(inside(d, u2, w2, n2));
        if m.abs() < 1e-6 {
            return None;
        }
        result |= m > 0.0;
    }
    Some(result)
}

#[test]
fn shared_vertex_rule_agrees_with_the_cone_method() {
    let mut rng = Rng(13);
    let (mut hits, mut misses) = (0, 0);
    for _ in 0..4_000 {
        let pts = [
            rng.vec(-1.0, 1.0),
            rng.vec(-1.0, 1.0),
            rng.vec(-1.0, 1.0),
            rng.vec(-1.0, 1.0),
            rng.vec(-1.0, 1.0),
        ];
        if let Some(expected) = cone_method(pts[0], pts[1], pts[2], pts[3], pts[4]) {
            assert_eq!(
                shared_vertex(pts[0], pts[1], pts[2], pts[3], pts[4]),
                expected,
                "{pts:?}"
            );
            if expected { hits += 1 } else { misses += 1 }
        }
    }
    assert!(
        hits > 200 && misses > 200,
        "unbalanced sample: {hits} hits, {misses} misses"
    );
}

/// Integer point for the exact lattice reference below.
type I3 = [i64; 3];

fn isub(a: I3, b: I3) -> I3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn icross(a: I3, b: I3) -> I3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn idot(a: I3, b: I3) -> i64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Whether the origin lies in the closed simplex spanned by `s`; `None` when the points are
/// affinely dependent (Carathéodory: the smaller subsets cover that hull).
fn simplex_contains_origin(s: &[I3]) -> Option<bool> {
    const O: I3 = [0; 3];
    match *s {
        [a] => Some(a == O),
        [a, b] => (a != b).then(|| icross(a, b) == O && idot(a, b) <= 0),
        [a, b, c] => {
            let n = icross(isub(b, a), isub(c, a));
            (n != O).then(|| {
                idot(n, a) == 0
                    && idot(n, icross(isub(b, a), isub(O, a))) >= 0
                    && idot(n, icross(isub(c, b), isub(O, b))) >= 0
                    && idot(n, icross(isub(a, c), isub(O, c))) >= 0
            })
        }
        [a, b, c, d] => {
            let vol = |a: I3, b: I3, c: I3, d: I3| idot(isub(b, a), icross(isub(c, a), isub(d, a)));
            let full = vol(a, b, c, d);
            (full != 0).then(|| {
                [
                    vol(O, b, c, d),
                    vol(a, O, c, d),
                    vol(a, b, O, d),
                    vol(a, b, c, O),
                ]
                .iter()
                .all(|&l| l * full.signum() >= 0)
            })
        }
        _ => None,
    }
}

/// Exact reference: does the convex hull of `pts` contain the origin? Tries every subset of at
/// most four points (Carathéodory's theorem).
fn hull_contains_origin(pts: &[I3]) -> bool {
    let n = pts.len();
    (1u32..1 << n).filter(|m| m.count_ones() <= 4).any(|m| {
        let subset: Vec<I3> = (0..n)
            .filter(|&i| m & (1 << i) != 0)
            .map(|i| pts[i])
            .collect();
        simplex_contains_origin(&subset) == Some(true)
    })
}

/// Minkowski difference: hulls of `p` and `q` meet iff it contains the origin.
fn hulls_meet(p: &[I3], q: &[I3]) -> bool {
    let diff: Vec<I3> = p
        .iter()
        .flat_map(|&a| q.iter().map(move |&b| isub(a, b)))
        .collect();
    hull_contains_origin(&diff)
}

fn lattice_point(rng: &mut Rng) -> I3 {
    [0; 3].map(|_| rng.below(5) as i64 - 2)
}

fn to_vec3(p: I3) -> Vec3 {
    Vec3::new(p[0] as f32, p[1] as f32, p[2] as f32) * 0.5
}

#[test]
fn narrow_phase_is_exact_on_degenerate_lattice_configurations() {
    // Corners on a 5×5×5 lattice: coplanar, collinear, touching and zero-area triangles
    // are frequent, and the integer reference decides them exactly.
    let mut rng = Rng(17);
    let (mut hits, mut misses) = (0, 0);
    for _ in 0..3_000 {
        let p = [0; 3].map(|_| lattice_point(&mut rng));
        let q = [0; 3].map(|_| lattice_point(&mut rng));
        let expected = hulls_meet(&p, &q);
        assert_eq!(
            pair(p.map(to_vec3), q.map(to_vec3)),
            expected,
            "{p:?} {q:?}"
        );
        if expected { hits += 1 } else { misses += 1 }
    }
    assert!(
        hits > 300 && misses > 300,
        "unbalanced sample: {hits} hits, {misses} misses"
    );
}

#[test]
fn shared_vertex_rule_is_exact_on_lattice_configurations() {
    // T1 ∩ T2 ≠ {v} iff the tangent cones at v, cone(u1, w1) and cone(u2, w2) (u1 = a1 - v, ...),
    // share a non-zero vector: T1 is convex and equals v + cone(u1, w1) near v. Every non-zero
    // vector of the first cone is a positive multiple of a point of its cross-section: the
    // segment [u1, w1] when u1 × w1 ≠ 0, otherwise the non-zero points among u1, w1, each on its
    // own. With corners within 4 lattice steps, a cross-section point in the second cone is
    // within 50 generator lengths of v, so that cone can be replaced by the triangle
    // (0, M u2, M w2) with M = 1000. Degenerate triangles are included.
    let mut rng = Rng(19);
    let (mut hits, mut misses, mut degenerate) = (0, 0, 0);
    while hits + misses < 4_000 {
        // Draw from a smaller box half the time, so that degenerate corners are frequent.
        let point = |rng: &mut Rng, small: bool| {
            if small {
                [0; 3].map(|_| rng.below(3) as i64 - 1)
            } else {
                lattice_point(rng)
            }
        };
        let small = rng.below(2) == 0;
        let [v, a1, b1, a2, b2] = [0; 5].map(|_| point(&mut rng, small));
        let (u1, w1, u2, w2) = (isub(a1, v), isub(b1, v), isub(a2, v), isub(b2, v));
        let cone2 = [[0; 3], u2.map(|c| c * 1000), w2.map(|c| c * 1000)];
        let expected = if icross(u1, w1) != [0; 3] {
            hulls_meet(&[u1, w1], &cone2)
        } else {
            degenerate += 1;
            [u1, w1]
                .iter()
                .any(|&x| x != [0; 3] && hulls_meet(&[x], &cone2))
        };
        let got = shared_vertex(
            to_vec3(v),
            to_vec3(a1),
            to_vec3(b1),
            to_vec3(a2),
            to_vec3(b2),
        );
        assert_eq!(got, expected, "{v:?} {a1:?} {b1:?} {a2:?} {b2:?}");
        if expected { hits += 1 } else { misses += 1 }
    }
    assert!(
        hits > 300 && misses > 300 && degenerate > 100,
        "sample: {hits} hits, {misses} misses, {degenerate} degenerate"
    );
}

// ---------------------------------------------------------------------------------------------
// Sheets
// ---------------------------------------------------------------------------------------------

#[test]
fn flat_sheet_is_clean() {
    let (pos, tri) = grid_sheet(33, 0.1);
    let r = check(&pos, &tri);
    assert!(r.is_clean(), "{}", r.summary());
    // Rotated into a general plane, f32 rounding makes it only nearly flat: still clean.
    let rot = Quat::from_euler(glam::EulerRot::XYZ, 0.3, -0.7, 1.1);
    let moved: Vec<Vec3> = pos.iter().map(|&p| rot * p + v(0.37, -1.2, 5.0)).collect();
    let r = check(&moved, &tri);
    assert!(r.is_clean(), "{}", r.summary());
}

/// A sheet of `n` columns folded in half along column `m = n / 2`: columns past the fold lie
/// back over the first half at height `gap`.
fn folded_sheet(n: usize, h: f32, gap: f32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let (mut pos, tri) = grid_sheet(n, h);
    let m = n / 2;
    for j in 0..n {
        for i in m + 1..n {
            pos[j * n + i] = v((2 * m - i) as f32 * h, j as f32 * h, gap);
        }
    }
    (pos, tri)
}

#[test]
fn folded_sheet_is_clean_until_a_vertex_is_pushed_through() {
    let (n, h) = (17, 0.1);
    let (mut pos, tri) = folded_sheet(n, h, 0.05);
    let r = check(&pos, &tri);
    assert!(r.is_clean(), "{}", r.summary());

    // Push one vertex of the upper layer down through the lower layer.
    let pushed = (n / 2 * n + n / 2 + 4) as u32;
    pos[pushed as usize].z = -0.05;
    let r = check(&pos, &tri);
    assert!(!r.is_clean(), "pushed vertex not detected");
    let upper = |t: u32| tri[t as usize].iter().any(|&i| i as usize % n > n / 2);
    let around = |t: u32| tri[t as usize].contains(&pushed);
    let mut crossing = Vec::new();
    for &(t, u) in &r.self_pairs {
        // Every pair is one triangle around the pushed vertex and one of the lower layer.
        let (moved, other) = if around(t) { (t, u) } else { (u, t) };
        assert!(
            around(moved) && !upper(other),
            "unexpected pair ({t}, {u}): {}",
            r.summary()
        );
        crossing.push(moved);
    }
    crossing.sort_unstable();
    crossing.dedup();
    assert_eq!(
        crossing.len(),
        6,
        "all six triangles around the vertex cross the lower layer"
    );
}

// ---------------------------------------------------------------------------------------------
// Grid against brute force
// ---------------------------------------------------------------------------------------------

/// A random soup: triangles of mixed sizes with corners drawn from a shared vertex pool (so
/// edge and vertex adjacency occur), optionally snapped to a coarse lattice (so exact touching,
/// coplanar and degenerate cases occur).
fn random_soup(rng: &mut Rng, tris: usize, snap: bool) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let lattice = |x: Vec3| if snap { (x * 4.0).round() / 4.0 } else { x };
    let mut pos = Vec::new();
    let mut tri = Vec::new();
    for _ in 0..tris {
        let size = if rng.below(10) == 0 { 2.0 } else { 0.3 };
        let centre = rng.vec(-3.0, 3.0);
        let mut t = [0u32; 3];
        for slot in &mut t {
            if !pos.is_empty() && rng.below(4) == 0 {
                *slot = rng.below(pos.len()) as u32;
            } else {
                pos.push(lattice(centre + rng.vec(-size, size)));
                *slot = (pos.len() - 1) as u32;
            }
        }
        tri.push(t);
    }
    (pos, tri)
}

#[test]
fn grid_matches_brute_force_on_random_soups() {
    let mut rng = Rng(3);
    for round in 0..12 {
        let snap = round % 2 == 1;
        let (pos, tri) = random_soup(&mut rng, 300, snap);
        let (opos, otri) = random_soup(&mut rng, 150, snap);
        let cloth = TriSoup {
            positions: &pos,
            triangles: &tri,
        };
        let obstacle = TriSoup {
            positions: &opos,
            triangles: &otri,
        };
        let solids = [
            Solid::Sphere {
                centre: v(0.5, 0.0, 0.0),
                radius: 1.0,
            },
            Solid::Plane {
                point: v(0.0, 0.0, -2.5),
                normal: v(0.0, 0.0, 1.0),
            },
            Solid::Box {
                centre: v(-1.0, 1.0, 0.0),
                half_extents: v(0.5, 0.7, 0.3),
                rotation: Quat::from_rotation_z(0.4),
            },
            Solid::Capsule {
                a: v(-2.0, -2.0, 0.0),
                b: v(2.0, -2.0, 1.0),
                radius: 0.4,
            },
        ];
        let grid = find_intersections(&cloth, &[obstacle], &solids, 0.01);
        let brute = find_intersections_brute_force(&cloth, &[obstacle], &solids, 0.01);
        assert_eq!(grid, brute, "round {round}");
        assert!(
            !grid.self_pairs.is_empty()
                && !grid.mesh_pairs.is_empty()
                && !grid.solid_hits.is_empty()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Solids
// ---------------------------------------------------------------------------------------------

fn horizontal(z: f32, r: f32) -> [Vec3; 3] {
    [v(-r, -r, z), v(2.0 * r, -r, z), v(-r, 2.0 * r, z)]
}

#[test]
fn sphere_depth() {
    let s = Solid::Sphere {
        centre: v(0.0, 0.0, 0.0),
        radius: 1.0,
    };
    assert!(depth_hits(horizontal(1.01, 0.5), s, 0.005).is_empty());
    // Dipping by 0.004 < tolerance is allowed.
    assert!(depth_hits(horizontal(0.996, 0.5), s, 0.005).is_empty());
    let d = depth_hits(horizontal(0.9, 0.5), s, 0.005);
    assert!(d.len() == 1 && (d[0] - 0.1).abs() < 1e-5, "{d:?}");
}

#[test]
fn plane_depth() {
    // Non-unit normal: the depth must still be in metres.
    let s = Solid::Plane {
        point: v(0.0, 0.0, 1.0),
        normal: v(0.0, 0.0, 2.0),
    };
    let lifted = [v(0.0, 0.0, 1.001), v(1.0, 0.0, 1.5), v(0.0, 1.0, 1.2)];
    assert!(depth_hits(lifted, s, 0.0).is_empty());
    let dipped = [v(0.0, 0.0, 0.95), v(1.0, 0.0, 1.5), v(0.0, 1.0, 1.2)];
    let d = depth_hits(dipped, s, 0.01);
    assert!(d.len() == 1 && (d[0] - 0.05).abs() < 1e-6, "{d:?}");
}

#[test]
fn capsule_depth() {
    let s = Solid::Capsule {
        a: v(-1.0, 0.0, 0.0),
        b: v(1.0, 0.0, 0.0),
        radius: 0.5,
    };
    assert!(depth_hits(horizontal(0.51, 0.4), s, 0.001).is_empty());
    let d = depth_hits(horizontal(0.3, 0.4), s, 0.001);
    assert!(d.len() == 1 && (d[0] - 0.2).abs() < 1e-5, "{d:?}");
    // Pierced by the axis: the deepest point is on the axis.
    let pierced = [v(0.2, -1.0, -1.0), v(0.2, 1.0, -1.0), v(0.2, 0.0, 1.0)];
    let d = depth_hits(pierced, s, 0.001);
    assert!(d.len() == 1 && (d[0] - 0.5).abs() < 1e-6, "{d:?}");
    // Near the rounded end cap.
    let cap = [v(1.45, 0.0, 0.0), v(2.0, 0.5, 0.3), v(2.0, -0.5, 0.3)];
    let d = depth_hits(cap, s, 0.001);
    assert!(d.len() == 1 && (d[0] - 0.05).abs() < 1e-5, "{d:?}");
}

#[test]
fn box_depth() {
    let rotation = Quat::from_euler(glam::EulerRot::XYZ, 0.4, 0.2, -0.9);
    let centre = v(1.0, 2.0, -0.5);
    let s = Solid::Box {
        centre,
        half_extents: v(1.0, 0.5, 2.0),
        rotation,
    };
    let world = |t: [Vec3; 3]| t.map(|p| centre + rotation * p);
    // Above the top face (local y = 0.5).
    let above = world([v(-0.3, 0.52, -0.3), v(0.4, 0.6, -0.2), v(0.0, 0.55, 0.5)]);
    assert!(depth_hits(above, s, 0.001).is_empty());
    // One corner 0.05 through the top face, far from other faces.
    let dipped = world([v(-0.3, 0.45, -0.3), v(0.4, 0.6, -0.2), v(0.0, 0.55, 0.5)]);
    let d = depth_hits(dipped, s, 0.001);
    assert!(d.len() == 1 && (d[0] - 0.05).abs() < 1e-5, "{d:?}");
    // A large triangle through the middle: deepest point 0.5 from the y faces.
    let through = world([v(-3.0, 0.0, -3.0), v(3.0, 0.0, -3.0), v(0.0, 0.0, 5.0)]);
    let d = depth_hits(through, s, 0.001);
    assert!(d.len() == 1 && (d[0] - 0.5).abs() < 1e-5, "{d:?}");
}

/// Largest depth over a barycentric sample of the triangle, by the point depth of each solid.
fn sampled_depth(solid: &Solid, tri: [Vec3; 3]) -> f64 {
    let [p0, p1, p2] = tri.map(Vec3::as_dvec3);
    let depth = |x: DVec3| match *solid {
        Solid::Sphere { centre, radius } => f64::from(radius) - (x - centre.as_dvec3()).length(),
        Solid::Capsule { a, b, radius } => {
            let (a, b) = (a.as_dvec3(), b.as_dvec3());
            let s = ((x - a).dot(b - a) / (b - a).length_squared()).clamp(0.0, 1.0);
            f64::from(radius) - (x - (a + (b - a) * s)).length()
        }
        Solid::Box {
            centre,
            half_extents,
            rotation,
        } => {
            let r = glam::DQuat::from_xyzw(
                rotation.x.into(),
                rotation.y.into(),
                rotation.z.into(),
                rotation.w.into(),
            );
            let y = r.inverse() * (x - centre.as_dvec3());
            (half_extents.as_dvec3() - y.abs()).min_element()
        }
        Solid::Plane { point, normal } => {
            -(x - point.as_dvec3()).dot(normal.as_dvec3().normalize())
        }
    };
    let n = 96;
    let mut best = f64::MIN;
    for i in 0..=n {
        for j in 0..=n - i {
            let (s, t) = (i as f64 / n as f64, j as f64 / n as f64);
            best = best.max(depth(p0 + (p1 - p0) * s + (p2 - p0) * t));
        }
    }
    best
}

#[test]
fn solid_depths_match_dense_sampling() {
    let mut rng = Rng(5);
    let solids = [
        Solid::Sphere {
            centre: v(0.1, -0.2, 0.3),
            radius: 0.8,
        },
        Solid::Capsule {
            a: v(-0.6, 0.1, 0.0),
            b: v(0.5, -0.3, 0.4),
            radius: 0.45,
        },
        Solid::Box {
            centre: v(0.0, 0.1, -0.1),
            half_extents: v(0.7, 0.4, 0.55),
            rotation: Quat::from_euler(glam::EulerRot::ZXY, 0.7, -0.3, 0.5),
        },
    ];
    let mut checked = 0;
    for _ in 0..400 {
        let tri = [rng.vec(-1.2, 1.2), rng.vec(-1.2, 1.2), rng.vec(-1.2, 1.2)];
        let longest = (0..3)
            .map(|i| (tri[i] - tri[(i + 1) % 3]).length())
            .fold(0.0, f32::max);
        for solid in &solids {
            let sampled = sampled_depth(solid, tri);
            let hit = depth_hits(tri, *solid, 0.0);
            let exact = hit.first().map_or(0.0, |&d| f64::from(d));
            // The sampled maximum is a lower bound within the sample spacing.
            let resolution = 2.0 * f64::from(longest) / 96.0;
            if sampled > resolution {
                assert_eq!(hit.len(), 1, "{solid:?} {tri:?}: sampled depth {sampled}");
                checked += 1;
            }
            assert!(
                exact >= sampled - 1e-5,
                "{solid:?} {tri:?}: {exact} < sampled {sampled}"
            );
            assert!(
                exact <= sampled.max(0.0) + resolution,
                "{solid:?} {tri:?}: {exact} ≫ sampled {sampled}"
            );
        }
    }
    assert!(checked > 200, "only {checked} penetrating samples");
}

// ---------------------------------------------------------------------------------------------
// Timing (printed, not asserted)
// ---------------------------------------------------------------------------------------------

#[test]
fn timing_of_large_sheets() {
    for (n, wavy) in [(65, false), (65, true), (101, true)] {
        let (mut pos, tri) = grid_sheet(n, 0.02);
        if wavy {
            for p in &mut pos {
                p.z = 0.01 * (p.x * 9.0).sin() * (p.y * 7.0).cos();
            }
        }
        let cloth = TriSoup {
            positions: &pos,
            triangles: &tri,
        };
        // Best of a few runs: the machine is shared with other builds.
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let start = std::time::Instant::now();
            let report = find_intersections(&cloth, &[], &[], 0.0);
            best = best.min(start.elapsed().as_secs_f64());
            assert!(report.is_clean(), "{}", report.summary());
        }
        println!(
            "{n}x{n} grid ({} triangles, {}): best of 5 {:.2} ms",
            tri.len(),
            if wavy { "wavy" } else { "flat" },
            best * 1e3
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------------------------

#[test]
#[should_panic(expected = "uses vertex 3 of 3")]
fn out_of_range_index_panics() {
    let pos = [v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(0.0, 1.0, 0.0)];
    let _ = find_intersections(
        &TriSoup {
            positions: &pos,
            triangles: &[[0, 1, 3]],
        },
        &[],
        &[],
        0.0,
    );
}

#[test]
#[should_panic(expected = "solid 0 is invalid")]
fn zero_plane_normal_panics() {
    let pos = [v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(0.0, 1.0, 0.0)];
    let plane = Solid::Plane {
        point: Vec3::ZERO,
        normal: Vec3::ZERO,
    };
    let _ = find_intersections(
        &TriSoup {
            positions: &pos,
            triangles: &[[0, 1, 2]],
        },
        &[],
        &[plane],
        0.0,
    );
}

//! Unit tests of the collision stage.

use std::collections::HashSet;

use glam::Vec2;

use super::detect::stay_apart;
use super::*;
use crate::collide::shapes::{Motion, Pose, Shape};
use crate::mesh::generate::{GridSpec, grid};

/// A small deterministic generator in [-1, 1).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 40) as f32 / (1u64 << 23) as f32) - 1.0
    }

    fn vec(&mut self, scale: f32) -> Vec3 {
        Vec3::new(self.next(), self.next(), self.next()) * scale
    }
}

fn sheet(n: u32, size: f32, y: f32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let mesh = grid(&GridSpec {
        nx: n,
        ny: n,
        size: Vec2::splat(size),
        centre: Vec3::new(0.0, y, 0.0),
        ..GridSpec::default()
    })
    .unwrap();
    (mesh.positions, mesh.triangles)
}

/// An order-free key of a test: the point and the sorted triangle, or the
/// two sorted edges in sorted order.
fn key(kind: Kind, v: [u32; 4]) -> (Kind, [u32; 4]) {
    match kind {
        Kind::PointTriangle => {
            let mut t = [v[1], v[2], v[3]];
            t.sort_unstable();
            (kind, [v[0], t[0], t[1], t[2]])
        }
        Kind::EdgeEdge => {
            let a = [v[0].min(v[1]), v[0].max(v[1])];
            let b = [v[2].min(v[3]), v[2].max(v[3])];
            let (a, b) = if a <= b { (a, b) } else { (b, a) };
            (kind, [a[0], a[1], b[0], b[1]])
        }
    }
}

/// Every point–triangle and edge–edge test between non-adjacent features
/// of the cloth (with itself) and of the cloth against the obstacle, in
/// the shared vertex space (obstacle vertices from `n`).
fn every_test(
    n: u32,
    tris: &[[u32; 3]],
    edges: &[[u32; 2]],
    otris: &[[u32; 3]],
    oedges: &[[u32; 2]],
) -> Vec<Candidate> {
    let shift = |t: &[u32; 3]| t.map(|i| i + n);
    let oshift = |e: &[u32; 2]| e.map(|i| i + n);
    let mut all = Vec::new();
    let mut pt = |p: u32, t: [u32; 3]| {
        if !t.contains(&p) {
            all.push(Candidate {
                kind: Kind::PointTriangle,
                verts: [p, t[0], t[1], t[2]],
                layers: SWEPT | AT_START,
            });
        }
    };
    for p in 0..n {
        for t in tris {
            pt(p, *t);
        }
        for t in otris {
            pt(p, shift(t));
        }
    }
    let m = otris.iter().flatten().copied().max().map_or(0, |k| k + 1);
    for p in n..n + m {
        for t in tris {
            pt(p, *t);
        }
    }
    let mut ee = |a: [u32; 2], b: [u32; 2]| {
        if !(a.contains(&b[0]) || a.contains(&b[1])) {
            all.push(Candidate {
                kind: Kind::EdgeEdge,
                verts: [a[0], a[1], b[0], b[1]],
                layers: SWEPT | AT_START,
            });
        }
    };
    for (i, a) in edges.iter().enumerate() {
        for b in &edges[i + 1..] {
            ee(*a, *b);
        }
        for b in oedges {
            ee(*a, oshift(b));
        }
    }
    all
}

/// The feature-level cull of `find_candidates` drops no test that
/// detection would find: on a crumpled sheet over a thick obstacle sheet
/// with random velocities, every test of the brute-force list that
/// proximity (at x^n, pair η) or CCD (over the substep, η_c) detects is
/// in the substep's candidate list, every test CCD detects is in the swept
/// list, and each list holds each test once (the tree's tests and the
/// neighbour list's never overlap).
#[test]
fn feature_cull_keeps_every_detectable_test() {
    let mut rng = Lcg(7);
    let (mut x, tris) = sheet(10, 0.08, 0.0);
    for p in &mut x {
        *p += rng.vec(0.004);
    }
    let v: Vec<Vec3> = x.iter().map(|_| rng.vec(0.6)).collect();
    let (ox, otris) = sheet(6, 0.1, -0.005);
    let ov: Vec<Vec3> = ox.iter().map(|_| rng.vec(0.2)).collect();
    let edges = unique_edges(&tris);
    let oedges = unique_edges(&otris);
    let n = x.len();
    let mut cc = ClothCollision::new(&tris, &edges, &vec![0.0; edges.len()], &x);
    cc.set_obstacles(&otris, &ox);
    let thickness: Vec<f32> = (0..ox.len()).map(|k| 0.001 * (k % 3) as f32).collect();
    cc.set_obstacle_thickness(&thickness);
    let h = 0.01;
    cc.x0[..n].copy_from_slice(&x);
    cc.v[..n].copy_from_slice(&v);
    cc.x0[n..].copy_from_slice(&ox);
    cc.v[n..].copy_from_slice(&ov);
    cc.update_end_positions(h);
    let settings = CollisionSettings::default();
    let eta = settings.thickness;
    let eta_c = f64::from(eta) * CCD_TOLERANCE_FRACTION;
    let all = every_test(n as u32, &tris, &edges, &otris, &oedges);
    let arena = Bump::new();
    for reach in [Reach::Substep, Reach::Swept] {
        let close = |c: &Candidate| {
            let p = cc.positions(c, &cc.x0);
            let eta = f64::from(pair_eta(&cc.extra_thickness, cc.n, c, eta));
            match c.kind {
                Kind::PointTriangle => {
                    proximity_point_triangle(p[0], [p[1], p[2], p[3]], eta).is_some()
                }
                Kind::EdgeEdge => proximity_edge_edge([p[0], p[1]], [p[2], p[3]], eta).is_some(),
            }
        };
        let collides = |c: &Candidate| {
            let p = cc.positions(c, &cc.x0);
            ccd(c.kind, p, cc.positions(c, &cc.x1), eta_c).is_some()
        };
        let detected = |c: &Candidate| match reach {
            Reach::Substep => close(c) || collides(c),
            Reach::Swept => collides(c),
        };
        let expected: Vec<_> = all.iter().filter(|c| detected(c)).collect();
        let mut stats = CollisionStats::default();
        let mut list = ArenaVec::new_in(&arena);
        cc.find_candidates(&mut list, &settings, reach, &mut stats);
        let listed: HashSet<_> = list.iter().map(|c| key(c.kind, c.verts)).collect();
        assert_eq!(listed.len(), list.len(), "{reach:?}: a test listed twice");
        for kind in [Kind::PointTriangle, Kind::EdgeEdge] {
            let found = expected.iter().filter(|c| c.kind == kind).count();
            assert!(found >= 20, "{reach:?} {kind:?}: only {found} detections");
        }
        for c in &expected {
            assert!(
                listed.contains(&key(c.kind, c.verts)),
                "{reach:?}: detectable {c:?} culled"
            );
        }
        assert!(
            list.len() < all.len() / 10,
            "{reach:?}: {} of {} tests listed",
            list.len(),
            all.len()
        );
    }
}

/// Bridson 2002 §3.10 step 4: the last-resort zone keeps being checked.
/// A heavy patch falls through a light patch resting 1 cm above a floor,
/// stopping 5 mm short of the floor itself. With no CCD rounds and a zone
/// cap of 0, the first zone round takes the last resort, and the whole
/// cloth moves rigidly with its mean velocity (≈ −2.5 m/s, 2.5 cm over the
/// step) — through the floor, unless the next round merges the floor
/// vertices it hits, so that the zone follows the floor. (Without the
/// rounds after the last resort the light patch ends 14.75 mm below.)
#[test]
fn last_resort_zone_stops_at_the_obstacle_it_hits() {
    let (a, tris_a) = sheet(4, 0.2, 0.01);
    let (b, tris_b) = sheet(4, 0.2, 0.03);
    let na = a.len() as u32;
    let x: Vec<Vec3> = a.iter().chain(&b).copied().collect();
    let tris: Vec<[u32; 3]> = tris_a
        .iter()
        .copied()
        .chain(tris_b.iter().map(|t| t.map(|i| i + na)))
        .collect();
    let mut v = vec![Vec3::ZERO; x.len()];
    v[a.len()..].fill(Vec3::new(0.0, -2.5, 0.0));
    let (floor, floor_tris) = sheet(3, 1.0, 0.0);
    let edges = unique_edges(&tris);
    let mut cc = ClothCollision::new(&tris, &edges, &vec![0.0; edges.len()], &x);
    cc.set_obstacles(&floor_tris, &floor);
    let settings = CollisionSettings {
        ccd_rounds: 0,
        max_zone_rounds: 0,
        ..CollisionSettings::default()
    };
    let mass: Vec<f32> = (0..x.len())
        .map(|i| if i < a.len() { 0.001 } else { 0.1 })
        .collect();
    let inv_mass: Vec<f32> = mass.iter().map(|m| 1.0 / m).collect();
    let h = 0.01;
    let obstacles = ObstacleMeshes {
        x0: &floor,
        x1: &floor,
        ..ObstacleMeshes::NONE
    };
    let stats = cc.resolve(&settings, h, &x, &mut v, &mass, &inv_mass, &obstacles);
    assert!(stats.last_resort, "{stats:?}");
    let lowest = x
        .iter()
        .zip(&v)
        .map(|(p, w)| p.y + h * w.y)
        .fold(f32::INFINITY, f32::min);
    assert!(
        lowest >= 0.0,
        "a vertex ends {:.2} mm below the floor",
        -1e3 * lowest
    );
}

/// The last resort against bodies that move differently: two resting floors 0.6 m apart
/// with patches A and C falling into them at 2 m/s, and between them a ceiling coming down
/// at 2 m/s onto patch B, which rises into it at 2 m/s. With no rounds, the first detection
/// pass takes the last resort; the cloth and the three bodies form one zone, whose best fit
/// (no rigid motion rests at both ends and goes down in the middle) carries A and C into
/// their floors. No new body is left to join, so the cloth gives way: A and C follow their
/// floors (they stop) and B the ceiling, and the check finds nothing left.
#[test]
fn last_resort_gives_way_between_bodies_that_move_differently() {
    let shift = |(x, t): (Vec<Vec3>, Vec<[u32; 3]>), dx: f32| {
        (
            x.iter()
                .map(|p| *p + Vec3::new(dx, 0.0, 0.0))
                .collect::<Vec<_>>(),
            t,
        )
    };
    let join = |parts: &[&(Vec<Vec3>, Vec<[u32; 3]>)]| {
        let (mut x, mut t) = (Vec::new(), Vec::new());
        for (px, pt) in parts {
            let base = x.len() as u32;
            x.extend_from_slice(px);
            t.extend(pt.iter().map(|tri| tri.map(|i| i + base)));
        }
        (x, t)
    };
    let a = shift(sheet(4, 0.1, 0.005), -0.3);
    let b = shift(sheet(4, 0.1, 0.02), 0.0);
    let c = shift(sheet(4, 0.1, 0.005), 0.3);
    let (x, tris) = join(&[&a, &b, &c]);
    let falling = Vec3::new(0.0, -2.0, 0.0);
    let mut v = vec![falling; x.len()];
    v[a.0.len()..a.0.len() + b.0.len()].fill(-falling);
    let left = shift(sheet(3, 0.3, 0.0), -0.3);
    let right = shift(sheet(3, 0.3, 0.0), 0.3);
    let ceiling = sheet(3, 0.2, 0.03);
    let (soup, soup_tris) = join(&[&left, &ceiling, &right]);
    let h = 0.01;
    let ceiling_range = left.0.len()..left.0.len() + ceiling.0.len();
    let soup_end: Vec<Vec3> = soup
        .iter()
        .enumerate()
        .map(|(k, p)| {
            if ceiling_range.contains(&k) {
                *p + h * falling
            } else {
                *p
            }
        })
        .collect();
    let edges = unique_edges(&tris);
    let mut cc = ClothCollision::new(&tris, &edges, &vec![0.0; edges.len()], &x);
    cc.set_obstacles(&soup_tris, &soup);
    let settings = CollisionSettings {
        ccd_rounds: 0,
        max_zone_rounds: 0,
        ..CollisionSettings::default()
    };
    let mass = vec![0.01f32; x.len()];
    let inv_mass: Vec<f32> = mass.iter().map(|m| 1.0 / m).collect();
    let obstacles = ObstacleMeshes {
        x0: &soup,
        x1: &soup_end,
        ..ObstacleMeshes::NONE
    };
    let stats = cc.resolve(&settings, h, &x, &mut v, &mass, &inv_mass, &obstacles);
    assert!(stats.last_resort && stats.last_resort_gave_way, "{stats:?}");
    assert!(!stats.last_resort_stopped, "{stats:?}");
    assert_eq!(stats.last_resort_hits, 0, "{stats:?}");
    let in_b = a.0.len()..a.0.len() + b.0.len();
    for (i, w) in v.iter().enumerate() {
        let want = if in_b.contains(&i) {
            falling
        } else {
            Vec3::ZERO
        };
        assert!((*w - want).length() < 1e-4, "vertex {i}: {w}");
    }
}

/// A last resort that cannot clear its hits stops the cloth (`last_resort_stopped`): two
/// triangles of one cloth, a vertex of one lying on the other (distance 0), moving together
/// at 1 m/s. Every zone move is a translation that keeps them touching, so CCD reports the
/// pair in every round; with a zone cap of 0 the first round takes the last resort, the next
/// finds the same hit with nothing left to merge, and the free vertices keep x^n (their
/// velocity is zero) instead of taking a move the stage could not check. Without the stop
/// they would end with the zone's velocity.
#[test]
fn last_resort_that_cannot_clear_its_hits_stops_the_cloth() {
    let x = vec![
        Vec3::new(0.0, 0.0, 0.0),
        Vec3::new(0.1, 0.0, 0.0),
        Vec3::new(0.0, 0.0, 0.1),
        Vec3::new(0.02, 0.0, 0.02),
        Vec3::new(0.12, 0.05, 0.02),
        Vec3::new(0.02, 0.05, 0.12),
    ];
    let tris = vec![[0, 2, 1], [3, 5, 4]];
    let edges = unique_edges(&tris);
    let mut cc = ClothCollision::new(&tris, &edges, &vec![0.0; edges.len()], &x);
    let settings = CollisionSettings {
        ccd_rounds: 0,
        max_zone_rounds: 0,
        ..CollisionSettings::default()
    };
    let mass = vec![0.01f32; x.len()];
    let inv_mass: Vec<f32> = mass.iter().map(|m| 1.0 / m).collect();
    let mut v = vec![Vec3::new(1.0, 0.0, 0.0); x.len()];
    let obstacles = ObstacleMeshes::NONE;
    let stats = cc.resolve(&settings, 0.01, &x, &mut v, &mass, &inv_mass, &obstacles);
    assert!(stats.last_resort, "{stats:?}");
    assert!(stats.last_resort_stopped, "{stats:?}");
    assert!(v.iter().all(|w| *w == Vec3::ZERO), "{v:?}");
}

/// One free triangle: vertex 0 at `p`, the others 0.5 m farther out along
/// `normal` (never close to anything), masses 0.01 kg.
fn lone_triangle(p: Vec3, normal: Vec3, tangent: Vec3) -> (ClothCollision, Vec<Vec3>) {
    let x = vec![p, p + 0.5 * normal, p + 0.5 * normal + 0.1 * tangent];
    let tris = [[0, 1, 2]];
    let edges = unique_edges(&tris);
    let cc = ClothCollision::new(&tris, &edges, &vec![0.0; edges.len()], &x);
    (cc, x)
}

/// Runs the stage (no CCD rounds needed: nothing crosses) on the lone
/// triangle against `colliders` over the part `[s0, 1]` of a substep;
/// returns vertex 0's new velocity and the close pairs.
fn repel_vertex(
    p: Vec3,
    normal: Vec3,
    tangent: Vec3,
    v0: Vec3,
    colliders: &[ColliderView],
    h: f32,
    s0: f32,
) -> (Vec3, u32) {
    let (mut cc, x) = lone_triangle(p, normal, tangent);
    let mass = [0.01; 3];
    let inv_mass = [100.0; 3];
    let mut v = vec![v0, Vec3::ZERO, Vec3::ZERO];
    let obstacles = ObstacleMeshes {
        colliders,
        s0,
        ..ObstacleMeshes::NONE
    };
    let settings = CollisionSettings::default();
    let stats = cc.resolve(&settings, h, &x, &mut v, &mass, &inv_mass, &obstacles);
    assert_eq!(v[1], Vec3::ZERO);
    assert_eq!(v[2], Vec3::ZERO);
    (v[0], stats.proximity_pairs)
}

fn collider(shape: Shape, pose: Pose, motion: Motion) -> ColliderView {
    ColliderView {
        shape,
        pose,
        motion,
        friction: 0.3,
    }
}

/// A vertex 1 mm off a plane, sphere, capsule or box (η = 4 mm, so the overlap
/// is d = 3 mm), approaching at 1 m/s and sliding at 0.5 m/s, m = 0.01 kg,
/// h = 0.01 s, k = 100 N/m, μ = √(0.3 · 0.3): Bridson et al. 2002
/// (§6.2–6.3) prescribes (a) the approach cancelled, (b) the spring change
/// min(hkd/m, 0.1 d/h) = min(0.3, 0.03) = 0.03 m/s outwards, then friction
/// removing μ Δv_N = 0.3 · 1.03 = 0.309 m/s of the slide. The stage applies
/// it for the sphere and the capsule; the plane and the box are left to
/// their tessellations (the vertex keeps its velocity), and
/// [`response::repel_point_surface`] with their surface points gives the
/// same prescribed change.
#[test]
fn vertex_near_a_smooth_collider_gets_bridsons_repulsion_and_friction() {
    let pose = Pose {
        translation: Vec3::new(0.1, 0.2, 0.3),
        rotation: glam::Quat::from_rotation_z(0.3),
    };
    let cases = [
        (Shape::Plane, Vec3::new(0.2, 0.0, -0.1), Vec3::Y, Vec3::X),
        (
            Shape::Sphere { radius: 0.3 },
            0.3 * Vec3::new(1.0, 1.0, 0.0).normalize(),
            Vec3::new(1.0, 1.0, 0.0).normalize(),
            Vec3::Z,
        ),
        (
            Shape::Capsule {
                radius: 0.1,
                half_length: 0.5,
            },
            Vec3::new(0.1, 0.2, 0.0),
            Vec3::X,
            Vec3::Y,
        ),
        (
            Shape::Cuboid {
                half_extents: Vec3::new(0.2, 0.1, 0.3),
            },
            Vec3::new(0.05, 0.1, 0.1),
            Vec3::Y,
            Vec3::X,
        ),
    ];
    for (shape, local_p, local_n, local_t) in cases {
        let n = pose.rotation * local_n;
        let t = pose.rotation * local_t;
        let p = pose.transform_point(local_p) + 0.001 * n;
        let v0 = -1.0 * n + 0.5 * t;
        let col = collider(shape, pose, Motion::default());
        let (v, close) = repel_vertex(p, n, t, v0, &[col], 0.01, 0.0);
        let expected = 0.03 * n + (0.5 - 0.309) * t;
        if shape.repels_from_surface() {
            assert_eq!(close, 1, "{shape:?}");
            assert!(
                v.abs_diff_eq(expected, 1e-5),
                "{shape:?}: {v} != {expected}"
            );
        } else {
            assert_eq!((v, close), (v0, 0), "{shape:?}");
        }
        let sp = shape.surface_point(&pose, p);
        let mut w = v0;
        response::repel_point_surface(
            &mut w,
            100.0,
            Vec3::ZERO,
            sp.normal,
            0.004 - sp.distance,
            0.01,
            100.0,
            0.3,
        );
        assert!(
            w.abs_diff_eq(expected, 1e-5),
            "{shape:?}: {w} != {expected}"
        );
    }
}

/// Moving colliders: the obstacle side moves with the surface point
/// nearest the vertex. A sphere rising at 0.5 m/s under a resting vertex
/// 1 mm above its top: (a) 0.5 m/s, (b) + 0.03 m/s. A sphere (r = 0.3 m)
/// spinning at 0.02 rad/s about y under a resting vertex 1 mm off its
/// equator, whose surface slides at 6 mm/s there: (b) 0.03 m/s outwards,
/// and friction μ Δv_N = 9 mm/s ≥ 6 mm/s, so the vertex sticks (static
/// friction: it takes the surface's tangential velocity).
#[test]
fn moving_collider_pushes_and_drags_the_vertex() {
    let rising = Motion {
        linear_velocity: Vec3::new(0.0, 0.5, 0.0),
        angular_velocity: Vec3::ZERO,
    };
    let ball = collider(Shape::Sphere { radius: 0.3 }, Pose::IDENTITY, rising);
    let p = Vec3::new(0.0, 0.301, 0.0);
    let (v, _) = repel_vertex(p, Vec3::Y, Vec3::X, Vec3::ZERO, &[ball], 0.01, 0.0);
    assert!(v.abs_diff_eq(Vec3::new(0.0, 0.53, 0.0), 1e-6), "{v}");

    let spin = Motion {
        linear_velocity: Vec3::ZERO,
        angular_velocity: Vec3::new(0.0, 0.02, 0.0),
    };
    let ball = collider(Shape::Sphere { radius: 0.3 }, Pose::IDENTITY, spin);
    let p = Vec3::new(0.301, 0.0, 0.0);
    let (v, close) = repel_vertex(p, Vec3::X, Vec3::Z, Vec3::ZERO, &[ball], 0.01, 0.0);
    assert_eq!(close, 1);
    assert!(v.abs_diff_eq(Vec3::new(0.03, 0.0, -0.006), 1e-6), "{v}");
}

/// Over the part [s0, 1] of a substep (step control, IMEX pieces) the
/// collider stands where its motion has taken it at s0: a sphere rising at
/// 1 m/s over a 10 ms substep is 5 mm up at s0 = 0.5 (the part lasts
/// h = 5 ms), so a vertex 7.5 mm above its top is 2.5 mm off it, within η; at the
/// start of the substep it is 7.5 mm off, out of reach.
#[test]
fn collider_pose_follows_the_covered_part_of_the_substep() {
    let rising = Motion {
        linear_velocity: Vec3::new(0.0, 1.0, 0.0),
        angular_velocity: Vec3::ZERO,
    };
    let ball = collider(Shape::Sphere { radius: 0.3 }, Pose::IDENTITY, rising);
    let p = Vec3::new(0.0, 0.3075, 0.0);
    let v0 = Vec3::new(0.0, 1.0, 0.0);
    let (_, close) = repel_vertex(p, Vec3::Y, Vec3::X, v0, &[ball], 0.01, 0.0);
    assert_eq!(close, 0);
    let (v, close) = repel_vertex(p, Vec3::Y, Vec3::X, v0, &[ball], 0.005, 0.5);
    assert_eq!(close, 1);
    // Moving with the sphere: no inelastic part; the spring adds
    // min(hkd/m, 0.1 d/h) = min(0.075, 0.03) with d = 1.5 mm, h = 5 ms.
    assert!(v.abs_diff_eq(Vec3::new(0.0, 1.03, 0.0), 1e-5), "{v}");
}

/// With the sphere's tessellation flagged as the collider's, the proximity
/// search leaves it out: a small sheet resting 2 mm above the sphere's top
/// has exactly one close pair per vertex (the vertex–surface pairs), not
/// the vertex–triangle and edge–edge pairs of the tessellation, and every
/// vertex gets the capped spring 0.1 d/h along its own normal.
#[test]
fn curved_collider_tessellation_is_left_out_of_the_proximity_search() {
    let r = 0.3;
    let (x, tris) = sheet(4, 0.02, r + 0.002);
    let ball = crate::mesh::icosphere(r, 4).unwrap();
    let edges = unique_edges(&tris);
    let mass = vec![0.01; x.len()];
    let inv_mass = vec![100.0; x.len()];
    let shape = Shape::Sphere { radius: r };
    let sphere = collider(shape, Pose::IDENTITY, Motion::default());
    let flags = vec![true; ball.positions.len()];
    let settings = CollisionSettings::default();
    let h = 0.01;
    let run = |analytic: &[bool], colliders: &[ColliderView]| {
        let mut cc = ClothCollision::new(&tris, &edges, &vec![0.0; edges.len()], &x);
        cc.set_obstacles(&ball.triangles, &ball.positions);
        let mut v = vec![Vec3::ZERO; x.len()];
        let obstacles = ObstacleMeshes {
            x0: &ball.positions,
            x1: &ball.positions,
            analytic,
            colliders,
            collider_vertices: &[[0, ball.positions.len() as u32]],
            ..ObstacleMeshes::NONE
        };
        let stats = cc.resolve(&settings, h, &x, &mut v, &mass, &inv_mass, &obstacles);
        (v, stats.proximity_pairs)
    };
    let (v, close) = run(&flags, &[sphere]);
    assert_eq!(close as usize, x.len());
    for (p, w) in x.iter().zip(&v) {
        let sp = shape.surface_point(&Pose::IDENTITY, *p);
        let expected = (0.1 * (0.004 - sp.distance) / h) * sp.normal;
        assert!(w.abs_diff_eq(expected, 1e-5), "{w} != {expected}");
    }
    let (_, tessellation_pairs) = run(&[], &[]);
    assert!(
        tessellation_pairs as usize > x.len(),
        "{tessellation_pairs}"
    );
}

/// The searches of later CCD rounds re-query only the triangles holding a vertex whose
/// velocity changed, yet end with the list a full search at the new velocities gives: on a
/// crumpled sheet over an obstacle sheet, with a third of the vertices given new velocities,
/// the updated swept list and a fresh swept list hold the same tests, each once.
#[test]
fn incremental_search_finds_what_a_full_search_finds() {
    let mut rng = Lcg(11);
    let (mut x, tris) = sheet(10, 0.08, 0.0);
    for p in &mut x {
        *p += rng.vec(0.004);
    }
    let v: Vec<Vec3> = x.iter().map(|_| rng.vec(0.6)).collect();
    let (ox, otris) = sheet(6, 0.1, -0.005);
    let edges = unique_edges(&tris);
    let n = x.len();
    let mut cc = ClothCollision::new(&tris, &edges, &vec![0.0; edges.len()], &x);
    cc.set_obstacles(&otris, &ox);
    let h = 0.01;
    cc.x0[..n].copy_from_slice(&x);
    cc.v[..n].copy_from_slice(&v);
    cc.x0[n..].copy_from_slice(&ox);
    cc.update_end_positions(h);
    let settings = CollisionSettings::default();
    let arena = Bump::new();
    let mut stats = CollisionStats::default();
    let mut updated = ArenaVec::new_in(&arena);
    cc.find_candidates(&mut updated, &settings, Reach::Swept, &mut stats);
    let before = updated.len();
    cc.changed.fill(false);
    for i in (0..n).filter(|i| i % 3 == 0) {
        cc.v[i] = rng.vec(0.6);
        cc.changed[i] = true;
    }
    cc.update_end_positions(h);
    let mut scratch = ArenaVec::new_in(&arena);
    cc.update_candidates(
        &mut updated,
        &mut scratch,
        &settings,
        Reach::Swept,
        &mut stats,
    );
    let mut fresh = ArenaVec::new_in(&arena);
    cc.find_candidates(&mut fresh, &settings, Reach::Swept, &mut stats);
    let a: HashSet<_> = updated.iter().map(|c| key(c.kind, c.verts)).collect();
    let b: HashSet<_> = fresh.iter().map(|c| key(c.kind, c.verts)).collect();
    assert_eq!(a.len(), updated.len(), "a test listed twice");
    assert!(
        before > 100 && fresh.len() > 100,
        "{before} {}",
        fresh.len()
    );
    assert_eq!(a, b);
}

/// A vertex shot at a sphere (and a sphere moving onto a vertex) is stopped by the vertex CCD
/// against the exact surface: the vertex ends at the separation of
/// `ClothCollision::analytic_separation` from the surface, not past it, and the other vertices
/// of the lone triangle, away from the sphere, are untouched.
#[test]
fn vertex_ccd_stops_at_the_exact_sphere() {
    let r = 0.3;
    let shape = Shape::Sphere { radius: r };
    let h = 0.01;
    let settings = CollisionSettings::default();
    // (vertex velocity, sphere velocity): the vertex falls at 3 m/s from 2 cm above a
    // resting sphere; the sphere rises at 3 m/s under a resting vertex.
    for (v0, ball) in [
        (Vec3::new(0.0, -3.0, 0.0), Vec3::ZERO),
        (Vec3::ZERO, Vec3::new(0.0, 3.0, 0.0)),
    ] {
        let p = Vec3::new(0.0, r + 0.02, 0.0);
        let (mut cc, x) = lone_triangle(p, Vec3::X, Vec3::Z);
        let motion = Motion {
            linear_velocity: ball,
            angular_velocity: Vec3::ZERO,
        };
        let colliders = [collider(shape, Pose::IDENTITY, motion)];
        // The CCD pass alone (the repulsion would already stop the vertex at η).
        cc.x0.copy_from_slice(&x);
        cc.v.copy_from_slice(&[v0, Vec3::ZERO, Vec3::ZERO]);
        cc.inv_mass.fill(100.0);
        cc.dirty.fill(true);
        let s_min = min_separation(f64::from(settings.thickness)) as f32;
        let hits = cc.analytic_ccd(&colliders, 0.0, &settings, h, s_min);
        let v = cc.v.clone();
        assert_eq!(hits, 1);
        let sep = cc.analytic_separation(r, s_min);
        let end = x[0] + h * v[0];
        let centre = ball * h;
        let gap = (end - centre).length() - r;
        assert!(
            (gap - sep).abs() < 1e-5,
            "gap {gap} separation {sep}, v {}",
            v[0]
        );
        assert_eq!(v[1], Vec3::ZERO);
        assert_eq!(v[2], Vec3::ZERO);
    }
}

/// Two single-triangle cloths sharing a stage, the second's triangle `gap` above the first,
/// both at rest: the proximity pairs the stage finds between them with `thickness` per member
/// and, when `apart`, the two told not to collide.
fn shared_pair_proximities(gap: f32, thickness: [f32; 2], apart: bool) -> u32 {
    let tri = [[0u32, 1, 2]];
    let edges = [[0u32, 1], [0, 2], [1, 2]];
    let rest = [0.1f32, 0.1, 0.1414];
    let lower = [
        Vec3::ZERO,
        Vec3::new(0.1, 0.0, 0.0),
        Vec3::new(0.0, 0.0, 0.1),
    ];
    let upper = lower.map(|p| p + Vec3::new(0.01, gap, 0.01));
    let members = [&lower, &upper].map(|x| MemberMesh {
        triangles: &tri,
        edges: &edges,
        rest_lengths: &rest,
        positions: x,
    });
    let mut cc = ClothCollision::new_shared(&members);
    let settings = thickness.map(|t| MemberSettings {
        thickness: t,
        friction: 0.3,
        self_collision: true,
    });
    cc.set_members(&settings, |_, _| apart);
    let stage = CollisionSettings {
        thickness: thickness[0].min(thickness[1]),
        strain_limit: None,
        ..CollisionSettings::default()
    };
    let x: Vec<Vec3> = lower.iter().chain(upper.iter()).copied().collect();
    let mut v = vec![Vec3::ZERO; 6];
    let mass = vec![0.01f32; 6];
    let inv_mass = vec![100.0f32; 6];
    let stats = cc.resolve(
        &stage,
        1.0 / 120.0,
        &x,
        &mut v,
        &mass,
        &inv_mass,
        &ObstacleMeshes::NONE,
    );
    stats.proximity_pairs
}

#[test]
fn a_pair_of_two_cloths_is_close_within_the_larger_thickness() {
    // 5 mm apart: close for a 6 mm cloth over a 2 mm one, whichever is on top.
    assert!(shared_pair_proximities(0.005, [0.002, 0.006], false) > 0);
    assert!(shared_pair_proximities(0.005, [0.006, 0.002], false) > 0);
    // Not close when both are thinner than the gap.
    assert_eq!(shared_pair_proximities(0.005, [0.002, 0.004], false), 0);
    // Told not to collide: never close.
    assert_eq!(shared_pair_proximities(0.001, [0.004, 0.004], true), 0);
    assert!(shared_pair_proximities(0.001, [0.004, 0.004], false) > 0);
}

/// The point–triangle box margin is conservative: every point the proximity test accepts lies
/// within it of the triangle's box, for triangles of every shape, points sampled at the edge of
/// the acceptance band (barycentric weights around `[−δ, 1 + δ]`, plane distances around η).
/// The largest excess seen comes close to what the geometry allows (at most √2 η: the plane's share and
/// the weights' share of one axis cannot both be whole).
#[test]
fn point_triangle_margin_holds_every_accepted_point() {
    let mut rng = Lcg(7);
    let mut largest_excess = 0.0f32;
    let mut accepted = 0;
    for _ in 0..20_000 {
        let scale = 0.02 * (1.0 + rng.next());
        let tri = [rng.vec(scale), rng.vec(scale), rng.vec(scale)];
        let eta = 0.004 * (1.1 + rng.next()) as f64;
        let d = tri.map(Vec3::as_dvec3);
        let longest = (d[1] - d[0])
            .length()
            .max((d[2] - d[1]).length())
            .max((d[0] - d[2]).length());
        let delta = eta / longest;
        let n = (d[1] - d[0]).cross(d[2] - d[0]);
        if n.length() <= 0.0 {
            continue;
        }
        let n = n.normalize();
        // Weights near the band's corners: one or two at −δ, a little beyond either way.
        let mut w = [0.0f64; 3];
        for wk in &mut w {
            let r = f64::from(rng.next());
            *wk = if r < -0.3 {
                -delta * (1.0 + 0.05 * f64::from(rng.next()))
            } else {
                0.5 + 0.5 * r
            };
        }
        let sum: f64 = w.iter().sum();
        if sum.abs() < 1e-9 {
            continue;
        }
        let q = d[0] * w[0] / sum + d[1] * w[1] / sum + d[2] * w[2] / sum;
        let p = (q + n * eta * f64::from(rng.next())).as_vec3();
        if proximity_point_triangle(p.as_dvec3(), d, eta).is_none() {
            continue;
        }
        accepted += 1;
        let m = margin(Kind::PointTriangle, eta);
        assert!(
            near(&[p], &tri, m),
            "an accepted point lies outside the margin: p {p:?}, tri {tri:?}, eta {eta}"
        );
        let (lo, hi) = tri.iter().fold(
            (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
            |(lo, hi), x| (lo.min(*x), hi.max(*x)),
        );
        let excess = (lo - p).max(p - hi).max_element() / eta as f32;
        largest_excess = largest_excess.max(excess);
    }
    assert!(accepted > 1000, "only {accepted} points accepted");
    assert!(
        largest_excess > 1.2,
        "the samples came no closer than {largest_excess} η to the bound"
    );
}

/// The start-distance pre-test of CCD never excludes a hit: random point–triangle and edge–edge
/// stencils, a few CCD tolerances apart (or ten times that) and moving about as far, are tested by both; every
/// stencil CCD hits passes the pre-test, and the pre-test excludes a share of the misses.
#[test]
fn ccd_distance_pretest_keeps_every_hit() {
    let mut rng = Lcg(11);
    let eta_c = 4e-5;
    let (mut hits, mut excluded) = (0, 0);
    for i in 0..40_000 {
        let kind = if i % 2 == 0 {
            Kind::PointTriangle
        } else {
            Kind::EdgeEdge
        };
        let size = 0.0156;
        let reach = eta_c as f32 * (1.0 + 4.0 * (1.0 + rng.next()));
        let base = [rng.vec(size), rng.vec(size), rng.vec(size), rng.vec(size)];
        // Bring side A next to side B: its first vertex within a few tolerances of B's first
        // (every other pair of stencils ten times farther).
        let spread = if (i / 2) % 2 == 0 { 1.0 } else { 10.0 };
        let shift = base[2] - base[0] + rng.vec(reach * spread);
        let start: [DVec3; 4] = std::array::from_fn(|k| {
            let a_side = if kind == Kind::PointTriangle {
                k < 1
            } else {
                k < 2
            };
            (if a_side { base[k] + shift } else { base[k] }).as_dvec3()
        });
        let end: [DVec3; 4] = std::array::from_fn(|k| start[k] + rng.vec(reach).as_dvec3());
        let hit = ccd(kind, start, end, eta_c).is_some();
        let apart = stay_apart(kind, &start, &end, eta_c);
        assert!(
            !(hit && apart),
            "the pre-test excluded a hit: {kind:?} {start:?} -> {end:?}"
        );
        hits += usize::from(hit);
        excluded += usize::from(apart);
    }
    assert!(hits > 500, "only {hits} hits");
    assert!(excluded > 5_000, "only {excluded} stencils excluded");
}

/// The separating-axis bound the detection pre-tests start from never exceeds the exact distance:
/// random point–triangle and edge–edge stencils at a cloth's spacing, some flattened into one
/// plane (a flat sheet's neighbours, where the bound has to separate features to be of use), are
/// measured both ways; the bound is below every exact distance and separates a share of the
/// stencils by more than the proximity margin.
#[test]
fn distance_bound_stays_below_the_exact_distance() {
    let mut rng = Lcg(23);
    let eta = 0.004;
    let mut decided = 0;
    for i in 0..40_000 {
        let kind = if i % 2 == 0 {
            Kind::PointTriangle
        } else {
            Kind::EdgeEdge
        };
        let flat = (i / 2) % 2 == 0;
        let q: [DVec3; 4] = std::array::from_fn(|_| {
            let mut v = rng.vec(0.03);
            if flat {
                v.y = 1e-4 * rng.next();
            }
            v.as_dvec3()
        });
        let exact = match kind {
            Kind::PointTriangle => {
                let (closest, _) = closest_point_triangle(q[0], [q[1], q[2], q[3]]);
                (q[0] - closest).length()
            }
            Kind::EdgeEdge => closest_points_edge_edge([q[0], q[1]], [q[2], q[3]]).distance,
        };
        let bound = detect::distance_lower_bound(kind, &q);
        assert!(
            bound <= exact + 1e-12,
            "{kind:?} {q:?}: bound {bound} above the distance {exact}"
        );
        decided += usize::from(surely_far(kind, &q, eta));
    }
    assert!(decided > 8_000, "the bound decided only {decided} stencils");
}

/// The `f32` screen of the separating-axis bound brackets what the `f64` bound computes from
/// the same positions (its upper end where it claims one), and its closing brackets the `f64`
/// closing: random point–triangle and edge–edge stencils, from a millimetre to a metre across,
/// some flattened into a plane, placed up to a kilometre from the origin and moved by nothing up
/// to a few centimetres. On the cloth-spacing stencils it decides nearly every test either way
/// at the proximity margin.
#[test]
fn screened_bounds_bracket_the_f64_bound() {
    use super::detect::{closing_and_limit, largest_coordinate, screened_bounds, screened_closing};
    let mut rng = Lcg(41);
    let eta = 0.004;
    let threshold = f64::from(detect::margin(Kind::PointTriangle, eta)) + detect::BOUND_SLACK;
    let (mut stencils, mut screened_decided) = (0, 0);
    for i in 0..200_000 {
        let kind = if i % 2 == 0 {
            Kind::PointTriangle
        } else {
            Kind::EdgeEdge
        };
        let size = [0.03, 0.001, 1.0, 0.03][(i / 2) % 4];
        let offset = rng.vec([0.0, 1.0, 1000.0][(i / 8) % 3]);
        let flat = (i / 24) % 2 == 0;
        let moved = [0.0, 1e-5, 0.003, 0.05][(i / 48) % 4];
        let start: [Vec3; 4] = std::array::from_fn(|_| {
            let mut v = rng.vec(size);
            if flat {
                v.y = 1e-4 * size * rng.next();
            }
            offset + v
        });
        let end: [Vec3; 4] = std::array::from_fn(|k| start[k] + rng.vec(moved));
        let (s64, e64) = (start.map(Vec3::as_dvec3), end.map(Vec3::as_dvec3));
        let bound = detect::distance_lower_bound(kind, &s64);
        let (low, high) = screened_bounds(kind, &start, largest_coordinate(&start));
        assert!(
            low.is_nan() || (f64::from(low) <= bound && bound <= f64::from(high)),
            "{kind:?} {start:?}: screen [{low}, {high}] misses the f64 bound {bound}"
        );
        let (closing, _) = closing_and_limit(kind, &s64, &e64, 0.0);
        let (closing_low, closing_high) = screened_closing(kind, &start, &end);
        assert!(
            f64::from(closing_low) <= closing && closing <= f64::from(closing_high),
            "{kind:?} {start:?} → {end:?}: screened closing [{closing_low}, {closing_high}] \
             misses {closing}"
        );
        if kind == Kind::PointTriangle && size == 0.03 && offset.length() < 2.0 {
            stencils += 1;
            let t = threshold as f32;
            screened_decided += usize::from(low > t || high < t);
        }
    }
    assert!(stencils > 10_000, "only {stencils} cloth-spacing stencils");
    assert!(
        screened_decided * 1000 >= stencils * 999,
        "the screen decided {screened_decided} of {stencils} stencils"
    );
}

/// A triangle's box from its corners' segment boxes is the box of its six corner positions that
/// [`swept_triangle_boxes`] computes, bit for bit: random cloth and obstacle triangles (the
/// latter offset into the shared space), random segments, grown by a margin.
#[test]
fn triangle_boxes_from_points_match_swept_boxes() {
    use crate::collide::bvh::swept_triangle_boxes;
    let mut rng = Lcg(57);
    let num_vertices = 200;
    let x0: Vec<Vec3> = (0..num_vertices).map(|_| rng.vec(1.0)).collect();
    let x1: Vec<Vec3> = x0.iter().map(|x| *x + rng.vec(0.02)).collect();
    let mut points = vec![Aabb::EMPTY; num_vertices];
    broad_phase::vertex_boxes(&x0, &x1, &mut points);
    let offset = 50;
    let tris: Vec<[u32; 3]> = (0..5000)
        .map(|_| std::array::from_fn(|_| ((rng.next() + 1.0) * 0.5 * 149.0) as u32 % 150))
        .collect();
    for (offset, margin) in [(0u32, 0.002f32), (offset, 0.0005)] {
        let (lo, hi) = (offset as usize, offset as usize + 150);
        let mut swept = vec![Aabb::EMPTY; tris.len()];
        swept_triangle_boxes(&x0[lo..hi], &x1[lo..hi], &tris, margin, &mut swept);
        let mut from_points = vec![Aabb::EMPTY; tris.len()];
        broad_phase::triangle_boxes_of_points(&points, &tris, offset, margin, &mut from_points);
        assert_eq!(swept, from_points);
    }
}

/// The neighbour bounds kept from a reference (`reference_bounds.rs`) leave the list and its
/// order as they are, clear only bits whose detection answers no, and decide most tests: a
/// crumpled sheet searched once (setting the reference), moved on (together, up to 0.35 mm
/// apart) and searched again, against a fresh stage's search of the moved sheet.
#[test]
fn kept_neighbour_bounds_clear_only_what_detection_rejects() {
    let mut rng = Lcg(23);
    // A grid spacing of 15 mm, as drape-65's, against a thickness of 4 mm.
    let (x, tris) = sheet(14, 0.2, 0.0);
    let x: Vec<Vec3> = x.iter().map(|p| *p + rng.vec(0.003)).collect();
    let edges = unique_edges(&tris);
    let n = x.len();
    let h = 0.01;
    let settings = CollisionSettings::default();
    let eta = settings.thickness;
    let eta_c = f64::from(eta) * CCD_TOLERANCE_FRACTION;
    let load = |cc: &mut ClothCollision, x: &[Vec3], v: &[Vec3]| {
        cc.x0[..n].copy_from_slice(x);
        cc.v[..n].copy_from_slice(v);
        cc.update_end_positions(h);
    };
    let arena = Bump::new();
    let mut stats = CollisionStats::default();
    let mut kept = ClothCollision::new(&tris, &edges, &vec![0.0; edges.len()], &x);
    let common = Vec3::new(0.3, -0.5, 0.1);
    let v: Vec<Vec3> = x.iter().map(|_| common + rng.vec(0.01)).collect();
    load(&mut kept, &x, &v);
    let mut list = ArenaVec::new_in(&arena);
    kept.find_candidates(&mut list, &settings, Reach::Substep, &mut stats);
    assert_eq!(kept.reference_bounds.epoch(), 1);
    let recorded = kept.reference_bounds.computed();
    // The sheet moves on mostly together, as a cloth does from one substep to the next.
    let shift = Vec3::new(0.01, -0.004, 0.002);
    let moved: Vec<Vec3> = x.iter().map(|p| *p + shift + rng.vec(0.0001)).collect();
    let v: Vec<Vec3> = x.iter().map(|_| common + rng.vec(0.01)).collect();
    load(&mut kept, &moved, &v);
    let mut with_kept = ArenaVec::new_in(&arena);
    kept.find_candidates(&mut with_kept, &settings, Reach::Substep, &mut stats);
    // The second search used the first one's bounds, and they decided most tests.
    assert_eq!(kept.reference_bounds.epoch(), 1);
    let computed = kept.reference_bounds.computed();
    assert!(
        recorded > 100 && computed < recorded / 2,
        "{computed} of {recorded} bounds computed in full"
    );
    let mut fresh = ClothCollision::new(&tris, &edges, &vec![0.0; edges.len()], &moved);
    load(&mut fresh, &moved, &v);
    let mut exact = ArenaVec::new_in(&arena);
    fresh.find_candidates(&mut exact, &settings, Reach::Substep, &mut stats);
    assert!(exact.len() > 200, "{} tests", exact.len());
    assert_eq!(with_kept.len(), exact.len());
    for (a, b) in with_kept.iter().zip(exact.iter()) {
        assert_eq!((a.kind, a.verts), (b.kind, b.verts), "the list changed");
        assert_eq!(
            a.layers & !b.layers,
            0,
            "{a:?}: a bit the bound clears is set"
        );
        let extra = b.layers & !a.layers;
        if extra == 0 {
            continue;
        }
        let p = fresh.positions(b, &fresh.x0);
        if extra & AT_START != 0 {
            let close = match b.kind {
                Kind::PointTriangle => {
                    proximity_point_triangle(p[0], [p[1], p[2], p[3]], f64::from(eta)).is_some()
                }
                Kind::EdgeEdge => {
                    proximity_edge_edge([p[0], p[1]], [p[2], p[3]], f64::from(eta)).is_some()
                }
            };
            assert!(!close, "{b:?}: cleared at x^n but close");
        }
        if extra & SWEPT != 0 {
            let end = fresh.positions(b, &fresh.x1);
            assert!(
                ccd(b.kind, p, end, eta_c).is_none(),
                "{b:?}: cleared but collides"
            );
        }
    }
}

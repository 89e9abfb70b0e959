//! Per-stage benches on states taken from the canonical scenes:
//!
//! - `stage/assemble`: forces and Jacobians of the Baraff–Witkin model into
//!   the block system (Baraff & Witkin 1998, the linearised implicit step) for drape-33/65/101
//!   after 30 frames (the cloth lies on the sphere), at 1 and 2 threads;
//! - `stage/proximity`: the narrow phase of the proximity stage — for every
//!   self-collision candidate pair of triangles from the BVH, the six
//!   point–triangle and nine edge–edge tests of Bridson 2002 §5
//!   (Bridson et al. 2002 §5) — on pile-65 after 60 frames (folded);
//! - `stage/impact_zones`: the rigid motion of impact zones (eq. 3.16–3.21) on
//!   the same state, for 64 zones of 8 × 8 vertices and one zone of the whole
//!   cloth.
//!
//! SpMV and PCG are in `benches/linalg.rs`, BVH refit and queries in
//! `benches/bvh.rs`, CCD in `benches/ccd.rs`, whole frames in `benches/step.rs`.
//! Short runs: `cargo bench --bench stages -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::path::Path;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use glam::{DVec3, Vec2, Vec3};
use weft::collide::bvh::{Aabb, Bvh, PairWorkspace, self_pairs, triangle_boxes};
use weft::collide::impact_zones::ImpactZones;
use weft::collide::proximity::{proximity_edge_edge, proximity_point_triangle};
use weft::integrate::implicit_euler::ImplicitEuler;
use weft::mesh::{Diagonals, GridSpec, Topology, grid};
use weft::world::World;

/// A sample's world after `frames` frames, and its substep length.
fn warmed(file: &str, frames: u32) -> (World, f32) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(file);
    let scene = weft::scene::load(&path).expect("sample loads");
    let mut world = scene.instantiate().expect("sample builds");
    for _ in 0..frames {
        world.step(scene.dt()).expect("warm-up frame");
    }
    let h = scene.dt() / world.settings().substeps.max(1) as f32;
    (world, h)
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("building a rayon pool for the bench")
}

fn bench_assemble(c: &mut Criterion) {
    let mut group = c.benchmark_group("stage/assemble");
    for (name, file, side) in [
        ("drape-33", "drape-33.toml", 33),
        ("drape-65", "drape.toml", 65),
        ("drape-101", "drape-101.toml", 101),
    ] {
        let (world, h) = warmed(file, 30);
        let cloth = &world.cloths()[0];
        // The sample's rest mesh: a 1 m grid in the x–z plane (scene/mod.rs:
        // u = +x, v = −z); its triangles must be the cloth's.
        let mesh = grid(&GridSpec {
            nx: side,
            ny: side,
            size: Vec2::ONE,
            centre: Vec3::ZERO,
            u_axis: Vec3::X,
            v_axis: Vec3::NEG_Z,
            diagonals: Diagonals::Alternating,
        })
        .expect("valid grid");
        assert_eq!(mesh.triangles, cloth.triangles(), "{name}: same mesh");
        let topology = Topology::build(&mesh).expect("valid topology");
        let settings = *cloth
            .system()
            .expect("the drape scenes are Baraff–Witkin")
            .settings();
        let mut system = ImplicitEuler::new(&mesh, &topology, settings).expect("system");
        let state = cloth.state();
        let (x, v, mass) = (state.positions(), state.velocities(), state.masses());
        let gravity = world.settings().gravity;
        let external: Vec<Vec3> = mass.iter().map(|&m| m * gravity).collect();
        let y = vec![Vec3::ZERO; x.len()];
        for threads in [1, 2] {
            let pool = pool(threads);
            group.bench_with_input(
                BenchmarkId::new(format!("{threads}t"), name),
                &threads,
                |b, _| {
                    pool.install(|| {
                        b.iter(|| black_box(system.assemble(h, x, v, mass, &external, &y, 0.0)))
                    })
                },
            );
        }
    }
    group.finish();
}

/// The folded pile-65 cloth after 60 frames.
struct Folded {
    x: Vec<Vec3>,
    v: Vec<Vec3>,
    mass: Vec<f32>,
    inv_mass: Vec<f32>,
    tris: Vec<[u32; 3]>,
    h: f32,
}

fn folded_pile() -> Folded {
    let (world, h) = warmed("pile.toml", 60);
    let cloth = &world.cloths()[0];
    let s = cloth.state();
    Folded {
        x: s.positions().to_vec(),
        v: s.velocities().to_vec(),
        mass: s.masses().to_vec(),
        inv_mass: s.inv_masses().to_vec(),
        tris: cloth.triangles().to_vec(),
        h,
    }
}

/// Close point–triangle and edge–edge features among `pairs` (the narrow
/// phase: 6 + 9 tests per pair of triangles).
fn narrow_phase(x: &[DVec3], tris: &[[u32; 3]], pairs: &[(u32, u32)], eta: f64) -> u32 {
    let mut close = 0;
    for &(a, b) in pairs {
        let (ta, tb) = (tris[a as usize], tris[b as usize]);
        for (p, t) in [(ta, tb), (tb, ta)] {
            let tri = t.map(|i| x[i as usize]);
            for i in p {
                close += u32::from(proximity_point_triangle(x[i as usize], tri, eta).is_some());
            }
        }
        for ea in 0..3 {
            let pa = [x[ta[ea] as usize], x[ta[(ea + 1) % 3] as usize]];
            for eb in 0..3 {
                let pb = [x[tb[eb] as usize], x[tb[(eb + 1) % 3] as usize]];
                close += u32::from(proximity_edge_edge(pa, pb, eta).is_some());
            }
        }
    }
    close
}

fn bench_proximity(c: &mut Criterion) {
    let mut group = c.benchmark_group("stage/proximity");
    let Folded { x, tris, .. } = folded_pile();
    let eta = 0.004f32;
    let mut boxes = vec![Aabb::EMPTY; tris.len()];
    triangle_boxes(&x, &tris, eta, &mut boxes);
    let bvh = Bvh::build(&boxes);
    let keep = |i: u32, j: u32| {
        let (a, b) = (tris[i as usize], tris[j as usize]);
        !a.iter().any(|v| b.contains(v))
    };
    let mut ws = PairWorkspace::new();
    self_pairs(&bvh, &keep, &mut ws);
    let pairs: Vec<(u32, u32)> = ws.pairs().iter().map(|&(a, b)| (a, b)).collect();
    let xd: Vec<DVec3> = x.iter().map(|p| p.as_dvec3()).collect();
    let close = narrow_phase(&xd, &tris, &pairs, f64::from(eta));
    println!(
        "proximity pile-65 after 60 frames: {} candidate triangle pairs, {close} close features",
        pairs.len()
    );
    group.bench_function("narrow/pile-65", |b| {
        b.iter(|| black_box(narrow_phase(&xd, &tris, &pairs, f64::from(eta))))
    });
    group.finish();
}

fn bench_impact_zones(c: &mut Criterion) {
    let mut group = c.benchmark_group("stage/impact_zones");
    let Folded {
        x,
        v: v0,
        mass,
        inv_mass,
        h,
        ..
    } = folded_pile();
    let side = 65u32;
    let mut v = v0.clone();
    // 64 zones of 8 x 8 vertices, and one zone of every vertex.
    let mut patches = ImpactZones::new(x.len());
    for bi in 0..8 {
        for bj in 0..8 {
            let verts: Vec<u32> = (0..64)
                .map(|k| (bi * 8 + k / 8) * side + bj * 8 + k % 8)
                .collect();
            patches.zones().union_all(&verts);
        }
    }
    let mut whole = ImpactZones::new(x.len());
    let all: Vec<u32> = (0..x.len() as u32).collect();
    whole.zones().union_all(&all);
    for (label, zones) in [
        ("64x64-vertex", &mut patches),
        ("1x4225-vertex", &mut whole),
    ] {
        group.bench_function(BenchmarkId::new("rigid_motion/pile-65", label), |b| {
            b.iter(|| {
                v.copy_from_slice(&v0);
                black_box(zones.apply_rigid_motion(h, &x, &mut v, &mass, &inv_mass))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_assemble, bench_proximity, bench_impact_zones);
criterion_main!(benches);

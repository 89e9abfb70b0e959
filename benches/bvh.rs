//! Benches for `weft::collide::bvh` on the canonical cloth grids: 65×65 and 101×101 vertices (8 192 and 20 000
//! triangles, alternating diagonals), 1 m × 1 m, each lying flat and crumpled (every vertex moved by a seeded
//! random z within ±1.5 grid cells).
//!
//! - `bvh/build`: the binned-SAH build (cloth creation; not in the step).
//! - `bvh/refit`: the per-substep refit of the fixed topology to the current leaf boxes.
//! - `bvh/triangle_boxes`: the leaf boxes inflated by the thickness η, per thread count.
//! - `bvh/self_pairs`: candidate self-collision pairs (no shared vertex) with leaf boxes inflated by
//!   η = 4 mm, per thread count, on a warmed-up workspace (steady state: no allocation).
//!
//! Inputs (meshes, boxes, trees, workspaces, pools) are built outside the timed closures. Each size prints its
//! pair count once.
//!
//! Requires the `[[bench]] name = "bvh", harness = false` entry in Cargo.toml.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use glam::{Vec2, Vec3};
use weft::collide::bvh::{Aabb, Bvh, PairWorkspace, self_pairs, triangle_boxes};
use weft::mesh::{Diagonals, GridSpec, grid};

/// Grid sides (vertices per side).
const SIDES: [u32; 2] = [65, 101];

/// Cloth thickness η used to inflate the leaf boxes, metres.
const ETA: f32 = 0.004;

/// Thread counts: 1 and the machine's parallelism (once if that is 1).
fn thread_counts() -> Vec<usize> {
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    if all > 1 { vec![1, all] } else { vec![1] }
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("building a rayon pool for the bench")
}

/// A cloth grid in the x–y plane (normal +z); `crumpled` moves every vertex by a seeded random z.
struct Cloth {
    label: String,
    positions: Vec<Vec3>,
    triangles: Vec<[u32; 3]>,
}

fn cloth(side: u32, crumpled: bool) -> Cloth {
    let mesh = grid(&GridSpec {
        nx: side,
        ny: side,
        size: Vec2::ONE,
        centre: Vec3::ZERO,
        u_axis: Vec3::X,
        v_axis: Vec3::Y,
        diagonals: Diagonals::Alternating,
    })
    .expect("valid grid parameters");
    let mut positions = mesh.positions;
    if crumpled {
        let cell = 1.0 / (side - 1) as f32;
        let mut s: u64 = 0x2545_F491_4F6C_DD1D ^ u64::from(side);
        for p in &mut positions {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let r = (s >> 40) as f32 / (1_u64 << 24) as f32 * 2.0 - 1.0;
            p.z = 1.5 * cell * r;
        }
    }
    Cloth {
        label: format!(
            "{}/{side}x{side}",
            if crumpled { "crumpled" } else { "flat" }
        ),
        positions,
        triangles: mesh.triangles,
    }
}

fn cloths() -> Vec<Cloth> {
    SIDES
        .iter()
        .flat_map(|&side| [cloth(side, false), cloth(side, true)])
        .collect()
}

fn boxes(c: &Cloth) -> Vec<Aabb> {
    let mut out = vec![Aabb::EMPTY; c.triangles.len()];
    triangle_boxes(&c.positions, &c.triangles, ETA, &mut out);
    out
}

fn bench_build(c: &mut Criterion) {
    let mut group = c.benchmark_group("bvh/build");
    for cl in cloths() {
        let boxes = boxes(&cl);
        group.bench_with_input(
            BenchmarkId::from_parameter(&cl.label),
            &boxes,
            |b, boxes| b.iter(|| Bvh::build(black_box(boxes))),
        );
    }
    group.finish();
}

fn bench_refit(c: &mut Criterion) {
    let mut group = c.benchmark_group("bvh/refit");
    for cl in cloths() {
        let boxes = boxes(&cl);
        let mut bvh = Bvh::build(&boxes);
        for threads in thread_counts() {
            let pool = pool(threads);
            group.bench_with_input(
                BenchmarkId::new(format!("{threads}t"), &cl.label),
                &boxes,
                |b, boxes| pool.install(|| b.iter(|| bvh.refit(black_box(boxes)))),
            );
        }
    }
    group.finish();
}

fn bench_triangle_boxes(c: &mut Criterion) {
    let mut group = c.benchmark_group("bvh/triangle_boxes");
    for cl in cloths() {
        let mut out = vec![Aabb::EMPTY; cl.triangles.len()];
        for threads in thread_counts() {
            let pool = pool(threads);
            group.bench_with_input(
                BenchmarkId::new(format!("{threads}t"), &cl.label),
                &cl,
                |b, cl| {
                    pool.install(|| {
                        b.iter(|| {
                            triangle_boxes(black_box(&cl.positions), &cl.triangles, ETA, &mut out)
                        })
                    })
                },
            );
        }
    }
    group.finish();
}

fn bench_self_pairs(c: &mut Criterion) {
    let mut group = c.benchmark_group("bvh/self_pairs");
    for cl in cloths() {
        let boxes = boxes(&cl);
        let bvh = Bvh::build(&boxes);
        let tris = &cl.triangles;
        let keep = |i: u32, j: u32| {
            let (a, b) = (tris[i as usize], tris[j as usize]);
            !a.iter().any(|v| b.contains(v))
        };
        let mut ws = PairWorkspace::new();
        self_pairs(&bvh, &keep, &mut ws);
        println!(
            "self_pairs {}: {} triangles, {} candidate pairs",
            cl.label,
            tris.len(),
            ws.pairs().len()
        );
        for threads in thread_counts() {
            let pool = pool(threads);
            group.bench_with_input(
                BenchmarkId::new(format!("{threads}t"), &cl.label),
                &bvh,
                |b, bvh| pool.install(|| b.iter(|| self_pairs(black_box(bvh), &keep, &mut ws))),
            );
        }
        assert!(!ws.grew(), "steady-state queries do not allocate");
    }
    group.finish();
}

criterion_group!(
    benches,
    bench_build,
    bench_refit,
    bench_triangle_boxes,
    bench_self_pairs
);
criterion_main!(benches);

//! Benches for `weft::linalg` on grid-shaped cloth patterns (65×65 and 101×101 vertices).
//!
//! Each vertex couples to its 12 grid neighbours at offsets (±1, 0), (0, ±1), (±1, ±1),
//! (±2, 0) and (0, ±2): the stretch/shear ring plus a bending-like second ring, about the
//! coupling of a triangulated cloth with hinge bending. The matrix is `M + Σ springs`
//! (symmetric positive definite, condition number in the hundreds), built once outside the
//! timed closures.
//!
//! - `spmv`: `y = A x`, per size and thread count, beside a `memcpy` of the same number of
//!   bytes in the same run. Both report throughput in bytes per second, where the SpMV's
//!   bytes touched are `values + cols + x + y` (36 + 4 bytes per block, 12 + 12 per row;
//!   row offsets ignored). The `memcpy` copies that many bytes, so it moves twice as much
//!   memory (read + write): the ratio of the two throughputs bounds what a bandwidth-bound
//!   SpMV could gain.
//! - `pcg`: one filtered PCG solve from a cold start (the top row pinned), per size, thread
//!   count and preconditioner (`jacobi`, `sgs`, `ic0`); the only work inside the closure
//!   besides the solve is zeroing `dv`. The iteration counts are printed.
//! - `block_jacobi_update`: the preconditioner's 3×3 inversions, per size and thread count.
//! - `block_ldl`: building (`factor-ic0`, `factor-sgs`) and applying (`apply`, one forward,
//!   diagonal and backward solve, sequential) the incomplete block factor, beside `spmv` at
//!   one thread: the cost of one preconditioned iteration against the product.
//!
//! Requires the `[[bench]] name = "linalg", harness = false` entry in Cargo.toml.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::{Mat3, Vec3};
use weft::linalg::{
    BlockCsr, BlockJacobi, BlockPattern, Filter, IncompleteBlockLdl, PcgSettings, PcgWorkspace,
    Preconditioner, solve_filtered_pcg,
};

/// The preconditioners benched, with their labels.
const PRECONDITIONERS: [(&str, Preconditioner); 3] = [
    ("jacobi", Preconditioner::BlockJacobi),
    ("sgs", Preconditioner::BlockSgs),
    ("ic0", Preconditioner::BlockIc0),
];

/// Grid sides (vertices per side).
const SIDES: [usize; 2] = [65, 101];

/// Neighbour offsets, one per unordered pair (the pattern adds the mirror).
const OFFSETS: [(i64, i64, f32); 6] = [
    (1, 0, 100.0),
    (0, 1, 100.0),
    (1, 1, 30.0),
    (1, -1, 30.0),
    (2, 0, 2.0),
    (0, 2, 2.0),
];

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

/// `M + Σ k (d dᵀ + 0.05 I)` springs on the grid, with a deterministic jitter on the
/// directions so that blocks are not all alike.
fn grid_system(side: usize) -> BlockCsr {
    let n = side * side;
    let id = |x: i64, y: i64| (y as usize * side + x as usize) as u32;
    let mut pairs = Vec::new();
    for y in 0..side as i64 {
        for x in 0..side as i64 {
            for &(dx, dy, k) in &OFFSETS {
                let (u, v) = (x + dx, y + dy);
                if (0..side as i64).contains(&u) && (0..side as i64).contains(&v) {
                    pairs.push((id(x, y), id(u, v), dx, dy, k));
                }
            }
        }
    }
    let pattern = Arc::new(BlockPattern::from_pairs(
        n,
        pairs.iter().map(|&(i, j, ..)| (i, j)),
    ));
    let mut a = BlockCsr::new(pattern);
    for i in 0..n {
        let slot = a.pattern().diag_slot(i);
        a.add(slot, Mat3::IDENTITY);
    }
    for (e, &(i, j, dx, dy, k)) in pairs.iter().enumerate() {
        let jitter = ((e * 2_654_435_761) % 1000) as f32 / 1000.0 - 0.5;
        let d = Vec3::new(dx as f32, dy as f32, 0.2 * jitter).normalize();
        let kb = k * (Mat3::from_cols(d * d.x, d * d.y, d * d.z) + Mat3::IDENTITY * 0.05);
        let p = a.pattern();
        let slots = [
            p.diag_slot(i as usize),
            p.diag_slot(j as usize),
            p.slot(i, j).expect("pair in pattern"),
            p.slot(j, i).expect("pair in pattern"),
        ];
        a.add(slots[0], kb);
        a.add(slots[1], kb);
        a.add(slots[2], -kb);
        a.add(slots[3], -kb);
    }
    a
}

fn vector(n: usize, seed: u32) -> Vec<Vec3> {
    (0..n as u32)
        .map(|i| {
            let h = (i.wrapping_mul(2_654_435_761) ^ seed) % 2000;
            Vec3::new(h as f32 / 1000.0 - 1.0, 0.5, (i % 7) as f32 * 0.1 - 0.3)
        })
        .collect()
}

fn bench_spmv(c: &mut Criterion) {
    let mut group = c.benchmark_group("linalg/spmv");
    for side in SIDES {
        let a = grid_system(side);
        let n = a.num_rows();
        let bytes = a.pattern().num_blocks() * (36 + 4) + n * (12 + 12);
        println!(
            "spmv {side}x{side}: {n} rows, {} blocks, {bytes} bytes touched per product",
            a.pattern().num_blocks()
        );
        let label = format!("{side}x{side}");
        group.throughput(Throughput::Bytes(bytes as u64));
        let x = vector(n, 1);
        let mut y = vec![Vec3::ZERO; n];
        for threads in thread_counts() {
            let pool = pool(threads);
            group.bench_with_input(
                BenchmarkId::new(format!("spmv/{threads}t"), &label),
                &side,
                |b, _| pool.install(|| b.iter(|| a.mul_vec(black_box(&x), black_box(&mut y)))),
            );
        }
        let src = vec![1u8; bytes];
        let mut dst = vec![0u8; bytes];
        group.bench_with_input(BenchmarkId::new("memcpy", &label), &side, |b, _| {
            b.iter(|| dst.copy_from_slice(black_box(&src)))
        });
        black_box(&dst);
    }
    group.finish();
}

fn bench_pcg(c: &mut Criterion) {
    let mut group = c.benchmark_group("linalg/pcg");
    group.sample_size(20);
    for side in SIDES {
        let a = grid_system(side);
        let n = a.num_rows();
        let b = vector(n, 2);
        // Top row pinned at rest, the rest free.
        let filters: Vec<Filter> = (0..n)
            .map(|i| {
                if i < side {
                    Filter::Fixed
                } else {
                    Filter::Free
                }
            })
            .collect();
        let z = vec![Vec3::ZERO; n];
        let settings = PcgSettings {
            max_iterations: 1000,
            tolerance: 1e-4,
        };
        for (name, kind) in PRECONDITIONERS {
            let mut ws = PcgWorkspace::with_preconditioner(a.pattern(), kind);
            let mut dv = vec![Vec3::ZERO; n];
            let report = solve_filtered_pcg(
                &a,
                &b,
                &z,
                &filters,
                &settings,
                &mut ws,
                &mut dv,
                &mut |_| false,
            );
            println!("pcg {side}x{side} {name}: {report:?}");
            let label = format!("{side}x{side}");
            for threads in thread_counts() {
                let pool = pool(threads);
                group.bench_with_input(
                    BenchmarkId::new(format!("pcg-{name}/{threads}t"), &label),
                    &side,
                    |bench, _| {
                        pool.install(|| {
                            bench.iter(|| {
                                dv.fill(Vec3::ZERO);
                                solve_filtered_pcg(
                                    &a,
                                    black_box(&b),
                                    &z,
                                    &filters,
                                    &settings,
                                    &mut ws,
                                    &mut dv,
                                    &mut |_| false,
                                )
                            })
                        })
                    },
                );
            }
        }
    }
    group.finish();
}

fn bench_block_ldl(c: &mut Criterion) {
    let mut group = c.benchmark_group("linalg/block_ldl");
    for side in SIDES {
        let a = grid_system(side);
        let n = a.num_rows();
        let filters = vec![Filter::Free; n];
        let mut ldl = IncompleteBlockLdl::new(a.pattern());
        let label = format!("{side}x{side}");
        for (name, kind) in [
            ("factor-ic0", Preconditioner::BlockIc0),
            ("factor-sgs", Preconditioner::BlockSgs),
        ] {
            group.bench_with_input(BenchmarkId::new(name, &label), &side, |bench, _| {
                bench.iter(|| ldl.factor(black_box(&a), &filters, kind))
            });
        }
        ldl.factor(&a, &filters, Preconditioner::BlockIc0);
        let x = vector(n, 3);
        let mut y = vec![Vec3::ZERO; n];
        group.bench_with_input(BenchmarkId::new("apply", &label), &side, |bench, _| {
            bench.iter(|| ldl.apply(black_box(&x), black_box(&mut y)))
        });
        let pool = pool(1);
        group.bench_with_input(BenchmarkId::new("spmv", &label), &side, |bench, _| {
            pool.install(|| bench.iter(|| a.mul_vec(black_box(&x), black_box(&mut y))))
        });
    }
    group.finish();
}

fn bench_block_jacobi(c: &mut Criterion) {
    let mut group = c.benchmark_group("linalg/block_jacobi_update");
    for side in SIDES {
        let a = grid_system(side);
        let mut p = BlockJacobi::new(a.num_rows());
        let label = format!("{side}x{side}");
        for threads in thread_counts() {
            let pool = pool(threads);
            group.bench_with_input(
                BenchmarkId::new(format!("update/{threads}t"), &label),
                &side,
                |bench, _| pool.install(|| bench.iter(|| p.update(black_box(&a)))),
            );
        }
    }
    group.finish();
}

criterion_group!(
    benches,
    bench_spmv,
    bench_pcg,
    bench_block_jacobi,
    bench_block_ldl
);
criterion_main!(benches);

//! Cost of one CCD query (`weft::collide::ccd`): point–triangle and edge–edge, hit and miss cases, plus a
//! batch of seeded random trajectories for the mixed-branch throughput. Inputs are built outside the timed
//! closures.
//!
//! Needs `[[bench]] name = "ccd" harness = false` in `Cargo.toml`.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::DVec3;
use weft::collide::ccd::{ccd_edge_edge, ccd_point_triangle};

/// CCD tolerance for unit-sized geometry.
const ETA_C: f64 = 1e-6;

/// A named start/end configuration of four vertices.
struct Case {
    name: &'static str,
    start: [DVec3; 4],
    end: [DVec3; 4],
}

fn v(x: f64, y: f64, z: f64) -> DVec3 {
    DVec3::new(x, y, z)
}

/// Vertex x0 against triangle (x1, x2, x3).
fn point_triangle_cases() -> Vec<Case> {
    let tri = [DVec3::ZERO, DVec3::X, DVec3::Y];
    let raised = tri.map(|x| x + v(0.05, 0.02, 0.3));
    vec![
        // Falls through a rising, drifting triangle: cubic with a root, proximity passes.
        Case {
            name: "hit",
            start: [v(0.25, 0.25, 1.0), tri[0], tri[1], tri[2]],
            end: [v(0.3, 0.2, -1.0), raised[0], raised[1], raised[2]],
        },
        // Crosses the plane outside the triangle: a root, proximity rejects it.
        Case {
            name: "miss_root_outside",
            start: [v(1.5, 1.5, 1.0), tri[0], tri[1], tri[2]],
            end: [v(1.4, 1.6, -1.0), raised[0], raised[1], raised[2]],
        },
        // Stays above: no root in [0, 1].
        Case {
            name: "miss_no_root",
            start: [v(0.25, 0.25, 1.0), tri[0], tri[1], tri[2]],
            end: [v(0.3, 0.2, 0.6), raised[0], raised[1], raised[2]],
        },
        // Slides into the triangle in its plane: the coplanar fallback.
        Case {
            name: "hit_coplanar",
            start: [v(2.0, 0.2, 0.0), tri[0], tri[1], tri[2]],
            end: [v(0.2, 0.2, 0.0), tri[0], tri[1], tri[2]],
        },
    ]
}

/// Edge (x0, x1) against edge (x2, x3).
fn edge_edge_cases() -> Vec<Case> {
    let q = [DVec3::ZERO, DVec3::X];
    let shift = v(0.02, 0.05, 0.3);
    vec![
        Case {
            name: "hit",
            start: [v(0.5, -0.5, 1.0), v(0.5, 0.5, 1.0), q[0], q[1]],
            end: [
                v(0.45, -0.5, -1.0),
                v(0.55, 0.5, -1.0),
                q[0] + shift,
                q[1] + shift,
            ],
        },
        Case {
            name: "miss_root_outside",
            start: [v(1.5, -0.5, 1.0), v(1.5, 0.5, 1.0), q[0], q[1]],
            end: [
                v(1.45, -0.5, -1.0),
                v(1.55, 0.5, -1.0),
                q[0] + shift,
                q[1] + shift,
            ],
        },
        Case {
            name: "miss_no_root",
            start: [v(0.5, -0.5, 1.0), v(0.5, 0.5, 1.0), q[0], q[1]],
            end: [
                v(0.45, -0.5, 0.6),
                v(0.55, 0.5, 0.6),
                q[0] + shift,
                q[1] + shift,
            ],
        },
        // Parallel edges stay coplanar: the coplanar fallback.
        Case {
            name: "hit_parallel",
            start: [v(0.25, 1.0, 0.0), v(0.75, 1.0, 0.0), q[0], q[1]],
            end: [v(0.25, -1.0, 0.0), v(0.75, -1.0, 0.0), q[0], q[1]],
        },
    ]
}

/// Seeded random trajectories in the unit box (SplitMix64), half of them aimed through the second group.
fn random_cases(n: usize, seed: u64) -> Vec<([DVec3; 4], [DVec3; 4])> {
    let mut state = seed;
    let mut uniform = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        2.0 * ((z >> 11) as f64 / (1u64 << 53) as f64) - 1.0
    };
    (0..n)
        .map(|i| {
            let start: [DVec3; 4] = std::array::from_fn(|_| v(uniform(), uniform(), uniform()));
            let mut end: [DVec3; 4] = std::array::from_fn(|_| v(uniform(), uniform(), uniform()));
            if i % 2 == 0 {
                let middle = 0.25 * (start[2] + start[3] + end[2] + end[3]);
                end[0] = 2.0 * middle - start[0];
            }
            (start, end)
        })
        .collect()
}

fn bench_ccd(c: &mut Criterion) {
    let mut group = c.benchmark_group("ccd");
    for case in point_triangle_cases() {
        let input = (case.start, case.end);
        group.bench_with_input(
            BenchmarkId::new("point_triangle", case.name),
            &input,
            |b, (start, end)| {
                b.iter(|| ccd_point_triangle(black_box(*start), black_box(*end), ETA_C))
            },
        );
    }
    for case in edge_edge_cases() {
        let input = (case.start, case.end);
        group.bench_with_input(
            BenchmarkId::new("edge_edge", case.name),
            &input,
            |b, (start, end)| b.iter(|| ccd_edge_edge(black_box(*start), black_box(*end), ETA_C)),
        );
    }
    let batch = random_cases(1024, 7);
    group.throughput(Throughput::Elements(batch.len() as u64));
    group.bench_with_input(
        BenchmarkId::new("point_triangle", "random_1024"),
        &batch,
        |b, batch| {
            b.iter(|| {
                batch
                    .iter()
                    .filter(|(start, end)| {
                        ccd_point_triangle(black_box(*start), black_box(*end), ETA_C).is_some()
                    })
                    .count()
            })
        },
    );
    group.bench_with_input(
        BenchmarkId::new("edge_edge", "random_1024"),
        &batch,
        |b, batch| {
            b.iter(|| {
                batch
                    .iter()
                    .filter(|(start, end)| {
                        ccd_edge_edge(black_box(*start), black_box(*end), ETA_C).is_some()
                    })
                    .count()
            })
        },
    );
    group.finish();
}

criterion_group!(benches, bench_ccd);
criterion_main!(benches);

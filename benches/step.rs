//! Milliseconds per frame of the canonical drape scenes (Baraff–Witkin model).
//!
//! Each size is loaded and warmed up (30 frames, so the cloth is in contact)
//! outside the timed closure; the closure steps one frame.

use std::path::Path;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

fn drape(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame/drape");
    group.sample_size(20);
    for (n, file) in [
        (33, "drape-33.toml"),
        (65, "drape.toml"),
        (101, "drape-101.toml"),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("samples")
            .join(file);
        let scene = weft::scene::load(&path).expect("sample loads");
        let mut world = scene.instantiate().expect("sample builds");
        let dt = scene.dt();
        for _ in 0..30 {
            world.step(dt).expect("warm-up frame");
        }
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| world.step(dt).expect("frame"));
        });
    }
    group.finish();
}

criterion_group!(benches, drape);
criterion_main!(benches);

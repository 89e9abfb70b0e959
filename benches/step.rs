//! Milliseconds per frame of the canonical scenes (Baraff–Witkin model,
//! self-collision on): drape-33/65/101 and pile-33/65, each at 1 and 2
//! threads (a world-owned rayon pool, `World::set_threads`), and a crowd of
//! 16 drape-33 cloths stepping in parallel across cloths (compare with 16 x
//! drape-33).
//!
//! Each scene is loaded and warmed up (30 frames, so the cloth is in contact)
//! outside the timed closure; the closure steps one frame. Short runs:
//! `cargo bench --bench step -- --sample-size 10 --measurement-time 5`.

use std::path::Path;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

const SCENES: [(&str, &str); 6] = [
    ("drape-33", "drape-33.toml"),
    ("drape-65", "drape.toml"),
    ("drape-101", "drape-101.toml"),
    ("pile-33", "pile-33.toml"),
    ("pile-65", "pile.toml"),
    ("crowd-16x33", "crowd.toml"),
];

fn frames(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame");
    group.sample_size(20);
    for (name, file) in SCENES {
        for threads in [1, 2] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("samples")
                .join(file);
            let scene = weft::scene::load(&path).expect("sample loads");
            let mut world = scene.instantiate().expect("sample builds");
            world.set_threads(threads).expect("thread pool");
            let dt = scene.dt();
            for _ in 0..30 {
                world.step(dt).expect("warm-up frame");
            }
            group.bench_with_input(
                BenchmarkId::new(name, format!("{threads}t")),
                &threads,
                |b, _| b.iter(|| world.step(dt).expect("frame")),
            );
        }
    }
    group.finish();
}

criterion_group!(benches, frames);
criterion_main!(benches);

//! The cost of the C ABI: one frame of drape-33 stepped through
//! `weft_world_step` (panic boundary, handle tables, stats conversion, then
//! reading the positions through `weft_cloth_positions`) against the same
//! frame through `World::step` and `Cloth::state().positions()`.
//!
//! Both worlds come from `samples/drape-33.toml` (the C side through
//! `weft_scene_load`); see [`frame`] for how the same frames are timed on
//! both sides. Both use the process-wide rayon pool.
//! The C functions are called from Rust through their `extern "C"`
//! signatures: the same code a C host reaches.
//!
//! Requires the `[[bench]] name = "ffi", harness = false` entry in Cargo.toml.

use std::ffi::CString;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use weft::ffi::{
    weft_cloth, weft_cloth_positions, weft_scene_info, weft_scene_load, weft_status,
    weft_step_stats, weft_world, weft_world_cloths, weft_world_destroy, weft_world_step,
};

/// Frames stepped (untimed) after loading, so the cloth is falling onto
/// the sphere when the timing starts.
const WARM_UP: usize = 10;

/// Frames timed per iteration (frames 11..=20 of the scene).
const TIMED: usize = 10;

fn ok(s: weft_status) {
    assert_eq!(s, weft_status::WEFT_STATUS_OK, "a weft_* call failed");
}

/// A drape-33 world through the C ABI, its cloth handle and frame length.
fn c_world(path: &Path) -> (*mut weft_world, weft_cloth, f32) {
    let c_path = CString::new(path.to_str().expect("UTF-8 path")).expect("no NUL");
    let mut w: *mut weft_world = std::ptr::null_mut();
    // SAFETY: a zeroed plain-data struct; `size` is set below.
    let mut info: weft_scene_info = unsafe { std::mem::zeroed() };
    info.size = std::mem::size_of::<weft_scene_info>() as u32;
    // SAFETY: valid NUL-terminated path and writable out-pointers.
    ok(unsafe { weft_scene_load(c_path.as_ptr(), 0, &mut w, &mut info) });
    let mut cloth = weft_cloth::default();
    let mut count = 0u32;
    // SAFETY: live world; room for one handle.
    ok(unsafe { weft_world_cloths(w, &mut cloth, 1, &mut count) });
    (w, cloth, 1.0 / info.fps)
}

/// One iteration loads the scene afresh, steps `WARM_UP` frames untimed and
/// times the next `TIMED` frames, on both sides: both time the same frames
/// of the same scene (their state hashes agree), so the difference is the
/// boundary's cost, not a different amount of contact work. Reported times
/// are per block of `TIMED` frames.
fn frame(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/drape-33.toml");
    let mut group = c.benchmark_group("frame/drape-33");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);

    group.bench_function("rust", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let scene = weft::scene::load(&path).expect("sample loads");
                let dt = scene.dt();
                let mut world = scene.instantiate().expect("sample builds");
                for _ in 0..WARM_UP {
                    world.step(dt).expect("warm-up frame");
                }
                let t = Instant::now();
                for _ in 0..TIMED {
                    black_box(world.step(dt).expect("frame"));
                    black_box(world.cloths()[0].state().positions().as_ptr());
                }
                total += t.elapsed();
            }
            total
        });
    });

    group.bench_function("c_abi", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += c_block(&path);
            }
            total
        });
    });
    group.finish();
}

/// One timed block through the C ABI (see [`frame`]).
fn c_block(path: &Path) -> Duration {
    let (w, cloth, dt) = c_world(path);
    // SAFETY: a zeroed plain-data struct; `size` is set below.
    let mut stats: weft_step_stats = unsafe { std::mem::zeroed() };
    stats.size = std::mem::size_of::<weft_step_stats>() as u32;
    for _ in 0..WARM_UP {
        // SAFETY: live world, writable stats.
        ok(unsafe { weft_world_step(w, dt, &mut stats) });
    }
    let t = Instant::now();
    for _ in 0..TIMED {
        let mut x: *const f32 = std::ptr::null();
        let mut n = 0u32;
        // SAFETY: live world and handle, writable out-pointers.
        unsafe {
            ok(weft_world_step(w, dt, &mut stats));
            ok(weft_cloth_positions(w, cloth, &mut x, &mut n));
        }
        black_box((x, &stats));
    }
    let elapsed = t.elapsed();
    // SAFETY: the world is live and not used afterwards.
    ok(unsafe { weft_world_destroy(w) });
    elapsed
}

criterion_group!(benches, frame);
criterion_main!(benches);

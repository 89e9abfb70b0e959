//! The cost of the C ABI: one frame of drape-33 stepped through
//! `weft_world_step` (panic boundary, handle tables, stats conversion, then
//! reading the positions through `weft_cloth_positions`) against the same
//! frame through `World::step` and `Cloth::state().positions()`.
//!
//! Both worlds come from `samples/drape-33.toml` (the C side through
//! `weft_scene_load`) and are warmed up for 30 frames outside the timed
//! closure, so the cloth is in contact. Both use the process-wide rayon pool.
//! The C functions are called from Rust through their `extern "C"`
//! signatures: the same code a C host reaches.
//!
//! Requires the `[[bench]] name = "ffi", harness = false` entry in Cargo.toml.

use std::ffi::CString;
use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use weft::ffi::{
    weft_cloth, weft_cloth_positions, weft_scene_info, weft_scene_load, weft_status,
    weft_step_stats, weft_world, weft_world_cloths, weft_world_destroy, weft_world_step,
};

const WARM_UP: usize = 30;

fn ok(s: weft_status) {
    assert_eq!(s, weft_status::WEFT_STATUS_OK, "a weft_* call failed");
}

fn frame(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/drape-33.toml");
    let mut group = c.benchmark_group("frame/drape-33");
    group.sample_size(20);

    let scene = weft::scene::load(&path).expect("sample loads");
    let dt = scene.dt();
    let mut world = scene.instantiate().expect("sample builds");
    for _ in 0..WARM_UP {
        world.step(dt).expect("warm-up frame");
    }
    group.bench_function("rust", |b| {
        b.iter(|| {
            let stats = world.step(dt).expect("frame");
            black_box(world.cloths()[0].state().positions().as_ptr());
            stats
        });
    });

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
    // SAFETY: a zeroed plain-data struct; `size` is set below.
    let mut stats: weft_step_stats = unsafe { std::mem::zeroed() };
    stats.size = std::mem::size_of::<weft_step_stats>() as u32;
    let c_dt = 1.0 / info.fps;
    assert_eq!(c_dt, dt, "same frame length on both sides");
    for _ in 0..WARM_UP {
        // SAFETY: live world, writable stats.
        ok(unsafe { weft_world_step(w, c_dt, &mut stats) });
    }
    group.bench_function("c_abi", |b| {
        b.iter(|| {
            let mut x: *const f32 = std::ptr::null();
            let mut n = 0u32;
            // SAFETY: live world and handle, writable out-pointers.
            unsafe {
                ok(weft_world_step(w, c_dt, &mut stats));
                ok(weft_cloth_positions(w, cloth, &mut x, &mut n));
            }
            black_box(x);
            stats
        });
    });
    group.finish();
    // SAFETY: the world is live and not used afterwards.
    ok(unsafe { weft_world_destroy(w) });
}

criterion_group!(benches, frame);
criterion_main!(benches);

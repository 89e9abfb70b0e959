//! Soak: 10,000 frames of drape-33 (the canonical scene, `samples/drape-33.toml`)
//! with each cloth model, checking at every frame that the state stays finite and that no frame
//! after the warm-up allocates on the heap, and with the independent intersection checker
//! (`tests/support/intersection.rs`, which does not use `src/collide`) at every 500th frame and
//! the last.
//!
//! The allocation count is that of `tests/no_alloc.rs` ([`support::alloc_count`]): the test's
//! thread and the workers of the world's own 2-thread pool. It is on only inside
//! `World::step`; the checker runs between frames with counting off. A frame that does
//! allocate is named in the failure with its `pool_overflows` (so an overflowing pool, which is
//! reported, can be told from an unreported allocation).
//!
//! Run time: see [`baraff_witkin`].

mod support;

use std::path::Path;
use std::time::Instant;

use support::alloc_count;

#[global_allocator]
static GLOBAL: alloc_count::CountingAllocator = alloc_count::CountingAllocator;

/// Frames of the soak.
const FRAMES: u32 = 10_000;
/// Frames before allocations count: the cloth lands on the sphere near frame 10 and its
/// contact set (and so its pools and its frame arena) reaches its largest size while it
/// drapes; by frame 300 (5 s) it hangs at rest.
const WARM_UP: u32 = 300;
/// The independent intersection checker runs at every multiple of this frame (and the last).
const CHECK_EVERY: u32 = 500;

/// What a soak saw.
#[derive(Debug, Default)]
struct Soak {
    /// Frames after the warm-up that allocated, with their allocation and overflow counts.
    allocating_frames: Vec<(u32, usize, u32)>,
    /// Pool overflows over the whole run (warm-up included).
    pool_overflows: u64,
    /// Largest edge strain of any frame.
    max_strain: f32,
    /// Largest frame-arena use of a frame (bytes).
    max_arena_bytes: u64,
    /// Frames at which the intersection checker ran.
    checks: u32,
    /// Wall-clock seconds of the run.
    seconds: f64,
}

/// Runs `frames` frames of the scene `text` (read as if from `samples/<file>`) in a world with
/// its own pool of 2 workers; see the module doc for what is checked.
fn soak(file: &str, text: &str, frames: u32) -> Soak {
    let _serial = alloc_count::SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(file);
    let scene = weft::scene::Scene::from_toml(text, &path).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    world.set_threads(2).unwrap_or_else(|e| panic!("{e}"));
    let pool = world
        .thread_pool()
        .expect("set_threads sets a pool")
        .clone();
    let dt = scene.dt();
    let started = Instant::now();
    let mut out = Soak::default();
    pool.install(|| {
        alloc_count::mark_counted_threads(true);
        for frame in 1..=frames {
            let counted = frame > WARM_UP;
            let _ = alloc_count::take_count();
            alloc_count::set_counting(counted);
            let stepped = world.step(dt);
            alloc_count::set_counting(false);
            let allocations = alloc_count::take_count();
            // `step` fails on a non-finite state; the statistics must be finite too.
            let s = stepped.unwrap_or_else(|e| panic!("{file} frame {frame}: {e}"));
            for (i, c) in world.cloths().iter().enumerate() {
                assert!(
                    c.state().is_finite(),
                    "{file} frame {frame}: cloth {i} not finite"
                );
            }
            assert!(
                s.max_strain.is_finite() && s.cg_residual.is_finite() && s.energy.is_finite(),
                "{file} frame {frame}: non-finite statistics {s:?}"
            );
            out.pool_overflows += u64::from(s.pool_overflows);
            out.max_strain = out.max_strain.max(s.max_strain);
            out.max_arena_bytes = out.max_arena_bytes.max(s.arena_bytes);
            if counted && allocations > 0 {
                out.allocating_frames
                    .push((frame, allocations, s.pool_overflows));
            }
            if frame % CHECK_EVERY == 0 || frame == frames {
                support::assert_world_clean(&world, &format!("{file} frame {frame}"));
                out.checks += 1;
            }
        }
        alloc_count::mark_counted_threads(false);
    });
    out.seconds = started.elapsed().as_secs_f64();
    out
}

fn assert_soak(what: &str, frames: u32, s: &Soak) {
    println!(
        "{what}: {frames} frames in {:.1} s ({:.1} ms/frame), max strain {:.2}%, {} pool \
         overflows, frame arena up to {} bytes, {} intersection checks clean",
        s.seconds,
        1e3 * s.seconds / f64::from(frames),
        100.0 * s.max_strain,
        s.pool_overflows,
        s.max_arena_bytes,
        s.checks
    );
    assert!(
        s.allocating_frames.is_empty(),
        "{what}: frames after the {WARM_UP}-frame warm-up that allocated \
         (frame, allocations, pool overflows): {:?}",
        &s.allocating_frames[..s.allocating_frames.len().min(20)]
    );
    assert_eq!(
        s.checks,
        frames / CHECK_EVERY + u32::from(frames % CHECK_EVERY != 0)
    );
}

/// drape-33 with the Baraff–Witkin model, as in `samples/drape-33.toml` (2 substeps, strain
/// limiting at 0.99 %, self-collision, 10 CCD rounds), with a floor under the ball: without one the
/// sheet slides off the sphere near frame 3,000 (52 s; friction 0.3) and falls for good, and a
/// soak of free fall far from the origin (f32 spacing approaching the 4 mm thickness) tests
/// nothing a game would run.
///
/// Once the sheet has slid off the ball onto the floor it crumples into a pile whose layers
/// touch: frames there run every CCD round and take the collision stage's last resort now and
/// then, which is what this soak exercises beyond the first 1,000 frames. Frames on the floor
/// cost up to several tenths of a second on 2 threads, so the whole run takes well over 20
/// minutes: ignored; CI runs [`baraff_witkin_first_1000_frames`].
/// Run with `cargo test --release --test soak -- --ignored --nocapture baraff_witkin`.
#[test]
#[ignore = "10,000 frames take well over 20 minutes on 2 cores (see the doc comment)"]
fn baraff_witkin() {
    let s = soak("drape-33.toml", &with_floor(&drape_33()), FRAMES);
    assert_soak("drape-33 Baraff–Witkin (with a floor)", FRAMES, &s);
}

/// The first 1,000 frames of [`baraff_witkin`], run by CI: 700 frames past the warm-up with
/// allocations counted, and the checker at frames 500 and 1,000.
#[test]
fn baraff_witkin_first_1000_frames() {
    let s = soak("drape-33.toml", &with_floor(&drape_33()), 1000);
    assert_soak(
        "drape-33 Baraff–Witkin (with a floor), 1,000 frames",
        1000,
        &s,
    );
}

/// drape-33 with the isometric model (Wang 2012, `[solver] model = "isometric"` and the
/// `[solver.isometric]` defaults; the 33 × 33 base grid is simulated 4:1 subdivided, 8192
/// triangles), with the same harness.
///
/// Ignored: it does not step at frame rate (contact frames take seconds to minutes), so
/// 10,000 frames would take days. Run with
/// `cargo test --release --test soak -- --ignored isometric`.
#[test]
#[ignore = "isometric drape-33 costs minutes a frame in contact (PCG); see the doc comment"]
fn isometric() {
    let text = drape_33().replace(
        "model = \"baraff-witkin\"\ncg_max_iterations = 100\ncg_tolerance = 1e-3\n",
        "model = \"isometric\"\n",
    );
    assert!(
        text.contains("model = \"isometric\""),
        "drape-33.toml changed"
    );
    let s = soak("drape-33.toml", &with_floor(&text), FRAMES);
    assert_soak("drape-33 isometric (with a floor)", FRAMES, &s);
}

/// The scene with a ground plane at the bottom of the ball (radius 0.3 m at the origin).
fn with_floor(text: &str) -> String {
    format!(
        "{text}\n[[collider]]\nshape = \"plane\"\nposition = [0.0, -0.3, 0.0]\nfriction = 0.3\n"
    )
}

/// The text of `samples/drape-33.toml`.
fn drape_33() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/drape-33.toml"))
        .expect("samples/drape-33.toml")
}

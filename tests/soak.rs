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
//! Run time (2 threads, a 2-core machine shared with other jobs): see [`baraff_witkin`].

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
/// limiting at 4 %, self-collision, 10 CCD rounds), with a floor under the ball: without one the
/// sheet slides off the sphere near frame 3,000 (52 s; friction 0.3) and falls for good, and a
/// soak of free fall far from the origin (f32 spacing approaching the 4 mm thickness) tests
/// nothing a game would run.
///
/// STATUS: measured at 048653e, it failed at frame 4,500 (631.8 s into the run): the checker
/// found the 8 cloth triangles around vertex 830 (1544–1547, 1608–1611) crossing triangle 5390,
/// i.e. triangle 270 of the floor plane's tessellation (the sphere's icosphere is triangles
/// 0–5119), after the sheet slid off the ball onto the floor. Cause, per ba45116 (which
/// diagnosed frame 4,354 and fixed it): the fail-safe's last resort put all 1,089 cloth vertices
/// in one rigid zone and stopped after one rigid move, so the zone's downward momentum carried a
/// resting vertex 58 µm through the floor mesh; the loop now goes on until the zone has merged
/// the obstacle vertices it hits (Bridson 2002 §3.10 step 4). `tests/issue_5_last_resort_on_floor.rs`
/// reproduces that mechanism in under a second (fails with ba45116's loop reverted).
/// At 270d1b7 the checker run at *every* frame 4,000–4,600 is clean. The trajectory has changed
/// since 048653e: with ba45116's loop reverted it takes the last resort at frames 3,792–3,795,
/// 4,051 and 4,053 (261–514 zone rounds) yet is also clean at every frame 4,300–4,500, with the
/// same lowest vertex at frames 4,000, 4,250 and 4,500 as 270d1b7. Frames on the floor cost
/// 0.3–0.7 s each (4,600 frames in 784 s, 2 threads, load ≈ 3), so the whole run takes well
/// over 20 minutes: ignored; CI runs [`baraff_witkin_first_1000_frames`].
///
/// STATUS at aea03b2 (2026-11-25): it FAILS at frame 5,500 (789 s, 2 threads, load ≈ 3–4): 3
/// self pairs of neighbouring triangles, (295, 360), (295, 361), (358, 361). Checked at every
/// frame from 5,001 (a scratch copy of this harness, same trajectory): the first dirty frame is
/// 5,117, 4 self pairs (345, 532), (345, 533), (408, 532), (408, 533), with the cloth crumpled
/// on the floor beside the ball. From frame ~5,100 every frame runs all 20 CCD rounds (about
/// 2,200 hits), 8–11 impact zones of up to 180 vertices, and the max strain sits at 22.3 %
/// (limit 4 %); frames 5,112 and 5,117 take the last resort. Instrumented (not committed): of
/// the 63 last resorts up to frame 5,117, 17 leave the zone loop with CCD hits left and
/// nothing to merge (the whole cloth is already one zone), and frame 5,117's first substep is
/// one of them (2 hits; the second substep's last resort ends with none, yet the frame ends
/// dirty). Most likely: the move of the whole cloth as one zone is affine with a positive
/// determinant, so it keeps a clean state clean in real arithmetic, but it is rounded to f32 on
/// a pile whose layers touch, and a crossing left at the end of a substep is invisible to the
/// next substep's CCD (not yet confirmed pair by pair). Since then a last resort that still has
/// hits stops the free vertices for that substep (`x^{n+1} = x^n`, exact in f32;
/// `CollisionStats::last_resort_stopped`). With that change (scratch harness, checker at every
/// frame from 3,001, stopped after 67 minutes at a frame not recorded) it found no dirty frame
/// and stopped the cloth 8 times, but took the last resort about 2,100 times (63 up to frame
/// 5,117 before): in the jammed pile it trades a crossing for slow frames. The full 10,000
/// frames were re-run once since (this test as is, at 480cf43, whose physics e6b27a9 keeps bit
/// for bit; 2 threads beside a CI run and other work, load 2–4): stopped unfinished after
/// 124 minutes, against 789 s to frame 5,500 before the stop. Up to the frame it had reached
/// (not recorded; the test prints nothing before it ends) no checker run and no finiteness
/// check failed, since either would have ended the test. The likely cause of the jam (not
/// instrumented here) is the one diagnosed on pile-33 (`samples/README.md`, known problem):
/// collision velocity changes after the stiff implicit solve store elastic energy that strain
/// limiting keeps at its bound. None of the 13
/// Baraff–Witkin gallery scenes takes the last resort, so none changes. The jammed pile (22 %
/// strain at rest, all CCD rounds every frame) remains the deeper problem.
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
/// Ignored: it does not step at frame rate. Measured with `weft run` of this scene (no floor
/// needed for the first frames), 2 threads on the shared 2-core machine at load ≈ 4, after the
/// two-phase projection landed: free-fall frames 0.29–0.51 s each (1 Gauss–Newton iteration and
/// 2–7 PCG iterations a step: the time is spent outside PCG, not yet profiled);
/// the first contact frame (11) took 199 s: 46 Newton and 43,088 PCG iterations (about 940 per
/// solve against the cap of 1,000). 10,000 frames would take days. Run with
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

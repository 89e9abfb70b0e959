//! After warm-up a frame performs zero heap allocations (no allocation per
//! step). A counting `#[global_allocator]` counts every
//! allocation, while counting is on, on the test's own thread and on every
//! worker of the rayon pool it runs in; each scene is stepped inside the pool
//! the world uses (`pool.install`), so the kernels' workers are counted. The
//! test harness's own threads are not (its main thread prints "has been
//! running for over 60 seconds" whenever a test passes that mark, which made
//! the count flaky on a loaded machine).
//!
//! The tests share one process-wide counter, so they take [`SERIAL`] to run
//! one at a time. Set `WEFT_ALLOC_TRACE=1` to print a backtrace for each
//! counted allocation (a debugging aid for finding the one that crept in).
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use glam::Vec3;
use weft::collide::smoothing::VelocitySmoother;
use weft::collide::strain_limit::{StrainLimit, StrainLimiter, StrainMethod};

static COUNTING: AtomicBool = AtomicBool::new(false);
static TRACE: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static SERIAL: Mutex<()> = Mutex::new(());

thread_local! {
    /// Set while this thread prints a trace (whose own allocations are not counted).
    static TRACING: Cell<bool> = const { Cell::new(false) };
    /// Set on the threads whose allocations count: the test's and its pool's.
    static COUNTED_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Marks (or unmarks) this thread and every worker of the current rayon pool
/// (the world's inside `pool.install`, else the global pool) as counted.
fn mark_counted_threads(on: bool) {
    rayon::broadcast(|_| COUNTED_THREAD.with(|c| c.set(on)));
    COUNTED_THREAD.with(|c| c.set(on));
}

struct CountingAllocator;

fn count_one(size: usize) {
    if !COUNTING.load(Ordering::Relaxed) || !COUNTED_THREAD.try_with(Cell::get).unwrap_or(false) {
        return;
    }
    // `try_with`: the thread-local may be gone while a thread shuts down.
    let tracing = TRACING.try_with(Cell::get).unwrap_or(true);
    if tracing {
        return;
    }
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    if TRACE.load(Ordering::Relaxed) {
        let _ = TRACING.try_with(|t| t.set(true));
        let bt = std::backtrace::Backtrace::force_capture();
        eprintln!("--- allocation of {size} bytes:\n{bt}");
        let _ = TRACING.try_with(|t| t.set(false));
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so the `GlobalAlloc` contract is `System`'s; the counting touches
// atomics and a const-initialised thread-local only.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one(layout.size());
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one(layout.size());
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one(new_size);
        // SAFETY: forwarded unchanged; `ptr` came from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; `ptr` came from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Runs `f` and returns its result with the allocations made meanwhile on
/// this thread and the workers of the current rayon pool.
fn allocations_during<R>(f: impl FnOnce() -> R) -> (R, usize) {
    TRACE.store(
        std::env::var_os("WEFT_ALLOC_TRACE").is_some(),
        Ordering::Relaxed,
    );
    mark_counted_threads(true);
    ALLOCATIONS.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    let r = f();
    COUNTING.store(false, Ordering::SeqCst);
    mark_counted_threads(false);
    (r, ALLOCATIONS.load(Ordering::SeqCst))
}

/// Nodes of isometric cloths held by rows on a collider in their last step: with rows that
/// follow the colliders the collision stage finds no pair, and the contact is in the rows.
fn isometric_band_nodes(world: &weft::world::World) -> u32 {
    world
        .cloths()
        .iter()
        .filter_map(|c| c.isometric())
        .map(|i| i.last_step().band_nodes)
        .sum()
}

/// Loads `sample`, steps `warm` frames, then counts the allocations of
/// `frames` more, all inside a world-owned pool of `threads` workers.
fn steady_state_allocations(sample: &str, threads: usize, warm: u32, frames: u32) -> usize {
    steady_state_allocations_edited(sample, |t| t.to_string(), threads, warm, frames)
}

/// [`steady_state_allocations`] of the sample's text after `edit`.
fn steady_state_allocations_edited(
    sample: &str,
    edit: impl Fn(&str) -> String,
    threads: usize,
    warm: u32,
    frames: u32,
) -> usize {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(sample);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let scene =
        weft::scene::Scene::from_toml(&edit(&text), &path).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    world.set_threads(threads).unwrap_or_else(|e| panic!("{e}"));
    let pool = world
        .thread_pool()
        .expect("set_threads sets a pool")
        .clone();
    let dt = scene.dt();
    pool.install(|| {
        let mut collided = 0;
        for _ in 0..warm {
            let s = world.step(dt).unwrap_or_else(|e| panic!("{e}"));
            collided += s.contacts + s.proximity_pairs + isometric_band_nodes(&world);
        }
        assert!(collided > 0, "{sample}: no contact during warm-up");
        let (pairs, allocations) = allocations_during(|| {
            let mut pairs = 0;
            for _ in 0..frames {
                let s = world.step(dt).unwrap_or_else(|e| panic!("{e}"));
                pairs += s.contacts + s.proximity_pairs + isometric_band_nodes(&world);
            }
            pairs
        });
        assert!(pairs > 0, "{sample}: no contact in the counted frames");
        allocations
    })
}

#[test]
fn drape_65_frames_do_not_allocate() {
    let n = steady_state_allocations("drape.toml", 2, 20, 6);
    assert_eq!(n, 0, "drape-65: {n} heap allocations in 6 frames");
}

#[test]
fn drape_65_block_jacobi_frames_do_not_allocate() {
    // drape.toml runs block IC(0) (`[solver] preconditioner`; its factor storage is allocated
    // with the cloth, and `drape_65_frames_do_not_allocate` covers refactoring, shifted retries
    // and the triangular solves); the block-Jacobi default must not allocate either.
    let edit = |t: &str| {
        assert!(t.contains("preconditioner = \"block-ic0\""));
        t.replace(
            "preconditioner = \"block-ic0\"",
            "preconditioner = \"block-jacobi\"",
        )
    };
    let n = steady_state_allocations_edited("drape.toml", edit, 2, 20, 6);
    assert_eq!(
        n, 0,
        "drape-65 block Jacobi: {n} heap allocations in 6 frames"
    );
}

#[test]
fn drape_65_dihedral_imex_frames_do_not_allocate() {
    // Discrete-shell bending integrated IMEX: the step-limit pass and the split of
    // substeps into pieces must not allocate either.
    let edit = |t: &str| {
        assert!(t.contains("\n[cloth.material]") && t.contains("\n[solver]"));
        t.replace(
            "[cloth.material]",
            "[cloth.material]\nbending = \"dihedral\"",
        )
        .replace("[solver]", "[solver]\nbending_integration = \"imex\"")
    };
    let n = steady_state_allocations_edited("drape.toml", edit, 2, 20, 6);
    assert_eq!(
        n, 0,
        "drape-65 dihedral IMEX: {n} heap allocations in 6 frames"
    );
}

#[test]
fn pile_65_frames_do_not_allocate() {
    let n = steady_state_allocations("pile.toml", 2, 8, 6);
    assert_eq!(n, 0, "pile-65: {n} heap allocations in 6 frames");
}

#[test]
fn crowd_frames_do_not_allocate() {
    // 16 cloths stepping in parallel across cloths (World::step). After 20
    // frames some cloth's collision pools still grow once (32 allocations in
    // the next 3 frames, reported as pool overflows); after 60 none do.
    let n = steady_state_allocations("crowd.toml", 2, 60, 3);
    assert_eq!(n, 0, "crowd: {n} heap allocations in 3 frames");
}

/// Three sheets stacked on the sphere (`samples/layers.toml`): after they have landed on each
/// other, one collision stage shared by all three, its data and buffers built when the group
/// first formed. The stack still settles: its collision pools grow (doubling, reported as pool
/// overflows) now and then, at frames 43, 48, 57, 61 and 66 of the first 70, so the frames
/// checked are 50–52, between two of those.
#[test]
fn layers_frames_do_not_allocate() {
    let n = steady_state_allocations("layers.toml", 2, 49, 3);
    assert_eq!(n, 0, "layers: {n} heap allocations in 3 frames");
}

/// The isometric model (Wang 2012, `samples/stiff-sheet.toml`): Gauss–Newton projections with
/// IC(0)-PCG, contact rows from the preallocated pool, both collision passes of Table 3.1.
#[test]
fn isometric_stiff_sheet_frames_do_not_allocate() {
    let n = steady_state_allocations("stiff-sheet.toml", 2, 12, 2);
    assert_eq!(n, 0, "stiff-sheet: {n} heap allocations in 2 frames");
}

/// A perturbed `nx × ny` grid with alternating diagonals: positions,
/// velocities, unique edges and rest lengths (the initial lengths shrunk by
/// 10 %, so every edge starts stretched and the limiter has work to do).
fn perturbed_grid(nx: usize, ny: usize) -> (Vec<Vec3>, Vec<Vec3>, Vec<[u32; 2]>, Vec<f32>) {
    let id = |i: usize, j: usize| (j * nx + i) as u32;
    let mut seed = 9u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    };
    let mut x = Vec::new();
    let mut v = Vec::new();
    for j in 0..ny {
        for i in 0..nx {
            x.push(Vec3::new(i as f32 * 0.1, 0.01 * next(), j as f32 * 0.1));
            v.push(Vec3::new(next(), next(), next()));
        }
    }
    let mut edges = Vec::new();
    for j in 0..ny {
        for i in 0..nx {
            if i + 1 < nx {
                edges.push([id(i, j), id(i + 1, j)]);
            }
            if j + 1 < ny {
                edges.push([id(i, j), id(i, j + 1)]);
            }
            if i + 1 < nx && j + 1 < ny {
                if (i + j) % 2 == 0 {
                    edges.push([id(i, j), id(i + 1, j + 1)]);
                } else {
                    edges.push([id(i + 1, j), id(i, j + 1)]);
                }
            }
        }
    }
    let rest = edges
        .iter()
        .map(|&[a, b]| 0.9 * (x[a as usize] - x[b as usize]).length())
        .collect();
    (x, v, edges, rest)
}

/// Moved here from `collide::strain_limit`'s unit tests, so the lib's test
/// binary keeps the system allocator.
#[test]
fn strain_limiter_apply_does_not_allocate() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (x, v0, edges, rest) = perturbed_grid(12, 10);
    let inv_mass = vec![1.0f32; x.len()];
    for method in [StrainMethod::Jacobi, StrainMethod::GaussSeidel] {
        let mut limiter = StrainLimiter::new(x.len(), &edges);
        let mut v = v0.clone();
        let limit = StrainLimit {
            method,
            iterations: 30,
            ..StrainLimit::default()
        };
        let (report, allocations) = allocations_during(|| {
            limiter.apply(&limit, 0.01, &x, &mut v, &inv_mass, &edges, &rest)
        });
        assert!(report.sweeps > 0, "{method:?}: the limiter did nothing");
        assert_eq!(allocations, 0, "{method:?}");
    }
}

/// Moved here from `collide::smoothing`'s unit tests.
#[test]
fn velocity_smoother_apply_does_not_allocate() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (_, v0, edges, _) = perturbed_grid(12, 10);
    let mass = vec![0.01f32; v0.len()];
    let inv_mass = vec![100.0f32; v0.len()];
    let mut smoother = VelocitySmoother::new(v0.len(), &edges);
    let mut v = v0.clone();
    let (report, allocations) =
        allocations_during(|| smoother.apply(2.0, 30, &mut v, &mass, &inv_mass, &edges));
    assert!(report.iterations > 0);
    assert_eq!(allocations, 0);
}

/// The counter itself: an allocation on the test's thread and one on each of
/// the pool's workers are counted (so a zero above means something).
#[test]
fn the_counter_sees_the_test_thread_and_the_pool_workers() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("pool");
    let ((), here) = allocations_during(|| drop(std::hint::black_box(vec![1u8; 64])));
    assert_eq!(here, 1, "the test thread's allocation");
    let ((), workers) = pool.install(|| {
        allocations_during(|| {
            rayon::broadcast(|_| drop(std::hint::black_box(vec![1u8; 64])));
        })
    });
    assert!(workers >= 2, "one allocation per worker, counted {workers}");
}

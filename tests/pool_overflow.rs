//! A collision pool that is too small is never silently truncated: it grows once, the
//! overflow is counted in `FrameStats::pool_overflows`, the frame's result is bit-identical to a
//! run with pools of the right size, and the next frame allocates nothing.
//!
//! Two worlds run drape-33 (`samples/drape-33.toml`) side by side in 2-thread pools; after a
//! warm-up one of them has its pools replaced by pools sized for no pair and no test
//! (`World::set_collision_pool_sizes`), below anything the draped cloth needs: the self query
//! keeps no scratch in its pair buffers, so a pool of one pair per triangle already holds the
//! few pairs of drape-33's settled frames.

mod support;

use std::path::Path;

use support::alloc_count;
use weft::collide::resolve::PoolSizes;
use weft::world::World;

#[global_allocator]
static GLOBAL: alloc_count::CountingAllocator = alloc_count::CountingAllocator;

/// drape-33 in a world with its own pool of 2 workers, and its frame length.
fn drape_33() -> (World, f32) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/drape-33.toml");
    let scene = weft::scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    world.set_threads(2).unwrap_or_else(|e| panic!("{e}"));
    (world, scene.dt())
}

/// Steps `world` one frame inside its pool; returns the frame's statistics and the heap
/// allocations it made (its thread and its pool's workers).
fn counted_step(world: &mut World, dt: f32) -> (weft::runtime::stats::FrameStats, usize) {
    let pool = world
        .thread_pool()
        .expect("set_threads sets a pool")
        .clone();
    pool.install(|| {
        alloc_count::mark_counted_threads(true);
        let (s, n) = alloc_count::count(|| world.step(dt));
        alloc_count::mark_counted_threads(false);
        (s.unwrap_or_else(|e| panic!("{e}")), n)
    })
}

#[test]
fn an_undersized_pool_overflows_once_is_reported_and_changes_nothing() {
    let _serial = alloc_count::SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (mut sized, dt) = drape_33();
    let (mut small, _) = drape_33();
    // Warm-up: the cloth lands near frame 10 and drapes; by frame 40 its contact set no longer
    // grows the pools (its most self pairs, 76, are at frame 34), and the frames after it still
    // have some (57 at frame 41, 42–50 in the next four); by frame 60 it is at rest with none.
    for _ in 0..40 {
        sized.step(dt).unwrap_or_else(|e| panic!("{e}"));
        small.step(dt).unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(sized.state_hash(), small.state_hash());
    let tiny = PoolSizes {
        self_pairs_per_triangle: 0,
        obstacle_pairs_per_triangle: 0,
        tests_per_triangle: 0,
    };
    small
        .set_collision_pool_sizes(small.cloth_ids()[0], tiny)
        .unwrap_or_else(|e| panic!("{e}"));

    let (a, a_allocations) = counted_step(&mut sized, dt);
    let (b, b_allocations) = counted_step(&mut small, dt);
    println!(
        "overflowing frame: {} overflows, {b_allocations} allocations, {} proximity pairs, \
         {} contacts; arena {} bytes",
        b.pool_overflows, b.proximity_pairs, b.contacts, b.arena_bytes
    );
    assert!(
        b.proximity_pairs > 0,
        "the frame must have self and obstacle contacts"
    );
    assert_eq!(a.pool_overflows, 0, "the warmed-up pools are big enough");
    assert_eq!(a_allocations, 0, "a warmed-up frame allocates nothing");
    // Every pool grows in the first substep (one overflow: the substep's); the second substep
    // finds them big enough, and the frame arena (warmed up) holds the grown candidate list.
    assert_eq!(b.pool_overflows, 1, "reported overflows");
    assert!(b_allocations > 0, "the overflow is a real allocation");
    assert_eq!(
        sized.state_hash(),
        small.state_hash(),
        "an overflow must not change the result"
    );

    // The grown pools keep their size: the next frames neither overflow nor allocate, and the
    // two worlds stay identical.
    for frame in 0..3 {
        let (a, _) = counted_step(&mut sized, dt);
        let (b, b_allocations) = counted_step(&mut small, dt);
        assert_eq!(a.pool_overflows, 0);
        assert_eq!(b.pool_overflows, 0, "frame {frame} after the overflow");
        assert_eq!(b_allocations, 0, "frame {frame} after the overflow");
        assert_eq!(sized.state_hash(), small.state_hash(), "frame {frame}");
    }
}

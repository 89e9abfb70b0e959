//! `state_hash` is the same for 1, 2 and 4 threads and across
//! repeated runs (results are bit-identical run to run and for any thread
//! count). Each scene runs a few dozen frames — long enough for
//! contact, self-collision, CCD rounds and impact zones to take part — in a
//! world-owned rayon pool of each size.

use std::path::Path;

/// The per-frame `state_hash` sequence of `frames` frames of `sample` stepped
/// in a pool of `threads` workers, and the stats that show which stages ran.
fn run(sample: &str, frames: u32, threads: usize) -> (Vec<u64>, u32, u32) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(sample);
    let scene = weft::scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    world.set_threads(threads).unwrap_or_else(|e| panic!("{e}"));
    let (mut ccd_hits, mut contacts) = (0u32, 0u32);
    let hashes = (0..frames)
        .map(|_| {
            let stats = world.step(scene.dt()).unwrap_or_else(|e| panic!("{e}"));
            ccd_hits += stats.ccd_hits;
            contacts = contacts.max(stats.contacts + stats.proximity_pairs);
            world.state_hash()
        })
        .collect();
    (hashes, ccd_hits, contacts)
}

fn check(sample: &str, frames: u32) {
    let (reference, ccd_hits, contacts) = run(sample, frames, 1);
    // The scene must exercise the collision stage, or the test proves little.
    assert!(contacts > 0, "{sample}: no contact in {frames} frames");
    for threads in [2, 4] {
        let (hashes, _, _) = run(sample, frames, threads);
        let first_diff = reference.iter().zip(&hashes).position(|(a, b)| a != b);
        assert_eq!(
            first_diff, None,
            "{sample}: {threads} threads diverge from 1 thread at frame {first_diff:?}"
        );
    }
    let (again, _, _) = run(sample, frames, 2);
    assert_eq!(reference, again, "{sample}: a repeated run differs");
    println!(
        "{sample}: {frames} frames, final state_hash {:016x} for 1, 2, 4 threads and a repeat ({ccd_hits} CCD hits)",
        reference.last().copied().unwrap_or_default()
    );
}

#[test]
fn drape_65_hash_is_independent_of_threads_and_runs() {
    check("drape.toml", 30);
}

#[test]
fn pile_65_hash_is_independent_of_threads_and_runs() {
    check("pile.toml", 30);
}

#[test]
fn rotating_ball_hash_is_independent_of_threads_and_runs() {
    check("rotating-ball.toml", 24);
}

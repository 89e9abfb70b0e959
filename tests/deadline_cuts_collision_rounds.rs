//! The collision stage is bounded by the frame's deadline: once it has passed, the stage runs no
//! further CCD or impact-zone round (it asks between rounds), goes to its last resort with the
//! collisions left, and reports both (`rounds_cut`, `last_resorts`); the frame still passes the
//! independent intersection check (`tests/support`). The deadline is measured through an
//! injected clock, so it passes after a known number of clock reads whatever the machine.

mod support;

use std::path::Path;
use std::sync::Arc;

use support::clock::SteppingClock;

use weft::runtime::stats::FrameStats;

/// A sheet of 21×21 vertices thrown down at 20 m/s onto a sphere, self-collision on, up to 10 CCD
/// rounds: its impact needs many CCD rounds and impact-zone rounds a substep.
const SCENE: &str = r#"
name = "thrown sheet"
fps = 60
substeps = 2
[solver]
cg_max_iterations = 100
[[cloth]]
name = "sheet"
thickness = 0.004
velocity = [0.0, -20.0, 0.0]
[cloth.grid]
vertices = [21, 21]
size = [0.6, 0.6]
centre = [0.0, 0.32, 0.0]
plane = "xz"
[cloth.collision]
self_collision = true
ccd_rounds = 10
strain_limit = 0.1
[[collider]]
shape = "sphere"
radius = 0.2
"#;

fn world(frame_ms: Option<f64>) -> weft::world::World {
    let scene = weft::scene::Scene::from_toml(SCENE, Path::new("thrown.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    world.set_clock(Arc::new(SteppingClock::new(1e-3)));
    world.settings_mut().budget.frame_ms = frame_ms;
    world
}

fn run(world: &mut weft::world::World, frames: u32, what: &str) -> Vec<FrameStats> {
    (1..=frames)
        .map(|frame| {
            let s = world
                .step(1.0 / 60.0)
                .unwrap_or_else(|e| panic!("{what}, frame {frame}: {e}"));
            assert!(
                world.cloths()[0].state().is_finite(),
                "{what}, frame {frame}"
            );
            support::assert_world_clean(world, &format!("{what}, frame {frame} ({s:?})"));
            s
        })
        .collect()
}

#[test]
fn a_passed_deadline_cuts_the_collision_rounds_and_takes_the_bounded_last_resort() {
    const FRAMES: u32 = 12;
    // Without a deadline the impact takes several CCD rounds in a substep.
    let free = run(&mut world(None), FRAMES, "no deadline");
    let most_rounds = free
        .iter()
        .map(|s| s.ccd_rounds + s.zone_rounds)
        .max()
        .unwrap_or(0);
    let substeps = free.iter().map(|s| s.substeps).max().unwrap_or(0);
    assert!(
        most_rounds > 3 * substeps,
        "the reference must need many rounds ({most_rounds} in {substeps} substeps)"
    );
    assert!(free.iter().all(|s| s.rounds_cut == 0));

    // A 2 ms budget on a clock that moves 1 ms per read: the deadline passes before the first
    // solve ends, so every collision stage runs its first CCD round and no other round.
    let cut = run(&mut world(Some(2.0)), FRAMES, "2 ms deadline");
    for (frame, s) in cut.iter().enumerate() {
        assert!(s.deadline_hit, "frame {frame}: deadline not reported");
        assert_eq!(
            s.zone_rounds, 0,
            "frame {frame}: a zone round past the deadline"
        );
        assert!(
            s.ccd_rounds <= s.substeps + s.rejected_substeps,
            "frame {frame}: {} CCD rounds in {} substeps",
            s.ccd_rounds,
            s.substeps
        );
        assert!(
            s.last_resorts <= s.substeps,
            "frame {frame}: {} last resorts",
            s.last_resorts
        );
    }
    let rounds_cut: u32 = cut.iter().map(|s| s.rounds_cut).sum();
    let last_resorts: u32 = cut.iter().map(|s| s.last_resorts).sum();
    assert!(rounds_cut > 0, "the deadline never cut the rounds");
    assert!(last_resorts > 0, "no last resort after the cut");
}

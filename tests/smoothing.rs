//! Implicit velocity smoothing wired into the step (course notes §4.10):
//! `velocity_smoothing` in `[cloth.collision]` spreads the velocity jumps that collision impulses
//! leave, so a cloth landing on a sphere ends each frame with smoother velocities than without it.

use std::path::Path;

use weft::scene::Scene;

fn scene(smoothing: f32) -> Scene {
    let text = format!(
        r#"
        frames = 40
        [[cloth]]
        [cloth.grid]
        vertices = [21, 21]
        size = [0.6, 0.6]
        centre = [0.0, 0.32, 0.0]
        [cloth.collision]
        velocity_smoothing = {smoothing}

        [[collider]]
        shape = "sphere"
        radius = 0.3
        "#
    );
    Scene::from_toml(&text, Path::new("smoothing.toml")).unwrap_or_else(|e| panic!("{e}"))
}

/// Σ over mesh edges of |v_i − v_j|²: how rough the velocity field is.
fn roughness(world: &weft::world::World) -> f64 {
    let cloth = &world.cloths()[0];
    let v = cloth.state().velocities();
    let (edges, _) = cloth.edges();
    edges
        .iter()
        .map(|&[i, j]| f64::from((v[i as usize] - v[j as usize]).length_squared()))
        .sum()
}

/// Mean roughness over the frames after the cloth meets the sphere, and the final state hash.
fn run(smoothing: f32) -> (f64, u64) {
    let scene = scene(smoothing);
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    let mut sum = 0.0;
    let mut count = 0;
    for frame in 0..scene.frames {
        let stats = world.step(scene.dt()).unwrap_or_else(|e| panic!("{e}"));
        // The collide stage's time is split into sub-stages,
        // all inside the stage's own lap.
        let parts: f64 = stats.collide_ms.values().iter().sum();
        let stage = stats.stage_ms.get(weft::runtime::profile::Stage::Collide);
        assert!(
            parts <= stage * (1.0 + 1e-9) + 1e-6,
            "frame {frame}: sub-stages {parts} ms > collide {stage} ms"
        );
        assert!(stats.collide_ms.proximity_ms > 0.0 && stats.collide_ms.ccd_ms > 0.0);
        if smoothing > 0.0 {
            assert!(stats.collide_ms.smoothing_ms > 0.0);
        }
        if frame >= 5 {
            sum += roughness(&world);
            count += 1;
        }
    }
    (sum / f64::from(count), world.state_hash())
}

#[test]
fn smoothing_spreads_collision_velocity_jumps() {
    let (rough_off, hash_off) = run(0.0);
    let (rough_on, hash_on) = run(2.0);
    println!("velocity roughness after impact: off {rough_off:.4e}, on {rough_on:.4e} (m²/s²)");
    assert_ne!(hash_off, hash_on, "smoothing must reach the step");
    assert!(
        rough_on < 0.8 * rough_off,
        "smoothing should cut the velocity roughness: off {rough_off:.4e}, on {rough_on:.4e}"
    );
}

#[test]
fn negative_smoothing_is_rejected_naming_the_field() {
    let text = r#"
        [[cloth]]
        [cloth.grid]
        vertices = [3, 3]
        size = [0.1, 0.1]
        [cloth.collision]
        velocity_smoothing = -1.0
    "#;
    let Err(err) = Scene::from_toml(text, Path::new("bad.toml")) else {
        panic!("a negative smoothing strength must be rejected");
    };
    let msg = err.to_string();
    assert!(msg.contains("velocity_smoothing"), "{msg}");
}

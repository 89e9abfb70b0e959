//! Kinematic colliders: a rising ground lifts a resting cloth, a sphere
//! sweeping sideways pushes it, and neither lets a vertex through.

use std::path::Path;

use weft::scene::Scene;

fn run(text: &str, frames: u32) -> weft::world::World {
    let scene = Scene::from_toml(text, Path::new("moving.toml")).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..frames {
        world.step(scene.dt()).unwrap_or_else(|e| panic!("{e}"));
    }
    world
}

#[test]
fn rising_ground_lifts_the_cloth() {
    let world = run(
        r#"
        [[cloth]]
        [cloth.grid]
        vertices = [9, 9]
        size = [0.4, 0.4]
        centre = [0.0, 0.01, 0.0]

        [[collider]]
        shape = "plane"
        linear_velocity = [0.0, 0.5, 0.0]
        "#,
        60,
    );
    // After 1 s the ground is at y = 0.5; the cloth rides on it.
    let ground = world.colliders()[0].pose().translation.y;
    assert!((ground - 0.5).abs() < 1e-4, "ground at {ground}");
    for p in world.cloths()[0].state().positions() {
        assert!(
            p.y >= ground - 1e-3,
            "vertex {p} below the ground at {ground}"
        );
        assert!(p.y < ground + 0.05, "vertex {p} left behind");
    }
}

#[test]
fn sweeping_sphere_pushes_the_cloth_without_passing_through() {
    let world = run(
        r#"
        gravity = [0.0, 0.0, 0.0]

        [[cloth]]
        [cloth.grid]
        vertices = [9, 9]
        size = [0.4, 0.4]
        centre = [0.0, 0.0, 0.0]
        plane = "yz"

        [[collider]]
        shape = "sphere"
        radius = 0.1
        position = [-0.3, 0.0, 0.0]
        linear_velocity = [1.0, 0.0, 0.0]
        "#,
        30,
    );
    // The sphere has moved 0.5 m along +x, through where the cloth was.
    let centre = world.colliders()[0].pose().translation;
    assert!((centre.x - 0.2).abs() < 1e-4);
    let cloth = world.cloths()[0].state().positions();
    for p in cloth {
        assert!(
            (*p - centre).length() >= 0.1 - 1e-3,
            "vertex {p} inside the sphere at {centre}"
        );
    }
    let mean_x: f32 = cloth.iter().map(|p| p.x).sum::<f32>() / cloth.len() as f32;
    assert!(mean_x > 0.05, "the cloth was pushed along: mean x {mean_x}");
}

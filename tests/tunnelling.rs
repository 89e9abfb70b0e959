//! Fast motion never tunnels: a cloth thrown at 50 m/s at a 1 mm thick plate,
//! and a capsule arm sweeping at 5 m/s through a resting cloth, checked at
//! every frame by the independent checker. Each runs twice: with the analytic
//! shape (`[[collider]]`) and with a generated triangle mesh (`[[obstacle]]`),
//! whose contact goes through the BVH, proximity and CCD of `collide`.

mod support;

use std::path::Path;

use weft::scene::Scene;

fn run_checked(text: &str, frames: u32) -> weft::world::World {
    let scene = Scene::from_toml(text, Path::new("tunnel.toml")).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    for frame in 0..frames {
        world.step(scene.dt()).unwrap_or_else(|e| panic!("{e}"));
        support::assert_world_clean(&world, &format!("frame {frame}"));
    }
    world
}

/// A cloth thrown at 50 m/s at a 1 mm thick plate (x in [-0.0005, 0.0005])
/// given by `plate` (a TOML section); it starts 0.2 m in front of the plate
/// and moves 0.42 m per frame toward it.
fn thrown_at_a_thin_plate(plate: &str) {
    let world = run_checked(
        &format!(
            r#"
        gravity = [0.0, 0.0, 0.0]
        substeps = 2
        [[cloth]]
        velocity = [-50.0, 0.0, 0.0]
        thickness = 0.002
        [cloth.grid]
        vertices = [9, 9]
        size = [0.3, 0.3]
        centre = [0.2, 0.0, 0.0]
        plane = "yz"
        {plate}
        shape = "box"
        half_extents = [0.0005, 1.0, 1.0]
        "#
        ),
        20,
    );
    for p in world.cloths()[0].state().positions() {
        assert!(p.x > 0.0005, "vertex {p} went through the plate");
    }
}

#[test]
fn cloth_thrown_at_50_m_per_s_stops_at_a_thin_plate() {
    thrown_at_a_thin_plate("[[collider]]");
}

#[test]
fn cloth_thrown_at_50_m_per_s_stops_at_a_thin_plate_mesh() {
    thrown_at_a_thin_plate("[[obstacle]]");
}

/// A capsule arm given by `arm` (a TOML section) sweeps at 5 m/s through a
/// resting cloth.
fn arm_sweeping_through_a_resting_cloth(arm: &str) {
    let world = run_checked(
        &format!(
            r#"
        gravity = [0.0, 0.0, 0.0]
        substeps = 2
        [[cloth]]
        [cloth.grid]
        vertices = [17, 17]
        size = [0.5, 0.5]
        centre = [0.0, 0.0, 0.0]
        plane = "yz"
        [cloth.collision]
        self_collision = true
        {arm}
        shape = "capsule"
        radius = 0.03
        half_length = 0.1
        position = [-0.2, 0.0, 0.0]
        linear_velocity = [5.0, 0.0, 0.0]
        "#
        ),
        6,
    );
    // After 0.1 s the arm is at x = 0.3, beyond where the cloth was: the cloth
    // has been pushed along, not cut through.
    let x = world.cloths()[0].state().positions();
    let mean_x: f32 = x.iter().map(|p| p.x).sum::<f32>() / x.len() as f32;
    assert!(mean_x > 0.05, "the cloth was not pushed: mean x {mean_x}");
}

#[test]
fn capsule_arm_sweeping_at_5_m_per_s_pushes_a_resting_cloth() {
    arm_sweeping_through_a_resting_cloth("[[collider]]");
}

#[test]
fn capsule_arm_mesh_sweeping_at_5_m_per_s_pushes_a_resting_cloth() {
    arm_sweeping_through_a_resting_cloth("[[obstacle]]");
}

//! A Baraff–Witkin cloth keeps its thickness from analytic colliders: no vertex is ever inside a
//! collider, and at rest every vertex is at least 90 % of the thickness η from its exact surface.
//! drape-33 on its sphere, and a small cloth dropped onto a capsule and onto a plane. Measured with
//! the independent clearance code of `tests/support/clearance.rs`.

mod support;

use std::path::Path;

use support::clearance::point_solid_distance;
use weft::scene::Scene;

/// A 0.4 m × 0.4 m cloth of 17 × 17 vertices, 2 cm above the top of `collider` (a TOML
/// `[[collider]]` body whose top is at y = 0), falling under gravity.
fn scene(collider: &str) -> String {
    format!(
        r#"
name = "thickness-kept"
fps = 60
frames = 100
substeps = 2

[[cloth]]
name = "sheet"
density = 0.1
thickness = 0.004
friction = 0.5

[cloth.grid]
vertices = [17, 17]
size = [0.4, 0.4]
centre = [0.0, 0.02, 0.0]
plane = "xz"
diagonals = "alternating"

[cloth.material]
stretch_u = 1000.0
stretch_v = 1000.0
shear = 100.0
bend = 1e-5
stretch_damping = 0.002
shear_damping = 0.002
bend_damping = 0.002

[cloth.collision]
self_collision = true
ccd_rounds = 10
strain_limit = 0.04

[[collider]]
friction = 0.5
{collider}
"#
    )
}

/// Runs `frames` frames of `scene`; checks every frame that no vertex is inside a collider, and the
/// last `last` frames that every vertex is at least 0.9 η from every collider's surface.
fn assert_thickness_kept(name: &str, scene: &Scene, frames: u32, last: u32) {
    let mut world = scene.instantiate().expect("scene instantiates");
    let dt = scene.dt();
    let mut worst = f64::INFINITY;
    for frame in 1..=frames {
        world.step(dt).expect("step");
        let at_rest = frame + last > frames;
        let solids = support::solids_of(&world);
        for cloth in world.cloths() {
            let eta = f64::from(cloth.thickness());
            for (i, &p) in cloth.state().positions().iter().enumerate() {
                for solid in &solids {
                    let d = point_solid_distance(solid, p);
                    let floor = if at_rest { 0.9 * eta } else { 0.0 };
                    if at_rest {
                        worst = worst.min(d / eta);
                    }
                    assert!(
                        d >= floor,
                        "{name}, frame {frame}: vertex {i} at {:.4} mm ({:.3} η) from the surface",
                        d * 1e3,
                        d / eta
                    );
                }
            }
        }
    }
    // The cloth did come to rest on the shape: some vertex is within 1.1 η of it.
    assert!(
        worst < 1.1,
        "{name}: the cloth never touched (closest {worst:.3} η)"
    );
}

fn small_cloth_on(collider: &str) -> Scene {
    Scene::from_toml(&scene(collider), Path::new("thickness-kept.toml")).expect("valid scene")
}

#[test]
fn drape_33_never_enters_its_sphere_and_rests_at_its_thickness() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/drape-33.toml");
    let scene = weft::scene::load(&path).expect("drape-33 loads");
    assert_thickness_kept("drape-33", &scene, 180, 30);
}

#[test]
fn cloth_resting_on_a_capsule_keeps_its_thickness() {
    assert_thickness_kept(
        "capsule",
        &small_cloth_on(
            "shape = \"capsule\"\nradius = 0.1\nhalf_length = 0.15\nposition = [0.0, -0.1, 0.0]\nrotation_deg = [90.0, 0.0, 0.0]",
        ),
        100,
        10,
    );
}

#[test]
fn cloth_resting_on_a_plane_keeps_its_thickness() {
    assert_thickness_kept("plane", &small_cloth_on("shape = \"plane\""), 60, 10);
}

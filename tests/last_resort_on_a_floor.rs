//! The last resort of the collision stage on a floor: every cloth vertex in one rigid impact
//! zone (Bridson 2002 §3.10), carrying the momentum of the part still falling, must not move a
//! vertex resting on the floor through the floor's tessellation. The zone joins the floor it hits
//! and follows it (`collide/resolve.rs`, *a bounded stage*). The geometry is that of drape-33
//! with a floor once the sheet has slid off the ball (`tests/soak.rs`).
//!
//! A light sheet lying on an analytic floor plane
//! (its 20 m tessellation, 1.25 m triangles, is what the collision stage sees) and a heavy sheet
//! of the same cloth falling onto it. With no CCD rounds and a zone cap of 0 the first collision
//! takes the last resort at once. Every frame is checked with the independent checker
//! (`tests/support`).

mod support;

use glam::{Quat, Vec2, Vec3};
use weft::collide::resolve::CollisionSettings;
use weft::collide::shapes::{Motion, Pose, Shape};
use weft::integrate::implicit_euler::BwSettings;
use weft::mesh::{Diagonals, GridSpec, TriMesh, grid};
use weft::world::{ClothDesc, ColliderDesc, World, WorldSettings};

/// Height of the floor plane (as in the soak: the bottom of drape-33's ball).
const FLOOR: f32 = -0.3;

/// One cloth of two unconnected square sheets: the lower one (vertices `0..lower`) 3 mm above the
/// floor, inside the cloth's 4 mm thickness, the upper one 6 cm above it, offset so that no
/// edge of one lies over an edge of the other.
fn two_sheets() -> (TriMesh, usize) {
    let sheet = |size: f32, centre: Vec3| {
        grid(&GridSpec {
            nx: 9,
            ny: 9,
            size: Vec2::splat(size),
            centre,
            u_axis: Vec3::X,
            v_axis: Vec3::NEG_Z,
            diagonals: Diagonals::Alternating,
        })
        .expect("valid grid")
    };
    let lower = sheet(0.3, Vec3::new(0.0, FLOOR + 0.003, 0.0));
    let upper = sheet(0.2, Vec3::new(0.013, FLOOR + 0.063, -0.007));
    let n = lower.positions.len();
    let mesh = TriMesh {
        positions: lower
            .positions
            .iter()
            .chain(&upper.positions)
            .copied()
            .collect(),
        triangles: lower
            .triangles
            .iter()
            .copied()
            .chain(upper.triangles.iter().map(|t| t.map(|i| i + n as u32)))
            .collect(),
        corner_uvs: None,
    };
    (mesh, n)
}

#[test]
fn last_resort_zone_does_not_carry_resting_cloth_through_the_floor() {
    let mut world = World::new(WorldSettings::default());
    world
        .add_collider(ColliderDesc {
            shape: Shape::Plane,
            pose: Pose {
                translation: Vec3::new(0.0, FLOOR, 0.0),
                rotation: Quat::IDENTITY,
            },
            motion: Motion::default(),
            friction: 0.3,
        })
        .expect("valid collider");
    let (mesh, lower) = two_sheets();
    let vertices = mesh.positions.len();
    world
        .add_cloth(ClothDesc {
            name: "two sheets".into(),
            mesh,
            density: 0.1,
            thickness: 0.004,
            friction: 0.3,
            air_damping: 0.0,
            model: BwSettings::default(),
            pins: Vec::new(),
            pin_velocity: Vec3::ZERO,
            initial_velocity: Vec3::ZERO,
            collision: CollisionSettings {
                ccd_rounds: 0,
                max_zone_rounds: 0,
                ..CollisionSettings::default()
            },
        })
        .expect("valid cloth");
    // The upper sheet 100 times heavier: the last-resort zone moves at nearly its velocity.
    let masses: Vec<f32> = world.cloths()[0]
        .state()
        .masses()
        .iter()
        .enumerate()
        .map(|(i, &m)| if i < lower { m } else { 100.0 * m })
        .collect();
    assert_eq!(masses.len(), vertices);
    world
        .set_cloth_masses(world.cloth_ids()[0], &masses)
        .expect("valid masses");

    let mut last_resorts = 0;
    for frame in 1..=30 {
        let stats = world
            .step(1.0 / 60.0)
            .unwrap_or_else(|e| panic!("frame {frame}: {e}"));
        last_resorts += stats.last_resorts;
        support::assert_world_clean(&world, &format!("frame {frame}"));
        let lowest = world.cloths()[0].state().positions()[..lower]
            .iter()
            .map(|p| p.y)
            .fold(f32::INFINITY, f32::min);
        assert!(
            lowest > FLOOR,
            "frame {frame}: the lower sheet is {:.3} mm below the floor ({stats:?})",
            1e3 * (FLOOR - lowest)
        );
    }
    // The case under test happened: the fail-safe took its last resort.
    assert!(last_resorts > 0, "no last resort in 30 frames");
}

//! The collision stage's last resort against moving bodies (`collide/last_resort.rs`): with no
//! CCD rounds and an impact-zone cap of 0, every collision of these scenes goes straight to the
//! last resort. Every frame is checked with the
//! independent checker (`tests/support`: cloth against itself, the colliders' tessellations, and
//! the analytic shapes, a vertex or face more than 1 mm inside one counting as a crossing).
//! Stopping the cloth, or moving it with the best fit of every body it touches, is correct only
//! while nothing kinematic moves or every body moves alike; here the bodies move differently.

mod support;

use glam::{Quat, Vec2, Vec3};
use weft::collide::resolve::CollisionSettings;
use weft::collide::shapes::{Motion, Pose, Shape};
use weft::integrate::implicit_euler::BwSettings;
use weft::mesh::{Diagonals, GridSpec, grid};
use weft::world::{ClothDesc, ColliderDesc, World, WorldSettings};

/// Collision settings that leave every collision to the last resort.
fn last_resort_only() -> CollisionSettings {
    CollisionSettings {
        ccd_rounds: 0,
        max_zone_rounds: 0,
        ..CollisionSettings::default()
    }
}

/// A horizontal square sheet of `n`×`n` vertices, `size` wide, centred at `centre`.
fn sheet(world: &mut World, n: u32, size: f32, centre: Vec3, thickness: f32) {
    let mesh = grid(&GridSpec {
        nx: n,
        ny: n,
        size: Vec2::splat(size),
        centre,
        u_axis: Vec3::X,
        v_axis: Vec3::NEG_Z,
        diagonals: Diagonals::Alternating,
    })
    .expect("valid grid");
    world
        .add_cloth(ClothDesc {
            name: "sheet".into(),
            mesh,
            density: 0.1,
            thickness,
            friction: 0.3,
            air_damping: 0.0,
            model: BwSettings::default(),
            pins: Vec::new(),
            pin_velocity: Vec3::ZERO,
            initial_velocity: Vec3::ZERO,
            collision: last_resort_only(),
        })
        .expect("valid cloth");
}

fn collider(world: &mut World, shape: Shape, translation: Vec3, rotation: Quat, motion: Motion) {
    world
        .add_collider(ColliderDesc {
            shape,
            pose: Pose {
                translation,
                rotation,
            },
            motion,
            friction: 0.3,
        })
        .expect("valid collider");
}

/// Steps `frames` frames, checking every one; returns the last resorts taken and those in which
/// the cloth gave way (followed the bodies nearest it), and prints both.
fn run_checked(world: &mut World, frames: u32, what: &str) -> (u32, u32) {
    let (mut last_resorts, mut gave_way) = (0, 0);
    for frame in 1..=frames {
        let stats = world
            .step(1.0 / 60.0)
            .unwrap_or_else(|e| panic!("{what}, frame {frame}: {e}"));
        assert!(
            world.cloths()[0].state().is_finite(),
            "{what}, frame {frame}"
        );
        support::assert_world_clean(world, &format!("{what}, frame {frame} ({stats:?})"));
        last_resorts += stats.last_resorts;
        gave_way += stats.last_resorts_gave_way;
    }
    println!("{what}: {last_resorts} last resorts, the cloth gave way in {gave_way}");
    (last_resorts, gave_way)
}

/// (a) A sheet hung over two horizontal rods (capsules along z): one rests, the other rises at
/// 1.5 m/s while it turns at 3 rad/s about the vertical, lifting and sweeping the cloth. The
/// cloth it lifts moves with it and never ends inside either rod.
#[test]
fn cloth_pushed_by_a_moving_rod_stays_outside_it() {
    let mut world = World::new(WorldSettings::default());
    let rod = Shape::Capsule {
        radius: 0.008,
        half_length: 0.25,
    };
    let along_z = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    collider(
        &mut world,
        rod,
        Vec3::new(-0.12, -0.02, 0.0),
        along_z,
        Motion::default(),
    );
    collider(
        &mut world,
        rod,
        Vec3::new(0.12, -0.05, 0.0),
        along_z,
        Motion {
            linear_velocity: Vec3::new(0.0, 1.5, 0.0),
            angular_velocity: Vec3::new(0.0, 3.0, 0.0),
        },
    );
    sheet(&mut world, 17, 0.4, Vec3::ZERO, 0.004);
    let (last_resorts, _) = run_checked(&mut world, 30, "moving rod");
    assert!(last_resorts > 0, "the last resort was never taken");
    // The rod went up 0.75 m: the cloth it carried went with it.
    let highest = world.cloths()[0]
        .state()
        .positions()
        .iter()
        .map(|p| p.y)
        .fold(f32::NEG_INFINITY, f32::max);
    assert!(highest > 0.3, "the rod left the cloth behind ({highest} m)");
}

/// (b) A sheet pinched between two boxes that slide past each other: the lower one moves −x, the
/// upper one +x, 6 mm above it. The cloth's middle lies 4 mm above the lower box and the upper
/// one's underside meets its 2 mm thickness, so it is pinched from the first substep; no rigid
/// motion follows both, so the pinched cloth is split between them and gives way (stretches)
/// instead of crossing either.
#[test]
fn cloth_pinched_between_boxes_sliding_apart_crosses_neither() {
    let mut world = World::new(WorldSettings::default());
    let block = Shape::Cuboid {
        half_extents: Vec3::new(0.1, 0.05, 0.1),
    };
    collider(
        &mut world,
        block,
        Vec3::new(0.0, -0.05, 0.0),
        Quat::IDENTITY,
        Motion {
            linear_velocity: Vec3::new(-0.6, 0.0, 0.0),
            angular_velocity: Vec3::ZERO,
        },
    );
    collider(
        &mut world,
        block,
        Vec3::new(0.0, 0.056, 0.0),
        Quat::IDENTITY,
        Motion {
            linear_velocity: Vec3::new(0.6, 0.0, 0.0),
            angular_velocity: Vec3::ZERO,
        },
    );
    sheet(&mut world, 13, 0.3, Vec3::new(0.0, 0.004, 0.0), 0.002);
    let (last_resorts, _) = run_checked(&mut world, 30, "pinched");
    assert!(last_resorts > 0, "the last resort was never taken");
}

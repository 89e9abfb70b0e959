//! The Bridson 2002 collision stage keeps a crumpling cloth intersection-free,
//! checked every frame by the independent checker in `tests/support`.

mod support;

use glam::{Quat, Vec2, Vec3};
use support::{TriSoup, find_intersections};
use weft::collide::resolve::CollisionSettings;
use weft::collide::shapes::{Motion, Pose};
use weft::integrate::implicit_euler::BwSettings;
use weft::linalg::PcgSettings;
use weft::mesh::{Diagonals, GridSpec, grid};
use weft::world::{ClothDesc, ObstacleDesc, World, WorldSettings};

fn material() -> BwSettings {
    BwSettings {
        pcg: PcgSettings {
            max_iterations: 100,
            tolerance: 1e-3,
        },
        ..BwSettings::default()
    }
}

/// A standing, bowed 0.5 m sheet collapses onto a ground made of triangles
/// (an obstacle mesh, not an analytic plane) and folds onto itself.
#[test]
fn standing_sheet_collapses_without_intersections() {
    let n = 17;
    let mut mesh = grid(&GridSpec {
        nx: n,
        ny: n,
        size: Vec2::new(0.5, 0.5),
        centre: Vec3::new(0.0, 0.27, 0.0),
        u_axis: Vec3::X,
        v_axis: Vec3::Y,
        diagonals: Diagonals::Alternating,
    })
    .expect("valid grid");
    for j in 0..n as usize {
        for i in 0..n as usize {
            let t = j as f32 / (n - 1) as f32;
            let s = i as f32 / (n - 1) as f32 - 0.5;
            mesh.positions[j * n as usize + i].z += 0.01
                * (std::f32::consts::PI * t).sin()
                * (1.0 + 0.5 * (3.0 * std::f32::consts::PI * s).sin());
        }
    }
    let mut world = World::new(WorldSettings::default());
    let ground = grid(&GridSpec {
        nx: 5,
        ny: 5,
        size: Vec2::new(2.0, 2.0),
        centre: Vec3::ZERO,
        u_axis: Vec3::X,
        v_axis: Vec3::NEG_Z,
        diagonals: Diagonals::Alternating,
    })
    .expect("valid ground");
    world
        .add_obstacle(ObstacleDesc {
            mesh: ground,
            pose: Pose {
                translation: Vec3::ZERO,
                rotation: Quat::IDENTITY,
            },
            motion: Motion::default(),
            friction: 0.3,
            thickness: 0.0,
        })
        .expect("valid obstacle");
    world
        .add_cloth(ClothDesc {
            name: "sheet".into(),
            mesh,
            density: 0.1,
            thickness: 0.004,
            friction: 0.3,
            air_damping: 0.0,
            model: material(),
            pins: Vec::new(),
            pin_velocity: Vec3::ZERO,
            initial_velocity: Vec3::ZERO,
            collision: CollisionSettings::default(),
        })
        .expect("valid cloth");
    let mut hits = 0u32;
    let mut zones = 0u32;
    for frame in 0..120 {
        let stats = world.step(1.0 / 60.0).unwrap_or_else(|e| panic!("{e}"));
        hits += stats.ccd_hits;
        if frame % 10 == 0 {
            println!(
                "frame {frame} strain {:.3} prox {} ccd {} zones {} largest {}",
                stats.max_strain,
                stats.proximity_pairs,
                stats.ccd_hits,
                stats.impact_zones,
                stats.largest_zone
            );
        }
        zones = zones.max(stats.largest_zone);
        let cloth = &world.cloths()[0];
        let (ox, otris) = world.obstacle_soup();
        let report = find_intersections(
            &TriSoup {
                positions: cloth.state().positions(),
                triangles: cloth.triangles(),
            },
            &[TriSoup {
                positions: ox,
                triangles: otris,
            }],
            &[],
            0.0,
        );
        assert!(report.is_clean(), "frame {frame}: {}", report.summary());
        assert_eq!(
            stats.last_resorts, 0,
            "frame {frame}: the fail-safe took its last resort"
        );
    }
    let lowest = world.cloths()[0]
        .state()
        .positions()
        .iter()
        .map(|p| p.y)
        .fold(f32::MAX, f32::min);
    let highest = world.cloths()[0]
        .state()
        .positions()
        .iter()
        .map(|p| p.y)
        .fold(f32::MIN, f32::max);
    println!(
        "collapsed: {hits} CCD hits, largest zone {zones}, height {lowest:.4}..{highest:.4} m"
    );
    assert!(lowest > -1e-3, "fell through the ground: {lowest}");
    assert!(
        highest < 0.3,
        "the sheet did not collapse: top at {highest}"
    );
}

//! Shared support code for weft's integration tests.
//!
//! Each integration test binary includes this module with `mod support;`. Test binaries use
//! different subsets of it, so unused items are allowed here rather than in every caller.
//! The module has no `#[cfg(test)] mod tests` of its own: anything placed there would run once
//! per including binary. The checker's own tests live in `tests/intersection_checker.rs`.
#![deny(unsafe_code)]
// Every test binary compiles this module but uses only part of it.
#![allow(dead_code)]

pub mod alloc_count;
pub mod clearance;
pub mod intersection;

// Re-exported for the callers that use them; a binary that uses none would warn.
#[allow(unused_imports)]
pub use intersection::{
    IntersectionReport, Solid, TriSoup, find_intersections, find_intersections_brute_force,
    orient3d,
};

/// The checker's description of every analytic collider of `world`, at its
/// current pose. Only reads the scene's shape descriptors; the checker itself
/// stays independent of `src/collide`.
pub fn solids_of(world: &weft::world::World) -> Vec<Solid> {
    use weft::collide::shapes::Shape;
    world
        .colliders()
        .iter()
        .map(|c| {
            let pose = c.pose();
            match c.desc().shape {
                Shape::Plane => Solid::Plane {
                    point: pose.translation,
                    normal: pose.rotation * glam::Vec3::Y,
                },
                Shape::Sphere { radius } => Solid::Sphere {
                    centre: pose.translation,
                    radius,
                },
                Shape::Capsule {
                    radius,
                    half_length,
                } => Solid::Capsule {
                    a: pose.transform_point(glam::Vec3::new(0.0, -half_length, 0.0)),
                    b: pose.transform_point(glam::Vec3::new(0.0, half_length, 0.0)),
                    radius,
                },
                Shape::Cuboid { half_extents } => Solid::Box {
                    centre: pose.translation,
                    half_extents,
                    rotation: pose.rotation,
                },
            }
        })
        .collect()
}

/// Checks every cloth of `world` with the independent checker: no two
/// non-adjacent cloth triangles intersect, no cloth triangle crosses an
/// obstacle mesh, and none is more than 1 mm inside an analytic collider.
/// Panics with `context` and the checker's summary otherwise.
pub fn assert_world_clean(world: &weft::world::World, context: &str) {
    let solids = solids_of(world);
    let (ox, otris) = world.obstacle_soup();
    for (i, cloth) in world.cloths().iter().enumerate() {
        let report = find_intersections(
            &TriSoup {
                positions: cloth.state().positions(),
                triangles: cloth.triangles(),
            },
            &[TriSoup {
                positions: ox,
                triangles: otris,
            }],
            &solids,
            1e-3,
        );
        assert!(
            report.is_clean(),
            "{context}, cloth {i}: {}",
            report.summary()
        );
    }
}

//! Shared support code for weft's integration tests.
//!
//! Each integration test binary includes this module with `mod support;`. Test binaries use
//! different subsets of it, so unused items are allowed here rather than in every caller.
//! The module has no `#[cfg(test)] mod tests` of its own: anything placed there would run once
//! per including binary. The checker's own tests live in `tests/intersection_checker.rs` (triangle
//! tests) and `tests/containment_checker.rs` (vertices inside solids and closed meshes).
#![deny(unsafe_code)]
// Every test binary compiles this module but uses only part of it.
#![allow(dead_code)]

pub mod alloc_count;
pub mod clearance;
pub mod clock;
pub mod inside;
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

/// The world's obstacle meshes (colliders' tessellations included, in
/// [`weft::world::World::obstacles`] order), each placed at its current pose
/// (after a step: the frame's end).
pub fn obstacle_meshes(world: &weft::world::World) -> Vec<(Vec<glam::Vec3>, Vec<[u32; 3]>)> {
    world
        .obstacles()
        .iter()
        .map(|o| {
            let pose = o.pose();
            let mesh = o.mesh();
            (
                mesh.positions
                    .iter()
                    .map(|p| pose.transform_point(*p))
                    .collect(),
                mesh.triangles.clone(),
            )
        })
        .collect()
}

/// What the independent checker finds in one cloth of a world.
#[derive(Clone, Debug, Default)]
pub struct ClothCheck {
    /// Triangle tests: self pairs; `mesh_pairs` index the obstacles as
    /// [`obstacle_meshes`] does; `solid_hits` index the colliders.
    pub triangles: IntersectionReport,
    /// `(collider, vertex, depth m)` of vertices deeper than the tolerance in an
    /// analytic collider at its current pose.
    pub vertices_in_solids: Vec<(usize, u32, f32)>,
    /// `(obstacle, vertex)` of vertices inside a closed obstacle mesh.
    pub vertices_in_meshes: Vec<(usize, u32)>,
}

impl ClothCheck {
    /// True when nothing intersects and no vertex is inside anything.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.triangles.is_clean()
            && self.vertices_in_solids.is_empty()
            && self.vertices_in_meshes.is_empty()
    }

    /// One line for assertion messages.
    #[must_use]
    pub fn summary(&self) -> String {
        const SHOWN: usize = 8;
        format!(
            "triangles: {}; {} vertices in colliders {:?}; {} vertices in obstacle meshes {:?}",
            self.triangles.summary(),
            self.vertices_in_solids.len(),
            &self.vertices_in_solids[..self.vertices_in_solids.len().min(SHOWN)],
            self.vertices_in_meshes.len(),
            &self.vertices_in_meshes[..self.vertices_in_meshes.len().min(SHOWN)],
        )
    }
}

/// Checks cloth `cloth` of `world` at its current state against itself, every
/// obstacle mesh and every analytic collider at their current poses: triangle
/// pairs that intersect, triangles and vertices more than `tolerance` (m) inside a
/// collider, vertices inside a closed obstacle mesh.
pub fn check_cloth(world: &weft::world::World, cloth: usize, tolerance: f32) -> ClothCheck {
    let solids = solids_of(world);
    let meshes = obstacle_meshes(world);
    let soups: Vec<TriSoup> = meshes
        .iter()
        .map(|(x, t)| TriSoup {
            positions: x,
            triangles: t,
        })
        .collect();
    let c = &world.cloths()[cloth];
    let x = c.state().positions();
    let triangles = find_intersections(
        &TriSoup {
            positions: x,
            triangles: c.triangles(),
        },
        &soups,
        &solids,
        tolerance,
    );
    let vertices_in_meshes = soups
        .iter()
        .enumerate()
        .flat_map(|(m, soup)| {
            inside::vertices_inside_mesh(x, soup)
                .into_iter()
                .map(move |v| (m, v))
        })
        .collect();
    ClothCheck {
        triangles,
        vertices_in_solids: inside::vertices_inside_solids(x, &solids, tolerance),
        vertices_in_meshes,
    }
}

/// Pairs of intersecting triangles from two different cloths of `world`, as
/// `(cloth a, cloth b, triangle of a, triangle of b)` with `a < b`, over every pair of cloths
/// that collide with each other (`World::cloths_collide`; a pair told not to collide may
/// cross). Triangles of different cloths share no vertex, so the exact triangle–triangle test
/// of [`find_intersections`] decides each pair; a vertex of one cloth through the other shows
/// as the triangles around it crossing.
pub fn cross_cloth_intersections(world: &weft::world::World) -> Vec<(usize, usize, u32, u32)> {
    let ids = world.cloth_ids();
    let mut out = Vec::new();
    for a in 0..ids.len() {
        for b in a + 1..ids.len() {
            if world.cloths_collide(ids[a], ids[b]) != Some(true) {
                continue;
            }
            out.extend(
                intersections_between(world, a, b)
                    .into_iter()
                    .map(|(t, u)| (a, b, t, u)),
            );
        }
    }
    out
}

/// Pairs `(triangle of a, triangle of b)` of cloths `a` and `b` that intersect now, whether or
/// not the two cloths collide with each other.
pub fn intersections_between(world: &weft::world::World, a: usize, b: usize) -> Vec<(u32, u32)> {
    let cloths = world.cloths();
    let soup = |k: usize| TriSoup {
        positions: cloths[k].state().positions(),
        triangles: cloths[k].triangles(),
    };
    let report = find_intersections(&soup(a), &[soup(b)], &[], 1e-3);
    report.mesh_pairs.iter().map(|&(_, t, u)| (t, u)).collect()
}

/// Everything the checker finds in `world` now: per cloth [`check_cloth`] (its own triangle
/// pairs, obstacles, colliders), then [`cross_cloth_intersections`]. `Err` names the first
/// cloth or pair at fault.
pub fn check_world(world: &weft::world::World, tolerance: f32) -> Result<(), String> {
    for k in 0..world.cloths().len() {
        let check = check_cloth(world, k, tolerance);
        if !check.is_clean() {
            return Err(format!(
                "cloth {k} ({}): {}",
                world.cloths()[k].name(),
                check.summary()
            ));
        }
    }
    let cross = cross_cloth_intersections(world);
    if !cross.is_empty() {
        return Err(format!(
            "{} triangle pairs of different cloths intersect, first {:?}",
            cross.len(),
            &cross[..cross.len().min(8)]
        ));
    }
    Ok(())
}

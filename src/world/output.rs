//! Output glue: collision-aware Loop subdivision of the cloths' output meshes.

use glam::Vec3;

use crate::collide::subdivision::{
    CollisionAwareSubdivision, SubdivisionStats, pseudo_step_settings,
};
use crate::mesh::MeshError;

use super::World;

/// Collision-aware Loop subdivision of the cloths' output meshes (Bridson et al. 2002 §7;
/// [`crate::collide::subdivision`]): what `weft run
/// --subdivide K` writes and draws. Output only: the simulated state is not touched.
impl World {
    /// One [`CollisionAwareSubdivision`] of `levels` Loop levels per cloth, in cloth order,
    /// with the obstacle soup as it is now. Built once per run.
    ///
    /// Errors: `levels` outside `1..=`[`MAX_LOOP_LEVELS`](crate::mesh::MAX_LOOP_LEVELS)
    /// ([`MeshError::InvalidParameter`] named `levels`), or a level past the `u32` index range.
    pub fn output_subdivisions(
        &self,
        levels: u32,
    ) -> Result<Vec<CollisionAwareSubdivision>, MeshError> {
        self.cloths
            .iter()
            .map(|c| {
                let mut sub = CollisionAwareSubdivision::new(
                    &c.sim.triangles,
                    c.sim.state.positions(),
                    levels,
                )?;
                sub.set_obstacles(
                    &self.obstacle_tris,
                    &self.obstacle_x0,
                    &self.obstacle_thickness,
                );
                Ok(sub)
            })
            .collect()
    }

    /// The collision-aware subdivided positions of cloth `cloth` now (triangles:
    /// [`CollisionAwareSubdivision::triangles`]), against itself and the obstacle meshes at
    /// their current pose, with the cloth's thickness ([`pseudo_step_settings`]). `sub` must
    /// come from [`World::output_subdivisions`] for this cloth; if obstacles were added or
    /// removed since, it takes the new soup first (a rebuild of its obstacle trees).
    ///
    /// # Panics
    /// If `cloth` is out of range or `sub` was built for a cloth of another vertex count.
    pub fn subdivide_output<'a>(
        &self,
        cloth: usize,
        sub: &'a mut CollisionAwareSubdivision,
    ) -> (&'a [Vec3], SubdivisionStats) {
        let c = &self.cloths[cloth];
        if sub.num_obstacle_vertices() != self.obstacle_x0.len() {
            sub.set_obstacles(
                &self.obstacle_tris,
                &self.obstacle_x0,
                &self.obstacle_thickness,
            );
        }
        let settings = pseudo_step_settings(&c.sim.collision_settings);
        sub.apply(&settings, c.sim.state.positions(), &self.obstacle_x0)
    }
}

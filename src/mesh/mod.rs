//! Triangle meshes: the [`TriMesh`] data type, its validation, topology (edges, hinges, boundary,
//! adjacency), OBJ reading and writing, generators (cloth grids, closed obstacle shapes), and the 4:1
//! subdivision of Wang 2012 ([`subdivide`](mod@subdivide)).
//!
//! A [`TriMesh`] is plain data. [`TriMesh::validate`] checks its geometry;
//! [`Topology::build`] checks that it is an edge-manifold, consistently oriented surface and
//! precomputes everything the force models and collision stages index by (done once, when a cloth
//! is created).
#![deny(unsafe_code)]

pub mod generate;
pub mod loop_subdivide;
pub mod obj;
pub mod subdivide;
pub mod topology;
pub mod usda;
pub mod validate;

use glam::{Vec2, Vec3};

pub use generate::{
    Diagonals, GRID_AXIS_TOLERANCE, GridSpec, MAX_GENERATED_VERTICES, MAX_ICOSPHERE_SUBDIVISIONS,
    capsule, cuboid, grid, icosphere, tube,
};
pub use loop_subdivide::{LoopLevel, LoopSubdivision, MAX_LOOP_LEVELS, loop_beta};
pub use obj::{
    ObjLines, ObjObject, area_weighted_normals, read_obj, read_obj_file, read_obj_file_with_lines,
    read_obj_with_lines, write_obj, write_obj_mesh, write_obj_object,
};
pub use subdivide::{
    Subdivision, subdivide, subdivide_mesh, subdivided_grid, subdivided_icosphere,
};
pub use topology::{Hinge, NO_TRIANGLE, Topology, VertexEdges};
pub use usda::UsdaCache;
pub use validate::{MeshError, SLIVER_RELATIVE_ALTITUDE, ZERO_AREA_RELATIVE_EPSILON};

/// An indexed triangle mesh. Plain data; [`TriMesh::validate`] checks it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TriMesh {
    /// Vertex positions, metres.
    pub positions: Vec<Vec3>,
    /// Vertex indices of each triangle; the winding (counter-clockwise seen from the front) gives
    /// the normal `(x1 - x0) × (x2 - x0)`.
    pub triangles: Vec<[u32; 3]>,
    /// Material (u, v) coordinates per triangle corner (metres in the flat pattern), aligned with `triangles`.
    /// Per corner, not per vertex, so seams in an OBJ `vt` layout survive.
    pub corner_uvs: Option<Vec<[Vec2; 3]>>,
}

impl TriMesh {
    /// Number of vertices.
    #[must_use]
    pub fn num_vertices(&self) -> usize {
        self.positions.len()
    }

    /// Number of triangles.
    #[must_use]
    pub fn num_triangles(&self) -> usize {
        self.triangles.len()
    }

    /// Applies the affine map `m` to every position (material coordinates are unchanged).
    pub fn transform(&mut self, m: glam::Affine3A) {
        for p in &mut self.positions {
            *p = m.transform_point3(*p);
        }
    }

    /// Area of triangle `t`, `|(x1 - x0) × (x2 - x0)| / 2`, in square metres.
    ///
    /// Computed in `f64` and rounded once, so it is accurate even for slivers.
    ///
    /// # Panics
    /// If `t` or one of its vertex indices is out of range (run [`TriMesh::validate`] first).
    #[must_use]
    pub fn triangle_area(&self, t: usize) -> f32 {
        let [a, b, c] = self.triangles[t].map(|i| self.positions[i as usize]);
        (0.5 * validate::double_area(a, b, c)) as f32
    }

    /// Signed volume enclosed by the mesh, `Σ x0 · (x1 × x2) / 6` over the triangles, in cubic
    /// metres, accumulated in `f64`. Positive for a closed mesh with outward (counter-clockwise)
    /// winding; meaningless for an open one.
    ///
    /// # Panics
    /// If a vertex index is out of range (run [`TriMesh::validate`] first).
    #[must_use]
    pub fn signed_volume(&self) -> f64 {
        self.triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| self.positions[i as usize].as_dvec3());
                a.dot(b.cross(c))
            })
            .sum::<f64>()
            / 6.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Affine3A;

    #[test]
    fn counts_area_and_transform() {
        let mut m = TriMesh {
            positions: vec![
                Vec3::ZERO,
                Vec3::new(2.0, 0.0, 0.0),
                Vec3::new(0.0, 3.0, 0.0),
            ],
            triangles: vec![[0, 1, 2]],
            corner_uvs: None,
        };
        assert_eq!((m.num_vertices(), m.num_triangles()), (3, 1));
        assert_eq!(m.triangle_area(0), 3.0);
        m.transform(Affine3A::from_scale_rotation_translation(
            Vec3::splat(2.0),
            glam::Quat::from_rotation_z(0.7),
            Vec3::new(1.0, -2.0, 5.0),
        ));
        assert!((m.triangle_area(0) - 12.0).abs() < 1e-5);
        assert!((m.positions[0] - Vec3::new(1.0, -2.0, 5.0)).length() < 1e-6);
    }

    #[test]
    fn signed_volume_flips_with_winding() {
        let mut m = cuboid(Vec3::new(1.0, 2.0, 3.0)).expect("valid");
        assert!((m.signed_volume() - 48.0).abs() < 1e-9);
        for t in &mut m.triangles {
            t.swap(1, 2);
        }
        assert!((m.signed_volume() + 48.0).abs() < 1e-9);
    }
}

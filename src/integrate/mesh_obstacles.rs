//! Triangle-mesh obstacles as the isometric contact rows see them: the closest point of a
//! node on the obstacle soup at the obstacles' pose at the end of the step, found through a
//! BVH over the triangles at that pose, with a signed distance and a normal that is defined
//! on faces, edges and vertices alike (`docs/methods/isometric-contact.md` §8).
//!
//! Only the obstacles given as meshes take part: the tessellations of analytic colliders are
//! left out, since those colliders have rows on their exact surfaces.
//!
//! **The signed distance.** Let `q` be the closest point of the soup to a node at `x`, on
//! triangle `t` with unit face normal `n_t` (from its winding; meshes are taken as closed and
//! wound outwards), `d = ‖x − q‖` and `σ = sign(n_t · (x − q))` (`+1` on the plane). The
//! distance is `φ = σ d` and the normal `n = σ (x − q) / d`. Inside a face `x − q` is parallel
//! to `n_t`, so `n = n_t` and `φ` is the distance to the face's plane; on an edge or a vertex
//! `n` points from the closest point to the node (outside) or from the node to the closest
//! point (inside), the gradient of the distance to that feature, which turns continuously
//! from one face's normal to the next round a convex edge. When `d` is a rounding error, `n =
//! n_t`.
#![deny(unsafe_code)]

use glam::{DVec3, Vec3};

use crate::collide::bvh::{Aabb, Bvh};
use crate::collide::proximity::closest_point_triangle;
use crate::collide::resolve::ObstacleMeshes;

/// The point of a mesh obstacle nearest a node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeshHit {
    /// Index into the obstacle triangles of [`MeshObstacles`].
    pub triangle: u32,
    /// Barycentric weights of the closest point on it.
    pub weights: [f64; 3],
    /// Signed distance `φ` (m; module doc), negative behind the surface.
    pub distance: f64,
    /// Unit normal `n` (module doc).
    pub normal: DVec3,
}

/// The mesh obstacles of an isometric cloth: their triangles (indices into the world's
/// obstacle soup), per-triangle thickness and friction, the soup's positions at the start
/// and the end of the current step, and a BVH over the triangles at the end. Sized when the
/// obstacles are set (creation time); a step only copies positions and refits.
#[derive(Clone, Debug, Default)]
pub struct MeshObstacles {
    tris: Vec<[u32; 3]>,
    /// Per triangle: the obstacle's own thickness (m, the largest of its corners'), which the
    /// collision stage adds to the cloth's.
    thickness: Vec<f64>,
    /// Per triangle: the Coulomb coefficient of its surface (the largest of its corners').
    friction: Vec<f64>,
    /// The soup at the start of the step.
    x0: Vec<DVec3>,
    /// The soup at the end of the step.
    x1: Vec<DVec3>,
    boxes: Vec<Aabb>,
    bvh: Option<Bvh>,
    max_thickness: f64,
}

impl MeshObstacles {
    /// Takes the triangles of the obstacle soup `triangles` whose three corners are all mesh
    /// vertices (`mesh[v]`: vertex `v` of the soup belongs to an obstacle given as a mesh, not
    /// to a collider's tessellation), the soup's per-vertex `thickness` and `friction`, and
    /// its positions `x` now (to build the tree). Allocates: call when obstacles change,
    /// never in a step.
    ///
    /// # Panics
    /// If `mesh`, `thickness`, `friction` and `x` do not have one entry per soup vertex.
    pub fn set(
        &mut self,
        triangles: &[[u32; 3]],
        mesh: &[bool],
        thickness: &[f32],
        friction: &[f32],
        x: &[Vec3],
    ) {
        let m = x.len();
        assert!(mesh.len() == m && thickness.len() == m && friction.len() == m);
        self.tris.clear();
        self.tris.extend(
            triangles
                .iter()
                .filter(|t| t.iter().all(|&v| mesh[v as usize])),
        );
        let corner_max = |t: &[u32; 3], a: &[f32]| {
            t.iter()
                .map(|&v| f64::from(a[v as usize]))
                .fold(0.0, f64::max)
        };
        self.thickness = self.tris.iter().map(|t| corner_max(t, thickness)).collect();
        self.friction = self.tris.iter().map(|t| corner_max(t, friction)).collect();
        self.max_thickness = self.thickness.iter().copied().fold(0.0, f64::max);
        self.x0 = x.iter().map(|p| p.as_dvec3()).collect();
        self.x1 = self.x0.clone();
        self.boxes = vec![Aabb::EMPTY; self.tris.len()];
        self.fit_boxes();
        self.bvh = (!self.tris.is_empty()).then(|| Bvh::build(&self.boxes));
    }

    /// Whether there is no mesh obstacle.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tris.is_empty()
    }

    /// The obstacle triangles (indices into the soup).
    #[must_use]
    pub fn triangles(&self) -> &[[u32; 3]] {
        &self.tris
    }

    /// Largest thickness of an obstacle triangle (m).
    #[must_use]
    pub fn max_thickness(&self) -> f64 {
        self.max_thickness
    }

    /// The thickness of triangle `t` (m).
    #[must_use]
    pub fn thickness(&self, t: u32) -> f64 {
        self.thickness[t as usize]
    }

    /// The Coulomb coefficient of triangle `t`.
    #[must_use]
    pub fn friction(&self, t: u32) -> f64 {
        self.friction[t as usize]
    }

    /// Takes the soup's positions over the step from `obstacles` (the covered part `s0..s1`
    /// of the world's substep, as the collision stage does) and refits the tree to the
    /// triangles at the end. Allocation-free. Nothing to do without mesh obstacles.
    ///
    /// # Panics
    /// If `obstacles` is not the soup given to [`MeshObstacles::set`].
    pub fn load(&mut self, obstacles: &ObstacleMeshes<'_>) {
        if self.tris.is_empty() {
            return;
        }
        assert!(obstacles.x0.len() == self.x0.len() && obstacles.x1.len() == self.x1.len());
        for (k, (a, b)) in obstacles.x0.iter().zip(obstacles.x1).enumerate() {
            self.x0[k] = a.lerp(*b, obstacles.s0).as_dvec3();
            self.x1[k] = a.lerp(*b, obstacles.s1).as_dvec3();
        }
        self.fit_boxes();
        if let Some(bvh) = self.bvh.as_mut() {
            bvh.refit(&self.boxes);
        }
    }

    fn fit_boxes(&mut self) {
        for (b, t) in self.boxes.iter_mut().zip(&self.tris) {
            let [p, q, r] = t.map(|v| self.x1[v as usize].as_vec3());
            *b = Aabb::from_points(&[p, q, r]);
        }
    }

    /// The nearest point of the mesh obstacles at the end of the step to `x`, when its gap
    /// `φ − thickness` is below `reach` (m); `None` otherwise. The nearest is the triangle
    /// with the smallest unsigned gap `|φ| − thickness` (the sign of a far triangle's plane
    /// says nothing); ties go to the first the tree visits (the same on every call). A point
    /// with nothing within `reach` that lies in the obstacles' bounding box may be deep inside
    /// one: the search widens (doubling) until it meets a triangle, so that a node driven deep
    /// into an obstacle is still pushed out through the nearest surface. Allocation-free.
    #[must_use]
    pub fn closest(&self, x: DVec3, reach: f64) -> Option<MeshHit> {
        let bvh = self.bvh.as_ref()?;
        let mut r = reach.max(1e-6);
        let mut best = self.nearest_within(bvh, x, r);
        if best.is_none() {
            let root = bvh.root_box();
            let p = x.as_vec3();
            let inside_box = root.inflate(r as f32).contains(&Aabb::from_points(&[p]));
            let limit = f64::from((root.max - root.min).length()) + r;
            while inside_box && best.is_none() && r < limit {
                r *= 2.0;
                best = self.nearest_within(bvh, x, r);
            }
        }
        best.filter(|h| h.distance - self.thickness[h.triangle as usize] < reach)
    }

    /// The triangle with the smallest unsigned gap `|φ| − thickness` below `r`, among all of
    /// them: every such triangle has a point within `r + thickness` of `x`, so its box meets
    /// the query box.
    fn nearest_within(&self, bvh: &Bvh, x: DVec3, r: f64) -> Option<MeshHit> {
        // f32 boxes: a micrometre covers their rounding at scene sizes.
        let query =
            Aabb::from_points(&[x.as_vec3()]).inflate((r + self.max_thickness) as f32 + 1e-6);
        let mut best: Option<(f64, MeshHit)> = None;
        bvh.for_each_overlap(&query, |t| {
            let hit = self.hit(t, x);
            let key = hit.distance.abs() - self.thickness[t as usize];
            if key < r && best.is_none_or(|(k, _)| key < k) {
                best = Some((key, hit));
            }
        });
        best.map(|(_, hit)| hit)
    }

    /// The closest point of triangle `t` (at the end of the step) to `x`, signed (module doc).
    fn hit(&self, t: u32, x: DVec3) -> MeshHit {
        let tri = self.tris[t as usize].map(|v| self.x1[v as usize]);
        let (q, weights) = closest_point_triangle(x, tri);
        let face = (tri[1] - tri[0]).cross(tri[2] - tri[0]).normalize_or_zero();
        let off = x - q;
        let d = off.length();
        let sigma = if face.dot(off) >= 0.0 { 1.0 } else { -1.0 };
        let scale = (tri[1] - tri[0]).length() + (tri[2] - tri[0]).length();
        let normal = if d > 1e-9 * scale {
            off * (sigma / d)
        } else {
            face
        };
        MeshHit {
            triangle: t,
            weights,
            distance: sigma * d,
            normal,
        }
    }

    /// How the obstacle moves a point over the step: the displacement of the point with the
    /// weights of `hit` on its triangle, from the start to the end of the step (m). A rigid
    /// translation carries every point by it; under a rotation it is the motion of the contact
    /// point, which is what friction drags a node by.
    #[must_use]
    pub fn displacement(&self, hit: &MeshHit) -> DVec3 {
        let t = self.tris[hit.triangle as usize];
        (0..3)
            .map(|k| hit.weights[k] * (self.x1[t[k] as usize] - self.x0[t[k] as usize]))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::generate;

    /// A box mesh of half extents 0.5 centred at the origin, every vertex a mesh vertex.
    fn unit_box() -> MeshObstacles {
        let mesh = generate::cuboid(Vec3::splat(0.5)).expect("a valid box");
        let m = mesh.positions.len();
        let mut o = MeshObstacles::default();
        o.set(
            &mesh.triangles,
            &vec![true; m],
            &vec![0.0; m],
            &vec![0.5; m],
            &mesh.positions,
        );
        o
    }

    #[test]
    fn face_edge_and_vertex_give_the_distance_gradient() {
        let o = unit_box();
        // Over the top face: the face normal and the height.
        let hit = o
            .closest(DVec3::new(0.1, 0.52, -0.2), 0.1)
            .expect("near the top");
        assert!(hit.normal.abs_diff_eq(DVec3::Y, 1e-12), "{}", hit.normal);
        assert!((hit.distance - 0.02).abs() < 1e-12);
        // Beside the top-front edge, at 45°: the bisector, the distance to the edge.
        let hit = o
            .closest(DVec3::new(0.0, 0.51, 0.51), 0.1)
            .expect("near the edge");
        let bisector = DVec3::new(0.0, 1.0, 1.0).normalize();
        assert!(hit.normal.abs_diff_eq(bisector, 1e-9), "{}", hit.normal);
        assert!((hit.distance - 0.01 * 2f64.sqrt()).abs() < 1e-12);
        // Off a corner: the diagonal.
        let hit = o.closest(DVec3::splat(0.51), 0.1).expect("near the corner");
        assert!(
            hit.normal.abs_diff_eq(DVec3::ONE.normalize(), 1e-9),
            "{}",
            hit.normal
        );
        // Inside, near the top: negative distance, still the outward normal.
        let hit = o.closest(DVec3::new(0.1, 0.49, 0.0), 0.1).expect("inside");
        assert!(hit.normal.abs_diff_eq(DVec3::Y, 1e-12), "{}", hit.normal);
        assert!((hit.distance + 0.01).abs() < 1e-12);
        // Out of reach.
        assert!(o.closest(DVec3::new(0.0, 0.7, 0.0), 0.1).is_none());
    }

    /// The normal along a path round the edge turns continuously from one face's normal to
    /// the other's, and the distance is the distance to the box.
    #[test]
    fn the_normal_turns_continuously_round_an_edge() {
        let o = unit_box();
        let mut last = DVec3::Y;
        for k in 0..=90 {
            let a = f64::from(k).to_radians();
            let x = DVec3::new(0.2, 0.5 + 0.01 * a.cos(), 0.5 + 0.01 * a.sin());
            let hit = o.closest(x, 0.1).expect("near the edge");
            assert!((hit.distance - 0.01).abs() < 1e-12, "{k}: {}", hit.distance);
            assert!(
                hit.normal.dot(last) > 0.999,
                "{k}: {} after {last}",
                hit.normal
            );
            last = hit.normal;
        }
        assert!(last.abs_diff_eq(DVec3::Z, 1e-9));
    }
}

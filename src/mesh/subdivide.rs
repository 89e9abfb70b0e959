//! One step of 4:1 (midpoint) subdivision: the conforming simulation mesh of Wang 2012 (§3.1,
//! Fig. 3.1; `docs/methods/isometric-model.md §A1`).
//!
//! The subdivided mesh has `N = V + E` nodes: the **black** nodes `0..V` are the base vertices
//! (same indices), the **red** node `V + e` sits at the midpoint of base edge `e` (edge order of
//! [`Topology::edges`]). Base triangle `t = (p, q, r)` becomes the four children `4t..4t + 4`:
//!
//! | child  | nodes                          |
//! |--------|--------------------------------|
//! | `4t`   | `T_p = (p, m_pq, m_rp)`        |
//! | `4t+1` | `T_q = (q, m_qr, m_pq)`        |
//! | `4t+2` | `T_r = (r, m_rp, m_qr)`        |
//! | `4t+3` | `T_m = (m_pq, m_qr, m_rp)` (the middle, "shaded" triangle kept rigid by Wang 2012 eq. 3.1) |
//!
//! All four children keep the parent's winding (`docs/methods/isometric-model.md §A1`: each child
//! of `(0,0), (1,0), (0,1)` has signed area `+1/8`). `m_pq, m_qr, m_rp` are the red nodes of the
//! base triangle's edges `0, 1, 2` in [`Topology::triangle_edges`] order (edge `k` joins corners
//! `k` and `k + 1`), which [`Subdivision::red_nodes`] returns. This is the child layout
//! [`icosphere`] uses too.
//!
//! Per-corner material coordinates are carried: a child corner at a black node copies the parent
//! corner's uv, one at a red node takes the midpoint of the parent's two corner uvs on that edge,
//! so uv seams of the base mesh survive.
//!
//! The subdivided mesh is the one that is simulated, rendered and handed to collision detection;
//! the base mesh only defines the constraint stencils (`model::isometric`) and the bending
//! operator (`model::quadratic_bending`), which is why [`Subdivision`] keeps the base topology.
#![deny(unsafe_code)]

use glam::{DVec3, Vec2};

use super::TriMesh;
use super::generate::{GridSpec, grid, icosphere};
use super::topology::Topology;
use super::validate::{MAX_TRIANGLES, MAX_VERTICES, MeshError};

/// A base mesh's 4:1 subdivision: the conforming mesh plus the maps from base elements to nodes
/// and children (see the module doc for the numbering).
///
/// Immutable after [`subdivide`]; every field is a deterministic function of the base mesh.
#[derive(Clone, Debug, PartialEq)]
pub struct Subdivision {
    base: Topology,
    base_triangles: Vec<[u32; 3]>,
    mesh: TriMesh,
}

impl Subdivision {
    /// The subdivided, conforming mesh (`V + E` nodes, `4F` triangles), positions in `f32`.
    #[must_use]
    pub fn mesh(&self) -> &TriMesh {
        &self.mesh
    }

    /// The topology of the base mesh (edges, boundary, vertex adjacency), as given to [`subdivide`].
    #[must_use]
    pub fn base_topology(&self) -> &Topology {
        &self.base
    }

    /// The base triangles; their indices are black node indices.
    #[must_use]
    pub fn base_triangles(&self) -> &[[u32; 3]] {
        &self.base_triangles
    }

    /// Number of black nodes `V` (base vertices); they are nodes `0..V`.
    #[must_use]
    pub fn num_black_nodes(&self) -> usize {
        self.base.num_vertices()
    }

    /// Number of red nodes `E` (base edges); they are nodes `V..V + E`.
    #[must_use]
    pub fn num_red_nodes(&self) -> usize {
        self.base.edges().len()
    }

    /// Number of nodes `N = V + E` of the subdivided mesh.
    #[must_use]
    pub fn num_nodes(&self) -> usize {
        self.num_black_nodes() + self.num_red_nodes()
    }

    /// Number of base triangles `F`.
    #[must_use]
    pub fn num_base_triangles(&self) -> usize {
        self.base_triangles.len()
    }

    /// The red node on base edge `e`: `V + e`.
    #[must_use]
    pub fn red_node_of_edge(&self, e: usize) -> u32 {
        // Fits: `subdivide` checked `V + E <= u32::MAX`.
        (self.num_black_nodes() + e) as u32
    }

    /// The red nodes `[m_pq, m_qr, m_rp]` of base triangle `t = (p, q, r)`: the red node of
    /// its edge `k` (corners `k`, `k + 1`) at position `k`.
    ///
    /// # Panics
    /// If `t >= num_base_triangles()`.
    #[must_use]
    pub fn red_nodes(&self, t: usize) -> [u32; 3] {
        self.base
            .triangle_edges(t)
            .map(|e| self.red_node_of_edge(e as usize))
    }

    /// The children of base triangle `t` in the subdivided mesh: `[T_p, T_q, T_r, T_m]` =
    /// `[4t, 4t + 1, 4t + 2, 4t + 3]`; `T_m` is the middle triangle of the three red nodes.
    #[must_use]
    pub fn children(&self, t: usize) -> [u32; 4] {
        let c = 4 * t as u32;
        [c, c + 1, c + 2, c + 3]
    }

    /// Node positions of the subdivided mesh in `f64` from base vertex positions: black nodes
    /// copied, red nodes at the exact (f64) midpoints. `out.len()` must be `num_nodes()`.
    ///
    /// Use it for rest data: the extrapolation of Wang 2012 eq. 3.3 then reproduces every black
    /// node to round-off of `f64`, not of `f32`.
    ///
    /// # Panics
    /// If `base.len() != num_black_nodes()` or `out.len() != num_nodes()`.
    pub fn node_positions_into(&self, base: &[DVec3], out: &mut [DVec3]) {
        assert_eq!(
            base.len(),
            self.num_black_nodes(),
            "one position per base vertex"
        );
        assert_eq!(out.len(), self.num_nodes(), "one output per node");
        let nb = self.num_black_nodes();
        out[..nb].copy_from_slice(base);
        for (o, &[a, b]) in out[nb..].iter_mut().zip(self.base.edges()) {
            *o = 0.5 * (base[a as usize] + base[b as usize]);
        }
    }

    /// Rest positions of every node in `f64`: the black nodes are the base mesh's (`f32`) positions
    /// widened, the red nodes their exact `f64` midpoints ([`Subdivision::node_positions`] of the
    /// base positions). This is the rest state to build `model::isometric` and
    /// `model::quadratic_bending` from, so that every constraint holds to `f64` round-off at rest.
    #[must_use]
    pub fn rest_positions(&self) -> Vec<DVec3> {
        let base: Vec<DVec3> = self.mesh.positions[..self.num_black_nodes()]
            .iter()
            .map(|p| p.as_dvec3())
            .collect();
        self.node_positions(&base)
    }

    /// The lumped area of every node, m²: one third of the rest area of each incident
    /// *subdivided* triangle, summed (**choice** for node masses, `docs/methods/isometric-model.md
    /// §A1`; Wang 2012 §3.1.1 says every node is a dynamic particle but not how its mass is
    /// obtained). Node mass = areal density × this. The areas sum to the rest surface area.
    ///
    /// # Panics
    /// If `rest.len() != num_nodes()`.
    #[must_use]
    pub fn lumped_node_areas(&self, rest: &[DVec3]) -> Vec<f64> {
        assert_eq!(rest.len(), self.num_nodes(), "one rest position per node");
        let mut area = vec![0.0; self.num_nodes()];
        for tri in &self.mesh.triangles {
            let [a, b, c] = tri.map(|i| rest[i as usize]);
            let third = (b - a).cross(c - a).length() / 6.0;
            for &i in tri {
                area[i as usize] += third;
            }
        }
        area
    }

    /// Like [`Subdivision::node_positions_into`], returning a new vector.
    ///
    /// # Panics
    /// If `base.len() != num_black_nodes()`.
    #[must_use]
    pub fn node_positions(&self, base: &[DVec3]) -> Vec<DVec3> {
        let mut out = vec![DVec3::ZERO; self.num_nodes()];
        self.node_positions_into(base, &mut out);
        out
    }
}

/// Subdivides `base` 4:1 (Wang 2012 §3.1, Fig. 3.1); `topo` must be `Topology::build(base)`.
///
/// Errors ([`MeshError::InvalidParameter`]): `topo` does not describe `base` (vertex or triangle
/// count differs, or a triangle's edges disagree with the edge table); `V + E` nodes or `4F`
/// triangles exceed the `u32` index range; `corner_uvs` present but not one entry per triangle.
/// Geometry is not examined (run [`TriMesh::validate`] on the base first); never panics.
pub fn subdivide(base: &TriMesh, topo: &Topology) -> Result<Subdivision, MeshError> {
    let (nv, nf) = (base.positions.len(), base.triangles.len());
    if topo.num_vertices() != nv || topo.num_triangles() != nf {
        return Err(MeshError::InvalidParameter {
            name: "topology",
            message: format!(
                "built for {} vertices and {} triangles, the mesh has {nv} and {nf}",
                topo.num_vertices(),
                topo.num_triangles()
            ),
        });
    }
    let ne = topo.edges().len();
    if nv + ne > MAX_VERTICES || 4 * nf > MAX_TRIANGLES {
        return Err(MeshError::InvalidParameter {
            name: "triangles",
            message: format!(
                "4:1 subdivision of {nv} vertices, {ne} edges, {nf} triangles exceeds the u32 index range"
            ),
        });
    }
    for (t, tri) in base.triangles.iter().enumerate() {
        let edges = topo.triangle_edges(t);
        for k in 0..3 {
            let (a, b) = (tri[k], tri[(k + 1) % 3]);
            if topo.edges().get(edges[k] as usize) != Some(&[a.min(b), a.max(b)]) {
                return Err(MeshError::InvalidParameter {
                    name: "topology",
                    message: format!("edge {k} of face {t} does not match the edge table"),
                });
            }
        }
    }
    if let Some(uvs) = &base.corner_uvs
        && uvs.len() != nf
    {
        return Err(MeshError::BadUv {
            face: uvs.len().min(nf) as u32,
        });
    }

    let mut positions = Vec::with_capacity(nv + ne);
    positions.extend_from_slice(&base.positions);
    for &[a, b] in topo.edges() {
        let (pa, pb) = (
            base.positions[a as usize].as_dvec3(),
            base.positions[b as usize].as_dvec3(),
        );
        positions.push((0.5 * (pa + pb)).as_vec3());
    }

    let red = |t: usize| topo.triangle_edges(t).map(|e| (nv as u32) + e);
    let mut triangles = Vec::with_capacity(4 * nf);
    for (t, &[p, q, r]) in base.triangles.iter().enumerate() {
        let [pq, qr, rp] = red(t);
        triangles.extend_from_slice(&[[p, pq, rp], [q, qr, pq], [r, rp, qr], [pq, qr, rp]]);
    }

    let corner_uvs = base.corner_uvs.as_ref().map(|uvs| {
        let mut out = Vec::with_capacity(4 * nf);
        for &[up, uq, ur] in uvs {
            let mid = |a: Vec2, b: Vec2| (0.5 * (a.as_dvec2() + b.as_dvec2())).as_vec2();
            let (upq, uqr, urp) = (mid(up, uq), mid(uq, ur), mid(ur, up));
            out.extend_from_slice(&[
                [up, upq, urp],
                [uq, uqr, upq],
                [ur, urp, uqr],
                [upq, uqr, urp],
            ]);
        }
        out
    });

    Ok(Subdivision {
        base: topo.clone(),
        base_triangles: base.triangles.clone(),
        mesh: TriMesh {
            positions,
            triangles,
            corner_uvs,
        },
    })
}

/// Validates `base` ([`TriMesh::validate`]), builds its [`Topology`] and subdivides it 4:1: the one
/// call that turns an input cloth or shell into Wang 2012's simulation mesh.
///
/// Errors: those of [`TriMesh::validate`], [`Topology::build`] and [`subdivide`], first found.
pub fn subdivide_mesh(base: &TriMesh) -> Result<Subdivision, MeshError> {
    base.validate()?;
    let topo = Topology::build(base)?;
    subdivide(base, &topo)
}

/// The 4:1 subdivision of [`grid(spec)`](super::grid): a `nx × ny` vertex grid becomes
/// `nx·ny + E` nodes, `E = (nx−1)ny + nx(ny−1) + (nx−1)(ny−1)`, and `8(nx−1)(ny−1)` triangles.
///
/// Errors: those of [`grid`] and [`subdivide_mesh`].
pub fn subdivided_grid(spec: &GridSpec) -> Result<Subdivision, MeshError> {
    subdivide_mesh(&grid(spec)?)
}

/// The 4:1 subdivision of [`icosphere(radius, subdivisions)`](super::icosphere). Unlike the next
/// icosphere level, the red nodes stay at the chord midpoints (inside the sphere): the base
/// mesh's rest shape is what Wang 2012's constraints and rest curvature preserve.
///
/// Errors: those of [`icosphere`] and [`subdivide_mesh`].
pub fn subdivided_icosphere(radius: f32, subdivisions: u32) -> Result<Subdivision, MeshError> {
    subdivide_mesh(&icosphere(radius, subdivisions)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::Diagonals;
    use glam::Vec3;

    fn grid_mesh(nx: u32, ny: u32, diagonals: Diagonals) -> TriMesh {
        grid(&GridSpec {
            nx,
            ny,
            size: Vec2::new(1.0, 0.7),
            centre: Vec3::new(0.1, 0.2, 0.3),
            u_axis: Vec3::X,
            v_axis: Vec3::NEG_Z,
            diagonals,
        })
        .expect("valid grid parameters")
    }

    fn signed_normal(m: &TriMesh, t: usize) -> DVec3 {
        let [a, b, c] = m.triangles[t].map(|i| m.positions[i as usize].as_dvec3());
        (b - a).cross(c - a)
    }

    /// Every documented property for one base mesh with Euler characteristic `chi`.
    fn check(base: &TriMesh, chi: i64) {
        let topo = Topology::build(base).expect("manifold base");
        let sub = subdivide(base, &topo).expect("subdivides");
        let (nv, ne, nf) = (
            base.positions.len(),
            topo.edges().len(),
            base.triangles.len(),
        );
        let m = sub.mesh();
        assert_eq!(sub.num_nodes(), nv + ne);
        assert_eq!(m.positions.len(), nv + ne);
        assert_eq!(m.triangles.len(), 4 * nf);
        // The fine mesh is a valid, consistently oriented manifold with the same Euler
        // characteristic, 2E + 3F edges, and twice the boundary.
        m.validate().expect("fine mesh is geometrically valid");
        let fine = Topology::build(m).expect("fine mesh is manifold and oriented");
        assert_eq!(fine.edges().len(), 2 * ne + 3 * nf);
        assert_eq!(
            (nv + ne) as i64 - fine.edges().len() as i64 + (4 * nf) as i64,
            chi
        );
        assert_eq!(fine.boundary_edges().len(), 2 * topo.boundary_edges().len());
        for t in 0..nf {
            let [p, q, r] = base.triangles[t];
            let [pq, qr, rp] = sub.red_nodes(t);
            // Red nodes sit at the edge midpoints (to f32 rounding of an exact f64 midpoint).
            for (mid, a, b) in [(pq, p, q), (qr, q, r), (rp, r, p)] {
                let want = 0.5 * (base.positions[a as usize] + base.positions[b as usize]);
                assert!((m.positions[mid as usize] - want).length() < 1e-6);
                assert_eq!(
                    topo.edges()[(mid as usize) - nv],
                    [a.min(b), a.max(b)],
                    "red node index = V + edge index"
                );
            }
            // Children: layout of the module doc, each with the parent's orientation and a
            // quarter of its area.
            let children = sub.children(t);
            assert_eq!(m.triangles[children[0] as usize], [p, pq, rp]);
            assert_eq!(m.triangles[children[1] as usize], [q, qr, pq]);
            assert_eq!(m.triangles[children[2] as usize], [r, rp, qr]);
            assert_eq!(m.triangles[children[3] as usize], [pq, qr, rp]);
            let parent = signed_normal(base, t);
            for c in children {
                let n = signed_normal(m, c as usize);
                assert!(n.dot(parent) > 0.0, "child {c} of {t} flipped");
                assert!((4.0 * n.length() - parent.length()).abs() < 1e-5 * parent.length());
            }
        }
        // uvs: black corners copied, red corners midpoints of the parent corners.
        if let Some(uvs) = &base.corner_uvs {
            let fine_uvs = m.corner_uvs.as_ref().expect("uvs carried");
            for (t, &[up, uq, ur]) in uvs.iter().enumerate() {
                let mid = |a: Vec2, b: Vec2| 0.5 * (a + b);
                let c = sub.children(t).map(|c| fine_uvs[c as usize]);
                assert_eq!(c[0], [up, mid(up, uq), mid(ur, up)]);
                assert_eq!(c[1], [uq, mid(uq, ur), mid(up, uq)]);
                assert_eq!(c[2], [ur, mid(ur, up), mid(uq, ur)]);
                assert_eq!(c[3], [mid(up, uq), mid(uq, ur), mid(ur, up)]);
            }
        } else {
            assert!(m.corner_uvs.is_none());
        }
    }

    #[test]
    fn grids_and_spheres_subdivide_consistently() {
        for d in [Diagonals::Regular, Diagonals::Alternating] {
            for (nx, ny) in [(2, 2), (3, 2), (5, 4)] {
                check(&grid_mesh(nx, ny, d), 1);
            }
        }
        for s in 0..3 {
            check(&icosphere(0.7, s).expect("valid"), 2);
        }
    }

    #[test]
    fn matches_icosphere_refinement() {
        // One more icosphere level is this subdivision followed by projection onto the sphere.
        let coarse = icosphere(1.0, 1).expect("valid");
        let fine = icosphere(1.0, 2).expect("valid");
        let sub = subdivide(&coarse, &Topology::build(&coarse).expect("manifold")).expect("ok");
        assert_eq!(sub.mesh().triangles, fine.triangles);
    }

    #[test]
    fn f64_node_positions_are_exact_midpoints() {
        let base = grid_mesh(4, 3, Diagonals::Alternating);
        let sub = subdivide(&base, &Topology::build(&base).expect("ok")).expect("ok");
        let b: Vec<DVec3> = base.positions.iter().map(|p| p.as_dvec3()).collect();
        let x = sub.node_positions(&b);
        assert_eq!(&x[..b.len()], b.as_slice());
        for (e, &[a0, b0]) in sub.base_topology().edges().iter().enumerate() {
            let m = x[sub.red_node_of_edge(e) as usize];
            assert_eq!(m, 0.5 * (b[a0 as usize] + b[b0 as usize]));
        }
    }

    #[test]
    fn helpers_build_the_subdivision_of_generated_meshes() {
        let spec = GridSpec {
            nx: 6,
            ny: 4,
            diagonals: Diagonals::Alternating,
            ..GridSpec::default()
        };
        let base = grid(&spec).expect("valid");
        let sub = subdivided_grid(&spec).expect("valid");
        assert_eq!(
            sub,
            subdivide(&base, &Topology::build(&base).expect("ok")).expect("ok")
        );
        let (nx, ny) = (6, 4);
        let e = (nx - 1) * ny + nx * (ny - 1) + (nx - 1) * (ny - 1);
        assert_eq!(sub.num_nodes(), nx * ny + e);
        assert_eq!(sub.mesh().triangles.len(), 8 * (nx - 1) * (ny - 1));
        // rest_positions: f64 exact midpoints of the f32 base positions.
        let b: Vec<DVec3> = base.positions.iter().map(|p| p.as_dvec3()).collect();
        assert_eq!(sub.rest_positions(), sub.node_positions(&b));
        // Lumped areas sum to the sheet's area (1 m × 1 m). A black node touches one corner
        // child (a quarter of the base triangle, 0.2 m × ⅓ m / 2 / 4) per incident base triangle
        // and gets a third of each.
        let areas = sub.lumped_node_areas(&sub.rest_positions());
        assert!((areas.iter().sum::<f64>() - 1.0).abs() < 1e-6);
        let fine = (0.2 * (1.0 / 3.0) / 2.0) / 4.0;
        let interior = nx + 1;
        let valence = sub.base_topology().vertex_triangles(interior).len() as f64;
        assert!((areas[interior] - valence * fine / 3.0).abs() < 1e-7);

        let ico = icosphere(0.5, 1).expect("valid");
        let sub = subdivided_icosphere(0.5, 1).expect("valid");
        assert_eq!(sub.num_black_nodes(), ico.positions.len());
        assert_eq!(sub.mesh().triangles.len(), 4 * ico.triangles.len());
        // Red nodes lie inside the sphere (chord midpoints), black nodes on it.
        let r = sub.rest_positions();
        assert!(
            r[..sub.num_black_nodes()]
                .iter()
                .all(|p| (p.length() - 0.5).abs() < 1e-6)
        );
        assert!(
            r[sub.num_black_nodes()..]
                .iter()
                .all(|p| p.length() < 0.5 - 1e-3)
        );

        // Bad input surfaces as the generator's or validator's typed error.
        assert!(matches!(
            subdivided_grid(&GridSpec { nx: 1, ..spec }),
            Err(MeshError::InvalidParameter { .. })
        ));
        assert!(subdivided_icosphere(-1.0, 1).is_err());
        let mut broken = base.clone();
        broken.triangles[0][1] = 10_000;
        assert!(matches!(
            subdivide_mesh(&broken),
            Err(MeshError::IndexOutOfRange { .. })
        ));
    }

    #[test]
    fn mismatched_topology_is_an_error() {
        let a = grid_mesh(3, 3, Diagonals::Regular);
        let b = grid_mesh(4, 3, Diagonals::Regular);
        let topo_b = Topology::build(&b).expect("ok");
        assert!(matches!(
            subdivide(&a, &topo_b),
            Err(MeshError::InvalidParameter {
                name: "topology",
                ..
            })
        ));
        // Same counts, different connectivity.
        let c = grid_mesh(3, 3, Diagonals::Alternating);
        assert!(matches!(
            subdivide(&c, &Topology::build(&a).expect("ok")),
            Err(MeshError::InvalidParameter {
                name: "topology",
                ..
            })
        ));
        // uvs of the wrong length.
        let mut d = a.clone();
        d.corner_uvs.as_mut().expect("grid has uvs").pop();
        assert_eq!(
            subdivide(&d, &Topology::build(&a).expect("ok")),
            Err(MeshError::BadUv { face: 7 })
        );
    }
}

//! Edge table, hinges, boundary and vertex adjacency of a triangle mesh, built once at cloth creation.
//!
//! # Construction
//!
//! Every triangle `t` contributes three directed half-edges `tri[k] -> tri[(k+1)%3]`. They are
//! sorted by (undirected key `(min, max)`, `t`, `k`), which makes every later result independent of
//! hash order and of the thread count. A key with one half-edge is a boundary edge; with two it is
//! an interior edge, and the two half-edges must run in opposite directions (otherwise
//! [`MeshError::InconsistentOrientation`]); three or more are [`MeshError::NonManifoldEdge`].
//! Non-manifold *vertices* (two fans touching at one vertex) are accepted: they do not break any
//! edge-based quantity.
//!
//! # Conventions
//!
//! - Edges are `[a, b]` with `a < b`, sorted lexicographically.
//! - On an interior edge `[a, b]`, `edge_triangles(e)[0]` is the triangle whose winding runs
//!   `a -> b` and `[1]` the one running `b -> a`. This choice depends only on the vertex indices, so
//!   permuting the triangle list only relabels triangles: hinges keep their vertex order.
//! - Hinge vertex order is that of Bridson, Marino & Fedkiw 2003: see
//!   [`Hinge`].
#![deny(unsafe_code)]

use super::TriMesh;
use super::validate::{MeshError, check_indices};

/// Marks "no triangle" in [`Topology::edge_triangles`] (the missing side of a boundary edge).
pub const NO_TRIANGLE: u32 = u32::MAX;

/// Two triangles sharing an interior edge, with vertices ordered for the dihedral-angle formulas.
///
/// Vertex order follows Bridson, Marino & Fedkiw 2003:
/// `verts = [x1, x2, x3, x4]`, where `x1` is the wing (opposite) vertex of `triangles[0]`, `x2` the
/// wing of `triangles[1]`, and the shared edge runs `x3 -> x4` in the winding of `triangles[0]`
/// (so `x4 -> x3` in `triangles[1]`). Then `N1 = (x1-x3)×(x1-x4)` and `N2 = (x2-x4)×(x2-x3)`
/// (Bridson, Marino & Fedkiw 2003) are both the winding normals of their
/// triangles, and on a flat hinge they point the same way.
///
/// Here `x3 < x4` always (because `triangles[0]` is the triangle running low -> high; see the module
/// doc), and `edge` is the index of `[x3, x4]` in [`Topology::edges`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hinge {
    /// `[x1, x2, x3, x4]`: wing of triangle 0, wing of triangle 1, edge start, edge end.
    pub verts: [u32; 4],
    /// The two triangles; the edge runs `x3 -> x4` in `triangles[0]`.
    pub triangles: [u32; 2],
    /// Index of the shared edge in [`Topology::edges`].
    pub edge: u32,
}

/// Edges, hinges, boundary and vertex adjacency of a consistently oriented, edge-manifold mesh.
///
/// Immutable after [`Topology::build`]; all lists are deterministic functions of the input (see the
/// module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    num_vertices: usize,
    edges: Vec<[u32; 2]>,
    edge_triangles: Vec<[u32; 2]>,
    triangle_edges: Vec<[u32; 3]>,
    hinges: Vec<Hinge>,
    boundary_edges: Vec<u32>,
    boundary_vertices: Vec<u32>,
    is_boundary_vertex: Vec<bool>,
    vertex_triangle_offsets: Vec<usize>,
    vertex_triangles: Vec<u32>,
    vertex_edges: VertexEdges,
}

/// Each vertex's incident edges and the neighbours across them, in compressed rows: the one
/// vertex adjacency of weft ([`Topology`], the strain limiter and velocity smoothing build it
/// with [`VertexEdges::build`]). A vertex's row lists its edges in ascending edge index; for the
/// lexicographically sorted edges of a [`Topology`] its neighbours come out ascending too.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VertexEdges {
    /// Row offsets into `neighbors` and `edges`, one per vertex plus one.
    offsets: Vec<usize>,
    /// The vertex at the other end of each incident edge.
    neighbors: Vec<u32>,
    /// The incident edges, aligned with `neighbors`.
    edges: Vec<u32>,
}

impl VertexEdges {
    /// The rows of `num_vertices` vertices joined by `edges`.
    ///
    /// # Panics
    /// If an edge names a vertex `>= num_vertices` or joins a vertex to itself, or there are
    /// more than `u32::MAX` vertices or edge ends.
    #[must_use]
    pub fn build(num_vertices: usize, edges: &[[u32; 2]]) -> Self {
        assert!(
            u32::try_from(num_vertices).is_ok() && u32::try_from(2 * edges.len()).is_ok(),
            "VertexEdges::build: too many vertices or edges for u32 indices"
        );
        for (e, &[i, j]) in edges.iter().enumerate() {
            assert!(
                (i as usize) < num_vertices && (j as usize) < num_vertices && i != j,
                "VertexEdges::build: edge {e} = [{i}, {j}] is out of range or degenerate \
                 ({num_vertices} vertices)"
            );
        }
        let mut counts = vec![0u32; num_vertices];
        for &[a, b] in edges {
            counts[a as usize] += 1;
            counts[b as usize] += 1;
        }
        let offsets = csr_from_counts(&counts);
        let mut fill = offsets.clone();
        let mut neighbors = vec![0u32; 2 * edges.len()];
        let mut incident = vec![0u32; 2 * edges.len()];
        for (e, &[a, b]) in edges.iter().enumerate() {
            for (v, other) in [(a, b), (b, a)] {
                let slot = &mut fill[v as usize];
                neighbors[*slot] = other;
                incident[*slot] = e as u32;
                *slot += 1;
            }
        }
        Self {
            offsets,
            neighbors,
            edges: incident,
        }
    }

    /// Number of vertices.
    #[must_use]
    pub fn num_vertices(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The vertices sharing an edge with `v`, aligned with [`edges`](Self::edges).
    ///
    /// # Panics
    /// If `v >= num_vertices()`.
    #[must_use]
    pub fn neighbors(&self, v: usize) -> &[u32] {
        &self.neighbors[self.offsets[v]..self.offsets[v + 1]]
    }

    /// The edges incident to `v`, ascending.
    ///
    /// # Panics
    /// If `v >= num_vertices()`.
    #[must_use]
    pub fn edges(&self, v: usize) -> &[u32] {
        &self.edges[self.offsets[v]..self.offsets[v + 1]]
    }

    /// The largest number of edges at one vertex (0 without vertices).
    #[must_use]
    pub fn max_degree(&self) -> usize {
        self.offsets
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }
}

/// One directed half-edge, sortable by (undirected key, triangle, corner).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct HalfEdge {
    lo: u32,
    hi: u32,
    tri: u32,
    /// Corner `k`: the half-edge runs `tri[k] -> tri[(k+1)%3]`.
    corner: u8,
    /// True when it runs `lo -> hi`.
    forward: bool,
}

/// Compressed rows: `offsets` (length `rows + 1`) into `data`.
fn csr_from_counts(counts: &[u32]) -> Vec<usize> {
    let mut offsets = Vec::with_capacity(counts.len() + 1);
    let mut acc = 0usize;
    offsets.push(0);
    for &c in counts {
        acc += c as usize;
        offsets.push(acc);
    }
    offsets
}

impl Topology {
    /// Builds edges, hinges, boundary and adjacency of `mesh` once.
    ///
    /// Errors, first found: [`MeshError::InvalidParameter`] if the counts overflow `u32`,
    /// [`MeshError::IndexOutOfRange`] / [`MeshError::RepeatedIndex`] (in face order), then, in edge
    /// order, [`MeshError::NonManifoldEdge`] or [`MeshError::InconsistentOrientation`]. Geometry is
    /// not looked at, so it does not need [`TriMesh::validate`] to have passed, and it never panics.
    /// An empty mesh gives an empty topology.
    pub fn build(mesh: &TriMesh) -> Result<Topology, MeshError> {
        let nv = mesh.positions.len();
        let tris = &mesh.triangles;
        check_indices(nv, tris)?;

        let mut half_edges = Vec::with_capacity(3 * tris.len());
        for (t, tri) in tris.iter().enumerate() {
            for k in 0..3 {
                let (a, b) = (tri[k], tri[(k + 1) % 3]);
                half_edges.push(HalfEdge {
                    lo: a.min(b),
                    hi: a.max(b),
                    // Fits: check_indices bounds the triangle count by u32::MAX - 1.
                    tri: t as u32,
                    corner: k as u8,
                    forward: a < b,
                });
            }
        }
        half_edges.sort_unstable();

        let mut edges = Vec::new();
        let mut edge_triangles = Vec::new();
        let mut triangle_edges = vec![[0u32; 3]; tris.len()];
        let mut boundary_edges = Vec::new();
        let mut start = 0;
        while start < half_edges.len() {
            let (lo, hi) = (half_edges[start].lo, half_edges[start].hi);
            let mut end = start + 1;
            while end < half_edges.len() && half_edges[end].lo == lo && half_edges[end].hi == hi {
                end += 1;
            }
            let group = &half_edges[start..end];
            let e = u32::try_from(edges.len()).map_err(|_| MeshError::InvalidParameter {
                name: "triangles",
                message: "more edges than the u32 index range".to_owned(),
            })?;
            match group {
                [h] => {
                    edge_triangles.push([h.tri, NO_TRIANGLE]);
                    boundary_edges.push(e);
                }
                [h0, h1] => {
                    if h0.forward == h1.forward {
                        let (a, b) = if h0.forward { (lo, hi) } else { (hi, lo) };
                        return Err(MeshError::InconsistentOrientation {
                            face_a: h0.tri,
                            face_b: h1.tri,
                            a,
                            b,
                        });
                    }
                    let (f, r) = if h0.forward { (h0, h1) } else { (h1, h0) };
                    edge_triangles.push([f.tri, r.tri]);
                }
                _ => {
                    let mut faces: Vec<u32> = group.iter().map(|h| h.tri).collect();
                    faces.dedup();
                    return Err(MeshError::NonManifoldEdge {
                        a: lo,
                        b: hi,
                        faces,
                    });
                }
            }
            for h in group {
                triangle_edges[h.tri as usize][h.corner as usize] = e;
            }
            edges.push([lo, hi]);
            start = end;
        }

        // Hinges, in edge order.
        let mut hinges = Vec::with_capacity(edges.len() - boundary_edges.len());
        for (e, (&[a, b], &[t0, t1])) in edges.iter().zip(&edge_triangles).enumerate() {
            if t1 == NO_TRIANGLE {
                continue;
            }
            let wing = |t: u32| {
                let tri = tris[t as usize];
                tri.iter().copied().find(|&v| v != a && v != b)
            };
            let (Some(x1), Some(x2)) = (wing(t0), wing(t1)) else {
                // Unreachable: check_indices rejected repeated indices, so each triangle on the
                // edge has exactly one vertex off it.
                continue;
            };
            hinges.push(Hinge {
                verts: [x1, x2, a, b],
                triangles: [t0, t1],
                edge: e as u32,
            });
        }

        // Boundary vertices.
        let mut is_boundary_vertex = vec![false; nv];
        for &e in &boundary_edges {
            let [a, b] = edges[e as usize];
            is_boundary_vertex[a as usize] = true;
            is_boundary_vertex[b as usize] = true;
        }
        let boundary_vertices: Vec<u32> = (0..nv)
            .filter(|&v| is_boundary_vertex[v])
            .map(|v| v as u32)
            .collect();

        // Vertex -> triangles, ascending because triangles are visited in order.
        let mut counts = vec![0u32; nv];
        for tri in tris {
            for &v in tri {
                counts[v as usize] += 1;
            }
        }
        let vertex_triangle_offsets = csr_from_counts(&counts);
        let mut fill = vertex_triangle_offsets.clone();
        let mut vertex_triangles = vec![0u32; 3 * tris.len()];
        for (t, tri) in tris.iter().enumerate() {
            for &v in tri {
                vertex_triangles[fill[v as usize]] = t as u32;
                fill[v as usize] += 1;
            }
        }

        // Vertex -> neighbours (and the connecting edges). Edges are sorted lexicographically, so
        // a vertex `v` first receives its smaller neighbours `c` from edges `[c, v]` (ascending c),
        // then its larger ones from edges `[v, *]` (ascending): every row comes out ascending.
        let vertex_edges = VertexEdges::build(nv, &edges);

        Ok(Topology {
            num_vertices: nv,
            edges,
            edge_triangles,
            triangle_edges,
            hinges,
            boundary_edges,
            boundary_vertices,
            is_boundary_vertex,
            vertex_triangle_offsets,
            vertex_triangles,
            vertex_edges,
        })
    }

    /// Number of vertices (as in the mesh, including unreferenced ones).
    #[must_use]
    pub fn num_vertices(&self) -> usize {
        self.num_vertices
    }

    /// Number of triangles.
    #[must_use]
    pub fn num_triangles(&self) -> usize {
        self.triangle_edges.len()
    }

    /// Unique edges `[a, b]` with `a < b`, sorted lexicographically.
    #[must_use]
    pub fn edges(&self) -> &[[u32; 2]] {
        &self.edges
    }

    /// The triangles on edge `e`: `[t0, t1]`, `t1 == NO_TRIANGLE` on a boundary edge. On an interior
    /// edge `[a, b]`, `t0` runs `a -> b` and `t1` runs `b -> a`.
    ///
    /// # Panics
    /// If `e >= edges().len()`.
    #[must_use]
    pub fn edge_triangles(&self, e: usize) -> [u32; 2] {
        self.edge_triangles[e]
    }

    /// The edges of triangle `t`: edge `k` joins corners `k` and `(k+1)%3`.
    ///
    /// # Panics
    /// If `t >= num_triangles()`.
    #[must_use]
    pub fn triangle_edges(&self, t: usize) -> [u32; 3] {
        self.triangle_edges[t]
    }

    /// One hinge per interior edge, in edge order.
    #[must_use]
    pub fn hinges(&self) -> &[Hinge] {
        &self.hinges
    }

    /// Indices of the boundary edges (one triangle), ascending.
    #[must_use]
    pub fn boundary_edges(&self) -> &[u32] {
        &self.boundary_edges
    }

    /// Vertices on a boundary edge, ascending.
    #[must_use]
    pub fn boundary_vertices(&self) -> &[u32] {
        &self.boundary_vertices
    }

    /// Whether vertex `v` lies on a boundary edge (false for an out-of-range `v`).
    #[must_use]
    pub fn is_boundary_vertex(&self, v: usize) -> bool {
        self.is_boundary_vertex.get(v).copied().unwrap_or(false)
    }

    /// Triangles incident to vertex `v`, ascending.
    ///
    /// # Panics
    /// If `v >= num_vertices()`.
    #[must_use]
    pub fn vertex_triangles(&self, v: usize) -> &[u32] {
        &self.vertex_triangles[self.vertex_triangle_offsets[v]..self.vertex_triangle_offsets[v + 1]]
    }

    /// Vertices sharing an edge with `v`, ascending.
    ///
    /// # Panics
    /// If `v >= num_vertices()`.
    #[must_use]
    pub fn vertex_neighbors(&self, v: usize) -> &[u32] {
        self.vertex_edges.neighbors(v)
    }

    /// The edges joining `v` to each of [`vertex_neighbors(v)`](Self::vertex_neighbors), aligned
    /// with it.
    ///
    /// # Panics
    /// If `v >= num_vertices()`.
    #[must_use]
    pub fn vertex_edges(&self, v: usize) -> &[u32] {
        self.vertex_edges.edges(v)
    }

    /// Index of the edge joining `a` and `b` (either order), or `None`. `O(log degree)`.
    #[must_use]
    pub fn edge_index(&self, a: u32, b: u32) -> Option<u32> {
        let (lo, hi) = (a.min(b), a.max(b));
        if hi as usize >= self.num_vertices {
            return None;
        }
        let k = self
            .vertex_edges
            .neighbors(lo as usize)
            .binary_search(&hi)
            .ok()?;
        Some(self.vertex_edges.edges(lo as usize)[k])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::{Diagonals, GridSpec, capsule, cuboid, grid, icosphere};
    use glam::{Vec2, Vec3};
    use proptest::prelude::*;
    use std::collections::BTreeSet;

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

    fn tri_normal(m: &TriMesh, t: u32) -> Vec3 {
        let [a, b, c] = m.triangles[t as usize].map(|i| m.positions[i as usize]);
        (b - a).cross(c - a)
    }

    /// Every invariant of the module doc, for a mesh with Euler characteristic `chi`.
    fn check_invariants(m: &TriMesh, topo: &Topology, chi: i64) {
        let (nv, nf) = (m.positions.len(), m.triangles.len());
        assert_eq!(topo.num_vertices(), nv);
        assert_eq!(topo.num_triangles(), nf);
        let ne = topo.edges().len();
        // Euler: E = V + F - chi.
        assert_eq!(ne as i64, nv as i64 + nf as i64 - chi);
        // Edges unique, a < b, sorted.
        assert!(topo.edges().iter().all(|&[a, b]| a < b));
        assert!(topo.edges().windows(2).all(|w| w[0] < w[1]));
        // Edge set equals the triangles' edges; triangle_edges matches corners.
        let mut from_tris = BTreeSet::new();
        for (t, tri) in m.triangles.iter().enumerate() {
            let te = topo.triangle_edges(t);
            for k in 0..3 {
                let (a, b) = (tri[k], tri[(k + 1) % 3]);
                from_tris.insert([a.min(b), a.max(b)]);
                assert_eq!(topo.edges()[te[k] as usize], [a.min(b), a.max(b)]);
                assert_eq!(topo.edge_index(a, b), Some(te[k]));
                assert_eq!(topo.edge_index(b, a), Some(te[k]));
                let et = topo.edge_triangles(te[k] as usize);
                assert!(et.contains(&(t as u32)));
            }
        }
        assert_eq!(
            from_tris,
            topo.edges().iter().copied().collect::<BTreeSet<_>>()
        );
        // Boundary edges: exactly those with one triangle; one hinge per interior edge.
        let boundary: Vec<u32> = (0..ne as u32)
            .filter(|&e| topo.edge_triangles(e as usize)[1] == NO_TRIANGLE)
            .collect();
        assert_eq!(topo.boundary_edges(), boundary.as_slice());
        assert_eq!(topo.hinges().len(), ne - boundary.len());
        let hinge_edges: Vec<u32> = topo.hinges().iter().map(|h| h.edge).collect();
        let interior: Vec<u32> = (0..ne as u32).filter(|e| !boundary.contains(e)).collect();
        assert_eq!(hinge_edges, interior);
        // Hinge orientation: N1, N2 of Bridson, Marino & Fedkiw 2003 are the triangle winding normals.
        for h in topo.hinges() {
            let [x1, x2, x3, x4] = h.verts.map(|v| m.positions[v as usize]);
            let n1 = (x1 - x3).cross(x1 - x4);
            let n2 = (x2 - x4).cross(x2 - x3);
            let (t1, t2) = (tri_normal(m, h.triangles[0]), tri_normal(m, h.triangles[1]));
            assert!((n1 - t1).length() <= 1e-5 * t1.length(), "{h:?}");
            assert!((n2 - t2).length() <= 1e-5 * t2.length(), "{h:?}");
            assert_eq!(topo.edges()[h.edge as usize], [h.verts[2], h.verts[3]]);
            assert_eq!(topo.edge_triangles(h.edge as usize), h.triangles);
            // x3 -> x4 in the winding of triangle 0; x4 -> x3 in triangle 1.
            let runs = |t: u32, a: u32, b: u32| {
                let tri = m.triangles[t as usize];
                (0..3).any(|k| tri[k] == a && tri[(k + 1) % 3] == b)
            };
            assert!(runs(h.triangles[0], h.verts[2], h.verts[3]));
            assert!(runs(h.triangles[1], h.verts[3], h.verts[2]));
        }
        // Boundary vertices: endpoints of boundary edges.
        let bv: BTreeSet<u32> = boundary
            .iter()
            .flat_map(|&e| topo.edges()[e as usize])
            .collect();
        assert_eq!(
            topo.boundary_vertices(),
            bv.iter().copied().collect::<Vec<_>>().as_slice()
        );
        for v in 0..nv {
            assert_eq!(topo.is_boundary_vertex(v), bv.contains(&(v as u32)));
        }
        // CSR adjacency consistent with triangles; neighbours symmetric and ascending.
        for v in 0..nv {
            let vt: Vec<u32> = (0..nf as u32)
                .filter(|&t| m.triangles[t as usize].contains(&(v as u32)))
                .collect();
            assert_eq!(topo.vertex_triangles(v), vt.as_slice());
            let nb = topo.vertex_neighbors(v);
            assert!(nb.windows(2).all(|w| w[0] < w[1]));
            let expected: BTreeSet<u32> = m
                .triangles
                .iter()
                .filter(|tri| tri.contains(&(v as u32)))
                .flatten()
                .copied()
                .filter(|&u| u != v as u32)
                .collect();
            assert_eq!(nb, expected.iter().copied().collect::<Vec<_>>().as_slice());
            for (&u, &e) in nb.iter().zip(topo.vertex_edges(v)) {
                assert!(topo.vertex_neighbors(u as usize).contains(&(v as u32)));
                assert_eq!(topo.edge_index(v as u32, u), Some(e));
            }
        }
    }

    #[test]
    fn grid_invariants_both_patterns() {
        for d in [Diagonals::Regular, Diagonals::Alternating] {
            for (nx, ny) in [(2, 2), (3, 2), (5, 4), (9, 9)] {
                let m = grid_mesh(nx, ny, d);
                let topo = Topology::build(&m).expect("grid is manifold");
                check_invariants(&m, &topo, 1);
            }
        }
    }

    #[test]
    fn grid_boundary_counts() {
        for d in [Diagonals::Regular, Diagonals::Alternating] {
            let (nx, ny) = (7u32, 4u32);
            let m = grid_mesh(nx, ny, d);
            let topo = Topology::build(&m).expect("grid is manifold");
            assert_eq!(
                topo.boundary_edges().len() as u32,
                2 * (nx - 1) + 2 * (ny - 1)
            );
            let expected: Vec<u32> = (0..ny)
                .flat_map(|j| (0..nx).map(move |i| (i, j)))
                .filter(|&(i, j)| i == 0 || j == 0 || i == nx - 1 || j == ny - 1)
                .map(|(i, j)| j * nx + i)
                .collect();
            assert_eq!(topo.boundary_vertices(), expected.as_slice());
            // Interior valence: 6 triangles everywhere on a regular grid; on the checkerboard,
            // 8 where (i + j) is even (all four cell diagonals meet there) and 4 where it is odd.
            for j in 1..ny - 1 {
                for i in 1..nx - 1 {
                    let n = topo.vertex_triangles((j * nx + i) as usize).len();
                    match d {
                        Diagonals::Regular => assert_eq!(n, 6),
                        Diagonals::Alternating => {
                            assert_eq!(n, if (i + j) % 2 == 0 { 8 } else { 4 })
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn flat_grid_hinges_are_flat_and_aligned() {
        let m = grid_mesh(6, 5, Diagonals::Alternating);
        let topo = Topology::build(&m).expect("grid is manifold");
        let normal = Vec3::X.cross(Vec3::NEG_Z);
        for h in topo.hinges() {
            let [x1, x2, x3, x4] = h.verts.map(|v| m.positions[v as usize]);
            let n1 = (x1 - x3).cross(x1 - x4);
            let n2 = (x2 - x4).cross(x2 - x3);
            assert!(n1.dot(n2) > 0.0);
            assert!(n1.normalize().dot(normal) > 0.9999);
            assert!(n2.normalize().dot(normal) > 0.9999);
            assert!(h.verts[2] < h.verts[3]);
        }
    }

    #[test]
    fn closed_meshes_are_watertight() {
        let meshes = [
            icosphere(1.0, 2).expect("valid"),
            capsule(0.5, 0.7, 12, 4).expect("valid"),
            cuboid(Vec3::new(1.0, 2.0, 3.0)).expect("valid"),
        ];
        for m in &meshes {
            let topo = Topology::build(m).expect("closed mesh is manifold");
            check_invariants(m, &topo, 2);
            assert!(topo.boundary_edges().is_empty());
            assert!(topo.boundary_vertices().is_empty());
            assert_eq!(topo.hinges().len(), topo.edges().len());
        }
    }

    #[test]
    fn non_manifold_edge_is_reported() {
        let m = TriMesh {
            positions: vec![Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::Z, Vec3::NEG_Y],
            triangles: vec![[0, 1, 2], [1, 0, 3], [0, 1, 4]],
            corner_uvs: None,
        };
        let e = Topology::build(&m).unwrap_err();
        assert_eq!(
            e,
            MeshError::NonManifoldEdge {
                a: 0,
                b: 1,
                faces: vec![0, 1, 2]
            }
        );
        assert!(e.to_string().contains("edge 0-1"));
    }

    #[test]
    fn inconsistent_orientation_is_reported() {
        let m = TriMesh {
            positions: vec![Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::NEG_X],
            triangles: vec![[0, 1, 2], [3, 2, 0]],
            corner_uvs: None,
        };
        // Face 0 runs 0->1, 1->2, 2->0; face 1 runs 3->2, 2->0, 0->3: both 2 -> 0.
        let e = Topology::build(&m).unwrap_err();
        assert_eq!(
            e,
            MeshError::InconsistentOrientation {
                face_a: 0,
                face_b: 1,
                a: 2,
                b: 0
            }
        );
        let s = e.to_string();
        assert!(s.contains("faces 0 and 1") && s.contains("2->0"), "{s}");
        // Flipping face 1 fixes it.
        let mut m = m;
        m.triangles[1] = [3, 0, 2];
        assert!(Topology::build(&m).is_ok());
    }

    #[test]
    fn invalid_indices_are_errors_not_panics() {
        let mut m = TriMesh {
            positions: vec![Vec3::ZERO, Vec3::X, Vec3::Y],
            triangles: vec![[0, 1, 5]],
            corner_uvs: None,
        };
        assert_eq!(
            Topology::build(&m),
            Err(MeshError::IndexOutOfRange {
                face: 0,
                index: 5,
                num_vertices: 3
            })
        );
        m.triangles = vec![[0, 1, 1]];
        assert_eq!(
            Topology::build(&m),
            Err(MeshError::RepeatedIndex { face: 0 })
        );
        // Geometry is not examined: a degenerate but well-indexed mesh builds.
        m.positions = vec![Vec3::ZERO; 3];
        m.triangles = vec![[0, 1, 2]];
        assert!(Topology::build(&m).is_ok());
        // Empty mesh: empty topology.
        let topo = Topology::build(&TriMesh::default()).expect("empty is fine");
        assert!(topo.edges().is_empty() && topo.hinges().is_empty());
        assert_eq!(topo.edge_index(0, 1), None);
        assert!(!topo.is_boundary_vertex(0));
    }

    #[test]
    fn unreferenced_vertices_have_empty_rows() {
        let m = TriMesh {
            positions: vec![Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::ONE],
            triangles: vec![[0, 1, 2]],
            corner_uvs: None,
        };
        let topo = Topology::build(&m).expect("valid");
        assert!(topo.vertex_triangles(3).is_empty());
        assert!(topo.vertex_neighbors(3).is_empty());
        assert!(!topo.is_boundary_vertex(3));
        assert_eq!(topo.edge_index(0, 3), None);
        assert_eq!(topo.edge_index(0, 99), None);
        assert_eq!(topo.boundary_vertices(), &[0, 1, 2]);
    }

    /// Hinges as vertex-only keys, independent of triangle numbering.
    fn hinge_keys(topo: &Topology) -> Vec<[u32; 4]> {
        topo.hinges().iter().map(|h| h.verts).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn random_grids_satisfy_invariants(nx in 2u32..12, ny in 2u32..12, alt in any::<bool>()) {
            let d = if alt { Diagonals::Alternating } else { Diagonals::Regular };
            let m = grid_mesh(nx, ny, d);
            let topo = Topology::build(&m).expect("grid is manifold");
            check_invariants(&m, &topo, 1);
            prop_assert_eq!(topo.boundary_edges().len() as u32, 2 * (nx - 1) + 2 * (ny - 1));
            prop_assert_eq!(topo.boundary_vertices().len() as u32, 2 * nx + 2 * ny - 4);
        }

        #[test]
        fn triangle_permutation_keeps_edges_and_hinges(
            nx in 2u32..10,
            ny in 2u32..10,
            alt in any::<bool>(),
            seed in any::<u64>(),
        ) {
            let d = if alt { Diagonals::Alternating } else { Diagonals::Regular };
            let m = grid_mesh(nx, ny, d);
            let topo = Topology::build(&m).expect("grid is manifold");
            // Fisher–Yates with a SplitMix64 stream from the seed.
            let mut perm: Vec<usize> = (0..m.triangles.len()).collect();
            let mut s = seed;
            for i in (1..perm.len()).rev() {
                s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = s;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                perm.swap(i, (z % (i as u64 + 1)) as usize);
            }
            let mut pm = m.clone();
            pm.triangles = perm.iter().map(|&t| m.triangles[t]).collect();
            pm.corner_uvs = m.corner_uvs.as_ref().map(|u| perm.iter().map(|&t| u[t]).collect());
            let ptopo = Topology::build(&pm).expect("permuted grid is manifold");
            check_invariants(&pm, &ptopo, 1);
            prop_assert_eq!(topo.edges(), ptopo.edges());
            prop_assert_eq!(topo.boundary_edges(), ptopo.boundary_edges());
            prop_assert_eq!(hinge_keys(&topo), hinge_keys(&ptopo));
            // Hinge triangles are relabelled by the permutation (new index i holds old perm[i]).
            for (h, ph) in topo.hinges().iter().zip(ptopo.hinges()) {
                prop_assert_eq!(h.triangles, ph.triangles.map(|t| perm[t as usize] as u32));
                prop_assert_eq!(h.edge, ph.edge);
            }
        }
    }
}

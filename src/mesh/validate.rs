//! Mesh errors and geometric validation of a [`TriMesh`].
//!
//! [`TriMesh::validate`] runs the cheap, purely geometric checks that every later stage relies on:
//! the mesh is not empty, every index is in range, no triangle repeats a vertex, every coordinate is
//! finite, no triangle has (relatively) zero area, and the optional per-corner material coordinates
//! are present for every triangle, finite and non-degenerate. Topological checks (manifold edges,
//! consistent orientation) are done by [`Topology::build`](super::Topology::build), which needs the
//! edge table anyway.
//!
//! # Zero-area threshold
//!
//! A triangle is rejected when its area is at most [`ZERO_AREA_RELATIVE_EPSILON`] times the square of
//! the mesh scale, where the scale is the diagonal of the axis-aligned bounding box of all positions.
//! Areas are computed in `f64` from the `f32` positions; differences of two `f32` are exact in `f64`,
//! so the test is not polluted by round-off and only catches triangles that are degenerate at the
//! resolution of the mesh. The same rule, with the bounding box of all corner uvs, applies to the
//! triangles of the material (uv) plane.
#![deny(unsafe_code)]

use glam::{DVec3, Vec2, Vec3};

use super::TriMesh;

/// A triangle whose area is at most `ZERO_AREA_RELATIVE_EPSILON * scale²` is degenerate, where
/// `scale` is the diagonal of the mesh's bounding box (see the module doc).
///
/// `1e-10` leaves about three orders of magnitude of headroom below the triangles of a 1000 × 1000
/// vertex grid (area ratio ≈ 2.5e-7), while rejecting collinear and coincident vertices and slivers
/// that would blow up every `1 / area` in the force models.
pub const ZERO_AREA_RELATIVE_EPSILON: f64 = 1e-10;

/// A cloth triangle whose smallest altitude (twice its area over its longest edge) is below
/// `SLIVER_RELATIVE_ALTITUDE` times the median edge length of the mesh is a sliver
/// ([`TriMesh::check_slivers`]).
///
/// A sliver's opposite vertex lies within the cloth's thickness of its own base edge whatever
/// the thickness, and its Baraff–Witkin condition `1 / area` terms are stiff beyond anything the
/// rest of the mesh has: the collision stage finds it colliding every substep and falls back to
/// its last resort, so the cloth never moves. `1e-3` is three orders of magnitude below the
/// thinnest triangle of any regular mesh (a right triangle of a grid has altitude ≈ 0.7 of its
/// short edges) and of the stretched triangles of a `bow`ed or subdivided one; a 2 × 21 strip of
/// 5 cm rows with one row 1 µm wide is refused.
pub const SLIVER_RELATIVE_ALTITUDE: f64 = 1e-3;

/// Everything that can be wrong with a mesh, an OBJ file, or a generator's parameters.
///
/// Every message names the place: the face or vertex index, the edge, or the file and 1-based line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MeshError {
    /// The mesh has no vertices or no triangles.
    #[error("mesh is empty (no vertices or no triangles)")]
    Empty,
    /// A triangle refers to a vertex that does not exist.
    #[error(
        "face {face}: vertex index {index} is out of range (the mesh has {num_vertices} vertices)"
    )]
    IndexOutOfRange {
        /// Triangle index.
        face: u32,
        /// The offending vertex index.
        index: u32,
        /// Number of vertices in the mesh.
        num_vertices: u32,
    },
    /// A triangle uses the same vertex twice.
    #[error("face {face}: a vertex index is repeated")]
    RepeatedIndex {
        /// Triangle index.
        face: u32,
    },
    /// A triangle has (relatively) zero area; see [`ZERO_AREA_RELATIVE_EPSILON`].
    #[error("face {face}: zero area (degenerate triangle)")]
    ZeroArea {
        /// Triangle index.
        face: u32,
    },
    /// A cloth triangle is a sliver; see [`SLIVER_RELATIVE_ALTITUDE`].
    #[error(
        "face {face}: a sliver (its smallest altitude {altitude:e} m is below \
         {SLIVER_RELATIVE_ALTITUDE} of the median edge length {median_edge:e} m)"
    )]
    Sliver {
        /// Triangle index.
        face: u32,
        /// Its smallest altitude (m).
        altitude: f64,
        /// The mesh's median edge length (m).
        median_edge: f64,
    },
    /// A vertex has a NaN or infinite coordinate.
    #[error("vertex {vertex}: non-finite coordinate")]
    NonFinite {
        /// Vertex index.
        vertex: u32,
    },
    /// Three or more triangles share the edge `a`–`b`.
    #[error("edge {a}-{b}: shared by {} faces {faces:?} (non-manifold edge)", faces.len())]
    NonManifoldEdge {
        /// Smaller vertex index of the edge.
        a: u32,
        /// Larger vertex index of the edge.
        b: u32,
        /// Every triangle on the edge, ascending.
        faces: Vec<u32>,
    },
    /// Two triangles traverse their shared edge in the same direction `a -> b`.
    #[error("faces {face_a} and {face_b} both traverse edge {a}->{b} (inconsistent orientation)")]
    InconsistentOrientation {
        /// The first triangle (smaller index).
        face_a: u32,
        /// The second triangle.
        face_b: u32,
        /// Start of the edge, as both triangles traverse it.
        a: u32,
        /// End of the edge, as both triangles traverse it.
        b: u32,
    },
    /// A triangle's material (uv) coordinates are missing, non-finite or degenerate.
    #[error("face {face}: material (uv) coordinates missing, non-finite or of zero area")]
    BadUv {
        /// Triangle index.
        face: u32,
    },
    /// A malformed OBJ line.
    #[error("{file}:{line}: {message}")]
    Obj {
        /// File name as given by the caller.
        file: String,
        /// 1-based line number (the first physical line of a continued line).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// An error about a mesh read from a file, placed in it (`ObjLines::place`): the file and
    /// the line of the face or vertex (0: no line, e.g. an empty mesh).
    #[error("{file}:{}{source}", if *line > 0 { format!("{line}: ") } else { " ".to_owned() })]
    InFile {
        /// File name.
        file: String,
        /// 1-based line of the face or vertex; 0 when the error has no line.
        line: usize,
        /// The error about the mesh.
        source: Box<MeshError>,
    },
    /// An I/O failure while reading a mesh file.
    #[error("{file}: {message}")]
    Io {
        /// File name.
        file: String,
        /// The underlying error's message.
        message: String,
    },
    /// A generator (or builder) parameter is out of its domain.
    #[error("invalid parameter `{name}`: {message}")]
    InvalidParameter {
        /// Parameter name.
        name: &'static str,
        /// Why it is invalid.
        message: String,
    },
}

/// Largest number of triangles a mesh may hold: face indices are `u32` and `u32::MAX` is reserved
/// for [`NO_TRIANGLE`](super::NO_TRIANGLE).
pub const MAX_TRIANGLES: usize = u32::MAX as usize - 1;
/// Largest number of vertices a mesh may hold (vertex indices are `u32`).
pub const MAX_VERTICES: usize = u32::MAX as usize;

/// Checks that the vertex and triangle counts fit the `u32` index types.
pub(crate) fn check_counts(num_vertices: usize, num_triangles: usize) -> Result<(), MeshError> {
    if num_vertices > MAX_VERTICES {
        return Err(MeshError::InvalidParameter {
            name: "positions",
            message: format!("{num_vertices} vertices exceed the u32 index range"),
        });
    }
    if num_triangles > MAX_TRIANGLES {
        return Err(MeshError::InvalidParameter {
            name: "triangles",
            message: format!("{num_triangles} triangles exceed the u32 index range"),
        });
    }
    Ok(())
}

/// Checks index range and repeated indices of every triangle, in face order.
pub(crate) fn check_indices(num_vertices: usize, triangles: &[[u32; 3]]) -> Result<(), MeshError> {
    check_counts(num_vertices, triangles.len())?;
    for (f, tri) in triangles.iter().enumerate() {
        // In range by `check_counts`.
        let face = f as u32;
        for &index in tri {
            if index as usize >= num_vertices {
                return Err(MeshError::IndexOutOfRange {
                    face,
                    index,
                    num_vertices: num_vertices as u32,
                });
            }
        }
        if tri[0] == tri[1] || tri[1] == tri[2] || tri[0] == tri[2] {
            return Err(MeshError::RepeatedIndex { face });
        }
    }
    Ok(())
}

/// Squared diagonal of the bounding box of `points` (0 for no points), in `f64`.
fn bbox_diagonal_sq<T: Copy>(points: impl Iterator<Item = T>, to_d: impl Fn(T) -> DVec3) -> f64 {
    let mut lo = DVec3::splat(f64::INFINITY);
    let mut hi = DVec3::splat(f64::NEG_INFINITY);
    let mut any = false;
    for p in points {
        let p = to_d(p);
        lo = lo.min(p);
        hi = hi.max(p);
        any = true;
    }
    if any { (hi - lo).length_squared() } else { 0.0 }
}

/// Twice the area of the triangle `a b c`, in `f64` (see the module doc on exactness).
pub(crate) fn double_area(a: Vec3, b: Vec3, c: Vec3) -> f64 {
    let (a, b, c) = (a.as_dvec3(), b.as_dvec3(), c.as_dvec3());
    (b - a).cross(c - a).length()
}

/// Twice the unsigned area of the uv triangle `a b c`, in `f64`.
fn double_area_uv(a: Vec2, b: Vec2, c: Vec2) -> f64 {
    let (a, b, c) = (a.as_dvec2(), b.as_dvec2(), c.as_dvec2());
    (b - a).perp_dot(c - a).abs()
}

impl TriMesh {
    /// Runs the geometric checks of the module doc and returns the first failure.
    ///
    /// Order: [`MeshError::Empty`]; the index counts; [`MeshError::NonFinite`] (lowest vertex);
    /// per face in order [`MeshError::IndexOutOfRange`], [`MeshError::RepeatedIndex`];
    /// [`MeshError::ZeroArea`] (area ≤ [`ZERO_AREA_RELATIVE_EPSILON`] × bbox-diagonal²);
    /// then the material coordinates: [`MeshError::BadUv`] for a length mismatch (naming the first
    /// face without, or the first surplus entry), a non-finite uv, or a zero-area uv triangle
    /// (same relative threshold, on the uv bounding box).
    ///
    /// Topological checks are in [`Topology::build`](super::Topology::build).
    pub fn validate(&self) -> Result<(), MeshError> {
        if self.positions.is_empty() || self.triangles.is_empty() {
            return Err(MeshError::Empty);
        }
        check_counts(self.positions.len(), self.triangles.len())?;
        if let Some(v) = self.positions.iter().position(|p| !p.is_finite()) {
            return Err(MeshError::NonFinite { vertex: v as u32 });
        }
        check_indices(self.positions.len(), &self.triangles)?;

        let scale_sq = bbox_diagonal_sq(self.positions.iter().copied(), Vec3::as_dvec3);
        let min_double_area = 2.0 * ZERO_AREA_RELATIVE_EPSILON * scale_sq;
        for (f, t) in self.triangles.iter().enumerate() {
            let [a, b, c] = t.map(|i| self.positions[i as usize]);
            if double_area(a, b, c) <= min_double_area {
                return Err(MeshError::ZeroArea { face: f as u32 });
            }
        }

        if let Some(uvs) = &self.corner_uvs {
            if uvs.len() != self.triangles.len() {
                let face = uvs.len().min(self.triangles.len()) as u32;
                return Err(MeshError::BadUv { face });
            }
            if let Some(f) = uvs.iter().position(|c| c.iter().any(|uv| !uv.is_finite())) {
                return Err(MeshError::BadUv { face: f as u32 });
            }
            let uv_scale_sq = bbox_diagonal_sq(uvs.iter().flatten().copied(), |p: Vec2| {
                p.as_dvec2().extend(0.0)
            });
            let min_double_uv_area = 2.0 * ZERO_AREA_RELATIVE_EPSILON * uv_scale_sq;
            for (f, c) in uvs.iter().enumerate() {
                if double_area_uv(c[0], c[1], c[2]) <= min_double_uv_area {
                    return Err(MeshError::BadUv { face: f as u32 });
                }
            }
        }
        Ok(())
    }
}

impl TriMesh {
    /// The median length of `topology`'s edges (m; 0 for none), in `f64` from the `f32`
    /// positions.
    #[must_use]
    pub fn median_edge_length(&self, topology: &super::Topology) -> f64 {
        let mut lengths: Vec<f64> = topology
            .edges()
            .iter()
            .map(|&[a, b]| {
                (self.positions[a as usize].as_dvec3() - self.positions[b as usize].as_dvec3())
                    .length()
            })
            .collect();
        if lengths.is_empty() {
            return 0.0;
        }
        let mid = lengths.len() / 2;
        *lengths.select_nth_unstable_by(mid, f64::total_cmp).1
    }

    /// Refuses sliver triangles (for cloths; obstacles may have them): the first triangle whose
    /// smallest altitude is below [`SLIVER_RELATIVE_ALTITUDE`] times the median length of
    /// `topology`'s edges. Lengths in `f64` from the `f32` positions. Run after
    /// [`TriMesh::validate`].
    pub fn check_slivers(&self, topology: &super::Topology) -> Result<(), MeshError> {
        let length = |[a, b]: [u32; 2]| {
            (self.positions[a as usize].as_dvec3() - self.positions[b as usize].as_dvec3()).length()
        };
        let median_edge = self.median_edge_length(topology);
        let min_altitude = SLIVER_RELATIVE_ALTITUDE * median_edge;
        for (f, &[a, b, c]) in self.triangles.iter().enumerate() {
            let longest = length([a, b]).max(length([b, c])).max(length([c, a]));
            let [pa, pb, pc] = [a, b, c].map(|i| self.positions[i as usize]);
            let altitude = double_area(pa, pb, pc) / longest;
            if altitude < min_altitude {
                return Err(MeshError::Sliver {
                    face: f as u32,
                    altitude,
                    median_edge,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sliver_is_refused_by_face() {
        // A strip of 2 x 4 vertices with rows 5 cm apart, the third row 1 µm after the second.
        let ys = [0.0f32, 0.05, 0.050_001, 0.1];
        let positions: Vec<Vec3> = ys
            .iter()
            .flat_map(|&y| [Vec3::new(0.0, y, 0.0), Vec3::new(0.05, y, 0.0)])
            .collect();
        let mut triangles = Vec::new();
        for r in 0..3u32 {
            let a = 2 * r;
            triangles.push([a, a + 1, a + 3]);
            triangles.push([a, a + 3, a + 2]);
        }
        let mesh = TriMesh {
            positions,
            triangles,
            corner_uvs: None,
        };
        mesh.validate()
            .expect("not degenerate at the mesh's resolution");
        let topology = super::super::Topology::build(&mesh).expect("manifold");
        let e = mesh.check_slivers(&topology).expect_err("a sliver");
        assert!(matches!(e, MeshError::Sliver { face: 2, .. }), "{e}");
        assert!(e.to_string().starts_with("face 2: a sliver"), "{e}");
        let mut fixed = mesh.clone();
        fixed.positions[4].y = 0.075;
        fixed.positions[5].y = 0.075;
        assert_eq!(fixed.check_slivers(&topology), Ok(()));
    }

    fn two_triangles() -> TriMesh {
        TriMesh {
            positions: vec![
                Vec3::new(0.0, 0.0, 0.0),
                Vec3::new(1.0, 0.0, 0.0),
                Vec3::new(1.0, 1.0, 0.0),
                Vec3::new(0.0, 1.0, 0.0),
            ],
            triangles: vec![[0, 1, 2], [0, 2, 3]],
            corner_uvs: Some(vec![
                [
                    Vec2::new(0.0, 0.0),
                    Vec2::new(1.0, 0.0),
                    Vec2::new(1.0, 1.0),
                ],
                [
                    Vec2::new(0.0, 0.0),
                    Vec2::new(1.0, 1.0),
                    Vec2::new(0.0, 1.0),
                ],
            ]),
        }
    }

    #[test]
    fn valid_mesh_passes() {
        assert_eq!(two_triangles().validate(), Ok(()));
    }

    #[test]
    fn empty_mesh() {
        let e = TriMesh::default().validate().unwrap_err();
        assert_eq!(e, MeshError::Empty);
        assert!(e.to_string().contains("empty"));
        let mut m = two_triangles();
        m.triangles.clear();
        m.corner_uvs = None;
        assert_eq!(m.validate(), Err(MeshError::Empty));
    }

    #[test]
    fn index_out_of_range_names_face_and_index() {
        let mut m = two_triangles();
        m.triangles[1] = [0, 2, 7];
        let e = m.validate().unwrap_err();
        assert_eq!(
            e,
            MeshError::IndexOutOfRange {
                face: 1,
                index: 7,
                num_vertices: 4
            }
        );
        let s = e.to_string();
        assert!(
            s.contains("face 1") && s.contains("index 7") && s.contains("4 vertices"),
            "{s}"
        );
    }

    #[test]
    fn repeated_index_names_face() {
        let mut m = two_triangles();
        m.triangles[1] = [3, 2, 3];
        let e = m.validate().unwrap_err();
        assert_eq!(e, MeshError::RepeatedIndex { face: 1 });
        assert!(e.to_string().contains("face 1"));
    }

    #[test]
    fn zero_area_names_face() {
        let mut m = two_triangles();
        // Vertex 3 on the diagonal 0-2: face 1 is collinear.
        m.positions[3] = Vec3::new(0.5, 0.5, 0.0);
        let e = m.validate().unwrap_err();
        assert_eq!(e, MeshError::ZeroArea { face: 1 });
        assert!(e.to_string().contains("face 1"));
    }

    #[test]
    fn zero_area_threshold_is_relative_to_mesh_scale() {
        // The same shape at 1e-3 m and at 1e3 m scale is valid: the test is scale-free.
        for s in [1e-3f32, 1.0, 1e3] {
            let mut m = two_triangles();
            m.transform(glam::Affine3A::from_scale(Vec3::splat(s)));
            assert_eq!(m.validate(), Ok(()), "scale {s}");
        }
        // A sliver of relative height 1e-6 (area ratio ~5e-7) is kept; 1e-12 is rejected.
        let mut m = two_triangles();
        m.corner_uvs = None;
        m.positions[3] = Vec3::new(0.5, 0.5 + 1e-6, 0.0);
        assert_eq!(m.validate(), Ok(()));
        m.positions = vec![
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.5, 1e-12, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
        ];
        m.triangles = vec![[0, 1, 2], [0, 1, 3]];
        assert_eq!(m.validate(), Err(MeshError::ZeroArea { face: 0 }));
    }

    #[test]
    fn coincident_points_are_zero_area() {
        let m = TriMesh {
            positions: vec![Vec3::ONE; 3],
            triangles: vec![[0, 1, 2]],
            corner_uvs: None,
        };
        assert_eq!(m.validate(), Err(MeshError::ZeroArea { face: 0 }));
    }

    #[test]
    fn non_finite_names_vertex() {
        let mut m = two_triangles();
        m.positions[2].y = f32::NAN;
        let e = m.validate().unwrap_err();
        assert_eq!(e, MeshError::NonFinite { vertex: 2 });
        assert!(e.to_string().contains("vertex 2"));
        m.positions[2].y = f32::INFINITY;
        assert_eq!(m.validate(), Err(MeshError::NonFinite { vertex: 2 }));
    }

    #[test]
    fn bad_uv_names_face() {
        // Too short: the first face without uvs.
        let mut m = two_triangles();
        m.corner_uvs.as_mut().expect("has uvs").pop();
        let e = m.validate().unwrap_err();
        assert_eq!(e, MeshError::BadUv { face: 1 });
        assert!(e.to_string().contains("face 1"));
        // Too long: the first surplus entry.
        let mut m = two_triangles();
        let uvs = m.corner_uvs.as_mut().expect("has uvs");
        uvs.push(uvs[0]);
        assert_eq!(m.validate(), Err(MeshError::BadUv { face: 2 }));
        // Non-finite.
        let mut m = two_triangles();
        m.corner_uvs.as_mut().expect("has uvs")[0][2].x = f32::NAN;
        assert_eq!(m.validate(), Err(MeshError::BadUv { face: 0 }));
        // Degenerate in the material plane.
        let mut m = two_triangles();
        m.corner_uvs.as_mut().expect("has uvs")[1] = [Vec2::ZERO, Vec2::ONE, Vec2::splat(0.5)];
        assert_eq!(m.validate(), Err(MeshError::BadUv { face: 1 }));
    }

    #[test]
    fn mirrored_uvs_are_accepted() {
        let mut m = two_triangles();
        for c in m.corner_uvs.as_mut().expect("has uvs") {
            for uv in c {
                uv.x = -uv.x;
            }
        }
        assert_eq!(m.validate(), Ok(()));
    }

    #[test]
    fn structural_variant_messages_name_the_place() {
        let e = MeshError::NonManifoldEdge {
            a: 3,
            b: 9,
            faces: vec![1, 4, 6],
        };
        let s = e.to_string();
        assert!(
            s.contains("edge 3-9") && s.contains("[1, 4, 6]") && s.contains("3 faces"),
            "{s}"
        );
        let e = MeshError::InconsistentOrientation {
            face_a: 2,
            face_b: 5,
            a: 7,
            b: 1,
        };
        let s = e.to_string();
        assert!(s.contains("faces 2 and 5") && s.contains("7->1"), "{s}");
        let e = MeshError::Obj {
            file: "cloth.obj".into(),
            line: 12,
            message: "bad".into(),
        };
        assert_eq!(e.to_string(), "cloth.obj:12: bad");
        let e = MeshError::Io {
            file: "missing.obj".into(),
            message: "not found".into(),
        };
        assert_eq!(e.to_string(), "missing.obj: not found");
        let e = MeshError::InvalidParameter {
            name: "nx",
            message: "must be >= 2".into(),
        };
        assert!(e.to_string().contains("`nx`"));
    }
}

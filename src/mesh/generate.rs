//! Mesh generators: the rectangular cloth grid of the canonical scenes, the open cloth tube of the
//! sleeve sample ([`tube`]), and closed obstacle/shell meshes (icosphere, capsule, cuboid).
//!
//! Every generator checks its parameters and returns [`MeshError::InvalidParameter`] instead of
//! panicking. Closed meshes are watertight, consistently oriented, with counter-clockwise winding
//! seen from outside (so the winding normal points outward and the signed volume is positive).
//! Output order is a pure function of the parameters.
#![deny(unsafe_code)]

use glam::{DVec3, Vec2, Vec3};

use super::TriMesh;
use super::topology::Topology;
use super::validate::MeshError;

/// Upper bound on the vertices any generator produces (and on its triangles' count, twice this):
/// rejects parameters that would exhaust memory rather than aborting the process.
pub const MAX_GENERATED_VERTICES: u64 = 1 << 24;

/// Largest accepted `subdivisions` for [`icosphere`] (`20 · 4^8` = 1 310 720 triangles).
pub const MAX_ICOSPHERE_SUBDIVISIONS: u32 = 8;

/// Tolerance on `|u_axis| = |v_axis| = 1` and `u_axis · v_axis = 0` in [`grid`].
pub const GRID_AXIS_TOLERANCE: f32 = 1e-4;

/// How each grid cell is split into two triangles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Diagonals {
    /// Every cell is split along the diagonal from vertex `(i, j)` to `(i+1, j+1)`.
    Regular,
    /// Checkerboard: cells with even `i + j` use the `(i, j)`–`(i+1, j+1)` diagonal, cells with odd
    /// `i + j` the `(i+1, j)`–`(i, j+1)` one. Removes the shear bias of the regular split.
    Alternating,
}

/// A rectangular, planar grid of `nx × ny` vertices.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridSpec {
    /// Vertex count along `u` (at least 2).
    pub nx: u32,
    /// Vertex count along `v` (at least 2).
    pub ny: u32,
    /// Extent along `u` and `v`, metres (both positive).
    pub size: Vec2,
    /// World position of the grid centre, metres.
    pub centre: Vec3,
    /// Unit direction of increasing `i`.
    pub u_axis: Vec3,
    /// Unit direction of increasing `j`, orthogonal to `u_axis`. Triangle normal = `u_axis × v_axis`.
    pub v_axis: Vec3,
    /// Cell split pattern.
    pub diagonals: Diagonals,
}

impl Default for GridSpec {
    /// A 1 m × 1 m, 33 × 33 vertex alternating grid in the x–z plane at the origin, `u = +x`,
    /// `v = -z`, so the normal is `+y` (the `drape-33` cloth before it is lifted).
    fn default() -> Self {
        GridSpec {
            nx: 33,
            ny: 33,
            size: Vec2::ONE,
            centre: Vec3::ZERO,
            u_axis: Vec3::X,
            v_axis: Vec3::NEG_Z,
            diagonals: Diagonals::Alternating,
        }
    }
}

fn invalid(name: &'static str, message: impl Into<String>) -> MeshError {
    MeshError::InvalidParameter {
        name,
        message: message.into(),
    }
}

fn check_vertex_budget(name: &'static str, vertices: u64) -> Result<(), MeshError> {
    if vertices > MAX_GENERATED_VERTICES {
        return Err(invalid(
            name,
            format!("{vertices} vertices exceed the generator limit {MAX_GENERATED_VERTICES}"),
        ));
    }
    Ok(())
}

/// Generates the planar grid described by `spec`, with material coordinates.
///
/// Vertex `(i, j)` has index `j*nx + i` and position
/// `centre + (i/(nx-1) - 0.5) size.x u_axis + (j/(ny-1) - 0.5) size.y v_axis`; its material
/// coordinates (in `corner_uvs`, per corner) are `(i/(nx-1) size.x, j/(ny-1) size.y)` metres, so
/// lengths in the rest state equal lengths in the material plane. Cells are visited row by row
/// (`j` outer, `i` inner), two triangles each, wound counter-clockwise about `u_axis × v_axis`.
///
/// Errors ([`MeshError::InvalidParameter`]): `nx` or `ny` below 2, non-positive or non-finite
/// `size`, non-finite `centre`, axes not unit or not orthogonal (within
/// [`GRID_AXIS_TOLERANCE`]), more than [`MAX_GENERATED_VERTICES`] vertices.
pub fn grid(spec: &GridSpec) -> Result<TriMesh, MeshError> {
    let &GridSpec {
        nx,
        ny,
        size,
        centre,
        u_axis,
        v_axis,
        diagonals,
    } = spec;
    if nx < 2 {
        return Err(invalid("nx", format!("{nx} (at least 2 vertices along u)")));
    }
    if ny < 2 {
        return Err(invalid("ny", format!("{ny} (at least 2 vertices along v)")));
    }
    check_vertex_budget("nx", u64::from(nx) * u64::from(ny))?;
    if !(size.x > 0.0 && size.y > 0.0 && size.is_finite()) {
        return Err(invalid(
            "size",
            format!("{size} (both extents must be positive and finite)"),
        ));
    }
    if !centre.is_finite() {
        return Err(invalid("centre", format!("{centre} is not finite")));
    }
    for (name, axis) in [("u_axis", u_axis), ("v_axis", v_axis)] {
        if !axis.is_finite() || (axis.length() - 1.0).abs() > GRID_AXIS_TOLERANCE {
            return Err(invalid(name, format!("{axis} is not a unit vector")));
        }
    }
    if u_axis.dot(v_axis).abs() > GRID_AXIS_TOLERANCE {
        return Err(invalid(
            "v_axis",
            format!("{v_axis} is not orthogonal to u_axis {u_axis}"),
        ));
    }

    let (sx, sy) = ((nx - 1) as f32, (ny - 1) as f32);
    let mut positions = Vec::with_capacity((nx * ny) as usize);
    let mut uv_of = Vec::with_capacity((nx * ny) as usize);
    for j in 0..ny {
        let t = j as f32 / sy;
        for i in 0..nx {
            let s = i as f32 / sx;
            positions.push(centre + (s - 0.5) * size.x * u_axis + (t - 0.5) * size.y * v_axis);
            uv_of.push(Vec2::new(s * size.x, t * size.y));
        }
    }

    let cells = ((nx - 1) * (ny - 1)) as usize;
    let mut triangles = Vec::with_capacity(2 * cells);
    for j in 0..ny - 1 {
        for i in 0..nx - 1 {
            let v00 = j * nx + i;
            let (v10, v01, v11) = (v00 + 1, v00 + nx, v00 + nx + 1);
            let main_diagonal = match diagonals {
                Diagonals::Regular => true,
                Diagonals::Alternating => (i + j) % 2 == 0,
            };
            if main_diagonal {
                triangles.push([v00, v10, v11]);
                triangles.push([v00, v11, v01]);
            } else {
                triangles.push([v00, v10, v01]);
                triangles.push([v10, v11, v01]);
            }
        }
    }
    let corner_uvs = triangles
        .iter()
        .map(|t| t.map(|v| uv_of[v as usize]))
        .collect();
    Ok(TriMesh {
        positions,
        triangles,
        corner_uvs: Some(corner_uvs),
    })
}

/// The 12 vertices of a regular icosahedron, `(±1, ±φ, 0)` and cyclic permutations.
fn icosahedron() -> (Vec<DVec3>, Vec<[u32; 3]>) {
    let p = (1.0 + 5f64.sqrt()) / 2.0;
    let positions = vec![
        DVec3::new(-1.0, p, 0.0),
        DVec3::new(1.0, p, 0.0),
        DVec3::new(-1.0, -p, 0.0),
        DVec3::new(1.0, -p, 0.0),
        DVec3::new(0.0, -1.0, p),
        DVec3::new(0.0, 1.0, p),
        DVec3::new(0.0, -1.0, -p),
        DVec3::new(0.0, 1.0, -p),
        DVec3::new(p, 0.0, -1.0),
        DVec3::new(p, 0.0, 1.0),
        DVec3::new(-p, 0.0, -1.0),
        DVec3::new(-p, 0.0, 1.0),
    ];
    let triangles = vec![
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    (positions, triangles)
}

/// A geodesic sphere of `radius` centred at the origin: an icosahedron whose triangles are split
/// 1:4 `subdivisions` times, every vertex projected onto the sphere. Closed, outward CCW normals,
/// `10·4^s + 2` vertices and `20·4^s` triangles. Midpoint vertices are numbered after the existing
/// ones in [`Topology`] edge order, so the output is deterministic. No `corner_uvs`.
///
/// Errors: `radius` not positive and finite; `subdivisions > MAX_ICOSPHERE_SUBDIVISIONS`.
pub fn icosphere(radius: f32, subdivisions: u32) -> Result<TriMesh, MeshError> {
    if !(radius > 0.0 && radius.is_finite()) {
        return Err(invalid(
            "radius",
            format!("{radius} (must be positive and finite)"),
        ));
    }
    if subdivisions > MAX_ICOSPHERE_SUBDIVISIONS {
        return Err(invalid(
            "subdivisions",
            format!("{subdivisions} (at most {MAX_ICOSPHERE_SUBDIVISIONS})"),
        ));
    }
    let (mut unit, mut triangles) = icosahedron();
    for p in &mut unit {
        *p = p.normalize();
    }
    for _ in 0..subdivisions {
        let level = TriMesh {
            positions: unit.iter().map(|p| p.as_vec3()).collect(),
            triangles,
            corner_uvs: None,
        };
        let topo = Topology::build(&level)?;
        let base = unit.len() as u32;
        for &[a, b] in topo.edges() {
            unit.push((unit[a as usize] + unit[b as usize]).normalize());
        }
        let mut next = Vec::with_capacity(4 * level.triangles.len());
        for (t, &[a, b, c]) in level.triangles.iter().enumerate() {
            // Edge k of triangle t joins corners k and k+1: ab, bc, ca.
            let [ab, bc, ca] = topo.triangle_edges(t).map(|e| base + e);
            next.extend_from_slice(&[[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]);
        }
        triangles = next;
    }
    let r = f64::from(radius);
    let positions = unit.iter().map(|p| (*p * r).as_vec3()).collect();
    Ok(TriMesh {
        positions,
        triangles,
        corner_uvs: None,
    })
}

/// A capsule along the y axis: a cylinder of `radius` from `y = -half_length` to `+half_length`
/// capped by two hemispheres. `segments` vertices around each ring; each hemisphere is cut into
/// `rings` latitude bands (so `rings = 1` makes the caps cones). With `half_length = 0` it is a
/// UV sphere (the two equators merge). Closed, outward CCW normals, no `corner_uvs`.
///
/// Vertex 0 is the top pole, the last vertex the bottom pole; between them the latitude rings run
/// top to bottom, vertex `s` of a ring at azimuth `2π s / segments` from `+x` towards `+z`.
///
/// Errors: `radius` not positive and finite; `half_length` negative or non-finite;
/// `segments < 3`; `rings < 1`; more than [`MAX_GENERATED_VERTICES`] vertices.
pub fn capsule(
    radius: f32,
    half_length: f32,
    segments: u32,
    rings: u32,
) -> Result<TriMesh, MeshError> {
    if !(radius > 0.0 && radius.is_finite()) {
        return Err(invalid(
            "radius",
            format!("{radius} (must be positive and finite)"),
        ));
    }
    if !(half_length >= 0.0 && half_length.is_finite()) {
        return Err(invalid(
            "half_length",
            format!("{half_length} (must be >= 0 and finite)"),
        ));
    }
    if segments < 3 {
        return Err(invalid("segments", format!("{segments} (at least 3)")));
    }
    if rings < 1 {
        return Err(invalid("rings", format!("{rings} (at least 1)")));
    }
    let cylinder = half_length > 0.0;
    // Latitude rings: rings per hemisphere, sharing the equator when there is no cylinder.
    let num_rings = 2 * u64::from(rings) - u64::from(!cylinder);
    check_vertex_budget("segments", 2 + u64::from(segments) * num_rings)?;

    let (r, h) = (f64::from(radius), f64::from(half_length));
    let quarter = std::f64::consts::FRAC_PI_2;
    // (y, ring radius) from top to bottom.
    let mut latitudes: Vec<(f64, f64)> = Vec::with_capacity(num_rings as usize);
    for k in 1..=rings {
        let phi = quarter * f64::from(k) / f64::from(rings);
        latitudes.push((h + r * phi.cos(), r * phi.sin()));
    }
    let first_bottom = if cylinder { rings } else { rings - 1 };
    for k in (1..=first_bottom).rev() {
        let phi = quarter * f64::from(k) / f64::from(rings);
        latitudes.push((-h - r * phi.cos(), r * phi.sin()));
    }

    let n = segments;
    let mut positions = Vec::with_capacity(2 + (n as usize) * latitudes.len());
    positions.push(Vec3::new(0.0, (h + r) as f32, 0.0));
    for &(y, rr) in &latitudes {
        for s in 0..n {
            let theta = std::f64::consts::TAU * f64::from(s) / f64::from(n);
            positions.push(DVec3::new(rr * theta.cos(), y, rr * theta.sin()).as_vec3());
        }
    }
    let bottom = positions.len() as u32;
    positions.push(Vec3::new(0.0, (-h - r) as f32, 0.0));

    let ring = |row: u32, s: u32| 1 + row * n + s % n;
    let rows = latitudes.len() as u32;
    let mut triangles = Vec::with_capacity(2 * (n as usize) * latitudes.len());
    // With +z at azimuth +90°, seen from above the ring runs clockwise; so the top cap runs
    // pole -> s+1 -> s, each band A(s) -> A(s+1) -> B(s+1), A(s) -> B(s+1) -> B(s), and the
    // bottom cap L(s) -> L(s+1) -> pole: every shared edge is traversed once each way.
    for s in 0..n {
        triangles.push([0, ring(0, s + 1), ring(0, s)]);
    }
    for row in 0..rows - 1 {
        for s in 0..n {
            let (a0, a1) = (ring(row, s), ring(row, s + 1));
            let (b0, b1) = (ring(row + 1, s), ring(row + 1, s + 1));
            triangles.push([a0, a1, b1]);
            triangles.push([a0, b1, b0]);
        }
    }
    for s in 0..n {
        triangles.push([ring(rows - 1, s), ring(rows - 1, s + 1), bottom]);
    }
    Ok(TriMesh {
        positions,
        triangles,
        corner_uvs: None,
    })
}

/// An axis-aligned box centred at the origin: 8 vertices, 12 triangles, outward CCW normals.
///
/// Vertex `x + 2y + 4z` (bits 0/1 for the −/+ side of each axis) is at
/// `(±hx, ±hy, ±hz)`. Faces come in the order −x, +x, −y, +y, −z, +z, two triangles each.
///
/// Errors: any half extent not positive and finite.
pub fn cuboid(half_extents: Vec3) -> Result<TriMesh, MeshError> {
    if !(half_extents.min_element() > 0.0 && half_extents.is_finite()) {
        return Err(invalid(
            "half_extents",
            format!("{half_extents} (all must be positive and finite)"),
        ));
    }
    let positions = (0..8u32)
        .map(|v| {
            let sign = |bit: u32| if v & (1 << bit) != 0 { 1.0 } else { -1.0 };
            half_extents * Vec3::new(sign(0), sign(1), sign(2))
        })
        .collect();
    let mut triangles = Vec::with_capacity(12);
    for a in 0..3u32 {
        // (b, c) complete a right-handed frame with a: e_b × e_c = e_a.
        let (b, c) = ((a + 1) % 3, (a + 2) % 3);
        let corner = |side: u32, ub: u32, uc: u32| (side << a) | (ub << b) | (uc << c);
        for side in 0..2 {
            let q = [
                corner(side, 0, 0),
                corner(side, 1, 0),
                corner(side, 1, 1),
                corner(side, 0, 1),
            ];
            if side == 1 {
                // Counter-clockwise about +e_a.
                triangles.push([q[0], q[1], q[2]]);
                triangles.push([q[0], q[2], q[3]]);
            } else {
                // Counter-clockwise about -e_a.
                triangles.push([q[0], q[2], q[1]]);
                triangles.push([q[0], q[3], q[2]]);
            }
        }
    }
    Ok(TriMesh {
        positions,
        triangles,
        corner_uvs: None,
    })
}

/// An open cylindrical tube (a sleeve) of `radius` along the y axis, from `y = -length/2` to
/// `+length/2`: `around` vertices on each ring, `along` rings. Closed around (the seam is stitched:
/// no boundary there), open at both ends (two boundary loops of `around` edges each).
///
/// Vertex `(s, j)` has index `j·around + s` and position
/// `(r cos θ_s, -length/2 + j·length/(along-1), r sin θ_s)` with `θ_s = 2π s / around`, so the
/// rings run from `+x` towards `+z` (clockwise seen from above, like [`capsule`]'s). Each cell
/// `(s, j)`–`(s+1, j+1)` is split as in [`grid`] (checkerboard for [`Diagonals::Alternating`]) and
/// wound so that the winding normal points outward (away from the axis).
///
/// Material coordinates (`corner_uvs`, per corner, metres) unroll the polygonal prism: `u` runs
/// around in steps of the chord `2r sin(π/around)` (not the arc `2πr/around`), `v` along the axis,
/// and the cells of the seam take `u = around · chord` at their `s = around` side. Every cell of the
/// prism is a planar rectangle, so this development is exact: the rest lengths and areas equal the
/// initial ones (an arc-length `u` would start the tube stretched by about `π²/(6 around²)`).
///
/// Errors ([`MeshError::InvalidParameter`]): `radius` or `length` not positive and finite,
/// `around < 3`, `along < 2`, more than [`MAX_GENERATED_VERTICES`] vertices.
pub fn tube(
    radius: f32,
    length: f32,
    around: u32,
    along: u32,
    diagonals: Diagonals,
) -> Result<TriMesh, MeshError> {
    if !(radius > 0.0 && radius.is_finite()) {
        return Err(invalid(
            "radius",
            format!("{radius} (must be positive and finite)"),
        ));
    }
    if !(length > 0.0 && length.is_finite()) {
        return Err(invalid(
            "length",
            format!("{length} (must be positive and finite)"),
        ));
    }
    if around < 3 {
        return Err(invalid(
            "around",
            format!("{around} (at least 3 vertices around)"),
        ));
    }
    if along < 2 {
        return Err(invalid(
            "along",
            format!("{along} (at least 2 rings along the axis)"),
        ));
    }
    check_vertex_budget("around", u64::from(around) * u64::from(along))?;

    let (r, l) = (f64::from(radius), f64::from(length));
    let chord = 2.0 * r * (std::f64::consts::PI / f64::from(around)).sin();
    let dy = l / f64::from(along - 1);
    let mut positions = Vec::with_capacity((around * along) as usize);
    for j in 0..along {
        let y = -0.5 * l + f64::from(j) * dy;
        for s in 0..around {
            let theta = std::f64::consts::TAU * f64::from(s) / f64::from(around);
            positions.push(DVec3::new(r * theta.cos(), y, r * theta.sin()).as_vec3());
        }
    }
    // Column s (0..=around: `around` is the seam copy of 0) and row j in the unrolled pattern.
    let uv = |s: u32, j: u32| Vec2::new((f64::from(s) * chord) as f32, (f64::from(j) * dy) as f32);
    let cells = (around * (along - 1)) as usize;
    let mut triangles = Vec::with_capacity(2 * cells);
    let mut corner_uvs = Vec::with_capacity(2 * cells);
    for j in 0..along - 1 {
        for s in 0..around {
            // Corners as (column, row); the column `around` wraps to vertex column 0.
            let (c00, c10, c01, c11) = ((s, j), (s + 1, j), (s, j + 1), (s + 1, j + 1));
            let main_diagonal = match diagonals {
                Diagonals::Regular => true,
                Diagonals::Alternating => (s + j) % 2 == 0,
            };
            // Going +θ (from +x towards +z) and +y, (∂/∂θ) × (∂/∂y) points inward, so each cell is
            // wound 00 -> 01 -> 11 -> 10 (about the outward normal), the mirror of `grid`'s order.
            let pair = if main_diagonal {
                [[c00, c11, c10], [c00, c01, c11]]
            } else {
                [[c00, c01, c10], [c10, c01, c11]]
            };
            for tri in pair {
                triangles.push(tri.map(|(cs, cj)| cj * around + cs % around));
                corner_uvs.push(tri.map(|(cs, cj)| uv(cs, cj)));
            }
        }
    }
    Ok(TriMesh {
        positions,
        triangles,
        corner_uvs: Some(corner_uvs),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    /// Every edge has two triangles, traversed once each way (Topology checks orientation).
    fn assert_closed(m: &TriMesh) -> Topology {
        m.validate().expect("generated mesh is valid");
        let topo = Topology::build(m).expect("consistently oriented, edge-manifold");
        assert!(topo.boundary_edges().is_empty(), "not watertight");
        assert_eq!(
            topo.edges().len() as i64,
            m.num_vertices() as i64 + m.num_triangles() as i64 - 2,
            "Euler characteristic of a sphere"
        );
        topo
    }

    /// Each face's winding normal points away from the (star-shaped about the origin) solid.
    fn assert_outward(m: &TriMesh) {
        for t in 0..m.num_triangles() {
            let [a, b, c] = m.triangles[t].map(|i| m.positions[i as usize].as_dvec3());
            let n = (b - a).cross(c - a);
            assert!(n.dot((a + b + c) / 3.0) > 0.0, "face {t} points inward");
        }
    }

    fn rel_err(a: f64, b: f64) -> f64 {
        (a - b).abs() / b.abs()
    }

    #[test]
    fn grid_layout_and_uvs() {
        let spec = GridSpec {
            nx: 4,
            ny: 3,
            size: Vec2::new(3.0, 1.0),
            centre: Vec3::new(1.0, 2.0, 3.0),
            u_axis: Vec3::Y,
            v_axis: Vec3::Z,
            diagonals: Diagonals::Regular,
        };
        let m = grid(&spec).expect("valid");
        m.validate().expect("valid mesh");
        assert_eq!(m.num_vertices(), 12);
        assert_eq!(m.num_triangles(), 12);
        // Vertex (i, j) = j*nx + i.
        assert_eq!(m.positions[0], Vec3::new(1.0, 0.5, 2.5));
        assert_eq!(m.positions[3], Vec3::new(1.0, 3.5, 2.5));
        assert_eq!(m.positions[11], Vec3::new(1.0, 3.5, 3.5));
        assert_eq!(m.positions[6], Vec3::new(1.0, 2.5, 3.0));
        // Winding normal = u × v = +x.
        for t in 0..m.num_triangles() {
            let [a, b, c] = m.triangles[t].map(|i| m.positions[i as usize]);
            let n = (b - a).cross(c - a).normalize();
            assert!(n.dot(Vec3::X) > 0.9999, "face {t}");
            // Cells are 1 m × 0.5 m.
            assert!((m.triangle_area(t) - 0.25).abs() < 1e-6);
        }
        // uvs per corner: (i/(nx-1) size.x, j/(ny-1) size.y).
        let uvs = m.corner_uvs.as_ref().expect("grid has uvs");
        for (t, tri) in m.triangles.iter().enumerate() {
            for k in 0..3 {
                let (i, j) = (tri[k] % 4, tri[k] / 4);
                assert_eq!(uvs[t][k], Vec2::new(i as f32, j as f32 * 0.5));
            }
        }
    }

    #[test]
    fn grid_uv_lengths_equal_rest_lengths() {
        for diagonals in [Diagonals::Regular, Diagonals::Alternating] {
            let u = Vec3::new(1.0, 2.0, 0.5).normalize();
            let v = u.any_orthonormal_vector();
            let spec = GridSpec {
                nx: 7,
                ny: 5,
                size: Vec2::new(1.3, 0.4),
                centre: Vec3::new(-2.0, 0.1, 4.0),
                u_axis: u,
                v_axis: v,
                diagonals,
            };
            let m = grid(&spec).expect("valid");
            let uvs = m.corner_uvs.as_ref().expect("grid has uvs");
            for (t, tri) in m.triangles.iter().enumerate() {
                for k in 0..3 {
                    let l = (k + 1) % 3;
                    let dx = (m.positions[tri[l] as usize] - m.positions[tri[k] as usize]).length();
                    let duv = (uvs[t][l] - uvs[t][k]).length();
                    assert!(
                        (dx - duv).abs() < 1e-5,
                        "face {t}: |dx| {dx} vs |duv| {duv}"
                    );
                }
            }
        }
    }

    #[test]
    fn grid_alternating_pattern_alternates() {
        let spec = GridSpec {
            nx: 6,
            ny: 5,
            ..GridSpec::default()
        };
        let alt = grid(&spec).expect("valid");
        let reg = grid(&GridSpec {
            diagonals: Diagonals::Regular,
            ..spec
        })
        .expect("valid");
        let nx = spec.nx;
        let has_edge = |m: &TriMesh, cell: usize, a: u32, b: u32| {
            m.triangles[2 * cell..2 * cell + 2]
                .iter()
                .any(|t| t.contains(&a) && t.contains(&b))
        };
        for j in 0..spec.ny - 1 {
            for i in 0..nx - 1 {
                let cell = (j * (nx - 1) + i) as usize;
                let v00 = j * nx + i;
                let (v10, v01, v11) = (v00 + 1, v00 + nx, v00 + nx + 1);
                assert!(has_edge(&reg, cell, v00, v11) && !has_edge(&reg, cell, v10, v01));
                let main = (i + j) % 2 == 0;
                assert_eq!(has_edge(&alt, cell, v00, v11), main, "cell ({i}, {j})");
                assert_eq!(has_edge(&alt, cell, v10, v01), !main, "cell ({i}, {j})");
            }
        }
        // Neighbouring cells, in both directions, use different diagonals.
        let diag = |i: u32, j: u32| {
            has_edge(
                &alt,
                (j * (nx - 1) + i) as usize,
                j * nx + i,
                (j + 1) * nx + i + 1,
            )
        };
        assert_ne!(diag(0, 0), diag(1, 0));
        assert_ne!(diag(0, 0), diag(0, 1));
        assert_eq!(diag(0, 0), diag(1, 1));
    }

    #[test]
    fn default_grid_is_drape_cloth() {
        let m = grid(&GridSpec::default()).expect("valid");
        assert_eq!(m.num_vertices(), 33 * 33);
        for t in 0..m.num_triangles() {
            let [a, b, c] = m.triangles[t].map(|i| m.positions[i as usize]);
            assert!((b - a).cross(c - a).normalize().dot(Vec3::Y) > 0.9999);
        }
        let (lo, hi) = m
            .positions
            .iter()
            .fold((Vec3::MAX, Vec3::MIN), |(l, h), p| (l.min(*p), h.max(*p)));
        assert_eq!(lo, Vec3::new(-0.5, 0.0, -0.5));
        assert_eq!(hi, Vec3::new(0.5, 0.0, 0.5));
    }

    #[test]
    fn grid_rejects_bad_parameters() {
        let ok = GridSpec::default();
        let cases = [
            (GridSpec { nx: 1, ..ok }, "nx"),
            (GridSpec { ny: 0, ..ok }, "ny"),
            (
                GridSpec {
                    size: Vec2::new(0.0, 1.0),
                    ..ok
                },
                "size",
            ),
            (
                GridSpec {
                    size: Vec2::new(1.0, f32::NAN),
                    ..ok
                },
                "size",
            ),
            (
                GridSpec {
                    centre: Vec3::splat(f32::INFINITY),
                    ..ok
                },
                "centre",
            ),
            (
                GridSpec {
                    u_axis: Vec3::new(2.0, 0.0, 0.0),
                    ..ok
                },
                "u_axis",
            ),
            (
                GridSpec {
                    v_axis: Vec3::X,
                    ..ok
                },
                "v_axis",
            ),
            (
                GridSpec {
                    nx: 1 << 13,
                    ny: 1 << 13,
                    ..ok
                },
                "nx",
            ),
        ];
        for (spec, expected) in cases {
            match grid(&spec) {
                Err(e @ MeshError::InvalidParameter { name, .. }) => {
                    assert_eq!(name, expected);
                    assert!(e.to_string().contains(expected));
                }
                other => panic!("{spec:?}: expected InvalidParameter({expected}), got {other:?}"),
            }
        }
    }

    #[test]
    fn icosphere_is_closed_outward_and_round() {
        for s in 0..=4 {
            let m = icosphere(0.3, s).expect("valid");
            assert_eq!(m.num_vertices(), 10 * 4usize.pow(s) + 2);
            assert_eq!(m.num_triangles(), 20 * 4usize.pow(s));
            assert_closed(&m);
            assert_outward(&m);
            for p in &m.positions {
                assert!((p.length() - 0.3).abs() < 1e-6);
            }
            let vol = m.signed_volume();
            let exact = 4.0 / 3.0 * PI * 0.3f64.powi(3);
            assert!(vol > 0.0 && vol < exact);
            // Inscribed polyhedron: the volume deficit shrinks about 4x per level.
            let tol = [0.4, 0.13, 0.035, 0.009, 0.0025][s as usize];
            assert!(rel_err(vol, exact) < tol, "s = {s}: {vol} vs {exact}");
        }
    }

    #[test]
    fn icosphere_rejects_bad_parameters() {
        for r in [0.0, -1.0, f32::NAN, f32::INFINITY] {
            assert!(matches!(
                icosphere(r, 1),
                Err(MeshError::InvalidParameter { name: "radius", .. })
            ));
        }
        assert!(matches!(
            icosphere(1.0, MAX_ICOSPHERE_SUBDIVISIONS + 1),
            Err(MeshError::InvalidParameter {
                name: "subdivisions",
                ..
            })
        ));
    }

    #[test]
    fn capsule_is_closed_outward_with_right_volume() {
        // (radius, half_length, segments, rings, relative volume tolerance): the inscribed polygon
        // loses ~(2π/segments)²/6 of the cross-section, the latitude bands a similar share.
        let cases = [
            (0.5f32, 1.0f32, 32u32, 8u32, 0.02),
            (0.2, 0.0, 24, 6, 0.04),
            (1.0, 0.5, 3, 1, 1.0),
            (0.1, 2.0, 64, 16, 0.004),
        ];
        for (r, h, seg, rings, tol) in cases {
            let m = capsule(r, h, seg, rings).expect("valid");
            let expected_rows = 2 * rings - u32::from(h == 0.0);
            assert_eq!(m.num_vertices() as u32, 2 + seg * expected_rows);
            assert_closed(&m);
            assert_outward(&m);
            let (r64, h64) = (f64::from(r), f64::from(h));
            let exact = PI * r64 * r64 * 2.0 * h64 + 4.0 / 3.0 * PI * r64.powi(3);
            let vol = m.signed_volume();
            assert!(vol > 0.0 && vol < exact * (1.0 + 1e-6), "{vol} vs {exact}");
            assert!(
                rel_err(vol, exact) < tol,
                "({r}, {h}, {seg}, {rings}): {vol} vs {exact}"
            );
            let ys = m.positions.iter().map(|p| p.y);
            assert!((ys.clone().fold(f32::MIN, f32::max) - (h + r)).abs() < 1e-6);
            assert!((ys.fold(f32::MAX, f32::min) + (h + r)).abs() < 1e-6);
        }
    }

    #[test]
    fn capsule_rejects_bad_parameters() {
        let e = |r, h, s, k| match capsule(r, h, s, k) {
            Err(MeshError::InvalidParameter { name, .. }) => name,
            other => panic!("expected InvalidParameter, got {other:?}"),
        };
        assert_eq!(e(0.0, 1.0, 8, 2), "radius");
        assert_eq!(e(1.0, -0.1, 8, 2), "half_length");
        assert_eq!(e(1.0, f32::NAN, 8, 2), "half_length");
        assert_eq!(e(1.0, 1.0, 2, 2), "segments");
        assert_eq!(e(1.0, 1.0, 8, 0), "rings");
        assert_eq!(e(1.0, 1.0, 1 << 20, 1 << 10), "segments");
    }

    #[test]
    fn cuboid_is_closed_outward_with_right_volume() {
        let he = Vec3::new(0.5, 1.0, 2.0);
        let m = cuboid(he).expect("valid");
        assert_eq!((m.num_vertices(), m.num_triangles()), (8, 12));
        assert_closed(&m);
        assert_outward(&m);
        assert!(rel_err(m.signed_volume(), 8.0 * 0.5 * 1.0 * 2.0) < 1e-12);
        // Every face normal is one of the six axis directions, each used twice.
        let mut counts = std::collections::BTreeMap::new();
        for t in 0..12 {
            let [a, b, c] = m.triangles[t].map(|i| m.positions[i as usize]);
            let n = (b - a).cross(c - a).normalize();
            let key = n.to_array().map(|x| x.round() as i32);
            assert!((n - Vec3::from_array(key.map(|x| x as f32))).length() < 1e-6);
            *counts.entry(key).or_insert(0) += 1;
        }
        assert_eq!(counts.len(), 6);
        assert!(counts.values().all(|&c| c == 2));
        for bad in [
            Vec3::new(0.0, 1.0, 1.0),
            Vec3::new(1.0, -1.0, 1.0),
            Vec3::new(1.0, 1.0, f32::NAN),
        ] {
            assert!(matches!(
                cuboid(bad),
                Err(MeshError::InvalidParameter {
                    name: "half_extents",
                    ..
                })
            ));
        }
    }

    #[test]
    fn tube_is_closed_around_open_at_the_ends_and_outward() {
        for diagonals in [Diagonals::Regular, Diagonals::Alternating] {
            let (r, l, around, along) = (0.1f32, 0.5f32, 12u32, 5u32);
            let m = tube(r, l, around, along, diagonals).expect("valid");
            m.validate().expect("generated tube passes mesh validation");
            assert_eq!(m.num_vertices(), (around * along) as usize);
            assert_eq!(m.num_triangles(), (2 * around * (along - 1)) as usize);
            // Consistent orientation: Topology rejects a mesh with an edge traversed twice the
            // same way.
            let topo = Topology::build(&m).expect("consistently oriented, edge-manifold");
            // Annulus: V - E + F = 0, and the boundary is the two end rings, nothing at the seam.
            assert_eq!(
                m.num_vertices() as i64 - topo.edges().len() as i64 + m.num_triangles() as i64,
                0
            );
            assert_eq!(topo.boundary_edges().len(), 2 * around as usize);
            let mut boundary: Vec<u32> = topo.boundary_vertices().to_vec();
            boundary.sort_unstable();
            let ends: Vec<u32> = (0..around)
                .chain((along - 1) * around..along * around)
                .collect();
            assert_eq!(boundary, ends, "boundary = first and last rings");
            for &e in topo.boundary_edges() {
                let [a, b] = topo.edges()[e as usize];
                let (ja, jb) = (a / around, b / around);
                assert_eq!(ja, jb, "a boundary edge runs around a ring");
                assert!(ja == 0 || ja == along - 1);
            }
            // Outward: each winding normal points away from the axis.
            for t in 0..m.num_triangles() {
                let [a, b, c] = m.triangles[t].map(|i| m.positions[i as usize].as_dvec3());
                let n = (b - a).cross(c - a);
                let centroid = (a + b + c) / 3.0;
                let radial = DVec3::new(centroid.x, 0.0, centroid.z);
                assert!(n.dot(radial) > 0.0, "face {t} points inward");
            }
            // On the cylinder, spanning the length.
            for p in &m.positions {
                assert!((p.x.hypot(p.z) - r).abs() < 1e-6);
                assert!(p.y.abs() <= 0.5 * l + 1e-6);
            }
            assert_eq!(m.positions[0], Vec3::new(r, -0.5 * l, 0.0));
            assert!((m.positions[(along * around - 1) as usize].y - 0.5 * l).abs() < 1e-6);
        }
    }

    #[test]
    fn tube_rest_state_is_the_initial_state() {
        // The unrolled material coordinates reproduce every edge length (also across the seam),
        // so the tube starts unstrained.
        let m = tube(0.07, 0.4, 7, 4, Diagonals::Alternating).expect("valid");
        let uvs = m
            .corner_uvs
            .as_ref()
            .expect("tube has material coordinates");
        let mut seam_edges = 0;
        for (t, tri) in m.triangles.iter().enumerate() {
            for k in 0..3 {
                let (a, b) = (tri[k] as usize, tri[(k + 1) % 3] as usize);
                let d3 = (m.positions[a] - m.positions[b]).length();
                let duv = (uvs[t][k] - uvs[t][(k + 1) % 3]).length();
                assert!(
                    (d3 - duv).abs() < 1e-6,
                    "triangle {t} edge {k}: 3D {d3}, material {duv}"
                );
                if (a % 7 == 6 && b % 7 == 0) || (a % 7 == 0 && b % 7 == 6) {
                    seam_edges += 1;
                }
            }
        }
        assert!(seam_edges > 0, "the seam cells were checked");
    }

    #[test]
    fn tube_alternating_pattern_alternates() {
        // Cell (s, j) with even s + j uses the (s, j)-(s+1, j+1) diagonal.
        let (around, along) = (6u32, 3u32);
        let m = tube(1.0, 1.0, around, along, Diagonals::Alternating).expect("valid");
        let topo = Topology::build(&m).expect("valid");
        for j in 0..along - 1 {
            for s in 0..around {
                let v00 = j * around + s;
                let v11 = (j + 1) * around + (s + 1) % around;
                let v10 = j * around + (s + 1) % around;
                let v01 = (j + 1) * around + s;
                let main = topo.edge_index(v00, v11).is_some();
                let anti = topo.edge_index(v10, v01).is_some();
                assert_eq!(
                    (main, anti),
                    ((s + j) % 2 == 0, (s + j) % 2 == 1),
                    "cell ({s}, {j})"
                );
            }
        }
    }

    #[test]
    fn tube_rejects_bad_parameters() {
        let e = |r: f32, l: f32, around: u32, along: u32| match tube(
            r,
            l,
            around,
            along,
            Diagonals::Regular,
        ) {
            Err(MeshError::InvalidParameter { name, .. }) => name,
            other => panic!("expected InvalidParameter, got {other:?}"),
        };
        assert_eq!(e(0.0, 1.0, 8, 2), "radius");
        assert_eq!(e(f32::INFINITY, 1.0, 8, 2), "radius");
        assert_eq!(e(1.0, -1.0, 8, 2), "length");
        assert_eq!(e(1.0, f32::NAN, 8, 2), "length");
        assert_eq!(e(1.0, 1.0, 2, 2), "around");
        assert_eq!(e(1.0, 1.0, 8, 1), "along");
        assert_eq!(e(1.0, 1.0, 1 << 16, 1 << 10), "around");
    }
}

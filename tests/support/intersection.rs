//! Independent intersection checker for the no-intersection invariant of `ARCHITECTURE.md`:
//! "no cloth triangle intersects another cloth triangle it does not share an edge with (one
//! folded through a vertex neighbour counts) or an obstacle".
//!
//! Written without looking at `src/collide`, so that it can judge that code.
//!
//! # What counts as an intersection
//! Triangles are closed point sets (boundary included). Touching counts: a vertex lying exactly
//! on another triangle, an edge grazing an edge, or two coplanar triangles sharing a boundary
//! segment are all intersections. That is the conservative side for an invariant checker, and
//! with exact predicates "touching" is a well-defined event rather than a rounding accident.
//! - Two cloth triangles that share two vertex indices (an edge) are never tested.
//! - Two cloth triangles that share exactly one vertex index `v` intersect when they have a
//!   common point other than `v`.
//! - Any other pair of cloth triangles, and every cloth triangle against every obstacle-mesh
//!   triangle, intersect when they have any common point. Vertices with different indices but
//!   equal positions therefore touch.
//! - Analytic solids use a depth instead: a triangle penetrates when its deepest point is more
//!   than `tolerance` inside the solid.
//!
//! # Reduction to segment–triangle tests
//! Let `K = T1 ∩ T2` (convex, compact). If `K` is not empty, it has an extreme point, and every
//! extreme point of `K` lies on an edge of `T1` or of `T2`: a point in the relative interior of
//! both triangles has a segment of `K` through it (transverse planes) or a disc of `K` around
//! it (coplanar). So the triangles intersect iff one of the six closed edges meets the other
//! closed triangle. With one shared vertex `v`, `K` contains `v`, and `K ≠ {v}` iff `K` has an
//! extreme point other than `v`, i.e. iff some edge meets the other triangle at a point other
//! than `v`:
//! - the edge opposite `v` (when it does not pass through `v`) by a plain segment–triangle
//!   test; when it does pass through `v` (a degenerate triangle), it is the union of the two
//!   edges incident to `v` and adds nothing;
//! - an edge `[v, x]` meets the other triangle `(v, a, b)` beyond `v` iff the direction `x - v`
//!   lies in the tangent cone of that triangle at `v`, `cone(a - v, b - v)`, because the
//!   intersection of the edge with the triangle is a segment starting at `v`.
//!
//! Degenerate (zero-area) triangles are treated as the segments or points they are.
//!
//! Fast paths, each exact: a triangle strictly on one side of the other's plane is rejected
//! (with a shared vertex: both far vertices strictly on one side); two coplanar non-degenerate
//! triangles use one table of the 18 vertex-against-edge-line orientations; two triangles that
//! share a vertex and lie in one plane need only the cone tests, since two planar wedges
//! narrower than π overlap iff a boundary ray of one lies in the other.
//!
//! # Exact predicates
//! All decisions are signs of `orient3d` and `orient2d` on the original `f32` coordinates
//! (projections onto coordinate planes keep coordinates unchanged). Each is first evaluated in
//! `f64` with Shewchuk's static error bound (Shewchuk 1997, "Adaptive precision floating-point
//! arithmetic and fast robust geometric predicates", bounds `o3derrboundA` and `ccwerrboundA`),
//! which decides almost every call. When the bound does not decide, the determinant is expanded
//! into products of input coordinates (24 triple products for `orient3d`, 6 plain products for
//! `orient2d`) and summed exactly with Shewchuk's expansion arithmetic (`Two-Sum`,
//! `Two-Product` with Dekker's split, `Grow-Expansion` with zero elimination); the sign of the
//! largest component is the exact sign. This is exact for every finite `f32` input: a product
//! of two `f32` values has at most 48 significant bits and is exact in `f64`; a third factor
//! gives at most 72 bits, held exactly by `Two-Product` as two doubles; every non-zero
//! intermediate value, error terms included, lies between about `1e-152` and `4e115` in
//! magnitude, far inside `f64`'s range, so nothing overflows or underflows. These predicates are
//! general geometry, not a numbered equation of any paper weft cites.
//!
//! Solid depths are measurements, not decisions, and are computed in `f64` without exactness.
//!
//! # Broad phase
//! Triangle AABBs are binned into a uniform grid whose cell is about the mean triangle extent.
//! A pair found in several cells is tested only in the cell that holds the minimum corner of the
//! two AABBs' overlap, so each pair is tested once without a hash set. The result is sorted and
//! must equal [`find_intersections_brute_force`] exactly.
#![deny(unsafe_code)]

use glam::{DMat3, DQuat, DVec3, Quat, Vec3};

/// An indexed triangle soup borrowed from the caller: positions in metres, counter-clockwise
/// index triples (orientation does not matter to the checker).
#[derive(Clone, Copy, Debug)]
pub struct TriSoup<'a> {
    /// Vertex positions (m).
    pub positions: &'a [Vec3],
    /// Vertex indices of each triangle, into `positions`.
    pub triangles: &'a [[u32; 3]],
}

/// Analytic obstacle, described independently of weft's own shape types.
#[derive(Clone, Copy, Debug)]
pub enum Solid {
    /// Half-space below the plane through `point`; `normal` (any length) points out of the solid.
    Plane {
        /// A point on the plane (m).
        point: Vec3,
        /// Outward normal, not necessarily unit length.
        normal: Vec3,
    },
    /// Ball.
    Sphere {
        /// Centre (m).
        centre: Vec3,
        /// Radius (m).
        radius: f32,
    },
    /// Points within `radius` of the segment `a`–`b`.
    Capsule {
        /// First end of the axis (m).
        a: Vec3,
        /// Second end of the axis (m).
        b: Vec3,
        /// Radius (m).
        radius: f32,
    },
    /// Oriented box: `centre + rotation * l` for `|l_i| <= half_extents_i`.
    Box {
        /// Centre (m).
        centre: Vec3,
        /// Half extents along the box's local axes (m).
        half_extents: Vec3,
        /// Rotation from box-local to world (normalised before use).
        rotation: Quat,
    },
}

/// Every intersection found by [`find_intersections`], each list sorted ascending.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IntersectionReport {
    /// Cloth triangle pairs `(t, u)`, `t < u`, that intersect.
    pub self_pairs: Vec<(u32, u32)>,
    /// `(obstacle mesh index, cloth triangle, obstacle triangle)` that intersect.
    pub mesh_pairs: Vec<(usize, u32, u32)>,
    /// `(solid index, cloth triangle, penetration depth in metres)` deeper than the tolerance.
    pub solid_hits: Vec<(usize, u32, f32)>,
}

impl IntersectionReport {
    /// True when nothing intersects.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.self_pairs.is_empty() && self.mesh_pairs.is_empty() && self.solid_hits.is_empty()
    }

    /// One-line description for assertion messages: counts and the first few entries.
    #[must_use]
    pub fn summary(&self) -> String {
        const SHOWN: usize = 8;
        if self.is_clean() {
            return "clean".to_owned();
        }
        format!(
            "{} self pairs {:?}{}; {} mesh pairs {:?}{}; {} solid hits {:?}{}",
            self.self_pairs.len(),
            &self.self_pairs[..self.self_pairs.len().min(SHOWN)],
            ellipsis(self.self_pairs.len(), SHOWN),
            self.mesh_pairs.len(),
            &self.mesh_pairs[..self.mesh_pairs.len().min(SHOWN)],
            ellipsis(self.mesh_pairs.len(), SHOWN),
            self.solid_hits.len(),
            &self.solid_hits[..self.solid_hits.len().min(SHOWN)],
            ellipsis(self.solid_hits.len(), SHOWN),
        )
    }
}

fn ellipsis(len: usize, shown: usize) -> &'static str {
    if len > shown { "…" } else { "" }
}

/// Finds every cloth self-intersection, cloth–mesh intersection and cloth–solid penetration,
/// using a uniform grid as the broad phase. See the module doc for the rules.
///
/// `tolerance` (m) applies to the solids only: a cloth triangle is reported against a solid when
/// some point of it is more than `tolerance` inside.
///
/// # Panics
/// If a triangle indexes past its soup's positions, if a position is not finite, if a solid has
/// a non-finite parameter, a zero plane normal or a negative size, or if `tolerance` is
/// negative or not finite.
#[must_use]
pub fn find_intersections(
    cloth: &TriSoup,
    meshes: &[TriSoup],
    solids: &[Solid],
    tolerance: f32,
) -> IntersectionReport {
    check_inputs(cloth, meshes, solids, tolerance);
    let boxes = triangle_boxes(cloth);
    let mut report = IntersectionReport::default();
    if boxes.is_empty() {
        return report;
    }
    let grid = Grid::build(&boxes);

    for cell in 0..grid.cell_count() {
        let items = grid.cell(cell);
        for (i, &t) in items.iter().enumerate() {
            for &u in &items[i + 1..] {
                let (bt, bu) = (&boxes[t as usize], &boxes[u as usize]);
                if bt.overlaps(bu)
                    && grid.cell_of(bt.min.max(bu.min)) == cell
                    && cloth_pair_intersects(cloth, t, u)
                {
                    report.self_pairs.push((t, u));
                }
            }
        }
    }

    for (m, mesh) in meshes.iter().enumerate() {
        for (o, &tri) in mesh.triangles.iter().enumerate() {
            let ob = Aabb::of(&corners(mesh, tri));
            if !ob.overlaps(&grid.bounds) {
                continue;
            }
            let (lo, hi) = grid.cell_range(&ob);
            grid.for_each_cell(lo, hi, |cell| {
                for &t in grid.cell(cell) {
                    let bt = &boxes[t as usize];
                    if bt.overlaps(&ob)
                        && grid.cell_of(bt.min.max(ob.min)) == cell
                        && triangles_intersect(tri_of(cloth, t), corners(mesh, tri))
                    {
                        report.mesh_pairs.push((m, t, index_u32(o)));
                    }
                }
            });
        }
    }

    report.solid_hits = solid_hits(cloth, &boxes, solids, tolerance);
    report.self_pairs.sort_unstable();
    report.mesh_pairs.sort_unstable();
    report
}

/// Same contract as [`find_intersections`] but tests every pair, with no AABB or grid pruning:
/// the O(n²) reference the grid-accelerated version must match exactly.
///
/// # Panics
/// As [`find_intersections`].
#[must_use]
pub fn find_intersections_brute_force(
    cloth: &TriSoup,
    meshes: &[TriSoup],
    solids: &[Solid],
    tolerance: f32,
) -> IntersectionReport {
    check_inputs(cloth, meshes, solids, tolerance);
    let n = index_u32(cloth.triangles.len());
    let mut report = IntersectionReport::default();
    for t in 0..n {
        for u in t + 1..n {
            if cloth_pair_intersects(cloth, t, u) {
                report.self_pairs.push((t, u));
            }
        }
    }
    for (m, mesh) in meshes.iter().enumerate() {
        for t in 0..n {
            for (o, &tri) in mesh.triangles.iter().enumerate() {
                if triangles_intersect(tri_of(cloth, t), corners(mesh, tri)) {
                    report.mesh_pairs.push((m, t, index_u32(o)));
                }
            }
        }
    }
    report.mesh_pairs.sort_unstable();
    let boxes = triangle_boxes(cloth);
    report.solid_hits = solid_hits(cloth, &boxes, solids, tolerance);
    report
}

fn check_inputs(cloth: &TriSoup, meshes: &[TriSoup], solids: &[Solid], tolerance: f32) {
    assert!(
        tolerance.is_finite() && tolerance >= 0.0,
        "tolerance must be finite and non-negative, got {tolerance}"
    );
    for (i, solid) in solids.iter().enumerate() {
        let valid = match *solid {
            Solid::Plane { point, normal } => {
                point.is_finite() && normal.is_finite() && normal != Vec3::ZERO
            }
            Solid::Sphere { centre, radius } => {
                centre.is_finite() && radius.is_finite() && radius >= 0.0
            }
            Solid::Capsule { a, b, radius } => {
                a.is_finite() && b.is_finite() && radius.is_finite() && radius >= 0.0
            }
            Solid::Box {
                centre,
                half_extents,
                rotation,
            } => {
                centre.is_finite()
                    && half_extents.is_finite()
                    && half_extents.min_element() >= 0.0
                    && rotation.is_finite()
                    && rotation.length_squared() > 0.0
            }
        };
        assert!(valid, "solid {i} is invalid: {solid:?}");
    }
    for (name, soup) in std::iter::once(("cloth".to_owned(), cloth)).chain(
        meshes
            .iter()
            .enumerate()
            .map(|(m, s)| (format!("mesh {m}"), s)),
    ) {
        let n = soup.positions.len();
        for (v, p) in soup.positions.iter().enumerate() {
            assert!(p.is_finite(), "{name}: position {v} is not finite: {p}");
        }
        for (t, tri) in soup.triangles.iter().enumerate() {
            for &i in tri {
                assert!(
                    (i as usize) < n,
                    "{name}: triangle {t} uses vertex {i} of {n}"
                );
            }
        }
    }
}

fn index_u32(i: usize) -> u32 {
    u32::try_from(i).expect("triangle counts are below 2^32: indices are u32")
}

fn corners(soup: &TriSoup, tri: [u32; 3]) -> [Vec3; 3] {
    tri.map(|i| soup.positions[i as usize])
}

fn tri_of(soup: &TriSoup, t: u32) -> [Vec3; 3] {
    corners(soup, soup.triangles[t as usize])
}

/// Narrow phase for two cloth triangles under the adjacency rules of the module doc.
fn cloth_pair_intersects(cloth: &TriSoup, t: u32, u: u32) -> bool {
    let (ti, ui) = (cloth.triangles[t as usize], cloth.triangles[u as usize]);
    let mut shared = None;
    let mut shared_count = 0;
    for (s, &i) in ti.iter().enumerate() {
        if ti[..s].contains(&i) {
            continue;
        }
        if let Some(r) = ui.iter().position(|&j| j == i) {
            shared_count += 1;
            shared = Some((s, r));
        }
    }
    match (shared_count, shared) {
        (0, _) => triangles_intersect(tri_of(cloth, t), tri_of(cloth, u)),
        (1, Some((s, r))) => {
            let p = tri_of(cloth, t);
            let q = tri_of(cloth, u);
            let (v, a1, b1) = (p[s], p[(s + 1) % 3], p[(s + 2) % 3]);
            let (a2, b2) = (q[(r + 1) % 3], q[(r + 2) % 3]);
            intersect_beyond_shared_vertex(v, a1, b1, a2, b2)
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Exact predicates
// ---------------------------------------------------------------------------------------------

/// Half an ulp of 1.0 in `f64`: Shewchuk's `epsilon`.
const EPS: f64 = f64::EPSILON * 0.5;
/// Shewchuk 1997 `o3derrboundA`: relative bound of the `f64` orient3d evaluation.
const O3D_ERRBOUND: f64 = (7.0 + 56.0 * EPS) * EPS;
/// Shewchuk 1997 `ccwerrboundA`: relative bound of the `f64` orient2d evaluation.
const O2D_ERRBOUND: f64 = (3.0 + 16.0 * EPS) * EPS;

/// Exact sign (-1, 0, 1) of `((b - a) × (c - a)) · (d - a)`: positive when `d` lies on the side
/// of plane `abc` that the right-handed normal of `a, b, c` points to.
///
/// Exact for all finite `f32` inputs (see the module doc); a static `f64` filter decides most
/// calls. Non-finite inputs give an unspecified sign.
#[must_use]
pub fn orient3d(a: Vec3, b: Vec3, c: Vec3, d: Vec3) -> i32 {
    orient3d_many(a, b, c, [d])[0]
}

/// [`orient3d`] of several points `ds` against one plane `abc`, sharing the plane's minors.
///
/// The filter evaluates `((b - a) × (c - a)) · (d - a)` as `Σ_k w_k m_k`, `w = d - a`, with each
/// minor `m_k` a difference of two products of differences: the form of Shewchuk's
/// `o3derrboundA` analysis, so the same bound applies.
fn orient3d_many<const N: usize>(a: Vec3, b: Vec3, c: Vec3, ds: [Vec3; N]) -> [i32; N] {
    let (a64, b64, c64) = (a.as_dvec3(), b.as_dvec3(), c.as_dvec3());
    let (u, v) = (b64 - a64, c64 - a64);
    let (uyvz, uzvy) = (u.y * v.z, u.z * v.y);
    let (uzvx, uxvz) = (u.z * v.x, u.x * v.z);
    let (uxvy, uyvx) = (u.x * v.y, u.y * v.x);
    let m = DVec3::new(uyvz - uzvy, uzvx - uxvz, uxvy - uyvx);
    let mabs = DVec3::new(
        uyvz.abs() + uzvy.abs(),
        uzvx.abs() + uxvz.abs(),
        uxvy.abs() + uyvx.abs(),
    );
    ds.map(|d| {
        let d64 = d.as_dvec3();
        let w = d64 - a64;
        let det = w.dot(m);
        let permanent = w.abs().dot(mabs);
        // Differences of f32 values, and products of three of them, never round a non-zero to
        // zero in f64. A zero permanent thus means every term of the determinant's expansion
        // in the differences has a zero factor: the exact determinant is zero.
        if permanent == 0.0 {
            return 0;
        }
        let bound = O3D_ERRBOUND * permanent;
        if det > bound {
            1
        } else if det < -bound {
            -1
        } else {
            orient3d_exact(a64, b64, c64, d64)
        }
    })
}

/// Exact orient3d: `det[b-a; c-a; d-a] = |b c d| - |a c d| + |a b d| - |a b c|` (rows), each
/// 3×3 determinant expanded into six signed triple products summed as an exact expansion.
fn orient3d_exact(a: DVec3, b: DVec3, c: DVec3, d: DVec3) -> i32 {
    let mut sum = Expansion::default();
    for (r0, r1, r2, sign) in [
        (b, c, d, 1.0),
        (a, c, d, -1.0),
        (a, b, d, 1.0),
        (a, b, c, -1.0),
    ] {
        sum.add_product3(sign * r0.x, r1.y, r2.z);
        sum.add_product3(-sign * r0.x, r1.z, r2.y);
        sum.add_product3(-sign * r0.y, r1.x, r2.z);
        sum.add_product3(sign * r0.y, r1.z, r2.x);
        sum.add_product3(sign * r0.z, r1.x, r2.y);
        sum.add_product3(-sign * r0.z, r1.y, r2.x);
    }
    sum.sign()
}

/// Exact sign of the 2D orientation of `a, b, c` projected along axis `k` onto the coordinates
/// `((k + 1) % 3, (k + 2) % 3)`: the sign of component `k` of `(b - a) × (c - a)`.
fn orient2d(a: Vec3, b: Vec3, c: Vec3, k: usize) -> i32 {
    let (i, j) = ((k + 1) % 3, (k + 2) % 3);
    let (ax, ay) = (f64::from(a[i]), f64::from(a[j]));
    let (bx, by) = (f64::from(b[i]), f64::from(b[j]));
    let (cx, cy) = (f64::from(c[i]), f64::from(c[j]));
    let left = (ax - cx) * (by - cy);
    let right = (ay - cy) * (bx - cx);
    let det = left - right;
    let detsum = left.abs() + right.abs();
    if detsum == 0.0 {
        return 0;
    }
    let bound = O2D_ERRBOUND * detsum;
    if det > bound {
        1
    } else if det < -bound {
        -1
    } else {
        // (b - a) × (c - a) = a × b + b × c + c × a; each f32 product is exact in f64.
        let mut sum = Expansion::default();
        for p in [ax * by, -ay * bx, bx * cy, -by * cx, cx * ay, -cy * ax] {
            sum.grow(p);
        }
        sum.sign()
    }
}

/// A non-overlapping expansion (Shewchuk 1997): components in increasing magnitude whose exact
/// sum is the value; zero components are dropped.
struct Expansion {
    parts: [f64; 64],
    len: usize,
}

impl Default for Expansion {
    fn default() -> Self {
        Self {
            parts: [0.0; 64],
            len: 0,
        }
    }
}

impl Expansion {
    /// Shewchuk's `Grow-Expansion` with zero elimination: adds `b` exactly.
    fn grow(&mut self, b: f64) {
        let mut q = b;
        let mut out = 0;
        for i in 0..self.len {
            let (s, err) = two_sum(q, self.parts[i]);
            if err != 0.0 {
                self.parts[out] = err;
                out += 1;
            }
            q = s;
        }
        if q != 0.0 {
            // At most 48 triple products of two components each are ever added: 64 is enough.
            self.parts[out] = q;
            out += 1;
        }
        self.len = out;
    }

    /// Adds `x * y * z` exactly, where `x * y` is exact in `f64` (both are `f32` values).
    fn add_product3(&mut self, x: f64, y: f64, z: f64) {
        let (hi, lo) = two_product(x * y, z);
        self.grow(lo);
        self.grow(hi);
    }

    /// Sign of the exact sum: the sign of the largest component.
    fn sign(&self) -> i32 {
        match self.len {
            0 => 0,
            n if self.parts[n - 1] > 0.0 => 1,
            _ => -1,
        }
    }
}

/// Knuth's `Two-Sum`: `a + b = s + err` exactly.
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bv = s - a;
    let av = s - bv;
    (s, (a - av) + (b - bv))
}

/// Dekker's split of `a` into two 26-bit halves with `a = hi + lo`.
fn split(a: f64) -> (f64, f64) {
    let c = 134_217_729.0 * a; // 2^27 + 1
    let hi = c - (c - a);
    (hi, a - hi)
}

/// Dekker's `Two-Product`: `a * b = p + err` exactly.
fn two_product(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    let (ahi, alo) = split(a);
    let (bhi, blo) = split(b);
    let err = alo * blo - (((p - ahi * bhi) - alo * bhi) - ahi * blo);
    (p, err)
}

// ---------------------------------------------------------------------------------------------
// Exact segment and triangle tests (closed sets)
// ---------------------------------------------------------------------------------------------

/// Exact: do the closed triangles `p` and `q` have a common point?
fn triangles_intersect(p: [Vec3; 3], q: [Vec3; 3]) -> bool {
    let sq = orient3d_many(p[0], p[1], p[2], q);
    if same_strict_side(sq) {
        return false;
    }
    let sp = orient3d_many(q[0], q[1], q[2], p);
    if same_strict_side(sp) {
        return false;
    }
    let coplanar_axis = if sp == [0; 3] {
        triangle_axis(p[0], p[1], p[2])
    } else {
        None
    };
    if let Some((k, op)) = coplanar_axis {
        // When q is not degenerate, p lies in q's plane, `k` is injective on that plane and
        // q's projection is not degenerate either.
        let oq = orient2d(q[0], q[1], q[2], k);
        if oq != 0 {
            return coplanar_triangles_intersect(p, q, k, op, oq);
        }
    }
    (0..3).any(|i| segment_meets_triangle(p[i], p[(i + 1) % 3], q, sp[i], sp[(i + 1) % 3]))
        || (0..3).any(|i| segment_meets_triangle(q[i], q[(i + 1) % 3], p, sq[i], sq[(i + 1) % 3]))
}

/// Exact test for two coplanar, non-degenerate closed triangles in projection `k` (injective on
/// their plane), `op` and `oq` their projected orientations. The same reduction as the module
/// doc (a vertex inside the other triangle, or two edges meeting), with each of the 18
/// vertex-against-edge-line orientations evaluated once.
fn coplanar_triangles_intersect(p: [Vec3; 3], q: [Vec3; 3], k: usize, op: i32, oq: i32) -> bool {
    // vs_p[i][j]: side of q_j against p's edge i (>= 0 is p's closed side); likewise vs_q.
    // An edge line with the whole other triangle strictly outside separates them: checked
    // row by row, as most coplanar candidates (neighbours in a flat sheet) end there.
    let mut vs_p = [[0; 3]; 3];
    let mut vs_q = [[0; 3]; 3];
    for i in 0..3 {
        vs_p[i] = q.map(|x| op * orient2d(p[i], p[(i + 1) % 3], x, k));
        if vs_p[i].iter().all(|&s| s < 0) {
            return false;
        }
    }
    for i in 0..3 {
        vs_q[i] = p.map(|x| oq * orient2d(q[i], q[(i + 1) % 3], x, k));
        if vs_q[i].iter().all(|&s| s < 0) {
            return false;
        }
    }
    let inside = |vs: &[[i32; 3]; 3], j: usize| vs.iter().all(|row| row[j] >= 0);
    if (0..3).any(|j| inside(&vs_p, j) || inside(&vs_q, j)) {
        return true;
    }
    // Cormen et al. `SEGMENTS-INTERSECT` on every edge pair, from the tables.
    (0..3).any(|i| {
        let (p0, p1) = (p[i], p[(i + 1) % 3]);
        (0..3).any(|l| {
            let (q0, q1) = (q[l], q[(l + 1) % 3]);
            let (d1, d2) = (vs_q[l][i], vs_q[l][(i + 1) % 3]);
            let (d3, d4) = (vs_p[i][l], vs_p[i][(l + 1) % 3]);
            (d1 * d2 < 0 && d3 * d4 < 0)
                || (d1 == 0 && in_box_2d(p0, q0, q1, k))
                || (d2 == 0 && in_box_2d(p1, q0, q1, k))
                || (d3 == 0 && in_box_2d(q0, p0, p1, k))
                || (d4 == 0 && in_box_2d(q1, p0, p1, k))
        })
    })
}

fn same_strict_side(s: [i32; 3]) -> bool {
    s.iter().all(|&x| x > 0) || s.iter().all(|&x| x < 0)
}

/// Exact: does closed segment `[p, q]` meet closed triangle `t`? `sp`, `sq` are
/// `orient3d(t, p)`, `orient3d(t, q)`.
fn segment_meets_triangle(p: Vec3, q: Vec3, t: [Vec3; 3], sp: i32, sq: i32) -> bool {
    let [a, b, c] = t;
    if sp * sq > 0 {
        return false;
    }
    if sp != 0 || sq != 0 {
        // The triangle is not degenerate (else both would be 0) and line pq crosses its plane
        // at one point of the segment: it is inside iff the line passes on the same side of all
        // three edge lines (zeros allowed: on the boundary).
        let s = [
            orient3d(p, q, a, b),
            orient3d(p, q, b, c),
            orient3d(p, q, c, a),
        ];
        return !(s.iter().any(|&x| x > 0) && s.iter().any(|&x| x < 0));
    }
    match triangle_axis(a, b, c) {
        // Segment in the triangle's plane: compare in a projection that is injective on it.
        Some((k, s)) => {
            point_in_triangle_2d(p, t, k, s)
                || (0..3).any(|i| segments_meet_2d(p, q, t[i], t[(i + 1) % 3], k))
        }
        // Degenerate triangle: the union of its edges.
        None => (0..3).any(|i| segments_meet_3d(p, q, t[i], t[(i + 1) % 3])),
    }
}

/// An axis `k` along which the projection of triangle `abc` is non-degenerate, with the
/// projected orientation sign; `None` when `a, b, c` are collinear. Tries the dominant normal
/// component first so the filtered predicate usually decides.
fn triangle_axis(a: Vec3, b: Vec3, c: Vec3) -> Option<(usize, i32)> {
    let n = (b.as_dvec3() - a.as_dvec3())
        .cross(c.as_dvec3() - a.as_dvec3())
        .abs();
    let first = if n.x >= n.y && n.x >= n.z {
        0
    } else if n.y >= n.z {
        1
    } else {
        2
    };
    [first, (first + 1) % 3, (first + 2) % 3]
        .into_iter()
        .find_map(|k| {
            let s = orient2d(a, b, c, k);
            (s != 0).then_some((k, s))
        })
}

fn collinear(a: Vec3, b: Vec3, c: Vec3) -> bool {
    (0..3).all(|k| orient2d(a, b, c, k) == 0)
}

/// Exact 2D point-in-closed-triangle in projection `k`; `s` is the triangle's projected sign.
fn point_in_triangle_2d(x: Vec3, [a, b, c]: [Vec3; 3], k: usize, s: i32) -> bool {
    s * orient2d(a, b, x, k) >= 0 && s * orient2d(b, c, x, k) >= 0 && s * orient2d(c, a, x, k) >= 0
}

/// Exact closed segment–segment test in projection `k` (Cormen et al., `SEGMENTS-INTERSECT`),
/// correct for collinear and zero-length segments.
fn segments_meet_2d(p: Vec3, q: Vec3, r: Vec3, s: Vec3, k: usize) -> bool {
    let d1 = orient2d(r, s, p, k);
    let d2 = orient2d(r, s, q, k);
    let d3 = orient2d(p, q, r, k);
    let d4 = orient2d(p, q, s, k);
    if d1 * d2 < 0 && d3 * d4 < 0 {
        return true;
    }
    (d1 == 0 && in_box_2d(p, r, s, k))
        || (d2 == 0 && in_box_2d(q, r, s, k))
        || (d3 == 0 && in_box_2d(r, p, q, k))
        || (d4 == 0 && in_box_2d(s, p, q, k))
}

fn in_box_2d(x: Vec3, r: Vec3, s: Vec3, k: usize) -> bool {
    [(k + 1) % 3, (k + 2) % 3]
        .into_iter()
        .all(|i| r[i].min(s[i]) <= x[i] && x[i] <= r[i].max(s[i]))
}

/// Exact closed segment–segment test in 3D.
fn segments_meet_3d(p: Vec3, q: Vec3, r: Vec3, s: Vec3) -> bool {
    orient3d(p, q, r, s) == 0 && segments_meet_2d(p, q, r, s, coplanar_axis([p, q, r, s]))
}

/// For four coplanar points, an axis whose projection is injective on a plane (or line) holding
/// all of them.
fn coplanar_axis(pts: [Vec3; 4]) -> usize {
    for (i, j, l) in [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)] {
        if let Some((k, _)) = triangle_axis(pts[i], pts[j], pts[l]) {
            return k;
        }
    }
    // All on one line (or one point): keep two coordinates in which the points differ.
    (0..3)
        .find(|&k| {
            let (i, j) = ((k + 1) % 3, (k + 2) % 3);
            pts.iter().any(|p| p[i] != pts[0][i] || p[j] != pts[0][j])
        })
        .unwrap_or(0)
}

/// Exact: do triangles `(v, a1, b1)` and `(v, a2, b2)` share a point other than `v`?
fn intersect_beyond_shared_vertex(v: Vec3, a1: Vec3, b1: Vec3, a2: Vec3, b2: Vec3) -> bool {
    let t1 = [v, a1, b1];
    let t2 = [v, a2, b2];
    // Far vertices of each triangle against the other's plane.
    let s1 = orient3d_many(v, a2, b2, [a1, b1]);
    let s2 = orient3d_many(v, a1, b1, [a2, b2]);
    // Every point of a triangle but `v` has weight on a far vertex: strictly on one side.
    if s1[0] * s1[1] > 0 || s2[0] * s2[1] > 0 {
        return false;
    }
    // Edges incident to `v` that lie in the other triangle's plane, against its cone.
    let cones = |s: [i32; 2], t: [Vec3; 3], far: [Vec3; 2]| {
        s.contains(&0) && {
            let axis = triangle_axis(t[0], t[1], t[2]);
            (0..2).any(|i| s[i] == 0 && in_tangent_cone(t, axis, far[i]))
        }
    };
    if cones(s1, t2, [a1, b1]) || cones(s2, t1, [a2, b2]) {
        return true;
    }
    // `T1 ∩ T2 ≠ {v}` iff the tangent cones at `v` share a non-zero vector. With all four far
    // orientations zero, the cones lie in one plane, or one triangle is degenerate and its
    // cone is at most two opposite rays. Either way the cones share a vector iff a boundary
    // ray of one lies in the other (two planar wedges narrower than π form arcs whose
    // intersection is an arc ending at an end of one of them), which the cone tests checked.
    if s1 == [0, 0] && s2 == [0, 0] {
        return false;
    }
    opposite_edge_meets(a1, b1, v, t2, s1) || opposite_edge_meets(a2, b2, v, t1, s2)
}

/// Edge `[a, b]` opposite the shared vertex `v` against triangle `t`, with `s` the orientations
/// of `a` and `b` against `t`. When the edge passes through `v` it is the union of the two
/// edges incident to `v`, already tested by the cones.
fn opposite_edge_meets(a: Vec3, b: Vec3, v: Vec3, t: [Vec3; 3], s: [i32; 2]) -> bool {
    let through_v =
        (0..3).all(|i| a[i].min(b[i]) <= v[i] && v[i] <= a[i].max(b[i])) && collinear(a, b, v);
    !through_v && segment_meets_triangle(a, b, t, s[0], s[1])
}

/// Exact: does edge `[v, x]` meet triangle `t = (v, a, b)` at a point other than `v`, i.e. is
/// `x - v` a non-zero vector of `cone(a - v, b - v)`? `axis` is `triangle_axis(t)`. The caller
/// has checked that `x` lies in the plane of `t` (`orient3d(v, a, b, x) == 0`).
fn in_tangent_cone([v, a, b]: [Vec3; 3], axis: Option<(usize, i32)>, x: Vec3) -> bool {
    if x == v {
        return false;
    }
    match axis {
        Some((k, s)) => s * orient2d(v, a, x, k) >= 0 && s * orient2d(v, x, b, k) >= 0,
        // Collinear v, a, b: the cone is the union of the rays towards a and towards b.
        None => on_ray(v, a, x) || on_ray(v, b, x),
    }
}

/// Exact: is `x ≠ v` on the open ray from `v` through `a ≠ v`?
fn on_ray(v: Vec3, a: Vec3, x: Vec3) -> bool {
    if a == v || x == v || !collinear(v, a, x) {
        return false;
    }
    let m = (0..3)
        .find(|&m| a[m] != v[m])
        .expect("a != v, so some coordinate differs");
    (a[m] > v[m]) == (x[m] > v[m]) && x[m] != v[m]
}

// ---------------------------------------------------------------------------------------------
// Solids
// ---------------------------------------------------------------------------------------------

fn solid_hits(
    cloth: &TriSoup,
    boxes: &[Aabb],
    solids: &[Solid],
    tolerance: f32,
) -> Vec<(usize, u32, f32)> {
    let mut hits = Vec::new();
    for (s, solid) in solids.iter().enumerate() {
        let bounds = solid_bounds(solid);
        for (t, tb) in boxes.iter().enumerate() {
            if bounds.is_some_and(|b| !b.overlaps(tb)) {
                continue;
            }
            let t = index_u32(t);
            let depth = penetration_depth(solid, tri_of(cloth, t));
            if depth > f64::from(tolerance) {
                hits.push((s, t, depth as f32));
            }
        }
    }
    hits
}

/// World AABB of a solid; `None` for the unbounded plane.
fn solid_bounds(solid: &Solid) -> Option<Aabb> {
    let (centre, half) = match *solid {
        Solid::Plane { .. } => return None,
        Solid::Sphere { centre, radius } => (centre, Vec3::splat(radius)),
        Solid::Capsule { a, b, radius } => ((a + b) * 0.5, (b - a).abs() * 0.5 + radius),
        Solid::Box {
            centre,
            half_extents,
            rotation,
        } => {
            let m = glam::Mat3::from_quat(rotation.normalize());
            let abs = glam::Mat3::from_cols(m.x_axis.abs(), m.y_axis.abs(), m.z_axis.abs());
            (centre, abs * half_extents)
        }
    };
    // Pad by a relative margin so that f32 rounding never rejects a touching triangle.
    let pad = half * 1e-5 + 1e-6 * (centre.abs() + half).max_element();
    Some(Aabb {
        min: centre - half - pad,
        max: centre + half + pad,
    })
}

/// Depth (m) of the deepest point of triangle `tri` inside `solid`: the largest distance from a
/// point of the triangle to the solid's surface, measured inside; zero or negative when the
/// triangle stays outside.
fn penetration_depth(solid: &Solid, tri: [Vec3; 3]) -> f64 {
    let [p0, p1, p2] = tri.map(Vec3::as_dvec3);
    match *solid {
        // Linear depth: the lowest vertex is the deepest point.
        Solid::Plane { point, normal } => {
            let n = normal.as_dvec3().normalize();
            let o = point.as_dvec3();
            [p0, p1, p2]
                .iter()
                .map(|&p| -(p - o).dot(n))
                .fold(f64::MIN, f64::max)
        }
        Solid::Sphere { centre, radius } => {
            f64::from(radius) - distance_point_triangle(centre.as_dvec3(), p0, p1, p2)
        }
        Solid::Capsule { a, b, radius } => {
            let d = if segment_meets_triangle(
                a,
                b,
                tri,
                orient3d(tri[0], tri[1], tri[2], a),
                orient3d(tri[0], tri[1], tri[2], b),
            ) {
                0.0
            } else {
                distance_segment_triangle(a.as_dvec3(), b.as_dvec3(), p0, p1, p2)
            };
            f64::from(radius) - d
        }
        Solid::Box {
            centre,
            half_extents,
            rotation,
        } => {
            let r = quat_f64(rotation).inverse();
            let c = centre.as_dvec3();
            box_depth(half_extents.as_dvec3(), [p0, p1, p2].map(|p| r * (p - c)))
        }
    }
}

fn quat_f64(q: Quat) -> DQuat {
    DQuat::from_xyzw(
        f64::from(q.x),
        f64::from(q.y),
        f64::from(q.z),
        f64::from(q.w),
    )
    .normalize()
}

/// Deepest point of a triangle (box-local coordinates) inside the box `|y_i| <= h_i`.
///
/// The depth of a point is `f(y) = min_i (h_i - |y_i|)`, the distance to the nearest face
/// (negative outside). Over the triangle `y(λ) = y0 + λ1 e1 + λ2 e2`, `λ ≥ 0`, `λ1 + λ2 ≤ 1`,
/// maximising `t` subject to `t <= h_i ∓ y_i(λ)` is a linear programme in `(λ1, λ2, t)`; its
/// optimum is a vertex where three of the nine constraints are active. Every non-singular
/// triple is solved and the true `f` evaluated at each feasible solution.
fn box_depth(h: DVec3, [y0, y1, y2]: [DVec3; 3]) -> f64 {
    let (e1, e2) = (y1 - y0, y2 - y0);
    let depth_at = |l1: f64, l2: f64| {
        let y = y0 + e1 * l1 + e2 * l2;
        (h - y.abs()).min_element()
    };
    // Rows (coefficients of λ1, λ2, t) and right-hand sides of the active constraints.
    let mut rows = vec![
        (DVec3::X, 0.0),
        (DVec3::Y, 0.0),
        (DVec3::new(1.0, 1.0, 0.0), 1.0),
    ];
    for i in 0..3 {
        for sigma in [1.0, -1.0] {
            rows.push((
                DVec3::new(sigma * e1[i], sigma * e2[i], 1.0),
                h[i] - sigma * y0[i],
            ));
        }
    }
    let scale = 1.0 + e1.length() + e2.length();
    let mut best = depth_at(0.0, 0.0)
        .max(depth_at(1.0, 0.0))
        .max(depth_at(0.0, 1.0));
    for i in 0..rows.len() {
        for j in i + 1..rows.len() {
            for k in j + 1..rows.len() {
                let m = DMat3::from_cols(rows[i].0, rows[j].0, rows[k].0).transpose();
                if m.determinant().abs() <= 1e-12 * scale * scale {
                    continue;
                }
                let sol = m.inverse() * DVec3::new(rows[i].1, rows[j].1, rows[k].1);
                let slack = 1e-9;
                if sol.x >= -slack && sol.y >= -slack && sol.x + sol.y <= 1.0 + slack {
                    let l1 = sol.x.clamp(0.0, 1.0);
                    let l2 = sol.y.clamp(0.0, 1.0 - l1);
                    best = best.max(depth_at(l1, l2));
                }
            }
        }
    }
    best
}

pub fn distance_point_segment(x: DVec3, a: DVec3, b: DVec3) -> f64 {
    let ab = b - a;
    let len2 = ab.length_squared();
    let s = if len2 > 0.0 {
        ((x - a).dot(ab) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    (x - (a + ab * s)).length()
}

/// Distance from `x` to the closed triangle `abc`: the plane distance when the projection falls
/// inside, otherwise the nearest edge (this also covers degenerate triangles).
pub fn distance_point_triangle(x: DVec3, a: DVec3, b: DVec3, c: DVec3) -> f64 {
    let n = (b - a).cross(c - a);
    let nn = n.length_squared();
    if nn > 0.0
        && n.dot((b - a).cross(x - a)) >= 0.0
        && n.dot((c - b).cross(x - b)) >= 0.0
        && n.dot((a - c).cross(x - c)) >= 0.0
    {
        return (x - a).dot(n).abs() / nn.sqrt();
    }
    distance_point_segment(x, a, b)
        .min(distance_point_segment(x, b, c))
        .min(distance_point_segment(x, c, a))
}

/// Distance between closed segments `[p1, q1]` and `[p2, q2]` (Ericson 2005, "Real-Time
/// Collision Detection" §5.1.9, clamped parameters; handles zero-length segments).
pub fn distance_segment_segment(p1: DVec3, q1: DVec3, p2: DVec3, q2: DVec3) -> f64 {
    let (d1, d2, r) = (q1 - p1, q2 - p2, p1 - p2);
    let (a, e, f) = (d1.length_squared(), d2.length_squared(), d2.dot(r));
    let (s, t) = if a == 0.0 && e == 0.0 {
        (0.0, 0.0)
    } else if a == 0.0 {
        (0.0, (f / e).clamp(0.0, 1.0))
    } else {
        let c = d1.dot(r);
        if e == 0.0 {
            ((-c / a).clamp(0.0, 1.0), 0.0)
        } else {
            let b = d1.dot(d2);
            let denom = a * e - b * b;
            let mut s = if denom > 0.0 {
                ((b * f - c * e) / denom).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let mut t = (b * s + f) / e;
            if t < 0.0 {
                t = 0.0;
                s = (-c / a).clamp(0.0, 1.0);
            } else if t > 1.0 {
                t = 1.0;
                s = ((b - c) / a).clamp(0.0, 1.0);
            }
            (s, t)
        }
    };
    ((p1 + d1 * s) - (p2 + d2 * t)).length()
}

/// Distance between a segment and a triangle that do not intersect: the closest pair involves
/// a segment endpoint or a triangle edge.
fn distance_segment_triangle(p: DVec3, q: DVec3, a: DVec3, b: DVec3, c: DVec3) -> f64 {
    distance_point_triangle(p, a, b, c)
        .min(distance_point_triangle(q, a, b, c))
        .min(distance_segment_segment(p, q, a, b))
        .min(distance_segment_segment(p, q, b, c))
        .min(distance_segment_segment(p, q, c, a))
}

// ---------------------------------------------------------------------------------------------
// Broad phase
// ---------------------------------------------------------------------------------------------

/// Closed axis-aligned box with exact `f32` corners.
#[derive(Clone, Copy, Debug)]
struct Aabb {
    min: Vec3,
    max: Vec3,
}

impl Aabb {
    fn of(p: &[Vec3; 3]) -> Self {
        Self {
            min: p[0].min(p[1]).min(p[2]),
            max: p[0].max(p[1]).max(p[2]),
        }
    }

    fn overlaps(&self, o: &Aabb) -> bool {
        self.min.cmple(o.max).all() && o.min.cmple(self.max).all()
    }
}

fn triangle_boxes(soup: &TriSoup) -> Vec<Aabb> {
    soup.triangles
        .iter()
        .map(|&t| Aabb::of(&corners(soup, t)))
        .collect()
}

/// Uniform grid of triangle indices in CSR form (`starts` into `items`), cells in x-fastest
/// order. Cell coordinates are monotone in position and clamped to the grid, so a point inside
/// a box always falls in the box's cell range.
struct Grid {
    bounds: Aabb,
    origin: DVec3,
    inv_cell: f64,
    dims: [usize; 3],
    starts: Vec<usize>,
    items: Vec<u32>,
}

impl Grid {
    fn build(boxes: &[Aabb]) -> Self {
        let bounds = boxes.iter().fold(boxes[0], |acc, b| Aabb {
            min: acc.min.min(b.min),
            max: acc.max.max(b.max),
        });
        let extent = (bounds.max - bounds.min).as_dvec3().max_element();
        let mean = boxes
            .iter()
            .map(|b| f64::from((b.max - b.min).max_element()))
            .sum::<f64>()
            / boxes.len() as f64;
        let mut cell = if extent > 0.0 {
            mean.max(extent * 1e-4)
        } else {
            1.0
        };
        let mut grid = Self {
            bounds,
            origin: bounds.min.as_dvec3(),
            inv_cell: 0.0,
            dims: [1; 3],
            starts: Vec::new(),
            items: Vec::new(),
        };
        // Keep the cell count proportional to the triangle count.
        let max_cells = 4 * boxes.len() + 64;
        loop {
            grid.inv_cell = 1.0 / cell;
            // The same expression as `coords`, unclamped: the top corner's cell is the last one.
            let top: [f64; 3] = std::array::from_fn(|k| {
                ((f64::from(bounds.max[k]) - grid.origin[k]) * grid.inv_cell).floor()
            });
            if top.iter().map(|t| t + 1.0).product::<f64>() <= max_cells as f64 {
                grid.dims = top.map(|t| t as usize + 1);
                break;
            }
            cell *= 1.5;
        }

        let mut counts = vec![0usize; grid.cell_count() + 1];
        for b in boxes {
            let (lo, hi) = grid.cell_range(b);
            grid.for_each_cell(lo, hi, |c| counts[c + 1] += 1);
        }
        for c in 1..counts.len() {
            counts[c] += counts[c - 1];
        }
        let mut fill = counts.clone();
        let mut items = vec![0u32; counts[counts.len() - 1]];
        for (t, b) in boxes.iter().enumerate() {
            let (lo, hi) = grid.cell_range(b);
            grid.for_each_cell(lo, hi, |c| {
                items[fill[c]] = index_u32(t);
                fill[c] += 1;
            });
        }
        grid.starts = counts;
        grid.items = items;
        grid
    }

    /// Cell coordinates of `p`, clamped to the grid (clamping keeps them monotone).
    fn coords(&self, p: Vec3) -> [usize; 3] {
        std::array::from_fn(|k| {
            let c = (f64::from(p[k]) - self.origin[k]) * self.inv_cell;
            // `as` truncates (the floor, once clamped at 0) and saturates; `min` keeps the
            // coordinate inside the grid. Both clamps are monotone.
            (c.max(0.0) as usize).min(self.dims[k] - 1)
        })
    }

    fn index(&self, c: [usize; 3]) -> usize {
        c[0] + self.dims[0] * (c[1] + self.dims[1] * c[2])
    }

    fn cell_of(&self, p: Vec3) -> usize {
        self.index(self.coords(p))
    }

    fn cell_range(&self, b: &Aabb) -> ([usize; 3], [usize; 3]) {
        (self.coords(b.min), self.coords(b.max))
    }

    fn cell_count(&self) -> usize {
        self.dims.iter().product()
    }

    fn cell(&self, c: usize) -> &[u32] {
        &self.items[self.starts[c]..self.starts[c + 1]]
    }

    fn for_each_cell(&self, lo: [usize; 3], hi: [usize; 3], mut f: impl FnMut(usize)) {
        for z in lo[2]..=hi[2] {
            for y in lo[1]..=hi[1] {
                for x in lo[0]..=hi[0] {
                    f(self.index([x, y, z]));
                }
            }
        }
    }
}

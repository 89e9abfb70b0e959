//! Which self-contact rows an isometric cloth's projection carries: every node within a band
//! of one of the cloth's own triangles outside its neighbourhood gets a
//! [`SelfContactRow`] (Wang 2012 eq. 3.26 as an inequality between the node and the
//! triangle; `docs/methods/isometric-contact.md` §6).
//!
//! The candidates come from a uniform grid of cells: every triangle is listed in the cells its
//! bounding box (over both reference positions, grown by the band) overlaps, and a node looks
//! at the cells of its two reference positions. The lists are sorted, so the rows come out in
//! the same order on any thread count; their buffers grow only when a scene needs more than
//! ever before.
#![deny(unsafe_code)]

use glam::DVec3;

use super::projection::{SelfContactRow, closest_on_triangle};

/// Self-contact rows of one node, at most: its nearest features (**choice**). A node between
/// two layers of a fold needs one row for each, and a third covers the closest point moving
/// onto another triangle of a layer; more rows on the same surface are near copies of these
/// that make `K` larger and its factor denser (measured on `rotating-ball-isometric`: without
/// a cap, the first frame with folds had not finished after six minutes, and the process held
/// 1.1 GB).
pub const MAX_ROWS_PER_NODE: usize = 3;

/// The grid and the rows of the last search, for one cloth.
#[derive(Clone, Debug, Default)]
pub struct SelfContactFinder {
    triangles: Vec<[u32; 3]>,
    /// Per node, the nodes that share a triangle with it (CSR).
    ring_offsets: Vec<u32>,
    ring: Vec<u32>,
    /// `(cell, triangle)` pairs, sorted.
    cells: Vec<([i64; 3], u32)>,
    /// Per triangle: the node that last looked at it (deduplicates the two cells of a node).
    seen: Vec<u32>,
    /// The current node's candidates: distance, closest feature `[kind, id, id]`, row.
    candidates: Vec<(f64, [u32; 3], SelfContactRow)>,
    rows: Vec<SelfContactRow>,
}

impl SelfContactFinder {
    /// For a cloth with these triangles.
    #[must_use]
    pub fn new(triangles: &[[u32; 3]]) -> Self {
        let nodes = triangles
            .iter()
            .flatten()
            .map(|&v| v as usize + 1)
            .max()
            .unwrap_or(0);
        let mut pairs: Vec<(u32, u32)> = triangles
            .iter()
            .flat_map(|&[a, b, c]| [(a, b), (b, a), (a, c), (c, a), (b, c), (c, b)])
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        let mut ring_offsets = vec![0u32; nodes + 1];
        for &(a, _) in &pairs {
            ring_offsets[a as usize + 1] += 1;
        }
        for i in 0..nodes {
            ring_offsets[i + 1] += ring_offsets[i];
        }
        SelfContactFinder {
            triangles: triangles.to_vec(),
            ring_offsets,
            ring: pairs.iter().map(|&(_, b)| b).collect(),
            seen: vec![u32::MAX; triangles.len()],
            ..SelfContactFinder::default()
        }
    }

    /// Whether triangle `tri` contains `p` or a node that shares a triangle with `p`.
    fn touches(&self, p: usize, tri: [u32; 3]) -> bool {
        let ring = self
            .ring_offsets
            .get(p..p + 2)
            .map_or(&[][..], |o| &self.ring[o[0] as usize..o[1] as usize]);
        tri.iter().any(|&v| v as usize == p || ring.contains(&v))
    }

    /// The rows of the last [`SelfContactFinder::find`].
    #[must_use]
    pub fn rows(&self) -> &[SelfContactRow] {
        &self.rows
    }

    /// The rows for the positions `x_ref` (the projection's start iterate) and `x_n` (the
    /// start of the step, which is free of intersections): node `p` and a triangle `t` get a
    /// row when `p` lies within `distance + band` of `t` at either, unless `t` contains `p` or
    /// one of its neighbours (on a flat sheet those lie less than an edge length away: a
    /// band that covers a step's motion would give every node rows on its own
    /// neighbourhood). The side a row keeps its
    /// node on is the side it was on at `x_n`, when it was over the triangle there (its offset
    /// at least 30° out of the triangle's plane; beside it the row has no side). A node whose closest point lies on an edge or
    /// corner shared by several of its candidate triangles gets one row for that feature, and
    /// a node gets rows for its [`MAX_ROWS_PER_NODE`] nearest features only.
    /// Rows whose four nodes are all pinned (`inv_mass = 0`) are left out. The compliance of a
    /// row is `compliance` times the largest inverse mass of its nodes.
    pub fn find(
        &mut self,
        x_ref: &[DVec3],
        x_n: &[DVec3],
        inv_mass: &[f64],
        distance: f64,
        band: f64,
        compliance: f64,
    ) -> &[SelfContactRow] {
        self.rows.clear();
        let reach = distance + band;
        if self.triangles.is_empty() || reach <= 0.0 {
            return &self.rows;
        }
        let cell = 2.0 * reach;
        let key = |p: DVec3| {
            let c = (p / cell).floor();
            [c.x as i64, c.y as i64, c.z as i64]
        };
        self.cells.clear();
        for (t, tri) in self.triangles.iter().enumerate() {
            let mut lo = DVec3::splat(f64::INFINITY);
            let mut hi = DVec3::splat(f64::NEG_INFINITY);
            for &v in tri {
                for p in [x_ref[v as usize], x_n[v as usize]] {
                    lo = lo.min(p);
                    hi = hi.max(p);
                }
            }
            if !(lo.is_finite() && hi.is_finite()) {
                continue;
            }
            let (a, b) = (key(lo - DVec3::splat(reach)), key(hi + DVec3::splat(reach)));
            // A triangle spread over very many cells (a blown-up scene) is left to the
            // collision stage.
            let span = (0..3).map(|k| (b[k] - a[k] + 1) as u64).product::<u64>();
            if span > 4096 {
                continue;
            }
            for i in a[0]..=b[0] {
                for j in a[1]..=b[1] {
                    for k in a[2]..=b[2] {
                        self.cells.push(([i, j, k], t as u32));
                    }
                }
            }
        }
        self.cells.sort_unstable();
        self.seen.fill(u32::MAX);
        for p in 0..x_ref.len() {
            self.candidates.clear();
            let (kr, kn) = (key(x_ref[p]), key(x_n[p]));
            let cells = if kr == kn { &[kr][..] } else { &[kr, kn][..] };
            for &k in cells {
                let lo = self.cells.partition_point(|(c, _)| *c < k);
                let hi = self.cells.partition_point(|(c, _)| *c <= k);
                for s in lo..hi {
                    let t = self.cells[s].1 as usize;
                    if self.seen[t] == p as u32 {
                        continue;
                    }
                    self.seen[t] = p as u32;
                    let tri = self.triangles[t];
                    if self.touches(p, tri) {
                        continue;
                    }
                    let stencil = [p as u32, tri[0], tri[1], tri[2]];
                    let w_max = stencil
                        .iter()
                        .map(|&v| inv_mass[v as usize])
                        .fold(0.0f64, f64::max);
                    if w_max <= 0.0 {
                        continue;
                    }
                    let gap = |x: &[DVec3]| {
                        let [a, b, c] = tri.map(|v| x[v as usize]);
                        let (w, _) = closest_on_triangle(x[p], a, b, c);
                        (x[p] - (w[0] * a + w[1] * b + w[2] * c)).length()
                    };
                    let gap = gap(x_ref).min(gap(x_n));
                    if gap >= reach {
                        continue;
                    }
                    // The side at x_n, and the feature the closest point lies on.
                    let [a, b, c] = tri.map(|v| x_n[v as usize]);
                    let (w, _) = closest_on_triangle(x_n[p], a, b, c);
                    let q = w[0] * a + w[1] * b + w[2] * c;
                    let face = (b - a).cross(c - a).normalize_or_zero();
                    let d = x_n[p] - q;
                    let h = face.dot(d);
                    // A side only for a node over the triangle (its offset at least 30° out of
                    // the triangle's plane): beside it, in a curved sheet, the sign of `h` is
                    // noise.
                    let side = if 2.0 * h.abs() >= d.length() && h != 0.0 {
                        h.signum()
                    } else {
                        0.0
                    };
                    let [ar, br, cr] = tri.map(|v| x_ref[v as usize]);
                    let (wr, _) = closest_on_triangle(x_ref[p], ar, br, cr);
                    let feature = feature_of(tri, wr, t as u32);
                    if self.candidates.iter().any(|c| c.1 == feature) {
                        continue;
                    }
                    let row = SelfContactRow::new(
                        p as u32,
                        tri,
                        side,
                        distance,
                        compliance * w_max,
                        x_ref,
                    );
                    self.candidates.push((gap, feature, row));
                }
            }
            // The nearest features only, nearest first (ties by triangle).
            self.candidates
                .sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            self.rows
                .extend(self.candidates.iter().take(MAX_ROWS_PER_NODE).map(|c| c.2));
        }
        &self.rows
    }
}

/// The two tangential (friction) rows of the self-contact row `row` for the step from `x_n`
/// to the prediction `x_tilde` (Wang 2012 eq. 3.28, soft by eq. 3.30, anchored by Coulomb's
/// law eq. 3.27 in displacement form, as the collider rows' anchor of
/// `docs/methods/isometric-contact.md` §3 but relative to the triangle):
///
/// - The material point of the triangle is the one closest to `p` at `x_n`, weights `β⁰`,
///   fixed for the step; the relative offset is `r(x) = x_p − Σ β⁰_i x_i`.
/// - Sticking keeps `r(xⁿ)`. The prediction slips from it by `δ`, the part of
///   `r(x̃) − r(xⁿ)` tangential to the row's normal at `x̃`.
/// - The normal row pushes the pair apart by at most `push = max(0, −C(x̃))` (the row
///   re-linearised at `x̃`), so friction removes at most `μ · push` of the slip: the anchor is
///   `a = r(xⁿ) + max(0, 1 − μ push / ‖δ‖) δ` (sticking when `μ push ≥ ‖δ‖`).
///
/// `μ` = `friction`; the compliance is `D = beta (w_p + Σ β⁰_i² w_i)`, `beta` times the rows'
/// own entry of `G W Gᵀ` (the collider rows' `D = β w_p` for one node).
#[must_use]
pub fn friction_rows(
    row: &SelfContactRow,
    x_n: &[DVec3],
    x_tilde: &[DVec3],
    inv_mass: &[f64],
    friction: f64,
    beta: f64,
) -> [SelfContactRow; 2] {
    let [p, a, b, c] = [
        row.vertex,
        row.triangle[0],
        row.triangle[1],
        row.triangle[2],
    ];
    let at = |x: &[DVec3]| [p, a, b, c].map(|v| x[v as usize]);
    let [pn, an, bn, cn] = at(x_n);
    let (w, _) = closest_on_triangle(pn, an, bn, cn);
    let offset = |x: &[DVec3]| {
        let [xp, xa, xb, xc] = at(x);
        xp - (w[0] * xa + w[1] * xb + w[2] * xc)
    };
    let (r_n, r_tilde) = (offset(x_n), offset(x_tilde));
    let mut predicted = *row;
    predicted.relinearise(x_tilde);
    let n = predicted.normal;
    let push = (-predicted.value(x_tilde)).max(0.0);
    let rel = r_tilde - r_n;
    let slip = rel - n * n.dot(rel);
    let len = slip.length();
    let keep = if len > 0.0 {
        (1.0 - friction * push / len).max(0.0)
    } else {
        0.0
    };
    let metric = inv_mass[p as usize]
        + w[0] * w[0] * inv_mass[a as usize]
        + w[1] * w[1] * inv_mass[b as usize]
        + w[2] * w[2] * inv_mass[c as usize];
    row.tangents(w, r_n + keep * slip, beta * metric)
}

/// The feature of triangle `t` (nodes `tri`) that the barycentric weights `w` lie on: a
/// corner `[0, v, v]`, an edge `[1, min, max]`, or the face `[2, t, t]`.
fn feature_of(tri: [u32; 3], w: [f64; 3], t: u32) -> [u32; 3] {
    let mut nodes = [0u32; 3];
    let mut count = 0;
    for k in 0..3 {
        if w[k] > 0.0 {
            nodes[count] = tri[k];
            count += 1;
        }
    }
    match count {
        1 => [0, nodes[0], nodes[0]],
        2 => [1, nodes[0].min(nodes[1]), nodes[0].max(nodes[1])],
        _ => [2, t, t],
    }
}

#[cfg(test)]
mod tests {
    use glam::DVec3;

    use super::friction_rows;
    use crate::integrate::projection::test_sets::EdgeLengths;
    use crate::integrate::projection::{
        GaussNewtonProjection, ProjectionSettings, RowFamily, RowRole, SelfContactRow, StrainScale,
    };

    /// A node `p` (node 3) resting `delta` over the centroid of a triangle (nodes 0–2, its edges held by
    /// proximal rows) at the start of the step, predicted to slide 1 cm along `x` over it and
    /// to sink 2 mm into its required distance; every node of unit mass. Projects the
    /// prediction with the normal row and its friction rows (coefficient `mu`) and returns
    /// the start, the prediction and the result.
    fn slide(mu: f64) -> (Vec<DVec3>, Vec<DVec3>, Vec<DVec3>) {
        let delta = 0.005;
        let x_n = vec![
            DVec3::new(-0.3, 0.0, -0.3),
            DVec3::new(0.3, 0.0, -0.3),
            DVec3::new(0.0, 0.0, 0.3),
            DVec3::new(0.0, delta, -0.1),
        ];
        let mut x_tilde = x_n.clone();
        x_tilde[3] += DVec3::new(0.01, -0.002, 0.0);
        let inv_mass = vec![1.0; 4];
        let edges = [[0u32, 1], [1, 2], [2, 0]];
        let set = EdgeLengths::new(&edges, &x_n);
        // The triangle's normal `(x_1 − x_0) × (x_2 − x_0)` points down: the node is on side −1.
        let normal = SelfContactRow::new(3, [0, 1, 2], -1.0, delta, 0.0, &x_n);
        let [t1, t2] = friction_rows(&normal, &x_n, &x_tilde, &inv_mass, mu, 1e-6);
        let mut proj = GaussNewtonProjection::new(4, &[&set], 0);
        proj.set_self_rows(&[normal, t1, t2]);
        let prox = [2e-6; 3];
        let family = RowFamily {
            set: &set,
            role: RowRole::Proximal(&prox),
            linear: false,
            scale: StrainScale::PerRow(&set.rest),
        };
        let settings = ProjectionSettings {
            tolerance: 1e-9,
            max_iterations: 40,
            contact_length: 0.01,
            ..ProjectionSettings::default()
        };
        let mut x = x_tilde.clone();
        let rep = proj.project(
            &[family],
            &x_tilde,
            &inv_mass,
            &settings,
            &mut x,
            &mut || false,
        );
        assert!(rep.converged, "{rep:?}");
        assert!(
            rep.direct_solves > 0 && rep.direct_fallbacks == 0,
            "{rep:?}"
        );
        assert!(proj.self_rows_active().iter().all(|&a| a));
        // The normal row holds the pair `delta` apart.
        let c = proj.self_rows()[0].value(&x);
        assert!(c.abs() <= 1e-11, "mu {mu}: C = {c}");
        (x_n, x_tilde, x)
    }

    /// The relative offset of the node from the triangle's centroid (its closest point at
    /// the start), and the total momentum change `Σ m (x − x̃)` (unit masses).
    fn offset_and_momentum(x: &[DVec3], x_tilde: &[DVec3]) -> (DVec3, DVec3) {
        let q = (x[0] + x[1] + x[2]) / 3.0;
        let momentum = x.iter().zip(x_tilde).map(|(a, b)| *a - *b).sum();
        (x[3] - q, momentum)
    }

    #[test]
    fn a_node_sliding_over_a_sheet_keeps_sticks_or_loses_mu_times_the_push() {
        // The normal row pushes the pair 2 mm apart; friction may remove at most μ · 2 mm of
        // the 1 cm slip: none at μ = 0, all of it at μ = 10, 2 · 2 mm at μ = 2.
        for (mu, kept) in [(0.0, 0.01), (10.0, 0.0), (2.0, 0.006)] {
            let (x_n, x_tilde, x) = slide(mu);
            let (r, momentum) = offset_and_momentum(&x, &x_tilde);
            let (r_n, _) = offset_and_momentum(&x_n, &x_n);
            let d = r - r_n;
            // Tangential: the slip that friction leaves.
            assert!(
                (d.x - kept).abs() < 1e-7,
                "mu {mu}: slip {d}, expected {kept}"
            );
            assert!(d.z.abs() < 1e-7, "mu {mu}: {d}");
            // Momentum: the rows' gradients sum to zero over the four nodes.
            assert!(momentum.length() < 1e-12, "mu {mu}: {momentum}");
        }
    }
}

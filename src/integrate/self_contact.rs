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

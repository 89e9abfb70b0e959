//! Axis-aligned bounding-box hierarchy over triangles: candidate pairs for proximity and CCD.
//!
//! Bridson et al. 2002 §5. Every substep the collision stage needs
//!
//! * candidate cloth–cloth triangle pairs for the repulsion proximities at `x^n`: leaf boxes are the triangles'
//!   boxes inflated by the thickness η ([`triangle_boxes`], then [`Bvh::refit`] and [`self_pairs`]);
//! * candidate pairs for CCD: leaf boxes contain the swept triangle, the box of its corners at `x^n` and at
//!   `x^n + h v^{n+1/2}` plus a small tolerance ([`swept_triangle_boxes`]), refitted again in every CCD round
//!   because the velocities change between rounds;
//! * the same against obstacle meshes, which have a tree of their own ([`cross_pairs`]).
//!
//! The caller turns each candidate triangle pair into vertex–triangle and edge–edge tests (§3.4, §3.5).
//!
//! # Topology once, extents every substep
//!
//! [`Bvh::build`] fixes the topology when a cloth or obstacle is created; each substep only calls
//! [`Bvh::refit`], which copies the new leaf boxes and recomputes every parent as the union of its two children,
//! bottom-up, in `O(n)` without allocating. weft reads "recalculate the hierarchy" (Bridson et al. 2002 §5) as such a
//! refit; a rebuild happens only when the caller asks for one (it can watch [`Bvh::sah_cost`] grow as the cloth
//! deforms away from the shape it was built on).
//!
//! *Departure from the source.* Bridson et al. 2002 §5 says the tree is built *bottom-up*. Only the fixed topology
//! matters to the pairs the tree reports (every query is exact on the leaf boxes, whatever the tree's shape), so
//! the build here is the usual top-down binned-SAH build (Wald 2007, "On fast construction of SAH-based
//! bounding volume hierarchies"), `O(n log n)`, serial and deterministic; a test checks its trees are no
//! worse by SAH cost than [`BuildStrategy::MedianSplit`] (object median on the longest centroid axis), the
//! simple alternative.
//!
//! # Layout
//!
//! One primitive per leaf, so `2n − 1` nodes for `n` primitives, stored in depth-first pre-order: the left
//! child of internal node `i` is `i + 1`, its right child `i + 2·n_left`, and the subtree of `i` occupies the
//! contiguous range `[i, i + 2·n_i − 1)`. Children therefore always follow their parent (refit is a reverse
//! loop), and two sibling subtrees are disjoint slices (refit runs them in parallel with `split_at_mut`). Each
//! node ([`BvhNode`], `repr(C)`, 32 bytes, 32-byte aligned, checked at compile time) also stores the largest
//! primitive index in its subtree: a self query for primitive `i` skips every subtree whose largest index is
//! `≤ i`, so each unordered pair is found exactly once, from its smaller index.
//!
//! # Queries and determinism
//!
//! [`self_pairs`] and [`cross_pairs`] split the primitives of the (first) tree into fixed chunks of
//! [`PAIR_CHUNK`] consecutive indices. Each chunk queries the tree with the leaf box of each of its primitives in
//! ascending order, sorts that primitive's partners, and appends to its own buffer; the buffers are concatenated
//! in chunk order. The output is therefore sorted by `(i, j)` with no global sort, and it depends on neither the
//! thread count nor the schedule. Buffers live in a caller-owned [`PairWorkspace`] and only grow when a query
//! finds more pairs than any earlier one, which [`PairWorkspace::grew`] reports.
//!
//! # A wide copy for the full self query
//!
//! The substep's full self query runs on [`WideBvh`] (`bvh/wide.rs`), the same leaves under nodes of up to four
//! children whose boxes are tested against the query together, and whose groups test each leaf they find against
//! all their members' boxes at once ([`self_pairs_wide`]); its output is [`self_pairs`]'. The binary tree keeps
//! serving the incremental and the obstacle queries.
//!
//! # Depth bound
//!
//! Binned SAH can make very unbalanced splits (boxes of geometrically growing size), so below depth
//! [`MAX_SAH_DEPTH`] the build switches to median splits. Those halve the primitive count, so no leaf is deeper
//! than [`MAX_DEPTH`], and traversals use a fixed stack array: no recursion, no allocation.
#![deny(unsafe_code)]

use std::ops::Range;

use crate::runtime::executor::{join, parallel_here};

mod wide;
use glam::Vec3;
use rayon::prelude::*;
pub use wide::{WideBvh, self_pairs_wide};

/// Largest number of primitives a [`Bvh`] accepts (`2^30`): node indices then fit in 31 bits, and the
/// median-split tail of the build stays within [`MAX_DEPTH`].
pub const MAX_PRIMITIVES: usize = 1 << 30;

/// Number of bins per axis of the binned-SAH build (Wald 2007 uses 8–32; 16 is the usual compromise).
pub const SAH_BINS: usize = 16;

/// Depth (edges from the root) from which the binned-SAH build uses median splits only.
pub const MAX_SAH_DEPTH: usize = 48;

/// No leaf of a built [`Bvh`] is deeper than this: [`MAX_SAH_DEPTH`] SAH levels, then at most
/// `log2(MAX_PRIMITIVES) = 30` median levels. Traversal stacks hold this many entries.
pub const MAX_DEPTH: usize = MAX_SAH_DEPTH + 30;

/// Primitives per chunk of a pair query: the unit of parallel work and of the fixed output order.
pub const PAIR_CHUNK: usize = 256;

/// Pair queries over fewer primitives than this run their chunks on the calling thread (same chunks, same
/// output).
pub const PARALLEL_MIN_PRIMITIVES: usize = 2048;

/// Triangles per chunk of [`triangle_boxes`] and [`swept_triangle_boxes`] (parallel above one chunk).
const BOX_CHUNK: usize = 2048;

/// Subtrees with at most this many nodes are refitted serially; larger ones split into two parallel tasks.
const REFIT_SERIAL_NODES: usize = 8192;

/// Marks a leaf in [`BvhNode::index`].
const LEAF_BIT: u32 = 1 << 31;

/// An axis-aligned box `[min, max]` (closed: boxes that touch overlap).
///
/// The empty box has `min = +∞`, `max = −∞` ([`Aabb::EMPTY`]); it overlaps nothing and is the identity of
/// [`Aabb::union`]. NaN behaviour: [`Aabb::union`] and [`Aabb::grow`] ignore NaN coordinates (`f32::min`),
/// and a box with a NaN coordinate overlaps nothing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// Lower corner, metres.
    pub min: Vec3,
    /// Upper corner, metres.
    pub max: Vec3,
}

impl Default for Aabb {
    /// The empty box.
    fn default() -> Self {
        Aabb::EMPTY
    }
}

impl Aabb {
    /// The empty box: `min = +∞`, `max = −∞`.
    pub const EMPTY: Aabb = Aabb {
        min: Vec3::splat(f32::INFINITY),
        max: Vec3::splat(f32::NEG_INFINITY),
    };

    /// The box with the given corners (not checked: `min > max` on an axis gives an empty box).
    #[must_use]
    pub const fn new(min: Vec3, max: Vec3) -> Aabb {
        Aabb { min, max }
    }

    /// Smallest box containing every point of `points` ([`Aabb::EMPTY`] for none).
    #[must_use]
    pub fn from_points(points: &[Vec3]) -> Aabb {
        let mut b = Aabb::EMPTY;
        for &p in points {
            b.grow(p);
        }
        b
    }

    /// Smallest box containing `self` and `o`.
    #[inline]
    #[must_use]
    pub fn union(&self, o: &Aabb) -> Aabb {
        Aabb {
            min: min3(self.min, o.min),
            max: max3(self.max, o.max),
        }
    }

    /// Whether the closed boxes intersect (touching counts). False if either is empty or has a NaN.
    /// Without short-circuits: the broad phase's culls reject most boxes on an unpredictable
    /// axis, and one branch on the answer costs less than six.
    #[inline]
    #[must_use]
    pub fn overlaps(&self, o: &Aabb) -> bool {
        (self.min.x <= o.max.x)
            & (o.min.x <= self.max.x)
            & (self.min.y <= o.max.y)
            & (o.min.y <= self.max.y)
            & (self.min.z <= o.max.z)
            & (o.min.z <= self.max.z)
    }

    /// The box grown by `r` on every side (`r ≥ 0`; a negative `r` shrinks it). The empty box stays empty.
    #[inline]
    #[must_use]
    pub fn inflate(&self, r: f32) -> Aabb {
        Aabb {
            min: self.min - Vec3::splat(r),
            max: self.max + Vec3::splat(r),
        }
    }

    /// Grows the box to contain `p`.
    #[inline]
    pub fn grow(&mut self, p: Vec3) {
        self.min = min3(self.min, p);
        self.max = max3(self.max, p);
    }

    /// Whether the box is empty (`min > max` on some axis). A box with a NaN coordinate is not empty.
    #[inline]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.min.x > self.max.x || self.min.y > self.max.y || self.min.z > self.max.z
    }

    /// Whether `o` lies inside `self` (every empty `o` does). False when a coordinate is NaN.
    #[inline]
    #[must_use]
    pub fn contains(&self, o: &Aabb) -> bool {
        o.is_empty()
            || (self.min.x <= o.min.x
                && self.min.y <= o.min.y
                && self.min.z <= o.min.z
                && o.max.x <= self.max.x
                && o.max.y <= self.max.y
                && o.max.z <= self.max.z)
    }

    /// Centre `(min + max) / 2`.
    #[inline]
    #[must_use]
    pub fn center(&self) -> Vec3 {
        (self.min + self.max) * 0.5
    }

    /// Surface area `2 (dx dy + dy dz + dz dx)`, square metres; 0 for an empty box.
    #[inline]
    #[must_use]
    pub fn surface_area(&self) -> f32 {
        if self.is_empty() {
            return 0.0;
        }
        let d = self.max - self.min;
        2.0 * (d.x * d.y + d.y * d.z + d.z * d.x)
    }
}

/// Component-wise minimum that ignores NaN (`f32::min`), unlike `Vec3::min`, whose result depends on the
/// argument order when one is NaN.
#[inline]
fn min3(a: Vec3, b: Vec3) -> Vec3 {
    Vec3::new(a.x.min(b.x), a.y.min(b.y), a.z.min(b.z))
}

/// Component-wise maximum that ignores NaN (`f32::max`).
#[inline]
fn max3(a: Vec3, b: Vec3) -> Vec3 {
    Vec3::new(a.x.max(b.x), a.y.max(b.y), a.z.max(b.z))
}

/// Runs `f(out_chunk, tris_chunk)` over fixed chunks, in parallel when there is more than one chunk. Every
/// output element depends only on its own triangle, so the result is the same for any schedule.
fn for_each_triangle_chunk(
    tris: &[[u32; 3]],
    out: &mut [Aabb],
    f: impl Fn(&mut [Aabb], &[[u32; 3]]) + Sync,
) {
    assert_eq!(
        tris.len(),
        out.len(),
        "one output box per triangle: `out` must have `tris.len()` entries"
    );
    if tris.len() <= BOX_CHUNK || !parallel_here() {
        f(out, tris);
    } else {
        out.par_chunks_mut(BOX_CHUNK)
            .zip(tris.par_chunks(BOX_CHUNK))
            .for_each(|(o, t)| f(o, t));
    }
}

/// Leaf boxes of triangles at positions `x`, inflated by `margin`: `out[t]` is the box of the corners of
/// `tris[t]`, grown by `margin` on every side.
///
/// Bridson et al. 2002 §5 (repulsion leaves: the box at `x^n` enlarged by the thickness η, so
/// every pair closer than η has overlapping boxes). `x`: vertex positions, metres; `margin`: η, metres.
///
/// # Panics
/// If `out.len() != tris.len()` or a vertex index is out of range of `x`.
pub fn triangle_boxes(x: &[Vec3], tris: &[[u32; 3]], margin: f32, out: &mut [Aabb]) {
    for_each_triangle_chunk(tris, out, |out, tris| {
        for (o, t) in out.iter_mut().zip(tris) {
            let [a, b, c] = t.map(|v| x[v as usize]);
            *o = Aabb::from_points(&[a, b, c]).inflate(margin);
        }
    });
}

/// Swept leaf boxes: `out[t]` is the box of the corners of `tris[t]` at `x0` and at `x1`, inflated by `margin`.
///
/// Bridson et al. 2002 §5 (CCD leaves). With `x0 = x^n` and `x1 = x^n + h v^{n+1/2}`, every vertex
/// moves on the segment from `x0` to `x1`, so every point of the moving triangle, a convex combination of its
/// corners, stays inside the box of these six points for the whole step (tested below).
/// `margin`: the small CCD tolerance, metres.
///
/// # Panics
/// If `x0.len() != x1.len()`, `out.len() != tris.len()` or a vertex index is out of range.
pub fn swept_triangle_boxes(
    x0: &[Vec3],
    x1: &[Vec3],
    tris: &[[u32; 3]],
    margin: f32,
    out: &mut [Aabb],
) {
    assert_eq!(
        x0.len(),
        x1.len(),
        "start and end positions must cover the same vertices"
    );
    for_each_triangle_chunk(tris, out, |out, tris| {
        for (o, t) in out.iter_mut().zip(tris) {
            let [a, b, c] = t.map(|v| x0[v as usize]);
            let [d, e, f] = t.map(|v| x1[v as usize]);
            *o = Aabb::from_points(&[a, b, c, d, e, f]).inflate(margin);
        }
    });
}

/// One node of a [`Bvh`]: its box and two indices, 32 bytes.
///
/// Internal node: `index` is the right child (the left child is the next node), `max_primitive` the largest
/// primitive index in the subtree. Leaf: `index` is `LEAF_BIT | primitive` and `max_primitive` the primitive.
#[repr(C, align(32))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BvhNode {
    min: Vec3,
    index: u32,
    max: Vec3,
    max_primitive: u32,
}

const _: () = assert!(std::mem::size_of::<BvhNode>() == 32);
const _: () = assert!(std::mem::align_of::<BvhNode>() == 32);

impl BvhNode {
    const ZERO: BvhNode = BvhNode {
        min: Vec3::ZERO,
        index: 0,
        max: Vec3::ZERO,
        max_primitive: 0,
    };

    fn leaf(primitive: u32) -> BvhNode {
        BvhNode {
            index: LEAF_BIT | primitive,
            max_primitive: primitive,
            ..BvhNode::ZERO
        }
    }

    fn internal(right: u32, max_primitive: u32) -> BvhNode {
        BvhNode {
            index: right,
            max_primitive,
            ..BvhNode::ZERO
        }
    }

    /// The node's box.
    #[inline]
    #[must_use]
    pub fn aabb(&self) -> Aabb {
        Aabb::new(self.min, self.max)
    }

    /// Whether the node is a leaf.
    #[inline]
    #[must_use]
    pub fn is_leaf(&self) -> bool {
        self.index & LEAF_BIT != 0
    }

    /// The leaf's primitive, or `None` for an internal node.
    #[inline]
    #[must_use]
    pub fn primitive(&self) -> Option<u32> {
        self.is_leaf().then_some(self.index & !LEAF_BIT)
    }

    /// The children `(left, right)` of an internal node, or `None` for a leaf. Node indices.
    #[inline]
    #[must_use]
    pub fn children(&self, this: usize) -> Option<(usize, usize)> {
        (!self.is_leaf()).then_some((this + 1, self.index as usize))
    }

    /// Largest primitive index in the node's subtree.
    #[inline]
    #[must_use]
    pub fn max_primitive(&self) -> u32 {
        self.max_primitive
    }

    #[inline]
    fn set_aabb(&mut self, b: Aabb) {
        self.min = b.min;
        self.max = b.max;
    }

    /// Whether the node's box meets `b` ([`Aabb::overlaps`], one branch in the traversal loop).
    #[inline]
    fn overlaps(&self, b: &Aabb) -> bool {
        self.aabb().overlaps(b)
    }
}

/// How [`Bvh::build_with`] chooses each split.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BuildStrategy {
    /// Binned surface-area heuristic (Wald 2007, "On fast construction of SAH-based bounding volume
    /// hierarchies"; cost model of MacDonald & Booth 1990): [`SAH_BINS`] bins of centroids per axis, the split
    /// minimising `A_L·N_L + A_R·N_R`. Falls back to [`BuildStrategy::MedianSplit`] for a node whose centroids
    /// all fall in one bin, and below depth [`MAX_SAH_DEPTH`].
    #[default]
    BinnedSah,
    /// Object median on the longest axis of the centroid bounds: the `⌊n/2⌋` primitives with the smallest
    /// centroid coordinate (ties broken by primitive index) go left.
    MedianSplit,
}

/// Why [`Bvh::validate`] rejected a tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BvhError {
    /// The tree does not have `2n − 1` nodes for `n` primitives (or one leaf map entry per primitive).
    #[error("{nodes} nodes and {leaves} leaf map entries for {primitives} primitives")]
    WrongNodeCount {
        /// Number of nodes.
        nodes: usize,
        /// Number of entries in the primitive → leaf map.
        leaves: usize,
        /// Number of primitives the tree was built for.
        primitives: usize,
    },
    /// An internal node's right child is not where the pre-order layout puts it.
    #[error("node {node}: children break the pre-order layout")]
    BadLayout {
        /// The node.
        node: usize,
    },
    /// A node's largest primitive index is not the largest in its subtree.
    #[error("node {node}: wrong largest primitive index")]
    WrongMaxPrimitive {
        /// The node.
        node: usize,
    },
    /// A primitive is missing, duplicated or out of range, or the primitive → leaf map disagrees with the leaf.
    #[error("primitive {primitive}: not in exactly one leaf, or its leaf map entry is wrong")]
    BadLeaf {
        /// The primitive.
        primitive: usize,
    },
    /// A child's box is not inside its parent's box (a refit is missing, or a box has a NaN).
    #[error("node {child} sticks out of its parent {parent}")]
    ChildOutsideParent {
        /// The parent node.
        parent: usize,
        /// The child node.
        child: usize,
    },
    /// A leaf is deeper than [`MAX_DEPTH`].
    #[error("a leaf at depth {depth} exceeds the depth bound")]
    TooDeep {
        /// The depth reached.
        depth: usize,
    },
}

/// An AABB tree over `n` primitive boxes, one primitive per leaf (see the module doc for the layout).
///
/// Built once ([`Bvh::build`]); each substep [`Bvh::refit`]s it to new boxes.
#[derive(Clone, Debug, Default)]
pub struct Bvh {
    /// `2n − 1` nodes in depth-first pre-order (none for `n = 0`).
    nodes: Vec<BvhNode>,
    /// Node index of each primitive's leaf.
    leaf_of: Vec<u32>,
}

/// Build state: primitive centroids and a partition scratch buffer.
struct Builder<'a> {
    boxes: &'a [Aabb],
    centroids: Vec<Vec3>,
    strategy: BuildStrategy,
    /// Depth from which only median splits are made ([`MAX_SAH_DEPTH`] outside tests).
    max_sah_depth: usize,
    nodes: Vec<BvhNode>,
    leaf_of: Vec<u32>,
    scratch: Vec<u32>,
}

/// One SAH bin: primitive count and the union of their boxes.
#[derive(Clone, Copy)]
struct Bin {
    count: u32,
    bounds: Aabb,
}

impl Builder<'_> {
    /// Builds the subtree of the primitives `prims` at node `node`; returns the subtree's largest primitive.
    fn build_subtree(&mut self, node: usize, prims: &mut [u32], depth: usize) -> u32 {
        if let [p] = *prims {
            self.nodes[node] = BvhNode::leaf(p);
            self.leaf_of[p as usize] = node as u32;
            return p;
        }
        let n_left = match self.strategy {
            BuildStrategy::BinnedSah if depth < self.max_sah_depth => self
                .split_binned_sah(prims)
                .unwrap_or_else(|| self.split_median(prims)),
            _ => self.split_median(prims),
        };
        debug_assert!(0 < n_left && n_left < prims.len());
        let right = node + 2 * n_left;
        let (left_prims, right_prims) = prims.split_at_mut(n_left);
        let max_left = self.build_subtree(node + 1, left_prims, depth + 1);
        let max_right = self.build_subtree(right, right_prims, depth + 1);
        let max = max_left.max(max_right);
        self.nodes[node] = BvhNode::internal(right as u32, max);
        max
    }

    /// Bounds of the centroids of `prims` (NaN centroids ignored).
    fn centroid_bounds(&self, prims: &[u32]) -> Aabb {
        let mut b = Aabb::EMPTY;
        for &p in prims {
            b.grow(self.centroids[p as usize]);
        }
        b
    }

    /// Binned SAH split (Wald 2007): partitions `prims` stably (index order kept on each side) and returns the
    /// size of the left part, or `None` when no bin boundary separates the centroids.
    fn split_binned_sah(&mut self, prims: &mut [u32]) -> Option<usize> {
        let cb = self.centroid_bounds(prims);
        let extent = cb.max - cb.min;
        // (cost, axis, bins left of the split)
        let mut best: Option<(f32, usize, usize)> = None;
        for axis in 0..3 {
            let (lo, ext) = (cb.min[axis], extent[axis]);
            if !(ext > 0.0 && ext.is_finite()) {
                continue;
            }
            let scale = SAH_BINS as f32 / ext;
            let mut bins = [Bin {
                count: 0,
                bounds: Aabb::EMPTY,
            }; SAH_BINS];
            for &p in prims.iter() {
                let bin = &mut bins[bin_index(self.centroids[p as usize][axis], lo, scale)];
                bin.count += 1;
                bin.bounds = bin.bounds.union(&self.boxes[p as usize]);
            }
            // Right sweep: area × count of bins[k..] for every k.
            let mut right_cost = [0.0_f32; SAH_BINS];
            let mut acc = Aabb::EMPTY;
            let mut count = 0_u32;
            for k in (1..SAH_BINS).rev() {
                acc = acc.union(&bins[k].bounds);
                count += bins[k].count;
                right_cost[k] = acc.surface_area() * count as f32;
            }
            let mut acc = Aabb::EMPTY;
            let mut count = 0_u32;
            for k in 1..SAH_BINS {
                acc = acc.union(&bins[k - 1].bounds);
                count += bins[k - 1].count;
                if count == 0 || count as usize == prims.len() {
                    continue;
                }
                let cost = acc.surface_area() * count as f32 + right_cost[k];
                if best.is_none_or(|(c, _, _)| cost < c) {
                    best = Some((cost, axis, k));
                }
            }
        }
        let (_, axis, split) = best?;
        let lo = cb.min[axis];
        let scale = SAH_BINS as f32 / extent[axis];
        let centroids = &self.centroids;
        Some(stable_partition(prims, &mut self.scratch, |p| {
            bin_index(centroids[p as usize][axis], lo, scale) < split
        }))
    }

    /// Object-median split on the longest axis of the centroid bounds; ties by primitive index. Returns
    /// `⌊n/2⌋`.
    fn split_median(&mut self, prims: &mut [u32]) -> usize {
        let cb = self.centroid_bounds(prims);
        let extent = cb.max - cb.min;
        let mut axis = 0;
        for a in 1..3 {
            if extent[a] > extent[axis] {
                axis = a;
            }
        }
        let mid = prims.len() / 2;
        let centroids = &self.centroids;
        prims.select_nth_unstable_by(mid, |&a, &b| {
            centroids[a as usize][axis]
                .total_cmp(&centroids[b as usize][axis])
                .then(a.cmp(&b))
        });
        mid
    }
}

/// Bin of centroid coordinate `c` (clamped; NaN goes to bin 0).
#[inline]
fn bin_index(c: f32, lo: f32, scale: f32) -> usize {
    // `as usize` saturates: negative and NaN give 0.
    (((c - lo) * scale) as usize).min(SAH_BINS - 1)
}

/// Moves the elements satisfying `left` to the front, keeping the relative order on both sides; returns how
/// many satisfy it.
fn stable_partition(
    prims: &mut [u32],
    scratch: &mut Vec<u32>,
    left: impl Fn(u32) -> bool,
) -> usize {
    scratch.clear();
    let mut n_left = 0;
    for k in 0..prims.len() {
        let p = prims[k];
        if left(p) {
            prims[n_left] = p;
            n_left += 1;
        } else {
            scratch.push(p);
        }
    }
    prims[n_left..].copy_from_slice(scratch);
    n_left
}

impl Bvh {
    /// Builds the tree over `boxes` (indexed by primitive) with the binned surface-area heuristic
    /// ([`BuildStrategy::BinnedSah`]) and fits it to them.
    ///
    /// Deterministic: serial, and every tie (equal SAH costs, equal centroids) is broken by axis order, bin
    /// order or primitive index. Allocates; meant for cloth or obstacle creation, or an explicit rebuild.
    ///
    /// # Panics
    /// If `boxes.len() > MAX_PRIMITIVES`.
    #[must_use]
    pub fn build(boxes: &[Aabb]) -> Bvh {
        Bvh::build_with(boxes, BuildStrategy::BinnedSah)
    }

    /// Builds the tree over `boxes` with the given split strategy and fits it to them; see [`Bvh::build`].
    ///
    /// # Panics
    /// If `boxes.len() > MAX_PRIMITIVES`.
    #[must_use]
    pub fn build_with(boxes: &[Aabb], strategy: BuildStrategy) -> Bvh {
        Bvh::build_capped(boxes, strategy, MAX_SAH_DEPTH)
    }

    /// [`Bvh::build_with`] with median splits only from depth `max_sah_depth` on.
    fn build_capped(boxes: &[Aabb], strategy: BuildStrategy, max_sah_depth: usize) -> Bvh {
        let n = boxes.len();
        assert!(
            n <= MAX_PRIMITIVES,
            "{n} primitives exceed the BVH limit {MAX_PRIMITIVES}"
        );
        if n == 0 {
            return Bvh::default();
        }
        let mut builder = Builder {
            boxes,
            centroids: boxes.iter().map(Aabb::center).collect(),
            strategy,
            max_sah_depth,
            nodes: vec![BvhNode::ZERO; 2 * n - 1],
            leaf_of: vec![0; n],
            scratch: Vec::with_capacity(n),
        };
        // `n ≤ MAX_PRIMITIVES = 2^30`, so every index fits in u32.
        let mut prims: Vec<u32> = (0..n as u32).collect();
        builder.build_subtree(0, &mut prims, 0);
        let mut bvh = Bvh {
            nodes: builder.nodes,
            leaf_of: builder.leaf_of,
        };
        bvh.refit(boxes);
        bvh
    }

    /// Number of primitives (leaves).
    #[must_use]
    pub fn num_primitives(&self) -> usize {
        self.leaf_of.len()
    }

    /// The nodes in depth-first pre-order (node 0 is the root; `2n − 1` nodes, none for `n = 0`).
    #[must_use]
    pub fn nodes(&self) -> &[BvhNode] {
        &self.nodes
    }

    /// The current box of primitive `p` (its leaf's box).
    ///
    /// # Panics
    /// If `p >= num_primitives()`.
    #[must_use]
    pub fn primitive_box(&self, p: usize) -> Aabb {
        self.nodes[self.leaf_of[p] as usize].aabb()
    }

    /// Replaces the leaf boxes with `boxes` (indexed by primitive) and recomputes every parent as the union of
    /// its children, bottom-up. `O(n)`, no allocation; large trees refit their two halves in parallel, with the
    /// same bits for any thread count (each parent is `union(left, right)` in that order).
    ///
    /// Bridson et al. 2002 §5 ("recalculate the hierarchy" read as a refit of the fixed topology).
    ///
    /// # Panics
    /// If `boxes.len() != num_primitives()`.
    pub fn refit(&mut self, boxes: &[Aabb]) {
        assert_eq!(
            boxes.len(),
            self.num_primitives(),
            "refit needs one box per primitive of the tree"
        );
        refit_subtree(&mut self.nodes, 0, boxes);
    }

    /// The root's box: the union of all leaf boxes ([`Aabb::EMPTY`] for an empty tree).
    #[must_use]
    pub fn root_box(&self) -> Aabb {
        self.nodes.first().map_or(Aabb::EMPTY, BvhNode::aabb)
    }

    /// Calls `visit(j)` for every primitive `j` whose leaf box overlaps `query`, in
    /// depth-first order (the same order on every call for the same tree and query).
    /// Allocation-free: a fixed stack of one entry per level.
    pub fn for_each_overlap(&self, query: &Aabb, mut visit: impl FnMut(u32)) {
        traverse(self, query, 0, |j, _| visit(j));
    }

    /// Depth of the deepest leaf (edges from the root; 0 for zero or one primitive).
    #[must_use]
    pub fn depth(&self) -> usize {
        let mut max_depth = 0;
        let mut stack = [(0_u32, 0_u32); MAX_DEPTH + 1];
        let mut sp = 0;
        if !self.nodes.is_empty() {
            stack[0] = (0, 0);
            sp = 1;
        }
        while sp > 0 {
            sp -= 1;
            let (node, d) = stack[sp];
            max_depth = max_depth.max(d as usize);
            if let Some((l, r)) = self.nodes[node as usize].children(node as usize) {
                if d as usize >= MAX_DEPTH {
                    // Unreachable for a built tree (MAX_DEPTH bounds it); report a depth past the bound.
                    return MAX_DEPTH + 1;
                }
                stack[sp] = (l as u32, d + 1);
                stack[sp + 1] = (r as u32, d + 1);
                sp += 2;
            }
        }
        max_depth
    }

    /// Relative surface-area-heuristic cost of the tree as currently fitted, `Σ_nodes A(node) / A(root)` (node
    /// traversal and leaf test both cost 1; MacDonald & Booth 1990). A refitted tree whose cost has grown well
    /// past the cost of a fresh build over the same boxes is worth rebuilding (Bridson et al. 2002 §5 asks for no rebuild). 0 for
    /// an empty tree or a root of zero or non-finite area.
    #[must_use]
    pub fn sah_cost(&self) -> f32 {
        let root = self.root_box().surface_area();
        if !root.is_finite() || root <= 0.0 {
            return 0.0;
        }
        let total: f64 = self
            .nodes
            .iter()
            .map(|n| f64::from(n.aabb().surface_area()))
            .sum();
        (total / f64::from(root)) as f32
    }

    /// Checks the tree's invariants: `2n − 1` nodes in pre-order, every primitive in exactly one leaf and the
    /// leaf map consistent, the largest-primitive annotations exact, every child box inside its parent's box
    /// and no leaf deeper than [`MAX_DEPTH`]. Allocates (a debugging and testing aid).
    ///
    /// # Errors
    /// The first violated invariant, as a [`BvhError`].
    pub fn validate(&self) -> Result<(), BvhError> {
        let n = self.num_primitives();
        let expected_nodes = if n == 0 { 0 } else { 2 * n - 1 };
        if self.nodes.len() != expected_nodes {
            return Err(BvhError::WrongNodeCount {
                nodes: self.nodes.len(),
                leaves: self.leaf_of.len(),
                primitives: n,
            });
        }
        if n == 0 {
            return Ok(());
        }
        let mut seen = vec![false; n];
        self.validate_subtree(0, self.nodes.len(), 0, &mut seen)?;
        Ok(())
    }

    /// Validates the subtree at `node`, which must occupy exactly the node range `[node, end)`; returns its
    /// largest primitive.
    fn validate_subtree(
        &self,
        node: usize,
        end: usize,
        depth: usize,
        seen: &mut [bool],
    ) -> Result<u32, BvhError> {
        if depth > MAX_DEPTH {
            return Err(BvhError::TooDeep { depth });
        }
        let this = self.nodes[node];
        match this.primitive() {
            Some(p) => {
                let pu = p as usize;
                if end != node + 1 {
                    return Err(BvhError::BadLayout { node });
                }
                if pu >= seen.len() || seen[pu] || self.leaf_of[pu] as usize != node {
                    return Err(BvhError::BadLeaf { primitive: pu });
                }
                seen[pu] = true;
                if this.max_primitive != p {
                    return Err(BvhError::WrongMaxPrimitive { node });
                }
                Ok(p)
            }
            None => {
                let (l, r) = (node + 1, this.index as usize);
                // Both subtrees are non-empty and have an odd node count (2m − 1).
                if !(l < r && r < end && (r - l) % 2 == 1 && (end - r) % 2 == 1) {
                    return Err(BvhError::BadLayout { node });
                }
                for child in [l, r] {
                    if !this.aabb().contains(&self.nodes[child].aabb()) {
                        return Err(BvhError::ChildOutsideParent {
                            parent: node,
                            child,
                        });
                    }
                }
                let max_l = self.validate_subtree(l, r, depth + 1, seen)?;
                let max_r = self.validate_subtree(r, end, depth + 1, seen)?;
                if this.max_primitive != max_l.max(max_r) {
                    return Err(BvhError::WrongMaxPrimitive { node });
                }
                Ok(this.max_primitive)
            }
        }
    }
}

/// Refits the subtree stored in `nodes` (its root at `nodes[0]`, global node index `base`).
fn refit_subtree(nodes: &mut [BvhNode], base: usize, boxes: &[Aabb]) {
    if nodes.len() <= REFIT_SERIAL_NODES {
        refit_serial(nodes, base, boxes);
        return;
    }
    // More than one node, so the root is internal; its right child starts the second subtree.
    let right_local = nodes[0].index as usize - base;
    let (head, rest) = nodes.split_at_mut(1);
    let (left, right) = rest.split_at_mut(right_local - 1);
    join(
        || refit_subtree(left, base + 1, boxes),
        || refit_subtree(right, base + right_local, boxes),
    );
    let b = left[0].aabb().union(&right[0].aabb());
    head[0].set_aabb(b);
}

/// Serial refit: children follow their parent in pre-order, so a reverse loop sees both children first.
fn refit_serial(nodes: &mut [BvhNode], base: usize, boxes: &[Aabb]) {
    for i in (0..nodes.len()).rev() {
        let node = nodes[i];
        let b = match node.primitive() {
            Some(p) => boxes[p as usize],
            None => nodes[i + 1]
                .aabb()
                .union(&nodes[node.index as usize - base].aabb()),
        };
        nodes[i].set_aabb(b);
    }
}

/// Calls `visit(j, leaf)` for every leaf primitive `j ≥ min_primitive` of `bvh` whose box overlaps `query`
/// (`leaf` its node's index), in depth-first order. Fixed stack of [`MAX_DEPTH`] entries: one per level of the current path.
#[inline]
fn traverse(bvh: &Bvh, query: &Aabb, min_primitive: u32, mut visit: impl FnMut(u32, u32)) {
    let nodes = &bvh.nodes[..];
    if nodes.is_empty() {
        return;
    }
    let mut stack = [0_u32; MAX_DEPTH];
    let mut sp = 0;
    let mut node = 0_usize;
    loop {
        let n = &nodes[node];
        if n.max_primitive >= min_primitive && n.overlaps(query) {
            if n.is_leaf() {
                // Node indices fit in u32: a tree has fewer than 2 MAX_PRIMITIVES nodes.
                visit(n.index & !LEAF_BIT, node as u32);
            } else {
                // At most one pending entry per ancestor: `sp` ≤ depth of `node` ≤ MAX_DEPTH − 1 for an
                // internal node of a built tree, so the push stays in bounds.
                stack[sp] = n.index;
                sp += 1;
                node += 1;
                continue;
            }
        }
        if sp == 0 {
            return;
        }
        sp -= 1;
        node = stack[sp] as usize;
    }
}

/// One chunk's output buffer.
#[derive(Clone, Debug, Default)]
struct ChunkBuffer {
    pairs: Vec<(u32, u32)>,
    /// Whether the last query had to reallocate `pairs`.
    grew: bool,
}

/// Reusable output and per-chunk buffers of [`self_pairs`] and [`cross_pairs`], owned by the caller so that
/// queries allocate nothing in steady state.
///
/// Buffers only grow, and only when a query finds more pairs (in total, or in one chunk) than any earlier
/// query on this workspace; [`PairWorkspace::grew`] says whether the last query did. Queries of different
/// kinds (self, obstacle, CCD) may share a workspace, whose buffers then settle at the largest sizes seen;
/// separate workspaces keep each kind's result alive until its next query.
#[derive(Clone, Debug, Default)]
pub struct PairWorkspace {
    chunks: Vec<ChunkBuffer>,
    /// Chunks of the last query.
    active: usize,
    pairs: Vec<(u32, u32)>,
    grew: bool,
}

impl PairWorkspace {
    /// An empty workspace (its first non-empty query grows it).
    #[must_use]
    pub fn new() -> Self {
        PairWorkspace::default()
    }

    /// A workspace preallocated for queries over `num_primitives` primitives finding up to
    /// `pairs_per_primitive` pairs per primitive (spread evenly over the chunks): such queries then
    /// allocate nothing, even the first, so a frame's first contact does not allocate. Larger
    /// results still grow the buffers once and are reported by [`PairWorkspace::grew`].
    #[must_use]
    pub fn with_capacity(num_primitives: usize, pairs_per_primitive: usize) -> Self {
        let num_chunks = num_primitives.div_ceil(PAIR_CHUNK);
        let per_chunk = PAIR_CHUNK.min(num_primitives) * pairs_per_primitive;
        PairWorkspace {
            chunks: (0..num_chunks)
                .map(|_| ChunkBuffer {
                    pairs: Vec::with_capacity(per_chunk),
                    grew: false,
                })
                .collect(),
            active: 0,
            pairs: Vec::with_capacity(num_primitives * pairs_per_primitive),
            grew: false,
        }
    }

    /// The pairs of the last query, sorted ascending by `(i, j)`.
    #[must_use]
    pub fn pairs(&self) -> &[(u32, u32)] {
        &self.pairs
    }

    /// Number of chunks of the last query ([`PAIR_CHUNK`] primitives each).
    #[must_use]
    pub fn num_chunks(&self) -> usize {
        self.active
    }

    /// The pairs of chunk `c` of the last query: the part of
    /// [`PairWorkspace::pairs`] whose first primitives are `c · PAIR_CHUNK ..
    /// (c + 1) · PAIR_CHUNK` (the chunks in order make up `pairs`).
    #[must_use]
    pub fn chunk_pairs(&self, c: usize) -> &[(u32, u32)] {
        &self.chunks[..self.active][c].pairs
    }

    /// Whether the last query had to allocate (a buffer overflowed its capacity): an overflow the caller
    /// reports in its statistics. False for every repetition of a query the workspace has already served.
    #[must_use]
    pub fn grew(&self) -> bool {
        self.grew
    }

    /// Runs `fill(primitives, buffer)` over fixed chunks of `0..n` (in parallel for large `n`), then
    /// concatenates the chunk buffers in chunk order.
    fn run_chunked(&mut self, n: usize, fill: impl Fn(Range<u32>, &mut Vec<(u32, u32)>) + Sync) {
        self.run_chunked_from(n, PARALLEL_MIN_PRIMITIVES, fill);
    }

    /// [`PairWorkspace::run_chunked`], in parallel from `parallel_min` items.
    fn run_chunked_from(
        &mut self,
        n: usize,
        parallel_min: usize,
        fill: impl Fn(Range<u32>, &mut Vec<(u32, u32)>) + Sync,
    ) {
        let num_chunks = n.div_ceil(PAIR_CHUNK);
        let mut grew = false;
        if self.chunks.len() < num_chunks {
            self.chunks.resize_with(num_chunks, ChunkBuffer::default);
            grew = true;
        }
        let work = |(c, buf): (usize, &mut ChunkBuffer)| {
            let capacity = buf.pairs.capacity();
            buf.pairs.clear();
            // `n ≤ MAX_PRIMITIVES`, so chunk bounds fit in u32.
            let start = c * PAIR_CHUNK;
            let end = (start + PAIR_CHUNK).min(n);
            fill(start as u32..end as u32, &mut buf.pairs);
            buf.grew = buf.pairs.capacity() != capacity;
        };
        let active = &mut self.chunks[..num_chunks];
        if n >= parallel_min && parallel_here() {
            active.par_iter_mut().enumerate().for_each(work);
        } else {
            active.iter_mut().enumerate().for_each(work);
        }
        let total: usize = active.iter().map(|b| b.pairs.len()).sum();
        grew |= active.iter().any(|b| b.grew);
        grew |= self.pairs.capacity() < total;
        self.pairs.clear();
        for buf in active.iter() {
            self.pairs.extend_from_slice(&buf.pairs);
        }
        self.active = num_chunks;
        self.grew = grew;
    }
}

/// Sorts the partners appended since `start` (one primitive's pairs) by their second index.
#[inline]
fn sort_tail(buf: &mut [(u32, u32)], start: usize) {
    let tail = &mut buf[start..];
    if tail.len() > 1 {
        tail.sort_unstable_by_key(|&(_, j)| j);
    }
}

/// All pairs `(i, j)`, `i < j`, of primitives of `bvh` whose current boxes overlap and for which `keep(i, j)`
/// is true, written sorted ascending to `ws` ([`PairWorkspace::pairs`]). `keep` is generic, so the
/// search's filter is inlined into the traversal (called for every overlapping leaf, most of them
/// a cloth triangle's topological neighbours).
///
/// Bridson et al. 2002 §5 (candidate pairs from overlapping leaves). `keep` is called only for
/// overlapping pairs, always with `i < j`; self-collision uses it to drop triangles that share a vertex or an
/// edge. Each chunk of [`PAIR_CHUNK`] primitives `i` queries the tree with `i`'s leaf box, skipping subtrees
/// whose primitives are all `≤ i`; chunks run in parallel above [`PARALLEL_MIN_PRIMITIVES`] primitives and
/// are concatenated in chunk order, so the output is the same for any thread count. No allocation unless
/// [`PairWorkspace::grew`].
pub fn self_pairs<F>(bvh: &Bvh, keep: &F, ws: &mut PairWorkspace)
where
    F: Fn(u32, u32) -> bool + Sync + ?Sized,
{
    ws.run_chunked(bvh.num_primitives(), |prims, out| {
        let mut group = prims.start;
        while group < prims.end {
            let members = group..(group + SELF_QUERY_GROUP).min(prims.end);
            group = members.end;
            let boxes = members.clone().map(|i| bvh.primitive_box(i as usize));
            let (union, area) = boxes.fold((Aabb::EMPTY, 0.0), |(u, a), b| {
                (u.union(&b), a + b.surface_area())
            });
            // One traversal for the group when its members lie together (their box is no
            // larger than their boxes' areas together), else one per member.
            let together = union.surface_area() <= area;
            if !together {
                for i in members {
                    let query = bvh.primitive_box(i as usize);
                    let start = out.len();
                    traverse(bvh, &query, i + 1, |j, _| {
                        if keep(i, j) {
                            out.push((i, j));
                        }
                    });
                    sort_tail(out, start);
                }
                continue;
            }
            // The leaves meeting the group's box, after its first member, held at the end of
            // `out` as (primitive, leaf node) while each member picks its partners from them.
            let hits = out.len();
            let nodes = &bvh.nodes;
            traverse(bvh, &union, members.start + 1, |j, node| {
                out.push((j, node))
            });
            let found = out.len();
            for i in members {
                let query = bvh.primitive_box(i as usize);
                let start = out.len();
                for k in hits..found {
                    let (j, node) = out[k];
                    if j > i && nodes[node as usize].overlaps(&query) && keep(i, j) {
                        out.push((i, j));
                    }
                }
                sort_tail(out, start);
            }
            out.drain(hits..found);
        }
    });
}

/// Consecutive primitives [`self_pairs`] queries the tree with at once (with their boxes'
/// union), each then keeping the leaves that meet its own box: a cloth numbers its triangles
/// row by row, so a group lies together and its traversal costs about one member's.
const SELF_QUERY_GROUP: u32 = 8;

/// All pairs `(a, b)` with `a` a primitive of `bvh_a` and `b` one of `bvh_b` whose current boxes overlap,
/// written sorted ascending to `ws` ([`PairWorkspace::pairs`]).
///
/// Bridson et al. 2002 §5 ("the same tests run against obstacle meshes"). Chunks over the
/// primitives of `bvh_a` (put the larger tree first for parallelism), each querying `bvh_b` with the leaf box
/// of each of its primitives; same determinism and allocation behaviour as [`self_pairs`].
pub fn cross_pairs(bvh_a: &Bvh, bvh_b: &Bvh, ws: &mut PairWorkspace) {
    let root_b = bvh_b.root_box();
    ws.run_chunked(bvh_a.num_primitives(), |prims, out| {
        for a in prims {
            let query = bvh_a.primitive_box(a as usize);
            if !query.overlaps(&root_b) {
                continue;
            }
            let start = out.len();
            traverse(bvh_b, &query, 0, |b, _| out.push((a, b)));
            sort_tail(out, start);
        }
    });
}

/// The pairs `(i, j)` of [`self_pairs`] restricted to query primitives `i` of `queries` (ascending):
/// for each, every primitive `j ≠ i` of `bvh` whose box overlaps `i`'s and for which `keep(i, j)` is
/// true (`j` may be below `i`; `keep` decides which of two queried primitives reports their pair),
/// written to `ws` in query order, each query's partners ascending.
///
/// The incremental search of a collision stage: after some vertices changed, only the primitives
/// holding them are queried. Like [`self_pairs`], up to [`SELF_QUERY_GROUP`] consecutive queries
/// that lie together traverse the tree once with their boxes' union, each then keeping the found
/// leaves that meet its own box (the leaf test a query of its own applies): the same partners,
/// sorted the same way. Chunks of [`PAIR_CHUNK`] queries, in parallel from two chunks (the
/// queries of an update are few but each costs a traversal), concatenated in chunk order: the
/// same output for any thread count. No allocation unless [`PairWorkspace::grew`].
pub fn self_pairs_of<F>(bvh: &Bvh, queries: &[u32], keep: &F, ws: &mut PairWorkspace)
where
    F: Fn(u32, u32) -> bool + Sync + ?Sized,
{
    ws.run_chunked_from(queries.len(), PAIR_CHUNK + 1, |range, out| {
        let chunk = &queries[range.start as usize..range.end as usize];
        for group in chunk.chunks(SELF_QUERY_GROUP as usize) {
            let (union, area) = group.iter().fold((Aabb::EMPTY, 0.0), |(u, a), &i| {
                let b = bvh.primitive_box(i as usize);
                (u.union(&b), a + b.surface_area())
            });
            if group.len() == 1 || union.surface_area() > area {
                for &i in group {
                    let query = bvh.primitive_box(i as usize);
                    let start = out.len();
                    traverse(bvh, &query, 0, |j, _| {
                        if j != i && keep(i, j) {
                            out.push((i, j));
                        }
                    });
                    sort_tail(out, start);
                }
                continue;
            }
            // The leaves meeting the group's box, held at the end of `out` as (primitive, leaf
            // node) while each member picks its partners from them.
            let hits = out.len();
            let nodes = &bvh.nodes;
            traverse(bvh, &union, 0, |j, node| out.push((j, node)));
            let found = out.len();
            for &i in group {
                let query = bvh.primitive_box(i as usize);
                let start = out.len();
                for k in hits..found {
                    let (j, node) = out[k];
                    if j != i && nodes[node as usize].overlaps(&query) && keep(i, j) {
                        out.push((i, j));
                    }
                }
                sort_tail(out, start);
            }
            out.drain(hits..found);
        }
    });
}

/// The pairs of [`cross_pairs`] restricted to primitives `a` of `queries` (ascending), in query
/// order; same determinism and allocation behaviour as [`self_pairs_of`].
pub fn cross_pairs_of(bvh_a: &Bvh, queries: &[u32], bvh_b: &Bvh, ws: &mut PairWorkspace) {
    let root_b = bvh_b.root_box();
    ws.run_chunked(queries.len(), |range, out| {
        for &a in &queries[range.start as usize..range.end as usize] {
            let query = bvh_a.primitive_box(a as usize);
            if !query.overlaps(&root_b) {
                continue;
            }
            let start = out.len();
            traverse(bvh_b, &query, 0, |b, _| out.push((a, b)));
            sort_tail(out, start);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const STRATEGIES: [BuildStrategy; 2] = [BuildStrategy::BinnedSah, BuildStrategy::MedianSplit];

    /// Deterministic xorshift sequence in `[-1, 1)`.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> f32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 40) as f32 / (1_u64 << 24) as f32 * 2.0 - 1.0
        }

        fn vec3(&mut self) -> Vec3 {
            Vec3::new(self.next(), self.next(), self.next())
        }
    }

    fn shares_vertex(a: [u32; 3], b: [u32; 3]) -> bool {
        a.iter().any(|v| b.contains(v))
    }

    /// The O(n²) reference: every pair i < j with overlapping boxes and `keep(i, j)`, in (i, j) order.
    fn brute_self(boxes: &[Aabb], keep: impl Fn(u32, u32) -> bool) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for i in 0..boxes.len() {
            for j in i + 1..boxes.len() {
                if boxes[i].overlaps(&boxes[j]) && keep(i as u32, j as u32) {
                    out.push((i as u32, j as u32));
                }
            }
        }
        out
    }

    fn brute_cross(a: &[Aabb], b: &[Aabb]) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for (i, ba) in a.iter().enumerate() {
            for (j, bb) in b.iter().enumerate() {
                if ba.overlaps(bb) {
                    out.push((i as u32, j as u32));
                }
            }
        }
        out
    }

    /// An `nx × ny` vertex grid with spacing `1/(max(nx, ny) − 1)` in the x–y plane, alternating diagonals,
    /// each vertex moved by `noise` (components in [-1, 1]) scaled by `jitter` cells in x–y and `crumple`
    /// metres in z.
    fn grid(
        nx: usize,
        ny: usize,
        noise: &[Vec3],
        jitter: f32,
        crumple: f32,
    ) -> (Vec<Vec3>, Vec<[u32; 3]>) {
        let h = 1.0 / (nx.max(ny) - 1) as f32;
        let mut x = Vec::with_capacity(nx * ny);
        for j in 0..ny {
            for i in 0..nx {
                let e = noise[j * nx + i];
                x.push(Vec3::new(
                    (i as f32 + jitter * e.x) * h,
                    (j as f32 + jitter * e.y) * h,
                    crumple * e.z,
                ));
            }
        }
        let mut tris = Vec::with_capacity(2 * (nx - 1) * (ny - 1));
        for j in 0..ny - 1 {
            for i in 0..nx - 1 {
                let v = |di: usize, dj: usize| ((j + dj) * nx + i + di) as u32;
                if (i + j) % 2 == 0 {
                    tris.push([v(0, 0), v(1, 0), v(1, 1)]);
                    tris.push([v(0, 0), v(1, 1), v(0, 1)]);
                } else {
                    tris.push([v(0, 0), v(1, 0), v(0, 1)]);
                    tris.push([v(1, 0), v(1, 1), v(0, 1)]);
                }
            }
        }
        (x, tris)
    }

    fn boxes_of(x: &[Vec3], tris: &[[u32; 3]], margin: f32) -> Vec<Aabb> {
        let mut out = vec![Aabb::EMPTY; tris.len()];
        triangle_boxes(x, tris, margin, &mut out);
        out
    }

    /// Self pairs of `tris` at `x` (no shared vertex) with every strategy, against brute force; then moves
    /// the vertices by `dx`, refits and checks again.
    fn check_self_and_refit(
        x: &[Vec3],
        dx: &[Vec3],
        tris: &[[u32; 3]],
        margin: f32,
    ) -> Result<(), TestCaseError> {
        let keep = |i: u32, j: u32| !shares_vertex(tris[i as usize], tris[j as usize]);
        let moved: Vec<Vec3> = x.iter().zip(dx).map(|(a, d)| *a + *d).collect();
        let before = boxes_of(x, tris, margin);
        let after = boxes_of(&moved, tris, margin);
        for strategy in STRATEGIES {
            let mut bvh = Bvh::build_with(&before, strategy);
            prop_assert_eq!(bvh.validate(), Ok(()));
            prop_assert_eq!(bvh.num_primitives(), tris.len());
            let mut ws = PairWorkspace::new();
            self_pairs(&bvh, &keep, &mut ws);
            prop_assert_eq!(ws.pairs(), &brute_self(&before, keep)[..]);
            let mut wide = WideBvh::from_tree(&bvh);
            let mut wide_ws = PairWorkspace::new();
            self_pairs_wide(&wide, &keep, &mut wide_ws);
            prop_assert_eq!(wide_ws.pairs(), ws.pairs());

            bvh.refit(&after);
            wide.refit(&after);
            prop_assert_eq!(bvh.validate(), Ok(()));
            prop_assert_eq!(
                bvh.root_box(),
                after.iter().fold(Aabb::EMPTY, |a, b| a.union(b))
            );
            self_pairs(&bvh, &keep, &mut ws);
            prop_assert_eq!(ws.pairs(), &brute_self(&after, keep)[..]);
            self_pairs_wide(&wide, &keep, &mut wide_ws);
            prop_assert_eq!(wide_ws.pairs(), ws.pairs());
            // Without a filter every overlapping pair comes back.
            self_pairs(&bvh, &|_, _| true, &mut ws);
            prop_assert_eq!(ws.pairs(), &brute_self(&after, |_, _| true)[..]);
            self_pairs_wide(&wide, &|_, _| true, &mut wide_ws);
            prop_assert_eq!(wide_ws.pairs(), ws.pairs());
        }
        Ok(())
    }

    fn vec3s(n: usize, r: f32) -> impl Strategy<Value = Vec<Vec3>> {
        prop::collection::vec(
            (-r..r, -r..r, -r..r).prop_map(|(x, y, z)| Vec3::new(x, y, z)),
            n,
        )
    }

    /// Vertices in the unit cube, triangles with random (possibly repeated) corners, and a displacement.
    fn soup() -> impl Strategy<Value = (Vec<Vec3>, Vec<Vec3>, Vec<[u32; 3]>)> {
        (3_usize..40).prop_flat_map(|nv| {
            let v = 0..nv as u32;
            (
                vec3s(nv, 1.0),
                vec3s(nv, 0.5),
                prop::collection::vec([v.clone(), v.clone(), v], 0..120),
            )
        })
    }

    /// Grid size, per-vertex noise, displacement, x–y jitter (cells) and crumple amplitude (metres).
    fn perturbed_grid() -> impl Strategy<Value = (usize, usize, Vec<Vec3>, Vec<Vec3>, f32, f32)> {
        (2_usize..14, 2_usize..14).prop_flat_map(|(nx, ny)| {
            (
                Just(nx),
                Just(ny),
                vec3s(nx * ny, 1.0),
                vec3s(nx * ny, 0.05),
                0.0_f32..0.4,
                0.0_f32..0.2,
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        #[test]
        fn self_pairs_match_brute_force_on_soups((x, dx, tris) in soup(), margin in 0.0_f32..0.2) {
            check_self_and_refit(&x, &dx, &tris, margin)?;
        }

        #[test]
        fn self_pairs_match_brute_force_on_perturbed_grids(
            (nx, ny, noise, dx, jitter, crumple) in perturbed_grid(),
            margin in 0.0_f32..0.05,
        ) {
            let (x, tris) = grid(nx, ny, &noise, jitter, crumple);
            check_self_and_refit(&x, &dx, &tris, margin)?;
        }

        #[test]
        fn swept_self_pairs_match_brute_force_on_grids(
            (nx, ny, noise, dx, jitter, crumple) in perturbed_grid(),
            margin in 0.0_f32..0.01,
        ) {
            let (x0, tris) = grid(nx, ny, &noise, jitter, crumple);
            let x1: Vec<Vec3> = x0.iter().zip(&dx).map(|(a, d)| *a + *d).collect();
            let mut swept = vec![Aabb::EMPTY; tris.len()];
            swept_triangle_boxes(&x0, &x1, &tris, margin, &mut swept);
            let keep = |i: u32, j: u32| !shares_vertex(tris[i as usize], tris[j as usize]);
            // The topology built at rest, refitted to the swept boxes, as a CCD round does.
            let mut bvh = Bvh::build(&boxes_of(&x0, &tris, 0.0));
            bvh.refit(&swept);
            prop_assert_eq!(bvh.validate(), Ok(()));
            let mut ws = PairWorkspace::new();
            self_pairs(&bvh, &keep, &mut ws);
            prop_assert_eq!(ws.pairs(), &brute_self(&swept, keep)[..]);
            let mut wide = WideBvh::from_tree(&Bvh::build(&boxes_of(&x0, &tris, 0.0)));
            wide.refit(&swept);
            let mut wide_ws = PairWorkspace::new();
            self_pairs_wide(&wide, &keep, &mut wide_ws);
            prop_assert_eq!(wide_ws.pairs(), ws.pairs());
        }

        #[test]
        fn cross_pairs_match_brute_force(
            (xa, dxa, ta) in soup(),
            (xb, dxb, tb) in soup(),
            margin in 0.0_f32..0.1,
        ) {
            for strategy in STRATEGIES {
                let (a0, b0) = (boxes_of(&xa, &ta, margin), boxes_of(&xb, &tb, margin));
                let mut bvh_a = Bvh::build_with(&a0, strategy);
                let mut bvh_b = Bvh::build_with(&b0, strategy);
                let mut ws = PairWorkspace::new();
                cross_pairs(&bvh_a, &bvh_b, &mut ws);
                prop_assert_eq!(ws.pairs(), &brute_cross(&a0, &b0)[..]);

                let ma: Vec<Vec3> = xa.iter().zip(&dxa).map(|(p, d)| *p + *d).collect();
                let mb: Vec<Vec3> = xb.iter().zip(&dxb).map(|(p, d)| *p - *d).collect();
                let (a1, b1) = (boxes_of(&ma, &ta, margin), boxes_of(&mb, &tb, margin));
                bvh_a.refit(&a1);
                bvh_b.refit(&b1);
                prop_assert_eq!(bvh_a.validate(), Ok(()));
                prop_assert_eq!(bvh_b.validate(), Ok(()));
                cross_pairs(&bvh_a, &bvh_b, &mut ws);
                prop_assert_eq!(ws.pairs(), &brute_cross(&a1, &b1)[..]);
                cross_pairs(&bvh_b, &bvh_a, &mut ws);
                let mut swapped: Vec<(u32, u32)> =
                    brute_cross(&a1, &b1).into_iter().map(|(i, j)| (j, i)).collect();
                swapped.sort_unstable();
                prop_assert_eq!(ws.pairs(), &swapped[..]);
            }
        }
    }

    fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("building a rayon pool")
            .install(f)
    }

    /// A crumpled 65 × 65 grid (8 192 triangles): above every parallel threshold.
    /// The wide tree over `bvh` (fitted to its boxes) gives [`self_pairs`]' pairs.
    fn assert_wide_matches(bvh: &Bvh, keep: &(impl Fn(u32, u32) -> bool + Sync)) {
        let wide = WideBvh::from_tree(bvh);
        assert_eq!(wide.num_primitives(), bvh.num_primitives());
        let (mut ws, mut wide_ws) = (PairWorkspace::new(), PairWorkspace::new());
        self_pairs(bvh, keep, &mut ws);
        self_pairs_wide(&wide, keep, &mut wide_ws);
        assert_eq!(wide_ws.pairs(), ws.pairs());
    }

    #[test]
    fn wide_self_pairs_match_the_binary_query() {
        let (x, tris) = crumpled_65();
        let keep = |i: u32, j: u32| !shares_vertex(tris[i as usize], tris[j as usize]);
        for margin in [0.0, 0.004, 0.02] {
            let boxes = boxes_of(&x, &tris, margin);
            for strategy in STRATEGIES {
                let bvh = Bvh::build_with(&boxes, strategy);
                assert_wide_matches(&bvh, &keep);
                assert_wide_matches(&bvh, &|_, _| true);
            }
        }
        // Refitted far from the shape it was built on, and with every triangle numbered
        // apart from its neighbours (groups queried member by member).
        let mut bvh = Bvh::build(&boxes_of(&x, &tris, 0.0));
        let mut wide = WideBvh::from_tree(&bvh);
        let mut rng = Rng(11);
        let moved: Vec<Vec3> = x.iter().map(|p| *p + 0.1 * rng.vec3()).collect();
        let mut boxes = boxes_of(&moved, &tris, 0.004);
        let len = boxes.len();
        for i in (0..len).step_by(3) {
            boxes.swap(i, len - 1 - i);
        }
        bvh.refit(&boxes);
        wide.refit(&boxes);
        let (mut ws, mut wide_ws) = (PairWorkspace::new(), PairWorkspace::new());
        self_pairs(&bvh, &keep, &mut ws);
        self_pairs_wide(&wide, &keep, &mut wide_ws);
        assert!(!ws.pairs().is_empty());
        assert_eq!(wide_ws.pairs(), ws.pairs());
        assert_eq!(ws.pairs(), &brute_self(&boxes, keep)[..]);
    }

    #[test]
    fn wide_tree_is_bit_identical_for_1_and_4_threads() {
        let (x, tris) = crumpled_65();
        let keep = |i: u32, j: u32| !shares_vertex(tris[i as usize], tris[j as usize]);
        let bvh = Bvh::build(&boxes_of(&x, &tris, 0.0));
        let boxes = boxes_of(&x, &tris, 0.004);
        let run = |threads| {
            in_pool(threads, || {
                let mut wide = WideBvh::from_tree(&bvh);
                wide.refit(&boxes);
                let mut ws = PairWorkspace::new();
                self_pairs_wide(&wide, &keep, &mut ws);
                (wide.nodes.clone(), ws.pairs().to_vec())
            })
        };
        let (one, four) = (run(1), run(4));
        // Large enough for the parallel refit.
        assert!(one.0.len() > 2 * 2048, "{} wide nodes", one.0.len());
        assert_eq!(one, four);
        assert_eq!(one.1, brute_self(&boxes, keep));
    }

    #[test]
    fn wide_tree_on_small_deep_and_degenerate_trees() {
        let keep_all = |_: u32, _: u32| true;
        for n in 0..6 {
            let boxes: Vec<Aabb> = (0..n)
                .map(|i| {
                    Aabb::new(
                        Vec3::splat(i as f32 * 0.5),
                        Vec3::splat(i as f32 * 0.5 + 1.0),
                    )
                })
                .collect();
            assert_wide_matches(&Bvh::build(&boxes), &keep_all);
        }
        // Identical boxes: every pair.
        let same = vec![Aabb::new(Vec3::splat(-1.0), Vec3::splat(2.0)); 300];
        assert_wide_matches(&Bvh::build(&same), &keep_all);
        assert_wide_matches(&Bvh::build(&same), &|i, j| (i + j) % 2 == 1);
        // Empty and NaN boxes pair with nothing.
        let mut odd = vec![Aabb::new(Vec3::ZERO, Vec3::ONE); 40];
        odd[1] = Aabb::EMPTY;
        odd[4] = Aabb::new(Vec3::new(f32::NAN, 0.0, 0.0), Vec3::ONE);
        odd[17] = Aabb::new(Vec3::ZERO, Vec3::new(1.0, f32::NAN, 1.0));
        let bvh = Bvh::build(&odd);
        assert_wide_matches(&bvh, &keep_all);
        let mut ws = PairWorkspace::new();
        self_pairs_wide(&WideBvh::from_tree(&bvh), &keep_all, &mut ws);
        assert_eq!(ws.pairs(), &brute_self(&odd, keep_all)[..]);
        // A tree as deep as the build allows.
        let growing = geometrically_growing_boxes();
        let deep = Bvh::build_capped(&growing, BuildStrategy::BinnedSah, usize::MAX);
        assert!(deep.depth() > 40);
        assert_wide_matches(&deep, &keep_all);
    }

    fn crumpled_65() -> (Vec<Vec3>, Vec<[u32; 3]>) {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let noise: Vec<Vec3> = (0..65 * 65).map(|_| rng.vec3()).collect();
        grid(65, 65, &noise, 0.3, 0.05)
    }

    #[test]
    fn pairs_bit_identical_for_1_and_4_threads() {
        let (x, tris) = crumpled_65();
        let boxes = boxes_of(&x, &tris, 0.004);
        let keep = |i: u32, j: u32| !shares_vertex(tris[i as usize], tris[j as usize]);
        // Obstacle: the same cloth shifted up by half its crumple amplitude.
        let shifted: Vec<Vec3> = x
            .iter()
            .map(|p| *p + Vec3::new(0.003, 0.0, 0.025))
            .collect();
        let obstacle = boxes_of(&shifted, &tris, 0.004);
        let run = |threads: usize| {
            in_pool(threads, || {
                let mut bvh = Bvh::build(&boxes);
                let obstacle_bvh = Bvh::build(&obstacle);
                let mut self_ws = PairWorkspace::new();
                let mut cross_ws = PairWorkspace::new();
                self_pairs(&bvh, &keep, &mut self_ws);
                cross_pairs(&bvh, &obstacle_bvh, &mut cross_ws);
                let self_before = self_ws.pairs().to_vec();
                // Refit (parallel halves above REFIT_SERIAL_NODES) to the obstacle's boxes.
                bvh.refit(&obstacle);
                self_pairs(&bvh, &keep, &mut self_ws);
                let nodes = bvh.nodes().to_vec();
                (
                    self_before,
                    cross_ws.pairs().to_vec(),
                    self_ws.pairs().to_vec(),
                    nodes,
                )
            })
        };
        let one = run(1);
        let four = run(4);
        assert!(!one.0.is_empty() && !one.1.is_empty());
        assert_eq!(one.0, four.0);
        assert_eq!(one.1, four.1);
        assert_eq!(one.2, four.2);
        let bits = |n: &[BvhNode]| -> Vec<[u32; 8]> {
            n.iter()
                .map(|n| {
                    let (a, b) = (n.aabb().min, n.aabb().max);
                    let m = [a.x, a.y, a.z, b.x, b.y, b.z].map(f32::to_bits);
                    [m[0], m[1], m[2], m[3], m[4], m[5], n.index, n.max_primitive]
                })
                .collect()
        };
        assert_eq!(bits(&one.3), bits(&four.3));
        // And both equal the reference.
        assert_eq!(one.0, brute_self(&boxes, keep));
        assert_eq!(one.1, brute_cross(&boxes, &obstacle));
        assert_eq!(one.2, brute_self(&obstacle, keep));
    }

    #[test]
    fn steady_state_queries_do_not_grow_the_workspace() {
        let (x, tris) = crumpled_65();
        let boxes = boxes_of(&x, &tris, 0.004);
        let keep = |i: u32, j: u32| !shares_vertex(tris[i as usize], tris[j as usize]);
        let bvh = Bvh::build(&boxes);
        let mut ws = PairWorkspace::new();
        self_pairs(&bvh, &keep, &mut ws);
        assert!(ws.grew(), "the first query fills an empty workspace");
        let first = ws.pairs().to_vec();
        self_pairs(&bvh, &keep, &mut ws);
        assert!(!ws.grew());
        assert_eq!(ws.pairs(), &first[..]);
        // Fewer pairs (a smaller margin) fit in the same buffers too.
        let mut bvh = bvh;
        bvh.refit(&boxes_of(&x, &tris, 0.001));
        self_pairs(&bvh, &keep, &mut ws);
        assert!(!ws.grew());
        assert!(ws.pairs().len() < first.len());
        // More pairs than ever before: an overflow.
        bvh.refit(&boxes_of(&x, &tris, 0.02));
        self_pairs(&bvh, &keep, &mut ws);
        assert!(ws.grew());

        let small = boxes_of(&x[..200], &tris[..100], 0.01);
        let other = Bvh::build(&small);
        let mut cross_ws = PairWorkspace::new();
        cross_pairs(&bvh, &other, &mut cross_ws);
        assert!(cross_ws.grew());
        cross_pairs(&bvh, &other, &mut cross_ws);
        assert!(!cross_ws.grew());
        assert_eq!(
            cross_ws.pairs(),
            &brute_cross(&boxes_of(&x, &tris, 0.02), &small)[..]
        );
    }

    #[test]
    fn empty_and_single_primitive_trees() {
        let empty = Bvh::build(&[]);
        assert_eq!(empty.num_primitives(), 0);
        assert_eq!(empty.root_box(), Aabb::EMPTY);
        assert_eq!(empty.validate(), Ok(()));
        assert_eq!(empty.depth(), 0);
        assert_eq!(empty.sah_cost(), 0.0);
        let mut empty = empty;
        empty.refit(&[]);
        let mut ws = PairWorkspace::new();
        self_pairs(&empty, &|_, _| true, &mut ws);
        assert!(ws.pairs().is_empty() && !ws.grew());

        let b = Aabb::new(Vec3::ZERO, Vec3::ONE);
        let mut one = Bvh::build(&[b]);
        assert_eq!(one.num_primitives(), 1);
        assert_eq!(one.root_box(), b);
        assert_eq!(one.validate(), Ok(()));
        self_pairs(&one, &|_, _| true, &mut ws);
        assert!(ws.pairs().is_empty());
        cross_pairs(&one, &one, &mut ws);
        assert_eq!(ws.pairs(), &[(0, 0)]);
        cross_pairs(&one, &empty, &mut ws);
        assert!(ws.pairs().is_empty());
        cross_pairs(&empty, &one, &mut ws);
        assert!(ws.pairs().is_empty());
        let moved = b.inflate(1.0);
        one.refit(&[moved]);
        assert_eq!(one.root_box(), moved);
        assert_eq!(one.primitive_box(0), moved);
    }

    #[test]
    fn identical_boxes_give_every_pair() {
        let n = 700_u32;
        let boxes = vec![Aabb::new(Vec3::splat(-1.0), Vec3::splat(2.0)); n as usize];
        for strategy in STRATEGIES {
            let bvh = Bvh::build_with(&boxes, strategy);
            assert_eq!(bvh.validate(), Ok(()));
            // Equal centroids: median splits by index, so the tree is balanced.
            assert_eq!(bvh.depth(), 10);
            let mut ws = PairWorkspace::new();
            self_pairs(&bvh, &|_, _| true, &mut ws);
            let all: Vec<(u32, u32)> = (0..n)
                .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
                .collect();
            assert_eq!(ws.pairs(), &all[..]);
            let odd_sum = |i: u32, j: u32| (i + j) % 2 == 1;
            self_pairs(&bvh, &odd_sum, &mut ws);
            let filtered: Vec<(u32, u32)> = all
                .iter()
                .copied()
                .filter(|&(i, j)| odd_sum(i, j))
                .collect();
            assert_eq!(ws.pairs(), &filtered[..]);
        }
    }

    #[test]
    fn flat_boxes_that_only_touch_are_pairs() {
        // A flat 20 × 20 grid with no margin: every leaf box has zero thickness in z, and neighbours' boxes
        // share only a face or an edge. Closed boxes count those contacts.
        let noise = vec![Vec3::ZERO; 20 * 20];
        let (x, tris) = grid(20, 20, &noise, 0.0, 0.0);
        let boxes = boxes_of(&x, &tris, 0.0);
        assert!(boxes.iter().all(|b| b.min.z == 0.0 && b.max.z == 0.0));
        for strategy in STRATEGIES {
            let bvh = Bvh::build_with(&boxes, strategy);
            assert_eq!(bvh.validate(), Ok(()));
            let mut ws = PairWorkspace::new();
            self_pairs(&bvh, &|_, _| true, &mut ws);
            let expected = brute_self(&boxes, |_, _| true);
            assert_eq!(ws.pairs(), &expected[..]);
            // Triangles 0 and 2 (cells (0,0) and (1,0)) touch along the line x = h only.
            assert!(ws.pairs().contains(&(0, 2)));
        }
        // Point-like boxes: degenerate in every axis.
        let points: Vec<Aabb> = (0..50)
            .map(|i| Aabb::from_points(&[Vec3::new((i % 7) as f32, 0.0, 0.0)]))
            .collect();
        let bvh = Bvh::build(&points);
        assert_eq!(bvh.validate(), Ok(()));
        let mut ws = PairWorkspace::new();
        self_pairs(&bvh, &|_, _| true, &mut ws);
        assert_eq!(ws.pairs(), &brute_self(&points, |_, _| true)[..]);
    }

    #[test]
    fn empty_and_nan_boxes_pair_with_nothing() {
        let mut boxes = vec![Aabb::new(Vec3::ZERO, Vec3::ONE); 6];
        boxes[1] = Aabb::EMPTY;
        boxes[4] = Aabb::new(Vec3::new(f32::NAN, 0.0, 0.0), Vec3::ONE);
        let bvh = Bvh::build(&boxes);
        let mut ws = PairWorkspace::new();
        self_pairs(&bvh, &|_, _| true, &mut ws);
        assert_eq!(
            ws.pairs(),
            &[(0, 2), (0, 3), (0, 5), (2, 3), (2, 5), (3, 5)]
        );
        assert_eq!(ws.pairs(), &brute_self(&boxes, |_, _| true)[..]);
    }

    /// Cubes at x = 16^k (k from -30 to 30), of size proportional to x: each SAH split of them
    /// peels off one box, so an uncapped build is nearly as deep as the box count.
    fn geometrically_growing_boxes() -> Vec<Aabb> {
        (0..61)
            .map(|k| {
                let c = 2.0_f32.powi(4 * k - 120);
                Aabb::new(
                    Vec3::new(c, 0.0, 0.0),
                    Vec3::new(1.05 * c, 0.05 * c, 0.05 * c),
                )
            })
            .collect()
    }

    #[test]
    fn depth_stays_bounded_for_geometrically_growing_boxes() {
        // Cubes at x = 16^k, of size proportional to x: all but the largest centroid fall into the first of
        // the 16 bins, so each SAH split peels off one box. Without the depth cap the tree would be nearly
        // as deep as the primitive count; the cap switches to median splits at depth MAX_SAH_DEPTH.
        let boxes = geometrically_growing_boxes();
        let uncapped = Bvh::build_capped(&boxes, BuildStrategy::BinnedSah, usize::MAX).depth();
        assert!(
            uncapped > 40,
            "the SAH splits are unbalanced: depth {uncapped}"
        );
        for cap in [4, 20, MAX_SAH_DEPTH] {
            let bvh = Bvh::build_capped(&boxes, BuildStrategy::BinnedSah, cap);
            assert_eq!(bvh.validate(), Ok(()));
            // Median splits below the cap: at most ⌈log2 61⌉ = 6 more levels.
            let depth = bvh.depth();
            assert!(depth <= (cap + 6).min(uncapped), "cap {cap}: depth {depth}");
            let mut ws = PairWorkspace::new();
            self_pairs(&bvh, &|_, _| true, &mut ws);
            assert_eq!(ws.pairs(), &brute_self(&boxes, |_, _| true)[..]);
        }
    }

    #[test]
    fn refit_keeps_children_inside_parents() {
        let (x, tris) = crumpled_65();
        let mut bvh = Bvh::build(&boxes_of(&x, &tris, 0.0));
        let mut rng = Rng(7);
        let moved: Vec<Vec3> = x.iter().map(|p| *p + 0.2 * rng.vec3()).collect();
        let boxes = boxes_of(&moved, &tris, 0.003);
        bvh.refit(&boxes);
        assert_eq!(bvh.validate(), Ok(()));
        for (i, node) in bvh.nodes().iter().enumerate() {
            match node.children(i) {
                Some((l, r)) => {
                    let (l, r) = (bvh.nodes()[l].aabb(), bvh.nodes()[r].aabb());
                    assert_eq!(node.aabb(), l.union(&r));
                }
                None => {
                    let p = node.primitive().expect("a leaf has a primitive") as usize;
                    assert_eq!(node.aabb(), boxes[p]);
                }
            }
        }
        // A stale tree (boxes moved without a refit) is caught by validate.
        let mut stale = bvh.clone();
        let leaf = stale.leaf_of[0] as usize;
        stale.nodes[leaf].set_aabb(boxes[0].inflate(1.0));
        assert!(matches!(
            stale.validate(),
            Err(BvhError::ChildOutsideParent { .. })
        ));
        let mut wrong_max = bvh.clone();
        wrong_max.nodes[0].max_primitive = 0;
        assert_eq!(
            wrong_max.validate(),
            Err(BvhError::WrongMaxPrimitive { node: 0 })
        );
    }

    #[test]
    fn build_is_deterministic_and_balanced_on_a_grid() {
        let (x, tris) = crumpled_65();
        let boxes = boxes_of(&x, &tris, 0.0);
        for strategy in STRATEGIES {
            let a = Bvh::build_with(&boxes, strategy);
            let b = in_pool(3, || Bvh::build_with(&boxes, strategy));
            assert_eq!(a.nodes(), b.nodes());
            assert_eq!(a.leaf_of, b.leaf_of);
            // 8 192 leaves: a good tree on a grid is within a few levels of log2 n = 13.
            assert!(a.depth() <= 20, "{strategy:?}: depth {}", a.depth());
        }
    }

    #[test]
    fn sah_cost_grows_when_the_refitted_tree_no_longer_fits_the_shape() {
        let (x, tris) = crumpled_65();
        let boxes = boxes_of(&x, &tris, 0.0);
        let mut bvh = Bvh::build(&boxes);
        let built = bvh.sah_cost();
        // Scramble which triangle sits where: a permutation of the boxes.
        let mut scrambled = boxes.clone();
        let mut rng = Rng(99);
        for i in (1..scrambled.len()).rev() {
            let j = ((rng.next() * 0.5 + 0.5) * (i + 1) as f32) as usize;
            scrambled.swap(i, j.min(i));
        }
        bvh.refit(&scrambled);
        let refitted = bvh.sah_cost();
        let rebuilt = Bvh::build(&scrambled).sah_cost();
        assert!(
            refitted > 10.0 * rebuilt,
            "refitted {refitted}, rebuilt {rebuilt}"
        );
        assert!(
            (rebuilt - built).abs() < 0.1 * built,
            "built {built}, rebuilt {rebuilt}"
        );
        // SAH beats the object median on the crumpled grid.
        let median = Bvh::build_with(&boxes, BuildStrategy::MedianSplit).sah_cost();
        assert!(built <= median * 1.01, "sah {built}, median {median}");
    }

    #[test]
    fn swept_box_contains_the_moving_triangle() {
        let mut rng = Rng(3);
        for _ in 0..200 {
            let x0 = [rng.vec3(), rng.vec3(), rng.vec3()];
            let x1 = [rng.vec3(), rng.vec3(), rng.vec3()];
            let mut out = [Aabb::EMPTY];
            swept_triangle_boxes(&x0, &x1, &[[0, 1, 2]], 0.0, &mut out);
            for s in 0..=8 {
                let t = s as f32 / 8.0;
                let xt: Vec<Vec3> = x0.iter().zip(&x1).map(|(a, b)| a.lerp(*b, t)).collect();
                for (u, v) in [
                    (0.0, 0.0),
                    (1.0, 0.0),
                    (0.0, 1.0),
                    (0.3, 0.3),
                    (0.5, 0.5),
                    (0.1, 0.7),
                ] {
                    let p = xt[0] * (1.0 - u - v) + xt[1] * u + xt[2] * v;
                    // f32 round-off in the interpolation: allow a few ulps of the unit scale.
                    assert!(
                        out[0].inflate(1e-6).contains(&Aabb::from_points(&[p])),
                        "{p} outside {:?}",
                        out[0]
                    );
                }
            }
            let mut at_rest = [Aabb::EMPTY];
            triangle_boxes(&x0, &[[0, 1, 2]], 0.0, &mut at_rest);
            assert!(out[0].contains(&at_rest[0]));
        }
    }

    #[test]
    fn triangle_boxes_parallel_chunks_match_serial() {
        let (x, tris) = crumpled_65();
        let parallel = in_pool(4, || boxes_of(&x, &tris, 0.01));
        for (t, b) in tris.iter().zip(&parallel) {
            let expected = Aabb::from_points(&t.map(|v| x[v as usize])).inflate(0.01);
            assert_eq!(*b, expected);
        }
    }

    #[test]
    fn aabb_basics() {
        let a = Aabb::from_points(&[Vec3::new(1.0, 2.0, 3.0), Vec3::new(-1.0, 0.0, 5.0)]);
        assert_eq!(
            a,
            Aabb::new(Vec3::new(-1.0, 0.0, 3.0), Vec3::new(1.0, 2.0, 5.0))
        );
        assert_eq!(Aabb::from_points(&[]), Aabb::EMPTY);
        assert!(Aabb::EMPTY.is_empty() && !a.is_empty());
        assert_eq!(a.union(&Aabb::EMPTY), a);
        assert_eq!(Aabb::EMPTY.union(&a), a);
        assert!(!a.overlaps(&Aabb::EMPTY) && !Aabb::EMPTY.overlaps(&Aabb::EMPTY));
        assert!(Aabb::EMPTY.inflate(1.0).is_empty());
        // Touching faces overlap; a gap does not.
        let right = Aabb::new(Vec3::new(1.0, 0.0, 3.0), Vec3::new(2.0, 1.0, 4.0));
        assert!(a.overlaps(&right) && right.overlaps(&a));
        let gap = Aabb::new(Vec3::new(1.5, 0.0, 3.0), Vec3::new(2.0, 1.0, 4.0));
        assert!(!a.overlaps(&gap));
        assert!(a.inflate(0.5).overlaps(&gap));
        assert_eq!(a.inflate(0.5).min, Vec3::new(-1.5, -0.5, 2.5));
        let mut g = a;
        g.grow(Vec3::new(0.0, 7.0, 0.0));
        assert_eq!(
            g,
            Aabb::new(Vec3::new(-1.0, 0.0, 0.0), Vec3::new(1.0, 7.0, 5.0))
        );
        g.grow(Vec3::NAN);
        assert_eq!(g.max.y, 7.0);
        assert!(g.contains(&a) && !a.contains(&g) && a.contains(&Aabb::EMPTY));
        assert_eq!(a.surface_area(), 2.0 * (2.0 * 2.0 + 2.0 * 2.0 + 2.0 * 2.0));
        assert_eq!(Aabb::EMPTY.surface_area(), 0.0);
        assert_eq!(a.center(), Vec3::new(0.0, 1.0, 4.0));
        assert_eq!(Aabb::default(), Aabb::EMPTY);
    }
}

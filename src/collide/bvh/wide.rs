//! A four-wide copy of a [`Bvh`] for the full self query: the same leaves under nodes of up to
//! four children whose boxes are stored axis by axis, so one node's children are tested against a
//! query box together ([`self_pairs_wide`]).
//!
//! # Layout
//!
//! [`WideBvh::from_tree`] collapses the binary tree: a wide node takes its binary node's two
//! children and, while it has fewer than four, replaces the internal child with the most leaves
//! (the first on a tie) by that child's two children. Each child is a *lane*: a leaf (its
//! primitive) or a wide node, with its box in lane `k` of six `Vec4`s (the lower and upper
//! corners, axis by axis) and the largest primitive index under it. Unused lanes hold the empty
//! box and overlap nothing. Wide nodes are numbered in depth-first pre-order with the lanes in
//! the binary tree's left-to-right order, so a lane's subtree is the contiguous range from its
//! node up to the next lane's node: a refit is a reverse loop, and the subtrees of a node's
//! lanes are disjoint slices refitted in parallel. Each level of the wide tree consumes at least
//! one binary level, so it is no deeper than [`MAX_DEPTH`], and a traversal's stack (at most
//! three pending lanes per level) fits in `3 MAX_DEPTH + 1` entries.
//!
//! # Exactness
//!
//! A lane is entered when its box meets the query and its largest primitive is past the query's
//! own, as in the binary traversal; a node's box holds every leaf box below it (a refit takes
//! the NaN-ignoring minima and maxima of [`Aabb::union`]), and the leaf test is the closed-box
//! overlap of [`Aabb::overlaps`] written lane-wise (the same six comparisons, false for a NaN
//! or an empty box). So a query reports exactly the leaves the binary traversal reports, in
//! another order, and [`self_pairs_wide`] sorts each primitive's partners: its output is
//! [`self_pairs`](super::self_pairs)' (`wide_self_pairs_match_the_binary_query` below).
#![deny(unsafe_code)]

use std::ops::Range;

use glam::{BVec4A, Vec3, Vec4};

use super::{Aabb, Bvh, LEAF_BIT, MAX_DEPTH, PairWorkspace, SELF_QUERY_GROUP, sort_tail};
use crate::runtime::executor::{join, parallel_here};

/// Marks an unused lane of a [`WideNode`].
const NO_CHILD: u32 = u32::MAX;

/// Wide subtrees with at most this many nodes are refitted serially; larger ones split their
/// lanes' subtrees into parallel tasks (about the binary refit's split, four nodes to a wide one).
const WIDE_REFIT_SERIAL_NODES: usize = 2048;

/// Entries of a traversal stack: at most three pending lanes per level of a tree no deeper than
/// [`MAX_DEPTH`], and the root.
const WIDE_STACK: usize = 3 * MAX_DEPTH + 1;

/// One node of a [`WideBvh`]: the boxes of up to four children, axis by axis, 128 bytes.
///
/// `lo[a]` and `hi[a]` hold lane `k`'s lower and upper corner on axis `a` in their lane `k`.
/// `child[k]`: `LEAF_BIT | primitive` for a leaf, the wide node's index for an internal child,
/// [`NO_CHILD`] for an unused lane (its box is empty). `max_primitive[k]`: the largest primitive
/// index under lane `k`.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct WideNode {
    lo: [Vec4; 3],
    hi: [Vec4; 3],
    child: [u32; 4],
    max_primitive: [u32; 4],
}

const _: () = assert!(std::mem::size_of::<WideNode>() == 128);
const _: () = assert!(std::mem::align_of::<WideNode>() == 64);

impl WideNode {
    const EMPTY: WideNode = WideNode {
        lo: [Vec4::splat(f32::INFINITY); 3],
        hi: [Vec4::splat(f32::NEG_INFINITY); 3],
        child: [NO_CHILD; 4],
        max_primitive: [0; 4],
    };

    /// Lane `k`'s box.
    #[inline]
    fn lane_box(&self, k: usize) -> Aabb {
        Aabb::new(
            Vec3::new(self.lo[0][k], self.lo[1][k], self.lo[2][k]),
            Vec3::new(self.hi[0][k], self.hi[1][k], self.hi[2][k]),
        )
    }

    #[inline]
    fn set_lane_box(&mut self, k: usize, b: &Aabb) {
        for a in 0..3 {
            self.lo[a][k] = b.min[a];
            self.hi[a][k] = b.max[a];
        }
    }

    /// The union of the lanes' boxes ([`Aabb::union`]: minima and maxima ignoring NaN).
    #[inline]
    fn union(&self) -> Aabb {
        (0..4).fold(Aabb::EMPTY, |u, k| u.union(&self.lane_box(k)))
    }

    /// The lanes whose boxes meet `q` ([`Aabb::overlaps`], lane-wise), as bits.
    #[inline]
    fn overlapping(&self, q: &SplatBox) -> u32 {
        let m: BVec4A = self.lo[0].cmple(q.hi[0])
            & self.lo[1].cmple(q.hi[1])
            & self.lo[2].cmple(q.hi[2])
            & q.lo[0].cmple(self.hi[0])
            & q.lo[1].cmple(self.hi[1])
            & q.lo[2].cmple(self.hi[2]);
        m.bitmask()
    }
}

/// A query box with each coordinate in every lane.
struct SplatBox {
    lo: [Vec4; 3],
    hi: [Vec4; 3],
}

impl SplatBox {
    #[inline]
    fn new(b: &Aabb) -> Self {
        Self {
            lo: [0, 1, 2].map(|a| Vec4::splat(b.min[a])),
            hi: [0, 1, 2].map(|a| Vec4::splat(b.max[a])),
        }
    }
}

/// A four-wide tree over the primitives of a [`Bvh`] (see the module doc): built once from the
/// binary tree, refitted to new primitive boxes like it, queried by [`self_pairs_wide`].
#[derive(Clone, Debug, Default)]
pub struct WideBvh {
    /// Wide nodes in depth-first pre-order (none for an empty tree).
    pub(super) nodes: Vec<WideNode>,
    /// Primitive boxes of the last refit, by primitive.
    boxes: Vec<Aabb>,
}

impl WideBvh {
    /// The wide tree over `tree`'s leaves, fitted to `tree`'s current leaf boxes. Allocates;
    /// meant for cloth creation, beside the binary build.
    #[must_use]
    pub fn from_tree(tree: &Bvh) -> WideBvh {
        let n = tree.num_primitives();
        let mut wide = WideBvh {
            nodes: Vec::with_capacity(n.div_ceil(2)),
            boxes: vec![Aabb::EMPTY; n],
        };
        if n > 0 {
            let leaves = leaf_counts(tree);
            collapse(tree, &leaves, 0, &mut wide.nodes);
            let boxes: Vec<Aabb> = (0..n).map(|p| tree.primitive_box(p)).collect();
            wide.refit(&boxes);
        }
        wide
    }

    /// Number of primitives.
    #[must_use]
    pub fn num_primitives(&self) -> usize {
        self.boxes.len()
    }

    /// Number of wide nodes.
    #[must_use]
    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Replaces the primitive boxes with `boxes` and recomputes every lane's box, bottom-up.
    /// `O(n)`, no allocation; large trees refit their root's subtrees in parallel, each box the
    /// same for any thread count.
    ///
    /// # Panics
    /// If `boxes.len() != num_primitives()`.
    pub fn refit(&mut self, boxes: &[Aabb]) {
        assert_eq!(
            boxes.len(),
            self.boxes.len(),
            "refit needs one box per primitive of the tree"
        );
        self.boxes.copy_from_slice(boxes);
        refit_wide(&mut self.nodes, 0, boxes);
    }

    /// Calls `visit(j)` for every primitive `j ≥ min_primitive` whose box meets `query`. Fixed
    /// stack of [`WIDE_STACK`] entries.
    #[inline]
    fn traverse(&self, query: &Aabb, min_primitive: u32, mut visit: impl FnMut(u32)) {
        if self.nodes.is_empty() {
            return;
        }
        let q = SplatBox::new(query);
        let mut stack = [0_u32; WIDE_STACK];
        let mut sp = 1;
        while sp > 0 {
            sp -= 1;
            let n = &self.nodes[stack[sp] as usize];
            let mut lanes = n.overlapping(&q);
            while lanes != 0 {
                let k = lanes.trailing_zeros() as usize;
                lanes &= lanes - 1;
                if n.max_primitive[k] < min_primitive {
                    continue;
                }
                let c = n.child[k];
                if c & LEAF_BIT != 0 {
                    visit(c & !LEAF_BIT);
                } else {
                    // At most three pending lanes per level above this one (module doc).
                    stack[sp] = c;
                    sp += 1;
                }
            }
        }
    }
}

/// Per binary node, the number of leaves under it.
fn leaf_counts(tree: &Bvh) -> Vec<u32> {
    let nodes = tree.nodes();
    let mut count = vec![1_u32; nodes.len()];
    for i in (0..nodes.len()).rev() {
        if let Some((l, r)) = nodes[i].children(i) {
            count[i] = count[l] + count[r];
        }
    }
    count
}

/// Appends the wide node standing for binary node `b` and, after it, its lanes' subtrees in
/// order; returns its index.
fn collapse(tree: &Bvh, leaves: &[u32], b: usize, out: &mut Vec<WideNode>) -> u32 {
    let nodes = tree.nodes();
    // Up to four binary nodes, left to right.
    let mut lanes = [b, 0, 0, 0];
    let mut num = 1;
    if let Some((l, r)) = nodes[b].children(b) {
        lanes[..2].copy_from_slice(&[l, r]);
        num = 2;
    }
    while num < 4 {
        // The internal lane with the most leaves, the first on a tie.
        let widest = (0..num).filter(|&k| !nodes[lanes[k]].is_leaf()).fold(
            None,
            |best: Option<usize>, k| match best {
                Some(w) if leaves[lanes[w]] >= leaves[lanes[k]] => Some(w),
                _ => Some(k),
            },
        );
        let Some(k) = widest else { break };
        let (l, r) = nodes[lanes[k]]
            .children(lanes[k])
            .expect("an internal node has two children");
        lanes.copy_within(k + 1..num, k + 2);
        lanes[k] = l;
        lanes[k + 1] = r;
        num += 1;
    }
    let me = out.len();
    out.push(WideNode::EMPTY);
    for (k, &c) in lanes[..num].iter().enumerate() {
        let node = &nodes[c];
        let child = match node.primitive() {
            Some(p) => LEAF_BIT | p,
            None => collapse(tree, leaves, c, out),
        };
        out[me].child[k] = child;
        out[me].max_primitive[k] = node.max_primitive();
    }
    // A tree has fewer than 2^31 nodes (`MAX_PRIMITIVES`).
    me as u32
}

/// Refits the wide subtree stored in `nodes` (its root at `nodes[0]`, global index `base`).
fn refit_wide(nodes: &mut [WideNode], base: usize, boxes: &[Aabb]) {
    if nodes.len() <= WIDE_REFIT_SERIAL_NODES || !parallel_here() {
        refit_wide_serial(nodes, base, boxes);
        return;
    }
    let end = base + nodes.len();
    let (head, mut rest) = nodes.split_at_mut(1);
    let root = &mut head[0];
    // The subtrees of the root's internal lanes: consecutive ranges of `rest`, in lane order,
    // each from its lane's node up to the next internal lane's node (or the end).
    let internal = |k: usize| {
        let c = root.child[k];
        (c != NO_CHILD && c & LEAF_BIT == 0).then_some(c as usize)
    };
    let mut parts: [(&mut [WideNode], usize); 4] = Default::default();
    let mut num = 0;
    for k in 0..4 {
        let Some(first) = internal(k) else { continue };
        let last = (k + 1..4).find_map(internal).unwrap_or(end);
        let (part, tail) = std::mem::take(&mut rest).split_at_mut(last - first);
        parts[num] = (part, first);
        num += 1;
        rest = tail;
    }
    {
        let [a, b, c, d] = &mut parts;
        join(
            || {
                join(
                    || refit_wide(a.0, a.1, boxes),
                    || refit_wide(b.0, b.1, boxes),
                )
            },
            || {
                join(
                    || refit_wide(c.0, c.1, boxes),
                    || refit_wide(d.0, d.1, boxes),
                )
            },
        );
    }
    let mut part = 0;
    for k in 0..4 {
        let c = root.child[k];
        let b = if c == NO_CHILD {
            continue;
        } else if c & LEAF_BIT != 0 {
            boxes[(c & !LEAF_BIT) as usize]
        } else {
            part += 1;
            parts[part - 1].0[0].union()
        };
        root.set_lane_box(k, &b);
    }
}

/// Serial refit: every child node follows its parent in pre-order, so a reverse loop sees it
/// first.
fn refit_wide_serial(nodes: &mut [WideNode], base: usize, boxes: &[Aabb]) {
    for i in (0..nodes.len()).rev() {
        for k in 0..4 {
            let c = nodes[i].child[k];
            let b = if c == NO_CHILD {
                continue;
            } else if c & LEAF_BIT != 0 {
                boxes[(c & !LEAF_BIT) as usize]
            } else {
                nodes[c as usize - base].union()
            };
            nodes[i].set_lane_box(k, &b);
        }
    }
}

/// The pairs of [`self_pairs`](super::self_pairs), found with the wide tree: every `(i, j)`,
/// `i < j`, of primitives whose current boxes overlap and for which `keep(i, j)` is true, sorted
/// ascending into `ws`, the same list for any thread count.
///
/// Bridson et al. 2002 §5 (candidate pairs from overlapping leaves). The chunks and groups of
/// [`self_pairs`](super::self_pairs): per chunk of [`PAIR_CHUNK`](super::PAIR_CHUNK) primitives,
/// groups of [`SELF_QUERY_GROUP`] consecutive ones lying together query the tree once with their
/// union box. Each leaf found is then tested against the group's eight boxes at once (their
/// corners axis by axis, two `Vec4`s an axis; the members before the leaf's primitive masked
/// off), and the pairs `keep` passes are sorted by `(i, j)`: each member's partners ascending,
/// the members in order, as the member-by-member filtering gave them. No allocation unless
/// [`PairWorkspace::grew`].
pub fn self_pairs_wide<F>(tree: &WideBvh, keep: &F, ws: &mut PairWorkspace)
where
    F: Fn(u32, u32) -> bool + Sync + ?Sized,
{
    let boxes = &tree.boxes[..];
    ws.run_chunked(tree.num_primitives(), |prims, out| {
        let mut group = prims.start;
        while group < prims.end {
            let members = group..(group + SELF_QUERY_GROUP).min(prims.end);
            group = members.end;
            query_group(tree, boxes, members, keep, out);
        }
    });
}

/// The pairs of one group of consecutive primitives `members`, appended to `out` in `(i, j)`
/// order ([`self_pairs_wide`]).
#[inline]
fn query_group<F>(
    tree: &WideBvh,
    boxes: &[Aabb],
    members: Range<u32>,
    keep: &F,
    out: &mut Vec<(u32, u32)>,
) where
    F: Fn(u32, u32) -> bool + Sync + ?Sized,
{
    let own = &boxes[members.start as usize..members.end as usize];
    let (union, area) = own.iter().fold((Aabb::EMPTY, 0.0), |(u, a), b| {
        (u.union(b), a + b.surface_area())
    });
    // One traversal for the group when its members lie together (their box is no larger
    // than their boxes' areas together), else one per member.
    if union.surface_area() > area {
        for i in members {
            let start = out.len();
            tree.traverse(&boxes[i as usize], i + 1, |j| {
                if keep(i, j) {
                    out.push((i, j));
                }
            });
            sort_tail(out, start);
        }
        return;
    }
    // The members' boxes axis by axis, eight lanes (two `Vec4`s) an axis; lanes past the
    // group's end hold the empty box and are masked off below.
    const GROUP: usize = SELF_QUERY_GROUP as usize;
    let mut lo = [[f32::INFINITY; GROUP]; 3];
    let mut hi = [[f32::NEG_INFINITY; GROUP]; 3];
    for (m, b) in own.iter().enumerate() {
        for a in 0..3 {
            lo[a][m] = b.min[a];
            hi[a][m] = b.max[a];
        }
    }
    let half = |x: &[f32; GROUP], h: usize| Vec4::from_slice(&x[4 * h..4 * h + 4]);
    let lo4 = [0, 1].map(|h| [0, 1, 2].map(|a| half(&lo[a], h)));
    let hi4 = [0, 1].map(|h| [0, 1, 2].map(|a| half(&hi[a], h)));
    let first = members.start;
    let count = members.end - first;
    let start = out.len();
    tree.traverse(&union, first + 1, |j| {
        let q = SplatBox::new(&boxes[j as usize]);
        let mut meets = 0;
        for h in 0..2 {
            // [`Aabb::overlaps`] of member and leaf, lane by lane.
            let m: BVec4A = lo4[h][0].cmple(q.hi[0])
                & lo4[h][1].cmple(q.hi[1])
                & lo4[h][2].cmple(q.hi[2])
                & q.lo[0].cmple(hi4[h][0])
                & q.lo[1].cmple(hi4[h][1])
                & q.lo[2].cmple(hi4[h][2]);
            meets |= m.bitmask() << (4 * h);
        }
        // Only members before `j` (`j > first`: the traversal starts past the first member).
        meets &= (1_u32 << (j - first).min(count)) - 1;
        while meets != 0 {
            let i = first + meets.trailing_zeros();
            meets &= meets - 1;
            if keep(i, j) {
                out.push((i, j));
            }
        }
    });
    let tail = &mut out[start..];
    if tail.len() > 1 {
        tail.sort_unstable();
    }
}

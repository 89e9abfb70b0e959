//! A left-looking supernodal numeric `LLᵀ` on faer's symbolic structure, with the two
//! independent subtrees below the top separator factored at the same time.
//!
//! faer's supernodal factorisation (`factorize_supernodal_numeric_llt`) visits the supernodes
//! in order on one thread. It is left-looking: supernode `s` is assembled from its columns of
//! `A`, updated by every descendant `d` whose rows reach into `s`
//! (`L_s ← L_s − L_{d,rows ≥ s} L_{d,rows in s}ᵀ`), then factored (dense Cholesky of the diagonal
//! block, triangular solve of the block below). A supernode therefore reads only its own
//! descendants in the supernodal elimination tree, and two subtrees with no common descendant
//! can be factored at the same time.
//!
//! **The split.** Supernodes are numbered after their descendants. A split is three ranges of
//! supernodes, `[0, k)`, `[k, t)` and the top `[t, n)`, such that no supernode of `[0, k)` has
//! a parent in `[k, t)` (a parent is always later, so `[k, t)` cannot reach into `[0, k)`).
//! The first two ranges are then independent: each is factored by one task, in supernode
//! order, reading and writing only its own range of `L`'s values; the top follows on one
//! thread. With a nested-dissection ordering `[0, k)` and `[k, t)` are the two halves and the
//! top is the first separator. [`SubtreeSplit::new`] takes, over every `k`, the largest `t`
//! this allows and keeps the split with the least critical work
//! `max(w[0, k), w[k, t)) + w[t, n)` (work counted as below).
//!
//! **Determinism.** Each supernode is computed by the same sequence of operations whatever
//! the split and whether the two tasks run in parallel: the descendants' updates in increasing
//! order, each a dense product into a scratch block (faer's `matmul`, sequential) subtracted
//! entry by entry, then faer's dense Cholesky and triangular solve, both sequential. The bits
//! of `L` depend on the pattern and the values only, never on the thread count. They are not
//! the bits of faer's own factorisation (whose update kernel gathers inside the product), so
//! a scene that switches to this factor changes its round-off.
//!
//! Memory: every buffer (the permuted lower triangle's map, two tasks' scratch: a map from
//! rows to local rows, the largest update block, the dense Cholesky's stack) is allocated by
//! [`SupernodalLlt::new`]; [`SupernodalLlt::factor`] allocates nothing.
#![deny(unsafe_code)]

use std::collections::BinaryHeap;

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::cholesky::llt::factor::{
    LltParams, LltRegularization, cholesky_in_place, cholesky_in_place_scratch,
};
use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::solve_lower_triangular_in_place;
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::sparse::linalg::cholesky::supernodal::SymbolicSupernodalCholesky;
use faer::{Accum, MatMut, MatRef, Par, Spec};

const NONE: u32 = u32::MAX;

/// Parts of less than this share of a range's work are not split off as a task of their own.
const MIN_TASK_SHARE: f64 = 0.05;

/// Splits of the task tree below its root: at most `2^MAX_DEPTH` tasks at the bottom, each with
/// its own scratch.
const MAX_DEPTH: u32 = 3;

/// A split of the supernodes `[a, b)`, closed under descendants, into `[a, k)` and `[k, t)`,
/// factored independently, and the top `[t, b)` after them (module doc).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SubtreeSplit {
    /// End of the first part `[a, k)`.
    pub k: usize,
    /// End of the second part `[k, t)`; the top is `[t, b)`.
    pub t: usize,
    /// Work of the three parts (multiply–adds, see [`supernode_work`]).
    pub work: [f64; 3],
}

impl SubtreeSplit {
    /// The split of `[a, b)` of least critical work `max(w₁, w₂) + w_top` for the supernodal
    /// elimination tree `parent` (`NONE` for a root), with `prefix` the prefix sums of the
    /// per-supernode work; `None` when no split has two non-empty parts.
    fn best(parent: &[u32], prefix: &[f64], a: usize, b: usize) -> Option<Self> {
        let w = |x: usize, y: usize| prefix[y] - prefix[x];
        let critical = |s: &SubtreeSplit| s.work[0].max(s.work[1]) + s.work[2];
        let mut best: Option<SubtreeSplit> = None;
        // m(k) = min { parent(s) : a ≤ s < k ≤ parent(s) < b }: the first supernode from k on
        // that a supernode of [a, k) reaches; t may go up to it.
        let mut heap: BinaryHeap<std::cmp::Reverse<u32>> = BinaryHeap::new();
        for k in a + 1..b {
            if parent[k - 1] != NONE && (parent[k - 1] as usize) < b {
                heap.push(std::cmp::Reverse(parent[k - 1]));
            }
            while heap.peek().is_some_and(|r| (r.0 as usize) < k) {
                heap.pop();
            }
            let t = heap.peek().map_or(b, |r| r.0 as usize);
            if t == k {
                continue;
            }
            let split = SubtreeSplit {
                k,
                t,
                work: [w(a, k), w(k, t), w(t, b)],
            };
            if best.is_none_or(|c| critical(&split) < critical(&c)) {
                best = Some(split);
            }
        }
        best
    }
}

/// A node of the task tree: supernodes `[a, b)`, factored as one task, or split.
#[derive(Clone, Copy, Debug)]
struct TaskNode {
    a: usize,
    b: usize,
    /// The split and the nodes of its two parts.
    split: Option<(SubtreeSplit, u32, u32)>,
    /// The scratches of the tasks under this node: `[lo, hi)`; the node's own supernodes (all
    /// of them for a leaf, the top for a split) use `lo`.
    scratch: (u32, u32),
    /// Work of the node's supernodes, and of its longest chain of dependent tasks.
    work: f64,
    critical: f64,
}

/// Builds the task tree of `[a, b)` into `nodes` (children before their parent), splitting
/// while both parts carry at least [`MIN_TASK_SHARE`] of the range's work.
fn build_tasks(
    parent: &[u32],
    prefix: &[f64],
    a: usize,
    b: usize,
    depth: u32,
    next_scratch: &mut u32,
    nodes: &mut Vec<TaskNode>,
) -> u32 {
    let total = prefix[b] - prefix[a];
    let split = (depth < MAX_DEPTH)
        .then(|| SubtreeSplit::best(parent, prefix, a, b))
        .flatten()
        .filter(|s| s.work[0].min(s.work[1]) >= MIN_TASK_SHARE * total);
    let lo = *next_scratch;
    let split = split.map(|s| {
        let left = build_tasks(parent, prefix, a, s.k, depth + 1, next_scratch, nodes);
        let right = build_tasks(parent, prefix, s.k, s.t, depth + 1, next_scratch, nodes);
        (s, left, right)
    });
    let critical = match split {
        Some((s, left, right)) => {
            let c = |i: u32| nodes[i as usize].critical;
            c(left).max(c(right)) + s.work[2]
        }
        None => {
            *next_scratch += 1;
            total
        }
    };
    nodes.push(TaskNode {
        a,
        b,
        split,
        scratch: (lo, *next_scratch),
        work: total,
        critical,
    });
    (nodes.len() - 1) as u32
}

/// Multiply–adds of left-looking supernode `s`: the updates from its descendants (rows of `d`
/// from `s` on, times the columns of `d` falling in `s`, times the columns of `d`), its
/// diagonal block's Cholesky and the triangular solve below it.
fn supernode_work(sym: &SymbolicSupernodalCholesky<u32>, updaters: &[u32], s: usize) -> f64 {
    let (begin, end) = (sym.supernode_begin(), sym.supernode_end());
    let s_cols = f64::from(end[s] - begin[s]);
    let below = sym.supernode(s).pattern().len() as f64;
    let mut total = s_cols * s_cols * s_cols / 3.0 + below * s_cols * s_cols;
    for &d in updaters {
        let d = d as usize;
        let pattern = sym.supernode(d).pattern();
        let start = pattern.partition_point(|&r| r < begin[s]);
        let mid = pattern[start..].partition_point(|&r| r < end[s]);
        let d_cols = f64::from(end[d] - begin[d]);
        total += (pattern.len() - start) as f64 * mid as f64 * d_cols;
    }
    total
}

/// One task's scratch: supernode-local row of each global row, the update block, the stack of
/// the dense Cholesky.
struct TaskScratch {
    local: Vec<u32>,
    /// The local rows of an update block's rows.
    index: Vec<u32>,
    update: Vec<f64>,
    mem: MemBuffer,
    req: StackReq,
}

impl TaskScratch {
    fn new(n: usize, update: usize, req: StackReq) -> Self {
        TaskScratch {
            local: vec![NONE; n],
            index: vec![0; n],
            update: vec![0.0; update],
            mem: MemBuffer::new(req),
            req,
        }
    }
}

impl std::fmt::Debug for TaskScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskScratch")
            .field("rows", &self.local.len())
            .field("update", &self.update.len())
            .finish_non_exhaustive()
    }
}

impl Clone for TaskScratch {
    fn clone(&self) -> Self {
        TaskScratch::new(self.local.len(), self.update.len(), self.req)
    }
}

/// The numeric phase of a supernodal `LLᵀ` on faer's symbolic structure, the first two
/// independent subtrees in parallel (module doc).
#[derive(Clone, Debug)]
pub struct SupernodalLlt {
    /// Per supernode, the supernodes that update it (CSR, increasing).
    upd_offsets: Vec<u32>,
    updaters: Vec<u32>,
    /// The permuted lower triangle of `A` by columns: per entry its row (permuted) and its
    /// index in the caller's values.
    a_col_ptr: Vec<u32>,
    a_rows: Vec<u32>,
    a_src: Vec<u32>,
    /// The task tree, its root last.
    nodes: Vec<TaskNode>,
    /// One scratch per task at the bottom of the tree.
    tasks: Vec<TaskScratch>,
}

/// Why [`SupernodalLlt::factor`] failed: a pivot was not positive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotPositiveDefinite;

impl SupernodalLlt {
    /// Prepares the numeric phase for `sym` and the lower triangle of `A` in the original
    /// order given as CSC (`col_ptr`, `row_idx`: rows `≥` the column), permuted by `perm_inv`
    /// (`perm_inv[original] = position`). Allocates.
    #[must_use]
    pub fn new(
        sym: &SymbolicSupernodalCholesky<u32>,
        col_ptr: &[u32],
        row_idx: &[u32],
        perm_inv: &[u32],
    ) -> Self {
        let n = sym.nrows();
        let ns = sym.n_supernodes();
        let (begin, end) = (sym.supernode_begin(), sym.supernode_end());
        let mut of_super = vec![0u32; n];
        for s in 0..ns {
            for c in begin[s]..end[s] {
                of_super[c as usize] = s as u32;
            }
        }
        // Updaters: d updates every supernode its rows below its diagonal block fall in.
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        let mut parent = vec![NONE; ns];
        for (d, parent_d) in parent.iter_mut().enumerate() {
            let mut last = NONE;
            for &r in sym.supernode(d).pattern() {
                let s = of_super[r as usize];
                if s != last {
                    if last == NONE {
                        *parent_d = s;
                    }
                    pairs.push((s, d as u32));
                    last = s;
                }
            }
        }
        let mut upd_offsets = vec![0u32; ns + 1];
        for &(s, _) in &pairs {
            upd_offsets[s as usize + 1] += 1;
        }
        for s in 0..ns {
            upd_offsets[s + 1] += upd_offsets[s];
        }
        let mut fill = upd_offsets.clone();
        let mut updaters = vec![0u32; pairs.len()];
        // `pairs` is in increasing d, so each list is increasing.
        for &(s, d) in &pairs {
            updaters[fill[s as usize] as usize] = d;
            fill[s as usize] += 1;
        }
        let upd = |s: usize| &updaters[upd_offsets[s] as usize..upd_offsets[s + 1] as usize];
        let work: Vec<f64> = (0..ns).map(|s| supernode_work(sym, upd(s), s)).collect();
        let mut prefix = vec![0.0; ns + 1];
        for (s, w) in work.iter().enumerate() {
            prefix[s + 1] = prefix[s] + w;
        }
        let mut nodes = Vec::new();
        let mut scratches = 0u32;
        build_tasks(&parent, &prefix, 0, ns, 0, &mut scratches, &mut nodes);
        // Per scratch, the largest update block and diagonal block of the supernodes it serves.
        let mut update = vec![0usize; scratches as usize];
        let mut diag = vec![0usize; scratches as usize];
        let mut own = |x: usize, y: usize, id: usize| {
            for s in x..y {
                diag[id] = diag[id].max((end[s] - begin[s]) as usize);
                for &d in upd(s) {
                    let pattern = sym.supernode(d as usize).pattern();
                    let start = pattern.partition_point(|&r| r < begin[s]);
                    let mid = pattern[start..].partition_point(|&r| r < end[s]);
                    update[id] = update[id].max((pattern.len() - start) * mid);
                }
            }
        };
        for node in &nodes {
            let first = match node.split {
                Some((split, _, _)) => split.t,
                None => node.a,
            };
            own(first, node.b, node.scratch.0 as usize);
        }
        // The permuted lower triangle: entry (r, c) of A goes to column min, row max.
        let mut a_col_ptr = vec![0u32; n + 1];
        for c in 0..n {
            for &r in &row_idx[col_ptr[c] as usize..col_ptr[c + 1] as usize] {
                let (pr, pc) = (perm_inv[r as usize], perm_inv[c]);
                a_col_ptr[pr.min(pc) as usize + 1] += 1;
            }
        }
        for c in 0..n {
            a_col_ptr[c + 1] += a_col_ptr[c];
        }
        let mut fill = a_col_ptr.clone();
        let mut a_rows = vec![0u32; row_idx.len()];
        let mut a_src = vec![0u32; row_idx.len()];
        for c in 0..n {
            for e in col_ptr[c] as usize..col_ptr[c + 1] as usize {
                let (pr, pc) = (perm_inv[row_idx[e] as usize], perm_inv[c]);
                let k = &mut fill[pr.min(pc) as usize];
                a_rows[*k as usize] = pr.max(pc);
                a_src[*k as usize] = e as u32;
                *k += 1;
            }
        }
        let tasks = (0..scratches as usize)
            .map(|id| {
                let req = cholesky_in_place_scratch::<f64>(
                    diag[id],
                    Par::Seq,
                    Spec::<LltParams, f64>::default(),
                );
                TaskScratch::new(n, update[id], req)
            })
            .collect();
        SupernodalLlt {
            upd_offsets,
            updaters,
            a_col_ptr,
            a_rows,
            a_src,
            nodes,
            tasks,
        }
    }

    /// The split at the root of the task tree, if any.
    #[must_use]
    pub fn split(&self) -> Option<SubtreeSplit> {
        self.nodes.last().and_then(|n| n.split.map(|(s, _, _)| s))
    }

    /// The work of a factorisation and of its longest chain of dependent tasks (the least
    /// time with unlimited threads), in multiply–adds ([`supernode_work`]).
    #[must_use]
    pub fn work(&self) -> (f64, f64) {
        self.nodes
            .last()
            .map_or((0.0, 0.0), |n| (n.work, n.critical))
    }

    /// Number of tasks at the bottom of the task tree (each with its own scratch).
    #[must_use]
    pub fn tasks(&self) -> usize {
        self.tasks.len()
    }

    /// Factors `A` (its lower-triangle values in the order of the `row_idx` given to
    /// [`SupernodalLlt::new`]) into `l_values` (faer's supernodal layout, `sym.len_val()`
    /// values); with `parallel`, the two parts of each split as two tasks of the current rayon
    /// pool ([`crate::runtime::executor::join`]). The bits are the same either way. Allocates
    /// nothing.
    ///
    /// # Errors
    /// [`NotPositiveDefinite`] when a pivot is not positive; `l_values` is then unusable.
    ///
    /// # Panics
    /// If the sizes do not match those given to [`SupernodalLlt::new`].
    pub fn factor(
        &mut self,
        sym: &SymbolicSupernodalCholesky<u32>,
        a_values: &[f64],
        l_values: &mut [f64],
        parallel: bool,
    ) -> Result<(), NotPositiveDefinite> {
        assert_eq!(l_values.len(), sym.len_val(), "SupernodalLlt: factor size");
        assert_eq!(a_values.len(), self.a_src.len(), "SupernodalLlt: values");
        let ctx = Ctx {
            sym,
            upd_offsets: &self.upd_offsets,
            updaters: &self.updaters,
            a_col_ptr: &self.a_col_ptr,
            a_rows: &self.a_rows,
            a_src: &self.a_src,
            a_values,
            nodes: &self.nodes,
            parallel,
        };
        let root = self.nodes.len() - 1;
        ctx.run(root, l_values, &mut self.tasks)
    }
}

/// What every supernode's factorisation reads.
struct Ctx<'a> {
    sym: &'a SymbolicSupernodalCholesky<u32>,
    upd_offsets: &'a [u32],
    updaters: &'a [u32],
    a_col_ptr: &'a [u32],
    a_rows: &'a [u32],
    a_src: &'a [u32],
    a_values: &'a [f64],
    nodes: &'a [TaskNode],
    parallel: bool,
}

impl Ctx<'_> {
    /// Factors the supernodes of task node `node` into `l` (`L`'s values of the node's range,
    /// from the node's first supernode on) with `tasks`, the scratches of its tasks.
    fn run(
        &self,
        node: usize,
        l: &mut [f64],
        tasks: &mut [TaskScratch],
    ) -> Result<(), NotPositiveDefinite> {
        let TaskNode { a, b, split, .. } = self.nodes[node];
        let val_ptr = self.sym.col_ptr_for_val();
        let base = val_ptr[a] as usize;
        let Some((split, left, right)) = split else {
            return self.factor_range(a..b, l, base, &mut tasks[0]);
        };
        let (left, right) = (left as usize, right as usize);
        let (k, t) = (split.k, split.t);
        {
            let (l_left, rest) = l.split_at_mut(val_ptr[k] as usize - base);
            let l_right = &mut rest[..(val_ptr[t] - val_ptr[k]) as usize];
            let s_left = self.nodes[left].scratch;
            let (t_left, t_right) = tasks.split_at_mut((s_left.1 - s_left.0) as usize);
            let mut first = || self.run(left, l_left, t_left);
            let mut second = || self.run(right, l_right, t_right);
            let (x, y) = if self.parallel {
                crate::runtime::executor::join(first, second)
            } else {
                (first(), second())
            };
            x?;
            y?;
        }
        self.factor_range(t..b, l, base, &mut tasks[0])
    }

    /// Factors supernodes `range` in order into `l`, which holds `L`'s values from `base` on
    /// (every supernode of `range` and all its descendants lie there).
    fn factor_range(
        &self,
        range: std::ops::Range<usize>,
        l: &mut [f64],
        base: usize,
        task: &mut TaskScratch,
    ) -> Result<(), NotPositiveDefinite> {
        let sym = self.sym;
        let (begin, end) = (sym.supernode_begin(), sym.supernode_end());
        let val_ptr = sym.col_ptr_for_val();
        for s in range {
            let (s_start, s_end) = (begin[s] as usize, end[s] as usize);
            let s_pattern = sym.supernode(s).pattern();
            let s_cols = s_end - s_start;
            let s_rows = s_pattern.len() + s_cols;
            for (i, &r) in s_pattern.iter().enumerate() {
                task.local[r as usize] = (i + s_cols) as u32;
            }
            let (head, tail) = l.split_at_mut(val_ptr[s] as usize - base);
            let head = &*head;
            let ls_vals = &mut tail[..(val_ptr[s + 1] - val_ptr[s]) as usize];
            ls_vals.fill(0.0);
            for j in s_start..s_end {
                let jj = j - s_start;
                for e in self.a_col_ptr[j] as usize..self.a_col_ptr[j + 1] as usize {
                    let i = self.a_rows[e] as usize;
                    let ix = if i >= s_end {
                        task.local[i] as usize
                    } else {
                        i - s_start
                    };
                    ls_vals[jj * s_rows + ix] += self.a_values[self.a_src[e] as usize];
                }
            }
            let upd =
                &self.updaters[self.upd_offsets[s] as usize..self.upd_offsets[s + 1] as usize];
            for &d in upd {
                let d = d as usize;
                let d_cols = (end[d] - begin[d]) as usize;
                let d_pattern = sym.supernode(d).pattern();
                let d_rows = d_pattern.len() + d_cols;
                let ld = MatRef::from_column_major_slice(
                    &head[val_ptr[d] as usize - base..val_ptr[d + 1] as usize - base],
                    d_rows,
                    d_cols,
                );
                let start = d_pattern.partition_point(|&r| (r as usize) < s_start);
                let mid = d_pattern[start..].partition_point(|&r| (r as usize) < s_end);
                let below = d_pattern.len() - start;
                let ld_mid_bot = ld.subrows(d_cols + start, below);
                let ld_mid = ld.subrows(d_cols + start, mid);
                let mut prod = MatMut::from_column_major_slice_mut(
                    &mut task.update[..below * mid],
                    below,
                    mid,
                );
                matmul(
                    prod.rb_mut(),
                    Accum::Replace,
                    ld_mid_bot,
                    ld_mid.transpose(),
                    1.0,
                    Par::Seq,
                );
                // The rows of the block in `L_s`: the diagonal block's, then those below it.
                let index = &mut task.index[..below];
                for (ix, &r) in index.iter_mut().zip(&d_pattern[start..]) {
                    let r = r as usize;
                    *ix = if r >= s_end {
                        task.local[r]
                    } else {
                        (r - s_start) as u32
                    };
                }
                let prod = &task.update[..below * mid];
                for jj in 0..mid {
                    let c = index[jj] as usize;
                    let col = &mut ls_vals[c * s_rows..(c + 1) * s_rows];
                    let p = &prod[jj * below..(jj + 1) * below];
                    for ii in jj..below {
                        col[index[ii] as usize] -= p[ii];
                    }
                }
            }
            let ls = MatMut::from_column_major_slice_mut(ls_vals, s_rows, s_cols);
            let (mut top, mut bot) = ls.split_at_row_mut(s_cols);
            let stack = MemStack::new(&mut task.mem);
            cholesky_in_place(
                top.rb_mut(),
                LltRegularization::default(),
                Par::Seq,
                stack,
                Spec::<LltParams, f64>::default(),
            )
            .map_err(|_| NotPositiveDefinite)?;
            solve_lower_triangular_in_place(top.rb(), bot.rb_mut().transpose_mut(), Par::Seq);
            for &r in s_pattern {
                task.local[r as usize] = NONE;
            }
        }
        Ok(())
    }
}

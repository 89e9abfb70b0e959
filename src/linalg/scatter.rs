//! Assembly by scatter into disjoint row ranges: elements add their blocks straight into the
//! matrix, in parallel, in an order fixed when the plan is built.
//!
//! A finite-element system is assembled by a scatter: every element adds its local blocks into
//! the global matrix at slots looked up once, at creation. Two elements that share a vertex
//! add into the same row, so a parallel scatter needs its writers kept apart. [`ScatterPlan`]
//! keeps them apart by rows. It cuts the rows into `P` consecutive *parts* and sorts every
//! element (by the rows it touches, its vertices) into the first of four phases that can take
//! it:
//!
//! ```text
//! phase 0   the parts:                     rows of part p only          P tasks
//! phase 1   the even cuts (2j, 2j + 1):    rows of parts 2j and 2j + 1  tasks of one pair each
//! phase 2   the odd cuts (2j + 1, 2j + 2): rows of parts 2j+1 and 2j+2
//! phase 3   everything else:               any rows                     one task
//! ```
//!
//! The tasks of a phase own disjoint, consecutive row ranges (so disjoint ranges of `A`'s
//! blocks and of `b`), and run in parallel; the phases run one after the other. A task adds its
//! elements in element order. So every block slot receives its sources in one fixed order —
//! its part's elements, then its cuts', then the rest, each in element order — whatever the
//! number of threads or the schedule: the sums are bit-identical for any thread count. `P`
//! depends on the number of rows only.
//!
//! On a mesh numbered row by row (every generated grid, tube and subdivided mesh), an
//! element spans at most a few grid rows, so with parts of several grid rows every element
//! lands in phases 0–2 and phase 3 is empty. A mesh numbered without locality leaves more
//! elements to phase 3, which is serial: the result is the same, only slower.
//!
//! Nothing here allocates after [`ScatterPlan::new`]: a phase splits the row ranges
//! recursively (`executor::join`), in the caller's rayon pool or inline under a host's
//! dispatcher (`docs/methods/threading.md`).
#![deny(unsafe_code)]

use glam::{Mat3, Vec3};

use super::pattern::BlockPattern;
use crate::runtime::executor;

/// Rows a part holds at least: smaller systems are one part (serial).
const MIN_PART_ROWS: usize = 512;
/// At most this many parts (enough for the machines weft targets; each cut costs a little).
const MAX_PARTS: usize = 16;
/// Phases: parts, even cuts, odd cuts, the rest.
const PHASES: usize = 4;

/// One task of a phase: a range of rows it owns and the elements it adds, in element order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Task {
    /// First row owned.
    first_row: u32,
    /// One past the last row owned.
    end_row: u32,
    /// `order[first_element..end_element]` are the task's elements.
    first_element: u32,
    end_element: u32,
}

/// Which rows each element's scatter may touch, and the phases and tasks that keep parallel
/// writers apart (module doc). Built once per cloth.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScatterPlan {
    /// Every task, phase by phase; a phase's tasks ordered by row.
    tasks: Vec<Task>,
    /// `tasks[phase_start[k]..phase_start[k + 1]]` are phase `k`'s tasks.
    phase_start: [usize; PHASES + 1],
    /// Element indices grouped by task.
    order: Vec<u32>,
    rows: usize,
}

impl ScatterPlan {
    /// The plan for `rows` rows and `elements`, each given by the rows (vertices) it touches,
    /// in element order.
    ///
    /// # Panics
    /// If an element names a row `>= rows`, or there are more than `u32::MAX` elements or rows.
    #[must_use]
    pub fn new<'a>(rows: usize, elements: impl Iterator<Item = &'a [u32]>) -> ScatterPlan {
        assert!(
            u32::try_from(rows).is_ok(),
            "ScatterPlan: {rows} rows do not fit in u32"
        );
        let parts = (rows / MIN_PART_ROWS).clamp(1, MAX_PARTS);
        // Part p holds rows bounds[p]..bounds[p + 1].
        let bounds: Vec<usize> = (0..=parts).map(|p| p * rows / parts).collect();
        let part_of = |r: u32| -> usize {
            // The last part whose first row is at most r.
            bounds[1..parts].partition_point(|&b| b <= r as usize)
        };
        // The task slots of every phase, in row order: parts, even pairs, odd pairs, all.
        let pair_tasks = |first: usize| (first..parts.saturating_sub(1)).step_by(2);
        let phase_parts: [Vec<(usize, usize)>; PHASES] = [
            (0..parts).map(|p| (p, p + 1)).collect(),
            pair_tasks(0).map(|p| (p, p + 2)).collect(),
            pair_tasks(1).map(|p| (p, p + 2)).collect(),
            vec![(0, parts)],
        ];
        let mut lists: [Vec<Vec<u32>>; PHASES] =
            std::array::from_fn(|k| vec![Vec::new(); phase_parts[k].len()]);
        for (e, verts) in elements.enumerate() {
            let e = u32::try_from(e).expect("ScatterPlan: element count fits in u32");
            let (lo, hi) = verts.iter().fold((u32::MAX, 0), |(lo, hi), &v| {
                assert!(
                    (v as usize) < rows,
                    "ScatterPlan: element {e} names row {v} of {rows}"
                );
                (lo.min(v), hi.max(v))
            });
            if verts.is_empty() {
                continue;
            }
            let (plo, phi) = (part_of(lo), part_of(hi));
            let (phase, task) = if plo == phi {
                (0, plo)
            } else if phi == plo + 1 {
                (1 + plo % 2, plo / 2)
            } else {
                (3, 0)
            };
            lists[phase][task].push(e);
        }
        let mut tasks = Vec::new();
        let mut order = Vec::new();
        let mut phase_start = [0; PHASES + 1];
        for k in 0..PHASES {
            for (&(p0, p1), list) in phase_parts[k].iter().zip(&lists[k]) {
                // Phase 0 keeps every part (its tasks also start their rows); later phases
                // only tasks with work.
                if k > 0 && list.is_empty() {
                    continue;
                }
                let first_element = order.len() as u32;
                order.extend_from_slice(list);
                tasks.push(Task {
                    first_row: bounds[p0] as u32,
                    end_row: bounds[p1] as u32,
                    first_element,
                    end_element: order.len() as u32,
                });
            }
            phase_start[k + 1] = tasks.len();
        }
        ScatterPlan {
            tasks,
            phase_start,
            order,
            rows,
        }
    }

    /// Number of rows.
    #[must_use]
    pub fn num_rows(&self) -> usize {
        self.rows
    }

    /// Number of elements in phase `phase` (0: within a part, 1 and 2: across a cut, 3: the
    /// serial rest).
    ///
    /// # Panics
    /// If `phase >= 4`.
    #[must_use]
    pub fn phase_elements(&self, phase: usize) -> usize {
        self.tasks[self.phase_start[phase]..self.phase_start[phase + 1]]
            .iter()
            .map(|t| (t.end_element - t.first_element) as usize)
            .sum()
    }

    /// Number of tasks over all phases ([`Self::task_elements`] numbers them).
    #[must_use]
    pub fn num_tasks(&self) -> usize {
        self.tasks.len()
    }

    /// The elements task `task` adds, in element order.
    ///
    /// # Panics
    /// If `task >= self.num_tasks()`.
    #[must_use]
    pub fn task_elements(&self, task: usize) -> &[u32] {
        let t = &self.tasks[task];
        &self.order[t.first_element as usize..t.end_element as usize]
    }

    /// Runs the scatter: for every phase in turn, every task in parallel calls `start` once
    /// on each of its rows (phase 0 only: phase 0's tasks cover every row, before any element
    /// adds into it), then `element(e, window)` for each of its elements in element order,
    /// where `window` holds the task's rows of the matrix's blocks and of the right-hand side.
    /// Returns the sum of what `element` returned, added in a fixed order.
    ///
    /// `pattern` is the matrix's pattern, `blocks` its values in slot order and `rhs` one entry
    /// per row.
    ///
    /// # Panics
    /// If the lengths disagree, or an element adds outside its task's rows.
    pub fn run<S, E>(
        &self,
        pattern: &BlockPattern,
        blocks: &mut [Mat3],
        rhs: &mut [Vec3],
        start: S,
        element: E,
    ) -> f64
    where
        S: Fn(usize, &mut RowWindow<'_>) + Sync,
        E: Fn(usize, &mut RowWindow<'_>) -> f64 + Sync,
    {
        self.run_by_task(pattern, blocks, rhs, start, |t, w| {
            self.task_elements(t)
                .iter()
                .fold(0.0, |acc, &e| acc + element(e as usize, w))
        })
    }

    /// [`Self::run`] with the elements of a task handed over together: `task(t, window)` adds
    /// the elements [`Self::task_elements`]`(t)`, in that order, so a caller can evaluate
    /// several of them at once (the kernels' SIMD lanes) and still add them in the plan's
    /// order. Returns the sum of what `task` returned, added in a fixed order.
    ///
    /// # Panics
    /// If the lengths disagree, or a task adds outside its rows.
    pub fn run_by_task<S, T>(
        &self,
        pattern: &BlockPattern,
        blocks: &mut [Mat3],
        rhs: &mut [Vec3],
        start: S,
        task: T,
    ) -> f64
    where
        S: Fn(usize, &mut RowWindow<'_>) + Sync,
        T: Fn(usize, &mut RowWindow<'_>) -> f64 + Sync,
    {
        assert_eq!(pattern.num_rows(), self.rows, "ScatterPlan::run: rows");
        assert_eq!(
            blocks.len(),
            pattern.num_blocks(),
            "ScatterPlan::run: blocks"
        );
        assert_eq!(rhs.len(), self.rows, "ScatterPlan::run: rhs");
        let mut sum = 0.0;
        for k in 0..PHASES {
            let first = self.phase_start[k];
            let tasks = &self.tasks[first..self.phase_start[k + 1]];
            if tasks.is_empty() {
                continue;
            }
            let window = RowWindow {
                first_row: 0,
                first_slot: 0,
                pattern,
                blocks: &mut *blocks,
                rhs: &mut *rhs,
            };
            let run_task = |i: usize, w: &mut RowWindow<'_>| {
                if k == 0 {
                    let t = &self.tasks[i];
                    for r in t.first_row as usize..t.end_row as usize {
                        start(r, w);
                    }
                }
                task(i, w)
            };
            sum += run_tasks(first, tasks, window, &run_task);
        }
        sum
    }
}

/// Runs `tasks` (ordered by row, disjoint; the first is task number `first`) on `window`,
/// halving the list and the window at a task's first row, the halves in parallel. The sum adds
/// the halves' sums: a fixed tree.
fn run_tasks<F>(first: usize, tasks: &[Task], window: RowWindow<'_>, task: &F) -> f64
where
    F: Fn(usize, &mut RowWindow<'_>) -> f64 + Sync,
{
    match tasks {
        [] => 0.0,
        [_] => {
            let mut w = window;
            task(first, &mut w)
        }
        _ => {
            let mid = tasks.len() / 2;
            let (left, right) = window.split_at_row(tasks[mid].first_row as usize);
            let (a, b) = executor::join(
                || run_tasks(first, &tasks[..mid], left, task),
                || run_tasks(first + mid, &tasks[mid..], right, task),
            );
            a + b
        }
    }
}

/// The rows a scatter task owns: their blocks of the matrix and their entries of the
/// right-hand side, addressed by global slot and row.
pub struct RowWindow<'a> {
    first_row: usize,
    first_slot: usize,
    pattern: &'a BlockPattern,
    blocks: &'a mut [Mat3],
    rhs: &'a mut [Vec3],
}

impl<'a> RowWindow<'a> {
    /// The window's rows before `row` and from `row` on.
    fn split_at_row(self, row: usize) -> (RowWindow<'a>, RowWindow<'a>) {
        let slot = self.pattern.row_offsets()[row] as usize;
        let (b0, b1) = self.blocks.split_at_mut(slot - self.first_slot);
        let (r0, r1) = self.rhs.split_at_mut(row - self.first_row);
        (
            RowWindow {
                first_row: self.first_row,
                first_slot: self.first_slot,
                pattern: self.pattern,
                blocks: b0,
                rhs: r0,
            },
            RowWindow {
                first_row: row,
                first_slot: slot,
                pattern: self.pattern,
                blocks: b1,
                rhs: r1,
            },
        )
    }

    /// The block at global `slot` (which must lie in one of the window's rows).
    ///
    /// # Panics
    /// If `slot` is outside the window.
    #[inline]
    pub fn block_mut(&mut self, slot: u32) -> &mut Mat3 {
        &mut self.blocks[slot as usize - self.first_slot]
    }

    /// The window's blocks and the global slot of the first: global slot `s` is
    /// `blocks[s - first]`. For a loop over many slots, which can then keep both in registers.
    #[inline]
    pub fn blocks_mut(&mut self) -> (&mut [Mat3], usize) {
        (&mut *self.blocks, self.first_slot)
    }

    /// The right-hand side's entry of global `row` (one of the window's rows).
    ///
    /// # Panics
    /// If `row` is outside the window.
    #[inline]
    pub fn rhs_mut(&mut self, row: u32) -> &mut Vec3 {
        &mut self.rhs[row as usize - self.first_row]
    }

    /// The slots of global `row` (one of the window's rows), as a range of global slots.
    #[inline]
    #[must_use]
    pub fn row_slots(&self, row: usize) -> std::ops::Range<usize> {
        self.pattern.row_range(row)
    }

    /// The blocks of global `row` (one of the window's rows), in slot order.
    ///
    /// # Panics
    /// If `row` is outside the window.
    #[inline]
    pub fn row_blocks_mut(&mut self, row: usize) -> &mut [Mat3] {
        let slots = self.pattern.row_range(row);
        &mut self.blocks[slots.start - self.first_slot..slots.end - self.first_slot]
    }

    /// The slot of global `row`'s diagonal block.
    #[inline]
    #[must_use]
    pub fn diag_slot(&self, row: usize) -> u32 {
        self.pattern.diag_slot(row).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::BlockPattern;
    use crate::linalg::block_csr::tests::{Rng, in_pool};

    /// A strip of `rows` vertices, elements of 3 or 4 nearby vertices (a band of `reach`), and
    /// a few far-apart elements that only phase 3 can take.
    fn strip(rows: usize, reach: usize, far: usize, seed: u64) -> Vec<Vec<u32>> {
        let mut rng = Rng::new(seed);
        let mut elements = Vec::new();
        for e in 0..3 * rows {
            let base = rng.below(rows - reach);
            let n = 3 + e % 2;
            let mut verts: Vec<u32> = (0..n).map(|_| (base + rng.below(reach)) as u32).collect();
            verts.sort_unstable();
            verts.dedup();
            elements.push(verts);
        }
        for _ in 0..far {
            elements.push(vec![rng.below(rows) as u32, rng.below(rows) as u32]);
        }
        elements
    }

    /// Element `e`'s block between its vertices `a` and `b` (a fixed function of the three).
    fn block(e: usize, a: u32, b: u32) -> Mat3 {
        let s = (e as f32 + 1.0).sqrt() * 1e-3 + a as f32 * 1e-5 - b as f32 * 3e-7;
        Mat3::from_cols_array(&[s, 2.0 * s, -s, 0.5, s * s, 1.0 / (1.0 + s), 3.0, s, 0.25])
    }

    /// The serial scatter in the plan's own order, and the plan run in pools of 1, 2 and 4
    /// threads, give the same bits; every block gets every source once.
    #[test]
    fn scatter_is_the_same_for_any_thread_count_and_complete() {
        for (rows, reach, far) in [(40, 4, 0), (3000, 30, 0), (5000, 40, 25)] {
            let elements = strip(rows, reach, far, rows as u64);
            let pairs = elements
                .iter()
                .flat_map(|v| v.iter().flat_map(move |&a| v.iter().map(move |&b| (a, b))));
            let pattern = BlockPattern::from_pairs(rows, pairs);
            let plan = ScatterPlan::new(rows, elements.iter().map(Vec::as_slice));
            let total: usize = (0..PHASES).map(|k| plan.phase_elements(k)).sum();
            assert_eq!(total, elements.len());
            assert_eq!(plan.phase_elements(3) > 0, far > 0, "{rows} rows");
            let run = |blocks: &mut Vec<Mat3>, rhs: &mut Vec<Vec3>| {
                plan.run(
                    &pattern,
                    blocks,
                    rhs,
                    |r, w| {
                        for s in w.row_slots(r) {
                            *w.block_mut(s as u32) = Mat3::IDENTITY;
                        }
                        *w.rhs_mut(r as u32) = Vec3::splat(r as f32);
                    },
                    |e, w| {
                        for &a in &elements[e] {
                            for &b in &elements[e] {
                                let s = pattern.slot(a, b).expect("pattern has the pair");
                                *w.block_mut(s.0) += block(e, a, b);
                            }
                            *w.rhs_mut(a) += Vec3::splat(e as f32 * 1e-3);
                        }
                        e as f64 * 0.1
                    },
                )
            };
            let mut reference: Option<(Vec<Mat3>, Vec<Vec3>, f64)> = None;
            for threads in [1, 2, 4] {
                let mut blocks = vec![Mat3::ZERO; pattern.num_blocks()];
                let mut rhs = vec![Vec3::ZERO; rows];
                let sum = in_pool(threads, || run(&mut blocks, &mut rhs));
                match &reference {
                    None => reference = Some((blocks, rhs, sum)),
                    Some((b0, r0, s0)) => {
                        let bits = |m: &[Mat3]| -> Vec<u32> {
                            m.iter()
                                .flat_map(|m| m.to_cols_array().map(f32::to_bits))
                                .collect()
                        };
                        assert_eq!(bits(&blocks), bits(b0), "{rows} rows, {threads} threads");
                        assert_eq!(rhs, *r0, "{rows} rows, {threads} threads");
                        assert_eq!(sum.to_bits(), s0.to_bits());
                    }
                }
            }
            // Against a serial scatter in element order, to f32 rounding of the sums.
            let (blocks, rhs, sum) = reference.expect("ran");
            let mut serial = vec![Mat3::IDENTITY; pattern.num_blocks()];
            let mut serial_rhs: Vec<Vec3> = (0..rows).map(|r| Vec3::splat(r as f32)).collect();
            for (e, verts) in elements.iter().enumerate() {
                for &a in verts {
                    for &b in verts {
                        serial[pattern.slot(a, b).expect("pair").index()] += block(e, a, b);
                    }
                    serial_rhs[a as usize] += Vec3::splat(e as f32 * 1e-3);
                }
            }
            for (a, b) in blocks.iter().zip(&serial) {
                assert!((*a - *b).abs().to_cols_array().iter().all(|&d| d < 1e-4));
            }
            for (a, b) in rhs.iter().zip(&serial_rhs) {
                assert!((*a - *b).abs().max_element() < 1e-3);
            }
            let expected: f64 = (0..elements.len()).map(|e| e as f64 * 0.1).sum();
            assert!((sum - expected).abs() < 1e-6 * expected);
        }
    }

    #[test]
    fn a_small_system_is_one_part_and_one_phase() {
        let elements = strip(100, 5, 0, 3);
        let plan = ScatterPlan::new(100, elements.iter().map(Vec::as_slice));
        assert_eq!(plan.phase_elements(0), elements.len());
    }
}

//! A Baraff–Witkin cloth's elements in the order its scatter plan adds them, [`LANES`] at a time:
//! what the lane kernels ([`crate::model::bw_lanes`]) read, laid out at creation.
//!
//! Every task of the [`ScatterPlan`] adds its elements in element order: its triangles, then its
//! hinges (triangles are numbered before hinges). Here each task's triangles are cut into batches
//! of `LANES` consecutive ones, then its hinges likewise; a batch holds its elements' vertices,
//! block slots and indices side by side and their rest data in lanes. A task's last batch of a
//! kind may be short: its unused lanes repeat its first element (finite numbers, results unused).
//! So assembling a task batch by batch adds the same elements in the same order as adding them
//! one by one.
//!
//! A batch's slots are relative to its task's *base*, the lowest slot any element of the task
//! adds to: the task's blocks from the base on are one slice, indexed by the stored slots
//! without a subtraction per block.
#![deny(unsafe_code)]

use crate::linalg::ScatterPlan;
use crate::model::baraff_witkin::{HingeRest, TriangleRest};
use crate::model::bw_lanes::{HingeRestLanes, LANES, MembraneRestLanes};

/// Up to [`LANES`] elements of `N` vertices and `S = N²` block slots.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Batch<const N: usize, const S: usize> {
    /// Elements in use (`1..=LANES`).
    pub(crate) len: usize,
    /// Each lane's element index (triangle, or hinge counted from 0).
    pub(crate) index: [u32; LANES],
    /// Each lane's vertices.
    pub(crate) verts: [[u32; N]; LANES],
    /// Each lane's block slots in `A`, row-major over its vertices, less its task's base
    /// ([`ElementBatches::of_task`]).
    pub(crate) slots: [[u32; S]; LANES],
}

/// The batches of every task of a plan (module doc).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ElementBatches {
    /// Per task of the plan: its triangle batches `tasks[t][0]..tasks[t][1]` and hinge batches
    /// `tasks[t][2]..tasks[t][3]`.
    tasks: Vec<[u32; 4]>,
    /// Per task of the plan: its base, the lowest slot of its elements (0 for a task without
    /// elements).
    bases: Vec<u32>,
    pub(crate) triangles: Vec<Batch<3, 9>>,
    pub(crate) triangle_rest: Vec<MembraneRestLanes>,
    pub(crate) hinges: Vec<Batch<4, 16>>,
    pub(crate) hinge_rest: Vec<HingeRestLanes>,
}

impl ElementBatches {
    /// The batches of `plan`'s tasks, whose elements are the triangles `0..T` and then the
    /// hinges `T + k`.
    ///
    /// # Panics
    /// If a task does not list its triangles before its hinges, or the slices disagree in length.
    pub(crate) fn new(
        plan: &ScatterPlan,
        (tri_verts, tri_slots, tri_rest): (&[[u32; 3]], &[[u32; 9]], &[TriangleRest]),
        (hinge_verts, hinge_slots, hinge_rest): (&[[u32; 4]], &[[u32; 16]], &[HingeRest]),
    ) -> Self {
        let triangles = tri_verts.len() as u32;
        assert!(tri_slots.len() == tri_verts.len() && tri_rest.len() == tri_verts.len());
        assert!(hinge_slots.len() == hinge_verts.len() && hinge_rest.len() == hinge_verts.len());
        let mut out = Self {
            tasks: Vec::with_capacity(plan.num_tasks()),
            bases: Vec::with_capacity(plan.num_tasks()),
            triangles: Vec::new(),
            triangle_rest: Vec::new(),
            hinges: Vec::new(),
            hinge_rest: Vec::new(),
        };
        for t in 0..plan.num_tasks() {
            let elements = plan.task_elements(t);
            let split = elements.partition_point(|&e| e < triangles);
            assert!(
                elements[split..].iter().all(|&e| e >= triangles),
                "ElementBatches: task {t} lists triangles after hinges"
            );
            let base = elements
                .iter()
                .flat_map(|&e| match e.checked_sub(triangles) {
                    None => tri_slots[e as usize].iter().min(),
                    Some(k) => hinge_slots[k as usize].iter().min(),
                })
                .min()
                .copied()
                .unwrap_or(0);
            let relative = |slots: [u32; 9]| slots.map(|s| s - base);
            let relative16 = |slots: [u32; 16]| slots.map(|s| s - base);
            let t0 = out.triangles.len() as u32;
            for chunk in elements[..split].chunks(LANES) {
                let lane = |k: usize| chunk[k.min(chunk.len() - 1)] as usize;
                out.triangles.push(Batch {
                    len: chunk.len(),
                    index: std::array::from_fn(|k| lane(k) as u32),
                    verts: std::array::from_fn(|k| tri_verts[lane(k)]),
                    slots: std::array::from_fn(|k| relative(tri_slots[lane(k)])),
                });
                out.triangle_rest
                    .push(MembraneRestLanes::new(|k| tri_rest[lane(k)]));
            }
            let h0 = out.hinges.len() as u32;
            for chunk in elements[split..].chunks(LANES) {
                let lane = |k: usize| (chunk[k.min(chunk.len() - 1)] - triangles) as usize;
                out.hinges.push(Batch {
                    len: chunk.len(),
                    index: std::array::from_fn(|k| lane(k) as u32),
                    verts: std::array::from_fn(|k| hinge_verts[lane(k)]),
                    slots: std::array::from_fn(|k| relative16(hinge_slots[lane(k)])),
                });
                out.hinge_rest
                    .push(HingeRestLanes::new(|k| hinge_rest[lane(k)]));
            }
            out.tasks
                .push([t0, out.triangles.len() as u32, h0, out.hinges.len() as u32]);
            out.bases.push(base);
        }
        out
    }

    /// Task `task`'s triangle batches and hinge batches, as index ranges, and its base (the slot
    /// its batches' slots are relative to).
    #[inline]
    pub(crate) fn of_task(
        &self,
        task: usize,
    ) -> (std::ops::Range<usize>, std::ops::Range<usize>, usize) {
        let [t0, t1, h0, h1] = self.tasks[task];
        (
            t0 as usize..t1 as usize,
            h0 as usize..h1 as usize,
            self.bases[task] as usize,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Batches list every task's elements once, in the plan's order, with their own data.
    #[test]
    fn batches_follow_the_plan_order() {
        let rows = 2000usize;
        // Triangles (i, i+1, i+2) and hinges (i, i+1, i+2, i+3) along a strip.
        let tris: Vec<[u32; 3]> = (0..rows as u32 - 2).map(|i| [i, i + 1, i + 2]).collect();
        let hinges: Vec<[u32; 4]> = (0..rows as u32 - 3)
            .map(|i| [i, i + 1, i + 2, i + 3])
            .collect();
        let plan = ScatterPlan::new(
            rows,
            tris.iter()
                .map(<[u32; 3]>::as_slice)
                .chain(hinges.iter().map(<[u32; 4]>::as_slice)),
        );
        assert!(plan.num_tasks() > 1);
        let tri_slots: Vec<[u32; 9]> = (0..tris.len() as u32).map(|e| [e; 9]).collect();
        let hinge_slots: Vec<[u32; 16]> = (0..hinges.len() as u32).map(|e| [e; 16]).collect();
        let tri_rest: Vec<TriangleRest> = (0..tris.len())
            .map(|e| TriangleRest {
                alpha: [0.0; 3],
                beta: [0.0; 3],
                area: e as f64,
            })
            .collect();
        let hinge_rest: Vec<HingeRest> = (0..hinges.len())
            .map(|e| HingeRest {
                weight: e as f64,
                rest_angle: 0.0,
            })
            .collect();
        let batches = ElementBatches::new(
            &plan,
            (&tris, &tri_slots, &tri_rest),
            (&hinges, &hinge_slots, &hinge_rest),
        );
        for t in 0..plan.num_tasks() {
            let (tr, hr, base) = batches.of_task(t);
            let base = base as u32;
            let mut listed = Vec::new();
            let mut lowest = u32::MAX;
            for b in tr {
                let batch = &batches.triangles[b];
                for k in 0..batch.len {
                    let e = batch.index[k] as usize;
                    assert_eq!(batch.verts[k], tris[e]);
                    assert_eq!(batch.slots[k].map(|s| s + base), tri_slots[e]);
                    lowest = lowest.min(batch.slots[k].into_iter().min().unwrap_or(u32::MAX));
                    listed.push(e as u32);
                }
            }
            for b in hr {
                let batch = &batches.hinges[b];
                for k in 0..batch.len {
                    let e = batch.index[k] as usize;
                    assert_eq!(batch.verts[k], hinges[e]);
                    assert_eq!(batch.slots[k].map(|s| s + base), hinge_slots[e]);
                    lowest = lowest.min(batch.slots[k].into_iter().min().unwrap_or(u32::MAX));
                    listed.push(tris.len() as u32 + e as u32);
                }
            }
            assert_eq!(listed, plan.task_elements(t), "task {t}");
            if !listed.is_empty() {
                assert_eq!(lowest, 0, "task {t}: the base is its lowest slot");
            }
        }
    }
}

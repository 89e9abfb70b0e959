//! Assembly by gather: each output entry sums its own sources, in parallel, in a fixed order.
//!
//! Assembly of a finite-element system is usually written as a scatter: every element adds its
//! local blocks into the global matrix at the slots it looked up at creation. Two elements that
//! share a vertex write to the same slots, so a parallel scatter needs atomics, locks or a graph
//! colouring, and the first two make the sum's order (and its bits) depend on the schedule.
//! [`Gather`] inverts the map once, at creation: for every output entry (a block slot, a vertex
//! of the right-hand side), the list of element outputs that add into it, kept in the order the
//! serial scatter would add them. The kernels write their outputs to disjoint places, and the
//! gather sums each entry's list in that order: every entry is the same sum, in the same order,
//! as the serial scatter, so the result is bit-identical to it, for any thread count, and both
//! halves run in parallel.
//!
//! The sources are indices into one flat array of element outputs (for instance every
//! triangle's 9 blocks, then every hinge's 16). The table is `O(number of sources)` `u32`s.
#![deny(unsafe_code)]

use std::ops::AddAssign;

use crate::runtime::executor::parallel_here;
use rayon::prelude::*;

/// Outputs per parallel task (fixed: each output's sum is independent of the split).
const GATHER_CHUNK: usize = 512;
/// Below this many outputs the gather runs on the calling thread.
const GATHER_PARALLEL_MIN: usize = 4096;

/// For every output entry, the sources summed into it, in a fixed order: a compressed-row map
/// built once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gather {
    /// `start[o]..start[o + 1]` index `sources` for output `o`; `outputs + 1` entries.
    start: Vec<u32>,
    /// Source indices, grouped by output; within an output, in the order given at build.
    sources: Vec<u32>,
}

impl Gather {
    /// The map for `outputs` output entries from `(output, source)` pairs listed in the order
    /// a serial scatter would add them; each output keeps its sources in that order (a stable
    /// counting sort).
    ///
    /// # Panics
    /// If an output is `>= outputs`, or there are more than `u32::MAX` pairs.
    #[must_use]
    pub fn from_scatter_order(
        outputs: usize,
        pairs: impl IntoIterator<Item = (u32, u32)> + Clone,
    ) -> Gather {
        let mut start = vec![0u32; outputs + 1];
        let mut total = 0usize;
        for (o, _) in pairs.clone() {
            assert!(
                (o as usize) < outputs,
                "Gather: output {o} out of range for {outputs} outputs"
            );
            start[o as usize + 1] += 1;
            total += 1;
        }
        assert!(
            u32::try_from(total).is_ok(),
            "Gather: {total} sources do not fit in u32 indices"
        );
        for o in 0..outputs {
            start[o + 1] += start[o];
        }
        let mut next: Vec<u32> = start[..outputs].to_vec();
        let mut sources = vec![0u32; total];
        for (o, s) in pairs {
            let k = &mut next[o as usize];
            sources[*k as usize] = s;
            *k += 1;
        }
        Gather { start, sources }
    }

    /// Number of output entries.
    #[inline]
    #[must_use]
    pub fn num_outputs(&self) -> usize {
        self.start.len() - 1
    }

    /// Number of (output, source) pairs.
    #[inline]
    #[must_use]
    pub fn num_sources(&self) -> usize {
        self.sources.len()
    }

    /// `out[o] = init(o) + Σ values[s]` over the sources `s` of `o`, added one by one in the
    /// order given at build: the same additions in the same order as the serial scatter that
    /// starts from `init`. Parallel over fixed chunks of outputs from [`GATHER_PARALLEL_MIN`]
    /// outputs; bit-identical for any thread count. Allocates nothing.
    ///
    /// # Panics
    /// If `out` does not have [`Self::num_outputs`] entries or a source is out of `values`.
    pub fn sum_into<T, I>(&self, out: &mut [T], values: &[T], init: I)
    where
        T: Copy + AddAssign + Send + Sync,
        I: Fn(usize) -> T + Sync,
    {
        assert_eq!(
            out.len(),
            self.num_outputs(),
            "Gather::sum_into: out has the wrong length"
        );
        let run = |first: usize, chunk: &mut [T]| {
            for (k, o) in chunk.iter_mut().enumerate() {
                let i = first + k;
                let mut acc = init(i);
                let range = self.start[i] as usize..self.start[i + 1] as usize;
                for &s in &self.sources[range] {
                    acc += values[s as usize];
                }
                *o = acc;
            }
        };
        if out.len() >= GATHER_PARALLEL_MIN && parallel_here() {
            out.par_chunks_mut(GATHER_CHUNK)
                .enumerate()
                .for_each(|(c, chunk)| run(c * GATHER_CHUNK, chunk));
        } else {
            run(0, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::block_csr::tests::{Rng, in_pool};
    use glam::Mat3;

    /// Random elements of 3 or 4 outputs each over `outputs` entries, their random blocks in
    /// one flat array, and the (output, source) pairs in element order.
    fn elements(outputs: usize, count: usize, seed: u64) -> (Vec<Mat3>, Vec<(u32, u32)>) {
        let mut rng = Rng::new(seed);
        let mut values = Vec::new();
        let mut pairs = Vec::new();
        for e in 0..count {
            for _ in 0..(3 + e % 2) {
                let o = rng.below(outputs) as u32;
                pairs.push((o, values.len() as u32));
                values.push(rng.mat3());
            }
        }
        (values, pairs)
    }

    #[test]
    fn gather_is_bitwise_the_serial_scatter_for_any_thread_count() {
        for (outputs, count) in [(50, 40), (5000, 9000)] {
            let (values, pairs) = elements(outputs, count, 7 + outputs as u64);
            let init = |o: usize| Mat3::from_diagonal(glam::Vec3::splat(1.0 + o as f32 * 1e-3));
            let mut serial: Vec<Mat3> = (0..outputs).map(init).collect();
            for &(o, s) in &pairs {
                serial[o as usize] += values[s as usize];
            }
            let gather = Gather::from_scatter_order(outputs, pairs.iter().copied());
            assert_eq!(gather.num_sources(), pairs.len());
            for threads in [1, 2, 4] {
                let mut out = vec![Mat3::ZERO; outputs];
                in_pool(threads, || gather.sum_into(&mut out, &values, init));
                let same = out.iter().zip(&serial).all(|(a, b)| {
                    a.to_cols_array().map(f32::to_bits) == b.to_cols_array().map(f32::to_bits)
                });
                assert!(same, "{outputs} outputs, {threads} threads");
            }
        }
    }

    #[test]
    fn an_output_without_sources_gets_its_initial_value() {
        let gather = Gather::from_scatter_order(3, [(0u32, 1u32), (2, 0), (0, 2)]);
        let mut out = [0.0f64; 3];
        gather.sum_into(&mut out, &[1.0, 10.0, 100.0], |o| o as f64 * 1000.0);
        assert_eq!(out, [110.0, 1000.0, 2001.0]);
    }
}

//! Numeric part of the block sparse matrix: 3×3 `f32` blocks on a fixed [`BlockPattern`].
//!
//! Values are stored in slot order (row-major over the pattern's compressed rows), so the
//! sparse matrix–vector product streams `values` and `cols` once. Assembly adds an element's
//! blocks at the [`BlockSlot`]s it looked up when the cloth was created: no search, no growth.
//!
//! Blocks are `glam::Mat3` (column-major 3×3). Block `(i, j)` multiplies `x_j` and adds to
//! `y_i`; a symmetric matrix stores block `(j, i)` as the transpose of block `(i, j)`.
#![deny(unsafe_code)]

use std::ops::Range;
use std::sync::Arc;

use glam::{Mat3, Mat3A, Vec3, Vec3A, Vec4, Vec4Swizzles};

use super::pattern::{BlockPattern, BlockSlot};
use super::reduce;

/// A 3n×3n sparse matrix of 3×3 `f32` blocks on a shared, fixed [`BlockPattern`].
#[derive(Clone, Debug)]
pub struct BlockCsr {
    pattern: Arc<BlockPattern>,
    values: Vec<Mat3>,
}

impl BlockCsr {
    /// A matrix on `pattern` with every stored block zero.
    #[must_use]
    pub fn new(pattern: Arc<BlockPattern>) -> BlockCsr {
        let values = vec![Mat3::ZERO; pattern.num_blocks()];
        BlockCsr { pattern, values }
    }

    /// The sparsity pattern.
    #[inline]
    #[must_use]
    pub fn pattern(&self) -> &BlockPattern {
        &self.pattern
    }

    /// The shared pattern, for building further matrices or workspaces on it.
    #[inline]
    #[must_use]
    pub fn pattern_arc(&self) -> &Arc<BlockPattern> {
        &self.pattern
    }

    /// Number of block rows.
    #[inline]
    #[must_use]
    pub fn num_rows(&self) -> usize {
        self.pattern.num_rows()
    }

    /// Sets every stored block to zero (start of assembly).
    pub fn set_zero(&mut self) {
        self.values.fill(Mat3::ZERO);
    }

    /// Adds `m` to the block at `slot`: the assembly hot path, a plain indexed add.
    ///
    /// # Panics
    /// If `slot` is not a slot of this matrix's pattern.
    #[inline]
    pub fn add(&mut self, slot: BlockSlot, m: Mat3) {
        self.values[slot.index()] += m;
    }

    /// The block stored at `slot`.
    ///
    /// # Panics
    /// If `slot` is not a slot of this matrix's pattern.
    #[inline]
    #[must_use]
    pub fn block(&self, slot: BlockSlot) -> Mat3 {
        self.values[slot.index()]
    }

    /// All blocks, in slot order.
    #[inline]
    #[must_use]
    pub fn values(&self) -> &[Mat3] {
        &self.values
    }

    /// All blocks, in slot order, for in-place assembly.
    #[inline]
    #[must_use]
    pub fn values_mut(&mut self) -> &mut [Mat3] {
        &mut self.values
    }

    /// The pattern and all blocks, for in-place assembly that looks up rows while it writes.
    #[inline]
    #[must_use]
    pub fn pattern_and_values_mut(&mut self) -> (&BlockPattern, &mut [Mat3]) {
        (&self.pattern, &mut self.values)
    }

    /// `(A x)_i`: row `i` of the product, summed over the row's blocks in column order.
    #[inline(always)]
    #[must_use]
    pub fn row_product(&self, i: usize, x: &[Vec3]) -> Vec3 {
        self.slots_product(self.pattern.row_range(i), x)
    }

    /// [`BlockCsr::row_product`] of the row whose slots are `range` (`row_range(i)`), for a
    /// pass that walks the row offsets itself.
    #[inline(always)]
    #[must_use]
    pub fn slots_product(&self, range: Range<usize>, x: &[Vec3]) -> Vec3 {
        let cols = &self.pattern.cols()[range.clone()];
        // Each block's columns are read as three 4-lane loads from its 9 floats (column-major:
        // x axis at 0..3, y at 3..6, z at 6..9; the loads at 0..4, 3..7 and 5..9, the last
        // shifted down a lane), lane 3 ignored. Lanes 0..3 do the same operations in the same
        // order as `acc += m * x_j` on `Vec3` (x column, then y, then z, then the sum), so the
        // bits are the same; the loads are 3 instead of 9 ([`load4`]). Always inlined: the
        // solver's product pass compiles it into its AVX copy (`super::isa`).
        let blocks: &[[f32; 9]] = bytemuck::cast_slice(&self.values[range]);
        let mut acc = Vec4::ZERO;
        for (b, &j) in blocks.iter().zip(cols) {
            // Each component of x_j broadcast from its own float (in the AVX copy, one
            // `vbroadcastss` from memory each), one bounds check a block.
            let xj = x[j as usize];
            let mut mx = load4(&b[0..4]) * Vec4::splat(xj.x);
            mx += load4(&b[3..7]) * Vec4::splat(xj.y);
            mx += load4(&b[5..9]).yzww() * Vec4::splat(xj.z);
            acc += mx;
        }
        acc.truncate()
    }

    /// Block `slot` as a `Mat3A`, equal to `Mat3A::from(self.values()[slot])` in all four
    /// lanes of every column (lane 3 repeats the column's z). Each column is one 4-lane load
    /// from the block's 9 floats (as in [`BlockCsr::row_product`]) and one shuffle:
    /// `Mat3A::from` of a block copied by value was compiled as a copy through the stack
    /// whose 16-byte loads each spanned two of the copy's stores, which the CPU cannot
    /// forward (`docs/methods/filtered-pcg-cost.md`).
    #[inline(always)]
    #[must_use]
    pub fn block_a(&self, slot: usize) -> Mat3A {
        let b: &[f32; 9] = bytemuck::cast_ref(&self.values[slot]);
        Mat3A::from_cols(
            Vec3A::from_vec4(load4(&b[0..4]).xyzz()),
            Vec3A::from_vec4(load4(&b[3..7]).xyzz()),
            Vec3A::from_vec4(load4(&b[5..9]).yzww()),
        )
    }

    /// y = A x (parallel over fixed row chunks; bit-identical for any thread count).
    ///
    /// Each output row is summed in `f32` over its blocks in column order; rows are disjoint
    /// outputs, so the schedule cannot change a bit. Allocates nothing.
    ///
    /// # Panics
    /// If `x` or `y` does not have `num_rows()` entries.
    pub fn mul_vec(&self, x: &[Vec3], y: &mut [Vec3]) {
        let n = self.num_rows();
        assert_eq!(x.len(), n, "BlockCsr::mul_vec: x has the wrong length");
        assert_eq!(y.len(), n, "BlockCsr::mul_vec: y has the wrong length");
        reduce::for_each_chunk(y, |first, chunk: &mut [Vec3]| {
            for (k, yi) in chunk.iter_mut().enumerate() {
                *yi = self.row_product(first + k, x);
            }
        });
    }

    /// Dense copy in f64, row-major 3n×3n (tests and reference solves).
    #[must_use]
    pub fn to_dense(&self) -> Vec<f64> {
        let n3 = 3 * self.num_rows();
        let mut d = vec![0.0f64; n3 * n3];
        for i in 0..self.num_rows() {
            for s in self.pattern.row_range(i) {
                let j = self.pattern.cols()[s] as usize;
                let m = self.values[s];
                for r in 0..3 {
                    for c in 0..3 {
                        // glam is column-major: element (r, c) is col(c)[r].
                        d[(3 * i + r) * n3 + 3 * j + c] = f64::from(m.col(c)[r]);
                    }
                }
            }
        }
        d
    }

    /// Whether every block satisfies `|A_ij - A_jiᵀ| <= tol` entrywise. Binary searches:
    /// for validation and tests, not inside a step.
    #[must_use]
    pub fn is_symmetric(&self, tol: f32) -> bool {
        (0..self.num_rows()).all(|i| {
            self.pattern.row_range(i).all(|s| {
                let j = self.pattern.cols()[s];
                let Some(t) = self.pattern.slot(j, i as u32) else {
                    return false;
                };
                let diff = self.values[s] - self.values[t.index()].transpose();
                diff.abs().to_cols_array().iter().all(|&e| e <= tol)
            })
        })
    }
}

/// Four floats as one unaligned 4-lane load. `Vec4::from_slice` builds the vector lane by
/// lane, which the compiler turns into two or three narrower loads and shuffles here.
#[inline(always)]
fn load4(four: &[f32]) -> Vec4 {
    bytemuck::pod_read_unaligned(bytemuck::cast_slice(four))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Small deterministic generator for test data (xorshift64*).
    pub(crate) struct Rng(u64);
    impl Rng {
        pub(crate) fn new(seed: u64) -> Rng {
            Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
        }
        pub(crate) fn next_u64(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        /// Uniform in [-1, 1).
        pub(crate) fn unit(&mut self) -> f32 {
            (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        }
        pub(crate) fn below(&mut self, n: usize) -> usize {
            (self.next_u64() % n as u64) as usize
        }
        pub(crate) fn vec3(&mut self) -> Vec3 {
            Vec3::new(self.unit(), self.unit(), self.unit())
        }
        pub(crate) fn mat3(&mut self) -> Mat3 {
            Mat3::from_cols(self.vec3(), self.vec3(), self.vec3())
        }
    }

    /// Random symmetric positive definite block matrix: mass `m I` on the diagonal plus, for
    /// each coupled pair, a spring-like PSD element `[K -K; -K K]` with `K = k (d dᵀ + 0.1 I)`.
    /// `extra` random pairs per row are added to the pattern of a chain.
    pub(crate) fn random_spd(n: usize, extra: usize, seed: u64) -> BlockCsr {
        let mut rng = Rng::new(seed);
        let mut pairs: Vec<(u32, u32)> = (1..n as u32).map(|i| (i - 1, i)).collect();
        for _ in 0..extra * n {
            let i = rng.below(n) as u32;
            let j = rng.below(n) as u32;
            if i != j {
                pairs.push((i, j));
            }
        }
        let pattern = Arc::new(BlockPattern::from_pairs(n, pairs.iter().copied()));
        let mut a = BlockCsr::new(pattern);
        for i in 0..n {
            let m = 1.0 + rng.unit().abs();
            a.add(
                a.pattern().diag_slot(i),
                Mat3::from_diagonal(Vec3::splat(m)),
            );
        }
        for &(i, j) in &pairs {
            let d = rng.vec3().normalize_or(Vec3::X);
            let k = 20.0 * (1.0 + rng.unit());
            let kb = k * (Mat3::from_cols(d * d.x, d * d.y, d * d.z) + Mat3::IDENTITY * 0.1);
            let p = a.pattern();
            let (sii, sjj) = (p.diag_slot(i as usize), p.diag_slot(j as usize));
            let sij = p.slot(i, j).expect("pair in pattern");
            let sji = p.slot(j, i).expect("pair in pattern");
            a.add(sii, kb);
            a.add(sjj, kb);
            a.add(sij, -kb);
            a.add(sji, -kb);
        }
        a
    }

    /// Dense `A x` in f64.
    pub(crate) fn dense_mul(d: &[f64], x: &[Vec3]) -> Vec<f64> {
        let n3 = 3 * x.len();
        let xs: Vec<f64> = x.iter().flat_map(|v| v.to_array()).map(f64::from).collect();
        (0..n3)
            .map(|r| (0..n3).map(|c| d[r * n3 + c] * xs[c]).sum())
            .collect()
    }

    pub(crate) fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("building a rayon pool")
            .install(f)
    }

    /// An element: its vertices and its k×k local blocks (column-major arrays), row-major.
    type Element = (Vec<u32>, Vec<[f32; 9]>);

    fn element_strategy() -> impl Strategy<Value = (usize, Vec<Element>)> {
        (1usize..12).prop_flat_map(|n| {
            let element = prop::collection::vec(0..n as u32, 1..4).prop_flat_map(|verts| {
                let k = verts.len();
                (
                    Just(verts),
                    prop::collection::vec(prop::array::uniform9(-4.0f32..4.0), k * k),
                )
            });
            (Just(n), prop::collection::vec(element, 0..10))
        })
    }

    proptest! {
        /// Each element couples its vertices; its k×k local blocks are scattered through the
        /// slot table into the sparse matrix (blocks (a, b) and, separately, (b, a)), and the
        /// same blocks are added into a dense matrix. Repeated vertices inside an element are
        /// allowed: they hit the same slot twice.
        #[test]
        fn slot_assembly_equals_dense_assembly((n, elements) in element_strategy()) {
            let pairs = elements.iter().flat_map(|(v, _)| {
                v.iter().flat_map(move |&a| v.iter().map(move |&b| (a, b)))
            });
            let pattern = Arc::new(BlockPattern::from_pairs(n, pairs));
            // Creation time: each element records its slots.
            let tables: Vec<Vec<BlockSlot>> = elements
                .iter()
                .map(|(v, _)| {
                    v.iter()
                        .flat_map(|&a| v.iter().map(move |&b| (a, b)))
                        .map(|(a, b)| pattern.slot(a, b).expect("pair in pattern"))
                        .collect()
                })
                .collect();
            let mut a = BlockCsr::new(pattern);
            let n3 = 3 * n;
            let mut dense = vec![0.0f64; n3 * n3];
            for _round in 0..2 {
                a.set_zero();
                dense.fill(0.0);
                for ((verts, blocks), slots) in elements.iter().zip(&tables) {
                    let k = verts.len();
                    for (e, (&slot, b)) in slots.iter().zip(blocks).enumerate() {
                        let m = Mat3::from_cols_array(b);
                        a.add(slot, m);
                        let (i, j) = (verts[e / k] as usize, verts[e % k] as usize);
                        for r in 0..3 {
                            for c in 0..3 {
                                dense[(3 * i + r) * n3 + 3 * j + c] += f64::from(m.col(c)[r]);
                            }
                        }
                    }
                }
                let got = a.to_dense();
                for (g, d) in got.iter().zip(&dense) {
                    prop_assert!((g - d).abs() <= 1e-4 * (1.0 + d.abs()), "{} vs {}", g, d);
                }
            }
        }

        #[test]
        fn mul_vec_equals_dense_product(n in 1usize..30, extra in 0usize..4, seed in any::<u64>()) {
            let a = random_spd(n, extra, seed);
            let mut rng = Rng::new(seed ^ 0xABCD);
            let x: Vec<Vec3> = (0..n).map(|_| rng.vec3()).collect();
            let mut y = vec![Vec3::ZERO; n];
            a.mul_vec(&x, &mut y);
            let reference = dense_mul(&a.to_dense(), &x);
            let scale = reference.iter().fold(1.0f64, |m, v| m.max(v.abs()));
            for (k, v) in y.iter().flat_map(|v| v.to_array()).enumerate() {
                prop_assert!((f64::from(v) - reference[k]).abs() <= 1e-5 * scale,
                    "entry {}: {} vs {}", k, v, reference[k]);
            }
            prop_assert!(a.is_symmetric(1e-5));
        }
    }

    #[test]
    fn mul_vec_bits_independent_of_thread_count() {
        let n = 20_000;
        let a = random_spd(n, 5, 7);
        let mut rng = Rng::new(8);
        let x: Vec<Vec3> = (0..n).map(|_| rng.vec3() * 1e3).collect();
        let run = |threads| {
            in_pool(threads, || {
                let mut y = vec![Vec3::ZERO; n];
                a.mul_vec(&x, &mut y);
                y
            })
        };
        let y1 = run(1);
        let y4 = run(4);
        assert!(
            y1.iter()
                .zip(&y4)
                .all(|(p, q)| p.to_array().map(f32::to_bits) == q.to_array().map(f32::to_bits))
        );
        // And the parallel rows are the serial rows.
        assert!((0..n).step_by(97).all(|i| a.row_product(i, &x) == y4[i]));
    }

    #[test]
    fn asymmetric_matrix_detected() {
        let p = Arc::new(BlockPattern::from_pairs(2, [(0, 1)]));
        let mut a = BlockCsr::new(p);
        let s01 = a.pattern().slot(0, 1).expect("stored");
        let s10 = a.pattern().slot(1, 0).expect("stored");
        let m = Mat3::from_cols_array(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
        a.add(s01, m);
        a.add(s10, m.transpose());
        assert!(a.is_symmetric(0.0));
        a.add(s10, Mat3::from_diagonal(Vec3::new(0.0, 0.5, 0.0)));
        assert!(!a.is_symmetric(0.1));
        assert!(a.is_symmetric(0.5));
        // Dense layout: block (0, 1) row 0 is m's first row.
        let d = a.to_dense();
        assert_eq!(&d[3..6], &[1.0, 4.0, 7.0]);
    }
}

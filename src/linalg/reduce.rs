//! Deterministic chunked loops and reductions.
//!
//! Every parallel loop in `linalg` walks its rows in FIXED chunks of [`CHUNK_ROWS`] rows.
//! A loop that only writes disjoint outputs is bit-identical for any schedule. A reduction
//! computes one `f64` partial sum per chunk, serially in row order inside the chunk, and then
//! adds the partials serially in chunk order. The chunking, not the number of threads, thus
//! defines the summation order, and the result is bit-identical for any rayon thread count
//! (DESIGN "Invariants": reduce in a fixed order over fixed chunks).
//!
//! Below [`PARALLEL_MIN_ROWS`] rows the same chunked code runs on the calling thread (rayon
//! is told never to split), so small systems skip the fork/join overhead while producing the
//! very same bits.
//!
//! Partials live in a stack array of [`BATCH_CHUNKS`] entries; longer vectors are reduced
//! one batch after the other, still in chunk order. Nothing here allocates.
//!
//! Loops run in the current rayon pool: a host that supplies its own pool wraps the call in
//! `pool.install(..)`. While a thread runs a step for a host's task dispatcher
//! (`runtime::executor`), they run on that thread, unsplit.
#![deny(unsafe_code)]

use glam::Vec3;
use rayon::prelude::*;

use crate::runtime::executor::for_each;
use std::ops::Range;

/// Rows per chunk: the unit of parallel work and of the fixed summation order.
pub const CHUNK_ROWS: usize = 1024;

/// Loops over fewer rows than this run serially (same chunks, same bits).
pub const PARALLEL_MIN_ROWS: usize = 4096;

/// Chunks reduced per batch; the partial sums of one batch sit in a stack array.
pub const BATCH_CHUNKS: usize = 64;

/// rayon's minimum number of chunks per job: 1 (split freely) above the threshold,
/// "never split" below it.
#[inline]
fn min_chunks_per_job(rows: usize) -> usize {
    if rows >= PARALLEL_MIN_ROWS {
        1
    } else {
        usize::MAX
    }
}

/// Number of chunks that cover `rows` rows.
#[inline]
#[must_use]
pub fn num_chunks(rows: usize) -> usize {
    rows.div_ceil(CHUNK_ROWS)
}

/// One or more equally long mutable row slices that a chunked loop splits together: a
/// `&mut [T]`, or a pair `(A, B)` of row slices (nest pairs for three or more).
pub trait RowSlices: Sized + Send {
    /// Number of rows (every member has the same length; see [`RowSlices::check_lengths`]).
    fn num_rows(&self) -> usize;
    /// Whether every member has the same number of rows.
    fn check_lengths(&self) -> bool;
    /// Splits every member at row `mid`.
    fn split_rows(self, mid: usize) -> (Self, Self);
    /// Parallel iterator over chunks of `chunk` rows of every member, zipped.
    fn par_row_chunks(self, chunk: usize) -> impl IndexedParallelIterator<Item = Self>;
}

impl<T: Send> RowSlices for &mut [T] {
    #[inline]
    fn num_rows(&self) -> usize {
        self.len()
    }
    #[inline]
    fn check_lengths(&self) -> bool {
        true
    }
    #[inline]
    fn split_rows(self, mid: usize) -> (Self, Self) {
        self.split_at_mut(mid)
    }
    #[inline]
    fn par_row_chunks(self, chunk: usize) -> impl IndexedParallelIterator<Item = Self> {
        self.par_chunks_mut(chunk)
    }
}

impl<A: RowSlices, B: RowSlices> RowSlices for (A, B) {
    #[inline]
    fn num_rows(&self) -> usize {
        self.0.num_rows()
    }
    #[inline]
    fn check_lengths(&self) -> bool {
        self.0.check_lengths() && self.1.check_lengths() && self.0.num_rows() == self.1.num_rows()
    }
    #[inline]
    fn split_rows(self, mid: usize) -> (Self, Self) {
        let (a0, a1) = self.0.split_rows(mid);
        let (b0, b1) = self.1.split_rows(mid);
        ((a0, b0), (a1, b1))
    }
    #[inline]
    fn par_row_chunks(self, chunk: usize) -> impl IndexedParallelIterator<Item = Self> {
        self.0
            .par_row_chunks(chunk)
            .zip(self.1.par_row_chunks(chunk))
    }
}

/// Calls `f(first_row, chunk)` for every fixed chunk of `out`, in parallel above
/// [`PARALLEL_MIN_ROWS`] rows.
///
/// # Panics
/// If the members of `out` differ in length.
pub fn for_each_chunk<S, F>(out: S, f: F)
where
    S: RowSlices,
    F: Fn(usize, S) + Sync + Send,
{
    assert!(
        out.check_lengths(),
        "for_each_chunk: row slices differ in length"
    );
    let min_len = min_chunks_per_job(out.num_rows());
    for_each(
        out.par_row_chunks(CHUNK_ROWS)
            .with_min_len(min_len)
            .enumerate(),
        |(k, chunk)| f(k * CHUNK_ROWS, chunk),
    );
}

/// Calls `f(first_row, chunk)` for every fixed chunk of `out` and returns the sum of the
/// returned partials, added in chunk order (bit-identical for any thread count).
///
/// # Panics
/// If the members of `out` differ in length.
pub fn sum_chunks_mut<S, F>(out: S, f: F) -> f64
where
    S: RowSlices,
    F: Fn(usize, S) -> f64 + Sync + Send,
{
    assert!(
        out.check_lengths(),
        "sum_chunks_mut: row slices differ in length"
    );
    let rows = out.num_rows();
    let min_len = min_chunks_per_job(rows);
    let mut total = 0.0f64;
    let mut start = 0usize;
    let mut rest = out;
    while start < rows {
        let len = (rows - start).min(BATCH_CHUNKS * CHUNK_ROWS);
        let (batch, tail) = rest.split_rows(len);
        let mut partials = [0.0f64; BATCH_CHUNKS];
        let k = num_chunks(len);
        let batch_start = start;
        for_each(
            batch
                .par_row_chunks(CHUNK_ROWS)
                .zip(partials[..k].par_iter_mut())
                .with_min_len(min_len)
                .enumerate(),
            |(j, (chunk, p))| *p = f(batch_start + j * CHUNK_ROWS, chunk),
        );
        for p in &partials[..k] {
            total += *p;
        }
        start += len;
        rest = tail;
    }
    total
}

/// Sum of `f(rows)` over the fixed chunks of `0..rows`, added in chunk order.
pub fn sum_chunks<F>(rows: usize, f: F) -> f64
where
    F: Fn(Range<usize>) -> f64 + Sync + Send,
{
    let min_len = min_chunks_per_job(rows);
    let mut total = 0.0f64;
    let mut start = 0usize;
    while start < rows {
        let len = (rows - start).min(BATCH_CHUNKS * CHUNK_ROWS);
        let mut partials = [0.0f64; BATCH_CHUNKS];
        let k = num_chunks(len);
        let end = start + len;
        let batch_start = start;
        for_each(
            partials[..k]
                .par_iter_mut()
                .with_min_len(min_len)
                .enumerate(),
            |(j, p)| {
                let lo = batch_start + j * CHUNK_ROWS;
                *p = f(lo..(lo + CHUNK_ROWS).min(end));
            },
        );
        for p in &partials[..k] {
            total += *p;
        }
        start = end;
    }
    total
}

/// `a · b` with the products and the sum in `f64`.
#[inline]
#[must_use]
pub fn dot_f64(a: Vec3, b: Vec3) -> f64 {
    f64::from(a.x) * f64::from(b.x)
        + f64::from(a.y) * f64::from(b.y)
        + f64::from(a.z) * f64::from(b.z)
}

/// Serial `f64` dot product of two row slices, in row order: the per-chunk kernel.
#[inline]
#[must_use]
pub fn dot_serial(a: &[Vec3], b: &[Vec3]) -> f64 {
    a.iter()
        .zip(b)
        .fold(0.0, |acc, (&x, &y)| acc + dot_f64(x, y))
}

/// Deterministic dot product `a · b` of two block vectors, accumulated in `f64` over fixed
/// chunks (bit-identical for any thread count).
///
/// # Panics
/// If the lengths differ.
#[must_use]
pub fn dot(a: &[Vec3], b: &[Vec3]) -> f64 {
    assert_eq!(a.len(), b.len(), "dot: lengths differ");
    sum_chunks(a.len(), |r| dot_serial(&a[r.clone()], &b[r]))
}

/// Deterministic squared Euclidean norm `a · a`, accumulated in `f64` over fixed chunks.
#[must_use]
pub fn norm_squared(a: &[Vec3]) -> f64 {
    sum_chunks(a.len(), |r| dot_serial(&a[r.clone()], &a[r]))
}

/// Deterministic Euclidean norm, see [`norm_squared`].
#[must_use]
pub fn norm(a: &[Vec3]) -> f64 {
    norm_squared(a).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random vectors with widely spread magnitudes, so that a change
    /// of summation order would show in the bits.
    fn vectors(n: usize, seed: u64) -> Vec<Vec3> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        };
        (0..n)
            .map(|i| {
                let scale = 10f32.powi((i % 9) as i32 - 4);
                Vec3::new(next(), next(), next()) * scale
            })
            .collect()
    }

    fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("building a rayon pool")
            .install(f)
    }

    /// The documented order: per chunk in row order, then the partials in chunk order.
    fn reference_dot(a: &[Vec3], b: &[Vec3]) -> f64 {
        a.chunks(CHUNK_ROWS)
            .zip(b.chunks(CHUNK_ROWS))
            .map(|(x, y)| dot_serial(x, y))
            .fold(0.0, |acc, p| acc + p)
    }

    #[test]
    fn dot_bits_independent_of_thread_count() {
        // Beyond one batch, so the batch loop is exercised too.
        let n = BATCH_CHUNKS * CHUNK_ROWS + 20_000;
        let a = vectors(n, 1);
        let b = vectors(n, 2);
        let one = in_pool(1, || (dot(&a, &b), norm_squared(&a)));
        let four = in_pool(4, || (dot(&a, &b), norm_squared(&a)));
        assert_eq!(one.0.to_bits(), four.0.to_bits());
        assert_eq!(one.1.to_bits(), four.1.to_bits());
        assert_eq!(one.0.to_bits(), reference_dot(&a, &b).to_bits());
        assert_eq!(one.1.to_bits(), reference_dot(&a, &a).to_bits());
    }

    #[test]
    fn dot_matches_exact_sum_small_and_large() {
        for n in [
            0,
            1,
            5,
            CHUNK_ROWS - 1,
            CHUNK_ROWS,
            PARALLEL_MIN_ROWS + 3,
            20_000,
        ] {
            let a = vectors(n, 3);
            let b = vectors(n, 4);
            let exact: f64 = a.iter().zip(&b).map(|(&x, &y)| dot_f64(x, y)).sum();
            let d = dot(&a, &b);
            assert!(
                (d - exact).abs() <= 1e-12 * (1.0 + exact.abs()),
                "n={n}: {d} vs {exact}"
            );
            assert_eq!(d.to_bits(), reference_dot(&a, &b).to_bits(), "n={n}");
            assert!((norm(&a).powi(2) - norm_squared(&a)).abs() <= 1e-9 * (1.0 + norm_squared(&a)));
        }
    }

    #[test]
    fn sum_chunks_mut_writes_every_row_and_sums_in_order() {
        let n = 3 * BATCH_CHUNKS * CHUNK_ROWS / 2 + 17;
        let src = vectors(n, 5);
        let run = |threads| {
            in_pool(threads, || {
                let mut a = vec![Vec3::ZERO; n];
                let mut b = vec![0u32; n];
                let s = sum_chunks_mut((&mut a[..], &mut b[..]), |first, (ca, cb)| {
                    let mut acc = 0.0;
                    for (k, (x, y)) in ca.iter_mut().zip(cb.iter_mut()).enumerate() {
                        *x = src[first + k] * 2.0;
                        *y = (first + k) as u32;
                        acc += dot_f64(src[first + k], src[first + k]);
                    }
                    acc
                });
                (a, b, s)
            })
        };
        let (a1, b1, s1) = run(1);
        let (a4, b4, s4) = run(4);
        assert_eq!(a1, a4);
        assert_eq!(b1, b4);
        assert!(b1.iter().enumerate().all(|(i, &v)| v as usize == i));
        assert!(a1.iter().zip(&src).all(|(&x, &y)| x == y * 2.0));
        assert_eq!(s1.to_bits(), s4.to_bits());
        assert_eq!(s1.to_bits(), reference_dot(&src, &src).to_bits());
    }

    #[test]
    fn for_each_chunk_visits_each_row_once() {
        let n = 10_000;
        let mut out = vec![0u32; n];
        in_pool(3, || {
            for_each_chunk(&mut out[..], |first, c| {
                for (k, v) in c.iter_mut().enumerate() {
                    *v += (first + k) as u32 + 1;
                }
            })
        });
        assert!(out.iter().enumerate().all(|(i, &v)| v as usize == i + 1));
    }

    #[test]
    #[should_panic(expected = "differ in length")]
    fn mismatched_row_slices_panic() {
        let mut a = [0u8; 3];
        let mut b = [0u8; 4];
        for_each_chunk((&mut a[..], &mut b[..]), |_, _| {});
    }
}

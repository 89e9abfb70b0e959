//! The preconditioned conjugate-gradient iteration, written once for every PCG in weft.
//!
//! Both solvers run this loop: the filtered block PCG of Baraff–Witkin ([`super::pcg`]: `f32`
//! 3×3 blocks, per-vertex filters, `f64` reductions) and the scalar PCG of the isometric
//! projection ([`super::scalar_pcg`]: `f64`, any [`super::SymOperator`] and preconditioner).
//! What differs between them — the numbers, the filter, which passes over the rows are fused —
//! sits behind [`CgSystem`]; the iteration itself, its stopping tests and what it reports are
//! here.
//!
//! One iteration, with `s = P⁻¹ r` (filtered where the solver filters) and `d = r · s`:
//!
//! ```text
//! c = s + β c          (c = s the first time)
//! q = A c,   γ = c · q         γ ≤ 0 or NaN: A is not positive definite, stop
//! α = d / γ                     α not representable in the solver's numbers: stop
//! x += α c,  r −= α q,  s = P⁻¹ r,  d' = r · s
//! β = d' / d
//! ```
//!
//! The loop stops, before an iteration, when `d` is not finite, when `d ≤ threshold`
//! (converged), at the iteration cap, or when `should_stop(iterations)` says so (the frame's
//! deadline).
#![deny(unsafe_code)]

use super::pcg::PcgReport;

/// One solver's vectors and passes, as the CG iteration drives them.
pub trait CgSystem {
    /// `c = s + β c`, or `c = s` for `β = None`.
    fn direction(&mut self, beta: Option<f64>);
    /// `q = A c`; returns `c · q`.
    fn product(&mut self) -> f64;
    /// Whether `α` is a finite step in the solver's numbers.
    fn step_is_finite(&self, alpha: f64) -> bool;
    /// `x += α c`, `r −= α q`, `s = P⁻¹ r`; returns `r · s`.
    fn update(&mut self, alpha: f64) -> f64;
}

/// Runs the iteration of the module doc from `d_new = r · s` of the initial iterate, with the
/// convergence test `d ≤ threshold` and at most `max_iterations` iterations. Sets
/// `iterations`, `converged`, `interrupted` and `indefinite` in `report`; returns the last `d`.
pub fn iterate<S: CgSystem + ?Sized>(
    system: &mut S,
    mut d_new: f64,
    threshold: f64,
    max_iterations: u32,
    should_stop: &mut dyn FnMut(u32) -> bool,
    report: &mut PcgReport,
) -> f64 {
    let mut beta: Option<f64> = None;
    let mut it = 0u32;
    loop {
        if !d_new.is_finite() {
            break;
        }
        if d_new <= threshold {
            report.converged = true;
            break;
        }
        if it >= max_iterations {
            break;
        }
        if should_stop(it) {
            report.interrupted = true;
            break;
        }
        system.direction(beta);
        let cq = system.product();
        if cq.is_nan() || cq <= 0.0 {
            report.indefinite = true;
            break;
        }
        let alpha = d_new / cq;
        if !system.step_is_finite(alpha) {
            // c · q underflowed against d: no step can be taken.
            break;
        }
        let d_old = d_new;
        d_new = system.update(alpha);
        beta = Some(d_new / d_old);
        it += 1;
    }
    report.iterations = it;
    d_new
}

//! Jacobi-preconditioned conjugate gradients for scalar SPD systems `K z = b`, in `f64`.
//!
//! The system is given as a [`SymOperator`] (an assembled [`super::SymCsr`], or the
//! matrix-free `G W Gᵀ + D` of the Gauss–Newton projection). Every dot product is reduced over
//! the fixed chunks of [`super::reduce`], so the iterates are bit-identical for any rayon
//! thread count provided the operator's `apply` is. Nothing allocates after the
//! [`ScalarPcgWorkspace`] exists.
#![deny(unsafe_code)]

use super::cg::{self, CgSystem};
use super::pcg::{PcgReport, PcgSettings};
use super::reduce;

/// A symmetric positive (semi)definite linear operator on `f64` vectors.
pub trait SymOperator {
    /// Dimension.
    fn len(&self) -> usize;
    /// True for the 0×0 operator.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `y = K z`; must be deterministic (fixed reduction order) for any thread count.
    /// `&mut self`: a matrix-free operator keeps its scratch inside.
    fn apply(&mut self, z: &[f64], y: &mut [f64]);
    /// `out[a] = K_aa`.
    fn diagonal(&self, out: &mut [f64]);
}

/// Scratch of the scalar PCG for systems up to a capacity; created with the cloth.
#[derive(Clone, Debug, Default)]
pub struct ScalarPcgWorkspace {
    r: Vec<f64>,
    p: Vec<f64>,
    q: Vec<f64>,
    s: Vec<f64>,
    inv_diag: Vec<f64>,
}

impl ScalarPcgWorkspace {
    /// Workspace for systems of at most `n` rows.
    #[must_use]
    pub fn new(n: usize) -> Self {
        let mut ws = ScalarPcgWorkspace::default();
        ws.reserve(n);
        ws
    }

    /// Grows the buffers to `n` rows (allocates only when `n` exceeds the capacity).
    pub fn reserve(&mut self, n: usize) {
        for v in [
            &mut self.r,
            &mut self.p,
            &mut self.q,
            &mut self.s,
            &mut self.inv_diag,
        ] {
            if v.len() < n {
                v.resize(n, 0.0);
            }
        }
    }

    /// Rows this workspace can serve without growing.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.r.len()
    }
}

/// Deterministic `f64` dot product over fixed chunks.
#[must_use]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "dot: lengths differ");
    reduce::sum_chunks(a.len(), |r| {
        a[r.clone()]
            .iter()
            .zip(&b[r])
            .fold(0.0, |acc, (x, y)| acc + x * y)
    })
}

/// Solves `K z = b` by Jacobi-preconditioned CG; `z` is the warm start and the result.
///
/// - Converged when `sqrt(r·P⁻¹r) <= tolerance · sqrt(b·P⁻¹b)` (`P = diag K`), measured on
///   `b` so a good warm start may converge in 0 iterations.
/// - Rows with `K_aa <= 0` (a constraint whose vertices are all pinned: a zero row of `K`,
///   `docs/methods/isometric-model.md §A12`) are inert: their preconditioner is 0, their `b` must
///   be 0 (the caller masks it) and their `z` is left as given.
/// - `should_stop(iterations)` is asked before each iteration (the frame deadline).
/// - `p·Kp <= 0` stops with `indefinite`.
///
/// # Panics
/// If `b` or `z` differs from the operator's size or the workspace is too small.
pub fn solve_scalar_pcg<O: SymOperator + ?Sized>(
    op: &mut O,
    b: &[f64],
    settings: &PcgSettings,
    ws: &mut ScalarPcgWorkspace,
    z: &mut [f64],
    should_stop: &mut dyn FnMut(u32) -> bool,
) -> PcgReport {
    let n = op.len();
    assert!(ws.capacity() >= n, "scalar PCG: workspace too small");
    let mut inv_diag = std::mem::take(&mut ws.inv_diag);
    op.diagonal(&mut inv_diag[..n]);
    for d in inv_diag[..n].iter_mut() {
        *d = if *d > 0.0 { 1.0 / *d } else { 0.0 };
    }
    let inv = &inv_diag[..n];
    let report = solve_scalar_pcg_with(
        op,
        &mut |r: &[f64], s: &mut [f64]| {
            for ((si, ri), di) in s.iter_mut().zip(r).zip(inv) {
                *si = ri * di;
            }
        },
        b,
        settings,
        ws,
        z,
        should_stop,
    );
    ws.inv_diag = inv_diag;
    report
}

/// PCG with any symmetric positive (semi)definite preconditioner `precond(r, s)`: `s = M⁻¹ r`
/// (e.g. [`super::IncompleteCholesky::solve`], `docs/methods/isometric-model.md §A17`), same
/// contract as [`solve_scalar_pcg`] with `P = M`: convergence is `sqrt(r·M⁻¹r) <= tolerance ·
/// sqrt(b·M⁻¹b)`; inert rows must have `M⁻¹ = 0` there (`s_a = 0`). `precond` must be
/// deterministic for the result to be.
///
/// # Panics
/// If `b` or `z` differs from the operator's size or the workspace is too small.
#[allow(clippy::too_many_arguments)]
pub fn solve_scalar_pcg_with<O: SymOperator + ?Sized>(
    op: &mut O,
    precond: &mut dyn FnMut(&[f64], &mut [f64]),
    b: &[f64],
    settings: &PcgSettings,
    ws: &mut ScalarPcgWorkspace,
    z: &mut [f64],
    should_stop: &mut dyn FnMut(u32) -> bool,
) -> PcgReport {
    let n = op.len();
    assert!(b.len() == n && z.len() == n, "scalar PCG: wrong lengths");
    assert!(ws.capacity() >= n, "scalar PCG: workspace too small");
    let r = &mut ws.r[..n];
    let p = &mut ws.p[..n];
    let q = &mut ws.q[..n];
    let s = &mut ws.s[..n];
    let mut report = PcgReport::default();

    precond(b, s);
    let bnorm = dot(b, s);
    if !bnorm.is_finite() {
        report.relative_residual = f64::NAN;
        return report;
    }
    if bnorm <= 0.0 {
        z.iter_mut().for_each(|v| *v = 0.0);
        report.converged = true;
        return report;
    }
    if !z.iter().all(|v| v.is_finite()) {
        z.iter_mut().for_each(|v| *v = 0.0);
    }
    // r = b - K z, s = P⁻¹ r.
    op.apply(z, q);
    reduce::for_each_chunk(&mut *r, |first, rc: &mut [f64]| {
        for (k, ri) in rc.iter_mut().enumerate() {
            *ri = b[first + k] - q[first + k];
        }
    });
    precond(r, s);
    let d_new = dot(r, s);
    let threshold = settings.tolerance * settings.tolerance * bnorm;
    let mut system = ScalarSystem {
        op,
        precond,
        z,
        r,
        p,
        q,
        s,
    };
    let d_new = cg::iterate(
        &mut system,
        d_new,
        threshold,
        settings.max_iterations,
        should_stop,
        &mut report,
    );
    report.relative_residual = if d_new.is_finite() {
        (d_new.max(0.0) / bnorm).sqrt()
    } else {
        f64::NAN
    };
    report
}

/// The scalar system as the CG iteration ([`cg::iterate`]) drives it: `f64` throughout.
struct ScalarSystem<'a, O: SymOperator + ?Sized> {
    op: &'a mut O,
    precond: &'a mut dyn FnMut(&[f64], &mut [f64]),
    z: &'a mut [f64],
    r: &'a mut [f64],
    p: &'a mut [f64],
    q: &'a mut [f64],
    s: &'a mut [f64],
}

impl<O: SymOperator + ?Sized> CgSystem for ScalarSystem<'_, O> {
    fn direction(&mut self, beta: Option<f64>) {
        let s = &*self.s;
        reduce::for_each_chunk(&mut *self.p, |first, pc: &mut [f64]| {
            for (k, pi) in pc.iter_mut().enumerate() {
                let i = first + k;
                *pi = match beta {
                    Some(beta) => s[i] + beta * *pi,
                    None => s[i],
                };
            }
        });
    }

    fn product(&mut self) -> f64 {
        self.op.apply(self.p, self.q);
        dot(self.p, self.q)
    }

    fn step_is_finite(&self, alpha: f64) -> bool {
        alpha.is_finite()
    }

    fn update(&mut self, alpha: f64) -> f64 {
        let (pp, qq) = (&*self.p, &*self.q);
        reduce::for_each_chunk((&mut *self.z, &mut *self.r), |first, (zc, rc)| {
            for k in 0..zc.len() {
                let i = first + k;
                zc[k] += alpha * pp[i];
                rc[k] -= alpha * qq[i];
            }
        });
        (self.precond)(self.r, self.s);
        dot(self.r, self.s)
    }
}

//! Discrete-shell (dihedral) bending of one hinge with rest angles and bending damping: the course-notes
//! force in the closed form of Bridson, Marino & Fedkiw 2003 (`docs/methods/dihedral-bending.md` §4.1–4.6).
//!
//! Equation labels `eq. 2.n` are those of `docs/methods/baraff-witkin.md`, `eq. 4.n` those of
//! `docs/methods/dihedral-bending.md` (weft's own statements of the model, with the papers they follow).
//!
//! # Force (`docs/methods/dihedral-bending.md` (4.7))
//!
//! With the hinge conventions of [`super::dihedral`] (wings `x1`, `x2`, shared edge `x3 -> x4`,
//! `u_i = −∂θ/∂x_i`, eq. 4.4–4.6), BMF03's restoring force is
//!
//! ```text
//! F_i = k_e c_e (sin(θ/2) − sin(θ0/2)) u_i = −k_e c_e (sin(θ/2) − sin(θ0/2)) ∂θ/∂x_i,
//! c_e = |e|² / (|N1| + |N2|)   frozen at the rest geometry.
//! ```
//!
//! **Scaling (our choice, stated).** `docs/methods/dihedral-bending.md` §4.4 leaves the constant open (the notes write
//! `B |e|²/(A1+A2)`, BMF03 `k_e |e|²/(|N1|+|N2|)`, and `|N1| + |N2| = 2(A1 + A2)`). We take the hinge weight
//! `w = |e|²/(A1 + A2)` of the Baraff–Witkin bend condition ([`super::baraff_witkin::HingeRest::weight`],
//! eq. 4.1 without its 1/4) and set `k_e c_e = 2 k_b w`, i.e. **`k_e = 4 k_b`** with `c_e = w/2` exactly as
//! BMF03 defines it. Then for small angles the energy is `(k_b/2) w (θ − θ0)²`, the Baraff–Witkin bend
//! energy: one bending stiffness `k_b` (N·m, the scene's `bend`) means the same material under both
//! bending choices (`tests::small_angles_match_the_baraff_witkin_bend`), calibrated on a cylinder as in
//! [`super::baraff_witkin`]. Because `c_e` is frozen at rest the force is conservative (`docs/methods/dihedral-bending.md` §4.4):
//!
//! ```text
//! E = k_b w ψ(θ),   ψ(θ) = 4 (cos(θ0/2) − cos(θ/2)) − 2 sin(θ0/2) (θ − θ0)
//! ψ'(θ) = 2 (sin(θ/2) − sin(θ0/2)),   ψ''(θ) = cos(θ/2) ≥ 0 on (−π, π]
//! F_i = −k_b w ψ'(θ) ∂θ/∂x_i          (= eq. 4.7 with k_e = 4 k_b, c_e = w/2)
//! ```
//!
//! ψ is convex on (−π, π) with its minimum 0 at θ0, so the energy is non-negative and the force always
//! turns the hinge towards θ0 (`docs/methods/dihedral-bending.md` §4.3, `tests::force_reduces_the_angle_error`)
//! through the unfolded range: unlike the wrapped `θ − θ0` of the Baraff–Witkin bend it never pulls a
//! hinge across the fold-through at ±π, even when that way round is shorter.
//!
//! **Rest angles (§4.6).** `θ0` is the rest angle of [`HingeRest`] (0 for cloth, the input mesh's angle for
//! shells). We keep the sine difference of BMF03 for every θ0 rather than switching to `θ − θ0` for large
//! rest angles: the restoring stiffness at rest is `ψ''(θ0) = cos(θ0/2)`, which is ≥ 0.7 for |θ0| ≤ π/2
//! and only degrades for hinges folded past a right angle at rest; `bending = "baraff-witkin"` is the
//! `wrap(θ − θ0)` alternative for such meshes. θ (atan2, in (−π, π]) jumps by 2π when a hinge folds flat
//! onto itself: there the force changes sign (sin(±π/2) = ±1), as for every hinge-angle energy; the
//! collision stage keeps a cloth from getting there.
//!
//! # Jacobian (derived from eq. 4.7)
//!
//! ```text
//! ∂F_i/∂x_j = −k_b w (ψ''(θ) ∂θ/∂x_i ∂θ/∂x_jᵀ + ψ'(θ) ∂²θ/∂x_i∂x_j)
//! ```
//!
//! The first term is negative semidefinite (ψ'' = cos(θ/2) ≥ 0); the second is indefinite, like the
//! Hessian of θ itself. [`JacobianMode::Exact`] returns both; [`JacobianMode::Definite`] (what filtered
//! PCG needs) keeps the **Gauss–Newton term** only. We choose it over projecting the 12x12 block onto
//! its negative-semidefinite cone for the reasons given for the Baraff–Witkin bend condition: the dropped
//! term is proportional to `sin(θ/2) − sin(θ0/2)`, so it vanishes at rest and is small for moderate bends;
//! bending is soft next to stretch; and an eigendecomposition per hinge per substep would cost more than
//! the rest of the kernel. `tests::definite_jacobian_is_nsd` checks the sign.
//!
//! # Damping (`docs/methods/dihedral-bending.md` (4.8))
//!
//! The damping force acts in the bending mode, `F_i = −c θ̇ ∂θ/∂x_i` with `θ̇ = Σ_j ∂θ/∂x_j · v_j`, and
//! its velocity Jacobian `−c ∂θ/∂x_i ∂θ/∂x_jᵀ` is symmetric NSD of rank 1 (eq. 4.8, §4.7). **Weight
//! (departure, stated):** the notes weight the coefficient with `|e|`; we use `c = τ k_b w`, with τ the
//! damping time constant (s, the scene's `bend_damping`), the same weight as the elastic term.
//! Reason: the power a hinge dissipates is `c θ̇²`; refining a mesh by a factor r multiplies the number of
//! hinges by r² and divides each θ̇ by r, so the total dissipation is resolution independent only if `c`
//! is — `w` is (it is a ratio of lengths²/area), `|e|` shrinks with the mesh. With `c ∝ k_b w` the damping
//! is stiffness-proportional (Rayleigh): a bending mode of angular frequency ω near rest gets the damping
//! ratio ω τ / 2, the same knob as every other condition of [`super::baraff_witkin`]; and the damping
//! equals the Baraff–Witkin bend damping (`tests::damping_matches_the_baraff_witkin_bend_damping`). The
//! position derivative of the damping force is omitted, as in eq. 2.12's treatment (`docs/methods/baraff-witkin.md` §2.5).
//!
//! A degenerate hinge ([`dihedral::hinge_is_degenerate`]) exerts no force.
#![deny(unsafe_code)]

use glam::{DMat3, DVec3};

use super::baraff_witkin::{BendParams, ElementOutput, HingeRest, JacobianMode};
use super::dihedral::{self, dihedral_angle_and_gradient, dihedral_angle_hessian};

/// The bending potential ψ(θ) of the module doc and its first two derivatives:
/// `ψ = 4 (cos(θ0/2) − cos(θ/2)) − 2 sin(θ0/2) (θ − θ0)`, `ψ' = 2 (sin(θ/2) − sin(θ0/2))`,
/// `ψ'' = cos(θ/2)`. BMF03 / `docs/methods/dihedral-bending.md` (4.7) integrated along θ with `k_e = 4 k_b`.
///
/// `theta`, `theta0` in radians, in (−π, π]. ψ ≈ (θ − θ0)²/2 near θ0 when θ0 = 0.
#[must_use]
pub fn shell_potential(theta: f64, theta0: f64) -> [f64; 3] {
    let (s, c) = (0.5 * theta).sin_cos();
    let (s0, c0) = (0.5 * theta0).sin_cos();
    [
        4.0 * (c0 - c) - 2.0 * s0 * (theta - theta0),
        2.0 * (s - s0),
        c,
    ]
}

/// Discrete-shell bending of one hinge (BMF03 force, `docs/methods/dihedral-bending.md` (4.7), rest angles §4.6) with
/// bending damping (eq. 4.8): energy `k_b w ψ(θ)`, forces, and Jacobian blocks (module doc).
///
/// `x`, `v`: `[x1, x2, x3, x4]` (wings, then the shared edge) positions (m) and velocities (m/s);
/// `rest.weight` is `w = |e|²/(A1 + A2)` and `rest.rest_angle` θ0, both from the rest geometry;
/// `p.stiffness` is `k_b` (N·m, `k_e = 4 k_b`) and `p.damping` the time constant τ (s, `c = τ k_b w`).
/// `dfdx` is the exact Jacobian of the elastic force in [`JacobianMode::Exact`] and its Gauss–Newton
/// part `−k_b w cos(θ/2) ∇θ∇θᵀ` in [`JacobianMode::Definite`]; `dfdv = −c ∇θ∇θᵀ`; the damping's
/// position derivative is omitted. A degenerate hinge contributes nothing.
#[must_use]
pub fn shell_element(
    x: &[DVec3; 4],
    v: &[DVec3; 4],
    rest: &HingeRest,
    p: &BendParams,
    mode: JacobianMode,
) -> ElementOutput<4> {
    let Some((theta, grad)) = dihedral_angle_and_gradient(x) else {
        return ElementOutput::ZERO;
    };
    let k = p.stiffness * rest.weight;
    let c = p.damping * k;
    let [psi, dpsi, ddpsi] = shell_potential(theta, rest.rest_angle);
    let theta_dot: f64 = grad.iter().zip(v).map(|(g, vi)| g.dot(*vi)).sum();
    let scale = k * dpsi + c * theta_dot;
    let mut out = ElementOutput::ZERO;
    out.energy = k * psi;
    for (f, g) in out.force.iter_mut().zip(&grad) {
        *f = -scale * *g;
    }
    for i in 0..4 {
        for j in 0..4 {
            let gg = dihedral::outer(grad[i], grad[j]);
            out.dfdx[i][j] = gg * (-k * ddpsi);
            out.dfdv[i][j] = gg * -c;
        }
    }
    if mode == JacobianMode::Exact {
        let hess = dihedral_angle_hessian(x);
        for (row, hrow) in out.dfdx.iter_mut().zip(&hess) {
            for (b, hb) in row.iter_mut().zip(hrow) {
                *b -= *hb * (k * dpsi);
            }
        }
    }
    out
}

/// The elastic stiffness of one hinge along its bending mode, `s` (N·m) in the Gauss–Newton Jacobian
/// `−s ∇θ∇θᵀ`, and the gradient ∇θ (1/m): `s = k_b w cos(θ/2)` for the discrete shell (module doc),
/// `s = k_b w` for the Baraff–Witkin bend condition (`shell = false`). `None` for a degenerate hinge.
///
/// This is what the explicit-bending step limit of the IMEX split is computed from (`docs/methods/baraff-witkin.md`
/// §4.8–4.9; [`crate::integrate::implicit_euler::ImplicitEuler::explicit_bending_step_limit`]).
#[must_use]
pub fn bending_mode_stiffness(
    x: &[DVec3; 4],
    rest: &HingeRest,
    p: &BendParams,
    shell: bool,
) -> Option<(f64, [DVec3; 4])> {
    let (theta, grad) = dihedral_angle_and_gradient(x)?;
    let k = p.stiffness * rest.weight;
    let s = if shell { k * (0.5 * theta).cos() } else { k };
    Some((s, grad))
}

/// Zero blocks, for callers that drop the elastic Jacobian (the IMEX split).
pub const ZERO_BLOCKS: [[DMat3; 4]; 4] = [[DMat3::ZERO; 4]; 4];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::baraff_witkin::bend_element;
    use crate::model::dihedral::dihedral_angle;
    use crate::model::test_support::{
        SplitMix64, assert_mat_close, assert_vec_close, fd_gradient, fd_jacobian,
        symmetric_eigenvalues,
    };
    use std::f64::consts::PI;

    const FD_STEP: f64 = 1e-6;
    const FD_TOL: f64 = 1e-6;

    struct Sample {
        rest: HingeRest,
        x: [DVec3; 4],
        v: [DVec3; 4],
        p: BendParams,
        size: f64,
    }

    fn hinge_positions(rng: &mut SplitMix64, len: f64, max_fold: f64) -> [DVec3; 4] {
        let wing = |rng: &mut SplitMix64, phi: f64| {
            DVec3::X * rng.uniform(-0.3, 1.3) * len
                + DVec3::new(0.0, phi.cos(), phi.sin()) * rng.uniform(0.3, 1.5) * len
        };
        // Wing 1 near +y, wing 2 near −y: the hinge angle is about the difference of the two folds.
        let a = rng.uniform(-max_fold, max_fold) * 0.5;
        let b = rng.uniform(-max_fold, max_fold) * 0.5;
        let local = [
            wing(rng, 0.5 * PI + a),
            wing(rng, -0.5 * PI + b),
            DVec3::ZERO,
            DVec3::X * len,
        ];
        let rot = rng.rotation();
        let shift = rng.vec3(3.0);
        local.map(|p| rot * p + shift)
    }

    /// Random hinges: rest angle from a random rest pose for half of them, flat for the others; current
    /// angle at least `margin` from the ±π jump.
    fn samples(seed: u64, count: usize, margin: f64) -> Vec<Sample> {
        let mut rng = SplitMix64::new(seed);
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let size = rng.uniform(0.05, 1.0);
            let rest_x = hinge_positions(&mut rng, size, 2.0);
            let rest = if out.len() % 2 == 0 {
                HingeRest::from_rest_positions(&rest_x)
            } else {
                HingeRest::flat(&rest_x)
            };
            let Some(rest) = rest else { continue };
            let x = hinge_positions(&mut rng, size, 4.0);
            if dihedral_angle(&x).abs() > PI - margin {
                continue;
            }
            let v = [0; 4].map(|_| rng.vec3(1.0));
            let p = BendParams {
                stiffness: rng.uniform(1e-4, 1e-1),
                damping: rng.uniform(0.0, 0.1),
            };
            out.push(Sample {
                rest,
                x,
                v,
                p,
                size,
            });
        }
        out
    }

    fn energy(s: &Sample, x: &[DVec3; 4]) -> f64 {
        shell_element(x, &[DVec3::ZERO; 4], &s.rest, &s.p, JacobianMode::Exact).energy
    }

    #[test]
    fn potential_derivatives_match_finite_differences() {
        let mut rng = SplitMix64::new(1);
        for _ in 0..200 {
            let (t, t0) = (rng.uniform(-3.0, 3.0), rng.uniform(-3.0, 3.0));
            let [psi, d1, d2] = shell_potential(t, t0);
            let e = 1e-6;
            let fd1 = (shell_potential(t + e, t0)[0] - shell_potential(t - e, t0)[0]) / (2.0 * e);
            let fd2 = (shell_potential(t + e, t0)[1] - shell_potential(t - e, t0)[1]) / (2.0 * e);
            assert!((d1 - fd1).abs() < 1e-8, "ψ' {d1} vs {fd1}");
            assert!((d2 - fd2).abs() < 1e-8, "ψ'' {d2} vs {fd2}");
            assert!(
                psi >= -1e-15,
                "ψ must be non-negative: {psi} at θ={t}, θ0={t0}"
            );
        }
        assert_eq!(shell_potential(0.7, 0.7), [0.0, 0.0, (0.35f64).cos()]);
    }

    #[test]
    fn force_is_minus_energy_gradient() {
        for (n, s) in samples(2, 300, 0.05).iter().enumerate() {
            let out = shell_element(&s.x, &[DVec3::ZERO; 4], &s.rest, &s.p, JacobianMode::Exact);
            let fd = fd_gradient(|y| energy(s, y), &s.x, FD_STEP * s.size).map(|g| -g);
            assert_vec_close(&out.force, &fd, FD_TOL, &format!("hinge {n} force"));
        }
    }

    #[test]
    fn exact_jacobians_match_finite_differences() {
        for (n, s) in samples(3, 300, 0.05).iter().enumerate() {
            let zero = [DVec3::ZERO; 4];
            let out0 = shell_element(&s.x, &zero, &s.rest, &s.p, JacobianMode::Exact);
            let force_at =
                |y: &[DVec3; 4]| shell_element(y, &zero, &s.rest, &s.p, JacobianMode::Exact).force;
            let fd_k = fd_jacobian(force_at, &s.x, FD_STEP * s.size);
            assert_mat_close(&out0.dfdx, &fd_k, FD_TOL, &format!("hinge {n} dfdx"));
            let out = shell_element(&s.x, &s.v, &s.rest, &s.p, JacobianMode::Exact);
            let force_v =
                |w: &[DVec3; 4]| shell_element(&s.x, w, &s.rest, &s.p, JacobianMode::Exact).force;
            let fd_d = fd_jacobian(force_v, &s.v, 1e-3);
            assert_mat_close(&out.dfdv, &fd_d, FD_TOL, &format!("hinge {n} dfdv"));
            // The damping force is linear in v: d = D v exactly.
            let d: [DVec3; 4] = std::array::from_fn(|i| out.force[i] - out0.force[i]);
            let dv: [DVec3; 4] =
                std::array::from_fn(|i| (0..4).map(|j| out.dfdv[i][j] * s.v[j]).sum());
            assert_vec_close(&d, &dv, 1e-9, &format!("hinge {n} damping"));
        }
    }

    #[test]
    fn definite_jacobian_is_nsd_and_is_the_gauss_newton_part() {
        for (n, s) in samples(4, 200, 0.0).iter().enumerate() {
            let def = shell_element(&s.x, &s.v, &s.rest, &s.p, JacobianMode::Definite);
            let exact = shell_element(&s.x, &s.v, &s.rest, &s.p, JacobianMode::Exact);
            assert_eq!(def.force, exact.force);
            assert_eq!(def.energy, exact.energy);
            assert_eq!(def.dfdv, exact.dfdv);
            let (theta, g) = dihedral_angle_and_gradient(&s.x).expect("well-shaped");
            let k = s.p.stiffness * s.rest.weight * (0.5 * theta).cos();
            let gn: [[DMat3; 4]; 4] =
                std::array::from_fn(|i| std::array::from_fn(|j| dihedral::outer(g[i], g[j]) * -k));
            assert_mat_close(&def.dfdx, &gn, 1e-12, &format!("hinge {n} GN"));
            for m in [def.dfdx, def.dfdv] {
                let eig = symmetric_eigenvalues(&m);
                let scale = eig.iter().map(|e| e.abs()).fold(0.0, f64::max);
                assert!(
                    eig.iter().all(|&e| e <= 1e-12 * scale),
                    "hinge {n}: eigenvalue {:?}",
                    eig.last()
                );
            }
        }
    }

    #[test]
    fn force_reduces_the_angle_error() {
        // `docs/methods/dihedral-bending.md` §4.3 required test 2: a small step along the force moves θ towards θ0
        // and lowers the energy.
        for (n, s) in samples(5, 300, 0.1).iter().enumerate() {
            let out = shell_element(&s.x, &[DVec3::ZERO; 4], &s.rest, &s.p, JacobianMode::Exact);
            let fmax = out.force.iter().map(|f| f.length()).fold(0.0, f64::max);
            if fmax == 0.0 {
                continue;
            }
            let step = 1e-4 * s.size / fmax;
            let y: [DVec3; 4] = std::array::from_fn(|i| s.x[i] + out.force[i] * step);
            // Unwrapped: the sine form turns the hinge back through the unfolded range, never across
            // the fold-through at ±π (module doc), even when the wrapped way round is shorter.
            let before = (dihedral_angle(&s.x) - s.rest.rest_angle).abs();
            let after = (dihedral_angle(&y) - s.rest.rest_angle).abs();
            assert!(
                after < before,
                "hinge {n}: |θ−θ0| {before} -> {after}; θ {} θ0 {} θ' {}",
                dihedral_angle(&s.x),
                s.rest.rest_angle,
                dihedral_angle(&y)
            );
            assert!(energy(s, &y) < energy(s, &s.x), "hinge {n}: energy rose");
        }
    }

    #[test]
    fn rest_pose_exerts_no_force() {
        let mut rng = SplitMix64::new(6);
        for _ in 0..200 {
            let size = rng.uniform(0.05, 1.0);
            let x = hinge_positions(&mut rng, size, 4.0);
            let Some(rest) = HingeRest::from_rest_positions(&x) else {
                continue;
            };
            let p = BendParams {
                stiffness: 0.1,
                damping: 0.1,
            };
            let out = shell_element(&x, &[DVec3::ZERO; 4], &rest, &p, JacobianMode::Exact);
            assert_eq!(out.energy, 0.0);
            // The kernel evaluates θ at x again: the same arithmetic, so exactly θ0.
            assert!(
                out.force.iter().all(|f| *f == DVec3::ZERO),
                "{:?}",
                out.force
            );
        }
    }

    #[test]
    fn rigid_motion_invariance() {
        let mut rng = SplitMix64::new(7);
        for s in samples(7, 200, 0.05) {
            let rot = rng.rotation();
            let shift = rng.vec3(10.0);
            let y = s.x.map(|p| rot * p + shift);
            let w = s.v.map(|v| rot * v);
            let a = shell_element(&s.x, &s.v, &s.rest, &s.p, JacobianMode::Exact);
            let b = shell_element(&y, &w, &s.rest, &s.p, JacobianMode::Exact);
            let scale = a.energy.abs().max(1e-30);
            assert!((a.energy - b.energy).abs() <= 1e-9 * scale);
            let rotated = a.force.map(|f| rot * f);
            assert_vec_close(&rotated, &b.force, 1e-8, "rotated force");
            // No net force or torque (eq. 4.5).
            let fscale = a.force.iter().map(|f| f.length()).fold(0.0, f64::max);
            let net: DVec3 = a.force.iter().copied().sum();
            let torque: DVec3 = s.x.iter().zip(&a.force).map(|(p, f)| p.cross(*f)).sum();
            let lever = s.x.iter().map(|p| p.length()).fold(0.0, f64::max);
            assert!(net.length() <= 1e-11 * fscale, "net force {net}");
            assert!(torque.length() <= 1e-11 * fscale * lever, "torque {torque}");
        }
    }

    #[test]
    fn small_angles_match_the_baraff_witkin_bend() {
        // k_e = 4 k_b: the energies agree to O(θ²) relative for a flat rest state.
        let mut rng = SplitMix64::new(8);
        for fold in [1e-3f64, 1e-2, 1e-1] {
            let x = [
                DVec3::new(0.3, 1.0, 0.0),
                DVec3::new(0.6, -fold.cos(), fold.sin()),
                DVec3::ZERO,
                DVec3::X,
            ];
            let rot = rng.rotation();
            let x = x.map(|p| rot * p);
            let rest = HingeRest::flat(&x).expect("well-shaped");
            let p = BendParams {
                stiffness: 0.02,
                damping: 0.0,
            };
            let zero = [DVec3::ZERO; 4];
            let shell = shell_element(&x, &zero, &rest, &p, JacobianMode::Exact);
            let bw = bend_element(&x, &zero, &rest, &p, JacobianMode::Exact);
            let rel = (shell.energy / bw.energy - 1.0).abs();
            // ψ/(θ²/2) = 1 − θ²/48 + …
            assert!(rel <= 0.03 * fold * fold, "fold {fold}: relative {rel}");
            for (a, b) in shell.force.iter().zip(&bw.force) {
                assert!((*a - *b).length() <= 0.2 * fold * fold * b.length().max(1e-30));
            }
        }
    }

    #[test]
    fn damping_matches_the_baraff_witkin_bend_damping() {
        for s in samples(9, 100, 0.05) {
            let zero = [DVec3::ZERO; 4];
            let shell = shell_element(&s.x, &s.v, &s.rest, &s.p, JacobianMode::Definite);
            let shell0 = shell_element(&s.x, &zero, &s.rest, &s.p, JacobianMode::Definite);
            let bw = bend_element(&s.x, &s.v, &s.rest, &s.p, JacobianMode::Definite);
            let bw0 = bend_element(&s.x, &zero, &s.rest, &s.p, JacobianMode::Definite);
            let ds: [DVec3; 4] = std::array::from_fn(|i| shell.force[i] - shell0.force[i]);
            let db: [DVec3; 4] = std::array::from_fn(|i| bw.force[i] - bw0.force[i]);
            assert_vec_close(&ds, &db, 1e-9, "damping force");
            assert_mat_close(&shell.dfdv, &bw.dfdv, 1e-12, "dfdv");
            // Damping only dissipates.
            let power: f64 = ds.iter().zip(&s.v).map(|(f, v)| f.dot(*v)).sum();
            assert!(power <= 0.0);
        }
    }

    #[test]
    fn mode_stiffness_is_the_gauss_newton_coefficient() {
        for s in samples(10, 50, 0.05) {
            let (k, g) = bending_mode_stiffness(&s.x, &s.rest, &s.p, true).expect("well-shaped");
            let def = shell_element(
                &s.x,
                &[DVec3::ZERO; 4],
                &s.rest,
                &s.p,
                JacobianMode::Definite,
            );
            let gn: [[DMat3; 4]; 4] =
                std::array::from_fn(|i| std::array::from_fn(|j| dihedral::outer(g[i], g[j]) * -k));
            assert_mat_close(&def.dfdx, &gn, 1e-12, "shell mode stiffness");
            let (kb, _) = bending_mode_stiffness(&s.x, &s.rest, &s.p, false).expect("well-shaped");
            assert_eq!(kb, s.p.stiffness * s.rest.weight);
        }
    }

    #[test]
    fn degenerate_hinge_gives_nothing() {
        let collapsed = [
            DVec3::new(0.5, 0.0, 0.0),
            DVec3::new(0.5, -1.0, 0.0),
            DVec3::ZERO,
            DVec3::X,
        ];
        let rest = HingeRest {
            weight: 1.0,
            rest_angle: 0.3,
        };
        let p = BendParams {
            stiffness: 1.0,
            damping: 1.0,
        };
        let out = shell_element(&collapsed, &[DVec3::ONE; 4], &rest, &p, JacobianMode::Exact);
        assert_eq!(out.energy, 0.0);
        assert_eq!(out.force, [DVec3::ZERO; 4]);
        assert_eq!(out.dfdx, ZERO_BLOCKS);
        assert!(bending_mode_stiffness(&collapsed, &rest, &p, true).is_none());
    }
}

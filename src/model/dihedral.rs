//! The hinge (dihedral) angle θ of two triangles sharing an edge: value, gradient and exact Hessian.
//!
//! Equation labels `eq. 2.n` are those of `docs/methods/baraff-witkin.md`, `eq. 4.n` those of
//! `docs/methods/dihedral-bending.md` (weft's own statements of the model, with the papers they follow).
//!
//! Shared by the Baraff–Witkin bend condition ([`super::baraff_witkin::bend_condition`]) and, later,
//! discrete-shell bending.
//!
//! # Conventions (`docs/methods/dihedral-bending.md` §4.3)
//!
//! A hinge is `x = [x1, x2, x3, x4]`: the wing vertex `x1` of triangle 1, the wing vertex `x2` of
//! triangle 2, then the shared edge from `x3` to `x4`, `e = x4 - x3`. The unnormalised normals are
//!
//! ```text
//! N1 = (x1 - x3) x (x1 - x4)        normal of triangle (x1, x3, x4)
//! N2 = (x2 - x4) x (x2 - x3)        normal of triangle (x2, x4, x3)
//! ```
//!
//! The two triangles run along the shared edge in opposite directions, so on a flat hinge `N1` and `N2`
//! point the same way and θ = 0. The angle is
//!
//! ```text
//! θ = atan2((n1 x n2)·ê, n1·n2)   in (-π, π]
//! ```
//!
//! evaluated without normalising: `atan2((N1 x N2)·e, |e| N1·N2)`, since both arguments of the
//! unnormalised form carry the same positive factor `|N1||N2||e|`. θ > 0 for a *convex* hinge (the wings
//! bent away from the side the normals point to), θ < 0 for a concave one; `tests::sign_of_angle` pins
//! this. θ jumps by 2π at ±π, when the hinge is folded flat onto itself; callers that need a
//! difference θ − θ0 wrap it with [`wrap_angle`].
//!
//! # Gradient (`docs/methods/dihedral-bending.md` (4.4–4.6))
//!
//! With `q_k = N_k / |N_k|²` and `ê = e/|e|`:
//!
//! ```text
//! u1 = |e| q1,  u2 = |e| q2,
//! u3 = ((x1-x4)·ê) q1 + ((x2-x4)·ê) q2,
//! u4 = -((x1-x3)·ê) q1 - ((x2-x3)·ê) q2,          ∂θ/∂x_i = -u_i   (eq. 4.6)
//! ```
//!
//! Bridson's course notes label `u_i = +∂θ/∂x_i`; under the conventions above the sign is negative
//! (`docs/methods/dihedral-bending.md` §4.3). Σ u_i = 0 and Σ x_i × u_i = 0 (eq. 4.5): θ is invariant under
//! rigid motions.
//!
//! # Hessian (derived)
//!
//! Write `u_i = Σ_k c_ik q_k` with the scalar coefficients `c_ik` above (`|e|`, `(x1-x4)·ê`, …). Then
//!
//! ```text
//! ∂u_i/∂x_j = Σ_k  q_k (∂c_ik/∂x_j)ᵀ  +  c_ik (∂q_k/∂N_k)(∂N_k/∂x_j),
//! ∂q/∂N = (I - 2 n̂ n̂ᵀ) / |N|²,
//! ∂N1/∂x = ([e]x, 0, [x1-x4]x, -[x1-x3]x),   ∂N2/∂x = (0, -[e]x, -[x2-x4]x, [x2-x3]x),
//! ∂(w·ê)/∂w = ê,  ∂(w·ê)/∂e = (w - (w·ê) ê)/|e|,   ∂|e|/∂e = ê,
//! ```
//!
//! where `[a]x` is the cross-product matrix (`[a]x b = a × b`), and `∂²θ/∂x_i∂x_j = -∂u_i/∂x_j`. The
//! result is symmetric in exact arithmetic; the code returns the symmetric part `(H_ij + H_jiᵀ)/2` so
//! round-off cannot make the assembled Jacobian asymmetric. Finite differences check it
//! (`tests::hessian_matches_finite_differences`).
//!
//! # Degenerate hinges
//!
//! θ is undefined when the shared edge has zero length or a wing triangle has (relative to its size)
//! zero area. Then [`dihedral_angle`] returns 0 and the gradient and Hessian are zero: a degenerate hinge
//! exerts no bending force until the membrane forces restore its triangles. See
//! [`hinge_is_degenerate`] for the tolerance.
#![deny(unsafe_code)]

use glam::{DMat3, DVec3};
use std::f64::consts::{PI, TAU};

/// Relative tolerance for degenerate hinges: a wing whose area is below `DEGENERACY_TOLERANCE · L²`
/// (L the longest hinge edge), or an edge shorter than `DEGENERACY_TOLERANCE · L`, is degenerate.
pub const DEGENERACY_TOLERANCE: f64 = 1e-10;

/// Quantities shared by the angle, gradient and Hessian of one non-degenerate hinge.
struct HingeFrame {
    /// Shared edge `x4 - x3`.
    e: DVec3,
    /// `|e|`.
    len_e: f64,
    /// Unnormalised normals N1, N2 (`docs/methods/dihedral-bending.md` (4.3)).
    normals: [DVec3; 2],
    /// `N_k / |N_k|²`.
    q: [DVec3; 2],
}

impl HingeFrame {
    #[inline]
    fn new(x: &[DVec3; 4]) -> Option<Self> {
        if !x.iter().all(|p| p.is_finite()) {
            return None;
        }
        let [x1, x2, x3, x4] = *x;
        let e = x4 - x3;
        let n1 = (x1 - x3).cross(x1 - x4);
        let n2 = (x2 - x4).cross(x2 - x3);
        let len2 = [e, x1 - x3, x1 - x4, x2 - x3, x2 - x4].map(DVec3::length_squared);
        let scale2 = len2.into_iter().fold(0.0, f64::max);
        let len_e = len2[0].sqrt();
        let tol = DEGENERACY_TOLERANCE * scale2;
        // Finite input can still overflow; non-finite intermediates count as degenerate.
        if !scale2.is_finite()
            || !n1.is_finite()
            || !n2.is_finite()
            || len2[0] <= DEGENERACY_TOLERANCE * tol
            || n1.length() <= tol
            || n2.length() <= tol
        {
            return None;
        }
        Some(Self {
            e,
            len_e,
            normals: [n1, n2],
            q: [n1 / n1.length_squared(), n2 / n2.length_squared()],
        })
    }

    #[inline]
    fn angle(&self) -> f64 {
        let [n1, n2] = self.normals;
        n1.cross(n2).dot(self.e).atan2(self.len_e * n1.dot(n2))
    }

    /// `u_i = -∂θ/∂x_i`, Bridson–Marino–Fedkiw 2003, `docs/methods/dihedral-bending.md` (4.4).
    #[inline]
    fn bending_modes(&self, x: &[DVec3; 4]) -> [DVec3; 4] {
        let [x1, x2, x3, x4] = *x;
        let e_hat = self.e / self.len_e;
        let [q1, q2] = self.q;
        [
            self.len_e * q1,
            self.len_e * q2,
            (x1 - x4).dot(e_hat) * q1 + (x2 - x4).dot(e_hat) * q2,
            -(x1 - x3).dot(e_hat) * q1 - (x2 - x3).dot(e_hat) * q2,
        ]
    }
}

/// True if θ is undefined at `x` (zero-length shared edge or zero-area wing, relative to
/// [`DEGENERACY_TOLERANCE`]); the functions of this module then return zeros.
#[must_use]
pub fn hinge_is_degenerate(x: &[DVec3; 4]) -> bool {
    HingeFrame::new(x).is_none()
}

/// Hinge angle θ = atan2((n1 × n2)·ê, n1·n2) in (-π, π], Baraff & Witkin 1998; `docs/methods/baraff-witkin.md` (2.7),
/// with the normals and edge of `docs/methods/dihedral-bending.md` (4.3).
///
/// `x = [x1, x2, x3, x4]`: wings first, then the shared edge `x3 -> x4` (positions in metres). N1 =
/// (x1−x3)×(x1−x4), N2 = (x2−x4)×(x2−x3), ê = (x4−x3)/|x4−x3|. θ > 0 when the hinge is convex (wings bent
/// away from the normals' side). Returns 0 for a degenerate hinge ([`hinge_is_degenerate`]).
#[must_use]
pub fn dihedral_angle(x: &[DVec3; 4]) -> f64 {
    checked_dihedral_angle(x).unwrap_or(0.0)
}

/// [`dihedral_angle`], `None` for a degenerate hinge ([`hinge_is_degenerate`]).
#[must_use]
pub fn checked_dihedral_angle(x: &[DVec3; 4]) -> Option<f64> {
    HingeFrame::new(x).map(|f| f.angle())
}

/// ∂θ/∂x_i = −u_i, Bridson–Marino–Fedkiw 2003, `docs/methods/dihedral-bending.md` (4.4–4.6).
///
/// Same vertex order as [`dihedral_angle`]; the result is in 1/m. The sign is the one `docs/methods/dihedral-bending.md` (4.6)
/// fixes by finite differences (the course notes label `u_i` as `+∂θ/∂x_i`, which is wrong for this
/// convention). Zero for a degenerate hinge.
#[must_use]
pub fn dihedral_angle_gradient(x: &[DVec3; 4]) -> [DVec3; 4] {
    HingeFrame::new(x).map_or([DVec3::ZERO; 4], |f| f.bending_modes(x).map(|u| -u))
}

/// θ and ∂θ/∂x together (one frame computation), `docs/methods/baraff-witkin.md` (2.7) and eq. 4.4–4.6; `None` for a
/// degenerate hinge.
#[must_use]
#[inline]
pub fn dihedral_angle_and_gradient(x: &[DVec3; 4]) -> Option<(f64, [DVec3; 4])> {
    HingeFrame::new(x).map(|f| (f.angle(), f.bending_modes(x).map(|u| -u)))
}

/// The exact Hessian ∂²θ/∂x_i∂x_j as 4x4 blocks of 3x3 (block `[i][j]`, entry `(r, c)` is
/// ∂²θ/∂x_{i,r}∂x_{j,c}), in 1/m². Derived by differentiating `docs/methods/dihedral-bending.md` (4.4) (see the
/// module doc); symmetrised against round-off. Zero for a degenerate hinge.
#[must_use]
pub fn dihedral_angle_hessian(x: &[DVec3; 4]) -> [[DMat3; 4]; 4] {
    let Some(frame) = HingeFrame::new(x) else {
        return [[DMat3::ZERO; 4]; 4];
    };
    let mut h = raw_hessian(&frame, x);
    symmetrize(&mut h);
    h
}

/// The blocks `-∂u_i/∂x_j` exactly as the module doc derives them, before symmetrisation.
fn raw_hessian(frame: &HingeFrame, x: &[DVec3; 4]) -> [[DMat3; 4]; 4] {
    let [x1, x2, x3, x4] = *x;
    let e_hat = frame.e / frame.len_e;
    let len_e = frame.len_e;
    // Gradient of (w·ê) with respect to e, for w one of the wing-to-edge-end vectors.
    let d_proj_d_e = |w: DVec3| (w - w.dot(e_hat) * e_hat) / len_e;
    let (w14, w24, w13, w23) = (x1 - x4, x2 - x4, x1 - x3, x2 - x3);
    let zero = DVec3::ZERO;

    // Scalar coefficient gradients ∂c/∂x_j, j = 1..4. e = x4 - x3, so ∂/∂x4 = +∂/∂e and ∂/∂x3 = -∂/∂e.
    let d_len_e = [zero, zero, -e_hat, e_hat];
    let d_s1 = [e_hat, zero, -d_proj_d_e(w14), -e_hat + d_proj_d_e(w14)];
    let d_s2 = [zero, e_hat, -d_proj_d_e(w24), -e_hat + d_proj_d_e(w24)];
    let d_t1 = [e_hat, zero, -e_hat - d_proj_d_e(w13), d_proj_d_e(w13)];
    let d_t2 = [zero, e_hat, -e_hat - d_proj_d_e(w23), d_proj_d_e(w23)];
    let neg = |g: [DVec3; 4]| g.map(|v| -v);

    // u_i = Σ_k c[i][k] q_k: coefficient values and gradients.
    let c = [
        [len_e, 0.0],
        [0.0, len_e],
        [w14.dot(e_hat), w24.dot(e_hat)],
        [-w13.dot(e_hat), -w23.dot(e_hat)],
    ];
    let dc = [
        [d_len_e, [zero; 4]],
        [[zero; 4], d_len_e],
        [d_s1, d_s2],
        [neg(d_t1), neg(d_t2)],
    ];

    // ∂q_k/∂x_j = (I - 2 n̂n̂ᵀ)/|N|² · ∂N_k/∂x_j.
    let dn = [
        [skew(frame.e), DMat3::ZERO, skew(w14), -skew(w13)],
        [DMat3::ZERO, -skew(frame.e), -skew(w24), skew(w23)],
    ];
    let dq: [[DMat3; 4]; 2] = std::array::from_fn(|k| {
        let n = frame.normals[k];
        let n2 = n.length_squared();
        let dq_dn = (DMat3::IDENTITY - outer(n, n) * (2.0 / n2)) * (1.0 / n2);
        dn[k].map(|m| dq_dn * m)
    });

    let mut h = [[DMat3::ZERO; 4]; 4];
    for (i, row) in h.iter_mut().enumerate() {
        for (j, block) in row.iter_mut().enumerate() {
            let mut du = DMat3::ZERO;
            for k in 0..2 {
                du += outer(frame.q[k], dc[i][k][j]) + dq[k][j] * c[i][k];
            }
            *block = -du;
        }
    }
    h
}

/// Wraps an angle difference into (−π, π], the representative `docs/methods/dihedral-bending.md` §4.6 prescribes for
/// θ − θ0. Non-finite input is returned unchanged (NaN stays NaN).
#[must_use]
#[inline]
pub fn wrap_angle(angle: f64) -> f64 {
    if !angle.is_finite() {
        return angle;
    }
    let a = angle.rem_euclid(TAU);
    if a > PI { a - TAU } else { a }
}

/// Cross-product matrix: `skew(a) * b == a.cross(b)`.
fn skew(a: DVec3) -> DMat3 {
    DMat3::from_cols(
        DVec3::new(0.0, a.z, -a.y),
        DVec3::new(-a.z, 0.0, a.x),
        DVec3::new(a.y, -a.x, 0.0),
    )
}

/// Outer product `a bᵀ`.
pub(crate) fn outer(a: DVec3, b: DVec3) -> DMat3 {
    DMat3::from_cols(a * b.x, a * b.y, a * b.z)
}

/// Replaces a block matrix by its symmetric part, `(H_ij + H_jiᵀ)/2`.
#[allow(
    clippy::needless_range_loop,
    reason = "the triangular loop writes both h[i][j] and h[j][i]"
)]
fn symmetrize<const N: usize>(h: &mut [[DMat3; N]; N]) {
    for i in 0..N {
        for j in i..N {
            let s = (h[i][j] + h[j][i].transpose()) * 0.5;
            h[i][j] = s;
            h[j][i] = s.transpose();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_support::{
        SplitMix64, assert_mat_close, assert_vec_close, fd_gradient, fd_jacobian,
    };

    /// Finite-difference step (m) for hinges of size ~1 m.
    const FD_STEP: f64 = 1e-6;
    /// Relative tolerance of the finite-difference checks.
    const FD_TOL: f64 = 1e-6;

    /// A random, well-shaped hinge in a random pose: edge length in [0.5, 2], wing heights in
    /// [0.3, 1.5] and wing feet anywhere along (and beyond) the edge, at arbitrary dihedral angles.
    fn random_hinge(rng: &mut SplitMix64) -> [DVec3; 4] {
        let len = rng.uniform(0.5, 2.0);
        let e = DVec3::X * len;
        let wing = |rng: &mut SplitMix64| {
            let phi = rng.uniform(-PI, PI);
            let dir = DVec3::new(0.0, phi.cos(), phi.sin());
            DVec3::X * rng.uniform(-0.5, 1.5) * len + dir * rng.uniform(0.3, 1.5)
        };
        let local = [wing(rng), wing(rng), DVec3::ZERO, e];
        let rot = rng.rotation();
        let shift = rng.vec3(5.0);
        local.map(|p| rot * p + shift)
    }

    /// Random hinges whose angle is at least `margin` away from the ±π jump.
    fn random_hinges(seed: u64, count: usize, margin: f64) -> Vec<[DVec3; 4]> {
        let mut rng = SplitMix64::new(seed);
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let x = random_hinge(&mut rng);
            if dihedral_angle(&x).abs() < PI - margin {
                out.push(x);
            }
        }
        out
    }

    /// A hinge over the edge (0,0,0) -> (1,0,0) with wing 1 in the +y half of the xy plane and wing 2
    /// rotated by `fold` about the edge out of the -y direction (towards +z for fold > 0).
    fn folded_hinge(fold: f64) -> [DVec3; 4] {
        [
            DVec3::new(0.3, 1.0, 0.0),
            DVec3::new(0.6, -fold.cos(), fold.sin()),
            DVec3::ZERO,
            DVec3::X,
        ]
    }

    #[test]
    fn flat_hinge_has_zero_angle_and_parallel_normals() {
        let x = folded_hinge(0.0);
        assert_eq!(dihedral_angle(&x), 0.0);
        let f = HingeFrame::new(&x).expect("well-shaped hinge");
        assert!(f.normals[0].normalize().dot(f.normals[1].normalize()) > 1.0 - 1e-15);
    }

    #[test]
    fn sign_of_angle() {
        // N1 = +z. Folding wing 2 up (towards +z, the normals' side) makes a valley: concave, θ < 0.
        for fold in [0.1, 0.7, 1.5, 2.5, 3.0] {
            assert!(
                (dihedral_angle(&folded_hinge(fold)) + fold).abs() < 1e-12,
                "fold {fold}"
            );
            assert!(
                (dihedral_angle(&folded_hinge(-fold)) - fold).abs() < 1e-12,
                "fold {fold}"
            );
        }
    }

    #[test]
    fn angle_near_pi_jumps_by_two_pi() {
        let a = dihedral_angle(&folded_hinge(PI - 1e-3));
        let b = dihedral_angle(&folded_hinge(PI + 1e-3));
        assert!((a + (PI - 1e-3)).abs() < 1e-9);
        assert!((b - (PI - 1e-3)).abs() < 1e-9);
        // θ decreases through -π and reappears just below +π: the wrapped change is the small one.
        assert!((wrap_angle(b - a) + 2e-3).abs() < 1e-9);
    }

    #[test]
    fn wrap_angle_maps_into_half_open_interval() {
        let mut rng = SplitMix64::new(11);
        for _ in 0..1000 {
            let a = rng.uniform(-40.0, 40.0);
            let w = wrap_angle(a);
            assert!(w > -PI && w <= PI, "{a} -> {w}");
            let turns = (a - w) / TAU;
            assert!((turns - turns.round()).abs() < 1e-9, "{a} -> {w}");
        }
        assert_eq!(wrap_angle(PI), PI);
        assert_eq!(wrap_angle(-PI), PI);
        assert_eq!(wrap_angle(0.0), 0.0);
        assert!(wrap_angle(f64::NAN).is_nan());
    }

    #[test]
    fn gradient_matches_finite_differences() {
        for (n, x) in random_hinges(1, 200, 0.05).iter().enumerate() {
            let fd = fd_gradient(dihedral_angle, x, FD_STEP);
            let g = dihedral_angle_gradient(x);
            assert_vec_close(&g, &fd, FD_TOL, &format!("hinge {n} gradient"));
        }
    }

    #[test]
    fn angle_and_gradient_agree_with_separate_functions() {
        for x in random_hinges(2, 50, 0.0) {
            let (theta, g) = dihedral_angle_and_gradient(&x).expect("well-shaped hinge");
            assert_eq!(theta, dihedral_angle(&x));
            assert_eq!(g, dihedral_angle_gradient(&x));
        }
    }

    #[test]
    fn hessian_matches_finite_differences() {
        // The gradient is smooth across θ = ±π, so no margin is needed here.
        for (n, x) in random_hinges(3, 200, 0.0).iter().enumerate() {
            let fd = fd_jacobian(dihedral_angle_gradient, x, FD_STEP);
            let h = dihedral_angle_hessian(x);
            assert_mat_close(&h, &fd, FD_TOL, &format!("hinge {n} hessian"));
        }
    }

    #[test]
    fn raw_hessian_is_symmetric_to_round_off() {
        // The symmetrisation in `dihedral_angle_hessian` may only remove round-off: the derived
        // formula itself must be symmetric.
        for x in random_hinges(4, 200, 0.0) {
            let frame = HingeFrame::new(&x).expect("well-shaped hinge");
            let h = raw_hessian(&frame, &x);
            let t: [[DMat3; 4]; 4] =
                std::array::from_fn(|i| std::array::from_fn(|j| h[j][i].transpose()));
            assert_mat_close(&h, &t, 1e-10, "H vs Hᵀ");
        }
    }

    #[test]
    fn bending_modes_are_free_of_rigid_motion() {
        // `docs/methods/dihedral-bending.md` (4.5): Σ u_i = 0 and Σ x_i × u_i = 0.
        for x in random_hinges(5, 200, 0.0) {
            let g = dihedral_angle_gradient(&x);
            let scale = g.iter().map(|v| v.length()).fold(0.0, f64::max);
            let sum: DVec3 = g.iter().copied().sum();
            let torque: DVec3 = x.iter().zip(&g).map(|(p, u)| p.cross(*u)).sum();
            let lever = x.iter().map(|p| p.length()).fold(0.0, f64::max);
            assert!(sum.length() <= 1e-12 * scale, "Σu = {sum}");
            assert!(torque.length() <= 1e-12 * scale * lever, "Σx×u = {torque}");
        }
    }

    #[test]
    fn wing_mode_is_normal_over_height() {
        // `docs/methods/dihedral-bending.md` §4.3 geometry: u1 = n̂1 / ℓ1.
        let x = folded_hinge(0.4);
        let u1 = -dihedral_angle_gradient(&x)[0];
        // Wing 1 sits at height 1 above the edge, with normal +z.
        assert!((u1 - DVec3::Z).length() < 1e-14, "u1 = {u1}");
    }

    #[test]
    fn angle_is_invariant_under_rigid_motion_and_scaling() {
        let mut rng = SplitMix64::new(6);
        for x in random_hinges(6, 100, 0.0) {
            let rot = rng.rotation();
            let shift = rng.vec3(10.0);
            let s = rng.uniform(0.01, 100.0);
            let y = x.map(|p| rot * p * s + shift);
            let (a, b) = (dihedral_angle(&x), dihedral_angle(&y));
            assert!(wrap_angle(a - b).abs() < 1e-10, "{a} vs {b}");
        }
    }

    #[test]
    fn degenerate_hinges_give_zeros() {
        let collapsed_wing = [
            DVec3::new(0.5, 0.0, 0.0),
            DVec3::new(0.5, -1.0, 0.0),
            DVec3::ZERO,
            DVec3::X,
        ];
        let zero_edge = [DVec3::Y, -DVec3::Y, DVec3::ZERO, DVec3::ZERO];
        for x in [collapsed_wing, zero_edge] {
            assert!(hinge_is_degenerate(&x));
            assert_eq!(dihedral_angle(&x), 0.0);
            assert_eq!(dihedral_angle_gradient(&x), [DVec3::ZERO; 4]);
            assert_eq!(dihedral_angle_hessian(&x), [[DMat3::ZERO; 4]; 4]);
            assert!(dihedral_angle_and_gradient(&x).is_none());
        }
        let nan = [DVec3::NAN, DVec3::Y, DVec3::ZERO, DVec3::X];
        assert!(hinge_is_degenerate(&nan));
        assert!(!hinge_is_degenerate(&folded_hinge(0.3)));
    }
}

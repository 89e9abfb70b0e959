//! The Baraff–Witkin elements' share of the implicit Euler system: each element's rows of `b` and the
//! factors of its blocks of `A`.
//!
//! Equation labels `eq. 2.n` are those of `docs/methods/baraff-witkin.md`, `eq. 4.n` those of
//! `docs/methods/dihedral-bending.md` (weft's own statements of the model, with the papers they follow).
//!
//! [`membrane_element`](super::baraff_witkin::membrane_element) and
//! [`bend_element`](super::baraff_witkin::bend_element) return an element's force, `∂f/∂x` and `∂f/∂v`
//! as full `N × N` block arrays, and the integrator then forms the element's part of
//! Baraff & Witkin 1998's linearised implicit Euler step,
//!
//! ```text
//! A_ij = −h ∂f_i/∂v_j − h² ∂f_i/∂x_j,     b_i = h f_i + h Σ_j (∂f_i/∂x_j) w_j,   w = h v + y.
//! ```
//!
//! In the definite treatment (module doc of `baraff_witkin`) every condition `C` with stiffness `k` and
//! damping `k_d` contributes the rank-one blocks `∂f_i/∂x_j = −k g_i g_jᵀ` and `∂f_i/∂v_j = −k_d g_i g_jᵀ`
//! (`g_i = ∂C/∂x_i`), plus, for a stretch row in tension only, the curvature `−k C ∂²C/∂x_i∂x_j`. The
//! kernels here use that structure directly:
//!
//! ```text
//! A_ij += (h k_d + h² k) g_i g_jᵀ + h² k C H_ij,
//! b_i  += h f_i − h k g_i (Σ_j g_j · w_j) − h k C Σ_j H_ij w_j,
//! ```
//!
//! and for a stretch row `C = √a (|w_u| − b)` (eq. 2.4, `g_m = √a α_m ŵ`, `H_ml = α_m α_l (I − ŵŵᵀ) √a/|w_u|`)
//! every block is `α_m α_l` times one 3×3 matrix. So the membrane's nine blocks are
//! `α_m α_l M_u + β_m β_l M_v + c_sh g_m g_lᵀ` and the hinge's sixteen are `c g_m g_lᵀ`: the sums the
//! general kernels build from two block arrays per element (and the `N²` products `∂f/∂x · w`) become a
//! few 3×3 matrices and `N` dot products, with no element-sized temporaries. The numbers are the same
//! sums in another order (they agree with the general kernels to rounding, `tests` below). Everything up
//! to the rows of `b` and the factors of the blocks stays `f64` and is rounded once: the stretch rows are
//! differences of nearly equal lengths (`|w_u| − b` is the strain, 1e-2 to 1e-4 in a stiff cloth), which
//! `f32` positions would resolve only to a few 1e-6 for a 1.5 cm edge at 0.5 m from the origin, and the
//! right-hand side cancels the elastic force against `K w` near equilibrium. The blocks are formed from the
//! rounded factors in `f32` ([`ElementSystem::block`]), the precision `A` is stored in
//! (`docs/methods/assembly.md` §2).
//!
//! The exact-Jacobian mode (with the shear curvature and the indefinite stretch curvature) and the
//! discrete-shell hinge keep the general kernels.
#![deny(unsafe_code)]

use glam::{DMat3, DVec3, Mat3, Mat3A, Vec3, Vec3A};

use super::baraff_witkin::{
    BendParams, HingeRest, MembraneParams, TriangleRest, deformation_gradient,
};
use super::dihedral::{self, dihedral_angle_and_gradient, wrap_angle};

/// One element's share of `A` and `b` from [`membrane_system`] or [`bend_system`]: its rows of
/// `b` and the factors its blocks are products of.
///
/// The blocks are formed in `f32` from those factors ([`Self::block`]): a hinge's `A_ml = ĝ_m ĝ_lᵀ`
/// with `ĝ = √s g`, a triangle's `A_ml = α_m α_l M_u + β_m β_l M_v + ĝ_m ĝ_lᵀ` (module doc). The
/// factors are computed in `f64` and rounded once; each block entry is then a product of
/// rounded numbers (a few `f32` ulps, where rounding the `f64` block would be half of one), which
/// is the precision `A` is stored and solved in anyway. Block `(l, m)` is exactly the
/// transpose of block `(m, l)` (the same products in the same order), so `A` stays exactly
/// symmetric and a caller may form the upper triangle only and write each block's transpose.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ElementSystem<const N: usize> {
    /// Elastic energy (J).
    pub energy: f64,
    /// The element's `N` rows of `b` (kg·m/s), rounded once from `f64`.
    pub rhs: [Vec3; N],
    /// `ĝ_m`: `A_ml` holds `ĝ_m ĝ_lᵀ` (√kg).
    g: [Vec3A; N],
    /// The stretch rows' `α_m`, `β_m` and matrices `M_u`, `M_v` (zero for a hinge).
    stretch: Option<StretchBlocks<N>>,
}

/// The stretch rows' part of a triangle's blocks: `α_m α_l M_u + β_m β_l M_v`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct StretchBlocks<const N: usize> {
    alpha: [f32; N],
    beta: [f32; N],
    m_u: Mat3A,
    m_v: Mat3A,
}

impl<const N: usize> ElementSystem<N> {
    /// No blocks and no rows (a degenerate hinge).
    pub const ZERO: Self = Self {
        energy: 0.0,
        rhs: [Vec3::ZERO; N],
        g: [Vec3A::ZERO; N],
        stretch: None,
    };

    /// A hinge's share: rows `rhs` and `A_ml = ĝ_m ĝ_lᵀ` with `ĝ = g`.
    pub(crate) fn hinge(energy: f64, rhs: [Vec3; N], g: [Vec3A; N]) -> Self {
        Self {
            energy,
            rhs,
            g,
            stretch: None,
        }
    }

    /// A triangle's share: rows `rhs` and `A_ml = α_m α_l M_u + β_m β_l M_v + ĝ_m ĝ_lᵀ`.
    pub(crate) fn membrane(
        energy: f64,
        rhs: [Vec3; N],
        g: [Vec3A; N],
        alpha: [f32; N],
        beta: [f32; N],
        m_u: Mat3A,
        m_v: Mat3A,
    ) -> Self {
        Self {
            energy,
            rhs,
            g,
            stretch: Some(StretchBlocks {
                alpha,
                beta,
                m_u,
                m_v,
            }),
        }
    }

    /// The block `A_ml` (kg), `m, l < N`.
    #[inline]
    #[must_use]
    pub fn block(&self, m: usize, l: usize) -> Mat3 {
        let (gm, gl) = (self.g[m], self.g[l]);
        let mut b = Mat3A::from_cols(gm * gl.x, gm * gl.y, gm * gl.z);
        if let Some(s) = &self.stretch {
            b += s.m_u * (s.alpha[m] * s.alpha[l]) + s.m_v * (s.beta[m] * s.beta[l]);
        }
        Mat3::from(b)
    }

    /// Whether any block is non-zero (an element without stiffness or damping has none).
    #[inline]
    #[must_use]
    pub fn has_blocks(&self) -> bool {
        self.stretch.is_some() || self.g.iter().any(|g| *g != Vec3A::ZERO)
    }
}

/// Whether the elastic bending stiffness enters the system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BendingStiffness {
    /// Backward Euler: `K_b` in `A` and `K_b w` in `b`.
    Implicit,
    /// The IMEX split's explicit elastic bending (Bridson's course notes, *Implicit/Explicit Methods*): `K_b` left out of `A`
    /// and `b`; the bending force and its damping stay.
    Explicit,
}

/// Accumulates one element's force and `Σ_j K_ij w_j`.
struct Rows<const N: usize> {
    energy: f64,
    /// Elastic plus damping force (N).
    force: [DVec3; N],
    /// `Σ_j ∂f_i/∂x_j w_j` (N).
    kw: [DVec3; N],
}

impl<const N: usize> Rows<N> {
    const ZERO: Self = Self {
        energy: 0.0,
        force: [DVec3::ZERO; N],
        kw: [DVec3::ZERO; N],
    };

    /// Adds the energy, the force and the rank-one part of `K w` of a condition with value `c`, gradient
    /// `g`, stiffness `k` and damping `k_d` (eq. 2.1, 2.8, 2.10). Returns nothing for the blocks: the
    /// caller adds `(h k_d + h² k) g gᵀ` in whatever form the condition's structure allows.
    #[inline]
    fn add_condition(
        &mut self,
        c: f64,
        g: &[DVec3; N],
        k: f64,
        k_d: f64,
        v: &[DVec3; N],
        w: &[DVec3; N],
    ) {
        let mut c_dot = 0.0;
        let mut g_w = 0.0;
        for i in 0..N {
            c_dot += g[i].dot(v[i]);
            g_w += g[i].dot(w[i]);
        }
        self.energy += 0.5 * k * c * c;
        let scale = k * c + k_d * c_dot;
        for ((f, kw), gi) in self.force.iter_mut().zip(&mut self.kw).zip(g) {
            *f -= scale * *gi;
            *kw -= (k * g_w) * *gi;
        }
    }

    /// `b_i = h f_i + h (K w)_i`, rounded once.
    #[inline]
    fn rhs(&self, h: f64) -> [Vec3; N] {
        std::array::from_fn(|i| (h * (self.force[i] + self.kw[i])).as_vec3())
    }
}

/// One stretch row `C = √a (|w| − b)`, `w = Σ coeff_m x_m` (eq. 2.4–2.5 with √a): adds its energy, force
/// and `K w` to `rows` and returns the 3×3 matrix `M` with `A_ml += coeff_m coeff_l M`.
#[allow(clippy::too_many_arguments)]
#[inline]
fn stretch_row(
    rows: &mut Rows<3>,
    w_def: DVec3,
    coeff: &[f64; 3],
    b: f64,
    sqrt_a: f64,
    k: f64,
    k_d: f64,
    h: f64,
    v: &[DVec3; 3],
    w: &[DVec3; 3],
) -> DMat3 {
    let len = w_def.length();
    let c = sqrt_a * (len - b);
    // The general kernel's cone-tip rule: no direction, no gradient (energy only).
    if len <= super::baraff_witkin::MIN_STRETCH {
        rows.energy += 0.5 * k * c * c;
        return DMat3::ZERO;
    }
    let w_hat = w_def / len;
    let g = coeff.map(|a| (sqrt_a * a) * w_hat);
    rows.add_condition(c, &g, k, k_d, v, w);
    let outer = dihedral::outer(w_hat, w_hat);
    let mut m = outer * ((h * k_d + h * h * k) * sqrt_a * sqrt_a);
    if c >= 0.0 {
        // Curvature in tension only (the definite treatment): H_ml = coeff_m coeff_l (I − ŵŵᵀ) √a/|w|.
        let base = (DMat3::IDENTITY - outer) * (sqrt_a / len);
        m += base * (h * h * k * c);
        let mut hw = DVec3::ZERO;
        for (a, wl) in coeff.iter().zip(w) {
            hw += *a * *wl;
        }
        let hw = base * hw;
        for (kw, a) in rows.kw.iter_mut().zip(coeff) {
            *kw -= (k * c * a) * hw;
        }
    }
    m
}

/// Stretch (eq. 2.4–2.5), shear (eq. 2.6) and their damping (eq. 2.10–2.11) of one triangle, as
/// its share of `A` and `b` (Baraff & Witkin 1998's implicit step) in the definite treatment
/// (module doc), with the elastic energy (J).
///
/// `x`, `v`: corner positions (m) and velocities (m/s) in the order of `rest`; `w = h v + y` (m); `h`
/// the substep (s). Stiffnesses and dampings are non-negative (the scene and C checks).
#[must_use]
#[inline]
pub fn membrane_system(
    x: &[DVec3; 3],
    v: &[DVec3; 3],
    w: &[DVec3; 3],
    rest: &TriangleRest,
    p: &MembraneParams,
    h: f64,
) -> ElementSystem<3> {
    let [w_u, w_v] = deformation_gradient(x, rest);
    let sqrt_a = rest.area.sqrt();
    let (alpha, beta) = (&rest.alpha, &rest.beta);
    let mut rows = Rows::<3>::ZERO;
    let m_u = stretch_row(
        &mut rows,
        w_u,
        alpha,
        p.rest_stretch_u,
        sqrt_a,
        p.stretch_u,
        p.stretch_damping * p.stretch_u,
        h,
        v,
        w,
    );
    let m_v = stretch_row(
        &mut rows,
        w_v,
        beta,
        p.rest_stretch_v,
        sqrt_a,
        p.stretch_v,
        p.stretch_damping * p.stretch_v,
        h,
        v,
        w,
    );
    // Shear C = √a w_u·w_v, g_m = √a (α_m w_v + β_m w_u); no curvature in the definite treatment.
    let c_sh = sqrt_a * w_u.dot(w_v);
    let g_sh: [DVec3; 3] = std::array::from_fn(|m| sqrt_a * (alpha[m] * w_v + beta[m] * w_u));
    let k_sh = p.shear;
    let kd_sh = p.shear_damping * p.shear;
    rows.add_condition(c_sh, &g_sh, k_sh, kd_sh, v, w);
    // A_ml += s g_m g_lᵀ = ĝ_m ĝ_lᵀ with ĝ = √s g (s ≥ 0).
    let root_s = (h * kd_sh + h * h * k_sh).sqrt();
    ElementSystem {
        energy: rows.energy,
        rhs: rows.rhs(h),
        g: g_sh.map(|g| (root_s * g).as_vec3().into()),
        stretch: Some(StretchBlocks {
            alpha: alpha.map(|a| a as f32),
            beta: beta.map(|b| b as f32),
            m_u: m_u.as_mat3().into(),
            m_v: m_v.as_mat3().into(),
        }),
    }
}

/// Baraff–Witkin bending of one hinge, `C = √w wrap(θ − θ0)` (eq. 2.7, §4.1, §4.6), with its damping,
/// as its share of `A` and `b` with the Gauss–Newton (definite) stiffness `−k_b w ∇θ∇θᵀ`, with the
/// elastic energy (J). A degenerate hinge contributes nothing.
///
/// `x`, `v`: `[x1, x2, x3, x4]` (wings, then the shared edge) positions (m) and velocities (m/s);
/// `w = h v + y` (m); `h` the substep (s). Stiffness and damping are non-negative.
#[must_use]
#[inline]
pub fn bend_system(
    x: &[DVec3; 4],
    v: &[DVec3; 4],
    w: &[DVec3; 4],
    rest: &HingeRest,
    p: &BendParams,
    h: f64,
    stiffness: BendingStiffness,
) -> ElementSystem<4> {
    let Some((theta, grad)) = dihedral_angle_and_gradient(x) else {
        return ElementSystem::ZERO;
    };
    let sqrt_w = rest.weight.sqrt();
    let c = sqrt_w * wrap_angle(theta - rest.rest_angle);
    let g = grad.map(|gi| sqrt_w * gi);
    let k = p.stiffness;
    let k_d = p.damping * p.stiffness;
    let mut rows = Rows::<4>::ZERO;
    rows.add_condition(c, &g, k, k_d, v, w);
    let k_x = match stiffness {
        BendingStiffness::Implicit => k,
        BendingStiffness::Explicit => {
            rows.kw = [DVec3::ZERO; 4];
            0.0
        }
    };
    // A_ml += s g_m g_lᵀ = ĝ_m ĝ_lᵀ with ĝ = √s g (s ≥ 0).
    let root_s = (h * k_d + h * h * k_x).sqrt();
    ElementSystem {
        energy: rows.energy,
        rhs: rows.rhs(h),
        g: g.map(|gi| (root_s * gi).as_vec3().into()),
        stretch: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::baraff_witkin::tests::{random_hinges, random_triangles};
    use crate::model::baraff_witkin::{
        ElementOutput, JacobianMode, bend_element, membrane_element,
    };
    use crate::model::test_support::{SplitMix64, fd_gradient};

    /// The general kernels' element output turned into `A` and `b` (eq. 2.14) in `f64`, term by
    /// term, and the largest magnitude of the terms of `b` (the scale its rounding is relative to).
    fn reference<const N: usize>(
        e: &ElementOutput<N>,
        h: f64,
        w: &[DVec3; N],
        stiffness: BendingStiffness,
    ) -> ([[DMat3; N]; N], [DVec3; N], f64) {
        let k_on = f64::from(u8::from(stiffness == BendingStiffness::Implicit));
        let mut blocks = [[DMat3::ZERO; N]; N];
        let mut rhs = [DVec3::ZERO; N];
        let mut scale = 0.0f64;
        for i in 0..N {
            let mut kw = DVec3::ZERO;
            for j in 0..N {
                let k = e.dfdx[i][j] * k_on;
                kw += k * w[j];
                blocks[i][j] = -h * e.dfdv[i][j] - (h * h) * k;
            }
            rhs[i] = h * (e.force[i] + kw);
            scale = scale
                .max((h * e.force[i]).abs().max_element())
                .max((h * kw).abs().max_element());
        }
        (blocks, rhs, scale)
    }

    /// Asserts the element's `f32` blocks and rows equal the reference to `f32` rounding of the
    /// largest entry (blocks) or term (rows), and that block `(j, i)` is exactly the transpose of
    /// block `(i, j)`.
    fn assert_matches<const N: usize>(
        system: &ElementSystem<N>,
        reference: &([[DMat3; N]; N], [DVec3; N], f64),
        what: &str,
    ) {
        let rhs = &system.rhs;
        let (rb, rr, rhs_scale) = reference;
        let block_scale = rb
            .iter()
            .flatten()
            .map(|b| b.abs().to_cols_array().into_iter().fold(0.0, f64::max))
            .fold(0.0, f64::max);
        for (i, row) in rb.iter().enumerate() {
            for (j, want) in row.iter().enumerate() {
                let block = system.block(i, j);
                assert_eq!(
                    block.to_cols_array().map(f32::to_bits),
                    system
                        .block(j, i)
                        .transpose()
                        .to_cols_array()
                        .map(f32::to_bits),
                    "{what}: block ({i},{j}) is not the transpose of ({j},{i})"
                );
                let d = (block.as_dmat3() - *want).abs();
                let err = d.to_cols_array().into_iter().fold(0.0, f64::max);
                assert!(
                    err <= 1e-6 * block_scale,
                    "{what}: block ({i},{j}) off by {err} (scale {block_scale})"
                );
            }
            let err = (rhs[i].as_dvec3() - rr[i]).abs().max_element();
            assert!(
                err <= 1e-6 * rhs_scale,
                "{what}: row {i} off by {err} (scale {rhs_scale})"
            );
        }
    }

    fn random_w<const N: usize>(rng: &mut SplitMix64, size: f64) -> [DVec3; N] {
        std::array::from_fn(|_| rng.vec3(0.05 * size))
    }

    #[test]
    fn membrane_system_matches_the_general_kernel() {
        let mut rng = SplitMix64::new(21);
        // Stretches from 0.3 to 1.5: compressed rows (no curvature) and stretched ones (curvature).
        for (n, t) in random_triangles(7, 300, 0.3).iter().enumerate() {
            let h = rng.uniform(1e-4, 1e-2);
            let w = random_w::<3>(&mut rng, 0.1);
            let system = membrane_system(&t.x, &t.v, &w, &t.rest, &t.p, h);
            let e = membrane_element(&t.x, &t.v, &t.rest, &t.p, JacobianMode::Definite);
            assert!(
                (system.energy - e.energy).abs() <= 1e-12 * e.energy.max(1e-30),
                "tri {n} energy"
            );
            let r = reference(&e, h, &w, BendingStiffness::Implicit);
            assert_matches(&system, &r, &format!("tri {n}"));
        }
    }

    #[test]
    fn bend_system_matches_the_general_kernel_implicit_and_explicit() {
        let mut rng = SplitMix64::new(22);
        for (n, s) in random_hinges(8, 300, 0.05).iter().enumerate() {
            for stiffness in [BendingStiffness::Implicit, BendingStiffness::Explicit] {
                let h = rng.uniform(1e-4, 1e-2);
                let w = random_w::<4>(&mut rng, 0.1);
                let system = bend_system(&s.x, &s.v, &w, &s.rest, &s.p, h, stiffness);
                let e = bend_element(&s.x, &s.v, &s.rest, &s.p, JacobianMode::Definite);
                assert!(
                    (system.energy - e.energy).abs() <= 1e-12 * e.energy.max(1e-30),
                    "hinge {n} energy"
                );
                let r = reference(&e, h, &w, stiffness);
                assert_matches(&system, &r, &format!("hinge {n} {stiffness:?}"));
            }
        }
    }

    /// With `v = 0` and `w = 0` the right-hand side is `h f = −h ∂E/∂x` of the energy the kernel
    /// returns: checked against central differences of that energy.
    #[test]
    fn system_rhs_at_rest_velocity_is_the_energy_gradient() {
        let h = 1e-2;
        let membrane_rhs = |t: &crate::model::baraff_witkin::tests::Tri, x: &[DVec3; 3]| {
            let system = membrane_system(x, &[DVec3::ZERO; 3], &[DVec3::ZERO; 3], &t.rest, &t.p, h);
            (system.energy, system.rhs)
        };
        for (n, t) in random_triangles(9, 100, 0.3).iter().enumerate() {
            let (_, rhs) = membrane_rhs(t, &t.x);
            let fd = fd_gradient(|y| membrane_rhs(t, y).0, &t.x, 1e-7);
            let scale = fd.iter().map(|g| g.abs().max_element()).fold(0.0, f64::max);
            for i in 0..3 {
                let err = (rhs[i].as_dvec3() / h + fd[i]).abs().max_element();
                assert!(
                    err <= 1e-5 * scale,
                    "tri {n} row {i}: off by {err} (scale {scale})"
                );
            }
        }
        let bend_rhs = |s: &crate::model::baraff_witkin::tests::Hinge, x: &[DVec3; 4]| {
            let system = bend_system(
                x,
                &[DVec3::ZERO; 4],
                &[DVec3::ZERO; 4],
                &s.rest,
                &s.p,
                h,
                BendingStiffness::Implicit,
            );
            (system.energy, system.rhs)
        };
        for (n, s) in random_hinges(10, 100, 0.05).iter().enumerate() {
            let (_, rhs) = bend_rhs(s, &s.x);
            let fd = fd_gradient(|y| bend_rhs(s, y).0, &s.x, 1e-7);
            let scale = fd.iter().map(|g| g.abs().max_element()).fold(0.0, f64::max);
            for i in 0..4 {
                let err = (rhs[i].as_dvec3() / h + fd[i]).abs().max_element();
                assert!(
                    err <= 1e-5 * scale,
                    "hinge {n} row {i}: off by {err} (scale {scale})"
                );
            }
        }
    }
}

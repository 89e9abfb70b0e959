//! Internal dynamics: one file per energy or constraint family.
//!
//! Every family is a per-element kernel evaluated in `f64`: given the positions (and velocities) of the
//! few vertices an element touches, it returns the element's energy, forces and 3x3 Jacobian blocks. The
//! integrator scatters those blocks into the global system through precomputed block slots; nothing here
//! allocates, and nothing here knows about meshes beyond its element's vertices.
//!
//! - [`baraff_witkin`]: Baraff–Witkin 1998 stretch, shear and bend conditions with their damping
//!   (Baraff & Witkin 1998, *Cloth forces* and *Damping*), including the definiteness treatment the implicit solver needs.
//! - [`bw_system`]: the same elements (definite treatment) written straight into the implicit Euler
//!   system's blocks and right-hand side, using the rank-one structure of every condition.
//! - [`bw_lanes`]: the same definite kernels evaluated eight elements at a time in `f32` lanes (SIMD),
//!   the assembly's path, tested against [`bw_system`].
//! - [`constraint`]: the [`constraint::ConstraintSet`] interface between scalar constraint families and the
//!   projection solvers (Wang 2012).
//! - [`dihedral`]: the hinge angle θ, its gradient and its exact Hessian (Bridson, Marino & Fedkiw 2003),
//!   shared by the Baraff–Witkin bend condition and discrete-shell bending.
//! - [`discrete_shell`]: discrete-shell (dihedral) bending with rest angles and bending damping, the
//!   course-notes force in Bridson–Marino–Fedkiw 2003 form (Bridson's course notes, *Bending energy* to *Shells*).
//! - [`isometric`]: Wang 2012 inextensibility, conforming and boundary constraints on the 4:1
//!   subdivided mesh (Wang 2012 eq. 3.1–3.4), as one [`constraint::ConstraintSet`].
//! - [`quadratic_bending`]: Wang 2012 Crouzeix–Raviart bending on the red nodes with rest curvature
//!   and a per-step frozen rotation (Wang 2012 eq. 3.5–3.8).
#![deny(unsafe_code)]

pub mod baraff_witkin;
pub mod bw_lanes;
pub mod bw_system;
pub mod constraint;
pub mod dihedral;
pub mod discrete_shell;
pub mod isometric;
pub mod quadratic_bending;
pub mod wind;

/// Helpers shared by the unit tests of the element kernels: a seeded generator, a robust closeness
/// check and a symmetric eigenvalue check.
#[cfg(test)]
pub(crate) mod test_support {
    use glam::{DMat3, DVec3};

    pub(crate) use crate::testing::SplitMix64;

    impl SplitMix64 {
        /// A random rotation (normalised quaternion from a 4D box, rejection-sampled in the ball).
        pub(crate) fn rotation(&mut self) -> DMat3 {
            loop {
                let q = glam::DQuat::from_xyzw(
                    self.uniform(-1.0, 1.0),
                    self.uniform(-1.0, 1.0),
                    self.uniform(-1.0, 1.0),
                    self.uniform(-1.0, 1.0),
                );
                let len2 = q.length_squared();
                if len2 > 0.01 && len2 <= 1.0 {
                    return DMat3::from_quat(q.normalize());
                }
            }
        }
    }

    /// `|a - b| <= tol * max(|a|, |b|, scale)`: relative where the values are large, absolute (against
    /// the typical magnitude `scale` of the whole quantity) where they are near zero.
    pub(crate) fn close(a: f64, b: f64, scale: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * a.abs().max(b.abs()).max(scale)
    }

    /// Largest absolute component of a block vector.
    pub(crate) fn max_abs_vec<const N: usize>(g: &[DVec3; N]) -> f64 {
        g.iter().map(|v| v.abs().max_element()).fold(0.0, f64::max)
    }

    /// Largest absolute entry of a block matrix.
    pub(crate) fn max_abs_mat<const N: usize>(m: &[[DMat3; N]; N]) -> f64 {
        m.iter()
            .flatten()
            .map(|b| b.abs().to_cols_array().into_iter().fold(0.0, f64::max))
            .fold(0.0, f64::max)
    }

    /// Asserts two block vectors agree component-wise under [`close`] with the scale of the larger one.
    pub(crate) fn assert_vec_close<const N: usize>(
        a: &[DVec3; N],
        b: &[DVec3; N],
        tol: f64,
        what: &str,
    ) {
        let scale = max_abs_vec(a).max(max_abs_vec(b));
        for i in 0..N {
            for c in 0..3 {
                assert!(
                    close(a[i][c], b[i][c], scale, tol),
                    "{what}: vertex {i} comp {c}: {} vs {} (scale {scale})",
                    a[i][c],
                    b[i][c]
                );
            }
        }
    }

    /// Asserts two block matrices agree entry-wise under [`close`] with the scale of the larger one.
    pub(crate) fn assert_mat_close<const N: usize>(
        a: &[[DMat3; N]; N],
        b: &[[DMat3; N]; N],
        tol: f64,
        what: &str,
    ) {
        let scale = max_abs_mat(a).max(max_abs_mat(b));
        for i in 0..N {
            for j in 0..N {
                for c in 0..3 {
                    for r in 0..3 {
                        let (x, y) = (a[i][j].col(c)[r], b[i][j].col(c)[r]);
                        assert!(
                            close(x, y, scale, tol),
                            "{what}: block ({i},{j}) entry ({r},{c}): {x} vs {y} (scale {scale})"
                        );
                    }
                }
            }
        }
    }

    /// Central-difference gradient of a scalar function of `N` points.
    pub(crate) fn fd_gradient<const N: usize>(
        f: impl Fn(&[DVec3; N]) -> f64,
        x: &[DVec3; N],
        step: f64,
    ) -> [DVec3; N] {
        std::array::from_fn(|i| {
            DVec3::from_array(std::array::from_fn(|c| {
                let (mut xp, mut xm) = (*x, *x);
                xp[i][c] += step;
                xm[i][c] -= step;
                (f(&xp) - f(&xm)) / (2.0 * step)
            }))
        })
    }

    /// Central-difference Jacobian of a block-vector function: block `[i][j]` column `c` is
    /// `∂g_i/∂x_{j,c}`.
    pub(crate) fn fd_jacobian<const N: usize>(
        g: impl Fn(&[DVec3; N]) -> [DVec3; N],
        x: &[DVec3; N],
        step: f64,
    ) -> [[DMat3; N]; N] {
        let mut out = [[DMat3::ZERO; N]; N];
        for j in 0..N {
            for c in 0..3 {
                let (mut xp, mut xm) = (*x, *x);
                xp[j][c] += step;
                xm[j][c] -= step;
                let (gp, gm) = (g(&xp), g(&xm));
                for i in 0..N {
                    *out[i][j].col_mut(c) = (gp[i] - gm[i]) / (2.0 * step);
                }
            }
        }
        out
    }

    /// Expands 3x3 blocks into a dense `3N x 3N` row-major matrix.
    pub(crate) fn dense<const N: usize>(m: &[[DMat3; N]; N]) -> Vec<Vec<f64>> {
        let n = 3 * N;
        let mut out = vec![vec![0.0; n]; n];
        for (i, row) in m.iter().enumerate() {
            for (j, block) in row.iter().enumerate() {
                for c in 0..3 {
                    for r in 0..3 {
                        out[3 * i + r][3 * j + c] = block.col(c)[r];
                    }
                }
            }
        }
        out
    }

    /// Eigenvalues (ascending) of the symmetric part of a block matrix, by faer's self-adjoint solver.
    /// Also asserts the matrix is symmetric to round-off.
    pub(crate) fn symmetric_eigenvalues<const N: usize>(m: &[[DMat3; N]; N]) -> Vec<f64> {
        let d = dense(m);
        let n = d.len();
        let scale = max_abs_mat(m).max(f64::MIN_POSITIVE);
        for (r, row) in d.iter().enumerate() {
            for (c, &value) in row.iter().enumerate() {
                assert!(
                    (value - d[c][r]).abs() <= 1e-12 * scale,
                    "not symmetric at ({r},{c}): {value} vs {}",
                    d[c][r]
                );
            }
        }
        let mat = faer::Mat::<f64>::from_fn(n, n, |r, c| 0.5 * (d[r][c] + d[c][r]));
        mat.self_adjoint_eigenvalues(faer::Side::Lower)
            .expect("self-adjoint eigen-solver converges on a small symmetric matrix")
    }
}

//! Backward Euler and BDF2 predictors and velocity updates for the projection step of
//! Wang 2012 (Table 3.1 lines 1 and 7; the BDF2 variant at the end of §3.3.1;
//! `docs/methods/isometric-model.md §A11`).
//!
//! A step is `x^{n+1} = project(x̃)`: the inertial prediction `x̃` (which carries every explicit
//! force) is projected onto the constraints with the implicit potential weighted by `h_Φ²`,
//! then the velocity is read off the positions. The two schemes differ only in `x̃`, in the
//! potential weight `h_Φ` and in the velocity formula:
//!
//! | | `x̃` | `h_Φ` | `v^{n+1}` |
//! |---|---|---|---|
//! | backward Euler | `xⁿ + h vⁿ + h² a` | `h` | `(x^{n+1} − xⁿ) / h` |
//! | BDF2 | `4/3 xⁿ − 1/3 xⁿ⁻¹ + 8/9 h vⁿ − 2/9 h vⁿ⁻¹ + 4/9 h² a` | `2h/3` | `(3/2 x^{n+1} − 2 xⁿ + 1/2 xⁿ⁻¹) / h` |
//!
//! `a = M⁻¹ f_ext` is the explicit acceleration (gravity). The `h` on the `vⁿ⁻¹` term, lost in
//! the thesis's extraction, is required (`docs/methods/isometric-model.md §A11`, derivation
//! there). The first BDF2 step has no history and is taken with backward Euler (**choice**, §A11),
//! as is the first step after [`TimeIntegrator::reset`] (a teleport, a changed `h`).
#![deny(unsafe_code)]
// Per-node loops index several parallel arrays by the node number.
#![allow(clippy::needless_range_loop)]

use glam::DVec3;

/// The implicit scheme of the projection step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Integrator {
    /// First order, dissipative (Wang 2012 eq. 3.9–3.11).
    #[default]
    BackwardEuler,
    /// Second order (Wang 2012 end of §3.3.1).
    Bdf2,
}

/// The history a multistep scheme needs (`xⁿ⁻¹`, `vⁿ⁻¹`), preallocated for one cloth.
#[derive(Clone, Debug)]
pub struct TimeIntegrator {
    scheme: Integrator,
    x_prev: Vec<DVec3>,
    v_prev: Vec<DVec3>,
    /// `h` of the step the history belongs to; `None`: no history.
    h_prev: Option<f64>,
    /// The scheme used by the step in progress (BDF2 falls back to backward Euler).
    current: Integrator,
}

impl TimeIntegrator {
    /// For a cloth of `num_vertices` vertices.
    #[must_use]
    pub fn new(scheme: Integrator, num_vertices: usize) -> Self {
        TimeIntegrator {
            scheme,
            x_prev: vec![DVec3::ZERO; num_vertices],
            v_prev: vec![DVec3::ZERO; num_vertices],
            h_prev: None,
            current: Integrator::BackwardEuler,
        }
    }

    /// The configured scheme.
    #[must_use]
    pub fn scheme(&self) -> Integrator {
        self.scheme
    }

    /// Forgets the history: the next step is a backward Euler step.
    pub fn reset(&mut self) {
        self.h_prev = None;
    }

    /// Writes the prediction `x̃` (table in the module doc) for the state `(xⁿ, vⁿ)` and the
    /// explicit acceleration `accel` (per vertex), and returns the potential weight `h_Φ`
    /// (`h`, or `2h/3` for BDF2) by which a residual `r = h_Φ √k (…)` must be scaled
    /// (Wang 2012 eq. 3.19; `docs/methods/isometric-model.md` §A10, §A11). BDF2 needs history from
    /// a step of the same `h`; otherwise this step is backward Euler.
    ///
    /// Pinned vertices: the caller overwrites their `x̃` with the pin pose at `t + h`.
    ///
    /// # Panics
    /// If a slice length differs from the vertex count.
    pub fn predict(
        &mut self,
        h: f64,
        x: &[DVec3],
        v: &[DVec3],
        accel: &[DVec3],
        x_tilde: &mut [DVec3],
    ) -> f64 {
        let n = self.x_prev.len();
        assert!(x.len() == n && v.len() == n && accel.len() == n && x_tilde.len() == n);
        self.current = match (self.scheme, self.h_prev) {
            (Integrator::Bdf2, Some(hp)) if hp == h => Integrator::Bdf2,
            _ => Integrator::BackwardEuler,
        };
        match self.current {
            Integrator::BackwardEuler => {
                for i in 0..n {
                    x_tilde[i] = x[i] + h * v[i] + h * h * accel[i];
                }
                h
            }
            Integrator::Bdf2 => {
                for i in 0..n {
                    x_tilde[i] = (4.0 / 3.0) * x[i] - (1.0 / 3.0) * self.x_prev[i]
                        + (8.0 / 9.0) * h * v[i]
                        - (2.0 / 9.0) * h * self.v_prev[i]
                        + (4.0 / 9.0) * h * h * accel[i];
                }
                2.0 * h / 3.0
            }
        }
    }

    /// The scheme the last [`TimeIntegrator::predict`] used.
    #[must_use]
    pub fn current(&self) -> Integrator {
        self.current
    }

    /// Ends the step: `v ← v^{n+1}` from `x_new = x^{n+1}` and `x = xⁿ` (table in the module
    /// doc, the formula of the scheme [`TimeIntegrator::predict`] used), then `x ← x^{n+1}`;
    /// `(xⁿ, vⁿ)` become the history.
    ///
    /// # Panics
    /// If a slice length differs from the vertex count.
    pub fn finish(&mut self, h: f64, x_new: &[DVec3], x: &mut [DVec3], v: &mut [DVec3]) {
        let n = self.x_prev.len();
        assert!(x_new.len() == n && x.len() == n && v.len() == n);
        for i in 0..n {
            let v_new = match self.current {
                Integrator::BackwardEuler => (x_new[i] - x[i]) / h,
                Integrator::Bdf2 => (1.5 * x_new[i] - 2.0 * x[i] + 0.5 * self.x_prev[i]) / h,
            };
            self.x_prev[i] = x[i];
            self.v_prev[i] = v[i];
            x[i] = x_new[i];
            v[i] = v_new;
        }
        self.h_prev = Some(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrate::projection::test_sets::EdgeLengths;
    use crate::integrate::projection::{
        GaussNewtonProjection, ProjectionSettings, RowFamily, RowRole, StrainScale,
    };
    use crate::linalg::PcgSettings;

    const G: f64 = 9.81;
    const LEN: f64 = 0.5;
    const THETA0: f64 = 0.6;
    const T_END: f64 = 0.8;

    /// The exact pendulum angle at `T_END` by RK4 with a tiny step (θ'' = −g/L sin θ).
    fn reference_angle() -> f64 {
        let f = |th: f64, om: f64| (om, -G / LEN * th.sin());
        let (mut th, mut om) = (THETA0, 0.0);
        let steps = 200_000;
        let h = T_END / steps as f64;
        for _ in 0..steps {
            let (a1, b1) = f(th, om);
            let (a2, b2) = f(th + 0.5 * h * a1, om + 0.5 * h * b1);
            let (a3, b3) = f(th + 0.5 * h * a2, om + 0.5 * h * b2);
            let (a4, b4) = f(th + h * a3, om + h * b3);
            th += h / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4);
            om += h / 6.0 * (b1 + 2.0 * b2 + 2.0 * b3 + b4);
        }
        th
    }

    /// A pendulum as one inextensible edge (Wang 2012 eq. 3.1) from a pinned pivot, under
    /// gravity, stepped with the projection; returns the bob's position error at `T_END`.
    fn pendulum_error(scheme: Integrator, steps: usize) -> f64 {
        let h = T_END / steps as f64;
        let mut x = vec![
            DVec3::ZERO,
            DVec3::new(LEN * THETA0.sin(), -LEN * THETA0.cos(), 0.0),
        ];
        let mut v = vec![DVec3::ZERO; 2];
        let set = EdgeLengths::new(&[[0, 1]], &x);
        let inv_mass = [0.0, 1.0];
        let accel = [DVec3::ZERO, DVec3::new(0.0, -G, 0.0)];
        let mut proj = GaussNewtonProjection::new(2, &[&set], 0);
        let settings = ProjectionSettings {
            tolerance: 1e-13,
            max_iterations: 50,
            cg: PcgSettings {
                max_iterations: 10,
                tolerance: 1e-15,
            },
            ..ProjectionSettings::default()
        };
        let mut ti = TimeIntegrator::new(scheme, 2);
        let mut x_tilde = vec![DVec3::ZERO; 2];
        let mut x_new = vec![DVec3::ZERO; 2];
        for _ in 0..steps {
            ti.predict(h, &x, &v, &accel, &mut x_tilde);
            x_tilde[0] = DVec3::ZERO;
            x_new.copy_from_slice(&x_tilde);
            let fam = RowFamily {
                set: &set,
                role: RowRole::Hard,
                linear: false,
                scale: StrainScale::PerRow(&set.rest),
            };
            let rep = proj.project(
                &[fam],
                &x_tilde,
                &inv_mass,
                &settings,
                &mut x_new,
                &mut || false,
            );
            assert!(rep.converged, "{rep:?}");
            ti.finish(h, &x_new, &mut x, &mut v);
        }
        let th = reference_angle();
        (x[1] - DVec3::new(LEN * th.sin(), -LEN * th.cos(), 0.0)).length()
    }

    #[test]
    fn backward_euler_is_first_order_and_bdf2_second_order() {
        let be: Vec<f64> = [200, 400, 800]
            .iter()
            .map(|&n| pendulum_error(Integrator::BackwardEuler, n))
            .collect();
        let bdf: Vec<f64> = [200, 400, 800]
            .iter()
            .map(|&n| pendulum_error(Integrator::Bdf2, n))
            .collect();
        for k in 0..2 {
            let r_be = be[k] / be[k + 1];
            let r_bdf = bdf[k] / bdf[k + 1];
            assert!((1.7..2.3).contains(&r_be), "BE ratio {r_be} ({be:?})");
            assert!((3.4..4.6).contains(&r_bdf), "BDF2 ratio {r_bdf} ({bdf:?})");
        }
        assert!(bdf[2] < be[2] / 10.0, "{bdf:?} vs {be:?}");
    }

    #[test]
    fn constant_acceleration_is_exact_under_bdf2() {
        // docs/methods/isometric-model.md §A11 check: with Φ = 0 and a constant force, BDF2
        // reproduces the parabola from the second step on, and its velocity update returns v(t).
        let a = DVec3::new(0.3, -9.81, 0.1);
        let (h, v0) = (0.01, DVec3::new(1.0, 2.0, -0.5));
        let exact_x = |t: f64| v0 * t + 0.5 * a * t * t;
        let mut ti = TimeIntegrator::new(Integrator::Bdf2, 1);
        // Start from the exact state at t = h with an exact history at t = 0.
        let mut x = vec![DVec3::ZERO];
        let mut v = vec![v0];
        let mut xt = vec![DVec3::ZERO];
        ti.predict(h, &x, &v, &[a], &mut xt);
        assert_eq!(ti.current(), Integrator::BackwardEuler);
        let exact1 = [exact_x(h)];
        ti.finish(h, &exact1, &mut x, &mut v);
        v[0] = v0 + a * h; // exact vⁿ in place of the backward Euler one
        for n in 1..20 {
            ti.predict(h, &x, &v, &[a], &mut xt);
            assert_eq!(ti.current(), Integrator::Bdf2);
            let t = (n + 1) as f64 * h;
            assert!((xt[0] - exact_x(t)).length() < 1e-12, "step {n}");
            let x_new = xt.clone();
            ti.finish(h, &x_new, &mut x, &mut v);
            assert!((v[0] - (v0 + a * t)).length() < 1e-10, "step {n}");
        }
        // A different h falls back to backward Euler.
        ti.predict(h / 2.0, &x, &v, &[a], &mut xt);
        assert_eq!(ti.current(), Integrator::BackwardEuler);
    }
}

//! Wind: per-triangle aerodynamic forces from a uniform wind with
//! deterministic gusts, applied as an external force (explicit in the
//! implicit Euler step, like gravity).
//!
//! **The model is ours** (the usual flat-plate approximation of cloth
//! animation; no paper's equation numbers apply). For a triangle of area A,
//! unit normal n̂, vertex velocities v₀, v₁, v₂ and wind w, the relative air
//! velocity is u = w − (v₀ + v₁ + v₂)/3 and the force is
//!
//! F = ½ ρ A |u| [ C_n (u·n̂) n̂ + C_t (u − (u·n̂) n̂) ],
//!
//! split equally over the three vertices: normal pressure with coefficient
//! C_n (`drag`, ≈ 1.2 for a plate broadside to the flow) and tangential skin
//! friction with coefficient C_t (`skin`). The normal pressure is a plate's
//! drag *and* lift: with θ the angle between u and n̂ (n̂ turned to face the
//! wind), its component along u is ½ρA C_n |u|² cos²θ and across u
//! ½ρA C_n |u|² cosθ sinθ, so a plate at 45° to the flow feels as much lift
//! as drag. Both terms depend on u only through its size and angle, so a
//! triangle moving with the air feels nothing.
//!
//! Gusts: the wind velocity is w(t) = w₀ (1 + g s(t/T)) with
//! s(τ) = 0.6 sin(2πτ) + 0.4 sin(2π·2.3τ + 1.1), a fixed sum of
//! incommensurate sines (mean 0, |s| ≤ 1): deterministic, the same for any
//! thread count, with relative amplitude g (`gust`) and period T
//! (`gust_period_s`).

use glam::{DVec3, Vec3};

/// A uniform wind with gusts, and the air's aerodynamic coefficients.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wind {
    /// Mean wind velocity w₀ (m/s).
    pub velocity: Vec3,
    /// Air density ρ (kg/m³; 1.2 at sea level).
    pub density: f32,
    /// Normal pressure coefficient C_n.
    pub drag: f32,
    /// Tangential skin-friction coefficient C_t.
    pub skin: f32,
    /// Relative gust amplitude g (0 = steady).
    pub gust: f32,
    /// Gust period T (s).
    pub gust_period_s: f32,
}

impl Default for Wind {
    fn default() -> Self {
        Self {
            velocity: Vec3::ZERO,
            density: 1.2,
            drag: 1.2,
            skin: 0.02,
            gust: 0.0,
            gust_period_s: 2.0,
        }
    }
}

impl Wind {
    /// The wind velocity at time `t` (s): w₀ (1 + g s(t/T)) (module doc).
    #[must_use]
    pub fn velocity_at(&self, t: f64) -> Vec3 {
        let tau = t / f64::from(self.gust_period_s.max(1e-6));
        let two_pi = std::f64::consts::TAU;
        let s = 0.6 * (two_pi * tau).sin() + 0.4 * (two_pi * 2.3 * tau + 1.1).sin();
        self.velocity * (1.0 + f64::from(self.gust) * s) as f32
    }

    /// The force on one triangle with corners `x` and corner velocities `v`
    /// in the wind `w` (module doc), computed in f64.
    #[must_use]
    pub fn triangle_force(&self, w: Vec3, x: [Vec3; 3], v: [Vec3; 3]) -> Vec3 {
        let [a, b, c] = x.map(|p| p.as_dvec3());
        let cross = (b - a).cross(c - a);
        let twice_area = cross.length();
        if !twice_area.is_finite() || twice_area <= 0.0 {
            return Vec3::ZERO;
        }
        let n = cross / twice_area;
        let mean_v = (v[0].as_dvec3() + v[1].as_dvec3() + v[2].as_dvec3()) / 3.0;
        let u: DVec3 = w.as_dvec3() - mean_v;
        let speed = u.length();
        let un = u.dot(n);
        let normal = un * n;
        let tangential = u - normal;
        let k = 0.5 * f64::from(self.density) * 0.5 * twice_area * speed;
        (k * (f64::from(self.drag) * normal + f64::from(self.skin) * tangential)).as_vec3()
    }

    /// Adds a third of each triangle's force, at time `t`, to its vertices
    /// in `out` (one entry per vertex). Serial, in triangle order, so the
    /// sums are the same on every run.
    pub fn add_forces(
        &self,
        t: f64,
        x: &[Vec3],
        v: &[Vec3],
        triangles: &[[u32; 3]],
        out: &mut [Vec3],
    ) {
        let w = self.velocity_at(t);
        for tri in triangles {
            let [i, j, k] = tri.map(|i| i as usize);
            let f = self.triangle_force(w, [x[i], x[j], x[k]], [v[i], v[j], v[k]]) / 3.0;
            out[i] += f;
            out[j] += f;
            out[k] += f;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STILL: [Vec3; 3] = [Vec3::ZERO; 3];

    /// A right triangle of area 0.5 m² in the plane with unit normal
    /// (cos α, sin α, 0) (rotated about z from the yz plane).
    fn plate(alpha: f32) -> [Vec3; 3] {
        let n = Vec3::new(alpha.cos(), alpha.sin(), 0.0);
        let e1 = Vec3::Z;
        let e2 = n.cross(e1);
        // Winding so that (x1 − x0) × (x2 − x0) = e1 × e2 = n.
        [Vec3::ZERO, e1, e2]
    }

    fn wind(v: Vec3) -> Wind {
        Wind {
            velocity: v,
            skin: 0.0,
            ..Wind::default()
        }
    }

    #[test]
    fn broadside_plate_feels_half_rho_cn_a_u_squared_downwind() {
        let w = wind(Vec3::new(10.0, 0.0, 0.0));
        let f = w.triangle_force(w.velocity, plate(0.0), STILL);
        let expected = 0.5 * 1.2 * 1.2 * 0.5 * 100.0;
        assert!((f.x - expected).abs() < 1e-3 * expected, "{f}");
        assert!(f.y.abs() < 1e-4 && f.z.abs() < 1e-4, "{f}");
        // The winding does not matter: a flipped plate feels the same.
        let p = plate(0.0);
        let g = w.triangle_force(w.velocity, [p[0], p[2], p[1]], STILL);
        assert!((g - f).length() < 1e-4, "{g} vs {f}");
    }

    #[test]
    fn inclined_plate_has_lift_cos_sin_and_drag_cos_squared() {
        let w = wind(Vec3::new(10.0, 0.0, 0.0));
        let k = 0.5 * 1.2 * 1.2 * 0.5 * 100.0;
        for deg in [15.0f32, 30.0, 45.0, 60.0, 80.0] {
            let theta = deg.to_radians();
            let f = w.triangle_force(w.velocity, plate(theta), STILL);
            let (drag, lift) = (f.x, f.y);
            assert!(
                (drag - k * theta.cos().powi(2)).abs() < 1e-3 * k,
                "{deg}: {f}"
            );
            assert!(
                (lift - k * theta.cos() * theta.sin()).abs() < 1e-3 * k,
                "{deg}: {f}"
            );
        }
        let f = w.triangle_force(w.velocity, plate(45f32.to_radians()), STILL);
        assert!((f.x - f.y).abs() < 1e-3 * f.x, "45°: lift = drag, {f}");
    }

    #[test]
    fn edge_on_plate_feels_only_skin_friction_and_co_moving_plate_nothing() {
        let w = Wind {
            velocity: Vec3::new(0.0, 0.0, 8.0),
            ..Wind::default()
        };
        // The flow (along z) lies in the plate (normal along x).
        let f = w.triangle_force(w.velocity, plate(0.0), STILL);
        let expected = 0.5 * 1.2 * 0.02 * 0.5 * 64.0;
        assert!((f.z - expected).abs() < 1e-4 && f.x.abs() < 1e-5, "{f}");
        let moving = [w.velocity; 3];
        assert_eq!(w.triangle_force(w.velocity, plate(0.3), moving), Vec3::ZERO);
    }

    #[test]
    fn gusts_are_bounded_with_the_mean_wind() {
        let w = Wind {
            velocity: Vec3::new(5.0, 0.0, 0.0),
            gust: 0.3,
            gust_period_s: 2.0,
            ..Wind::default()
        };
        let n = 20_000;
        let mut sum = 0.0f64;
        for i in 0..n {
            let t = 200.0 * f64::from(i) / f64::from(n);
            let v = w.velocity_at(t);
            assert!(v.x >= 5.0 * 0.7 - 1e-4 && v.x <= 5.0 * 1.3 + 1e-4);
            assert_eq!(v.y, 0.0);
            sum += f64::from(v.x);
        }
        assert!(
            (sum / f64::from(n) - 5.0).abs() < 0.02,
            "{}",
            sum / f64::from(n)
        );
        let steady = Wind { gust: 0.0, ..w };
        assert_eq!(steady.velocity_at(1.234), w.velocity);
    }

    #[test]
    fn vertex_forces_sum_to_the_triangle_forces() {
        let w = wind(Vec3::new(3.0, -1.0, 2.0));
        let x = [
            Vec3::ZERO,
            Vec3::X,
            Vec3::new(0.0, 0.2, 1.0),
            Vec3::new(1.0, 0.5, 1.0),
        ];
        let v = [Vec3::ZERO, Vec3::Y, Vec3::ZERO, Vec3::NEG_X];
        let tris = [[0, 1, 2], [1, 3, 2]];
        let mut out = [Vec3::ZERO; 4];
        w.add_forces(0.0, &x, &v, &tris, &mut out);
        let total: Vec3 = out.iter().sum();
        let direct: Vec3 = tris
            .iter()
            .map(|t| {
                let [i, j, k] = t.map(|i| i as usize);
                w.triangle_force(w.velocity, [x[i], x[j], x[k]], [v[i], v[j], v[k]])
            })
            .sum();
        assert!((total - direct).length() < 1e-5, "{total} vs {direct}");
    }
}

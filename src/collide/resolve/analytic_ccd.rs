//! Continuous collision detection of cloth vertices against the exact surface of the curved
//! analytic colliders (spheres, capsules), in the CCD rounds instead of their tessellations
//! (`docs/methods/collision-detection.md`, "Curved colliders exactly").
#![deny(unsafe_code)]

use glam::DVec3;

use super::*;
use crate::collide::shapes::Pose;
use crate::linalg::reduce::sum_chunks_mut;

/// Bisection steps of the first-contact time (2⁻⁴⁰ of the substep).
const ROOT_STEPS: u32 = 40;
/// Golden-section steps of the closest approach along a vertex's path.
const MIN_STEPS: u32 = 40;

impl ClothCollision {
    /// The separation the CCD rounds keep between a cloth vertex and the exact surface of a
    /// sphere or capsule of radius `r`: the CCD minimum separation plus the deepest a face of
    /// the cloth (longest edge `L`, stretched by 10 %) whose vertices are that far out can dip
    /// into the surface, `(1.1 L)² / (6 r)`, so that no edge or face of the cloth crosses the
    /// surface (or the tessellation inside it) while its vertices keep out (derivation in
    /// `docs/methods/collision-detection.md`, "Curved colliders exactly").
    pub(super) fn analytic_separation(&self, r: f32, s_min: f32) -> f32 {
        let l = 1.1 * self.longest_rest_edge;
        s_min + l * l / (6.0 * r)
    }

    /// One pass of vertex CCD against the exact surface of every curved collider this cloth
    /// meets through it ([`ClothCollision::meets_exact_surface`]), placed at `t0` seconds into
    /// its substep: every free cloth vertex marked `dirty` whose path x^n → x^n + h v, relative
    /// to the collider's rigid motion over the substep, comes closer to the surface than the
    /// separation `s` of [`ClothCollision::analytic_separation`] gets a velocity change along
    /// the surface normal that ends it at `s` (the minimum-separation target of Bridson et al.
    /// 2002 §6.4 against a body of infinite mass). Returns the number of hits.
    ///
    /// The relative path is the vertex's position in the collider's frame, interpolated linearly
    /// between the start pose and the end pose (exact for a translating collider; for a spinning
    /// one, within the rotation's chord over a substep). Its distance to the shape's core (the
    /// centre, or the capsule's axis segment) is convex along that segment, so the first time
    /// it comes within `r + s` is one bisection after the closest approach is bracketed.
    pub(super) fn analytic_ccd(
        &mut self,
        colliders: &[ColliderView],
        t0: f32,
        settings: &CollisionSettings,
        h: f32,
        s_min: f32,
    ) -> u32 {
        let mut hits = 0;
        for col in colliders {
            if !self.meets_exact_surface(&col.shape, settings) {
                continue;
            }
            let (r, half_length) = match col.shape {
                Shape::Sphere { radius } => (radius, 0.0),
                Shape::Capsule {
                    radius,
                    half_length,
                } => (radius, half_length),
                _ => continue,
            };
            let start = if t0 > 0.0 {
                col.motion.advance(&col.pose, t0)
            } else {
                col.pose
            };
            let end = col.motion.advance(&start, h);
            let sep = self.analytic_separation(r, s_min);
            let reach = f64::from(r + sep);
            let core = Core {
                half_length: f64::from(half_length),
            };
            // Each vertex's test and velocity change read and write that vertex alone, so the
            // vertices run in fixed chunks, in parallel for many, with the serial loop's result.
            let n = self.n;
            let (x0, dirty, inv_mass) = (&self.x0, &self.dirty, &self.inv_mass);
            let outputs = (&mut self.v[..n], &mut self.touched[..n]);
            let found = sum_chunks_mut(outputs, |first, (v, touched)| {
                let mut hits = 0u32;
                for (k, (vi, ti)) in v.iter_mut().zip(touched.iter_mut()).enumerate() {
                    let i = first + k;
                    let w = inv_mass[i];
                    if !dirty[i] || w.is_nan() || w <= 0.0 {
                        continue;
                    }
                    let x = x0[i];
                    let q0 = local(&start, x);
                    let q1 = local(&end, x + h * *vi);
                    let Some(t) = core.first_within(q0, q1, reach) else {
                        continue;
                    };
                    hits += 1;
                    *ti = true;
                    // Normal at the contact, in the world; the surface point moves with the body.
                    let qt = q0.lerp(q1, t);
                    let d = qt - core.closest(qt);
                    let n_local = if d.length_squared() > 0.0 {
                        d.normalize()
                    } else {
                        DVec3::Y
                    };
                    let normal = (start.rotation * n_local.as_vec3()).normalize();
                    let gap0 = (core.distance(q0) - f64::from(r)) as f32;
                    let contact = x - gap0 * normal;
                    let vs = col.motion.velocity_at(start.translation, contact);
                    let vn = (*vi - vs).dot(normal);
                    let target = (sep - gap0) / h;
                    if vn < target {
                        *vi += (target - vn) * normal;
                    }
                }
                f64::from(hits)
            });
            // A count of vertices, summed exactly in `f64`.
            hits += found as u32;
        }
        hits
    }
}

/// The local position of world point `p` for a body at `pose`, in f64.
fn local(pose: &Pose, p: Vec3) -> DVec3 {
    pose.inverse_transform_point(p).as_dvec3()
}

/// The core of a sphere (a point, `half_length` 0) or a capsule (its axis segment along local
/// y): the shape is the points within its radius of the core.
struct Core {
    half_length: f64,
}

impl Core {
    fn closest(&self, q: DVec3) -> DVec3 {
        DVec3::new(0.0, q.y.clamp(-self.half_length, self.half_length), 0.0)
    }

    fn distance(&self, q: DVec3) -> f64 {
        (q - self.closest(q)).length()
    }

    /// The first `t ∈ [0, 1]` at which `q0 + t (q1 − q0)` comes within `reach` of the core,
    /// if any: 0 when it starts within and moves closer. The distance is convex in `t` (the
    /// distance to a convex set along a line), so the closest approach is found by golden
    /// section and the crossing before it by bisection.
    fn first_within(&self, q0: DVec3, q1: DVec3, reach: f64) -> Option<f64> {
        let f = |t: f64| self.distance(q0.lerp(q1, t));
        let f0 = f(0.0);
        let travel = (q1 - q0).length();
        // 1-Lipschitz: a path that starts farther than its length cannot come within reach.
        if f0 - travel > reach {
            return None;
        }
        if f0 <= reach {
            // Within already: a hit when it moves closer.
            let inward = (q0 - self.closest(q0)).dot(q1 - q0) < 0.0;
            return inward.then_some(0.0);
        }
        let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
        let best = if f(1.0) <= reach {
            1.0
        } else {
            let g = 0.5 * (5.0_f64.sqrt() - 1.0);
            let (mut a, mut b) = (0.0_f64, 1.0_f64);
            for _ in 0..MIN_STEPS {
                let c = b - g * (b - a);
                let d = a + g * (b - a);
                if f(c) < f(d) {
                    b = d;
                } else {
                    a = c;
                }
            }
            let t = 0.5 * (a + b);
            if f(t) > reach {
                return None;
            }
            t
        };
        hi = hi.min(best);
        for _ in 0..ROOT_STEPS {
            let mid = 0.5 * (lo + hi);
            if f(mid) <= reach {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(hi)
    }
}

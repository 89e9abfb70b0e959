//! Analytic collider shapes (plane, sphere, capsule, box) and their rigid motion.
//!
//! A shape is defined in its local frame; a [`Pose`] places it in the world.
//! Queries return the signed distance from the surface (positive outside) and
//! the outward unit normal, which is what the Baraff–Witkin contact filter needs
//! (`docs/methods/baraff-witkin.md` §2.9): the constrained direction is the normal, and the
//! prescribed normal velocity is the surface's velocity at the contact point.
#![deny(unsafe_code)]

use glam::{Quat, Vec3};

/// A collider's shape in its local frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    /// The half-space below the plane through the local origin with local
    /// normal +y (the solid side is y < 0).
    Plane,
    /// A ball of `radius` (m) about the local origin.
    Sphere {
        /// Radius (m).
        radius: f32,
    },
    /// Points within `radius` of the segment from −`half_length` to
    /// +`half_length` along the local y axis.
    Capsule {
        /// Radius (m).
        radius: f32,
        /// Half the length of the axis segment (m).
        half_length: f32,
    },
    /// An axis-aligned box (in the local frame) with the given half extents (m).
    Cuboid {
        /// Half extents along local x, y, z (m).
        half_extents: Vec3,
    },
}

/// A rigid placement: local point p maps to `rotation * p + translation`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    /// World position of the local origin (m).
    pub translation: Vec3,
    /// Orientation (unit quaternion).
    pub rotation: Quat,
}

impl Pose {
    /// The identity placement.
    pub const IDENTITY: Pose = Pose {
        translation: Vec3::ZERO,
        rotation: Quat::IDENTITY,
    };

    /// World position of a local point.
    #[must_use]
    pub fn transform_point(&self, p: Vec3) -> Vec3 {
        self.rotation * p + self.translation
    }

    /// Local position of a world point.
    #[must_use]
    pub fn inverse_transform_point(&self, p: Vec3) -> Vec3 {
        self.rotation.inverse() * (p - self.translation)
    }
}

/// Prescribed rigid motion: constant linear velocity of the local origin and
/// constant angular velocity about it (world frame).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Motion {
    /// Velocity of the local origin (m/s).
    pub linear_velocity: Vec3,
    /// Angular velocity (rad/s), axis times rate, about the local origin.
    pub angular_velocity: Vec3,
}

impl Motion {
    /// True when the collider never moves.
    #[must_use]
    pub fn is_static(&self) -> bool {
        self.linear_velocity == Vec3::ZERO && self.angular_velocity == Vec3::ZERO
    }

    /// The pose after moving `pose` for `dt` seconds (exact for constant velocities).
    #[must_use]
    pub fn advance(&self, pose: &Pose, dt: f32) -> Pose {
        let w = self.angular_velocity * dt;
        let spin = if w.length_squared() > 0.0 {
            Quat::from_scaled_axis(w)
        } else {
            Quat::IDENTITY
        };
        Pose {
            translation: pose.translation + self.linear_velocity * dt,
            rotation: (spin * pose.rotation).normalize(),
        }
    }

    /// Velocity of the world point `p` of a body whose origin is at `origin`.
    #[must_use]
    pub fn velocity_at(&self, origin: Vec3, p: Vec3) -> Vec3 {
        self.linear_velocity + self.angular_velocity.cross(p - origin)
    }
}

/// An analytic collider during one substep: what the contact filters of the
/// solve (`integrate::contact`) and the collision stage's vertex–surface
/// proximity ([`super::resolve`]) see of it.
#[derive(Clone, Copy, Debug)]
pub struct ColliderView {
    /// Shape in its local frame.
    pub shape: Shape,
    /// Pose at the start of the substep.
    pub pose: Pose,
    /// Rigid motion over the substep.
    pub motion: Motion,
    /// Coulomb friction coefficient of this collider.
    pub friction: f32,
}

/// Result of a signed-distance query.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SurfacePoint {
    /// Signed distance to the surface (m), negative inside the solid.
    pub distance: f32,
    /// Outward unit normal of the surface nearest the query point.
    pub normal: Vec3,
}

impl Shape {
    /// True for the shapes the collision stage's repulsion meets through their
    /// exact surface, vertex by vertex ([`super::resolve`], vertex–surface
    /// proximity), rather than through their tessellation: the sphere and the
    /// capsule. Their tessellations are inexact (they lie inside the surface
    /// by the chord gap, up to 0.34 mm for a 0.3 m sphere, and a resting cloth's
    /// edges sag onto their facets) and large (5,120 triangles for a sphere),
    /// while a cloth edge or face cannot come much closer to them than its
    /// vertices: at most `L²/(8r)` closer for an edge of length `L`.
    ///
    /// False for the plane and the box, whose tessellations are exact (the
    /// plane's within its 20 m square) and small, so their repulsion stays
    /// with the tessellation. For a box, vertices alone would also miss its
    /// edges and corners poking into cloth faces. For a plane, vertices alone
    /// would be exact, but measured on pile-65 the vertex–surface repulsion
    /// (with or without its friction) ended over the strain limit in frames
    /// where the tessellation's did not (README, Performance).
    #[must_use]
    pub fn repels_from_surface(&self) -> bool {
        matches!(self, Shape::Sphere { .. } | Shape::Capsule { .. })
    }

    /// Radius of a sphere or capsule (its smallest radius of curvature); `None` for the
    /// other shapes.
    #[must_use]
    pub fn curvature_radius(&self) -> Option<f32> {
        match *self {
            Shape::Sphere { radius } | Shape::Capsule { radius, .. } => Some(radius),
            _ => None,
        }
    }

    /// Radius of the smallest ball about the local origin holding the shape: a lower bound
    /// `|q| − r` on the signed distance of every local point `q`; infinite for the plane.
    #[must_use]
    pub fn bounding_radius(&self) -> f32 {
        match *self {
            Shape::Plane => f32::INFINITY,
            Shape::Sphere { radius } => radius,
            Shape::Capsule {
                radius,
                half_length,
            } => radius + half_length,
            Shape::Cuboid { half_extents } => half_extents.length(),
        }
    }

    /// True when a point at `x` moving at `v` certainly stays farther than `reach` from the
    /// shape placed at `pose` and moving by `motion` over a substep of length `h`, by every test
    /// that compares [`Shape::surface_point`]'s distance, plus `h` times the approach speed
    /// along its normal, with `reach`: so such a test may be skipped with the same result.
    ///
    /// With `s = |x − t|` (the same rounded `x − t` that `surface_point` rotates) and
    /// [`Shape::bounding_radius`] `r`, the distance is at least `s − r`. The surface's velocity
    /// at any point `c` within `s` of `t` (the point itself, or a surface point when `s ≥ r`) is
    /// `v_lin + ω × (c − t)`, so the approach speed is at most `|v − v_lin| + |ω| s`, and the
    /// predicted distance at least `s − r − h(|v − v_lin| + |ω| s)`, which must clear `reach`
    /// by [`REACH_MARGIN`] of the magnitudes involved. A plane (infinite radius), a rotation far
    /// from unit or any NaN never passes: such points take the exact test.
    #[inline]
    #[must_use]
    pub fn out_of_reach(
        &self,
        pose: &Pose,
        motion: &Motion,
        h: f32,
        x: Vec3,
        v: Vec3,
        reach: f32,
    ) -> bool {
        let rotation_norm2 = pose.rotation.length_squared();
        if (rotation_norm2 - 1.0).abs() > UNIT_ROTATION_SLACK {
            return false;
        }
        let s = (x - pose.translation).length();
        let r = self.bounding_radius();
        let travel =
            h * ((v - motion.linear_velocity).length() + motion.angular_velocity.length() * s);
        s - r - travel - REACH_MARGIN * (s + r + travel) >= reach + REACH_MARGIN * reach.abs()
    }

    /// Signed distance and outward normal at world point `p` for the shape
    /// placed at `pose`.
    #[must_use]
    pub fn surface_point(&self, pose: &Pose, p: Vec3) -> SurfacePoint {
        let q = pose.inverse_transform_point(p);
        let (distance, local_normal) = self.local_surface_point(q);
        SurfacePoint {
            distance,
            normal: pose.rotation * local_normal,
        }
    }

    fn local_surface_point(&self, q: Vec3) -> (f32, Vec3) {
        match *self {
            Shape::Plane => (q.y, Vec3::Y),
            Shape::Sphere { radius } => radial(q, radius),
            Shape::Capsule {
                radius,
                half_length,
            } => {
                let axis = Vec3::new(0.0, q.y.clamp(-half_length, half_length), 0.0);
                radial(q - axis, radius)
            }
            Shape::Cuboid { half_extents } => cuboid_surface(q, half_extents),
        }
    }
}

/// Relative margin of [`Shape::out_of_reach`]: covers the rounding of `surface_point`, of the
/// prediction and of the bound itself (each a few units in the last place, about 1e-7
/// relative) and a rotation whose squared norm is off 1 by up to [`UNIT_ROTATION_SLACK`].
const REACH_MARGIN: f32 = 1e-4;

/// How far from 1 a pose's squared quaternion norm may be for [`Shape::out_of_reach`] to
/// bound it.
const UNIT_ROTATION_SLACK: f32 = 1e-5;

/// Distance and normal for a ball of `radius` about the origin; at the exact
/// centre the normal is +y (any unit vector is valid there).
fn radial(d: Vec3, radius: f32) -> (f32, Vec3) {
    let len = d.length();
    let normal = if len > 0.0 { d / len } else { Vec3::Y };
    (len - radius, normal)
}

/// Signed distance of an axis-aligned box; inside, the normal is the axis of
/// the nearest face (ties resolved x, then y, then z).
fn cuboid_surface(q: Vec3, h: Vec3) -> (f32, Vec3) {
    let d = q.abs() - h;
    let outside = d.max(Vec3::ZERO);
    if outside.length_squared() > 0.0 {
        let len = outside.length();
        let n = (outside * q.signum()) / len;
        (len, n)
    } else {
        let (dist, axis) = if d.x >= d.y && d.x >= d.z {
            (d.x, Vec3::X)
        } else if d.y >= d.z {
            (d.y, Vec3::Y)
        } else {
            (d.z, Vec3::Z)
        };
        (dist, axis * q.signum())
    }
}

/// The bounded shapes the reach-bound tests place on [`reach_lattice`].
#[cfg(test)]
pub(crate) const REACH_TEST_SHAPES: [Shape; 3] = [
    Shape::Sphere { radius: 0.3 },
    Shape::Capsule {
        radius: 0.1,
        half_length: 0.4,
    },
    Shape::Cuboid {
        half_extents: Vec3::new(0.2, 0.05, 0.3),
    },
];

/// Visits points with velocities around `shape`, rotated and moving, at distances from its
/// centre straddling the bound of [`Shape::out_of_reach`] for `reach` over a substep `h`: the
/// tests of the rules that bound lets their callers skip.
#[cfg(test)]
pub(crate) fn reach_lattice(
    shape: Shape,
    h: f32,
    reach: f32,
    mut visit: impl FnMut(&Pose, &Motion, Vec3, Vec3),
) {
    let pose = Pose {
        translation: Vec3::new(0.1, 0.4, -0.2),
        rotation: Quat::from_euler(glam::EulerRot::XYZ, 0.3, 0.7, -0.4),
    };
    let motion = Motion {
        linear_velocity: Vec3::new(0.5, -0.2, 0.1),
        angular_velocity: Vec3::new(1.0, 2.0, -0.5),
    };
    let r = shape.bounding_radius().min(1.0);
    for i in 0..2000 {
        let k = i as f32;
        let dir = Vec3::new((k * 0.37).sin(), (k * 0.71).cos(), (k * 0.13).sin()).normalize();
        let speed = 3.0 * (k * 0.011).fract();
        let v = speed * Vec3::new((k * 0.53).cos(), (k * 0.29).sin(), 1.0).normalize();
        let travel = h * (speed + 0.6 + motion.angular_velocity.length() * (r + 0.1));
        let x = pose.translation + (r + reach + 2.0 * travel * (k * 0.0007).fract()) * dir;
        visit(&pose, &motion, x, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn near(a: f32, b: f32) -> bool {
        (a - b).abs() < 1e-5
    }

    /// Wherever [`Shape::out_of_reach`] passes, the repulsion's exact test (distance at least
    /// η and no arrival within η, the surface's velocity taken at the nearest surface point)
    /// rejects the point too: rotated, moving shapes, points straddling the bound.
    #[test]
    fn out_of_reach_passes_only_points_the_repulsion_test_rejects() {
        let (h, eta): (f32, f32) = (1.0 / 120.0, 0.004);
        let mut passed = 0;
        for shape in REACH_TEST_SHAPES {
            reach_lattice(shape, h, eta, |pose, motion, x, v| {
                if !shape.out_of_reach(pose, motion, h, x, v, eta) {
                    return;
                }
                passed += 1;
                let sp = shape.surface_point(pose, x);
                let contact = x - sp.distance * sp.normal;
                let vs = motion.velocity_at(pose.translation, contact);
                let arrives = sp.distance + h * (v - vs).dot(sp.normal) < eta;
                assert!(sp.distance >= eta && !arrives, "{shape:?} {x} {v}");
            });
        }
        assert!(passed > 1000, "the lattice passed only {passed}");
    }

    #[test]
    fn sphere_distance_and_normal() {
        let pose = Pose {
            translation: Vec3::new(1.0, 2.0, 3.0),
            rotation: Quat::IDENTITY,
        };
        let s = Shape::Sphere { radius: 0.5 };
        let sp = s.surface_point(&pose, Vec3::new(1.0, 3.0, 3.0));
        assert!(near(sp.distance, 0.5));
        assert!(sp.normal.abs_diff_eq(Vec3::Y, 1e-6));
        let inside = s.surface_point(&pose, Vec3::new(1.25, 2.0, 3.0));
        assert!(near(inside.distance, -0.25));
    }

    #[test]
    fn rotated_plane_and_capsule() {
        let pose = Pose {
            translation: Vec3::ZERO,
            rotation: Quat::from_rotation_z(std::f32::consts::FRAC_PI_2),
        };
        // Local +y maps to world -x.
        let sp = Shape::Plane.surface_point(&pose, Vec3::new(-2.0, 5.0, 1.0));
        assert!(near(sp.distance, 2.0));
        assert!(sp.normal.abs_diff_eq(-Vec3::X, 1e-6));
        let c = Shape::Capsule {
            radius: 0.1,
            half_length: 1.0,
        };
        // The capsule axis is along world x now; a point beyond the end cap.
        let end = c.surface_point(&pose, Vec3::new(-1.5, 0.0, 0.0));
        assert!(near(end.distance, 0.4));
        assert!(end.normal.abs_diff_eq(-Vec3::X, 1e-6));
        let side = c.surface_point(&pose, Vec3::new(0.3, 0.0, 0.2));
        assert!(near(side.distance, 0.1));
        assert!(side.normal.abs_diff_eq(Vec3::Z, 1e-6));
    }

    #[test]
    fn cuboid_inside_outside_corner() {
        let b = Shape::Cuboid {
            half_extents: Vec3::new(1.0, 0.5, 0.25),
        };
        let face = b.surface_point(&Pose::IDENTITY, Vec3::new(0.2, 0.4, 0.0));
        assert!(near(face.distance, -0.1));
        assert_eq!(face.normal, Vec3::Y);
        let corner = b.surface_point(&Pose::IDENTITY, Vec3::new(2.0, 1.5, 0.0));
        assert!(near(corner.distance, 2.0f32.sqrt()));
        assert!(
            corner
                .normal
                .abs_diff_eq(Vec3::new(1.0, 1.0, 0.0).normalize(), 1e-6)
        );
    }

    #[test]
    fn motion_is_exact_for_constant_velocity() {
        let m = Motion {
            linear_velocity: Vec3::new(1.0, 0.0, 0.0),
            angular_velocity: Vec3::new(0.0, 1.0, 0.0),
        };
        let p0 = Pose::IDENTITY;
        let a = m.advance(&m.advance(&p0, 0.25), 0.25);
        let b = m.advance(&p0, 0.5);
        assert!(a.translation.abs_diff_eq(b.translation, 1e-6));
        assert!(a.rotation.abs_diff_eq(b.rotation, 1e-6));
        let v = m.velocity_at(Vec3::ZERO, Vec3::new(1.0, 0.0, 0.0));
        assert!(v.abs_diff_eq(Vec3::new(1.0, 0.0, -1.0), 1e-6));
    }
}

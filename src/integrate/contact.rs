//! Pins and analytic-collider contacts as Baraff–Witkin velocity filters.
//!
//! Every vertex gets a filter S_i (`docs/methods/baraff-witkin.md` (2.15)), a prescribed
//! velocity change z_i in its constrained directions, and a position offset
//! y_i (`docs/methods/baraff-witkin.md` (2.17)):
//!
//! - a pinned vertex is fully constrained: S_i = 0 and z_i takes it to its pin
//!   target at the end of the substep;
//! - a vertex touching a collider (within the cloth thickness η, or predicted
//!   to come within η during the substep at its current velocity) is
//!   constrained along the outward normal n: its normal velocity becomes the
//!   surface's, and y_i = (η − d) n moves it onto the contact offset. Two
//!   colliders give two directions (the second orthogonalised against the
//!   first); a third makes the vertex follow the surfaces fully.
//!
//! **Engage / release** (`docs/methods/baraff-witkin.md` §2.9). A vertex already in
//! contact stays engaged while it is within η + a small band of the surface, so
//! a cloth resting on a solid does not chatter in and out of contact. After the
//! solve the constraint impulse λ_i = (I − S_i)(A Δv − b)_i is inspected: if
//! λ_i·n < 0 the constraint was pulling the cloth onto the solid, so the
//! contact is released and not re-engaged next substep unless geometry demands
//! it (a predicted approach within η).
//!
//! **Friction**: the velocity-level Coulomb correction of Bridson 2002
//! (`docs/methods/bridson-collisions.md` §3.8) on the impulse the solve really needed. After the
//! solve, a contact's normal impulse λ_n = λ_i·n bounds the tangential velocity
//! change it may cause: the relative tangential velocity v_t is reduced by
//! min(|v_t|, μ λ_n / m_i). A vertex resting on a surface whose tangential
//! driving impulse per substep stays below μ λ_n is stopped every substep
//! (static friction); otherwise it slides with the kinetic deceleration μ λ_n /
//! (m_i h). This is a choice: an earlier version kept a per-vertex stick/slip
//! state (stick = fully constrained filter) and a kinetic force inside the
//! solve; on a cloth, vertices that stick hold their slipping neighbours through
//! the stiff stretch springs, the neighbours reverse and stick in turn, and a
//! cloth on an incline with μ < tan α never slid (`tests/friction.rs`). The
//! stateless correction decides every vertex on the same substep's impulses, so
//! the whole cloth slides or sticks together.
//!
//! A pair's coefficient is √(μ_cloth μ_collider). Vertices touching two or
//! more surfaces at once are wedged: they follow the surfaces' normal motion and
//! get no friction (documented limitation).
#![deny(unsafe_code)]

use glam::Vec3;

pub use crate::collide::shapes::ColliderView;
use crate::linalg::{Filter, reduce};

/// A pinned vertex and where it must be at the end of the substep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PinTarget {
    /// Vertex index.
    pub vertex: u32,
    /// Position at the end of the substep (m).
    pub target: Vec3,
    /// Velocity of the target (m/s): the pipeline moves `target` by
    /// `velocity * h` at the start of every substep of length `h`.
    pub velocity: Vec3,
}

/// Largest number of collider contacts recorded per vertex.
const MAX_CONTACTS: usize = 2;

/// One vertex–collider contact of the current substep.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Contact {
    collider: u32,
    normal: Vec3,
    surface_velocity: Vec3,
}

/// Filters, prescribed velocity changes and position offsets for one cloth,
/// rebuilt every substep; buffers sized once at cloth creation.
#[derive(Clone, Debug)]
pub struct Constraints {
    filters: Vec<Filter>,
    z: Vec<Vec3>,
    y: Vec<Vec3>,
    contacts: Vec<[Contact; MAX_CONTACTS]>,
    contact_count: Vec<u8>,
    /// Persistent across substeps: the vertex was in (unreleased) contact.
    engaged_before: Vec<bool>,
    active: u32,
    released: u32,
}

impl Constraints {
    /// Buffers for `n` vertices, all free.
    #[must_use]
    pub fn new(n: usize) -> Self {
        Self {
            filters: vec![Filter::Free; n],
            z: vec![Vec3::ZERO; n],
            y: vec![Vec3::ZERO; n],
            contacts: vec![[Contact::default(); MAX_CONTACTS]; n],
            contact_count: vec![0; n],
            engaged_before: vec![false; n],
            active: 0,
            released: 0,
        }
    }

    /// Per-vertex filters S_i.
    #[must_use]
    pub fn filters(&self) -> &[Filter] {
        &self.filters
    }

    /// Prescribed velocity changes z_i (in the constrained directions).
    #[must_use]
    pub fn z(&self) -> &[Vec3] {
        &self.z
    }

    /// Position offsets y_i (`docs/methods/baraff-witkin.md` (2.17)).
    #[must_use]
    pub fn y(&self) -> &[Vec3] {
        &self.y
    }

    /// Vertex–collider contacts of the current substep.
    #[must_use]
    pub fn active_contacts(&self) -> u32 {
        self.active
    }

    /// Contacts released after the last solve.
    #[must_use]
    pub fn released_contacts(&self) -> u32 {
        self.released
    }

    /// Forgets contact history (e.g. after a teleport).
    pub fn reset_history(&mut self) {
        self.engaged_before.fill(false);
    }

    /// The contact history: per vertex, whether it was in unreleased contact after the last
    /// substep (what one substep leaves for the next).
    #[must_use]
    pub fn history(&self) -> &[bool] {
        &self.engaged_before
    }

    /// Puts back a contact history read by [`Constraints::history`].
    ///
    /// # Panics
    /// If `engaged` does not have one entry per vertex.
    pub fn restore_history(&mut self, engaged: &[bool]) {
        self.engaged_before.copy_from_slice(engaged);
    }

    /// Builds S, z, y and the kinetic friction forces for a substep of length
    /// `h` from the state at its start (`x`, `v`), the pins and the colliders.
    /// `thickness` is η (m). Friction is applied after the solve
    /// ([`Constraints::resolve_after_solve`]).
    ///
    /// Every vertex is decided on its own ([`vertex_constraint`]), so the vertices run in
    /// the fixed chunks of [`reduce::sum_chunks_mut`]; the active count is an integer sum,
    /// exact in any order. A collider a vertex certainly cannot reach this substep is skipped
    /// before its exact test by a bound with a margin ([`out_of_reach`]): the same result,
    /// without the rotations, square root and divide of `surface_point` for the vertices far
    /// from it.
    ///
    /// # Panics
    /// If `x` or `v` does not have one row per vertex of the buffers.
    pub fn build(
        &mut self,
        h: f32,
        x: &[Vec3],
        v: &[Vec3],
        pins: &[PinTarget],
        colliders: &[ColliderView],
        thickness: f32,
    ) {
        let n = self.filters.len();
        assert!(
            x.len() == n && v.len() == n,
            "Constraints::build: {} positions and {} velocities for {n} vertices",
            x.len(),
            v.len()
        );
        let engaged_before = &self.engaged_before[..];
        let rows = (
            &mut self.filters[..],
            (
                &mut self.z[..],
                (
                    &mut self.y[..],
                    (&mut self.contacts[..], &mut self.contact_count[..]),
                ),
            ),
        );
        let active = reduce::sum_chunks_mut(
            rows,
            |first, (filters, (z, (y, (contacts, contact_count))))| {
                let mut active = 0u32;
                for k in 0..filters.len() {
                    let i = first + k;
                    let c =
                        vertex_constraint(h, x[i], v[i], engaged_before[i], colliders, thickness);
                    // Stored only when the bits change: most vertices keep theirs from one
                    // substep to the next, and a store to a line the solve left shared with
                    // the other core costs an invalidation where a load does not
                    // (docs/methods/threading.md, "Stores to shared lines").
                    if !same_filter(&filters[k], &c.filter) {
                        filters[k] = c.filter;
                    }
                    if !same_bits(z[k], c.z) {
                        z[k] = c.z;
                    }
                    if !same_bits(y[k], c.y) {
                        y[k] = c.y;
                    }
                    if contact_count[k] != c.recorded {
                        contact_count[k] = c.recorded;
                    }
                    if c.count > 0 {
                        contacts[k] = c.contacts;
                        active += c.count;
                    }
                }
                f64::from(active)
            },
        );
        // A sum of at most `n · colliders` small integers: exact in `f64`.
        self.active = active as u32;
        for pin in pins {
            let i = pin.vertex as usize;
            self.filters[i] = Filter::Fixed;
            self.z[i] = (pin.target - x[i]) / h - v[i];
            self.y[i] = Vec3::ZERO;
            self.contact_count[i] = 0;
        }
    }

    /// After the solve (velocities `v_new` = v1, constraint impulses `lambda`,
    /// masses `mass`): releases contacts whose impulse pulls (λ·n < 0), and
    /// applies the friction rules of the module doc, choosing each contact's
    /// friction state for the next substep.
    pub fn resolve_after_solve(
        &mut self,
        lambda: &[Vec3],
        v_new: &mut [Vec3],
        mass: &[f32],
        colliders: &[ColliderView],
        cloth_friction: f32,
    ) {
        self.released = 0;
        for i in 0..v_new.len() {
            let count = self.contact_count[i] as usize;
            if count == 0 {
                self.engaged_before[i] = false;
                continue;
            }
            let c = self.contacts[i][0];
            let n = c.normal;
            let jn = lambda[i].dot(n);
            if jn < 0.0 {
                self.released += 1;
                self.engaged_before[i] = false;
                continue;
            }
            self.engaged_before[i] = true;
            if count > 1 {
                // Wedged: no friction (module doc).
                continue;
            }
            let mu = combine_friction(cloth_friction, colliders[c.collider as usize].friction);
            let vrel = v_new[i] - c.surface_velocity;
            let vt = vrel - vrel.dot(n) * n;
            let vt_len = vt.length();
            let dv_max = mu * jn / mass[i];
            if vt_len <= dv_max {
                v_new[i] -= vt;
            } else {
                v_new[i] -= vt * (dv_max / vt_len);
            }
        }
    }
}

/// Whether `a` and `b` hold the same bits (unlike `==`, which equates `0.0` with `-0.0`).
#[inline(always)]
fn same_bits(a: Vec3, b: Vec3) -> bool {
    a.to_array().map(f32::to_bits) == b.to_array().map(f32::to_bits)
}

/// Whether two filters are the same, bit for bit.
#[inline(always)]
fn same_filter(a: &Filter, b: &Filter) -> bool {
    match (a, b) {
        (Filter::Free, Filter::Free) | (Filter::Fixed, Filter::Fixed) => true,
        (Filter::OneDirection(p), Filter::OneDirection(q)) => same_bits(*p, *q),
        (Filter::TwoDirections(p0, p1), Filter::TwoDirections(q0, q1)) => {
            same_bits(*p0, *q0) && same_bits(*p1, *q1)
        }
        _ => false,
    }
}

/// One vertex's filter, prescribed velocity change, offset and contacts for a substep.
struct VertexConstraint {
    filter: Filter,
    z: Vec3,
    y: Vec3,
    /// Colliders within reach, counted beyond [`MAX_CONTACTS`].
    count: u32,
    /// Contacts kept for friction after the solve: `contacts[..recorded]`.
    recorded: u8,
    contacts: [Contact; MAX_CONTACTS],
}

/// The constraint of one vertex at `x` with velocity `v` (module doc): a contact with
/// every collider it touches or is predicted to reach within η during the substep, or stays
/// engaged with; the filter and `z` from the first one or two, `y` from the deepest.
///
/// Inlined into the chunk loop of [`Constraints::build`]: called once per vertex, most
/// vertices touch nothing, and out of line it built and copied its whole result.
#[inline(always)]
fn vertex_constraint(
    h: f32,
    x: Vec3,
    v: Vec3,
    engaged_before: bool,
    colliders: &[ColliderView],
    thickness: f32,
) -> VertexConstraint {
    let band = 0.5 * thickness;
    let mut out = VertexConstraint {
        filter: Filter::Free,
        z: Vec3::ZERO,
        y: Vec3::ZERO,
        count: 0,
        recorded: 0,
        contacts: [Contact::default(); MAX_CONTACTS],
    };
    let mut count = 0usize;
    // (η − d) of the deepest contact: positive pushes out to the offset,
    // negative brings a vertex predicted to arrive down onto it.
    let mut deepest = f32::MIN;
    let reach = thickness.max(thickness + band);
    for (c, col) in colliders.iter().enumerate() {
        if out_of_reach(col, h, x, v, reach) {
            continue;
        }
        let sp = col.shape.surface_point(&col.pose, x);
        let vs = col.motion.velocity_at(col.pose.translation, x);
        let approach = (v - vs).dot(sp.normal);
        let predicted = sp.distance + h * approach.min(0.0);
        let keep = engaged_before && sp.distance < thickness + band;
        if predicted < thickness || keep {
            if count < MAX_CONTACTS {
                out.contacts[count] = Contact {
                    collider: c as u32,
                    normal: sp.normal,
                    surface_velocity: vs,
                };
            }
            count += 1;
            deepest = deepest.max(thickness - sp.distance);
        }
    }
    if count == 0 {
        return out;
    }
    out.count = count as u32;
    out.recorded = count.min(MAX_CONTACTS) as u8;
    let c0 = out.contacts[0];
    let vrel0 = c0.surface_velocity - v;
    if count == 1 {
        let n = c0.normal;
        out.y = deepest * n;
        out.filter = Filter::OneDirection(n);
        out.z = vrel0.dot(n) * n;
    } else {
        let c1 = out.contacts[1];
        let p = c0.normal;
        let q = c1.normal - c1.normal.dot(p) * p;
        let ql = q.length();
        if count > MAX_CONTACTS || ql < 1e-3 {
            // Wedged between surfaces (or two nearly parallel normals
            // pointing the same way): follow the first surface fully.
            out.filter = if ql < 1e-3 && count <= MAX_CONTACTS {
                Filter::OneDirection(p)
            } else {
                Filter::Fixed
            };
            out.z = match out.filter {
                Filter::OneDirection(n) => vrel0.dot(n) * n,
                _ => vrel0,
            };
            out.y = deepest * p;
            if ql < 1e-3 {
                out.recorded = 1;
            }
        } else {
            let q = q / ql;
            let vrel1 = c1.surface_velocity - v;
            out.filter = Filter::TwoDirections(p, q);
            // Normal velocities of both surfaces, expressed in the
            // orthonormal pair (p, q): solve [1 0; n1·p n1·q] w = [vrel0·p; vrel1·n1].
            let wp = vrel0.dot(p);
            let n1 = c1.normal;
            let wq = (vrel1.dot(n1) - wp * n1.dot(p)) / n1.dot(q);
            out.z = wp * p + wq * q;
            out.y = deepest * p;
        }
    }
    out
}

/// True when collider `col` certainly takes no part in the vertex's constraint: neither
/// `predicted < η` nor `keep` of [`vertex_constraint`] can hold (`reach` the larger of η and
/// η + band), so the exact test may be skipped with the same result
/// ([`Shape::out_of_reach`](crate::collide::shapes::Shape::out_of_reach)).
#[inline]
fn out_of_reach(col: &ColliderView, h: f32, x: Vec3, v: Vec3, reach: f32) -> bool {
    col.shape
        .out_of_reach(&col.pose, &col.motion, h, x, v, reach)
}

/// One friction coefficient per pair from both sides: the geometric mean
/// √(μ_a μ_b), symmetric and 0 if either side is frictionless.
#[must_use]
pub fn combine_friction(a: f32, b: f32) -> f32 {
    (a.max(0.0) * b.max(0.0)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collide::shapes::{Motion, Pose, REACH_TEST_SHAPES, Shape, reach_lattice};

    fn ground(friction: f32) -> ColliderView {
        ColliderView {
            shape: Shape::Plane,
            pose: Pose::IDENTITY,
            motion: Motion::default(),
            friction,
        }
    }

    /// Wherever [`out_of_reach`] skips a collider, the exact test of [`vertex_constraint`]
    /// (prediction or engaged band) would not have taken it either: points and velocities on
    /// a lattice around every shape, rotated and moving, many of them just past the reach.
    #[test]
    fn out_of_reach_skips_only_colliders_the_exact_test_rejects() {
        let (h, thickness): (f32, f32) = (1.0 / 120.0, 0.004);
        let reach = thickness.max(1.5 * thickness);
        let mut skipped = 0;
        for shape in REACH_TEST_SHAPES.into_iter().chain([Shape::Plane]) {
            reach_lattice(shape, h, reach, |pose, motion, x, v| {
                let col = ColliderView {
                    shape,
                    pose: *pose,
                    motion: *motion,
                    friction: 0.3,
                };
                if !out_of_reach(&col, h, x, v, reach) {
                    return;
                }
                skipped += 1;
                let sp = shape.surface_point(pose, x);
                let vs = motion.velocity_at(pose.translation, x);
                let predicted = sp.distance + h * (v - vs).dot(sp.normal).min(0.0);
                assert!(
                    predicted >= thickness && sp.distance >= reach,
                    "{shape:?} {x} {v}"
                );
            });
        }
        assert!(skipped > 1000, "the lattice skipped only {skipped}");
    }

    #[test]
    fn falling_vertex_engages_before_it_penetrates() {
        let mut c = Constraints::new(2);
        let x = [Vec3::new(0.0, 0.011, 0.0), Vec3::new(1.0, 1.0, 0.0)];
        let v = [Vec3::new(0.0, -2.0, 0.0), Vec3::ZERO];
        c.build(0.01, &x, &v, &[], &[ground(0.0)], 0.005);
        assert_eq!(c.filters()[0], Filter::OneDirection(Vec3::Y));
        assert!(c.z()[0].abs_diff_eq(Vec3::new(0.0, 2.0, 0.0), 1e-6));
        // y moves it down to the contact offset: 0.011 - 0.006 = 0.005.
        assert!(c.y()[0].abs_diff_eq(Vec3::new(0.0, -0.006, 0.0), 1e-6));
        assert_eq!(c.filters()[1], Filter::Free);
        assert_eq!(c.active_contacts(), 1);
    }

    #[test]
    fn pins_override_contacts() {
        let mut c = Constraints::new(1);
        let x = [Vec3::new(0.0, 0.0, 0.0)];
        let v = [Vec3::new(1.0, 0.0, 0.0)];
        let pins = [PinTarget {
            vertex: 0,
            target: Vec3::new(0.0, 0.1, 0.0),
            velocity: Vec3::ZERO,
        }];
        c.build(0.1, &x, &v, &pins, &[ground(0.0)], 0.005);
        assert_eq!(c.filters()[0], Filter::Fixed);
        // v + z = (target - x) / h.
        assert!((v[0] + c.z()[0]).abs_diff_eq(Vec3::new(0.0, 1.0, 0.0), 1e-6));
    }

    #[test]
    fn pulling_contact_is_released_and_impact_friction_is_coulomb() {
        let mut c = Constraints::new(3);
        let x = [
            Vec3::new(0.0, 0.004, 0.0),
            Vec3::new(1.0, 0.004, 0.0),
            Vec3::new(2.0, 0.004, 0.0),
        ];
        let v = [Vec3::ZERO; 3];
        c.build(0.01, &x, &v, &[], &[ground(1.0)], 0.005);
        assert_eq!(c.active_contacts(), 3);
        let lambda = [
            Vec3::new(0.0, -1.0, 0.0),
            Vec3::new(0.0, 0.5, 0.0),
            Vec3::new(0.0, 0.5, 0.0),
        ];
        let mut vn = [
            Vec3::new(3.0, 0.0, 0.0),
            Vec3::new(3.0, 0.0, 0.0),
            Vec3::new(0.1, 0.0, 0.0),
        ];
        c.resolve_after_solve(&lambda, &mut vn, &[1.0; 3], &[ground(1.0)], 0.25);
        assert_eq!(c.released_contacts(), 1);
        assert_eq!(vn[0], Vec3::new(3.0, 0.0, 0.0), "released: no friction");
        // mu = sqrt(0.25 * 1) = 0.5; dv = 0.5 * 0.5 / 1 = 0.25.
        assert!(vn[1].abs_diff_eq(Vec3::new(2.75, 0.0, 0.0), 1e-6));
        assert_eq!(vn[2], Vec3::ZERO, "static friction stops a slow vertex");
    }

    #[test]
    fn friction_is_decided_afresh_every_substep() {
        // A sliding vertex decelerates by mu lambda_n / m per substep and stops
        // exactly when that covers its tangential speed; the filter never
        // constrains the tangent, whatever happened before.
        let mut c = Constraints::new(1);
        let x = [Vec3::new(0.0, 0.004, 0.0)];
        let mut v = [Vec3::new(0.05, 0.0, 0.0)];
        let lambda = [Vec3::new(0.0, 0.02, 0.0)];
        // mu = 1, m = 1: at most 0.02 m/s per substep.
        for expected in [0.03, 0.01, 0.0, 0.0] {
            c.build(0.01, &x, &v, &[], &[ground(1.0)], 0.005);
            assert_eq!(c.filters()[0], Filter::OneDirection(Vec3::Y));
            c.resolve_after_solve(&lambda, &mut v, &[1.0], &[ground(1.0)], 1.0);
            assert!((v[0].x - expected).abs() < 1e-6, "{} vs {expected}", v[0].x);
        }
        // A tangential push below the cone is cancelled; above it, the excess remains.
        v[0] = Vec3::new(0.0, 0.0, 0.015);
        c.resolve_after_solve(&lambda, &mut v, &[1.0], &[ground(1.0)], 1.0);
        assert_eq!(v[0], Vec3::ZERO);
        v[0] = Vec3::new(0.0, 0.0, 0.05);
        c.resolve_after_solve(&lambda, &mut v, &[1.0], &[ground(1.0)], 1.0);
        assert!((v[0].z - 0.03).abs() < 1e-6);
    }

    #[test]
    fn moving_surface_drags_a_resting_vertex() {
        // Friction acts on the velocity relative to the surface.
        let belt = ColliderView {
            motion: Motion {
                linear_velocity: Vec3::new(1.0, 0.0, 0.0),
                angular_velocity: Vec3::ZERO,
            },
            ..ground(1.0)
        };
        let mut c = Constraints::new(1);
        let x = [Vec3::new(0.0, 0.004, 0.0)];
        let mut v = [Vec3::ZERO];
        c.build(0.01, &x, &v, &[], &[belt], 0.005);
        c.resolve_after_solve(&[Vec3::new(0.0, 0.3, 0.0)], &mut v, &[1.0], &[belt], 1.0);
        assert!(v[0].abs_diff_eq(Vec3::new(0.3, 0.0, 0.0), 1e-6), "{}", v[0]);
    }

    #[test]
    fn two_surfaces_prescribe_both_normal_velocities() {
        let wall = ColliderView {
            shape: Shape::Plane,
            pose: Pose {
                translation: Vec3::ZERO,
                rotation: glam::Quat::from_rotation_z(-std::f32::consts::FRAC_PI_2),
            },
            motion: Motion {
                linear_velocity: Vec3::new(0.5, 0.0, 0.0),
                angular_velocity: Vec3::ZERO,
            },
            friction: 0.0,
        };
        let mut c = Constraints::new(1);
        let x = [Vec3::new(0.001, 0.001, 0.0)];
        let v = [Vec3::new(-1.0, -1.0, 0.0)];
        c.build(0.01, &x, &v, &[], &[ground(0.0), wall], 0.005);
        match c.filters()[0] {
            Filter::TwoDirections(p, q) => {
                assert!(p.abs_diff_eq(Vec3::Y, 1e-6));
                assert!(q.abs_diff_eq(Vec3::X, 1e-6));
            }
            f => panic!("expected two directions, got {f:?}"),
        }
        let v_after = v[0] + c.z()[0];
        assert!(v_after.abs_diff_eq(Vec3::new(0.5, 0.0, 0.0), 1e-6));
    }
}

//! The valid range of every input: one named bound per quantity, the reason for it, and the
//! checks that apply it.
//!
//! Scene files ([`crate::scene`]), the Rust API ([`crate::world`]) and the C ABI
//! ([`crate::ffi`]) refuse a value outside its range before anything changes, with a
//! [`RangeError`] naming the value; each adapter adds its own place (file, line and key; the C
//! argument). Values inside the ranges are what the pipeline is built for: a frame of a cloth
//! inside them costs what its size and its budget say, and no stage meets a zero, denormal or
//! overflowing number it would have to survive. `samples/README.md` and `include/weft.h` list
//! the same ranges.
//!
//! The bounds are absolute (SI units), chosen so that every scene a game or a film shot needs is
//! far inside them, and so that the quantities the pipeline derives from them (masses and their
//! inverses, `x / h`, swept boxes of one substep, `f32` coordinates against the thickness) stay
//! representable and meaningful. Where a bound is relative to the cloth (its thickness, its rest
//! shape) the cloth's size is the diagonal of its bounding box.
#![deny(unsafe_code)]

use glam::{Quat, Vec2, Vec3};

/// Largest |coordinate| (m) of a cloth vertex, a pin target, a material (uv) coordinate, or the
/// position of a collider, obstacle or keyframe. The `f32` spacing at 10⁴ m is 0.98 mm, a
/// quarter of the default 4 mm thickness: farther out, the contact thickness falls below the
/// resolution of the coordinates.
pub const MAX_COORDINATE: f32 = 1.0e4;

/// Smallest cloth (m): the diagonal of the bounding box of its vertices, and of its material
/// coordinates. Below a millimetre the default thickness is larger than the cloth, and the rest
/// areas of a fine mesh (hence its masses, `area · density / 3`) head for the `f32` denormals.
pub const MIN_CLOTH_SIZE: f32 = 1.0e-3;

/// Largest ratio between a cloth's rest size (the bounding box of its material coordinates) and
/// its initial size, either way. Past it the first step starts from a strain of 100× (or
/// 1/100), which no strain limit or step control recovers from in a frame.
pub const MAX_REST_SCALE: f32 = 100.0;

/// Largest thickness as a fraction of the cloth's size. The thickness is the distance the
/// collision stage keeps between layers; at 5 % of its size a cloth is a slab.
pub const MAX_THICKNESS_FRACTION: f32 = 0.05;

/// Largest thickness as a multiple of the cloth's median edge length. Past it every vertex sits
/// within the thickness of triangles beyond its neighbours, and the proximity and CCD work of
/// a substep grows with the square of the thickness over the edge: measured on drape-33
/// (3.1 cm edges, 1 thread, 30 frames), a frame costs 1.25× its 4 mm cost at half an edge,
/// 2.2× at one edge, 6.4× at 2.3 edges (7 cm).
pub const MAX_THICKNESS_PER_EDGE: f32 = 1.0;

/// Largest |gravity| (m/s²), about 10 g. A 9 × 9 cloth of 1 m dropped on a sphere with
/// self-collision (1 thread, `frame_ms = 50`) takes 1.2 ms a frame (median) at 9.81 m/s²,
/// 21 ms at 100 m/s², 24 ms at 300 and 86 ms (p95 104 ms, twice its budget) at 1000.
pub const MAX_GRAVITY: f32 = 100.0;

/// Largest speed (m/s) of a cloth's initial velocity, a pin, a collider or an obstacle (and of
/// the motion a C host's pin target or pose implies over a frame). At 100 m/s a body crosses
/// 0.8 m in a 60 Hz substep; the swept boxes of faster motion cover the whole scene, so the
/// collision stage's candidate lists grow with the square of the cloth.
pub const MAX_SPEED: f32 = 100.0;

/// Largest angular speed (rad/s) of a collider or obstacle: about 1,900 rpm, a point 0.5 m from
/// the axis at [`MAX_SPEED`].
pub const MAX_ANGULAR_SPEED: f32 = 200.0;

/// Shortest frame (s): 100 kHz. Shorter frames only divide round-off by `dt`.
pub const MIN_FRAME_DT: f32 = 1.0e-5;

/// Longest frame (s): 10 Hz. A longer frame is not an animation frame but a jump; a host that
/// stalls should step several frames. (A cloth falls 5 cm in 0.1 s, 4.9 m in 1 s.)
pub const MAX_FRAME_DT: f32 = 0.1;

/// Shortest substep `h = dt / substeps` (s). Velocities are `Δx / h`: with coordinates up to
/// [`MAX_COORDINATE`] they stay far inside `f32`, and `h` is never zero or denormal (a denormal
/// `dt` split into substeps rounds to 0).
pub const MIN_SUBSTEP_DT: f32 = 1.0e-7;

/// Smallest size (m) of an analytic collider: a radius, a capsule's half length, a box's half
/// extent. Its tessellation (the obstacle mesh of the collision stage) has edges about a tenth
/// of it; below a millimetre they are shorter than any cloth thickness, and the whole body sits
/// inside the thickness of a single cloth triangle.
pub const MIN_COLLIDER_SIZE: f32 = 1.0e-3;

/// Largest size (m) of an analytic collider: [`MAX_COORDINATE`].
pub const MAX_COLLIDER_SIZE: f32 = MAX_COORDINATE;

/// Largest departure of a pose's quaternion from unit length: `|‖q‖ − 1| ≤` this. Hosts hand
/// over unit quaternions with `f32` drift (about 1e-6 a multiply); anything farther is not a
/// rotation (a `(1e30, 1e30, 1e30, 1e30)` overflows its own norm).
pub const QUATERNION_NORM_TOLERANCE: f32 = 1.0e-2;

/// Range of a lumped vertex mass (kg). The inverse masses and `m / h²` then stay normal `f32`
/// numbers with many orders of magnitude to spare (a 1 mm cloth of 100 × 100 vertices at
/// 0.01 kg/m² has vertex masses near 1e-12 kg; the shell samples, 3e6 kg/m², near 1e4 kg).
pub const VERTEX_MASS_RANGE: (f32, f32) = (1.0e-15, 1.0e12);

/// A value out of its range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{what}` {message}")]
pub struct RangeError {
    /// The quantity (a scene key or C field name where they agree: `thickness`, `gravity`).
    pub what: &'static str,
    /// What is wrong, with the value and the range.
    pub message: String,
}

impl RangeError {
    fn new(what: &'static str, message: String) -> Self {
        Self { what, message }
    }
}

/// `v` is finite and its length at most `max`.
fn check_length(what: &'static str, v: Vec3, max: f32, unit: &str) -> Result<(), RangeError> {
    if !v.is_finite() {
        return Err(RangeError::new(what, format!("must be finite, got {v}")));
    }
    let len = v.length();
    if len > max {
        return Err(RangeError::new(
            what,
            format!("has magnitude {len:e} {unit}, at most {max:e} {unit}"),
        ));
    }
    Ok(())
}

/// Gravity: finite, at most [`MAX_GRAVITY`].
pub fn check_gravity(g: Vec3) -> Result<(), RangeError> {
    check_length("gravity", g, MAX_GRAVITY, "m/s²")
}

/// A linear velocity: finite, at most [`MAX_SPEED`].
pub fn check_speed(what: &'static str, v: Vec3) -> Result<(), RangeError> {
    check_length(what, v, MAX_SPEED, "m/s")
}

/// An angular velocity: finite, at most [`MAX_ANGULAR_SPEED`].
pub fn check_angular_speed(what: &'static str, w: Vec3) -> Result<(), RangeError> {
    check_length(what, w, MAX_ANGULAR_SPEED, "rad/s")
}

/// A point: finite, every coordinate within ±[`MAX_COORDINATE`].
pub fn check_point(what: &'static str, p: Vec3) -> Result<(), RangeError> {
    if !p.is_finite() {
        return Err(RangeError::new(what, format!("must be finite, got {p}")));
    }
    if p.abs().max_element() > MAX_COORDINATE {
        return Err(RangeError::new(
            what,
            format!("{p} has a coordinate beyond ±{MAX_COORDINATE:e} m"),
        ));
    }
    Ok(())
}

/// Every point of `points` (vertex `i` named in the message).
pub fn check_points(what: &'static str, points: &[Vec3]) -> Result<(), RangeError> {
    for (i, p) in points.iter().enumerate() {
        check_point(what, *p)
            .map_err(|e| RangeError::new(what, format!("vertex {i}: {}", e.message)))?;
    }
    Ok(())
}

/// The frame length `dt` and its substep `dt / substeps`: `dt` in
/// [[`MIN_FRAME_DT`], [`MAX_FRAME_DT`]], the substep at least [`MIN_SUBSTEP_DT`].
pub fn check_frame_dt(dt: f32, substeps: u32) -> Result<(), RangeError> {
    if !(dt.is_finite() && (MIN_FRAME_DT..=MAX_FRAME_DT).contains(&dt)) {
        return Err(RangeError::new(
            "dt",
            format!(
                "is {dt:e} s, must be in [{MIN_FRAME_DT:e}, {MAX_FRAME_DT}] s \
                 ({} to {} frames a second)",
                1.0 / MAX_FRAME_DT,
                1.0 / MIN_FRAME_DT
            ),
        ));
    }
    let h = dt / substeps.max(1) as f32;
    if h < MIN_SUBSTEP_DT {
        return Err(RangeError::new(
            "dt",
            format!(
                "{dt:e} s in {substeps} substeps is {h:e} s a substep, at least {MIN_SUBSTEP_DT:e} s"
            ),
        ));
    }
    Ok(())
}

/// Smallest half extent (m) of a box along its thinnest axis, when a larger one meets
/// [`MIN_COLLIDER_SIZE`]. A thin plate is a body game scenes use (a 1 mm sheet of metal), and its
/// tessellation has the edges of its large faces; the bound only keeps the two large faces
/// apart by far more than the `f32` spacing of coordinates within [`MAX_COORDINATE`] (1 mm at
/// 1e4 m is coarser, so a plate that far out is thicker than its position's rounding anyway).
pub const MIN_BOX_HALF_THICKNESS: f32 = 1.0e-4;

/// A box's half extents: the largest in [[`MIN_COLLIDER_SIZE`], [`MAX_COLLIDER_SIZE`]], each in
/// [[`MIN_BOX_HALF_THICKNESS`], [`MAX_COLLIDER_SIZE`]].
pub fn check_box_half_extents(what: &'static str, h: [f32; 3]) -> Result<(), RangeError> {
    if let Some(&v) = h
        .iter()
        .find(|v| !(v.is_finite() && (MIN_BOX_HALF_THICKNESS..=MAX_COLLIDER_SIZE).contains(*v)))
    {
        return Err(RangeError::new(
            what,
            format!(
                "has {v:e} m, each must be in [{MIN_BOX_HALF_THICKNESS:e}, {MAX_COLLIDER_SIZE:e}] m"
            ),
        ));
    }
    check_collider_size(what, h[0].max(h[1]).max(h[2]))
}

/// A collider size (radius, half length, half extent): in
/// [[`MIN_COLLIDER_SIZE`], [`MAX_COLLIDER_SIZE`]].
pub fn check_collider_size(what: &'static str, v: f32) -> Result<(), RangeError> {
    if v.is_finite() && (MIN_COLLIDER_SIZE..=MAX_COLLIDER_SIZE).contains(&v) {
        Ok(())
    } else {
        Err(RangeError::new(
            what,
            format!("is {v:e} m, must be in [{MIN_COLLIDER_SIZE:e}, {MAX_COLLIDER_SIZE:e}] m"),
        ))
    }
}

/// A rotation given as a quaternion: finite, of norm within [`QUATERNION_NORM_TOLERANCE`] of 1;
/// returns it normalised.
pub fn check_quaternion(what: &'static str, q: Quat) -> Result<Quat, RangeError> {
    if !q.is_finite() {
        return Err(RangeError::new(what, format!("must be finite, got {q}")));
    }
    // In f64: the norm of a finite f32 quaternion does not overflow there.
    let norm = q.as_dquat().length();
    if (norm - 1.0).abs() > f64::from(QUATERNION_NORM_TOLERANCE) {
        return Err(RangeError::new(
            what,
            format!(
                "has norm {norm:e}, must be a unit quaternion (within {QUATERNION_NORM_TOLERANCE})"
            ),
        ));
    }
    Ok(q.normalize())
}

/// Diagonal of the bounding box of `points` (0 for none), in `f64`.
fn diagonal(points: impl Iterator<Item = Vec3>) -> f64 {
    let mut lo = glam::DVec3::splat(f64::INFINITY);
    let mut hi = glam::DVec3::splat(f64::NEG_INFINITY);
    let mut any = false;
    for p in points {
        lo = lo.min(p.as_dvec3());
        hi = hi.max(p.as_dvec3());
        any = true;
    }
    if any { (hi - lo).length() } else { 0.0 }
}

/// The size of a cloth or an obstacle mesh (m): the diagonal of the bounding box of its
/// positions.
#[must_use]
pub fn cloth_size(positions: &[Vec3]) -> f32 {
    diagonal(positions.iter().copied()) as f32
}

/// A cloth's geometry: its vertices and material coordinates within ±[`MAX_COORDINATE`], its
/// size at least [`MIN_CLOTH_SIZE`], its rest size (material coordinates) within a factor
/// [`MAX_REST_SCALE`] of it. `positions` and `uvs` are finite (the mesh validation ran).
pub fn check_cloth_geometry(
    positions: &[Vec3],
    uvs: Option<&[[Vec2; 3]]>,
) -> Result<(), RangeError> {
    check_points("positions", positions)?;
    let size = diagonal(positions.iter().copied());
    if size < f64::from(MIN_CLOTH_SIZE) {
        return Err(RangeError::new(
            "positions",
            format!("span {size:e} m (bounding-box diagonal), at least {MIN_CLOTH_SIZE:e} m"),
        ));
    }
    let Some(uvs) = uvs else { return Ok(()) };
    if let Some((t, uv)) = uvs.iter().enumerate().find_map(|(t, c)| {
        c.iter()
            .find(|uv| uv.abs().max_element() > MAX_COORDINATE)
            .map(|uv| (t, *uv))
    }) {
        return Err(RangeError::new(
            "uvs",
            format!("triangle {t}: {uv} has a coordinate beyond ±{MAX_COORDINATE:e} m"),
        ));
    }
    let rest = diagonal(uvs.iter().flatten().map(|uv| uv.extend(0.0)));
    let ratio = rest / size;
    let max = f64::from(MAX_REST_SCALE);
    if rest < f64::from(MIN_CLOTH_SIZE) || !(1.0 / max..=max).contains(&ratio) {
        return Err(RangeError::new(
            "uvs",
            format!(
                "span {rest:e} m for a cloth of {size:e} m: the rest size must be at least \
                 {MIN_CLOTH_SIZE:e} m and within a factor {MAX_REST_SCALE} of the cloth's"
            ),
        ));
    }
    Ok(())
}

/// A cloth's thickness: finite, non-negative, at most [`MAX_THICKNESS_FRACTION`] of its size
/// and [`MAX_THICKNESS_PER_EDGE`] times its median edge length.
pub fn check_thickness(thickness: f32, size: f32, median_edge: f32) -> Result<(), RangeError> {
    let max = (MAX_THICKNESS_FRACTION * size).min(MAX_THICKNESS_PER_EDGE * median_edge);
    if thickness.is_finite() && (0.0..=max).contains(&thickness) {
        Ok(())
    } else {
        Err(RangeError::new(
            "thickness",
            format!(
                "is {thickness:e} m, must be in [0, {max:e}] m (at most {MAX_THICKNESS_FRACTION} \
                 of the cloth's size, {size:e} m, and {MAX_THICKNESS_PER_EDGE} of its median \
                 edge length, {median_edge:e} m)"
            ),
        ))
    }
}

/// An obstacle mesh's own thickness: finite, non-negative, at most [`MAX_THICKNESS_FRACTION`] of
/// the mesh's size (`size`, the diagonal of its bounding box). It adds to the thickness of every
/// cloth near it: a 4 cm box with a 1e30 m thickness cost 69 s a frame against a 9 × 9 cloth.
pub fn check_obstacle_thickness(thickness: f32, size: f32) -> Result<(), RangeError> {
    let max = MAX_THICKNESS_FRACTION * size;
    if thickness.is_finite() && (0.0..=max).contains(&thickness) {
        Ok(())
    } else {
        Err(RangeError::new(
            "thickness",
            format!(
                "is {thickness:e} m, must be in [0, {max:e}] m ({MAX_THICKNESS_FRACTION} of the \
                 obstacle's size, {size:e} m)"
            ),
        ))
    }
}

/// Lumped vertex masses, each in [`VERTEX_MASS_RANGE`] (the first one out is named).
pub fn check_vertex_masses(what: &'static str, masses: &[f32]) -> Result<(), RangeError> {
    let (lo, hi) = VERTEX_MASS_RANGE;
    match masses
        .iter()
        .position(|m| !(m.is_finite() && (lo..=hi).contains(m)))
    {
        None => Ok(()),
        Some(i) => Err(RangeError::new(
            what,
            format!(
                "vertex {i} has mass {:e} kg, must be in [{lo:e}, {hi:e}] kg",
                masses[i]
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thin_plate_is_a_box_but_a_speck_is_not() {
        assert!(check_box_half_extents("half_extents", [5e-4, 0.2, 0.2]).is_ok());
        assert!(check_box_half_extents("half_extents", [1e-5, 0.2, 0.2]).is_err());
        assert!(check_box_half_extents("half_extents", [5e-4, 5e-4, 5e-4]).is_err());
        assert!(check_box_half_extents("half_extents", [f32::NAN, 0.2, 0.2]).is_err());
        assert!(check_box_half_extents("half_extents", [0.2, 0.2, 2e4]).is_err());
    }

    #[test]
    fn frame_dt_range_refuses_zero_denormal_and_huge() {
        assert!(check_frame_dt(1.0 / 60.0, 2).is_ok());
        for dt in [0.0, 1e-45, -0.01, f32::NAN, f32::INFINITY, 1e6, 1e-6] {
            let e = check_frame_dt(dt, 2).expect_err("out of range");
            assert_eq!(e.what, "dt");
        }
        assert!(check_frame_dt(MIN_FRAME_DT, 1).is_ok());
        assert!(
            check_frame_dt(MIN_FRAME_DT, 1000).is_err(),
            "1e-8 s substeps"
        );
    }

    #[test]
    fn quaternion_norm_is_checked_in_f64() {
        let e = check_quaternion("rotation", Quat::from_xyzw(1e30, 1e30, 1e30, 1e30))
            .expect_err("not a rotation");
        assert!(e.message.contains("norm"), "{e}");
        assert!(check_quaternion("rotation", Quat::from_xyzw(0.0, 0.0, 0.0, 0.0)).is_err());
        let q =
            check_quaternion("rotation", Quat::from_xyzw(0.0, 0.0, 0.0, 1.001)).expect("near unit");
        assert!(q.is_normalized());
    }

    #[test]
    fn cloth_geometry_scaled_out_of_range_is_refused() {
        let square = [Vec3::ZERO, Vec3::X, Vec3::new(1.0, 0.0, 1.0), Vec3::Z];
        let uvs = [[Vec2::ZERO, Vec2::X, Vec2::ONE]];
        assert!(check_cloth_geometry(&square, Some(&uvs)).is_ok());
        for s in [1e30_f32, 1e-30] {
            let scaled: Vec<Vec3> = square.iter().map(|p| *p * s).collect();
            assert_eq!(
                check_cloth_geometry(&scaled, None)
                    .expect_err("scaled")
                    .what,
                "positions"
            );
            let big_uvs = [uvs[0].map(|uv| uv * s)];
            assert_eq!(
                check_cloth_geometry(&square, Some(&big_uvs))
                    .expect_err("scaled")
                    .what,
                "uvs"
            );
        }
    }

    #[test]
    fn thickness_is_relative_to_the_cloth() {
        assert!(check_thickness(0.004, 1.4, 0.03).is_ok());
        assert!(check_thickness(0.0, 1.4, 0.03).is_ok());
        for t in [1e30, f32::INFINITY, -1e-3, f32::NAN, 0.1, 0.031] {
            assert!(check_thickness(t, 1.4, 0.03).is_err(), "{t}");
        }
        assert!(check_thickness(0.1, 1.4, 0.2).is_err(), "5 % of the size");
    }

    #[test]
    fn magnitudes_have_upper_bounds() {
        assert!(check_gravity(Vec3::new(0.0, -9.81, 0.0)).is_ok());
        assert!(check_gravity(Vec3::splat(1e30)).is_err());
        assert!(check_gravity(Vec3::new(0.0, -1000.0, 0.0)).is_err());
        assert!(check_speed("velocity", Vec3::new(20.0, 0.0, 0.0)).is_ok());
        assert!(check_speed("velocity", Vec3::new(1e30, 0.0, 0.0)).is_err());
        assert!(check_angular_speed("angular_velocity", Vec3::new(0.0, 1e4, 0.0)).is_err());
        assert!(check_point("target", Vec3::splat(1e30)).is_err());
        assert!(check_collider_size("radius", 1e-30).is_err());
        assert!(check_collider_size("radius", 0.3).is_ok());
        assert!(check_vertex_masses("masses", &[0.1, 0.0]).is_err());
        assert!(check_vertex_masses("masses", &[0.1, f32::INFINITY]).is_err());
    }
}

//! `#[repr(C)]` descriptors and their validation into weft's Rust types.
//!
//! Every descriptor and out-struct begins with its own `size` (bytes), which
//! the caller sets to `sizeof(struct)`; new fields are only ever appended at the
//! end. A struct from an older `weft.h` of the same major version is accepted: its
//! `size` is one of the sizes that struct had in an earlier release
//! ([`SizePrefixed::RELEASED_SIZES`]), its fields are read and the fields it does not
//! have take their defaults ([`read_sized`]); an out-struct of an older size gets the
//! fields it has ([`write_sized`]). The size is read alone first, so nothing is ever
//! read or written past the caller's struct. Any other size, smaller than the first
//! release's (no `weft.h` ever had it) or larger than this library's (a newer header),
//! is `WEFT_STATUS_DESCRIPTOR_SIZE` with a message giving the accepted sizes.
//! `*_desc_default` fills the struct of the caller's header: the header defines it as an
//! inline call of `*_desc_init(out, sizeof *out)`. Structs that grew: `weft_cloth_desc`
//! (`velocities`, after 0.1). Enumerations inside descriptors are plain `uint32_t` with
//! `WEFT_*` constants, so an unknown value from C is an error, never undefined
//! behaviour.

use std::ffi::CStr;
use std::os::raw::c_char;

use glam::{Quat, Vec2, Vec3};

use super::status::{FfiError, weft_status};
use crate::collide::resolve::{CollisionSettings, MAX_RESPONSE_PASSES};
use crate::collide::shapes::{Pose, Shape};
use crate::collide::strain_limit::{StrainLimit, StrainMethod};
use crate::integrate::bdf2::Integrator;
use crate::integrate::implicit_euler::{BendingIntegration, BendingModel, BwSettings, RestAngles};
use crate::integrate::isometric::{Coupling, IsometricSettings, SecondTarget};
use crate::integrate::isometric_cloth::{IsometricDesc, RestShape};
use crate::integrate::projection::ProjectionSettings;
use crate::linalg::{PcgSettings, Preconditioner};
use crate::mesh::TriMesh;
use crate::model::baraff_witkin::{BendParams, JacobianMode, MembraneParams};
use crate::model::wind::Wind;
use crate::runtime::budget::{Budget, GovernorMode};
use crate::runtime::profile::Stage;
use crate::runtime::stats::FrameStats;
use crate::world::{ClothDesc, StepControl, WorldSettings};

/// Cloth model: Baraff–Witkin 1998 implicit cloth.
pub const WEFT_MODEL_BARAFF_WITKIN: u32 = 0;
/// Cloth model: Wang 2012 isometric cloth (`weft_isometric_settings`). The
/// simulated mesh is the 4:1 subdivision of the caller's mesh: input vertex
/// `i` keeps index `i`, edge midpoints follow (`weft_cloth_vertex_count`,
/// `weft_cloth_triangles`).
pub const WEFT_MODEL_ISOMETRIC: u32 = 1;
/// Isometric coupling: project, then collide (Wang 2012 Table 3.1 lines 1–3, 7).
pub const WEFT_COUPLING_STAGGERED: u32 = 0;
/// Isometric coupling: collisions fed back as constraints (all of Table 3.1; the default).
pub const WEFT_COUPLING_SIMULTANEOUS: u32 = 1;
/// Isometric time integrator: backward Euler (the default).
pub const WEFT_INTEGRATOR_BACKWARD_EULER: u32 = 0;
/// Isometric time integrator: BDF2 (backward Euler on the first step).
pub const WEFT_INTEGRATOR_BDF2: u32 = 1;
/// Isometric bending rest shape: flat (Wang 2012 eq. 3.5).
pub const WEFT_REST_SHAPE_FLAT: u32 = 0;
/// Isometric bending rest shape: the input mesh's curvature (eq. 3.8; the default).
pub const WEFT_REST_SHAPE_INPUT: u32 = 1;
/// Target of the isometric second projection: the prediction x̃ (the default).
pub const WEFT_SECOND_TARGET_PREDICTION: u32 = 0;
/// Target of the isometric second projection: the collided positions x_c.
pub const WEFT_SECOND_TARGET_COLLIDED: u32 = 1;
/// Isometric normal contact rows only push: released when they would pull (the default).
pub const WEFT_CONTACTS_UNILATERAL: u32 = 0;
/// Isometric normal contact rows are equalities (Wang 2012 eq. 3.26 as printed).
pub const WEFT_CONTACTS_EQUALITY: u32 = 1;
/// The isometric strain tolerance bounds the constraint rows (Wang 2012 eq. 3.1; the default).
pub const WEFT_STRAIN_TEST_ROWS: u32 = 0;
/// The isometric strain tolerance also bounds the base edges through their red nodes.
pub const WEFT_STRAIN_TEST_BASE_EDGES: u32 = 1;
/// Baraff–Witkin bending: the Baraff–Witkin bend condition (the default).
pub const WEFT_BENDING_BARAFF_WITKIN: u32 = 0;
/// Baraff–Witkin bending: discrete-shell (dihedral) bending.
pub const WEFT_BENDING_DIHEDRAL: u32 = 1;
/// Bending force integrated implicitly with everything else (the default).
pub const WEFT_BENDING_INTEGRATION_IMPLICIT: u32 = 0;
/// Bending force explicit, the rest implicit (IMEX, Bridson's course notes, *Implicit/Explicit Methods*).
pub const WEFT_BENDING_INTEGRATION_IMEX: u32 = 1;
/// Iteration caps fixed at the world descriptor's (the default).
pub const WEFT_GOVERNOR_FIXED: u32 = 0;
/// The governor lowers the CG cap when a frame would overrun `frame_budget_ms`.
pub const WEFT_GOVERNOR_ADAPTIVE: u32 = 1;
/// Hinges rest flat.
pub const WEFT_REST_ANGLES_FLAT: u32 = 0;
/// Hinges rest at the angles of the input mesh.
pub const WEFT_REST_ANGLES_INITIAL: u32 = 1;
/// The negative semidefinite Jacobian treatment (the default).
pub const WEFT_JACOBIAN_DEFINITE: u32 = 0;
/// The exact Jacobian (may be indefinite).
pub const WEFT_JACOBIAN_EXACT: u32 = 1;
/// Block-Jacobi preconditioning of the Baraff–Witkin PCG (the default).
pub const WEFT_PRECONDITIONER_BLOCK_JACOBI: u32 = 0;
/// Block symmetric Gauss–Seidel of the filtered matrix.
pub const WEFT_PRECONDITIONER_BLOCK_SGS: u32 = 1;
/// Block incomplete Cholesky IC(0) of the filtered matrix.
pub const WEFT_PRECONDITIONER_BLOCK_IC0: u32 = 2;
/// The half-space y < 0 of the collider's frame.
pub const WEFT_SHAPE_PLANE: u32 = 0;
/// A ball of `radius` about the collider's origin.
pub const WEFT_SHAPE_SPHERE: u32 = 1;
/// A capsule of `radius` around the segment ±`half_length` along local y.
pub const WEFT_SHAPE_CAPSULE: u32 = 2;
/// A box with `half_extents` along local x, y, z.
pub const WEFT_SHAPE_BOX: u32 = 3;
/// A closed or open triangle mesh (`mesh_*` fields), collided through CCD.
pub const WEFT_SHAPE_TRIANGLE_MESH: u32 = 4;
/// Largest vertex count accepted in one cloth or collider mesh.
pub const WEFT_MAX_VERTICES: u32 = 1 << 24;
/// Largest triangle count accepted in one cloth or collider mesh.
pub const WEFT_MAX_TRIANGLES: u32 = 1 << 25;
/// Largest worker thread count accepted.
pub const WEFT_MAX_THREADS: u32 = 1024;

// The valid ranges of the values below (weft's `limits` module; each bound's reason is given
// there and in `samples/README.md`). A value outside its range is refused with
// `WEFT_STATUS_INVALID_ARGUMENT` (a NaN or infinity with `WEFT_STATUS_NON_FINITE`) before
// anything changes: the world's state hash is the same after the refused call.

/// Largest |coordinate| (m) of a cloth vertex, a uv, a pin target, a collider or mesh vertex, a
/// pose position.
pub const WEFT_MAX_COORDINATE: f32 = 1.0e4;
/// Smallest cloth (m): the diagonal of the bounding box of its positions, and of its uvs.
pub const WEFT_MIN_CLOTH_SIZE: f32 = 1.0e-3;
/// Largest ratio, either way, of a cloth's uv (rest) size to its size.
pub const WEFT_MAX_REST_SCALE: f32 = 100.0;
/// Largest cloth thickness as a fraction of the cloth's size.
pub const WEFT_MAX_THICKNESS_FRACTION: f32 = 0.05;
/// Largest cloth thickness as a multiple of its median edge length.
pub const WEFT_MAX_THICKNESS_PER_EDGE: f32 = 1.0;
/// Largest |gravity| (m/s²).
pub const WEFT_MAX_GRAVITY: f32 = 100.0;
/// Largest speed (m/s): a cloth's initial velocity, and the motion a pin target or collider pose
/// implies over the frame that reaches it.
pub const WEFT_MAX_SPEED: f32 = 100.0;
/// Largest angular speed (rad/s) a collider pose implies over the frame that reaches it.
pub const WEFT_MAX_ANGULAR_SPEED: f32 = 200.0;
/// Shortest `dt` of `weft_world_step` (s).
pub const WEFT_MIN_FRAME_DT: f32 = 1.0e-5;
/// Longest `dt` of `weft_world_step` (s).
pub const WEFT_MAX_FRAME_DT: f32 = 0.1;
/// Shortest substep `dt / substeps` (s).
pub const WEFT_MIN_SUBSTEP_DT: f32 = 1.0e-7;
/// Smallest sphere or capsule radius, capsule half length, box half extent (m).
pub const WEFT_MIN_COLLIDER_SIZE: f32 = 1.0e-3;
/// Largest sphere or capsule radius, capsule half length, box half extent (m).
pub const WEFT_MAX_COLLIDER_SIZE: f32 = 1.0e4;
/// A pose's quaternion must have a norm within this of 1 (weft normalises it).
pub const WEFT_QUATERNION_NORM_TOLERANCE: f32 = 1.0e-2;
/// Smallest vertex mass (kg), given in `masses` or lumped from `density`.
pub const WEFT_MIN_VERTEX_MASS: f32 = 1.0e-15;
/// Largest vertex mass (kg).
pub const WEFT_MAX_VERTEX_MASS: f32 = 1.0e12;
/// A cloth triangle whose smallest altitude is below this fraction of the mesh's median edge
/// length is a sliver, refused with `WEFT_STATUS_INVALID_MESH` naming the triangle.
pub const WEFT_SLIVER_RELATIVE_ALTITUDE: f64 = 1.0e-3;

// The C constants are the `limits` bounds (cbindgen needs literals).
const _: () = {
    use crate::limits as l;
    assert!(WEFT_MAX_COORDINATE == l::MAX_COORDINATE);
    assert!(WEFT_MIN_CLOTH_SIZE == l::MIN_CLOTH_SIZE);
    assert!(WEFT_MAX_REST_SCALE == l::MAX_REST_SCALE);
    assert!(WEFT_MAX_THICKNESS_FRACTION == l::MAX_THICKNESS_FRACTION);
    assert!(WEFT_MAX_THICKNESS_PER_EDGE == l::MAX_THICKNESS_PER_EDGE);
    assert!(WEFT_MAX_GRAVITY == l::MAX_GRAVITY);
    assert!(WEFT_MAX_SPEED == l::MAX_SPEED);
    assert!(WEFT_MAX_ANGULAR_SPEED == l::MAX_ANGULAR_SPEED);
    assert!(WEFT_MIN_FRAME_DT == l::MIN_FRAME_DT);
    assert!(WEFT_MAX_FRAME_DT == l::MAX_FRAME_DT);
    assert!(WEFT_MIN_SUBSTEP_DT == l::MIN_SUBSTEP_DT);
    assert!(WEFT_MIN_COLLIDER_SIZE == l::MIN_COLLIDER_SIZE);
    assert!(WEFT_MAX_COLLIDER_SIZE == l::MAX_COLLIDER_SIZE);
    assert!(WEFT_QUATERNION_NORM_TOLERANCE == l::QUATERNION_NORM_TOLERANCE);
    assert!(WEFT_MIN_VERTEX_MASS == l::VERTEX_MASS_RANGE.0);
    assert!(WEFT_MAX_VERTEX_MASS == l::VERTEX_MASS_RANGE.1);
    assert!(WEFT_SLIVER_RELATIVE_ALTITUDE == crate::mesh::SLIVER_RELATIVE_ALTITUDE);
};

/// World settings for `weft_world_create`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weft_world_desc {
    /// `sizeof(weft_world_desc)`.
    pub size: u32,
    /// Worker threads of the world's own pool; 0 runs in the process-wide
    /// rayon pool. Results are identical for every count.
    pub worker_threads: u32,
    /// Gravity (m/s²), y up: default (0, −9.81, 0); |gravity| ≤ `WEFT_MAX_GRAVITY`.
    pub gravity: [f32; 3],
    /// Substeps per frame, 1..=1000 (default 2).
    pub substeps: u32,
    /// Wall-clock budget of a frame (ms); 0 for none (default).
    pub frame_budget_ms: f64,
    /// Cap on CG iterations per linear solve, ≥ 1 (default 200).
    pub cg_max_iterations: u32,
    /// Cap on Newton iterations per projection, ≥ 1 (default 20).
    pub newton_max_iterations: u32,
    /// Step control: largest accepted relative stretch change per substep (default 0.1).
    pub max_stretch_change: f32,
    /// Step control: successive halvings at most (0 disables; default 3).
    pub max_halvings: u32,
    /// `WEFT_GOVERNOR_*` (default fixed). Adaptive needs `frame_budget_ms` > 0.
    pub governor: u32,
    /// Wind on every cloth (`enabled` = 0: still air, the default).
    pub wind: weft_wind,
}

/// A uniform wind with deterministic gusts (`model::wind`): per triangle the
/// normal pressure ½ρA|u|C_n(u·n̂)n̂ (drag and lift of a plate) and skin
/// friction C_t, with u the air velocity relative to the triangle.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weft_wind {
    /// 0: no wind (the other fields are ignored), 1: wind.
    pub enabled: u32,
    /// Mean wind velocity (m/s), at most `WEFT_MAX_SPEED`.
    pub velocity: [f32; 3],
    /// Air density (kg/m³), positive (default 1.2).
    pub density: f32,
    /// Normal pressure (drag and lift) coefficient C_n, ≥ 0 (default 1.2).
    pub drag: f32,
    /// Tangential skin-friction coefficient C_t, ≥ 0 (default 0.02).
    pub skin: f32,
    /// Relative gust amplitude in [0, 1] (default 0: steady).
    pub gust: f32,
    /// Gust period (s), positive (default 2).
    pub gust_period_s: f32,
}

/// Baraff–Witkin material (N/m, N·m, s).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weft_material {
    /// Stretch stiffness along u (N/m).
    pub stretch_u: f64,
    /// Stretch stiffness along v (N/m).
    pub stretch_v: f64,
    /// Shear stiffness (N/m).
    pub shear: f64,
    /// Bending stiffness (N·m).
    pub bend: f64,
    /// Stretch damping time constant (s).
    pub stretch_damping: f64,
    /// Shear damping time constant (s).
    pub shear_damping: f64,
    /// Bending damping time constant (s).
    pub bend_damping: f64,
    /// Rest stretch along u (1 = the rest shape).
    pub rest_stretch_u: f64,
    /// Rest stretch along v.
    pub rest_stretch_v: f64,
}

/// Settings of the Baraff–Witkin model (`WEFT_MODEL_BARAFF_WITKIN`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weft_bw_settings {
    /// `WEFT_REST_ANGLES_*`.
    pub rest_angles: u32,
    /// `WEFT_JACOBIAN_*`.
    pub jacobian: u32,
    /// CG iteration cap of this cloth's solve, ≥ 1 (the world's cap also applies).
    pub cg_max_iterations: u32,
    /// Relative CG tolerance, in (0, 1).
    pub cg_tolerance: f64,
    /// `WEFT_PRECONDITIONER_*` (scene key `[solver] preconditioner`).
    pub preconditioner: u32,
}

/// The collision stage of one cloth (Bridson 2002).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weft_collision_desc {
    /// Cloth–cloth collisions: 0 off, 1 on.
    pub self_collision: u32,
    /// Repulsion spring stiffness (N/m), ≥ 0.
    pub repulsion_stiffness: f32,
    /// Velocity-level strain limit per substep in [0, 1); 0 disables.
    pub strain_limit: f32,
    /// Strain-limiting sweeps.
    pub strain_iterations: u32,
    /// CCD impulse rounds before impact zones.
    pub ccd_rounds: u32,
    /// Cap on impact-zone rounds before the last resort, ≥ 1.
    pub max_zone_rounds: u32,
    /// Rounds of collision response solve + collision stage again after the first stage of a
    /// substep, 0 (the default: off) to 16 (scene key `[cloth.collision] response_passes`).
    pub response_passes: u32,
}

/// Settings of the isometric model (`WEFT_MODEL_ISOMETRIC`, Wang 2012): the
/// Gauss–Newton projection, the Table 3.1 step and the bending material.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weft_isometric_settings {
    /// Strain tolerance ε of the Gauss–Newton stopping test, in (0, 1) (default 1e-3).
    pub strain_tolerance: f64,
    /// Gauss–Newton iteration cap per projection, ≥ 1 (default 20; the
    /// world's `newton_max_iterations` also applies).
    pub newton_max_iterations: u32,
    /// PCG iteration cap per Gauss–Newton iteration, ≥ 1 (default 1000; the
    /// world's `cg_max_iterations` also applies).
    pub cg_max_iterations: u32,
    /// PCG relative tolerance, in (0, 1) (default 1e-6).
    pub cg_tolerance: f64,
    /// `WEFT_COUPLING_*`.
    pub coupling: u32,
    /// `WEFT_INTEGRATOR_*`.
    pub integrator: u32,
    /// `WEFT_SECOND_TARGET_*`.
    pub second_target: u32,
    /// `WEFT_REST_SHAPE_*`: the rest shape of the bending energy.
    pub rest_shape: u32,
    /// β of the tangential contact rows, D = β w (dimensionless, ≥ 0; 0: hard
    /// friction; default 1e-3).
    pub friction_compliance: f64,
    /// β_b: extra proximal weight of the boundary rows (eq. 3.4), D += β_b w
    /// (≥ 0; default 0).
    pub boundary_compliance: f64,
    /// β_c: extra proximal weight of the conforming rows (eq. 3.3), D += β_c w
    /// (≥ 0; default 0).
    pub conforming_compliance: f64,
    /// Bending stiffness k_b (J, ≥ 0; eq. 3.5; default 1e-5).
    pub bending_stiffness: f64,
    /// β: proximal weight of every constraint row, D = β (J W Jᵀ)_aa (≥ 0;
    /// default 1e-6).
    pub proximal_weight: f64,
    /// β_n of the normal contact rows, D = β_n w (≥ 0; default 1e-2).
    pub contact_compliance: f64,
    /// Gauss–Newton iterations before the switch to fast projection (default
    /// `UINT32_MAX`: Gauss–Newton throughout).
    pub gauss_newton_iterations: u32,
    /// `WEFT_CONTACTS_*`: normal contact rows unilateral (the default) or equalities.
    pub contacts: u32,
    /// `WEFT_STRAIN_TEST_*`: what `strain_tolerance` bounds: the constraint rows (the
    /// default) or also the base edges through their red nodes.
    pub strain_test: u32,
    /// How often Wang 2012 Table 3.1 lines 4–6 may be repeated when line 6
    /// moves a node (0: the step as printed, the default).
    pub contact_rounds: u32,
    /// Speculative contact rows: nodes within thickness + this distance (m) of an
    /// analytic collider get a unilateral row on its tangent plane (≥ 0; 0, the
    /// default: none).
    pub contact_margin: f64,
}

/// A cloth for `weft_cloth_create`, read from the caller's arrays (copied).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weft_cloth_desc {
    /// `sizeof(weft_cloth_desc)`.
    pub size: u32,
    /// Number of vertices, 3..=`WEFT_MAX_VERTICES`.
    pub vertex_count: u32,
    /// `3 * vertex_count` floats: x, y, z per vertex (m), the initial state; every coordinate
    /// within ±`WEFT_MAX_COORDINATE`, the cloth at least `WEFT_MIN_CLOTH_SIZE` across, no
    /// sliver triangle (`WEFT_SLIVER_RELATIVE_ALTITUDE`).
    pub positions: *const f32,
    /// Number of triangles, 1..=`WEFT_MAX_TRIANGLES`.
    pub triangle_count: u32,
    /// `3 * triangle_count` vertex indices, counter-clockwise seen from the front.
    pub triangles: *const u32,
    /// Optional (NULL): `2 * vertex_count` floats, the rest shape's (u, v) per
    /// vertex in metres (within ±`WEFT_MAX_COORDINATE`, spanning within a factor
    /// `WEFT_MAX_REST_SCALE` of the positions). NULL: the initial positions are the rest shape.
    pub uvs: *const f32,
    /// Optional (NULL): `vertex_count` masses (kg, in [`WEFT_MIN_VERTEX_MASS`,
    /// `WEFT_MAX_VERTEX_MASS`]). NULL: lumped masses from `density`.
    pub masses: *const f32,
    /// Areal density (kg/m², positive), used when `masses` is NULL; the lumped masses must lie
    /// in [`WEFT_MIN_VERTEX_MASS`, `WEFT_MAX_VERTEX_MASS`].
    pub density: f32,
    /// Contact offset from colliders and collision thickness (m): at most
    /// `WEFT_MAX_THICKNESS_FRACTION` of the cloth's size and `WEFT_MAX_THICKNESS_PER_EDGE`
    /// times its median edge length.
    pub thickness: f32,
    /// Coulomb friction of the cloth's surface.
    pub friction: f32,
    /// Air drag coefficient (1/s).
    pub air_damping: f32,
    /// Initial velocity of every vertex (m/s), at most `WEFT_MAX_SPEED`.
    pub initial_velocity: [f32; 3],
    /// `WEFT_MODEL_*`; an unknown value gives `WEFT_STATUS_UNSUPPORTED`.
    /// With `WEFT_MODEL_ISOMETRIC`, `material` and `baraff_witkin` are not
    /// used, `masses` must be NULL (the simulated mesh has more vertices than
    /// the caller's), and the collision stage's strain limit is off (the
    /// inextensibility constraints are the strain limit).
    pub model: u32,
    /// The material.
    pub material: weft_material,
    /// Settings of `WEFT_MODEL_BARAFF_WITKIN`.
    pub baraff_witkin: weft_bw_settings,
    /// The collision stage.
    pub collision: weft_collision_desc,
    /// Optional (NULL): a NUL-terminated UTF-8 name.
    pub name: *const c_char,
    /// Settings of `WEFT_MODEL_ISOMETRIC` (checked whatever the model).
    pub isometric: weft_isometric_settings,
    /// Baraff–Witkin bending model, `WEFT_BENDING_*`.
    pub bending_model: u32,
    /// Baraff–Witkin bending integration, `WEFT_BENDING_INTEGRATION_*`.
    pub bending_integration: u32,
    /// Implicit velocity smoothing after the collision stage (course notes
    /// §4.10), ≥ 0; 0 (default) or `smoothing_iterations` = 0 disables it.
    pub velocity_smoothing: f32,
    /// CG iteration cap of velocity smoothing (default 8).
    pub smoothing_iterations: u32,
    /// Optional (NULL, the default): `3 * vertex_count` floats, the initial velocity of each
    /// vertex (m/s, at most `WEFT_MAX_SPEED`), replacing `initial_velocity`. Baraff–Witkin
    /// only: with `WEFT_MODEL_ISOMETRIC` it must be NULL (set the subdivided mesh's
    /// velocities with `weft_cloth_set_state`). Since 0.2.
    pub velocities: *const f32,
}

/// A rigid placement: `rotation * p + position`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weft_pose {
    /// Position of the local origin (m), within ±`WEFT_MAX_COORDINATE`.
    pub position: [f32; 3],
    /// Orientation quaternion x, y, z, w: its norm within `WEFT_QUATERNION_NORM_TOLERANCE` of 1
    /// (weft normalises it).
    pub rotation: [f32; 4],
}

/// A collider for `weft_collider_create`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weft_collider_desc {
    /// `sizeof(weft_collider_desc)`.
    pub size: u32,
    /// `WEFT_SHAPE_*`.
    pub shape: u32,
    /// Sphere and capsule radius (m), in [`WEFT_MIN_COLLIDER_SIZE`, `WEFT_MAX_COLLIDER_SIZE`].
    pub radius: f32,
    /// Capsule half length (m), in the same range.
    pub half_length: f32,
    /// Box half extents (m): the largest in the same range, each at least 1e-4 m (a thin
    /// plate).
    pub half_extents: [f32; 3],
    /// Triangle mesh: number of vertices.
    pub mesh_vertex_count: u32,
    /// Triangle mesh: `3 * mesh_vertex_count` floats in the collider's frame, within
    /// ±`WEFT_MAX_COORDINATE`.
    pub mesh_positions: *const f32,
    /// Triangle mesh: number of triangles.
    pub mesh_triangle_count: u32,
    /// Triangle mesh: `3 * mesh_triangle_count` indices.
    pub mesh_triangles: *const u32,
    /// Initial pose.
    pub pose: weft_pose,
    /// Coulomb friction (≥ 0).
    pub friction: f32,
    /// `WEFT_SHAPE_TRIANGLE_MESH` only: the mesh's own thickness (m, ≥ 0, at most
    /// `WEFT_MAX_THICKNESS_FRACTION` of the diagonal of the mesh's bounding box); the
    /// collision stage keeps cloth this much farther away than the cloth's
    /// thickness alone. Analytic shapes must leave it 0 (their contact
    /// already keeps the cloth's thickness).
    pub thickness: f32,
}

/// What one `weft_world_step` did.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weft_step_stats {
    /// `sizeof(weft_step_stats)`, set by the caller.
    pub size: u32,
    /// 1 if the frame's wall-clock budget ran out during the frame.
    pub deadline_hit: u32,
    /// Wall-clock time of the whole frame (ms).
    pub frame_ms: f64,
    /// Pins and colliders advanced, gravity (ms).
    pub kinematics_ms: f64,
    /// Baraff–Witkin cloths: collider contacts became constraints (ms).
    pub contacts_ms: f64,
    /// Baraff–Witkin cloths: forces and Jacobians assembled (ms).
    pub assemble_ms: f64,
    /// Linear solve (ms); for isometric cloths the whole Table 3.1 step, its collision
    /// passes included.
    pub solve_ms: f64,
    /// Baraff–Witkin cloths: collision stage (ms).
    pub collide_ms: f64,
    /// Baraff–Witkin cloths: write-back, friction, step control (ms).
    pub finish_ms: f64,
    /// Accepted substeps over all cloths.
    pub substeps: u32,
    /// Baraff–Witkin cloths: substeps rejected by step control.
    pub rejected_substeps: u32,
    /// CG iterations summed over every solve.
    pub cg_iterations: u32,
    /// Largest CG iteration count of one solve.
    pub cg_max_iterations: u32,
    /// Largest final relative residual of a solve.
    pub cg_residual: f64,
    /// Solves stopped by the cap or the deadline before the tolerance.
    pub cg_unconverged: u32,
    /// Baraff–Witkin cloths: vertex–collider contacts in the last substep.
    pub contacts: u32,
    /// Close pairs given repulsion (summed over substeps).
    pub proximity_pairs: u32,
    /// Collisions found by CCD (summed).
    pub ccd_hits: u32,
    /// Largest number of impact zones in a substep.
    pub impact_zones: u32,
    /// Substeps whose fail-safe took its last resort.
    pub last_resorts: u32,
    /// Substeps in which a collision pool grew.
    pub pool_overflows: u32,
    /// Largest edge strain |l/l0 − 1| at the end of the frame.
    pub max_strain: f32,
    /// Isometric cloths: Gauss–Newton iterations, summed over every projection.
    pub newton_iterations: u32,
    /// Isometric cloths: largest Gauss–Newton iteration count of one substep.
    pub newton_max_iterations: u32,
    /// Isometric cloths: projections stopped by the Newton cap or the deadline.
    pub newton_unconverged: u32,
    /// Isometric cloths: nodes given contact rows, summed over substeps.
    pub contact_rows: u32,
    /// Isometric cloths: largest base-edge strain at the end of the frame,
    /// through the edge's midpoint node (Wang 2012 Fig. 4.2; `docs/methods/references.md`).
    pub base_strain_midpoint: f64,
    /// Isometric cloths: largest base-edge strain end to end.
    pub base_strain_end_to_end: f64,
    /// Isometric cloths: bending energy at the end of the frame (J, Wang 2012 eq. 3.8).
    pub bending_energy: f64,
    /// Isometric cloths: largest strain of the red–red rows (eq. 3.1) at the end of the
    /// frame, what `strain_tolerance` bounds (`max_strain` covers every subdivided edge).
    pub row_strain: f64,
    /// Baraff–Witkin cloths the frame stepped: without any, the fields marked "Baraff–Witkin
    /// cloths" are zero (not in weft 0.1's struct).
    pub baraff_witkin_cloths: u32,
    /// Isometric cloths the frame stepped: without any, the fields marked "Isometric cloths"
    /// are zero (not in weft 0.1's struct).
    pub isometric_cloths: u32,
}

/// What `weft_scene_load` read.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weft_scene_info {
    /// `sizeof(weft_scene_info)`, set by the caller.
    pub size: u32,
    /// Frames the scene asks for.
    pub frames: u32,
    /// Frames per second (the frame dt is 1/fps).
    pub fps: f32,
    /// Cloths created.
    pub cloth_count: u32,
    /// Colliders created.
    pub collider_count: u32,
}

/// A `#[repr(C)]` struct that begins with its own `u32` size, made only of integers, floats,
/// raw pointers and arrays or structs of them (every bit pattern is a value), grown only by
/// appending fields.
pub(crate) trait SizePrefixed: Copy {
    /// The C name, for messages.
    const NAME: &'static str;
    /// `sizeof` the struct in each earlier release of this major version, oldest (smallest)
    /// first; empty while it never grew.
    const RELEASED_SIZES: &'static [u32];
    /// The struct with every field at its default (`size` set to this library's size).
    fn defaults() -> Self;
}

/// `sizeof` the size-prefixed structs in weft 0.1 (the layout of `tests/c/weft_0_1/weft.h`).
mod released {
    pub(super) const CLOTH_DESC_0_1: u32 = 352;
    pub(super) const STEP_STATS_0_1: u32 = 168;
}

// Fields appended since a release start at or after that release's size, so an older
// struct's bytes (its trailing padding included) never land in a field it does not have.
const _: () = {
    assert!(std::mem::offset_of!(weft_cloth_desc, velocities) >= released::CLOTH_DESC_0_1 as usize);
    assert!(
        std::mem::offset_of!(weft_step_stats, baraff_witkin_cloths)
            >= released::STEP_STATS_0_1 as usize
    );
    assert!(std::mem::offset_of!(weft_world_desc, size) == 0);
    assert!(std::mem::offset_of!(weft_cloth_desc, size) == 0);
    assert!(std::mem::offset_of!(weft_collider_desc, size) == 0);
    assert!(std::mem::offset_of!(weft_step_stats, size) == 0);
    assert!(std::mem::offset_of!(weft_scene_info, size) == 0);
};

impl SizePrefixed for weft_world_desc {
    const NAME: &'static str = "weft_world_desc";
    const RELEASED_SIZES: &'static [u32] = &[];
    fn defaults() -> Self {
        Self::default_desc()
    }
}

impl SizePrefixed for weft_cloth_desc {
    const NAME: &'static str = "weft_cloth_desc";
    const RELEASED_SIZES: &'static [u32] = &[released::CLOTH_DESC_0_1];
    fn defaults() -> Self {
        Self::default_desc()
    }
}

impl SizePrefixed for weft_collider_desc {
    const NAME: &'static str = "weft_collider_desc";
    const RELEASED_SIZES: &'static [u32] = &[];
    fn defaults() -> Self {
        Self::default_desc()
    }
}

impl SizePrefixed for weft_step_stats {
    const NAME: &'static str = "weft_step_stats";
    const RELEASED_SIZES: &'static [u32] = &[released::STEP_STATS_0_1];
    fn defaults() -> Self {
        Self::from_stats(&FrameStats::default())
    }
}

impl SizePrefixed for weft_scene_info {
    const NAME: &'static str = "weft_scene_info";
    const RELEASED_SIZES: &'static [u32] = &[];
    fn defaults() -> Self {
        Self {
            size: std::mem::size_of::<Self>() as u32,
            frames: 0,
            fps: 0.0,
            cloth_count: 0,
            collider_count: 0,
        }
    }
}

/// `sizeof(T)` in the first release of this major version: what the exported
/// `*_desc_default` entry points of hosts built against that header fill.
pub(crate) fn first_size<T: SizePrefixed>() -> u32 {
    T::RELEASED_SIZES
        .first()
        .copied()
        .unwrap_or(std::mem::size_of::<T>() as u32)
}

/// The number of bytes of a caller's `T` whose leading field says `size`: this library's
/// `sizeof(T)` or one of the sizes `T` had in an earlier release of this major version;
/// anything else is `WEFT_STATUS_DESCRIPTOR_SIZE`.
pub(crate) fn accepted_size<T: SizePrefixed>(size: u32) -> Result<usize, FfiError> {
    let own = std::mem::size_of::<T>();
    if size as usize == own || T::RELEASED_SIZES.contains(&size) {
        return Ok(size as usize);
    }
    let first = T::RELEASED_SIZES.first().map_or(own, |&s| s as usize);
    let why = if (size as usize) < first {
        format!("below {first}, the size of the first release's {}", T::NAME)
    } else if size as usize > own {
        "larger than this library's: a newer weft.h (link a newer weft)".to_string()
    } else {
        "not the size of any release's struct".to_string()
    };
    let older: Vec<String> = T::RELEASED_SIZES.iter().map(u32::to_string).collect();
    let accepted = if older.is_empty() {
        format!("{own}")
    } else {
        format!("{own} or, from an older weft.h, {}", older.join(", "))
    };
    Err(FfiError::new(
        weft_status::WEFT_STATUS_DESCRIPTOR_SIZE,
        format!(
            "{}.size is {size}, {why}; weft {} accepts {accepted} \
             (set it to sizeof({}))",
            T::NAME,
            env!("CARGO_PKG_VERSION"),
            T::NAME
        ),
    ))
}

/// Reads the size-prefixed struct argument `arg`: NULL is `NULL_ARGUMENT`; the leading
/// `u32` size is read alone first ([`accepted_size`]), then that many bytes over the
/// defaults, so the fields an older struct lacks take their defaults. The copy's `size` is
/// this library's.
///
/// # Safety
/// A non-null `ptr` points at a readable struct that begins with a `u32` size and holds at
/// least that many bytes.
pub(crate) unsafe fn read_sized<T: SizePrefixed>(ptr: *const T, arg: &str) -> Result<T, FfiError> {
    if ptr.is_null() {
        return Err(FfiError::null(arg));
    }
    // SAFETY: non-null; every size-prefixed struct begins with its `u32` size (asserted
    // above for each), and `u32` has no invalid bit pattern.
    let size = unsafe { ptr.cast::<u32>().read_unaligned() };
    let n = accepted_size::<T>(size)?;
    let mut value = T::defaults();
    // SAFETY: the caller's struct holds `n` readable bytes (its size); `value` holds
    // size_of::<T>() ≥ n; they do not overlap; `T` is plain data (`SizePrefixed`), so
    // the bytes of an older layout of it are valid values of the fields they cover.
    unsafe {
        std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), (&raw mut value).cast::<u8>(), n);
        (&raw mut value)
            .cast::<u32>()
            .write(std::mem::size_of::<T>() as u32);
    }
    Ok(value)
}

/// Writes `value` into the caller's size-prefixed out-struct `arg`: NULL is
/// `NULL_ARGUMENT`; the caller's `size` is read first ([`accepted_size`]) and only that many
/// bytes are written (an older struct gets the fields it has); its `size` stays the caller's.
///
/// # Safety
/// A non-null `ptr` points at a writable struct that begins with a `u32` size and holds at
/// least that many bytes.
pub(crate) unsafe fn write_sized<T: SizePrefixed>(
    ptr: *mut T,
    arg: &str,
    value: &T,
) -> Result<(), FfiError> {
    if ptr.is_null() {
        return Err(FfiError::null(arg));
    }
    // SAFETY: as in `read_sized`.
    let size = unsafe { ptr.cast::<u32>().read_unaligned() };
    let n = accepted_size::<T>(size)?;
    // SAFETY: the caller's struct holds `n` writable bytes; `value` holds size_of::<T>() ≥ n;
    // they do not overlap (`value` is weft's).
    unsafe {
        std::ptr::copy_nonoverlapping((value as *const T).cast::<u8>(), ptr.cast::<u8>(), n);
        ptr.cast::<u32>().write_unaligned(size);
    }
    Ok(())
}

/// Fills the caller's `T` of `size` bytes with the defaults (`size` set to `size`).
///
/// # Safety
/// A non-null `ptr` points at `size` writable bytes.
pub(crate) unsafe fn init_sized<T: SizePrefixed>(
    ptr: *mut T,
    size: u32,
    arg: &str,
) -> Result<(), FfiError> {
    if ptr.is_null() {
        return Err(FfiError::null(arg));
    }
    let n = accepted_size::<T>(size)?;
    let value = T::defaults();
    // SAFETY: the caller's struct holds `n` = `size` writable bytes (this function's
    // contract); `value` holds size_of::<T>() ≥ n; no overlap.
    unsafe {
        std::ptr::copy_nonoverlapping((&raw const value).cast::<u8>(), ptr.cast::<u8>(), n);
        ptr.cast::<u32>().write_unaligned(size);
    }
    Ok(())
}

/// Checks that a struct's leading `size` is one this library accepts ([`accepted_size`]).
pub(crate) fn check_size<T: SizePrefixed>(size: u32) -> Result<(), FfiError> {
    accepted_size::<T>(size).map(drop)
}

fn finite(v: f32, what: &str) -> Result<f32, FfiError> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(FfiError::non_finite(what))
    }
}

fn finite64(v: f64, what: &str) -> Result<f64, FfiError> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(FfiError::non_finite(what))
    }
}

fn vec3(v: [f32; 3], what: &str) -> Result<Vec3, FfiError> {
    let v = Vec3::from_array(v);
    if v.is_finite() {
        Ok(v)
    } else {
        Err(FfiError::non_finite(what))
    }
}

fn non_negative(v: f32, what: &str) -> Result<f32, FfiError> {
    if finite(v, what)? >= 0.0 {
        Ok(v)
    } else {
        Err(FfiError::invalid(format!(
            "`{what}` must be non-negative, got {v}"
        )))
    }
}

fn positive(v: f32, what: &str) -> Result<f32, FfiError> {
    if finite(v, what)? > 0.0 {
        Ok(v)
    } else {
        Err(FfiError::invalid(format!(
            "`{what}` must be positive, got {v}"
        )))
    }
}

/// Reads `len` elements behind `ptr` (NULL is an error).
///
/// # Safety
/// A non-null `ptr` must point at `len` readable, initialised `T`s.
unsafe fn slice<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<&'a [T], FfiError> {
    if ptr.is_null() {
        return Err(FfiError::null(what));
    }
    // SAFETY: non-null, and the caller guarantees `len` readable elements.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Checks a vertex or triangle count against its range.
fn count(n: u32, min: u32, max: u32, what: &str) -> Result<usize, FfiError> {
    if (min..=max).contains(&n) {
        Ok(n as usize)
    } else {
        Err(FfiError::invalid(format!(
            "`{what}` is {n}, must be in {min}..={max}"
        )))
    }
}

/// A triangle mesh from caller arrays: counts in range, coordinates finite,
/// indices below the vertex count.
///
/// # Safety
/// The pointers must hold `3 * vertices` floats and `3 * triangles` indices.
pub(crate) unsafe fn read_mesh(
    vertices: u32,
    positions: *const f32,
    triangles: u32,
    indices: *const u32,
    what: &str,
) -> Result<TriMesh, FfiError> {
    let n = count(
        vertices,
        3,
        WEFT_MAX_VERTICES,
        &format!("{what} vertex count"),
    )?;
    let m = count(
        triangles,
        1,
        WEFT_MAX_TRIANGLES,
        &format!("{what} triangle count"),
    )?;
    // SAFETY: the caller guarantees the lengths (3 per vertex, 3 per triangle).
    let xs = unsafe { slice(positions, 3 * n, &format!("{what} positions"))? };
    // SAFETY: as above.
    let ts = unsafe { slice(indices, 3 * m, &format!("{what} triangles"))? };
    if let Some(i) = xs.iter().position(|x| !x.is_finite()) {
        return Err(FfiError::non_finite(&format!(
            "{what} positions[{i}] (vertex {})",
            i / 3
        )));
    }
    if let Some(i) = ts.iter().position(|&t| t as usize >= n) {
        return Err(FfiError::out_of_range(format!(
            "{what} triangles[{i}] (triangle {}) is {}, the mesh has {n} vertices",
            i / 3,
            ts[i]
        )));
    }
    Ok(TriMesh {
        positions: xs
            .chunks_exact(3)
            .map(|p| Vec3::new(p[0], p[1], p[2]))
            .collect(),
        triangles: ts.chunks_exact(3).map(|t| [t[0], t[1], t[2]]).collect(),
        corner_uvs: None,
    })
}

/// A value outside its `limits` range, as `WEFT_STATUS_INVALID_ARGUMENT`.
pub(crate) fn range(e: crate::limits::RangeError) -> FfiError {
    FfiError::invalid(e.to_string())
}

/// A validated pose: the position within ±`WEFT_MAX_COORDINATE`, the quaternion of unit norm
/// (within `WEFT_QUATERNION_NORM_TOLERANCE`), returned normalised.
pub(crate) fn read_pose(p: &weft_pose) -> Result<Pose, FfiError> {
    let translation = vec3(p.position, "pose.position")?;
    crate::limits::check_point("pose.position", translation).map_err(range)?;
    let q = Quat::from_array(p.rotation);
    if !q.is_finite() {
        return Err(FfiError::non_finite("pose.rotation"));
    }
    let rotation = crate::limits::check_quaternion("pose.rotation", q).map_err(range)?;
    Ok(Pose {
        translation,
        rotation,
    })
}

impl weft_world_desc {
    /// The defaults (the scene-file defaults).
    pub(crate) fn default_desc() -> Self {
        let s = WorldSettings::default();
        Self {
            size: std::mem::size_of::<Self>() as u32,
            worker_threads: 0,
            gravity: s.gravity.to_array(),
            substeps: s.substeps,
            frame_budget_ms: 0.0,
            cg_max_iterations: s.budget.cg_max_iterations,
            newton_max_iterations: s.budget.newton_max_iterations,
            max_stretch_change: s.step_control.max_stretch_change,
            max_halvings: s.step_control.max_halvings,
            governor: WEFT_GOVERNOR_FIXED,
            wind: weft_wind::default_desc(),
        }
    }

    /// Validated world settings.
    pub(crate) fn settings(&self) -> Result<WorldSettings, FfiError> {
        check_size::<Self>(self.size)?;
        let gravity = vec3(self.gravity, "gravity")?;
        crate::limits::check_gravity(gravity).map_err(range)?;
        count(self.substeps, 1, 1000, "substeps")?;
        count(self.worker_threads, 0, WEFT_MAX_THREADS, "worker_threads")?;
        let ms = finite64(self.frame_budget_ms, "frame_budget_ms")?;
        if ms < 0.0 {
            return Err(FfiError::invalid(format!(
                "`frame_budget_ms` must be ≥ 0 (0: no budget), got {ms}"
            )));
        }
        count(self.cg_max_iterations, 1, u32::MAX, "cg_max_iterations")?;
        count(
            self.newton_max_iterations,
            1,
            u32::MAX,
            "newton_max_iterations",
        )?;
        positive(self.max_stretch_change, "max_stretch_change")?;
        count(self.max_halvings, 0, 16, "max_halvings")?;
        let governor = match self.governor {
            WEFT_GOVERNOR_FIXED => GovernorMode::Fixed,
            WEFT_GOVERNOR_ADAPTIVE => GovernorMode::Adaptive,
            other => {
                return Err(FfiError::invalid(format!(
                    "`governor` is {other}, not a WEFT_GOVERNOR_* value"
                )));
            }
        };
        if governor == GovernorMode::Adaptive && ms <= 0.0 {
            return Err(FfiError::invalid(
                "`governor` is WEFT_GOVERNOR_ADAPTIVE but `frame_budget_ms` is 0 (no budget to adapt to)",
            ));
        }
        let wind = self.wind.read()?;
        Ok(WorldSettings {
            gravity,
            substeps: self.substeps,
            budget: Budget {
                frame_ms: (ms > 0.0).then_some(ms),
                cg_max_iterations: self.cg_max_iterations,
                newton_max_iterations: self.newton_max_iterations,
                governor,
            },
            step_control: StepControl {
                max_stretch_change: self.max_stretch_change,
                max_halvings: self.max_halvings,
            },
            energy_stats: false,
            wind,
        })
    }
}

impl weft_wind {
    /// No wind; the coefficients of `model::wind::Wind::default`.
    pub(crate) fn default_desc() -> Self {
        let w = Wind::default();
        Self {
            enabled: 0,
            velocity: w.velocity.to_array(),
            density: w.density,
            drag: w.drag,
            skin: w.skin,
            gust: w.gust,
            gust_period_s: w.gust_period_s,
        }
    }

    /// The validated wind, `None` when disabled (the scene file's `[wind]` checks).
    pub(crate) fn read(&self) -> Result<Option<Wind>, FfiError> {
        match self.enabled {
            0 => return Ok(None),
            1 => {}
            other => {
                return Err(FfiError::invalid(format!(
                    "`wind.enabled` is {other}, must be 0 or 1"
                )));
            }
        }
        let velocity = vec3(self.velocity, "wind.velocity")?;
        crate::limits::check_speed("wind.velocity", velocity).map_err(range)?;
        positive(self.density, "wind.density")?;
        positive(self.gust_period_s, "wind.gust_period_s")?;
        non_negative(self.drag, "wind.drag")?;
        non_negative(self.skin, "wind.skin")?;
        if !(0.0..=1.0).contains(&finite(self.gust, "wind.gust")?) {
            return Err(FfiError::invalid(format!(
                "`wind.gust` must be in [0, 1], got {}",
                self.gust
            )));
        }
        Ok(Some(Wind {
            velocity,
            density: self.density,
            drag: self.drag,
            skin: self.skin,
            gust: self.gust,
            gust_period_s: self.gust_period_s,
        }))
    }
}

impl weft_isometric_settings {
    /// The scene-file defaults (`[solver.isometric]`, `[cloth.isometric]`).
    pub(crate) fn default_desc() -> Self {
        let d = IsometricDesc::default();
        let p = ProjectionSettings::default();
        Self {
            strain_tolerance: p.tolerance,
            newton_max_iterations: p.max_iterations,
            cg_max_iterations: p.cg.max_iterations,
            cg_tolerance: p.cg.tolerance,
            coupling: WEFT_COUPLING_SIMULTANEOUS,
            integrator: WEFT_INTEGRATOR_BACKWARD_EULER,
            second_target: WEFT_SECOND_TARGET_PREDICTION,
            rest_shape: WEFT_REST_SHAPE_INPUT,
            friction_compliance: d.step.friction_compliance.unwrap_or(1e-3),
            boundary_compliance: d.boundary_compliance,
            conforming_compliance: d.conforming_compliance,
            // The scene file's default k_b (cloth-like), not the model's 1e-3.
            bending_stiffness: 1e-5,
            proximal_weight: d.proximal_weight,
            contact_compliance: d.step.contact_compliance,
            gauss_newton_iterations: p.gauss_newton_iterations,
            contacts: if d.step.unilateral_contacts {
                WEFT_CONTACTS_UNILATERAL
            } else {
                WEFT_CONTACTS_EQUALITY
            },
            strain_test: if p.test_monitored_strain {
                WEFT_STRAIN_TEST_BASE_EDGES
            } else {
                WEFT_STRAIN_TEST_ROWS
            },
            contact_rounds: d.step.contact_rounds,
            contact_margin: d.step.contact_margin,
        }
    }

    /// The validated model settings (the checks of the scene file's
    /// `[solver.isometric]` and `[cloth.isometric]`, field names prefixed
    /// `isometric.`).
    fn read(&self) -> Result<IsometricDesc, FfiError> {
        let open_unit = |v: f64, what: &str| -> Result<f64, FfiError> {
            if finite64(v, what)? > 0.0 && v < 1.0 {
                Ok(v)
            } else {
                Err(FfiError::invalid(format!(
                    "`{what}` must be in (0, 1), got {v}"
                )))
            }
        };
        let strain_tolerance = open_unit(self.strain_tolerance, "isometric.strain_tolerance")?;
        let cg_tolerance = open_unit(self.cg_tolerance, "isometric.cg_tolerance")?;
        count(
            self.newton_max_iterations,
            1,
            u32::MAX,
            "isometric.newton_max_iterations",
        )?;
        count(
            self.cg_max_iterations,
            1,
            u32::MAX,
            "isometric.cg_max_iterations",
        )?;
        for (v, what) in [
            (self.friction_compliance, "isometric.friction_compliance"),
            (self.boundary_compliance, "isometric.boundary_compliance"),
            (
                self.conforming_compliance,
                "isometric.conforming_compliance",
            ),
            (self.bending_stiffness, "isometric.bending_stiffness"),
            (self.proximal_weight, "isometric.proximal_weight"),
            (self.contact_compliance, "isometric.contact_compliance"),
            (self.contact_margin, "isometric.contact_margin"),
        ] {
            if finite64(v, what)? < 0.0 {
                return Err(FfiError::invalid(format!(
                    "`{what}` must be non-negative, got {v}"
                )));
            }
        }
        let choice = |v: u32, what: &str, prefix: &str| {
            FfiError::invalid(format!("`{what}` is {v}, not a {prefix}* value"))
        };
        let coupling = match self.coupling {
            WEFT_COUPLING_STAGGERED => Coupling::Staggered,
            WEFT_COUPLING_SIMULTANEOUS => Coupling::Simultaneous,
            v => return Err(choice(v, "isometric.coupling", "WEFT_COUPLING_")),
        };
        let integrator = match self.integrator {
            WEFT_INTEGRATOR_BACKWARD_EULER => Integrator::BackwardEuler,
            WEFT_INTEGRATOR_BDF2 => Integrator::Bdf2,
            v => return Err(choice(v, "isometric.integrator", "WEFT_INTEGRATOR_")),
        };
        let second_target = match self.second_target {
            WEFT_SECOND_TARGET_PREDICTION => SecondTarget::Prediction,
            WEFT_SECOND_TARGET_COLLIDED => SecondTarget::Collided,
            v => {
                return Err(choice(v, "isometric.second_target", "WEFT_SECOND_TARGET_"));
            }
        };
        let unilateral_contacts = match self.contacts {
            WEFT_CONTACTS_UNILATERAL => true,
            WEFT_CONTACTS_EQUALITY => false,
            v => return Err(choice(v, "isometric.contacts", "WEFT_CONTACTS_")),
        };
        let test_monitored_strain = match self.strain_test {
            WEFT_STRAIN_TEST_ROWS => false,
            WEFT_STRAIN_TEST_BASE_EDGES => true,
            v => return Err(choice(v, "isometric.strain_test", "WEFT_STRAIN_TEST_")),
        };
        let rest_shape = match self.rest_shape {
            WEFT_REST_SHAPE_FLAT => RestShape::Flat,
            WEFT_REST_SHAPE_INPUT => RestShape::Input,
            v => return Err(choice(v, "isometric.rest_shape", "WEFT_REST_SHAPE_")),
        };
        // The mapping of `scene::isometric_desc`, so a C host and a scene file
        // with the same values build the same cloth.
        let mut projection = ProjectionSettings {
            tolerance: strain_tolerance,
            max_iterations: self.newton_max_iterations,
            gauss_newton_iterations: self.gauss_newton_iterations,
            test_monitored_strain,
            ..ProjectionSettings::default()
        };
        projection.cg.max_iterations = self.cg_max_iterations;
        projection.cg.tolerance = cg_tolerance;
        Ok(IsometricDesc {
            bending_stiffness: self.bending_stiffness,
            rest_shape,
            proximal_weight: self.proximal_weight,
            boundary_compliance: self.boundary_compliance,
            conforming_compliance: self.conforming_compliance,
            integrator,
            step: IsometricSettings {
                projection,
                coupling,
                second_target,
                friction_compliance: Some(self.friction_compliance),
                contact_compliance: self.contact_compliance,
                contact_rounds: self.contact_rounds,
                contact_margin: self.contact_margin,
                unilateral_contacts,
                ..IsometricSettings::default()
            },
        })
    }
}

impl weft_cloth_desc {
    /// The defaults (the scene-file defaults), with no arrays.
    pub(crate) fn default_desc() -> Self {
        let c = CollisionSettings::default();
        let sl = StrainLimit::default();
        let bw = BwSettings::default();
        Self {
            size: std::mem::size_of::<Self>() as u32,
            vertex_count: 0,
            positions: std::ptr::null(),
            triangle_count: 0,
            triangles: std::ptr::null(),
            uvs: std::ptr::null(),
            masses: std::ptr::null(),
            density: 0.1,
            thickness: 0.004,
            friction: 0.3,
            air_damping: 0.0,
            initial_velocity: [0.0; 3],
            model: WEFT_MODEL_BARAFF_WITKIN,
            // The Rust API's material (`BwSettings::default()`), as the scene format's.
            material: weft_material {
                stretch_u: bw.membrane.stretch_u,
                stretch_v: bw.membrane.stretch_v,
                shear: bw.membrane.shear,
                bend: bw.bend.stiffness,
                stretch_damping: bw.membrane.stretch_damping,
                shear_damping: bw.membrane.shear_damping,
                bend_damping: bw.bend.damping,
                rest_stretch_u: bw.membrane.rest_stretch_u,
                rest_stretch_v: bw.membrane.rest_stretch_v,
            },
            baraff_witkin: weft_bw_settings {
                rest_angles: WEFT_REST_ANGLES_FLAT,
                jacobian: WEFT_JACOBIAN_DEFINITE,
                cg_max_iterations: 200,
                cg_tolerance: 1e-3,
                preconditioner: WEFT_PRECONDITIONER_BLOCK_JACOBI,
            },
            collision: weft_collision_desc {
                self_collision: 0,
                repulsion_stiffness: c.repulsion_stiffness,
                strain_limit: sl.max_stretch,
                strain_iterations: sl.iterations,
                ccd_rounds: c.ccd_rounds,
                max_zone_rounds: c.max_zone_rounds,
                response_passes: c.response_passes,
            },
            name: std::ptr::null(),
            isometric: weft_isometric_settings::default_desc(),
            bending_model: WEFT_BENDING_BARAFF_WITKIN,
            bending_integration: WEFT_BENDING_INTEGRATION_IMPLICIT,
            velocity_smoothing: 0.0,
            smoothing_iterations: 8,
            velocities: std::ptr::null(),
        }
    }

    /// A validated [`ClothDesc`], the optional per-vertex masses and, for
    /// `WEFT_MODEL_ISOMETRIC`, the isometric model.
    ///
    /// # Safety
    /// The pointers must hold the lengths the field docs give; `name`, when
    /// not NULL, must be NUL-terminated.
    pub(crate) unsafe fn read(&self) -> Result<ClothSpec, FfiError> {
        check_size::<Self>(self.size)?;
        if self.model != WEFT_MODEL_BARAFF_WITKIN && self.model != WEFT_MODEL_ISOMETRIC {
            return Err(FfiError::new(
                weft_status::WEFT_STATUS_UNSUPPORTED,
                format!(
                    "cloth model {} is not supported (WEFT_MODEL_BARAFF_WITKIN = \
                     {WEFT_MODEL_BARAFF_WITKIN}, WEFT_MODEL_ISOMETRIC = {WEFT_MODEL_ISOMETRIC})",
                    self.model
                ),
            ));
        }
        // Checked whatever the model, so a bad value never waits for the
        // day a host switches models.
        let isometric = self.isometric.read()?;
        if self.model == WEFT_MODEL_ISOMETRIC && !self.masses.is_null() {
            return Err(FfiError::invalid(
                "`masses` must be NULL with WEFT_MODEL_ISOMETRIC: the simulated mesh is the \
                 4:1 subdivision, with more vertices than the caller's arrays",
            ));
        }
        // SAFETY: forwarded from this function's contract.
        let mut mesh = unsafe {
            read_mesh(
                self.vertex_count,
                self.positions,
                self.triangle_count,
                self.triangles,
                "cloth",
            )?
        };
        let n = mesh.num_vertices();
        if !self.uvs.is_null() {
            // SAFETY: a non-null `uvs` holds 2 floats per vertex (field doc).
            let uv = unsafe { slice(self.uvs, 2 * n, "uvs")? };
            if let Some(i) = uv.iter().position(|x| !x.is_finite()) {
                return Err(FfiError::non_finite(&format!(
                    "uvs[{i}] (vertex {})",
                    i / 2
                )));
            }
            let at = |v: u32| Vec2::new(uv[2 * v as usize], uv[2 * v as usize + 1]);
            mesh.corner_uvs = Some(mesh.triangles.iter().map(|t| t.map(at)).collect());
        } else {
            mesh.corner_uvs = None;
        }
        let masses = if self.masses.is_null() {
            positive(self.density, "density")?;
            None
        } else {
            // SAFETY: a non-null `masses` holds one float per vertex (field doc).
            let m = unsafe { slice(self.masses, n, "masses")? };
            if let Some(i) = m.iter().position(|x| !x.is_finite()) {
                return Err(FfiError::non_finite(&format!("masses[{i}]")));
            }
            if let Some(i) = m.iter().position(|x| *x <= 0.0) {
                return Err(FfiError::invalid(format!(
                    "masses[{i}] must be positive, got {}",
                    m[i]
                )));
            }
            Some(m.to_vec())
        };
        let velocities = if self.velocities.is_null() {
            None
        } else {
            if self.model == WEFT_MODEL_ISOMETRIC {
                return Err(FfiError::invalid(
                    "`velocities` must be NULL with WEFT_MODEL_ISOMETRIC: the simulated mesh is \
                     the 4:1 subdivision (set its velocities with weft_cloth_set_state)",
                ));
            }
            // SAFETY: a non-null `velocities` holds 3 floats per vertex (field doc).
            let v = unsafe { slice(self.velocities, 3 * n, "velocities")? };
            if let Some(i) = v.iter().position(|x| !x.is_finite()) {
                return Err(FfiError::non_finite(&format!(
                    "velocities[{i}] (vertex {})",
                    i / 3
                )));
            }
            let v: Vec<Vec3> = v
                .chunks_exact(3)
                .map(|p| Vec3::new(p[0], p[1], p[2]))
                .collect();
            for (i, v) in v.iter().enumerate() {
                crate::limits::check_speed("velocities", *v).map_err(|e| {
                    FfiError::invalid(format!("velocities of vertex {i}: {}", e.message))
                })?;
            }
            Some(v)
        };
        let name = if self.name.is_null() {
            "cloth".to_string()
        } else {
            // SAFETY: a non-null `name` is NUL-terminated (field doc).
            unsafe { CStr::from_ptr(self.name) }
                .to_str()
                .map_err(|_| FfiError::invalid("`name` is not valid UTF-8"))?
                .to_string()
        };
        let m = &self.material;
        let values = m.named_values();
        let (stiffnesses, rest_stretches) = values.split_at(7);
        for &(v, what) in stiffnesses {
            if finite64(v, what)? < 0.0 {
                return Err(FfiError::invalid(format!(
                    "`{what}` must be non-negative, got {v}"
                )));
            }
        }
        for &(v, what) in rest_stretches {
            if finite64(v, what)? <= 0.0 {
                return Err(FfiError::invalid(format!(
                    "`{what}` must be positive, got {v}"
                )));
            }
        }
        let bw = &self.baraff_witkin;
        let rest_angles = match bw.rest_angles {
            WEFT_REST_ANGLES_FLAT => RestAngles::Flat,
            WEFT_REST_ANGLES_INITIAL => RestAngles::Initial,
            other => {
                return Err(FfiError::invalid(format!(
                    "`baraff_witkin.rest_angles` is {other}, not a WEFT_REST_ANGLES_* value"
                )));
            }
        };
        let preconditioner = match bw.preconditioner {
            WEFT_PRECONDITIONER_BLOCK_JACOBI => Preconditioner::BlockJacobi,
            WEFT_PRECONDITIONER_BLOCK_SGS => Preconditioner::BlockSgs,
            WEFT_PRECONDITIONER_BLOCK_IC0 => Preconditioner::BlockIc0,
            other => {
                return Err(FfiError::invalid(format!(
                    "`baraff_witkin.preconditioner` is {other}, not a WEFT_PRECONDITIONER_* value"
                )));
            }
        };
        let jacobian = match bw.jacobian {
            WEFT_JACOBIAN_DEFINITE => JacobianMode::Definite,
            WEFT_JACOBIAN_EXACT => JacobianMode::Exact,
            other => {
                return Err(FfiError::invalid(format!(
                    "`baraff_witkin.jacobian` is {other}, not a WEFT_JACOBIAN_* value"
                )));
            }
        };
        count(
            bw.cg_max_iterations,
            1,
            u32::MAX,
            "baraff_witkin.cg_max_iterations",
        )?;
        let tol = finite64(bw.cg_tolerance, "baraff_witkin.cg_tolerance")?;
        if !(tol > 0.0 && tol < 1.0) {
            return Err(FfiError::invalid(format!(
                "`baraff_witkin.cg_tolerance` must be in (0, 1), got {tol}"
            )));
        }
        let c = &self.collision;
        if c.self_collision > 1 {
            return Err(FfiError::invalid(format!(
                "`collision.self_collision` is {}, must be 0 or 1",
                c.self_collision
            )));
        }
        non_negative(c.repulsion_stiffness, "collision.repulsion_stiffness")?;
        let strain = non_negative(c.strain_limit, "collision.strain_limit")?;
        if strain >= 1.0 {
            return Err(FfiError::invalid(format!(
                "`collision.strain_limit` must be in [0, 1), got {strain}"
            )));
        }
        count(c.max_zone_rounds, 1, u32::MAX, "collision.max_zone_rounds")?;
        count(
            c.response_passes,
            0,
            MAX_RESPONSE_PASSES,
            "collision.response_passes",
        )?;
        let bending = match self.bending_model {
            WEFT_BENDING_BARAFF_WITKIN => BendingModel::BaraffWitkin,
            WEFT_BENDING_DIHEDRAL => BendingModel::DiscreteShell,
            other => {
                return Err(FfiError::invalid(format!(
                    "`bending_model` is {other}, not a WEFT_BENDING_* value"
                )));
            }
        };
        let bending_integration = match self.bending_integration {
            WEFT_BENDING_INTEGRATION_IMPLICIT => BendingIntegration::Implicit,
            WEFT_BENDING_INTEGRATION_IMEX => BendingIntegration::Imex,
            other => {
                return Err(FfiError::invalid(format!(
                    "`bending_integration` is {other}, not a WEFT_BENDING_INTEGRATION_* value"
                )));
            }
        };
        let smoothing = non_negative(self.velocity_smoothing, "velocity_smoothing")?;
        let thickness = non_negative(self.thickness, "thickness")?;
        let friction = non_negative(self.friction, "friction")?;
        let air_damping = non_negative(self.air_damping, "air_damping")?;
        let initial_velocity = vec3(self.initial_velocity, "initial_velocity")?;
        let desc = ClothDesc {
            name,
            mesh,
            // With per-vertex masses the density only builds placeholder
            // lumped masses, replaced right after creation.
            density: if masses.is_some() { 1.0 } else { self.density },
            thickness,
            friction,
            air_damping,
            model: BwSettings {
                membrane: MembraneParams {
                    stretch_u: m.stretch_u,
                    stretch_v: m.stretch_v,
                    shear: m.shear,
                    rest_stretch_u: m.rest_stretch_u,
                    rest_stretch_v: m.rest_stretch_v,
                    stretch_damping: m.stretch_damping,
                    shear_damping: m.shear_damping,
                },
                bend: BendParams {
                    stiffness: m.bend,
                    damping: m.bend_damping,
                },
                rest_angles,
                bending,
                bending_integration,
                jacobian,
                pcg: PcgSettings {
                    max_iterations: bw.cg_max_iterations,
                    tolerance: tol,
                },
                preconditioner,
            },
            pins: Vec::new(),
            pin_velocity: Vec3::ZERO,
            initial_velocity,
            collision: CollisionSettings {
                self_collision: c.self_collision == 1,
                thickness,
                repulsion_stiffness: c.repulsion_stiffness,
                friction,
                strain_limit: (strain > 0.0).then_some(StrainLimit {
                    max_stretch: strain,
                    max_compress: strain,
                    iterations: c.strain_iterations,
                    method: StrainMethod::GaussSeidel,
                }),
                ccd_rounds: c.ccd_rounds,
                max_zone_rounds: c.max_zone_rounds,
                // The mapping of the scene file's `[cloth.collision]`.
                velocity_smoothing: (smoothing > 0.0 && self.smoothing_iterations > 0)
                    .then_some((smoothing, self.smoothing_iterations)),
                response_passes: c.response_passes,
            },
        };
        Ok(ClothSpec {
            desc,
            masses,
            velocities,
            isometric: (self.model == WEFT_MODEL_ISOMETRIC).then_some(isometric),
        })
    }
}

/// A cloth read from C.
pub(crate) struct ClothSpec {
    /// The cloth (for the isometric model: its input mesh and collision settings).
    pub(crate) desc: ClothDesc,
    /// Per-vertex masses replacing the lumped ones (Baraff–Witkin only).
    pub(crate) masses: Option<Vec<f32>>,
    /// Per-vertex initial velocities replacing `initial_velocity` (Baraff–Witkin only).
    pub(crate) velocities: Option<Vec<Vec3>>,
    /// The isometric model, for `WEFT_MODEL_ISOMETRIC`.
    pub(crate) isometric: Option<IsometricDesc>,
}

/// A collider read from C: analytic, or a triangle mesh.
pub(crate) enum ColliderSpec {
    Analytic(Shape),
    Mesh(TriMesh),
}

impl weft_collider_desc {
    /// The defaults: a static plane at the origin, friction 0.3.
    pub(crate) fn default_desc() -> Self {
        Self {
            size: std::mem::size_of::<Self>() as u32,
            shape: WEFT_SHAPE_PLANE,
            radius: 0.0,
            half_length: 0.0,
            half_extents: [0.0; 3],
            mesh_vertex_count: 0,
            mesh_positions: std::ptr::null(),
            mesh_triangle_count: 0,
            mesh_triangles: std::ptr::null(),
            pose: weft_pose {
                position: [0.0; 3],
                rotation: [0.0, 0.0, 0.0, 1.0],
            },
            friction: 0.3,
            thickness: 0.0,
        }
    }

    /// The validated shape or mesh, pose, friction and thickness.
    ///
    /// # Safety
    /// For `WEFT_SHAPE_TRIANGLE_MESH` the mesh pointers must hold the lengths
    /// the field docs give.
    pub(crate) unsafe fn read(&self) -> Result<(ColliderSpec, Pose, f32, f32), FfiError> {
        check_size::<Self>(self.size)?;
        let spec = match self.shape {
            WEFT_SHAPE_PLANE => ColliderSpec::Analytic(Shape::Plane),
            WEFT_SHAPE_SPHERE => ColliderSpec::Analytic(Shape::Sphere {
                radius: positive(self.radius, "radius")?,
            }),
            WEFT_SHAPE_CAPSULE => ColliderSpec::Analytic(Shape::Capsule {
                radius: positive(self.radius, "radius")?,
                half_length: positive(self.half_length, "half_length")?,
            }),
            WEFT_SHAPE_BOX => {
                let h = vec3(self.half_extents, "half_extents")?;
                // `h` is finite (checked above).
                if h.min_element() <= 0.0 {
                    return Err(FfiError::invalid(format!(
                        "`half_extents` must be positive, got {h}"
                    )));
                }
                ColliderSpec::Analytic(Shape::Cuboid { half_extents: h })
            }
            WEFT_SHAPE_TRIANGLE_MESH => {
                // SAFETY: forwarded from this function's contract.
                let mesh = unsafe {
                    read_mesh(
                        self.mesh_vertex_count,
                        self.mesh_positions,
                        self.mesh_triangle_count,
                        self.mesh_triangles,
                        "collider mesh",
                    )?
                };
                ColliderSpec::Mesh(mesh)
            }
            other => {
                return Err(FfiError::invalid(format!(
                    "`shape` is {other}, not a WEFT_SHAPE_* value"
                )));
            }
        };
        if let ColliderSpec::Analytic(shape) = &spec {
            crate::world::check_shape(shape).map_err(range)?;
        }
        let pose = read_pose(&self.pose)?;
        let friction = non_negative(self.friction, "friction")?;
        let thickness = non_negative(self.thickness, "thickness")?;
        if thickness > 0.0 && matches!(spec, ColliderSpec::Analytic(_)) {
            return Err(FfiError::invalid(format!(
                "`thickness` is {thickness}: only WEFT_SHAPE_TRIANGLE_MESH colliders take a \
                 thickness (analytic shapes keep the cloth's), leave it 0"
            )));
        }
        Ok((spec, pose, friction, thickness))
    }
}

impl weft_step_stats {
    /// The C view of a frame's statistics (`size` set).
    pub(crate) fn from_stats(s: &FrameStats) -> Self {
        let ms = |stage| s.stage_ms.get(stage);
        Self {
            size: std::mem::size_of::<Self>() as u32,
            deadline_hit: u32::from(s.deadline_hit),
            frame_ms: s.frame_ms,
            kinematics_ms: ms(Stage::Kinematics),
            contacts_ms: ms(Stage::Contacts),
            assemble_ms: ms(Stage::Assemble),
            solve_ms: ms(Stage::Solve),
            collide_ms: ms(Stage::Collide),
            finish_ms: ms(Stage::Finish),
            substeps: s.substeps,
            rejected_substeps: s.rejected_substeps,
            cg_iterations: s.cg_iterations,
            cg_max_iterations: s.cg_max_iterations,
            cg_residual: s.cg_residual,
            cg_unconverged: s.cg_unconverged,
            contacts: s.contacts,
            proximity_pairs: s.proximity_pairs,
            ccd_hits: s.ccd_hits,
            impact_zones: s.impact_zones,
            last_resorts: s.last_resorts,
            pool_overflows: s.pool_overflows,
            max_strain: s.max_strain,
            newton_iterations: s.newton_iterations,
            newton_max_iterations: s.newton_max_iterations,
            newton_unconverged: s.newton_unconverged,
            contact_rows: s.contact_rows,
            base_strain_midpoint: s.base_strain_midpoint,
            base_strain_end_to_end: s.base_strain_end_to_end,
            bending_energy: s.bending_energy,
            row_strain: s.row_strain,
            baraff_witkin_cloths: s.baraff_witkin_cloths,
            isometric_cloths: s.isometric_cloths,
        }
    }
}

#[cfg(all(test, feature = "scene"))]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::scene::Scene;

    /// The value a read accepted, or the refusal as the test's error.
    fn accepted<T>(r: Result<T, FfiError>) -> Result<T, String> {
        r.map_err(|e| format!("refused: {e:?}"))
    }

    fn scene(text: &str) -> Scene {
        Scene::from_toml(text, Path::new("inline.toml")).unwrap_or_else(|e| panic!("{e}"))
    }

    fn scene_isometric(s: &Scene) -> IsometricDesc {
        let found = s.entities.query::<&IsometricDesc>().iter().next().copied();
        found.unwrap_or_else(|| panic!("the scene has no isometric cloth"))
    }

    fn scene_cloth(s: &Scene) -> ClothDesc {
        let found = s.entities.query::<&ClothDesc>().iter().next().cloned();
        found.unwrap_or_else(|| panic!("the scene has no cloth"))
    }

    const GRID: &str = "[[cloth]]\n[cloth.grid]\nvertices = [3, 3]\nsize = [0.1, 0.1]\n";

    #[test]
    fn isometric_defaults_are_the_scene_file_defaults() -> Result<(), String> {
        let s = scene(&format!("[solver]\nmodel = \"isometric\"\n{GRID}"));
        let c = accepted(weft_isometric_settings::default_desc().read())?;
        assert_eq!(c, scene_isometric(&s));
        Ok(())
    }

    #[test]
    fn isometric_settings_map_like_the_scene_file() -> Result<(), String> {
        let s = scene(&format!(
            r#"[solver]
model = "isometric"
[solver.isometric]
strain_tolerance = 2e-3
newton_max_iterations = 7
cg_max_iterations = 123
cg_tolerance = 1e-5
coupling = "staggered"
integrator = "bdf2"
second_target = "collided"
friction_compliance = 2e-3
boundary_compliance = 3e-4
conforming_compliance = 4e-5
proximal_weight = 2e-6
contact_compliance = 3e-3
gauss_newton_iterations = 5
contacts = "equality"
strain_test = "base-edges"
contact_rounds = 3
contact_margin = 0.02
{GRID}
[cloth.isometric]
bending_stiffness = 5e-4
rest_shape = "flat"
"#
        ));
        let c = weft_isometric_settings {
            strain_tolerance: 2e-3,
            newton_max_iterations: 7,
            cg_max_iterations: 123,
            cg_tolerance: 1e-5,
            coupling: WEFT_COUPLING_STAGGERED,
            integrator: WEFT_INTEGRATOR_BDF2,
            second_target: WEFT_SECOND_TARGET_COLLIDED,
            rest_shape: WEFT_REST_SHAPE_FLAT,
            friction_compliance: 2e-3,
            boundary_compliance: 3e-4,
            conforming_compliance: 4e-5,
            bending_stiffness: 5e-4,
            proximal_weight: 2e-6,
            contact_compliance: 3e-3,
            gauss_newton_iterations: 5,
            contacts: WEFT_CONTACTS_EQUALITY,
            strain_test: WEFT_STRAIN_TEST_BASE_EDGES,
            contact_rounds: 3,
            contact_margin: 0.02,
        };
        let from_c = accepted(c.read())?;
        assert_eq!(from_c, scene_isometric(&s));
        assert_ne!(
            from_c,
            accepted(weft_isometric_settings::default_desc().read())?
        );
        Ok(())
    }

    /// Every isometric field, made NaN/infinite, negative or out of range, is
    /// refused with its status, and the message names the field.
    #[test]
    fn every_bad_isometric_value_names_its_field() -> Result<(), String> {
        type Edit = fn(&mut weft_isometric_settings);
        let nonfinite = weft_status::WEFT_STATUS_NON_FINITE;
        let invalid = weft_status::WEFT_STATUS_INVALID_ARGUMENT;
        let cases: [(Edit, &str, weft_status); 22] = [
            (
                |s| s.strain_tolerance = f64::NAN,
                "strain_tolerance",
                nonfinite,
            ),
            (|s| s.strain_tolerance = 0.0, "strain_tolerance", invalid),
            (|s| s.strain_tolerance = 1.0, "strain_tolerance", invalid),
            (
                |s| s.newton_max_iterations = 0,
                "newton_max_iterations",
                invalid,
            ),
            (|s| s.cg_max_iterations = 0, "cg_max_iterations", invalid),
            (
                |s| s.cg_tolerance = f64::INFINITY,
                "cg_tolerance",
                nonfinite,
            ),
            (|s| s.cg_tolerance = -1e-6, "cg_tolerance", invalid),
            (|s| s.coupling = 2, "coupling", invalid),
            (|s| s.integrator = 2, "integrator", invalid),
            (|s| s.second_target = 2, "second_target", invalid),
            (|s| s.contacts = 2, "contacts", invalid),
            (|s| s.strain_test = 2, "strain_test", invalid),
            (|s| s.rest_shape = 2, "rest_shape", invalid),
            (
                |s| s.friction_compliance = -1.0,
                "friction_compliance",
                invalid,
            ),
            (
                |s| s.friction_compliance = f64::NAN,
                "friction_compliance",
                nonfinite,
            ),
            (
                |s| s.boundary_compliance = -1.0,
                "boundary_compliance",
                invalid,
            ),
            (
                |s| s.boundary_compliance = f64::NEG_INFINITY,
                "boundary_compliance",
                nonfinite,
            ),
            (
                |s| s.conforming_compliance = -1.0,
                "conforming_compliance",
                invalid,
            ),
            (
                |s| s.conforming_compliance = f64::NAN,
                "conforming_compliance",
                nonfinite,
            ),
            (|s| s.bending_stiffness = -1.0, "bending_stiffness", invalid),
            (
                |s| s.bending_stiffness = f64::INFINITY,
                "bending_stiffness",
                nonfinite,
            ),
            (|s| s.cg_tolerance = 1.0, "cg_tolerance", invalid),
        ];
        for (edit, field, status) in cases {
            let mut s = weft_isometric_settings::default_desc();
            edit(&mut s);
            let e = s.read().err().ok_or_else(|| format!("{field} accepted"))?;
            assert_eq!(e.status, status, "{field}: {}", e.message);
            assert!(
                e.message.contains(&format!("isometric.{field}")),
                "{field}: {}",
                e.message
            );
        }
        Ok(())
    }

    #[test]
    fn isometric_model_creates_the_subdivided_cloth_and_refuses_masses() -> Result<(), String> {
        let s = scene(GRID);
        let mesh = scene_cloth(&s).mesh;
        let xs: Vec<f32> = mesh.positions.iter().flat_map(|p| p.to_array()).collect();
        let ts: Vec<u32> = mesh.triangles.iter().flatten().copied().collect();
        let mut d = weft_cloth_desc::default_desc();
        d.vertex_count = mesh.num_vertices() as u32;
        d.positions = xs.as_ptr();
        d.triangle_count = mesh.num_triangles() as u32;
        d.triangles = ts.as_ptr();
        d.model = WEFT_MODEL_ISOMETRIC;
        // SAFETY: the arrays hold the counts given.
        let spec = accepted(unsafe { d.read() })?;
        assert!(spec.isometric.is_some() && spec.masses.is_none());
        let iso = spec.isometric.ok_or("no isometric settings")?;
        let mut world = crate::World::new(WorldSettings::default());
        let i = world
            .add_isometric_cloth(spec.desc, iso)
            .map_err(|e| e.to_string())?;
        // 9 input vertices + 16 edges; 4 × 8 triangles.
        let cloth = world.cloth(i).ok_or("the cloth just added")?;
        assert_eq!(cloth.state().len(), 9 + 16);
        assert_eq!(cloth.triangles().len(), 32);
        let masses = [0.01f32; 9];
        d.masses = masses.as_ptr();
        // SAFETY: as above, and `masses` holds one float per vertex.
        let e = unsafe { d.read() }.err().ok_or("masses accepted")?;
        assert_eq!(e.status, weft_status::WEFT_STATUS_INVALID_ARGUMENT);
        assert!(e.message.contains("masses"), "{}", e.message);
        d.masses = std::ptr::null();
        d.model = 2;
        // SAFETY: as above.
        let e = unsafe { d.read() }.err().ok_or("unknown model accepted")?;
        assert_eq!(e.status, weft_status::WEFT_STATUS_UNSUPPORTED);
        Ok(())
    }

    /// The mesh as the flat arrays a C host passes.
    fn flat_arrays(mesh: &TriMesh) -> (Vec<f32>, Vec<u32>) {
        let xs = mesh.positions.iter().flat_map(|p| p.to_array()).collect();
        let ts = mesh.triangles.iter().flatten().copied().collect();
        (xs, ts)
    }

    /// The default cloth descriptor over `xs` (x, y, z per vertex) and `ts` (3 per triangle);
    /// the arrays must outlive its reads.
    fn desc_over(xs: &[f32], ts: &[u32]) -> weft_cloth_desc {
        let mut d = weft_cloth_desc::default_desc();
        d.vertex_count = (xs.len() / 3) as u32;
        d.positions = xs.as_ptr();
        d.triangle_count = (ts.len() / 3) as u32;
        d.triangles = ts.as_ptr();
        d
    }

    #[test]
    fn bending_and_smoothing_map_like_the_scene_file() -> Result<(), String> {
        let s = scene(&format!(
            "[solver]\nbending_integration = \"imex\"\n{GRID}\n[cloth.material]\nbending = \"dihedral\"\n\
             [cloth.collision]\nvelocity_smoothing = 0.5\nsmoothing_iterations = 5\n"
        ));
        let want = scene_cloth(&s);
        let (xs, ts) = flat_arrays(&want.mesh);
        let mut d = desc_over(&xs, &ts);
        d.bending_model = WEFT_BENDING_DIHEDRAL;
        d.bending_integration = WEFT_BENDING_INTEGRATION_IMEX;
        d.velocity_smoothing = 0.5;
        d.smoothing_iterations = 5;
        // SAFETY: the arrays hold the counts given.
        let got = accepted(unsafe { d.read() })?.desc;
        assert_eq!(got.model.bending, BendingModel::DiscreteShell);
        assert_eq!(got.model.bending, want.model.bending);
        assert_eq!(
            got.model.bending_integration,
            want.model.bending_integration
        );
        assert_eq!(
            got.collision.velocity_smoothing,
            want.collision.velocity_smoothing
        );
        assert_eq!(got.collision.velocity_smoothing, Some((0.5, 5)));
        d.smoothing_iterations = 0;
        // SAFETY: as above.
        let off = accepted(unsafe { d.read() })?.desc;
        assert_eq!(off.collision.velocity_smoothing, None);
        Ok(())
    }

    #[test]
    fn preconditioner_and_response_passes_map_like_the_scene_file() -> Result<(), String> {
        let s = scene(&format!(
            "[solver]\npreconditioner = \"block-ic0\"\n{GRID}\n[cloth.collision]\nresponse_passes = 3\n"
        ));
        let want = scene_cloth(&s);
        let (xs, ts) = flat_arrays(&want.mesh);
        let mut d = desc_over(&xs, &ts);
        // SAFETY: the arrays hold the counts given.
        let defaults = accepted(unsafe { d.read() })?.desc;
        assert_eq!(defaults.model.preconditioner, Preconditioner::BlockJacobi);
        assert_eq!(defaults.collision.response_passes, 0);
        d.baraff_witkin.preconditioner = WEFT_PRECONDITIONER_BLOCK_IC0;
        d.collision.response_passes = 3;
        // SAFETY: as above.
        let got = accepted(unsafe { d.read() })?.desc;
        assert_eq!(got.model.preconditioner, Preconditioner::BlockIc0);
        assert_eq!(got.model.preconditioner, want.model.preconditioner);
        assert_eq!(got.collision.response_passes, 3);
        assert_eq!(
            got.collision.response_passes,
            want.collision.response_passes
        );
        d.collision.response_passes = MAX_RESPONSE_PASSES + 1;
        // SAFETY: as above.
        let refused = unsafe { d.read() };
        assert!(
            refused.is_err(),
            "{} response passes accepted",
            MAX_RESPONSE_PASSES + 1
        );
        Ok(())
    }

    #[test]
    fn wind_and_governor_map_like_the_scene_file() -> Result<(), String> {
        let s = scene(&format!(
            "[budget]\nframe_ms = 20.0\ngovernor = \"adaptive\"\n\
             [wind]\nvelocity = [3.0, 0.0, 1.0]\ndensity = 1.25\ndrag = 1.1\nskin = 0.03\n\
             gust = 0.3\ngust_period_s = 1.5\n{GRID}"
        ));
        let mut d = weft_world_desc::default_desc();
        assert_eq!(accepted(d.settings())?.wind, None);
        d.frame_budget_ms = 20.0;
        d.governor = WEFT_GOVERNOR_ADAPTIVE;
        d.wind = weft_wind {
            enabled: 1,
            velocity: [3.0, 0.0, 1.0],
            density: 1.25,
            drag: 1.1,
            skin: 0.03,
            gust: 0.3,
            gust_period_s: 1.5,
        };
        let got = accepted(d.settings())?;
        assert_eq!(got.wind, s.settings.wind);
        assert!(got.wind.is_some());
        assert_eq!(got.budget.governor, GovernorMode::Adaptive);
        assert_eq!(got.budget.governor, s.settings.budget.governor);
        for (edit, field) in [
            (
                (|w: &mut weft_wind| w.velocity[1] = f32::NAN) as fn(&mut weft_wind),
                "wind.velocity",
            ),
            (|w| w.density = 0.0, "wind.density"),
            (|w| w.drag = -1.0, "wind.drag"),
            (|w| w.skin = f32::INFINITY, "wind.skin"),
            (|w| w.gust = 1.5, "wind.gust"),
            (|w| w.gust_period_s = -1.0, "wind.gust_period_s"),
            (|w| w.enabled = 3, "wind.enabled"),
        ] {
            let mut bad = d;
            edit(&mut bad.wind);
            let e = bad
                .settings()
                .err()
                .ok_or_else(|| format!("{field} accepted"))?;
            assert!(e.message.contains(field), "{field}: {}", e.message);
        }
        Ok(())
    }

    #[test]
    fn collider_thickness_only_on_meshes() -> Result<(), String> {
        let mut k = weft_collider_desc::default_desc();
        k.thickness = 0.01;
        // SAFETY: an analytic shape reads no arrays.
        let e = unsafe { k.read() }
            .err()
            .ok_or("an analytic collider with a thickness is accepted")?;
        assert!(e.message.contains("thickness"), "{}", e.message);
        let x = [0.0f32, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0];
        let t = [0u32, 1, 2];
        k.shape = WEFT_SHAPE_TRIANGLE_MESH;
        k.mesh_vertex_count = 3;
        k.mesh_positions = x.as_ptr();
        k.mesh_triangle_count = 1;
        k.mesh_triangles = t.as_ptr();
        // SAFETY: the arrays hold the counts given.
        let (_, _, _, thickness) = accepted(unsafe { k.read() })?;
        assert_eq!(thickness, 0.01);
        k.thickness = -0.01;
        // SAFETY: as above.
        assert!(unsafe { k.read() }.is_err());
        Ok(())
    }

    #[test]
    fn step_stats_carry_the_isometric_figures() {
        let s = FrameStats {
            newton_iterations: 7,
            newton_max_iterations: 3,
            newton_unconverged: 1,
            contact_rows: 11,
            base_strain_midpoint: 0.002,
            base_strain_end_to_end: 0.001,
            bending_energy: 0.5,
            row_strain: 0.003,
            ..FrameStats::default()
        };
        let c = weft_step_stats::from_stats(&s);
        assert_eq!(
            (
                c.newton_iterations,
                c.newton_max_iterations,
                c.newton_unconverged,
                c.contact_rows
            ),
            (7, 3, 1, 11)
        );
        assert_eq!(
            (
                c.base_strain_midpoint,
                c.base_strain_end_to_end,
                c.bending_energy,
                c.row_strain
            ),
            (0.002, 0.001, 0.5, 0.003)
        );
    }
}

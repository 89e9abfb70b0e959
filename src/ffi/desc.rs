//! `#[repr(C)]` descriptors and their validation into weft's Rust types.
//!
//! Every descriptor and out-struct begins with its own `size` (bytes), which
//! the caller sets to `sizeof(struct)`: a later weft may append fields and
//! still accept the older, shorter struct. This version accepts exactly its
//! own size. Enumerations inside descriptors are plain `uint32_t` with
//! `WEFT_*` constants, so an unknown value from C is an error, never
//! undefined behaviour.

use std::ffi::CStr;
use std::os::raw::c_char;

use glam::{Quat, Vec2, Vec3};

use super::status::{FfiError, weft_status};
use crate::collide::resolve::CollisionSettings;
use crate::collide::shapes::{Pose, Shape};
use crate::collide::strain_limit::{StrainLimit, StrainMethod};
use crate::integrate::implicit_euler::{BwSettings, RestAngles};
use crate::linalg::PcgSettings;
use crate::mesh::TriMesh;
use crate::model::baraff_witkin::{BendParams, JacobianMode, MembraneParams};
use crate::runtime::budget::Budget;
use crate::runtime::profile::Stage;
use crate::runtime::stats::FrameStats;
use crate::world::{ClothDesc, StepControl, WorldSettings};

/// Cloth model: Baraff–Witkin 1998 implicit cloth (the only model so far).
pub const WEFT_MODEL_BARAFF_WITKIN: u32 = 0;
/// Hinges rest flat.
pub const WEFT_REST_ANGLES_FLAT: u32 = 0;
/// Hinges rest at the angles of the input mesh.
pub const WEFT_REST_ANGLES_INITIAL: u32 = 1;
/// The negative semidefinite Jacobian treatment (the default).
pub const WEFT_JACOBIAN_DEFINITE: u32 = 0;
/// The exact Jacobian (may be indefinite).
pub const WEFT_JACOBIAN_EXACT: u32 = 1;
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
    /// Gravity (m/s²), y up: default (0, −9.81, 0).
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
    /// `3 * vertex_count` floats: x, y, z per vertex (m), the initial state.
    pub positions: *const f32,
    /// Number of triangles, 1..=`WEFT_MAX_TRIANGLES`.
    pub triangle_count: u32,
    /// `3 * triangle_count` vertex indices, counter-clockwise seen from the front.
    pub triangles: *const u32,
    /// Optional (NULL): `2 * vertex_count` floats, the rest shape's (u, v) per
    /// vertex in metres. NULL: the initial positions are the rest shape.
    pub uvs: *const f32,
    /// Optional (NULL): `vertex_count` masses (kg, positive). NULL: lumped
    /// masses from `density`.
    pub masses: *const f32,
    /// Areal density (kg/m²), used when `masses` is NULL.
    pub density: f32,
    /// Contact offset from colliders and collision thickness (m).
    pub thickness: f32,
    /// Coulomb friction of the cloth's surface.
    pub friction: f32,
    /// Air drag coefficient (1/s).
    pub air_damping: f32,
    /// Initial velocity of every vertex (m/s).
    pub initial_velocity: [f32; 3],
    /// `WEFT_MODEL_*`; only `WEFT_MODEL_BARAFF_WITKIN` for now, others give
    /// `WEFT_STATUS_UNSUPPORTED`.
    pub model: u32,
    /// The material.
    pub material: weft_material,
    /// Settings of `WEFT_MODEL_BARAFF_WITKIN`.
    pub baraff_witkin: weft_bw_settings,
    /// The collision stage.
    pub collision: weft_collision_desc,
    /// Optional (NULL): a NUL-terminated UTF-8 name.
    pub name: *const c_char,
}

/// A rigid placement: `rotation * p + position`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weft_pose {
    /// Position of the local origin (m).
    pub position: [f32; 3],
    /// Orientation quaternion x, y, z, w (normalised by weft; must not be zero).
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
    /// Sphere and capsule radius (m).
    pub radius: f32,
    /// Capsule half length (m).
    pub half_length: f32,
    /// Box half extents (m).
    pub half_extents: [f32; 3],
    /// Triangle mesh: number of vertices.
    pub mesh_vertex_count: u32,
    /// Triangle mesh: `3 * mesh_vertex_count` floats in the collider's frame.
    pub mesh_positions: *const f32,
    /// Triangle mesh: number of triangles.
    pub mesh_triangle_count: u32,
    /// Triangle mesh: `3 * mesh_triangle_count` indices.
    pub mesh_triangles: *const u32,
    /// Initial pose.
    pub pose: weft_pose,
    /// Coulomb friction (≥ 0).
    pub friction: f32,
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
    /// Collider contacts became constraints (ms).
    pub contacts_ms: f64,
    /// Forces and Jacobians assembled (ms).
    pub assemble_ms: f64,
    /// Linear solve (ms).
    pub solve_ms: f64,
    /// Collision stage (ms).
    pub collide_ms: f64,
    /// Write-back, friction, step control (ms).
    pub finish_ms: f64,
    /// Accepted substeps over all cloths.
    pub substeps: u32,
    /// Substeps rejected by step control.
    pub rejected_substeps: u32,
    /// CG iterations summed over every solve.
    pub cg_iterations: u32,
    /// Largest CG iteration count of one solve.
    pub cg_max_iterations: u32,
    /// Largest final relative residual of a solve.
    pub cg_residual: f64,
    /// Solves stopped by the cap or the deadline before the tolerance.
    pub cg_unconverged: u32,
    /// Vertex–collider contacts in the last substep.
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

/// Checks that a struct's leading `size` equals this library's `size_of::<T>()`.
pub(crate) fn check_size<T>(size: u32, what: &str) -> Result<(), FfiError> {
    let expected = std::mem::size_of::<T>();
    if size as usize == expected {
        Ok(())
    } else {
        Err(FfiError::new(
            weft_status::WEFT_STATUS_DESCRIPTOR_SIZE,
            format!("{what}.size is {size}, this library's {what} has {expected} bytes"),
        ))
    }
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

/// A validated pose (the quaternion normalised).
pub(crate) fn read_pose(p: &weft_pose) -> Result<Pose, FfiError> {
    let translation = vec3(p.position, "pose.position")?;
    let q = Quat::from_array(p.rotation);
    if !q.is_finite() {
        return Err(FfiError::non_finite("pose.rotation"));
    }
    let len = q.length();
    // `q` is finite, so `len` is too.
    if len <= 1e-6 {
        return Err(FfiError::invalid(format!(
            "`pose.rotation` must be a non-zero quaternion, its length is {len}"
        )));
    }
    Ok(Pose {
        translation,
        rotation: q.normalize(),
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
        }
    }

    /// Validated world settings.
    pub(crate) fn settings(&self) -> Result<WorldSettings, FfiError> {
        check_size::<Self>(self.size, "weft_world_desc")?;
        let gravity = vec3(self.gravity, "gravity")?;
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
        Ok(WorldSettings {
            gravity,
            substeps: self.substeps,
            budget: Budget {
                frame_ms: (ms > 0.0).then_some(ms),
                cg_max_iterations: self.cg_max_iterations,
                newton_max_iterations: self.newton_max_iterations,
                // The C descriptor has no governor yet: fixed caps, so a
                // host's results depend only on what it passed in.
                governor: crate::runtime::budget::GovernorMode::Fixed,
            },
            step_control: StepControl {
                max_stretch_change: self.max_stretch_change,
                max_halvings: self.max_halvings,
            },
            energy_stats: false,
            wind: None,
        })
    }
}

impl weft_cloth_desc {
    /// The defaults (the scene-file defaults), with no arrays.
    pub(crate) fn default_desc() -> Self {
        let c = CollisionSettings::default();
        let sl = StrainLimit::default();
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
            material: weft_material {
                stretch_u: 1000.0,
                stretch_v: 1000.0,
                shear: 100.0,
                bend: 1e-5,
                stretch_damping: 0.002,
                shear_damping: 0.002,
                bend_damping: 0.002,
                rest_stretch_u: 1.0,
                rest_stretch_v: 1.0,
            },
            baraff_witkin: weft_bw_settings {
                rest_angles: WEFT_REST_ANGLES_FLAT,
                jacobian: WEFT_JACOBIAN_DEFINITE,
                cg_max_iterations: 200,
                cg_tolerance: 1e-3,
            },
            collision: weft_collision_desc {
                self_collision: 0,
                repulsion_stiffness: c.repulsion_stiffness,
                strain_limit: sl.max_stretch,
                strain_iterations: sl.iterations,
                ccd_rounds: c.ccd_rounds,
                max_zone_rounds: c.max_zone_rounds,
            },
            name: std::ptr::null(),
        }
    }

    /// A validated [`ClothDesc`] and the optional per-vertex masses.
    ///
    /// # Safety
    /// The pointers must hold the lengths the field docs give; `name`, when
    /// not NULL, must be NUL-terminated.
    pub(crate) unsafe fn read(&self) -> Result<(ClothDesc, Option<Vec<f32>>), FfiError> {
        check_size::<Self>(self.size, "weft_cloth_desc")?;
        if self.model != WEFT_MODEL_BARAFF_WITKIN {
            return Err(FfiError::new(
                weft_status::WEFT_STATUS_UNSUPPORTED,
                format!(
                    "cloth model {} is not supported (WEFT_MODEL_BARAFF_WITKIN = {WEFT_MODEL_BARAFF_WITKIN})",
                    self.model
                ),
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
        for (v, what) in [
            (m.stretch_u, "material.stretch_u"),
            (m.stretch_v, "material.stretch_v"),
            (m.shear, "material.shear"),
            (m.bend, "material.bend"),
            (m.stretch_damping, "material.stretch_damping"),
            (m.shear_damping, "material.shear_damping"),
            (m.bend_damping, "material.bend_damping"),
        ] {
            if finite64(v, what)? < 0.0 {
                return Err(FfiError::invalid(format!(
                    "`{what}` must be non-negative, got {v}"
                )));
            }
        }
        for (v, what) in [
            (m.rest_stretch_u, "material.rest_stretch_u"),
            (m.rest_stretch_v, "material.rest_stretch_v"),
        ] {
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
                bending: Default::default(),
                bending_integration: Default::default(),
                jacobian,
                pcg: PcgSettings {
                    max_iterations: bw.cg_max_iterations,
                    tolerance: tol,
                },
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
                velocity_smoothing: None,
            },
        };
        Ok((desc, masses))
    }
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
        }
    }

    /// The validated shape or mesh, pose and friction.
    ///
    /// # Safety
    /// For `WEFT_SHAPE_TRIANGLE_MESH` the mesh pointers must hold the lengths
    /// the field docs give.
    pub(crate) unsafe fn read(&self) -> Result<(ColliderSpec, Pose, f32), FfiError> {
        check_size::<Self>(self.size, "weft_collider_desc")?;
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
        let pose = read_pose(&self.pose)?;
        let friction = non_negative(self.friction, "friction")?;
        Ok((spec, pose, friction))
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
        }
    }
}

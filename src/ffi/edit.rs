//! Edits between steps: teleports (state set outright), material, gravity and wind, and
//! keyframed pin targets and collider poses.
//!
//! Each export checks every argument before it changes anything: a refused call leaves the
//! world, its state hash and its pending targets as they were.

use glam::Vec3;

use super::boundary::{ffi_boundary, try_mut, try_ref};
use super::desc::{range, read_pose, weft_material, weft_pose, weft_wind};
use super::handles::{weft_cloth, weft_collider};
use super::status::{FfiError, weft_status};
use super::world::{ColliderKind, cloth_of, weft_world};
use crate::collide::track::{Keyframe, Track};
use crate::model::baraff_witkin::{BendParams, MembraneParams};
use crate::world::Animated;

/// One keyframe of a track: where a pinned region or a collider is at `time`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weft_keyframe {
    /// Time (s) of the world's clock (0 at creation, `dt` more after each step); strictly
    /// increasing along a track.
    pub time: f64,
    /// The pose at `time`. For a pin track, the region's displacement from where it is when
    /// the track is set (the identity pose: the region at rest); for a collider, its pose.
    pub pose: weft_pose,
}

/// Reads `count` floats as `count / 3` points, refusing NaN and infinity by index.
///
/// # Safety
/// A non-null `ptr` holds `3 * n` floats.
unsafe fn read_vec3s(ptr: *const f32, n: usize, what: &str) -> Result<Option<Vec<Vec3>>, FfiError> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null with 3 floats per vertex (this function's contract).
    let xs = unsafe { std::slice::from_raw_parts(ptr, 3 * n) };
    if let Some(i) = xs.iter().position(|x| !x.is_finite()) {
        return Err(FfiError::non_finite(&format!(
            "{what}[{i}] (vertex {})",
            i / 3
        )));
    }
    Ok(Some(
        xs.chunks_exact(3)
            .map(|p| Vec3::new(p[0], p[1], p[2]))
            .collect(),
    ))
}

/// Teleports a cloth: sets its `positions` and/or `velocities` (each NULL or `3 * count`
/// floats, x, y, z per vertex, m and m/s; at least one non-NULL), where `count` must equal
/// the cloth's vertex count (`weft_cloth_vertex_count`; the subdivided mesh's for an
/// isometric cloth). The next step starts from this state; the jump implies no velocity.
///
/// Positions within ±`WEFT_MAX_COORDINATE`, speeds at most `WEFT_MAX_SPEED`; NaN or
/// infinity gives `WEFT_STATUS_NON_FINITE` naming the index. Pinned vertices move with the
/// cloth (a moved pin holds at its new position) and pin targets set with
/// `weft_cloth_set_pins` but not yet reached are dropped when `positions` is given (they
/// were meant for the old placement). Vertices of a pin track (`weft_cloth_set_pin_track`)
/// return to their track at the next step: set the track again after moving them.
///
/// What the collision stage guarantees after a teleport (`docs/methods/teleport.md`): it
/// never creates a crossing between the cloth and a collider (analytic colliders take part
/// through their tessellation) or the cloth itself, and it does not undo one. A teleport
/// that leaves the cloth outside every collider keeps every guarantee of a step; one that
/// lands vertices inside a collider leaves the cloth caught on it (those vertices stay
/// inside, neighbours may be drawn in, the state stays finite) until a teleport puts it outside. Place a teleported
/// cloth outside the colliders.
///
/// # Safety
/// `world` NULL or live; `positions`, `velocities` NULL or `3 * count` readable floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_set_state(
    world: *mut weft_world,
    cloth: weft_cloth,
    positions: *const f32,
    velocities: *const f32,
    count: u32,
) -> weft_status {
    ffi_boundary!("weft_cloth_set_state", {
        let w = try_mut!(world, "world");
        let index = w.cloth(cloth)?.id;
        if positions.is_null() && velocities.is_null() {
            return Err(FfiError::null("positions` and `velocities"));
        }
        let n = cloth_of(&w.world, index)?.state().len();
        if count as usize != n {
            return Err(FfiError::invalid(format!(
                "`count` is {count}, the cloth has {n} vertices"
            )));
        }
        // SAFETY: forwarded from this function's contract.
        let x = unsafe { read_vec3s(positions, n, "positions")? };
        // SAFETY: forwarded from this function's contract.
        let v = unsafe { read_vec3s(velocities, n, "velocities")? };
        w.world.set_cloth_state(index, x.as_deref(), v.as_deref())?;
        let e = w.cloth(cloth)?;
        if x.is_some() {
            e.pending_pins.clear();
        }
        // The cached normals are of the old positions.
        e.normals_frame = None;
        Ok(())
    })
}

impl weft_material {
    /// The stiffnesses and dampings (non-negative), then the rest stretches (positive),
    /// each with its field's name for a refusal.
    pub(crate) fn named_values(&self) -> [(f64, &'static str); 9] {
        [
            (self.stretch_u, "material.stretch_u"),
            (self.stretch_v, "material.stretch_v"),
            (self.shear, "material.shear"),
            (self.bend, "material.bend"),
            (self.stretch_damping, "material.stretch_damping"),
            (self.shear_damping, "material.shear_damping"),
            (self.bend_damping, "material.bend_damping"),
            (self.rest_stretch_u, "material.rest_stretch_u"),
            (self.rest_stretch_v, "material.rest_stretch_v"),
        ]
    }

    /// The Rust material.
    pub(crate) fn params(&self) -> (MembraneParams, BendParams) {
        (
            MembraneParams {
                stretch_u: self.stretch_u,
                stretch_v: self.stretch_v,
                shear: self.shear,
                rest_stretch_u: self.rest_stretch_u,
                rest_stretch_v: self.rest_stretch_v,
                stretch_damping: self.stretch_damping,
                shear_damping: self.shear_damping,
            },
            BendParams {
                stiffness: self.bend,
                damping: self.bend_damping,
            },
        )
    }

    /// The C view of a Rust material.
    pub(crate) fn from_params(m: &MembraneParams, b: &BendParams) -> Self {
        Self {
            stretch_u: m.stretch_u,
            stretch_v: m.stretch_v,
            shear: m.shear,
            bend: b.stiffness,
            stretch_damping: m.stretch_damping,
            shear_damping: m.shear_damping,
            bend_damping: b.damping,
            rest_stretch_u: m.rest_stretch_u,
            rest_stretch_v: m.rest_stretch_v,
        }
    }
}

/// Replaces a Baraff–Witkin cloth's material from the next step on (the checks of
/// `weft_cloth_desc.material`: stiffnesses and damping finite and ≥ 0, rest stretches
/// positive). An isometric cloth gives `WEFT_STATUS_UNSUPPORTED` (its bending is set at
/// creation).
///
/// # Safety
/// `world` NULL or live; `material` NULL or readable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_set_material(
    world: *mut weft_world,
    cloth: weft_cloth,
    material: *const weft_material,
) -> weft_status {
    ffi_boundary!("weft_cloth_set_material", {
        let w = try_mut!(world, "world");
        let m = try_ref!(material, "material");
        let index = w.cloth(cloth)?.id;
        for (v, what) in m.named_values() {
            if !v.is_finite() {
                return Err(FfiError::non_finite(what));
            }
        }
        let (membrane, bend) = m.params();
        w.world.set_cloth_material(index, membrane, bend)?;
        Ok(())
    })
}

/// `*out` receives a cloth's Baraff–Witkin material. An isometric cloth gives
/// `WEFT_STATUS_UNSUPPORTED` (it has no Baraff–Witkin material; `*out` is left alone).
///
/// # Safety
/// `world` NULL or live; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_material(
    world: *mut weft_world,
    cloth: weft_cloth,
    out: *mut weft_material,
) -> weft_status {
    ffi_boundary!("weft_cloth_material", {
        let w = try_mut!(world, "world");
        let out = try_mut!(out, "out");
        let index = w.cloth(cloth)?.id;
        let Some(system) = cloth_of(&w.world, index)?.system() else {
            return Err(FfiError::new(
                weft_status::WEFT_STATUS_UNSUPPORTED,
                "an isometric cloth has no Baraff–Witkin material (its bending is set at creation)",
            ));
        };
        let s = system.settings();
        *out = weft_material::from_params(&s.membrane, &s.bend);
        Ok(())
    })
}

/// Sets the world's gravity (m/s², 3 floats, y up) from the next step on;
/// |gravity| ≤ `WEFT_MAX_GRAVITY`.
///
/// # Safety
/// `world` NULL or live; `gravity` NULL or 3 readable floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_world_set_gravity(
    world: *mut weft_world,
    gravity: *const f32,
) -> weft_status {
    ffi_boundary!("weft_world_set_gravity", {
        let w = try_mut!(world, "world");
        if gravity.is_null() {
            return Err(FfiError::null("gravity"));
        }
        // SAFETY: non-null with 3 floats (this function's contract).
        let g = unsafe { std::slice::from_raw_parts(gravity, 3) };
        let g = Vec3::new(g[0], g[1], g[2]);
        if !g.is_finite() {
            return Err(FfiError::non_finite("gravity"));
        }
        crate::limits::check_gravity(g).map_err(range)?;
        w.world.settings_mut().gravity = g;
        Ok(())
    })
}

/// `*out` (3 floats) receives the world's gravity (m/s²).
///
/// # Safety
/// `world` NULL or live; `out` NULL or 3 writable floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_world_gravity(
    world: *const weft_world,
    out: *mut f32,
) -> weft_status {
    ffi_boundary!("weft_world_gravity", {
        let w = try_ref!(world, "world");
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        // SAFETY: non-null with room for 3 floats (this function's contract).
        let out = unsafe { std::slice::from_raw_parts_mut(out, 3) };
        out.copy_from_slice(&w.world.settings().gravity.to_array());
        Ok(())
    })
}

/// Sets the world's wind from the next step on (the checks of `weft_world_desc.wind`;
/// `enabled` = 0 stills the air). Gusts keep their phase: they are a function of the
/// world's time.
///
/// # Safety
/// `world` NULL or live; `wind` NULL or readable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_world_set_wind(
    world: *mut weft_world,
    wind: *const weft_wind,
) -> weft_status {
    ffi_boundary!("weft_world_set_wind", {
        let w = try_mut!(world, "world");
        let wind = try_ref!(wind, "wind").read()?;
        w.world.settings_mut().wind = wind;
        Ok(())
    })
}

/// Reads `count` keyframes into a track.
///
/// # Safety
/// A non-null `keys` holds `count` keyframes.
unsafe fn read_track(keys: *const weft_keyframe, count: u32) -> Result<Track, FfiError> {
    if keys.is_null() {
        return Err(FfiError::null("keys"));
    }
    if count == 0 || count > 1 << 20 {
        return Err(FfiError::invalid(format!(
            "`key_count` is {count}, must be in 1..={}",
            1 << 20
        )));
    }
    // SAFETY: non-null with `count` keyframes (this function's contract).
    let keys = unsafe { std::slice::from_raw_parts(keys, count as usize) };
    let mut out = Vec::with_capacity(keys.len());
    for (i, k) in keys.iter().enumerate() {
        if !k.time.is_finite() {
            return Err(FfiError::non_finite(&format!("keys[{i}].time")));
        }
        let pose = read_pose(&k.pose)
            .map_err(|e| FfiError::new(e.status, format!("keys[{i}]: {}", e.message)))?;
        out.push(Keyframe { time: k.time, pose });
    }
    Track::new(out).map_err(|e| FfiError::invalid(e.to_string()))
}

/// Pins `count` vertices to a keyframed track from now on (the scene file's
/// `[[cloth.pin]] keyframes`): with `p` = `pivot` (3 floats, m) and `x_i` each vertex's
/// position now, its target at time `t` is `p + T(t) + R(t) (x_i − p)` for the track's pose
/// `(R, T)` at `t`, interpolated between keyframes as for colliders and held before the first
/// and after the last. The vertices are pinned and placed on the track at the world's time
/// at once; every substep then moves them along it, landing exactly on it. A vertex pinned
/// by `weft_cloth_set_pins` is taken over (its pending target dropped); `weft_cloth_set_pins`
/// or `weft_cloth_unpin` on a tracked vertex takes it off the track.
///
/// # Safety
/// `world` NULL or live; `vertices` NULL or `count` indices; `pivot` NULL or 3 floats;
/// `keys` NULL or `key_count` keyframes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_set_pin_track(
    world: *mut weft_world,
    cloth: weft_cloth,
    vertices: *const u32,
    count: u32,
    pivot: *const f32,
    keys: *const weft_keyframe,
    key_count: u32,
) -> weft_status {
    ffi_boundary!("weft_cloth_set_pin_track", {
        let w = try_mut!(world, "world");
        let index = w.cloth(cloth)?.id;
        let n = cloth_of(&w.world, index)?.state().len();
        // SAFETY: forwarded from this function's contract.
        let vs = unsafe { super::cloth::read_vertices(vertices, count, n)? };
        if pivot.is_null() {
            return Err(FfiError::null("pivot"));
        }
        // SAFETY: non-null with 3 floats (this function's contract).
        let p = unsafe { std::slice::from_raw_parts(pivot, 3) };
        let pivot = Vec3::new(p[0], p[1], p[2]);
        if !pivot.is_finite() {
            return Err(FfiError::non_finite("pivot"));
        }
        crate::limits::check_point("pivot", pivot).map_err(range)?;
        // SAFETY: forwarded from this function's contract.
        let track = unsafe { read_track(keys, key_count)? };
        w.world.set_pin_track(index, vs, pivot, track)?;
        let e = w.cloth(cloth)?;
        e.pending_pins.retain(|(v, _)| !vs.contains(v));
        e.normals_frame = None;
        Ok(())
    })
}

/// Makes a collider follow keyframed poses from now on (the scene file's
/// `[[collider.keyframes]]`): it is placed at the track's pose for the world's time at once,
/// then every step moves it at the velocities that reach the track's pose at the step's
/// end. A pose set with `weft_collider_set_pose` afterwards takes it off the track; one set
/// before and not yet reached is dropped.
///
/// # Safety
/// `world` NULL or live; `keys` NULL or `key_count` keyframes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_collider_set_track(
    world: *mut weft_world,
    collider: weft_collider,
    keys: *const weft_keyframe,
    key_count: u32,
) -> weft_status {
    ffi_boundary!("weft_collider_set_track", {
        let w = try_mut!(world, "world");
        let kind = w.collider(collider)?.kind;
        // SAFETY: forwarded from this function's contract.
        let track = unsafe { read_track(keys, key_count)? };
        let body = match kind {
            ColliderKind::Analytic(i) => Animated::Collider(i),
            ColliderKind::Mesh(i) => Animated::Obstacle(i),
        };
        w.in_pool(|world| world.set_track(body, track))
            .map_err(|e| FfiError::new(weft_status::WEFT_STATUS_STALE_HANDLE, e.to_string()))?;
        w.collider(collider)?.pending_pose = None;
        Ok(())
    })
}

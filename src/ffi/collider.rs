//! Collider exports: analytic shapes and triangle meshes, destroy, and the
//! per-frame pose from which weft derives velocities.

use super::boundary::{ffi_boundary, try_mut, try_ref};
use super::desc::{
    ColliderSpec, first_size, init_sized, read_pose, read_sized, weft_collider_desc, weft_pose,
};
use super::handles::weft_collider;
use super::status::weft_status;
use super::world::{ColliderKind, weft_world};
use crate::collide::shapes::Motion;
use crate::world::{ColliderDesc, ObstacleDesc};

/// Fills `*out` with the default collider of weft 0.1's `weft_collider_desc` (a static plane
/// at the origin): the entry point of hosts built against the 0.1 header. The header defines
/// `weft_collider_desc_default` as an inline call of `weft_collider_desc_init(out, sizeof
/// *out)`.
///
/// # Safety
/// `out` NULL or a writable 0.1 `weft_collider_desc` (or larger).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_collider_desc_default(out: *mut weft_collider_desc) -> weft_status {
    ffi_boundary!("weft_collider_desc_default", {
        // SAFETY: forwarded from this function's contract.
        unsafe { init_sized(out, first_size::<weft_collider_desc>(), "out") }
    })
}

/// Fills the caller's `weft_collider_desc` of `size` bytes (`sizeof *out`: this header's size
/// or an older header's) with the default collider (a static plane at the origin).
///
/// # Safety
/// `out` NULL or `size` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_collider_desc_init(
    out: *mut weft_collider_desc,
    size: u32,
) -> weft_status {
    ffi_boundary!("weft_collider_desc_init", {
        // SAFETY: forwarded from this function's contract.
        unsafe { init_sized(out, size, "out") }
    })
}

/// Creates a static collider (mesh arrays are copied); `*out` receives its handle.
///
/// # Safety
/// `world` NULL or live; `desc` NULL or readable, its mesh arrays holding the
/// lengths its fields give; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_collider_create(
    world: *mut weft_world,
    desc: *const weft_collider_desc,
    out: *mut weft_collider,
) -> weft_status {
    ffi_boundary!("weft_collider_create", {
        let w = try_mut!(world, "world");
        let out = try_mut!(out, "out");
        *out = weft_collider::default();
        // SAFETY: forwarded from this function's contract.
        let desc = unsafe { read_sized(desc, "desc")? };
        // SAFETY: forwarded from this function's contract.
        let (spec, pose, friction, thickness) = unsafe { desc.read()? };
        // A value out of its range is an argument error; anything else, the mesh's.
        let mesh_err = |e: crate::mesh::MeshError| match e {
            crate::mesh::MeshError::InvalidParameter { .. } => {
                super::status::FfiError::invalid(e.to_string())
            }
            _ => super::status::FfiError::new(weft_status::WEFT_STATUS_INVALID_MESH, e.to_string()),
        };
        let kind = match spec {
            ColliderSpec::Analytic(shape) => ColliderKind::Analytic(
                w.in_pool(|world| {
                    world.add_collider(ColliderDesc {
                        shape,
                        pose,
                        motion: Motion::default(),
                        friction,
                    })
                })
                .map_err(mesh_err)?,
            ),
            ColliderSpec::Mesh(mesh) => ColliderKind::Mesh(
                w.in_pool(|world| {
                    world.add_obstacle(ObstacleDesc {
                        mesh,
                        pose,
                        motion: Motion::default(),
                        friction,
                        thickness,
                    })
                })
                .map_err(mesh_err)?,
            ),
        };
        *out = w.track_collider(kind)?;
        Ok(())
    })
}

/// Destroys a collider; its handle becomes stale.
///
/// # Safety
/// `world` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_collider_destroy(
    world: *mut weft_world,
    collider: weft_collider,
) -> weft_status {
    ffi_boundary!("weft_collider_destroy", {
        let w = try_mut!(world, "world");
        let kind = w.collider(collider)?.kind;
        match kind {
            ColliderKind::Analytic(id) => w.in_pool(|world| world.remove_collider(id))?,
            ColliderKind::Mesh(id) => w.in_pool(|world| world.remove_obstacle(id))?,
        }
        w.colliders.remove(collider.index, collider.generation);
        Ok(())
    })
}

/// Sets where the collider must be at the end of the next step. weft moves
/// it there over that frame with the constant linear and angular velocity
/// the two poses imply (so friction and contacts see the motion), then holds
/// it. The first pose you set after creation is reached the same way; to
/// place a collider without motion, create it at its pose. A pose outside its
/// range (`weft_pose`) is refused and not stored; one too far for the next
/// step's `dt` (`WEFT_MAX_SPEED`, `WEFT_MAX_ANGULAR_SPEED`) is refused by that
/// step.
///
/// # Safety
/// `world` NULL or live; `pose` NULL or readable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_collider_set_pose(
    world: *mut weft_world,
    collider: weft_collider,
    pose: *const weft_pose,
) -> weft_status {
    ffi_boundary!("weft_collider_set_pose", {
        let w = try_mut!(world, "world");
        let pose = read_pose(try_ref!(pose, "pose"))?;
        w.collider(collider)?.pending_pose = Some(pose);
        Ok(())
    })
}

//! Cloth exports: create from caller arrays, destroy, pins, and reading
//! positions, normals and triangles (borrowed or copied).
//!
//! An isometric cloth (`WEFT_MODEL_ISOMETRIC`) simulates the 4:1 subdivision
//! of the caller's mesh: every per-vertex call (counts, pins, positions,
//! normals) speaks of the subdivided mesh, whose first vertices are the
//! caller's with the same indices (so pins given on input vertices pin the
//! same indices) followed by one vertex per input edge;
//! `weft_cloth_triangles` gives its triangles.

use glam::Vec3;

use super::boundary::{ffi_boundary, try_mut};
use super::desc::{ClothSpec, first_size, init_sized, read_sized, weft_cloth_desc};
use super::handles::weft_cloth;
use super::status::{FfiError, weft_status};
use super::world::{cloth_of, weft_world};

/// Fills `*out` with the default cloth settings of weft 0.1's `weft_cloth_desc` (its first
/// 352 bytes, `size` = 352): the entry point of hosts built against the 0.1 header. The
/// header defines `weft_cloth_desc_default` as an inline call of `weft_cloth_desc_init(out,
/// sizeof *out)`, which fills the struct of the caller's own header.
///
/// # Safety
/// `out` NULL or a writable 0.1 `weft_cloth_desc` (or larger).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_desc_default(out: *mut weft_cloth_desc) -> weft_status {
    ffi_boundary!("weft_cloth_desc_default", {
        // SAFETY: forwarded from this function's contract.
        unsafe { init_sized(out, first_size::<weft_cloth_desc>(), "out") }
    })
}

/// Fills the caller's `weft_cloth_desc` of `size` bytes (`sizeof *out`: this header's size or
/// an older header's) with the default cloth settings, arrays NULL, `size` set.
///
/// # Safety
/// `out` NULL or `size` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_desc_init(out: *mut weft_cloth_desc, size: u32) -> weft_status {
    ffi_boundary!("weft_cloth_desc_init", {
        // SAFETY: forwarded from this function's contract.
        unsafe { init_sized(out, size, "out") }
    })
}

/// Creates a cloth from `desc` (arrays are copied); `*out` receives its handle.
/// With `WEFT_MODEL_ISOMETRIC` the cloth is the 4:1 subdivision of the given
/// mesh (see `weft_cloth_vertex_count` and `weft_cloth_triangles`).
///
/// # Safety
/// `world` NULL or live; `desc` NULL or a readable descriptor whose arrays
/// hold the lengths its fields give; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_create(
    world: *mut weft_world,
    desc: *const weft_cloth_desc,
    out: *mut weft_cloth,
) -> weft_status {
    ffi_boundary!("weft_cloth_create", {
        let w = try_mut!(world, "world");
        let out = try_mut!(out, "out");
        *out = weft_cloth::default();
        // SAFETY: forwarded from this function's contract.
        let desc = unsafe { read_sized(desc, "desc")? };
        // SAFETY: forwarded from this function's contract.
        let ClothSpec {
            desc: cloth,
            masses,
            velocities,
            isometric,
        } = unsafe { desc.read()? };
        let index = match isometric {
            Some(iso) => w.in_pool(|world| world.add_isometric_cloth(cloth, iso))?,
            None => w.in_pool(|world| world.add_cloth(cloth))?,
        };
        if let Some(m) = masses {
            if let Err(e) = w.world.set_cloth_masses(index, &m) {
                w.in_pool(|world| world.remove_cloth(index).map(drop))?;
                return Err(e.into());
            }
        }
        if let Some(v) = velocities {
            if let Err(e) = w.world.set_cloth_state(index, None, Some(&v)) {
                w.in_pool(|world| world.remove_cloth(index).map(drop))?;
                return Err(e.into());
            }
        }
        *out = w.track_cloth(index)?;
        Ok(())
    })
}

/// Destroys a cloth; its handle becomes stale and its position and normal
/// pointers dangle.
///
/// # Safety
/// `world` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_destroy(
    world: *mut weft_world,
    cloth: weft_cloth,
) -> weft_status {
    ffi_boundary!("weft_cloth_destroy", {
        let w = try_mut!(world, "world");
        let index = w.cloth(cloth)?.id;
        // The cloth is dropped in the pool too (its buffers are plain data).
        w.in_pool(|world| world.remove_cloth(index).map(drop))?;
        w.cloths.remove(cloth.index, cloth.generation);
        Ok(())
    })
}

/// `*out` receives the cloth's vertex count: the simulated mesh's, which for
/// an isometric cloth is the input's plus one per input edge.
///
/// # Safety
/// `world` NULL or live; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_vertex_count(
    world: *mut weft_world,
    cloth: weft_cloth,
    out: *mut u32,
) -> weft_status {
    ffi_boundary!("weft_cloth_vertex_count", {
        let w = try_mut!(world, "world");
        let out = try_mut!(out, "out");
        let index = w.cloth(cloth)?.id;
        *out = cloth_of(&w.world, index)?.state().len() as u32;
        Ok(())
    })
}

/// Reads `count` vertex indices, checking the count and every index.
///
/// # Safety
/// A non-null `vertices` holds `count` indices.
pub(crate) unsafe fn read_vertices<'a>(
    vertices: *const u32,
    count: u32,
    n: usize,
) -> Result<&'a [u32], FfiError> {
    if vertices.is_null() {
        return Err(FfiError::null("vertices"));
    }
    if count == 0 || count as usize > n {
        return Err(FfiError::invalid(format!(
            "`count` is {count}, must be in 1..={n} (the cloth's vertex count)"
        )));
    }
    // SAFETY: non-null with `count` elements (this function's contract).
    let vs = unsafe { std::slice::from_raw_parts(vertices, count as usize) };
    if let Some(k) = vs.iter().position(|&v| v as usize >= n) {
        return Err(FfiError::out_of_range(format!(
            "vertices[{k}] is {}, the cloth has {n} vertices",
            vs[k]
        )));
    }
    Ok(vs)
}

/// Pins `count` vertices. A vertex not yet pinned is held where it is.
/// With `targets` (optional, NULL: hold): `3 * count` floats, where each
/// vertex must be at the end of the next step; it moves there at constant
/// velocity over that frame (a kinematic target), then holds. Nothing changes
/// unless every argument is valid: targets within ±`WEFT_MAX_COORDINATE` (one
/// farther than `WEFT_MAX_SPEED` × `dt` from the pin's target now is refused by
/// the next step).
///
/// # Safety
/// `world` NULL or live; `vertices` NULL or `count` indices; `targets` NULL or
/// `3 * count` floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_set_pins(
    world: *mut weft_world,
    cloth: weft_cloth,
    vertices: *const u32,
    targets: *const f32,
    count: u32,
) -> weft_status {
    ffi_boundary!("weft_cloth_set_pins", {
        let w = try_mut!(world, "world");
        let index = w.cloth(cloth)?.id;
        let n = cloth_of(&w.world, index)?.state().len();
        // SAFETY: forwarded from this function's contract.
        let vs = unsafe { read_vertices(vertices, count, n)? };
        let goals: Option<&[f32]> = if targets.is_null() {
            None
        } else {
            // SAFETY: a non-null `targets` holds 3 floats per vertex.
            let t = unsafe { std::slice::from_raw_parts(targets, 3 * vs.len()) };
            if let Some(i) = t.iter().position(|x| !x.is_finite()) {
                return Err(FfiError::non_finite(&format!("targets[{i}]")));
            }
            for (k, p) in t.chunks_exact(3).enumerate() {
                crate::limits::check_point("targets", Vec3::new(p[0], p[1], p[2])).map_err(
                    |e| FfiError::invalid(format!("targets[{}..{}]: {e}", 3 * k, 3 * k + 3)),
                )?;
            }
            Some(t)
        };
        for (k, &v) in vs.iter().enumerate() {
            let c = &cloth_of(&w.world, index)?;
            let held = match c.pins().iter().find(|p| p.vertex == v) {
                Some(p) => p.target,
                None => c.state().positions()[v as usize],
            };
            w.world.pin_vertex(index, v, held, Vec3::ZERO)?;
            let e = w.cloth(cloth)?;
            e.pending_pins.retain(|(p, _)| *p != v);
            if let Some(t) = goals {
                e.pending_pins
                    .push((v, Vec3::new(t[3 * k], t[3 * k + 1], t[3 * k + 2])));
            }
        }
        Ok(())
    })
}

/// Frees `count` pinned vertices (each must be pinned). Nothing changes
/// unless every vertex is valid and pinned.
///
/// # Safety
/// `world` NULL or live; `vertices` NULL or `count` indices.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_unpin(
    world: *mut weft_world,
    cloth: weft_cloth,
    vertices: *const u32,
    count: u32,
) -> weft_status {
    ffi_boundary!("weft_cloth_unpin", {
        let w = try_mut!(world, "world");
        let index = w.cloth(cloth)?.id;
        let c = &cloth_of(&w.world, index)?;
        // SAFETY: forwarded from this function's contract.
        let vs = unsafe { read_vertices(vertices, count, c.state().len())? };
        if let Some(&v) = vs.iter().find(|&&v| !c.state().is_pinned(v as usize)) {
            return Err(FfiError::invalid(format!("vertex {v} is not pinned")));
        }
        for &v in vs {
            // A vertex listed twice is already free the second time.
            if cloth_of(&w.world, index)?.state().is_pinned(v as usize) {
                w.world.unpin_vertex(index, v)?;
            }
        }
        let e = w.cloth(cloth)?;
        e.pending_pins.retain(|(p, _)| !vs.contains(p));
        Ok(())
    })
}

/// Frees every pinned vertex of the cloth.
///
/// # Safety
/// `world` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_clear_pins(
    world: *mut weft_world,
    cloth: weft_cloth,
) -> weft_status {
    ffi_boundary!("weft_cloth_clear_pins", {
        let w = try_mut!(world, "world");
        let e = w.cloth(cloth)?;
        e.pending_pins.clear();
        let index = e.id;
        w.world.clear_pins(index)?;
        Ok(())
    })
}

/// Sets whether two cloths of the world collide with each other (`collide` 1, the default for
/// every pair) or pass through each other (`collide` 0: a lining sewn to its shell). Symmetric;
/// a cloth's own collisions are its `self_collision` setting. Refused, changing nothing, for
/// the same cloth twice or `collide` other than 0 or 1.
///
/// # Safety
/// `world` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_set_collides_with(
    world: *mut weft_world,
    cloth: weft_cloth,
    other: weft_cloth,
    collide: u32,
) -> weft_status {
    ffi_boundary!("weft_cloth_set_collides_with", {
        let w = try_mut!(world, "world");
        let a = w.cloth(cloth)?.id;
        let b = w.cloth(other)?.id;
        if collide > 1 {
            return Err(FfiError::invalid(format!(
                "collide must be 0 or 1, got {collide}"
            )));
        }
        w.world.set_cloths_collide(a, b, collide == 1)?;
        Ok(())
    })
}

/// Area-weighted vertex normals of the cloth now, cached per frame.
fn normals(w: &mut weft_world, cloth: weft_cloth) -> Result<&[Vec3], FfiError> {
    let frame = w.world.frame();
    let e = w.cloths.get_mut(cloth.index, cloth.generation);
    let Some(e) = e else {
        return Err(FfiError::new(
            weft_status::WEFT_STATUS_STALE_HANDLE,
            "cloth handle is stale",
        ));
    };
    if e.normals_frame != Some(frame) {
        let c = &cloth_of(&w.world, e.id)?;
        let x = c.state().positions();
        e.normals.fill(Vec3::ZERO);
        for t in c.triangles() {
            let [a, b, d] = t.map(|i| x[i as usize]);
            // |(b − a) × (d − a)| = 2 · area: area weighting for free.
            let n = (b - a).cross(d - a);
            for &i in t {
                e.normals[i as usize] += n;
            }
        }
        for n in &mut e.normals {
            *n = n.normalize_or_zero();
        }
        e.normals_frame = Some(frame);
    }
    Ok(&e.normals)
}

const _: () = assert!(std::mem::size_of::<Vec3>() == 12 && std::mem::align_of::<Vec3>() == 4);

/// Which per-vertex array to read.
#[derive(Clone, Copy)]
enum Field {
    Positions,
    Velocities,
    Normals,
}

fn field(w: &mut weft_world, cloth: weft_cloth, f: Field) -> Result<&[Vec3], FfiError> {
    let index = w.cloth(cloth)?.id;
    match f {
        Field::Positions => Ok(cloth_of(&w.world, index)?.state().positions()),
        Field::Velocities => Ok(cloth_of(&w.world, index)?.state().velocities()),
        Field::Normals => normals(w, cloth),
    }
}

/// Borrows `3 * count` floats behind `*out`.
fn borrow(
    world: *mut weft_world,
    cloth: weft_cloth,
    out: *mut *const f32,
    out_count: *mut u32,
    f: Field,
) -> Result<(), FfiError> {
    let w = try_mut!(world, "world");
    let out = try_mut!(out, "out");
    let out_count = try_mut!(out_count, "out_count");
    let xs = field(w, cloth, f)?;
    *out = xs.as_ptr().cast();
    *out_count = xs.len() as u32;
    Ok(())
}

/// Copies `3 * n` floats into `out`, which holds `capacity` vertices.
fn copy(
    world: *mut weft_world,
    cloth: weft_cloth,
    out: *mut f32,
    capacity: u32,
    f: Field,
) -> Result<(), FfiError> {
    let w = try_mut!(world, "world");
    if out.is_null() {
        return Err(FfiError::null("out"));
    }
    let xs = field(w, cloth, f)?;
    if (capacity as usize) < xs.len() {
        return Err(FfiError::new(
            weft_status::WEFT_STATUS_BUFFER_TOO_SMALL,
            format!("capacity {capacity} vertices, the cloth has {}", xs.len()),
        ));
    }
    // SAFETY: `out` holds `capacity` ≥ xs.len() vertices of 3 floats (the
    // export's contract); source and destination do not overlap.
    unsafe { std::ptr::copy_nonoverlapping(xs.as_ptr().cast::<f32>(), out, 3 * xs.len()) };
    Ok(())
}

/// Borrows the positions: `*out` receives `3 * *out_count` floats (x, y, z
/// per vertex, m) owned by weft, valid until the cloth or world is destroyed
/// and overwritten by each step; read them between steps.
///
/// # Safety
/// `world` NULL or live; `out`, `out_count` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_positions(
    world: *mut weft_world,
    cloth: weft_cloth,
    out: *mut *const f32,
    out_count: *mut u32,
) -> weft_status {
    ffi_boundary!("weft_cloth_positions", {
        borrow(world, cloth, out, out_count, Field::Positions)
    })
}

/// Borrows the velocities: `*out` receives `3 * *out_count` floats (m/s per vertex, the
/// state the next step starts from), as `weft_cloth_positions`. Within a substep the
/// positions advance by the step's end velocity (x1 = x0 + h v1, the implicit step of
/// Baraff & Witkin 1998); a vertex a collider's contact moved onto its surface has the move taken out of
/// its velocity.
///
/// # Safety
/// As `weft_cloth_positions`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_velocities(
    world: *mut weft_world,
    cloth: weft_cloth,
    out: *mut *const f32,
    out_count: *mut u32,
) -> weft_status {
    ffi_boundary!("weft_cloth_velocities", {
        borrow(world, cloth, out, out_count, Field::Velocities)
    })
}

/// Borrows unit vertex normals (area-weighted; computed at the first call
/// after a step): as `weft_cloth_positions`.
///
/// # Safety
/// As `weft_cloth_positions`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_normals(
    world: *mut weft_world,
    cloth: weft_cloth,
    out: *mut *const f32,
    out_count: *mut u32,
) -> weft_status {
    ffi_boundary!("weft_cloth_normals", {
        borrow(world, cloth, out, out_count, Field::Normals)
    })
}

/// Copies the positions into `out` (`3 * capacity` floats);
/// `BUFFER_TOO_SMALL` if `capacity` is below the vertex count.
///
/// # Safety
/// `world` NULL or live; `out` NULL or `3 * capacity` writable floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_copy_positions(
    world: *mut weft_world,
    cloth: weft_cloth,
    out: *mut f32,
    capacity: u32,
) -> weft_status {
    ffi_boundary!("weft_cloth_copy_positions", {
        copy(world, cloth, out, capacity, Field::Positions)
    })
}

/// Copies the velocities (m/s) into `out`; as `weft_cloth_copy_positions`.
///
/// # Safety
/// As `weft_cloth_copy_positions`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_copy_velocities(
    world: *mut weft_world,
    cloth: weft_cloth,
    out: *mut f32,
    capacity: u32,
) -> weft_status {
    ffi_boundary!("weft_cloth_copy_velocities", {
        copy(world, cloth, out, capacity, Field::Velocities)
    })
}

/// Copies the unit vertex normals into `out`; as `weft_cloth_copy_positions`.
///
/// # Safety
/// As `weft_cloth_copy_positions`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_copy_normals(
    world: *mut weft_world,
    cloth: weft_cloth,
    out: *mut f32,
    capacity: u32,
) -> weft_status {
    ffi_boundary!("weft_cloth_copy_normals", {
        copy(world, cloth, out, capacity, Field::Normals)
    })
}

/// `*out` receives the number of triangles of the simulated mesh (for an
/// isometric cloth, four per input triangle).
///
/// # Safety
/// `world` NULL or live; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_triangle_count(
    world: *mut weft_world,
    cloth: weft_cloth,
    out: *mut u32,
) -> weft_status {
    ffi_boundary!("weft_cloth_triangle_count", {
        let w = try_mut!(world, "world");
        let out = try_mut!(out, "out");
        let index = w.cloth(cloth)?.id;
        *out = cloth_of(&w.world, index)?.triangles().len() as u32;
        Ok(())
    })
}

const _: () = assert!(std::mem::size_of::<[u32; 3]>() == 12);

/// Borrows the triangles of the simulated mesh: `*out` receives
/// `3 * *out_count` vertex indices (counter-clockwise seen from the front, as
/// the input), owned by weft, valid and unchanged until the cloth or world is
/// destroyed. For a Baraff–Witkin cloth they are the caller's triangles; for
/// an isometric cloth its 4:1 subdivision.
///
/// # Safety
/// `world` NULL or live; `out`, `out_count` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_triangles(
    world: *mut weft_world,
    cloth: weft_cloth,
    out: *mut *const u32,
    out_count: *mut u32,
) -> weft_status {
    ffi_boundary!("weft_cloth_triangles", {
        let w = try_mut!(world, "world");
        let out = try_mut!(out, "out");
        let out_count = try_mut!(out_count, "out_count");
        let index = w.cloth(cloth)?.id;
        let t = cloth_of(&w.world, index)?.triangles();
        *out = t.as_ptr().cast();
        *out_count = t.len() as u32;
        Ok(())
    })
}

/// Copies the triangles (`3 * capacity` indices) into `out`;
/// `BUFFER_TOO_SMALL` if `capacity` is below the triangle count.
///
/// # Safety
/// `world` NULL or live; `out` NULL or `3 * capacity` writable indices.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_cloth_copy_triangles(
    world: *mut weft_world,
    cloth: weft_cloth,
    out: *mut u32,
    capacity: u32,
) -> weft_status {
    ffi_boundary!("weft_cloth_copy_triangles", {
        let w = try_mut!(world, "world");
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        let index = w.cloth(cloth)?.id;
        let t = cloth_of(&w.world, index)?.triangles();
        if (capacity as usize) < t.len() {
            return Err(FfiError::new(
                weft_status::WEFT_STATUS_BUFFER_TOO_SMALL,
                format!("capacity {capacity} triangles, the cloth has {}", t.len()),
            ));
        }
        // SAFETY: `out` holds `capacity` ≥ t.len() triangles of 3 indices (the
        // export's contract); source and destination do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(t.as_ptr().cast::<u32>(), out, 3 * t.len()) };
        Ok(())
    })
}

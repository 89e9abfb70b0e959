//! The opaque world: a [`World`], its worker pool, and the handle tables
//! that map C handles to world indices; world-level exports.

use std::ffi::CStr;
use std::os::raw::c_char;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

use glam::Vec3;

use super::boundary::{ffi_boundary, last_error_ptr, try_mut, try_ref};
use super::desc::{
    WEFT_MAX_THREADS, check_size, first_size, init_sized, read_sized, weft_scene_info,
    weft_step_stats, weft_world_desc, write_sized,
};
use super::handles::{weft_cloth, weft_collider};
use super::status::{FfiError, weft_status};
use crate::collide::shapes::{Motion, Pose};
use crate::world::ids::SlotTable;
use crate::world::{Cloth, ClothId, ColliderId, ObstacleId, World, motion_between};

/// Ids of worlds created so far; a world's id tags its handles so a handle
/// from another world is refused. Only ever incremented (never tuning state).
static NEXT_WORLD_ID: AtomicU32 = AtomicU32::new(1);

/// The world's cloth `id` (an entry's: the C world removes both together).
pub(crate) fn cloth_of(world: &World, id: ClothId) -> Result<&Cloth, FfiError> {
    world
        .cloth(id)
        .ok_or_else(|| FfiError::invalid(format!("{id} has a handle but no cloth")))
}

/// A cloth as the C side tracks it.
#[derive(Debug)]
pub(crate) struct ClothEntry {
    /// The world's id of the cloth.
    pub(crate) id: ClothId,
    /// Area-weighted vertex normals, sized at creation.
    pub(crate) normals: Vec<Vec3>,
    /// The frame the normals were computed at.
    pub(crate) normals_frame: Option<u64>,
    /// Pin targets for the end of the next step: (vertex, target).
    pub(crate) pending_pins: Vec<(u32, Vec3)>,
}

/// Which world list a collider lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ColliderKind {
    /// An analytic collider of [`World::colliders`].
    Analytic(ColliderId),
    /// A triangle-mesh obstacle of [`World::obstacles`].
    Mesh(ObstacleId),
}

/// A collider as the C side tracks it.
#[derive(Debug)]
pub(crate) struct ColliderEntry {
    pub(crate) kind: ColliderKind,
    /// The pose to reach at the end of the next step.
    pub(crate) pending_pose: Option<Pose>,
}

/// A world's own rayon pool whose threads `weft_world_destroy` joins, so no
/// weft thread outlives its world (hosts that unload the library, and
/// valgrind, see every thread gone).
struct WorkerPool {
    pool: Option<rayon::ThreadPool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl WorkerPool {
    fn new(threads: u32) -> Result<Self, FfiError> {
        let mut handles = Vec::with_capacity(threads as usize);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads as usize)
            .spawn_handler(|thread| {
                let handle = std::thread::Builder::new()
                    .name(format!("weft-worker-{}", thread.index()))
                    .spawn(move || thread.run())?;
                handles.push(handle);
                Ok(())
            })
            .build();
        match pool {
            Ok(pool) => Ok(Self {
                pool: Some(pool),
                threads: handles,
            }),
            // Threads already started are told to stop by rayon; they are
            // not joined here, so a failure cannot hang the caller.
            Err(e) => Err(FfiError::new(
                weft_status::WEFT_STATUS_THREADS,
                format!("cannot start {threads} worker threads: {e}"),
            )),
        }
    }

    fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        // Dropping the pool tells its threads to exit; then wait for them.
        drop(self.pool.take());
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}

/// An opaque simulation world (create with `weft_world_create` or
/// `weft_scene_load`, free with `weft_world_destroy`). Not thread-safe: call
/// into one world from one thread at a time.
#[allow(non_camel_case_types)]
pub struct weft_world {
    pub(crate) id: u32,
    pub(crate) world: World,
    pool: Option<WorkerPool>,
    pub(crate) cloths: SlotTable<ClothEntry>,
    pub(crate) colliders: SlotTable<ColliderEntry>,
}

impl weft_world {
    /// A world around `world` with `threads` workers (0: the global pool).
    /// `make` runs in that pool: building a world already runs parallel
    /// code (BVHs, obstacle boxes), which must not wake the global pool of a
    /// host that asked for its own threads.
    pub(crate) fn new(
        threads: u32,
        make: impl FnOnce() -> Result<World, FfiError> + Send,
    ) -> Result<Self, FfiError> {
        if threads > WEFT_MAX_THREADS {
            return Err(FfiError::invalid(format!(
                "`worker_threads` is {threads}, at most {WEFT_MAX_THREADS}"
            )));
        }
        let pool = if threads == 0 {
            None
        } else {
            Some(WorkerPool::new(threads)?)
        };
        let world = match &pool {
            Some(p) => p.install(make),
            None => make(),
        }?;
        let id = NEXT_WORLD_ID.fetch_add(1, Ordering::Relaxed);
        let mut w = Self {
            id,
            world,
            pool,
            cloths: SlotTable::default(),
            colliders: SlotTable::default(),
        };
        // Objects a scene created already: handles in world order.
        for id in w.world.cloth_ids().to_vec() {
            w.track_cloth(id)?;
        }
        for id in w.world.collider_ids().to_vec() {
            w.track_collider(ColliderKind::Analytic(id))?;
        }
        let owned: Vec<usize> = w.world.colliders().iter().map(|c| c.obstacle()).collect();
        for (index, id) in w.world.obstacle_ids().to_vec().into_iter().enumerate() {
            if !owned.contains(&index) {
                w.track_collider(ColliderKind::Mesh(id))?;
            }
        }
        Ok(w)
    }

    /// Runs `f` on the world inside the world's pool (or the global one):
    /// every edit that may run parallel code goes through here.
    pub(crate) fn in_pool<R: Send>(&mut self, f: impl FnOnce(&mut World) -> R + Send) -> R {
        let world = &mut self.world;
        match &self.pool {
            Some(p) => p.install(|| f(world)),
            None => f(world),
        }
    }

    /// Issues a handle for world cloth `id`.
    pub(crate) fn track_cloth(&mut self, id: ClothId) -> Result<weft_cloth, FfiError> {
        let n = self.world.cloth(id).map_or(0, |c| c.state().len());
        let entry = ClothEntry {
            id,
            normals: vec![Vec3::ZERO; n],
            normals_frame: None,
            pending_pins: Vec::new(),
        };
        let (i, g) = self
            .cloths
            .insert(entry)
            .ok_or_else(|| FfiError::invalid("too many cloths"))?;
        Ok(weft_cloth {
            world: self.id,
            index: i,
            generation: g,
        })
    }

    /// Issues a handle for a collider.
    pub(crate) fn track_collider(&mut self, kind: ColliderKind) -> Result<weft_collider, FfiError> {
        let (i, g) = self
            .colliders
            .insert(ColliderEntry {
                kind,
                pending_pose: None,
            })
            .ok_or_else(|| FfiError::invalid("too many colliders"))?;
        Ok(weft_collider {
            world: self.id,
            index: i,
            generation: g,
        })
    }

    fn stale(what: &str, world: u32, index: u32, generation: u32, own: u32) -> FfiError {
        let why = if world == own {
            "was destroyed or never existed"
        } else {
            "belongs to another world"
        };
        FfiError::new(
            weft_status::WEFT_STATUS_STALE_HANDLE,
            format!(
                "{what} handle {{world {world}, index {index}, generation {generation}}} {why}"
            ),
        )
    }

    /// The entry of a live cloth handle of this world.
    pub(crate) fn cloth(&mut self, h: weft_cloth) -> Result<&mut ClothEntry, FfiError> {
        let own = self.id;
        if h.world != own {
            return Err(Self::stale("cloth", h.world, h.index, h.generation, own));
        }
        self.cloths
            .get_mut(h.index, h.generation)
            .ok_or_else(|| Self::stale("cloth", h.world, h.index, h.generation, own))
    }

    /// The entry of a live collider handle of this world.
    pub(crate) fn collider(&mut self, h: weft_collider) -> Result<&mut ColliderEntry, FfiError> {
        let own = self.id;
        if h.world != own {
            return Err(Self::stale("collider", h.world, h.index, h.generation, own));
        }
        self.colliders
            .get_mut(h.index, h.generation)
            .ok_or_else(|| Self::stale("collider", h.world, h.index, h.generation, own))
    }

    /// One frame: kinematic targets become velocities, the world steps in the
    /// world's pool, targets are then held. Everything is checked before
    /// anything changes (`dt`, and the velocities the pending pin targets and
    /// poses imply over it: `limits::MAX_SPEED`, `limits::MAX_ANGULAR_SPEED`),
    /// so a refused step leaves the world, its pending targets included, as it
    /// was. So does a step that fails later (`World::step_saved`): the world is put back
    /// as it was before the call, the pending targets are kept, and an isometric cloth forgets
    /// its BDF2 history and warm starts.
    pub(crate) fn step(&mut self, dt: f32) -> Result<weft_step_stats, FfiError> {
        if !dt.is_finite() {
            return Err(FfiError::non_finite("dt"));
        }
        if dt <= 0.0 {
            return Err(FfiError::invalid(format!(
                "`dt` must be positive, got {dt}"
            )));
        }
        self.world.check_step(dt)?;
        // Two passes over the pending targets, so nothing is stored until all
        // pass (and nothing is allocated): check, then apply.
        for e in self.cloths.iter().map(|(_, _, e)| e) {
            for &(vertex, goal) in &e.pending_pins {
                self.pin_motion(e.id, vertex, goal, dt)?;
            }
        }
        for e in self.colliders.iter().map(|(_, _, e)| e) {
            if let Some(goal) = e.pending_pose {
                self.body_motion(e.kind, goal, dt)?;
            }
        }
        // Nothing is refused from here on. Saved before the targets below are set, so a
        // failed step undoes them too.
        self.world.save_undo();
        // Pins: velocity (target − current target)/dt over the frame.
        for k in 0..self.cloths.slot_count() {
            let Some(e) = self.cloths.slot(k) else {
                continue;
            };
            let cloth = e.id;
            for p in 0..e.pending_pins.len() {
                let Some(e) = self.cloths.slot(k) else { break };
                let (vertex, goal) = e.pending_pins[p];
                let (now, velocity) = self.pin_motion(cloth, vertex, goal, dt)?;
                self.world.pin_vertex(cloth, vertex, now, velocity)?;
            }
        }
        // Colliders: the constant motion from the pose now to the target.
        for k in 0..self.colliders.slot_count() {
            let Some(e) = self.colliders.slot(k) else {
                continue;
            };
            let (kind, Some(goal)) = (e.kind, e.pending_pose) else {
                continue;
            };
            let motion = self.body_motion(kind, goal, dt)?;
            match kind {
                ColliderKind::Analytic(i) => self.world.set_collider_motion(i, motion)?,
                ColliderKind::Mesh(i) => self.world.set_obstacle_motion(i, motion)?,
            }
        }
        // Under the host's dispatcher the step runs on this thread and the host's.
        let result = if self.world.has_task_dispatcher() {
            self.world.step_saved(dt)
        } else {
            self.in_pool(|world| world.step_saved(dt))
        };
        // A failed step was undone, the targets set above included: they stay pending.
        let stats = result?;
        // Targets reached: hold them exactly, motion stops until the next pose.
        for e in self.cloths.values_mut() {
            for &(vertex, goal) in &e.pending_pins {
                self.world.pin_vertex(e.id, vertex, goal, Vec3::ZERO)?;
            }
            e.pending_pins.clear();
        }
        for e in self.colliders.values_mut() {
            let Some(goal) = e.pending_pose.take() else {
                continue;
            };
            match e.kind {
                ColliderKind::Analytic(i) => {
                    self.world.set_collider_motion(i, Motion::default())?;
                    self.world.set_collider_pose(i, goal)?;
                }
                ColliderKind::Mesh(i) => {
                    self.world.set_obstacle_motion(i, Motion::default())?;
                    self.world.set_obstacle_pose(i, goal)?;
                }
            }
        }
        Ok(weft_step_stats::from_stats(&stats))
    }
}

impl weft_world {
    /// The target now of pinned `vertex` of world cloth `cloth` and the velocity that reaches
    /// `goal` in `dt`, checked against `limits::MAX_SPEED`.
    fn pin_motion(
        &self,
        cloth: ClothId,
        vertex: u32,
        goal: Vec3,
        dt: f32,
    ) -> Result<(Vec3, Vec3), FfiError> {
        let now = cloth_of(&self.world, cloth)?
            .pins()
            .iter()
            .find(|p| p.vertex == vertex)
            .map(|p| p.target)
            .ok_or_else(|| {
                FfiError::invalid(format!("vertex {vertex} was unpinned before the step"))
            })?;
        let velocity = (goal - now) / dt;
        crate::limits::check_speed("pin target", velocity).map_err(|e| {
            FfiError::invalid(format!(
                "vertex {vertex}: the pending pin target {goal} is {:e} m from the target now, \
                 {:e} m/s over dt = {dt} s: {e}",
                (goal - now).length(),
                velocity.length()
            ))
        })?;
        Ok((now, velocity))
    }

    /// The constant motion that takes a collider from its pose now to `goal` in `dt`, checked
    /// against `limits::MAX_SPEED` and `limits::MAX_ANGULAR_SPEED`.
    fn body_motion(&self, kind: ColliderKind, goal: Pose, dt: f32) -> Result<Motion, FfiError> {
        let now = match kind {
            ColliderKind::Analytic(id) => self.world.collider(id).map(|c| c.pose()),
            ColliderKind::Mesh(id) => self.world.obstacle(id).map(|o| o.pose()),
        }
        .ok_or_else(|| FfiError::invalid("a collider handle has no body"))?;
        let motion = motion_between(&now, &goal, dt);
        crate::world::check_motion(&motion).map_err(|e| {
            FfiError::invalid(format!(
                "the pending collider pose is {:e} m and {:e} rad from the pose now, over \
                 dt = {dt} s: {e}",
                (goal.translation - now.translation).length(),
                goal.rotation.angle_between(now.rotation)
            ))
        })?;
        Ok(motion)
    }
}

/// Reads a NUL-terminated UTF-8 string argument.
///
/// # Safety
/// A non-null `s` must be NUL-terminated.
pub(crate) unsafe fn read_str<'a>(
    s: *const c_char,
    what: &'static str,
) -> Result<&'a str, FfiError> {
    if s.is_null() {
        return Err(FfiError::null(what));
    }
    // SAFETY: non-null and NUL-terminated (this function's contract).
    unsafe { CStr::from_ptr(s) }
        .to_str()
        .map_err(|_| FfiError::invalid(format!("`{what}` is not valid UTF-8")))
}

/// The library version, e.g. "0.2.0" (a static string; never fails).
#[unsafe(no_mangle)]
pub extern "C" fn weft_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The message of the most recent failed call on this thread ("" if none).
/// Valid until the next failing call on this thread; never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn weft_last_error() -> *const c_char {
    last_error_ptr()
}

/// Fills `*out` with the default world settings of weft 0.1's `weft_world_desc` (`size`
/// set): the entry point of hosts built against the 0.1 header. The header defines
/// `weft_world_desc_default` as an inline call of `weft_world_desc_init(out, sizeof *out)`.
///
/// # Safety
/// `out` must be NULL or point at a writable 0.1 `weft_world_desc` (or larger).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_world_desc_default(out: *mut weft_world_desc) -> weft_status {
    ffi_boundary!("weft_world_desc_default", {
        // SAFETY: forwarded from this function's contract.
        unsafe { init_sized(out, first_size::<weft_world_desc>(), "out") }
    })
}

/// Fills the caller's `weft_world_desc` of `size` bytes (`sizeof *out`: this header's size or
/// an older header's) with the default world settings, `size` set.
///
/// # Safety
/// `out` NULL or `size` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_world_desc_init(out: *mut weft_world_desc, size: u32) -> weft_status {
    ffi_boundary!("weft_world_desc_init", {
        // SAFETY: forwarded from this function's contract.
        unsafe { init_sized(out, size, "out") }
    })
}

/// Creates an empty world from `desc`; `*out` receives it (set to NULL on error).
///
/// # Safety
/// `desc` must be NULL or point at a readable `weft_world_desc`; `out` NULL
/// or a writable pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_world_create(
    desc: *const weft_world_desc,
    out: *mut *mut weft_world,
) -> weft_status {
    ffi_boundary!("weft_world_create", {
        let out = try_mut!(out, "out");
        *out = std::ptr::null_mut();
        // SAFETY: forwarded from this function's contract.
        let desc = unsafe { read_sized(desc, "desc")? };
        let settings = desc.settings()?;
        let w = weft_world::new(desc.worker_threads, || Ok(World::new(settings)))?;
        *out = Box::into_raw(Box::new(w));
        Ok(())
    })
}

/// Destroys a world and everything in it; its handles and pointers die with it.
///
/// # Safety
/// `world` must be NULL or a world from this library not yet destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_world_destroy(world: *mut weft_world) -> weft_status {
    ffi_boundary!("weft_world_destroy", {
        if world.is_null() {
            return Err(FfiError::null("world"));
        }
        // SAFETY: a live world from `Box::into_raw` (this function's contract).
        drop(unsafe { Box::from_raw(world) });
        Ok(())
    })
}

/// Loads a scene file (TOML, `samples/README.md`) into a new world with its
/// settings, cloths and colliders (`WEFT_STATUS_UNSUPPORTED` from a library built
/// without the `scene` feature); `*out_info` receives its fps, frames and
/// counts (set `out_info->size` first). Handles: `weft_world_cloths`,
/// `weft_world_colliders`.
///
/// # Safety
/// `path` NULL or NUL-terminated; `out_world` NULL or writable; `out_info`
/// NULL or a writable `weft_scene_info`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_scene_load(
    path: *const c_char,
    worker_threads: u32,
    out_world: *mut *mut weft_world,
    out_info: *mut weft_scene_info,
) -> weft_status {
    ffi_boundary!("weft_scene_load", {
        let out_world = try_mut!(out_world, "out_world");
        *out_world = std::ptr::null_mut();
        // SAFETY: forwarded from this function's contract.
        if out_info.is_null() {
            return Err(FfiError::null("out_info"));
        }
        // SAFETY: non-null; a size-prefixed struct begins with its size.
        check_size::<weft_scene_info>(unsafe { out_info.cast::<u32>().read_unaligned() })?;
        // SAFETY: forwarded from this function's contract.
        let path = unsafe { read_str(path, "path")? };
        let (w, info) = load_scene(Path::new(path), worker_threads)?;
        // SAFETY: forwarded from this function's contract (its size was checked above).
        unsafe { write_sized(out_info, "out_info", &info)? };
        *out_world = Box::into_raw(Box::new(w));
        Ok(())
    })
}

/// A scene file's world and what `weft_scene_load` reports of it.
#[cfg(feature = "scene")]
fn load_scene(path: &Path, worker_threads: u32) -> Result<(weft_world, weft_scene_info), FfiError> {
    let scene_err =
        |e: crate::scene::SceneError| FfiError::new(weft_status::WEFT_STATUS_SCENE, e.to_string());
    let scene = crate::scene::load(path).map_err(scene_err)?;
    let w = weft_world::new(worker_threads, || scene.instantiate().map_err(scene_err))?;
    let info = weft_scene_info {
        size: std::mem::size_of::<weft_scene_info>() as u32,
        frames: scene.frames,
        fps: scene.fps,
        cloth_count: w.cloths.len() as u32,
        collider_count: w.colliders.len() as u32,
    };
    Ok((w, info))
}

/// Built without scene files: every header has `weft_scene_load`, this library refuses it.
#[cfg(not(feature = "scene"))]
fn load_scene(
    path: &Path,
    _worker_threads: u32,
) -> Result<(weft_world, weft_scene_info), FfiError> {
    Err(FfiError::new(
        weft_status::WEFT_STATUS_UNSUPPORTED,
        format!(
            "cannot load {}: this weft was built without the `scene` feature",
            path.display()
        ),
    ))
}

/// Writes up to `capacity` cloth handles, in creation order, to `out`;
/// `*out_count` receives how many cloths the world has. `BUFFER_TOO_SMALL`
/// (with `*out_count` set) when they do not fit.
///
/// # Safety
/// `world` a live world or NULL; `out` NULL or `capacity` writable handles;
/// `out_count` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_world_cloths(
    world: *const weft_world,
    out: *mut weft_cloth,
    capacity: u32,
    out_count: *mut u32,
) -> weft_status {
    ffi_boundary!("weft_world_cloths", {
        let w = try_ref!(world, "world");
        let out_count = try_mut!(out_count, "out_count");
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        let mut handles: Vec<(Option<usize>, weft_cloth)> = w
            .cloths
            .iter()
            .map(|(index, generation, e)| {
                (
                    w.world.cloth_place(e.id).ok(),
                    weft_cloth {
                        world: w.id,
                        index,
                        generation,
                    },
                )
            })
            .collect();
        handles.sort_by_key(|(i, _)| *i);
        *out_count = handles.len() as u32;
        if handles.len() > capacity as usize {
            return Err(FfiError::new(
                weft_status::WEFT_STATUS_BUFFER_TOO_SMALL,
                format!("{} cloths, capacity {capacity}", handles.len()),
            ));
        }
        // SAFETY: `out` holds `capacity` ≥ handles.len() writable handles.
        let out = unsafe { std::slice::from_raw_parts_mut(out, handles.len()) };
        for (o, (_, h)) in out.iter_mut().zip(&handles) {
            *o = *h;
        }
        Ok(())
    })
}

/// Writes up to `capacity` collider handles (analytic colliders in creation
/// order, then triangle meshes) to `out`; as `weft_world_cloths`.
///
/// # Safety
/// As `weft_world_cloths`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_world_colliders(
    world: *const weft_world,
    out: *mut weft_collider,
    capacity: u32,
    out_count: *mut u32,
) -> weft_status {
    ffi_boundary!("weft_world_colliders", {
        let w = try_ref!(world, "world");
        let out_count = try_mut!(out_count, "out_count");
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        let mut handles: Vec<((u8, Option<usize>), weft_collider)> = w
            .colliders
            .iter()
            .map(|(index, generation, e)| {
                let key = match e.kind {
                    ColliderKind::Analytic(id) => (0, w.world.collider_place(id).ok()),
                    ColliderKind::Mesh(id) => (1, w.world.obstacle_place(id).ok()),
                };
                (
                    key,
                    weft_collider {
                        world: w.id,
                        index,
                        generation,
                    },
                )
            })
            .collect();
        handles.sort_by_key(|(k, _)| *k);
        *out_count = handles.len() as u32;
        if handles.len() > capacity as usize {
            return Err(FfiError::new(
                weft_status::WEFT_STATUS_BUFFER_TOO_SMALL,
                format!("{} colliders, capacity {capacity}", handles.len()),
            ));
        }
        // SAFETY: `out` holds `capacity` ≥ handles.len() writable handles.
        let out = unsafe { std::slice::from_raw_parts_mut(out, handles.len()) };
        for (o, (_, h)) in out.iter_mut().zip(&handles) {
            *o = *h;
        }
        Ok(())
    })
}

/// Advances the world one frame of `dt` seconds and fills `*stats` (set
/// `stats->size` first). Pin targets and collider poses set since the last
/// step are reached at the end of this frame. Pointers from
/// `weft_cloth_positions`/`_normals` stay valid; their contents change.
///
/// `dt` must lie in [`WEFT_MIN_FRAME_DT`, `WEFT_MAX_FRAME_DT`] and `dt / substeps` be at
/// least `WEFT_MIN_SUBSTEP_DT`; the motion each pending pin target or collider pose implies
/// over `dt` must stay within `WEFT_MAX_SPEED` (and `WEFT_MAX_ANGULAR_SPEED`). Otherwise the
/// step is refused (`WEFT_STATUS_INVALID_ARGUMENT`, naming the vertex or the pose) before
/// anything changes: the state hash, the pending targets and poses are as they were, and a
/// new target or pose set afterwards replaces the refused one.
///
/// A step that fails after that (`WEFT_STATUS_SIMULATION_FAILED`, `WEFT_STATUS_THREADS`,
/// `WEFT_STATUS_PANIC`) is undone: the world is as it was before the call (positions,
/// velocities, solver warm starts, contact history, time, collider poses), its pending targets
/// and poses are still pending, and a retry, or the next step, gives the state hash of a world
/// in which the failed call was never made. An isometric cloth forgets its BDF2 history and
/// warm starts then, as after `weft_cloth_set_state`.
///
/// # Safety
/// `world` NULL or live; `stats` NULL or a writable `weft_step_stats`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_world_step(
    world: *mut weft_world,
    dt: f32,
    stats: *mut weft_step_stats,
) -> weft_status {
    ffi_boundary!("weft_world_step", {
        let w = try_mut!(world, "world");
        // SAFETY: forwarded from this function's contract.
        if stats.is_null() {
            return Err(FfiError::null("stats"));
        }
        // SAFETY: non-null; a size-prefixed struct begins with its size. Checked before the
        // step, so a bad size changes nothing.
        check_size::<weft_step_stats>(unsafe { stats.cast::<u32>().read_unaligned() })?;
        let out = w.step(dt)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { write_sized(stats, "stats", &out)? };
        Ok(())
    })
}

/// `*out` receives the hash of every cloth's positions and velocities (the
/// `state_hash` of `weft run`): equal hashes, bit-identical states.
///
/// # Safety
/// `world` NULL or live; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_world_state_hash(
    world: *const weft_world,
    out: *mut u64,
) -> weft_status {
    ffi_boundary!("weft_world_state_hash", {
        let w = try_ref!(world, "world");
        let out = try_mut!(out, "out");
        *out = w.world.state_hash();
        Ok(())
    })
}

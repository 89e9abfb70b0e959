//! The host's job system: `weft_world_set_task_dispatcher` (`runtime::executor`,
//! `docs/methods/threading.md`).

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use super::boundary::{ffi_boundary, try_mut};
use super::status::weft_status;
use super::world::weft_world;
use crate::runtime::executor::TaskDispatcher;

/// Runs task `index` of a batch; `task_data` is the batch's pointer as passed to the
/// dispatcher. Safe to call from any thread, concurrently for different indices. It never
/// unwinds into the host: a failure inside the task is caught and makes the step fail.
/// Never NULL when weft passes it.
#[allow(non_camel_case_types)]
pub type weft_task_run = Option<unsafe extern "C" fn(task_data: *mut c_void, index: u32)>;

/// The host's dispatcher: must call `run(task_data, i)` exactly once for every `i` in
/// `0..task_count`, on any of its threads (the calling one included), in any order or
/// concurrently, and return only after every call has returned. `user` is the pointer given
/// to `weft_world_set_task_dispatcher`. The tasks call nothing of the host back, and the host
/// must not call into weft from inside `dispatch` other than through `run`.
#[allow(non_camel_case_types)]
pub type weft_task_dispatch = Option<
    unsafe extern "C" fn(
        user: *mut c_void,
        task_count: u32,
        run: weft_task_run,
        task_data: *mut c_void,
    ),
>;

/// The C dispatcher (not NULL) and its user pointer, as a [`TaskDispatcher`].
struct HostDispatcher {
    dispatch: unsafe extern "C" fn(
        user: *mut c_void,
        task_count: u32,
        run: weft_task_run,
        task_data: *mut c_void,
    ),
    user: *mut c_void,
}

// SAFETY: `weft_world_set_task_dispatcher`'s contract makes the host responsible for `user`
// being usable from the thread that steps the world; weft never dereferences it.
unsafe impl Send for HostDispatcher {}
// SAFETY: as above; weft only passes `user` back to `dispatch`.
unsafe impl Sync for HostDispatcher {}

/// The batch as `run` sees it: a pointer to the task closure.
type Batch<'a> = &'a (dyn Fn(usize) + Sync);

/// Runs task `index` of the batch behind `task_data`.
///
/// # Safety
/// `task_data` is the pointer [`HostDispatcher::dispatch`] handed out, used before that call
/// returns.
unsafe extern "C" fn run_task(task_data: *mut c_void, index: u32) {
    if task_data.is_null() {
        return;
    }
    // SAFETY: from this function's contract: `task_data` points at a live `Batch`.
    let task: Batch<'_> = unsafe { *task_data.cast::<Batch<'_>>() };
    // The executor's task catches its own panics; this guard keeps an unwind out of C code
    // whatever changes there.
    let _ = catch_unwind(AssertUnwindSafe(|| task(index as usize)));
}

impl TaskDispatcher for HostDispatcher {
    fn dispatch(&self, count: usize, task: &(dyn Fn(usize) + Sync)) {
        // The executor never builds a batch larger than the world's cloth count (a `u32`).
        let count = u32::try_from(count).unwrap_or(u32::MAX);
        let mut batch: Batch<'_> = task;
        let data = std::ptr::from_mut(&mut batch).cast::<c_void>();
        // SAFETY: the host's dispatcher, under `weft_world_set_task_dispatcher`'s contract:
        // it calls `run_task(data, i)` only before it returns, while `batch` lives.
        unsafe { (self.dispatch)(self.user, count, Some(run_task), data) };
    }
}

/// Hands weft's parallel work to the host's job system: every later `weft_world_step` runs on
/// the calling thread and calls `dispatch(user, task_count, run, task_data)` once a substep
/// with one task per cloth that cannot touch another cloth and one per group of cloths that
/// may touch (the layers of a garment), waiting for it to return. NULL `dispatch` returns to
/// the world's own worker threads (`worker_threads`).
///
/// Guarantees: the state hash is bit-identical to the own pool's for any thread count and
/// any task order; under a dispatcher weft starts no thread and runs nothing on its own
/// workers during a step (the loops inside one cloth run inline in its task, so one cloth is
/// one task: a lone cloth gets no parallelism from the dispatcher); tasks call nothing of the
/// host; a failure inside a task is caught in the task (it never unwinds into the host) and
/// the step returns `WEFT_STATUS_PANIC`; a dispatcher that does not run every task exactly
/// once makes the step return `WEFT_STATUS_THREADS`. Either failed step is undone
/// (`weft_world_step`). Creating cloths and other edits still
/// use the world's own workers.
///
/// # Safety
/// `world` NULL or live. When `dispatch` is not NULL: `dispatch` must keep the contract of
/// `weft_task_dispatch`, and it and `user` must stay valid and usable from the thread that
/// calls `weft_world_step` until another dispatcher is set or the world is destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_world_set_task_dispatcher(
    world: *mut weft_world,
    dispatch: weft_task_dispatch,
    user: *mut c_void,
) -> weft_status {
    ffi_boundary!("weft_world_set_task_dispatcher", {
        let w = try_mut!(world, "world");
        let dispatcher = dispatch
            .map(|dispatch| Arc::new(HostDispatcher { dispatch, user }) as Arc<dyn TaskDispatcher>);
        w.world.set_task_dispatcher(dispatcher);
        Ok(())
    })
}

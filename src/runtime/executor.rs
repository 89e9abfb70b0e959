//! Who runs a step's independent units of work: weft's rayon pool, or the host's job system
//! (`docs/methods/threading.md`).
//!
//! A frame's units are the cloths and groups of cloths that cannot touch in a substep
//! (`world::layers`). [`Executor::run`] hands them out: with [`Executor::Rayon`] as a rayon
//! parallel loop in the pool the step runs in; with [`Executor::Host`] as one batch of tasks
//! given to the host's [`TaskDispatcher`], which may run them on any of its threads.
//!
//! Under a host dispatcher nothing of the step runs on a thread weft started: the calling
//! thread and every task run their chunked loops inline ([`inline`]), in the same fixed chunks
//! and the same summation order, so the result is bit-identical to weft's own pool for any
//! thread count. The price: one cloth (or one group) is one task, so a single cloth gets no
//! parallelism from a host dispatcher.
//!
//! Each unit's data sits in a [`Task`] (a mutex around it and a run count), so a task reaches
//! its unit through a shared reference whatever thread runs it, and a dispatcher that runs a
//! task twice, never, or with an index out of range is caught and reported instead of
//! corrupting a cloth. A task that panics is caught on its own thread (the panic never
//! reaches the dispatcher) and the batch returns [`TaskError::Panicked`].
#![deny(unsafe_code)]

use std::cell::Cell;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rayon::iter::plumbing::{Producer, ProducerCallback};
use rayon::prelude::*;

/// The host's job system: runs a batch of independent tasks and waits for them.
///
/// The contract of [`TaskDispatcher::dispatch`]: call `task(i)` exactly once for every `i` in
/// `0..count`, on any threads (the caller's included), in any order or concurrently, and return
/// only after every call has returned. The tasks call nothing of the host back.
pub trait TaskDispatcher: Send + Sync {
    /// Runs `task(i)` for every `i` in `0..count` and returns when all have returned.
    fn dispatch(&self, count: usize, task: &(dyn Fn(usize) + Sync));
}

/// Where a step's units run.
#[derive(Clone, Default)]
pub enum Executor {
    /// A rayon parallel loop in the pool the step runs in (the world's own, or the caller's).
    #[default]
    Rayon,
    /// One batch of tasks a substep, given to the host's dispatcher.
    Host(Arc<dyn TaskDispatcher>),
}

impl fmt::Debug for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rayon => f.write_str("Rayon"),
            Self::Host(_) => f.write_str("Host"),
        }
    }
}

/// Why a batch of tasks failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    /// A task panicked (caught on its own thread: a bug in weft).
    #[error("a task panicked (caught inside the task; a bug in weft)")]
    Panicked,
    /// The dispatcher ran a task twice, never, or asked for an index out of range.
    #[error(
        "the task dispatcher broke its contract: every index in 0..task_count must run exactly \
         once before dispatch returns"
    )]
    BadDispatch,
}

/// One unit of a batch: its data and how many times it ran.
#[derive(Debug)]
pub struct Task<T>(Mutex<(T, u32)>);

impl<T> Task<T> {
    /// A task over `unit`, not yet run.
    pub fn new(unit: T) -> Self {
        Self(Mutex::new((unit, 0)))
    }

    /// The unit back (after the batch).
    pub fn into_inner(self) -> T {
        self.0
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .0
    }

    /// Runs `work` on the unit unless it ran already; whether this was its first run.
    fn run_once(&self, work: &(impl Fn(&mut T) + Sync)) -> bool {
        // A second concurrent run finds the lock held: refused, like a second run after it.
        let Ok(mut guard) = self.0.try_lock() else {
            return false;
        };
        let (unit, runs) = &mut *guard;
        *runs += 1;
        if *runs > 1 {
            return false;
        }
        work(unit);
        true
    }

    /// Whether the unit ran exactly once.
    fn ran_once(&self) -> bool {
        matches!(self.0.lock().map(|g| g.1), Ok(1))
    }
}

thread_local! {
    /// Set while this thread runs a step or a task for a host dispatcher: chunked loops
    /// run inline on it.
    static INLINE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with this thread's chunked loops inline (restored afterwards, also on a panic).
pub fn inline<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            INLINE.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(INLINE.with(|c| c.replace(true)));
    f()
}

/// Whether rayon may run this thread's loops: not while it runs for a host dispatcher
/// ([`inline`]). A loop with a serial branch takes it when this is false.
#[inline]
#[must_use]
pub fn parallel_here() -> bool {
    !INLINE.with(Cell::get)
}

/// `iter.for_each(f)` in the current rayon pool, or, while this thread runs for a host
/// dispatcher ([`inline`]), the same items in order on this thread without touching rayon's
/// thread pools (a rayon loop, even one that never splits, would start the global pool).
pub fn for_each<I, F>(iter: I, f: F)
where
    I: IndexedParallelIterator,
    F: Fn(I::Item) + Sync + Send,
{
    if parallel_here() {
        iter.for_each(f);
    } else {
        iter.with_producer(InOrder(f));
    }
}

/// Drives a producer's items through `f` in order on the calling thread.
struct InOrder<F>(F);

impl<T, F: Fn(T)> ProducerCallback<T> for InOrder<F> {
    type Output = ();
    fn callback<P: Producer<Item = T>>(self, producer: P) {
        producer.into_iter().for_each(self.0);
    }
}

/// `rayon::join(a, b)`, or `(a(), b())` on this thread while it runs for a host dispatcher
/// ([`inline`]): the same two results either way.
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if parallel_here() {
        rayon::join(a, b)
    } else {
        (a(), b())
    }
}

impl Executor {
    /// Runs `work` once on every unit of `tasks`: in parallel in the current rayon pool, or as
    /// one batch of the host's. A task that panics or a dispatcher that breaks its contract
    /// gives an error after the batch; the units that ran keep what they did.
    ///
    /// # Panics
    /// Under [`Executor::Rayon`], a panic of `work` propagates as in any rayon loop.
    pub fn run<T: Send>(
        &self,
        tasks: &[Task<T>],
        work: impl Fn(&mut T) + Sync,
    ) -> Result<(), TaskError> {
        match self {
            Self::Rayon => {
                for_each(tasks.par_iter(), |t| {
                    t.run_once(&work);
                });
                Ok(())
            }
            Self::Host(dispatcher) => {
                let panicked = AtomicBool::new(false);
                let misused = AtomicBool::new(false);
                let task = |i: usize| {
                    let Some(t) = tasks.get(i) else {
                        misused.store(true, Ordering::Relaxed);
                        return;
                    };
                    match catch_unwind(AssertUnwindSafe(|| inline(|| t.run_once(&work)))) {
                        Ok(true) => {}
                        Ok(false) => misused.store(true, Ordering::Relaxed),
                        Err(_) => panicked.store(true, Ordering::Relaxed),
                    }
                };
                dispatcher.dispatch(tasks.len(), &task);
                if panicked.load(Ordering::Relaxed) {
                    Err(TaskError::Panicked)
                } else if misused.load(Ordering::Relaxed) || !tasks.iter().all(Task::ran_once) {
                    Err(TaskError::BadDispatch)
                } else {
                    Ok(())
                }
            }
        }
    }

    /// Runs `f` as a step under this executor: inline on the calling thread for a host
    /// dispatcher, as is otherwise.
    pub fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        match self {
            Self::Rayon => f(),
            Self::Host(_) => inline(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the tasks on the calling thread, last first.
    struct Reverse;
    impl TaskDispatcher for Reverse {
        fn dispatch(&self, count: usize, task: &(dyn Fn(usize) + Sync)) {
            for i in (0..count).rev() {
                task(i);
            }
        }
    }

    /// Skips the first task and runs the second twice.
    struct Broken;
    impl TaskDispatcher for Broken {
        fn dispatch(&self, count: usize, task: &(dyn Fn(usize) + Sync)) {
            for i in 1..count {
                task(i);
                task(i);
            }
            task(count);
        }
    }

    fn tasks(n: u32) -> Vec<Task<(u32, u32)>> {
        (0..n).map(|i| Task::new((i, 0))).collect()
    }

    #[test]
    fn host_and_rayon_run_every_unit_once() {
        for executor in [Executor::Rayon, Executor::Host(Arc::new(Reverse))] {
            let t = tasks(5);
            executor
                .run(&t, |(i, out)| *out = *i * 10 + u32::from(!parallel_here()))
                .expect("a well-behaved dispatcher");
            let host = matches!(executor, Executor::Host(_));
            let out: Vec<u32> = t.into_iter().map(|t| t.into_inner().1).collect();
            let inline = u32::from(host);
            assert_eq!(
                out,
                vec![inline, 10 + inline, 20 + inline, 30 + inline, 40 + inline]
            );
        }
    }

    #[test]
    fn a_broken_dispatcher_is_reported() {
        let t = tasks(3);
        let r = Executor::Host(Arc::new(Broken)).run(&t, |(_, out)| *out += 1);
        assert_eq!(r, Err(TaskError::BadDispatch));
        let out: Vec<u32> = t.into_iter().map(|t| t.into_inner().1).collect();
        assert_eq!(out, vec![0, 1, 1], "a second run of a unit does nothing");
    }

    #[test]
    fn a_panicking_task_is_caught_inside_the_task() {
        let t = tasks(3);
        let r = Executor::Host(Arc::new(Reverse)).run(&t, |(i, out)| {
            assert!(*i != 1, "task 1 fails");
            *out = 1;
        });
        assert_eq!(r, Err(TaskError::Panicked));
        assert!(
            !INLINE.with(Cell::get),
            "the inline mark is restored after a panic"
        );
    }
}

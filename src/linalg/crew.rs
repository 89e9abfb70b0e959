//! A two-thread crew for an iteration of short parallel phases: one rayon fork-join for the
//! whole loop instead of one per phase (`docs/methods/threading.md`, "The solve's crew").
//!
//! An iteration of the filtered PCG is a handful of passes of some tens of microseconds each,
//! every one ending in a sum or a dependency that the next pass waits for. Run as rayon
//! fork-joins, each pass pays for waking a worker; [`lead`] instead takes one helper for the
//! whole loop (`rayon::join` of the leader's loop and [`Crew::help`]) and hands it work
//! through atomics.
//!
//! # Phases and claims
//! The leader (the calling thread) publishes a *phase*: a kind and a number of tasks, packed
//! with an epoch into one atomic word, the *ticket* (`epoch | tasks | next`). Whoever takes
//! task `next` first, by a compare-exchange `next → next + 1` on the ticket, runs it;
//! afterwards it adds one to the *done* counter. The leader claims tasks like the helper
//! does, so it runs every task the helper has not claimed yet, and then waits only for the
//! tasks the helper is running: a helper that never started (the pool's other thread busy, a
//! pool of one thread, a host dispatcher) costs nothing but the check, and the results do
//! not depend on who ran what, since every task's arithmetic is fixed by its index. Work that
//! needs one thread (the separator's solves, the scalars of CG, the deadline) runs on the
//! leader between phases, while no task is open.
//!
//! The helper spins, then yields, then parks ([`std::thread::park`]) while no task is open;
//! publishing a phase or stopping the crew unparks it if it said it was asleep (a store and a
//! load on each side, all `SeqCst`, so either the helper sees the new ticket before parking or
//! the leader sees it asleep). When the leader's loop returns (or unwinds), the crew stops and
//! the helper returns; if the helper has not started by then, rayon runs it on the leader's
//! thread, where it returns at once. Nothing allocates.
//!
//! # Sharing the vectors: the safety argument
//! A phase's tasks write disjoint rows of the solver's vectors and read rows that no task of
//! the phase writes; a later phase reads what an earlier one wrote. The vectors are therefore
//! shared as [`SharedRows`], from which a task borrows the rows it may touch, unsafely: the
//! borrows are sound because of two facts, one checked by the phase tables of the caller
//! (`super::pcg_crew`), one by this module's ordering.
//!
//! 1. **Within a phase**, the caller's table lists, for every kind of phase, the rows each
//!    task borrows: mutable borrows of distinct tasks are disjoint, and a shared borrow of
//!    rows of a vector is taken only of rows that no task of the phase borrows mutably. Work
//!    the leader runs between phases borrows anything, since no task is open then.
//! 2. **Between phases**, every access of phase `e` happens before every access of phase
//!    `e + 1`: a task's accesses come before its `Release` increment of *done*; the leader
//!    publishes `e + 1` only after an `Acquire` load of *done* counting every task of `e`,
//!    and its own work between phases is sequenced in between; the ticket is stored with
//!    (at least) `Release`, and a task of `e + 1` is claimed by a compare-exchange with
//!    `Acquire` that reads that store (or a later claim of the same phase, which continues
//!    its release sequence). A claimer that lost the race reads a newer ticket and retries;
//!    it never runs a task of a phase that is no longer open.
//!
//! So no two accesses to a row conflict without a happens-before edge between them: no data
//! race, and no two live borrows of a row where one is mutable. Miri is not run (it needs a
//! nightly toolchain, which the project does not use); instead `tests` below stress the
//! protocol with random delays on both sides and check every row of every phase. Valgrind's
//! DRD passes the test but cannot judge it: it does not model atomics as synchronisation, so
//! it reports every hand-over through them as a conflict, rayon's own deque included.
//!
//! One more `unsafe`: the leader's closure must be `Send` for `rayon::join`, but it calls the
//! caller's deadline (`&mut dyn FnMut`, not `Send`). [`OnCallingThread`] carries it and
//! checks, before every call, that it is on the thread that made it; [`lead`] is only used
//! from a rayon worker, where `rayon::join` runs its first closure on the calling thread, so
//! the check never fails.
#![allow(unsafe_code)]

use std::hint::spin_loop;
use std::marker::PhantomData;
use std::ops::Range;
use std::ptr::NonNull;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::thread::{self, Thread, ThreadId};

/// What a crew's tasks run: task `task` of a phase of kind `kind`.
pub trait Phases: Sync {
    /// Runs one task. Its arithmetic must depend on `kind`, `task` and the data only (never
    /// on the thread), and its borrows of shared rows must follow the module doc's rule 1.
    fn run(&self, kind: u32, task: usize);
}

/// Idle rounds the helper spins (one atomic load and a spin hint each) before it yields.
const SPIN_ROUNDS: u32 = 2_000;

/// Idle rounds the helper yields its time slice before it parks.
const YIELD_ROUNDS: u32 = 16;

/// Rounds the leader spins while the helper finishes a task, before it yields.
const LEADER_SPIN_ROUNDS: u32 = 2_000;

/// Most tasks in a phase (the ticket's `tasks` and `next` fields are 16 bits).
pub const MAX_TASKS: usize = 0xffff;

/// The ticket word: epoch in the high 32 bits, the phase's task count in the next 16, the
/// next unclaimed task in the low 16.
#[inline]
fn pack(epoch: u32, tasks: usize, next: usize) -> u64 {
    (u64::from(epoch) << 32) | ((tasks as u64) << 16) | next as u64
}

/// A value alone on its cache lines (128 bytes: two 64-byte lines, since x86 cores prefetch
/// lines in adjacent pairs), so that writes to it do not invalidate its neighbours in the
/// other core's cache.
#[derive(Debug, Default)]
#[repr(C, align(128))]
pub struct Padded<T>(pub T);

const _: () = assert!(std::mem::size_of::<Padded<AtomicU64>>() == 128);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}

/// The shared state of a crew: the ticket, the done count, the kind of the open phase and
/// the helper's sleep handshake. The ticket and the done count sit on lines of their own:
/// the helper polls the ticket while the leader polls the done count, and each count is
/// written by both threads, so on one line every claim or finished task would invalidate
/// what the other thread is polling.
#[derive(Debug)]
pub struct Crew {
    ticket: Padded<AtomicU64>,
    done: Padded<AtomicU64>,
    kind: AtomicU32,
    stop: AtomicBool,
    /// A task panicked (its thread unwinds; `rayon::join` re-raises the panic).
    failed: AtomicBool,
    sleeping: AtomicBool,
    helper: OnceLock<Thread>,
    /// The thread that leads. If rayon runs [`Crew::help`] on it (the helper job still in
    /// the leader's own queue when the leader's path waits on rayon for something else, as a
    /// breadth-first pool can do), the helper returns at once: waiting there for `stop`, which
    /// only the leader below it on the same stack can set, would never end.
    leader: ThreadId,
}

impl Crew {
    fn new() -> Self {
        Crew {
            ticket: Padded(AtomicU64::new(pack(0, 0, 0))),
            done: Padded(AtomicU64::new(0)),
            kind: AtomicU32::new(0),
            stop: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            sleeping: AtomicBool::new(false),
            helper: OnceLock::new(),
            leader: thread::current().id(),
        }
    }

    /// Claims the next task of the open phase: its kind and index.
    #[inline]
    fn claim(&self) -> Option<(u32, usize)> {
        let mut t = self.ticket.load(Ordering::Acquire);
        loop {
            let tasks = ((t >> 16) & 0xffff) as usize;
            let next = (t & 0xffff) as usize;
            if next >= tasks {
                return None;
            }
            match self
                .ticket
                .compare_exchange_weak(t, t + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                // The kind was stored before the ticket that this claim read (module doc,
                // rule 2), and is not stored again before this task is done.
                Ok(_) => return Some((self.kind.load(Ordering::Relaxed), next)),
                Err(now) => t = now,
            }
        }
    }

    /// Whether a task is open (for the helper's last look before parking).
    fn open(&self) -> bool {
        let t = self.ticket.load(Ordering::SeqCst);
        (t & 0xffff) < ((t >> 16) & 0xffff)
    }

    /// Runs a claimed task and counts it done, also when it unwinds.
    fn run<W: Phases>(&self, work: &W, kind: u32, task: usize) {
        struct Done<'a>(&'a Crew);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                if thread::panicking() {
                    self.0.failed.store(true, Ordering::Relaxed);
                }
                self.0.done.fetch_add(1, Ordering::Release);
            }
        }
        let _done = Done(self);
        work.run(kind, task);
    }

    /// Wakes the helper if it said it was parked.
    fn wake(&self) {
        if self.sleeping.load(Ordering::SeqCst)
            && let Some(helper) = self.helper.get()
        {
            helper.unpark();
        }
    }

    /// The helper's loop: claims and runs tasks until the crew stops.
    pub fn help<W: Phases>(&self, work: &W) {
        if thread::current().id() == self.leader {
            // On the leader's own stack (the field's doc): the leader runs every task itself.
            return;
        }
        // Only the first helper registers (there is one).
        let _ = self.helper.set(thread::current());
        let mut idle = 0u32;
        loop {
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            if let Some((kind, task)) = self.claim() {
                self.run(work, kind, task);
                idle = 0;
                continue;
            }
            idle += 1;
            if idle < SPIN_ROUNDS {
                spin_loop();
            } else if idle < SPIN_ROUNDS + YIELD_ROUNDS {
                thread::yield_now();
            } else {
                self.sleeping.store(true, Ordering::SeqCst);
                if !self.stop.load(Ordering::SeqCst) && !self.open() {
                    // A publish or stop after the checks above unparks us (or has already
                    // left the token, and `park` returns at once); spurious wake-ups loop.
                    thread::park();
                }
                self.sleeping.store(false, Ordering::Relaxed);
                idle = 0;
            }
        }
    }
}

/// The leader's side of a crew: publishes phases and runs what the helper has not claimed.
#[derive(Debug)]
pub struct Leader<'c, W> {
    crew: &'c Crew,
    work: &'c W,
    epoch: u32,
    /// Tasks published so far: the done count once every task has run.
    published: u64,
}

impl<W: Phases> Leader<'_, W> {
    /// Runs a phase of `tasks` tasks of kind `kind` and returns once all have run, on either
    /// thread. Everything the tasks wrote is visible to the leader afterwards. False if a task
    /// panicked on the helper (the caller should stop; the panic is re-raised by [`lead`]).
    ///
    /// # Panics
    /// If `tasks` exceeds [`MAX_TASKS`].
    pub fn phase(&mut self, kind: u32, tasks: usize) -> bool {
        assert!(tasks <= MAX_TASKS, "crew: too many tasks in a phase");
        let crew = self.crew;
        self.epoch = self.epoch.wrapping_add(1);
        self.published += tasks as u64;
        crew.kind.store(kind, Ordering::Relaxed);
        // SeqCst: the store half of the sleep handshake (and at least Release: rule 2).
        crew.ticket
            .store(pack(self.epoch, tasks, 0), Ordering::SeqCst);
        crew.wake();
        while let Some((kind, task)) = crew.claim() {
            crew.run(self.work, kind, task);
        }
        let mut spins = 0u32;
        while crew.done.load(Ordering::Acquire) != self.published {
            if spins < LEADER_SPIN_ROUNDS {
                spins += 1;
                spin_loop();
            } else {
                thread::yield_now();
            }
        }
        !crew.failed.load(Ordering::Relaxed)
    }
}

/// Runs `leader` on the calling thread with a crew whose helper runs `work`'s tasks on
/// another thread of the current rayon pool when one is free (module doc). Returns what
/// `leader` returns. Allocates nothing.
///
/// Call it from a rayon worker (`rayon::current_thread_index()` is `Some`): there
/// `rayon::join` runs `leader` on the calling thread, which [`OnCallingThread`] relies on.
///
/// # Panics
/// A panic of `leader` or of a task propagates (after the crew has stopped).
pub fn lead<W, R>(work: &W, leader: impl FnOnce(&mut Leader<'_, W>) -> R + Send) -> R
where
    W: Phases,
    R: Send,
{
    struct Stop<'a>(&'a Crew);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.stop.store(true, Ordering::SeqCst);
            self.0.wake();
        }
    }
    let crew = Crew::new();
    let (result, ()) = rayon::join(
        || {
            let _stop = Stop(&crew);
            leader(&mut Leader {
                crew: &crew,
                work,
                epoch: 0,
                published: 0,
            })
        },
        || crew.help(work),
    );
    result
}

/// A `&mut` callback moved into the leader's closure, usable only on the thread that
/// created it (module doc): the caller's deadline, which need not be `Send`.
pub struct OnCallingThread<'a, T: ?Sized> {
    value: &'a mut T,
    owner: ThreadId,
}

// SAFETY: the value is reachable only through `get`, which checks that the current thread is
// the one that created the wrapper; so the `&mut T` is only ever used on its own thread, as
// if it had never moved. A `&mut T` has no drop glue, so dropping the wrapper elsewhere does
// not touch the value.
unsafe impl<T: ?Sized> Send for OnCallingThread<'_, T> {}

impl<'a, T: ?Sized> OnCallingThread<'a, T> {
    /// Wraps `value`, owned by the current thread.
    pub fn new(value: &'a mut T) -> Self {
        OnCallingThread {
            value,
            owner: thread::current().id(),
        }
    }

    /// The value.
    ///
    /// # Panics
    /// On another thread than the one that made the wrapper.
    pub fn get(&mut self) -> &mut T {
        assert_eq!(
            thread::current().id(),
            self.owner,
            "crew: the leader's closure ran on another thread"
        );
        self.value
    }
}

/// A mutable slice whose rows the crew's tasks borrow, each the rows its phase gives it
/// (module doc, "Sharing the vectors").
#[derive(Debug)]
pub struct SharedRows<'a, T> {
    ptr: NonNull<T>,
    len: usize,
    _rows: PhantomData<&'a mut [T]>,
}

// SAFETY: a `SharedRows` is a `&mut [T]` lent out by rows; moving it to another thread moves
// the rows, which needs `T: Send`.
unsafe impl<T: Send> Send for SharedRows<'_, T> {}
// SAFETY: through `&SharedRows` threads borrow rows mutably (needs `T: Send`) and share
// rows (needs `T: Sync`); the borrows' disjointness is the contract of `rows`/`rows_mut`.
unsafe impl<T: Send + Sync> Sync for SharedRows<'_, T> {}

impl<'a, T> SharedRows<'a, T> {
    /// Lends `rows` out by rows for `'a`.
    pub fn new(rows: &'a mut [T]) -> Self {
        SharedRows {
            len: rows.len(),
            ptr: NonNull::from(rows).cast(),
            _rows: PhantomData,
        }
    }

    /// Number of rows.
    #[inline]
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// The rows `range`, shared.
    ///
    /// # Safety
    /// While the returned slice lives, no row of `range` is borrowed mutably (through
    /// [`SharedRows::rows_mut`] of this value, on any thread), and every earlier mutable
    /// borrow of those rows happens before this call.
    ///
    /// # Panics
    /// If `range` is not inside `0..len`.
    #[inline]
    pub unsafe fn rows(&self, range: Range<usize>) -> &[T] {
        assert!(range.start <= range.end && range.end <= self.len);
        // SAFETY: in bounds (checked) of the slice lent for 'a; no mutable borrow of these
        // rows is live or unordered with this one (the caller's contract).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(range.start), range.len()) }
    }

    /// The rows `range`, mutably.
    ///
    /// # Safety
    /// While the returned slice lives, no other borrow of a row of `range` (shared or
    /// mutable, through this value, on any thread) lives, and every earlier borrow of those
    /// rows happens before this call.
    ///
    /// # Panics
    /// If `range` is not inside `0..len`.
    #[inline]
    #[allow(clippy::mut_from_ref)] // the point of the type; the contract is the caller's
    pub unsafe fn rows_mut(&self, range: Range<usize>) -> &mut [T] {
        assert!(range.start <= range.end && range.end <= self.len);
        // SAFETY: in bounds (checked) of the slice lent for 'a; the rows are borrowed by no
        // one else, and earlier borrows are ordered before this one (the caller's contract).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(range.start), range.len()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::block_csr::tests::in_pool;

    /// A phase loop over shared rows in the shape of the solver's: each phase writes every
    /// row from the rows the previous phase wrote (its neighbours included), with random
    /// delays in the tasks, and the leader checks every row after every phase.
    struct Stress<'a> {
        a: SharedRows<'a, u64>,
        b: SharedRows<'a, u64>,
        rows_per_task: usize,
        seed: u64,
        /// Tasks run by the helper's thread (somebody else than the leader).
        away: AtomicU64,
        leader: ThreadId,
    }

    fn mix(x: u64) -> u64 {
        let x = (x ^ (x >> 31)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^ (x >> 29)
    }

    impl Phases for Stress<'_> {
        fn run(&self, kind: u32, task: usize) {
            if thread::current().id() != self.leader {
                self.away.fetch_add(1, Ordering::Relaxed);
            }
            let n = self.a.len();
            let range = task * self.rows_per_task..((task + 1) * self.rows_per_task).min(n);
            // A random pause, so that the claims race differently every phase.
            let pause = mix(self.seed ^ u64::from(kind) << 20 ^ task as u64) % 64;
            for _ in 0..pause {
                spin_loop();
            }
            if pause % 7 == 0 {
                thread::yield_now();
            }
            // Even kinds read `a` everywhere and write `b` in the task's rows; odd the other
            // way round (the product's pattern: read neighbours, write own rows).
            let (src, dst) = if kind % 2 == 0 {
                (&self.a, &self.b)
            } else {
                (&self.b, &self.a)
            };
            // SAFETY: in a phase of kind k every task borrows `src` shared (all rows) and
            // `dst` mutably (its own rows, disjoint between tasks); no task of the phase
            // writes `src` (module doc, rule 1).
            let (src, out) = unsafe { (src.rows(0..n), dst.rows_mut(range.clone())) };
            for (k, o) in out.iter_mut().enumerate() {
                let i = range.start + k;
                let left = src[i.saturating_sub(1)];
                let right = src[(i + 1).min(n - 1)];
                *o = mix(left ^ src[i].rotate_left(7) ^ right.rotate_left(13) ^ u64::from(kind));
            }
        }
    }

    /// The same phases, row after row on one thread.
    fn reference(n: usize, phases: u32) -> (Vec<u64>, Vec<u64>) {
        let mut a: Vec<u64> = (0..n as u64).map(mix).collect();
        let mut b = vec![0u64; n];
        for kind in 0..phases {
            let (src, dst) = if kind % 2 == 0 {
                (&a, &mut b)
            } else {
                (&b, &mut a)
            };
            for i in 0..n {
                let left = src[i.saturating_sub(1)];
                let right = src[(i + 1).min(n - 1)];
                dst[i] =
                    mix(left ^ src[i].rotate_left(7) ^ right.rotate_left(13) ^ u64::from(kind));
            }
        }
        (a, b)
    }

    #[test]
    fn phases_give_the_serial_result_under_random_claim_races() {
        let n = 1000usize;
        let phases = 200u32;
        let rows_per_task = 97;
        let tasks = n.div_ceil(rows_per_task);
        let (ra, rb) = reference(n, phases);
        let mut away_total = 0;
        for threads in [1, 2, 3] {
            for seed in 0..8u64 {
                let mut a: Vec<u64> = (0..n as u64).map(mix).collect();
                let mut b = vec![0u64; n];
                let away = in_pool(threads, || {
                    let work = Stress {
                        a: SharedRows::new(&mut a),
                        b: SharedRows::new(&mut b),
                        rows_per_task,
                        seed,
                        away: AtomicU64::new(0),
                        leader: thread::current().id(),
                    };
                    let ok = lead(&work, |leader| {
                        (0..phases).all(|kind| {
                            // Sometimes the leader dawdles between phases, so the helper
                            // spins, yields or parks.
                            if mix(seed ^ u64::from(kind)) % 16 == 0 {
                                thread::sleep(std::time::Duration::from_micros(200));
                            }
                            leader.phase(kind, tasks)
                        })
                    });
                    assert!(ok);
                    work.away.load(Ordering::Relaxed)
                });
                away_total += away;
                assert_eq!(a, ra, "threads {threads}, seed {seed}");
                assert_eq!(b, rb, "threads {threads}, seed {seed}");
                if threads == 1 {
                    assert_eq!(away, 0, "one thread: the leader runs every task");
                }
            }
        }
        assert!(away_total > 0, "the helper ran some tasks");
    }

    #[test]
    fn a_panicking_task_on_either_side_propagates_and_stops_the_crew() {
        struct Boom;
        impl Phases for Boom {
            fn run(&self, _kind: u32, task: usize) {
                assert!(task != 3, "task 3 fails");
            }
        }
        for threads in [1, 2] {
            let r = std::panic::catch_unwind(|| {
                in_pool(threads, || {
                    lead(&Boom, |leader| (0..50).all(|k| leader.phase(k, 8)))
                })
            });
            assert!(r.is_err(), "threads {threads}");
        }
    }

    #[test]
    fn the_deadline_wrapper_refuses_another_thread() {
        let mut calls = 0u32;
        let mut f = || calls += 1;
        let mut w = OnCallingThread::new(&mut f as &mut dyn FnMut());
        (w.get())();
        let r = thread::scope(|s| {
            s.spawn(move || {
                let _ = w.get();
            })
            .join()
        });
        assert!(r.is_err());
        assert_eq!(calls, 1);
    }
}

//! A host's job system runs weft's parallel work (`World::set_task_dispatcher`) with the
//! same answer as weft's own pool: on `tests/scenes/layer-stacks.toml` (three groups of two
//! layers and one lone cloth, four units a substep) the state hash and every statistic but
//! the timers are bit-identical for one and two pool threads, a dispatcher that runs the
//! tasks last first on the calling thread, and one that runs each task on a thread of its
//! own. A dispatcher that breaks its contract gets an error from `step`, never a panic, and
//! the failed step is undone: the run goes on as if it had not been made.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use weft::StepError;
use weft::runtime::executor::{TaskDispatcher, TaskError};
use weft::runtime::stats::FrameStats;
use weft::scene::Scene;
use weft::world::World;

const FRAMES: u32 = 4;

fn scene() -> Scene {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenes/layer-stacks.toml");
    weft::scene::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs the tasks on the calling thread, last first.
struct Reverse;
impl TaskDispatcher for Reverse {
    fn dispatch(&self, count: usize, task: &(dyn Fn(usize) + Sync)) {
        for i in (0..count).rev() {
            task(i);
        }
    }
}

/// Runs every task on a thread of its own; counts the batches.
#[derive(Default)]
struct ThreadPerTask {
    batches: AtomicUsize,
    tasks: AtomicUsize,
}
impl TaskDispatcher for ThreadPerTask {
    fn dispatch(&self, count: usize, task: &(dyn Fn(usize) + Sync)) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.tasks.fetch_add(count, Ordering::Relaxed);
        std::thread::scope(|s| {
            for i in 0..count {
                s.spawn(move || task(i));
            }
        });
    }
}

/// Skips the first task of every batch.
struct SkipsOne;
impl TaskDispatcher for SkipsOne {
    fn dispatch(&self, count: usize, task: &(dyn Fn(usize) + Sync)) {
        for i in 1..count {
            task(i);
        }
    }
}

/// Runs every batch in full on the calling thread except batch `fail` (counted from 0),
/// whose first task it skips: the step fails in the substep of that batch, after the other
/// units of the substep (and every unit of the substeps before it) have stepped.
struct FailsBatch {
    fail: usize,
    seen: AtomicUsize,
}
impl TaskDispatcher for FailsBatch {
    fn dispatch(&self, count: usize, task: &(dyn Fn(usize) + Sync)) {
        let skip = usize::from(self.seen.fetch_add(1, Ordering::Relaxed) == self.fail);
        for i in skip..count {
            task(i);
        }
    }
}

/// Runs every task, then asks for one index past the end.
struct OnePastTheEnd;
impl TaskDispatcher for OnePastTheEnd {
    fn dispatch(&self, count: usize, task: &(dyn Fn(usize) + Sync)) {
        for i in 0..=count {
            task(i);
        }
    }
}

/// A frame's statistics without its timers (wall-clock, never bit-identical).
fn untimed(mut s: FrameStats) -> FrameStats {
    s.stage_ms = Default::default();
    s.collide_ms = Default::default();
    s.frame_ms = 0.0;
    s.direct_assemble_ms = 0.0;
    s.factor_ms = 0.0;
    s.direct_solve_ms = 0.0;
    s
}

/// The state hash and the untimed statistics of every frame.
fn run(world: &mut World, dt: f32) -> (u64, Vec<FrameStats>) {
    let stats = (0..FRAMES)
        .map(|f| untimed(world.step(dt).unwrap_or_else(|e| panic!("frame {f}: {e}"))))
        .collect();
    (world.state_hash(), stats)
}

#[test]
fn host_dispatch_matches_the_own_pool_bit_for_bit() {
    let scene = scene();
    let dt = scene.dt();
    let own = |threads: usize| {
        let mut world = scene.instantiate().expect("the scene instantiates");
        world.set_threads(threads).expect("a pool");
        run(&mut world, dt)
    };
    let (hash, stats) = own(2);
    assert_eq!(own(1), (hash, stats.clone()), "1 and 2 pool threads");
    assert!(
        stats.iter().all(|s| s.substeps >= 2 * 7),
        "every cloth takes its substeps: {stats:?}"
    );

    let mut world = scene.instantiate().expect("the scene instantiates");
    world.set_task_dispatcher(Some(Arc::new(Reverse)));
    assert_eq!(run(&mut world, dt), (hash, stats.clone()), "reverse order");

    let threads = Arc::new(ThreadPerTask::default());
    let mut world = scene.instantiate().expect("the scene instantiates");
    world.set_task_dispatcher(Some(threads.clone()));
    assert_eq!(
        run(&mut world, dt),
        (hash, stats.clone()),
        "a thread per task"
    );
    // Three stacks share a stage each, the lone drape is its own unit: four tasks a
    // substep, two substeps a frame (none rejected in these frames).
    let batches = threads.batches.load(Ordering::Relaxed);
    assert_eq!(batches, 2 * FRAMES as usize);
    assert_eq!(threads.tasks.load(Ordering::Relaxed), 4 * batches);

    // Back to the own pool mid-run: still the same frames.
    let mut world = scene.instantiate().expect("the scene instantiates");
    world.set_task_dispatcher(Some(Arc::new(Reverse)));
    world.step(dt).expect("a host frame");
    world.set_task_dispatcher(None);
    assert!(!world.has_task_dispatcher());
    for _ in 1..FRAMES {
        world.step(dt).expect("an own-pool frame");
    }
    assert_eq!(world.state_hash(), hash, "host frame, then own-pool frames");
}

#[test]
fn a_dispatcher_that_breaks_its_contract_gets_an_error() {
    let scene = scene();
    for (name, dispatcher) in [
        (
            "skips a task",
            Arc::new(SkipsOne) as Arc<dyn TaskDispatcher>,
        ),
        ("one past the end", Arc::new(OnePastTheEnd)),
    ] {
        let mut world = scene.instantiate().expect("the scene instantiates");
        world.set_task_dispatcher(Some(dispatcher));
        match world.step(scene.dt()) {
            Err(StepError::Tasks {
                frame: 1,
                error: TaskError::BadDispatch,
            }) => {}
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(world.frame(), 0, "{name}: the failed frame is not counted");
    }
}

/// A failed step is undone in full (`World::step`): after a step that fails in its first or
/// its second substep, before the stacks land on their spheres and as they land, the
/// world has the frame number, time and state hash it had, and the frames after it match an
/// unbroken run's bit for bit. This needs more than positions and velocities back: the units
/// that stepped before the failure changed their warm starts and contact histories too.
#[test]
fn a_failed_step_is_undone_and_the_run_goes_on_as_if_it_never_was() {
    const RUN: u64 = 16;
    let scene = scene();
    let dt = scene.dt();
    let mut unbroken = scene.instantiate().expect("the scene instantiates");
    let hashes: Vec<u64> = (0..RUN)
        .map(|f| {
            unbroken
                .step(dt)
                .unwrap_or_else(|e| panic!("frame {f}: {e}"));
            unbroken.state_hash()
        })
        .collect();
    for fail_frame in [3, 11, 12] {
        for substep in [0, 1] {
            let what = format!("failed at frame {fail_frame}, substep {substep}");
            let mut world = scene.instantiate().expect("the scene instantiates");
            for f in 0..fail_frame {
                world.step(dt).unwrap_or_else(|e| panic!("frame {f}: {e}"));
            }
            let (hash, time) = (world.state_hash(), world.time());
            world.set_task_dispatcher(Some(Arc::new(FailsBatch {
                fail: substep,
                seen: AtomicUsize::new(0),
            })));
            match world.step(dt) {
                Err(StepError::Tasks {
                    error: TaskError::BadDispatch,
                    ..
                }) => {}
                other => panic!("{what}: {other:?}"),
            }
            assert_eq!(world.frame(), fail_frame, "{what}: the frame number");
            assert_eq!(world.time().to_bits(), time.to_bits(), "{what}: the time");
            assert_eq!(world.state_hash(), hash, "{what}: the state");
            world.set_task_dispatcher(None);
            for f in fail_frame..RUN {
                world
                    .step(dt)
                    .unwrap_or_else(|e| panic!("{what}, frame {f}: {e}"));
                assert_eq!(
                    world.state_hash(),
                    hashes[f as usize],
                    "{what}: frame {f} after the retry"
                );
            }
        }
    }
}

//! The stress samples of `samples/stress/` on shortened runs: every frame free of
//! self-intersections, of cloth–obstacle crossings and of vertices inside colliders or closed
//! obstacle meshes (the independent checker, `tests/support`), no NaN, and the largest edge
//! strain within the cloth's 10 % limit plus a 2-point margin (12 %). The samples are built so
//! that no pin and no obstacle forces an edge past the limit (see each file's header), so the
//! margin is the whole allowance: it covers what the strain limiter's sweep cap (100 sweeps a
//! call) leaves on long taut chains (`docs/methods/strain-limiting-with-contacts.md`). The
//! largest strain is printed split into free edges and edges forced by pins or bodies.
//!
//! The absurd-value samples of `samples/stress/absurd/` must be refused at load with an error
//! naming the file, the line and the key, or run every frame within twice its budget, finite
//! and intersection-free.
//!
//! Two of them also run, once the cloth is in contact, with a clock on which every frame's
//! deadline has always passed, so that every later frame takes the path of a frame out of time
//! (CG and optional rounds stopped), deterministically; those runs are checked for crossings,
//! not strain.
//!
//! The runnable samples run without their frame deadline (`[budget] frame_ms`): with it, the
//! CG and the collision rounds stop at a wall-clock time, and a run depends on the machine and
//! its load. Without it every run is the same, and a failure names the same frame everywhere.
//! The frame times against the budget are `weft stress`'s report.
//!
//! Each run happens on a worker thread; a frame that has not ended after `FRAME_TIMEOUT` fails
//! the test (the worker stops after that frame), so a scene that hangs the collision stage
//! fails in bounded time instead of stalling the suite.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use weft::scene::{self, SceneError};

/// Longest wall-clock time a test waits for one frame.
const FRAME_TIMEOUT: Duration = Duration::from_secs(20);

/// The 10 % strain limit of every stress sample plus the stated 2-point margin.
const STRAIN_BOUND: f32 = 0.12;

/// Depth (m) beyond which a vertex or triangle inside an analytic collider is reported.
const SOLID_TOLERANCE: f32 = 1e-3;

fn path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples/stress")
        .join(name)
}

/// Whether a run keeps the scene's frame deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Deadline {
    /// As the scene sets it.
    Scene,
    /// None: the run does not depend on the machine.
    Off,
    /// None until this frame (1-based), then passed at every check after each frame's start
    /// ([`ExpiredClock`]): from that frame on every frame takes the path of a frame out of
    /// time, the same way on every machine.
    PassedFrom(u32),
}

/// A clock that moves one second every time it is read: a frame's deadline (milliseconds
/// after its start) has passed at every check.
#[derive(Debug, Default)]
struct ExpiredClock {
    reads: AtomicU64,
}

impl weft::runtime::budget::Clock for ExpiredClock {
    fn now(&self) -> f64 {
        self.reads.fetch_add(1, Ordering::Relaxed) as f64
    }
}

/// What a worker reports after each frame.
enum Progress {
    /// The frame ended and passed every check: its time (ms) and largest strain, overall, of
    /// the free edges, of the edges forced by pins and of those forced by bodies.
    Frame { ms: f64, strain: [f32; 4] },
    /// The frame failed a check (or the step failed): why.
    Failed(String),
}

/// Runs `frames` frames of the scene in `file` on a worker thread, checking every frame with
/// `check`, and waits for each frame at most `FRAME_TIMEOUT`. Returns the frame times (ms) and
/// the largest strain seen, or panics naming the frame and what went wrong.
fn run_checked(
    file: &Path,
    frames: u32,
    deadline: Deadline,
    check: fn(&weft::world::World, &weft::runtime::stats::FrameStats) -> Result<(), String>,
) -> (Vec<f64>, [f32; 4]) {
    let scene = scene::load(file).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    let budget = world.settings().budget.frame_ms;
    if deadline != Deadline::Scene {
        world.settings_mut().budget.frame_ms = None;
    }
    let dt = scene.dt();
    let stop = Arc::new(AtomicBool::new(false));
    let (send, receive) = mpsc::channel();
    let worker_stop = stop.clone();
    std::thread::spawn(move || {
        for frame in 1..=frames {
            if worker_stop.load(Ordering::Relaxed) {
                return;
            }
            if deadline == Deadline::PassedFrom(frame) {
                world.settings_mut().budget.frame_ms = budget;
                world.set_clock(Arc::new(ExpiredClock::default()));
            }
            let progress = match world.step(dt) {
                Ok(stats) => match check(&world, &stats) {
                    Ok(()) => Progress::Frame {
                        ms: stats.frame_ms,
                        strain: [
                            stats.max_strain,
                            stats.max_strain_free,
                            stats.max_strain_pins,
                            stats.max_strain_bodies,
                        ],
                    },
                    Err(m) => Progress::Failed(m),
                },
                Err(e) => Progress::Failed(format!("step failed: {e}")),
            };
            let failed = matches!(progress, Progress::Failed(_));
            if send.send(progress).is_err() || failed {
                return;
            }
        }
    });
    let mut times = Vec::new();
    let mut strain = [0.0f32; 4];
    for frame in 1..=frames {
        match receive.recv_timeout(FRAME_TIMEOUT) {
            Ok(Progress::Frame { ms, strain: s }) => {
                times.push(ms);
                for (a, b) in strain.iter_mut().zip(s) {
                    *a = a.max(b);
                }
            }
            Ok(Progress::Failed(m)) => panic!("{}: frame {frame}: {m}", scene.name),
            Err(_) => {
                stop.store(true, Ordering::Relaxed);
                panic!(
                    "{}: frame {frame} had not ended after {} s (frames before: worst {:.0} ms)",
                    scene.name,
                    FRAME_TIMEOUT.as_secs(),
                    times.iter().copied().fold(0.0f64, f64::max)
                );
            }
        }
    }
    (times, strain)
}

/// The checks of a runnable stress sample's frame: finite (the step checks it), every cloth
/// clean against itself, every obstacle mesh and every collider at its frame-end pose, and the
/// largest strain within `STRAIN_BOUND`.
fn clean_and_within_strain(
    world: &weft::world::World,
    stats: &weft::runtime::stats::FrameStats,
) -> Result<(), String> {
    for (i, c) in world.cloths().iter().enumerate() {
        if !c.state().is_finite() {
            return Err(format!("cloth {i} is not finite"));
        }
        let check = support::check_cloth(world, i, SOLID_TOLERANCE);
        if !check.is_clean() {
            return Err(format!(
                "cloth {i} not clean ({} last resorts this frame): {}",
                stats.last_resorts,
                check.summary()
            ));
        }
    }
    if stats.max_strain > STRAIN_BOUND {
        return Err(format!(
            "max edge strain {:.2} % over the {:.0} % bound ({} last resorts this frame)",
            100.0 * stats.max_strain,
            100.0 * STRAIN_BOUND,
            stats.last_resorts
        ));
    }
    Ok(())
}

fn report(name: &str, (times, strain): (Vec<f64>, [f32; 4])) {
    let worst = times.iter().copied().fold(0.0f64, f64::max);
    let [all, free, pins, bodies] = strain.map(|s| 100.0 * s);
    println!(
        "{name}: {} frames clean, worst frame {worst:.1} ms, max strain {all:.2} % (free edges \
         {free:.2} %, forced by pins {pins:.2} %, forced by bodies {bodies:.2} %)",
        times.len(),
    );
}

#[test]
fn a_cloth_wrung_by_a_turning_pinned_edge_stays_clean_and_within_strain() {
    // 90 frames: the hem turns a full turn (rising 0.2 m over the first half).
    let run = run_checked(
        &path("wrung.toml"),
        90,
        Deadline::Off,
        clean_and_within_strain,
    );
    report("wrung", run);
}

#[test]
fn a_fast_small_ball_through_a_hanging_cloth_stays_clean_and_within_strain() {
    // 30 frames: the ball hits the sheet in frame 1 and rests in its dent from frame 2.
    let run = run_checked(
        &path("projectile.toml"),
        30,
        Deadline::Off,
        clean_and_within_strain,
    );
    report("projectile", run);
}

#[test]
fn a_cloth_hung_on_turning_pegs_stays_clean_and_within_strain() {
    // 75 frames: the sheet lands on the pegs (about frame 6); they turn 135° from frame 15
    // to frame 60, then start back.
    let run = run_checked(
        &path("pegs.toml"),
        75,
        Deadline::Off,
        clean_and_within_strain,
    );
    report("pegs", run);
}

#[test]
fn a_cloth_pinched_between_closing_boxes_stays_clean_and_within_strain() {
    // 60 frames: the boxes close by frame 30, then the upper one slides 5 cm.
    let run = run_checked(
        &path("pinch.toml"),
        60,
        Deadline::Off,
        clean_and_within_strain,
    );
    report("pinch", run);
}

/// The checks of a frame without the strain bound: finite and clean. Used for frames out of
/// time (the strain is what the collision stage alone makes of a frame whose solve was cut
/// short, and is reported, not bounded).
fn clean(
    world: &weft::world::World,
    stats: &weft::runtime::stats::FrameStats,
) -> Result<(), String> {
    clean_and_within_strain(
        world,
        &weft::runtime::stats::FrameStats {
            max_strain: 0.0,
            ..*stats
        },
    )
}

#[test]
fn a_cloth_on_turning_pegs_stays_clean_when_every_frame_is_out_of_time() {
    // In time until the sheet hangs on the pegs and they have started to turn (frame 20), then
    // out of time for 40 frames of turning.
    let run = run_checked(&path("pegs.toml"), 60, Deadline::PassedFrom(20), clean);
    report("pegs, out of time from frame 20", run);
}

#[test]
fn a_cloth_pinched_between_closing_boxes_stays_clean_when_every_frame_is_out_of_time() {
    // In time until the sheet lies on the lower box (frame 15), then out of time while the
    // boxes close and the upper one slides.
    let run = run_checked(&path("pinch.toml"), 60, Deadline::PassedFrom(15), clean);
    report("pinch, out of time from frame 15", run);
}

#[test]
fn a_cloth_pinched_from_a_higher_start_stays_clean_when_every_frame_is_out_of_time() {
    // The pinch with the sheet starting 1 cm higher: out of time from frame 15, the boxes close
    // on it with a triangle draped over each top corner of the lower box and its inner vertex
    // under the upper one (`docs/methods/last-resort.md`, *Pinched vertices*).
    let run = run_checked(
        &path("pinch-higher.toml"),
        60,
        Deadline::PassedFrom(15),
        clean,
    );
    report("pinch from 1 cm higher, out of time from frame 15", run);
}

/// An absurd-value sample is either refused at load, with an error that names the file, a
/// line and a key, or runs all its frames, each ending within twice its `[budget] frame_ms`,
/// finite and clean.
fn refused_or_within_budget(name: &str) {
    let file = path(&format!("absurd/{name}.toml"));
    let loaded = scene::load(&file).and_then(|s| s.instantiate().map(|w| (s, w)));
    match loaded {
        Err(e) => {
            let place = file.display().to_string();
            match &e {
                SceneError::Value {
                    file, line, key, ..
                } => {
                    assert_eq!(file, &place, "{e}");
                    assert!(*line > 0, "no line: {e}");
                    assert!(!key.is_empty(), "no key: {e}");
                }
                SceneError::Parse {
                    file, line, key, ..
                } => {
                    assert_eq!(file, &place, "{e}");
                    assert!(*line > 0, "no line: {e}");
                    assert!(!key.is_empty(), "no key: {e}");
                }
                other => panic!("{name}: refused without a line and a key: {other}"),
            }
            println!("{name}: refused: {e}");
        }
        Ok((scene, _)) => {
            let budget = scene
                .settings
                .budget
                .frame_ms
                .expect("every absurd sample sets [budget] frame_ms");
            let (times, _) = run_checked(&file, scene.frames, Deadline::Scene, |world, _stats| {
                for (i, c) in world.cloths().iter().enumerate() {
                    let check = support::check_cloth(world, i, SOLID_TOLERANCE);
                    if !check.is_clean() {
                        return Err(format!("cloth {i} not clean: {}", check.summary()));
                    }
                    if !c.state().is_finite() {
                        return Err(format!("cloth {i} is not finite"));
                    }
                }
                Ok(())
            });
            for (f, ms) in times.iter().enumerate() {
                assert!(
                    *ms <= 2.0 * budget,
                    "{name}: frame {} took {ms:.1} ms, over twice the {budget} ms budget",
                    f + 1
                );
            }
            println!("{name}: ran within budget: {times:?} ms");
        }
    }
}

#[test]
fn absurd_thickness_is_refused_or_within_budget() {
    refused_or_within_budget("thickness");
}

#[test]
fn absurd_gravity_is_refused_or_within_budget() {
    refused_or_within_budget("gravity");
}

#[test]
fn absurd_initial_velocity_is_refused_or_within_budget() {
    refused_or_within_budget("velocity");
}

#[test]
fn absurd_frame_rate_is_refused_or_within_budget() {
    refused_or_within_budget("fps");
}

#[test]
fn absurd_tiny_sphere_is_refused_or_within_budget() {
    refused_or_within_budget("tiny-sphere");
}

#[test]
fn absurd_pin_target_is_refused_or_within_budget() {
    refused_or_within_budget("pin-target");
}

//! The cost of each Table 3.1 step (Wang 2012) of an isometric scene over a ball at the origin,
//! one step at a time: wall seconds, process CPU seconds (every thread's, from
//! `/proc/self/stat`: on a shared machine the wall time counts other processes' turns too),
//! Gauss–Newton iterations, the sparse Cholesky's assembly, factor and solve times, the
//! collision passes' time, and how many nodes touch the ball.
//!
//! `cargo run --release --example isometric_step_cost -- SCENE [THREADS] [MAX_STEPS]
//! [STEPS_PAST_CONTACT] [BALL_RADIUS]` (defaults 2, 40, 3, 0.3 m). The world takes one substep
//! a call (`h` = the scene's frame time over its substeps), and stops `STEPS_PAST_CONTACT` steps
//! after the first step that ends with a node within 1.1 thicknesses of the ball's surface,
//! or after `MAX_STEPS`.

use std::path::Path;
use std::time::Instant;

/// CPU seconds of this process so far (user + system, every thread), from `/proc/self/stat`;
/// 0 where it cannot be read.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which is in parentheses and may hold spaces): utime and
    // stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Clock ticks of 1/100 s (USER_HZ on Linux).
    (ticks(11) + ticks(12)) / 100.0
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().ok_or(
        "usage: isometric_step_cost SCENE [THREADS] [MAX_STEPS] [STEPS_PAST_CONTACT] [BALL_RADIUS]",
    )?;
    let arg = |i: usize, default: f64| -> Result<f64, Box<dyn std::error::Error>> {
        Ok(args
            .get(i)
            .map(|a| a.parse::<f64>())
            .transpose()?
            .unwrap_or(default))
    };
    let threads = arg(1, 2.0)? as usize;
    let max_steps = arg(2, 40.0)? as u32;
    let past_contact = arg(3, 3.0)? as u32;
    let radius = arg(4, 0.3)? as f32;
    let scene = weft::scene::load(Path::new(path))?;
    let mut world = scene.instantiate()?;
    world.set_threads(threads)?;
    let substeps = world.settings().substeps;
    let h = scene.dt() / substeps as f32;
    world.settings_mut().substeps = 1;
    let thickness = world.cloths()[0].thickness();
    println!(
        "{}: {} nodes, h = {:.6} s, {} threads",
        scene.name,
        world.cloths()[0].state().len(),
        h,
        threads
    );
    println!(
        "step   wall_s    cpu_s  newton  factors  assemble_s  factor_s  solve_s  collide_s  touching  gap_mm  row_strain"
    );
    let mut first_contact = None;
    let (mut wall_sum, mut cpu_sum, mut newton_sum) = (0.0, 0.0, 0u32);
    let mut measured = 0u32;
    let direct = |w: &weft::World| {
        w.cloths()[0]
            .isometric()
            .map(weft::integrate::isometric_cloth::IsometricCloth::direct_solve_times)
            .unwrap_or_default()
    };
    for step in 1..=max_steps {
        let factors_before = direct(&world).factors;
        let (t, c) = (Instant::now(), cpu_seconds());
        let s = world.step(h)?;
        let factors = direct(&world).factors - factors_before;
        let (wall, cpu) = (t.elapsed().as_secs_f64(), cpu_seconds() - c);
        let x = world.cloths()[0].state().positions();
        let gap = x
            .iter()
            .map(|p| p.length() - radius)
            .fold(f32::INFINITY, f32::min);
        let touching = x
            .iter()
            .filter(|p| p.length() - radius <= 1.1 * thickness)
            .count();
        let collide: f64 = s.collide_ms.values().iter().sum();
        println!(
            "{step:>4} {wall:>8.2} {cpu:>8.2} {:>7} {factors:>8} {:>11.2} {:>9.2} {:>8.2} {:>10.2} {touching:>9} {:>7.3} {:>11.3e}",
            s.newton_iterations,
            s.direct_assemble_ms / 1e3,
            s.factor_ms / 1e3,
            s.direct_solve_ms / 1e3,
            collide / 1e3,
            gap * 1e3,
            s.row_strain
        );
        if first_contact.is_none() && touching > 0 {
            first_contact = Some(step);
        }
        if first_contact.is_some() {
            wall_sum += wall;
            cpu_sum += cpu;
            newton_sum += s.newton_iterations;
            measured += 1;
        }
        if first_contact.is_some_and(|f| step >= f + past_contact) {
            break;
        }
    }
    let d = direct(&world);
    println!(
        "sparse Cholesky of the cloth block: {} entries in L, {:.3e} multiply-adds a factor; {} symbolic analyses ({:.2} s), {} numeric factorisations",
        d.factor_entries, d.factor_flops, d.analyses, d.analysis_seconds, d.factors
    );
    if d.reuse_solves > 0 {
        println!(
            "PCG on an earlier factor: {} solves ({} failed), {} iterations, {:.2} s",
            d.reuse_solves, d.reuse_failures, d.reuse_iterations, d.reuse_seconds
        );
    }
    if let Some(f) = first_contact {
        println!(
            "first contact at step {f}; from it, {measured} steps: {:.2} s wall, {:.2} s CPU, {:.1} Gauss–Newton iterations a step",
            wall_sum / f64::from(measured),
            cpu_sum / f64::from(measured),
            f64::from(newton_sum) / f64::from(measured)
        );
    } else {
        println!("no contact in {max_steps} steps");
    }
    Ok(())
}

//! The Baraff–Witkin assembly alone (`ImplicitEuler::assemble`: element kernels and the scatter
//! into `A` and `b`) on a sample's state after 30 frames, timed over many repetitions at 1 and 2
//! threads. The minimum is the figure to compare on a shared machine (other load only adds);
//! the median is printed beside it.
//!
//! `cargo run --release --example assemble_cost [scene.toml side] [repetitions]` (default
//! `samples/drape.toml 65`, 400): a drape sample, whose cloth is a 1 m grid of `side × side`
//! vertices in the x–z plane. Also prints a checksum of `A` and `b`, so two builds can be
//! compared for the same system.

use std::path::PathBuf;
use std::time::Instant;

use glam::{Vec2, Vec3};
use weft::integrate::implicit_euler::ImplicitEuler;
use weft::mesh::{Diagonals, GridSpec, Topology, grid};

/// User plus system CPU time of the calling thread (s), from `/proc/thread-self/stat` (Linux;
/// 0 elsewhere), in clock ticks of 10 ms.
fn thread_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/thread-self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which ends with the last ')'): utime and stime are the
    // 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: f64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<f64>().ok())
        .sum();
    ticks / 100.0
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples/drape.toml"),
        PathBuf::from,
    );
    let side: u32 = args
        .next()
        .map_or(65, |s| s.parse().expect("side is a number"));
    let reps: usize = args
        .next()
        .map_or(400, |s| s.parse().expect("repetitions is a number"));
    let scene = weft::scene::load(&path).expect("scene loads");
    let mut world = scene.instantiate().expect("scene builds");
    for _ in 0..30 {
        world.step(scene.dt()).expect("warm-up frame");
    }
    let h = scene.dt() / world.settings().substeps.max(1) as f32;
    let gravity = world.settings().gravity;
    let cloth = &world.cloths()[0];
    let settings = *cloth.system().expect("a Baraff–Witkin cloth").settings();
    // The sample's rest mesh (scene/mod.rs: u = +x, v = −z); its triangles must be the cloth's.
    let mesh = grid(&GridSpec {
        nx: side,
        ny: side,
        size: Vec2::ONE,
        centre: Vec3::ZERO,
        u_axis: Vec3::X,
        v_axis: Vec3::NEG_Z,
        diagonals: Diagonals::Alternating,
    })
    .expect("valid grid");
    assert_eq!(mesh.triangles, cloth.triangles(), "the sample's grid");
    let topology = Topology::build(&mesh).expect("valid topology");
    let mut system = ImplicitEuler::new(&mesh, &topology, settings).expect("system");
    let state = cloth.state();
    let (x, v, mass) = (state.positions(), state.velocities(), state.masses());
    let external: Vec<Vec3> = mass.iter().map(|&m| m * gravity).collect();
    let y = vec![Vec3::ZERO; x.len()];
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a rayon pool");
        let (mut times, cpu): (Vec<f64>, f64) = pool.install(|| {
            let cpu0 = thread_cpu_seconds();
            let times = (0..reps)
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(system.assemble(h, x, v, mass, &external, &y, 0.0));
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            (times, thread_cpu_seconds() - cpu0)
        });
        times.sort_by(f64::total_cmp);
        let mut sum = 0.0f64;
        for b in system.matrix().values() {
            sum += b
                .to_cols_array()
                .iter()
                .map(|&e| f64::from(e).abs())
                .sum::<f64>();
        }
        // With one thread, the CPU time the calling thread spent, which other load does not add to.
        let cpu = if threads == 1 {
            format!(", CPU {:.3} ms", cpu * 1e3 / reps as f64)
        } else {
            String::new()
        };
        println!(
            "{threads} thread(s): assemble min {:.3} ms, median {:.3} ms{cpu}  (|A| {sum:.9e})",
            times[0],
            times[reps / 2]
        );
    }
}

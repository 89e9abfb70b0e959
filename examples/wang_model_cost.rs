//! Cost of the Wang 2012 model pieces on drape-101's subdivided mesh: construction, constraint
//! evaluation and gradients (`model::isometric`), bending energy, gradient and the per-step rotation
//! fit (`model::quadratic_bending`).
//!
//! A quick single-threaded measurement, not a criterion bench: `cargo run --release --example
//! wang_model_cost [reps]`. Prints the median of `reps` (default 200) timed calls per kernel.

use std::hint::black_box;
use std::time::Instant;

use glam::{DVec3, Vec2, Vec3};
use weft::mesh::{Diagonals, GridSpec, subdivided_grid};
use weft::model::constraint::ConstraintSet;
use weft::model::isometric::{Family, IsometricConstraints};
use weft::model::quadratic_bending::QuadraticBending;

/// Median wall time of `reps` calls of `f`, in microseconds.
fn median_us(reps: usize, mut f: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reps: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(200)
        .max(1);
    // samples/drape-101.toml: 1 m × 1 m, 101 × 101 vertices, x–z plane at y = 0.45, alternating.
    let spec = GridSpec {
        nx: 101,
        ny: 101,
        size: Vec2::ONE,
        centre: Vec3::new(0.0, 0.45, 0.0),
        u_axis: Vec3::X,
        v_axis: Vec3::NEG_Z,
        diagonals: Diagonals::Alternating,
    };
    let t0 = Instant::now();
    let sub = subdivided_grid(&spec)?;
    let t_sub = t0.elapsed().as_secs_f64() * 1e3;
    let rest = sub.rest_positions();
    let t0 = Instant::now();
    let cons = IsometricConstraints::new(&sub, &rest)?;
    let t_cons = t0.elapsed().as_secs_f64() * 1e3;
    let t0 = Instant::now();
    let mut bend = QuadraticBending::new(&sub, &rest, 1e-5)?;
    let t_bend = t0.elapsed().as_secs_f64() * 1e3;

    println!(
        "drape-101 subdivided: {} nodes ({} black, {} red), {} triangles",
        sub.num_nodes(),
        sub.num_black_nodes(),
        sub.num_red_nodes(),
        sub.mesh().triangles.len()
    );
    println!(
        "rows: {} (inextensibility {}, conforming {}, boundary {}), {} stencil entries; \
         bending operator L M⁻¹ L: {} nonzeros",
        cons.len(),
        cons.count(Family::Inextensibility),
        cons.count(Family::Conforming),
        cons.count(Family::Boundary),
        cons.stencil_vertices().len(),
        bend.hessian_operator().values().len()
    );
    println!("build (ms): subdivision {t_sub:.1}, constraints {t_cons:.1}, bending {t_bend:.1}");

    // A draped-looking, non-planar state.
    let x: Vec<DVec3> = rest
        .iter()
        .map(|p| *p + DVec3::new(0.0, 0.1 * (6.0 * p.x).sin() * (4.0 * p.z).cos(), 0.0))
        .collect();
    let mut c = vec![0.0; cons.len()];
    let mut g = vec![DVec3::ZERO; cons.stencil_vertices().len()];
    let mut grad = vec![DVec3::ZERO; x.len()];
    let per = |us: f64, n: usize| 1e3 * us / n as f64;

    let us = median_us(reps, || cons.evaluate(black_box(&x), &mut c));
    println!(
        "isometric evaluate:  {us:8.1} µs  ({:.2} ns/row)",
        per(us, cons.len())
    );
    let us = median_us(reps, || cons.gradients(black_box(&x), &mut g));
    println!(
        "isometric gradients: {us:8.1} µs  ({:.2} ns/stencil entry)",
        per(us, g.len())
    );
    let us = median_us(reps, || {
        cons.inextensibility_gradients(black_box(&x), &mut g)
    });
    println!(
        "  of which (3.1):    {us:8.1} µs  ({:.2} ns/row)",
        per(us, cons.count(Family::Inextensibility))
    );
    let us = median_us(reps, || {
        black_box(cons.max_strain(black_box(&x)));
    });
    println!("max_strain:          {us:8.1} µs");
    let us = median_us(reps, || {
        black_box(bend.energy(black_box(&x)));
    });
    println!("bending energy:      {us:8.1} µs");
    let us = median_us(reps, || bend.gradient(black_box(&x), &mut grad));
    println!("bending gradient:    {us:8.1} µs");
    let us = median_us(reps, || bend.freeze_rotation(black_box(&x)));
    println!(
        "freeze_rotation:     {us:8.1} µs  ({:.2} ns/red node)",
        per(us, sub.num_red_nodes())
    );
    black_box((&c, &g, &grad));
    Ok(())
}

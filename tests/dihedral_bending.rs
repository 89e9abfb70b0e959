//! Discrete-shell (dihedral) bending in whole scenes: a sheet pinned along one edge
//! droops less as the bending stiffness rises; IMEX (explicit elastic bending, Bridson's course notes, *Implicit/Explicit Methods*)
//! agrees with implicit bending on a small, slow problem; IMEX beyond its step limit (§4.9) is split
//! into pieces that respect it; bad option values are typed errors.
//!
//! Run: `cargo test --release --test dihedral_bending -- --nocapture` (prints the measured figures).

use std::path::Path;

use glam::Vec3;
use weft::scene::Scene;

/// A 0.3 m x 0.3 m horizontal sheet (13 x 13 vertices, y = 1, spacing 0.025 m) clamped along its
/// x = −0.15 edge: the two first columns are pinned (one pinned column would be a free hinge, about
/// which the sheet swings down straight whatever its bending stiffness).
fn cantilever(bend: f64, bending: &str, integration: &str, substeps: u32) -> String {
    format!(
        r#"
name = "cantilever"
fps = 60
substeps = {substeps}

[solver]
bending_integration = "{integration}"

[[cloth]]
density = 0.1
air_damping = 2.0

[cloth.grid]
vertices = [13, 13]
size = [0.3, 0.3]
centre = [0.0, 1.0, 0.0]
plane = "xz"

[cloth.material]
bend = {bend:e}
bending = "{bending}"

[[cloth.pin]]
region = {{ min = [-0.16, 0.9, -0.2], max = [-0.12, 1.1, 0.2] }}
"#
    )
}

fn scene(text: &str) -> Scene {
    Scene::from_toml(text, Path::new("cantilever.toml")).expect("the scene is valid")
}

/// Runs `frames` frames; returns the final positions and the total substeps taken.
fn run(text: &str, frames: u32) -> (Vec<Vec3>, u64) {
    let scene = scene(text);
    let mut world = scene.instantiate().expect("builds");
    let mut substeps = 0u64;
    for _ in 0..frames {
        let stats = world.step(scene.dt()).expect("steps");
        substeps += u64::from(stats.substeps);
    }
    (world.cloths()[0].state().positions().to_vec(), substeps)
}

/// Mean height (m) of the free edge (the vertices that start at x = +0.15; the grid's last column).
fn free_edge_height(x: &[Vec3]) -> f32 {
    let edge: Vec<f32> = (0..13).map(|j| x[j * 13 + 12].y).collect();
    edge.iter().sum::<f32>() / edge.len() as f32
}

#[test]
fn free_edge_is_the_last_grid_column() {
    let x0 = scene(&cantilever(1e-3, "dihedral", "implicit", 2))
        .instantiate()
        .expect("builds")
        .cloths()[0]
        .state()
        .positions()
        .to_vec();
    for j in 0..13 {
        assert!(
            (x0[j * 13 + 12].x - 0.15).abs() < 1e-6,
            "{}",
            x0[j * 13 + 12]
        );
    }
}

#[test]
fn stiffer_sheet_droops_less() {
    let stiffnesses = [1e-4, 1e-3, 1e-2];
    let heights: Vec<f32> = stiffnesses
        .iter()
        .map(|&k| free_edge_height(&run(&cantilever(k, "dihedral", "implicit", 2), 120).0))
        .collect();
    for (k, y) in stiffnesses.iter().zip(&heights) {
        println!(
            "dihedral bending k_b = {k:e} N·m: free edge at y = {y:.4} m (pinned edge at 1.0)"
        );
    }
    for w in heights.windows(2) {
        assert!(w[1] > w[0] + 0.01, "droop not monotone: {heights:?}");
    }
    assert!(heights.iter().all(|y| *y < 1.0 && y.is_finite()));
}

#[test]
fn imex_agrees_with_implicit_on_a_slow_problem() {
    // Soft bending (k_b = 1e-4 N·m), 8 substeps at 60 Hz: inside the explicit limit; 20 frames of the
    // start of the droop. Tolerance: the runs differ by O(h) integration error only, stated as 1 % of the
    // largest displacement (measured: 0.03 %).
    let frames = 20;
    let (x_imp, _) = run(&cantilever(1e-4, "dihedral", "implicit", 8), frames);
    let (x_imex, n_imex) = run(&cantilever(1e-4, "dihedral", "imex", 8), frames);
    assert_eq!(n_imex, 8 * u64::from(frames), "no split inside the limit");
    let x0 = scene(&cantilever(1e-4, "dihedral", "implicit", 8))
        .instantiate()
        .expect("builds")
        .cloths()[0]
        .state()
        .positions()
        .to_vec();
    let disp = x_imp
        .iter()
        .zip(&x0)
        .map(|(a, b)| (*a - *b).length())
        .fold(0.0f32, f32::max);
    let diff = x_imp
        .iter()
        .zip(&x_imex)
        .map(|(a, b)| (*a - *b).length())
        .fold(0.0f32, f32::max);
    println!(
        "IMEX vs implicit after {frames} frames: max difference {diff:.2e} m, max displacement {disp:.3} m ({:.2} %)",
        100.0 * diff / disp
    );
    assert!(disp > 0.01, "the sheet moved: {disp}");
    assert!(
        diff <= 0.01 * disp,
        "difference {diff} vs displacement {disp}"
    );
}

#[test]
fn imex_beyond_its_step_limit_is_split() {
    // Stiff bending at one substep of 1/60 s is beyond the explicit limit: the pipeline splits each
    // substep into 2^k pieces. The result equals running 2^k substeps per frame outright.
    let frames = 10;
    let (x_clamped, n_clamped) = run(&cantilever(1e-2, "dihedral", "imex", 1), frames);
    let pieces = n_clamped / u64::from(frames);
    println!("IMEX with k_b = 1e-2 at h = 1/60 s: {pieces} pieces per substep");
    assert!(pieces > 1 && pieces.is_power_of_two(), "pieces {pieces}");
    assert!(x_clamped.iter().all(|p| p.is_finite()));
    let (x_explicit, n_explicit) =
        run(&cantilever(1e-2, "dihedral", "imex", pieces as u32), frames);
    assert_eq!(n_explicit, n_clamped);
    assert_eq!(x_clamped, x_explicit);
    // The split run stays bounded: the free edge hangs between its start and a straight drop.
    let y = free_edge_height(&x_clamped);
    assert!((0.8..1.1).contains(&y), "free edge at {y}");
}

#[test]
fn bad_bending_options_are_typed_errors() {
    let good = cantilever(1e-3, "dihedral", "imex", 2);
    for (from, to, key) in [
        (
            "bending = \"dihedral\"",
            "bending = \"shell\"",
            "bad.toml:21:11: key `cloth[0].material.bending`",
        ),
        (
            "bending_integration = \"imex\"",
            "bending_integration = \"explicit\"",
            "bad.toml:7:23: key `solver.bending_integration`",
        ),
    ] {
        let text = good.replace(from, to);
        let Err(err) = Scene::from_toml(&text, Path::new("bad.toml")) else {
            panic!("bad value `{to}` accepted");
        };
        let msg = err.to_string();
        // File, line, column and the dotted key, then serde's list of the accepted values.
        assert!(msg.starts_with(key), "{msg}");
        assert!(msg.contains("unknown variant"), "{msg}");
    }
    // "input" is accepted for the rest angles (alias of "initial").
    let text = good.replace(
        "bending = \"dihedral\"",
        "bending = \"dihedral\"\nrest_angles = \"input\"",
    );
    assert!(Scene::from_toml(&text, Path::new("ok.toml")).is_ok());
}

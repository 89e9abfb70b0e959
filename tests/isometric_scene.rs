//! The isometric model (Wang 2012) selected from a scene file, stepped by
//! the world, checked by the independent intersection checker, deterministic across thread
//! counts, and written by `weft run` into `stats.csv`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use weft::scene::{Scene, SceneError};
use weft::world::World;

/// A small isometric scene: a 0.3 m sheet of 6 × 6 base vertices (50 base triangles, 200
/// simulated) dropped onto a ball of radius 0.1 m.
fn small_scene(coupling: &str) -> String {
    format!(
        r#"
name = "iso-small"
fps = 60
frames = 30
substeps = 2

[solver]
model = "isometric"

[solver.isometric]
coupling = "{coupling}"
newton_max_iterations = 10
cg_max_iterations = 300
strain_tolerance = 1e-3

[[cloth]]
density = 0.1
thickness = 0.004

[cloth.collision]
self_collision = true

[cloth.grid]
vertices = [6, 6]
size = [0.3, 0.3]
centre = [0.01, 0.16, 0.007]

[cloth.isometric]
bending_stiffness = 1e-4

[[collider]]
shape = "sphere"
radius = 0.1
"#
    )
}

fn scene_of(text: &str) -> Result<Scene, SceneError> {
    Scene::from_toml(text, Path::new("inline.toml"))
}

fn world_of(text: &str) -> World {
    let scene = scene_of(text).unwrap_or_else(|e| panic!("{e}"));
    scene.instantiate().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn isometric_scene_builds_the_subdivided_cloth() {
    let world = world_of(&small_scene("simultaneous"));
    let cloth = &world.cloths()[0];
    let iso = cloth
        .isometric()
        .expect("the cloth uses the isometric model");
    // V = 36, E = 5·6 + 6·5 + 25 = 85, F = 50: the state is the 4:1 mesh.
    assert_eq!(cloth.state().len(), 36 + 85);
    assert_eq!(cloth.triangles().len(), 4 * 50);
    assert_eq!(iso.subdivision().num_black_nodes(), 36);
    assert_eq!(world.settings().budget.newton_max_iterations, 10);
    assert_eq!(world.settings().budget.cg_max_iterations, 300);
}

/// Replaces `from` by `to` in the small scene and expects a value or parse error naming `key`.
fn rejects(from: &str, to: &str, key: &str) {
    let text = small_scene("simultaneous");
    assert!(text.contains(from), "{from}");
    let text = text.replace(from, to);
    let err = match scene_of(&text) {
        Ok(scene) => match scene.instantiate() {
            Ok(_) => panic!("`{to}` accepted"),
            Err(e) => e,
        },
        Err(e) => e,
    };
    let got = match &err {
        SceneError::Value { key, .. }
        | SceneError::Parse { key, .. }
        | SceneError::Cloth { key, .. } => key.clone(),
        other => panic!("`{to}`: unexpected error {other}"),
    };
    assert!(got.contains(key), "`{to}`: key {got}, wanted {key} ({err})");
}

#[test]
fn bad_isometric_values_are_typed_errors_naming_the_key() {
    rejects(
        "strain_tolerance = 1e-3",
        "strain_tolerance = 0.0",
        "solver.isometric.strain_tolerance",
    );
    rejects(
        "strain_tolerance = 1e-3",
        "strain_tolerance = 1.5",
        "solver.isometric.strain_tolerance",
    );
    rejects(
        "newton_max_iterations = 10",
        "newton_max_iterations = 0",
        "solver.isometric.newton_max_iterations",
    );
    rejects(
        "cg_max_iterations = 300",
        "cg_max_iterations = 0",
        "solver.isometric.cg_max_iterations",
    );
    rejects(
        "cg_max_iterations = 300",
        "cg_max_iterations = 300\ncholesky_reuse_iterations = 1001",
        "solver.isometric.cholesky_reuse_iterations",
    );
    rejects(
        "coupling = \"simultaneous\"",
        "coupling = \"sideways\"",
        "coupling",
    );
    rejects(
        "coupling = \"simultaneous\"",
        "integrator = \"rk4\"",
        "integrator",
    );
    rejects(
        "coupling = \"simultaneous\"",
        "friction_compliance = -1.0",
        "solver.isometric.friction_compliance",
    );
    rejects(
        "bending_stiffness = 1e-4",
        "bending_stiffness = -1.0",
        "cloth[0].isometric.bending_stiffness",
    );
    rejects(
        "bending_stiffness = 1e-4",
        "rest_shape = \"wavy\"",
        "rest_shape",
    );
    rejects(
        "bending_stiffness = 1e-4",
        "bending_stifness = 1.0",
        "bending_stifness",
    );
    rejects(
        "model = \"isometric\"",
        "model = \"baraff-witkin\"",
        "cloth[0].isometric",
    );
    rejects(
        "[cloth.grid]\nvertices = [6, 6]",
        "[cloth.icosphere]\nradius = -1.0\nsubdivisions = 1\n[cloth.grid]\nvertices = [6, 6]",
        "cloth[0]",
    );
}

#[test]
fn icosphere_cloth_is_a_closed_isometric_shell() {
    let text = small_scene("simultaneous").replace(
        "[cloth.grid]\nvertices = [6, 6]\nsize = [0.3, 0.3]\ncentre = [0.01, 0.16, 0.007]",
        "[cloth.icosphere]\nradius = 0.1\nsubdivisions = 1\ncentre = [0.0, 0.5, 0.0]",
    );
    let world = world_of(&text);
    let cloth = &world.cloths()[0];
    // Icosphere level 1: V = 42, E = 120, F = 80.
    assert_eq!(cloth.state().len(), 42 + 120);
    assert_eq!(cloth.triangles().len(), 320);
    let radius =
        scene_of(&text.replace("radius = 0.1\nsubdivisions", "radius = -1.0\nsubdivisions"))
            .expect_err("negative radius rejected");
    assert!(
        matches!(&radius, SceneError::Value { key, .. } if key == "cloth[0].icosphere.radius"),
        "{radius}"
    );
}

/// What a run of the small scene did.
struct Run {
    hash: u64,
    /// Largest base-edge strains (through the midpoint, end to end).
    mid: f64,
    end: f64,
    /// Contact rows plus proximity pairs, summed over frames.
    contacts: u32,
    /// Frames in contact, and those of them with a projection at the Newton cap.
    contact_frames: u32,
    unconverged_frames: u32,
}

/// Runs `frames` frames on `threads` workers; checks finiteness (the step fails otherwise) and,
/// with `check`, the independent intersection checker every frame.
fn run(text: &str, frames: u32, threads: usize, check: bool) -> Run {
    let scene = scene_of(text).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    world.set_threads(threads).expect("pool");
    let mut r = Run {
        hash: 0,
        mid: 0.0,
        end: 0.0,
        contacts: 0,
        contact_frames: 0,
        unconverged_frames: 0,
    };
    for f in 0..frames {
        let stats = world
            .step(scene.dt())
            .unwrap_or_else(|e| panic!("frame {f}: {e}"));
        assert!(stats.bending_energy.is_finite() && stats.base_strain_midpoint.is_finite());
        r.mid = r.mid.max(stats.base_strain_midpoint);
        r.end = r.end.max(stats.base_strain_end_to_end);
        r.contacts += stats.contact_rows + stats.proximity_pairs;
        if stats.contact_rows + stats.proximity_pairs > 0 {
            r.contact_frames += 1;
            r.unconverged_frames += u32::from(stats.newton_unconverged > 0);
        }
        if std::env::var_os("WEFT_ISO_TRACE").is_some() {
            eprintln!(
                "frame {f}: newton {} (max {}, unconverged {}), pcg {}, contact rows {}, strain {:.2e}/{:.2e}, edge strain {:.2e}, bending {:.2e}",
                stats.newton_iterations,
                stats.newton_max_iterations,
                stats.newton_unconverged,
                stats.cg_iterations,
                stats.contact_rows,
                stats.base_strain_midpoint,
                stats.base_strain_end_to_end,
                stats.max_strain,
                stats.bending_energy
            );
        }
        if check {
            support::assert_world_clean(&world, &format!("frame {f}"));
        }
    }
    r.hash = world.state_hash();
    r
}

/// 30 frames: the sheet falls for 6 and lands on the ball, then drapes. Finite state, the
/// independent checker's verdict every frame, and convergence of the projections in contact
/// (the two-phase solver: Gauss–Newton, then fast projection; soft normal contact rows) are
/// asserted (measured: 7 of 24 contact frames have a projection at the cap of 10, simultaneous).
/// Before those, the projection stalled at the Newton cap in every contact frame and
/// this scene blew up from frame 13. The base-edge strain is reported, not asserted: with
/// `k_b = 10⁻⁴` the sheet crumples, and the black nodes follow the mean extrapolation (3.3)
/// while the (3.1) rows hold (see `pinned_sheet_hangs_down_without_locking`).
#[test]
fn small_isometric_scene_runs_finite_and_intersection_free() {
    for coupling in ["simultaneous", "staggered"] {
        let r = run(&small_scene(coupling), 30, 2, true);
        eprintln!(
            "{coupling}: max base-edge strain {:.3e} (through midpoint), {:.3e} (end to end), contact rows + pairs {}, frames in contact {}, of them with a projection at the cap {}",
            r.mid, r.end, r.contacts, r.contact_frames, r.unconverged_frames
        );
        assert!(
            r.contacts > 0,
            "{coupling}: the sheet never reached the ball"
        );
        // The staggered run starts every projection from the collided state of the last step
        // (strain up to 100 %; measured: 10 of 24 frames at the cap): only reported.
        assert!(
            coupling == "staggered" || r.unconverged_frames * 3 <= r.contact_frames,
            "{coupling}: {} of {} contact frames unconverged",
            r.unconverged_frames,
            r.contact_frames
        );
    }
}

#[test]
fn state_hash_is_the_same_for_one_and_two_threads() {
    // 30 frames: contact from frame 7.
    let text = small_scene("simultaneous");
    let one = run(&text, 30, 1, false).hash;
    let two = run(&text, 30, 2, false).hash;
    let again = run(&text, 30, 2, false).hash;
    assert_eq!(one, two);
    assert_eq!(two, again);
}

/// With nested dissection, two threads in the factorisation and the last factor reused as the
/// preconditioner, the hash still does not depend on the world's threads, and the reuse
/// replaces factorisations (the first steps fall free of the ball).
#[test]
fn ordering_threads_and_factor_reuse_keep_the_hash_independent_of_threads() {
    let text = small_scene("simultaneous").replace(
        "cg_max_iterations = 300",
        "cg_max_iterations = 300\ncholesky_ordering = \"nested-dissection\"\n\
         cholesky_threads = 2\ncholesky_reuse_iterations = 8",
    );
    let one = run(&text, 30, 1, false).hash;
    let two = run(&text, 30, 2, false).hash;
    assert_eq!(one, two);
    let mut world = world_of(&text);
    for _ in 0..3 {
        world.step(1.0 / 60.0).unwrap_or_else(|e| panic!("{e}"));
    }
    let d = world.cloths()[0]
        .isometric()
        .expect("an isometric cloth")
        .direct_solve_times();
    assert!(d.reuse_solves > d.reuse_failures, "{d:?}");
}

/// The PCG statistics of an isometric cloth are per linear solve, as for a Baraff–Witkin
/// cloth: with a cap of 3 PCG iterations every solve stops at the cap before its tolerance
/// (1e-6 relative), so `cg_unconverged` counts every solve (one per Gauss–Newton iteration) and
/// `cg_max_iterations` is the cap, not a sum over the substep, and `cg_residual` is the largest
/// residual a solve stopped at. (PCG is chosen: the default linear solver is the sparse
/// Cholesky.)
#[test]
fn isometric_pcg_statistics_are_per_solve() {
    let text = small_scene("simultaneous").replace(
        "cg_max_iterations = 300",
        "cg_max_iterations = 3\nlinear_solver = \"pcg\"",
    );
    let mut world = world_of(&text);
    let stats = world.step(1.0 / 60.0).unwrap_or_else(|e| panic!("{e}"));
    assert!(stats.newton_iterations > 0, "{stats:?}");
    assert_eq!(stats.cg_max_iterations, 3, "{stats:?}");
    assert_eq!(stats.cg_unconverged, stats.newton_iterations, "{stats:?}");
    assert!(
        stats.cg_iterations <= 3 * stats.newton_iterations,
        "{stats:?}"
    );
}

/// Column `name` of a `stats.csv`, parsed.
fn column(csv: &str, name: &str) -> Vec<f64> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let k = header
        .iter()
        .position(|h| *h == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    lines
        .map(|l| l.split(',').nth(k).expect("cell").parse().expect("number"))
        .collect()
}

#[test]
fn weft_run_stiff_sheet_writes_strain_and_bending_for_both_couplings() {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/stiff-sheet.toml");
    let text = std::fs::read_to_string(&sample).expect("sample");
    for coupling in ["simultaneous", "staggered"] {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("stiff-{coupling}"));
        std::fs::create_dir_all(&dir).expect("dir");
        let scene = dir.join("stiff-sheet.toml");
        let replaced = text.replace(
            "coupling = \"simultaneous\"",
            &format!("coupling = \"{coupling}\""),
        );
        assert!(replaced.contains(&format!("coupling = \"{coupling}\"")));
        std::fs::write(&scene, replaced).expect("write scene");
        let out = Command::new(env!("CARGO_BIN_EXE_weft"))
            .args([
                "run",
                scene.to_str().expect("utf-8"),
                "--frames",
                "3",
                "--out",
            ])
            .arg(&dir)
            .output()
            .expect("weft runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let csv = std::fs::read_to_string(dir.join("stats.csv")).expect("stats.csv");
        let mid = column(&csv, "base_strain_midpoint");
        let end = column(&csv, "base_strain_end_to_end");
        let bending = column(&csv, "bending_energy_j");
        let newton = column(&csv, "newton_iterations");
        assert_eq!(mid.len(), 3);
        assert!(
            mid.iter()
                .chain(&end)
                .chain(&bending)
                .all(|v| v.is_finite() && *v >= 0.0)
        );
        assert!(newton.iter().all(|&n| n >= 1.0), "{newton:?}");
        eprintln!(
            "stiff-sheet {coupling}, 3 frames: max base-edge strain {:.3e} (midpoint) {:.3e} (end to end), bending energy {:.3e} J",
            mid.iter().copied().fold(0.0, f64::max),
            end.iter().copied().fold(0.0, f64::max),
            bending.last().copied().unwrap_or(0.0)
        );
    }
}

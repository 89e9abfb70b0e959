//! Issue 4 items 1, 5, 6: the isometric model (Wang 2012) selected from a scene file, stepped by
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

/// Runs `frames` frames on `threads` workers; checks finiteness (the step fails otherwise) and,
/// with `check`, the independent intersection checker every frame. Returns the state hash and
/// the largest base-edge strains (through the midpoint, end to end).
fn run(text: &str, frames: u32, threads: usize, check: bool) -> (u64, f64, f64, u32) {
    let scene = scene_of(text).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    world.set_threads(threads).expect("pool");
    let (mut mid, mut end, mut contacts) = (0.0f64, 0.0f64, 0u32);
    for f in 0..frames {
        let stats = world
            .step(scene.dt())
            .unwrap_or_else(|e| panic!("frame {f}: {e}"));
        assert!(stats.bending_energy.is_finite() && stats.base_strain_midpoint.is_finite());
        mid = mid.max(stats.base_strain_midpoint);
        end = end.max(stats.base_strain_end_to_end);
        contacts += stats.contact_rows + stats.proximity_pairs;
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
    (world.state_hash(), mid, end, contacts)
}

/// 12 frames: the sheet falls for 6 and lands on the ball. Finite state and the independent
/// checker's verdict are asserted; the strain is only reported, because the Gauss–Newton
/// projection does not converge once the sheet is in contact (issue 4, branch h/wang-conv), so
/// the strain after landing measures that, not this integration.
#[test]
fn small_isometric_scene_runs_finite_and_intersection_free() {
    for coupling in ["simultaneous", "staggered"] {
        let (_, mid, end, contacts) = run(&small_scene(coupling), 12, 2, true);
        eprintln!(
            "{coupling}: max base-edge strain {mid:.3e} (through midpoint), {end:.3e} (end to end), contact rows + pairs {contacts}"
        );
        assert!(contacts > 0, "{coupling}: the sheet never reached the ball");
    }
}

#[test]
fn state_hash_is_the_same_for_one_and_two_threads() {
    // 12 frames: contact from frame 7. Later frames of this scene blow up
    // (the projection does not converge in contact: base strain 6 at frame
    // 13, 1e7 from frame 15, the fail-safe's last resort from frame 16) and
    // cost ~45 s each in the impact-zone stage.
    let text = small_scene("simultaneous");
    let (one, ..) = run(&text, 12, 1, false);
    let (two, ..) = run(&text, 12, 2, false);
    let (again, ..) = run(&text, 12, 2, false);
    assert_eq!(one, two);
    assert_eq!(two, again);
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

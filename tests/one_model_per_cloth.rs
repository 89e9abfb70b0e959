//! A cloth is integrated by one model and holds that model's step data only: an isometric cloth
//! (Wang 2012) builds no Baraff–Witkin system, a Baraff–Witkin cloth no isometric model. The
//! frame's statistics say which models stepped, and `weft run` writes each model's own
//! `stats.csv` columns and `summary.json` keys, none of the other's.

use std::path::{Path, PathBuf};
use std::process::Command;

use weft::scene::Scene;
use weft::world::World;

/// A 9 × 9 sheet over a ball; `model` is the `[solver]` model.
fn scene(model: &str) -> String {
    format!(
        r#"
name = "one-model"
fps = 60
frames = 3
substeps = 2

[solver]
model = "{model}"

[[cloth]]
density = 0.1
thickness = 0.004

[cloth.grid]
vertices = [9, 9]
size = [0.4, 0.4]
centre = [0.0, 0.12, 0.0]
plane = "xz"

[[collider]]
shape = "sphere"
radius = 0.1
"#
    )
}

fn world_of(text: &str) -> World {
    let scene = Scene::from_toml(text, Path::new("inline.toml")).unwrap_or_else(|e| panic!("{e}"));
    scene.instantiate().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn an_isometric_cloth_holds_no_baraff_witkin_system() {
    let mut world = world_of(&scene("isometric"));
    let cloth = &world.cloths()[0];
    assert!(cloth.isometric().is_some());
    assert!(
        cloth.system().is_none(),
        "an isometric cloth built a Baraff–Witkin system"
    );
    for _ in 0..3 {
        let stats = world.step(1.0 / 60.0).expect("step");
        assert_eq!((stats.isometric_cloths, stats.baraff_witkin_cloths), (1, 0));
        assert!(stats.newton_iterations > 0, "{stats:?}");
        // What only the Baraff–Witkin step fills.
        assert_eq!(stats.rejected_substeps, 0);
        assert_eq!(stats.contacts, 0);
        assert_eq!(stats.precond_shifted + stats.precond_fallbacks, 0);
    }
}

#[test]
fn a_baraff_witkin_cloth_holds_no_isometric_model() {
    let mut world = world_of(&scene("baraff-witkin"));
    let cloth = &world.cloths()[0];
    assert!(cloth.isometric().is_none());
    assert!(cloth.system().is_some());
    for _ in 0..3 {
        let stats = world.step(1.0 / 60.0).expect("step");
        assert_eq!((stats.isometric_cloths, stats.baraff_witkin_cloths), (0, 1));
        assert!(stats.cg_iterations > 0, "{stats:?}");
        assert_eq!(stats.newton_iterations, 0);
        assert_eq!(stats.row_strain, 0.0);
    }
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weft-one-model-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// `weft run` of the scene with `model` for 2 frames: the header of its `stats.csv` and the
/// keys of its `summary.json`.
fn run_outputs(model: &str) -> (Vec<String>, Vec<String>) {
    let dir = temp_dir(model);
    let path = dir.join("scene.toml");
    std::fs::write(&path, scene(model)).expect("write scene");
    let out = dir.join("out");
    let run = Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["run", "--threads", "1", "--frames", "2", "--out"])
        .arg(&out)
        .arg(&path)
        .output()
        .expect("run weft");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let csv = std::fs::read_to_string(out.join("stats.csv")).expect("stats.csv");
    let header: Vec<String> = csv
        .lines()
        .next()
        .expect("a header")
        .split(',')
        .map(str::to_string)
        .collect();
    for row in csv.lines().skip(1) {
        assert_eq!(row.split(',').count(), header.len(), "{row}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).expect("json"))
            .expect("summary.json parses");
    let keys = summary
        .as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    (header, keys)
}

/// Columns only the isometric step fills.
const ISOMETRIC_COLUMNS: [&str; 8] = [
    "newton_iterations",
    "newton_unconverged",
    "contact_rows",
    "base_strain_midpoint",
    "row_strain",
    "factor_ms",
    "failsafe_moved",
    "kept_best",
];

/// Columns only the Baraff–Witkin step fills.
const BARAFF_WITKIN_COLUMNS: [&str; 11] = [
    "contacts_ms",
    "assemble_ms",
    "collide_ms",
    "finish_ms",
    "rejected",
    "contacts",
    "released",
    "collide_strain_ms",
    "collide_smoothing_ms",
    "precond_shifted",
    "strain_sweeps",
];

#[test]
fn weft_run_writes_the_columns_of_its_model_only() {
    let (bw, bw_keys) = run_outputs("baraff-witkin");
    let (iso, iso_keys) = run_outputs("isometric");
    for shared in [
        "frame",
        "frame_ms",
        "solve_ms",
        "cg_iterations",
        "max_strain",
        "arena_bytes",
    ] {
        assert!(bw.iter().any(|c| c == shared), "{shared} missing: {bw:?}");
        assert!(iso.iter().any(|c| c == shared), "{shared} missing: {iso:?}");
    }
    for c in ISOMETRIC_COLUMNS {
        assert!(iso.iter().any(|h| h == c), "{c} missing: {iso:?}");
        assert!(
            !bw.iter().any(|h| h == c),
            "{c} in a Baraff–Witkin run: {bw:?}"
        );
    }
    for c in BARAFF_WITKIN_COLUMNS {
        assert!(bw.iter().any(|h| h == c), "{c} missing: {bw:?}");
        assert!(
            !iso.iter().any(|h| h == c),
            "{c} in an isometric run: {iso:?}"
        );
    }
    let has = |keys: &[String], k: &str| keys.iter().any(|x| x == k);
    assert!(has(&iso_keys, "max_row_strain") && !has(&bw_keys, "max_row_strain"));
    assert!(has(&bw_keys, "rejected_substeps") && !has(&iso_keys, "rejected_substeps"));
    assert!(has(&bw_keys, "state_hash") && has(&iso_keys, "state_hash"));
}

//! `weft stress`: one table row per runnable scene of a folder, with its frames measured
//! against the scene's own budget, and the scenes refused at load listed apart with the error
//! that names their file, line and key.

use std::path::PathBuf;
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weft-stress-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A 5×5 sheet falling freely, with a generous budget.
const SMALL: &str = r#"
name = "small"
fps = 60
frames = 3

[budget]
frame_ms = 1000

[[cloth]]
[cloth.grid]
vertices = [5, 5]
size = [0.2, 0.2]
centre = [0.0, 1.0, 0.0]
"#;

#[test]
fn stress_reports_each_runnable_scene_against_its_budget_and_lists_refused_ones() {
    let dir = scratch("folder");
    std::fs::write(dir.join("a-small.toml"), SMALL).expect("scene");
    std::fs::write(
        dir.join("b-refused.toml"),
        SMALL
            .replace("name = \"small\"", "name = \"refused\"")
            .replace("fps = 60", "fps = -1"),
    )
    .expect("scene");
    // Not a scene file: ignored.
    std::fs::write(dir.join("notes.txt"), "not a scene").expect("notes");
    let out = Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("stress")
        .arg(&dir)
        .args(["--threads", "1", "--frames", "2"])
        .output()
        .expect("weft runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| small |"))
        .unwrap_or_else(|| panic!("no row for the small scene:\n{stdout}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    // | scene | frames | budget ms | median ms | worst ms | worst/budget | > 2x | strain | free |
    // forced by pins | forced by bodies | resorts | outcome |
    assert_eq!(cells[2], "2", "{row}");
    assert_eq!(cells[3], "1000", "{row}");
    let worst: f64 = cells[5].parse().expect("worst ms is a number");
    let ratio: f64 = cells[6].parse().expect("worst/budget is a number");
    assert!((ratio - worst / 1000.0).abs() < 0.01, "{row}");
    // Nothing pins or holds the falling sheet: every edge is free.
    assert_eq!(cells[9], cells[8], "{row}");
    assert_eq!((cells[10], cells[11]), ("0.00", "0.00"), "{row}");
    assert_eq!(cells[13], "ran", "{row}");
    // The refused scene has no row, and is listed with its file, line and key.
    assert!(!stdout.contains("| refused |"), "{stdout}");
    let refused = stdout
        .lines()
        .find(|l| l.contains("b-refused.toml"))
        .unwrap_or_else(|| panic!("the refused scene is not listed:\n{stdout}"));
    assert!(refused.contains(":3: key `fps`"), "{refused}");
}

/// A 5×5 sheet hanging from its top row, whose right corner (pinned too) is moved 2 cm further
/// right over the run: the top-right edge, both ends pinned, is pulled 40 % past its 5 cm rest
/// length; the free vertices below can follow within the limit. (Pulled 5 cm, the vertex below the
/// corner cannot: tied to two pins moving apart, its edges stay at 28 %, counted as free.)
const PULLED_CORNER: &str = r#"
name = "pulled"
fps = 60
frames = 3

[[cloth]]
[cloth.grid]
vertices = [5, 5]
size = [0.2, 0.2]
centre = [0.0, 1.0, 0.0]
plane = "xy"

[cloth.collision]
strain_limit = 0.1

[[cloth.pin]]
region = { min = [-0.11, 1.09, -0.01], max = [0.06, 1.11, 0.01] }

[[cloth.pin]]
region = { min = [0.09, 1.09, -0.01], max = [0.11, 1.11, 0.01] }

[[cloth.pin.keyframes]]
time = 0.0

[[cloth.pin.keyframes]]
time = 0.05
position = [0.02, 0.0, 0.0]
"#;

#[test]
fn stress_reports_free_edges_apart_from_edges_forced_by_pins() {
    let dir = scratch("pulled");
    std::fs::write(dir.join("pulled.toml"), PULLED_CORNER).expect("scene");
    let out = Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("stress")
        .arg(&dir)
        .args(["--threads", "1"])
        .output()
        .expect("weft runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| pulled |"))
        .unwrap_or_else(|| panic!("no row for the pulled scene:\n{stdout}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    let percent = |k: usize| -> f64 { cells[k].parse().expect("a strain is a number") };
    let (strain, free, pins, bodies) = (percent(8), percent(9), percent(10), percent(11));
    // The pinned pair ends 7 cm apart at a 5 cm rest length: 40 %.
    assert!((pins - 40.0).abs() < 0.5, "{row}");
    assert_eq!(strain, pins.max(free), "{row}");
    // Every other edge has a free end, and the limiter keeps it within 10 % (plus its tolerance).
    assert!(free <= 10.01, "{row}");
    assert_eq!(bodies, 0.0, "{row}");
}

#[test]
fn stress_without_a_scene_is_bad_input() {
    let dir = scratch("empty");
    let out = Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("stress")
        .arg(&dir)
        .output()
        .expect("weft runs");
    assert_eq!(out.status.code(), Some(2));
}

//! What `weft run` writes for DCC tools: OBJ files per cloth and frame (named by cloth, frame 0
//! included, zero-padded so names sort in frame order, with `o`, `vt` and unit `vn`), obstacles
//! once when static and per frame when moving, and the `--usd` cache, opened with Pixar's own
//! reader (`pxr` from the `usd-core` package, installed with pip when missing) and checked
//! against the OBJ files of the same run.

use std::path::{Path, PathBuf};
use std::process::Command;

use weft::mesh::read_obj_file;

/// A small scene: a 9 × 9 cloth named with characters a file system dislikes, over a static
/// sphere, between a spinning sphere and a static box obstacle.
const SCENE: &str = r#"
name = "outputs"
fps = 50
frames = 12
substeps = 2

[[cloth]]
name = "my sheet/1"
density = 0.1
thickness = 0.004

[cloth.grid]
vertices = [9, 9]
size = [1.0, 1.0]
centre = [0.0, 0.4, 0.0]
plane = "xz"

[[collider]]
shape = "sphere"
radius = 0.3

[[collider]]
shape = "sphere"
radius = 0.2
position = [2.0, 0.0, 0.0]
angular_velocity = [0.0, 1.0, 0.0]

[[obstacle]]
shape = "box"
half_extents = [0.2, 0.2, 0.2]
position = [-2.0, 0.0, 0.0]
"#;

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weft-run-outputs-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Runs the scene for `frames` frames with `--every 5`, into `dir/out`, with a USD cache.
fn run(dir: &Path, frames: u32) -> (PathBuf, PathBuf) {
    let scene = dir.join("outputs.toml");
    std::fs::write(&scene, SCENE).expect("write scene");
    let out = dir.join("out");
    let usd = dir.join("cache.usda");
    let status = Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["run", "--threads", "1", "--every", "5", "--frames"])
        .arg(frames.to_string())
        .arg("--out")
        .arg(&out)
        .arg("--usd")
        .arg(&usd)
        .arg(&scene)
        .output()
        .expect("run weft");
    assert!(
        status.status.success(),
        "weft run failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    (out, usd)
}

fn obj_names(out: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(out)
        .expect("out dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".obj"))
        .collect();
    names.sort();
    names
}

#[test]
fn obj_files_are_named_by_cloth_and_frame_and_read_back() {
    let dir = temp_dir("obj");
    let (out, _) = run(&dir, 12);
    assert_eq!(
        obj_names(&out),
        [
            "collider0_static.obj",
            "collider1_0000.obj",
            "collider1_0005.obj",
            "collider1_0010.obj",
            "collider1_0012.obj",
            "my_sheet_1_0000.obj",
            "my_sheet_1_0005.obj",
            "my_sheet_1_0010.obj",
            "my_sheet_1_0012.obj",
            "obstacle0_static.obj",
        ],
        "frame 0, every 5th and the last; sorted by name = sorted by frame; static obstacle once"
    );
    let first = read_obj_file(&out.join("my_sheet_1_0000.obj")).expect("reads");
    assert_eq!(first.positions.len(), 81);
    assert!(
        first.positions.iter().all(|p| p.y == 0.4),
        "frame 0 is the initial state"
    );
    let last = read_obj_file(&out.join("my_sheet_1_0012.obj")).expect("reads");
    assert!(last.positions.iter().all(|p| p.y < 0.4), "the cloth fell");
    assert_eq!(
        last.corner_uvs.as_ref().map(Vec::len),
        Some(last.triangles.len()),
        "uvs per corner"
    );
    let text = std::fs::read_to_string(out.join("my_sheet_1_0012.obj")).expect("read");
    assert!(text.starts_with("o my_sheet_1\n"));
    let normals: Vec<f32> = text
        .lines()
        .filter_map(|l| l.strip_prefix("vn "))
        .map(|l| {
            l.split(' ')
                .map(|t| t.parse::<f32>().expect("number").powi(2))
                .sum::<f32>()
        })
        .collect();
    assert_eq!(normals.len(), 81);
    assert!(
        normals.iter().all(|n2| (n2 - 1.0).abs() < 1e-5),
        "unit normals"
    );
    // The spinning sphere turns about its own centre: the same points set, moved.
    let a = read_obj_file(&out.join("collider1_0000.obj")).expect("reads");
    let b = read_obj_file(&out.join("collider1_0012.obj")).expect("reads");
    assert_eq!(a.triangles, b.triangles);
    assert_ne!(
        a.positions, b.positions,
        "the moving collider is written moved"
    );
    std::fs::remove_dir_all(&dir).expect("clean up");
}

/// Imports `pxr`, installing `usd-core` with pip when it is missing; panics if it still cannot.
fn ensure_pxr() {
    let import = || {
        Command::new("python3")
            .args(["-c", "from pxr import Usd"])
            .status()
            .is_ok_and(|s| s.success())
    };
    if import() {
        return;
    }
    let pip = Command::new("python3")
        .args(["-m", "pip", "install", "--user", "usd-core"])
        .output()
        .expect("python3 runs");
    assert!(
        import(),
        "cannot import pxr after `pip install --user usd-core`: {}",
        String::from_utf8_lossy(&pip.stderr)
    );
}

const READ_USD: &str = r#"
import sys
from pxr import Usd, UsdGeom
stage = Usd.Stage.Open(sys.argv[1])
print(stage.GetTimeCodesPerSecond(), stage.GetStartTimeCode(), stage.GetEndTimeCode())
names = [p.GetName() for p in stage.GetDefaultPrim().GetChildren()]
print(" ".join(names))
sheet = UsdGeom.Mesh(stage.GetDefaultPrim().GetChild("my_sheet_1"))
print(sheet.GetPointsAttr().GetNumTimeSamples(), sheet.GetNormalsAttr().GetNumTimeSamples())
print(len(UsdGeom.PrimvarsAPI(sheet).GetPrimvar("st").Get()))
for still in ["collider0", "collider1", "obstacle0"]:
    print(UsdGeom.Mesh(stage.GetDefaultPrim().GetChild(still)).GetPointsAttr().GetNumTimeSamples())
for frame in [0, 12]:
    pts = sheet.GetPointsAttr().Get(frame)
    print(" ".join(repr(float(c)) for p in pts for c in p))
"#;

#[test]
fn usd_cache_opens_in_pixars_reader_and_matches_the_obj_files() {
    ensure_pxr();
    let dir = temp_dir("usd");
    let (out, usd) = run(&dir, 12);
    let script = dir.join("read.py");
    std::fs::write(&script, READ_USD).expect("write script");
    let r = Command::new("python3")
        .arg(&script)
        .arg(&usd)
        .output()
        .expect("python3 runs");
    assert!(
        r.status.success(),
        "pxr could not read the cache: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    let text = String::from_utf8(r.stdout).expect("utf-8");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0], "50.0 0.0 12.0",
        "time codes per second, start, end"
    );
    assert_eq!(lines[1], "my_sheet_1 collider0 collider1 obstacle0");
    assert_eq!(lines[2], "13 13", "points and normals at frames 0..=12");
    assert_eq!(lines[3], "384", "uvs per corner of 128 triangles");
    assert_eq!(lines[4], "0", "static collider: no time samples");
    assert_eq!(lines[5], "13", "spinning collider: one per frame");
    assert_eq!(lines[6], "0", "static obstacle: no time samples");
    for (line, frame) in [(lines[7], "0000"), (lines[8], "0012")] {
        let usd: Vec<f32> = line
            .split(' ')
            .map(|t| t.parse::<f64>().expect("number") as f32)
            .collect();
        let obj = read_obj_file(&out.join(format!("my_sheet_1_{frame}.obj"))).expect("reads");
        let obj: Vec<f32> = obj.positions.iter().flat_map(|p| p.to_array()).collect();
        assert_eq!(usd.len(), obj.len());
        let worst = usd
            .iter()
            .zip(&obj)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(
            worst <= 1e-6,
            "frame {frame}: USD and OBJ differ by {worst} m"
        );
    }
    std::fs::remove_dir_all(&dir).expect("clean up");
}

/// Which obstacles are written once and which per frame: velocities and keyframe tracks, of
/// colliders (through their tessellation) and of mesh obstacles, make a body moving.
#[test]
fn obstacles_move_with_velocities_and_tracks() {
    let text = r#"
        [[cloth]]
        [cloth.grid]
        vertices = [3, 3]
        size = [0.2, 0.2]
        centre = [0.0, 2.0, 0.0]

        [[collider]]
        shape = "plane"

        [[collider]]
        shape = "sphere"
        radius = 0.1
        position = [1.0, 0.0, 0.0]
        linear_velocity = [0.0, 0.1, 0.0]

        [[collider]]
        shape = "sphere"
        radius = 0.1
        position = [-1.0, 0.0, 0.0]
        [[collider.keyframes]]
        time = 0.0
        position = [-1.0, 0.0, 0.0]
        [[collider.keyframes]]
        time = 1.0
        position = [-1.0, 0.5, 0.0]

        [[obstacle]]
        shape = "box"
        half_extents = [0.1, 0.1, 0.1]
        position = [0.0, 0.0, 1.0]

        [[obstacle]]
        shape = "box"
        half_extents = [0.1, 0.1, 0.1]
        position = [0.0, 0.0, -1.0]
        [[obstacle.keyframes]]
        time = 0.0
        position = [0.0, 0.0, -1.0]
        [[obstacle.keyframes]]
        time = 1.0
        position = [0.0, 0.5, -1.0]
    "#;
    let scene = weft::scene::Scene::from_toml(text, Path::new("moves.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    let by_collider: Vec<bool> = world
        .colliders()
        .iter()
        .map(|c| world.obstacle_moves(c.obstacle()))
        .collect();
    assert_eq!(by_collider, [false, true, true]);
    let n = world.obstacles().len();
    assert_eq!(n, 5);
    assert!(!world.obstacle_moves(n - 2), "static box");
    assert!(world.obstacle_moves(n - 1), "keyframed box");
    assert!(!world.obstacle_moves(n), "out of range");
}

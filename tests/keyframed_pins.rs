//! Keyframed pin targets in scene files (`[[cloth.pin]]` with `keyframes` and `pivot`): the
//! pinned region follows its track exactly at every frame end, the run is the same for any
//! thread count, the host can take a tracked vertex over, and bad sections are refused with
//! the place named.

use std::path::Path;

use glam::{Quat, Vec3};
use weft::scene::{self, SceneError};
use weft::world::World;

/// A horizontal 9×9 sheet: its row at z = −0.2 (vertices 72–80) pinned still, its row at
/// z = 0.2 (vertices 0–8, grid row j = 0) turned 90° about the vertical axis through `pivot` = (0, 1, 0.2) and raised 0.1 m over
/// 0.5 s, then held.
const SCENE: &str = r#"
name = "turning-hem"
fps = 60
frames = 40
substeps = 2

[[cloth]]
[cloth.grid]
vertices = [9, 9]
size = [0.4, 0.4]
centre = [0.0, 1.0, 0.0]
plane = "xz"

[cloth.collision]
self_collision = true

[[cloth.pin]]
region = { min = [-0.21, 0.99, -0.21], max = [0.21, 1.01, -0.19] }

[[cloth.pin]]
region = { min = [-0.21, 0.99, 0.19], max = [0.21, 1.01, 0.21] }
pivot = [0.0, 1.0, 0.2]

[[cloth.pin.keyframes]]
time = 0.0

[[cloth.pin.keyframes]]
time = 0.5
position = [0.0, 0.1, 0.0]
rotation_deg = [0.0, 90.0, 0.0]
"#;

fn load(text: &str) -> Result<(scene::Scene, World), SceneError> {
    let scene = scene::Scene::from_toml(text, Path::new("turning-hem.toml"))?;
    let world = scene.instantiate()?;
    Ok((scene, world))
}

/// Where the track puts a point that started at `x0`, at time `t` (s): computed here from
/// the two keys, independently of the world's track code.
fn expected(x0: Vec3, t: f64) -> Vec3 {
    let s = (t / 0.5).clamp(0.0, 1.0) as f32;
    let pivot = Vec3::new(0.0, 1.0, 0.2);
    let turn = Quat::from_rotation_y(s * std::f32::consts::FRAC_PI_2);
    pivot + Vec3::new(0.0, 0.1 * s, 0.0) + turn * (x0 - pivot)
}

#[test]
fn pinned_vertices_follow_the_track_exactly_at_every_frame_end() {
    let (scene, mut world) = load(SCENE).unwrap_or_else(|e| panic!("{e}"));
    let x0 = world.cloths()[0].state().positions().to_vec();
    // Row j = 0 (z = 0.2) is tracked, row j = 8 (z = −0.2) holds still.
    let tracked: Vec<u32> = (0..9).collect();
    let still: Vec<u32> = (72..81).collect();
    let tracks = world.cloths()[0].pin_tracks();
    assert_eq!(tracks.len(), 1);
    assert_eq!(tracks[0].vertices(), tracked.as_slice());
    let dt = scene.dt();
    for frame in 1..=scene.frames {
        world
            .step(dt)
            .unwrap_or_else(|e| panic!("frame {frame}: {e}"));
        let t = world.time();
        let cloth = &world.cloths()[0];
        let x = cloth.state().positions();
        let track = &cloth.pin_tracks()[0];
        for (k, &v) in tracked.iter().enumerate() {
            // Exactly on the track's position (bitwise) ...
            assert_eq!(
                x[v as usize],
                track.target_at(k, t),
                "frame {frame}, vertex {v}"
            );
            // ... which is where the keys say (to f32 rounding).
            let want = expected(x0[v as usize], t);
            assert!(
                (x[v as usize] - want).length() < 1e-5,
                "frame {frame}, vertex {v}: {} vs {want}",
                x[v as usize]
            );
            let pin = cloth.pins().iter().find(|p| p.vertex == v).expect("pinned");
            assert_eq!(pin.target, x[v as usize]);
        }
        for &v in &still {
            assert_eq!(
                x[v as usize], x0[v as usize],
                "frame {frame}, still pin {v}"
            );
        }
    }
    // After 40 frames (0.67 s) the hem has turned the whole quarter: the vertex that started
    // at the hem's +x end (0.2, 1, 0.2) is at (0, 1.1, 0.0), 0.2 m from the pivot along −z.
    let end = world.cloths()[0].state().positions()[8];
    assert!((end - Vec3::new(0.0, 1.1, 0.0)).length() < 1e-5, "{end}");
    // The free cloth between the rows stayed finite and hangs below the pins.
    assert!(world.cloths()[0].state().is_finite());
}

#[test]
fn a_run_with_moving_pins_is_the_same_for_one_and_two_threads() {
    let hash = |threads: usize| {
        let (scene, mut world) = load(SCENE).unwrap_or_else(|e| panic!("{e}"));
        world.set_threads(threads).expect("a thread pool");
        for _ in 0..20 {
            world.step(scene.dt()).unwrap_or_else(|e| panic!("{e}"));
        }
        world.state_hash()
    };
    assert_eq!(hash(1), hash(2));
}

#[test]
fn the_host_can_take_a_tracked_vertex_over_or_free_it() {
    let (scene, mut world) = load(SCENE).unwrap_or_else(|e| panic!("{e}"));
    let hold = Vec3::new(0.3, 1.0, 0.3);
    world
        .pin_vertex(world.cloth_ids()[0], 8, hold, Vec3::ZERO)
        .expect("vertex 8 exists");
    world
        .unpin_vertex(world.cloth_ids()[0], 0)
        .expect("vertex 0 is pinned");
    assert_eq!(
        world.cloths()[0].pin_tracks()[0].vertices(),
        &[1, 2, 3, 4, 5, 6, 7]
    );
    for _ in 0..10 {
        world.step(scene.dt()).unwrap_or_else(|e| panic!("{e}"));
    }
    let cloth = &world.cloths()[0];
    let x = cloth.state().positions();
    // The host's pin holds where the host put it; the freed vertex is no pin at all.
    assert_eq!(x[8], hold);
    assert!(cloth.pins().iter().all(|p| p.vertex != 0));
    // The rest of the hem still follows the track.
    let track = &cloth.pin_tracks()[0];
    for (k, &v) in track.vertices().iter().enumerate() {
        assert_eq!(x[v as usize], track.target_at(k, world.time()));
    }
    world
        .clear_pins(world.cloth_ids()[0])
        .expect("cloth 0 exists");
    assert!(world.cloths()[0].pin_tracks().is_empty());
}

/// The scene with `section` appended to the cloth's pins.
fn with_section(section: &str) -> String {
    format!("{SCENE}\n{section}")
}

#[test]
fn bad_keyframed_pin_sections_are_refused_with_file_line_and_key() {
    // A keyframed section sharing a vertex with another section.
    let text =
        with_section("[[cloth.pin]]\nvertices = [80]\n\n[[cloth.pin.keyframes]]\ntime = 0.0\n");
    match load(&text) {
        Err(SceneError::Value {
            file, line, key, ..
        }) => {
            assert_eq!(file, "turning-hem.toml");
            assert!(line > 0);
            assert!(
                key.starts_with("cloth[0].pin[1]") || key.starts_with("cloth[0].pin[2]"),
                "{key}"
            );
        }
        other => panic!("expected a value error, got {other:?}"),
    }
    // Keyframe times that do not increase.
    let text = SCENE.replace("time = 0.5", "time = 0.0");
    match load(&text) {
        Err(SceneError::Value {
            line, key, message, ..
        }) => {
            assert_eq!(key, "cloth[0].pin[1].keyframes[1]");
            assert!(line > 0);
            assert!(message.contains("not after"), "{message}");
        }
        other => panic!("expected a value error, got {other:?}"),
    }
    // A pivot without keyframes.
    let text = with_section("[[cloth.pin]]\nvertices = [40]\npivot = [0.0, 1.0, 0.0]\n");
    match load(&text) {
        Err(SceneError::Value { line, key, .. }) => {
            assert_eq!(key, "cloth[0].pin[2].pivot");
            assert!(line > 0);
        }
        other => panic!("expected a value error, got {other:?}"),
    }
    // A non-finite pivot is a parse error or a value error, never a panic.
    let text = SCENE.replace("pivot = [0.0, 1.0, 0.2]", "pivot = [nan, 1.0, 0.2]");
    assert!(load(&text).is_err());
}

#[test]
fn the_wrung_sample_keeps_its_turning_hem_exactly_on_the_track() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/stress/wrung.toml");
    let scene = scene::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    // Without the frame deadline the run is the same on every machine.
    world.settings_mut().budget.frame_ms = None;
    assert_eq!(world.cloths()[0].pin_tracks()[0].vertices().len(), 17);
    for frame in 1..=30 {
        world.step(scene.dt()).unwrap_or_else(|e| panic!("{e}"));
        let cloth = &world.cloths()[0];
        let x = cloth.state().positions();
        let track = &cloth.pin_tracks()[0];
        for (k, &v) in track.vertices().iter().enumerate() {
            assert_eq!(
                x[v as usize],
                track.target_at(k, world.time()),
                "frame {frame}, vertex {v}"
            );
        }
    }
}

//! Bad scene files and meshes give typed errors that name the place; nothing panics.

use std::path::Path;

use weft::scene::{self, Scene, SceneError};

const GOOD: &str = r#"
name = "t"
fps = 60

[[cloth]]
[cloth.grid]
vertices = [5, 5]

[cloth.material]
bend = 1e-5

[[collider]]
shape = "sphere"
radius = 0.3
"#;

fn load(text: &str) -> Result<Scene, SceneError> {
    Scene::from_toml(text, Path::new("scene.toml"))
}

fn load_and_build(text: &str) -> Result<weft::world::World, SceneError> {
    load(text)?.instantiate()
}

fn err(text: &str) -> (SceneError, String) {
    let e = load_and_build(text).expect_err("the scene is invalid");
    let m = e.to_string();
    (e, m)
}

#[test]
fn good_scene_loads() {
    let w = load_and_build(GOOD).expect("valid");
    assert_eq!(w.cloths().len(), 1);
    assert_eq!(w.colliders().len(), 1);
}

#[test]
fn unknown_key_names_file_line_and_key() {
    let text = GOOD.replace("bend = 1e-5", "bend = 1e-5\nbendd = 2.0");
    let (e, m) = err(&text);
    match e {
        SceneError::Parse { line, ref key, .. } => {
            assert_eq!(line, 11, "{m}");
            assert!(key.contains("bendd"), "{m}");
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
    assert!(m.starts_with("scene.toml:11:"), "{m}");
    assert!(m.contains("unknown field"), "{m}");
}

#[test]
fn wrong_type_names_the_key_path() {
    let text = GOOD.replace("bend = 1e-5", "bend = \"stiff\"");
    let (e, m) = err(&text);
    match e {
        SceneError::Parse { line, ref key, .. } => {
            assert_eq!(line, 10, "{m}");
            assert_eq!(key, "cloth[0].material.bend", "{m}");
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn unknown_top_level_key() {
    let (_, m) = err(&format!("colour = \"red\"\n{GOOD}"));
    assert!(m.contains("scene.toml:1:") && m.contains("colour"), "{m}");
}

#[test]
fn syntax_error_names_the_line() {
    let text = GOOD.replace("fps = 60", "fps = = 60");
    let (e, m) = err(&text);
    assert!(matches!(e, SceneError::Parse { line: 3, .. }), "{m}");
}

#[test]
fn bad_enum_value() {
    let text = GOOD.replace("shape = \"sphere\"", "shape = \"blob\"");
    let (e, m) = err(&text);
    match e {
        SceneError::Parse { line, key, .. } => {
            assert_eq!(line, 13, "{m}");
            assert_eq!(key, "collider[0].shape", "{m}");
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn out_of_range_values_name_key_and_line() {
    let (e, m) = err(&GOOD.replace("fps = 60", "fps = -1"));
    assert!(
        matches!(e, SceneError::Value { line: 3, ref key, .. } if key == "fps"),
        "{m}"
    );

    let (e, m) = err(&GOOD.replace("bend = 1e-5", "bend = -3.0"));
    assert!(
        matches!(e, SceneError::Value { line: 10, ref key, .. } if key == "cloth[0].material.bend"),
        "{m}"
    );

    let (e, m) = err(&GOOD.replace("radius = 0.3", "radius = 0.0"));
    assert!(
        matches!(e, SceneError::Value { line: 14, ref key, .. } if key == "collider[0].radius"),
        "{m}"
    );

    let (e, m) = err(&GOOD.replace("vertices = [5, 5]", "vertices = [1, 5]"));
    assert!(
        matches!(e, SceneError::Value { ref key, .. } if key.starts_with("cloth[0].")),
        "{m}"
    );

    // A response_passes typo would mean that many solves and collision stages a substep.
    let (e, m) = err(&GOOD.replace(
        "bend = 1e-5",
        "bend = 1e-5\n\n[cloth.collision]\nresponse_passes = 100000",
    ));
    assert!(
        matches!(e, SceneError::Value { ref key, .. } if key.contains("response_passes")),
        "{m}"
    );
    assert!(m.contains("at most 16"), "{m}");
    assert!(
        load_and_build(&GOOD.replace(
            "bend = 1e-5",
            "bend = 1e-5\n\n[cloth.collision]\nresponse_passes = 16",
        ))
        .is_ok()
    );
}

#[test]
fn missing_required_shape_parameter() {
    let (e, m) = err(&GOOD.replace("radius = 0.3", "half_extents = [1, 1, 1]"));
    assert!(
        matches!(e, SceneError::Value { ref key, .. } if key == "collider[0].radius"),
        "{m}"
    );
}

#[test]
fn cloth_needs_exactly_one_source() {
    let text = GOOD.replace("[cloth.grid]\nvertices = [5, 5]\n", "");
    let (e, m) = err(&text);
    assert!(
        matches!(e, SceneError::Value { ref key, .. } if key == "cloth[0]"),
        "{m}"
    );
    assert!(m.contains("exactly one of `grid` and `obj`"), "{m}");
}

#[test]
fn pin_out_of_range() {
    let text = format!("{GOOD}\n");
    let text = text.replace(
        "[[collider]]",
        "[[cloth.pin]]\nvertices = [3, 99]\n\n[[collider]]",
    );
    let (e, m) = err(&text);
    assert!(
        matches!(e, SceneError::Value { ref key, .. } if key == "cloth[0].pin[0].vertices"),
        "{m}"
    );
    assert!(m.contains("99"), "{m}");
}

#[test]
fn empty_pin_region() {
    let text = GOOD.replace(
        "[[collider]]",
        "[[cloth.pin]]\nregion = { min = [5, 5, 5], max = [6, 6, 6] }\n\n[[collider]]",
    );
    let (_, m) = err(&text);
    assert!(m.contains("region") && m.contains("no vertex"), "{m}");
}

#[test]
fn malformed_obj_names_obj_file_and_line() {
    let dir = std::env::temp_dir().join(format!("weft-bad-obj-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let obj = dir.join("bad.obj");
    std::fs::write(&obj, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 x\n").expect("write");
    let scene = dir.join("s.toml");
    std::fs::write(&scene, "[[cloth]]\nobj = \"bad.obj\"\n").expect("write");
    let e = scene::load(&scene).expect_err("bad OBJ");
    let m = e.to_string();
    assert!(
        m.contains("bad.obj") && m.contains(":4") || m.contains("line 4"),
        "{m}"
    );
    assert!(matches!(e, SceneError::Mesh { .. }), "{m}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn invalid_obj_mesh_names_the_face() {
    let dir = std::env::temp_dir().join(format!("weft-bad-mesh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let obj = dir.join("flat.obj");
    // Face 1 repeats the first face's vertices: three faces on edge 1-2.
    std::fs::write(
        &obj,
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nv 1 1 1\nf 1 2 3\nf 2 4 3\nf 2 3 5\n",
    )
    .expect("write");
    let scene = dir.join("s.toml");
    std::fs::write(&scene, "[[cloth]]\nobj = \"flat.obj\"\n").expect("write");
    let e = scene::load(&scene)
        .and_then(|s| s.instantiate())
        .expect_err("non-manifold");
    let m = e.to_string();
    assert!(m.contains("cloth[0]"), "{m}");
    assert!(m.contains("face") || m.contains("faces"), "{m}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn missing_file_is_an_io_error() {
    let e = scene::load(Path::new("/nonexistent/scene.toml")).expect_err("missing");
    assert!(matches!(e, SceneError::Io { .. }));
    assert!(e.to_string().contains("/nonexistent/scene.toml"));
}

#[test]
fn random_garbage_never_panics() {
    let mut seed = 0x1234_5678_9abc_def0u64;
    let alphabet = b"[]=\"{},.0123456789abcdefxyz_ \n#-+e";
    for _ in 0..500 {
        let mut s = String::new();
        for _ in 0..200 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            s.push(alphabet[(seed % alphabet.len() as u64) as usize] as char);
        }
        let _ = load_and_build(&s);
        // Mutations of a good file, too.
        let cut = (seed as usize) % GOOD.len();
        let _ = load_and_build(&GOOD[..cut]);
    }
}

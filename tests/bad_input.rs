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

/// The error of `text` as a `Value` error: (line, key, message).
fn value_error(text: &str) -> (usize, String, String) {
    let (e, m) = err(text);
    match e {
        SceneError::Value { line, key, .. } => (line, key, m),
        other => panic!("expected a value error, got {other:?}: {m}"),
    }
}

/// The 1-based line of the first line of `text` that starts with `prefix`.
fn line_of(text: &str, prefix: &str) -> usize {
    text.lines()
        .position(|l| l.trim_start().starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starts with {prefix:?}"))
        + 1
}

#[test]
fn cloth_values_name_their_line_and_key() {
    for (key, value) in [
        ("density", "0.0"),
        ("density", "-1.0"),
        ("density", "nan"),
        ("thickness", "inf"),
        ("thickness", "1e30"),
        ("velocity", "[nan, 0.0, 0.0]"),
        ("velocity", "[1e30, 0.0, 0.0]"),
        ("air_damping", "-1.0"),
    ] {
        let text = GOOD.replace(
            "[[cloth]]\n",
            &format!("[[cloth]]\nname = \"c\"\n{key} = {value}\n"),
        );
        let (line, k, m) = value_error(&text);
        assert_eq!(k, format!("cloth[0].{key}"), "{key} = {value}: {m}");
        assert_eq!(line, line_of(&text, key), "{key} = {value}: {m}");
        assert!(
            m.starts_with(&format!("scene.toml:{line}: key `cloth[0].{key}`")),
            "{m}"
        );
    }
}

#[test]
fn second_cloth_errors_point_into_the_second_cloth() {
    let text = format!(
        "{GOOD}\n[[cloth]]\nthickness = 0.004\n[cloth.grid]\nvertices = [5, 5]\n\n\
         [[cloth.pin]]\nvertices = [1]\n[[cloth.pin]]\nvertices = [200]\n"
    );
    let (line, key, m) = value_error(&text);
    assert_eq!(key, "cloth[1].pin[1].vertices", "{m}");
    assert_eq!(line, text.lines().count(), "{m}");
}

#[test]
fn one_by_one_grid_names_vertices_and_its_line() {
    let text = GOOD.replace("vertices = [5, 5]", "vertices = [1, 1]");
    let (line, key, m) = value_error(&text);
    assert_eq!(key, "cloth[0].grid.vertices", "{m}");
    assert_eq!(line, line_of(&text, "vertices"), "{m}");
    assert!(m.contains("vertices[0] = 1"), "{m}");
    let text = GOOD.replace("vertices = [5, 5]", "vertices = [5, 1]");
    let (_, key, m) = value_error(&text);
    assert_eq!(key, "cloth[0].grid.vertices", "{m}");
    assert!(m.contains("vertices[1] = 1"), "{m}");
}

#[test]
fn absurd_but_finite_values_are_refused_with_their_key() {
    for (from, to, expected) in [
        ("fps = 60", "fps = 1e-6", "fps"),
        ("fps = 60", "fps = 1e9", "fps"),
        (
            "fps = 60",
            "fps = 60\ngravity = [0.0, -1e30, 0.0]",
            "gravity",
        ),
        ("radius = 0.3", "radius = 1e-30", "collider[0].radius"),
        ("radius = 0.3", "radius = 1e30", "collider[0].radius"),
        (
            "radius = 0.3",
            "radius = 0.3\nposition = [1e30, 0, 0]",
            "collider[0].position",
        ),
        (
            "radius = 0.3",
            "radius = 0.3\nlinear_velocity = [0, 1e30, 0]",
            "collider[0].linear_velocity",
        ),
        (
            "radius = 0.3",
            "radius = 0.3\nangular_velocity = [0, 1e30, 0]",
            "collider[0].angular_velocity",
        ),
        (
            "bend = 1e-5",
            "bend = 1e-5\n[cloth.transform]\nscale = 1e30",
            "cloth[0].transform.scale",
        ),
        (
            "bend = 1e-5",
            "bend = 1e-5\n[cloth.transform]\nscale = 1e-30",
            "cloth[0].transform.scale",
        ),
        (
            "bend = 1e-5",
            "bend = 1e-5\n[cloth.transform]\ntranslation = [0, 1e30, 0]",
            "cloth[0].transform.translation",
        ),
        (
            "vertices = [5, 5]",
            "vertices = [5, 5]\ncentre = [0, 2e4, 0]",
            "cloth[0].grid.centre",
        ),
        (
            "fps = 60",
            "fps = 60\n[wind]\nvelocity = [1e30, 0, 0]",
            "wind.velocity",
        ),
        (
            "radius = 0.3",
            "radius = 0.3\n[[obstacle]]\nshape = \"box\"\nhalf_extents = [0.2, 0.02, 0.2]\n\
             thickness = 1e30",
            "obstacle[0].thickness",
        ),
    ] {
        let text = GOOD.replace(from, to);
        let (line, key, m) = value_error(&text);
        assert_eq!(key, expected, "{to}: {m}");
        let written = to
            .lines()
            .last()
            .expect("one line")
            .split('=')
            .next()
            .expect("key");
        assert_eq!(line, line_of(&text, written.trim()), "{to}: {m}");
    }
}

/// Writes `obj` as `<dir>/mesh.obj` and a scene using it as `[[cloth]] obj`; loads it.
fn obj_cloth_error(name: &str, obj: &str) -> String {
    let dir = std::env::temp_dir().join(format!("weft-obj-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("mesh.obj"), obj).expect("write");
    std::fs::write(
        dir.join("s.toml"),
        "fps = 60\n\n[[cloth]]\nobj = \"mesh.obj\"\n",
    )
    .expect("write");
    let e = scene::load(&dir.join("s.toml"))
        .and_then(|s| s.instantiate())
        .expect_err("an invalid OBJ cloth");
    std::fs::remove_dir_all(&dir).ok();
    let m = e.to_string();
    assert!(
        matches!(e, SceneError::Mesh { ref key, .. } if key == "cloth[0].obj"),
        "{m}"
    );
    assert!(m.contains("s.toml"), "{m}");
    m
}

#[test]
fn obj_mesh_errors_name_the_obj_file_line_and_face() {
    let quad = "v 0 0 0\nv 1 0 0\nv 1 0 1\nv 0 0 1\n";
    let m = obj_cloth_error("empty", "");
    assert!(m.contains("mesh.obj: mesh is empty"), "{m}");
    let m = obj_cloth_error("nofaces", quad);
    assert!(m.contains("mesh.obj: mesh is empty"), "{m}");
    // Face 1 (line 6) is three collinear corners.
    let m = obj_cloth_error("zeroarea", &format!("{quad}f 1 3 2\nf 1 2 2\n"));
    assert!(
        m.contains("mesh.obj:6: face 1: a vertex index is repeated"),
        "{m}"
    );
    let m = obj_cloth_error(
        "collinear",
        "v 0 0 0\nv 1 0 0\nv 2 0 0\nv 0 0 1\nf 1 4 2\nf 1 2 3\n",
    );
    assert!(m.contains("mesh.obj:6: face 1: zero area"), "{m}");
    // Three faces on edge 1-2; the third (line 8) makes it non-manifold.
    let m = obj_cloth_error(
        "nonmanifold",
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 -1 0\nv 0 0 1\nf 1 2 3\nf 2 1 4\nf 1 2 5\n",
    );
    assert!(m.contains("mesh.obj:8: edge 0-1"), "{m}");
    assert!(m.contains("non-manifold"), "{m}");
}

#[test]
fn cloth_errors_without_a_key_name_the_cloth_line() {
    let dir = std::env::temp_dir().join(format!("weft-obj-isolated-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // Vertex 3 belongs to no face: it would have no mass.
    std::fs::write(
        dir.join("mesh.obj"),
        "v 0 0 0\nv 1 0 0\nv 0 0 1\nv 1 0 1\nf 1 3 2\n",
    )
    .expect("write");
    let text = "fps = 60\n\n[[cloth]]\nobj = \"mesh.obj\"\n";
    std::fs::write(dir.join("s.toml"), text).expect("write");
    let e = scene::load(&dir.join("s.toml")).expect_err("an isolated vertex");
    std::fs::remove_dir_all(&dir).ok();
    let m = e.to_string();
    assert!(
        matches!(e, SceneError::Cloth { line: 3, ref key, .. } if key == "cloth[0]"),
        "{m}"
    );
    assert!(m.contains("s.toml:3: key `cloth[0]`: vertex 3"), "{m}");
}

#[test]
fn obj_sliver_is_refused_naming_file_line_and_face() {
    // A strip of 2 × 21 vertices, rows 5 cm apart, the eleventh row 1 µm after the tenth.
    let mut obj = String::new();
    for r in 0..21 {
        let y = if r <= 10 {
            0.05 * r as f32
        } else {
            0.05 * (r - 1) as f32 + 1e-6
        };
        obj.push_str(&format!("v 0 {y} 0\nv 0.05 {y} 0\n"));
    }
    for r in 0..20 {
        let a = 2 * r + 1;
        obj.push_str(&format!(
            "f {} {} {}\nf {} {} {}\n",
            a,
            a + 1,
            a + 3,
            a,
            a + 3,
            a + 2
        ));
    }
    let m = obj_cloth_error("sliver", &obj);
    // Faces 20 and 21 span the 1 µm row; face 20 is on line 42 + 20 + 1.
    assert!(m.contains("mesh.obj:63: face 20: a sliver"), "{m}");
}

#[test]
fn obj_uvs_scaled_out_of_range_are_refused() {
    let dir = std::env::temp_dir().join(format!("weft-obj-uv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(
        dir.join("mesh.obj"),
        "v 0 0 0\nv 1 0 0\nv 1 0 1\nv 0 0 1\nvt 0 0\nvt 1e30 0\nvt 1e30 1e30\nvt 0 1e30\n\
         f 1/1 3/3 2/2\nf 1/1 4/4 3/3\n",
    )
    .expect("write");
    let text = "fps = 60\n\n[[cloth]]\nobj = \"mesh.obj\"\n";
    std::fs::write(dir.join("s.toml"), text).expect("write");
    let e = scene::load(&dir.join("s.toml")).expect_err("uvs 1e30");
    std::fs::remove_dir_all(&dir).ok();
    let m = e.to_string();
    assert!(
        matches!(e, SceneError::Value { line: 4, ref key, .. } if key == "cloth[0].obj"),
        "{m}"
    );
    assert!(m.contains("uvs"), "{m}");
}

/// The Rust API refuses what the C ABI refuses, and a refused call leaves the state hash as it
/// was; the world steps afterwards.
mod rust_api {
    use super::*;
    use glam::{Quat, Vec3};
    use weft::collide::shapes::{Motion, Pose, Shape};
    use weft::world::{ClothDesc, ClothError, ColliderDesc, World};

    /// GOOD as a world with one cloth (its vertex 0 pinned) and one sphere, stepped once.
    fn world() -> World {
        let text = GOOD
            .replace(
                "vertices = [5, 5]",
                "vertices = [5, 5]\ncentre = [0.0, 0.5, 0.0]",
            )
            .replace(
                "[[collider]]",
                "[[cloth.pin]]\nvertices = [0]\n\n[[collider]]",
            );
        let mut w = load_and_build(&text).expect("valid");
        w.step(1.0 / 60.0).expect("a valid frame");
        w
    }

    fn cloth_desc() -> ClothDesc {
        load(GOOD)
            .expect("valid")
            .entities
            .query::<&ClothDesc>()
            .iter()
            .next()
            .expect("one cloth")
            .clone()
    }

    /// `f` fails on `w` and leaves its state hash unchanged.
    fn refused<T: std::fmt::Debug, E: std::fmt::Display>(
        w: &mut World,
        what: &str,
        f: impl FnOnce(&mut World) -> Result<T, E>,
    ) -> String {
        let before = w.state_hash();
        let e = f(w).expect_err(what);
        assert_eq!(w.state_hash(), before, "{what} changed the state");
        e.to_string()
    }

    #[test]
    fn refused_frame_lengths_change_nothing() {
        let mut w = world();
        for dt in [1e-45f32, 1e-38, 0.0, 1e-6, 1.0, 1e6, f32::NAN] {
            let m = refused(&mut w, &format!("dt {dt}"), |w| w.step(dt));
            assert!(m.contains("frame time step"), "{m}");
        }
        w.settings_mut().gravity = Vec3::new(0.0, -1e30, 0.0);
        let m = refused(&mut w, "gravity 1e30", |w| w.step(1.0 / 60.0));
        assert!(m.contains("gravity"), "{m}");
        w.settings_mut().gravity = Vec3::new(0.0, -9.81, 0.0);
        let before = w.state_hash();
        for _ in 0..3 {
            w.step(1.0 / 60.0)
                .expect("valid frames after the refused ones");
        }
        assert_ne!(w.state_hash(), before, "the cloth falls");
    }

    #[test]
    fn refused_cloths_name_the_value() {
        let mut w = world();
        for s in [1e30f32, 1e-30] {
            let mut d = cloth_desc();
            for p in &mut d.mesh.positions {
                *p *= s;
            }
            let m = refused(&mut w, "scaled positions", |w| w.add_cloth(d));
            assert!(m.starts_with("`positions`"), "{m}");
        }
        type Edit = fn(&mut ClothDesc);
        let cases: [(&str, Edit); 6] = [
            ("density", |d| d.density = 0.0),
            ("density", |d| d.density = f32::NAN),
            ("density", |d| d.density = 1e-30),
            ("thickness", |d| d.thickness = f32::INFINITY),
            ("thickness", |d| d.thickness = 1e30),
            ("velocity", |d| {
                d.initial_velocity = Vec3::new(1e30, 0.0, 0.0)
            }),
        ];
        for (name, edit) in cases {
            let mut d = cloth_desc();
            edit(&mut d);
            let before = w.state_hash();
            let e = w.add_cloth(d).expect_err(name);
            assert_eq!(w.state_hash(), before);
            match e {
                ClothError::Parameter { name: n, .. } => assert_eq!(n, name),
                ClothError::Range(r) => assert_eq!(r.what, name),
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    #[test]
    fn refused_edits_change_nothing() {
        let mut w = world();
        let far = Vec3::splat(1e30);
        refused(&mut w, "pin target 1e30", |w| {
            w.pin_vertex(w.cloth_ids()[0], 0, far, Vec3::ZERO)
        });
        refused(&mut w, "pin velocity 1e30", |w| {
            w.pin_vertex(w.cloth_ids()[0], 0, Vec3::ZERO, far)
        });
        let huge = Pose {
            translation: Vec3::ZERO,
            rotation: Quat::from_xyzw(1e30, 1e30, 1e30, 1e30),
        };
        refused(&mut w, "quaternion 1e30", |w| {
            w.set_collider_pose(w.collider_ids()[0], huge)
        });
        let away = Pose {
            translation: far,
            rotation: Quat::IDENTITY,
        };
        refused(&mut w, "pose 1e30", |w| {
            w.set_collider_pose(w.collider_ids()[0], away)
        });
        let fast = Motion {
            linear_velocity: far,
            angular_velocity: Vec3::ZERO,
        };
        refused(&mut w, "velocity 1e30", |w| {
            w.set_collider_motion(w.collider_ids()[0], fast)
        });
        for radius in [1e-30f32, 1e30] {
            let m = refused(&mut w, "sphere radius", |w| {
                w.add_collider(ColliderDesc {
                    shape: Shape::Sphere { radius },
                    pose: Pose::IDENTITY,
                    motion: Motion::default(),
                    friction: 0.3,
                })
            });
            assert!(m.contains("radius"), "{m}");
        }
        let masses = vec![1e-30f32; w.cloths()[0].state().len()];
        refused(&mut w, "masses 1e-30", |w| {
            w.set_cloth_masses(w.cloth_ids()[0], &masses)
        });
        let pose_before = w.colliders()[0].pose();
        w.step(1.0 / 60.0)
            .expect("valid frame after the refused edits");
        assert_eq!(
            w.colliders()[0].pose(),
            pose_before,
            "no refused pose was stored"
        );
        assert!(w.cloths()[0].state().is_finite());
    }
}

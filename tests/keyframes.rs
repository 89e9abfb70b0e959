//! Obstacle meshes from scene files (OBJ or generated) and keyframed motion.
//!
//! A cloth falls onto a small table (a box read from an OBJ file) and drapes over its edge; a
//! keyframed capsule arm (an `[[obstacle]]` generated mesh) comes down through the overhanging flap
//! beside the table and sweeps it outward while turning. The arm lands on its track at every frame,
//! and the independent checker finds no intersection at any frame.

mod support;

use std::path::Path;

use weft::collide::track::{Keyframe, Track, pose_from_euler_deg};
use weft::scene::Scene;

/// A unit cube (half extent 0.5) as OBJ text, outward faces.
const CUBE_OBJ: &str = "\
v -0.5 -0.5 -0.5\nv 0.5 -0.5 -0.5\nv 0.5 0.5 -0.5\nv -0.5 0.5 -0.5\n\
v -0.5 -0.5 0.5\nv 0.5 -0.5 0.5\nv 0.5 0.5 0.5\nv -0.5 0.5 0.5\n\
f 1 3 2\nf 1 4 3\nf 5 6 7\nf 5 7 8\nf 1 2 6\nf 1 6 5\n\
f 4 8 7\nf 4 7 3\nf 1 5 8\nf 1 8 4\nf 2 3 7\nf 2 7 6\n";

/// The arm's keyframes: (time s, position, rotation in degrees).
const KEYS: [(f64, [f32; 3], [f32; 3]); 3] = [
    (0.0, [-0.22, 0.35, 0.0], [90.0, 0.0, 0.0]),
    (0.4, [-0.22, -0.03, 0.0], [90.0, 0.0, 0.0]),
    (1.2, [-0.4, -0.03, 0.0], [90.0, 30.0, 0.0]),
];

fn scene_text() -> String {
    let mut keys = String::new();
    for (t, p, r) in KEYS {
        keys.push_str(&format!(
            "[[obstacle.keyframes]]\ntime = {t}\nposition = {p:?}\nrotation_deg = {r:?}\n"
        ));
    }
    format!(
        r#"
        frames = 90
        [[cloth]]
        thickness = 0.004
        [cloth.grid]
        vertices = [17, 17]
        size = [0.5, 0.5]
        centre = [0.0, 0.006, 0.0]
        [cloth.collision]
        self_collision = true
        ccd_rounds = 10

        [[obstacle]]
        obj = "cube.obj"
        scale = 0.3
        position = [0.0, -0.15, 0.0]
        friction = 0.4

        [[obstacle]]
        shape = "capsule"
        radius = 0.04
        half_length = 0.15
{keys}
        "#
    )
}

#[test]
fn keyframed_arm_over_an_obj_table_is_intersection_free_every_frame() {
    let dir = std::env::temp_dir().join(format!("weft-keyframes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("cube.obj"), CUBE_OBJ).expect("write the OBJ");
    let scene =
        Scene::from_toml(&scene_text(), &dir.join("arm.toml")).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(world.obstacles().len(), 2);
    let track = Track::new(
        KEYS.iter()
            .map(|&(time, p, r)| Keyframe {
                time,
                pose: pose_from_euler_deg(p, r),
            })
            .collect(),
    )
    .expect("valid keys");
    let mut lowest_on_table = f32::INFINITY;
    for frame in 0..scene.frames {
        world.step(scene.dt()).unwrap_or_else(|e| panic!("{e}"));
        // The arm is on its track at the end of every frame.
        let t = world.time();
        let (got, want) = (world.obstacles()[1].pose(), track.pose_at(t));
        assert!(
            (got.translation - want.translation).length() < 1e-4
                && got.rotation.dot(want.rotation).abs() > 1.0 - 1e-5,
            "frame {frame}: arm at {got:?}, track says {want:?}"
        );
        support::assert_world_clean(&world, &format!("frame {frame}"));
        let cloth = &world.cloths()[0];
        // The cloth never sinks into the table top (y = 0, |x|, |z| < 0.15).
        for p in cloth.state().positions() {
            if p.x.abs() < 0.14 && p.z.abs() < 0.14 {
                lowest_on_table = lowest_on_table.min(p.y);
            }
        }
    }
    println!("lowest cloth vertex over the OBJ table top: {lowest_on_table:.4} m");
    assert!(lowest_on_table > -1e-3, "cloth sank to {lowest_on_table}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_obstacle_sections_name_the_key() {
    for (text, key) in [
        ("[[obstacle]]\nshape = \"plane\"\n", "obstacle[0].shape"),
        ("[[obstacle]]\nshape = \"sphere\"\n", "obstacle[0].radius"),
        ("[[obstacle]]\nradius = 1.0\n", "obstacle[0].obj"),
        (
            "[[obstacle]]\nshape = \"sphere\"\nradius = 0.1\n[[obstacle.keyframes]]\ntime = 1.0\n[[obstacle.keyframes]]\ntime = 0.5\n",
            "obstacle[0].keyframes[1]",
        ),
        (
            "[[collider]]\nshape = \"sphere\"\nradius = 0.1\n[[collider.keyframes]]\ntime = nan\n",
            "collider[0].keyframes[0]",
        ),
    ] {
        let Err(err) = Scene::from_toml(text, Path::new("bad.toml")) else {
            panic!("accepted: {text}");
        };
        let msg = err.to_string();
        assert!(msg.contains(key), "{key} not in: {msg}");
    }
}

/// Mean height of a small cloth after it settles on a box obstacle of the given thickness.
fn rest_height(obstacle_thickness: f32) -> f32 {
    let text = format!(
        r#"
        frames = 60
        [[cloth]]
        thickness = 0.004
        [cloth.grid]
        vertices = [9, 9]
        size = [0.2, 0.2]
        centre = [0.0, 0.03, 0.0]

        [[obstacle]]
        shape = "box"
        half_extents = [0.3, 0.1, 0.3]
        position = [0.0, -0.1, 0.0]
        thickness = {obstacle_thickness}
        "#
    );
    let scene = Scene::from_toml(&text, Path::new("thick.toml")).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    for frame in 0..scene.frames {
        world.step(scene.dt()).unwrap_or_else(|e| panic!("{e}"));
        support::assert_world_clean(
            &world,
            &format!("thickness {obstacle_thickness}, frame {frame}"),
        );
    }
    let p = world.cloths()[0].state().positions();
    p.iter().map(|q| q.y).sum::<f32>() / p.len() as f32
}

#[test]
fn obstacle_thickness_keeps_the_cloth_farther_off() {
    let thin = rest_height(0.0);
    let thick = rest_height(0.02);
    println!("cloth rest height over a box: thickness 0 -> {thin:.4} m, 0.02 -> {thick:.4} m");
    assert!(thin > -1e-3, "cloth sank into the box: {thin}");
    assert!(
        thick > thin + 0.005,
        "a 2 cm obstacle thickness should lift the cloth: {thin} vs {thick}"
    );
}

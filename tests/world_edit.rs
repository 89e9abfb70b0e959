//! World edits after creation (the `impl World` block the C ABI builds on):
//! removing an object leaves exactly the world that never had it, a moving
//! pin target is reached at the end of the frame, `motion_between` inverts
//! `Motion::advance`, and replacing masses by the same masses changes nothing.

use std::path::Path;

use glam::{Quat, Vec3};
use weft::collide::shapes::Pose;
use weft::scene::Scene;
use weft::world::{EditError, World, motion_between};

fn world(text: &str) -> (World, f32) {
    let scene = Scene::from_toml(text, Path::new("edit.toml")).unwrap_or_else(|e| panic!("{e}"));
    (
        scene.instantiate().unwrap_or_else(|e| panic!("{e}")),
        scene.dt(),
    )
}

fn steps(w: &mut World, dt: f32, n: usize) {
    for _ in 0..n {
        w.step(dt).unwrap_or_else(|e| panic!("{e}"));
    }
}

const CLOTH: &str = r#"
[[cloth]]
[cloth.grid]
vertices = [9, 9]
size = [0.4, 0.4]
centre = [0.0, 0.3, 0.0]
"#;

const BALL: &str = r#"
[[collider]]
shape = "sphere"
radius = 0.1
position = [0.0, 0.1, 0.0]
"#;

const BOX: &str = r#"
[[collider]]
shape = "box"
half_extents = [0.3, 0.05, 0.3]
position = [0.0, -0.05, 0.0]
"#;

#[test]
fn removing_a_collider_leaves_the_world_that_never_had_it() {
    let (mut edited, dt) = world(&format!("{CLOTH}{BALL}{BOX}"));
    let (mut reference, _) = world(&format!("{CLOTH}{BOX}"));
    let ball = edited.collider_ids()[0];
    let kept = edited.collider_ids()[1];
    edited.remove_collider(ball).unwrap();
    assert_eq!(edited.colliders().len(), 1);
    assert_eq!(edited.obstacles().len(), 1);
    assert_eq!(edited.colliders()[0].obstacle(), 0);
    assert_eq!(
        edited.collider_ids(),
        &[kept],
        "the other collider keeps its id"
    );
    steps(&mut edited, dt, 40);
    steps(&mut reference, dt, 40);
    assert_eq!(edited.state_hash(), reference.state_hash());
    assert_eq!(
        edited.remove_collider(ball),
        Err(EditError::NoCollider { collider: ball }),
        "a removed collider's id is refused"
    );
}

#[test]
fn removing_a_cloth_leaves_the_world_that_never_had_it() {
    let far = CLOTH.replace("[0.0, 0.3, 0.0]", "[5.0, 0.3, 0.0]");
    let (mut edited, dt) = world(&format!("{far}{CLOTH}{BOX}"));
    let (mut reference, _) = world(&format!("{CLOTH}{BOX}"));
    let far_cloth = edited.cloth_ids()[0];
    let kept = edited.cloth_ids()[1];
    edited.remove_cloth(far_cloth).unwrap();
    assert_eq!(edited.cloth_ids(), &[kept], "the other cloth keeps its id");
    assert!(edited.cloth(far_cloth).is_none());
    assert!(matches!(
        edited.remove_cloth(far_cloth),
        Err(EditError::NoCloth { .. })
    ));
    steps(&mut edited, dt, 20);
    steps(&mut reference, dt, 20);
    assert_eq!(edited.state_hash(), reference.state_hash());
}

#[test]
fn the_same_masses_change_nothing_and_bad_masses_are_refused() {
    let (mut edited, dt) = world(&format!("{CLOTH}{BOX}"));
    let (mut reference, _) = world(&format!("{CLOTH}{BOX}"));
    let cloth = edited.cloth_ids()[0];
    let masses = edited.cloths()[0].state().masses().to_vec();
    edited.set_cloth_masses(cloth, &masses).unwrap();
    let mut bad = masses.clone();
    bad[4] = f32::NAN;
    assert!(edited.set_cloth_masses(cloth, &bad).is_err());
    assert!(edited.set_cloth_masses(cloth, &masses[1..]).is_err());
    steps(&mut edited, dt, 20);
    steps(&mut reference, dt, 20);
    assert_eq!(edited.state_hash(), reference.state_hash());
}

#[test]
fn a_moving_pin_target_is_reached_at_the_end_of_the_frame() {
    let (mut w, dt) = world(CLOTH);
    let cloth = w.cloth_ids()[0];
    let start = w.cloths()[0].state().positions()[0];
    let velocity = Vec3::new(0.3, 0.6, -0.2);
    w.pin_vertex(cloth, 0, start, velocity).unwrap();
    steps(&mut w, dt, 1);
    let end = w.cloths()[0].state().positions()[0];
    let want = start + velocity * dt;
    assert!((end - want).length() < 1e-6, "pin at {end}, target {want}");
    // Re-pinning keeps one entry; unpinning frees the vertex.
    w.pin_vertex(cloth, 0, end, Vec3::ZERO).unwrap();
    assert_eq!(w.cloths()[0].pins().len(), 1);
    w.unpin_vertex(cloth, 0).unwrap();
    assert!(!w.cloths()[0].state().is_pinned(0));
    assert!(matches!(
        w.unpin_vertex(cloth, 0),
        Err(EditError::NotPinned { .. })
    ));
    assert!(matches!(
        w.pin_vertex(cloth, 81, end, Vec3::ZERO),
        Err(EditError::VertexOutOfRange {
            vertex: 81,
            count: 81,
            ..
        })
    ));
    assert!(w.pin_vertex(cloth, 0, Vec3::NAN, Vec3::ZERO).is_err());
}

#[test]
fn motion_between_inverts_advance() {
    let dt = 1.0 / 60.0;
    let from = Pose {
        translation: Vec3::new(0.1, -0.2, 0.3),
        rotation: Quat::from_euler(glam::EulerRot::XYZ, 0.3, -1.1, 2.0),
    };
    for (axis, angle) in [
        (Vec3::Y, 0.0),
        (Vec3::Y, 0.05),
        (Vec3::new(1.0, 2.0, -0.5).normalize(), 1.3),
        // More than half a turn: the shorter rotation the other way.
        (Vec3::X, 3.5),
    ] {
        let to = Pose {
            translation: from.translation + Vec3::new(0.02, 0.01, -0.03),
            rotation: (Quat::from_axis_angle(axis, angle) * from.rotation).normalize(),
        };
        let reached = motion_between(&from, &to, dt).advance(&from, dt);
        assert!((reached.translation - to.translation).length() < 1e-5);
        let dot = reached.rotation.dot(to.rotation).abs();
        assert!(
            dot > 1.0 - 1e-5,
            "angle {angle}: rotations differ (|dot| {dot})"
        );
    }
}

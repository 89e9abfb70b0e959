//! A cloth's state set outright (a teleport) and its material changed between frames:
//! after a teleport the cloth's future depends only on the state it was given; an analytic
//! collider pushes out a cloth teleported into it; a softer material takes effect and the
//! same material changes nothing; bad values are refused with the world unchanged.

use std::path::Path;

use glam::Vec3;
use weft::scene::Scene;
use weft::world::{ClothId, EditError, World};

fn world(text: &str) -> (World, f32) {
    let scene =
        Scene::from_toml(text, Path::new("teleport.toml")).unwrap_or_else(|e| panic!("{e}"));
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

const SCENE: &str = r#"
[[cloth]]
[cloth.grid]
vertices = [9, 9]
size = [0.4, 0.4]
centre = [0.0, 0.3, 0.0]

[[collider]]
shape = "sphere"
radius = 0.1
position = [0.0, 0.1, 0.0]

[[collider]]
shape = "box"
half_extents = [0.3, 0.05, 0.3]
position = [0.0, -0.05, 0.0]
"#;

fn state(w: &World) -> (Vec<Vec3>, Vec<Vec3>) {
    let s = w.cloths()[0].state();
    (s.positions().to_vec(), s.velocities().to_vec())
}

#[test]
fn after_a_teleport_the_future_depends_only_on_the_state_given() {
    let (mut a, dt) = world(SCENE);
    steps(&mut a, dt, 15);
    let (x, v) = state(&a);
    steps(&mut a, dt, 15);
    a.set_cloth_state(a.cloth_ids()[0], Some(&x), Some(&v))
        .unwrap();
    assert_eq!(state(&a), (x.clone(), v.clone()));
    steps(&mut a, dt, 15);

    let (mut b, _) = world(SCENE);
    b.set_cloth_state(b.cloth_ids()[0], Some(&x), Some(&v))
        .unwrap();
    steps(&mut b, dt, 15);
    assert_eq!(a.state_hash(), b.state_hash());
}

/// Vertices of `x` deeper than 1 mm inside the ball.
fn inside_ball(x: &[Vec3]) -> Vec<usize> {
    let centre = Vec3::new(0.0, 0.1, 0.0);
    (0..x.len())
        .filter(|&i| (x[i] - centre).length() < 0.1 - 1e-3)
        .collect()
}

#[test]
fn a_cloth_teleported_into_a_ball_stays_caught_until_teleported_out() {
    let (mut w, dt) = world(SCENE);
    let (start, _) = state(&w);
    // Across the ball, a little off its centre: 11 vertices land inside.
    let through: Vec<Vec3> = start
        .iter()
        .map(|p| Vec3::new(p.x + 0.013, 0.12, p.z + 0.007))
        .collect();
    let caught = inside_ball(&through);
    assert_eq!(caught.len(), 11);
    let still = vec![Vec3::ZERO; through.len()];
    w.set_cloth_state(w.cloth_ids()[0], Some(&through), Some(&still))
        .unwrap();
    for _ in 0..20 {
        steps(&mut w, dt, 1);
        let (x, v) = state(&w);
        // Never undone: every vertex that landed inside is still inside.
        let inside = inside_ball(&x);
        assert!(caught.iter().all(|i| inside.contains(i)), "{inside:?}");
        assert!(x.iter().chain(&v).all(|p| p.is_finite()));
    }
    // Teleported back above the ball, the cloth falls onto it and stays outside.
    w.set_cloth_state(w.cloth_ids()[0], Some(&start), Some(&still))
        .unwrap();
    for _ in 0..30 {
        steps(&mut w, dt, 1);
        assert!(inside_ball(&state(&w).0).is_empty());
    }
}

#[test]
fn a_softer_material_takes_effect_and_the_same_material_changes_nothing() {
    let (mut same, dt) = world(SCENE);
    let (mut reference, _) = world(SCENE);
    let (mut soft, _) = world(SCENE);
    let m = *same.cloths()[0]
        .system()
        .expect("a Baraff–Witkin cloth")
        .settings();
    same.set_cloth_material(same.cloth_ids()[0], m.membrane, m.bend)
        .unwrap();
    let mut membrane = m.membrane;
    membrane.stretch_u /= 50.0;
    membrane.stretch_v /= 50.0;
    membrane.shear /= 50.0;
    soft.set_cloth_material(soft.cloth_ids()[0], membrane, m.bend)
        .unwrap();
    assert_eq!(
        soft.cloths()[0]
            .system()
            .expect("a Baraff–Witkin cloth")
            .settings()
            .membrane,
        membrane
    );
    steps(&mut same, dt, 30);
    steps(&mut reference, dt, 30);
    steps(&mut soft, dt, 30);
    assert_eq!(same.state_hash(), reference.state_hash());
    let (stiff_strain, soft_strain) = (
        reference.cloths()[0].max_strain(),
        soft.cloths()[0].max_strain(),
    );
    assert!(
        soft_strain > 2.0 * stiff_strain,
        "strain {soft_strain} soft, {stiff_strain} as created"
    );
}

#[test]
fn bad_states_and_materials_are_refused_and_change_nothing() {
    let (mut w, dt) = world(SCENE);
    steps(&mut w, dt, 3);
    let before = w.state_hash();
    let (x, v) = state(&w);
    let short = &x[1..];
    assert!(matches!(
        w.set_cloth_state(w.cloth_ids()[0], Some(short), None),
        Err(EditError::Value {
            what: "positions",
            ..
        })
    ));
    let mut far = x.clone();
    far[7].y = 2e4;
    assert!(
        w.set_cloth_state(w.cloth_ids()[0], Some(&far), Some(&v))
            .is_err()
    );
    let mut nan = v.clone();
    nan[3].x = f32::NAN;
    assert!(
        w.set_cloth_state(w.cloth_ids()[0], Some(&x), Some(&nan))
            .is_err()
    );
    let mut fast = v.clone();
    fast[3].x = 101.0;
    let e = w
        .set_cloth_state(w.cloth_ids()[0], None, Some(&fast))
        .unwrap_err();
    assert!(e.to_string().contains("vertex 3"), "{e}");
    let never_issued = ClothId::from_parts(7, 1);
    assert_eq!(
        w.set_cloth_state(never_issued, Some(&x), None),
        Err(EditError::NoCloth {
            cloth: never_issued
        })
    );
    let m = *w.cloths()[0]
        .system()
        .expect("a Baraff–Witkin cloth")
        .settings();
    let mut bad = m.membrane;
    bad.shear = -1.0;
    assert!(w.set_cloth_material(w.cloth_ids()[0], bad, m.bend).is_err());
    let mut bend = m.bend;
    bend.damping = f64::NAN;
    assert!(
        w.set_cloth_material(w.cloth_ids()[0], m.membrane, bend)
            .is_err()
    );
    assert_eq!(
        w.cloths()[0]
            .system()
            .expect("a Baraff–Witkin cloth")
            .settings()
            .membrane,
        m.membrane
    );
    assert_eq!(w.state_hash(), before);
}

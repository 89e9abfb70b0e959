//! The cloths of a world collide with each other (`docs/methods/cloth-layers.md`): layered
//! samples checked by the independent checker at every frame (no two triangles of different
//! cloths intersect, no cloth intersects itself, an obstacle or a collider), the same answer
//! for any thread count, cloth pairs told not to collide left alone, two isometric cloths
//! sharing their steps' collision stage, and an isometric cloth refused next to a
//! Baraff–Witkin one it could touch.

mod support;

use std::path::Path;

use glam::{Vec2, Vec3};
use weft::collide::resolve::CollisionSettings;
use weft::integrate::implicit_euler::BwSettings;
use weft::mesh::{GridSpec, grid};
use weft::scene::Scene;
use weft::world::{ClothDesc, StepError, World};

fn load(sample: &str) -> (World, f32, u32) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(sample);
    let scene = weft::scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    (world, scene.dt(), scene.frames)
}

/// Steps `world` for `frames`, checking every frame; returns the frames whose stats showed a
/// shared collision stage at work (cross-cloth contacts are among its proximity pairs).
fn check_every_frame(sample: &str, world: &mut World, dt: f32, frames: u32) {
    for frame in 0..frames {
        let stats = world.step(dt).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            stats.last_resorts, 0,
            "{sample} frame {frame}: last resort taken"
        );
        assert_eq!(stats.layer_pairs_unsupported, 0, "{sample} frame {frame}");
        if let Err(e) = support::check_world(world, 1e-3) {
            panic!("{sample} frame {frame}: {e}");
        }
    }
}

/// The lowest point of each cloth's middle vertex column, in cloth order.
fn centre_heights(world: &World) -> Vec<f32> {
    world
        .cloths()
        .iter()
        .map(|c| {
            let x = c.state().positions();
            x[x.len() / 2].y
        })
        .collect()
}

fn three_sheets(frames: u32) {
    let (mut world, dt, _) = load("layers.toml");
    check_every_frame("layers", &mut world, dt, frames);
    // They landed on each other in order: each sheet's centre rests on the one below it,
    // within a few thicknesses (5 cm apart at the start).
    let h = centre_heights(&world);
    for k in 1..h.len() {
        let gap = h[k] - h[k - 1];
        assert!(
            gap > 0.0 && gap < 0.03,
            "sheet {k} centre {:.4} m above sheet {} ({gap:.4} m): {h:?}",
            h[k],
            k - 1
        );
    }
}

#[test]
fn three_stacked_sheets_never_cross_on_the_sphere() {
    three_sheets(45);
}

#[test]
#[ignore = "the whole sample (180 frames); run with --ignored"]
fn three_stacked_sheets_never_cross_in_the_whole_sample() {
    three_sheets(180);
}

fn cape_over_sleeve(frames: u32) {
    let (mut world, dt, _) = load("cape-sleeve.toml");
    check_every_frame("cape-sleeve", &mut world, dt, frames);
    // Still on the arm (1 m up), not fallen to the floor.
    let cape = world.cloths()[1].state().positions();
    let lowest = cape.iter().map(|p| p.y).fold(f32::INFINITY, f32::min);
    assert!(
        lowest > 0.6,
        "the cape fell off the arm: lowest {lowest:.4} m"
    );
}

/// The height of the highest of `triangles` over the horizontal point `(x, z)` (m), by
/// barycentric interpolation; `-inf` when none lies over it.
fn surface_height_under(positions: &[Vec3], triangles: &[[u32; 3]], x: f32, z: f32) -> f32 {
    let mut highest = f32::NEG_INFINITY;
    for t in triangles {
        let [a, b, c] = t.map(|k| positions[k as usize]);
        let det = (b.z - c.z) * (a.x - c.x) + (c.x - b.x) * (a.z - c.z);
        if det.abs() < 1e-12 {
            continue;
        }
        let la = ((b.z - c.z) * (x - c.x) + (c.x - b.x) * (z - c.z)) / det;
        let lb = ((c.z - a.z) * (x - c.x) + (a.x - c.x) * (z - c.z)) / det;
        let lc = 1.0 - la - lb;
        if la >= 0.0 && lb >= 0.0 && lc >= 0.0 {
            highest = highest.max(la * a.y + lb * b.y + lc * c.y);
        }
    }
    highest
}

/// Through the arm's first swing up, the cape still draped over the sleeve's top.
fn cape_rests_on_sleeve(frames: u32) {
    let (mut world, dt, _) = load("cape-sleeve.toml");
    check_every_frame("cape-sleeve", &mut world, dt, frames);
    // The cape rests on the sleeve: its middle vertex above the sleeve's upper surface straight
    // under it, by less than 3 cm, and its edges hang lower than that. The surface is read off
    // the sleeve's triangles: the highest sleeve vertex within 1 cm horizontally can miss the
    // top of a tube whose vertices are 1.4 cm apart around and 2 cm along, and find its
    // underside 19 cm lower.
    let cape = world.cloths()[1].state().positions();
    let middle = cape[cape.len() / 2];
    let sleeve = &world.cloths()[0];
    let under = surface_height_under(
        sleeve.state().positions(),
        sleeve.triangles(),
        middle.x,
        middle.z,
    );
    let lowest = cape.iter().map(|p| p.y).fold(f32::INFINITY, f32::min);
    assert!(
        middle.y > under - 0.006 && middle.y < under + 0.03,
        "cape middle at {:.4} m, sleeve under it at {under:.4} m",
        middle.y
    );
    assert!(
        lowest < under - 0.08,
        "the cape does not drape: lowest {lowest:.4} m"
    );
}

/// Through the arm's first swing up (it starts at 0.5 s and is highest at 1.25 s).
#[test]
fn a_cape_over_a_sleeve_on_a_swinging_arm_never_crosses_it() {
    cape_rests_on_sleeve(90);
}

#[test]
#[ignore = "the whole sample (240 frames); run with --ignored"]
fn a_cape_over_a_sleeve_never_crosses_it_in_the_whole_sample() {
    cape_over_sleeve(240);
}

/// Two sheets stacked 5 cm apart, the upper one 10 cm wider, over the sphere.
fn two_sheets(apart: bool) -> String {
    let sheet = |name: &str, y: f32, size: f32, extra: &str| {
        format!(
            r#"
[[cloth]]
name = "{name}"
{extra}
[cloth.grid]
vertices = [17, 17]
size = [{size}, {size}]
centre = [0.0, {y}, 0.0]
[cloth.collision]
self_collision = true
strain_limit = 0.05
ccd_rounds = 10
"#
        )
    };
    let mut text = String::from("frames = 40\nsubsteps = 2\n");
    text += &sheet("lining", 0.4, 0.8, "");
    let extra = if apart {
        "no_collide_with = [\"lining\"]"
    } else {
        ""
    };
    text += &sheet("shell", 0.45, 0.9, extra);
    text += "[[collider]]\nshape = \"sphere\"\nradius = 0.3\n";
    text
}

fn run_text(text: &str, threads: usize) -> (World, Vec<u64>) {
    let scene = Scene::from_toml(text, Path::new("two.toml")).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    world.set_threads(threads).unwrap_or_else(|e| panic!("{e}"));
    let hashes = (0..scene.frames)
        .map(|_| {
            world.step(scene.dt()).unwrap_or_else(|e| panic!("{e}"));
            world.state_hash()
        })
        .collect();
    (world, hashes)
}

/// The same two sheets cross when told not to collide (the check above can fail), and do not
/// when they collide.
#[test]
fn sheets_told_not_to_collide_pass_through_each_other() {
    let (world, _) = run_text(&two_sheets(true), 1);
    assert_eq!(
        world.cloths_collide(world.cloth_ids()[0], world.cloth_ids()[1]),
        Some(false)
    );
    assert!(
        !support::intersections_between(&world, 0, 1).is_empty(),
        "the shell should have fallen through its lining"
    );
    let (world, _) = run_text(&two_sheets(false), 1);
    assert_eq!(
        world.cloths_collide(world.cloth_ids()[0], world.cloth_ids()[1]),
        Some(true)
    );
    if let Err(e) = support::check_world(&world, 1e-3) {
        panic!("colliding sheets: {e}");
    }
}

#[test]
fn layered_cloths_step_the_same_on_any_thread_count() {
    let (_, reference) = run_text(&two_sheets(false), 1);
    for threads in [2, 4] {
        let (_, hashes) = run_text(&two_sheets(false), threads);
        assert_eq!(reference, hashes, "{threads} threads differ from 1 thread");
    }
}

/// Two small isometric sheets (9 × 9 base grids, 0.4 m) stacked 3 cm apart over a sphere
/// (`apart`: told not to collide).
fn two_isometric_sheets(frames: u32, apart: bool) -> String {
    let mut t = format!(
        r#"frames = {frames}
substeps = 2
[solver]
model = "isometric"
[solver.isometric]
strain_tolerance = 1e-3
newton_max_iterations = 20
contact_compliance = 1e-4
contact_margin = 0.01
contact_rounds = 2
"#
    );
    for (name, y) in [("lower", 0.175), ("upper", 0.205)] {
        let extra = if apart && name == "upper" {
            "no_collide_with = [\"lower\"]\n"
        } else {
            ""
        };
        t += &format!(
            r#"[[cloth]]
name = "{name}"
{extra}density = 0.1
thickness = 0.004
friction = 0.3
[cloth.collision]
self_collision = true
[cloth.grid]
vertices = [9, 9]
size = [0.4, 0.4]
centre = [0.0, {y}, 0.0]
plane = "xz"
"#
        );
    }
    t += "[[collider]]\nshape = \"sphere\"\nradius = 0.15\nfriction = 0.3\n";
    t
}

/// Two isometric cloths share the collision stage of their steps: dropped one on the other
/// onto a sphere, no triangle of one ever crosses a triangle of the other (nor itself, nor the
/// sphere), and the upper one comes to rest on the lower one.
#[test]
fn two_isometric_sheets_dropped_on_each_other_never_cross() {
    let text = two_isometric_sheets(20, false);
    let scene = Scene::from_toml(&text, Path::new("iso.toml")).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    world.set_threads(1).unwrap_or_else(|e| panic!("{e}"));
    let mut touched = false;
    for frame in 0..scene.frames {
        let stats = world.step(scene.dt()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stats.layer_pairs_unsupported, 0, "frame {frame}");
        assert_eq!(stats.last_resorts, 0, "frame {frame}: last resort taken");
        if let Err(e) = support::check_world(&world, 1e-3) {
            panic!("frame {frame}: {e}");
        }
        touched |= stats.proximity_pairs > 0;
    }
    assert!(touched, "the sheets never came close");
    let h = centre_heights(&world);
    let gap = h[1] - h[0];
    assert!(
        gap > 0.0 && gap < 0.02,
        "upper centre {gap:.4} m above the lower one: {h:?}"
    );
}

/// The same pair told not to collide falls through itself (the check above can fail), and a
/// shared isometric stage gives the same state on any thread count.
#[test]
fn isometric_layers_step_the_same_on_any_thread_count_and_can_be_kept_apart() {
    let run = |apart: bool, threads: usize| {
        let text = two_isometric_sheets(12, apart);
        let scene =
            Scene::from_toml(&text, Path::new("iso.toml")).unwrap_or_else(|e| panic!("{e}"));
        let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
        world.set_threads(threads).unwrap_or_else(|e| panic!("{e}"));
        for _ in 0..scene.frames {
            world.step(scene.dt()).unwrap_or_else(|e| panic!("{e}"));
        }
        world
    };
    let one = run(false, 1);
    let two = run(false, 2);
    assert_eq!(
        one.state_hash(),
        two.state_hash(),
        "2 threads differ from 1"
    );
    let apart = run(true, 1);
    assert!(
        !support::intersections_between(&apart, 0, 1).is_empty(),
        "the upper sheet should have fallen through the lower one"
    );
}

/// A world of the lower isometric sheet of [`two_isometric_sheets`] and a Baraff–Witkin sheet
/// 1 cm above it (`apart`: told not to collide with it).
fn isometric_under_baraff_witkin(apart: bool) -> World {
    let text = two_isometric_sheets(1, false);
    let lower = text
        .find("[[cloth]]\nname = \"upper\"")
        .expect("the upper sheet's table");
    let collider = text.find("[[collider]]").expect("the sphere's table");
    let text = format!("{}{}", &text[..lower], &text[collider..]);
    let scene = Scene::from_toml(&text, Path::new("mixed.toml")).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    let mesh = grid(&GridSpec {
        nx: 9,
        ny: 9,
        size: Vec2::splat(0.4),
        centre: Vec3::new(0.0, 0.185, 0.0),
        ..GridSpec::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let upper = world
        .add_cloth(ClothDesc {
            name: "upper".into(),
            mesh,
            density: 0.1,
            thickness: 0.004,
            friction: 0.3,
            air_damping: 0.0,
            model: BwSettings::default(),
            pins: Vec::new(),
            pin_velocity: Vec3::ZERO,
            initial_velocity: Vec3::ZERO,
            collision: CollisionSettings::default(),
        })
        .unwrap_or_else(|e| panic!("{e}"));
    if apart {
        world
            .set_cloths_collide(world.cloth_ids()[0], upper, false)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    world
}

/// An isometric and a Baraff–Witkin cloth cannot share a collision stage: a frame in which they
/// could touch is refused before anything changes, naming the pair, unless the pair is told
/// not to collide.
#[test]
fn an_isometric_cloth_next_to_a_baraff_witkin_one_is_refused_unless_kept_apart() {
    let mut world = isometric_under_baraff_witkin(false);
    let before = world.state_hash();
    match world.step(1.0 / 60.0) {
        Err(
            e @ StepError::UnsupportedLayers {
                first: 0,
                second: 1,
                ..
            },
        ) => {
            let message = e.to_string();
            assert!(
                message.contains("(lower)") && message.contains("(upper)"),
                "{message}"
            );
        }
        other => panic!("expected UnsupportedLayers, got {other:?}"),
    }
    assert_eq!(
        world.state_hash(),
        before,
        "a refused frame changes nothing"
    );
    let mut world = isometric_under_baraff_witkin(true);
    world
        .step(1.0 / 60.0)
        .unwrap_or_else(|e| panic!("kept apart: {e}"));
}

#[test]
fn a_scene_naming_an_unknown_cloth_is_refused() {
    let text = two_sheets(true).replace("[\"lining\"]", "[\"coat\"]");
    let err = Scene::from_toml(&text, Path::new("two.toml")).expect_err("unknown name");
    assert!(err.to_string().contains("coat"), "{err}");
}

//! Extreme parameters either run stable and intersection-free or
//! are rejected at cloth creation with an error that says why.

mod support;

use std::path::Path;

use support::{TriSoup, find_intersections};
use weft::scene::Scene;
use weft::world::World;

/// A 17 × 17 grid, 0.6 m wide, over a sphere of radius 0.3 m; `{extra}`
/// lines go into the top level, `{cloth}` into `[[cloth]]`, `{material}`
/// into `[cloth.material]`.
fn scene(top: &str, cloth: &str, material: &str) -> String {
    format!(
        r#"
name = "extreme"
fps = 60
{top}

[[cloth]]
density = 0.1
thickness = 0.004
{cloth}

[cloth.grid]
vertices = [17, 17]
size = [0.6, 0.6]
centre = [0.0, 0.40, 0.0]
plane = "xz"
diagonals = "alternating"

[cloth.material]
bend = 1e-5
{material}

[cloth.collision]
self_collision = true

[[collider]]
shape = "sphere"
radius = 0.3
"#
    )
}

fn build(text: &str) -> Result<(Scene, World), String> {
    let scene = Scene::from_toml(text, Path::new("extreme.toml")).map_err(|e| e.to_string())?;
    let world = scene.instantiate().map_err(|e| e.to_string())?;
    Ok((scene, world))
}

fn assert_intersection_free(world: &World, what: &str) {
    let solids = support::solids_of(world);
    let (ox, otris) = world.obstacle_soup();
    for cloth in world.cloths() {
        let report = find_intersections(
            &TriSoup {
                positions: cloth.state().positions(),
                triangles: cloth.triangles(),
            },
            &[TriSoup {
                positions: ox,
                triangles: otris,
            }],
            &solids,
            1e-3,
        );
        assert!(report.is_clean(), "{what}: {}", report.summary());
    }
}

/// Runs `frames` frames, checking after each that the state is finite, the
/// strain bounded and nothing intersects. Returns the largest strain.
fn run_stable(scene: &Scene, world: &mut World, frames: u32, what: &str) -> f32 {
    let mut max_strain = 0.0f32;
    for frame in 0..frames {
        let s = world
            .step(scene.dt())
            .unwrap_or_else(|e| panic!("{what} frame {frame}: {e}"));
        assert!(
            world.cloths()[0].state().is_finite(),
            "{what} frame {frame}"
        );
        assert_eq!(s.last_resorts, 0, "{what} frame {frame}: last resort");
        max_strain = max_strain.max(s.max_strain);
        assert_intersection_free(world, &format!("{what} frame {frame}"));
    }
    assert!(max_strain < 0.5, "{what}: strain {max_strain}");
    max_strain
}

#[test]
fn stiffness_1e9_with_one_substep_per_frame() {
    let text = scene(
        "substeps = 1",
        "",
        "stretch_u = 1e9\nstretch_v = 1e9\nshear = 1e9",
    );
    match build(&text) {
        Ok((scene, mut world)) => {
            let strain = run_stable(&scene, &mut world, 40, "stiffness 1e9");
            println!("stiffness 1e9, 1 substep: stable, max strain {strain}");
        }
        Err(m) => assert!(m.contains("stretch") || m.contains("stiff"), "{m}"),
    }
}

#[test]
fn density_1e_minus_6() {
    let text = scene("substeps = 2", "", "").replace("density = 0.1", "density = 1e-6");
    match build(&text) {
        Ok((scene, mut world)) => {
            let strain = run_stable(&scene, &mut world, 40, "density 1e-6");
            println!("density 1e-6: stable, max strain {strain}");
        }
        Err(m) => assert!(m.contains("density"), "{m}"),
    }
}

#[test]
fn every_vertex_pinned_stays_put() {
    let text = scene(
        "substeps = 2",
        "[[cloth.pin]]\nregion = { min = [-1, -1, -1], max = [1, 1, 1] }",
        "",
    );
    match build(&text) {
        Ok((scene, mut world)) => {
            let before = world.cloths()[0].state().positions().to_vec();
            run_stable(&scene, &mut world, 10, "all pinned");
            assert_eq!(world.cloths()[0].state().positions(), &before[..]);
        }
        Err(m) => assert!(m.contains("pin"), "{m}"),
    }
}

/// A drop from 100 m meets the sphere at √(2 g · 100 m) ≈ 44.3 m/s: the cloth
/// starts just above the sphere at that speed (2.6 times its own width per
/// substep).
#[test]
fn dropped_from_100_m_onto_the_sphere() {
    let text = scene("substeps = 2", "velocity = [0.0, -44.3, 0.0]", "");
    match build(&text) {
        Ok((scene, mut world)) => {
            let strain = run_stable(&scene, &mut world, 20, "100 m drop");
            println!("100 m drop: intersection-free, max strain {strain}");
        }
        Err(m) => panic!("a fast cloth is valid input: {m}"),
    }
}

#[test]
fn sliver_triangle_in_an_obj_cloth() {
    let dir = std::env::temp_dir().join(format!("weft-sliver-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // Two triangles; the second is a 1 m × 1e-7 m sliver.
    std::fs::write(
        dir.join("sliver.obj"),
        "v 0 0 0\nv 1 0 0\nv 0 0 1\nv 1 0 1e-7\nf 1 3 2\nf 2 3 4\n",
    )
    .expect("write");
    let text = "name = \"sliver\"\nfps = 60\n[[cloth]]\nobj = \"sliver.obj\"\n";
    std::fs::write(dir.join("s.toml"), text).expect("write");
    let result = weft::scene::load(&dir.join("s.toml")).and_then(|s| {
        let w = s.instantiate()?;
        Ok((s, w))
    });
    match result {
        Ok((scene, mut world)) => {
            for frame in 0..20 {
                world
                    .step(scene.dt())
                    .unwrap_or_else(|e| panic!("sliver frame {frame}: {e}"));
                assert!(
                    world.cloths()[0].state().is_finite(),
                    "sliver frame {frame}"
                );
            }
        }
        Err(e) => {
            let m = e.to_string();
            assert!(
                m.contains("degenerate") || m.contains("sliver") || m.contains("face"),
                "{m}"
            );
            println!("sliver rejected: {m}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Values at the edges of their ranges (`weft::limits`) are valid input: the cloth runs,
/// finite and intersection-free; just past the edge they are refused, naming the value.
#[test]
fn values_at_their_range_limits_run_and_past_them_are_refused() {
    use weft::limits::{MAX_GRAVITY, MAX_SPEED, MAX_THICKNESS_PER_EDGE};
    // 17 × 17 over 0.6 m: the median edge is 3.75 cm, so the thickness bound is one edge.
    let edge = 0.6 / 16.0;
    let gravity = |g: f32| (format!("gravity = [0.0, -{g}, 0.0]"), String::new());
    let velocity = |v: f32| (String::new(), format!("velocity = [0.0, -{v}, 0.0]"));
    let thick = |t: f32| (String::new(), format!("thickness = {t}"));
    let cases = [
        ("gravity", gravity(MAX_GRAVITY), gravity(MAX_GRAVITY * 1.01)),
        ("velocity", velocity(MAX_SPEED), velocity(MAX_SPEED * 1.01)),
        (
            "thickness",
            thick(MAX_THICKNESS_PER_EDGE * edge * 0.99),
            thick(MAX_THICKNESS_PER_EDGE * edge * 1.01),
        ),
    ];
    // `scene` writes the default 4 mm thickness; a case that sets its own replaces it.
    let text = |(top, cloth): &(String, String)| {
        let t = scene(top, cloth, "");
        if cloth.starts_with("thickness") {
            t.replace("thickness = 0.004\n", "")
        } else {
            t
        }
    };
    for (what, at, past) in cases {
        let (scene, mut world) =
            build(&text(&at)).unwrap_or_else(|m| panic!("{what} at its limit: {m}"));
        for frame in 0..10 {
            world
                .step(scene.dt())
                .unwrap_or_else(|e| panic!("{what} frame {frame}: {e}"));
            assert!(
                world.cloths()[0].state().is_finite(),
                "{what} frame {frame}"
            );
            assert_intersection_free(&world, &format!("{what} at its limit, frame {frame}"));
        }
        let m = build(&text(&past))
            .err()
            .unwrap_or_else(|| panic!("{what} past its limit was accepted"));
        assert!(m.contains(what), "{what}: {m}");
    }
}

//! Several cloths in one world step in parallel across cloths as
//! well as within each, and the answer does not depend on it. A small crowd
//! (four cloths, each falling onto its own sphere) gives the same
//! `state_hash` for 1, 2 and 4 threads; every cloth ends bit-identical to the
//! same cloth stepped alone in a world with the same colliders; the frame's
//! statistics are the sums (and maxima) of the cloths'.

use std::path::Path;

use weft::scene::Scene;

/// Four 17 x 17 cloths 1.5 m apart, each above its own sphere; `only` keeps
/// just that cloth (the colliders stay).
fn crowd(only: Option<usize>) -> String {
    let mut text = String::from("frames = 24\nsubsteps = 2\n");
    for k in 0..4 {
        let x = 1.5 * k as f32 - 2.25;
        if only.is_none_or(|o| o == k) {
            text.push_str(&format!(
                r#"
[[cloth]]
name = "cape-{k}"
density = 0.1
thickness = 0.004
friction = 0.3
[cloth.grid]
vertices = [17, 17]
size = [1.0, 1.0]
centre = [{x}, 0.4, 0.0]
plane = "xz"
[cloth.collision]
self_collision = true
strain_limit = 0.04
"#
            ));
        }
        text.push_str(&format!(
            r#"
[[collider]]
shape = "sphere"
radius = 0.3
position = [{x}, 0.0, 0.0]
friction = 0.3
"#
        ));
    }
    text
}

fn world(text: &str, threads: usize) -> (weft::world::World, f32, u32) {
    let scene = Scene::from_toml(text, Path::new("crowd.toml")).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    world.set_threads(threads).unwrap_or_else(|e| panic!("{e}"));
    (world, scene.dt(), scene.frames)
}

/// Per-frame hashes and the summed substeps and contacts.
fn run(text: &str, threads: usize) -> (Vec<u64>, u32, u32, weft::world::World) {
    let (mut world, dt, frames) = world(text, threads);
    let (mut substeps, mut contacts) = (0, 0);
    let hashes = (0..frames)
        .map(|_| {
            let stats = world.step(dt).unwrap_or_else(|e| panic!("{e}"));
            substeps += stats.substeps;
            contacts += stats.contacts;
            world.state_hash()
        })
        .collect();
    (hashes, substeps, contacts, world)
}

#[test]
fn a_crowd_steps_the_same_on_any_thread_count() {
    let text = crowd(None);
    let (reference, _, _, _) = run(&text, 1);
    for threads in [2, 4] {
        let (hashes, _, _, _) = run(&text, threads);
        assert_eq!(reference, hashes, "{threads} threads differ from 1 thread");
    }
}

#[test]
fn each_cloth_of_a_crowd_moves_as_if_alone() {
    let (_, substeps, contacts, together) = run(&crowd(None), 2);
    let (mut alone_substeps, mut alone_contacts) = (0, 0);
    for k in 0..4 {
        let (_, s, c, alone) = run(&crowd(Some(k)), 2);
        alone_substeps += s;
        alone_contacts += c;
        let a = alone.cloths()[0].state();
        let t = together.cloths()[k].state();
        assert_eq!(a.positions(), t.positions(), "cloth {k}: positions differ");
        assert_eq!(
            a.velocities(),
            t.velocities(),
            "cloth {k}: velocities differ"
        );
        // It did fall onto its sphere (the test compares something).
        let lowest = t
            .positions()
            .iter()
            .map(|p| p.y)
            .fold(f32::INFINITY, f32::min);
        assert!(lowest < 0.2, "cloth {k} did not drape: lowest y {lowest}");
    }
    assert_eq!(substeps, alone_substeps, "substeps are summed over cloths");
    assert_eq!(contacts, alone_contacts, "contacts are summed over cloths");
    assert!(contacts > 0, "the cloths touched their spheres");
}

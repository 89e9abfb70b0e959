//! The shipped samples run and show what the foundation issue promises.

mod support;

use std::path::Path;

use glam::Vec3;
use weft::scene;
use weft::world::World;

fn load(name: &str) -> (scene::Scene, World) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(name);
    let scene = scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    (scene, world)
}

/// Deepest penetration of any vertex into the scene's sphere (m; 0 if none).
fn sphere_penetration(world: &World) -> f32 {
    let mut deepest = 0.0f32;
    for c in world.colliders() {
        if let weft::collide::shapes::Shape::Sphere { radius } = c.desc().shape {
            let centre = c.pose().translation;
            for cloth in world.cloths() {
                for p in cloth.state().positions() {
                    deepest = deepest.max(radius - (*p - centre).length());
                }
            }
        }
    }
    deepest
}

#[test]
fn drape_runs_180_frames_and_rests_on_the_sphere() {
    let (scene, mut world) = load("drape.toml");
    let dt = scene.dt();
    let mut max_strain = 0.0f32;
    let sphere = [support::Solid::Sphere {
        centre: Vec3::ZERO,
        radius: 0.3,
    }];
    for frame in 0..scene.frames {
        let stats = world.step(dt).unwrap_or_else(|e| panic!("{e}"));
        max_strain = max_strain.max(stats.max_strain);
        // Every triangle (not only every vertex) stays outside the sphere,
        // to 1 mm, checked by the independent checker.
        let cloth = &world.cloths()[0];
        let report = support::find_intersections(
            &support::TriSoup {
                positions: cloth.state().positions(),
                triangles: cloth.triangles(),
            },
            &[],
            &sphere,
            1e-3,
        );
        assert!(
            report.solid_hits.is_empty(),
            "frame {frame}: {}",
            report.summary()
        );
    }
    let cloth = &world.cloths()[0];
    assert!(cloth.state().is_finite());
    let pen = sphere_penetration(&world);
    let final_strain = cloth.max_strain();
    println!(
        "drape-65: deepest vertex inside the sphere {:.3} mm; max strain over the run {:.3}%, at the last frame {:.3}%",
        pen * 1e3,
        max_strain * 100.0,
        final_strain * 100.0
    );
    assert!(pen <= 1e-3, "a vertex is {pen} m inside the sphere");
    assert!(
        final_strain < 0.05,
        "max strain {final_strain} at the last frame"
    );
    // The cloth hangs over the sphere: its centre rests on top, its corners fall below.
    let x = cloth.state().positions();
    let centre = x[32 * 65 + 32];
    assert!(centre.y > 0.29 && centre.y < 0.32, "centre at {centre}");
    assert!(x[0].y < 0.2, "corner at {}", x[0]);
}

#[test]
fn hanging_keeps_pins_exact_dissipates_energy_and_comes_to_rest() {
    let (scene, mut world) = load("hanging.toml");
    world.settings_mut().energy_stats = true;
    let pins: Vec<(u32, Vec3)> = world.cloths()[0]
        .pins()
        .iter()
        .map(|p| (p.vertex, p.target))
        .collect();
    assert_eq!(pins.len(), 2);
    let gravity = world.settings().gravity;
    let mut energy = world.cloths()[0].total_energy(gravity);
    let e0 = energy;
    let mut increases = 0;
    let dt = scene.dt();
    for f in 0..scene.frames {
        let stats = world.step(dt).unwrap_or_else(|e| panic!("{e}"));
        let x = world.cloths()[0].state().positions();
        for &(v, target) in &pins {
            assert_eq!(x[v as usize], target, "pin {v} moved at frame {f}");
        }
        // Implicit Euler plus damping only removes energy; allow round-off.
        if stats.energy > energy + 1e-9 * e0.abs().max(1.0) {
            increases += 1;
            println!("frame {f}: energy rose from {energy} to {}", stats.energy);
        }
        energy = stats.energy;
    }
    assert_eq!(increases, 0, "total energy must not increase under damping");
    let cloth = &world.cloths()[0];
    let ke = cloth.state().kinetic_energy();
    let mass: f32 = cloth.state().masses().iter().sum();
    let rms_speed = (2.0 * ke / f64::from(mass)).sqrt();
    let pin_height = pins[0].1.y;
    let lowest = cloth
        .state()
        .positions()
        .iter()
        .map(|p| p.y)
        .fold(f32::MAX, f32::min);
    let highest = cloth
        .state()
        .positions()
        .iter()
        .map(|p| p.y)
        .fold(f32::MIN, f32::max);
    println!(
        "hanging: energy {e0:.4} J -> {energy:.4} J; rms speed at the end {rms_speed:.4} m/s; lowest point {:.3} m below the pins",
        pin_height - lowest
    );
    assert!(
        rms_speed < 0.05,
        "still swinging: rms speed {rms_speed} m/s"
    );
    assert!(
        highest <= pin_height + 1e-4,
        "a vertex rests above the pins"
    );
    assert!(
        pin_height - lowest > 0.9,
        "the cloth hangs down (lowest {lowest})"
    );
}

#[test]
fn flag_hangs_from_its_pinned_edge() {
    let (scene, mut world) = load("flag.toml");
    let pins: Vec<(u32, Vec3)> = world.cloths()[0]
        .pins()
        .iter()
        .map(|p| (p.vertex, p.target))
        .collect();
    assert_eq!(pins.len(), 33, "the whole left edge is pinned");
    for _ in 0..scene.frames {
        world.step(scene.dt()).unwrap_or_else(|e| panic!("{e}"));
    }
    let x = world.cloths()[0].state().positions();
    for &(v, target) in &pins {
        assert_eq!(x[v as usize], target);
    }
    // The free edge has dropped under gravity.
    let free_corner = x[48];
    assert!(free_corner.y < 1.0, "free corner at {free_corner}");
}

/// The file names of the scenes in `samples/` (`*.toml`), sorted.
fn sample_names() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("samples/ is readable")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    names.sort();
    names
}

/// Every scene in `samples/` loads, builds and steps two frames with a finite
/// state and no intersection (a new sample cannot rot unnoticed).
#[test]
fn every_sample_loads_builds_and_steps() {
    let names = sample_names();
    assert!(names.len() >= 10, "only {} samples found", names.len());
    for new in [
        "curtain.toml",
        "tablecloth.toml",
        "sleeve.toml",
        "crowd.toml",
    ] {
        assert!(names.iter().any(|n| n == new), "samples/{new} is missing");
    }
    for name in &names {
        let (scene, mut world) = load(name);
        for frame in 0..2 {
            world
                .step(scene.dt())
                .unwrap_or_else(|e| panic!("{name} frame {frame}: {e}"));
            support::assert_world_clean(&world, &format!("{name} frame {frame}"));
        }
    }
}

/// The gallery of `samples/README.md` covers every scene in `samples/`: each
/// `samples/<name>.toml` is named in a gallery heading whose section shows a
/// committed picture (`gallery/*.png`, present on disk), and `scripts/gallery`,
/// which remakes the pictures, renders it. Every image the gallery links exists.
#[test]
fn every_sample_has_a_gallery_picture_that_the_gallery_script_makes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("samples/README.md");
    // Every picture is remade by `scripts/gallery`, which names each sample it renders.
    let script = std::fs::read_to_string(root.join("../scripts/gallery")).expect("scripts/gallery");
    let gallery = readme
        .split_once("\n## Gallery\n")
        .expect("samples/README.md has a Gallery section")
        .1;
    let gallery = gallery.split("\n## ").next().unwrap_or(gallery);
    let sections: Vec<&str> = gallery.split("\n### ").skip(1).collect();
    let links = |text: &str| -> Vec<String> {
        text.split("](gallery/")
            .skip(1)
            .filter_map(|rest| rest.split_once(')').map(|(file, _)| file.to_string()))
            .collect()
    };
    for file in links(gallery) {
        assert!(
            root.join("gallery").join(&file).is_file(),
            "samples/README.md links gallery/{file}, which is missing"
        );
    }
    for name in &sample_names() {
        let quoted = format!("`{name}`");
        let section = sections
            .iter()
            .find(|sec| sec.lines().next().is_some_and(|h| h.contains(&quoted)))
            .unwrap_or_else(|| panic!("no gallery heading names {quoted}"));
        assert!(
            links(section).iter().any(|f| f.ends_with(".png")),
            "the gallery section of {name} shows no picture"
        );
        let stem = name.trim_end_matches(".toml");
        let shot = format!("\"{stem} ");
        assert!(
            script.lines().any(|l| l.trim_start().starts_with(&shot)),
            "scripts/gallery does not make the picture of {name}"
        );
    }
}

/// The sleeve on its moving arm stays intersection-free, checked by the
/// independent checker after every frame: the sleeve settles onto the arm
/// (0.5 s) and the arm starts to swing up (the first 0.5 s of the swing).
/// 60 of the sample's 240 frames keep it cheap; the gallery's full run was
/// measured with the same check (see samples/README.md).
#[test]
fn sleeve_stays_intersection_free_while_the_arm_moves() {
    let (scene, mut world) = load("sleeve.toml");
    let dt = scene.dt();
    let mut max_strain = 0.0f32;
    support::assert_world_clean(&world, "sleeve, initial state");
    let start = world.colliders()[2].pose().translation;
    for frame in 1..=60 {
        let stats = world.step(dt).unwrap_or_else(|e| panic!("{e}"));
        max_strain = max_strain.max(stats.max_strain);
        support::assert_world_clean(&world, &format!("sleeve, frame {frame}"));
    }
    let arm = world.colliders()[2].pose().translation;
    assert!(
        arm.y > start.y + 0.05,
        "the arm has swung up: centre {start} -> {arm}"
    );
    let cloth = &world.cloths()[0];
    assert!(cloth.state().is_finite());
    println!(
        "sleeve: 60 frames intersection-free; max strain {:.2}%",
        max_strain * 100.0
    );
    assert!(max_strain < 0.12, "max strain {max_strain}");
}

/// The full runs of the gallery samples added with the gallery (curtain,
/// tablecloth, sleeve), each frame checked by the independent intersection
/// checker. Too slow for CI (about two minutes in release); run with
/// `cargo test --release --test samples -- --ignored --nocapture full_gallery`.
/// Prints, per sample, the frames run, the max strain over the run and the
/// frames with an intersection, and fails if any frame has one.
#[test]
#[ignore = "full sample runs: minutes; the CI check is the 60-frame sleeve test"]
fn full_gallery_runs_of_the_new_samples_are_intersection_free() {
    let mut dirty = Vec::new();
    for name in ["curtain.toml", "tablecloth.toml", "sleeve.toml"] {
        let (scene, mut world) = load(name);
        let mut max_strain = 0.0f32;
        let mut bad_frames = Vec::new();
        for frame in 1..=scene.frames {
            let stats = world
                .step(scene.dt())
                .unwrap_or_else(|e| panic!("{name} frame {frame}: {e}"));
            max_strain = max_strain.max(stats.max_strain);
            let clean = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                support::assert_world_clean(&world, &format!("{name} frame {frame}"));
            }));
            if clean.is_err() {
                bad_frames.push(frame);
            }
        }
        let final_strain = world
            .cloths()
            .iter()
            .map(|c| c.max_strain())
            .fold(0.0f32, f32::max);
        println!(
            "{name}: {} frames, max strain {:.2}% (final {:.2}%), frames with an intersection: {}",
            scene.frames,
            max_strain * 100.0,
            final_strain * 100.0,
            if bad_frames.is_empty() {
                "none".to_string()
            } else {
                format!("{bad_frames:?}")
            }
        );
        if !bad_frames.is_empty() {
            dirty.push(name);
        }
    }
    assert!(dirty.is_empty(), "intersections in {dirty:?}");
}

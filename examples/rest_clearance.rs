//! How far a cloth keeps its thickness: runs a scene and reports, over its last frames, the
//! smallest clearance of every cloth from each analytic collider (exact signed distance of the
//! vertices, and of the faces for spheres and capsules), from the obstacle meshes that are not
//! collider tessellations, and from itself (`tests/support/clearance.rs`).
//!
//! `cargo run --release --example rest_clearance -- SCENE.toml [--frames N] [--last K]
//! [--threads T] [--per-frame]`: N frames (default: the scene's), the minimum over the last K
//! (default 30), T worker threads (default 1). Prints one line per measure, in millimetres and as
//! a fraction of the cloth's thickness η, and the world's `state_hash`; `--per-frame` adds each
//! measured frame's smallest vertex distance to every collider.

#[path = "../tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

use std::path::PathBuf;

use support::TriSoup;
use support::clearance::{Clearance, measure};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut scene_path: Option<PathBuf> = None;
    let (mut frames, mut last, mut threads) = (None, 30u64, 1usize);
    let mut per_frame = false;
    while let Some(a) = args.next() {
        if a == "--per-frame" {
            per_frame = true;
            continue;
        }
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| format!("{name} needs a value"))
                .and_then(|v| v.parse::<u64>().map_err(|e| format!("{name}: {e}")))
        };
        match a.as_str() {
            "--frames" => frames = Some(value("--frames")?),
            "--last" => last = value("--last")?.max(1),
            "--threads" => threads = value("--threads")?.max(1) as usize,
            _ => scene_path = Some(PathBuf::from(a)),
        }
    }
    let scene_path = scene_path.ok_or(
        "usage: rest_clearance SCENE.toml [--frames N] [--last K] [--threads T] [--per-frame]",
    )?;
    let scene = weft::scene::load(&scene_path)?;
    let frames = frames.unwrap_or(u64::from(scene.frames));
    let mut world = scene.instantiate()?;
    world.set_threads(threads)?;
    let dt = scene.dt();
    // Per cloth: the running minimum over the measured frames.
    let mut worst: Vec<Option<Clearance>> = vec![None; world.cloths().len()];
    let mut inside_frames = vec![0u64; world.cloths().len()];
    for frame in 1..=frames {
        world.step(dt)?;
        if frame + last <= frames {
            continue;
        }
        let solids = support::solids_of(&world);
        let tessellations: Vec<usize> = world.colliders().iter().map(|c| c.obstacle()).collect();
        let placed: Vec<(Vec<glam::Vec3>, Vec<[u32; 3]>)> = world
            .obstacles()
            .iter()
            .enumerate()
            .filter(|(k, _)| !tessellations.contains(k))
            .map(|(_, o)| {
                let pose = o.pose();
                let mesh = o.mesh();
                let x = mesh
                    .positions
                    .iter()
                    .map(|p| pose.transform_point(*p))
                    .collect();
                (x, mesh.triangles.clone())
            })
            .collect();
        let meshes: Vec<TriSoup> = placed
            .iter()
            .map(|(x, t)| TriSoup {
                positions: x,
                triangles: t,
            })
            .collect();
        for (i, cloth) in world.cloths().iter().enumerate() {
            let soup = TriSoup {
                positions: cloth.state().positions(),
                triangles: cloth.triangles(),
            };
            let radius = 2.0 * f64::from(cloth.thickness());
            let c = measure(&soup, &solids, &meshes, radius);
            if per_frame {
                let mins: Vec<String> = c
                    .solid_vertex
                    .iter()
                    .map(|(d, _)| format!("{:+.4}", d * 1e3))
                    .collect();
                println!(
                    "frame {frame} cloth {i}: collider min (mm) {}",
                    mins.join(" ")
                );
            }
            if c.solid_vertex.iter().any(|(d, _)| *d < 0.0) {
                inside_frames[i] += 1;
            }
            worst[i] = Some(match worst[i].take() {
                None => c,
                Some(w) => Clearance {
                    solid_vertex: w
                        .solid_vertex
                        .iter()
                        .zip(&c.solid_vertex)
                        .map(|(a, b)| if b.0 < a.0 { *b } else { *a })
                        .collect(),
                    solid_triangle: w
                        .solid_triangle
                        .iter()
                        .zip(&c.solid_triangle)
                        .map(|(a, b)| match (a, b) {
                            (Some(a), Some(b)) => Some(a.min(*b)),
                            _ => None,
                        })
                        .collect(),
                    obstacle: w.obstacle.min(c.obstacle),
                    self_distance: w.self_distance.min(c.self_distance),
                },
            });
        }
    }
    let first = frames.saturating_sub(last) + 1;
    println!(
        "{}: frames {first}..={frames}, {threads} thread(s)",
        scene_path.display()
    );
    for (i, (cloth, w)) in world.cloths().iter().zip(&worst).enumerate() {
        let Some(w) = w else { continue };
        let eta = f64::from(cloth.thickness());
        let mm = |d: f64| format!("{:+.4} mm ({:.3} η)", d * 1e3, d / eta);
        println!("cloth {i} '{}': η = {:.2} mm", cloth.name(), eta * 1e3);
        for (k, collider) in world.colliders().iter().enumerate() {
            let (d, v) = w.solid_vertex[k];
            print!(
                "  collider {k} ({:?}): min vertex distance {} at vertex {v}",
                collider.desc().shape,
                mm(d)
            );
            match w.solid_triangle[k] {
                Some(t) => println!(", min face distance {}", mm(t)),
                None => println!(),
            }
        }
        println!(
            "  frames with a vertex inside a collider: {}",
            inside_frames[i]
        );
        let capped = |d: f64| {
            if d >= 2.0 * eta {
                format!("≥ {}", mm(2.0 * eta))
            } else {
                mm(d)
            }
        };
        println!(
            "  obstacle meshes: min vertex distance {}",
            capped(w.obstacle)
        );
        println!(
            "  self: min vertex–face / edge–edge distance {}",
            capped(w.self_distance)
        );
    }
    println!("state_hash {:016x}", world.state_hash());
    Ok(())
}

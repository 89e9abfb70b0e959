//! A flag pinned along one edge streams downwind (`samples/flag-wind.toml`).

use std::path::Path;

use glam::Vec3;

/// Mean unit direction, in the horizontal plane, from the pinned edge
/// (x = −0.75, z = 0) to the free vertices (x > −0.5 at the start).
fn mean_direction(x: &[Vec3], free: &[usize]) -> Vec3 {
    let sum: Vec3 = free
        .iter()
        .map(|&i| Vec3::new(x[i].x + 0.75, 0.0, x[i].z).normalize_or_zero())
        .sum();
    sum.normalize_or_zero()
}

#[test]
fn flag_streams_downwind() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/flag-wind.toml");
    let scene = weft::scene::load(&path).expect("flag-wind loads");
    let wind = scene.settings.wind.expect("the scene has wind");
    let mut world = scene.instantiate().expect("builds");
    let x0 = world.cloths()[0].state().positions().to_vec();
    let free: Vec<usize> = (0..x0.len()).filter(|&i| x0[i].x > -0.5).collect();
    let d0 = mean_direction(&x0, &free);
    assert!(d0.x > 0.99, "starts along +x: {d0}");
    let frames = 120;
    for _ in 0..frames {
        world.step(scene.dt()).expect("steps");
    }
    let x = world.cloths()[0].state().positions();
    let d = mean_direction(x, &free);
    let w = wind.velocity.normalize();
    let angle = d.dot(w).clamp(-1.0, 1.0).acos().to_degrees();
    println!(
        "flag-wind after {frames} frames: mean direction from the pinned edge {d} ({angle:.1}° from the wind {w})"
    );
    // Broadside (90°) at the start; streaming means within 30° of the wind.
    assert!(
        angle < 30.0,
        "mean direction {d} is {angle:.1}° from the wind"
    );
    // Still whole: no vertex flew off.
    let centre = Vec3::new(-0.75, 1.5, 0.0);
    assert!(
        x.iter()
            .all(|p| p.is_finite() && (*p - centre).length() < 2.0)
    );
}

#[test]
fn without_wind_the_flag_stays_across() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/flag-wind.toml");
    let mut scene = weft::scene::load(&path).expect("flag-wind loads");
    scene.settings.wind = None;
    let mut world = scene.instantiate().expect("builds");
    let x0 = world.cloths()[0].state().positions().to_vec();
    let free: Vec<usize> = (0..x0.len()).filter(|&i| x0[i].x > -0.5).collect();
    for _ in 0..60 {
        world.step(scene.dt()).expect("steps");
    }
    let d = mean_direction(world.cloths()[0].state().positions(), &free);
    assert!(d.x > 0.95, "no wind, no turn: {d}");
}

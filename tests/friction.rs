//! Coulomb friction on an incline: a cloth lying on a plane tilted by α stays put when
//! μ > tan α and slides when μ < tan α, at the kinetic rate g (sin α − μ cos α).

use std::path::Path;

use weft::scene::Scene;

const ALPHA_DEG: f32 = 20.0;
const SECONDS: f32 = 1.0;

/// Distance (m) the cloth's centroid travels down the incline in `SECONDS`, with μ on both the cloth
/// and the plane (so the pair's coefficient √(μ μ) is μ).
fn slide(mu: f32) -> f32 {
    let alpha = ALPHA_DEG.to_radians();
    let normal = [-alpha.sin(), alpha.cos(), 0.0];
    let lift = 0.0045; // just outside the 4 mm contact offset
    let text = format!(
        r#"
        [[cloth]]
        friction = {mu}
        [cloth.grid]
        vertices = [13, 13]
        size = [0.4, 0.4]
        [cloth.transform]
        rotation_deg = [0.0, 0.0, {ALPHA_DEG}]
        translation = [{tx}, {ty}, 0.0]

        [[collider]]
        shape = "plane"
        rotation_deg = [0.0, 0.0, {ALPHA_DEG}]
        friction = {mu}
        "#,
        tx = normal[0] * lift,
        ty = normal[1] * lift,
    );
    let scene =
        Scene::from_toml(&text, Path::new("incline.toml")).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    let centroid = |w: &weft::world::World| {
        let p = w.cloths()[0].state().positions();
        p.iter().copied().sum::<glam::Vec3>() / p.len() as f32
    };
    let start = centroid(&world);
    let frames = (SECONDS / scene.dt()).round() as u32;
    for _ in 0..frames {
        world.step(scene.dt()).unwrap_or_else(|e| panic!("{e}"));
    }
    let downhill = glam::Vec3::new(-alpha.cos(), -alpha.sin(), 0.0);
    let moved = centroid(&world) - start;
    // The cloth stays on the plane: no motion along the normal beyond a millimetre.
    let n = glam::Vec3::from(normal);
    assert!(
        moved.dot(n).abs() < 1e-3,
        "μ = {mu}: left the plane by {} m",
        moved.dot(n)
    );
    moved.dot(downhill)
}

/// ½ a t² with a = g (sin α − μ cos α), the rigid block on an incline.
fn kinetic(mu: f32) -> f32 {
    let alpha = ALPHA_DEG.to_radians();
    let a = 9.81 * (alpha.sin() - mu * alpha.cos());
    0.5 * a.max(0.0) * SECONDS * SECONDS
}

#[test]
fn cloth_sticks_when_friction_exceeds_the_slope() {
    let mu = ALPHA_DEG.to_radians().tan() + 0.15;
    let d = slide(mu);
    println!("μ = {mu:.3} > tan α: moved {:.2} mm", d * 1e3);
    assert!(d.abs() < 2e-3, "μ = {mu} > tan α: the cloth slid {d} m");
}

#[test]
fn cloth_slides_when_the_slope_exceeds_friction() {
    for mu in [0.0, ALPHA_DEG.to_radians().tan() - 0.15] {
        let d = slide(mu);
        let expected = kinetic(mu);
        println!(
            "μ = {mu:.3} < tan α: moved {:.1} mm, rigid block {:.1} mm",
            d * 1e3,
            expected * 1e3
        );
        assert!(
            (d - expected).abs() < 0.1 * expected,
            "μ = {mu}: slid {d} m, a rigid block slides {expected} m"
        );
    }
}

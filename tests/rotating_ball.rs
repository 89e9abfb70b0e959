//! Wang 2012 figure 4.5: friction drags a cloth draped on a spinning ball
//! round with it. Reports the cloth's mean angular velocity about y after 3 s.

use std::path::Path;

#[test]
fn cloth_turns_with_the_spinning_ball() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/rotating-ball.toml");
    let scene = weft::scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..180 {
        world.step(scene.dt()).unwrap_or_else(|e| panic!("{e}"));
    }
    let cloth = world.cloths()[0].state();
    // Mass-weighted angular velocity about the y axis through the ball centre:
    // ω = Σ m (r × v)_y / Σ m |r_xz|².
    let (mut l, mut i) = (0.0f64, 0.0f64);
    for ((x, v), m) in cloth
        .positions()
        .iter()
        .zip(cloth.velocities())
        .zip(cloth.masses())
    {
        let (rx, rz) = (f64::from(x.x), f64::from(x.z));
        l += f64::from(*m) * (rz * f64::from(v.x) - rx * f64::from(v.z));
        i += f64::from(*m) * (rx * rx + rz * rz);
    }
    let omega = l / i;
    let ball = world.colliders()[0].desc().motion.angular_velocity.y;
    println!(
        "rotating-ball: cloth mean angular velocity about y after 3 s = {omega:.3} rad/s (ball {ball} rad/s)"
    );
    assert!(
        omega > 0.25 * f64::from(ball),
        "the cloth does not turn with the ball: {omega} rad/s"
    );
    assert!(
        omega < 1.05 * f64::from(ball),
        "the cloth outruns the ball: {omega} rad/s"
    );
}

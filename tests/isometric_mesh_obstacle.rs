//! An isometric sheet dropped on a triangle-mesh box (`samples/bench/box-isometric.toml`): with the
//! contact rows on the mesh (`mesh_rows`, the default) every frame ends intersection-free
//! under the independent checker, and the fail-safe collision pass moves fewer nodes than when
//! the box is left to it (`mesh_rows = false`), over the first frames of contact.

mod support;

use std::path::Path;

/// Frames run: the sheet falls 5 cm and meets the box in frame 6.
const FRAMES: u32 = 8;

/// Runs the sample's first [`FRAMES`] frames, `mesh_rows` as given, checking every frame
/// with the independent checker. Returns the nodes the fail-safe pass moved, summed over the
/// frames, and the largest row strain.
fn drop_on_box(mesh_rows: bool) -> (u64, f64) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/bench/box-isometric.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let text = text.replace(
        "[solver.isometric]\n",
        &format!("[solver.isometric]\nmesh_rows = {mesh_rows}\n"),
    );
    let scene = weft::scene::Scene::from_toml(&text, &path).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    let (mut moved, mut strain) = (0u64, 0.0f64);
    for frame in 1..=FRAMES {
        let stats = world.step(scene.dt()).unwrap_or_else(|e| panic!("{e}"));
        println!(
            "mesh_rows = {mesh_rows}, frame {frame}: row strain {:.2e}, Newton {}, fail-safe moved {}",
            stats.row_strain, stats.newton_iterations, stats.failsafe_moved
        );
        moved += u64::from(stats.failsafe_moved);
        strain = strain.max(stats.row_strain);
        support::assert_world_clean(&world, &format!("box-isometric frame {frame}"));
    }
    (moved, strain)
}

#[test]
fn rows_on_a_mesh_box_leave_the_fail_safe_less_to_move() {
    let (with_rows, strain) = drop_on_box(true);
    let (without, _) = drop_on_box(false);
    assert!(
        with_rows < without,
        "fail-safe moved {with_rows} nodes with the mesh rows, {without} without"
    );
    assert!(strain <= 1e-3 + 1e-5, "row strain {strain:.3e}");
}

//! `[cloth.tube]`: a scene cloth made by `mesh::tube` (the sleeve sample), its
//! placement, and the typed errors of bad tube parameters.

use std::path::Path;

use weft::mesh::{Topology, TriMesh};
use weft::scene::{Scene, SceneError};

fn tube_scene(tube: &str) -> String {
    format!(
        r#"
name = "t"
[[cloth]]
[cloth.tube]
{tube}
"#
    )
}

fn load(text: &str) -> Result<weft::world::World, SceneError> {
    Scene::from_toml(text, Path::new("tube.toml"))?.instantiate()
}

#[test]
fn tube_cloth_is_placed_on_its_axis_and_starts_unstrained() {
    for (axis, along) in [("x", 0usize), ("y", 1), ("z", 2)] {
        let text = tube_scene(&format!(
            "radius = 0.1\nlength = 0.6\nvertices = [16, 7]\ncentre = [1.0, 2.0, 3.0]\naxis = \"{axis}\""
        ));
        let world = load(&text).unwrap_or_else(|e| panic!("{e}"));
        let cloth = &world.cloths()[0];
        let x = cloth.state().positions();
        assert_eq!(x.len(), 16 * 7);
        let centre = glam::Vec3::new(1.0, 2.0, 3.0);
        for p in x {
            let d = (*p - centre).to_array();
            // Within half the length along the axis, on the radius across it.
            assert!(d[along].abs() <= 0.3 + 1e-5, "axis {axis}: {p}");
            let across: f32 = (0..3)
                .filter(|&k| k != along)
                .map(|k| d[k] * d[k])
                .sum::<f32>()
                .sqrt();
            assert!(
                (across - 0.1).abs() < 1e-5,
                "axis {axis}: {p} off the radius"
            );
        }
        // The rings' winding normals point away from the axis after the turn.
        let mesh = TriMesh {
            positions: x.to_vec(),
            triangles: cloth.triangles().to_vec(),
            corner_uvs: None,
        };
        let topo = Topology::build(&mesh).expect("consistently oriented");
        assert_eq!(
            topo.boundary_edges().len(),
            2 * 16,
            "open at both ends only"
        );
        for t in cloth.triangles() {
            let [a, b, c] = t.map(|i| x[i as usize] - centre);
            let n = (b - a).cross(c - a).to_array();
            let m = ((a + b + c) / 3.0).to_array();
            let outward: f32 = (0..3).filter(|&k| k != along).map(|k| n[k] * m[k]).sum();
            assert!(outward > 0.0, "axis {axis}: a face points inward");
        }
        // The unrolled material coordinates make the rest state the initial one.
        assert!(
            cloth.max_strain() < 1e-5,
            "axis {axis}: initial strain {}",
            cloth.max_strain()
        );
    }
}

#[test]
fn bad_tubes_give_typed_errors_naming_the_key() {
    let cases = [
        (
            "radius = 0.0\nlength = 1.0\nvertices = [8, 3]",
            "cloth[0].tube.radius",
        ),
        (
            "radius = 0.1\nlength = -1.0\nvertices = [8, 3]",
            "cloth[0].tube.length",
        ),
        (
            "radius = 0.1\nlength = 1.0\nvertices = [2, 3]",
            "cloth[0].tube.vertices",
        ),
        (
            "radius = 0.1\nlength = 1.0\nvertices = [8, 1]",
            "cloth[0].tube.vertices",
        ),
        (
            "radius = 0.1\nlength = 1.0\nvertices = [8, 3]\ncentre = [0.0, inf, 0.0]",
            "cloth[0].tube.centre",
        ),
    ];
    for (body, key) in cases {
        match load(&tube_scene(body)) {
            Err(SceneError::Value { key: k, line, .. }) => {
                assert_eq!(k, key, "{body}");
                assert!(line > 0, "{body}: the error points at a line");
            }
            other => panic!("{body}: expected a value error, got {other:?}"),
        }
    }
    // An unknown key and a missing required one are parse errors.
    for body in [
        "radius = 0.1\nlength = 1.0\nvertices = [8, 3]\nsegments = 4",
        "radius = 0.1\nvertices = [8, 3]",
    ] {
        assert!(
            matches!(load(&tube_scene(body)), Err(SceneError::Parse { .. })),
            "{body}"
        );
    }
    // Exactly one of grid, obj and tube.
    let both = "name = \"t\"\n[[cloth]]\n[cloth.grid]\nvertices = [3, 3]\n[cloth.tube]\nradius = 0.1\nlength = 1.0\nvertices = [8, 3]\n";
    match load(both) {
        Err(SceneError::Value { key, message, .. }) => {
            assert_eq!(key, "cloth[0]");
            assert!(message.contains("tube"), "{message}");
        }
        other => panic!("expected a value error, got {other:?}"),
    }
}

//! Tests of the checker's containment tests (`tests/support/inside.rs`) and of its world
//! helpers (`support::check_cloth`): vertices inside analytic solids and closed obstacle
//! meshes found, vertices outside not, and colliders and obstacles read at the pose they have
//! after a step.
#![deny(unsafe_code)]

mod support;

use glam::{DVec3, Quat, Vec3};
use support::Solid;
use support::TriSoup;
use support::inside::{
    is_closed, vertex_depth, vertices_inside_mesh, vertices_inside_solids, winding_number,
};

/// A closed cube of half side `h` centred at `c`: 8 corners, 12 outward triangles.
fn cube(c: Vec3, h: f32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let positions = (0..8)
        .map(|i| {
            c + h * Vec3::new(
                if i & 1 == 0 { -1.0 } else { 1.0 },
                if i & 2 == 0 { -1.0 } else { 1.0 },
                if i & 4 == 0 { -1.0 } else { 1.0 },
            )
        })
        .collect();
    let triangles = vec![
        [0, 2, 1],
        [1, 2, 3],
        [4, 5, 6],
        [5, 7, 6],
        [0, 1, 4],
        [1, 5, 4],
        [2, 6, 3],
        [3, 6, 7],
        [0, 4, 2],
        [2, 4, 6],
        [1, 3, 5],
        [3, 7, 5],
    ];
    (positions, triangles)
}

#[test]
fn a_vertex_inside_a_capsule_is_found_and_one_outside_is_not() {
    // A capsule of radius 6 mm along x from -0.3 to 0.3 at height 1 m.
    let capsule = Solid::Capsule {
        a: Vec3::new(-0.3, 1.0, 0.0),
        b: Vec3::new(0.3, 1.0, 0.0),
        radius: 0.006,
    };
    let positions = [
        // 4.9 mm deep: 1.1 mm from the axis.
        Vec3::new(0.1, 1.0011, 0.0),
        // Outside: 7 mm from the axis.
        Vec3::new(0.1, 1.0, 0.007),
        // Beyond the end cap, 5 mm from the end point: inside by 1 mm.
        Vec3::new(0.305, 1.0, 0.0),
        // Beyond the end cap along the axis but 8 mm from the end point.
        Vec3::new(0.308, 1.0, 0.0),
    ];
    let hits = vertices_inside_solids(&positions, &[capsule], 0.0);
    let found: Vec<u32> = hits.iter().map(|h| h.1).collect();
    assert_eq!(found, vec![0, 2], "{hits:?}");
    assert!((hits[0].2 - 0.0049).abs() < 1e-6, "{hits:?}");
    assert!((hits[1].2 - 0.001).abs() < 1e-6, "{hits:?}");
    // A tolerance above a depth leaves that vertex out.
    let deep: Vec<u32> = vertices_inside_solids(&positions, &[capsule], 0.002)
        .iter()
        .map(|h| h.1)
        .collect();
    assert_eq!(deep, vec![0]);
}

#[test]
fn depths_of_plane_sphere_and_rotated_box() {
    let plane = Solid::Plane {
        point: Vec3::new(0.0, 0.5, 0.0),
        // Not unit length on purpose.
        normal: Vec3::new(0.0, 2.0, 0.0),
    };
    assert!((vertex_depth(&plane, DVec3::new(3.0, 0.4, -2.0)) - 0.1).abs() < 1e-9);
    assert!((vertex_depth(&plane, DVec3::new(0.0, 0.6, 0.0)) + 0.1).abs() < 1e-9);

    let sphere = Solid::Sphere {
        centre: Vec3::new(1.0, 0.0, 0.0),
        radius: 0.5,
    };
    assert!((vertex_depth(&sphere, DVec3::new(1.2, 0.0, 0.0)) - 0.3).abs() < 1e-9);
    assert!(vertex_depth(&sphere, DVec3::new(1.0, 0.6, 0.0)) < 0.0);

    // A box turned 45° about y: its local x axis points along (1, 0, -1)/√2.
    let boxed = Solid::Box {
        centre: Vec3::ZERO,
        half_extents: Vec3::new(0.4, 0.1, 0.1),
        rotation: Quat::from_rotation_y(std::f32::consts::FRAC_PI_4),
    };
    let along = DVec3::new(1.0, 0.0, -1.0).normalize();
    // 0.3 m along the long axis: 0.1 m from the long faces' ends, 0.1 m from the others:
    // depth min(0.4 − 0.3, 0.1 − 0, 0.1 − 0) = 0.1.
    assert!((vertex_depth(&boxed, along * 0.3) - 0.1).abs() < 1e-6);
    // 0.3 m along world x is 0.21 m along the long axis and 0.21 m across: outside.
    assert!(vertex_depth(&boxed, DVec3::new(0.3, 0.0, 0.0)) < 0.0);
    let hits = vertices_inside_solids(
        &[(along * 0.3).as_vec3(), Vec3::new(0.3, 0.0, 0.0)],
        &[plane, sphere, boxed],
        1e-3,
    );
    // The first point is inside the plane's half-space (y = 0 < 0.5) and the box; the second
    // only below the plane.
    assert_eq!(
        hits.iter().map(|h| (h.0, h.1)).collect::<Vec<_>>(),
        vec![(0, 0), (0, 1), (2, 0)]
    );
}

#[test]
fn vertices_inside_a_closed_mesh_are_found_and_outside_ones_are_not() {
    let (x, t) = cube(Vec3::new(0.0, 1.0, 0.0), 0.1);
    let mesh = TriSoup {
        positions: &x,
        triangles: &t,
    };
    assert!(is_closed(&mesh));
    assert!((winding_number(&mesh, DVec3::new(0.0, 1.0, 0.0)).abs() - 1.0).abs() < 1e-9);
    assert!(winding_number(&mesh, DVec3::new(0.5, 1.0, 0.0)).abs() < 1e-9);
    let points = [
        // Just inside a face.
        Vec3::new(0.0999, 1.0, 0.0),
        // Just outside it.
        Vec3::new(0.1001, 1.0, 0.0),
        // Inside near a corner.
        Vec3::new(-0.099, 1.099, 0.099),
        // Inside the bounding box's slab but outside the cube along another axis.
        Vec3::new(0.05, 1.2, 0.0),
    ];
    assert_eq!(vertices_inside_mesh(&points, &mesh), vec![0, 2]);
    // Turned inside out (opposite winding), inside is still inside.
    let flipped: Vec<[u32; 3]> = t.iter().map(|&[a, b, c]| [a, c, b]).collect();
    let mesh = TriSoup {
        positions: &x,
        triangles: &flipped,
    };
    assert_eq!(vertices_inside_mesh(&points, &mesh), vec![0, 2]);
}

#[test]
fn open_meshes_have_no_inside() {
    let (x, mut t) = cube(Vec3::ZERO, 0.1);
    // Remove one face (two triangles): the box is open.
    t.truncate(10);
    let mesh = TriSoup {
        positions: &x,
        triangles: &t,
    };
    assert!(!is_closed(&mesh));
    assert!(vertices_inside_mesh(&[Vec3::ZERO], &mesh).is_empty());
}

/// A world with one small cloth far from a capsule collider and a capsule obstacle mesh,
/// both moving at 1 m/s along +x, and no gravity.
fn moving_world() -> weft::world::World {
    use weft::collide::shapes::{Motion, Pose, Shape};
    use weft::mesh::{GridSpec, grid};
    use weft::world::{ClothDesc, ColliderDesc, ObstacleDesc, World, WorldSettings};
    let mut world = World::new(WorldSettings {
        gravity: Vec3::ZERO,
        ..WorldSettings::default()
    });
    let mesh = grid(&GridSpec {
        nx: 3,
        ny: 3,
        size: glam::Vec2::splat(0.2),
        centre: Vec3::new(0.0, 2.0, 0.0),
        u_axis: Vec3::X,
        v_axis: Vec3::NEG_Z,
        diagonals: weft::mesh::Diagonals::Alternating,
    })
    .expect("a valid grid");
    world
        .add_cloth(ClothDesc {
            name: "sheet".into(),
            mesh,
            density: 0.1,
            thickness: 0.004,
            friction: 0.3,
            air_damping: 0.0,
            model: Default::default(),
            pins: Vec::new(),
            pin_velocity: Vec3::ZERO,
            initial_velocity: Vec3::ZERO,
            collision: Default::default(),
        })
        .expect("a valid cloth");
    let motion = Motion {
        linear_velocity: Vec3::X,
        angular_velocity: Vec3::ZERO,
    };
    let capsule = Shape::Capsule {
        radius: 0.006,
        half_length: 0.3,
    };
    world
        .add_collider(ColliderDesc {
            shape: capsule,
            pose: Pose {
                translation: Vec3::ZERO,
                rotation: Quat::from_rotation_z(std::f32::consts::FRAC_PI_2),
            },
            motion,
            friction: 0.3,
        })
        .expect("a valid collider");
    let (x, t) = cube(Vec3::ZERO, 0.05);
    let mesh = weft::mesh::TriMesh {
        positions: x,
        triangles: t,
        corner_uvs: None,
    };
    world
        .add_obstacle(ObstacleDesc {
            mesh,
            pose: Pose {
                translation: Vec3::new(0.0, -1.0, 0.0),
                rotation: Quat::IDENTITY,
            },
            motion,
            friction: 0.3,
            thickness: 0.0,
        })
        .expect("a valid obstacle");
    world
}

#[test]
fn the_world_check_reads_moving_colliders_and_obstacles_at_their_frame_end_pose() {
    let mut world = moving_world();
    let dt = 0.1;
    world.step(dt).expect("a finite step");
    // After the step both bodies have moved 0.1 m along x.
    let solids = support::solids_of(&world);
    let Solid::Capsule { a, b, radius } = solids[0] else {
        panic!("the collider is a capsule: {:?}", solids[0]);
    };
    assert_eq!(radius, 0.006);
    assert!(((a + b) * 0.5 - Vec3::new(0.1, 0.0, 0.0)).length() < 1e-5);
    let meshes = support::obstacle_meshes(&world);
    // Obstacle 0 is the collider's tessellation, obstacle 1 the cube.
    assert_eq!(meshes.len(), 2);
    let (cube_x, _) = &meshes[1];
    let centre = cube_x.iter().copied().sum::<Vec3>() / cube_x.len() as f32;
    assert!((centre - Vec3::new(0.1, -1.0, 0.0)).length() < 1e-5);
    // The cloth, far from both, is clean.
    let check = support::check_cloth(&world, 0, 1e-3);
    assert!(check.is_clean(), "{}", check.summary());

    // Points placed where the bodies are now (not where they started) are inside.
    let probes = [
        // In the capsule (axis along x, now centred at x = 0.1), 4.9 mm deep.
        Vec3::new(0.3, 0.0011, 0.0),
        // In the cube (now spanning x in [0.05, 0.15]).
        Vec3::new(0.06, -1.0, 0.01),
        // Where the cube was before the step: no longer inside.
        Vec3::new(-0.04, -1.0, 0.0),
    ];
    let in_solids = support::inside::vertices_inside_solids(&probes, &solids, 1e-3);
    assert_eq!(
        in_solids.iter().map(|h| h.1).collect::<Vec<_>>(),
        vec![0],
        "{in_solids:?}"
    );
    let (cx, ct) = &meshes[1];
    let cube_now = TriSoup {
        positions: cx,
        triangles: ct,
    };
    assert_eq!(vertices_inside_mesh(&probes, &cube_now), vec![1]);
}

//! A `[[cloth]]` section → a [`ClothDesc`], one function per part of the section:
//! its mesh (`grid`, `obj`, `tube` or `icosphere`), its placement (`transform`),
//! its material, its fixed pins and its collision settings. Every refusal names
//! the key and its line.

use std::path::Path;

use glam::{Affine3A, Quat, Vec2, Vec3};

use super::file::{
    self, ClothSection, DiagonalKind, GridPlane, GridSection, JacobianKind, SceneFile,
};
use super::{PinTrackDesc, SceneError, cloth_line, rotation_from_degrees, track_of};
use crate::collide::resolve::CollisionSettings;
use crate::collide::strain_limit::{StrainLimit, StrainMethod};
use crate::integrate::implicit_euler::{BendingIntegration, BendingModel, BwSettings, RestAngles};
use crate::linalg::{PcgSettings, Preconditioner};
use crate::mesh::{
    Diagonals, GridSpec, MeshError, Topology, TriMesh, grid, read_obj_file_with_lines, tube,
};
use crate::model::baraff_witkin::{BendParams, JacobianMode, MembraneParams};
use crate::world::{Cloth, ClothDesc, ClothError};

/// Where a cloth's keys live: its index in the file and the file's name and text,
/// to turn a refusal into a [`SceneError`] that names the key and its line.
struct ClothKeys<'a> {
    ci: usize,
    file: &'a str,
    text: &'a str,
}

impl ClothKeys<'_> {
    /// A refused value: `key` of `section` (`"cloth"` or `"cloth.<sub>"`, the first of
    /// its kind).
    fn value(&self, section: &str, key: &str, message: String) -> SceneError {
        let ci = self.ci;
        let sub = section.strip_prefix("cloth.");
        SceneError::Value {
            file: self.file.to_string(),
            line: cloth_line(self.text, ci, sub.map(|s| (s, 0)), key),
            key: match sub {
                Some(s) => format!("cloth[{ci}].{s}.{key}"),
                None => format!("cloth[{ci}].{key}"),
            },
            message,
        }
    }

    /// A mesh the generators or the OBJ reader refused.
    fn mesh(&self, source: MeshError) -> SceneError {
        SceneError::Mesh {
            file: self.file.to_string(),
            key: format!("cloth[{}].obj", self.ci),
            source,
        }
    }
}

/// Cloth `ci` of the scene file, checked as [`Cloth::new`] would check it.
pub(super) fn cloth_desc(
    c: &ClothSection,
    ci: usize,
    sf: &SceneFile,
    base: &Path,
    file: &str,
    text: &str,
) -> Result<ClothDesc, SceneError> {
    let at = ClothKeys { ci, file, text };
    let mut mesh = cloth_mesh(c, base, &at)?;
    place(&mut mesh, &c.transform, &at)?;
    let model = material(&c.material, sf, &at)?;
    let pins = fixed_pins(c, &mesh, &at)?;
    let collision = collision_settings(c, &at)?;
    let desc = ClothDesc {
        collision,
        name: c.name.clone().unwrap_or_else(|| format!("cloth{ci}")),
        mesh,
        density: c.density,
        thickness: c.thickness,
        friction: c.friction,
        air_damping: c.air_damping,
        model,
        pins,
        pin_velocity: Vec3::ZERO,
        initial_velocity: Vec3::from_array(c.velocity),
    };
    // Everything `Cloth::new` refuses before it builds the solver, with the line of the key.
    Cloth::check_desc(&desc).map_err(|e| match e {
        ClothError::Parameter { name, message } => {
            cloth_value_error(c, ci, file, text, name, message)
        }
        ClothError::Range(r) => cloth_value_error(c, ci, file, text, r.what, r.message),
        other => SceneError::Cloth {
            file: file.to_string(),
            line: cloth_line(text, ci, None, ""),
            key: format!("cloth[{ci}]"),
            source: other,
        },
    })?;
    Ok(desc)
}

/// The cloth's mesh from exactly one of `grid`, `obj`, `tube` and `icosphere`.
fn cloth_mesh(c: &ClothSection, base: &Path, at: &ClothKeys) -> Result<TriMesh, SceneError> {
    match (&c.grid, &c.obj, &c.tube, &c.icosphere) {
        (None, None, Some(tb), None) => tube_mesh(tb).map_err(|e| match e {
            MeshError::InvalidParameter { name, message } => {
                // The generator's `around`/`along` are the two entries of `vertices`.
                let k = if matches!(name, "around" | "along") {
                    "vertices"
                } else {
                    name
                };
                at.value("cloth.tube", k, format!("{name}: {message}"))
            }
            other => at.mesh(other),
        }),
        (Some(g), None, None, None) => grid_mesh(g, at),
        (None, Some(obj), None, None) => {
            let (mesh, lines) =
                read_obj_file_with_lines(&base.join(obj)).map_err(|e| at.mesh(e))?;
            // The mesh checks of `Cloth::check_desc`, here so that a refusal names the OBJ
            // file and the line of the face.
            mesh.validate()
                .and_then(|()| Topology::build(&mesh))
                .and_then(|topology| mesh.check_slivers(&topology))
                .map_err(|e| at.mesh(lines.place(e)))?;
            Ok(mesh)
        }
        (None, None, None, Some(s)) => {
            if !s.centre.iter().all(|v| v.is_finite()) {
                return Err(at.value("cloth.icosphere", "centre", "must be finite".into()));
            }
            let mut mesh =
                crate::mesh::icosphere(s.radius, s.subdivisions).map_err(|e| match e {
                    MeshError::InvalidParameter { name, message } => {
                        at.value("cloth.icosphere", name, message)
                    }
                    other => at.mesh(other),
                })?;
            mesh.transform(Affine3A::from_translation(Vec3::from_array(s.centre)));
            Ok(mesh)
        }
        _ => Err(SceneError::Value {
            file: at.file.to_string(),
            line: cloth_line(at.text, at.ci, None, ""),
            key: format!("cloth[{}]", at.ci),
            message: "give exactly one of `grid` and `obj` or `tube` or `icosphere`".into(),
        }),
    }
}

/// A `[cloth.grid]`: the generated sheet in its plane, optionally bowed out of it
/// (`bow`, with rest lengths taken from the bowed shape).
fn grid_mesh(g: &GridSection, at: &ClothKeys) -> Result<TriMesh, SceneError> {
    let (u_axis, v_axis) = match g.plane {
        GridPlane::Xz => (Vec3::X, Vec3::NEG_Z),
        GridPlane::Xy => (Vec3::X, Vec3::Y),
        GridPlane::Yz => (Vec3::NEG_Z, Vec3::Y),
    };
    let spec = GridSpec {
        nx: g.vertices[0],
        ny: g.vertices[1],
        size: Vec2::from_array(g.size),
        centre: Vec3::from_array(g.centre),
        u_axis,
        v_axis,
        diagonals: match g.diagonals {
            DiagonalKind::Alternating => Diagonals::Alternating,
            DiagonalKind::Regular => Diagonals::Regular,
        },
    };
    let mut mesh = grid(&spec).map_err(|e| match e {
        // The generator's `nx`/`ny` are the two entries of `vertices`.
        MeshError::InvalidParameter {
            name: name @ ("nx" | "ny"),
            message,
        } => {
            let i = usize::from(name == "ny");
            at.value(
                "cloth.grid",
                "vertices",
                format!("vertices[{i}] = {message}"),
            )
        }
        MeshError::InvalidParameter { name, message } => at.value("cloth.grid", name, message),
        other => at.mesh(other),
    })?;
    if let Some(a) = g.bow {
        if !a.is_finite() {
            return Err(at.value("cloth.grid", "bow", "must be finite".into()));
        }
        let normal = u_axis.cross(v_axis);
        let (nx, ny) = (g.vertices[0] as usize, g.vertices[1] as usize);
        for j in 0..ny {
            for i in 0..nx {
                let t = j as f32 / (ny - 1) as f32;
                let s = i as f32 / (nx - 1) as f32 - 0.5;
                let d = a
                    * (std::f32::consts::PI * t).sin()
                    * (1.0 + 0.5 * (3.0 * std::f32::consts::PI * s).sin());
                mesh.positions[j * nx + i] += d * normal;
            }
        }
        rest_from_positions(&mut mesh, u_axis);
    }
    Ok(mesh)
}

/// `[cloth.transform]`: scale, then rotate, then translate the mesh; material
/// coordinates scale with it.
fn place(mesh: &mut TriMesh, t: &file::TransformSection, at: &ClothKeys) -> Result<(), SceneError> {
    let scale = t.scale.unwrap_or(1.0);
    if !(scale.is_finite() && scale > 0.0) {
        return Err(at.value(
            "cloth.transform",
            "scale",
            format!("must be positive, got {scale}"),
        ));
    }
    if !t
        .translation
        .iter()
        .chain(&t.rotation_deg)
        .all(|v| v.is_finite())
    {
        return Err(at.value("cloth.transform", "translation", "must be finite".into()));
    }
    let affine = Affine3A::from_scale_rotation_translation(
        Vec3::splat(scale),
        rotation_from_degrees(t.rotation_deg),
        Vec3::from_array(t.translation),
    );
    if affine != Affine3A::IDENTITY {
        mesh.transform(affine);
        if let Some(uvs) = &mut mesh.corner_uvs {
            for tri in uvs.iter_mut() {
                for uv in tri.iter_mut() {
                    *uv *= scale;
                }
            }
        }
    }
    Ok(())
}

/// `[cloth.material]` and the file's `[solver]` choices → the Baraff–Witkin model's
/// settings.
fn material(
    m: &file::MaterialSection,
    sf: &SceneFile,
    at: &ClothKeys,
) -> Result<BwSettings, SceneError> {
    for (k, v) in [
        ("stretch_u", m.stretch_u),
        ("stretch_v", m.stretch_v),
        ("shear", m.shear),
        ("bend", m.bend),
        ("stretch_damping", m.stretch_damping),
        ("shear_damping", m.shear_damping),
        ("bend_damping", m.bend_damping),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(at.value(
                "cloth.material",
                k,
                format!("must be non-negative and finite, got {v}"),
            ));
        }
    }
    if !m.rest_stretch.iter().all(|b| b.is_finite() && *b > 0.0) {
        return Err(at.value("cloth.material", "rest_stretch", "must be positive".into()));
    }
    Ok(BwSettings {
        membrane: MembraneParams {
            stretch_u: m.stretch_u,
            stretch_v: m.stretch_v,
            shear: m.shear,
            rest_stretch_u: m.rest_stretch[0],
            rest_stretch_v: m.rest_stretch[1],
            stretch_damping: m.stretch_damping,
            shear_damping: m.shear_damping,
        },
        bend: BendParams {
            stiffness: m.bend,
            damping: m.bend_damping,
        },
        rest_angles: match m.rest_angles {
            file::RestAnglesKind::Flat => RestAngles::Flat,
            file::RestAnglesKind::Initial => RestAngles::Initial,
        },
        bending: match m.bending {
            file::BendingKind::BaraffWitkin => BendingModel::BaraffWitkin,
            file::BendingKind::Dihedral => BendingModel::DiscreteShell,
        },
        bending_integration: match sf.solver.bending_integration {
            file::BendingIntegrationKind::Implicit => BendingIntegration::Implicit,
            file::BendingIntegrationKind::Imex => BendingIntegration::Imex,
        },
        jacobian: match sf.solver.jacobian {
            JacobianKind::Definite => JacobianMode::Definite,
            JacobianKind::Exact => JacobianMode::Exact,
        },
        pcg: PcgSettings {
            max_iterations: sf.solver.cg_max_iterations,
            tolerance: sf.solver.cg_tolerance,
        },
        preconditioner: match sf.solver.preconditioner {
            file::PreconditionerKind::BlockJacobi => Preconditioner::BlockJacobi,
            file::PreconditionerKind::BlockSgs => Preconditioner::BlockSgs,
            file::PreconditionerKind::BlockIc0 => Preconditioner::BlockIc0,
        },
    })
}

/// The vertices of every `[[cloth.pin]]` section (sorted, unique); keyframed sections
/// are pinned here too and moved by their tracks ([`pin_tracks_of`]).
fn fixed_pins(c: &ClothSection, mesh: &TriMesh, at: &ClothKeys) -> Result<Vec<u32>, SceneError> {
    let n = mesh.num_vertices() as u32;
    let mut pins = Vec::new();
    for (pk, p) in c.pins.iter().enumerate() {
        let vertices = pin_section_vertices(p, c.grid.as_ref(), &mesh.positions, n).map_err(
            |(k, message)| SceneError::Value {
                file: at.file.to_string(),
                line: cloth_line(at.text, at.ci, Some(("pin", pk)), k),
                key: format!("cloth[{}].pin[{pk}].{k}", at.ci),
                message,
            },
        )?;
        pins.extend(vertices);
    }
    pins.sort_unstable();
    pins.dedup();
    Ok(pins)
}

/// `[cloth.collision]` with the cloth's `thickness` and `friction` → the collision
/// stage's settings.
fn collision_settings(c: &ClothSection, at: &ClothKeys) -> Result<CollisionSettings, SceneError> {
    let cs = &c.collision;
    if !(cs.repulsion_stiffness.is_finite() && cs.repulsion_stiffness >= 0.0) {
        return Err(at.value(
            "cloth.collision",
            "repulsion_stiffness",
            "must be non-negative".into(),
        ));
    }
    if !(cs.strain_limit.is_finite() && (0.0..1.0).contains(&cs.strain_limit)) {
        return Err(at.value(
            "cloth.collision",
            "strain_limit",
            format!("must be in [0, 1), got {}", cs.strain_limit),
        ));
    }
    if cs.response_passes > crate::collide::resolve::MAX_RESPONSE_PASSES {
        return Err(at.value(
            "cloth.collision",
            "response_passes",
            format!(
                "must be at most {} (each pass is a PCG solve and a collision stage a substep), got {}",
                crate::collide::resolve::MAX_RESPONSE_PASSES,
                cs.response_passes
            ),
        ));
    }
    if !(cs.velocity_smoothing.is_finite() && cs.velocity_smoothing >= 0.0) {
        return Err(at.value(
            "cloth.collision",
            "velocity_smoothing",
            format!("must be finite and >= 0, got {}", cs.velocity_smoothing),
        ));
    }
    Ok(CollisionSettings {
        self_collision: cs.self_collision,
        thickness: c.thickness,
        repulsion_stiffness: cs.repulsion_stiffness,
        friction: c.friction,
        strain_limit: (cs.strain_limit > 0.0).then_some(StrainLimit {
            max_stretch: cs.strain_limit,
            max_compress: cs.strain_limit,
            iterations: cs.strain_iterations,
            method: StrainMethod::GaussSeidel,
        }),
        ccd_rounds: cs.ccd_rounds,
        velocity_smoothing: (cs.velocity_smoothing > 0.0 && cs.smoothing_iterations > 0)
            .then_some((cs.velocity_smoothing, cs.smoothing_iterations)),
        response_passes: cs.response_passes,
        ..CollisionSettings::default()
    })
}

/// Material coordinates from the current positions, so rest lengths are the
/// initial lengths (the `pile-N` scenes): each triangle is laid flat in its own
/// plane with u along the projection of the grid's `u_axis`, corner 0 kept at
/// its grid (u, v). Only differences of (u, v) within a triangle matter.
fn rest_from_positions(mesh: &mut crate::mesh::TriMesh, u_axis: Vec3) {
    let Some(uvs) = &mut mesh.corner_uvs else {
        return;
    };
    for (t, tri) in mesh.triangles.iter().enumerate() {
        let p = tri.map(|i| mesh.positions[i as usize]);
        let n = (p[1] - p[0]).cross(p[2] - p[0]).normalize_or_zero();
        let u = (u_axis - u_axis.dot(n) * n).normalize_or_zero();
        let v = n.cross(u);
        let base = uvs[t][0];
        for k in 0..3 {
            let d = p[k] - p[0];
            uvs[t][k] = base + Vec2::new(d.dot(u), d.dot(v));
        }
    }
}
/// Whether the `centre` of a generated cloth lies beyond `limits::MAX_COORDINATE`.
fn centre_out_of_range(c: &ClothSection) -> bool {
    let centre = c
        .grid
        .as_ref()
        .map(|g| g.centre)
        .or(c.tube.as_ref().map(|t| t.centre))
        .or(c.icosphere.as_ref().map(|i| i.centre));
    centre.is_some_and(|p| crate::limits::check_point("centre", Vec3::from_array(p)).is_err())
}

/// A value of cloth `ci` that [`Cloth::check_desc`] refused (`name` is its `ClothDesc` field)
/// as an error on the scene key that set it: the key itself (`density`, `thickness`,
/// `velocity`, ...), or for the vertices and material coordinates the key that placed them
/// (`transform.scale` or `transform.translation` when given, else the mesh's source).
fn cloth_value_error(
    c: &ClothSection,
    ci: usize,
    file: &str,
    text: &str,
    name: &str,
    message: String,
) -> SceneError {
    let source = if c.grid.is_some() {
        "grid"
    } else if c.tube.is_some() {
        "tube"
    } else if c.icosphere.is_some() {
        "icosphere"
    } else {
        "obj"
    };
    let (sub, key): (Option<&str>, &str) = match name {
        "positions" | "uvs" if c.transform.scale.is_some_and(|s| s != 1.0) => {
            (Some("transform"), "scale")
        }
        "positions" if c.transform.translation != [0.0; 3] => (Some("transform"), "translation"),
        "positions" | "uvs" if source == "obj" => (None, "obj"),
        "positions" if centre_out_of_range(c) => (Some(source), "centre"),
        "positions" | "uvs" => (
            Some(source),
            if source == "grid" { "size" } else { "radius" },
        ),
        "velocity" | "pin_velocity" => (None, "velocity"),
        "density" | "thickness" | "friction" | "air_damping" => (None, name),
        _ => (None, source),
    };
    let line = cloth_line(text, ci, sub.map(|s| (s, 0)), key);
    SceneError::Value {
        file: file.to_string(),
        line,
        key: match sub {
            Some(s) => format!("cloth[{ci}].{s}.{key}"),
            None => format!("cloth[{ci}].{key}"),
        },
        message: format!("{name}: {message}"),
    }
}

/// The vertices one `[[cloth.pin]]` section names (indices, grid coordinates and a
/// region of `positions`, in that order, possibly repeated); an error is (key, message).
fn pin_section_vertices(
    p: &file::PinSection,
    grid: Option<&file::GridSection>,
    positions: &[Vec3],
    n: u32,
) -> Result<Vec<u32>, (&'static str, String)> {
    let mut pins = Vec::new();
    for &v in &p.vertices {
        if v >= n {
            return Err((
                "vertices",
                format!("vertex {v} out of range (the cloth has {n} vertices)"),
            ));
        }
        pins.push(v);
    }
    if !p.grid.is_empty() {
        let Some(g) = grid else {
            return Err(("grid", "grid coordinates need a grid cloth".into()));
        };
        for &[i, j] in &p.grid {
            if i >= g.vertices[0] || j >= g.vertices[1] {
                return Err((
                    "grid",
                    format!(
                        "[{i}, {j}] outside the {}x{} grid",
                        g.vertices[0], g.vertices[1]
                    ),
                ));
            }
            pins.push(j * g.vertices[0] + i);
        }
    }
    if let Some(r) = &p.region {
        let (lo, hi) = (Vec3::from_array(r.min), Vec3::from_array(r.max));
        let before = pins.len();
        pins.extend(
            positions
                .iter()
                .enumerate()
                .filter(|(_, x)| x.cmpge(lo).all() && x.cmple(hi).all())
                .map(|(i, _)| i as u32),
        );
        if pins.len() == before {
            return Err(("region", "the region holds no vertex".into()));
        }
    }
    Ok(pins)
}

/// The keyframed pin sections of cloth `ci` (`[[cloth.pin]]` with `keyframes`),
/// each as its vertices, pivot and track, checked against `desc` (the cloth as
/// built: its mesh, placed). A vertex of a keyframed section may belong to no other
/// section.
pub(super) fn pin_tracks_of(
    c: &ClothSection,
    ci: usize,
    desc: &ClothDesc,
    file: &str,
    text: &str,
) -> Result<Vec<PinTrackDesc>, SceneError> {
    let n = desc.mesh.num_vertices() as u32;
    let perr = |pk: usize, line_key: &str, k: String, message: String| SceneError::Value {
        file: file.to_string(),
        line: cloth_line(text, ci, Some(("pin", pk)), line_key),
        key: format!("cloth[{ci}].pin[{pk}].{k}"),
        message,
    };
    let mut sections = Vec::with_capacity(c.pins.len());
    for (pk, p) in c.pins.iter().enumerate() {
        let mut vertices = pin_section_vertices(p, c.grid.as_ref(), &desc.mesh.positions, n)
            .map_err(|(k, message)| perr(pk, k, k.to_string(), message))?;
        vertices.sort_unstable();
        vertices.dedup();
        sections.push(vertices);
    }
    let mut tracks = Vec::new();
    for (pk, p) in c.pins.iter().enumerate() {
        if p.keyframes.is_empty() {
            if p.pivot.is_some() {
                return Err(perr(
                    pk,
                    "pivot",
                    "pivot".into(),
                    "a pivot needs `keyframes`".into(),
                ));
            }
            continue;
        }
        let pivot = p.pivot.unwrap_or([0.0; 3]);
        if !pivot.iter().all(|x| x.is_finite()) {
            return Err(perr(pk, "pivot", "pivot".into(), "must be finite".into()));
        }
        let track = track_of(&p.keyframes)
            .map_err(|(k, message)| perr(pk, "time", k, message))?
            .expect("the section has keyframes");
        for (other, vs) in sections.iter().enumerate() {
            if other == pk {
                continue;
            }
            if let Some(v) = sections[pk].iter().find(|v| vs.binary_search(v).is_ok()) {
                return Err(perr(
                    pk,
                    "keyframes",
                    "keyframes".into(),
                    format!(
                        "vertex {v} is also pinned by pin[{other}]; a keyframed pin section must not share vertices"
                    ),
                ));
            }
        }
        tracks.push(PinTrackDesc {
            vertices: sections[pk].clone(),
            pivot: Vec3::from_array(pivot),
            track,
        });
    }
    Ok(tracks)
}

/// The mesh of a `[cloth.tube]`: `mesh::tube` (axis y, centred at the
/// origin) turned onto the chosen axis and moved to `centre`. The turns are
/// proper rotations, so the winding normal still points outward.
fn tube_mesh(tb: &file::TubeSection) -> Result<crate::mesh::TriMesh, MeshError> {
    if !tb.centre.iter().all(|x| x.is_finite()) {
        return Err(MeshError::InvalidParameter {
            name: "centre",
            message: "must be finite".into(),
        });
    }
    let diagonals = match tb.diagonals {
        DiagonalKind::Alternating => Diagonals::Alternating,
        DiagonalKind::Regular => Diagonals::Regular,
    };
    let mut mesh = tube(
        tb.radius,
        tb.length,
        tb.vertices[0],
        tb.vertices[1],
        diagonals,
    )?;
    let rotation = match tb.axis {
        file::TubeAxis::X => Quat::from_rotation_z(-std::f32::consts::FRAC_PI_2),
        file::TubeAxis::Y => Quat::IDENTITY,
        file::TubeAxis::Z => Quat::from_rotation_x(std::f32::consts::FRAC_PI_2),
    };
    let affine = Affine3A::from_rotation_translation(rotation, Vec3::from_array(tb.centre));
    if affine != Affine3A::IDENTITY {
        mesh.transform(affine);
    }
    Ok(mesh)
}

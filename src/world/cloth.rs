//! A cloth of the world: its descriptor, its checks, and what a step needs sized at creation.

use glam::{Vec2, Vec3};

use super::undo::ClothUndo;
use crate::collide::resolve::{ClothCollision, CollisionSettings};
use crate::collide::strain_limit::EdgeDrive;
use crate::integrate::contact::{Constraints, PinTarget};
use crate::integrate::implicit_euler::{BwBuildError, BwSettings, ImplicitEuler, triangle_rests};
use crate::integrate::isometric_cloth::{IsometricCloth, IsometricClothError, IsometricDesc};
use crate::integrate::pin_track::PinTrack;
use crate::limits::{self, RangeError};
use crate::mesh::{MeshError, Topology, TriMesh};
use crate::pipeline::{BwStep, ClothModel, SimCloth};
use crate::runtime::arena::FrameArena;
use crate::state::{ClothState, lumped_masses};

/// A cloth's frame arena starts with this many bytes per triangle: room for
/// the collision stage's first candidate list (16 tests of 21 bytes per
/// triangle) grown twice. It grows to what the frames need (reported as a pool
/// overflow) and keeps that size; drape-33 settles near 1,300 bytes per
/// triangle, most of it the lists of the CCD rounds' swept boxes.
pub(super) const ARENA_BYTES_PER_TRIANGLE: usize = 1024;

/// Everything needed to create a cloth.
#[derive(Clone, Debug)]
pub struct ClothDesc {
    /// Name used in outputs.
    pub name: String,
    /// The mesh (positions are the initial state).
    pub mesh: TriMesh,
    /// Areal density ρ (kg/m²).
    pub density: f32,
    /// Thickness η: contact offset from colliders (m).
    pub thickness: f32,
    /// Coulomb friction coefficient of the cloth's surface.
    pub friction: f32,
    /// Air damping c (1/s): a drag force −c m v on every vertex.
    pub air_damping: f32,
    /// The Baraff–Witkin material and solver settings.
    pub model: BwSettings,
    /// Pinned vertices.
    pub pins: Vec<u32>,
    /// Velocity of every pin (m/s): pins move rigidly with it.
    pub pin_velocity: Vec3,
    /// Initial velocity of every vertex (m/s).
    pub initial_velocity: Vec3,
    /// The collision stage (self-collision, obstacle meshes, strain limiting).
    pub collision: CollisionSettings,
}

/// Why a cloth could not be created.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClothError {
    /// The mesh is invalid.
    #[error(transparent)]
    Mesh(#[from] MeshError),
    /// The rest state is degenerate.
    #[error(transparent)]
    Rest(#[from] BwBuildError),
    /// A parameter is out of range.
    #[error("cloth parameter `{name}`: {message}")]
    Parameter {
        /// The parameter.
        name: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A vertex belongs to no triangle, so it has no mass.
    #[error("vertex {vertex} belongs to no triangle")]
    IsolatedVertex {
        /// The vertex.
        vertex: u32,
    },
    /// The isometric model (Wang 2012) cannot be built on this mesh or with these settings.
    #[error(transparent)]
    Isometric(#[from] IsometricClothError),
    /// A value is outside its range ([`crate::limits`]).
    #[error(transparent)]
    Range(#[from] RangeError),
}

/// One cloth: what the substep reads and writes of it (`pipeline::SimCloth`: its state, rest
/// data and every scratch buffer its step needs), its name, keyframed pins and frame arena.
#[derive(Debug)]
pub struct Cloth {
    pub(crate) name: String,
    pub(crate) sim: SimCloth,
    /// Keyframed pin targets ([`World::set_pin_track`]); each tracked vertex is pinned.
    pub(crate) pin_tracks: Vec<PinTrack>,
    /// The cloth's frame arena (`runtime::arena`): reset by `World::step` at the start of every
    /// frame, the scratch of the cloth's substeps comes from it.
    pub(crate) arena: FrameArena,
    /// What the cloth carries into the next frame, saved by `World::step` so that a failed
    /// step can be undone (`undo.rs`).
    pub(crate) undo: ClothUndo,
}

impl Cloth {
    /// Validates `desc` ([`Cloth::check_desc`]) and builds a Baraff–Witkin cloth with every
    /// buffer sized.
    pub fn new(desc: ClothDesc) -> Result<Self, ClothError> {
        let topology = Cloth::check_desc(&desc)?;
        let system = ImplicitEuler::new(&desc.mesh, &topology, desc.model)?;
        let areas: Vec<f64> = system.triangle_rest().iter().map(|r| r.area).collect();
        Cloth::build(
            desc,
            &topology,
            &areas,
            |mesh, edges, rest_lengths, state| {
                ClothModel::BaraffWitkin(Box::new(BwStep {
                    constraints: Constraints::new(mesh.num_vertices()),
                    backup: state.clone(),
                    measure_before: vec![0.0; mesh.num_triangles()],
                    measure_after: vec![0.0; mesh.num_triangles()],
                    collision: ClothCollision::new(
                        &mesh.triangles,
                        edges,
                        rest_lengths,
                        &mesh.positions,
                    ),
                    system,
                }))
            },
        )
    }

    /// What both models share, built from a checked `desc`: the state (lumped masses from the
    /// triangles' rest `areas`, the initial velocity, the pins), edges and rest lengths, the
    /// external-force buffer, the collision settings, the frame arena; `model` builds the
    /// model's own step data from the mesh, edges, rest lengths and initial state.
    fn build(
        desc: ClothDesc,
        topology: &Topology,
        areas: &[f64],
        model: impl FnOnce(&TriMesh, &[[u32; 2]], &[f32], &ClothState) -> ClothModel,
    ) -> Result<Self, ClothError> {
        let mesh = desc.mesh;
        let n = mesh.num_vertices();
        let mass = lumped_masses(n, &mesh.triangles, areas, f64::from(desc.density));
        // `ClothState::new` requires finite positive masses: a density and rest areas in range
        // can still multiply out of it.
        limits::check_vertex_masses("density", &mass)?;
        let mut state = ClothState::new(mesh.positions.clone(), mass);
        state.velocities_mut().fill(desc.initial_velocity);
        let mut pins = Vec::with_capacity(desc.pins.len());
        for &p in &desc.pins {
            if p as usize >= n {
                return Err(ClothError::Parameter {
                    name: "pins",
                    message: format!("pinned vertex {p} out of range (the cloth has {n} vertices)"),
                });
            }
            if state.is_pinned(p as usize) {
                continue;
            }
            state.set_pinned(p as usize, true);
            state.velocities_mut()[p as usize] = desc.pin_velocity;
            pins.push(PinTarget {
                vertex: p,
                target: mesh.positions[p as usize],
                velocity: desc.pin_velocity,
            });
        }
        let edges = topology.edges().to_vec();
        let rest_lengths = rest_edge_lengths(&mesh, topology);
        let c = desc.collision;
        check_non_negative("collision.repulsion_stiffness", c.repulsion_stiffness)?;
        check_non_negative("collision.friction", c.friction)?;
        let model = model(&mesh, &edges, &rest_lengths, &state);
        let ntri = mesh.num_triangles();
        let sim = SimCloth {
            triangles: mesh.triangles,
            edges,
            rest_lengths,
            state,
            pins,
            external: vec![Vec3::ZERO; n],
            thickness: desc.thickness,
            friction: desc.friction,
            air_damping: desc.air_damping,
            collision_settings: desc.collision,
            model,
        };
        Ok(Self {
            name: desc.name,
            undo: ClothUndo::for_cloth(&sim),
            sim,
            pin_tracks: Vec::new(),
            arena: FrameArena::with_capacity(ntri * ARENA_BYTES_PER_TRIANGLE),
        })
    }

    /// Every check of [`Cloth::new`] that needs no solver data, in its order; returns the
    /// mesh's topology. The mesh: [`TriMesh::validate`], [`Topology::build`],
    /// [`TriMesh::check_slivers`], no isolated vertex, [`limits::check_cloth_geometry`]; then
    /// `density` (positive), `thickness` (the cloth's and the collision stage's, against
    /// the size and the median edge length, [`limits::check_thickness`]), `friction` and `air_damping` (non-negative), `velocity`
    /// and `pin_velocity` ([`limits::check_speed`]), and the lumped masses from the rest areas
    /// (material coordinates, else positions; [`limits::check_vertex_masses`], named
    /// `density`). Scene files run it when they load, to name the line of what it refuses.
    pub fn check_desc(desc: &ClothDesc) -> Result<Topology, ClothError> {
        let mesh = &desc.mesh;
        mesh.validate()?;
        let topology = Topology::build(mesh)?;
        mesh.check_slivers(&topology)?;
        let n = mesh.num_vertices();
        if let Some(v) = (0..n).find(|&v| topology.vertex_triangles(v).is_empty()) {
            return Err(ClothError::IsolatedVertex { vertex: v as u32 });
        }
        limits::check_cloth_geometry(&mesh.positions, mesh.corner_uvs.as_deref())?;
        check_positive("density", desc.density)?;
        let size = limits::cloth_size(&mesh.positions);
        let median_edge = mesh.median_edge_length(&topology) as f32;
        limits::check_thickness(desc.thickness, size, median_edge)?;
        limits::check_thickness(desc.collision.thickness, size, median_edge)?;
        check_non_negative("friction", desc.friction)?;
        check_non_negative("air_damping", desc.air_damping)?;
        limits::check_speed("velocity", desc.initial_velocity)?;
        limits::check_speed("pin_velocity", desc.pin_velocity)?;
        let areas: Vec<f64> = match &mesh.corner_uvs {
            Some(uvs) => uvs
                .iter()
                .map(|[a, b, c]| 0.5 * f64::from((*b - *a).perp_dot(*c - *a)).abs())
                .collect(),
            None => mesh
                .triangles
                .iter()
                .map(|t| {
                    let [a, b, c] = t.map(|i| mesh.positions[i as usize].as_dvec3());
                    0.5 * (b - a).cross(c - a).length()
                })
                .collect(),
        };
        let mass = lumped_masses(n, &mesh.triangles, &areas, f64::from(desc.density));
        limits::check_vertex_masses("density", &mass)?;
        Ok(topology)
    }

    /// Builds a cloth integrated by the isometric model of Wang 2012 (`crate::integrate::
    /// isometric_cloth`): `desc.mesh` is the input (base) mesh; the cloth's state, triangles,
    /// edges and every output are its 4:1 subdivision, black nodes first with the input's vertex
    /// indices (so `desc.pins`, given on the input mesh, pin black nodes). Masses are the areal
    /// density times ⅓ of the incident subdivided triangles' rest areas (Wang 2012 §3.1; `docs/methods/references.md`).
    /// `desc.model` (Baraff–Witkin) is not used: the cloth builds no Baraff–Witkin system,
    /// filters or collision stage beside the model's own (`pipeline::ClothModel::Isometric`).
    pub fn new_isometric(desc: ClothDesc, iso: IsometricDesc) -> Result<Self, ClothError> {
        desc.mesh.validate()?;
        let nv = desc.mesh.num_vertices();
        if let Some(&p) = desc.pins.iter().find(|&&p| p as usize >= nv) {
            return Err(ClothError::Parameter {
                name: "pins",
                message: format!("pinned vertex {p} out of range (the cloth has {nv} vertices)"),
            });
        }
        let model = IsometricCloth::new(&desc.mesh, iso).map_err(|e| match e {
            IsometricClothError::Mesh(m) => ClothError::Mesh(m),
            other => ClothError::Isometric(other),
        })?;
        let desc = ClothDesc {
            mesh: model.mesh().clone(),
            ..desc
        };
        let topology = Cloth::check_desc(&desc)?;
        let areas: Vec<f64> = triangle_rests(&desc.mesh)?.iter().map(|r| r.area).collect();
        Cloth::build(desc, &topology, &areas, |_, _, _, _| {
            ClothModel::Isometric(Box::new(model))
        })
    }

    /// The isometric model, when this cloth uses it.
    #[must_use]
    pub fn isometric(&self) -> Option<&IsometricCloth> {
        self.sim.model.isometric()
    }

    /// Name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The state.
    #[must_use]
    pub fn state(&self) -> &ClothState {
        &self.sim.state
    }

    /// Thickness η (m): the distance the cloth keeps from colliders, obstacles and itself.
    #[must_use]
    pub fn thickness(&self) -> f32 {
        self.sim.thickness
    }

    /// Triangles (vertex indices) of the simulated and rendered mesh.
    #[must_use]
    pub fn triangles(&self) -> &[[u32; 3]] {
        &self.sim.triangles
    }

    /// Unique edges and their rest lengths (m).
    #[must_use]
    pub fn edges(&self) -> (&[[u32; 2]], &[f32]) {
        (&self.sim.edges, &self.sim.rest_lengths)
    }

    /// The Baraff–Witkin system (rest data, settings); `None` for an isometric cloth, which
    /// builds none.
    #[must_use]
    pub fn system(&self) -> Option<&ImplicitEuler> {
        self.sim.model.baraff_witkin().map(|bw| &bw.system)
    }

    /// Pinned vertices and their current targets.
    #[must_use]
    pub fn pins(&self) -> &[PinTarget] {
        &self.sim.pins
    }

    /// The keyframed pin targets of this cloth ([`World::set_pin_track`]).
    #[must_use]
    pub fn pin_tracks(&self) -> &[PinTrack] {
        &self.pin_tracks
    }

    /// Stops tracking `vertex` in every pin track (the host took it over or freed
    /// it), drops emptied tracks and refreshes the slots into the pin list.
    pub(super) fn forget_tracked_pin(&mut self, vertex: u32) {
        let mut changed = false;
        for t in &mut self.pin_tracks {
            changed |= t.forget(vertex);
        }
        if changed {
            self.pin_tracks.retain(|t| !t.is_empty());
        }
        for t in &mut self.pin_tracks {
            t.reslot(&self.sim.pins);
        }
    }

    /// Sets the velocities of the tracked pins for a substep of length `h` ending at
    /// `t_end` on their tracks.
    pub(super) fn drive_pin_tracks(&mut self, t_end: f64, h: f32) {
        for t in &self.pin_tracks {
            t.drive(&mut self.sim.pins, t_end, h);
        }
    }

    /// Puts the tracked pins and their vertices exactly on their tracks at `t`.
    pub(super) fn land_pin_tracks(&mut self, t: f64) {
        // Without tracks the positions are left alone, and unwritten (step control reuses
        // what it measured at them: `ClothState::mark_positions`).
        if self.pin_tracks.is_empty() {
            return;
        }
        let x = self.sim.state.positions_mut();
        for track in &self.pin_tracks {
            track.land(&mut self.sim.pins, x, t);
        }
    }

    /// Largest edge strain |l / l0 − 1| now.
    #[must_use]
    pub fn max_strain(&self) -> f32 {
        let x = self.sim.state.positions();
        self.sim
            .edges
            .iter()
            .zip(&self.sim.rest_lengths)
            .map(|(e, l0)| ((x[e[0] as usize] - x[e[1] as usize]).length() / l0 - 1.0).abs())
            .fold(0.0, f32::max)
    }

    /// Largest edge strain |l / l0 − 1| now over the free edges, the edges forced by pins and
    /// those forced by bodies (0 for a class without edges), as [`crate::collide::strain_limit::StrainLimiter::drive`] classifies
    /// them after the last collision stage (`collide::strain_limit`, "Forced edges").
    #[must_use]
    pub fn max_strain_by_drive(&self) -> [f32; 3] {
        let x = self.sim.state.positions();
        let inv_mass = self.sim.state.inv_masses();
        let limiter = self.sim.model.collision().strain_limiter();
        let mut out = [0.0f32; 3];
        for (&e, l0) in self.sim.edges.iter().zip(&self.sim.rest_lengths) {
            let s = ((x[e[0] as usize] - x[e[1] as usize]).length() / l0 - 1.0).abs();
            let k = match limiter.drive(e, inv_mass) {
                EdgeDrive::Free => 0,
                EdgeDrive::Pins => 1,
                EdgeDrive::Bodies => 2,
            };
            out[k] = out[k].max(s);
        }
        out
    }

    /// Kinetic + gravitational + elastic energy (J); air drag and damping
    /// only ever remove it.
    #[must_use]
    pub fn total_energy(&self, gravity: Vec3) -> f64 {
        let x = self.sim.state.positions();
        let potential: f64 = x
            .iter()
            .zip(self.sim.state.masses())
            .map(|(p, m)| -f64::from(*m) * f64::from(gravity.dot(*p)))
            .sum();
        let elastic = match &self.sim.model {
            ClothModel::Isometric(iso) => iso.bending_energy(),
            ClothModel::BaraffWitkin(bw) => bw.system.elastic_energy(x),
        };
        self.sim.state.kinetic_energy() + potential + elastic
    }
}

/// Rest lengths from the material coordinates when present (the first
/// triangle holding the edge), else from the initial positions.
pub(super) fn rest_edge_lengths(mesh: &TriMesh, topology: &Topology) -> Vec<f32> {
    topology
        .edges()
        .iter()
        .enumerate()
        .map(|(e, &[a, b])| {
            if let Some(uvs) = &mesh.corner_uvs {
                let t = topology.edge_triangles(e)[0] as usize;
                let tri = mesh.triangles[t];
                let uv_of = |v: u32| -> Vec2 {
                    let k = tri
                        .iter()
                        .position(|&c| c == v)
                        .expect("edge vertex is a corner of its triangle");
                    uvs[t][k]
                };
                (uv_of(a) - uv_of(b)).length()
            } else {
                (mesh.positions[a as usize] - mesh.positions[b as usize]).length()
            }
        })
        .collect()
}

pub(super) fn check_positive(name: &'static str, v: f32) -> Result<(), ClothError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(ClothError::Parameter {
            name,
            message: format!("must be positive and finite, got {v}"),
        })
    }
}

pub(super) fn check_non_negative(name: &'static str, v: f32) -> Result<(), ClothError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(ClothError::Parameter {
            name,
            message: format!("must be non-negative and finite, got {v}"),
        })
    }
}

//! Scene files: TOML → a hecs world of scene entities → a simulation [`World`].
//!
//! This module is an adapter: the core never names hecs or TOML. Loading goes
//! in three steps, each with typed errors that name the file, line and key:
//!
//! 1. [`parse`]: TOML text → [`file::SceneFile`] (unknown keys and wrong types
//!    are errors);
//! 2. [`Scene::from_file`]: meshes are generated or read, pins resolved,
//!    parameters checked, and every cloth and collider becomes an entity with
//!    its components (`Name`, `ClothDesc`, `ColliderDesc`, `SpawnOrder`);
//! 3. [`Scene::instantiate`]: the entities, in spawn order, become a [`World`].
#![deny(unsafe_code)]

mod cloth;
pub mod file;

use std::path::{Path, PathBuf};

use glam::{EulerRot, Quat, Vec3};

use crate::collide::shapes::{Motion, Pose, Shape};
use crate::collide::track::{Keyframe, Track, TrackError, pose_from_euler_deg};
use crate::integrate::isometric_cloth::IsometricDesc;
use crate::mesh::{MeshError, read_obj_file_with_lines};
use crate::runtime::budget::Budget;
use crate::world::{
    Animated, ClothDesc, ClothError, ColliderDesc, ObstacleDesc, StepControl, World, WorldSettings,
    tessellate,
};
use cloth::{cloth_desc, pin_tracks_of};
use file::{ClothSection, ColliderSection, KeyframeSection, ObstacleSection, SceneFile, ShapeKind};

/// A scene error: what went wrong and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SceneError {
    /// The file could not be read.
    #[error("{file}: cannot read: {message}")]
    Io {
        /// Path.
        file: String,
        /// OS message.
        message: String,
    },
    /// Syntax, an unknown key or a wrong type.
    #[error("{file}:{line}:{column}: key `{key}`: {message}")]
    Parse {
        /// Path.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// Dotted key path (e.g. `cloth[0].material.bend`).
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A value parsed but is out of range or inconsistent.
    #[error("{file}:{line}: key `{key}`: {message}")]
    Value {
        /// Path.
        file: String,
        /// 1-based line of the key (0 when unknown).
        line: usize,
        /// Dotted key path.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A referenced mesh is invalid.
    #[error("{file}: key `{key}`: {source}")]
    Mesh {
        /// The scene file.
        file: String,
        /// Dotted key path of the cloth.
        key: String,
        /// The mesh error (names the OBJ file and line, or the face).
        source: MeshError,
    },
    /// A cloth could not be created.
    #[error("{file}:{line}: key `{key}`: {source}")]
    Cloth {
        /// The scene file.
        file: String,
        /// 1-based line of the cloth's `[[cloth]]` header.
        line: usize,
        /// Dotted key path of the cloth.
        key: String,
        /// Why.
        source: ClothError,
    },
}

/// The line of a cloth's `[[cloth]]` header, for the errors only the full build finds
/// ([`Scene::instantiate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SceneLine(pub usize);

/// The entity's place in the scene file (cloths and colliders are created in
/// this order, so the world, and its state hash, never depend on hecs's
/// storage order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SpawnOrder(pub u32);

/// One keyframed pin section of a cloth (`[[cloth.pin]]` with `keyframes`): a
/// component of the cloth's entity, a list because a cloth may have several.
#[derive(Clone, Debug, PartialEq)]
pub struct PinTrackDesc {
    /// The section's vertices (sorted, unique).
    pub vertices: Vec<u32>,
    /// The point rotations turn about (m).
    pub pivot: Vec3,
    /// The keyframes.
    pub track: Track,
}

/// A loaded scene: run settings and the scene entities.
pub struct Scene {
    /// Scene name.
    pub name: String,
    /// Frames per second (Hz).
    pub fps: f32,
    /// Frames to run.
    pub frames: u32,
    /// World settings.
    pub settings: WorldSettings,
    /// Scene entities: cloths (`ClothDesc`) and colliders (`ColliderDesc`),
    /// each with a `SpawnOrder`.
    pub entities: hecs::World,
    /// The scene file.
    pub path: PathBuf,
    /// The preview camera (`[camera]`), checked; `None` = default framing.
    pub camera: Option<file::CameraSection>,
    /// Pairs of cloths (file order) that do not collide with each other (`no_collide_with`).
    pub apart: Vec<[usize; 2]>,
}

impl std::fmt::Debug for Scene {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scene")
            .field("name", &self.name)
            .field("fps", &self.fps)
            .field("frames", &self.frames)
            .field("entities", &self.entities.len())
            .finish()
    }
}

/// Reads and loads a scene file.
pub fn load(path: &Path) -> Result<Scene, SceneError> {
    let text = std::fs::read_to_string(path).map_err(|e| SceneError::Io {
        file: path.display().to_string(),
        message: e.to_string(),
    })?;
    Scene::from_toml(&text, path)
}

/// Parses scene TOML (`path` names the file in errors).
pub fn parse(text: &str, path: &Path) -> Result<SceneFile, SceneError> {
    let file = path.display().to_string();
    let de =
        toml::Deserializer::parse(text).map_err(|e| toml_error(&file, text, e, String::new()))?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        toml_error(&file, text, e.into_inner(), key)
    })
}
fn toml_error(file: &str, text: &str, e: toml::de::Error, key: String) -> SceneError {
    let (line, column) = e.span().map_or((0, 0), |s| line_column(text, s.start));
    let key = if key.is_empty() || key == "." {
        key_at(text, e.span().map_or(0, |s| s.start)).unwrap_or_else(|| "<root>".into())
    } else {
        key
    };
    SceneError::Parse {
        file: file.to_string(),
        line,
        column,
        key,
        message: e.message().to_string(),
    }
}

/// 1-based line and column of byte offset `at`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(at, |p| at - p - 1) + 1;
    (line, column)
}

/// The bare key written at byte offset `at` (for errors whose path is empty).
fn key_at(text: &str, at: usize) -> Option<String> {
    let rest = text.get(at..)?;
    let key: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    (!key.is_empty()).then_some(key)
}

/// 1-based line where `key = ` (or `[key]`) first appears at or after the
/// `nth` occurrence of the section header `section`; 0 when not found. Used
/// to point value errors at their line.
fn find_key_line(text: &str, section: &str, nth: usize, key: &str) -> usize {
    let mut seen = 0usize;
    let mut in_section = section.is_empty();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with('[') {
            let header = line.trim_matches(|c| c == '[' || c == ']').trim();
            if header == section {
                in_section = seen == nth;
                seen += 1;
            } else if in_section && !header.starts_with(&format!("{section}.")) {
                in_section = false;
            }
            if in_section && header.ends_with(key) && !key.is_empty() {
                return i + 1;
            }
            continue;
        }
        if in_section {
            if let Some((k, _)) = line.split_once('=') {
                if k.trim() == key {
                    return i + 1;
                }
            }
        }
    }
    0
}

/// The header name of a `[table]` or `[[array]]` line, if `line` is one.
fn header_of(line: &str) -> Option<&str> {
    let line = line.trim();
    line.starts_with('[').then(|| {
        line.split(']')
            .next()
            .unwrap_or("")
            .trim_start_matches('[')
            .trim()
    })
}

/// 1-based line of `key` in cloth `ci` (the `ci`-th `[[cloth]]`): in its `nth` sub-table
/// `[cloth.<sub>]` / `[[cloth.<sub>]]` when `sub` is `Some((sub, nth))` (or on the `sub = {...}`
/// line of an inline table), else among the cloth's own keys; the sub-table's header line, or
/// the cloth's, when the key is not written (a default); 0 only when the cloth has no
/// `[[cloth]]` header (a text that does not parse).
fn cloth_line(text: &str, ci: usize, sub: Option<(&str, usize)>, key: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    // The cloth's region: from its header to the next header outside `cloth.*`.
    let Some(start) = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| header_of(l) == Some("cloth"))
        .nth(ci)
        .map(|(i, _)| i)
    else {
        return 0;
    };
    let end = lines[start + 1..]
        .iter()
        .position(|l| header_of(l).is_some_and(|h| h == "cloth" || !h.starts_with("cloth.")))
        .map_or(lines.len(), |k| start + 1 + k);
    let key_in = |from: usize, to: usize, key: &str| {
        (from..to).find(|&i| {
            let l = lines[i].trim();
            header_of(l).is_none() && l.split_once('=').is_some_and(|(k, _)| k.trim() == key)
        })
    };
    // The block of the cloth's own keys ends at its first sub-table.
    let own_end = lines[start + 1..end]
        .iter()
        .position(|l| header_of(l).is_some())
        .map_or(end, |k| start + 1 + k);
    let found = match sub {
        None => key_in(start + 1, own_end, key).unwrap_or(start),
        Some((name, nth)) => {
            let full = format!("cloth.{name}");
            let header = lines[start + 1..end]
                .iter()
                .enumerate()
                .filter(|(_, l)| header_of(l) == Some(full.as_str()))
                .nth(nth)
                .map(|(k, _)| start + 1 + k);
            match header {
                Some(h) => {
                    let h_end = lines[h + 1..end]
                        .iter()
                        .position(|l| header_of(l).is_some())
                        .map_or(end, |k| h + 1 + k);
                    key_in(h + 1, h_end, key).unwrap_or(h)
                }
                // An inline table (`grid = { ... }`) on the cloth's own lines.
                None => key_in(start + 1, own_end, name).unwrap_or(start),
            }
        }
    };
    found + 1
}

impl Scene {
    /// Parses and loads scene text; relative paths resolve against `path`'s folder.
    pub fn from_toml(text: &str, path: &Path) -> Result<Scene, SceneError> {
        let parsed = parse(text, path)?;
        Scene::from_file(&parsed, text, path)
    }

    /// Builds the scene entities from a parsed file.
    pub fn from_file(sf: &SceneFile, text: &str, path: &Path) -> Result<Scene, SceneError> {
        let file = path.display().to_string();
        let value_err = |section: &str, nth: usize, key: &str, dotted: String, message: String| {
            SceneError::Value {
                file: file.clone(),
                line: find_key_line(text, section, nth, key),
                key: dotted,
                message,
            }
        };
        if !(sf.fps.is_finite() && sf.fps > 0.0) {
            return Err(value_err(
                "",
                0,
                "fps",
                "fps".into(),
                format!("must be positive, got {}", sf.fps),
            ));
        }
        // The frame length 1/fps and its substeps in their ranges (`limits::check_frame_dt`).
        if let Err(e) = crate::limits::check_frame_dt(1.0 / sf.fps, sf.substeps.max(1)) {
            return Err(value_err(
                "",
                0,
                "fps",
                "fps".into(),
                format!("{} frames a second: 1/fps {}", sf.fps, e.message),
            ));
        }
        if sf.substeps == 0 || sf.substeps > 1000 {
            return Err(value_err(
                "",
                0,
                "substeps",
                "substeps".into(),
                format!("must be in 1..=1000, got {}", sf.substeps),
            ));
        }
        if let Err(e) = crate::limits::check_gravity(Vec3::from_array(sf.gravity)) {
            return Err(value_err("", 0, "gravity", "gravity".into(), e.message));
        }
        let s = &sf.solver;
        if s.cg_max_iterations == 0 {
            return Err(value_err(
                "solver",
                0,
                "cg_max_iterations",
                "solver.cg_max_iterations".into(),
                "must be at least 1".into(),
            ));
        }
        if !(s.cg_tolerance.is_finite() && s.cg_tolerance > 0.0 && s.cg_tolerance < 1.0) {
            return Err(value_err(
                "solver",
                0,
                "cg_tolerance",
                "solver.cg_tolerance".into(),
                format!("must be in (0, 1), got {}", s.cg_tolerance),
            ));
        }
        if !(s.max_stretch_change.is_finite() && s.max_stretch_change > 0.0) {
            return Err(value_err(
                "solver",
                0,
                "max_stretch_change",
                "solver.max_stretch_change".into(),
                "must be positive".into(),
            ));
        }
        if let Some(ms) = sf.budget.frame_ms {
            if !(ms.is_finite() && ms > 0.0) {
                return Err(value_err(
                    "budget",
                    0,
                    "frame_ms",
                    "budget.frame_ms".into(),
                    format!("must be positive, got {ms}"),
                ));
            }
        }
        if let Some(c) = &sf.camera {
            check_camera(c).map_err(|(key, message)| {
                value_err("camera", 0, key, format!("camera.{key}"), message)
            })?;
        }
        let wind = match &sf.wind {
            Some(w) => Some(wind_settings(w).map_err(|(key, message)| {
                value_err("wind", 0, key, format!("wind.{key}"), message)
            })?),
            None => None,
        };
        let settings = WorldSettings {
            gravity: Vec3::from_array(sf.gravity),
            substeps: sf.substeps,
            budget: Budget {
                frame_ms: sf.budget.frame_ms,
                cg_max_iterations: s.cg_max_iterations,
                governor: match sf.budget.governor {
                    file::GovernorChoice::Fixed => crate::runtime::budget::GovernorMode::Fixed,
                    file::GovernorChoice::Adaptive => {
                        crate::runtime::budget::GovernorMode::Adaptive
                    }
                },
                ..Budget::default()
            },
            step_control: StepControl {
                max_stretch_change: s.max_stretch_change,
                max_halvings: s.max_halvings,
            },
            energy_stats: false,
            wind,
        };
        let settings = isometric_budget(sf, settings).map_err(|(key, message)| {
            value_err(
                "solver.isometric",
                0,
                key,
                format!("solver.isometric.{key}"),
                message,
            )
        })?;
        let mut entities = hecs::World::new();
        let mut order = 0u32;
        let base = path.parent().unwrap_or_else(|| Path::new("."));
        for (ci, c) in sf.cloths.iter().enumerate() {
            let desc = cloth_desc(c, ci, sf, base, &file, text)?;
            let pin_tracks = pin_tracks_of(c, ci, &desc, &file, text)?;
            let line = SceneLine(cloth_line(text, ci, None, ""));
            let e = entities.spawn((SpawnOrder(order), desc, line));
            if !pin_tracks.is_empty() {
                entities
                    .insert_one(e, pin_tracks)
                    .expect("the entity was just spawned");
            }
            if let Some(iso) = isometric_desc(c, ci, sf, &file, text)? {
                entities
                    .insert_one(e, iso)
                    .expect("the entity was just spawned");
            }
            order += 1;
        }
        // Cloth pairs kept apart, by the names the file gives.
        let names: Vec<String> = sf
            .cloths
            .iter()
            .enumerate()
            .map(|(ci, c)| c.name.clone().unwrap_or_else(|| format!("cloth{ci}")))
            .collect();
        let mut apart = Vec::new();
        for (ci, c) in sf.cloths.iter().enumerate() {
            for other in &c.no_collide_with {
                let refuse = |message: String| SceneError::Value {
                    file: file.clone(),
                    line: cloth_line(text, ci, None, "no_collide_with"),
                    key: format!("cloth[{ci}].no_collide_with"),
                    message,
                };
                let mut found = names.iter().enumerate().filter(|(_, n)| *n == other);
                let Some((cj, _)) = found.next() else {
                    return Err(refuse(format!("no cloth is named \"{other}\"")));
                };
                if found.next().is_some() {
                    return Err(refuse(format!("more than one cloth is named \"{other}\"")));
                }
                if cj == ci {
                    return Err(refuse(format!(
                        "\"{other}\" is this cloth (its own collisions are `collision.self_collision`)"
                    )));
                }
                apart.push([ci, cj]);
            }
        }
        for (ki, k) in sf.colliders.iter().enumerate() {
            let desc = collider_desc(k).map_err(|(key, message)| {
                value_err(
                    "collider",
                    ki,
                    key,
                    format!("collider[{ki}].{key}"),
                    message,
                )
            })?;
            let e = entities.spawn((SpawnOrder(order), desc));
            if let Some(track) = track_of(&k.keyframes).map_err(|(key, message)| {
                value_err(
                    "collider",
                    ki,
                    "time",
                    format!("collider[{ki}].{key}"),
                    message,
                )
            })? {
                entities
                    .insert_one(e, track)
                    .expect("the entity was just spawned");
            }
            order += 1;
        }
        for (oi, o) in sf.obstacles.iter().enumerate() {
            let err = |key: &str, message: String| {
                value_err(
                    "obstacle",
                    oi,
                    key,
                    format!("obstacle[{oi}].{key}"),
                    message,
                )
            };
            let desc = obstacle_desc(o, base, &file, oi).map_err(|e| match e {
                ObstacleSpecError::Value(key, message) => err(key, message),
                ObstacleSpecError::Scene(e) => e,
            })?;
            let e = entities.spawn((SpawnOrder(order), desc));
            if let Some(track) =
                track_of(&o.keyframes).map_err(|(key, message)| err(&key, message))?
            {
                entities
                    .insert_one(e, track)
                    .expect("the entity was just spawned");
            }
            order += 1;
        }
        let name = sf.name.clone().unwrap_or_else(|| {
            path.file_stem()
                .map_or_else(|| "scene".to_string(), |s| s.to_string_lossy().into_owned())
        });
        Ok(Scene {
            name,
            fps: sf.fps,
            frames: sf.frames,
            settings,
            entities,
            path: path.to_path_buf(),
            camera: sf.camera.clone(),
            apart,
        })
    }

    /// Frame length 1/fps (s).
    #[must_use]
    pub fn dt(&self) -> f32 {
        1.0 / self.fps
    }

    /// Creates the simulation world: cloths then colliders, in file order.
    pub fn instantiate(&self) -> Result<World, SceneError> {
        let mut world = World::new(self.settings);
        type ClothEntity = (
            SpawnOrder,
            ClothDesc,
            Option<IsometricDesc>,
            Option<SceneLine>,
            Option<Vec<PinTrackDesc>>,
        );
        let mut cloths: Vec<ClothEntity> = self
            .entities
            .query::<(
                &SpawnOrder,
                &ClothDesc,
                Option<&IsometricDesc>,
                Option<&SceneLine>,
                Option<&Vec<PinTrackDesc>>,
            )>()
            .iter()
            .map(|(o, d, iso, line, tracks)| {
                (*o, d.clone(), iso.copied(), line.copied(), tracks.cloned())
            })
            .collect();
        cloths.sort_by_key(|(o, _, _, _, _)| *o);
        for (i, (_, desc, iso, line, tracks)) in cloths.into_iter().enumerate() {
            let added = match iso {
                Some(iso) => world.add_isometric_cloth(desc, iso),
                None => world.add_cloth(desc),
            };
            let index = added.map_err(|source| SceneError::Cloth {
                file: self.path.display().to_string(),
                line: line.map_or(0, |l| l.0),
                key: format!("cloth[{i}]"),
                source,
            })?;
            for t in tracks.into_iter().flatten() {
                world
                    .set_pin_track(index, &t.vertices, t.pivot, t.track)
                    .map_err(|e| SceneError::Value {
                        file: self.path.display().to_string(),
                        line: line.map_or(0, |l| l.0),
                        key: format!("cloth[{i}].pin"),
                        message: e.to_string(),
                    })?;
            }
        }
        let cloths = world.cloth_ids().to_vec();
        for &[a, b] in &self.apart {
            world
                .set_cloths_collide(cloths[a], cloths[b], false)
                .expect("the scene checked both names and the cloths were just added");
        }
        let mut colliders: Vec<(SpawnOrder, ColliderDesc, Option<Track>)> = self
            .entities
            .query::<(&SpawnOrder, &ColliderDesc, Option<&Track>)>()
            .iter()
            .map(|(o, d, t)| (*o, *d, t.cloned()))
            .collect();
        colliders.sort_by_key(|(o, _, _)| *o);
        for (k, (_, desc, track)) in colliders.into_iter().enumerate() {
            let index = world
                .add_collider(desc)
                .map_err(|source| SceneError::Mesh {
                    file: self.path.display().to_string(),
                    key: format!("collider[{k}]"),
                    source,
                })?;
            if let Some(track) = track {
                world
                    .set_track(Animated::Collider(index), track)
                    .expect("the collider was just added");
            }
        }
        let mut obstacles: Vec<(SpawnOrder, ObstacleDesc, Option<Track>)> = self
            .entities
            .query::<(&SpawnOrder, &ObstacleDesc, Option<&Track>)>()
            .iter()
            .map(|(o, d, t)| (*o, d.clone(), t.cloned()))
            .collect();
        obstacles.sort_by_key(|(o, _, _)| *o);
        for (k, (_, desc, track)) in obstacles.into_iter().enumerate() {
            let index = world
                .add_obstacle(desc)
                .map_err(|source| SceneError::Mesh {
                    file: self.path.display().to_string(),
                    key: format!("obstacle[{k}]"),
                    source,
                })?;
            if let Some(track) = track {
                world
                    .set_track(Animated::Obstacle(index), track)
                    .expect("the obstacle was just added");
            }
        }
        Ok(world)
    }
}

/// The keyframe track of a collider or obstacle section, if it has keyframes;
/// an error names the keyframe (`keyframes[i]`) and says what is wrong.
fn track_of(keys: &[KeyframeSection]) -> Result<Option<Track>, (String, String)> {
    if keys.is_empty() {
        return Ok(None);
    }
    let frames = keys
        .iter()
        .map(|k| Keyframe {
            time: k.time,
            pose: pose_from_euler_deg(k.position, k.rotation_deg),
        })
        .collect();
    match Track::new(frames) {
        Ok(t) => Ok(Some(t)),
        Err(TrackError::OutOfRange {
            index,
            what,
            message,
        }) => Err((format!("keyframes[{index}].{what}"), message)),
        Err(e @ (TrackError::NotFinite { index } | TrackError::NotIncreasing { index, .. })) => {
            Err((format!("keyframes[{index}]"), e.to_string()))
        }
        Err(e) => Err(("keyframes".to_string(), e.to_string())),
    }
}

/// The shape a `[[collider]]` or `[[obstacle]]` section describes, its sizes
/// checked; an error is (key, message).
fn shape_of(
    kind: ShapeKind,
    radius: Option<f32>,
    half_length: Option<f32>,
    half_extents: Option<[f32; 3]>,
) -> Result<Shape, (&'static str, String)> {
    let positive = |key: &'static str, v: Option<f32>| match v {
        Some(x) => crate::limits::check_collider_size(key, x)
            .map(|()| x)
            .map_err(|e| (key, e.message)),
        None => Err((key, format!("required for shape {kind:?}"))),
    };
    Ok(match kind {
        ShapeKind::Plane => Shape::Plane,
        ShapeKind::Sphere => Shape::Sphere {
            radius: positive("radius", radius)?,
        },
        ShapeKind::Capsule => Shape::Capsule {
            radius: positive("radius", radius)?,
            half_length: positive("half_length", half_length)?,
        },
        ShapeKind::Box => {
            let h = half_extents.ok_or(("half_extents", "required for shape Box".to_string()))?;
            crate::limits::check_box_half_extents("half_extents", h)
                .map_err(|e| ("half_extents", e.message))?;
            Shape::Cuboid {
                half_extents: Vec3::from_array(h),
            }
        }
    })
}

/// Checks that a body's placement and velocities are finite.
fn check_placement(
    position: [f32; 3],
    rotation_deg: [f32; 3],
    linear_velocity: [f32; 3],
    angular_velocity: [f32; 3],
) -> Result<(), (&'static str, String)> {
    if !rotation_deg.iter().all(|x| x.is_finite()) {
        return Err(("rotation_deg", "must be finite".into()));
    }
    let range = |e: crate::limits::RangeError| (e.what, e.message);
    crate::limits::check_point("position", Vec3::from_array(position)).map_err(range)?;
    crate::limits::check_speed("linear_velocity", Vec3::from_array(linear_velocity))
        .map_err(range)?;
    crate::limits::check_angular_speed("angular_velocity", Vec3::from_array(angular_velocity))
        .map_err(range)?;
    Ok(())
}

/// Why an `[[obstacle]]` section could not become an obstacle.
enum ObstacleSpecError {
    /// A value is wrong: (key, message).
    Value(&'static str, String),
    /// The OBJ file could not be read or is invalid.
    Scene(SceneError),
}

/// An `[[obstacle]]` section as an [`ObstacleDesc`]: the mesh read from its
/// OBJ file (relative to `base`) or generated from its shape (the same
/// tessellations as the analytic colliders'), scaled, placed and moving.
fn obstacle_desc(
    o: &ObstacleSection,
    base: &Path,
    file: &str,
    oi: usize,
) -> Result<ObstacleDesc, ObstacleSpecError> {
    use ObstacleSpecError::Value;
    if !(o.scale.is_finite() && o.scale > 0.0) {
        return Err(Value("scale", format!("must be positive, got {}", o.scale)));
    }
    if !(o.thickness.is_finite() && o.thickness >= 0.0) {
        return Err(Value(
            "thickness",
            format!("must be finite and >= 0, got {}", o.thickness),
        ));
    }
    check_placement(
        o.position,
        o.rotation_deg,
        o.linear_velocity,
        o.angular_velocity,
    )
    .map_err(|(key, message)| Value(key, message))?;
    if !(o.friction.is_finite() && o.friction >= 0.0) {
        return Err(Value(
            "friction",
            format!("must be non-negative, got {}", o.friction),
        ));
    }
    let mesh_err = |source: MeshError| {
        ObstacleSpecError::Scene(SceneError::Mesh {
            file: file.to_string(),
            key: format!("obstacle[{oi}]"),
            source,
        })
    };
    let mut mesh = match (&o.obj, o.shape) {
        (Some(obj), None) => {
            let (mesh, lines) = read_obj_file_with_lines(&base.join(obj)).map_err(mesh_err)?;
            mesh.validate().map_err(|e| mesh_err(lines.place(e)))?;
            mesh
        }
        (None, Some(ShapeKind::Plane)) => {
            return Err(Value(
                "shape",
                "a plane is not a finite mesh; use a [[collider]] or a box".into(),
            ));
        }
        (None, Some(kind)) => {
            let shape = shape_of(kind, o.radius, o.half_length, o.half_extents)
                .map_err(|(key, message)| Value(key, message))?;
            tessellate(&shape).map_err(mesh_err)?
        }
        _ => {
            return Err(Value("obj", "give exactly one of `obj` and `shape`".into()));
        }
    };
    if o.scale != 1.0 {
        mesh.transform(glam::Affine3A::from_scale(Vec3::splat(o.scale)));
    }
    crate::limits::check_points("scale", &mesh.positions).map_err(|e| Value("scale", e.message))?;
    crate::limits::check_obstacle_thickness(
        o.thickness,
        crate::limits::cloth_size(&mesh.positions),
    )
    .map_err(|e| Value("thickness", e.message))?;
    mesh.corner_uvs = None;
    Ok(ObstacleDesc {
        mesh,
        pose: pose_from_euler_deg(o.position, o.rotation_deg),
        motion: Motion {
            linear_velocity: Vec3::from_array(o.linear_velocity),
            angular_velocity: Vec3::from_array(o.angular_velocity),
        },
        friction: o.friction,
        thickness: o.thickness,
    })
}

fn rotation_from_degrees(r: [f32; 3]) -> Quat {
    Quat::from_euler(
        EulerRot::XYZ,
        r[0].to_radians(),
        r[1].to_radians(),
        r[2].to_radians(),
    )
}

/// Checks `[wind]` and makes the wind model's settings.
fn wind_settings(
    w: &file::WindSection,
) -> Result<crate::model::wind::Wind, (&'static str, String)> {
    crate::limits::check_speed("velocity", Vec3::from_array(w.velocity))
        .map_err(|e| ("velocity", e.message))?;
    for (key, v) in [("density", w.density), ("gust_period_s", w.gust_period_s)] {
        if !(v.is_finite() && v > 0.0) {
            return Err((key, format!("must be positive, got {v}")));
        }
    }
    for (key, v) in [("drag", w.drag), ("skin", w.skin)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err((key, format!("must be non-negative, got {v}")));
        }
    }
    if !(w.gust.is_finite() && (0.0..=1.0).contains(&w.gust)) {
        return Err(("gust", format!("must be in [0, 1], got {}", w.gust)));
    }
    Ok(crate::model::wind::Wind {
        velocity: Vec3::from_array(w.velocity),
        density: w.density,
        drag: w.drag,
        skin: w.skin,
        gust: w.gust,
        gust_period_s: w.gust_period_s,
    })
}

/// Largest preview image side (pixels), so a typo cannot allocate gigabytes
/// (the same bound as `render::camera::MAX_SIDE`).
const MAX_CAMERA_SIDE: u32 = 8192;

/// Checks `[camera]`: finite vectors, a non-zero up not parallel to the view,
/// eye ≠ target, fov in (0°, 180°), image sides in 1..=8192.
fn check_camera(c: &file::CameraSection) -> Result<(), (&'static str, String)> {
    for (key, v) in [("eye", c.eye), ("target", c.target), ("up", Some(c.up))] {
        if let Some(v) = v {
            if !v.iter().all(|x| x.is_finite()) {
                return Err((key, "must be finite".into()));
            }
        }
    }
    let up = Vec3::from_array(c.up);
    if up.length() <= 1e-6 {
        return Err(("up", "must not be zero".into()));
    }
    if let (Some(e), Some(t)) = (c.eye, c.target) {
        let view = Vec3::from_array(t) - Vec3::from_array(e);
        if view.length() <= 1e-6 {
            return Err(("target", "must differ from `eye`".into()));
        }
        if view.normalize().cross(up.normalize()).length() <= 1e-4 {
            return Err(("up", "must not be parallel to target − eye".into()));
        }
    }
    if !(c.fov_deg.is_finite() && c.fov_deg > 0.0 && c.fov_deg < 180.0) {
        return Err(("fov_deg", format!("must be in (0, 180), got {}", c.fov_deg)));
    }
    for (key, v) in [("width", c.width), ("height", c.height)] {
        if v == 0 || v > MAX_CAMERA_SIDE {
            return Err((key, format!("must be in 1..={MAX_CAMERA_SIDE}, got {v}")));
        }
    }
    Ok(())
}

fn collider_desc(k: &ColliderSection) -> Result<ColliderDesc, (&'static str, String)> {
    let shape = shape_of(k.shape, k.radius, k.half_length, k.half_extents)?;
    check_placement(
        k.position,
        k.rotation_deg,
        k.linear_velocity,
        k.angular_velocity,
    )?;
    if !(k.friction.is_finite() && k.friction >= 0.0) {
        return Err((
            "friction",
            format!("must be non-negative, got {}", k.friction),
        ));
    }
    Ok(ColliderDesc {
        shape,
        pose: Pose {
            translation: Vec3::from_array(k.position),
            rotation: rotation_from_degrees(k.rotation_deg),
        },
        motion: Motion {
            linear_velocity: Vec3::from_array(k.linear_velocity),
            angular_velocity: Vec3::from_array(k.angular_velocity),
        },
        friction: k.friction,
    })
}

/// Checks `[solver.isometric]` and, for `model = "isometric"`, makes its caps the world budget's
/// (the Baraff–Witkin `cg_max_iterations` does not apply to that model); an error is (key,
/// message).
fn isometric_budget(
    sf: &SceneFile,
    mut settings: WorldSettings,
) -> Result<WorldSettings, (&'static str, String)> {
    let s = &sf.solver.isometric;
    if !(s.strain_tolerance.is_finite() && s.strain_tolerance > 0.0 && s.strain_tolerance < 1.0) {
        return Err((
            "strain_tolerance",
            format!("must be in (0, 1), got {}", s.strain_tolerance),
        ));
    }
    if s.newton_max_iterations == 0 {
        return Err(("newton_max_iterations", "must be at least 1".into()));
    }
    if s.cg_max_iterations == 0 {
        return Err(("cg_max_iterations", "must be at least 1".into()));
    }
    if !(s.cg_tolerance.is_finite() && s.cg_tolerance > 0.0 && s.cg_tolerance < 1.0) {
        return Err((
            "cg_tolerance",
            format!("must be in (0, 1), got {}", s.cg_tolerance),
        ));
    }
    for (key, v) in [
        ("friction_compliance", s.friction_compliance),
        ("boundary_compliance", s.boundary_compliance),
        ("conforming_compliance", s.conforming_compliance),
        ("proximal_weight", s.proximal_weight),
        ("contact_compliance", s.contact_compliance),
        ("contact_margin", s.contact_margin),
        ("step_bound", s.step_bound),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err((key, format!("must be finite and >= 0, got {v}")));
        }
    }
    if sf.solver.model == file::ModelKind::Isometric {
        settings.budget.cg_max_iterations = s.cg_max_iterations;
        settings.budget.newton_max_iterations = s.newton_max_iterations;
    }
    Ok(settings)
}

/// The isometric model of a cloth when `[solver] model = "isometric"` (its `[cloth.isometric]`
/// material, defaults when absent, and `[solver.isometric]`); `None` for Baraff–Witkin, where a
/// `[cloth.isometric]` section is an error.
fn isometric_desc(
    c: &ClothSection,
    ci: usize,
    sf: &SceneFile,
    file: &str,
    text: &str,
) -> Result<Option<IsometricDesc>, SceneError> {
    use crate::integrate::base_edge_rows::BaseEdgeRowsKind;
    use crate::integrate::bdf2::Integrator;
    use crate::integrate::isometric::{Coupling, IsometricSettings, SecondTarget};
    use crate::integrate::isometric_cloth::RestShape;
    use crate::integrate::projection::ActiveSetRule;
    use crate::integrate::projection::LinearSolver;
    use crate::integrate::projection::ProjectionSettings;
    use crate::integrate::projection::SelfStressFilter;
    use crate::linalg::{CholeskyThreads, Ordering};
    use file::{
        ActiveSetKind, BaseEdgeRowsSetting, CholeskyOrderingKind, CholeskyParallelKind,
        ContactRowsKind, CouplingKind, IntegratorKind, LinearSolverKind, ModelKind, RestShapeKind,
        SecondTargetKind, SelfStressFilterKind, StrainTestKind,
    };
    let verr = |k: &str, message: String| SceneError::Value {
        file: file.to_string(),
        line: cloth_line(text, ci, Some(("isometric", 0)), k),
        key: format!("cloth[{ci}].isometric.{k}"),
        message,
    };
    if sf.solver.model != ModelKind::Isometric {
        return match c.isometric {
            Some(_) => Err(SceneError::Value {
                file: file.to_string(),
                line: cloth_line(text, ci, None, "isometric"),
                key: format!("cloth[{ci}].isometric"),
                message: "only with `[solver] model = \"isometric\"`".into(),
            }),
            None => Ok(None),
        };
    }
    let m = c.isometric.clone().unwrap_or_default();
    if !(m.bending_stiffness.is_finite() && m.bending_stiffness >= 0.0) {
        return Err(verr(
            "bending_stiffness",
            format!("must be finite and >= 0, got {}", m.bending_stiffness),
        ));
    }
    let s = &sf.solver.isometric;
    let sverr = |k: &str, message: String| SceneError::Value {
        file: file.to_string(),
        line: find_key_line(text, "solver.isometric", 0, k),
        key: format!("solver.isometric.{k}"),
        message,
    };
    if !(1..=64).contains(&s.cholesky_threads) {
        return Err(sverr(
            "cholesky_threads",
            format!("must be in 1..=64, got {}", s.cholesky_threads),
        ));
    }
    if s.cholesky_reuse_iterations > 1000 {
        return Err(sverr(
            "cholesky_reuse_iterations",
            format!("must be in 0..=1000, got {}", s.cholesky_reuse_iterations),
        ));
    }
    let solver = match s.linear_solver {
        LinearSolverKind::Pcg => LinearSolver::Pcg,
        LinearSolverKind::Cholesky => LinearSolver::Cholesky {
            ordering: match s.cholesky_ordering {
                CholeskyOrderingKind::Amd => Ordering::Amd,
                CholeskyOrderingKind::Natural => Ordering::Natural,
                CholeskyOrderingKind::NestedDissection => Ordering::NestedDissection,
            },
            threads: match (s.cholesky_parallel, s.cholesky_threads) {
                (CholeskyParallelKind::Subtrees, _) => CholeskyThreads::Subtrees,
                (CholeskyParallelKind::Kernels, 1) => CholeskyThreads::One,
                (CholeskyParallelKind::Kernels, n) => CholeskyThreads::Pool(n as u8),
            },
        },
    };
    let mut projection = ProjectionSettings {
        solver,
        tolerance: s.strain_tolerance,
        max_iterations: s.newton_max_iterations,
        gauss_newton_iterations: s.gauss_newton_iterations,
        test_monitored_strain: s.strain_test == StrainTestKind::BaseEdges,
        self_stress_filter: match s.self_stress_filter {
            SelfStressFilterKind::Off => SelfStressFilter::Off,
            SelfStressFilterKind::AfterConvergence => SelfStressFilter::AfterConvergence,
            SelfStressFilterKind::Always => SelfStressFilter::Always,
        },
        line_search: s.line_search,
        step_bound: if s.step_bound > 0.0 {
            s.step_bound
        } else {
            f64::INFINITY
        },
        active_set: match s.active_set {
            ActiveSetKind::TakeAtConvergence => ActiveSetRule::TakeAtConvergence,
            ActiveSetKind::EveryIteration => ActiveSetRule::EveryIteration,
        },
        base_edge_rows: match s.base_edge_rows {
            BaseEdgeRowsSetting::Off => BaseEdgeRowsKind::Off,
            BaseEdgeRowsSetting::Band => BaseEdgeRowsKind::Band,
        },
        ..ProjectionSettings::default()
    };
    projection.factor_reuse.max_iterations = s.cholesky_reuse_iterations;
    projection.cg.max_iterations = s.cg_max_iterations;
    projection.cg.tolerance = s.cg_tolerance;
    Ok(Some(IsometricDesc {
        bending_stiffness: m.bending_stiffness,
        rest_shape: match m.rest_shape {
            RestShapeKind::Flat => RestShape::Flat,
            RestShapeKind::Input => RestShape::Input,
        },
        proximal_weight: s.proximal_weight,
        boundary_compliance: s.boundary_compliance,
        conforming_compliance: s.conforming_compliance,
        integrator: match s.integrator {
            IntegratorKind::BackwardEuler => Integrator::BackwardEuler,
            IntegratorKind::Bdf2 => Integrator::Bdf2,
        },
        step: IsometricSettings {
            projection,
            coupling: match s.coupling {
                CouplingKind::Staggered => Coupling::Staggered,
                CouplingKind::Simultaneous => Coupling::Simultaneous,
            },
            second_target: match s.second_target {
                SecondTargetKind::Prediction => SecondTarget::Prediction,
                SecondTargetKind::Collided => SecondTarget::Collided,
            },
            friction_compliance: Some(s.friction_compliance),
            contact_compliance: s.contact_compliance,
            contact_rounds: s.contact_rounds,
            contact_margin: s.contact_margin,
            follow_obstacles: s.follow_obstacles,
            mesh_rows: s.mesh_rows,
            hold_repelled_pairs: s.hold_repelled_pairs,
            self_friction: s.self_friction,
            unilateral_contacts: s.contacts == ContactRowsKind::Unilateral,
            ..IsometricSettings::default()
        },
    }))
}

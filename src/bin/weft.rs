//! The `weft` command line: run, check, bench and stress scene files.
//!
//! Exit codes: 0 success, 1 simulation failure (NaN, lost invariant),
//! 2 bad input (the message names the file, line and key).

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use glam::Vec2;
use glam::Vec3;
use weft::collide::resolve::CollideTimes;
use weft::collide::subdivision::CollisionAwareSubdivision;
use weft::mesh::{ObjObject, UsdaCache, area_weighted_normals, write_obj_object};
use weft::runtime::profile::Stage;
use weft::runtime::stats::FrameStats;
use weft::scene::{self, Scene, SpawnOrder};
use weft::world::{ClothDesc, World};

#[path = "weft/preview.rs"]
mod preview;
#[path = "weft/stats_csv.rs"]
mod stats_csv;

#[derive(Parser)]
#[command(
    name = "weft",
    version,
    about = "Cloth simulation runtime: run, check and bench scene files"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scene, writing meshes, stats.csv and summary.json.
    Run {
        /// The scene file (TOML).
        scene: PathBuf,
        /// Frames to run (default: the scene's).
        #[arg(long)]
        frames: Option<u32>,
        /// Output folder (default: out/<scene name>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write OBJ meshes every K frames (and always frame 0 and the last).
        #[arg(long, default_value_t = 10)]
        every: u32,
        /// Worker threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Write PNG renders preview_<frame>.png: frame 0, every K frames
        /// (K from --every) and the last; the camera is the scene's
        /// `[camera]` or frames the scene.
        #[arg(long)]
        preview: bool,
        /// Render exactly these frames instead (comma-separated, 0 = the
        /// initial state); implies --preview.
        #[arg(long, value_name = "LIST")]
        preview_frames: Option<String>,
        /// Preview image size WIDTHxHEIGHT (default: the scene's `[camera]`
        /// size, else 640x480).
        #[arg(long, value_name = "WxH")]
        preview_size: Option<String>,
        /// Write SVG plots of the per-frame stats (strain, energy, stage
        /// times against the frame budget).
        #[arg(long)]
        plot: bool,
        /// Write and draw every cloth Loop-subdivided K times (1 to 4),
        /// collision-aware (Bridson 2002): the smoothing never pushes a
        /// cloth through itself or an obstacle.
        #[arg(long, value_name = "K")]
        subdivide: Option<u32>,
        /// Also write FILE, a single-file animated USD cache (text form,
        /// `.usda`): every cloth and obstacle as a Mesh prim, points and
        /// normals time-sampled at every frame from 0 (the simulation
        /// meshes, not --subdivide's), uvs as `primvars:st`.
        #[arg(long, value_name = "FILE")]
        usd: Option<PathBuf>,
    },
    /// Validate a scene without running it.
    Check {
        /// The scene file (TOML).
        scene: PathBuf,
    },
    /// Run a scene and print per-stage timings (median, p95), CG iterations and
    /// the SpMV's bandwidth beside a memcpy's; with `--compare` or
    /// `--compare-threads`, run two configurations alternately and print both
    /// medians and their ratio.
    Bench {
        /// The scene file (TOML): configuration A.
        scene: PathBuf,
        /// Frames to run (default: the scene's).
        #[arg(long)]
        frames: Option<u32>,
        /// Worker threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Configuration B is this scene file: A and B step one frame each in
        /// turn (A B A B …) in this process, each in its own thread pool.
        #[arg(long, value_name = "SCENE")]
        compare: Option<PathBuf>,
        /// Configuration B runs at this many worker threads (the scene of
        /// `--compare`, else A's scene), alternated with A as for `--compare`.
        #[arg(long, value_name = "N")]
        compare_threads: Option<usize>,
    },
    /// Run several scenes and report each one's frame times against its own
    /// `[budget] frame_ms`: worst, median, the worst as a multiple of the
    /// budget. Scenes refused at load are listed apart with their error.
    Stress {
        /// Scene files or folders (a folder's `*.toml`, sorted, not recursive).
        #[arg(required = true)]
        scenes: Vec<PathBuf>,
        /// Frames to run per scene (default: each scene's).
        #[arg(long)]
        frames: Option<u32>,
        /// Worker threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Give up on a scene when one frame has not ended after this many
        /// seconds; the frame is reported as timed out (it finishes in the
        /// background, and the scene's later frames are not run).
        #[arg(long, value_name = "SECONDS")]
        frame_timeout: Option<f64>,
    },
    /// Plot columns of several runs' stats.csv against each other (one SVG per
    /// column), e.g. a scene run with two couplings.
    Compare {
        /// Runs as LABEL=PATH: a `weft run` output folder or its stats.csv.
        #[arg(required = true, num_args = 2..)]
        runs: Vec<String>,
        /// Columns of stats.csv (comma-separated): one plot each,
        /// `compare_<column>.svg`.
        #[arg(long, value_delimiter = ',', required = true)]
        columns: Vec<String>,
        /// Output folder.
        #[arg(long)]
        out: PathBuf,
    },
}

/// A failure with its exit code.
enum Failure {
    BadInput(String),
    Simulation(String),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // With `--features tracy`: serve zones, frame marks and plots to a Tracy
    // profiler for as long as the command runs (README "Profiling in Tracy").
    #[cfg(feature = "tracy")]
    let _tracy = tracy_client::Client::start();
    let result = match cli.command {
        Command::Run {
            scene,
            frames,
            out,
            every,
            threads,
            preview,
            preview_frames,
            preview_size,
            plot,
            subdivide,
            usd,
        } => {
            let pictures = Pictures {
                preview: preview || preview_frames.is_some() || preview_size.is_some(),
                preview_frames,
                preview_size,
                plot,
                subdivide,
                usd,
            };
            with_threads(threads, || {
                run(&scene, frames, out, every.max(1), &pictures)
            })
        }
        Command::Check { scene } => check(&scene),
        Command::Bench {
            scene,
            frames,
            threads,
            compare,
            compare_threads,
        } => {
            if compare.is_some() || compare_threads.is_some() {
                bench_compare(&scene, compare.as_deref(), threads, compare_threads, frames)
            } else {
                with_threads(threads, || bench(&scene, frames))
            }
        }
        Command::Stress {
            scenes,
            frames,
            threads,
            frame_timeout,
        } => stress(&scenes, frames, threads, frame_timeout),
        Command::Compare { runs, columns, out } => compare(&runs, &columns, &out),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::BadInput(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(2)
        }
        Err(Failure::Simulation(m)) => {
            eprintln!("simulation failed: {m}");
            ExitCode::from(1)
        }
    }
}

fn with_threads(
    threads: Option<usize>,
    f: impl FnOnce() -> Result<(), Failure> + Send,
) -> Result<(), Failure> {
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(t) = threads {
        if t == 0 {
            return Err(Failure::BadInput("--threads must be at least 1".into()));
        }
        builder = builder.num_threads(t);
    }
    let pool = builder
        .build()
        .map_err(|e| Failure::Simulation(format!("cannot start the thread pool: {e}")))?;
    pool.install(f)
}

fn load(path: &Path) -> Result<(Scene, World), Failure> {
    let scene = scene::load(path).map_err(|e| Failure::BadInput(e.to_string()))?;
    let world = scene
        .instantiate()
        .map_err(|e| Failure::BadInput(e.to_string()))?;
    Ok((scene, world))
}

fn check(path: &Path) -> Result<(), Failure> {
    let (scene, world) = load(path)?;
    let vertices: usize = world.cloths().iter().map(|c| c.state().len()).sum();
    println!(
        "{}: ok ({} cloths, {} vertices, {} colliders, {} frames at {} Hz)",
        scene.name,
        world.cloths().len(),
        vertices,
        world.colliders().len(),
        scene.frames,
        scene.fps
    );
    Ok(())
}

/// One `weft run`'s stats.csv: its header and rows.
struct StatsTable {
    header: Vec<String>,
    rows: Vec<Vec<f64>>,
}

impl StatsTable {
    fn read(path: &Path) -> Result<Self, Failure> {
        let text = fs::read_to_string(path).map_err(|e| io_err(path, e))?;
        let mut lines = text.lines();
        let header: Vec<String> = lines
            .next()
            .ok_or_else(|| Failure::BadInput(format!("{}: empty file", path.display())))?
            .split(',')
            .map(str::to_string)
            .collect();
        let mut rows = Vec::new();
        for (k, line) in lines.enumerate() {
            let row = line
                .split(',')
                .map(|v| v.trim().parse::<f64>())
                .collect::<Result<Vec<f64>, _>>()
                .map_err(|e| Failure::BadInput(format!("{}:{}: {e}", path.display(), k + 2)))?;
            if row.len() != header.len() {
                return Err(Failure::BadInput(format!(
                    "{}:{}: {} values for {} columns",
                    path.display(),
                    k + 2,
                    row.len(),
                    header.len()
                )));
            }
            rows.push(row);
        }
        Ok(Self { header, rows })
    }

    /// The (frame, value) points of `column`.
    fn points(&self, column: &str, path: &Path) -> Result<Vec<(f64, f64)>, Failure> {
        let find = |name: &str| {
            self.header
                .iter()
                .position(|h| h == name)
                .ok_or_else(|| Failure::BadInput(format!("{}: no column `{name}`", path.display())))
        };
        let (x, y) = (find("frame")?, find(column)?);
        Ok(self.rows.iter().map(|r| (r[x], r[y])).collect())
    }
}

/// `weft compare`: one SVG per column with a line per run.
fn compare(runs: &[String], columns: &[String], out: &Path) -> Result<(), Failure> {
    use weft::render::plot::{Plot, Series};
    let mut tables = Vec::with_capacity(runs.len());
    for run in runs {
        let (label, path) = run
            .split_once('=')
            .ok_or_else(|| Failure::BadInput(format!("run `{run}`: expected LABEL=PATH")))?;
        let mut path = PathBuf::from(path);
        if path.is_dir() {
            path.push("stats.csv");
        }
        let table = StatsTable::read(&path)?;
        tables.push((label.to_string(), path, table));
    }
    fs::create_dir_all(out).map_err(|e| io_err(out, e))?;
    for column in columns {
        let mut plot = Plot::new(column.clone(), "frame", axis_label(column));
        plot.y_from_zero = true;
        for (label, path, table) in &tables {
            plot.series
                .push(Series::line(label.clone(), table.points(column, path)?));
        }
        let file = out.join(format!("compare_{column}.svg"));
        fs::write(&file, plot.to_svg()).map_err(|e| io_err(&file, e))?;
        println!("wrote {}", file.display());
    }
    Ok(())
}

/// A `stats.csv` column with its unit, for a plot axis.
fn axis_label(column: &str) -> String {
    let unit = if column.ends_with("_ms") {
        "ms"
    } else if column == "time_s" {
        "s"
    } else if column.ends_with("_j") {
        "J"
    } else if column.contains("strain") {
        "fraction of the rest length"
    } else if column == "arena_bytes" {
        "bytes"
    } else if column == "cg_residual" {
        "relative residual"
    } else {
        "count"
    };
    format!("{column} ({unit})")
}

fn io_err(path: &Path, e: std::io::Error) -> Failure {
    Failure::BadInput(format!("{}: {e}", path.display()))
}

/// `name` as a file-name part: ASCII letters, digits, `-`, `_` and `.` kept, anything else `_`;
/// `_` for an empty name.
fn file_name_part(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("_{s}")
    } else {
        s
    }
}

/// The mesh outputs of `weft run`: per-frame OBJ files `<name>_<frame>.obj` (cloths and moving
/// obstacles; frame numbers zero-padded to the width of the frame count, at least 4, so names
/// sort in frame order), `<name>_static.obj` once for each static obstacle, and the `--usd` cache.
struct MeshOutputs {
    dir: PathBuf,
    width: usize,
    /// File-safe, unique names: cloths, then obstacles (colliders' tessellations included).
    cloth_names: Vec<String>,
    obstacle_names: Vec<String>,
    obstacle_moves: Vec<bool>,
    /// Each cloth's material coordinates per triangle corner, if its mesh has them.
    cloth_uvs: Vec<Option<Vec<[Vec2; 3]>>>,
    normals: Vec<Vec3>,
    placed: Vec<Vec3>,
    usd: Option<(PathBuf, UsdaCache)>,
}

impl MeshOutputs {
    fn new(
        scene: &Scene,
        world: &World,
        dir: &Path,
        frames: u32,
        usd: Option<&Path>,
    ) -> Result<Self, Failure> {
        let mut taken: Vec<String> = Vec::new();
        let mut unique = |name: &str| {
            let base = file_name_part(name);
            let mut n = base.clone();
            let mut k = 1;
            while taken.contains(&n) {
                n = format!("{base}_{k}");
                k += 1;
            }
            taken.push(n.clone());
            n
        };
        let cloth_names: Vec<String> = world.cloths().iter().map(|c| unique(c.name())).collect();
        let mut obstacle_labels = vec![String::new(); world.obstacles().len()];
        for (i, c) in world.colliders().iter().enumerate() {
            if let Some(l) = obstacle_labels.get_mut(c.obstacle()) {
                *l = format!("collider{i}");
            }
        }
        let mut j = 0;
        for l in &mut obstacle_labels {
            if l.is_empty() {
                *l = format!("obstacle{j}");
                j += 1;
            }
        }
        let obstacle_names: Vec<String> = obstacle_labels.iter().map(|l| unique(l)).collect();
        let obstacle_moves: Vec<bool> = (0..world.obstacles().len())
            .map(|i| world.obstacle_moves(i))
            .collect();
        // The cloth meshes' uvs, from the scene's cloth descriptions in creation order.
        let mut descs: Vec<(SpawnOrder, Option<Vec<[Vec2; 3]>>)> = scene
            .entities
            .query::<(&SpawnOrder, &ClothDesc)>()
            .iter()
            .map(|(o, d)| (*o, d.mesh.corner_uvs.clone()))
            .collect();
        descs.sort_by_key(|(o, _)| *o);
        let cloth_uvs: Vec<Option<Vec<[Vec2; 3]>>> = world
            .cloths()
            .iter()
            .enumerate()
            .map(|(i, c)| {
                descs
                    .get(i)
                    .and_then(|(_, uv)| uv.clone())
                    .filter(|uv| uv.len() == c.triangles().len())
            })
            .collect();
        let usd = match usd {
            Some(path) => {
                let mut cache = UsdaCache::new(&scene.name, scene.fps);
                for ((c, name), uv) in world.cloths().iter().zip(&cloth_names).zip(&cloth_uvs) {
                    cache
                        .add_mesh(
                            name,
                            c.state().positions().len(),
                            c.triangles(),
                            uv.as_deref(),
                            true,
                        )
                        .map_err(|e| io_err(path, e))?;
                }
                for ((o, name), &moves) in world
                    .obstacles()
                    .iter()
                    .zip(&obstacle_names)
                    .zip(&obstacle_moves)
                {
                    let m = o.mesh();
                    cache
                        .add_mesh(
                            name,
                            m.num_vertices(),
                            &m.triangles,
                            m.corner_uvs.as_deref(),
                            moves,
                        )
                        .map_err(|e| io_err(path, e))?;
                }
                Some((path.to_path_buf(), cache))
            }
            None => None,
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            width: frames.to_string().len().max(4),
            cloth_names,
            obstacle_names,
            obstacle_moves,
            cloth_uvs,
            normals: Vec::new(),
            placed: Vec::new(),
            usd,
        })
    }

    /// Writes one OBJ object to `dir/<file>`.
    fn write_obj(
        &mut self,
        file: &str,
        name: &str,
        positions: &[Vec3],
        triangles: &[[u32; 3]],
        uvs: Option<&[[Vec2; 3]]>,
    ) -> Result<(), Failure> {
        let path = self.dir.join(file);
        self.normals.resize(positions.len(), Vec3::ZERO);
        area_weighted_normals(positions, triangles, &mut self.normals);
        let f = fs::File::create(&path).map_err(|e| io_err(&path, e))?;
        let mut w = BufWriter::new(f);
        let object = ObjObject {
            name,
            positions,
            normals: Some(&self.normals),
            corner_uvs: uvs,
            triangles,
        };
        write_obj_object(&mut w, &object).map_err(|e| io_err(&path, e))?;
        w.flush().map_err(|e| io_err(&path, e))
    }

    /// Obstacle `i`'s world positions now, into `self.placed`.
    fn place(&mut self, world: &World, i: usize) {
        let o = &world.obstacles()[i];
        let pose = o.pose();
        self.placed.clear();
        self.placed
            .extend(o.mesh().positions.iter().map(|&p| pose.transform_point(p)));
    }

    /// Writes obstacle `i` at its current pose to `file`.
    fn write_obstacle(&mut self, world: &World, i: usize, file: &str) -> Result<(), Failure> {
        self.place(world, i);
        let name = self.obstacle_names[i].clone();
        let x = std::mem::take(&mut self.placed);
        let m = world.obstacles()[i].mesh();
        let r = self.write_obj(file, &name, &x, &m.triangles, m.corner_uvs.as_deref());
        self.placed = x;
        r
    }

    /// Writes every static obstacle once, as `<name>_static.obj`.
    fn write_static(&mut self, world: &World) -> Result<(), Failure> {
        for i in 0..world.obstacles().len() {
            if self.obstacle_moves[i] {
                continue;
            }
            let name = &self.obstacle_names[i];
            let file = format!("{name}_static.obj");
            self.write_obstacle(world, i, &file)?;
        }
        Ok(())
    }

    /// Writes frame `frame`'s OBJ files: every cloth (subdivided if `subdivided`) and every moving
    /// obstacle.
    fn write_frame(
        &mut self,
        world: &World,
        frame: u32,
        subdivided: Option<&Subdivided>,
    ) -> Result<(), Failure> {
        let width = self.width;
        for (i, cloth) in world.cloths().iter().enumerate() {
            let (positions, triangles, uvs) = match subdivided {
                Some(s) => (&s.positions[i][..], &s.triangles[i][..], None),
                None => (
                    cloth.state().positions(),
                    cloth.triangles(),
                    self.cloth_uvs[i].clone(),
                ),
            };
            let name = self.cloth_names[i].clone();
            self.write_obj(
                &format!("{name}_{frame:0width$}.obj"),
                &name,
                positions,
                triangles,
                uvs.as_deref(),
            )?;
        }
        for i in 0..world.obstacles().len() {
            if !self.obstacle_moves[i] {
                continue;
            }
            let name = &self.obstacle_names[i];
            let file = format!("{name}_{frame:0width$}.obj");
            self.write_obstacle(world, i, &file)?;
        }
        Ok(())
    }

    /// Records frame `frame` in the USD cache (static obstacles at the first frame only).
    fn sample_usd(&mut self, world: &World, frame: u32) -> Result<(), Failure> {
        let Some((path, cache)) = self.usd.as_mut() else {
            return Ok(());
        };
        let first = frame == 0;
        cache
            .begin_time(u64::from(frame))
            .map_err(|e| io_err(path, e))?;
        for (i, c) in world.cloths().iter().enumerate() {
            cache
                .sample(i, c.state().positions())
                .map_err(|e| io_err(path, e))?;
        }
        let nc = world.cloths().len();
        for (i, o) in world.obstacles().iter().enumerate() {
            if self.obstacle_moves[i] || first {
                let pose = o.pose();
                self.placed.clear();
                self.placed
                    .extend(o.mesh().positions.iter().map(|&p| pose.transform_point(p)));
                cache
                    .sample(nc + i, &self.placed)
                    .map_err(|e| io_err(path, e))?;
            }
        }
        Ok(())
    }

    /// Writes the USD cache, if one is recorded.
    fn finish_usd(&self) -> Result<(), Failure> {
        let Some((path, cache)) = &self.usd else {
            return Ok(());
        };
        let f = fs::File::create(path).map_err(|e| io_err(path, e))?;
        let mut w = BufWriter::new(f);
        cache.write(&mut w).map_err(|e| io_err(path, e))?;
        w.flush().map_err(|e| io_err(path, e))?;
        println!("wrote {}", path.display());
        Ok(())
    }
}

fn progress(frames: u32) -> ProgressBar {
    let bar = ProgressBar::new(u64::from(frames));
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} frames ({elapsed}, eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar
}

/// What `weft run` draws besides meshes and stats.
struct Pictures {
    preview: bool,
    preview_frames: Option<String>,
    preview_size: Option<String>,
    plot: bool,
    /// Loop levels of the written and drawn cloth meshes (`--subdivide`).
    subdivide: Option<u32>,
    /// The animated USD cache to write (`--usd`).
    usd: Option<PathBuf>,
}

/// `--subdivide K`: every cloth's collision-aware Loop subdivision, computed
/// once for each frame that is written or drawn.
struct Subdivided {
    subs: Vec<CollisionAwareSubdivision>,
    triangles: Vec<Vec<[u32; 3]>>,
    positions: Vec<Vec<Vec3>>,
    /// The frame `positions` belong to.
    frame: Option<u32>,
    frames: u32,
    ccd_hits: u64,
    zone_rounds: u64,
    linear_levels: u32,
    max_correction: f32,
    ms: Vec<f64>,
}

impl Subdivided {
    fn new(world: &World, levels: u32) -> Result<Self, Failure> {
        let subs = world
            .output_subdivisions(levels)
            .map_err(|e| Failure::BadInput(format!("--subdivide: {e}")))?;
        Ok(Self {
            triangles: subs.iter().map(|s| s.triangles().to_vec()).collect(),
            positions: subs
                .iter()
                .map(|s| vec![Vec3::ZERO; s.loop_subdivision().num_vertices()])
                .collect(),
            subs,
            frame: None,
            frames: 0,
            ccd_hits: 0,
            zone_rounds: 0,
            linear_levels: 0,
            max_correction: 0.0,
            ms: Vec::new(),
        })
    }

    /// Subdivides every cloth of `world` (at frame `f`) unless already done.
    fn update(&mut self, world: &World, f: u32) {
        if self.frame == Some(f) {
            return;
        }
        let t = std::time::Instant::now();
        for (i, (sub, out)) in self.subs.iter_mut().zip(&mut self.positions).enumerate() {
            let (x, stats) = world.subdivide_output(i, sub);
            out.copy_from_slice(x);
            self.ccd_hits += u64::from(stats.ccd_hits);
            self.zone_rounds += u64::from(stats.zone_rounds);
            self.linear_levels += stats.linear_levels;
            self.max_correction = self.max_correction.max(stats.max_correction);
        }
        self.ms.push(t.elapsed().as_secs_f64() * 1e3);
        self.frames += 1;
        self.frame = Some(f);
    }

    fn meshes(&self) -> Vec<preview::ClothMesh<'_>> {
        self.positions
            .iter()
            .zip(&self.triangles)
            .map(|(x, t)| (&x[..], &t[..]))
            .collect()
    }
}

fn render_err(e: weft::render::RenderError) -> Failure {
    Failure::BadInput(e.to_string())
}

fn run(
    path: &Path,
    frames: Option<u32>,
    out: Option<PathBuf>,
    every: u32,
    pictures: &Pictures,
) -> Result<(), Failure> {
    let (scene, mut world) = load(path)?;
    world.settings_mut().energy_stats = true;
    let frames = frames.unwrap_or(scene.frames);
    let dir = out.unwrap_or_else(|| PathBuf::from("out").join(&scene.name));
    fs::create_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
    let preview_set = match &pictures.preview_frames {
        Some(list) => Some(preview::FrameSet::List(
            preview::parse_frames(list, frames).map_err(Failure::BadInput)?,
        )),
        None => pictures.preview.then_some(preview::FrameSet::Every {
            every,
            last: frames,
        }),
    };
    let mut previewer = match &preview_set {
        Some(_) => {
            let size = match &pictures.preview_size {
                Some(text) => Some(preview::parse_size(text).map_err(Failure::BadInput)?),
                None => None,
            };
            Some(preview::Preview::new(&scene, &world, size).map_err(render_err)?)
        }
        None => None,
    };
    if let Some(p) = &previewer {
        let c = p.camera();
        println!(
            "preview camera: eye = [{:.3}, {:.3}, {:.3}], target = [{:.3}, {:.3}, {:.3}], fov_deg = {}, {}x{}",
            c.eye.x,
            c.eye.y,
            c.eye.z,
            c.target.x,
            c.target.y,
            c.target.z,
            c.fov_deg,
            c.width,
            c.height
        );
    }
    let mut plot_data = pictures.plot.then(preview::PlotData::default);
    let mut subdivided = match pictures.subdivide {
        Some(levels) => Some(Subdivided::new(&world, levels)?),
        None => None,
    };
    let mut render_ms = Vec::new();
    let mut write_ms = Vec::new();
    let mut snapshot =
        |world: &World, f: u32, subdivided: &mut Option<Subdivided>| -> Result<(), Failure> {
            if let (Some(p), Some(set)) = (previewer.as_mut(), &preview_set) {
                if set.contains(f) {
                    if let Some(s) = subdivided.as_mut() {
                        s.update(world, f);
                    }
                    let meshes = subdivided.as_ref().map(Subdivided::meshes);
                    let (render, write) = p
                        .save(world, meshes.as_deref(), &dir, f)
                        .map_err(render_err)?;
                    render_ms.push(render);
                    write_ms.push(write);
                }
            }
            Ok(())
        };
    let mut outputs = MeshOutputs::new(&scene, &world, &dir, frames, pictures.usd.as_deref())?;
    outputs.write_static(&world)?;
    if let Some(s) = subdivided.as_mut() {
        s.update(&world, 0);
    }
    outputs.write_frame(&world, 0, subdivided.as_ref())?;
    outputs.sample_usd(&world, 0)?;
    snapshot(&world, 0, &mut subdivided)?;
    let csv_path = dir.join("stats.csv");
    let mut csv = BufWriter::new(fs::File::create(&csv_path).map_err(|e| io_err(&csv_path, e))?);
    let models = stats_csv::Models::of(&world);
    let header = stats_csv::header(models);
    writeln!(csv, "{header}").map_err(|e| io_err(&csv_path, e))?;

    let dt = scene.dt();
    let bar = progress(frames);
    bar.set_message(scene.name.clone());
    let mut all = Vec::with_capacity(frames as usize);
    let mut failure = None;
    for f in 1..=frames {
        match world.step(dt) {
            Ok(stats) => {
                stats_csv::write_row(&mut csv, models, u64::from(f), world.time(), &stats)
                    .map_err(|e| io_err(&csv_path, e))?;
                // One row per frame on disk as soon as the frame ends: a long or
                // interrupted run can be watched and keeps what it computed.
                csv.flush().map_err(|e| io_err(&csv_path, e))?;
                if let Some(p) = plot_data.as_mut() {
                    p.push(f, &stats, &world);
                }
                all.push(stats);
            }
            Err(e) => {
                failure = Some(e.to_string());
                break;
            }
        }
        if f % every == 0 || f == frames {
            if let Some(s) = subdivided.as_mut() {
                s.update(&world, f);
            }
            outputs.write_frame(&world, f, subdivided.as_ref())?;
        }
        outputs.sample_usd(&world, f)?;
        snapshot(&world, f, &mut subdivided)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    csv.flush().map_err(|e| io_err(&csv_path, e))?;
    outputs.finish_usd()?;
    if let Some(p) = &plot_data {
        let budget = world
            .settings()
            .budget
            .frame_ms
            .unwrap_or(1e3 / f64::from(scene.fps));
        for (name, plot) in p.plots(&scene.name, budget) {
            let path = dir.join(name);
            fs::write(&path, plot.to_svg()).map_err(|e| io_err(&path, e))?;
        }
    }
    if !render_ms.is_empty() {
        println!(
            "{} preview frames: median {:.1} ms to render, {:.1} ms to encode and write",
            render_ms.len(),
            percentile(&render_ms, 0.5),
            percentile(&write_ms, 0.5)
        );
    }
    if let Some(s) = &subdivided {
        println!(
            "--subdivide {}: {} frames subdivided, median {:.1} ms; {} CCD hits, {} impact-zone rounds, \
             {} levels left linear (zone cap), largest correction of the Loop positions {:.2} mm",
            pictures.subdivide.unwrap_or(0),
            s.frames,
            percentile(&s.ms, 0.5),
            s.ccd_hits,
            s.zone_rounds,
            s.linear_levels,
            1e3 * s.max_correction
        );
    }
    let threads = rayon::current_num_threads();
    let summary = Summary::new(
        &scene.name,
        &all,
        threads,
        world.state_hash(),
        failure.is_some(),
        models,
    );
    let json_path = dir.join("summary.json");
    fs::write(&json_path, summary.to_json()).map_err(|e| io_err(&json_path, e))?;
    println!("{}", summary.text());
    println!("wrote {}", dir.display());
    match failure {
        Some(m) => Err(Failure::Simulation(m)),
        None => Ok(()),
    }
}

fn bench(path: &Path, frames: Option<u32>) -> Result<(), Failure> {
    let (scene, mut world) = load(path)?;
    let frames = frames.unwrap_or(scene.frames);
    let dt = scene.dt();
    let bar = progress(frames);
    bar.set_message(scene.name.clone());
    let mut all = Vec::with_capacity(frames as usize);
    for _ in 0..frames {
        let stats = world
            .step(dt)
            .map_err(|e| Failure::Simulation(e.to_string()))?;
        all.push(stats);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let budget = world
        .settings()
        .budget
        .frame_ms
        .unwrap_or(1e3 / f64::from(scene.fps));
    println!(
        "{} — {} frames, {} threads, budget {:.2} ms/frame",
        scene.name,
        frames,
        rayon::current_num_threads(),
        budget
    );
    println!(
        "{:<12} {:>10} {:>10} {:>8}",
        "stage", "median ms", "p95 ms", "budget%"
    );
    for (label, v) in stage_columns(&all, stats_csv::Models::of(&world)) {
        let (med, p95) = (percentile(&v, 0.5), percentile(&v, 0.95));
        println!(
            "{:<12} {:>10.3} {:>10.3} {:>7.1}%",
            label,
            med,
            p95,
            100.0 * med / budget
        );
    }
    let cg = cg_iterations(&all);
    println!(
        "{:<12} {:>10.0} {:>10.0}   (every solve of a frame)",
        "cg iters",
        percentile(&cg, 0.5),
        percentile(&cg, 0.95),
    );
    if let Some(line) = spmv_against_memcpy(&world) {
        println!("{line}");
    }
    println!("state_hash {:016x}", world.state_hash());
    Ok(())
}

/// Every timed row of `weft bench` with its per-frame values (ms): the stages `models` go
/// through, the collision sub-stages indented under the stage that holds them (`collide`, or
/// `solve` for a run of isometric cloths only, whose step runs its own collision passes), the
/// frame less its stages (`unstaged`), and the whole frame.
fn stage_columns(all: &[FrameStats], models: stats_csv::Models) -> Vec<(String, Vec<f64>)> {
    let mut rows = Vec::new();
    let holder = if models.baraff_witkin {
        Stage::Collide
    } else {
        Stage::Solve
    };
    for s in models.stages() {
        rows.push((
            s.column().to_string(),
            all.iter().map(|x| x.stage_ms.get(s)).collect(),
        ));
        if s == holder {
            for i in models.collide_columns() {
                let name = CollideTimes::COLUMNS[i];
                let label = name.trim_start_matches("collide_").trim_end_matches("_ms");
                rows.push((
                    format!("  {label}"),
                    all.iter().map(|x| x.collide_ms.values()[i]).collect(),
                ));
            }
        }
    }
    // What a frame spends in no stage (step control's measures and backup, the per-substep
    // set-up, the end-of-frame strain check), frame by frame: the stages' medians do not add up
    // to the frame's median, so their difference does not measure it.
    rows.push((
        "unstaged".into(),
        all.iter()
            .map(|x| x.frame_ms - models.stages().map(|s| x.stage_ms.get(s)).sum::<f64>())
            .collect(),
    ));
    rows.push(("frame".into(), all.iter().map(|x| x.frame_ms).collect()));
    rows
}

/// CG iterations of every frame (all solves of all substeps and cloths).
fn cg_iterations(all: &[FrameStats]) -> Vec<f64> {
    all.iter().map(|x| f64::from(x.cg_iterations)).collect()
}

/// One line comparing the SpMV `y = A x` on the first Baraff–Witkin cloth's
/// last assembled matrix with a memcpy of the same number of bytes, timed
/// alternately in this run and pool: each one's median GB/s and the ratio.
/// `None` when no cloth has a matrix (no cloths, or only isometric ones).
///
/// The SpMV's bytes are those it must move at least: `values + cols + x + y`
/// (36 + 4 bytes a block, 12 + 12 a row; row offsets left out), the memcpy's
/// the same count read and the same count written.
fn spmv_against_memcpy(world: &World) -> Option<String> {
    let a = world.cloths().iter().find_map(|c| c.system())?.matrix();
    let n = a.num_rows();
    let bytes = a.pattern().num_blocks() * (36 + 4) + n * (12 + 12);
    let x: Vec<Vec3> = (0..n)
        .map(|i| Vec3::new(1.0, (i % 7) as f32, -0.5))
        .collect();
    let mut y = vec![Vec3::ZERO; n];
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    // Enough products for about 10 MB each sample; 25 samples each, alternated.
    let reps = (10_000_000 / bytes).clamp(1, 1000);
    let mut run = || {
        let mut spmv = Vec::new();
        let mut copy = Vec::new();
        for _ in 0..25 {
            let t = std::time::Instant::now();
            for _ in 0..reps {
                a.mul_vec(std::hint::black_box(&x), std::hint::black_box(&mut y));
            }
            spmv.push(t.elapsed().as_secs_f64() / reps as f64);
            let t = std::time::Instant::now();
            for _ in 0..reps {
                dst.copy_from_slice(std::hint::black_box(&src));
                std::hint::black_box(&mut dst);
            }
            copy.push(t.elapsed().as_secs_f64() / reps as f64);
        }
        (spmv, copy)
    };
    let (spmv, copy) = match world.thread_pool() {
        Some(pool) => pool.install(run),
        None => run(),
    };
    let gbs = |s: f64| bytes as f64 / s / 1e9;
    let (s, c) = (gbs(percentile(&spmv, 0.5)), gbs(percentile(&copy, 0.5)));
    Some(format!(
        "spmv         {s:>7.2} GB/s  memcpy {c:.2} GB/s  ratio {:.2}   ({n} rows, {bytes} bytes a product)",
        s / c
    ))
}

/// One side of `weft bench --compare`: its scene, world and frames.
struct BenchSide {
    label: String,
    scene: Scene,
    world: World,
    threads: usize,
    frames: Vec<FrameStats>,
}

impl BenchSide {
    fn new(path: &Path, threads: usize) -> Result<Self, Failure> {
        let (scene, mut world) = load(path)?;
        world
            .set_threads(threads)
            .map_err(|e| Failure::Simulation(format!("cannot start the thread pool: {e}")))?;
        Ok(Self {
            label: format!("{} ({}, {} threads)", scene.name, path.display(), threads),
            scene,
            world,
            threads,
            frames: Vec::new(),
        })
    }

    fn step(&mut self) -> Result<(), Failure> {
        let stats = self
            .world
            .step(self.scene.dt())
            .map_err(|e| Failure::Simulation(format!("{}: {e}", self.label)))?;
        self.frames.push(stats);
        Ok(())
    }
}

/// `weft bench A --compare B` / `--compare-threads N`: A and B step one frame
/// each in turn (A B A B …), each world in its own pool, so that both see the
/// same machine load; prints both medians and B/A per stage.
fn bench_compare(
    a_path: &Path,
    b_path: Option<&Path>,
    threads: Option<usize>,
    b_threads: Option<usize>,
    frames: Option<u32>,
) -> Result<(), Failure> {
    let all_cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let a_threads = threads.unwrap_or(all_cores);
    let b_threads = b_threads.unwrap_or(a_threads);
    if a_threads == 0 || b_threads == 0 {
        return Err(Failure::BadInput("--threads must be at least 1".into()));
    }
    let mut a = BenchSide::new(a_path, a_threads)?;
    let mut b = BenchSide::new(b_path.unwrap_or(a_path), b_threads)?;
    let frames = frames.unwrap_or(a.scene.frames);
    let bar = progress(2 * frames);
    for _ in 0..frames {
        a.step()?;
        bar.inc(1);
        b.step()?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!("A: {}", a.label);
    println!("B: {}", b.label);
    println!("{frames} frames each, alternated A B A B in one process");
    println!(
        "{:<12} {:>10} {:>10} {:>7}",
        "stage", "A med ms", "B med ms", "B/A"
    );
    let ratio = |x: f64, y: f64| if x > 0.0 { y / x } else { f64::NAN };
    let models = stats_csv::Models::of(&a.world).or(stats_csv::Models::of(&b.world));
    for ((label, va), (_, vb)) in stage_columns(&a.frames, models)
        .into_iter()
        .zip(stage_columns(&b.frames, models))
    {
        let (ma, mb) = (percentile(&va, 0.5), percentile(&vb, 0.5));
        println!(
            "{:<12} {:>10.3} {:>10.3} {:>7.3}",
            label,
            ma,
            mb,
            ratio(ma, mb)
        );
    }
    let (ca, cb) = (
        percentile(&cg_iterations(&a.frames), 0.5),
        percentile(&cg_iterations(&b.frames), 0.5),
    );
    println!(
        "{:<12} {:>10.0} {:>10.0} {:>7.3}",
        "cg iters",
        ca,
        cb,
        ratio(ca, cb)
    );
    for (name, side) in [("A", &a), ("B", &b)] {
        if let Some(line) = spmv_against_memcpy(&side.world) {
            println!("{name} {line}");
        }
    }
    println!(
        "state_hash A {:016x} B {:016x} ({} and {} threads)",
        a.world.state_hash(),
        b.world.state_hash(),
        a.threads,
        b.threads
    );
    Ok(())
}

/// The scene files `paths` name: files as given, folders as their `*.toml`
/// files in name order.
fn scene_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Failure> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut in_dir: Vec<PathBuf> = fs::read_dir(p)
                .map_err(|e| io_err(p, e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && f.extension().is_some_and(|x| x == "toml"))
                .collect();
            in_dir.sort();
            files.extend(in_dir);
        } else {
            files.push(p.clone());
        }
    }
    Ok(files)
}

/// How one scene of `weft stress` ended.
enum StressOutcome {
    /// Every frame ran.
    Ran,
    /// A step failed (lost invariant) at this frame.
    Failed(u32, String),
    /// This frame had not ended after the timeout.
    TimedOut(u32),
}

/// One row of the `weft stress` table.
struct StressRow {
    name: String,
    budget_ms: Option<f64>,
    frames: Vec<FrameStats>,
    outcome: StressOutcome,
}

/// Runs `frames` frames of `world` (all when `None`) on a worker thread, in
/// `pool`, handing back each frame's stats; stops waiting for a frame after
/// `timeout` seconds.
fn stress_scene(
    scene: &Scene,
    mut world: World,
    frames: u32,
    pool: Option<std::sync::Arc<rayon::ThreadPool>>,
    timeout: Option<f64>,
) -> StressRow {
    world.set_thread_pool(pool);
    let dt = scene.dt();
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for _ in 0..frames {
            let result = world.step(dt).map_err(|e| e.to_string());
            let failed = result.is_err();
            // The receiver is gone once the frame timed out: stop.
            if send.send(result).is_err() || failed {
                break;
            }
        }
    });
    let mut row = StressRow {
        name: scene.name.clone(),
        budget_ms: scene.settings.budget.frame_ms,
        frames: Vec::with_capacity(frames as usize),
        outcome: StressOutcome::Ran,
    };
    for frame in 1..=frames {
        let next = match timeout {
            Some(s) => receive
                .recv_timeout(std::time::Duration::from_secs_f64(s))
                .map_err(|_| ()),
            None => receive.recv().map_err(|_| ()),
        };
        match next {
            Ok(Ok(stats)) => row.frames.push(stats),
            Ok(Err(message)) => {
                row.outcome = StressOutcome::Failed(frame, message);
                break;
            }
            Err(()) => {
                row.outcome = StressOutcome::TimedOut(frame);
                break;
            }
        }
    }
    row
}

fn stress(
    paths: &[PathBuf],
    frames: Option<u32>,
    threads: Option<usize>,
    timeout: Option<f64>,
) -> Result<(), Failure> {
    if let Some(s) = timeout {
        if !(s.is_finite() && s > 0.0) {
            return Err(Failure::BadInput(format!(
                "--frame-timeout must be positive, got {s}"
            )));
        }
    }
    let pool = match threads {
        Some(0) => return Err(Failure::BadInput("--threads must be at least 1".into())),
        Some(t) => Some(std::sync::Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .map_err(|e| Failure::Simulation(format!("cannot start the thread pool: {e}")))?,
        )),
        None => None,
    };
    let files = scene_files(paths)?;
    if files.is_empty() {
        return Err(Failure::BadInput("no scene file given".into()));
    }
    let mut rows = Vec::new();
    let mut refused = Vec::new();
    for file in &files {
        let (scene, world) = match load(file) {
            Ok(loaded) => loaded,
            Err(Failure::BadInput(m) | Failure::Simulation(m)) => {
                refused.push((file.display().to_string(), m));
                continue;
            }
        };
        let n = frames.unwrap_or(scene.frames);
        eprintln!("{}: {} frames", scene.name, n);
        rows.push(stress_scene(&scene, world, n, pool.clone(), timeout));
    }
    println!(
        "{} threads; worst/budget = the slowest frame over the scene's [budget] frame_ms",
        pool.as_ref()
            .map_or_else(rayon::current_num_threads, |p| p.current_num_threads())
    );
    println!(
        "| scene | frames | budget ms | median ms | worst ms | worst/budget | frames > 2x budget | max strain % | free edges % | forced by pins % | forced by bodies % | last resorts | outcome |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut bad = false;
    for r in &rows {
        let times: Vec<f64> = r.frames.iter().map(|s| s.frame_ms).collect();
        let worst = times.iter().copied().fold(0.0f64, f64::max);
        let median = percentile(&times, 0.5);
        let largest = |f: fn(&FrameStats) -> f32| r.frames.iter().map(f).fold(0.0f32, f32::max);
        let strain = largest(|s| s.max_strain);
        let free = largest(|s| s.max_strain_free);
        let pins = largest(|s| s.max_strain_pins);
        let bodies = largest(|s| s.max_strain_bodies);
        let resorts: u32 = r.frames.iter().map(|s| s.last_resorts).sum();
        let (ratio, over) = match r.budget_ms {
            Some(b) => (
                format!("{:.2}", worst / b),
                times.iter().filter(|&&t| t > 2.0 * b).count().to_string(),
            ),
            None => ("-".into(), "-".into()),
        };
        let outcome = match &r.outcome {
            StressOutcome::Ran => "ran".to_string(),
            StressOutcome::Failed(f, m) => {
                bad = true;
                format!("failed at frame {f}: {m}")
            }
            StressOutcome::TimedOut(f) => {
                bad = true;
                format!(
                    "frame {f} still running after {:.0} s",
                    timeout.unwrap_or_default()
                )
            }
        };
        println!(
            "| {} | {} | {} | {:.1} | {:.1} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} |",
            r.name,
            r.frames.len(),
            r.budget_ms.map_or_else(|| "-".into(), |b| format!("{b}")),
            median,
            worst,
            ratio,
            over,
            100.0 * strain,
            100.0 * free,
            100.0 * pins,
            100.0 * bodies,
            resorts,
            outcome
        );
    }
    if !refused.is_empty() {
        println!();
        println!("refused at load:");
        for (file, message) in &refused {
            println!("- {file}: {message}");
        }
    }
    if bad {
        return Err(Failure::Simulation(
            "a scene failed or timed out (see the table)".into(),
        ));
    }
    Ok(())
}

/// Linear-interpolated percentile (q in [0, 1]) of `v`.
fn percentile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let pos = q * (s.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    s[lo] + (s[hi] - s[lo]) * (pos - lo as f64)
}

/// What `summary.json` holds.
struct Summary {
    scene: String,
    frames: usize,
    threads: usize,
    stage_median_ms: Vec<(&'static str, f64)>,
    frame_median_ms: f64,
    frame_p95_ms: f64,
    frame_max_ms: f64,
    max_strain: f32,
    final_strain: f32,
    max_contacts: u32,
    max_contact_rows: u32,
    deadline_misses: usize,
    rejected_substeps: u32,
    cg_unconverged: u32,
    max_base_strain_midpoint: f64,
    max_base_strain_end_to_end: f64,
    max_row_strain: f64,
    newton_unconverged: u32,
    pool_overflows: u32,
    max_arena_bytes: u64,
    last_resorts: u32,
    rounds_cut: u32,
    last_resort_hits: u32,
    state_hash: u64,
    failed: bool,
    /// The models of the run's cloths: each model's own figures are reported only for a run
    /// that uses it.
    models: stats_csv::Models,
}

/// `summary.json` keys of the Baraff–Witkin model only.
const BW_SUMMARY_KEYS: [&str; 2] = ["max_contacts", "rejected_substeps"];

/// `summary.json` keys of the isometric model only.
const ISOMETRIC_SUMMARY_KEYS: [&str; 5] = [
    "max_contact_rows",
    "max_base_strain_midpoint",
    "max_base_strain_end_to_end",
    "max_row_strain",
    "newton_unconverged_projections",
];

impl Summary {
    fn new(
        scene: &str,
        all: &[FrameStats],
        threads: usize,
        state_hash: u64,
        failed: bool,
        models: stats_csv::Models,
    ) -> Self {
        let stage_median_ms = models
            .stages()
            .map(|s| {
                let v: Vec<f64> = all.iter().map(|x| x.stage_ms.get(s)).collect();
                (s.column(), percentile(&v, 0.5))
            })
            .collect();
        let fm: Vec<f64> = all.iter().map(|x| x.frame_ms).collect();
        Self {
            scene: scene.to_string(),
            frames: all.len(),
            threads,
            stage_median_ms,
            frame_median_ms: percentile(&fm, 0.5),
            frame_p95_ms: percentile(&fm, 0.95),
            frame_max_ms: fm.iter().copied().fold(0.0, f64::max),
            max_strain: all.iter().map(|x| x.max_strain).fold(0.0, f32::max),
            final_strain: all.last().map_or(0.0, |x| x.max_strain),
            max_contacts: all.iter().map(|x| x.contacts).max().unwrap_or(0),
            max_contact_rows: all.iter().map(|x| x.contact_rows).max().unwrap_or(0),
            deadline_misses: all.iter().filter(|x| x.deadline_hit).count(),
            rejected_substeps: all.iter().map(|x| x.rejected_substeps).sum(),
            cg_unconverged: all.iter().map(|x| x.cg_unconverged).sum(),
            max_base_strain_midpoint: all
                .iter()
                .map(|x| x.base_strain_midpoint)
                .fold(0.0, f64::max),
            max_base_strain_end_to_end: all
                .iter()
                .map(|x| x.base_strain_end_to_end)
                .fold(0.0, f64::max),
            max_row_strain: all.iter().map(|x| x.row_strain).fold(0.0, f64::max),
            newton_unconverged: all.iter().map(|x| x.newton_unconverged).sum(),
            pool_overflows: all.iter().map(|x| x.pool_overflows).sum(),
            max_arena_bytes: all.iter().map(|x| x.arena_bytes).max().unwrap_or(0),
            last_resorts: all.iter().map(|x| x.last_resorts).sum(),
            rounds_cut: all.iter().map(|x| x.rounds_cut).sum(),
            last_resort_hits: all.iter().map(|x| x.last_resort_hits).sum(),
            state_hash,
            failed,
            models,
        }
    }

    fn to_json(&self) -> String {
        let stages: serde_json::Map<String, serde_json::Value> = self
            .stage_median_ms
            .iter()
            .map(|(k, v)| ((*k).to_string(), serde_json::json!(v)))
            .collect();
        let mut v = serde_json::json!({
            "scene": self.scene,
            "frames": self.frames,
            "threads": self.threads,
            "stage_median_ms": stages,
            "frame_median_ms": self.frame_median_ms,
            "frame_p95_ms": self.frame_p95_ms,
            "frame_max_ms": self.frame_max_ms,
            "max_strain": self.max_strain,
            "final_max_strain": self.final_strain,
            "max_contacts": self.max_contacts,
            "max_contact_rows": self.max_contact_rows,
            "deadline_misses": self.deadline_misses,
            "rejected_substeps": self.rejected_substeps,
            "cg_unconverged_solves": self.cg_unconverged,
            "max_base_strain_midpoint": self.max_base_strain_midpoint,
            "max_base_strain_end_to_end": self.max_base_strain_end_to_end,
            "max_row_strain": self.max_row_strain,
            "newton_unconverged_projections": self.newton_unconverged,
            "pool_overflows": self.pool_overflows,
            "max_arena_bytes": self.max_arena_bytes,
            "last_resorts": self.last_resorts,
            "rounds_cut": self.rounds_cut,
            "last_resort_hits": self.last_resort_hits,
            "state_hash": format!("{:016x}", self.state_hash),
            "failed": self.failed,
        });
        if let Some(map) = v.as_object_mut() {
            if !self.models.baraff_witkin {
                BW_SUMMARY_KEYS.iter().for_each(|k| _ = map.remove(*k));
            }
            if !self.models.isometric {
                ISOMETRIC_SUMMARY_KEYS
                    .iter()
                    .for_each(|k| _ = map.remove(*k));
            }
        }
        serde_json::to_string_pretty(&v).unwrap_or_else(|_| "{}".into())
    }

    fn text(&self) -> String {
        let (bw, iso) = (self.models.baraff_witkin, self.models.isometric);
        let mut contacts = Vec::new();
        if bw {
            contacts.push(format!("{} (collider vertices)", self.max_contacts));
        }
        if iso {
            contacts.push(format!(
                "{} (isometric contact rows)",
                self.max_contact_rows
            ));
        }
        let mut unconverged = vec![format!("{} (PCG)", self.cg_unconverged)];
        if iso {
            unconverged.push(format!(
                "{} (Gauss–Newton projections)",
                self.newton_unconverged
            ));
        }
        let mut model_figures = String::new();
        if bw {
            model_figures.push_str(&format!(", rejected substeps {}", self.rejected_substeps));
        }
        model_figures.push_str(&format!(", unconverged solves {}", unconverged.join(" / ")));
        if iso {
            model_figures.push_str(&format!(
                ", max row strain {:.3}%",
                100.0 * self.max_row_strain
            ));
        }
        format!(
            "{}: {} frames on {} threads, {:.2} ms/frame median ({:.2} p95, {:.2} max), max strain {:.3}% (final {:.3}%), \
             max contacts {}{}, deadline misses {}, last resorts {} (rounds cut by the deadline {}, hits left after them {}), state_hash {:016x}",
            self.scene,
            self.frames,
            self.threads,
            self.frame_median_ms,
            self.frame_p95_ms,
            self.frame_max_ms,
            100.0 * self.max_strain,
            100.0 * self.final_strain,
            contacts.join(" / "),
            model_figures,
            self.deadline_misses,
            self.last_resorts,
            self.rounds_cut,
            self.last_resort_hits,
            self.state_hash
        )
    }
}

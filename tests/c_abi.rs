//! The C ABI contract.
//!
//! - `include/weft.h` equals a fresh cbindgen generation from `src/ffi`
//!   (`WEFT_BLESS_HEADER=1` rewrites it) and compiles as C99 and as C++;
//! - `samples/c/drape.c`, built with `gcc -std=c99 -Wall -Wextra -Werror`
//!   against the static and against the shared library, reproduces the state
//!   hash of `samples/drape.toml` run through the scene loader;
//! - `samples/c/layers.c`, three sheets built and stepped through the C ABI,
//!   reproduces the state hash of `samples/layers.toml` over its first frames, and
//!   with a lining sewn to its shell (`weft_cloth_set_collides_with(.., 0)`) the hash
//!   of the same scene with that pair told not to collide (`World::set_cloths_collide`);
//! - `tests/c/isometric.c` builds a pinned 9 × 9 isometric cloth
//!   (`WEFT_MODEL_ISOMETRIC`), reads back its 4:1 subdivided mesh and
//!   reproduces the state hash of the same cloth built through the Rust API;
//! - `tests/c/engine_api.c` checks the edits an engine makes between steps under
//!   valgrind: velocities read back equal the finite difference of the positions, a
//!   teleport moves the cloth and its pins and the cloth steps on from there, a material
//!   or gravity change takes effect;
//! - `tests/c/older_header.c`, built against the frozen 0.1 header
//!   (`tests/c/weft_0_1/weft.h`) and against `include/weft.h`, creates the same world
//!   (the 0.1 structs' missing fields take their defaults) and prints the same state
//!   hash; sizes below the first release's, between releases or above this library's
//!   are refused with a message; the 0.1 build runs under valgrind with its structs
//!   in heap blocks of exactly the 0.1 sizes;
//! - `tests/c/bad_input.c` feeds every function NULLs, stale and foreign
//!   handles, out-of-range indices, NaN/inf, zero and huge counts and
//!   wrong-size descriptors, then steps a valid frame, under valgrind
//!   memcheck with zero errors and zero leaks.
//!
//! gcc, g++ and valgrind are installed with apt-get when missing and the test
//! runs as root (CI); otherwise the test fails with the command to run. It
//! never skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use weft::{ClothDesc, World, WorldSettings};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `target/<profile>`: the test binary lives in `target/<profile>/deps`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(Path::parent)
        .expect("test binary is in <target>/<profile>/deps")
        .to_path_buf()
}

/// Serialises library builds and tool installs between the tests of this file.
static SETUP: Mutex<()> = Mutex::new(());

/// The static and shared libraries, brought up to date with `cargo build --lib` for this
/// profile on every run (a no-op when they are current). `cargo test` builds the test's
/// rlib, not necessarily these: on a checkout that had built them at an older commit they
/// would be stale, and the C programs would link an older library (seen on a reused clone).
fn libraries() -> (PathBuf, PathBuf) {
    let _guard = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    let dir = profile_dir();
    let (a, so) = (dir.join("libweft.a"), dir.join("libweft.so"));
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root()).args(["build", "--lib"]);
    if dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let status = cmd.status().expect("running cargo build --lib");
    assert!(status.success(), "cargo build --lib failed");
    assert!(
        a.exists() && so.exists(),
        "no {} or {}",
        a.display(),
        so.display()
    );
    (a, so)
}

fn have(bin: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {bin}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Makes `bin` available: installs `package` with apt-get when running as
/// root, otherwise fails saying what to install. Never skips.
fn ensure_tool(bin: &str, package: &str) {
    let _guard = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    if have(bin) {
        return;
    }
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .expect("running id -u");
    let is_root = String::from_utf8_lossy(&uid.stdout).trim() == "0";
    assert!(
        is_root,
        "`{bin}` is missing and this test does not skip: run `apt-get install -y {package}` as root"
    );
    for args in [
        vec!["update"],
        // With recommends: gcc needs libc6-dev for the C headers, valgrind
        // libc6-dbg for its mandatory ld.so redirections.
        vec!["install", "-y", package],
    ] {
        let status = Command::new("apt-get")
            .args(&args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .expect("running apt-get");
        assert!(status.success(), "apt-get {args:?} failed");
    }
    assert!(
        have(bin),
        "`{bin}` still missing after installing {package}"
    );
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({})\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[derive(Clone, Copy, Debug)]
enum Link {
    Static,
    Shared,
}

/// Compiles one C file against the library and `include/weft.h` with the flags.
fn build_c(source: &Path, name: &str, link: Link) -> PathBuf {
    build_c_with(source, name, link, &root().join("include"))
}

/// Compiles one C file against the library and the `weft.h` in `include`.
fn build_c_with(source: &Path, name: &str, link: Link, include: &Path) -> PathBuf {
    ensure_tool("gcc", "gcc");
    let (a, so) = libraries();
    let out_dir = profile_dir().join("c_abi");
    std::fs::create_dir_all(&out_dir).expect("creating the C build folder");
    let exe = out_dir.join(format!("{name}_{link:?}").to_lowercase());
    let mut cmd = Command::new("gcc");
    cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", "-g"])
        .arg("-I")
        .arg(include)
        .arg(source)
        .arg("-o")
        .arg(&exe);
    match link {
        Link::Static => {
            cmd.arg(&a)
                .args(["-lpthread", "-ldl", "-lm", "-lrt", "-lutil"]);
        }
        Link::Shared => {
            let dir = so.parent().expect("library folder");
            cmd.arg("-L")
                .arg(dir)
                .arg("-lweft")
                .arg(format!("-Wl,-rpath,{}", dir.display()))
                .arg("-lm");
        }
    }
    run(&mut cmd);
    exe
}

fn generate_header() -> String {
    let config = cbindgen::Config::from_file(root().join("cbindgen.toml")).expect("cbindgen.toml");
    let mut out = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(root().join("src/ffi/mod.rs"))
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut out);
    String::from_utf8(out).expect("the header is UTF-8")
}

#[test]
fn header_matches_a_fresh_generation() {
    let fresh = generate_header();
    let path = root().join("include/weft.h");
    if std::env::var_os("WEFT_BLESS_HEADER").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().expect("include/")).expect("mkdir include");
        std::fs::write(&path, &fresh).expect("writing include/weft.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "include/weft.h differs from the header cbindgen generates from src/ffi; \
         regenerate with `WEFT_BLESS_HEADER=1 cargo test --release --test c_abi` and review the diff"
    );
}

#[test]
fn header_compiles_as_c99_and_cpp() {
    ensure_tool("gcc", "gcc");
    ensure_tool("g++", "g++");
    let header = root().join("include/weft.h");
    run(Command::new("gcc")
        .args([
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-fsyntax-only",
            "-x",
            "c",
        ])
        .arg(&header));
    run(Command::new("g++")
        .args([
            "-std=c++11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-fsyntax-only",
            "-x",
            "c++",
        ])
        .arg(&header));
}

/// The `state_hash` line a C program printed.
fn printed_hash(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("state_hash "))
        .unwrap_or_else(|| panic!("no state_hash line in:\n{stdout}"))
        .trim()
        .to_string()
}

#[test]
fn drape_sample_reproduces_the_scene_hash() {
    let scene = weft::scene::load(&root().join("samples/drape.toml")).expect("drape.toml loads");
    assert_eq!(scene.name, "drape-65");
    let mut world = scene.instantiate().expect("drape.toml instantiates");
    for _ in 0..scene.frames {
        world.step(scene.dt()).expect("drape.toml steps");
    }
    let expected = format!("{:016x}", world.state_hash());
    for link in [Link::Static, Link::Shared] {
        let exe = build_c(&root().join("samples/c/drape.c"), "drape", link);
        let out = run(&mut Command::new(&exe));
        assert_eq!(
            printed_hash(&out),
            expected,
            "drape.c ({link:?}) and samples/drape.toml disagree"
        );
    }
}

/// Through the first contacts of the sheets (they meet from frame 12 on).
const LAYERS_FRAMES: u32 = 16;

#[test]
fn layers_sample_reproduces_the_scene_hash_and_sews_a_lining() {
    let scene = weft::scene::load(&root().join("samples/layers.toml")).expect("layers.toml loads");
    let rust_hash = |sewn: bool| {
        let mut world = scene.instantiate().expect("layers.toml instantiates");
        if sewn {
            let ids = world.cloth_ids().to_vec();
            world
                .set_cloths_collide(ids[1], ids[0], false)
                .expect("middle and bottom exist");
        }
        for _ in 0..LAYERS_FRAMES {
            world.step(scene.dt()).expect("layers.toml steps");
        }
        format!("{:016x}", world.state_hash())
    };
    let exe = build_c(&root().join("samples/c/layers.c"), "layers", Link::Static);
    let frames = LAYERS_FRAMES.to_string();
    let all = rust_hash(false);
    let out = run(Command::new(&exe).arg(&frames));
    assert_eq!(
        printed_hash(&out),
        all,
        "layers.c and samples/layers.toml disagree"
    );
    let sewn = rust_hash(true);
    assert_ne!(sewn, all, "sewing the lining changed nothing");
    let out = run(Command::new(&exe).args([frames.as_str(), "sewn"]));
    assert_eq!(
        printed_hash(&out),
        sewn,
        "layers.c sewn and the Rust API disagree"
    );
}

/// The cloth of `tests/c/isometric.c` through the Rust API: the same grid,
/// world, cloth and isometric settings, the j = 0 edge pinned where it is
/// (what `weft_cloth_set_pins` with no targets does), `frames` frames.
fn isometric_rust_hash(frames: u32) -> String {
    use glam::{Vec2, Vec3};
    use weft::collide::resolve::CollisionSettings;
    use weft::collide::strain_limit::StrainLimit;
    use weft::integrate::bdf2::Integrator;
    use weft::integrate::implicit_euler::BwSettings;
    use weft::integrate::isometric::{Coupling, IsometricSettings, SecondTarget};
    use weft::integrate::isometric_cloth::{IsometricDesc, RestShape};
    use weft::integrate::projection::ProjectionSettings;
    use weft::mesh::{Diagonals, GridSpec, grid};
    use weft::runtime::budget::Budget;

    const N: u32 = 9;
    let mesh = grid(&GridSpec {
        nx: N,
        ny: N,
        size: Vec2::splat(0.4),
        centre: Vec3::new(0.0, 0.5, 0.0),
        u_axis: Vec3::X,
        v_axis: Vec3::NEG_Z,
        diagonals: Diagonals::Alternating,
    })
    .expect("grid");
    let mut world = World::new(WorldSettings {
        substeps: 4,
        budget: Budget {
            cg_max_iterations: 300,
            newton_max_iterations: 10,
            ..Budget::default()
        },
        ..WorldSettings::default()
    });
    let mut projection = ProjectionSettings {
        tolerance: 1e-3,
        max_iterations: 10,
        ..ProjectionSettings::default()
    };
    projection.cg.max_iterations = 300;
    projection.cg.tolerance = 1e-6;
    let iso = IsometricDesc {
        bending_stiffness: 1e-4,
        rest_shape: RestShape::Flat,
        proximal_weight: 1e-6,
        boundary_compliance: 1e-4,
        conforming_compliance: 0.0,
        integrator: Integrator::Bdf2,
        step: IsometricSettings {
            projection,
            coupling: Coupling::Simultaneous,
            second_target: SecondTarget::Prediction,
            friction_compliance: Some(1e-3),
            ..IsometricSettings::default()
        },
    };
    let desc = ClothDesc {
        name: "flag".into(),
        mesh,
        density: 0.1,
        thickness: 0.004,
        friction: 0.3,
        air_damping: 0.0,
        // The weft_cloth_desc defaults (not used by the isometric step).
        model: BwSettings::default(),
        pins: Vec::new(),
        pin_velocity: Vec3::ZERO,
        initial_velocity: Vec3::ZERO,
        collision: CollisionSettings {
            self_collision: false,
            thickness: 0.004,
            friction: 0.3,
            strain_limit: Some(StrainLimit::default()),
            ..CollisionSettings::default()
        },
    };
    let c = world
        .add_isometric_cloth(desc, iso)
        .expect("isometric cloth");
    for v in 0..N {
        let x = world.cloth(c).expect("a live cloth").state().positions()[v as usize];
        world.pin_vertex(c, v, x, Vec3::ZERO).expect("pin");
    }
    assert_eq!(world.cloth(c).expect("a live cloth").state().len(), 289);
    for _ in 0..frames {
        world.step(1.0 / 60.0).expect("the isometric flag steps");
    }
    format!("{:016x}", world.state_hash())
}

#[test]
fn isometric_c_program_matches_the_rust_api() {
    let frames = 4;
    let expected = isometric_rust_hash(frames);
    for link in [Link::Static, Link::Shared] {
        let exe = build_c(&root().join("tests/c/isometric.c"), "isometric", link);
        let out = run(Command::new(&exe).arg(frames.to_string()));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("vertices 289 triangles 512"), "{stdout}");
        assert_eq!(
            printed_hash(&out),
            expected,
            "isometric.c ({link:?}) and the Rust API disagree:\n{stdout}"
        );
    }
}

/// Runs `exe` with `args` under valgrind memcheck: zero errors, zero leaks; returns stdout.
fn under_valgrind(exe: &Path, args: &[&std::ffi::OsStr]) -> String {
    ensure_tool("valgrind", "valgrind");
    let out = Command::new("valgrind")
        .args([
            "--tool=memcheck",
            "--error-exitcode=3",
            "--leak-check=full",
            "--show-leak-kinds=all",
            "--errors-for-leak-kinds=definite,indirect,possible",
        ])
        // One narrow suppression: crossbeam-epoch's tagged list entries of
        // exited rayon threads (the file says why they are not leaks).
        .arg(format!(
            "--suppressions={}",
            root().join("tests/c/valgrind.supp").display()
        ))
        .arg(exe)
        .args(args)
        .output()
        .expect("running valgrind");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{} under valgrind failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        exe.display(),
        out.status
    );
    assert!(
        stderr.contains("ERROR SUMMARY: 0 errors"),
        "valgrind found errors:\n{stderr}"
    );
    for kind in ["definitely lost", "indirectly lost", "possibly lost"] {
        assert!(
            !stderr.contains(kind) || stderr.contains(&format!("{kind}: 0 bytes")),
            "valgrind reports leaks ({kind}):\n{stderr}"
        );
    }
    stdout
}

#[test]
fn bad_input_is_refused_under_valgrind() {
    let exe = build_c(
        &root().join("tests/c/bad_input.c"),
        "bad_input",
        Link::Static,
    );
    let scene = root().join("samples/drape-33.toml");
    let stdout = under_valgrind(&exe, &[scene.as_os_str()]);
    assert!(stdout.contains("bad_input: all checks passed"), "{stdout}");
}

#[test]
fn engine_edits_take_effect_under_valgrind() {
    let exe = build_c(
        &root().join("tests/c/engine_api.c"),
        "engine_api",
        Link::Static,
    );
    let stdout = under_valgrind(&exe, &[]);
    assert!(stdout.contains("engine_api: all checks passed"), "{stdout}");
}

#[test]
fn a_host_built_against_the_0_1_header_gets_the_same_world() {
    let source = root().join("tests/c/older_header.c");
    let scene = root().join("samples/drape-33.toml");
    let old = build_c_with(
        &source,
        "older_header_0_1",
        Link::Static,
        &root().join("tests/c/weft_0_1"),
    );
    let new = build_c(&source, "older_header", Link::Static);
    let old_out = under_valgrind(&old, &[scene.as_os_str()]);
    let new_out = String::from_utf8_lossy(&run(Command::new(&new).arg(&scene)).stdout).into_owned();
    for out in [&old_out, &new_out] {
        assert!(out.contains("older_header: all checks passed"), "{out}");
    }
    // The 0.1 cloth descriptor is the smaller one: the test really is of an older size.
    assert!(old_out.contains("cloth 352 "), "{old_out}");
    assert!(!new_out.contains("cloth 352 "), "{new_out}");
    let hash = |out: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix("state_hash "))
            .map(str::to_string)
    };
    assert_eq!(
        hash(&old_out),
        hash(&new_out),
        "0.1:\n{old_out}\ncurrent:\n{new_out}"
    );
}

/// `tests/c/host_jobs.c` steps a scene of several cloths (three two-layer stacks and a lone
/// drape) on a pthread pool of its own through `weft_world_set_task_dispatcher`, under
/// valgrind: the same state hash as on weft's own workers (it checks that itself) and as
/// `weft run`'s; a dispatcher that skips a task is refused with the state unchanged and a
/// pending pin target kept.
#[test]
fn a_host_job_system_steps_like_weft_run_under_valgrind() {
    let exe = build_c(
        &root().join("tests/c/host_jobs.c"),
        "host_jobs",
        Link::Static,
    );
    let scene = root().join("tests/scenes/layer-stacks.toml");
    // Two frames on each path, then the program's two more.
    let stdout = under_valgrind(&exe, &[scene.as_os_str(), "2".as_ref()]);
    assert!(stdout.contains("host_jobs: all checks passed"), "{stdout}");
    let out_dir = std::env::temp_dir().join(format!("weft_host_jobs_{}", std::process::id()));
    let run_out = run(Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("run")
        .arg(&scene)
        .args(["--frames", "4", "--threads", "2", "--out"])
        .arg(&out_dir));
    std::fs::remove_dir_all(&out_dir).expect("removing the run's output");
    let cli = String::from_utf8_lossy(&run_out.stdout);
    let cli_hash = cli
        .split("state_hash ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no state_hash in `weft run`'s summary:\n{cli}"));
    let c_hash = stdout
        .lines()
        .find_map(|l| l.strip_prefix("state_hash "))
        .unwrap_or_else(|| panic!("no state_hash line in:\n{stdout}"))
        .trim();
    assert_eq!(c_hash, cli_hash, "host_jobs.c and `weft run` disagree");
}

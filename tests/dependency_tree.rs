//! The library without default features is the runtime alone: `cargo tree
//! --no-default-features` names none of the scene loader's or the CLI's
//! dependencies (clap, indicatif, png, toml, hecs, serde, serde_json), while the default
//! build still has them (so the check looks where they would be).

use std::process::Command;

/// The package names in `cargo tree` of the package's normal dependencies (the library's and
/// the binary's are the same list; which optional ones are in it is up to the features).
fn tree(args: &[&str]) -> Vec<String> {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tree", "--offline", "--edges", "normal", "--prefix", "none"])
        .args(["--format", "{p}"])
        .args(args)
        .output()
        .expect("running cargo tree");
    assert!(
        out.status.success(),
        "cargo tree failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

const NOT_IN_THE_RUNTIME: [&str; 7] = [
    "clap",
    "indicatif",
    "png",
    "toml",
    "hecs",
    "serde",
    "serde_json",
];

#[test]
fn the_runtime_alone_has_no_scene_or_cli_dependencies() {
    let runtime = tree(&["--no-default-features"]);
    assert!(runtime.iter().any(|p| p == "rayon"), "{runtime:?}");
    let found: Vec<&str> = NOT_IN_THE_RUNTIME
        .into_iter()
        .filter(|name| runtime.iter().any(|p| p == name))
        .collect();
    assert!(
        found.is_empty(),
        "`cargo tree --no-default-features` has {found:?}:\n{runtime:?}"
    );
}

#[test]
fn the_default_library_has_them() {
    let full = tree(&[]);
    for name in ["clap", "indicatif", "png", "toml", "hecs"] {
        assert!(
            full.iter().any(|p| p == name),
            "{name} missing from {full:?}"
        );
    }
}

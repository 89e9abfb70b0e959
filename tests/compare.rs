//! `weft compare`: columns of several runs' stats.csv plotted against each other (the
//! staggered vs simultaneous plots of the stiff-sheet gallery entry are made with it).

use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weft-compare-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn write_run(dir: &Path, run: &str, values: &[f64]) -> PathBuf {
    let folder = dir.join(run);
    std::fs::create_dir_all(&folder).expect("run dir");
    let mut csv = String::from("frame,time_s,bending_energy_j\n");
    for (k, v) in values.iter().enumerate() {
        csv.push_str(&format!("{},{},{v}\n", k + 1, (k + 1) as f64 / 60.0));
    }
    std::fs::write(folder.join("stats.csv"), csv).expect("stats.csv");
    folder
}

#[test]
fn compare_plots_one_line_per_run_and_names_a_missing_column() {
    let dir = scratch("plots");
    let a = write_run(&dir, "a", &[0.0, 1.0, 0.5]);
    let b = write_run(&dir, "b", &[0.0, 0.25, 0.125]);
    let out = dir.join("out");
    let weft = env!("CARGO_BIN_EXE_weft");
    let status = Command::new(weft)
        .arg("compare")
        .arg(format!("staggered={}", a.display()))
        // A stats.csv path works as well as its folder.
        .arg(format!("simultaneous={}", b.join("stats.csv").display()))
        .args(["--columns", "bending_energy_j", "--out"])
        .arg(&out)
        .status()
        .expect("weft runs");
    assert!(status.success());
    let svg = std::fs::read_to_string(out.join("compare_bending_energy_j.svg")).expect("svg");
    assert!(
        svg.starts_with("<svg") || svg.starts_with("<?xml"),
        "{}",
        &svg[..60]
    );
    for label in ["staggered", "simultaneous", "bending_energy_j"] {
        assert!(svg.contains(label), "no `{label}` in the plot");
    }
    // The axes are one polyline, each run one more.
    assert!(svg.matches("<polyline").count() >= 3, "one line per run");

    let missing = Command::new(weft)
        .arg("compare")
        .arg(format!("x={}", a.display()))
        .arg(format!("y={}", b.display()))
        .args(["--columns", "no_such_column", "--out"])
        .arg(&out)
        .output()
        .expect("weft runs");
    assert_eq!(missing.status.code(), Some(2));
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(
        err.contains("no_such_column") && err.contains("stats.csv"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

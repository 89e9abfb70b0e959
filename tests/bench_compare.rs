//! `weft bench --compare` / `--compare-threads`: two configurations stepped alternately in
//! one process, both medians and their ratio per stage; and the SpMV-against-memcpy line.

use std::process::Command;

fn samples(name: &str) -> String {
    format!("{}/samples/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn bench(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("bench")
        .args(args)
        .output()
        .expect("weft runs");
    assert!(
        out.status.success(),
        "weft bench {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// The numbers of the row that starts with `label` (after the label).
fn row(text: &str, label: &str) -> Vec<f64> {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no `{label}` row in\n{text}"));
    line.trim_start()[label.len()..]
        .split_whitespace()
        .map(|w| w.parse::<f64>().unwrap_or(f64::NAN))
        .collect()
}

#[test]
fn compare_threads_prints_both_medians_their_ratio_and_equal_hashes() {
    let scene = samples("drape-33.toml");
    let text = bench(&[
        &scene,
        "--frames",
        "3",
        "--threads",
        "1",
        "--compare-threads",
        "2",
    ]);
    assert!(
        text.contains("A: drape-33") && text.contains("1 threads"),
        "{text}"
    );
    assert!(
        text.contains("B: drape-33") && text.contains("2 threads"),
        "{text}"
    );
    for label in ["assemble", "solve", "collide", "frame"] {
        let r = row(&text, label);
        assert_eq!(r.len(), 3, "`{label}`: A, B, B/A in\n{text}");
        assert!(r[0] > 0.0 && r[1] > 0.0, "`{label}` {r:?}");
        // The medians are printed to 1 µs, the ratio to 1e-3.
        let tolerance = 1e-3 + 1e-3 * (1.0 / r[0] + 1.0 / r[1]) * r[2];
        assert!((r[2] - r[1] / r[0]).abs() <= tolerance, "`{label}` {r:?}");
    }
    // The same scene at two thread counts ends in the same state.
    let hashes = text
        .lines()
        .find(|l| l.starts_with("state_hash A "))
        .expect("state_hash line");
    let words: Vec<&str> = hashes.split_whitespace().collect();
    assert_eq!(words[2], words[4], "{hashes}");
}

#[test]
fn compare_scenes_names_both_and_bench_reports_spmv_against_memcpy() {
    let text = bench(&[
        &samples("drape-33.toml"),
        "--frames",
        "2",
        "--threads",
        "1",
        "--compare",
        &samples("pile-33.toml"),
    ]);
    assert!(
        text.contains("A: drape-33") && text.contains("B: pile-33"),
        "{text}"
    );
    let cg = row(&text, "cg iters");
    assert!(cg[0] > 0.0 && cg[1] > 0.0, "{cg:?}");

    let single = bench(&[&samples("drape-33.toml"), "--frames", "2", "--threads", "1"]);
    let line = single
        .lines()
        .find(|l| l.starts_with("spmv"))
        .unwrap_or_else(|| panic!("no spmv line in\n{single}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let spmv: f64 = words[1].parse().expect("spmv GB/s");
    let copy: f64 = words[4].parse().expect("memcpy GB/s");
    let ratio: f64 = words[7].parse().expect("ratio");
    assert!(spmv > 0.0 && copy > 0.0, "{line}");
    assert!((ratio - spmv / copy).abs() < 0.02, "{line}");
}

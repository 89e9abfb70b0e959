//! A frame deadline measured through an injected clock. When the
//! deadline passes in the middle of a solve, CG stops iterating (keeping its
//! iterate), the frame reports `deadline_hit`, the collision stage still runs
//! (its first CCD round, then its last resort for what is left), and the
//! result passes the independent intersection check.

mod support;

use std::path::Path;
use std::sync::Arc;

use support::clock::SteppingClock;

use support::{TriSoup, find_intersections};

fn assert_intersection_free(world: &weft::world::World, what: &str) {
    let solids = support::solids_of(world);
    let (ox, otris) = world.obstacle_soup();
    for cloth in world.cloths() {
        let report = find_intersections(
            &TriSoup {
                positions: cloth.state().positions(),
                triangles: cloth.triangles(),
            },
            &[TriSoup {
                positions: ox,
                triangles: otris,
            }],
            &solids,
            1e-3,
        );
        assert!(report.is_clean(), "{what}: {}", report.summary());
    }
}

#[test]
fn a_deadline_mid_solve_stops_cg_and_still_runs_the_fail_safe() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/pile-33.toml");
    let scene = weft::scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut world = scene.instantiate().unwrap_or_else(|e| panic!("{e}"));
    let clock = Arc::new(SteppingClock::new(1e-3));
    world.set_clock(clock.clone());
    let dt = scene.dt();

    // Without a deadline: the cloth falls into contact and the solves need
    // many iterations (the reference for "stopped early").
    world.settings_mut().budget.frame_ms = None;
    let mut free_iterations = 0;
    for _ in 0..30 {
        let s = world.step(dt).unwrap_or_else(|e| panic!("{e}"));
        assert!(!s.deadline_hit);
        free_iterations = free_iterations.max(s.cg_max_iterations);
    }
    assert!(
        free_iterations > 8,
        "the reference solves must iterate ({free_iterations})"
    );

    // A 5 ms budget on a clock that moves 1 ms per read: the frame start and
    // the deadline's start take two reads, step control one, so the deadline
    // passes on the third check inside the first CG solve.
    world.settings_mut().budget.frame_ms = Some(5.0);
    for frame in 0..20 {
        let s = world.step(dt).unwrap_or_else(|e| panic!("{e}"));
        assert!(s.deadline_hit, "frame {frame}: deadline not reported");
        assert!(
            s.cg_max_iterations < free_iterations && s.cg_max_iterations <= 4,
            "frame {frame}: CG ran {} iterations past the deadline",
            s.cg_max_iterations
        );
        assert!(s.cg_unconverged > 0, "frame {frame}: a solve was cut short");
        // The collision stage ran in every substep despite the deadline.
        assert!(
            s.ccd_rounds >= s.substeps,
            "frame {frame}: {} CCD rounds in {} substeps",
            s.ccd_rounds,
            s.substeps
        );
        // Past the deadline the stage runs no round after its first CCD round: collisions left
        // go to the last resort, and only because the deadline cut the rounds.
        assert_eq!(
            s.zone_rounds, 0,
            "frame {frame}: zone rounds past the deadline"
        );
        assert!(
            s.last_resorts <= s.rounds_cut,
            "frame {frame}: {} last resorts, {} substeps cut",
            s.last_resorts,
            s.rounds_cut
        );
        assert!(world.cloths()[0].state().is_finite());
        assert_intersection_free(&world, &format!("frame {frame} past its deadline"));
    }
}

/// `[budget] governor` selects the governor mode; an unknown mode is a
/// typed error naming the key.
#[test]
fn budget_section_selects_the_governor() {
    use weft::runtime::budget::GovernorMode;
    let base = "name = \"g\"\nfps = 60\n[budget]\nframe_ms = 16.0\n";
    let load = |extra: &str| {
        weft::scene::Scene::from_toml(&format!("{base}{extra}"), Path::new("g.toml"))
            .and_then(|s| s.instantiate())
    };
    let mode = |extra: &str| {
        load(extra)
            .unwrap_or_else(|e| panic!("{e}"))
            .settings()
            .budget
            .governor
    };
    assert_eq!(mode(""), GovernorMode::Fixed);
    assert_eq!(mode("governor = \"fixed\"\n"), GovernorMode::Fixed);
    assert_eq!(mode("governor = \"adaptive\"\n"), GovernorMode::Adaptive);
    let e = load("governor = \"turbo\"\n").expect_err("unknown mode");
    assert!(e.to_string().contains("governor"), "{e}");
}

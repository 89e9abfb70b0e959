//! The columns of `weft run`'s `stats.csv`: those of every run, then each model's own, written
//! only when a cloth of the run uses that model (a Baraff–Witkin run has no isometric column,
//! an isometric run no Baraff–Witkin one).

use std::io::Write;

use weft::collide::resolve::CollideTimes;
use weft::runtime::profile::Stage;
use weft::runtime::stats::FrameStats;
use weft::world::World;

/// Which models the cloths of a run use.
#[derive(Clone, Copy, Debug)]
pub struct Models {
    pub baraff_witkin: bool,
    pub isometric: bool,
}

impl Models {
    /// The models of `world`'s cloths.
    pub fn of(world: &World) -> Self {
        let cloths = world.cloths();
        Models {
            baraff_witkin: cloths.iter().any(|c| c.isometric().is_none()),
            isometric: cloths.iter().any(|c| c.isometric().is_some()),
        }
    }

    /// The models of either run.
    pub fn or(self, other: Models) -> Self {
        Models {
            baraff_witkin: self.baraff_witkin || other.baraff_witkin,
            isometric: self.isometric || other.isometric,
        }
    }

    /// Whether a column of `model` is written.
    fn has(self, model: Model) -> bool {
        match model {
            Model::Both => true,
            Model::BaraffWitkin => self.baraff_witkin,
            Model::Isometric => self.isometric,
        }
    }

    /// The timed stages the run's models go through: the isometric step times its Table 3.1
    /// step as `solve` (its collision passes included, split in the `collide_*` columns).
    pub fn stages(self) -> impl Iterator<Item = Stage> {
        Stage::ALL
            .into_iter()
            .filter(move |s| self.baraff_witkin || matches!(s, Stage::Kinematics | Stage::Solve))
    }

    /// The collision sub-stage columns ([`CollideTimes::COLUMNS`] indices) the run's models
    /// fill: the strain limiter and velocity smoothing are Baraff–Witkin's only.
    pub fn collide_columns(self) -> impl Iterator<Item = usize> {
        (0..CollideTimes::COLUMNS.len()).filter(move |&i| {
            self.baraff_witkin
                || !matches!(
                    CollideTimes::COLUMNS[i],
                    "collide_strain_ms" | "collide_smoothing_ms"
                )
        })
    }
}

/// The model a column belongs to.
#[derive(Clone, Copy)]
enum Model {
    Both,
    BaraffWitkin,
    Isometric,
}

/// A column after the stage and collision sub-stage times: its name, its model, its value.
type Column = (&'static str, Model, fn(&FrameStats) -> String);

/// The columns between the stage times and the collision sub-stage times, in file order.
const COUNTS: [Column; 23] = [
    ("substeps", Model::Both, |s| s.substeps.to_string()),
    ("rejected", Model::BaraffWitkin, |s| {
        s.rejected_substeps.to_string()
    }),
    ("cg_iterations", Model::Both, |s| {
        s.cg_iterations.to_string()
    }),
    ("cg_max", Model::Both, |s| s.cg_max_iterations.to_string()),
    ("cg_residual", Model::Both, |s| {
        format!("{:.3e}", s.cg_residual)
    }),
    ("cg_unconverged", Model::Both, |s| {
        s.cg_unconverged.to_string()
    }),
    ("contacts", Model::BaraffWitkin, |s| s.contacts.to_string()),
    ("released", Model::BaraffWitkin, |s| {
        s.contacts_released.to_string()
    }),
    ("max_strain", Model::Both, |s| {
        format!("{:.6}", s.max_strain)
    }),
    ("energy_j", Model::Both, |s| format!("{:.6e}", s.energy)),
    ("deadline_hit", Model::Both, |s| {
        u8::from(s.deadline_hit).to_string()
    }),
    ("proximity_pairs", Model::Both, |s| {
        s.proximity_pairs.to_string()
    }),
    ("ccd_hits", Model::Both, |s| s.ccd_hits.to_string()),
    ("ccd_rounds", Model::Both, |s| s.ccd_rounds.to_string()),
    ("strain_sweeps", Model::BaraffWitkin, |s| {
        s.strain_sweeps.to_string()
    }),
    ("zone_rounds", Model::Both, |s| s.zone_rounds.to_string()),
    ("impact_zones", Model::Both, |s| s.impact_zones.to_string()),
    ("largest_zone", Model::Both, |s| s.largest_zone.to_string()),
    ("last_resorts", Model::Both, |s| s.last_resorts.to_string()),
    ("rounds_cut", Model::Both, |s| s.rounds_cut.to_string()),
    ("last_resort_hits", Model::Both, |s| {
        s.last_resort_hits.to_string()
    }),
    ("gave_way", Model::Both, |s| {
        s.last_resorts_gave_way.to_string()
    }),
    ("pool_overflows", Model::Both, |s| {
        s.pool_overflows.to_string()
    }),
];

/// The columns after the collision sub-stage times, in file order.
const MODEL_COLUMNS: [Column; 18] = [
    // Isometric model (Wang 2012).
    ("newton_iterations", Model::Isometric, |s| {
        s.newton_iterations.to_string()
    }),
    ("newton_max", Model::Isometric, |s| {
        s.newton_max_iterations.to_string()
    }),
    ("newton_unconverged", Model::Isometric, |s| {
        s.newton_unconverged.to_string()
    }),
    ("contact_rows", Model::Isometric, |s| {
        s.contact_rows.to_string()
    }),
    ("base_strain_midpoint", Model::Isometric, |s| {
        format!("{:.6e}", s.base_strain_midpoint)
    }),
    ("base_strain_end_to_end", Model::Isometric, |s| {
        format!("{:.6e}", s.base_strain_end_to_end)
    }),
    ("bending_energy_j", Model::Isometric, |s| {
        format!("{:.6e}", s.bending_energy)
    }),
    // The frame arenas' high-water bytes (runtime::arena).
    ("arena_bytes", Model::Both, |s| s.arena_bytes.to_string()),
    // Isometric: the largest red–red row strain (what strain_tolerance bounds).
    ("row_strain", Model::Isometric, |s| {
        format!("{:.6e}", s.row_strain)
    }),
    // Baraff–Witkin: solves whose IC(0) needed a shift / fell back to block Jacobi.
    ("precond_shifted", Model::BaraffWitkin, |s| {
        s.precond_shifted.to_string()
    }),
    ("precond_fallbacks", Model::BaraffWitkin, |s| {
        s.precond_fallbacks.to_string()
    }),
    // Isometric: the sparse Cholesky's assembly, factor and solve times, its PCG fallbacks.
    ("direct_assemble_ms", Model::Isometric, |s| {
        format!("{:.3}", s.direct_assemble_ms)
    }),
    ("factor_ms", Model::Isometric, |s| {
        format!("{:.3}", s.factor_ms)
    }),
    ("direct_solve_ms", Model::Isometric, |s| {
        format!("{:.3}", s.direct_solve_ms)
    }),
    ("direct_fallbacks", Model::Isometric, |s| {
        s.direct_fallbacks.to_string()
    }),
    // Isometric: nodes the last collision pass moved unprojected; projections that kept their
    // best iterate.
    ("failsafe_moved", Model::Isometric, |s| {
        s.failsafe_moved.to_string()
    }),
    ("kept_best", Model::Isometric, |s| s.kept_best.to_string()),
    // Isometric: the most base-edge rows held at the end of one projection.
    ("base_rows_held", Model::Isometric, |s| {
        s.base_rows_held.to_string()
    }),
];

/// The header line of a run of `models` (without the line end).
pub fn header(models: Models) -> String {
    let mut h = String::from("frame,time_s,frame_ms");
    for s in models.stages() {
        h.push_str(&format!(",{}_ms", s.column()));
    }
    for (name, model, _) in COUNTS {
        if models.has(model) {
            h.push(',');
            h.push_str(name);
        }
    }
    for i in models.collide_columns() {
        h.push(',');
        h.push_str(CollideTimes::COLUMNS[i]);
    }
    for (name, model, _) in MODEL_COLUMNS {
        if models.has(model) {
            h.push(',');
            h.push_str(name);
        }
    }
    h
}

/// Writes the row of `frame` (ending at `time`, s) in the columns of [`header`].
pub fn write_row(
    w: &mut impl Write,
    models: Models,
    frame: u64,
    time: f64,
    s: &FrameStats,
) -> std::io::Result<()> {
    write!(w, "{frame},{time:.6},{:.4}", s.frame_ms)?;
    for st in models.stages() {
        write!(w, ",{:.4}", s.stage_ms.get(st))?;
    }
    for (_, model, value) in COUNTS {
        if models.has(model) {
            write!(w, ",{}", value(s))?;
        }
    }
    let collide = s.collide_ms.values();
    for i in models.collide_columns() {
        write!(w, ",{:.4}", collide[i])?;
    }
    for (_, model, value) in MODEL_COLUMNS {
        if models.has(model) {
            write!(w, ",{}", value(s))?;
        }
    }
    writeln!(w)
}

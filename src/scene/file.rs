//! The scene file schema: TOML sections parsed into typed structs.
//!
//! Every struct denies unknown fields; every default is stated here and in
//! `samples/README.md`. Units are SI, y is up.

use serde::Deserialize;

use crate::integrate::implicit_euler::BwSettings;

/// A whole scene file.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SceneFile {
    /// Scene name (default: the file stem).
    pub name: Option<String>,
    /// Frames per second (Hz).
    #[serde(default = "default_fps")]
    pub fps: f32,
    /// Frames to run.
    #[serde(default = "default_frames")]
    pub frames: u32,
    /// Substeps per frame.
    #[serde(default = "default_substeps")]
    pub substeps: u32,
    /// Gravity (m/s²).
    #[serde(default = "default_gravity")]
    pub gravity: [f32; 3],
    /// Solver settings.
    #[serde(default)]
    pub solver: SolverSection,
    /// The frame budget.
    #[serde(default)]
    pub budget: BudgetSection,
    /// Cloths, in order.
    #[serde(default, rename = "cloth")]
    pub cloths: Vec<ClothSection>,
    /// Colliders, in order.
    #[serde(default, rename = "collider")]
    pub colliders: Vec<ColliderSection>,
    /// Triangle-mesh obstacles (OBJ or generated), in order.
    #[serde(default, rename = "obstacle")]
    pub obstacles: Vec<ObstacleSection>,
    /// The preview camera (`weft run --preview`); absent = framed from the
    /// scene bounds.
    #[serde(default)]
    pub camera: Option<CameraSection>,
    /// Wind on every cloth (`model::wind`); absent = still air.
    #[serde(default)]
    pub wind: Option<WindSection>,
}

fn default_fps() -> f32 {
    60.0
}
fn default_frames() -> u32 {
    180
}
fn default_substeps() -> u32 {
    2
}
fn default_gravity() -> [f32; 3] {
    [0.0, -9.81, 0.0]
}

/// Which cloth model integrates the cloth.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    /// Baraff–Witkin 1998 implicit cloth.
    #[default]
    BaraffWitkin,
    /// Wang 2012 isometric cloth on the 4:1 subdivided mesh (`[solver.isometric]`,
    /// `[cloth.isometric]`).
    Isometric,
}

/// Jacobian treatment.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum JacobianKind {
    /// Definite (the default; see `model::baraff_witkin`).
    #[default]
    Definite,
    /// Exact (may be indefinite).
    Exact,
}

/// `[solver]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SolverSection {
    /// The cloth model.
    #[serde(default)]
    pub model: ModelKind,
    /// CG iteration cap per solve.
    #[serde(default = "default_cg_max")]
    pub cg_max_iterations: u32,
    /// CG relative tolerance.
    #[serde(default = "default_cg_tol")]
    pub cg_tolerance: f64,
    /// Jacobian treatment.
    #[serde(default)]
    pub jacobian: JacobianKind,
    /// Preconditioner of the Baraff–Witkin filtered PCG.
    #[serde(default)]
    pub preconditioner: PreconditionerKind,
    /// Step control: largest relative stretch change per substep.
    #[serde(default = "default_stretch_change")]
    pub max_stretch_change: f32,
    /// Step control: largest number of halvings (0 disables).
    #[serde(default = "default_halvings")]
    pub max_halvings: u32,
    /// `"implicit"` (default) or `"imex"`: elastic bending explicit (Bridson's course notes, *Implicit/Explicit Methods*),
    /// substeps longer than its step limit (§4.9) split in halves.
    #[serde(default)]
    pub bending_integration: BendingIntegrationKind,
    /// Settings of the isometric model (read when `model = "isometric"`).
    #[serde(default)]
    pub isometric: IsometricSolverSection,
}

/// `[solver] preconditioner`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PreconditionerKind {
    /// Inverse of the 3×3 block diagonal.
    #[default]
    BlockJacobi,
    /// Block symmetric Gauss–Seidel of the filtered matrix.
    BlockSgs,
    /// Block incomplete Cholesky IC(0) of the filtered matrix.
    BlockIc0,
}

/// `[solver] bending_integration`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum BendingIntegrationKind {
    /// Backward Euler (the bending Jacobian in the solve).
    #[default]
    Implicit,
    /// Elastic bending explicit, everything else implicit.
    Imex,
}

/// `[cloth.material] bending`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum BendingKind {
    /// The Baraff–Witkin bend condition.
    #[default]
    BaraffWitkin,
    /// Discrete-shell (dihedral) bending, course notes / BMF03 (`model::discrete_shell`).
    Dihedral,
}

impl Default for SolverSection {
    fn default() -> Self {
        Self {
            model: ModelKind::default(),
            cg_max_iterations: default_cg_max(),
            cg_tolerance: default_cg_tol(),
            jacobian: JacobianKind::default(),
            preconditioner: PreconditionerKind::default(),
            max_stretch_change: default_stretch_change(),
            max_halvings: default_halvings(),
            bending_integration: BendingIntegrationKind::default(),
            isometric: IsometricSolverSection::default(),
        }
    }
}

/// `[solver.isometric]`: the Gauss–Newton projection and the step of Wang 2012 (Table 3.1).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IsometricSolverSection {
    /// Strain tolerance ε (fraction): the Gauss–Newton stopping test (Wang 2012's "strain limit").
    #[serde(default = "default_strain_tolerance")]
    pub strain_tolerance: f64,
    /// Gauss–Newton iteration cap per projection (the budget's Newton cap).
    #[serde(default = "default_newton_max")]
    pub newton_max_iterations: u32,
    /// PCG iteration cap per Gauss–Newton iteration (the budget's CG cap).
    #[serde(default = "default_iso_cg_max")]
    pub cg_max_iterations: u32,
    /// PCG relative tolerance.
    #[serde(default = "default_iso_cg_tol")]
    pub cg_tolerance: f64,
    /// `"staggered"` (project, then collide) or `"simultaneous"` (contacts as constraints).
    #[serde(default)]
    pub coupling: CouplingKind,
    /// `"backward-euler"` or `"bdf2"`.
    #[serde(default)]
    pub integrator: IntegratorKind,
    /// Target of the second projection: `"prediction"` (x̃) or `"collided"` (x_c).
    #[serde(default)]
    pub second_target: SecondTargetKind,
    /// β of the tangential contact rows, D = β w_p (dimensionless; 0 = hard friction).
    #[serde(default = "default_friction_compliance")]
    pub friction_compliance: f64,
    /// β_b of the boundary rows (3.4): extra proximal weight D += β_b w_k (dimensionless).
    #[serde(default = "default_boundary_compliance")]
    pub boundary_compliance: f64,
    /// β_c of the conforming rows (3.3): extra proximal weight D += β_c w_k (dimensionless).
    #[serde(default)]
    pub conforming_compliance: f64,
    /// β: proximal weight of every constraint row, D = β (J W Jᵀ)_aa (dimensionless).
    #[serde(default = "default_proximal_weight")]
    pub proximal_weight: f64,
    /// β_n of the normal contact rows, D = β_n w_p (dimensionless).
    #[serde(default = "default_contact_compliance")]
    pub contact_compliance: f64,
    /// Gauss–Newton iterations (eq. 3.25) before the switch to fast projection.
    #[serde(default = "default_gauss_newton_iterations")]
    pub gauss_newton_iterations: u32,
    /// Normal contact rows: `"unilateral"` (they only push) or `"equality"` (eq. 3.26).
    #[serde(default)]
    pub contacts: ContactRowsKind,
    /// What the strain tolerance bounds: `"rows"` (the (3.1) rows) or `"base-edges"` (also
    /// the base edges through their red nodes).
    #[serde(default)]
    pub strain_test: StrainTestKind,
    /// How often Table 3.1 lines 4–6 may be repeated when line 6 moves a node (0: as printed;
    /// `integrate::isometric` module doc).
    #[serde(default)]
    pub contact_rounds: u32,
    /// Speculative contact rows: nodes within thickness + this distance (m) of an analytic
    /// collider get a unilateral row on its tangent plane (0: none; `integrate::isometric`).
    #[serde(default)]
    pub contact_margin: f64,
    /// Contact rows that follow the analytic colliders inside the projection (hard, re-linearised
    /// at every Gauss–Newton iteration; needs `contact_margin > 0`).
    #[serde(default)]
    pub follow_obstacles: bool,
    /// With `follow_obstacles`, rows on the triangle-mesh obstacles (`[[obstacle]]`) too
    /// (default true; false leaves them to the collision stage; `integrate::isometric`).
    #[serde(default = "default_mesh_rows")]
    pub mesh_rows: bool,
    /// Linear solver of each Gauss–Newton iteration: `"cholesky"` (sparse direct) or `"pcg"`.
    #[serde(default)]
    pub linear_solver: LinearSolverKind,
    /// Fill-reducing ordering of the sparse Cholesky: `"amd"`, `"nested-dissection"` or
    /// `"natural"`.
    #[serde(default)]
    pub cholesky_ordering: CholeskyOrderingKind,
    /// Threads of the sparse Cholesky's numeric factorisation (1: sequential).
    #[serde(default = "default_cholesky_threads")]
    pub cholesky_threads: u32,
    /// How the sparse Cholesky's numeric factorisation runs in parallel: `"kernels"` (faer's,
    /// `cholesky_threads` threads) or `"subtrees"` (the two halves below the top separator as
    /// two tasks of the world's pool).
    #[serde(default)]
    pub cholesky_parallel: CholeskyParallelKind,
    /// PCG iterations on the last numeric factor before the sparse Cholesky factors again
    /// (0: a factorisation every Gauss–Newton iteration).
    #[serde(default)]
    pub cholesky_reuse_iterations: u32,
    /// When a projection takes the self-stress out of its multipliers before they warm start
    /// the next one: `"off"`, `"after-convergence"` or `"always"`.
    #[serde(default)]
    pub self_stress_filter: SelfStressFilterKind,
    /// Rows on the cloth–cloth pairs the collision stage repels, held for the rest of the step
    /// (with `follow_obstacles` and self-collision; `integrate::isometric`).
    #[serde(default)]
    pub hold_repelled_pairs: bool,
    /// Backtrack a Gauss–Newton step that more than doubles the largest scaled violation
    /// (`docs/methods/isometric-model.md` §A25).
    #[serde(default)]
    pub line_search: bool,
    /// Longest node move of one Gauss–Newton step, in metres (0: no bound; §A25).
    #[serde(default)]
    pub step_bound: f64,
    /// When the unilateral contact rows' active set changes: `"take-at-convergence"` (a row
    /// released for pulling comes back when the projection meets its tolerance) or
    /// `"every-iteration"` (Wang 2012 §3.3: both ways at every Gauss–Newton iteration;
    /// `docs/methods/isometric-contact.md` §2).
    #[serde(default)]
    pub active_set: ActiveSetKind,
    /// Friction rows on the self-contact rows, with the cloth's friction coefficient and
    /// `friction_compliance` (`docs/methods/isometric-contact.md` §6).
    #[serde(default)]
    pub self_friction: bool,
    /// Rows that hold each base edge's strain through its red node within half the strain
    /// tolerance: `"off"` or `"band"` (`crate::integrate::base_edge_rows`).
    #[serde(default)]
    pub base_edge_rows: BaseEdgeRowsSetting,
}

impl Default for IsometricSolverSection {
    fn default() -> Self {
        Self {
            strain_tolerance: default_strain_tolerance(),
            newton_max_iterations: default_newton_max(),
            cg_max_iterations: default_iso_cg_max(),
            cg_tolerance: default_iso_cg_tol(),
            coupling: CouplingKind::default(),
            integrator: IntegratorKind::default(),
            second_target: SecondTargetKind::default(),
            friction_compliance: default_friction_compliance(),
            boundary_compliance: default_boundary_compliance(),
            conforming_compliance: 0.0,
            proximal_weight: default_proximal_weight(),
            contact_compliance: default_contact_compliance(),
            gauss_newton_iterations: default_gauss_newton_iterations(),
            contacts: ContactRowsKind::default(),
            strain_test: StrainTestKind::default(),
            contact_rounds: 0,
            contact_margin: 0.0,
            follow_obstacles: false,
            mesh_rows: true,
            linear_solver: LinearSolverKind::default(),
            cholesky_ordering: CholeskyOrderingKind::default(),
            cholesky_threads: default_cholesky_threads(),
            cholesky_parallel: CholeskyParallelKind::default(),
            cholesky_reuse_iterations: 0,
            self_stress_filter: SelfStressFilterKind::default(),
            hold_repelled_pairs: false,
            line_search: false,
            step_bound: 0.0,
            active_set: ActiveSetKind::default(),
            self_friction: false,
            base_edge_rows: BaseEdgeRowsSetting::default(),
        }
    }
}

fn default_mesh_rows() -> bool {
    true
}

fn default_cholesky_threads() -> u32 {
    1
}

/// `[solver.isometric] linear_solver`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum LinearSolverKind {
    /// Supernodal sparse Cholesky (faer), symbolic analysis once per cloth.
    #[default]
    Cholesky,
    /// PCG with IC(0) on the matrix-free system.
    Pcg,
}

/// `[solver.isometric] cholesky_ordering`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum CholeskyOrderingKind {
    /// Approximate minimum degree.
    #[default]
    Amd,
    /// The rows as built.
    Natural,
    /// Nested dissection (level-structure separators), AMD on the small parts.
    NestedDissection,
}

/// `[solver.isometric] cholesky_parallel`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum CholeskyParallelKind {
    /// faer's factorisation, its dense kernels on `cholesky_threads` threads.
    #[default]
    Kernels,
    /// The two independent subtrees below the top separator at the same time, whatever the
    /// pool's size gives the same bits (`linalg::supernodal_llt`).
    Subtrees,
}

fn default_strain_tolerance() -> f64 {
    1e-3
}
fn default_newton_max() -> u32 {
    20
}
fn default_iso_cg_max() -> u32 {
    1000
}
fn default_iso_cg_tol() -> f64 {
    1e-6
}
fn default_friction_compliance() -> f64 {
    1e-3
}
fn default_boundary_compliance() -> f64 {
    0.0
}
fn default_proximal_weight() -> f64 {
    1e-6
}
fn default_contact_compliance() -> f64 {
    1e-2
}
fn default_gauss_newton_iterations() -> u32 {
    u32::MAX
}

/// `[solver.isometric] coupling`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum CouplingKind {
    /// Table 3.1 lines 1–3, 7.
    Staggered,
    /// All of Table 3.1.
    #[default]
    Simultaneous,
}

/// `[solver.isometric] integrator`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum IntegratorKind {
    /// First order.
    #[default]
    BackwardEuler,
    /// Second order (backward Euler on the first step).
    Bdf2,
}

/// `[solver.isometric] contacts`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ContactRowsKind {
    /// `n · x_p ≥ n · x_c`: released when they would pull.
    #[default]
    Unilateral,
    /// `n · x_p = n · x_c` (Wang 2012 eq. 3.26 as printed).
    Equality,
}

/// `[solver.isometric] strain_test`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum StrainTestKind {
    /// The rows of Wang 2012 eq. 3.1, 3.3, 3.4 (the thesis's test).
    #[default]
    Rows,
    /// The rows and the base edges through their red nodes (Wang 2012 Fig. 4.2's measure).
    BaseEdges,
}

/// `[solver.isometric] base_edge_rows`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum BaseEdgeRowsSetting {
    /// No base-edge rows (Wang 2012's model as printed).
    #[default]
    Off,
    /// Two-sided rows at ± half the strain tolerance, held where an edge reaches the band.
    Band,
}

/// `[solver.isometric] self_stress_filter`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SelfStressFilterKind {
    /// The warm start keeps the last solve's multipliers.
    #[default]
    Off,
    /// The self-stress is taken out after a projection that met its tolerance.
    AfterConvergence,
    /// The self-stress is taken out after every projection.
    Always,
}

/// `[solver.isometric] active_set`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ActiveSetKind {
    /// A row released for pulling comes back when the projection meets its tolerance.
    #[default]
    TakeAtConvergence,
    /// The set changes both ways at every Gauss–Newton iteration.
    EveryIteration,
}

/// `[solver.isometric] second_target`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SecondTargetKind {
    /// The prediction x̃.
    #[default]
    Prediction,
    /// The collided positions x_c.
    Collided,
}

/// `[cloth.isometric]`: the cloth's material under the isometric model.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IsometricClothSection {
    /// Bending stiffness k_b (J; Wang 2012 eq. 3.5).
    #[serde(default = "default_bending_stiffness")]
    pub bending_stiffness: f64,
    /// `"input"` (rest curvature of the input mesh, eq. 3.8) or `"flat"` (eq. 3.5).
    #[serde(default)]
    pub rest_shape: RestShapeKind,
}

impl Default for IsometricClothSection {
    fn default() -> Self {
        Self {
            bending_stiffness: default_bending_stiffness(),
            rest_shape: RestShapeKind::default(),
        }
    }
}

fn default_bending_stiffness() -> f64 {
    1e-5
}

/// `[cloth.isometric] rest_shape`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RestShapeKind {
    /// Flat rest state.
    Flat,
    /// The input mesh's curvature.
    #[default]
    Input,
}

/// `[cloth.icosphere]`: a closed icosphere cloth (a shell).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IcosphereSection {
    /// Radius (m).
    pub radius: f32,
    /// Subdivisions of the icosahedron (0 = 20 triangles, each level × 4).
    pub subdivisions: u32,
    /// Centre (m).
    #[serde(default)]
    pub centre: [f32; 3],
}

fn default_cg_max() -> u32 {
    200
}
fn default_cg_tol() -> f64 {
    1e-3
}
fn default_stretch_change() -> f32 {
    0.1
}
fn default_halvings() -> u32 {
    3
}

/// `[budget]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BudgetSection {
    /// Wall-clock budget per frame (ms); absent = none.
    pub frame_ms: Option<f64>,
    /// `"fixed"` (default) or `"adaptive"` (the governor adapts the CG cap).
    #[serde(default)]
    pub governor: GovernorChoice,
}

/// `[budget] governor`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum GovernorChoice {
    /// The solver's caps every frame.
    #[default]
    Fixed,
    /// Caps adapted to measured stage costs to fit `frame_ms`.
    Adaptive,
}

/// `[[cloth]]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClothSection {
    /// Name (default `cloth<i>`).
    pub name: Option<String>,
    /// A generated grid (exactly one of `grid`, `obj` and `tube`).
    pub grid: Option<GridSection>,
    /// An OBJ file, relative to the scene file.
    pub obj: Option<String>,
    /// A generated open tube (a sleeve); exactly one of `grid`, `obj`, `tube` and `icosphere`.
    pub tube: Option<TubeSection>,
    /// A generated closed icosphere (exactly one of `grid`, `obj`, `tube` and `icosphere`).
    pub icosphere: Option<IcosphereSection>,
    /// Isometric material (only with `[solver] model = "isometric"`; defaults apply when absent).
    pub isometric: Option<IsometricClothSection>,
    /// Placement applied to the mesh.
    #[serde(default)]
    pub transform: TransformSection,
    /// Areal density (kg/m²).
    #[serde(default = "default_density")]
    pub density: f32,
    /// Contact thickness (m).
    #[serde(default = "default_thickness")]
    pub thickness: f32,
    /// Friction coefficient of the cloth surface.
    #[serde(default = "default_friction")]
    pub friction: f32,
    /// Initial velocity (m/s).
    #[serde(default)]
    pub velocity: [f32; 3],
    /// Air damping c (1/s): drag −c m v on every vertex.
    #[serde(default)]
    pub air_damping: f32,
    /// Material.
    #[serde(default)]
    pub material: MaterialSection,
    /// Collision stage.
    #[serde(default)]
    pub collision: CollisionSection,
    /// Pins.
    #[serde(default, rename = "pin")]
    pub pins: Vec<PinSection>,
    /// Names of other cloths this cloth does not collide with (a lining sewn to its shell);
    /// every other pair of cloths collides.
    #[serde(default)]
    pub no_collide_with: Vec<String>,
}

fn default_density() -> f32 {
    0.1
}
fn default_thickness() -> f32 {
    0.004
}
fn default_friction() -> f32 {
    0.3
}

/// Grid orientation.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum GridPlane {
    /// Horizontal: u = +x, v = −z, normal +y.
    #[default]
    Xz,
    /// Vertical, facing +z: u = +x, v = +y.
    Xy,
    /// Vertical, facing +x: u = −z, v = +y.
    Yz,
}

/// Diagonal pattern.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DiagonalKind {
    /// Checkerboard.
    #[default]
    Alternating,
    /// All the same way.
    Regular,
}

/// `[cloth.grid]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GridSection {
    /// Vertex counts along u and v.
    pub vertices: [u32; 2],
    /// Extent along u and v (m).
    #[serde(default = "default_size")]
    pub size: [f32; 2],
    /// Centre (m).
    #[serde(default)]
    pub centre: [f32; 3],
    /// Orientation.
    #[serde(default)]
    pub plane: GridPlane,
    /// Diagonal pattern.
    #[serde(default)]
    pub diagonals: DiagonalKind,
    /// Out-of-plane bow amplitude a (m), so that a standing sheet buckles
    /// (the `pile-N` scenes): each vertex moves along the grid normal by
    /// a·sin(π t)·(1 + 0.5 sin(3π s)), with t ∈ [0, 1] from the first to the last
    /// row and s ∈ [−½, ½] across the columns.
    pub bow: Option<f32>,
}

/// Axis of a `[cloth.tube]`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TubeAxis {
    /// Along x: the generator's frame turned −90° about z (vertex 0 of a ring at −y).
    X,
    /// Along y: the generator's own frame (vertex 0 of a ring at +x, rings from −y to +y).
    #[default]
    Y,
    /// Along z: the generator's frame turned +90° about x (vertex 0 of a ring at +x).
    Z,
}

/// `[cloth.tube]`: an open cylindrical tube (`mesh::tube`), closed around
/// and open at both ends.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TubeSection {
    /// Radius (m).
    pub radius: f32,
    /// Length along the axis (m).
    pub length: f32,
    /// Vertex counts [around, along]: vertices on a ring (≥ 3), rings (≥ 2).
    pub vertices: [u32; 2],
    /// Centre of the axis segment (m).
    #[serde(default)]
    pub centre: [f32; 3],
    /// Axis direction.
    #[serde(default)]
    pub axis: TubeAxis,
    /// Diagonal pattern.
    #[serde(default)]
    pub diagonals: DiagonalKind,
}

fn default_size() -> [f32; 2] {
    [1.0, 1.0]
}

/// `[cloth.transform]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TransformSection {
    /// Translation (m).
    #[serde(default)]
    pub translation: [f32; 3],
    /// Rotation as XYZ Euler angles (degrees).
    #[serde(default)]
    pub rotation_deg: [f32; 3],
    /// Uniform scale.
    pub scale: Option<f32>,
}

/// `[cloth.material]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MaterialSection {
    /// Stretch stiffness along u (warp), N/m.
    #[serde(default = "default_stretch")]
    pub stretch_u: f64,
    /// Stretch stiffness along v (weft), N/m.
    #[serde(default = "default_stretch")]
    pub stretch_v: f64,
    /// Shear stiffness, N/m.
    #[serde(default = "default_shear")]
    pub shear: f64,
    /// Bending stiffness, N·m.
    #[serde(default = "default_bend")]
    pub bend: f64,
    /// Stretch damping time constant (s): k_d = damping · k.
    #[serde(default = "default_damping")]
    pub stretch_damping: f64,
    /// Shear damping time constant (s).
    #[serde(default = "default_damping")]
    pub shear_damping: f64,
    /// Bending damping time constant (s).
    #[serde(default = "default_damping")]
    pub bend_damping: f64,
    /// Rest stretch factors b_u, b_v.
    #[serde(default = "default_rest_stretch")]
    pub rest_stretch: [f64; 2],
    /// Hinge rest angles: "flat" or "initial" (alias "input").
    #[serde(default)]
    pub rest_angles: RestAnglesKind,
    /// Bending energy: "baraff-witkin" (default) or "dihedral". Both read `bend` (N·m) and
    /// `bend_damping` (s) with the same meaning.
    #[serde(default)]
    pub bending: BendingKind,
}

impl Default for MaterialSection {
    fn default() -> Self {
        Self {
            stretch_u: default_stretch(),
            stretch_v: default_stretch(),
            shear: default_shear(),
            bend: default_bend(),
            stretch_damping: default_damping(),
            shear_damping: default_damping(),
            bend_damping: default_damping(),
            rest_stretch: default_rest_stretch(),
            rest_angles: RestAnglesKind::default(),
            bending: BendingKind::default(),
        }
    }
}

// The material defaults are the Rust API's (`BwSettings::default()`), so a scene file, a C
// descriptor and a `ClothDesc` built in Rust start from the same cloth.
fn default_stretch() -> f64 {
    BwSettings::default().membrane.stretch_u
}
fn default_shear() -> f64 {
    BwSettings::default().membrane.shear
}
fn default_bend() -> f64 {
    BwSettings::default().bend.stiffness
}
fn default_damping() -> f64 {
    BwSettings::default().membrane.stretch_damping
}
fn default_rest_stretch() -> [f64; 2] {
    let m = BwSettings::default().membrane;
    [m.rest_stretch_u, m.rest_stretch_v]
}

/// Hinge rest angles.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RestAnglesKind {
    /// Flat.
    #[default]
    Flat,
    /// As in the input mesh.
    #[serde(alias = "input")]
    Initial,
}

/// `[[cloth.pin]]`: vertices by index, by grid coordinates or by region.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PinSection {
    /// Vertex indices.
    #[serde(default)]
    pub vertices: Vec<u32>,
    /// Grid coordinates [i, j] (grid cloths only).
    #[serde(default)]
    pub grid: Vec<[u32; 2]>,
    /// Every vertex inside this axis-aligned box (world coordinates, m).
    pub region: Option<RegionSection>,
    /// Keyframed motion of this section's vertices as one rigid region
    /// (`[[cloth.pin.keyframes]]`, the same keys as a collider's): each key's
    /// `position` (m) and `rotation_deg` move the region from where it starts,
    /// turning it about `pivot`. None: the pins hold still.
    #[serde(default)]
    pub keyframes: Vec<KeyframeSection>,
    /// The point the keyframes' rotations turn about (m, world coordinates at the
    /// start); only with `keyframes`. Default: the origin.
    pub pivot: Option<[f32; 3]>,
}

/// An axis-aligned box.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RegionSection {
    /// Lower corner (m).
    pub min: [f32; 3],
    /// Upper corner (m).
    pub max: [f32; 3],
}

/// Collider shapes.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ShapeKind {
    /// Half-space y < 0 in the local frame.
    Plane,
    /// Ball.
    Sphere,
    /// Capsule along local y.
    Capsule,
    /// Box.
    Box,
}

/// `[[collider]]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ColliderSection {
    /// Shape.
    pub shape: ShapeKind,
    /// Radius (sphere, capsule), m.
    pub radius: Option<f32>,
    /// Half length of the axis (capsule), m.
    pub half_length: Option<f32>,
    /// Half extents (box), m.
    pub half_extents: Option<[f32; 3]>,
    /// Position of the local origin (m).
    #[serde(default)]
    pub position: [f32; 3],
    /// Orientation as XYZ Euler angles (degrees).
    #[serde(default)]
    pub rotation_deg: [f32; 3],
    /// Friction coefficient.
    #[serde(default = "default_friction")]
    pub friction: f32,
    /// Linear velocity (m/s).
    #[serde(default)]
    pub linear_velocity: [f32; 3],
    /// Angular velocity about the local origin (rad/s).
    #[serde(default)]
    pub angular_velocity: [f32; 3],
    /// Keyframed poses (`[[collider.keyframes]]`); when given they replace
    /// `position`, `rotation_deg` and the velocities.
    #[serde(default)]
    pub keyframes: Vec<KeyframeSection>,
}

/// One keyframe of a collider or obstacle: its pose at `time`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KeyframeSection {
    /// Time (s) from the start.
    pub time: f64,
    /// Position of the local origin (m).
    #[serde(default)]
    pub position: [f32; 3],
    /// Orientation as XYZ Euler angles (degrees).
    #[serde(default)]
    pub rotation_deg: [f32; 3],
}

/// `[[obstacle]]`: a triangle-mesh obstacle, read from an OBJ file or
/// generated from a shape (the collision stage only: no analytic contact).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ObstacleSection {
    /// OBJ file, relative to the scene file.
    pub obj: Option<String>,
    /// Or a generated mesh: sphere, capsule or box (not plane).
    pub shape: Option<ShapeKind>,
    /// Radius (sphere, capsule), m.
    pub radius: Option<f32>,
    /// Half length of the axis (capsule), m.
    pub half_length: Option<f32>,
    /// Half extents (box), m.
    pub half_extents: Option<[f32; 3]>,
    /// Uniform scale of the mesh in its local frame.
    #[serde(default = "default_scale")]
    pub scale: f32,
    /// Position of the local origin (m).
    #[serde(default)]
    pub position: [f32; 3],
    /// Orientation as XYZ Euler angles (degrees).
    #[serde(default)]
    pub rotation_deg: [f32; 3],
    /// Friction coefficient of its surface.
    #[serde(default = "default_friction")]
    pub friction: f32,
    /// Its own thickness (m), added to the cloth's in the collision stage.
    #[serde(default)]
    pub thickness: f32,
    /// Linear velocity (m/s).
    #[serde(default)]
    pub linear_velocity: [f32; 3],
    /// Angular velocity about the local origin (rad/s).
    #[serde(default)]
    pub angular_velocity: [f32; 3],
    /// Keyframed poses (`[[obstacle.keyframes]]`), replacing the pose and
    /// velocities when given.
    #[serde(default)]
    pub keyframes: Vec<KeyframeSection>,
}

fn default_scale() -> f32 {
    1.0
}

/// `[cloth.collision]`: the Bridson 2002 collision stage.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CollisionSection {
    /// Cloth–cloth collisions (off by default until crumpling scenes keep
    /// their strain in bounds; obstacle meshes and tessellated colliders are
    /// always handled).
    #[serde(default)]
    pub self_collision: bool,
    /// Repulsion spring stiffness (N/m).
    #[serde(default = "default_repulsion")]
    pub repulsion_stiffness: f32,
    /// Strain limit per substep (fraction; 0 = off).
    #[serde(default = "default_strain_limit")]
    pub strain_limit: f32,
    /// Cap on strain limiting sweeps per pass (a pass stops as soon as no edge
    /// violates the limit; 16 left drape-65 at 4.4% for a 4% limit, 100 converges).
    #[serde(default = "default_strain_iterations")]
    pub strain_iterations: u32,
    /// CCD impulse rounds before impact zones.
    #[serde(default = "default_ccd_rounds")]
    pub ccd_rounds: u32,
    /// Implicit velocity smoothing strength after the collision stage
    /// (course notes §4.10; 0 = off). Twice the diffusion number of a step.
    #[serde(default)]
    pub velocity_smoothing: f32,
    /// Cap on the CG iterations of velocity smoothing.
    #[serde(default = "default_smoothing_iterations")]
    pub smoothing_iterations: u32,
    /// Rounds of response solve + collision stage after the first collision
    /// stage of a substep (Baraff–Witkin cloths; 0 = off).
    #[serde(default)]
    pub response_passes: u32,
}

impl Default for CollisionSection {
    fn default() -> Self {
        Self {
            self_collision: false,
            repulsion_stiffness: default_repulsion(),
            strain_limit: default_strain_limit(),
            strain_iterations: default_strain_iterations(),
            ccd_rounds: default_ccd_rounds(),
            velocity_smoothing: 0.0,
            smoothing_iterations: default_smoothing_iterations(),
            response_passes: 0,
        }
    }
}

fn default_repulsion() -> f32 {
    100.0
}
fn default_strain_limit() -> f32 {
    0.1
}
fn default_strain_iterations() -> u32 {
    100
}
fn default_smoothing_iterations() -> u32 {
    8
}
fn default_ccd_rounds() -> u32 {
    3
}

/// `[camera]`: the fixed camera of `weft run --preview`. Every key is
/// optional; a missing `eye` or `target` comes from the default framing of
/// the scene bounds.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CameraSection {
    /// Eye position (m).
    pub eye: Option<[f32; 3]>,
    /// The point looked at (m).
    pub target: Option<[f32; 3]>,
    /// Up direction.
    #[serde(default = "default_camera_up")]
    pub up: [f32; 3],
    /// Vertical field of view (degrees).
    #[serde(default = "default_camera_fov")]
    pub fov_deg: f32,
    /// Image width (pixels).
    #[serde(default = "default_camera_width")]
    pub width: u32,
    /// Image height (pixels).
    #[serde(default = "default_camera_height")]
    pub height: u32,
}

impl Default for CameraSection {
    fn default() -> Self {
        Self {
            eye: None,
            target: None,
            up: default_camera_up(),
            fov_deg: default_camera_fov(),
            width: default_camera_width(),
            height: default_camera_height(),
        }
    }
}

fn default_camera_up() -> [f32; 3] {
    [0.0, 1.0, 0.0]
}
fn default_camera_fov() -> f32 {
    35.0
}
fn default_camera_width() -> u32 {
    640
}
fn default_camera_height() -> u32 {
    480
}

/// `[wind]`: a uniform wind with deterministic gusts (`model::wind`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WindSection {
    /// Mean wind velocity (m/s).
    pub velocity: [f32; 3],
    /// Air density (kg/m³).
    #[serde(default = "default_air_density")]
    pub density: f32,
    /// Normal pressure coefficient C_n.
    #[serde(default = "default_wind_drag")]
    pub drag: f32,
    /// Tangential skin-friction coefficient C_t.
    #[serde(default = "default_wind_skin")]
    pub skin: f32,
    /// Relative gust amplitude in [0, 1].
    #[serde(default)]
    pub gust: f32,
    /// Gust period (s).
    #[serde(default = "default_gust_period")]
    pub gust_period_s: f32,
}

fn default_air_density() -> f32 {
    1.2
}
fn default_wind_drag() -> f32 {
    1.2
}
fn default_wind_skin() -> f32 {
    0.02
}
fn default_gust_period() -> f32 {
    2.0
}

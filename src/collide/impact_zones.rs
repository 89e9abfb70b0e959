//! Rigid impact zones: the fail-safe of the collision stage.
//!
//! Bridson, Fedkiw & Anderson 2002 after Provot 1997 (`docs/methods/bridson-collisions.md` §3.10). Vertices
//! caught in collisions are merged into zones ([`ZoneSet`], a union–find); every zone of two or more vertices
//! then moves as one rigid body for the step ([`ImpactZones::apply_rigid_motion`]), which removes all
//! relative motion inside it. The caller repeats *detect, merge, apply* until nothing collides; zones only
//! grow, so this terminates.
//!
//! # Rigid motion of a free zone (eq. 3.16–3.21)
//!
//! With masses `m_i`, start positions `x_i = x^n` and velocities `v_i = v^{n+1/2}`: centre of mass `x_cm`,
//! mean velocity `v_cm`, offsets `r_i = x_i − x_cm` (3.16); angular momentum
//! `L = Σ m_i r_i × (v_i − v_cm)` (3.17, the corrected parenthesis of); inertia
//! `I = Σ m_i (|r_i|² I₃ − r_i r_iᵀ)` and `ω = I⁻¹ L` (3.18); each offset is rotated by `θ = h|ω|` about `ω̂`
//! with Rodrigues' formula (3.19–3.20) and the new velocity is the secant `(x_i^{n+1} − x_i^n)/h` (3.21):
//!
//! `v_i = v_cm + ((cos θ − 1) x_R + sin θ ω̂ × x_R) / h`,  `x_R = r_i − (r_i·ω̂) ω̂`,
//!
//! evaluated with `cos θ − 1 = −2 sin²(θ/2)` so that small rotations lose no digits. All sums are `f64`.
//! weft replaces the rotation vector `h ω` by the step rotation `φ` below, equal to it to first order.
//!
//! *What is conserved, and the step rotation (a departure).* Distances inside the zone are preserved
//! exactly (a rotation plus a translation), and linear momentum exactly (`Σ m_i r_i = 0`). Angular momentum
//! needs a choice. The secant velocities of a rotation `R(φ)` (rotation vector `φ`, `θ = |φ|`) carry the
//! angular momentum `C(φ)/h` with
//!
//! `C(φ) = Σ m_i r_i × R(φ) r_i = (sin θ/θ) I φ + ((1 − cos θ)/θ²) φ × I φ`,
//!
//! and it is the same at `x^n`, at `x^{n+1}` and in between (`(x + t v) × v = x × v`). For eq. 3.20's
//! `φ = h ω` this is `L` only to first order: the second term is `O(θ)` relative to `L` unless the zone spins
//! about a principal axis. weft therefore takes the rotation that solves `C(φ) = h L` — the discrete rigid
//! body of Moser & Veselov 1991 in the form of Lee, Leok & McClamroch 2005 — by Newton's method from
//! `φ₀ = h ω`, with minimal-norm least-squares steps so that a singular `I` works too. The root equals `h ω`
//! to first order in `θ` and the zone's secant velocities carry `L` exactly (up to `f32` storage). A
//! rotation can only carry so much (`|C| ≤ Σ m |r|²`): when no root exists near `h ω` (about a principal
//! axis that means `h|ω| > 1`) the step falls back to eq. 3.20 as printed.
//!
//! # Edge cases (`docs/methods/bridson-collisions.md` §3.10, *derived*)
//!
//! * **Singular inertia.** `I` is decomposed (cyclic Jacobi, `f64`) and inverted on its range only
//!   (pseudo-inverse): eigenvalues below [`INERTIA_RANK_RELATIVE`] times the largest count as zero. A
//!   collinear zone (two vertices, or vertices on a line) has no rotation about its line; `L` has no component
//!   along it anyway. The threshold sits far above the `f32` rounding of positions, which would otherwise
//!   turn a straight zone's round-off into a spurious spin about its axis.
//! * **Tiny ω.** For `h|ω| ≤` [`MIN_ROTATION_ANGLE`] the zone translates with `v_cm`.
//! * **Kinematic vertices** (inverse mass 0: pinned cloth vertices, obstacle vertices). The sources do not
//!   cover them. weft's choice: **kinematic vertices keep their prescribed velocities and the zone's free
//!   vertices follow the best-fit rigid motion of the kinematic ones** over the step. With `c0`, `c1` the
//!   centroids of the kinematic vertices at `x^n` and at `x^n + h v`, the rotation `R` best mapping the
//!   offsets `p_k = x_k − c0` onto `q_k = x_k + h v_k − c1` maximises `tr(Rᵀ A)`, `A = Σ q_k p_kᵀ`; it is
//!   extracted by the iteration of Müller, Bender, Chentanez & Macklin 2016 ("A robust method to extract the
//!   rotational part of deformations") started from the identity, and a free vertex gets
//!   `v_i = v̄ + (R r_i − r_i)/h` with `v̄` the kinematic vertices' mean velocity and `r_i = x_i − c0`.
//!   Consequences: a zone holding one kinematic vertex (a pin) translates with it; a zone touching an
//!   obstacle that moves rigidly (a spinning ball's triangle) moves with the obstacle exactly, so nothing in
//!   it moves relative to anything else; collinear kinematic vertices leave the spin about their line
//!   undetermined, and the iteration from the identity adds none (the minimal rotation). Two kinematic
//!   vertices that move *differently* (two colliders squeezing the cloth) admit no rigid motion: they keep
//!   theirs and the free vertices follow the least-squares fit, so some relative motion remains and the
//!   caller's loop may keep finding that collision — a situation no velocity change of the cloth can
//!   resolve. The alternative (a translation with the kinematic vertices' mean velocity) would leave the
//!   cloth sliding against a rotating obstacle. Momentum is not conserved in such zones: infinite masses
//!   absorb it.
//!
//! # Determinism and allocation
//!
//! The union–find's representatives are a function of the union sequence only (union by rank, ties to the
//! first argument's root). Zones are listed by their smallest vertex and their members in increasing order,
//! whatever the union order. Every buffer is sized in `new`; nothing allocates afterwards (`sort_unstable`
//! sorts in place).
#![deny(unsafe_code)]

use glam::{DMat3, DQuat, DVec3, Vec3};

/// Eigenvalues of the inertia tensor below this fraction of the largest are treated as zero by the
/// pseudo-inverse (eq. 3.18). An eigenvalue ratio is the squared ratio of a zone's thickness across an axis
/// to its size, so this counts zones thinner than 1/1000 of their length as collinear: far above `f32`
/// rounding of positions (a relative `6e-8` at the position's magnitude, e.g. 0.6 µm at 10 m, against a
/// 1 mm zone), and the spin dropped about such an axis moves no vertex by more than the zone's thickness.
pub const INERTIA_RANK_RELATIVE: f64 = 1e-6;

/// Rotations by at most this angle (rad) over the step are dropped: the zone translates. A rotation this small
/// moves a vertex by `1e-12` of its distance from the centre of mass, below `f32` resolution.
pub const MIN_ROTATION_ANGLE: f64 = 1e-12;

/// Iteration cap of the Newton solve for the step rotation (it converges quadratically from `h ω`).
const MAX_NEWTON_ITERATIONS: usize = 16;

/// The Newton solve stops when `|C(φ) − h L| ≤ NEWTON_TOLERANCE · h|L|` (a few hundred ulps).
const NEWTON_TOLERANCE: f64 = 1e-13;

/// A Newton result that missed [`NEWTON_TOLERANCE`] after the iteration cap is still taken if within this.
const NEWTON_ACCEPT: f64 = 1e-9;

/// Sweep cap of the cyclic Jacobi eigen-solver (it converges quadratically; 3×3 needs about five).
const MAX_JACOBI_SWEEPS: usize = 32;

/// Iteration cap of the rotation extraction for kinematic zones. The correction shrinks each iteration by at
/// least the factor `1 − λ_min/tr` of the offsets' spread, ≤ ½ for kinematic vertices spanning a plane, so
/// 64 iterations take a step's rotation to round-off; nearly collinear sets converge slowly about their line,
/// where the fit does not determine the spin anyway.
const MAX_ROTATION_ITERATIONS: usize = 64;

/// The rotation extraction stops when its update is below this angle (rad).
const ROTATION_TOLERANCE: f64 = 1e-15;

/// Marks a vertex that is not the root of a zone being numbered.
const NO_ZONE: u32 = u32::MAX;

/// Union–find over vertex indices with path compression and union by rank, allocation-free after
/// [`ZoneSet::new`]. Every vertex starts as its own zone (`docs/methods/bridson-collisions.md` §3.10 step 1).
///
/// Invariant: `touched` lists, once each, exactly the vertices of zones with two or more members.
#[derive(Clone, Debug)]
pub struct ZoneSet {
    parent: Vec<u32>,
    rank: Vec<u8>,
    in_zone: Vec<bool>,
    touched: Vec<u32>,
    /// Per root, the zone number during [`ZoneSet::group`]; [`NO_ZONE`] otherwise.
    zone_of: Vec<u32>,
    /// Zone `k` is `members[starts[k]..starts[k + 1]]`.
    starts: Vec<u32>,
    members: Vec<u32>,
}

impl ZoneSet {
    /// `n` singleton zones, with every buffer sized for `n` vertices.
    ///
    /// # Panics
    /// If `n ≥ u32::MAX`.
    #[must_use]
    pub fn new(n: usize) -> Self {
        assert!(n < u32::MAX as usize, "vertex indices are u32");
        Self {
            parent: (0..n as u32).collect(),
            rank: vec![0; n],
            in_zone: vec![false; n],
            touched: Vec::with_capacity(n),
            zone_of: vec![NO_ZONE; n],
            starts: Vec::with_capacity(n / 2 + 1),
            members: Vec::with_capacity(n),
        }
    }

    /// Number of vertices.
    #[must_use]
    #[inline]
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// True for a set over no vertices.
    #[must_use]
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }

    /// Every vertex back to its own zone. Costs O(vertices in multi-vertex zones).
    pub fn reset(&mut self) {
        for &i in &self.touched {
            let i = i as usize;
            self.parent[i] = i as u32;
            self.rank[i] = 0;
            self.in_zone[i] = false;
        }
        self.touched.clear();
        self.starts.clear();
        self.members.clear();
    }

    /// The representative of `a`'s zone, compressing the path to it.
    ///
    /// # Panics
    /// If `a` is out of range.
    pub fn find(&mut self, a: u32) -> u32 {
        let mut root = a;
        loop {
            let p = self.parent[root as usize];
            if p == root {
                break;
            }
            root = p;
        }
        let mut i = a;
        while i != root {
            let next = self.parent[i as usize];
            self.parent[i as usize] = root;
            i = next;
        }
        root
    }

    /// Merges the zones of `a` and `b` (`docs/methods/bridson-collisions.md` §3.10 step 2). Union by rank; on equal ranks the
    /// root of `a` stays the representative. True if they were in different zones (the partition changed).
    ///
    /// # Panics
    /// If `a` or `b` is out of range.
    pub fn union(&mut self, a: u32, b: u32) -> bool {
        let ra = self.find(a);
        let rb = self.find(b);
        if ra == rb {
            return false;
        }
        let (keep, join) = match self.rank[ra as usize].cmp(&self.rank[rb as usize]) {
            std::cmp::Ordering::Less => (rb, ra),
            std::cmp::Ordering::Greater => (ra, rb),
            std::cmp::Ordering::Equal => {
                self.rank[ra as usize] += 1;
                (ra, rb)
            }
        };
        self.parent[join as usize] = keep;
        // A merged zone with a singleton side gains that vertex (`a` or `b` itself).
        for v in [a, b] {
            if !self.in_zone[v as usize] {
                self.in_zone[v as usize] = true;
                self.touched.push(v);
            }
        }
        true
    }

    /// Merges the zones of all `verts` (the four vertices of a collision stencil, say).
    ///
    /// # Panics
    /// If a vertex is out of range.
    pub fn union_all(&mut self, verts: &[u32]) {
        if let Some((&first, rest)) = verts.split_first() {
            for &v in rest {
                self.union(first, v);
            }
        }
    }

    /// True when `a` and `b` are in the same zone.
    ///
    /// # Panics
    /// If `a` or `b` is out of range.
    pub fn same_zone(&mut self, a: u32, b: u32) -> bool {
        self.find(a) == self.find(b)
    }

    /// Lists the zones of two or more vertices: ordered by their smallest vertex, members in increasing
    /// order. The order depends only on the partition, not on the order of the unions. Costs
    /// O(k log k) for k vertices in such zones; allocates nothing.
    pub fn group(&mut self) -> ZoneGroups<'_> {
        self.touched.sort_unstable();
        self.starts.clear();
        self.members.clear();
        // Pass 1: number the zones by first appearance (smallest member) and count their members in
        // `starts[z]`.
        for k in 0..self.touched.len() {
            let root = self.find(self.touched[k]) as usize;
            if self.zone_of[root] == NO_ZONE {
                self.zone_of[root] = self.starts.len() as u32;
                self.starts.push(0);
            }
            self.starts[self.zone_of[root] as usize] += 1;
        }
        // Inclusive prefix sums: `starts[z]` = end of zone z.
        let mut end = 0;
        for s in &mut self.starts {
            end += *s;
            *s = end;
        }
        // Pass 2, in reverse: place each member just before its zone's end; afterwards `starts[z]` is the
        // zone's beginning and members are in increasing order. After pass 1 every `parent` of a touched
        // vertex is its root.
        self.members.resize(self.touched.len(), 0);
        for &t in self.touched.iter().rev() {
            let z = self.zone_of[self.parent[t as usize] as usize] as usize;
            self.starts[z] -= 1;
            self.members[self.starts[z] as usize] = t;
        }
        self.starts.push(self.members.len() as u32);
        for &t in &self.touched {
            self.zone_of[self.parent[t as usize] as usize] = NO_ZONE;
        }
        ZoneGroups {
            starts: &self.starts,
            members: &self.members,
        }
    }
}

/// The zones of two or more vertices, as listed by [`ZoneSet::group`].
#[derive(Clone, Copy, Debug)]
pub struct ZoneGroups<'a> {
    starts: &'a [u32],
    members: &'a [u32],
}

impl<'a> ZoneGroups<'a> {
    /// Number of zones.
    #[must_use]
    #[inline]
    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// True when no zone has two or more vertices.
    #[must_use]
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Members of zone `k`, in increasing order.
    ///
    /// # Panics
    /// If `k ≥ len()`.
    #[must_use]
    #[inline]
    pub fn get(&self, k: usize) -> &'a [u32] {
        &self.members[self.starts[k] as usize..self.starts[k + 1] as usize]
    }

    /// The zones in order.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u32]> + 'a {
        let (starts, members) = (self.starts, self.members);
        starts
            .windows(2)
            .map(move |w| &members[w[0] as usize..w[1] as usize])
    }
}

/// What [`ImpactZones::apply_rigid_motion`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneStats {
    /// Zones of two or more vertices.
    pub zones: u32,
    /// Vertices in the largest zone (0 without zones).
    pub largest: u32,
    /// Vertices in all zones.
    pub vertices: u32,
    /// Zones containing a kinematic (infinite-mass) vertex.
    pub kinematic: u32,
}

/// Rigid impact zones: the zone set and the rigid-motion stage (`docs/methods/bridson-collisions.md` §3.10). Workspace
/// created once; [`ImpactZones::apply_rigid_motion`] allocates nothing.
#[derive(Clone, Debug)]
pub struct ImpactZones {
    set: ZoneSet,
}

impl ImpactZones {
    /// Workspace for `n` vertices, all singletons.
    ///
    /// # Panics
    /// If `n ≥ u32::MAX`.
    #[must_use]
    pub fn new(n: usize) -> Self {
        Self {
            set: ZoneSet::new(n),
        }
    }

    /// The zone set, to merge the zones of colliding stencils and to reset between steps.
    #[inline]
    pub fn zones(&mut self) -> &mut ZoneSet {
        &mut self.set
    }

    /// Gives every zone of two or more vertices its rigid motion for the step and writes the new `v^{n+1/2}`
    /// of its vertices. Bridson 2002, `docs/methods/bridson-collisions.md` (3.16–3.21).
    ///
    /// Symbols: `h` step (s), `x = x^n` (m), `v = v^{n+1/2}` (m/s, read and written), `mass` (kg) and
    /// `inv_mass` (1/kg); a vertex with `inv_mass ≤ 0` is kinematic (infinite mass) and `mass` is then not
    /// read. Free zones follow eq. 3.16–3.21 with the pseudo-inverse and small-angle rules of the module doc.
    /// Departure: the rotation of the step is the root `φ` of `C(φ) = h L` near eq. 3.20's `h ω` (equal to it
    /// to first order), so that the new velocities carry the zone's angular momentum exactly; eq. 3.20 as
    /// printed when no root exists (module doc). Zones with kinematic vertices follow their best-fit rigid motion (module doc: the kinematic vertices
    /// keep their velocities). Singleton vertices are not touched. A free zone whose total mass is not
    /// positive is left as it is.
    ///
    /// # Panics
    /// If `h` is not finite and positive, or a slice is shorter than the vertex count.
    pub fn apply_rigid_motion(
        &mut self,
        h: f32,
        x: &[Vec3],
        v: &mut [Vec3],
        mass: &[f32],
        inv_mass: &[f32],
    ) -> ZoneStats {
        assert!(
            h.is_finite() && h > 0.0,
            "the step must be finite and positive"
        );
        let n = self.set.len();
        assert!(
            x.len() >= n && v.len() >= n && mass.len() >= n && inv_mass.len() >= n,
            "one position, velocity and mass per vertex"
        );
        let h = f64::from(h);
        let groups = self.set.group();
        let mut stats = ZoneStats::default();
        for members in groups.iter() {
            stats.zones += 1;
            stats.largest = stats.largest.max(members.len() as u32);
            stats.vertices += members.len() as u32;
            let kinematic = members.iter().any(|&i| is_kinematic(inv_mass[i as usize]));
            if kinematic {
                stats.kinematic += 1;
                follow_kinematic(members, h, x, v, inv_mass);
            } else if let Some(motion) = ZoneMotion::of(members, x, v, mass) {
                motion.write_velocities(members, h, x, v);
            }
        }
        stats
    }
}

/// Rigid motion of a free zone: eq. 3.16–3.18, and the rotation of the step.
#[derive(Clone, Copy, Debug, PartialEq)]
struct ZoneMotion {
    x_cm: DVec3,
    v_cm: DVec3,
    /// `L` of eq. 3.17.
    l: DVec3,
    /// `I` of eq. 3.18.
    inertia: DMat3,
    /// `ω = I⁺ L`.
    omega: DVec3,
}

impl ZoneMotion {
    /// Centre of mass, mean velocity, `L`, `I` and `ω = I⁺ L` of the zone (eq. 3.16–3.18); `None` when its
    /// total mass is not positive.
    fn of(members: &[u32], x: &[Vec3], v: &[Vec3], mass: &[f32]) -> Option<Self> {
        let mut total = 0.0;
        let mut mx = DVec3::ZERO;
        let mut mv = DVec3::ZERO;
        for &i in members {
            let m = f64::from(mass[i as usize]);
            total += m;
            mx += m * x[i as usize].as_dvec3();
            mv += m * v[i as usize].as_dvec3();
        }
        if !(exceeds(total, 0.0) && total.is_finite()) {
            return None;
        }
        let x_cm = mx / total;
        let v_cm = mv / total;
        let mut l = DVec3::ZERO;
        let mut inertia = DMat3::ZERO;
        for &i in members {
            let m = f64::from(mass[i as usize]);
            let r = x[i as usize].as_dvec3() - x_cm;
            l += m * r.cross(v[i as usize].as_dvec3() - v_cm);
            inertia += m * (DMat3::from_diagonal(DVec3::splat(r.length_squared())) - outer(r, r));
        }
        Some(Self {
            x_cm,
            v_cm,
            l,
            inertia,
            omega: pseudo_inverse_apply(inertia, l),
        })
    }

    /// Rotation vector `φ` (axis · angle, rad) of the step: the root of `C(φ) = h L` near `h ω`, else `h ω`
    /// (module doc, *angular momentum*).
    fn step_rotation(&self, h: f64) -> DVec3 {
        let first_order = h * self.omega;
        let target = h * self.l;
        let scale = target.length();
        if !exceeds(scale, 0.0) || !exceeds(first_order.length(), MIN_ROTATION_ANGLE) {
            return first_order;
        }
        let mut phi = first_order;
        for _ in 0..MAX_NEWTON_ITERATIONS {
            let residual = carried_momentum(self.inertia, phi) - target;
            if residual.length() <= NEWTON_TOLERANCE * scale {
                return phi;
            }
            let jac = carried_momentum_jacobian(self.inertia, phi);
            let step = least_squares(jac, -residual);
            phi += step;
            if !phi.is_finite() || phi.length() >= std::f64::consts::PI {
                return first_order;
            }
        }
        let residual = carried_momentum(self.inertia, phi) - target;
        if residual.length() <= NEWTON_ACCEPT * scale {
            phi
        } else {
            first_order
        }
    }

    /// Secant velocities of the rotation by `|φ|` about `φ̂` (eq. 3.19–3.21 with the step rotation `φ`).
    fn write_velocities(&self, members: &[u32], h: f64, x: &[Vec3], v: &mut [Vec3]) {
        let motion = self.step_motion(h);
        for &i in members {
            v[i as usize] = motion.velocity_at(x[i as usize], h);
        }
    }

    /// The zone's rigid motion over the step, as a [`StepMotion`].
    fn step_motion(&self, h: f64) -> StepMotion {
        StepMotion::Free {
            centre: self.x_cm,
            velocity: self.v_cm,
            rotation: self.step_rotation(h),
        }
    }
}

/// A rigid motion of a zone over one step of length `h`, as the secant velocity it gives each point:
/// `v(x) = v̄ + (R r − r)/h` with `r = x − c` (eq. 3.19–3.21). Kept so that the last resort
/// (`collide::last_resort`) can move other vertices with a zone's or a body's motion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StepMotion {
    /// No motion: every velocity is exactly zero (a body at rest).
    Rest,
    /// The best-fit rigid motion of kinematic vertices (module doc): centroid `c0` at `x^n`, mean
    /// velocity `v̄`, rotation `R` from the iteration of Müller et al. 2016.
    Kinematic {
        /// `c0` (m).
        centre: DVec3,
        /// `v̄` (m/s).
        velocity: DVec3,
        /// `R`.
        rotation: DQuat,
    },
    /// A free zone's motion (eq. 3.16–3.21): centre of mass, mean velocity and the step rotation `φ`
    /// (axis · angle, rad).
    Free {
        /// `x_cm` (m).
        centre: DVec3,
        /// `v_cm` (m/s).
        velocity: DVec3,
        /// `φ` (rad).
        rotation: DVec3,
    },
}

impl StepMotion {
    /// The secant velocity of the point `x` (the position at the start of the step) under this motion.
    #[must_use]
    pub fn velocity_at(&self, x: Vec3, h: f64) -> Vec3 {
        match *self {
            StepMotion::Rest => Vec3::ZERO,
            StepMotion::Kinematic {
                centre,
                velocity,
                rotation,
            } => {
                let r = x.as_dvec3() - centre;
                (velocity + (rotation * r - r) / h).as_vec3()
            }
            StepMotion::Free {
                centre,
                velocity,
                rotation,
            } => {
                let theta = rotation.length();
                if !exceeds(theta, MIN_ROTATION_ANGLE) {
                    return velocity.as_vec3();
                }
                // Rodrigues with cos θ − 1 = −2 sin²(θ/2), so that small rotations lose no digits.
                let axis = rotation / theta;
                let half = (0.5 * theta).sin();
                let cos_minus_one = -2.0 * half * half;
                let r = x.as_dvec3() - centre;
                let x_r = r - r.dot(axis) * axis;
                let displacement = cos_minus_one * x_r + theta.sin() * axis.cross(x_r);
                (velocity + displacement / h).as_vec3()
            }
        }
    }
}

/// The best-fit rigid motion over the step `h` of the kinematic `members` (module doc), [`StepMotion::Rest`]
/// when every one of them has velocity exactly zero. `None` when no member is kinematic.
#[must_use]
pub fn kinematic_motion(
    members: &[u32],
    h: f64,
    x: &[Vec3],
    v: &[Vec3],
    inv_mass: &[f32],
) -> Option<StepMotion> {
    let is_kinematic = |i: u32| is_kinematic(inv_mass[i as usize]);
    let mut count = 0.0;
    let mut c0 = DVec3::ZERO;
    let mut v_bar = DVec3::ZERO;
    let mut moving = false;
    for &i in members.iter().filter(|&&i| is_kinematic(i)) {
        count += 1.0;
        c0 += x[i as usize].as_dvec3();
        v_bar += v[i as usize].as_dvec3();
        moving |= v[i as usize] != Vec3::ZERO;
    }
    if count == 0.0 {
        return None;
    }
    if !moving {
        return Some(StepMotion::Rest);
    }
    c0 /= count;
    v_bar /= count;
    let mut a = DMat3::ZERO;
    for &i in members.iter().filter(|&&i| is_kinematic(i)) {
        let p = x[i as usize].as_dvec3() - c0;
        let q = p + h * (v[i as usize].as_dvec3() - v_bar);
        a += outer(q, p);
    }
    Some(StepMotion::Kinematic {
        centre: c0,
        velocity: v_bar,
        rotation: extract_rotation(a),
    })
}

/// The rigid motion over the step `h` of the free `members` (eq. 3.16–3.21 with the step rotation of the
/// module doc); `None` when their total mass is not positive.
#[must_use]
pub fn free_motion(
    members: &[u32],
    h: f64,
    x: &[Vec3],
    v: &[Vec3],
    mass: &[f32],
) -> Option<StepMotion> {
    ZoneMotion::of(members, x, v, mass).map(|m| m.step_motion(h))
}

/// `C(φ) = Σ m_i r_i × R(φ) r_i = (sin θ/θ) I φ + ((1 − cos θ)/θ²) φ × I φ`, `θ = |φ|`: `h` times the
/// angular momentum of the secant velocities of the rotation `R(φ)` (module doc).
fn carried_momentum(inertia: DMat3, phi: DVec3) -> DVec3 {
    let theta = phi.length();
    let (sinc, versc) = if theta > 0.0 {
        let half = 0.5 * theta;
        let s = half.sin() / half;
        (theta.sin() / theta, 0.5 * s * s)
    } else {
        (1.0, 0.5)
    };
    let i_phi = inertia * phi;
    sinc * i_phi + versc * phi.cross(i_phi)
}

/// Jacobian `∂C/∂φ` of [`carried_momentum`] (Lee, Leok & McClamroch 2005):
/// `a'(θ)/θ · Iφ φᵀ + a I + b'(θ)/θ · (φ × Iφ) φᵀ + b ([φ]× I − [Iφ]×)` with `a = sin θ/θ`,
/// `b = (1 − cos θ)/θ²`; Taylor series for small θ.
fn carried_momentum_jacobian(inertia: DMat3, phi: DVec3) -> DMat3 {
    let theta = phi.length();
    let t2 = theta * theta;
    // a, b and a'(θ)/θ, b'(θ)/θ.
    let (a, b, da, db) = if theta < 1e-3 {
        (
            1.0 - t2 / 6.0,
            0.5 - t2 / 24.0,
            -1.0 / 3.0 + t2 / 30.0,
            -1.0 / 12.0 + t2 / 180.0,
        )
    } else {
        let (s, c) = theta.sin_cos();
        let half = (0.5 * theta).sin();
        let one_minus_cos = 2.0 * half * half;
        (
            s / theta,
            one_minus_cos / t2,
            (theta * c - s) / (t2 * theta),
            (theta * s - 2.0 * one_minus_cos) / (t2 * t2),
        )
    };
    let i_phi = inertia * phi;
    da * outer(i_phi, phi)
        + a * inertia
        + db * outer(phi.cross(i_phi), phi)
        + b * (skew(phi) * inertia - skew(i_phi))
}

/// `[a]×`, the matrix of `x ↦ a × x`.
#[inline]
fn skew(a: DVec3) -> DMat3 {
    DMat3::from_cols(
        DVec3::new(0.0, a.z, -a.y),
        DVec3::new(-a.z, 0.0, a.x),
        DVec3::new(a.y, -a.x, 0.0),
    )
}

/// Minimal-norm least-squares solution of `m x = b`: `(mᵀm)⁺ mᵀ b`, with the rank rule of the inertia
/// pseudo-inverse applied to the squared singular values.
fn least_squares(m: DMat3, b: DVec3) -> DVec3 {
    let normal = m.transpose() * m;
    let rhs = m.transpose() * b;
    let (values, vectors) = symmetric_eigen(normal);
    let largest = values.iter().fold(0.0_f64, |acc, &x| acc.max(x));
    if !exceeds(largest, 0.0) {
        return DVec3::ZERO;
    }
    let mut out = DVec3::ZERO;
    for (lambda, e) in values.iter().zip(vectors) {
        if *lambda > INERTIA_RANK_RELATIVE * INERTIA_RANK_RELATIVE * largest {
            out += (e.dot(rhs) / lambda) * e;
        }
    }
    out
}

/// Free vertices of a zone with kinematic vertices follow the kinematic vertices' best-fit rigid motion;
/// kinematic vertices keep their velocities (module doc).
fn follow_kinematic(members: &[u32], h: f64, x: &[Vec3], v: &mut [Vec3], inv_mass: &[f32]) {
    let Some(motion) = kinematic_motion(members, h, x, v, inv_mass) else {
        return;
    };
    for &i in members
        .iter()
        .filter(|&&i| !is_kinematic(inv_mass[i as usize]))
    {
        v[i as usize] = motion.velocity_at(x[i as usize], h);
    }
}

/// `a bᵀ`.
#[inline]
fn outer(a: DVec3, b: DVec3) -> DMat3 {
    DMat3::from_cols(a * b.x, a * b.y, a * b.z)
}

/// `I⁺ l` for a symmetric positive semi-definite `inertia`: the inverse on the eigenvalues above
/// [`INERTIA_RANK_RELATIVE`] times the largest, zero on the others (eq. 3.18 with the pseudo-inverse).
fn pseudo_inverse_apply(inertia: DMat3, l: DVec3) -> DVec3 {
    let (values, vectors) = symmetric_eigen(inertia);
    let largest = values.iter().fold(0.0_f64, |m, &x| m.max(x));
    if !exceeds(largest, 0.0) {
        return DVec3::ZERO;
    }
    let mut out = DVec3::ZERO;
    for (lambda, e) in values.iter().zip(vectors) {
        if *lambda > INERTIA_RANK_RELATIVE * largest {
            out += (e.dot(l) / lambda) * e;
        }
    }
    out
}

/// Eigenvalues and unit eigenvectors of a symmetric 3×3 matrix by cyclic Jacobi rotations, in a fixed
/// order (deterministic).
fn symmetric_eigen(m: DMat3) -> ([f64; 3], [DVec3; 3]) {
    // Row-major a[row][col]; `m` is symmetric so its column array is its row array.
    let mut a = m.to_cols_array_2d();
    let mut vecs = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    for _ in 0..MAX_JACOBI_SWEEPS {
        let off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
        let diag = a[0][0] * a[0][0] + a[1][1] * a[1][1] + a[2][2] * a[2][2];
        if !exceeds(off, f64::EPSILON * f64::EPSILON * diag) {
            break;
        }
        for (p, q) in [(0, 1), (0, 2), (1, 2)] {
            let apq = a[p][q];
            if apq == 0.0 {
                continue;
            }
            // Rotation P with P[p][p] = P[q][q] = c, P[p][q] = s, P[q][p] = −s zeroes a[p][q] in PᵀAP.
            let theta = (a[q][q] - a[p][p]) / (2.0 * apq);
            let t = theta.signum() / (theta.abs() + theta.hypot(1.0));
            let c = 1.0 / t.hypot(1.0);
            let s = t * c;
            for row in &mut a {
                let (kp, kq) = (row[p], row[q]);
                row[p] = c * kp - s * kq;
                row[q] = s * kp + c * kq;
            }
            let (row_p, row_q) = (a[p], a[q]);
            for (k, (pk, qk)) in row_p.iter().zip(row_q).enumerate() {
                a[p][k] = c * pk - s * qk;
                a[q][k] = s * pk + c * qk;
            }
            for row in &mut vecs {
                let (kp, kq) = (row[p], row[q]);
                row[p] = c * kp - s * kq;
                row[q] = s * kp + c * kq;
            }
        }
    }
    let column = |j: usize| DVec3::new(vecs[0][j], vecs[1][j], vecs[2][j]);
    (
        [a[0][0], a[1][1], a[2][2]],
        [column(0), column(1), column(2)],
    )
}

/// The rotation `R` maximising `tr(Rᵀ A)`, by the iteration of Müller, Bender, Chentanez & Macklin 2016
/// started from the identity: `q ← exp(ω) q` with `ω = Σ_i r_i × a_i / (|Σ_i r_i · a_i| + ε)` over the columns
/// `r_i` of `R(q)` and `a_i` of `A`. For `A = Σ q_k p_kᵀ` this is the rotation best mapping the `p_k` onto
/// the `q_k`; directions `A` does not determine get no rotation. `A = 0` gives the identity.
fn extract_rotation(a: DMat3) -> DQuat {
    let scale =
        (a.x_axis.length_squared() + a.y_axis.length_squared() + a.z_axis.length_squared()).sqrt();
    let mut q = DQuat::IDENTITY;
    if !(exceeds(scale, 0.0) && scale.is_finite()) {
        return q;
    }
    for _ in 0..MAX_ROTATION_ITERATIONS {
        let r = DMat3::from_quat(q);
        let torque = r.x_axis.cross(a.x_axis) + r.y_axis.cross(a.y_axis) + r.z_axis.cross(a.z_axis);
        let align = r.x_axis.dot(a.x_axis) + r.y_axis.dot(a.y_axis) + r.z_axis.dot(a.z_axis);
        let omega = torque / (align.abs() + 1e-9 * scale);
        let angle = omega.length();
        if !exceeds(angle, ROTATION_TOLERANCE) {
            break;
        }
        q = (DQuat::from_axis_angle(omega / angle, angle) * q).normalize();
    }
    q
}

/// `a > b`, false when either is NaN (so `!exceeds(..)` also catches NaN).
#[inline]
fn exceeds(a: f64, b: f64) -> bool {
    a > b
}

/// A vertex of infinite mass: inverse mass zero, negative or NaN.
#[inline]
pub(crate) fn is_kinematic(inv_mass: f32) -> bool {
    inv_mass.is_nan() || inv_mass <= 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::SplitMix64 as Rng;

    fn partition(set: &mut ZoneSet) -> Vec<Vec<u32>> {
        set.group().iter().map(<[u32]>::to_vec).collect()
    }

    /// Largest relative change of a pairwise distance over the step, `|(x+hv)_ij| vs |x_ij|`.
    fn distance_drift(members: &[u32], h: f32, x: &[Vec3], v: &[Vec3]) -> f64 {
        let end = |i: u32| x[i as usize].as_dvec3() + f64::from(h) * v[i as usize].as_dvec3();
        let mut worst = 0.0_f64;
        for (k, &i) in members.iter().enumerate() {
            for &j in &members[k + 1..] {
                let d0 = (x[i as usize].as_dvec3() - x[j as usize].as_dvec3()).length();
                let d1 = (end(i) - end(j)).length();
                worst = worst.max((d1 - d0).abs());
            }
        }
        worst
    }

    fn linear_momentum(members: &[u32], v: &[Vec3], mass: &[f32]) -> DVec3 {
        members
            .iter()
            .map(|&i| f64::from(mass[i as usize]) * v[i as usize].as_dvec3())
            .sum()
    }

    /// Angular momentum about the centre of mass at x^n, with v^{n+1/2}.
    fn angular_momentum(members: &[u32], x: &[Vec3], v: &[Vec3], mass: &[f32]) -> DVec3 {
        let total: f64 = members.iter().map(|&i| f64::from(mass[i as usize])).sum();
        let x_cm: DVec3 = members
            .iter()
            .map(|&i| f64::from(mass[i as usize]) * x[i as usize].as_dvec3())
            .sum::<DVec3>()
            / total;
        let v_cm = linear_momentum(members, v, mass) / total;
        members
            .iter()
            .map(|&i| {
                let m = f64::from(mass[i as usize]);
                m * (x[i as usize].as_dvec3() - x_cm).cross(v[i as usize].as_dvec3() - v_cm)
            })
            .sum()
    }

    #[test]
    fn union_find_merges_transitively() {
        let mut set = ZoneSet::new(10);
        set.union(1, 2);
        set.union(3, 4);
        assert!(!set.same_zone(1, 4));
        set.union(2, 3);
        assert!(set.same_zone(1, 4));
        set.union_all(&[7, 9, 8]);
        set.union(5, 5);
        assert_eq!(partition(&mut set), vec![vec![1, 2, 3, 4], vec![7, 8, 9]]);
        assert!(!set.same_zone(0, 1));
        assert!(!set.same_zone(5, 6));
        // Zones only grow: further unions keep every earlier merge.
        set.union(9, 0);
        assert_eq!(
            partition(&mut set),
            vec![vec![0, 7, 8, 9], vec![1, 2, 3, 4]]
        );
        set.reset();
        assert!(partition(&mut set).is_empty());
        for i in 0..10 {
            assert_eq!(set.find(i), i);
        }
    }

    #[test]
    fn union_find_is_order_deterministic() {
        let mut rng = Rng(11);
        let n = 200;
        let pairs: Vec<(u32, u32)> = (0..120)
            .map(|_| ((rng.next_u64() % n) as u32, (rng.next_u64() % n) as u32))
            .collect();
        let run = |order: &[(u32, u32)], swap: bool| {
            let mut set = ZoneSet::new(n as usize);
            for &(a, b) in order {
                let (a, b) = if swap { (b, a) } else { (a, b) };
                set.union(a, b);
            }
            let roots: Vec<u32> = (0..n as u32).map(|i| set.find(i)).collect();
            (partition(&mut set), roots)
        };
        let (groups, roots) = run(&pairs, false);
        // The same sequence gives the same representatives.
        assert_eq!(run(&pairs, false).1, roots);
        // Any order of the unions gives the same zones, listed in the same order.
        let mut reversed = pairs.clone();
        reversed.reverse();
        assert_eq!(run(&reversed, true).0, groups);
        let mut shuffled = pairs.clone();
        for i in (1..shuffled.len()).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            shuffled.swap(i, j);
        }
        assert_eq!(run(&shuffled, false).0, groups);
        // Against a brute-force model: label propagation to a fixed point.
        let mut label: Vec<u32> = (0..n as u32).collect();
        loop {
            let mut changed = false;
            for &(a, b) in &pairs {
                let m = label[a as usize].min(label[b as usize]);
                for l in [a, b] {
                    if label[l as usize] != m {
                        label[l as usize] = m;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        for zone in &groups {
            assert!(zone.windows(2).all(|w| w[0] < w[1]));
            assert!(
                zone.iter()
                    .all(|&i| label[i as usize] == label[zone[0] as usize])
            );
        }
        let in_zones: usize = groups.iter().map(Vec::len).sum();
        let model: usize = (0..n as usize)
            .filter(|&i| label.iter().filter(|&&l| l == label[i]).count() > 1)
            .count();
        assert_eq!(in_zones, model);
        assert!(groups.windows(2).all(|w| w[0][0] < w[1][0]));
    }

    #[test]
    fn rigid_zone_preserves_distances_and_momentum() {
        let mut rng = Rng(12);
        let mut fallbacks = 0;
        for case in 0..200 {
            let n = 12;
            let h = [1.0 / 60.0, 1.0 / 240.0][case % 2] as f32;
            let offset = rng.vec3_f32(5.0);
            let x: Vec<Vec3> = (0..n).map(|_| offset + rng.vec3_f32(0.05)).collect();
            let mut v: Vec<Vec3> = (0..n).map(|_| rng.vec3_f32(2.0)).collect();
            let mass: Vec<f32> = (0..n).map(|_| rng.range(0.001, 0.01) as f32).collect();
            let inv_mass: Vec<f32> = mass.iter().map(|m| 1.0 / m).collect();
            let mut zones = ImpactZones::new(n);
            let size = 2 + (rng.next_u64() % 9) as u32;
            let members: Vec<u32> = (0..size).collect();
            zones.zones().union_all(&members);
            let before = v.clone();
            let p0 = linear_momentum(&members, &v, &mass);
            let motion = ZoneMotion::of(&members, &x, &v, &mass).expect("positive mass");
            let stats = zones.apply_rigid_motion(h, &x, &mut v, &mass, &inv_mass);
            assert_eq!(
                stats,
                ZoneStats {
                    zones: 1,
                    largest: size,
                    vertices: size,
                    kinematic: 0
                }
            );
            // Outside the zone: untouched, bitwise.
            assert_eq!(&v[size as usize..], &before[size as usize..]);
            // Distances: f32 velocities of ~2 m/s over h lose ~1e-9 m.
            let drift = distance_drift(&members, h, &x, &v);
            assert!(drift < 5e-8, "{case}: drift {drift}");
            let p1 = linear_momentum(&members, &v, &mass);
            assert!(
                (p1 - p0).length() < 1e-7 * (1.0 + p0.length()),
                "{case}: {p0} {p1}"
            );
            // Angular momentum: the rigid motion's I ω is the zone's L (eq. 3.17–3.18) ...
            let l0 = angular_momentum(&members, &x, &before, &mass);
            let mut inertia = DMat3::ZERO;
            for &i in &members {
                let r = x[i as usize].as_dvec3() - motion.x_cm;
                let m = f64::from(mass[i as usize]);
                inertia +=
                    m * (DMat3::from_diagonal(DVec3::splat(r.length_squared())) - outer(r, r));
            }
            if size >= 3 {
                assert!(
                    (inertia * motion.omega - l0).length() < 1e-9 * (1e-9 + l0.length()),
                    "{case}"
                );
            }
            // ... and the secant velocities carry it exactly (the step rotation solves C(φ) = h L), up to the
            // f32 storage of the velocities.
            let l1 = angular_momentum(&members, &x, &v, &mass);
            let spread: f64 = members
                .iter()
                .map(|&i| {
                    let r = (x[i as usize].as_dvec3() - motion.x_cm).length();
                    f64::from(mass[i as usize]) * r * f64::from(v[i as usize].length())
                })
                .sum();
            let theta = f64::from(h) * motion.omega.length();
            if motion.step_rotation(f64::from(h)) == f64::from(h) * motion.omega
                && theta > MIN_ROTATION_ANGLE
            {
                // No rotation carries L (a spin of more than ~1 rad per step): eq. 3.20 as printed.
                assert!(theta > 0.5, "{case}: fell back at θ = {theta}");
                fallbacks += 1;
                continue;
            }
            assert!((l1 - l0).length() <= 1e-6 * spread, "{case}: {l0} {l1}");
            // The same at the end of the step: positions x + h v.
            let x1: Vec<Vec3> = x.iter().zip(&v).map(|(p, q)| *p + h * *q).collect();
            let l_end = angular_momentum(&members, &x1, &v, &mass);
            assert!(
                (l_end - l0).length() <= 1e-5 * spread,
                "{case}: {l0} {l_end}"
            );
        }
        assert!(fallbacks < 20, "{fallbacks} fallbacks");
    }

    #[test]
    fn step_rotation_carries_the_angular_momentum_that_eq_3_20_misses() {
        // A zone spinning off its principal axes: eq. 3.20's φ = hω loses O(θ) of L, the step rotation none.
        let x = [
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(0.1, 0.0, 0.0),
            Vec3::new(0.0, 0.12, 0.0),
            Vec3::new(0.03, 0.02, 0.09),
        ];
        let mass = [0.01_f32, 0.02, 0.015, 0.01];
        let inv_mass: Vec<f32> = mass.iter().map(|m| 1.0 / m).collect();
        let omega = Vec3::new(2.0, -5.0, 6.0);
        let mut v: Vec<Vec3> = x
            .iter()
            .map(|p| Vec3::new(0.3, 0.1, -0.2) + omega.cross(*p))
            .collect();
        v[1] += Vec3::new(0.0, 0.1, 0.0);
        let members = [0u32, 1, 2, 3];
        let h = 0.01_f64;
        let l0 = angular_momentum(&members, &x, &v, &mass);
        let motion = ZoneMotion::of(&members, &x, &v, &mass).expect("positive mass");
        let phi = motion.step_rotation(h);
        let first_order = h * motion.omega;
        let theta = first_order.length();
        // Equal to eq. 3.20 to first order: the difference is O(θ²).
        assert!(
            (phi - first_order).length() < theta * theta,
            "{phi} vs {first_order}"
        );
        assert!(
            (carried_momentum(motion.inertia, phi) - h * motion.l).length()
                < 1e-12 * h * l0.length()
        );
        let lost = (carried_momentum(motion.inertia, first_order) - h * motion.l).length()
            / (h * l0.length());
        assert!(
            lost > 0.1 * theta,
            "eq. 3.20 loses O(θ): {lost} at θ = {theta}"
        );
        let mut zones = ImpactZones::new(4);
        zones.zones().union_all(&members);
        zones.apply_rigid_motion(h as f32, &x, &mut v, &mass, &inv_mass);
        let l1 = angular_momentum(&members, &x, &v, &mass);
        assert!((l1 - l0).length() < 1e-6 * l0.length(), "{l0} {l1}");
        assert!(distance_drift(&members, h as f32, &x, &v) < 1e-8);
    }

    #[test]
    fn carried_momentum_jacobian_matches_finite_differences() {
        let mut rng = Rng(17);
        for case in 0..40 {
            let b = DMat3::from_cols(
                rng.vec3_f32(1.0).as_dvec3(),
                rng.vec3_f32(1.0).as_dvec3(),
                rng.vec3_f32(1.0).as_dvec3(),
            );
            let inertia = b * b.transpose();
            let phi = rng.vec3_f32(1.0).as_dvec3() * [1e-5, 1e-2, 1.0, 2.0][case % 4];
            let jac = carried_momentum_jacobian(inertia, phi);
            let eps = 1e-6;
            for k in 0..3 {
                let mut d = DVec3::ZERO;
                d[k] = eps;
                let fd = (carried_momentum(inertia, phi + d) - carried_momentum(inertia, phi - d))
                    / (2.0 * eps);
                assert!(
                    (fd - jac.col(k)).length() < 1e-7 * (1.0 + fd.length()),
                    "{case} {k}: {fd} vs {}",
                    jac.col(k)
                );
            }
        }
    }

    #[test]
    fn spin_beyond_any_rotation_falls_back_to_eq_3_20() {
        // Two equal masses spinning about their perpendicular bisector with h|ω| = 1.5 > 1: sin θ = h|ω| has
        // no root, so the zone rotates by θ = h|ω| as eq. 3.20 prints; distances are still kept.
        let x = [Vec3::new(-0.05, 0.0, 0.0), Vec3::new(0.05, 0.0, 0.0)];
        let h = 0.01_f32;
        let spin = 150.0_f32;
        let mut v = [
            Vec3::new(0.0, 0.0, 0.05 * spin),
            Vec3::new(0.0, 0.0, -0.05 * spin),
        ];
        let mass = [0.01_f32; 2];
        let motion = ZoneMotion::of(&[0, 1], &x, &v, &mass).expect("positive mass");
        let phi = motion.step_rotation(f64::from(h));
        assert!((phi - f64::from(h) * motion.omega).length() < 1e-12);
        let mut zones = ImpactZones::new(2);
        zones.zones().union(0, 1);
        zones.apply_rigid_motion(h, &x, &mut v, &mass, &[100.0; 2]);
        assert!(distance_drift(&[0, 1], h, &x, &v) < 1e-7);
        // Just below the limit the root exists and is taken: sin θ = h|ω|.
        let mut v = [
            Vec3::new(0.0, 0.0, 0.05 * 90.0),
            Vec3::new(0.0, 0.0, -0.05 * 90.0),
        ];
        let motion = ZoneMotion::of(&[0, 1], &x, &v, &mass).expect("positive mass");
        let phi = motion.step_rotation(f64::from(h));
        assert!(
            (phi.length() - (0.9_f64).asin()).abs() < 1e-6,
            "{}",
            phi.length()
        );
        let l0 = angular_momentum(&[0, 1], &x, &v, &mass);
        zones.apply_rigid_motion(h, &x, &mut v, &mass, &[100.0; 2]);
        let l1 = angular_momentum(&[0, 1], &x, &v, &mass);
        assert!((l1 - l0).length() < 1e-6 * l0.length(), "{l0} {l1}");
    }

    #[test]
    fn collinear_two_vertex_zone() {
        let x = [Vec3::new(0.3, 0.2, 0.1), Vec3::new(0.35, 0.23, 0.09)];
        let mut v = [Vec3::new(1.0, -2.0, 0.5), Vec3::new(-0.5, 1.0, 3.0)];
        let mass = [0.01_f32, 0.03];
        let inv_mass = [100.0_f32, 1.0 / 0.03];
        let members = [0u32, 1];
        let p0 = linear_momentum(&members, &v, &mass);
        let l0 = angular_momentum(&members, &x, &v, &mass);
        let motion = ZoneMotion::of(&members, &x, &v, &mass).expect("positive mass");
        // Singular inertia: no spin about the line, and I⁺ inverts the perpendicular part.
        let axis = (x[1] - x[0]).as_dvec3().normalize();
        assert!(motion.omega.dot(axis).abs() < 1e-9 * motion.omega.length());
        let mut zones = ImpactZones::new(2);
        zones.zones().union(0, 1);
        let h = 1.0 / 60.0;
        zones.apply_rigid_motion(h, &x, &mut v, &mass, &inv_mass);
        assert!(distance_drift(&members, h, &x, &v) < 1e-8);
        assert!((linear_momentum(&members, &v, &mass) - p0).length() < 1e-8);
        // Angular momentum about the centre: (sin θ / θ) L (x_F = 0 for a zone on the axis' normal plane).
        let theta = f64::from(h) * motion.omega.length();
        let l1 = angular_momentum(&members, &x, &v, &mass);
        assert!(
            (l1 - theta.sin() / theta * l0).length() < 1e-6 * l0.length(),
            "{l0} {l1}"
        );
        // Three collinear vertices behave the same way.
        let x3 = [x[0], x[1], x[0] + 2.0 * (x[1] - x[0])];
        let mut v3 = [v[0], v[1], Vec3::new(0.2, 0.2, -1.0)];
        let mut zones = ImpactZones::new(3);
        zones.zones().union_all(&[0, 1, 2]);
        zones.apply_rigid_motion(h, &x3, &mut v3, &[0.01, 0.01, 0.01], &[100.0; 3]);
        assert!(distance_drift(&[0, 1, 2], h, &x3, &v3) < 1e-8);
        assert!(v3.iter().all(|vi| vi.is_finite()));
    }

    #[test]
    fn zero_angular_velocity_is_pure_translation() {
        let x = [Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::Z];
        let mut v = [Vec3::new(1.0, 2.0, 3.0); 4];
        // Radial velocities (no angular momentum about the centre) on top of a common translation.
        let c = Vec3::splat(0.25);
        for (vi, xi) in v.iter_mut().zip(&x) {
            *vi += 0.5 * (*xi - c);
        }
        let mass = [1.0_f32; 4];
        let members = [0u32, 1, 2, 3];
        let motion = ZoneMotion::of(&members, &x, &v, &mass).expect("positive mass");
        assert!(motion.omega.length() < 1e-12);
        let mut zones = ImpactZones::new(4);
        zones.zones().union_all(&members);
        zones.apply_rigid_motion(0.01, &x, &mut v, &mass, &[1.0; 4]);
        for vi in v {
            assert_eq!(vi, Vec3::new(1.0, 2.0, 3.0));
        }
    }

    #[test]
    fn zone_with_a_pinned_vertex_follows_it() {
        let mut rng = Rng(13);
        let n = 6;
        let x: Vec<Vec3> = (0..n).map(|_| rng.vec3_f32(0.1)).collect();
        let mut v: Vec<Vec3> = (0..n).map(|_| rng.vec3_f32(1.0)).collect();
        let mass = vec![0.01_f32; n];
        let mut inv_mass = vec![100.0_f32; n];
        inv_mass[2] = 0.0;
        let pin_velocity = v[2];
        let mut zones = ImpactZones::new(n);
        zones.zones().union_all(&[0, 1, 2, 3]);
        let stats = zones.apply_rigid_motion(0.01, &x, &mut v, &mass, &inv_mass);
        assert_eq!(stats.kinematic, 1);
        assert_eq!(
            v[2], pin_velocity,
            "the pinned vertex keeps its velocity bitwise"
        );
        for i in [0, 1, 3] {
            assert!(
                (v[i] - pin_velocity).length() < 1e-6,
                "{i} translates with the pin"
            );
        }
        // A static pin holds its whole zone still.
        let mut v: Vec<Vec3> = (0..n).map(|_| rng.vec3_f32(1.0)).collect();
        v[2] = Vec3::ZERO;
        zones.apply_rigid_motion(0.01, &x, &mut v, &mass, &inv_mass);
        for i in [0, 1, 2, 3] {
            assert_eq!(v[i], Vec3::ZERO);
        }
    }

    #[test]
    fn zone_follows_a_rigidly_moving_obstacle() {
        // Three obstacle vertices rotating about an axis through a moving centre, two cloth vertices.
        let h = 1.0_f64 / 60.0;
        let spin = DQuat::from_axis_angle(DVec3::new(0.2, 1.0, -0.3).normalize(), 0.4 * h);
        let translation = DVec3::new(0.05, -0.02, 0.01);
        let x = [
            Vec3::new(0.3, 0.0, 0.0),
            Vec3::new(0.0, 0.1, 0.3),
            Vec3::new(-0.2, 0.05, -0.1),
            Vec3::new(0.05, 0.12, 0.02),
            Vec3::new(0.07, 0.11, 0.05),
        ];
        let mut v = [Vec3::ZERO; 5];
        for k in 0..3 {
            let p = x[k].as_dvec3();
            v[k] = ((spin * p + translation - p) / h).as_vec3();
        }
        v[3] = Vec3::new(0.0, -1.0, 0.0);
        v[4] = Vec3::new(0.5, -1.0, 0.0);
        let obstacle = [v[0], v[1], v[2]];
        let mut zones = ImpactZones::new(5);
        zones.zones().union_all(&[3, 0, 1, 2, 4]);
        let mass = [f32::INFINITY, f32::INFINITY, f32::INFINITY, 0.01, 0.01];
        let inv_mass = [0.0, 0.0, 0.0, 100.0, 100.0];
        zones.apply_rigid_motion(h as f32, &x, &mut v, &mass, &inv_mass);
        assert_eq!([v[0], v[1], v[2]], obstacle);
        // The cloth vertices move with the obstacle's rigid motion.
        for k in 3..5 {
            let p = x[k].as_dvec3();
            let expect = (spin * p + translation - p) / h;
            assert!(
                (v[k].as_dvec3() - expect).length() < 1e-5,
                "{k}: {} vs {expect}",
                v[k]
            );
        }
        assert!(distance_drift(&[0, 1, 2, 3, 4], h as f32, &x, &v) < 1e-7);
    }

    #[test]
    fn kinematic_vertices_moving_differently_keep_their_velocities() {
        // Two pins moving apart along their line, one free vertex off the line: no rigid motion exists.
        let x = [
            Vec3::new(-0.1, 0.0, 0.0),
            Vec3::new(0.1, 0.0, 0.0),
            Vec3::new(0.0, 0.05, 0.0),
        ];
        let mut v = [
            Vec3::new(-1.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.0, 3.0, 0.0),
        ];
        let mut zones = ImpactZones::new(3);
        zones.zones().union_all(&[0, 1, 2]);
        zones.apply_rigid_motion(0.01, &x, &mut v, &[1.0, 1.0, 0.01], &[0.0, 0.0, 100.0]);
        assert_eq!(v[0], Vec3::new(-1.0, 0.0, 0.0));
        assert_eq!(v[1], Vec3::new(1.0, 0.0, 0.0));
        // Best fit: the mean translation (zero), no rotation (the line keeps its direction).
        assert!(v[2].length() < 1e-6, "{}", v[2]);
        // Pins translating and turning the line: the free vertex rotates with the best-fit line.
        let h = 0.01_f64;
        let turn = DQuat::from_rotation_z(0.05);
        let mut v = [Vec3::ZERO; 3];
        for k in 0..2 {
            let p = x[k].as_dvec3();
            // Stretch by 1% as well: the fit keeps the rotation and the centroid motion.
            v[k] = ((turn * p * 1.01 + DVec3::X * 0.01 - p) / h).as_vec3();
        }
        let pins = [v[0], v[1]];
        zones.apply_rigid_motion(h as f32, &x, &mut v, &[1.0, 1.0, 0.01], &[0.0, 0.0, 100.0]);
        assert_eq!([v[0], v[1]], pins);
        let p = x[2].as_dvec3();
        let expect = (turn * p + DVec3::X * 0.01 - p) / h;
        assert!(
            (v[2].as_dvec3() - expect).length() < 1e-4,
            "{} vs {expect}",
            v[2]
        );
    }

    #[test]
    fn singletons_are_untouched_and_stats_count_zones() {
        let mut rng = Rng(14);
        let n = 30;
        let x: Vec<Vec3> = (0..n).map(|_| rng.vec3_f32(1.0)).collect();
        let mut v: Vec<Vec3> = (0..n).map(|_| rng.vec3_f32(1.0)).collect();
        let mass = vec![0.01_f32; n];
        let mut inv_mass = vec![100.0_f32; n];
        inv_mass[20] = 0.0;
        let before = v.clone();
        let mut zones = ImpactZones::new(n);
        assert_eq!(
            zones.apply_rigid_motion(0.01, &x, &mut v, &mass, &inv_mass),
            ZoneStats::default()
        );
        assert_eq!(v, before);
        zones.zones().union_all(&[3, 5, 8]);
        zones.zones().union_all(&[20, 21]);
        zones.zones().union_all(&[11, 12, 13, 14, 15]);
        let stats = zones.apply_rigid_motion(0.01, &x, &mut v, &mass, &inv_mass);
        assert_eq!(
            stats,
            ZoneStats {
                zones: 3,
                largest: 5,
                vertices: 10,
                kinematic: 1
            }
        );
        let zoned = [3, 5, 8, 11, 12, 13, 14, 15, 20, 21];
        for i in (0..n).filter(|i| !zoned.contains(i)) {
            assert_eq!(v[i], before[i], "{i}");
        }
        assert_eq!(v[20], before[20]);
    }

    #[test]
    fn apply_does_not_allocate_after_new() {
        // Every heap buffer keeps its address and capacity across merges, grouping and the rigid-motion stage,
        // up to the worst case of one zone holding every vertex.
        let mut rng = Rng(15);
        let n = 64;
        let x: Vec<Vec3> = (0..n).map(|_| rng.vec3_f32(1.0)).collect();
        let mut v: Vec<Vec3> = (0..n).map(|_| rng.vec3_f32(1.0)).collect();
        let mass = vec![0.01_f32; n];
        let inv_mass = vec![100.0_f32; n];
        let mut zones = ImpactZones::new(n);
        let fingerprint = |z: &ImpactZones| {
            let s = &z.set;
            [
                (s.parent.as_ptr() as usize, s.parent.capacity()),
                (s.rank.as_ptr() as usize, s.rank.capacity()),
                (s.in_zone.as_ptr() as usize, s.in_zone.capacity()),
                (s.touched.as_ptr() as usize, s.touched.capacity()),
                (s.zone_of.as_ptr() as usize, s.zone_of.capacity()),
                (s.starts.as_ptr() as usize, s.starts.capacity()),
                (s.members.as_ptr() as usize, s.members.capacity()),
            ]
        };
        let initial = fingerprint(&zones);
        for round in 0..4 {
            // Many pair zones (the most zones), then everything in one zone.
            for i in (0..n as u32).step_by(2) {
                zones.zones().union(i, i + 1);
            }
            let stats = zones.apply_rigid_motion(0.01, &x, &mut v, &mass, &inv_mass);
            assert_eq!(stats.zones, n as u32 / 2);
            for i in 1..n as u32 {
                zones.zones().union(0, i);
            }
            let stats = zones.apply_rigid_motion(0.01, &x, &mut v, &mass, &inv_mass);
            assert_eq!(stats.largest, n as u32, "{round}");
            assert_eq!(fingerprint(&zones), initial, "{round}");
            zones.zones().reset();
        }
    }

    #[test]
    fn symmetric_eigen_and_rotation_extraction() {
        let mut rng = Rng(16);
        for _ in 0..50 {
            let b = DMat3::from_cols(
                rng.vec3_f32(1.0).as_dvec3(),
                rng.vec3_f32(1.0).as_dvec3(),
                rng.vec3_f32(1.0).as_dvec3(),
            );
            let m = b * b.transpose();
            let (values, vectors) = symmetric_eigen(m);
            for (lambda, e) in values.iter().zip(vectors) {
                assert!((e.length() - 1.0).abs() < 1e-12);
                assert!(
                    (m * e - *lambda * e).length() < 1e-12 * (1.0 + values.iter().sum::<f64>())
                );
            }
            // A rotation with an anisotropic stretch: the extraction recovers the rotation.
            let axis = rng.vec3_f32(1.0).as_dvec3().normalize();
            let rotation = DQuat::from_axis_angle(axis, rng.range(-0.5, 0.5));
            let stretch = DMat3::from_diagonal(DVec3::new(1.0, 0.6, 0.3));
            let a = DMat3::from_quat(rotation) * stretch;
            let q = extract_rotation(a);
            let gap = (q - rotation).length().min((q + rotation).length());
            assert!(gap < 1e-12, "{q} vs {rotation}");
        }
        assert_eq!(extract_rotation(DMat3::ZERO), DQuat::IDENTITY);
    }
}

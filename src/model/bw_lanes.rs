//! The definite Baraff–Witkin kernels of [`super::bw_system`], evaluated [`LANES`] elements at a
//! time in `f32` lanes.
//!
//! Equation labels `eq. 2.n` are those of `docs/methods/baraff-witkin.md`, `eq. 4.n` those of
//! `docs/methods/dihedral-bending.md`.
//!
//! [`membrane_lanes`] and [`bend_lanes`] compute what [`super::bw_system::membrane_system`] and
//! [`super::bw_system::bend_system`] compute, for `LANES` elements side by side: every quantity is a
//! `[f32; LANES]` ([`Lanes`]) and every step is the same straight-line operation on all lanes, which
//! the compiler turns into packed SIMD instructions. Branches become selects (a degenerate hinge's lane
//! or a compressed stretch row's curvature is computed and then discarded), and the hinge angle's
//! `atan2` is a polynomial ([`atan2`]) instead of the C library's call. The element rest data a kernel
//! reads comes in the same layout, one `[f32; LANES]` per field ([`MembraneRestLanes`],
//! [`HingeRestLanes`]), with everything that depends on the rest state only (`√a`, `√w`) taken out at
//! creation.
//!
//! # Why `f32` is enough here (`docs/methods/assembly.md` §2)
//!
//! The positions are `f32`. Every kernel first forms the element's edge vectors, differences of two
//! `f32` positions: two coordinates within a factor of two of each other subtract exactly (Sterbenz), and
//! otherwise the error is half an ulp of the difference, which is at most an edge long. So the edge
//! vectors are the state's own, to within `6e-8` of their length. Everything after that (the deformation
//! gradient, the stretch `|w_u| − b`, the normals, the hinge angle, the gradients, the rows of `b` and
//! the factors of the blocks) is a short chain of products and sums of those vectors and of rest data,
//! each with a relative error of a few `f32` ulps (`≈ 1e-7`) of the quantities it combines. The state
//! itself is coarser than that: a position `0.5 m` from the origin is known to `3e-8 m`, which on a
//! `1.5 cm` edge is a strain of `4e-6` and a hinge angle of `4e-6` rad, forty times what the kernel adds.
//! The rows of `b` are then added in `f32` and the PCG stops at a relative residual of `1e-3`; `A` is
//! `f32` throughout. What was `f64` in the scalar kernels, the differences of nearly equal lengths, is
//! now formed from exact differences instead. The one sum kept in `f64` is the elastic energy over all
//! elements (each element's `f32` energy added in `f64`), a total over thousands of terms.
//!
//! The scalar `f64` kernels stay the reference these lanes are tested against (`tests` below), and the
//! path of the exact-Jacobian mode and the discrete shell.
#![deny(unsafe_code)]

use std::f32::consts::{FRAC_PI_2, FRAC_PI_4, PI, TAU};
use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub};

use glam::{Mat3, Mat3A, Mat4, Vec3, Vec3A, Vec4, Vec4Swizzles};

use super::baraff_witkin::{BendParams, HingeRest, MembraneParams, TriangleRest};
use super::bw_system::{BendingStiffness, ElementSystem};
use super::dihedral::DEGENERACY_TOLERANCE;

/// Elements a kernel call evaluates side by side: two SSE registers, or one AVX register, per
/// quantity.
pub const LANES: usize = 8;

/// One `f32` per element of a batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lanes(pub [f32; LANES]);

/// One truth value per element of a batch, as a lane of all ones (true) or all zeros (false): the
/// form a packed compare gives, so comparisons, `and` and selects compile to packed bit operations
/// (an array of `bool` would be packed into bytes and unpacked again, lane by lane).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mask([u32; LANES]);

impl Lanes {
    /// Every lane `v`.
    #[inline(always)]
    #[must_use]
    pub const fn splat(v: f32) -> Self {
        Lanes([v; LANES])
    }

    #[inline(always)]
    fn map(self, f: impl Fn(f32) -> f32) -> Self {
        let mut out = [0.0; LANES];
        for (o, a) in out.iter_mut().zip(self.0) {
            *o = f(a);
        }
        Lanes(out)
    }

    #[inline(always)]
    fn zip(self, other: Self, f: impl Fn(f32, f32) -> f32) -> Self {
        let mut out = [0.0; LANES];
        for ((o, a), b) in out.iter_mut().zip(self.0).zip(other.0) {
            *o = f(a, b);
        }
        Lanes(out)
    }

    #[inline(always)]
    fn compare(self, other: Self, f: impl Fn(f32, f32) -> bool) -> Mask {
        let mut out = [0; LANES];
        for ((o, a), b) in out.iter_mut().zip(self.0).zip(other.0) {
            *o = if f(a, b) { u32::MAX } else { 0 };
        }
        Mask(out)
    }

    #[inline(always)]
    fn sqrt(self) -> Self {
        self.map(f32::sqrt)
    }

    #[inline(always)]
    fn abs(self) -> Self {
        self.map(f32::abs)
    }

    #[inline(always)]
    fn max(self, other: Self) -> Self {
        self.zip(other, |a, b| if a > b { a } else { b })
    }

    #[inline(always)]
    fn min(self, other: Self) -> Self {
        self.zip(other, |a, b| if a < b { a } else { b })
    }

    #[inline(always)]
    fn gt(self, other: Self) -> Mask {
        self.compare(other, |a, b| a > b)
    }

    #[inline(always)]
    fn ge(self, other: Self) -> Mask {
        self.compare(other, |a, b| a >= b)
    }

    #[inline(always)]
    fn lt(self, other: Self) -> Mask {
        self.compare(other, |a, b| a < b)
    }

    /// `self` with the sign of `sign` (lane by lane, the sign bit).
    #[inline(always)]
    fn copysign(self, sign: Self) -> Self {
        self.zip(sign, f32::copysign)
    }
}

impl Mask {
    #[inline(always)]
    fn and(self, other: Self) -> Self {
        let mut out = [0; LANES];
        for ((o, a), b) in out.iter_mut().zip(self.0).zip(other.0) {
            *o = a & b;
        }
        Mask(out)
    }

    /// `a` where the mask holds, else `b` (bit for bit, by masking the bits of both).
    #[inline(always)]
    fn select(self, a: Lanes, b: Lanes) -> Lanes {
        let mut out = [0.0; LANES];
        for (((o, m), a), b) in out.iter_mut().zip(self.0).zip(a.0).zip(b.0) {
            *o = f32::from_bits((m & a.to_bits()) | (!m & b.to_bits()));
        }
        Lanes(out)
    }
}

macro_rules! lanes_op {
    ($tr:ident, $f:ident, $op:tt) => {
        impl $tr for Lanes {
            type Output = Lanes;
            #[inline(always)]
            fn $f(self, o: Lanes) -> Lanes {
                self.zip(o, |a, b| a $op b)
            }
        }
        impl $tr<f32> for Lanes {
            type Output = Lanes;
            #[inline(always)]
            fn $f(self, o: f32) -> Lanes {
                self.map(|a| a $op o)
            }
        }
    };
}
lanes_op!(Add, add, +);
lanes_op!(Sub, sub, -);
lanes_op!(Mul, mul, *);
lanes_op!(Div, div, /);

impl Neg for Lanes {
    type Output = Lanes;
    #[inline(always)]
    fn neg(self) -> Lanes {
        self.map(|a| -a)
    }
}

impl AddAssign for Lanes {
    #[inline(always)]
    fn add_assign(&mut self, o: Lanes) {
        *self = *self + o;
    }
}

/// A 3-vector per element of a batch, coordinates in separate lanes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Vec3Lanes {
    /// x of every lane.
    pub x: Lanes,
    /// y of every lane.
    pub y: Lanes,
    /// z of every lane.
    pub z: Lanes,
}

impl Vec3Lanes {
    /// Every lane zero.
    pub const ZERO: Self = Self {
        x: Lanes::splat(0.0),
        y: Lanes::splat(0.0),
        z: Lanes::splat(0.0),
    };

    /// Lane `k` of `self` is `points[k]`.
    #[inline(always)]
    #[must_use]
    pub fn gather(points: impl Fn(usize) -> Vec3) -> Self {
        let mut out = Self::ZERO;
        for k in 0..LANES {
            let p = points(k);
            out.x.0[k] = p.x;
            out.y.0[k] = p.y;
            out.z.0[k] = p.z;
        }
        out
    }

    /// Lane `k` as a vector.
    #[inline(always)]
    #[must_use]
    pub fn lane(&self, k: usize) -> Vec3 {
        Vec3::new(self.x.0[k], self.y.0[k], self.z.0[k])
    }

    #[inline(always)]
    fn dot(self, o: Self) -> Lanes {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    #[inline(always)]
    fn cross(self, o: Self) -> Self {
        Self {
            x: self.y * o.z - self.z * o.y,
            y: self.z * o.x - self.x * o.z,
            z: self.x * o.y - self.y * o.x,
        }
    }

    #[inline(always)]
    fn scale(self, s: Lanes) -> Self {
        Self {
            x: self.x * s,
            y: self.y * s,
            z: self.z * s,
        }
    }

    /// `self * a + o * b`.
    #[inline(always)]
    fn combine(self, a: Lanes, o: Self, b: Lanes) -> Self {
        Self {
            x: self.x * a + o.x * b,
            y: self.y * a + o.y * b,
            z: self.z * a + o.z * b,
        }
    }

    #[inline(always)]
    fn select(self, m: Mask, other: Self) -> Self {
        Self {
            x: m.select(self.x, other.x),
            y: m.select(self.y, other.y),
            z: m.select(self.z, other.z),
        }
    }
}

impl Add for Vec3Lanes {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Self {
            x: self.x + o.x,
            y: self.y + o.y,
            z: self.z + o.z,
        }
    }
}

impl Sub for Vec3Lanes {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Self {
            x: self.x - o.x,
            y: self.y - o.y,
            z: self.z - o.z,
        }
    }
}

/// A symmetric 3×3 matrix per lane: `xx, yy, zz, xy, xz, yz`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Sym3Lanes([Lanes; 6]);

impl Sym3Lanes {
    /// `a ŵŵᵀ + b I`.
    #[inline(always)]
    fn outer_plus_identity(w: Vec3Lanes, a: Lanes, b: Lanes) -> Self {
        let (ax, ay, az) = (w.x * a, w.y * a, w.z * a);
        Sym3Lanes([
            ax * w.x + b,
            ay * w.y + b,
            az * w.z + b,
            ax * w.y,
            ax * w.z,
            ay * w.z,
        ])
    }

    /// Every lane as a packed block (its entries in [`Mat3`]'s column-major order).
    #[inline(always)]
    fn packed(&self) -> PackedLanes {
        let [xx, yy, zz, xy, xz, yz] = &self.0;
        PackedLanes {
            lo: by_lane([xx, xy, xz, xy]),
            hi: by_lane([yy, yz, xz, yz]),
            last: *zz,
        }
    }
}

/// A 3×3 block as it is added into `A`: entries `0..4` and `4..8` of [`Mat3`]'s column-major array in
/// two packed registers, and entry `8`. Entry `3c + r` is row `r`, column `c`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PackedBlock {
    lo: Vec4,
    hi: Vec4,
    last: f32,
}

impl PackedBlock {
    /// `self · s`, entry by entry.
    #[inline(always)]
    fn scale(self, s: f32) -> Self {
        Self {
            lo: self.lo * s,
            hi: self.hi * s,
            last: self.last * s,
        }
    }

    /// The block as a matrix.
    #[must_use]
    pub fn to_mat3(self) -> Mat3 {
        let mut m = Mat3::ZERO;
        self.add_to(&mut m);
        m
    }

    /// `dst += self`, entry by entry: two packed additions and one scalar one.
    #[inline(always)]
    pub fn add_to(self, dst: &mut Mat3) {
        let a: &mut [f32; 9] = dst.as_mut();
        (Vec4::from_slice(&a[0..4]) + self.lo).write_to_slice(&mut a[0..4]);
        (Vec4::from_slice(&a[4..8]) + self.hi).write_to_slice(&mut a[4..8]);
        a[8] += self.last;
    }
}

impl Add for PackedBlock {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Self {
            lo: self.lo + o.lo,
            hi: self.hi + o.hi,
            last: self.last + o.last,
        }
    }
}

/// `out[k] = (rows[0][k], rows[1][k], rows[2][k], rows[3][k])`: four quantities of every lane side by
/// side, by 4×4 transposes of the lanes.
#[inline(always)]
fn by_lane(rows: [&Lanes; 4]) -> [Vec4; LANES] {
    let quarter = |q: usize| {
        let col = |r: &Lanes| Vec4::new(r.0[q], r.0[q + 1], r.0[q + 2], r.0[q + 3]);
        Mat4::from_cols(col(rows[0]), col(rows[1]), col(rows[2]), col(rows[3])).transpose()
    };
    let (a, b) = (quarter(0), quarter(4));
    [
        a.x_axis, a.y_axis, a.z_axis, a.w_axis, b.x_axis, b.y_axis, b.z_axis, b.w_axis,
    ]
}

/// A vector per lane as `(x, y, z, x)`, what [`Spread`] is formed from.
#[inline(always)]
fn xyzx(v: &Vec3Lanes) -> [Vec4; LANES] {
    by_lane([&v.x, &v.y, &v.z, &v.x])
}

/// A block per lane in packed form ([`PackedBlock`]).
#[derive(Clone, Copy, Debug, PartialEq)]
struct PackedLanes {
    lo: [Vec4; LANES],
    hi: [Vec4; LANES],
    last: Lanes,
}

impl PackedLanes {
    const ZERO: Self = Self {
        lo: [Vec4::ZERO; LANES],
        hi: [Vec4::ZERO; LANES],
        last: Lanes::splat(0.0),
    };

    #[inline(always)]
    fn lane(&self, k: usize) -> PackedBlock {
        PackedBlock {
            lo: self.lo[k],
            hi: self.hi[k],
            last: self.last.0[k],
        }
    }
}

/// One lane's vector `g` with its coordinates arranged for the packed outer products [`Spread::outer`]:
/// `g hᵀ` is then two packed products and a scalar one.
#[derive(Clone, Copy, Debug)]
struct Spread {
    /// As the left factor, for entries `0..4` and `4..8`: `(x, y, z, x)` and `(y, z, x, y)`.
    left: [Vec4; 2],
    /// As the right factor: `(x, x, x, y)` and `(y, y, z, z)`.
    right: [Vec4; 2],
    z: f32,
}

impl Spread {
    /// `g` given as `(x, y, z, x)`.
    #[inline(always)]
    fn new(xyzx: Vec4) -> Self {
        Self {
            left: [xyzx, xyzx.yzxy()],
            right: [xyzx.xxxy(), xyzx.yyzz()],
            z: xyzx.z,
        }
    }

    /// `a bᵀ`: entry `(r, c)` is the one product `a_r b_c`, so `b aᵀ` is exactly its transpose.
    #[inline(always)]
    fn outer(a: &Self, b: &Self) -> PackedBlock {
        PackedBlock {
            lo: a.left[0] * b.right[0],
            hi: a.left[1] * b.right[1],
            last: a.z * b.z,
        }
    }
}

/// What both lane kernels give for their [`LANES`] elements of `N` vertices: lane `k` holds element
/// `k`'s energy, rows of `b` and the vectors `ĝ_m` of its blocks ([`ElementSystem`]), `ĝ_m` by lane
/// as `(x, y, z, x)`, the arrangement the packed blocks read. [`bend_lanes`] gives exactly this
/// ([`HingeLanes`]); [`membrane_lanes`] adds its stretch factors ([`MembraneLanes`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LaneShares<const N: usize> {
    energy: Lanes,
    rhs: [Vec3Lanes; N],
    g: [[Vec4; LANES]; N],
}

impl<const N: usize> LaneShares<N> {
    /// Every lane zero (the state before a kernel call writes it).
    pub const ZERO: Self = Self {
        energy: Lanes::splat(0.0),
        rhs: [Vec3Lanes::ZERO; N],
        g: [[Vec4::ZERO; LANES]; N],
    };

    #[inline(always)]
    fn new(energy: Lanes, rhs: [Vec3Lanes; N], g: &[Vec3Lanes; N]) -> Self {
        Self {
            energy,
            rhs,
            g: g.each_ref().map(xyzx),
        }
    }

    /// Lane `k`'s elastic energy (J).
    #[inline(always)]
    #[must_use]
    pub fn energy(&self, k: usize) -> f64 {
        f64::from(self.energy.0[k])
    }

    /// Lane `k`'s rows of `b` (kg·m/s).
    #[inline(always)]
    #[must_use]
    pub fn rhs(&self, k: usize) -> [Vec3; N] {
        // By index: `self.rhs.map` would copy all the lanes to read one.
        std::array::from_fn(|m| self.rhs[m].lane(k))
    }

    /// Lane `k`'s vectors `ĝ_m`.
    fn g(&self, k: usize) -> [Vec3A; N] {
        self.g.map(|g| Vec3A::from_vec4(g[k]))
    }
}

/// What [`membrane_lanes`] gives for [`LANES`] triangles: their [`LaneShares`] and the stretch
/// factors of their blocks `A_ml = α_m α_l M_u + β_m β_l M_v + ĝ_m ĝ_lᵀ` ([`ElementSystem`]),
/// `M_u` and `M_v` already by lane in the arrangement the packed blocks read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MembraneLanes {
    shares: LaneShares<3>,
    alpha: [Lanes; 3],
    beta: [Lanes; 3],
    m_u: PackedLanes,
    m_v: PackedLanes,
}

impl MembraneLanes {
    /// Every lane zero (the state before a kernel call writes it).
    pub const ZERO: Self = Self {
        shares: LaneShares::ZERO,
        alpha: [Lanes::splat(0.0); 3],
        beta: [Lanes::splat(0.0); 3],
        m_u: PackedLanes::ZERO,
        m_v: PackedLanes::ZERO,
    };

    /// The lanes' energies, rows of `b` and vectors `ĝ_m`.
    #[inline(always)]
    #[must_use]
    pub fn shares(&self) -> &LaneShares<3> {
        &self.shares
    }

    /// Calls `add(m, l, A_ml)` for each of lane `k`'s nine blocks, formed in packed form from its
    /// factors. Each block is bit for bit [`ElementSystem::block`] of [`Self::system`]: entry by entry
    /// the same products and sums (`ĝ_m[r] ĝ_l[c] + (M_u[r][c] (α_m α_l) + M_v[r][c] (β_m β_l))`), and
    /// block `(l, m)` is exactly the transpose of block `(m, l)`.
    #[inline(always)]
    pub fn blocks(&self, k: usize, mut add: impl FnMut(usize, usize, PackedBlock)) {
        let g = [0, 1, 2].map(|m| Spread::new(self.shares.g[m][k]));
        let alpha: [f32; 3] = std::array::from_fn(|m| self.alpha[m].0[k]);
        let beta: [f32; 3] = std::array::from_fn(|m| self.beta[m].0[k]);
        let (m_u, m_v) = (self.m_u.lane(k), self.m_v.lane(k));
        // The stretch part of `(m, l)` and of `(l, m)` is one packed block: `α_m α_l = α_l α_m` and
        // `M_u`, `M_v` are symmetric entry by entry, so it is its own transpose.
        let stretch =
            |m: usize, l: usize| m_u.scale(alpha[m] * alpha[l]) + m_v.scale(beta[m] * beta[l]);
        let off = [stretch(0, 1), stretch(0, 2), stretch(1, 2)];
        for m in 0..3 {
            for l in 0..3 {
                let s = if m == l {
                    stretch(m, m)
                } else {
                    off[m + l - 1]
                };
                add(m, l, Spread::outer(&g[m], &g[l]) + s);
            }
        }
    }

    /// Lane `k` as one element's share ([`super::bw_system::membrane_system`]'s form).
    #[must_use]
    pub fn system(&self, k: usize) -> ElementSystem<3> {
        let sym = |p: PackedBlock| {
            let (lo, hi) = (p.lo, p.hi);
            Mat3A::from_cols(
                Vec3A::new(lo.x, lo.y, lo.z),
                Vec3A::new(lo.y, hi.x, hi.y),
                Vec3A::new(lo.z, hi.y, p.last),
            )
        };
        ElementSystem::membrane(
            self.shares.energy(k),
            self.shares.rhs(k),
            self.shares.g(k),
            self.alpha.map(|a| a.0[k]),
            self.beta.map(|b| b.0[k]),
            sym(self.m_u.lane(k)),
            sym(self.m_v.lane(k)),
        )
    }
}

/// What [`bend_lanes`] gives for [`LANES`] hinges: lane `k` holds hinge `k`'s energy, rows of `b` and the
/// vectors `ĝ_m` of its blocks `A_ml = ĝ_m ĝ_lᵀ` ([`ElementSystem`]).
pub type HingeLanes = LaneShares<4>;

impl HingeLanes {
    /// Whether lane `k` has a non-zero block ([`ElementSystem::has_blocks`]: a degenerate hinge, or one
    /// without stiffness or damping, has none).
    #[inline(always)]
    #[must_use]
    pub fn has_blocks(&self, k: usize) -> bool {
        // `!=` per coordinate, as `Vec3 != Vec3::ZERO`: true for NaN, false for −0.
        self.g.iter().any(|g| g[k].cmpne(Vec4::ZERO).any())
    }

    /// Calls `add(m, l, A_ml)` for each of lane `k`'s sixteen blocks, formed in packed form from its
    /// vectors `ĝ`: bit for bit [`ElementSystem::block`] of [`Self::system`], block `(l, m)` exactly the
    /// transpose of block `(m, l)`.
    #[inline(always)]
    pub fn blocks(&self, k: usize, mut add: impl FnMut(usize, usize, PackedBlock)) {
        let g = [0, 1, 2, 3].map(|m| Spread::new(self.g[m][k]));
        for m in 0..4 {
            for l in 0..4 {
                add(m, l, Spread::outer(&g[m], &g[l]));
            }
        }
    }

    /// Lane `k` as one element's share ([`super::bw_system::bend_system`]'s form).
    #[must_use]
    pub fn system(&self, k: usize) -> ElementSystem<4> {
        ElementSystem::hinge(self.energy(k), self.rhs(k), self.g(k))
    }
}

/// `atan2(y, x)` in `(−π, π]` for every lane, to within `4e-7` rad: the octant reduced to
/// `t = min(|x|, |y|) / max(|x|, |y|) ∈ [0, 1]`, then to `|t| ≤ tan(π/8)` by
/// `atan t = π/4 + atan((t − 1)/(t + 1))`, and there the odd minimax polynomial of the Cephes
/// library's `atanf` (relative error below `2e-7`). `atan2(±0, 0)` is `±0`; lanes holding NaN give
/// NaN.
#[inline(always)]
#[must_use]
pub fn atan2(y: Lanes, x: Lanes) -> Lanes {
    let zero = Lanes::splat(0.0);
    let (ax, ay) = (x.abs(), y.abs());
    let (lo, hi) = (ax.min(ay), ax.max(ay));
    let t = hi.gt(zero).select(lo / hi, zero);
    let reduce = t.gt(Lanes::splat(0.414_213_56));
    let t = reduce.select((t - 1.0) / (t + 1.0), t);
    let z = t * t;
    let poly =
        ((((z * 8.053_744_5e-2) - 1.387_768_6e-1) * z + 1.997_771_1e-1) * z - 3.333_295e-1) * z;
    let a = t + t * poly + reduce.select(Lanes::splat(FRAC_PI_4), zero);
    let a = ay.gt(ax).select(Lanes::splat(FRAC_PI_2) - a, a);
    let a = x.lt(zero).select(Lanes::splat(PI) - a, a);
    a.copysign(y)
}

/// The rest data of [`LANES`] triangles, one lane each, as [`membrane_lanes`] reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MembraneRestLanes {
    /// `α_m` ([`TriangleRest::alpha`]).
    alpha: [Lanes; 3],
    /// `β_m`.
    beta: [Lanes; 3],
    /// `√a`, `a` the rest area.
    sqrt_a: Lanes,
}

impl MembraneRestLanes {
    /// Lane `k` holds `rest(k)`.
    #[must_use]
    pub fn new(rest: impl Fn(usize) -> TriangleRest) -> Self {
        let mut out = Self {
            alpha: [Lanes::splat(0.0); 3],
            beta: [Lanes::splat(0.0); 3],
            sqrt_a: Lanes::splat(0.0),
        };
        for k in 0..LANES {
            let r = rest(k);
            for m in 0..3 {
                out.alpha[m].0[k] = r.alpha[m] as f32;
                out.beta[m].0[k] = r.beta[m] as f32;
            }
            out.sqrt_a.0[k] = r.area.sqrt() as f32;
        }
        out
    }
}

/// The rest data of [`LANES`] hinges, one lane each, as [`bend_lanes`] reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HingeRestLanes {
    /// `√w` ([`HingeRest::weight`]).
    sqrt_w: Lanes,
    /// `θ0` (rad).
    rest_angle: Lanes,
}

impl HingeRestLanes {
    /// Lane `k` holds `rest(k)`.
    #[must_use]
    pub fn new(rest: impl Fn(usize) -> HingeRest) -> Self {
        let mut out = Self {
            sqrt_w: Lanes::splat(0.0),
            rest_angle: Lanes::splat(0.0),
        };
        for k in 0..LANES {
            let r = rest(k);
            out.sqrt_w.0[k] = r.weight.sqrt() as f32;
            out.rest_angle.0[k] = r.rest_angle as f32;
        }
        out
    }
}

/// A stretch row's share of a triangle ([`super::bw_system`]'s `stretch_row`): `P` with
/// `b_m += coeff_m P`, and the matrix `M` with `A_ml += coeff_m coeff_l M`.
struct StretchRow {
    p: Vec3Lanes,
    m: Sym3Lanes,
}

/// One stretch row `C = √a (|w_def| − b)` (eq. 2.4–2.5): its energy added to `energy`, and its
/// share of `b` and `A`. `rate` and `shift` are `Σ_m coeff_m v_m` and `Σ_m coeff_m w_m`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn stretch_row(
    energy: &mut Lanes,
    w_def: Vec3Lanes,
    rate: Vec3Lanes,
    shift: Vec3Lanes,
    sqrt_a: Lanes,
    b: f32,
    k: f32,
    k_d: f32,
    h: f32,
) -> StretchRow {
    let zero = Lanes::splat(0.0);
    let len = w_def.dot(w_def).sqrt();
    let c = sqrt_a * (len - b);
    *energy += c * c * (0.5 * k);
    // The cone-tip rule of the scalar kernel: no direction, no gradient (energy only).
    let valid = len.gt(Lanes::splat(super::baraff_witkin::MIN_STRETCH as f32));
    let inv_len = valid.select(Lanes::splat(1.0) / len, zero);
    let w_hat = w_def.scale(inv_len);
    // g_m = √a coeff_m ŵ: Ċ = √a ŵ·rate, g·w = √a ŵ·shift.
    let w_shift = w_hat.dot(shift);
    let c_dot = sqrt_a * w_hat.dot(rate);
    let g_w = sqrt_a * w_shift;
    // h (f + K w) along ŵ: −h (k C + k_d Ċ + k g·w) √a ŵ.
    let along = (c * k + c_dot * k_d + g_w * k) * (-h) * sqrt_a;
    // Curvature in tension only: H_ml = coeff_m coeff_l (I − ŵŵᵀ) √a/|w|, whose K w is
    // −k C coeff_m (√a/|w|)(shift − ŵ (ŵ·shift)).
    let tension = valid.and(c.ge(zero));
    let curv = tension.select(sqrt_a * inv_len, zero);
    let across = c * curv * (-h * k);
    let p = w_hat.combine(along - across * w_shift, shift, across);
    // M = (h k_d + h² k) a ŵŵᵀ + h² k C (I − ŵŵᵀ) √a/|w|.
    let diag = c * curv * (h * h * k);
    let m =
        Sym3Lanes::outer_plus_identity(w_hat, sqrt_a * sqrt_a * (h * k_d + h * h * k) - diag, diag);
    StretchRow { p, m }
}

/// Stretch, shear and their damping (eq. 2.4–2.6, 2.10–2.11) of [`LANES`] triangles in the definite
/// treatment: lane `k` of the inputs is triangle `k`, and lane `k` of `out` its share of `A` and `b`, what
/// [`super::bw_system::membrane_system`] returns for it (to `f32` rounding, module doc).
///
/// `x`, `v`: corner positions (m) and velocities (m/s); `y`: the contact offsets (m), so
/// `w = h v + y`; `h` the substep (s).
#[inline]
pub fn membrane_lanes(
    x: &[Vec3Lanes; 3],
    v: &[Vec3Lanes; 3],
    y: &[Vec3Lanes; 3],
    rest: &MembraneRestLanes,
    p: &MembraneParams,
    h: f32,
    out: &mut MembraneLanes,
) {
    let hl = Lanes::splat(h);
    let w = |m: usize| v[m].scale(hl) + y[m];
    let (w0, w1, w2) = (w(0), w(1), w(2));
    // Edge differences first: exact, or within an ulp of the edge (module doc).
    let (dx1, dx2) = (x[1] - x[0], x[2] - x[0]);
    let (dv1, dv2) = (v[1] - v[0], v[2] - v[0]);
    let (dw1, dw2) = (w1 - w0, w2 - w0);
    let [_, a1, a2] = rest.alpha;
    let [_, b1, b2] = rest.beta;
    let sqrt_a = rest.sqrt_a;
    let (w_u, w_v) = (dx1.combine(a1, dx2, a2), dx1.combine(b1, dx2, b2));
    let (rate_u, rate_v) = (dv1.combine(a1, dv2, a2), dv1.combine(b1, dv2, b2));
    let (shift_u, shift_v) = (dw1.combine(a1, dw2, a2), dw1.combine(b1, dw2, b2));
    let mut energy = Lanes::splat(0.0);
    let (k_u, k_v) = (p.stretch_u as f32, p.stretch_v as f32);
    let row_u = stretch_row(
        &mut energy,
        w_u,
        rate_u,
        shift_u,
        sqrt_a,
        p.rest_stretch_u as f32,
        k_u,
        (p.stretch_damping * p.stretch_u) as f32,
        h,
    );
    let row_v = stretch_row(
        &mut energy,
        w_v,
        rate_v,
        shift_v,
        sqrt_a,
        p.rest_stretch_v as f32,
        k_v,
        (p.stretch_damping * p.stretch_v) as f32,
        h,
    );
    // Shear C = √a w_u·w_v, g_m = √a (α_m w_v + β_m w_u): h (f + K w)_m = −h S g_m with
    // S = k C + k_d Ċ + k g·w, so b_m gains α_m (−h S √a w_v) + β_m (−h S √a w_u).
    let k_sh = p.shear as f32;
    let kd_sh = (p.shear_damping * p.shear) as f32;
    let c_sh = sqrt_a * w_u.dot(w_v);
    let c_dot = sqrt_a * (w_v.dot(rate_u) + w_u.dot(rate_v));
    let g_w = sqrt_a * (w_v.dot(shift_u) + w_u.dot(shift_v));
    energy += c_sh * c_sh * (0.5 * k_sh);
    let s = (c_sh * k_sh + c_dot * kd_sh + g_w * k_sh) * (-h) * sqrt_a;
    let p_u = row_u.p + w_v.scale(s);
    let p_v = row_v.p + w_u.scale(s);
    // ĝ_m = √(h k_d + h² k) √a (α_m w_v + β_m w_u).
    let root_s = Lanes::splat((h * kd_sh + h * h * k_sh).sqrt()) * sqrt_a;
    let (gh_u, gh_v) = (w_v.scale(root_s), w_u.scale(root_s));
    let rhs: [Vec3Lanes; 3] =
        std::array::from_fn(|m| p_u.combine(rest.alpha[m], p_v, rest.beta[m]));
    let g: [Vec3Lanes; 3] =
        std::array::from_fn(|m| gh_u.combine(rest.alpha[m], gh_v, rest.beta[m]));
    *out = MembraneLanes {
        shares: LaneShares::new(energy, rhs, &g),
        alpha: rest.alpha,
        beta: rest.beta,
        m_u: row_u.m.packed(),
        m_v: row_v.m.packed(),
    };
}

/// Baraff–Witkin bending of [`LANES`] hinges, `C = √w wrap(θ − θ0)` (eq. 2.7, §4.1, §4.6), with its
/// damping and the Gauss–Newton stiffness: lane `k` of the inputs is hinge `k`, and lane `k` of `out` its share
/// of `A` and `b`, what [`super::bw_system::bend_system`] returns for it (to `f32` rounding, module
/// doc). A degenerate hinge (the scalar kernel's test, `f32`) contributes nothing.
///
/// `x`, `v`: `[x1, x2, x3, x4]` (wings, then the shared edge) positions (m) and velocities (m/s); `y`
/// the contact offsets (m), `w = h v + y`; `h` the substep (s).
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn bend_lanes(
    x: &[Vec3Lanes; 4],
    v: &[Vec3Lanes; 4],
    y: &[Vec3Lanes; 4],
    rest: &HingeRestLanes,
    p: &BendParams,
    h: f32,
    stiffness: BendingStiffness,
    out: &mut HingeLanes,
) {
    let zero = Lanes::splat(0.0);
    let [x1, x2, x3, x4] = *x;
    let e = x4 - x3;
    let (a1, b1, a2, b2) = (x1 - x3, x1 - x4, x2 - x3, x2 - x4);
    let n1 = a1.cross(b1);
    let n2 = b2.cross(a2);
    // Degenerate (`dihedral::HingeFrame::new`): an edge or a wing too small for its size, or
    // anything not finite (every comparison with NaN fails).
    let len2 = [e, a1, b1, a2, b2].map(|d| d.dot(d));
    let scale2 = len2.iter().fold(zero, |m, l| m.max(*l));
    let tol = scale2 * DEGENERACY_TOLERANCE as f32;
    let (n1_len2, n2_len2) = (n1.dot(n1), n2.dot(n2));
    let total = len2.iter().fold(n1_len2 + n2_len2, |s, l| s + *l);
    let ok = total
        .lt(Lanes::splat(f32::INFINITY))
        .and(len2[0].gt(tol * DEGENERACY_TOLERANCE as f32))
        .and(n1_len2.sqrt().gt(tol))
        .and(n2_len2.sqrt().gt(tol));
    let len_e = len2[0].sqrt();
    let theta = atan2(n1.cross(n2).dot(e), len_e * n1.dot(n2));
    let one = Lanes::splat(1.0);
    let (q1, q2) = (n1.scale(one / n1_len2), n2.scale(one / n2_len2));
    let e_hat = e.scale(one / len_e);
    // g_i = √w ∂θ/∂x_i = −√w u_i (eq. 4.4–4.6), zero on a degenerate lane.
    let sqrt_w = ok.select(rest.sqrt_w, zero);
    let neg_w = -sqrt_w;
    let g = [
        q1.scale(neg_w * len_e),
        q2.scale(neg_w * len_e),
        q1.combine(neg_w * b1.dot(e_hat), q2, neg_w * b2.dot(e_hat)),
        q1.combine(sqrt_w * a1.dot(e_hat), q2, sqrt_w * a2.dot(e_hat)),
    ]
    .map(|gi| gi.select(ok, Vec3Lanes::ZERO));
    // wrap(θ − θ0) into (−π, π]: θ and θ0 both lie in (−π, π].
    let d = theta - rest.rest_angle;
    let d = d.gt(Lanes::splat(PI)).select(d - TAU, d);
    let d = Lanes::splat(-PI).ge(d).select(d + TAU, d);
    let c = ok.select(sqrt_w * d, zero);
    let hl = Lanes::splat(h);
    let (mut c_dot, mut g_w) = (zero, zero);
    for i in 0..4 {
        c_dot += g[i].dot(v[i]);
        g_w += g[i].dot(v[i].scale(hl) + y[i]);
    }
    let k = p.stiffness as f32;
    let k_d = (p.damping * p.stiffness) as f32;
    let k_x = match stiffness {
        BendingStiffness::Implicit => k,
        BendingStiffness::Explicit => 0.0,
    };
    let energy = c * c * (0.5 * k);
    // h (f + K w)_i = −h (k C + k_d Ċ + k_x g·w) g_i; A_ml = ĝ_m ĝ_lᵀ, ĝ = √(h k_d + h² k_x) g.
    let r = (c * k + c_dot * k_d + g_w * k_x) * (-h);
    let root_s = (h * k_d + h * h * k_x).sqrt();
    let root_s = Lanes::splat(root_s);
    *out = HingeLanes::new(
        energy,
        g.map(|gi| gi.scale(r)),
        &g.map(|gi| gi.scale(root_s)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::baraff_witkin::tests::{random_hinges, random_triangles};
    use crate::model::bw_system::{bend_system, membrane_system};
    use crate::model::test_support::SplitMix64;
    use glam::DVec3;

    /// `atan2` of the lanes against the C library's `f64` one over every octant, the axes, signed
    /// zeros and tiny and huge arguments.
    #[test]
    fn atan2_matches_the_library_to_four_tenths_of_a_microradian() {
        let mut rng = SplitMix64::new(31);
        let mut pairs: Vec<(f32, f32)> = (0..4000)
            .map(|_| {
                let a = rng.uniform(-std::f64::consts::PI, std::f64::consts::PI);
                let r = 10f64.powf(rng.uniform(-20.0, 20.0));
                ((r * a.sin()) as f32, (r * a.cos()) as f32)
            })
            .collect();
        for (y, x) in [
            (0.0, 1.0),
            (1.0, 0.0),
            (0.0, -1.0),
            (-0.0, -1.0),
            (-1.0, 0.0),
            (1.0, 1.0),
            (-1.0, -1.0),
            (0.0, 0.0),
            (-0.0, 0.0),
            (1e-30, -1.0),
            (0.414_213_56, 1.0),
        ] {
            pairs.push((y, x));
        }
        for chunk in pairs.chunks(LANES) {
            let lane = |k: usize| chunk[k.min(chunk.len() - 1)];
            let ys = Lanes(std::array::from_fn(|k| lane(k).0));
            let xs = Lanes(std::array::from_fn(|k| lane(k).1));
            let got = atan2(ys, xs);
            for (k, &(y, x)) in chunk.iter().enumerate() {
                let want = f64::from(y).atan2(f64::from(x));
                let err = (f64::from(got.0[k]) - want).abs();
                assert!(err <= 4e-7, "atan2({y}, {x}) = {} vs {want}", got.0[k]);
                assert_eq!(
                    got.0[k].is_sign_negative(),
                    want.is_sign_negative(),
                    "({y}, {x})"
                );
            }
        }
    }

    /// Rounds `x` to `f32` and back (the positions the lanes see).
    fn rounded<const N: usize>(x: &[DVec3; N]) -> [DVec3; N] {
        x.map(|p| p.as_vec3().as_dvec3())
    }

    /// Lane `k` of `N` corner vectors from `corners(k)`.
    fn lanes_of<const N: usize>(corners: impl Fn(usize) -> [DVec3; N]) -> [Vec3Lanes; N] {
        std::array::from_fn(|m| Vec3Lanes::gather(|k| corners(k)[m].as_vec3()))
    }

    /// A condition of an element as its rows see it: stiffness `k`, damping `k_d`, the value a
    /// unit strain or angle gives it, and its gradient.
    struct Condition<const N: usize> {
        k: f64,
        k_d: f64,
        unit: f64,
        g: [DVec3; N],
    }

    /// The scale of an element's rows `−h (k C + k_d Ċ + k g·w) g_m` that `f32` rounding is relative
    /// to: each condition's terms with `C` at its unit value and `Ċ = Σ g·v`, `g·w` as sums of
    /// magnitudes (the `f32` kernel resolves strains and angles to a few `1e-7`, and the sums to a
    /// few `1e-7` of their terms, module doc).
    fn row_terms<const N: usize>(
        conditions: &[Condition<N>],
        h: f64,
        v: &[DVec3; N],
        w: &[DVec3; N],
    ) -> f64 {
        (0..N)
            .map(|m| {
                conditions
                    .iter()
                    .map(|c| {
                        let (mut gv, mut gw) = (0.0, 0.0);
                        for i in 0..N {
                            gv += c.g[i].length() * v[i].length();
                            gw += c.g[i].length() * w[i].length();
                        }
                        h * c.g[m].length() * (c.k * c.unit + c.k_d * gv + c.k * gw)
                    })
                    .sum::<f64>()
            })
            .fold(0.0, f64::max)
    }

    /// `got` against the scalar `f64` kernel's `want`: every block within `tol` of the largest block
    /// entry of `want`, every row within `tol` of the largest row plus `row_terms`, the energy within
    /// `tol` of itself plus `energy_unit` (the energy at a unit strain or angle).
    fn assert_close<const N: usize>(
        got: &ElementSystem<N>,
        want: &ElementSystem<N>,
        tol: f64,
        row_terms: f64,
        energy_unit: f64,
        what: &str,
    ) {
        let block_scale = (0..N * N)
            .map(|k| {
                want.block(k / N, k % N)
                    .abs()
                    .to_cols_array()
                    .into_iter()
                    .fold(0.0, f32::max)
            })
            .fold(0.0f32, f32::max);
        let row_scale = want
            .rhs
            .iter()
            .map(|r| r.abs().max_element())
            .fold(0.0f32, f32::max);
        let row_scale = f64::from(row_scale) + row_terms;
        for m in 0..N {
            for l in 0..N {
                let d = (got.block(m, l) - want.block(m, l)).abs();
                let err = d.to_cols_array().into_iter().fold(0.0, f32::max);
                assert!(
                    f64::from(err) <= tol * f64::from(block_scale),
                    "{what}: block ({m},{l}) off by {err} (scale {block_scale})"
                );
            }
            let err = (got.rhs[m] - want.rhs[m]).abs().max_element();
            assert!(
                f64::from(err) <= tol * row_scale,
                "{what}: row {m} off by {err} (scale {row_scale})"
            );
        }
        assert!(
            (got.energy - want.energy).abs() <= tol * (want.energy + energy_unit),
            "{what}: energy {} vs {}",
            got.energy,
            want.energy
        );
    }

    /// Every lane of [`membrane_lanes`] is the scalar `f64` kernel at the same (`f32`) positions, to
    /// a few tens of `f32` ulps of the element's largest block entry and of its rows' terms: stretched and
    /// compressed rows, random rest shapes, sizes, velocities and offsets.
    #[test]
    fn membrane_lanes_match_the_scalar_kernel() {
        let mut rng = SplitMix64::new(32);
        let tris = random_triangles(33, 8 * LANES * 40, 0.3);
        for (n, batch) in tris.chunks(LANES).enumerate() {
            let h = rng.uniform(1e-4, 1e-2) as f32;
            let p = batch[0].p;
            let x: Vec<[DVec3; 3]> = batch.iter().map(|t| rounded(&t.x)).collect();
            let v: Vec<[DVec3; 3]> = batch.iter().map(|t| rounded(&t.v)).collect();
            let y: Vec<[DVec3; 3]> = batch
                .iter()
                .map(|_| rounded(&[0; 3].map(|_| rng.vec3(0.005))))
                .collect();
            let rest = MembraneRestLanes::new(|k| batch[k].rest);
            let mut out = MembraneLanes::ZERO;
            membrane_lanes(
                &lanes_of(|k| x[k]),
                &lanes_of(|k| v[k]),
                &lanes_of(|k| y[k]),
                &rest,
                &p,
                h,
                &mut out,
            );
            for k in 0..LANES {
                let hd = f64::from(h);
                let w: [DVec3; 3] =
                    std::array::from_fn(|m| (v[k][m].as_vec3() * h + y[k][m].as_vec3()).as_dvec3());
                let r = &batch[k].rest;
                let want = membrane_system(&x[k], &v[k], &w, r, &p, hd);
                let sqrt_a = r.area.sqrt();
                let [w_u, w_v] = crate::model::baraff_witkin::deformation_gradient(&x[k], r);
                let conditions = [
                    Condition {
                        k: p.stretch_u,
                        k_d: p.stretch_damping * p.stretch_u,
                        unit: sqrt_a,
                        g: r.alpha.map(|a| DVec3::splat(sqrt_a * a.abs())),
                    },
                    Condition {
                        k: p.stretch_v,
                        k_d: p.stretch_damping * p.stretch_v,
                        unit: sqrt_a,
                        g: r.beta.map(|b| DVec3::splat(sqrt_a * b.abs())),
                    },
                    Condition {
                        k: p.shear,
                        k_d: p.shear_damping * p.shear,
                        unit: sqrt_a,
                        g: std::array::from_fn(|m| sqrt_a * (r.alpha[m] * w_v + r.beta[m] * w_u)),
                    },
                ];
                let terms = row_terms(&conditions, hd, &v[k], &w);
                let unit = 0.5 * (p.stretch_u + p.stretch_v + p.shear) * r.area;
                assert_close(
                    &out.system(k),
                    &want,
                    5e-6,
                    terms,
                    unit,
                    &format!("batch {n} tri {k}"),
                );
            }
        }
    }

    /// Every lane of [`bend_lanes`] is the scalar `f64` kernel at the same (`f32`) positions, for
    /// implicit and explicit bending, hinges bent either way.
    #[test]
    fn bend_lanes_match_the_scalar_kernel() {
        let mut rng = SplitMix64::new(34);
        let hinges = random_hinges(35, 8 * LANES * 40, 0.05);
        for (n, batch) in hinges.chunks(LANES).enumerate() {
            for stiffness in [BendingStiffness::Implicit, BendingStiffness::Explicit] {
                let h = rng.uniform(1e-4, 1e-2) as f32;
                let p = batch[0].p;
                let x: Vec<[DVec3; 4]> = batch.iter().map(|s| rounded(&s.x)).collect();
                let v: Vec<[DVec3; 4]> = batch.iter().map(|s| rounded(&s.v)).collect();
                let y: Vec<[DVec3; 4]> = batch
                    .iter()
                    .map(|_| rounded(&[0; 4].map(|_| rng.vec3(0.005))))
                    .collect();
                let rest = HingeRestLanes::new(|k| batch[k].rest);
                let mut out = HingeLanes::ZERO;
                bend_lanes(
                    &lanes_of(|k| x[k]),
                    &lanes_of(|k| v[k]),
                    &lanes_of(|k| y[k]),
                    &rest,
                    &p,
                    h,
                    stiffness,
                    &mut out,
                );
                for k in 0..LANES {
                    let hd = f64::from(h);
                    let w: [DVec3; 4] = std::array::from_fn(|m| {
                        (v[k][m].as_vec3() * h + y[k][m].as_vec3()).as_dvec3()
                    });
                    let r = &batch[k].rest;
                    let want = bend_system(&x[k], &v[k], &w, r, &p, hd, stiffness);
                    let sqrt_w = r.weight.sqrt();
                    let (_, grad) = crate::model::dihedral::dihedral_angle_and_gradient(&x[k])
                        .expect("a hinge");
                    let conditions = [Condition {
                        k: p.stiffness,
                        k_d: p.damping * p.stiffness,
                        unit: sqrt_w,
                        g: grad.map(|gi| sqrt_w * gi),
                    }];
                    let terms = row_terms(&conditions, hd, &v[k], &w);
                    let unit = 0.5 * p.stiffness * r.weight;
                    let what = format!("batch {n} hinge {k} {stiffness:?}");
                    assert_close(&out.system(k), &want, 5e-6, terms, unit, &what);
                }
            }
        }
    }

    /// The bits of a matrix, column by column.
    fn bits(m: Mat3) -> [u32; 9] {
        m.to_cols_array().map(f32::to_bits)
    }

    /// Every packed block of both kernels is bit for bit the block [`ElementSystem::block`] forms from
    /// the same lane's factors, block `(l, m)` is bit for bit the transpose of block `(m, l)`, and
    /// [`HingeLanes::has_blocks`] agrees with [`ElementSystem::has_blocks`], degenerate lanes included.
    #[test]
    fn packed_blocks_are_the_element_blocks_bit_for_bit() {
        let mut rng = SplitMix64::new(36);
        // `got` holds the packed blocks of one lane, row-major over its `n` vertices.
        let check = |got: &[Mat3], want: &dyn Fn(usize, usize) -> Mat3, n: usize| {
            for m in 0..n {
                for l in 0..n {
                    assert_eq!(bits(got[n * m + l]), bits(want(m, l)), "block ({m},{l})");
                    assert_eq!(bits(got[n * m + l]), bits(got[n * l + m].transpose()));
                }
            }
        };
        let offsets = |rng: &mut SplitMix64, n: usize| -> Vec<DVec3> {
            (0..n).map(|_| rng.vec3(0.005)).collect()
        };
        let tris = random_triangles(37, 8 * LANES * 10, 0.3);
        for batch in tris.chunks(LANES) {
            let h = rng.uniform(1e-4, 1e-2) as f32;
            let y = offsets(&mut rng, 3 * LANES);
            let mut out = MembraneLanes::ZERO;
            membrane_lanes(
                &lanes_of(|k| batch[k].x),
                &lanes_of(|k| batch[k].v),
                &lanes_of(|k| [y[3 * k], y[3 * k + 1], y[3 * k + 2]]),
                &MembraneRestLanes::new(|k| batch[k].rest),
                &batch[0].p,
                h,
                &mut out,
            );
            for k in 0..LANES {
                let sys = out.system(k);
                let mut got = [Mat3::NAN; 9];
                out.blocks(k, |m, l, b| got[3 * m + l] = b.to_mat3());
                check(&got, &|m, l| sys.block(m, l), 3);
            }
        }
        let hinges = random_hinges(38, 8 * LANES * 10, 0.05);
        for (n, batch) in hinges.chunks(LANES).enumerate() {
            let h = rng.uniform(1e-4, 1e-2) as f32;
            let y = offsets(&mut rng, 4 * LANES);
            // Every fourth batch has a degenerate lane (all corners at one point): no blocks.
            let x = |k: usize| {
                if n % 4 == 0 && k == 3 {
                    [DVec3::splat(0.25); 4]
                } else {
                    batch[k].x
                }
            };
            let mut out = HingeLanes::ZERO;
            bend_lanes(
                &lanes_of(x),
                &lanes_of(|k| batch[k].v),
                &lanes_of(|k| [y[4 * k], y[4 * k + 1], y[4 * k + 2], y[4 * k + 3]]),
                &HingeRestLanes::new(|k| batch[k].rest),
                &batch[0].p,
                h,
                BendingStiffness::Implicit,
                &mut out,
            );
            for k in 0..LANES {
                let sys = out.system(k);
                assert_eq!(out.has_blocks(k), sys.has_blocks(), "batch {n} hinge {k}");
                if n % 4 == 0 && k == 3 {
                    assert!(!out.has_blocks(k));
                }
                let mut got = [Mat3::NAN; 16];
                out.blocks(k, |m, l, b| got[4 * m + l] = b.to_mat3());
                check(&got, &|m, l| sys.block(m, l), 4);
            }
        }
    }
}

//! SoA cloth state: positions, velocities, masses, and the state hash.
//!
//! The state is stored as structure-of-arrays in `f32`, the layout engines hand
//! weft and read back (`x`, `v` are packed `[f32; 3]` per vertex, so a host can
//! read positions without a copy). Masses are lumped (Baraff & Witkin 1998: a third of each incident triangle's mass):
//! each vertex carries a third of the mass of every triangle around it. A vertex
//! with inverse mass 0 is pinned: no force moves it, only its prescribed motion.
#![deny(unsafe_code)]

use glam::Vec3;

/// Positions, velocities and masses of one cloth, one entry per vertex.
///
/// Invariant: all arrays have the same length; `inv_mass[i] == 0` exactly when
/// vertex `i` is pinned, otherwise `inv_mass[i] == 1 / mass[i]` with `mass[i] > 0`.
#[derive(Clone, Debug, PartialEq)]
pub struct ClothState {
    positions: Vec<Vec3>,
    velocities: Vec<Vec3>,
    mass: Vec<f32>,
    inv_mass: Vec<f32>,
    mark: PositionsMark,
}

/// Whether a state's positions are unchanged since [`ClothState::mark_positions`]. Not part
/// of the state's value: states compare equal whatever their marks, and a clone starts
/// unmarked (its owner has derived nothing from it yet).
#[derive(Debug, Default)]
struct PositionsMark(bool);

impl Clone for PositionsMark {
    fn clone(&self) -> Self {
        PositionsMark(false)
    }
}

impl PartialEq for PositionsMark {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl ClothState {
    /// A state at rest at `positions` with the given lumped masses (kg).
    ///
    /// # Panics
    /// If the lengths differ or a mass is not finite and positive; callers build
    /// masses with [`lumped_masses`], which guarantees both for a validated mesh.
    pub fn new(positions: Vec<Vec3>, mass: Vec<f32>) -> Self {
        assert_eq!(positions.len(), mass.len(), "one mass per vertex");
        assert!(
            mass.iter().all(|m| m.is_finite() && *m > 0.0),
            "masses must be finite and positive"
        );
        let inv_mass = mass.iter().map(|m| 1.0 / m).collect();
        let velocities = vec![Vec3::ZERO; positions.len()];
        Self {
            positions,
            velocities,
            mass,
            inv_mass,
            mark: PositionsMark(false),
        }
    }

    /// Number of vertices.
    #[must_use]
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// True for a cloth without vertices (never built by weft; for completeness).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// Positions x (m).
    #[must_use]
    pub fn positions(&self) -> &[Vec3] {
        &self.positions
    }

    /// Velocities v (m/s).
    #[must_use]
    pub fn velocities(&self) -> &[Vec3] {
        &self.velocities
    }

    /// Positions and velocities, mutable together (the integrator writes both).
    pub fn positions_velocities_mut(&mut self) -> (&mut [Vec3], &mut [Vec3]) {
        self.mark.0 = false;
        (&mut self.positions, &mut self.velocities)
    }

    /// Positions and velocities (mutable) with the masses and inverse masses
    /// (read-only): what an integrator needs at once.
    pub fn split_mut(&mut self) -> (&mut [Vec3], &mut [Vec3], &[f32], &[f32]) {
        self.mark.0 = false;
        (
            &mut self.positions,
            &mut self.velocities,
            &self.mass,
            &self.inv_mass,
        )
    }

    /// Mutable positions.
    pub fn positions_mut(&mut self) -> &mut [Vec3] {
        self.mark.0 = false;
        &mut self.positions
    }

    /// Mutable velocities.
    pub fn velocities_mut(&mut self) -> &mut [Vec3] {
        &mut self.velocities
    }

    /// Lumped vertex masses (kg); a pinned vertex keeps its mass for momentum
    /// bookkeeping but has inverse mass 0.
    #[must_use]
    pub fn masses(&self) -> &[f32] {
        &self.mass
    }

    /// Inverse masses (1/kg); 0 for a pinned vertex.
    #[must_use]
    pub fn inv_masses(&self) -> &[f32] {
        &self.inv_mass
    }

    /// Pins (`true`) or frees (`false`) vertex `i`.
    pub fn set_pinned(&mut self, i: usize, pinned: bool) {
        self.inv_mass[i] = if pinned { 0.0 } else { 1.0 / self.mass[i] };
    }

    /// True when vertex `i` is pinned.
    #[must_use]
    pub fn is_pinned(&self, i: usize) -> bool {
        self.inv_mass[i] == 0.0
    }

    /// Copies positions and velocities from `other` (same size), e.g. to undo
    /// a rejected substep. Allocates nothing.
    pub fn copy_from(&mut self, other: &ClothState) {
        self.mark.0 = false;
        self.positions.copy_from_slice(&other.positions);
        self.velocities.copy_from_slice(&other.velocities);
    }

    /// Marks the positions as they are now: [`Self::positions_marked`] holds until the next
    /// call that can write them ([`Self::positions_mut`], [`Self::positions_velocities_mut`],
    /// [`Self::split_mut`], [`Self::copy_from`]), whether or not it changes them. Lets an owner
    /// that derived data from the positions (step control's stretch measures) reuse it.
    pub fn mark_positions(&mut self) {
        self.mark.0 = true;
    }

    /// Whether the positions may not have been written since [`Self::mark_positions`].
    #[must_use]
    pub fn positions_marked(&self) -> bool {
        self.mark.0
    }

    /// Kinetic energy ½ Σ m v² (J), summed in f64 in vertex order.
    #[must_use]
    pub fn kinetic_energy(&self) -> f64 {
        self.velocities
            .iter()
            .zip(&self.mass)
            .map(|(v, m)| 0.5 * f64::from(*m) * f64::from(v.length_squared()))
            .sum()
    }

    /// 64-bit FNV-1a hash over the bit patterns of all positions then all velocities.
    ///
    /// Equal hashes mean bit-identical states (up to hash collisions); it is
    /// the determinism check across runs and thread counts.
    #[must_use]
    pub fn state_hash(&self) -> u64 {
        let mut h = StateHasher::new();
        h.write_vec3s(&self.positions);
        h.write_vec3s(&self.velocities);
        h.finish()
    }

    /// True when every position and velocity component is finite.
    #[must_use]
    pub fn is_finite(&self) -> bool {
        self.positions.iter().all(|p| p.is_finite())
            && self.velocities.iter().all(|v| v.is_finite())
    }
}

/// FNV-1a over `f32` bit patterns: the state hash of one cloth or a whole world.
#[derive(Clone, Copy, Debug)]
pub struct StateHasher(u64);

impl StateHasher {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    /// A fresh hasher.
    #[must_use]
    pub fn new() -> Self {
        Self(Self::OFFSET)
    }

    /// Mixes in one 32-bit word, byte by byte (little-endian).
    pub fn write_u32(&mut self, w: u32) {
        for b in w.to_le_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }

    /// Mixes in the bit patterns of a slice of vectors.
    pub fn write_vec3s(&mut self, vs: &[Vec3]) {
        for v in vs {
            self.write_u32(v.x.to_bits());
            self.write_u32(v.y.to_bits());
            self.write_u32(v.z.to_bits());
        }
    }

    /// The hash so far.
    #[must_use]
    pub fn finish(&self) -> u64 {
        self.0
    }
}

impl Default for StateHasher {
    fn default() -> Self {
        Self::new()
    }
}

/// Lumped masses: each vertex gets a third of ρ·A of every adjacent triangle
/// (Baraff & Witkin 1998: a third of each incident triangle's mass), with `areas` the rest areas (m²) and `density`
/// the areal density ρ (kg/m²). Summed in f64 in triangle order.
///
/// A vertex that belongs to no triangle gets mass 0; callers reject such meshes.
#[must_use]
pub fn lumped_masses(
    num_vertices: usize,
    triangles: &[[u32; 3]],
    areas: &[f64],
    density: f64,
) -> Vec<f32> {
    let mut m = vec![0.0f64; num_vertices];
    for (t, a) in triangles.iter().zip(areas) {
        let share = density * a / 3.0;
        for &i in t {
            m[i as usize] += share;
        }
    }
    m.into_iter().map(|x| x as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lumped_mass_sums_to_total() {
        let tris = [[0, 1, 2], [1, 3, 2]];
        let areas = [0.5, 0.25];
        let m = lumped_masses(4, &tris, &areas, 0.2);
        let total: f32 = m.iter().sum();
        assert!((total - 0.2 * 0.75).abs() < 1e-7);
        assert!((m[0] - 0.2 * 0.5 / 3.0).abs() < 1e-7);
        assert!((m[1] - 0.2 * 0.75 / 3.0).abs() < 1e-7);
    }

    #[test]
    fn hash_sees_every_bit() {
        let s = ClothState::new(vec![Vec3::ZERO, Vec3::ONE], vec![1.0, 1.0]);
        let mut t = s.clone();
        assert_eq!(s.state_hash(), t.state_hash());
        t.velocities_mut()[1].z = f32::from_bits(1.0f32.to_bits() ^ 1);
        assert_ne!(s.state_hash(), t.state_hash());
        let mut u = s.clone();
        u.positions_mut()[0].x = -0.0;
        assert_ne!(
            s.state_hash(),
            u.state_hash(),
            "-0.0 and 0.0 differ in bits"
        );
    }

    #[test]
    fn pinning_sets_inverse_mass() {
        let mut s = ClothState::new(vec![Vec3::ZERO; 2], vec![2.0, 4.0]);
        s.set_pinned(1, true);
        assert!(s.is_pinned(1));
        assert_eq!(s.inv_masses(), &[0.5, 0.0]);
        s.set_pinned(1, false);
        assert_eq!(s.inv_masses(), &[0.5, 0.25]);
    }

    /// Every call that can write the positions clears the mark; reading them, writing the
    /// velocities alone and pinning keep it; a clone starts unmarked and still compares equal.
    #[test]
    fn position_writers_clear_the_mark() {
        let mut s = ClothState::new(vec![Vec3::ZERO; 2], vec![1.0, 1.0]);
        assert!(!s.positions_marked());
        let other = s.clone();
        let writers: [fn(&mut ClothState, &ClothState); 4] = [
            |s, _| {
                s.positions_mut();
            },
            |s, _| {
                s.positions_velocities_mut();
            },
            |s, _| {
                s.split_mut();
            },
            |s, o| s.copy_from(o),
        ];
        for write in writers {
            s.mark_positions();
            let _ = s.positions();
            s.velocities_mut()[0] = Vec3::ONE;
            s.set_pinned(0, true);
            assert!(s.positions_marked());
            write(&mut s, &other);
            assert!(!s.positions_marked());
        }
        s.mark_positions();
        let t = s.clone();
        assert!(!t.positions_marked());
        assert_eq!(s, t);
    }
}

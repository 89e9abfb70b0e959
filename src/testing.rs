//! Test-only helpers shared by the unit tests of several modules.
#![deny(unsafe_code)]

use glam::{DVec3, Vec3};

/// SplitMix64: a tiny, seeded, reproducible generator (no `rand` dependency),
/// so every random test case can be replayed from its seed.
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [lo, hi).
    pub(crate) fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * unit
    }

    /// Uniform in [lo, hi) (the name some tests use).
    pub(crate) fn range(&mut self, lo: f64, hi: f64) -> f64 {
        self.uniform(lo, hi)
    }

    /// Each component uniform in [-r, r).
    pub(crate) fn vec3(&mut self, r: f64) -> DVec3 {
        DVec3::new(
            self.uniform(-r, r),
            self.uniform(-r, r),
            self.uniform(-r, r),
        )
    }

    /// Each component uniform in [-r, r), as `f32`.
    pub(crate) fn vec3_f32(&mut self, r: f64) -> Vec3 {
        self.vec3(r).as_vec3()
    }

    /// A random unit vector (rejection-sampled in a shell of the unit ball).
    pub(crate) fn unit(&mut self) -> DVec3 {
        loop {
            let d = self.vec3(1.0);
            let l = d.length();
            if l > 0.1 && l < 1.0 {
                return d / l;
            }
        }
    }
}

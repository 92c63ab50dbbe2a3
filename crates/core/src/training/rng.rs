//! The drills' random numbers: PCG-64 from a seed, so a seed names one drill for good
//! (PCG's output stream is fixed by its specification, not by a crate version).

use rand_pcg::rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64;

pub(crate) struct Dice(Pcg64);

impl Dice {
    /// A stream for `seed`, distinct per `salt` (the drill kind), so the same seed gives
    /// unrelated numbers in two estimators.
    pub fn new(seed: u64, salt: &str) -> Dice {
        let mut mix = seed;
        for b in salt.bytes() {
            mix = mix.rotate_left(5) ^ u64::from(b);
            mix = mix.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
        Dice(Pcg64::seed_from_u64(mix))
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi).
    pub fn between(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// An index below `n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// `lo..=hi` rounded to a multiple of `step`.
    pub fn stepped(&mut self, lo: f64, hi: f64, step: f64) -> f64 {
        let x = ((self.between(lo, hi) / step).round() * step).clamp(lo, hi);
        // 0.1 × 12 is 1.2000000000000002: keep what a person would write.
        (x * 1e6).round() / 1e6
    }
}

//! Random choices as pure functions of (seed, stream, request index).
//!
//! A server draws in whatever order requests happen to arrive, and a simulator in another; both
//! must pick the same slow requests. So nothing here keeps RNG state between requests: each
//! choice hashes its own coordinates.
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// Which independent random stream a choice belongs to. Faults use their position in the list,
/// so two faults of the same kind never pick the same requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stream(pub u64);

/// The service-time law's stream; far from any fault position.
pub(crate) const LAW: Stream = Stream(u64::MAX);

/// SplitMix64's finaliser: a bijection on u64 with good avalanche, so neighbouring indices give
/// unrelated outputs.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 64 random bits for one (seed, stream, index) coordinate.
pub(crate) fn bits(seed: u64, stream: Stream, index: u64) -> u64 {
    splitmix(splitmix(splitmix(seed) ^ stream.0) ^ index)
}

/// A uniform draw in [0, 1) with 53 bits of precision.
pub(crate) fn unit(seed: u64, stream: Stream, index: u64) -> f64 {
    (bits(seed, stream, index) >> 11) as f64 / (1u64 << 53) as f64
}

/// A generator for laws that need more than one uniform draw (lognormal's Box–Muller).
pub(crate) fn rng(seed: u64, stream: Stream, index: u64) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(bits(seed, stream, index))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_coordinates_same_draw_and_neighbours_differ() {
        assert_eq!(unit(1, Stream(0), 7), unit(1, Stream(0), 7));
        assert_ne!(unit(1, Stream(0), 7), unit(1, Stream(0), 8));
        assert_ne!(unit(1, Stream(0), 7), unit(1, Stream(1), 7));
        assert_ne!(unit(1, Stream(0), 7), unit(2, Stream(0), 7));
    }

    #[test]
    fn unit_is_roughly_uniform() {
        let n = 100_000;
        let below_tenth = (0..n).filter(|&i| unit(3, Stream(2), i) < 0.1).count();
        // Binomial(100k, 0.1): sd ≈ 95, so ±600 is over six sigma.
        assert!((9_400..10_600).contains(&below_tenth), "{below_tenth}");
    }
}

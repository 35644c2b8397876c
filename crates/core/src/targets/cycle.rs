//! The two orders as pure functions of a request's index: a tabulated smooth weighted round
//! robin, and a seeded hash.

/// The cycle of smooth weighted round robin (nginx's): at each step every target's credit
/// grows by its weight, the target with the most credit is sent (the first in file order on a
/// tie) and pays the sum of the weights W. Over W steps target `k` is sent exactly `weights[k]`
/// times, and at every step each target is less than one request ahead of or behind its share.
///
/// Done literally, that is W steps over every target. Targets of equal weight differ only in
/// how often they were sent, so the one with the most credit among them is the least sent,
/// first in file order: they take turns. Each step then compares one target per distinct weight
/// (at most about √(2W) of them) instead of every target, which keeps a list of a hundred
/// thousand URLs quick to tabulate.
pub(super) fn smooth(weights: &[u32]) -> Vec<u32> {
    let total: i64 = weights.iter().map(|&w| i64::from(w)).sum();
    let mut turns = turns_by_weight(weights);
    let mut sent = vec![0i64; weights.len()];
    let mut table = Vec::with_capacity(total as usize);
    for step in 1..=total {
        let best = turns
            .iter()
            .enumerate()
            .map(|(class, (weight, queue))| {
                let head = queue[0];
                (step * weight - total * sent[head as usize], head, class)
            })
            // Most credit first, then the lower target index.
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
            .expect("at least one target");
        let (_, head, class) = best;
        sent[head as usize] += 1;
        turns[class].1.rotate_left(1);
        table.push(head);
    }
    table
}

/// For each distinct weight, its targets in file order: the order they take turns in.
fn turns_by_weight(weights: &[u32]) -> Vec<(i64, std::collections::VecDeque<u32>)> {
    let mut classes: Vec<(i64, std::collections::VecDeque<u32>)> = Vec::new();
    for (k, &w) in weights.iter().enumerate() {
        let w = i64::from(w);
        match classes.iter_mut().find(|(weight, _)| *weight == w) {
            Some((_, queue)) => queue.push_back(k as u32),
            None => classes.push((w, [k as u32].into())),
        }
    }
    classes
}

/// splitmix64's increment: the golden ratio in 64 bits.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// Keeps the target stream apart from the arrival streams drawn from the same run seed.
const TARGETS_DOMAIN: u64 = 0x7461_7267_6574_7321; // "targets!"

/// splitmix64's output function: a bijection of u64 that mixes every bit into every other.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The state a seed's stream starts from.
pub(super) fn stream(seed: u64) -> u64 {
    mix(seed ^ TARGETS_DOMAIN)
}

/// Request `index`'s draw, uniform on [0, total): the `index`-th output of a splitmix64
/// generator started at `stream`, scaled by a 128-bit multiply (Lemire's method; with
/// `total` ≤ 10⁶ its bias is below 10⁻¹³).
pub(super) fn draw(stream: u64, index: u64, total: u64) -> u64 {
    let z = mix(stream.wrapping_add(index.wrapping_add(1).wrapping_mul(GAMMA)));
    ((u128::from(z) * u128::from(total)) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// nginx's loop as written: every target, every step.
    fn literal(weights: &[u32]) -> Vec<u32> {
        let total: i64 = weights.iter().map(|&w| i64::from(w)).sum();
        let mut credit = vec![0i64; weights.len()];
        (0..total)
            .map(|_| {
                let mut best = 0;
                for k in 0..weights.len() {
                    credit[k] += i64::from(weights[k]);
                    if credit[k] > credit[best] {
                        best = k;
                    }
                }
                credit[best] -= total;
                best as u32
            })
            .collect()
    }

    #[test]
    fn nginx_example_five_one_one() {
        // nginx's own illustration: weights a=5, b=1, c=1 give a a b a c a a.
        assert_eq!(smooth(&[5, 1, 1]), vec![0, 0, 1, 0, 2, 0, 0]);
    }

    #[test]
    fn equal_weights_are_file_order() {
        assert_eq!(smooth(&[1; 5]), vec![0, 1, 2, 3, 4]);
        assert_eq!(smooth(&[3, 3]), vec![0, 1, 0, 1, 0, 1]);
    }

    proptest! {
        #[test]
        fn taking_turns_is_the_literal_loop(weights in prop::collection::vec(1u32..12, 1..12)) {
            prop_assert_eq!(smooth(&weights), literal(&weights));
        }

        #[test]
        fn never_a_request_off_the_share(weights in prop::collection::vec(1u32..40, 1..16)) {
            // After step t, target k was sent c_k times: |t·w_k − W·c_k| < W, i.e. less than
            // one request ahead of or behind t·w_k/W. This is what "smooth" buys over sending
            // each target's requests in a run.
            let total: i64 = weights.iter().map(|&w| i64::from(w)).sum();
            let mut sent = vec![0i64; weights.len()];
            for (t, &k) in smooth(&weights).iter().enumerate() {
                sent[k as usize] += 1;
                for (j, &w) in weights.iter().enumerate() {
                    let lag = (t as i64 + 1) * i64::from(w) - total * sent[j];
                    prop_assert!(lag.abs() < total, "step {} target {} lag {}", t + 1, j, lag);
                }
            }
            for (j, &w) in weights.iter().enumerate() {
                prop_assert_eq!(sent[j], i64::from(w));
            }
        }
    }

    #[test]
    fn draws_cover_the_range_and_depend_on_the_stream() {
        let (a, b) = (stream(1), stream(2));
        let xs: Vec<u64> = (0..1000).map(|i| draw(a, i, 10)).collect();
        assert!(xs.iter().all(|&x| x < 10));
        for v in 0..10 {
            assert!(xs.contains(&v), "value {v} never drawn in 1000 draws");
        }
        let ys: Vec<u64> = (0..1000).map(|i| draw(b, i, 10)).collect();
        let same = xs.iter().zip(&ys).filter(|(x, y)| x == y).count();
        // Independent streams agree about one time in ten.
        assert!(
            (50..150).contains(&same),
            "{same} of 1000 draws equal across seeds"
        );
    }
}

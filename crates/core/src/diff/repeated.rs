//! Two repeated runs compared percentile by percentile on their repetitions' own estimates:
//! Welch's t-interval for the difference of the two means (Welch 1947), which assumes neither
//! equal spreads nor equal numbers of repetitions. Independent repetitions make each side's
//! estimates independent draws, whatever the dependence inside a run.
use crate::repeat::{t_quantile, Pick, Repetitions};

/// One percentile compared: each side's mean estimate, and the interval of B − A (ns).
pub(super) struct Welch {
    pub a: f64,
    pub b: f64,
    pub lo: f64,
    pub hi: f64,
}

/// Welch's interval at `level` for the difference of the mean response-time estimates at
/// `p`; `None` unless both sides have at least two complete repetitions with that percentile.
pub(super) fn welch(a: &Repetitions, b: &Repetitions, p: f64, level: f64) -> Option<Welch> {
    let pick: Pick = |r| &r.response;
    let (xa, _) = a.estimates(pick, p)?;
    let (xb, _) = b.estimates(pick, p)?;
    let (ma, va, na) = moments(&xa)?;
    let (mb, vb, nb) = moments(&xb)?;
    let (sa, sb) = (va / na, vb / nb);
    let se = (sa + sb).sqrt();
    let delta = mb - ma;
    // Welch–Satterthwaite degrees of freedom; with no spread on either side the difference
    // is exact and any finite quantile will do.
    let df = if se == 0.0 {
        1.0
    } else {
        (sa + sb).powi(2) / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0))
    };
    let half = t_quantile(1.0 - (1.0 - level) / 2.0, df) * se;
    Some(Welch {
        a: ma,
        b: mb,
        lo: delta - half,
        hi: delta + half,
    })
}

/// Mean, sample variance (n − 1) and count; `None` below two values.
fn moments(xs: &[f64]) -> Option<(f64, f64, f64)> {
    let n = xs.len() as f64;
    if xs.len() < 2 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((mean, var, n))
}

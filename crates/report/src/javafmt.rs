//! Numbers printed the way Java's `String.format("%.Nf", x)` prints them.
//!
//! The `.hgrm` and `.hlog` formats come from the Java reference implementation, and tools diff
//! and parse its output. Java rounds the *shortest decimal representation* of a double half-up,
//! while Rust's `{:.N}` rounds the exact binary value half-to-even, so `1.0005` becomes `1.001` in
//! Java and `1.000` in Rust. To write byte-identical files we round the way Java does.

/// `x` with exactly `decimals` digits after the point, rounded half-up from its shortest
/// decimal representation.
pub fn fixed(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "NaN".into()
        } else if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    // Java keeps the sign of a negative value that rounds to zero ("-0.000") but not of -0.0.
    let negative = x < 0.0;
    // `{:e}` gives the shortest digits that round-trip, e.g. "1.0005e0".
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').expect("{:e} always has an exponent");
    let exp: i64 = exp.parse().expect("{:e} exponent is an integer");
    let digits: Vec<u8> = mantissa
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect();
    let text = round_half_up(&digits, exp, decimals);
    if negative {
        format!("-{text}")
    } else {
        text
    }
}

/// Places the significant `digits` (d.ddd × 10^exp) on a fixed grid of `decimals` places,
/// rounding half-up.
fn round_half_up(digits: &[u8], exp: i64, decimals: usize) -> String {
    // Position of each digit relative to the decimal point: digit i has weight 10^(exp - i).
    // Keep those with weight >= 10^-decimals.
    let int_len = (exp + 1).max(1) as usize;
    let mut grid = vec![0u8; int_len + decimals];
    let mut round_up = false;
    for (i, &d) in digits.iter().enumerate() {
        let weight = exp - i as i64;
        if weight < -(decimals as i64) {
            // The first dropped digit decides, half-up.
            round_up = weight == -(decimals as i64) - 1 && d >= 5;
            break;
        }
        let slot = (int_len as i64 - 1 - weight) as usize;
        grid[slot] = d;
    }
    if round_up {
        carry(&mut grid);
    }
    let (int_part, frac) = grid.split_at(grid.len() - decimals);
    let mut s: String = int_part.iter().map(|d| char::from(b'0' + d)).collect();
    let trimmed = s.trim_start_matches('0');
    s = if trimmed.is_empty() {
        "0".into()
    } else {
        trimmed.into()
    };
    if decimals > 0 {
        s.push('.');
        s.extend(frac.iter().map(|d| char::from(b'0' + d)));
    }
    s
}

fn carry(grid: &mut Vec<u8>) {
    for d in grid.iter_mut().rev() {
        if *d == 9 {
            *d = 0;
        } else {
            *d += 1;
            return;
        }
    }
    grid.insert(0, 1);
}

#[cfg(test)]
mod tests {
    use super::fixed;

    #[test]
    fn rounds_like_java() {
        // Each row: what Java's String.format prints for this double.
        let rows: [(f64, usize, &str); 12] = [
            (1.0005, 3, "1.001"), // binary value is below the tie; Java rounds the decimal
            (0.0625, 3, "0.063"), // an exact tie rounds up, not to even
            (2.5, 0, "3"),
            (199.754, 3, "199.754"),
            (0.0, 3, "0.000"),
            (-0.0004, 3, "-0.000"), // Java keeps the sign of a value that rounds to zero
            (-1.25, 1, "-1.3"),
            (9.9996, 3, "10.000"), // carry into a new integer digit
            (1e-7, 3, "0.000"),
            (1234567.0, 2, "1234567.00"),
            (1.0 / (1.0 - 0.9), 2, "10.00"),
            (0.999999046326, 12, "0.999999046326"),
        ];
        for (x, n, want) in rows {
            assert_eq!(fixed(x, n), want, "fixed({x}, {n})");
        }
        assert_eq!(fixed(f64::INFINITY, 2), "Infinity");
    }
}

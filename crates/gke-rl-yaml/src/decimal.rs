//! Numbers as text without `core`'s float formatting, whose exact and shortest algorithms are
//! about 7 KB of the gke-rl web page's gzip budget. Every number gke-rl writes (GB, hours,
//! dollars, CPUs, a float a document holds) is a measure rounded to a few places, which
//! integers write exactly.

use std::fmt;

/// `value` rounded to `places` decimals, as `{value:.places$}` writes it except that an
/// exact tie rounds away from zero. Honours width and alignment (`{:>12}`).
pub fn fixed(value: f64, places: u8) -> Fixed {
    Fixed { value, places, trim: false }
}

/// `value` to at most `places` decimals, without trailing zeros: `0.5`, `4`, `0.125`.
pub fn short(value: f64, places: u8) -> Fixed {
    Fixed { value, places, trim: true }
}

/// A number to write; see [`fixed`] and [`short`].
#[derive(Clone, Copy, Debug)]
pub struct Fixed {
    value: f64,
    places: u8,
    trim: bool,
}

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Fixed { value, places, trim } = *self;
        if !value.is_finite() {
            return f.pad(if value.is_nan() {
                "NaN"
            } else if value > 0.0 {
                "inf"
            } else {
                "-inf"
            });
        }
        // Past u64 (1.8e19 units of the last place), `as` saturates: no measure gets there.
        let scale = 10u64.pow(u32::from(places.min(18)));
        let units = (value.abs() * scale as f64).round() as u64;
        let sign = if value < 0.0 && units != 0 { "-" } else { "" };
        let mut text = format!("{sign}{}", units / scale);
        if places > 0 {
            let fraction = format!("{:0width$}", units % scale, width = usize::from(places.min(18)));
            let fraction = if trim { fraction.trim_end_matches('0') } else { &fraction };
            if !fraction.is_empty() {
                text.push('.');
                text.push_str(fraction);
            }
        }
        f.pad(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_float_formatting_writes_for_measures() {
        for (value, places) in [(0.0, 2), (1.0, 0), (2.5e-3, 2), (1234.5678, 1), (71.83, 2), (0.1 + 0.2, 3), (-3.26, 1), (9.99, 0)] {
            assert_eq!(fixed(value, places).to_string(), format!("{value:.*}", usize::from(places)), "{value}");
        }
        assert_eq!(fixed(0.125, 2).to_string(), "0.13", "an exact tie rounds away from zero");
        assert_eq!(fixed(-0.001, 2).to_string(), "0.00", "no negative zero");
        assert_eq!(format!("[{:>7}]", fixed(5.4321, 2)), "[   5.43]");
        assert_eq!(
            (short(0.5, 3).to_string(), short(4.0, 3).to_string(), short(0.1251, 3).to_string()),
            ("0.5".into(), "4".into(), "0.125".into())
        );
        assert_eq!((fixed(f64::NAN, 1).to_string(), fixed(f64::NEG_INFINITY, 1).to_string()), ("NaN".into(), "-inf".into()));
    }
}

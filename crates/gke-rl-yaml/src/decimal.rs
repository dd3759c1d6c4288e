//! Numbers as text without `core`'s float formatting, whose exact and shortest algorithms are
//! about 7 KB of the gke-rl web page's gzip budget. Every number gke-rl writes (GB, hours,
//! dollars, CPUs, a float a document holds) is a measure rounded to a few places, which
//! integers write exactly.

use std::fmt;

/// `value` rounded to `places` decimals (at most 8): `value × 10^places` rounded half away
/// from zero in f64, which may differ from `{value:.places$}` (exact decimal rounding) by one
/// in the last place. Honours width and alignment (`{:>12}`).
pub fn fixed(value: f64, places: u8) -> Fixed {
    Fixed { value, places: places.min(MOST_PLACES), trim: false }
}

/// `value` to at most `places` decimals (at most 8), without trailing zeros: `0.5`, `4`, `0.125`.
pub fn short(value: f64, places: u8) -> Fixed {
    Fixed { value, places: places.min(MOST_PLACES), trim: true }
}

const MOST_PLACES: u8 = 8;

/// Beyond this magnitude a measure is written as a bound: no measure gke-rl prints gets there,
/// and below it `value × 10^8` fits a u128 exactly enough.
const LARGEST: f64 = 1e29;

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
        if value.is_nan() {
            return f.pad("NaN");
        }
        if value.abs() >= LARGEST {
            return f.pad(if value > 0.0 { "more than 1e29" } else { "less than -1e29" });
        }
        let scale = 10u128.pow(u32::from(places));
        let units = (value.abs() * scale as f64).round() as u128;
        let sign = if value < 0.0 && units != 0 { "-" } else { "" };
        let mut text = format!("{sign}{}", units / scale);
        if places > 0 {
            let fraction = format!("{:0width$}", units % scale, width = usize::from(places));
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
        assert_eq!((fixed(f64::NAN, 1).to_string(), fixed(f64::NEG_INFINITY, 1).to_string()), ("NaN".into(), "less than -1e29".into()));
        assert_eq!((fixed(1e20, 2).to_string(), fixed(1e30, 0).to_string()), ("100000000000000000000.00".into(), "more than 1e29".into()));
        assert_eq!(short(2e13, 6).to_string(), "20000000000000", "no saturation below the bound");
    }
}

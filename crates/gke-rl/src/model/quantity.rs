//! Kubernetes resource quantities as numbers: CPU in cores, memory in bytes.

/// The value of a quantity such as `500m`, `8`, `64Gi`, `1.5G` or `1e3`; `None` when
/// malformed. The grammar follows apimachinery's (kubernetes/apimachinery
/// `pkg/api/resource/quantity.go`): a signed decimal with at least one digit, then a binary or
/// decimal SI suffix or a decimal exponent. A YAML float keeps its text, so `1e3` and `+.5`
/// arrive here as written.
pub fn parse(text: &str) -> Option<f64> {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let split = unsigned.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(unsigned.len());
    let (digits, suffix) = unsigned.split_at(split);
    if !digits.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    let number = digits.parse::<f64>().ok()? * if text.starts_with('-') { -1.0 } else { 1.0 };
    // `E` alone is exa; `E` or `e` with a signed integer after it is an exponent.
    if let Some(exponent) = suffix.strip_prefix(['e', 'E']).filter(|e| !e.is_empty()) {
        let magnitude = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        if magnitude.is_empty() || !magnitude.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        return Some(number * 10f64.powi(exponent.parse().ok()?));
    }
    let factor = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        _ => return None,
    };
    Some(number * factor)
}

#[cfg(test)]
mod tests {
    #[test]
    fn suffixes() {
        assert_eq!(super::parse("500m"), Some(0.5));
        assert_eq!(super::parse("64Gi"), Some(64.0 * 1024f64.powi(3)));
        assert_eq!(super::parse("1.5G"), Some(1.5e9));
        assert_eq!(super::parse("8"), Some(8.0));
        assert_eq!(super::parse("8gb"), None);
        assert_eq!(
            (super::parse("1e3"), super::parse("15E-1"), super::parse("+.5"), super::parse("-2")),
            (Some(1e3), Some(1.5), Some(0.5), Some(-2.0))
        );
        assert_eq!((super::parse("1e"), super::parse("1e+-2"), super::parse("."), super::parse("+")), (None, None, None, None));
        assert_eq!((super::parse("2E"), super::parse("500000u")), (Some(2e18), Some(0.5)));
    }
}

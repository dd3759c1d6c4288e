//! Kubernetes resource quantities as numbers: CPU in cores, memory in bytes.

/// The value of a quantity such as `500m`, `8`, `64Gi` or `1.5G`; `None` when malformed.
pub fn parse(text: &str) -> Option<f64> {
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
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
    }
}

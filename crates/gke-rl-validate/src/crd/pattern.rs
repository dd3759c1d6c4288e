//! The `pattern`s of KubeRay's CRDs, matched without a regex engine. Each is one of the
//! patterns Kubernetes' types put in every CRD built from them (kubernetes/apimachinery
//! `pkg/api/resource/quantity.go` and `pkg/apis/meta/v1/types.go`, v0.34); a CRD with
//! another pattern is refused when it is compiled, never checked half way.

/// A pattern gke-rl matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// A resource quantity (`500m`, `64Gi`, `1e3`).
    Quantity,
    /// A condition's `type`: a qualified name with an optional DNS-subdomain prefix.
    QualifiedName,
    /// A condition's `reason`: CamelCase words, with `_`, `,` and `:` inside.
    ConditionReason,
}

impl Pattern {
    /// Every pattern, each with its regular expression as CRDs write it.
    const ALL: [(Pattern, &str); 3] = [
        (
            Pattern::Quantity,
            r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
        ),
        (
            Pattern::QualifiedName,
            r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
        ),
        (Pattern::ConditionReason, r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
    ];

    /// The pattern a CRD writes as `regex`, if gke-rl knows it.
    pub fn of(regex: &str) -> Option<Pattern> {
        Self::ALL.iter().find(|(_, r)| *r == regex).map(|(p, _)| *p)
    }

    /// What a matching string is, for messages.
    pub fn described(self) -> &'static str {
        match self {
            Pattern::Quantity => "a Kubernetes quantity such as 500m, 64Gi or 8",
            Pattern::QualifiedName => "a qualified name such as Ready or example.com/Ready",
            Pattern::ConditionReason => "a CamelCase reason such as ClusterReady",
        }
    }

    /// Whether `text` matches the whole pattern, as the regex would.
    pub fn matches(self, text: &str) -> bool {
        match self {
            Pattern::Quantity => quantity(text),
            Pattern::QualifiedName => match text.split_once('/') {
                Some((prefix, name)) => prefix.split('.').all(dns_label) && qualified_name(name),
                None => qualified_name(text),
            },
            Pattern::ConditionReason => {
                let bytes = text.as_bytes();
                let inner = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
                match bytes {
                    [first] => first.is_ascii_alphabetic(),
                    [first, middle @ .., last] => {
                        first.is_ascii_alphabetic() && middle.iter().all(|b| inner(b) || *b == b',' || *b == b':') && inner(last)
                    }
                    [] => false,
                }
            }
        }
    }
}

/// `(\+|-)?` a decimal, then nothing, a binary or decimal SI suffix, or an exponent.
fn quantity(text: &str) -> bool {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let end = unsigned.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(end);
    decimal(number)
        && match suffix.as_bytes() {
            [] | [b'n' | b'u' | b'm' | b'k' | b'M' | b'G' | b'T' | b'P' | b'E'] => true,
            [b'K' | b'M' | b'G' | b'T' | b'P' | b'E', b'i'] => true,
            [b'e' | b'E', exponent @ ..] => {
                let exponent = std::str::from_utf8(exponent).unwrap_or_default();
                decimal(exponent.strip_prefix(['+', '-']).unwrap_or(exponent))
            }
            _ => false,
        }
}

/// `[0-9]+(\.[0-9]*)?` or `\.[0-9]+`, the whole of `text`.
fn decimal(text: &str) -> bool {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    digits(whole) && digits(fraction) && (!whole.is_empty() || !fraction.is_empty())
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn dns_label(label: &str) -> bool {
    let ends = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match label.as_bytes() {
        [] => false,
        [only] => ends(only),
        [first, middle @ .., last] => ends(first) && ends(last) && middle.iter().all(|b| ends(b) || *b == b'-'),
    }
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn qualified_name(name: &str) -> bool {
    match name.as_bytes() {
        [] => false,
        [only] => only.is_ascii_alphanumeric(),
        [first, middle @ .., last] => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && middle.iter().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(b))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    #[test]
    fn each_pattern_matches_as_its_regex() {
        let cases = [
            (
                Pattern::Quantity,
                &["500m", "64Gi", "8", "1.", ".5", "+1e3", "-2E-1.5", "1E", "15E-1", "0.5Ki"][..],
                &["", ".", "1e", "8gb", "1..2", "1Mi5", "e3", "1e+", "1 "][..],
            ),
            (
                Pattern::QualifiedName,
                &["Ready", "example.com/Ready", "a", "a-b.c/x_y.z", "0/9"],
                &["", "/Ready", "Ex.com/Ready", "a/", "a/b/c", "-a", "a-", "a..b/c"],
            ),
            (Pattern::ConditionReason, &["A", "ClusterReady", "A_b,c:d", "Ab_"], &["", "1A", "A,", "A:", "A-b"]),
        ];
        for (pattern, good, bad) in cases {
            for text in good {
                assert!(pattern.matches(text), "{pattern:?} should match {text:?}");
            }
            for text in bad {
                assert!(!pattern.matches(text), "{pattern:?} should not match {text:?}");
            }
            let regex = Pattern::ALL.iter().find(|(p, _)| *p == pattern).map(|(_, r)| *r).unwrap();
            assert_eq!(Pattern::of(regex), Some(pattern));
        }
    }
}

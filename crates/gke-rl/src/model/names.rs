//! Validated string types. Each one rejects, at deserialization time and so with the
//! line and column of the offending value, anything that could not be deployed or that
//! would need escaping in one of the rendered languages.

use std::fmt;

// Free-form words use only characters that need no quoting in YAML, sh or Hydra.
use crate::Error;
use crate::quote::is_plain_char;

fn invalid(value: &str, problem: impl Into<String>) -> Error {
    Error::InvalidValue { value: value.to_owned(), problem: problem.into() }
}

fn lower_alnum_or_dash(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?` of at most `max` characters.
fn check_label(s: &str, max: usize, what: &str) -> Result<(), Error> {
    let ok =
        !s.is_empty() && s.len() <= max && s.starts_with(|c: char| c.is_ascii_lowercase()) && !s.ends_with('-') && lower_alnum_or_dash(s);
    if ok {
        Ok(())
    } else {
        Err(invalid(
            s,
            format!(
                "is not a valid {what}: use 1 to {max} lowercase letters, digits and `-`, starting with a letter and not ending with `-`"
            ),
        ))
    }
}

fn check_name(s: &str) -> Result<(), Error> {
    check_label(s, 63, "Kubernetes/GCP name")
}

fn check_project_id(s: &str) -> Result<(), Error> {
    if s.len() < 6 {
        return Err(invalid(s, "is not a valid project id: it has fewer than 6 characters"));
    }
    check_label(s, 30, "project id")
}

/// `us-east1`: a word, a dash, a word ending in digits.
fn check_region(s: &str) -> Result<(), Error> {
    let ok = s.split_once('-').is_some_and(|(area, rest)| {
        !area.is_empty()
            && area.chars().all(|c| c.is_ascii_lowercase())
            && rest.starts_with(|c: char| c.is_ascii_lowercase())
            && rest.ends_with(|c: char| c.is_ascii_digit())
            && rest.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    });
    if ok { Ok(()) } else { Err(invalid(s, "is not a Google Cloud region such as `us-east1`")) }
}

/// `us-east1-b`: a region, a dash, one letter.
fn check_zone(s: &str) -> Result<(), Error> {
    let ok = s.rsplit_once('-').is_some_and(|(region, letter)| {
        check_region(region).is_ok() && letter.len() == 1 && letter.chars().all(|c| c.is_ascii_lowercase())
    });
    if ok { Ok(()) } else { Err(invalid(s, "is not a Google Cloud zone such as `us-east1-b`")) }
}

fn check_cidr(s: &str) -> Result<(), Error> {
    let err = || invalid(s, "is not an IPv4 CIDR block such as `203.0.113.7/32`");
    let (ip, bits) = s.split_once('/').ok_or_else(err)?;
    let octets: Vec<&str> = ip.split('.').collect();
    let octets_ok = octets.len() == 4 && octets.iter().all(|o| !o.is_empty() && o.len() <= 3 && o.parse::<u8>().is_ok());
    let bits_ok = !bits.is_empty() && bits.len() <= 2 && bits.parse::<u8>().is_ok_and(|b| b <= 32);
    if octets_ok && bits_ok { Ok(()) } else { Err(err()) }
}

fn check_env_name(s: &str) -> Result<(), Error> {
    let ok = s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok { Ok(()) } else { Err(invalid(s, "is not an environment variable name: use letters, digits and `_`, not starting with a digit")) }
}

fn check_word(s: &str) -> Result<(), Error> {
    if !s.is_empty() && s.chars().all(is_plain_char) {
        Ok(())
    } else if s.contains("{{") || s.contains('<') {
        Err(invalid(s, "is a placeholder, not a value"))
    } else {
        Err(invalid(s, "must be non-empty and use only letters, digits and `_ - . / : @ +`"))
    }
}

/// A Hydra override key: dotted names, `+` (add a key the recipe lacks) or `++` (add or set)
/// before it.
fn check_override_key(s: &str) -> Result<(), Error> {
    let name = s.strip_prefix("++").or_else(|| s.strip_prefix('+')).unwrap_or(s);
    let segment = |p: &str| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') && name.split('.').all(segment);
    if ok {
        Ok(())
    } else {
        Err(invalid(
            s,
            "is not a NeMo-RL (Hydra) key: dotted names of letters, digits, `_` and `-`, with `+` before a key the recipe lacks",
        ))
    }
}

fn check_path(s: &str) -> Result<(), Error> {
    let ok = s.starts_with('/') && s.chars().all(is_plain_char);
    if ok { Ok(()) } else { Err(invalid(s, "is not an absolute path of letters, digits and `_ - . / : @ +`")) }
}

/// A Kubernetes quantity a request can hold: one that reads, finite and not negative. (A YAML
/// float keeps its text, so `.5` and `2.5e-1` arrive as written.)
fn check_quantity(s: &str) -> Result<(), Error> {
    match crate::model::quantity::parse(s) {
        Some(q) if q.is_finite() && q >= 0.0 && !s.starts_with('-') => Ok(()),
        _ => Err(invalid(s, "is not a Kubernetes quantity such as `8`, `500m` or `64Gi`")),
    }
}

/// The number of a `step_N` folder: ASCII digits without a leading zero that fit a `u64`, as
/// NeMo-RL names them (`f"step_{step}"`). Another spelling (`step_007`, a longer number) is no
/// step gke-rl can name, and the folder is refused by name rather than read as another.
pub fn step_number(digits: &str) -> Option<u64> {
    let plain = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && (digits == "0" || !digits.starts_with('0'));
    plain.then(|| digits.parse().ok()).flatten()
}

/// A bucket name by Cloud Storage's rules (cloud.google.com/storage/docs/buckets#naming): 3 to
/// 63 lowercase letters, digits, `-` and `_`, or up to 222 with dots between parts of at most
/// 63; starting and ending with a letter or digit; not `goog…`, not holding `google`.
fn check_bucket(bucket: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.');
    let ends = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let most = if bucket.contains('.') { 222 } else { 63 };
    let shaped = (3..=most).contains(&bucket.len())
        && bucket.chars().all(allowed)
        && bucket.starts_with(ends)
        && bucket.ends_with(ends)
        && bucket.split('.').all(|part| !part.is_empty() && part.len() <= 63);
    if !shaped {
        return Err(format!(
            "`{bucket}` is not a bucket name: use 3 to 63 lowercase letters, digits, `-` and `_` (or dotted parts of at most 63), starting and ending with a letter or digit"
        ));
    }
    if bucket.starts_with("goog") || bucket.contains("google") {
        return Err(format!("`{bucket}` is not a bucket name: Cloud Storage refuses names that start with `goog` or hold `google`"));
    }
    Ok(())
}

/// `gs://BUCKET/` or `gs://BUCKET/PATH/`: a folder of a bucket, as Managed Lustre's transfers
/// take it (a path in the bucket "must end with a forward slash", the `gcsPath` of
/// `ExportDataRequest` in googleapis `google/cloud/lustre/v1/transfer.proto`). Its folders are
/// plain words, never `.` or `..`, and hold none of gcloud storage's wildcards (`*`, `?`, `[`).
fn check_gcs_path(s: &str) -> Result<(), Error> {
    let Some(rest) = s.strip_prefix("gs://") else {
        return Err(invalid(s, "is not a Cloud Storage folder: write it as gs://BUCKET/PATH/"));
    };
    let (bucket, path) = rest.split_once('/').unwrap_or((rest, ""));
    check_bucket(bucket).map_err(|problem| invalid(s, problem))?;
    if !rest.ends_with('/') {
        return Err(invalid(s, format!("does not end with `/`: a folder of a bucket does (write {s}/)")));
    }
    for part in path.split_terminator('/') {
        if part.is_empty() {
            return Err(invalid(s, "has an empty folder name (`//`): write each folder once"));
        }
        if part == "." || part == ".." {
            return Err(invalid(s, format!("has the folder `{part}`: name the folder itself, without `.` or `..`")));
        }
        if !part.chars().all(|c| is_plain_char(c) && c != '/') {
            return Err(invalid(s, "has a folder name that is not letters, digits and `_ - . : @ +`"));
        }
    }
    Ok(())
}

/// A checkpoint in a bucket: a [`GcsPath`] whose last folder is `step_N`, as `gke-rl export`
/// writes it.
fn check_checkpoint_uri(s: &str) -> Result<(), Error> {
    check_gcs_path(s)?;
    let last = s.trim_end_matches('/').rsplit('/').next().unwrap_or_default();
    match last.strip_prefix("step_") {
        Some(digits) if step_number(digits).is_some() => Ok(()),
        _ => Err(invalid(
            s,
            "names no checkpoint: its last folder must be `step_N`, as `gke-rl export` writes it (gs://BUCKET/PATH/RUN/step_N/)",
        )),
    }
}

macro_rules! validated_string {
    ($(#[$doc:meta])* $name:ident, $check:ident, $pattern:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// JSON Schema pattern equivalent to the validation (used for editor completion).
            pub const PATTERN: &'static str = $pattern;

            /// Validates `value`; the error says what is wrong and what is expected.
            pub fn new(value: impl Into<String>) -> Result<Self, Error> {
                let value = value.into();
                $check(&value)?;
                Ok(Self(value))
            }

            /// The validated text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = Error;
            fn try_from(value: String) -> Result<Self, Error> {
                Self::new(value)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        #[cfg(feature = "schema")]
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string", "pattern": $pattern })
            }
        }
    };
}

validated_string!(
    /// A DNS-1035 label: Kubernetes object names, the cluster and Lustre instance ids.
    Name, check_name, "^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"
);
validated_string!(
    /// A Google Cloud project id.
    ProjectId, check_project_id, "^[a-z][-a-z0-9]{4,28}[a-z0-9]$"
);
validated_string!(
    /// A Google Cloud region, e.g. `us-east1`.
    Region, check_region, "^[a-z]+-[a-z]+[0-9]+$"
);
validated_string!(
    /// A Google Cloud zone, e.g. `us-east1-b`.
    Zone, check_zone, "^[a-z]+-[a-z]+[0-9]+-[a-z]$"
);
validated_string!(
    /// An IPv4 CIDR block, e.g. `203.0.113.7/32`.
    Cidr, check_cidr, "^([0-9]{1,3}\\.){3}[0-9]{1,3}/[0-9]{1,2}$"
);
impl Cidr {
    /// What a /0 to /7 block exposes, for the warnings about one.
    pub const WIDE_RISK: &'static str = "it lets 33 million or more addresses (all of the internet for /0) reach the cluster's control plane, where anyone can probe it and try stolen credentials";

    /// The prefix length: 32 is one address, 0 all of them.
    pub fn prefix_len(&self) -> u8 {
        self.0.rsplit('/').next().and_then(|bits| bits.parse().ok()).unwrap_or(32)
    }

    /// Whether it is a /0 to /7 block ([`Cidr::WIDE_RISK`]).
    pub fn is_wide(&self) -> bool {
        self.prefix_len() <= 7
    }
}

validated_string!(
    /// The name of an environment variable.
    EnvName, check_env_name, "^[A-Za-z_][A-Za-z0-9_]*$"
);
validated_string!(
    /// A token safe in every rendered language: image references, model and dataset names.
    Word, check_word, "^[A-Za-z0-9_./:@+-]+$"
);
validated_string!(
    /// A NeMo-RL recipe key as a Hydra override names it, e.g. `grpo.val_period` or `+logger.x`.
    OverrideKey, check_override_key, "^\\+{0,2}[A-Za-z_][A-Za-z0-9_-]*(\\.[A-Za-z0-9_-]+)*$"
);
validated_string!(
    /// An absolute path inside the containers.
    AbsPath, check_path, "^/[A-Za-z0-9_./:@+-]*$"
);
validated_string!(
    /// A folder of a Cloud Storage bucket, `gs://BUCKET/PATH/`.
    GcsPath, check_gcs_path, "^gs://[a-z0-9][a-z0-9._-]{1,221}[a-z0-9]/([A-Za-z0-9_.:@+-]+/)*$"
);
validated_string!(
    /// A checkpoint in a bucket, `gs://BUCKET/PATH/step_N/`, as `gke-rl export` writes it.
    CheckpointUri, check_checkpoint_uri, "^gs://[a-z0-9][a-z0-9._-]{1,221}[a-z0-9]/([A-Za-z0-9_.:@+-]+/)*step_[0-9]+/$"
);
validated_string!(
    /// A Kubernetes resource quantity, e.g. `32`, `500m`, `1000Gi`.
    Quantity, check_quantity, "^\\+?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+|n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
);

impl Cidr {
    /// Whether `address` lies in this block.
    pub fn contains(&self, address: core::net::Ipv4Addr) -> bool {
        let (network, bits) = self.0.split_once('/').expect("a validated CIDR has a `/`");
        let network: core::net::Ipv4Addr = network.parse().expect("a validated CIDR has an IPv4 address");
        let bits: u32 = bits.parse().expect("a validated CIDR has a prefix length");
        let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
        u32::from(address) & mask == u32::from(network) & mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_contain_their_addresses_only() {
        let contains = |cidr: &str, address: [u8; 4]| Cidr::new(cidr).unwrap().contains(address.into());
        assert!(contains("203.0.113.7/32", [203, 0, 113, 7]));
        assert!(!contains("203.0.113.7/32", [203, 0, 113, 8]));
        assert!(contains("203.0.113.0/24", [203, 0, 113, 200]));
        assert!(!contains("203.0.113.0/24", [203, 0, 114, 1]));
        assert!(contains("0.0.0.0/0", [198, 51, 100, 9]));
        assert!(contains("10.1.2.3/8", [10, 200, 0, 1]), "host bits of the block are ignored");
    }

    #[test]
    fn names_follow_dns_1035() {
        assert!(Name::new("ray-a4-gpu-spot").is_ok());
        for bad in ["", "Ray", "1ray", "ray-", "ray_a4", &"a".repeat(64)] {
            assert!(Name::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn gcp_locations_and_cidrs() {
        assert!(Region::new("us-east1").is_ok());
        assert!(Zone::new("us-east1-b").is_ok());
        assert!(Region::new("us-east1-b").is_err());
        assert!(Zone::new("us-east1").is_err());
        assert!(Cidr::new("0.0.0.0/0").is_ok());
        for bad in ["1.2.3.4", "1.2.3/8", "256.1.1.1/32", "1.2.3.4/33", "<YOUR-IP-ADDRESS>/32"] {
            assert!(Cidr::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn placeholders_are_named_as_such() {
        assert_eq!(Word::new("{{MODEL}}").unwrap_err().to_string(), "`{{MODEL}}` is a placeholder, not a value");
    }

    #[test]
    fn quantities() {
        // apimachinery's grammar: `.5`, `5.`, a `+` sign and an exponent are quantities.
        for good in ["8", "0.5", "500m", "64Gi", "1000Gi", ".5", "5.", "+1", "2.5e-1", "1E3"] {
            assert!(Quantity::new(good).is_ok(), "{good:?}");
        }
        for bad in ["", "Gi", "8 Gi", "1.2.3", "8gb", ".", "-1", "1e", "inf", "1e400"] {
            assert!(Quantity::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn paths_are_absolute_and_plain() {
        assert!(AbsPath::new("/lustre/huggingface_cache").is_ok());
        for bad in ["lustre", "/a b", "/$HOME", "/a\"b"] {
            assert!(AbsPath::new(bad).is_err(), "{bad:?}");
        }
    }
}

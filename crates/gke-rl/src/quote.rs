//! Quoting for the three languages the artifacts are written in: YAML, POSIX sh and Hydra
//! override values. Each function returns text that its reader parses back to exactly `s`.

/// Characters that need no quoting in any of the three languages. Validated words
/// (`model::Word`, `model::AbsPath`) are made of these only.
pub(crate) fn is_plain_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':' | '@' | '+')
}

/// Words that YAML 1.1 or 1.2 readers (PyYAML, Go's yaml.v2) resolve to booleans or null.
fn is_yaml_keyword(s: &str) -> bool {
    matches!(s.to_ascii_lowercase().as_str(), "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n" | "null" | "~")
}

/// A YAML scalar for the string `s`: plain when every reader agrees it is that string,
/// otherwise double-quoted (a JSON string is a valid YAML double-quoted scalar).
pub fn yaml(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars().all(is_plain_char)
        && s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '/')
        && !s.contains(": ")
        && !s.ends_with(':')
        && !is_yaml_keyword(s);
    if plain { s.to_owned() } else { serde_json::to_string(s).expect("a string serializes") }
}

/// A POSIX shell word for the string `s`: bare when safe, otherwise single-quoted.
pub fn sh(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| is_plain_char(c) || c == '=' || c == ',') && !s.starts_with('=') {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r#"'\''"#))
    }
}

/// A Hydra override value that Hydra parses as the string `s`. Hydra turns unquoted
/// `true`, `null`, `8` or `1e3` into other types, so such strings are single-quoted.
pub fn hydra_string(s: &str) -> String {
    let keyword = matches!(s.to_ascii_lowercase().as_str(), "true" | "false" | "null" | "inf" | "-inf" | "nan");
    let numeric = s.parse::<f64>().is_ok();
    if !s.is_empty() && s.chars().all(is_plain_char) && !keyword && !numeric {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\\', r"\\").replace('\'', r"\'"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_quotes_what_readers_would_retype() {
        assert_eq!(yaml("nvidia-b200"), "nvidia-b200");
        assert_eq!(yaml("nvcr.io/nvidia/nemo-rl:v0.4.0"), "nvcr.io/nvidia/nemo-rl:v0.4.0");
        for retyped in ["0.0.0.0", "8", "yes", "Off", "null", "", "a: b", "key:", "2.46.0"] {
            assert!(yaml(retyped).starts_with('"'), "{retyped} must be quoted");
        }
        assert_eq!(yaml("it's \"x\"\n"), r#""it's \"x\"\n""#);
    }

    #[test]
    fn sh_round_trips_through_bash_quoting_rules() {
        assert_eq!(sh("us-east1"), "us-east1");
        assert_eq!(sh(""), "''");
        assert_eq!(sh("a b"), "'a b'");
        assert_eq!(sh("it's"), r#"'it'\''s'"#);
        assert_eq!(sh("$HOME"), "'$HOME'");
    }

    #[test]
    fn hydra_quotes_strings_that_would_parse_as_other_types() {
        assert_eq!(hydra_string("Qwen/Qwen2.5-72B-Instruct"), "Qwen/Qwen2.5-72B-Instruct");
        assert_eq!(hydra_string("20"), "'20'");
        assert_eq!(hydra_string("True"), "'True'");
        assert_eq!(hydra_string("1e3"), "'1e3'");
        assert_eq!(hydra_string("val:accuracy"), "val:accuracy");
    }
}

//! Quoting for the three languages the artifacts are written in: YAML, POSIX sh and Hydra
//! override values. Each function returns text that its reader parses back to exactly `s`.
//! And byte sizes as people read them.

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
    if plain {
        return s.to_owned();
    }
    let quoted = serde_json::to_string(s).expect("a string serializes");
    // JSON leaves NEL, LS and PS as they are; Kubernetes' YAML 1.1 reader takes them as line
    // breaks (and folds them): written as escapes, every reader gets the string.
    if quoted.contains(['\u{85}', '\u{2028}', '\u{2029}']) {
        quoted.replace('\u{85}', "\\u0085").replace('\u{2028}', "\\u2028").replace('\u{2029}', "\\u2029")
    } else {
        quoted
    }
}

/// A POSIX shell word for the string `s`: bare when safe, otherwise single-quoted.
pub fn sh(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| is_plain_char(c) || c == '=' || c == ',') && !s.starts_with('=') {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r#"'\''"#))
    }
}

/// A POSIX shell command line that runs `words`, each one word: what the shell reads back
/// with [`words`], whatever they hold (`$(…)`, quotes, spaces).
///
/// ```
/// use gke_rl::quote::{command, words};
/// let argv = ["python3", "check.py", "--dir", "/data$x/$(id)"];
/// assert_eq!(words(&command(&argv)), Some(argv.map(String::from).to_vec()));
/// ```
pub fn command(words: &[impl AsRef<str>]) -> String {
    words.iter().map(|w| sh(w.as_ref())).collect::<Vec<_>>().join(" ")
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

/// The words of a POSIX shell command line as `sh` splits them, quotes and backslashes
/// removed (no expansion is done); `None` for an unclosed quote. The inverse of [`sh`].
///
/// ```
/// use gke_rl::quote::{sh, words};
/// assert_eq!(words(&format!("run --name {}", sh("it's a \"run\""))), Some(vec!["run".into(), "--name".into(), "it's a \"run\"".into()]));
/// assert_eq!(words("a 'b"), None);
/// ```
pub fn words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => words.extend(word.take()),
            '\'' => {
                let quoted = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => quoted.push(c),
                    }
                }
            }
            '"' => {
                let quoted = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('$' | '`' | '"' | '\\') => quoted.push(c),
                            '\n' => {}
                            c => quoted.extend(['\\', c]),
                        },
                        c => quoted.push(c),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(c) => word.get_or_insert_with(String::new).push(c),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Some(words)
}

/// `512 B`, `1.5 KiB`, `8.8 TiB`.
pub fn bytes(n: f64) -> String {
    let mut value = n.max(0.0);
    if value < 1024.0 {
        return format!("{value:.0} B");
    }
    let mut unit = "B";
    for bigger in ["KiB", "MiB", "GiB", "TiB", "PiB"] {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = bigger;
    }
    format!("{value:.1} {unit}")
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
        assert_eq!(yaml("a\u{85}b\u{2028}c\u{2029}"), r#""a\u0085b\u2028c\u2029""#, "no reader takes them as line ends");
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

//! Secret values: the shapes of well-known tokens and the names of the variables that hold
//! them. The rules use them to find secrets written into files; the front ends, to keep
//! secrets out of what they print.

use std::borrow::Cow;
use std::ops::Range;

/// Variables that hold secrets, whatever a config calls its own.
pub const WELL_KNOWN_NAMES: &[&str] = &["HF_TOKEN", "WANDB_API_KEY", "HUGGING_FACE_HUB_TOKEN", "HF_API_TOKEN", "GITHUB_TOKEN", "GH_TOKEN"];

/// Files that hold credentials wherever they are found (gitignore syntax). The rendered
/// `.rayignore` lists them, and gke-rl's packager leaves them out of every upload unless told
/// otherwise, so a working dir that holds a home folder's copy does not carry it to the cluster.
pub const CREDENTIAL_FILES: &[&str] = &[
    ".ssh/",
    ".aws/",
    ".azure/",
    ".gnupg/",
    ".kube/",
    ".huggingface/",
    ".kaggle/",
    "**/.config/gcloud/",
    "**/.config/gh/",
    "**/.cache/huggingface/token",
    "**/.docker/config.json",
    "**/.cargo/credentials*",
    "id_rsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "id_dsa*",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".vault-token",
    ".git-credentials",
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*credentials*.json",
    "*service-account*.json",
];

/// What replaces a secret in printed text.
pub const REDACTED: &str = "<redacted>";

/// A token found in text: where, and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// Byte range of the secret part (for a URL, the password only).
    pub range: Range<usize>,
    /// What it is, e.g. "a Hugging Face token".
    pub kind: &'static str,
}

/// A token's shape: a prefix, then at least `minimum` characters `body` allows.
struct Shape {
    prefix: &'static str,
    kind: &'static str,
    body: fn(char) -> bool,
    minimum: usize,
}

const fn shape(prefix: &'static str, kind: &'static str, body: fn(char) -> bool, minimum: usize) -> Shape {
    Shape { prefix, kind, body, minimum }
}

const SHAPES: &[Shape] = &[
    shape("hf_", "a Hugging Face token", |c| c.is_ascii_alphanumeric(), 20),
    shape("github_pat_", "a GitHub token", |c| c.is_ascii_alphanumeric() || c == '_', 40),
    shape("ghp_", "a GitHub token", |c| c.is_ascii_alphanumeric(), 30),
    shape("gho_", "a GitHub token", |c| c.is_ascii_alphanumeric(), 30),
    shape("ghu_", "a GitHub token", |c| c.is_ascii_alphanumeric(), 30),
    shape("ghs_", "a GitHub token", |c| c.is_ascii_alphanumeric(), 30),
    shape("ghr_", "a GitHub token", |c| c.is_ascii_alphanumeric(), 30),
    // Google OAuth access tokens (gcloud's, gke-gcloud-auth-plugin's): `ya29.` then base64url
    // with dots.
    shape("ya29.", "a Google access token", |c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'), 20),
];

/// Every token in `text` by its shape alone: Hugging Face, GitHub and Google access tokens, and
/// passwords in URLs (`scheme://user:password@host`).
pub fn tokens(text: &str) -> Vec<Token> {
    let mut found = Vec::new();
    // The tokens found so far as disjoint spans (start to end), so that whether a match lies
    // inside one is a lookup, and text of many tokens costs O(n log n), not O(n²).
    let mut covered: std::collections::BTreeMap<usize, usize> = std::collections::BTreeMap::new();
    let starts_word = |i: usize| !text[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
    // Most values are too short for any token: their bodies are ASCII, so bytes bound them.
    for shape in SHAPES.iter().filter(|shape| text.len() >= shape.prefix.len() + shape.minimum) {
        for (start, _) in text.match_indices(shape.prefix).filter(|(i, _)| starts_word(*i)) {
            if covered.range(..=start).next_back().is_some_and(|(_, end)| start < *end) {
                continue;
            }
            let body = text[start + shape.prefix.len()..].chars().take_while(|c| (shape.body)(*c)).count();
            if body >= shape.minimum {
                let range = start..start + shape.prefix.len() + body;
                cover(&mut covered, range.clone());
                found.push(Token { range, kind: shape.kind });
            }
        }
    }
    for (scheme_end, _) in text.match_indices("://") {
        let rest = &text[scheme_end + 3..];
        let authority = &rest[..rest.find(|c: char| c == '/' || c.is_whitespace() || "\"'`<>".contains(c)).unwrap_or(rest.len())];
        if let Some((credentials, _host)) = authority.rsplit_once('@')
            && let Some((user, password)) = credentials.split_once(':')
            && !password.is_empty()
            // A reference (`${HF_TOKEN}`) or a template's placeholder is where a token goes, not one.
            && !password.starts_with('$')
            && !password.starts_with("{{")
        {
            let start = scheme_end + 3 + user.len() + 1;
            found.push(Token { range: start..start + password.len(), kind: "a password in a URL" });
        }
    }
    found.sort_by_key(|t| t.range.start);
    found
}

/// Whether a variable called `name` holds a secret by its name: a well-known one, or one
/// whose name ends in TOKEN, API_KEY, ACCESS_KEY, SECRET_KEY, PRIVATE_KEY, CLIENT_SECRET or
/// PASSWORD.
/// Names of other variables' names (`…_ENV`, `…_NAME`) and counts (`max_tokens`) are not.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    WELL_KNOWN_NAMES.contains(&upper.as_str())
        || ["TOKEN", "API_KEY", "APIKEY", "ACCESS_KEY", "SECRET_KEY", "PRIVATE_KEY", "CLIENT_SECRET", "PASSWORD", "PASSWD"]
            .iter()
            .any(|end| upper.ends_with(end))
}

/// What secret `value` is, held by a variable called `name` (empty: no name): a token by its
/// shape, a W&B API key (40 hex digits) in a variable named for W&B, or any value of a
/// variable [`is_secret_name`] (or one of `extra_names`, a config's own names) says holds one.
pub fn secret_value(name: &str, value: &str, extra_names: &[&str]) -> Option<&'static str> {
    let value = value.trim();
    // A reference (`$HF_TOKEN`) or a placeholder (`<the value of $HF_TOKEN>`) is not a value.
    if value.is_empty() || value.starts_with('$') || value.starts_with('<') {
        return None;
    }
    if let Some(token) = tokens(value).first() {
        return Some(token.kind);
    }
    if is_placeholder(value) {
        return None;
    }
    let upper = name.to_ascii_uppercase();
    if upper.contains("WANDB") && is_wandb_key(value) {
        return Some("a W&B API key");
    }
    (is_secret_name(name) || extra_names.contains(&name)).then_some("a secret value")
}

/// A value that is wholly a placeholder: a template's `{{NAME}}`, or a help line's `…` after at
/// most a token's prefix (`hf_…`). A value cut short with `…` after more of it is not one.
pub fn is_placeholder(value: &str) -> bool {
    let template = value
        .strip_prefix("{{")
        .and_then(|rest| rest.strip_suffix("}}"))
        .map(str::trim)
        .is_some_and(|name| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.'));
    let elided = value.strip_suffix('…').is_some_and(|prefix| {
        prefix.is_empty()
            || (prefix.len() <= 5
                && prefix.ends_with(['_', '.', '-'])
                && prefix.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)))
    });
    template || elided
}

/// A W&B API key: 40 lowercase hex digits.
fn is_wandb_key(value: &str) -> bool {
    value.len() == 40 && value.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Adds `range` to disjoint spans, merging the ones it touches.
fn cover(spans: &mut std::collections::BTreeMap<usize, usize>, range: Range<usize>) {
    let (mut start, mut end) = (range.start, range.end);
    if let Some((&before, &before_end)) = spans.range(..=start).next_back()
        && before_end >= start
    {
        start = before;
        end = end.max(before_end);
    }
    let inside: Vec<usize> = spans.range(start..=end).map(|(s, _)| *s).collect();
    for key in inside {
        end = end.max(spans.remove(&key).unwrap_or(end));
    }
    spans.insert(start, end);
}

/// `text` with every secret replaced by [`REDACTED`]: tokens by their shape, passwords in URLs,
/// and the values given to secret names (`NAME=value`, `NAME: value`, `"NAME": "value"`).
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut ranges: Vec<Range<usize>> = tokens(text).into_iter().map(|t| t.range).collect();
    ranges.extend(assigned_secrets(text));
    if ranges.is_empty() {
        return Cow::Borrowed(text);
    }
    ranges.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    for range in ranges {
        if range.start < done {
            done = done.max(range.end);
            continue;
        }
        out.push_str(&text[done..range.start]);
        out.push_str(REDACTED);
        done = range.end;
    }
    out.push_str(&text[done..]);
    Cow::Owned(out)
}

/// The values of `NAME=value`, `NAME: value` and `"NAME": "value"` in `text` where `NAME` holds
/// a secret (by [`secret_value`]); shell operators such as `${NAME:?message}` are not values.
fn assigned_secrets(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let is_name_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        if !(bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') || (i > 0 && is_name_byte(bytes[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && is_name_byte(bytes[i]) {
            i += 1;
        }
        let name = &text[start..i];
        // Variable names (`HF_TOKEN`, `hf_token`, `TOKEN`), not words of a sentence ("credentials: gcloud …").
        if !(name.contains('_') || name.bytes().all(|b| !b.is_ascii_lowercase())) {
            continue;
        }
        let mut j = i;
        if j < bytes.len() && (bytes[j] == b'"' || bytes[j] == b'\'') {
            j += 1;
        }
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        let separated = j < bytes.len() && (bytes[j] == b'=' || bytes[j] == b':');
        if !separated || bytes.get(j + 1).is_some_and(|b| b"?-=+".contains(b)) {
            continue;
        }
        j += 1;
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        let quote = bytes.get(j).copied().filter(|b| *b == b'"' || *b == b'\'');
        if quote.is_some() {
            j += 1;
        }
        let value_end = text[j..]
            .find(|c: char| c.is_whitespace() || quote.is_some_and(|q| c == char::from(q)) || (quote.is_none() && ",;}]`".contains(c)))
            .map_or(text.len(), |end| j + end);
        let value = &text[j..value_end];
        if value != REDACTED && secret_value(name, value, &[]).is_some() {
            found.push(j..value_end);
        }
        i = value_end.max(i);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 32, item 8: examples and placeholders are shown as written, values are not.
    #[test]
    fn placeholders_and_examples_are_not_secrets() {
        for text in ["export HF_TOKEN=…", "HF_TOKEN=hf_… gke-rl submit", "HF_TOKEN=\"{{HF_TOKEN}}\"", "HF_TOKEN=<your token>"] {
            assert_eq!(redact(text), text);
        }
        assert_eq!(redact("export HF_TOKEN=plain-value"), format!("export HF_TOKEN={REDACTED}"));
        // A value cut short (a server's message cut at its bound) is still a value.
        for cut in ["'WANDB_API_KEY': '0123abcd…", "HF_TOKEN=abc{{x}}def", "HF_TOKEN=s3cr…"] {
            assert!(redact(cut).contains(REDACTED), "{cut}");
        }
    }

    /// Issue 31, item 8's sibling: text of many tokens (a credential plugin's 16 MiB of
    /// output) is redacted in O(n log n); each match was checked against every token before.
    #[test]
    fn many_tokens_are_found_in_near_linear_time() {
        let text = "hf_AbCdEfGhIjKlMnOpQrStUv ".repeat(200_000);
        assert_eq!(tokens(&text).len(), 200_000);
        assert_eq!(redact(&text).matches(REDACTED).count(), 200_000);
        // A run of prefixes inside one token's body: one token, each prefix skipped at once.
        let run = format!("ya29.{}", "-ya29.".repeat(500_000));
        assert_eq!(tokens(&run).len(), 1);
        // Spans that touch or nest merge into one.
        let mut spans = std::collections::BTreeMap::new();
        for range in [10..20, 30..40, 15..32, 50..60, 0..5, 5..10] {
            cover(&mut spans, range);
        }
        assert_eq!(spans.into_iter().collect::<Vec<_>>(), [(0, 40), (50, 60)]);
    }

    const HF: &str = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345";

    #[test]
    fn tokens_by_shape() {
        fn kinds(text: &str) -> Vec<(&str, &'static str)> {
            tokens(text).into_iter().map(|t| (&text[t.range], t.kind)).collect()
        }
        assert_eq!(kinds(&format!("x {HF} y")), [(HF, "a Hugging Face token")]);
        assert_eq!(kinds("ghp_0123456789abcdefghij0123456789abcdef"), [("ghp_0123456789abcdefghij0123456789abcdef", "a GitHub token")]);
        assert_eq!(kinds("https://me:s3cret@pypi.example.com/simple"), [("s3cret", "a password in a URL")]);
        assert!(kinds("hf_token_env: MY_HF, xhf_AbCdEfGhIjKlMnOpQrStUvWxYz, https://example.com/a:b@c").is_empty());
    }

    #[test]
    fn secret_values_by_name_and_shape() {
        assert_eq!(secret_value("WANDB_API_KEY", "0123456789abcdef0123456789abcdef01234567", &[]), Some("a W&B API key"));
        assert_eq!(secret_value("MY_WANDB", "0123456789abcdef0123456789abcdef01234567", &[]), Some("a W&B API key"));
        assert_eq!(secret_value("COMMIT", "0123456789abcdef0123456789abcdef01234567", &[]), None, "a commit id is not a key");
        assert_eq!(secret_value("MY_HF", "anything", &["MY_HF"]), Some("a secret value"));
        assert_eq!(secret_value("HF_TOKEN", "${HF_TOKEN}", &[]), None, "a reference");
        assert_eq!(secret_value("HF_TOKEN_ENV", "MY_HF", &[]), None, "the name of a variable");
        assert_eq!(secret_value("max_new_tokens", "512", &[]), None);
    }

    #[test]
    fn redaction_keeps_everything_but_the_secret() {
        assert_eq!(redact("export HF_TOKEN=\"hf_abc\"  # mine"), "export HF_TOKEN=\"<redacted>\"  # mine");
        assert_eq!(redact(&format!("{{\"HF_TOKEN\": \"x\", \"B\": \"{HF}\"}}")), "{\"HF_TOKEN\": \"<redacted>\", \"B\": \"<redacted>\"}");
        assert_eq!(redact("pip from https://u:pw@host/x"), "pip from https://u:<redacted>@host/x");
        assert_eq!(redact("WANDB_API_KEY: 0123456789abcdef0123456789abcdef01234567"), "WANDB_API_KEY: <redacted>");
        let kept = ": \"${HF_TOKEN:?is not set}\" hf_token_env: MY_HF max_new_tokens=512 key: HF_TOKEN HF_TOKEN: <the value of $HF_TOKEN> \
                    refresh the token: gcloud auth login";
        assert_eq!(redact(kept), kept);
    }
}

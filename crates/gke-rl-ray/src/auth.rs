//! The Ray token (Ray 2.52's token authentication): found where Ray's own CLI looks, sent as
//! `Authorization: Bearer`, and never shown: errors name where a token came from, never what
//! it is.

use std::ffi::OsString;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use gke_rl::auth::{TOKEN_HOME_FILE, TOKEN_PATH_VARIABLE, TOKEN_VARIABLE};

use crate::Error;
use crate::token_source::TokenSource;

/// The most gke-rl reads of a token file (Ray's tokens are 64 characters).
const MAX_TOKEN_FILE_BYTES: u64 = 64 * 1024;

/// A Ray token and where it came from. Its `Debug` hides the value.
#[derive(Clone)]
pub struct Token {
    value: String,
    source: TokenSource,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token").field("source", &self.source).field("value", &"<hidden>").finish()
    }
}

impl Token {
    /// `value` without surrounding whitespace (Ray trims it too); `None` when nothing is left.
    /// A token a header cannot carry is refused.
    pub fn new(value: &str, source: TokenSource) -> Result<Option<Token>, Error> {
        let value = value.trim();
        if value.is_empty() {
            return Ok(None);
        }
        if !value.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(Error::BadToken { from: source.to_string() });
        }
        Ok(Some(Token { value: value.to_owned(), source }))
    }

    /// The token Ray's CLI would use: `RAY_AUTH_TOKEN`, else the file `RAY_AUTH_TOKEN_PATH`
    /// names (an error when it cannot be read or is empty, as in Ray), else `~/.ray/auth_token`
    /// under `home`. `variable` reads the environment.
    pub fn discover(variable: impl Fn(&str) -> Option<OsString>, home: Option<&Path>) -> Result<Option<Token>, Error> {
        if let Some(value) = variable(TOKEN_VARIABLE)
            && let Some(token) = Token::new(&value.to_string_lossy(), TokenSource::Variable)?
        {
            return Ok(Some(token));
        }
        if let Some(path) = variable(TOKEN_PATH_VARIABLE).filter(|p| !p.is_empty()) {
            let path = PathBuf::from(path);
            let source = TokenSource::PathVariable(path.clone());
            let text =
                read_token_file(&path)?.ok_or_else(|| Error::TokenFile { path: path.clone(), reason: "it does not exist".into() })?;
            return Token::new(&text, source)?.map(Some).ok_or(Error::TokenFile { path, reason: "it is empty".into() });
        }
        let Some(path) = home.map(|h| h.join(TOKEN_HOME_FILE)) else { return Ok(None) };
        match read_token_file(&path)? {
            Some(text) => Token::new(&text, TokenSource::HomeFile(path)),
            None => Ok(None),
        }
    }

    /// Where the token came from.
    pub fn source(&self) -> &TokenSource {
        &self.source
    }

    /// The value, for the one header (or Secret) that carries it.
    pub fn reveal(&self) -> &str {
        &self.value
    }
}

/// The first line of a token file, read within a bound; `None` when there is no file. Only a
/// regular file is opened: a named pipe would block the open.
fn read_token_file(path: &Path) -> Result<Option<String>, Error> {
    let failed = |reason: String| Error::TokenFile { path: path.to_owned(), reason };
    let metadata = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(failed(e.to_string())),
    };
    if !metadata.is_file() {
        return Err(failed("it is not a regular file".into()));
    }
    let file = std::fs::File::open(path).map_err(|e| failed(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_TOKEN_FILE_BYTES).read_to_end(&mut bytes).map_err(|e| failed(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| failed("it is not UTF-8 text".into()))?;
    Ok(Some(text.lines().next().unwrap_or_default().to_owned()))
}

/// Whether a header would carry a token: such headers are refused, since a header given on
/// the command line shows in `ps`.
pub(crate) fn is_authorization(name: &str) -> bool {
    name.eq_ignore_ascii_case("authorization") || name.eq_ignore_ascii_case("x-ray-authorization")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
    }

    #[test]
    fn tokens_are_found_where_rays_cli_looks_in_its_order() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".ray")).unwrap();
        std::fs::write(home.path().join(".ray/auth_token"), "home-token\n").unwrap();
        let file = home.path().join("token");
        std::fs::write(&file, "  path-token \nsecond line\n").unwrap();
        let path = file.to_str().unwrap();
        let found = |vars: &[(&str, &str)]| Token::discover(env(vars), Some(home.path())).unwrap().map(|t| (t.value.clone(), t.source));

        assert_eq!(found(&[("RAY_AUTH_TOKEN", "var"), ("RAY_AUTH_TOKEN_PATH", path)]), Some(("var".into(), TokenSource::Variable)));
        assert_eq!(
            found(&[("RAY_AUTH_TOKEN", " "), ("RAY_AUTH_TOKEN_PATH", path)]),
            Some(("path-token".into(), TokenSource::PathVariable(file.clone())))
        );
        assert_eq!(found(&[]), Some(("home-token".into(), TokenSource::HomeFile(home.path().join(".ray/auth_token")))));
        assert_eq!(Token::discover(env(&[]), Some(&home.path().join("nobody"))).unwrap().map(|t| t.value), None);
    }

    #[test]
    fn a_named_token_file_that_is_missing_empty_or_not_a_file_is_an_error_without_its_contents() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("empty"), "\n\n").unwrap();
        for (name, reason) in [("missing", "it does not exist"), ("empty", "it is empty"), (".", "it is not a regular file")] {
            let path = dir.path().join(name);
            let e = Token::discover(env(&[("RAY_AUTH_TOKEN_PATH", path.to_str().unwrap())]), None).unwrap_err();
            assert!(e.to_string().contains(reason), "{name}: {e}");
        }
        let e = Token::new("two\nlines", TokenSource::Variable).unwrap_err();
        assert!(!e.to_string().contains("lines"), "{e}");
    }

    #[test]
    fn the_debug_form_hides_the_value() {
        let token = Token::new("s3cr3t-value", TokenSource::Variable).unwrap().unwrap();
        assert!(!format!("{token:?}").contains("s3cr3t"), "{token:?}");
    }
}

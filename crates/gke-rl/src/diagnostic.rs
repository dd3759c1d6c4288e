//! Diagnostics: a positioned message with a fix, shared by every front end.

use std::fmt;

/// How bad a finding is; it serializes as [`Severity::as_str`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Informational: nothing to fix.
    Info,
    /// Likely a mistake; the artifacts still work.
    Warning,
    /// The artifacts would not work; nothing is written or deployed.
    Error,
}

impl Severity {
    /// `error`, `warning` or `info`: how the CLI, the JSON output and the browser name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl serde::Serialize for Severity {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finding about an input, pointing at the value to change.
///
/// `line` and `column` are 1-based and count characters, like editors do. The file name is not
/// part of the diagnostic: the SDK reads text, the caller knows where the text came from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// Stable kebab-case identifier, e.g. `config-unknown-key`.
    pub code: &'static str,
    /// How bad it is.
    pub severity: Severity,
    /// 1-based line of the offending value.
    pub line: u32,
    /// 1-based column of the offending value.
    pub column: u32,
    /// What is wrong, lowercase, without a final period.
    pub message: String,
    /// How to fix it.
    pub help: String,
}

impl Diagnostic {
    /// An error at `line:column`.
    pub fn error(code: &'static str, (line, column): (u32, u32), message: impl Into<String>, help: impl Into<String>) -> Self {
        Self { code, severity: Severity::Error, line, column, message: message.into(), help: help.into() }
    }

    /// A warning at `line:column`.
    pub fn warning(code: &'static str, (line, column): (u32, u32), message: impl Into<String>, help: impl Into<String>) -> Self {
        Self { severity: Severity::Warning, ..Self::error(code, (line, column), message, help) }
    }
}

/// `bytes` as text, or a `syntax` error at the first byte that is not UTF-8 (its line, and
/// its column counted in characters like every other position).
pub fn utf8(bytes: &[u8]) -> Result<&str, Diagnostic> {
    let error = match std::str::from_utf8(bytes) {
        Ok(text) => return Ok(text),
        Err(error) => error,
    };
    let valid = std::str::from_utf8(&bytes[..error.valid_up_to()]).expect("valid up to here");
    let line = valid.matches('\n').count() + 1;
    let column = valid.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    let at = (u32::try_from(line).unwrap_or(u32::MAX), u32::try_from(column).unwrap_or(u32::MAX));
    let byte = bytes[error.valid_up_to()];
    Err(Diagnostic::error(
        "syntax",
        at,
        format!("not UTF-8 text: byte 0x{byte:02x} does not start a character here"),
        "save the file as UTF-8 (text files of a deployment are UTF-8)",
    ))
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for Diagnostic {}

#[cfg(test)]
mod tests {
    #[test]
    fn utf8_errors_point_at_the_line_and_character() {
        assert_eq!(super::utf8(b"a: 1\n").unwrap(), "a: 1\n");
        let e = super::utf8(b"a: 1\nb: \xc3\xa9\xff\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("syntax", 2, 5));
        assert!(e.message.contains("0xff"), "{}", e.message);
    }
}

//! What reaches the terminal: secrets redacted and control characters escaped in every
//! human-readable message (job logs excepted: they are the job's own output), and stdout that
//! ends quietly when its reader goes away.

use std::io::Write as _;

/// `text` as it may be shown: secrets replaced by `<redacted>`
/// ([`gke_rl::secrets::redact`]), and control characters other than newline and tab written
/// as `\u{…}`, so input files and server answers cannot move the cursor, retitle the
/// terminal or hide text.
pub fn shown(text: &str) -> String {
    let redacted = gke_rl::secrets::redact(text);
    let mut out = String::with_capacity(redacted.len());
    for c in redacted.chars() {
        if c.is_control() && c != '\n' && c != '\t' {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// Writes `text` to stdout. When the reader has gone (`gke-rl validate | head -1`), the process
/// ends quietly with status 0, as other Unix tools do, instead of panicking.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush())
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

/// [`out`] with a newline.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::terminal::out(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use outln;

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_control_characters_and_redacts_secrets() {
        assert_eq!(super::shown("a\u{1b}]0;pwned\u{7}b\r\n\tc"), "a\\u{1b}]0;pwned\\u{7}b\\u{d}\n\tc");
        assert_eq!(super::shown("HF_TOKEN=hf_x"), "HF_TOKEN=<redacted>");
    }
}

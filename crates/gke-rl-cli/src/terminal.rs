//! What reaches the terminal: secrets redacted and control characters escaped in every
//! human-readable message (job logs excepted: they are the job's own output), and stdout that
//! ends quietly when its reader goes away.

use std::io::Write as _;

/// `text` as it may be shown: secrets replaced by `<redacted>`
/// ([`gke_rl::secrets::redact`]), and control characters other than newline and tab, and the
/// bidirectional overrides and isolates (U+202E and the like), written as `\u{…}`, so input
/// files and server answers cannot move the cursor, retitle the terminal, or reorder or hide
/// text.
pub fn shown(text: &str) -> String {
    let redacted = gke_rl::secrets::redact(text);
    let mut out = String::with_capacity(redacted.len());
    let bidi = |c: char| matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    for c in redacted.chars() {
        if (c.is_control() && c != '\n' && c != '\t') || bidi(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// Writes `text` to stdout. When the reader has gone (`gke-rl validate | head -1`), the process
/// ends quietly with status 0, as other Unix tools do, instead of panicking. Any other failure
/// (`>/dev/full`, a closed stdout) ends it with status 2 and the reason: output that was asked
/// for and not written is an error, never a success.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            err(&format!("error: cannot write to stdout: {e}\n"));
            std::process::exit(2);
        }
    }
}

/// Writes `text` to stderr, ignoring failure: a closed or full stderr has no one to tell, and
/// must not turn a finished command into a panic (`eprintln!` panics there).
pub fn err(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// [`out`] with a newline.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::terminal::out(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use outln;

/// [`err`] with a newline: `eprintln!` that never panics.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::terminal::err(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use errln;

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_control_characters_and_redacts_secrets() {
        assert_eq!(super::shown("a\u{1b}]0;pwned\u{7}b\r\n\tc"), "a\\u{1b}]0;pwned\\u{7}b\\u{d}\n\tc");
        assert_eq!(super::shown("HF_TOKEN=hf_x"), "HF_TOKEN=<redacted>");
        assert_eq!(super::shown("ok \u{202e}gpj.exe\u{2069}"), "ok \\u{202e}gpj.exe\\u{2069}");
    }
}

//! Printing diagnostics rustc-style: code, message, `file:line:column`, the source line with
//! a caret under the offending value, and the fix.

use std::fmt;
use std::path::Path;

use gke_rl::Diagnostic;

use crate::terminal::shown;

/// A diagnostic about a file, ready to print.
pub struct Located<'a> {
    pub file: &'a Path,
    pub source: &'a str,
    pub diagnostic: &'a Diagnostic,
}

impl fmt::Display for Located<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.diagnostic;
        writeln!(f, "{}[{}]: {}", d.severity, d.code, shown(&d.message))?;
        let number = d.line.to_string();
        let gutter = " ".repeat(number.len());
        writeln!(f, "{gutter}--> {}:{}:{}", shown(&self.file.display().to_string()), d.line, d.column)?;
        if let Some(line) = self.source.lines().nth(d.line.saturating_sub(1) as usize) {
            // The caret goes under the value as shown: after redaction and escaping.
            let prefix: String = line.chars().take(d.column.saturating_sub(1) as usize).collect();
            let before: String = shown(&prefix).chars().map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
            let line = shown(line);
            let width = line.chars().skip(before.chars().count()).take_while(|c| !c.is_whitespace()).count().max(1);
            writeln!(f, "{gutter} |")?;
            writeln!(f, "{number} | {line}")?;
            writeln!(f, "{gutter} | {before}{}", "^".repeat(width))?;
        }
        write!(f, "{gutter} = help: {}", shown(&d.help))
    }
}

/// An error that has already been rendered for the terminal.
#[derive(Debug)]
pub struct Reported(pub String);

impl fmt::Display for Reported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Reported {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_and_control_characters_never_reach_the_terminal() {
        let d = Diagnostic::warning("env-sh-secret-ignored", (1, 17), "HF_TOKEN holds a secret value", "delete this line");
        let source = "export HF_TOKEN=\"hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345\" \u{1b}[2J\n";
        let text = Located { file: Path::new("env.sh"), source, diagnostic: &d }.to_string();
        assert!(text.contains("1 | export HF_TOKEN=\"<redacted>\" \\u{1b}[2J\n  |                 ^^^^^^^^^^^^"), "{text}");
        assert!(!text.contains("hf_AbC") && !text.contains('\u{1b}'), "{text}");
    }

    #[test]
    fn points_at_the_value_with_a_caret() {
        let d = Diagnostic::error("config-unknown-key", (2, 3), "unknown field `capacity_gb`", "did you mean `capacity_gib`?");
        let text = Located { file: Path::new("gke-rl.yaml"), source: "lustre:\n  capacity_gb: 9000\n", diagnostic: &d }.to_string();
        assert_eq!(
            text,
            "error[config-unknown-key]: unknown field `capacity_gb`\n --> gke-rl.yaml:2:3\n  |\n2 |   capacity_gb: 9000\n  |   ^^^^^^^^^^^^\n  = help: did you mean `capacity_gib`?"
        );
    }
}

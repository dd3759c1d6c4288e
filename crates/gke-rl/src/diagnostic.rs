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
    /// The edit that fixes it, where the help is one (an editor offers it to apply).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<Box<Fix>>,
}

/// An edit of the finding's file: `text` in place of the characters from `line:column` up to
/// `end_line:end_column` (not included), which count as [`Diagnostic`]'s do. An empty range
/// inserts.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Fix {
    /// What it does, as a button says it.
    pub title: String,
    /// 1-based line where the replaced range starts.
    pub line: u32,
    /// 1-based column where it starts.
    pub column: u32,
    /// 1-based line where it ends.
    pub end_line: u32,
    /// 1-based column of the first character after it.
    pub end_column: u32,
    /// The text put in its place.
    pub text: String,
}

impl Fix {
    /// `replacement` in place of the one-line YAML scalar at `at` in `text`, plain or quoted
    /// without escapes, whose value is `value`; `None` when the text there is anything else (an
    /// empty value, an alias, a block or multi-line scalar, one inside a flow collection), so a
    /// fix never edits what the finding is not about.
    pub fn replace_scalar(text: &str, at: (u32, u32), value: &str, replacement: String, title: String) -> Option<Fix> {
        let (_, line, start) = locate(text, at)?;
        let line = line.strip_suffix('\r').unwrap_or(line);
        // A value on its key's or entry's line: a block scalar's text, a flow list's item or a
        // merged entry is not the scalar to edit.
        if !line.get(..start)?.trim_end().ends_with([':', '-']) {
            return None;
        }
        let scalar = &line[start..];
        let (written, decoded) = match scalar.chars().next()? {
            '\'' => {
                // The closing quote: the first one that is not half of an escaped `''`.
                let mut chars = scalar.char_indices().skip(1).peekable();
                let end = loop {
                    match chars.next()? {
                        (_, '\'') if chars.peek().is_some_and(|&(_, next)| next == '\'') => {
                            chars.next();
                        }
                        (i, '\'') => break i,
                        _ => {}
                    }
                };
                (&scalar[..=end], scalar[1..end].replace("''", "'"))
            }
            '"' => {
                let end = scalar[1..].find('"')? + 1;
                let inner = &scalar[1..end];
                if inner.contains('\\') {
                    return None;
                }
                (&scalar[..=end], inner.to_owned())
            }
            ':' | '*' | '&' | '!' | '|' | '>' | '[' | '{' | '#' | '%' | '@' | '`' => return None,
            _ => {
                let comment = scalar.find(" #").into_iter().chain(scalar.find("\t#")).min().unwrap_or(scalar.len());
                let plain = scalar[..comment].trim_end();
                (plain, plain.to_owned())
            }
        };
        if decoded != value {
            return None;
        }
        let end_column = at.1.checked_add(u32::try_from(written.chars().count()).ok()?)?;
        Some(Fix { title, line: at.0, column: at.1, end_line: at.0, end_column, text: replacement })
    }

    /// `line` added as the last line of `text`, ended as its lines are (`\r\n` or `\n`).
    pub fn append_line(text: &str, line: &str, title: String) -> Fix {
        let lines = u32::try_from(text.lines().count()).unwrap_or(u32::MAX);
        let end = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let (at, text) = match text.ends_with('\n') || text.is_empty() {
            true => ((lines.saturating_add(1), 1), format!("{line}{end}")),
            false => {
                let last = text.rsplit('\n').next().unwrap_or_default();
                ((lines, u32::try_from(last.chars().count() + 1).unwrap_or(u32::MAX)), format!("{end}{line}{end}"))
            }
        };
        Fix { title, line: at.0, column: at.1, end_line: at.0, end_column: at.1, text }
    }

    /// `text` with every edit of `fixes` made that fits: from the last to the first, so that each
    /// edit's place is still where it was found, leaving out any that overlaps one made or whose
    /// range is not in `text` (`validate --fix` runs again for those). The text, and the edits
    /// made, in the order of the file.
    pub fn apply_all<'f>(text: &str, fixes: impl IntoIterator<Item = &'f Fix>) -> (String, Vec<&'f Fix>) {
        let mut fixes: Vec<&Fix> = fixes.into_iter().collect();
        fixes.sort_by_key(|f| std::cmp::Reverse((f.line, f.column, f.end_line, f.end_column)));
        let mut text = text.to_owned();
        let mut made: Vec<&Fix> = Vec::new();
        for fix in fixes {
            let overlaps = made.last().is_some_and(|next| (fix.end_line, fix.end_column) > (next.line, next.column));
            // The same edit offered by two findings is made once.
            let same = made.iter().any(|m| {
                (m.line, m.column, m.end_line, m.end_column, &m.text) == (fix.line, fix.column, fix.end_line, fix.end_column, &fix.text)
            });
            if overlaps || same {
                continue;
            }
            if let Some(fixed) = fix.apply(&text) {
                text = fixed;
                made.push(fix);
            }
        }
        made.reverse();
        (text, made)
    }

    /// `text` with this edit made; `None` when its range is not in `text`.
    pub fn apply(&self, text: &str) -> Option<String> {
        let offset = |at| locate(text, at).map(|(line_start, _, within)| line_start + within);
        let (start, end) = (offset((self.line, self.column))?, offset((self.end_line, self.end_column))?);
        (start <= end).then(|| format!("{}{}{}", &text[..start], self.text, &text[end..]))
    }
}

/// The 1-based `line:column` of `text` (lines end at `\n`; the column counts characters and may
/// be one past the line's last): where its line starts, the line without its `\n`, and the
/// column's byte index in it.
fn locate(text: &str, (line, column): (u32, u32)) -> Option<(usize, &str, usize)> {
    let line_index = usize::try_from(line).ok()?.checked_sub(1)?;
    let line_start = if line_index == 0 { 0 } else { text.match_indices('\n').nth(line_index - 1).map(|(i, _)| i + 1)? };
    let rest = &text[line_start..];
    let line_text = &rest[..rest.find('\n').unwrap_or(rest.len())];
    let column_index = usize::try_from(column).ok()?.checked_sub(1)?;
    let within = line_text.char_indices().map(|(i, _)| i).chain([line_text.len()]).nth(column_index)?;
    Some((line_start, line_text, within))
}

impl Diagnostic {
    /// An error at `line:column`.
    pub fn error(code: &'static str, (line, column): (u32, u32), message: impl Into<String>, help: impl Into<String>) -> Self {
        Self { code, severity: Severity::Error, line, column, message: message.into(), help: help.into(), fix: None }
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
    use super::Fix;

    #[test]
    fn fixes_are_made_last_first_and_one_that_overlaps_a_made_one_is_left() {
        let fix = |line, column, end_column, text: &str| Fix {
            title: String::new(),
            line,
            column,
            end_line: line,
            end_column,
            text: text.to_owned(),
        };
        let text = "a: 1\nb: 2\n";
        let (a, b, over_b, insert) = (fix(1, 4, 5, "10"), fix(2, 4, 5, "20"), fix(2, 1, 5, "c: 3"), fix(3, 1, 1, "d: 4\n"));
        let (fixed, made) = Fix::apply_all(text, [&a, &b, &over_b, &insert, &b]);
        assert_eq!(fixed, "a: 10\nb: 20\nd: 4\n");
        assert_eq!(made, vec![&a, &b, &insert]);
    }

    /// A scalar's fix replaces exactly the scalar whose value the finding is about, and is not
    /// offered where the text there is anything else.
    #[test]
    fn scalar_fixes_replace_exactly_the_scalar_or_are_not_offered() {
        let fixed = |text: &str, at: (u32, u32), value: &str| {
            Fix::replace_scalar(text, at, value, "X".to_owned(), "t".to_owned()).and_then(|fix| fix.apply(text))
        };
        assert_eq!(fixed("a: 'it''s' # c\n", (1, 4), "it's").as_deref(), Some("a: X # c\n"));
        assert_eq!(fixed("a: ''''\n", (1, 4), "'").as_deref(), Some("a: X\n"));
        assert_eq!(fixed("a: \"v w\"\n", (1, 4), "v w").as_deref(), Some("a: X\n"));
        assert_eq!(fixed("a: v w  # c\n", (1, 4), "v w").as_deref(), Some("a: X  # c\n"));
        assert_eq!(fixed("é: 'v'\r\nb: 1\r\n", (1, 4), "v").as_deref(), Some("é: X\r\nb: 1\r\n"));
        assert_eq!(fixed("- 😀: v\n", (1, 6), "v").as_deref(), Some("- 😀: X\n"));
        assert_eq!(fixed("- 'v'\n", (1, 3), "v").as_deref(), Some("- X\n"));
        let refused = [
            ("a:\n", (1, 2), ""),
            ("a: # c\n", (1, 2), ""),
            ("a: [t, v]\n", (1, 8), "v"),
            ("a: {k: v}\n", (1, 8), "v"),
            ("a: |\n  v\n  w\n", (2, 3), "v\nw\n"),
            ("a: |-\n  v\n", (2, 3), "v"),
            ("a: >-\n  v\n", (2, 3), "v"),
            ("a: ['v']\n", (1, 5), "v"),
            ("a: v\n  w\n", (1, 4), "v w"),
            ("a: *x\n", (1, 4), "v"),
            ("a: \"\\u0076\"\n", (1, 4), "v"),
            ("a: 'v\n  w'\n", (1, 4), "v w"),
            ("a: v\n", (1, 9), "v"),
            ("a: v\n", (3, 1), "v"),
            ("a: v\n", (0, 0), "v"),
            ("a: v\r\n", (1, 6), ""),
            ("v\n", (1, 1), "v"),
            ("a: vw\n", (1, 4), "v"),
        ];
        for (text, at, value) in refused {
            assert_eq!(Fix::replace_scalar(text, at, value, "X".to_owned(), "t".to_owned()), None, "{text:?} at {at:?}");
        }
    }

    #[test]
    fn appended_lines_end_as_the_files_lines_do() {
        let appended = |text: &str| Fix::append_line(text, "x", "t".to_owned()).apply(text);
        assert_eq!(appended("").as_deref(), Some("x\n"));
        assert_eq!(appended("a\n").as_deref(), Some("a\nx\n"));
        assert_eq!(appended("a").as_deref(), Some("a\nx\n"));
        assert_eq!(appended("é\r\nb").as_deref(), Some("é\r\nb\r\nx\r\n"));
    }

    #[test]
    fn utf8_errors_point_at_the_line_and_character() {
        assert_eq!(super::utf8(b"a: 1\n").unwrap(), "a: 1\n");
        let e = super::utf8(b"a: 1\nb: \xc3\xa9\xff\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("syntax", 2, 5));
        assert!(e.message.contains("0xff"), "{}", e.message);
    }
}

//! A parser for the POSIX-sh subset people write in `env.sh`: comments, `export NAME=value`,
//! single and double quotes, `$NAME` and `${NAME}`, `${NAME:?message}` and `${NAME:-default}`.
//! Everything else — command substitution, control flow, pipes, `;` — is reported as
//! unsupported with its position. Nothing is ever executed.

use crate::diagnostic::Diagnostic;

/// One `[export] NAME=value` statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// Variable name.
    pub name: String,
    /// 1-based line and column of the name.
    pub name_at: (u32, u32),
    /// The value, as literal text and variable references.
    pub value: Vec<Part>,
    /// 1-based line and column where the value starts.
    pub value_at: (u32, u32),
}

/// A piece of a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Literal text, with quotes and escapes removed.
    Text(String),
    /// `$NAME` or `${NAME…}`.
    Var {
        /// The referenced variable.
        name: String,
        /// What happens when it is unset or empty.
        fallback: Fallback,
    },
}

/// The operator of a `${NAME…}` expansion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// `$NAME`, `${NAME}`: empty when unset.
    Empty,
    /// `${NAME:?message}`: the shell stops with `message` when unset.
    Required(String),
    /// `${NAME:-default}`: `default` when unset.
    Default(String),
}

const UNSUPPORTED_HELP: &str =
    "env.sh may only hold comments and `export NAME=value` lines; write the literal value (gke-rl reads env.sh, it never runs it)";

/// Shell words that start statements gke-rl does not evaluate.
const SHELL_KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "function", "source", "set", "unset",
    "alias", "eval", "exec", "cd", "echo", "printf", "read", "local", "declare", "readonly", "return", "exit",
];

struct Scanner {
    chars: Vec<char>,
    index: usize,
    line: u32,
    column: u32,
}

impl Scanner {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.index).copied()
    }

    fn peek_second(&self) -> Option<char> {
        self.chars.get(self.index + 1).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.index += 1;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn at(&self) -> (u32, u32) {
        (self.line, self.column)
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\r')) {
            self.bump();
        }
    }

    fn skip_comment(&mut self) {
        while !matches!(self.peek(), None | Some('\n')) {
            self.bump();
        }
    }

    fn name(&mut self) -> String {
        let mut name = String::new();
        while let Some(c) = self.peek().filter(|c| c.is_ascii_alphanumeric() || *c == '_') {
            name.push(c);
            self.bump();
        }
        name
    }
}

fn unsupported(at: (u32, u32), what: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error("env-sh-unsupported", at, format!("unsupported shell syntax: {what}"), UNSUPPORTED_HELP)
}

/// Parses `text` into its assignments, or the first syntax error.
pub fn parse(text: &str) -> Result<Vec<Assignment>, Diagnostic> {
    if let Some(at) = crlf_at(text) {
        return Err(crlf(at));
    }
    let mut s = Scanner { chars: text.chars().collect(), index: 0, line: 1, column: 1 };
    let mut assignments = Vec::new();
    loop {
        s.skip_blanks();
        match s.peek() {
            None => return Ok(assignments),
            Some('\n') => {
                s.bump();
            }
            Some('#') => s.skip_comment(),
            Some(_) => {
                if let Some(assignment) = statement(&mut s)? {
                    assignments.push(assignment);
                }
                end_of_statement(&mut s)?;
            }
        }
    }
}

fn statement(s: &mut Scanner) -> Result<Option<Assignment>, Diagnostic> {
    let start = s.at();
    let first = s.name();
    let exported = first == "export" && matches!(s.peek(), Some(' ' | '\t'));
    let (name, name_at) = if exported {
        s.skip_blanks();
        let at = s.at();
        (s.name(), at)
    } else {
        (first, start)
    };
    if SHELL_KEYWORDS.contains(&name.as_str()) && !exported {
        return Err(unsupported(start, format_args!("`{name}`")));
    }
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        let shown = s.peek().map_or_else(|| "end of input".to_owned(), |c| format!("`{c}`"));
        return Err(unsupported(name_at, format_args!("{shown} where `NAME=value` was expected")));
    }
    match s.peek() {
        Some('=') => {
            s.bump();
            let value_at = s.at();
            let value = word(s)?;
            Ok(Some(Assignment { name, name_at, value, value_at }))
        }
        // `export NAME` exports a variable set elsewhere: nothing to record.
        None | Some('\n' | ' ' | '\t' | '\r' | '#') if exported => Ok(None),
        _ => Err(unsupported(start, format_args!("`{name}` is not an assignment"))),
    }
}

fn end_of_statement(s: &mut Scanner) -> Result<(), Diagnostic> {
    s.skip_blanks();
    match s.peek() {
        None | Some('\n') => Ok(()),
        Some('#') => {
            s.skip_comment();
            Ok(())
        }
        Some(c) => Err(Diagnostic::error(
            "env-sh-unsupported",
            s.at(),
            format!("unexpected `{c}` after the value"),
            "write one `export NAME=value` per line, and quote values that contain spaces",
        )),
    }
}

/// One shell word: the value of an assignment.
fn word(s: &mut Scanner) -> Result<Vec<Part>, Diagnostic> {
    let mut parts = Vec::new();
    let mut text = String::new();
    loop {
        match s.peek() {
            None | Some(' ' | '\t' | '\r' | '\n') => break,
            Some('\'') => single_quoted(s, &mut text)?,
            Some('"') => double_quoted(s, &mut text, &mut parts)?,
            Some('$') => dollar(s, &mut text, &mut parts)?,
            Some('`') => return Err(command_substitution(s.at())),
            Some('\\') => {
                s.bump();
                match s.bump() {
                    None | Some('\n') => {}
                    Some(c) => text.push(c),
                }
            }
            Some(c @ (';' | '&' | '|' | '<' | '>' | '(' | ')')) => return Err(unsupported(s.at(), format_args!("`{c}`"))),
            Some(c) => {
                s.bump();
                text.push(c);
            }
        }
    }
    if !text.is_empty() || parts.is_empty() {
        parts.push(Part::Text(text));
    }
    Ok(parts)
}

/// `'…'`: everything literal up to the closing quote.
fn single_quoted(s: &mut Scanner, text: &mut String) -> Result<(), Diagnostic> {
    let open = s.at();
    s.bump();
    loop {
        match s.bump() {
            None => return Err(unterminated(open, '\'')),
            Some('\'') => return Ok(()),
            Some(c) => text.push(c),
        }
    }
}

/// `"…"`: a backslash escapes `$`, a backquote, `"`, itself and newlines; `$` expands.
fn double_quoted(s: &mut Scanner, text: &mut String, parts: &mut Vec<Part>) -> Result<(), Diagnostic> {
    let open = s.at();
    s.bump();
    loop {
        match s.peek() {
            None => return Err(unterminated(open, '"')),
            Some('"') => {
                s.bump();
                return Ok(());
            }
            Some('\\') => {
                s.bump();
                match s.bump() {
                    None => return Err(unterminated(open, '"')),
                    Some('\n') => {}
                    Some(c @ ('$' | '`' | '"' | '\\')) => text.push(c),
                    Some(c) => {
                        text.push('\\');
                        text.push(c);
                    }
                }
            }
            Some('$') => dollar(s, text, parts)?,
            Some('`') => return Err(command_substitution(s.at())),
            Some(c) => {
                s.bump();
                text.push(c);
            }
        }
    }
}

/// `$…` at the scanner: a variable reference, or a literal `$`.
fn dollar(s: &mut Scanner, text: &mut String, parts: &mut Vec<Part>) -> Result<(), Diagnostic> {
    let at = s.at();
    s.bump();
    let (name, fallback) = match s.peek() {
        Some('(') => return Err(command_substitution(at)),
        Some('{') => {
            s.bump();
            let name = s.name();
            if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
                return Err(unsupported(at, "a `${…}` expansion that is not `${NAME}`, `${NAME:?message}` or `${NAME:-default}`"));
            }
            let fallback = match (s.peek(), s.peek_second()) {
                (Some('}'), _) => Fallback::Empty,
                (Some(':'), Some('?')) => {
                    s.bump();
                    s.bump();
                    Fallback::Required(braced_text(s, at)?)
                }
                (Some(':'), Some('-')) => {
                    s.bump();
                    s.bump();
                    Fallback::Default(braced_text(s, at)?)
                }
                (None, _) => return Err(unterminated(at, '}')),
                _ => return Err(unsupported(at, "a `${…}` expansion that is not `${NAME}`, `${NAME:?message}` or `${NAME:-default}`")),
            };
            if fallback == Fallback::Empty {
                s.bump();
            }
            (name, fallback)
        }
        Some(c) if c.is_ascii_alphabetic() || c == '_' => (s.name(), Fallback::Empty),
        Some(c) if c.is_ascii_digit() || "?#@*!$-".contains(c) => return Err(unsupported(at, format_args!("special parameter `${c}`"))),
        _ => {
            text.push('$');
            return Ok(());
        }
    };
    if !text.is_empty() {
        parts.push(Part::Text(std::mem::take(text)));
    }
    parts.push(Part::Var { name, fallback });
    Ok(())
}

/// The literal text of a `${NAME:?…}` or `${NAME:-…}` operand, up to and including `}`.
fn braced_text(s: &mut Scanner, open: (u32, u32)) -> Result<String, Diagnostic> {
    let mut text = String::new();
    loop {
        match s.bump() {
            None => return Err(unterminated(open, '}')),
            Some('}') => return Ok(text),
            Some('$' | '`') => return Err(unsupported(open, "an expansion inside `${…}`")),
            Some(c) => text.push(c),
        }
    }
}

fn unterminated(open: (u32, u32), quote: char) -> Diagnostic {
    let what = match quote {
        '\'' => "unterminated single quote",
        '"' => "unterminated double quote",
        _ => "unterminated `${`",
    };
    Diagnostic::error("env-sh-unterminated", open, what, format!("close it with `{quote}` on the same line"))
}

/// Where the first line ending in CRLF has its `\r`.
pub fn crlf_at(text: &str) -> Option<(u32, u32)> {
    let (index, line) = text.split('\n').enumerate().find(|(_, line)| line.ends_with('\r'))?;
    let column = line.chars().count();
    Some((u32::try_from(index + 1).unwrap_or(u32::MAX), u32::try_from(column).unwrap_or(u32::MAX)))
}

/// Bash reads the `\r` of a CRLF line as part of the last word: a value, an argument.
pub fn crlf(at: (u32, u32)) -> Diagnostic {
    Diagnostic::error(
        "shell-crlf",
        at,
        "this line ends in CRLF (Windows line endings); bash keeps the `\\r` as part of the line's last word",
        "convert the file to LF line endings (`sed -i 's/\\r$//' FILE`, or your editor's line-ending setting)",
    )
}

fn command_substitution(at: (u32, u32)) -> Diagnostic {
    Diagnostic::error(
        "env-sh-command-substitution",
        at,
        "command substitution is not supported",
        "run the command yourself and write its output as a literal value (gke-rl reads env.sh, it never runs it)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Part {
        Part::Text(s.to_owned())
    }

    #[test]
    fn the_codelab_subset() {
        let src = "# comment\nexport A=\"x y\" # trailing\nB='it''s'\nexport C=${A}-$B\nexport D=\"${P:?set P}\"\n\nexport E\n";
        let a = parse(src).unwrap();
        assert_eq!(a.len(), 4);
        assert_eq!((a[0].name.as_str(), a[0].name_at, a[0].value_at), ("A", (2, 8), (2, 10)));
        assert_eq!(a[0].value, vec![text("x y")]);
        assert_eq!(a[1].value, vec![text("its")]);
        let var = |name: &str| Part::Var { name: name.into(), fallback: Fallback::Empty };
        assert_eq!(a[2].value, vec![var("A"), text("-"), var("B")]);
        assert_eq!(a[3].value, vec![Part::Var { name: "P".into(), fallback: Fallback::Required("set P".into()) }]);
    }

    #[test]
    fn escapes_in_double_quotes_and_bare_words() {
        let a = parse(r#"A="a\"b\$c\d" B=x"#);
        assert!(a.is_err(), "two assignments on a line are refused");
        let a = parse("A=\"a\\\"b\\$c\\d\"\nB=x\\ y\n").unwrap();
        assert_eq!(a[0].value, vec![text("a\"b$c\\d")]);
        assert_eq!(a[1].value, vec![text("x y")]);
    }

    #[test]
    fn unterminated_quote_points_at_the_opening_quote() {
        let e = parse("export A=1\nexport B=\"abc\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("env-sh-unterminated", 2, 10));
    }

    #[test]
    fn crlf_points_at_the_first_carriage_return() {
        let e = parse("export A=1\r\nexport B=2\r\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("shell-crlf", 1, 11));
        assert!(parse("export A='a\rb'\n").is_ok(), "a carriage return inside a line is not a line ending");
    }

    #[test]
    fn command_substitution_is_refused_not_run() {
        let e = parse("export IP=$(curl -s ifconfig.me)/32\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("env-sh-command-substitution", 1, 11));
        let e = parse("export IP=\"`hostname`\"\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("env-sh-command-substitution", 1, 12));
    }

    #[test]
    fn control_flow_and_pipes_are_unsupported() {
        for (src, at) in [("if true; then\n", (1, 1)), ("A=1; B=2\n", (1, 4)), ("A=x|y\n", (1, 4)), ("source other.sh\n", (1, 1))] {
            let e = parse(src).unwrap_err();
            assert_eq!((e.line, e.column), at, "{src:?}: {e:?}");
        }
    }
}

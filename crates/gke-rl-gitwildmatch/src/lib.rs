//! Ray's working-dir exclusion patterns: `.gitignore`, `.rayignore` and runtime-env `excludes`.
//!
//! Ray matches these with the `gitwildmatch` patterns of the `pathspec` version it vendors,
//! which differ from git's own rules: `data/` matches what is under `data` but not the
//! directory `data` itself, `[!a]` matches a `/`, and the last matching pattern wins, `!`
//! included. This module follows that translation step by step (pattern to regex, then
//! Python's `re` semantics for the pieces it produces), so a path is excluded here exactly
//! when Ray's packager excludes it. A differential test runs both on generated patterns.
//!
//! ```
//! use gke_rl_gitwildmatch::PatternSet;
//! let set = PatternSet::parse("data/\n*.log\n!keep.log\n").unwrap();
//! assert!(set.is_match("data/a.csv") && !set.is_match("data"));
//! assert!(set.is_match("logs/run.log") && !set.is_match("keep.log"));
//! ```

/// Patterns from one ignore file (or one `excludes` list), in order.
#[derive(Debug, Clone, Default)]
pub struct PatternSet {
    patterns: Vec<Pattern>,
}

/// A pattern that Python's `re` would refuse to compile, with its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: `{pattern}`: {reason}")]
pub struct PatternError {
    /// 1-based line (or item) number.
    pub line: usize,
    /// The pattern as written, trimmed.
    pub pattern: String,
    /// Python's complaint, e.g. `bad character range z-a`.
    pub reason: String,
}

/// Linux's PATH_MAX: no longer path exists to match, and the matcher recurses once per
/// character at most, so this also bounds its stack.
const MAX_PATH_CHARS: usize = 4096;

#[derive(Debug, Clone)]
struct Pattern {
    /// `false` for a `!` pattern: a match re-includes the path.
    exclude: bool,
    tokens: Vec<Token>,
}

/// The regex pieces `pattern_to_regex` emits. `.` is Python's: any character but `\n`.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    /// `.+`: the whole pattern was `**`.
    AnyPlus,
    /// `(?:.+/)?`: a leading `**/`.
    OptionalLeadingDirs,
    /// `(?:/.+)?`: an inner `/**/`.
    OptionalInnerDirs,
    /// `/.*`: a trailing `/**`.
    SlashAnyStar,
    /// `(?:/.*)?`: what follows a name (the path may continue below it).
    OptionalBelow,
    /// `[^/]+`: a segment that is exactly `*`.
    Segment,
    /// `[^/]*` inside a segment.
    Star,
    /// `[^/]` (from `?`).
    NotSlash,
    Slash,
    Literal(char),
    Set {
        negated: bool,
        items: Vec<(char, char)>,
    },
}

impl PatternSet {
    /// Parses ignore-file text as Python reads it: universal newlines, each line stripped of
    /// whitespace, `#` comments and blank lines ignored.
    pub fn parse(text: &str) -> Result<Self, PatternError> {
        Self::from_lines(universal_lines(text))
    }

    /// Patterns given one per item, as runtime-env `excludes` are.
    pub fn from_lines<'a>(lines: impl IntoIterator<Item = &'a str>) -> Result<Self, PatternError> {
        let mut patterns = Vec::new();
        for (index, line) in lines.into_iter().enumerate() {
            let error = |reason: String| PatternError { line: index + 1, pattern: line.trim().to_owned(), reason };
            if let Some(pattern) = Pattern::compile(line).map_err(error)? {
                patterns.push(pattern);
            }
        }
        Ok(PatternSet { patterns })
    }

    /// Whether `path` (relative to the pattern file's directory, `/`-separated, `.` for the
    /// directory itself) is excluded: the last pattern that matches decides.
    pub fn is_match(&self, path: &str) -> bool {
        let path = path.strip_prefix("./").unwrap_or(path);
        let chars: Vec<char> = path.chars().collect();
        let mut excluded = false;
        for pattern in &self.patterns {
            if pattern.matches(&chars) {
                excluded = pattern.exclude;
            }
        }
        excluded
    }

    /// Whether the packager leaves `path` out: it or one of its parent directories (or the
    /// root, `.`) matches, since Ray skips a matched directory with everything under it.
    pub fn excludes(&self, path: &str) -> bool {
        let path = path.trim_end_matches('/');
        self.is_match(".") || path.match_indices('/').any(|(i, _)| self.is_match(&path[..i])) || self.is_match(path)
    }
}

/// Lines as Python's text-mode `readlines()` gives them: `\r\n` and `\r` are line ends too.
fn universal_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
        let line = &rest[..end];
        let terminator = if rest[end..].starts_with("\r\n") { 2 } else { usize::from(end < rest.len()) };
        rest = &rest[end + terminator..];
        Some(line)
    })
}

/// `str.strip()`: Unicode whitespace plus the ASCII separators Python counts as space.
fn python_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

impl Pattern {
    /// `GitWildMatchPattern.pattern_to_regex`, emitting tokens instead of regex text.
    fn compile(line: &str) -> Result<Option<Pattern>, String> {
        let mut pattern = python_strip(line);
        if pattern.is_empty() || pattern.starts_with('#') || pattern == "/" {
            return Ok(None);
        }
        let exclude = match pattern.strip_prefix('!') {
            Some(rest) => {
                pattern = rest;
                false
            }
            None => true,
        };
        pattern = pattern.strip_prefix('\\').unwrap_or(pattern);
        if pattern.is_empty() {
            // pathspec indexes the segments of what is left and raises IndexError.
            return Err("nothing left after `!` or `\\`".to_owned());
        }
        let mut segments: Vec<&str> = pattern.split('/').collect();
        if segments[0].is_empty() {
            segments.remove(0);
        } else if (segments.len() == 1 || (segments.len() == 2 && segments[1].is_empty())) && segments[0] != "**" {
            segments.insert(0, "**");
        }
        if segments.len() > 1 && segments.last().is_some_and(|s| s.is_empty()) {
            *segments.last_mut().expect("not empty") = "**";
        }
        let mut tokens = Vec::new();
        let mut need_slash = false;
        let end = segments.len().saturating_sub(1);
        for (i, segment) in segments.iter().enumerate() {
            if *segment == "**" {
                if i == 0 && i == end {
                    tokens.push(Token::AnyPlus);
                } else if i == 0 {
                    tokens.push(Token::OptionalLeadingDirs);
                    need_slash = false;
                } else if i == end {
                    tokens.push(Token::SlashAnyStar);
                } else {
                    tokens.push(Token::OptionalInnerDirs);
                    need_slash = true;
                }
            } else if *segment == "*" {
                if need_slash {
                    tokens.push(Token::Slash);
                }
                tokens.push(Token::Segment);
                need_slash = true;
            } else {
                if need_slash {
                    tokens.push(Token::Slash);
                }
                translate_segment(segment, &mut tokens)?;
                if i == end && exclude {
                    tokens.push(Token::OptionalBelow);
                }
                need_slash = true;
            }
        }
        // Runs of `[^/]*` or of `(?:/.+)?` match what one of them matches: keep one, so the
        // matcher's recursion is bounded by the path, not by the pattern.
        tokens.dedup_by(|next, previous| *next == *previous && matches!(next, Token::Star | Token::OptionalInnerDirs));
        Ok(Some(Pattern { exclude, tokens }))
    }

    /// `re.match(regex, path)`: anchored at the start; `$` also matches before a final `\n`.
    fn matches(&self, path: &[char]) -> bool {
        if path.len() > MAX_PATH_CHARS {
            return false;
        }
        let cells = (self.tokens.len() + 1) * (path.len() + 1);
        // A dense table for everyday sizes; past a million cells (a huge pattern line against
        // a long path) only the states actually reached are stored.
        let memo = if cells <= 1 << 20 { Memo::Dense(vec![None; cells]) } else { Memo::Sparse(Default::default()) };
        Matcher { tokens: &self.tokens, path, memo }.at(0, 0)
    }
}

/// `_translate_segment_glob`: `*`, `?`, `\` escapes and bracket expressions.
fn translate_segment(segment: &str, tokens: &mut Vec<Token>) -> Result<(), String> {
    let chars: Vec<char> = segment.chars().collect();
    let mut i = 0;
    let mut escape = false;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if escape {
            escape = false;
            tokens.push(Token::Literal(c));
        } else if c == '\\' {
            escape = true;
        } else if c == '*' {
            tokens.push(Token::Star);
        } else if c == '?' {
            tokens.push(Token::NotSlash);
        } else if c == '[' {
            let mut j = i;
            if chars.get(j) == Some(&'!') {
                j += 1;
            }
            if chars.get(j) == Some(&']') {
                j += 1;
            }
            while j < chars.len() && chars[j] != ']' {
                j += 1;
            }
            if j < chars.len() {
                let (negated, start) = match chars[i] {
                    '!' => (true, i + 1),
                    _ => (false, i),
                };
                tokens.push(Token::Set { negated, items: python_set_items(&chars[start..j])? });
                i = j + 1;
            } else {
                tokens.push(Token::Literal('['));
            }
        } else {
            tokens.push(Token::Literal(c));
        }
    }
    Ok(())
}

/// The members of a Python regex set whose body is `body` with every `\` literal (the
/// translation doubles them): single characters and `a-z` ranges; a `-` first or last is
/// literal; a leading `^` was escaped by the translation, so it is literal too.
fn python_set_items(body: &[char]) -> Result<Vec<(char, char)>, String> {
    let mut items = Vec::new();
    let mut k = 0;
    while k < body.len() {
        let low = body[k];
        if body.get(k + 1) == Some(&'-') && k + 2 < body.len() {
            let high = body[k + 2];
            if low > high {
                return Err(format!("bad character range {low}-{high}"));
            }
            items.push((low, high));
            k += 3;
        } else {
            items.push((low, low));
            k += 1;
        }
    }
    Ok(items)
}

/// Results by (token, position), `token × (path length + 1) + position`.
enum Memo {
    Dense(Vec<Option<bool>>),
    Sparse(std::collections::HashMap<usize, bool>),
}

/// Backtracking over the tokens with memoisation on (token, position): linear in
/// tokens × path length whatever the pattern.
struct Matcher<'a> {
    tokens: &'a [Token],
    path: &'a [char],
    memo: Memo,
}

impl Matcher<'_> {
    fn at(&mut self, t: usize, i: usize) -> bool {
        let key = t * (self.path.len() + 1) + i;
        let known = match &self.memo {
            Memo::Dense(table) => table[key],
            Memo::Sparse(map) => map.get(&key).copied(),
        };
        if let Some(known) = known {
            return known;
        }
        let result = self.compute(t, i);
        match &mut self.memo {
            Memo::Dense(table) => table[key] = Some(result),
            Memo::Sparse(map) => {
                map.insert(key, result);
            }
        }
        result
    }

    /// How far `.` (any character but `\n`) can run from `i`.
    fn dots_end(&self, i: usize) -> usize {
        self.path[i..].iter().position(|&c| c == '\n').map_or(self.path.len(), |n| i + n)
    }

    fn compute(&mut self, t: usize, i: usize) -> bool {
        let path = self.path;
        let Some(token) = self.tokens.get(t) else {
            return i == path.len() || (i + 1 == path.len() && path[i] == '\n');
        };
        let next = t + 1;
        let here = path.get(i).copied();
        match token {
            Token::AnyPlus => (i + 1..=self.dots_end(i)).any(|k| self.at(next, k)),
            Token::OptionalLeadingDirs => self.at(next, i) || (i + 1..self.dots_end(i)).any(|k| path[k] == '/' && self.at(next, k + 1)),
            Token::OptionalInnerDirs => self.at(next, i) || (here == Some('/') && (i + 2..=self.dots_end(i + 1)).any(|k| self.at(next, k))),
            Token::SlashAnyStar => here == Some('/') && (i + 1..=self.dots_end(i + 1)).any(|k| self.at(next, k)),
            Token::OptionalBelow => self.at(next, i) || (here == Some('/') && (i + 1..=self.dots_end(i + 1)).any(|k| self.at(next, k))),
            Token::Segment => {
                let run = path[i..].iter().position(|&c| c == '/').map_or(path.len(), |n| i + n);
                (i + 1..=run).any(|k| self.at(next, k))
            }
            Token::Star => {
                let run = path[i..].iter().position(|&c| c == '/').map_or(path.len(), |n| i + n);
                (i..=run).any(|k| self.at(next, k))
            }
            Token::NotSlash => here.is_some_and(|c| c != '/') && self.at(next, i + 1),
            Token::Slash => here == Some('/') && self.at(next, i + 1),
            Token::Literal(l) => here == Some(*l) && self.at(next, i + 1),
            Token::Set { negated, items } => {
                here.is_some_and(|c| items.iter().any(|&(lo, hi)| (lo..=hi).contains(&c)) != *negated) && self.at(next, i + 1)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PatternSet;

    fn set(text: &str) -> PatternSet {
        PatternSet::parse(text).expect("valid patterns")
    }

    #[test]
    fn directory_patterns_match_children_not_the_directory() {
        let s = set("data/");
        assert!(!s.is_match("data"));
        assert!(s.is_match("data/x") && s.is_match("a/data/x/y"));
        assert!(s.excludes("data/x") && !s.excludes("data"));
    }

    #[test]
    fn names_match_at_any_depth_and_below() {
        let s = set(".git\n__pycache__\n");
        assert!(s.is_match(".git") && s.is_match("a/.git") && s.is_match(".git/HEAD"));
        assert!(!s.is_match("a.git"));
    }

    #[test]
    fn anchored_and_inner_double_star() {
        let s = set("/build\na/**/b\n");
        assert!(s.is_match("build") && !s.is_match("x/build"));
        assert!(s.is_match("a/b") && s.is_match("a/x/y/b") && !s.is_match("xa/b"));
    }

    #[test]
    fn last_match_wins_and_negation_is_not_extended_below() {
        let s = set("*.log\n!keep.log\n");
        assert!(s.is_match("x.log") && !s.is_match("keep.log"));
        // `!keep.log` gets no `(?:/.*)?` suffix: pathspec's edge case, kept.
        assert!(s.is_match("keep.log/inner.log"));
    }

    #[test]
    fn bracket_expressions_follow_python() {
        let s = set("f[!a]o\n[]]x\n[a-c]z\n");
        assert!(s.is_match("f/o"), "a negated set matches a slash in Python's regex");
        assert!(s.is_match("]x") && s.is_match("bz") && !s.is_match("dz"));
        let error = PatternSet::parse("ok\n[z-a]\n").unwrap_err();
        assert_eq!(error.line, 2);
        assert!(error.reason.contains("bad character range"));
    }

    #[test]
    fn comments_blank_lines_and_crlf() {
        let s = set("# comment\r\n\r\n  env.sh  \r\n\\#hash\n");
        assert!(s.is_match("env.sh") && s.is_match("#hash") && !s.is_match("# comment"));
        let error = PatternSet::parse("a\r\nb\r[z-a]").unwrap_err();
        assert_eq!(error.line, 3, "CRLF and lone CR both end a line");
    }

    #[test]
    fn huge_patterns_against_long_paths_stay_small() {
        let pattern = format!("{}*x", "a*".repeat(200_000));
        let path = "a/".repeat(2000) + "b";
        assert!(!set(&pattern).is_match(&path));
        let stars = format!("a{}b/{}c", "*".repeat(200_000), "**/".repeat(100_000));
        assert!(set(&stars).is_match("axyzb/d/e/c") && !set(&stars).is_match("ab"));
    }

    #[test]
    fn star_alone_matches_the_root_too() {
        assert!(set("*").is_match(".") && set("*").excludes("a/b"));
        assert!(!set("/").is_match("a"));
    }
}

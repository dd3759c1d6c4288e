//! A YAML document as a tree of positioned nodes: every value knows the line and column where
//! it starts, and whether it was written as a string or as a number (`8` is not `"8"`).
//!
//! The tree is built from the events of granit-parser (the parser under serde-saphyr) with
//! serde-saphyr's scalar rules and guards: duplicate keys are errors, `<<` merges, nesting is
//! limited to depth 64 and a document to 250 000 nodes and 64 MiB of aliased text counting
//! alias expansions (a billion-laughs document is refused, not expanded). The block YAML of
//! manifests takes a fast path that builds the same tree in one pass over the lines; anything
//! else goes to granit-parser. [`from_node`] runs serde derives over a
//! tree, so an error names the key path, the position and the value found.
//!
//! ```
//! use gke_rl_yaml::{Error, Node};
//! let root = Node::try_parse("ray:\n  replicas: 8\n").unwrap();
//! let replicas = root.get(&["ray", "replicas"]).unwrap();
//! assert_eq!((replicas.at(), replicas.as_u64()), ((2, 13), Some(8)));
//!
//! #[derive(Debug, serde::Deserialize)]
//! struct Ray { replicas: std::num::NonZeroU32 }
//! let error = gke_rl_yaml::from_node::<Ray>(&Node::try_parse("replicas: 0\n").unwrap()).unwrap_err();
//! assert!(matches!(&error, Error::Type(e) if e.path() == "replicas" && e.at() == (1, 11)));
//! assert!(matches!(Node::try_parse("a: [1\n"), Err(Error::Syntax { line: 1, .. })));
//! ```

mod block;
mod de;
pub mod decimal;
mod parse;

pub use de::{TypeError, from_node};

/// The documents of a multi-document stream, split at each `---` marker alone on its line;
/// empty ones are skipped.
///
/// ```
/// let docs: Vec<&str> = gke_rl_yaml::documents("---\na: 1\n---\nb: 2\n--- \n").collect();
/// assert_eq!(docs, ["a: 1\n", "b: 2\n"]);
/// ```
pub fn documents(text: &str) -> impl Iterator<Item = &str> {
    let mut lines = text.split_inclusive('\n');
    let (mut offset, mut start, mut done) = (0, 0, false);
    std::iter::from_fn(move || {
        while !done {
            let (end, next) = loop {
                let Some(line) = lines.next() else {
                    done = true;
                    break (text.len(), text.len());
                };
                offset += line.len();
                if line.trim_end() == "---" {
                    break (offset - line.len(), offset);
                }
            };
            let document = &text[start..end];
            start = next;
            if !document.trim().is_empty() {
                return Some(document);
            }
        }
        None
    })
}

/// Where `text` has its first line end that its readers disagree on, and what is said of it,
/// counted as every position gke-rl gives is: lines end at `\n` (a `\r\n` is one end),
/// columns are characters.
/// - A lone carriage return (a `\r` not followed by `\n`): YAML and Python's text files take it
///   as a line end, bash and JSON do not.
/// - NEL, LS and PS (U+0085, U+2028, U+2029): YAML 1.1 and go-yaml, which Kubernetes reads
///   manifests with (go-yaml v2 `yamlh.go`, `is_break`), end a line there; YAML 1.2, which
///   gke-rl reads, does not.
///
/// gke-rl refuses such text rather than disagree with any of them about where a line is.
///
/// ```
/// assert_eq!(gke_rl_yaml::ambiguous_line_end("a: 1\r\nb: 2\rc: 3\n").map(|(at, _)| at), Some((2, 5)));
/// assert_eq!(gke_rl_yaml::ambiguous_line_end("a: |\n  x\u{2028}y\n").map(|(at, _)| at), Some((2, 4)));
/// assert_eq!(gke_rl_yaml::ambiguous_line_end("a: 1\r\n"), None);
/// ```
pub fn ambiguous_line_end(text: &str) -> Option<((u32, u32), &'static str)> {
    let (at, said) = text.char_indices().find_map(|(i, c)| match c {
        '\r' if text.as_bytes().get(i + 1) != Some(&b'\n') => Some((i, LONE_CARRIAGE_RETURN)),
        '\u{85}' | '\u{2028}' | '\u{2029}' => Some((i, UNICODE_LINE_END)),
        _ => None,
    })?;
    let before = &text[..at];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let column = before.rfind('\n').map_or(before, |n| &before[n + 1..]).chars().count() + 1;
    Some(((u32::try_from(line).unwrap_or(u32::MAX), u32::try_from(column).unwrap_or(u32::MAX)), said))
}

/// What is said of a lone carriage return, with the fix.
const LONE_CARRIAGE_RETURN: &str = "a lone carriage return (\\r) ends a line for some readers of this file and not for others: \
     save the file with \\n (or \\r\\n) line ends";

/// What is said of NEL, LS or PS, with the fix.
const UNICODE_LINE_END: &str = "a Unicode line end (NEL, LS or PS: U+0085, U+2028, U+2029) ends a line for Kubernetes' YAML reader and not \
     for gke-rl's: remove it, or write it as an escape in a double-quoted string (\"\\u2028\")";

/// Why text is not a YAML tree, or a tree does not fit a type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The text is not YAML, or breaks a guard (a duplicate key, too deep, too many nodes).
    #[error("{message} at {line}:{column}")]
    Syntax {
        /// What is wrong, in the parser's words.
        message: String,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        column: u32,
    },
    /// A node does not fit the type [`from_node`] reads.
    #[error(transparent)]
    Type(#[from] TypeError),
}

impl Error {
    /// What is wrong, without the position.
    pub fn message(&self) -> &str {
        match self {
            Error::Syntax { message, .. } => message,
            Error::Type(e) => e.message(),
        }
    }

    /// 1-based line and column of the problem.
    pub fn at(&self) -> (u32, u32) {
        match self {
            Error::Syntax { line, column, .. } => (*line, *column),
            Error::Type(e) => e.at(),
        }
    }
}

/// A YAML node with the 1-based line and column where its value starts.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// Where the mapping key of this node starts, for mapping values.
    pub key_at: Option<(u32, u32)>,
    /// The value.
    pub value: Value,
}

/// A scalar as JSON reads it ([`Node::scalar`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar<'a> {
    /// A whole number that fits an `i64`.
    Int(i64),
    /// A whole number past `i64::MAX` that fits a `u64`.
    UInt(u64),
    /// Any other finite number.
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
    /// A string, or a YAML number JSON has no value for (`.inf`, `.nan`).
    Str(&'a str),
    /// An empty value or `null`.
    Null,
}

/// `-?(0|[1-9][0-9]*)`: an integer as JSON writes it.
fn json_integer(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && (digits == "0" || !digits.starts_with('0'))
}

/// The value of a [`Node`].
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A mapping, in document order.
    Map(Vec<(String, Node)>),
    /// A sequence.
    Seq(Vec<Node>),
    /// A string scalar (quoted, or plain text that is not a number or boolean).
    String(String),
    /// A number or boolean scalar, as written.
    Number(String),
    /// An empty value or `null`.
    Null,
}

impl Node {
    /// Parses `text`; `None` when it is not YAML.
    pub fn parse(text: &str) -> Option<Node> {
        Self::try_parse(text).ok()
    }

    /// Parses `text`, or says why not and where ([`Error::Syntax`]): by the fast path for block
    /// YAML (`block.rs`) where it reads the text, else from granit-parser's events (`parse.rs`).
    pub fn try_parse(text: &str) -> Result<Node, Error> {
        match block::parse(text) {
            Some(root) => Ok(root),
            None => Self::try_parse_events(text),
        }
    }

    /// [`Node::try_parse`] through granit-parser's events alone, without the fast path for
    /// block YAML: the reference that path is held to, by the oracle tests and fuzzing.
    #[doc(hidden)]
    pub fn try_parse_events(text: &str) -> Result<Node, Error> {
        parse::parse_events(text).map_err(|(message, (line, column))| Error::Syntax { message, line, column })
    }

    /// The fast path for block YAML alone: `None` where it leaves the text to granit-parser.
    #[doc(hidden)]
    pub fn parse_block(text: &str) -> Option<Node> {
        block::parse(text)
    }

    /// The node at `path` (mapping keys from the root).
    pub fn get(&self, path: &[&str]) -> Option<&Node> {
        path.iter().try_fold(self, |node, key| match &node.value {
            Value::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        })
    }
}

impl Node {
    /// Where the value starts.
    pub fn at(&self) -> (u32, u32) {
        (self.line, self.column)
    }

    /// The text of a scalar (string, number or boolean).
    pub fn text(&self) -> Option<&str> {
        match &self.value {
            Value::String(s) | Value::Number(s) => Some(s),
            _ => None,
        }
    }

    /// A whole number, written as a number or as a string.
    pub fn as_u64(&self) -> Option<u64> {
        self.text()?.trim().parse().ok()
    }

    /// The entries of a mapping; empty for anything else.
    pub fn entries(&self) -> &[(String, Node)] {
        match &self.value {
            Value::Map(entries) => entries,
            _ => &[],
        }
    }

    /// The items of a sequence; empty for anything else.
    pub fn items(&self) -> &[Node] {
        match &self.value {
            Value::Seq(items) => items,
            _ => &[],
        }
    }

    /// The node as JSON, with YAML's scalar types (for JSON Schema validation).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as Json;
        let Some(scalar) = self.scalar() else {
            return match &self.value {
                Value::Map(entries) => Json::Object(entries.iter().map(|(k, v)| (k.clone(), v.to_json())).collect()),
                _ => Json::Array(self.items().iter().map(Node::to_json).collect()),
            };
        };
        match scalar {
            Scalar::Int(i) => Json::from(i),
            Scalar::UInt(u) => Json::from(u),
            // Finite, so it has a JSON number.
            Scalar::Float(f) => serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number),
            Scalar::Bool(b) => Json::Bool(b),
            Scalar::Str(s) => Json::String(s.to_owned()),
            Scalar::Null => Json::Null,
        }
    }

    /// A scalar as JSON has it: a number or boolean by its YAML text (`.5` and `+1.5` are
    /// numbers), else a string; `None` for a mapping or sequence.
    pub fn scalar(&self) -> Option<Scalar<'_>> {
        Some(match &self.value {
            Value::Map(_) | Value::Seq(_) => return None,
            Value::String(s) => Scalar::Str(s),
            Value::Null => Scalar::Null,
            Value::Number(n) => match n.as_str() {
                "true" => Scalar::Bool(true),
                "false" => Scalar::Bool(false),
                // JSON's integers (no `+`, no leading zero) that fit 64 bits; the rest are floats.
                _ => {
                    let integer = json_integer(n);
                    if let Some(i) = integer.then(|| n.parse::<i64>().ok()).flatten() {
                        Scalar::Int(i)
                    } else if let Some(u) = integer.then(|| n.parse::<u64>().ok()).flatten() {
                        Scalar::UInt(u)
                    } else {
                        match n.parse::<f64>() {
                            Ok(f) if f.is_finite() => Scalar::Float(f),
                            _ => Scalar::Str(n),
                        }
                    }
                }
            },
        })
    }

    /// The node at a JSON pointer (`/spec/workerGroupSpecs/0/replicas`).
    pub fn pointer(&self, pointer: &str) -> Option<&Node> {
        pointer.split('/').skip(1).try_fold(self, |node, token| {
            let token = token.replace("~1", "/").replace("~0", "~");
            match &node.value {
                Value::Map(entries) => entries.iter().find(|(k, _)| *k == token).map(|(_, v)| v),
                Value::Seq(items) => items.get(token.parse::<usize>().ok()?),
                _ => None,
            }
        })
    }

    /// Every node of the tree, depth first, with its dotted path.
    pub fn walk(&self, path: &str, visit: &mut dyn FnMut(&str, &Node)) {
        self.walk_from(&mut path.to_owned(), visit);
    }

    /// [`Node::walk`] with one buffer for every path, grown and cut back as it descends.
    fn walk_from(&self, path: &mut String, visit: &mut dyn FnMut(&str, &Node)) {
        use std::fmt::Write;
        visit(path, self);
        let len = path.len();
        match &self.value {
            Value::Map(entries) => {
                for (key, node) in entries {
                    if len > 0 {
                        path.push('.');
                    }
                    path.push_str(key);
                    node.walk_from(path, visit);
                    path.truncate(len);
                }
            }
            Value::Seq(items) => {
                for (index, node) in items.iter().enumerate() {
                    let _ = write!(path, "[{index}]");
                    node.walk_from(path, visit);
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }

    /// The dotted key path and node whose key or value starts at `line:column`.
    pub fn find_at(&self, line: u32, column: u32) -> Option<(String, &Node)> {
        let Value::Map(entries) = &self.value else { return None };
        // Deepest first: a mapping value starts where its first key does.
        entries.iter().find_map(|(key, node)| {
            let nested = node.find_at(line, column).map(|(path, found)| (format!("{key}.{path}"), found));
            let here = (node.line, node.column) == (line, column) || node.key_at == Some((line, column));
            nested.or_else(|| here.then(|| (key.clone(), node)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_know_where_their_values_start() {
        let root = Node::parse("ray:\n  image: foo:1\n  head:\n    cpu: 8\n").unwrap();
        let image = root.get(&["ray", "image"]).unwrap();
        assert_eq!((image.line, image.column), (2, 10));
        assert!(matches!(&image.value, Value::String(s) if s == "foo:1"));
        assert!(matches!(&root.get(&["ray", "head", "cpu"]).unwrap().value, Value::Number(n) if n == "8"));
        let cpu = root.get(&["ray", "head", "cpu"]).unwrap();
        assert_eq!((cpu.line, cpu.column), (4, 10));
        assert!(root.get(&["ray", "nope"]).is_none());
        assert_eq!(root.find_at(4, 5).map(|(path, _)| path), Some("ray.head.cpu".to_owned()), "by key");
        assert_eq!(root.find_at(2, 10).map(|(path, _)| path), Some("ray.image".to_owned()), "by value");
    }

    #[test]
    fn aliases_replaying_too_much_text_are_refused() {
        let big = "x".repeat(1 << 20);
        let doc = format!("a: &big {big}\nb: [{}]\n", ["*big"; 100].join(", "));
        let error = Node::try_parse(&doc).expect_err("100 MiB through aliases");
        assert!(error.message().contains("aliases replay more than 64 MiB of text"), "{}", error.message());
        let fine = format!("a: &big {big}\nb: [{}]\n", ["*big"; 10].join(", "));
        assert!(Node::try_parse(&fine).is_ok());
        // Each anchor keeps a copy of its value: nested ones multiply it with no alias at all.
        let nested = (0..40).fold(format!("{{x: {}}}", "y".repeat(2 << 20)), |inner, depth| format!("[&a{depth} {inner}]"));
        let error = Node::try_parse(&format!("a: {nested}\n")).expect_err("80 MiB of anchored copies");
        assert!(error.message().contains("64 MiB"), "{}", error.message());
    }
}

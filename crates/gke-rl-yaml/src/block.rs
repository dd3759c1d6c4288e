//! A fast path for the block YAML that Kubernetes manifests are written in: block mappings and
//! sequences, one-line plain and quoted scalars without escapes, one-line flow sequences of
//! such scalars, `{}`, and `|`/`|-` literal scalars.
//!
//! It reads the text in one pass, line by line, and builds the tree `parse.rs` builds from
//! granit-parser's events, which cost several times as much. Anything else — anchors, aliases,
//! tags, merges, document markers, escapes, multi-line plain or flow scalars, non-ASCII text
//! outside comments and literal scalars, and every error — makes it give up (`None`), and
//! granit-parser reads the text. So it may decline what is valid, but never accepts what the
//! full parser refuses or builds a different tree: `tests/oracle.rs` holds the two to the same
//! trees on every corpus file and on every one-character edit of a sample, and the
//! `yaml_block` fuzz target on arbitrary text.

use super::parse::{Keys, MAX_DEPTH, MAX_NODES, resolve_plain};
use super::{Node, Value};

/// The tree of `text`, or `None` when it is outside the subset (or not YAML).
pub(super) fn parse(text: &str) -> Option<Node> {
    if !printable(text) {
        return None;
    }
    let mut reader = Reader { text, pos: 0, line: 1, line_start: 0, indent: None, nodes: 0 };
    reader.content_line().ok()?;
    let indent = reader.indent?;
    let root = reader.block_at(indent, 0).ok()?;
    reader.indent.is_none().then_some(root)
}

/// Whether every character is one YAML may hold (its `c-printable`), and none is a byte order
/// mark, a carriage return or a Unicode line end (NEL, LS, PS), which the fast path leaves to the
/// full parser.
fn printable(text: &str) -> bool {
    let ascii = |b: u8| b == b'\n' || b == b'\t' || (0x20..0x7f).contains(&b);
    if text.bytes().all(ascii) {
        return true;
    }
    text.chars().all(|c| match c {
        '\n' | '\t' => true,
        c if c.is_ascii() => ascii(c as u8),
        c => ('\u{a0}'..='\u{fffd}').contains(&c) && !matches!(c, '\u{feff}' | '\u{2028}' | '\u{2029}') || c >= '\u{10000}',
    })
}

/// Outside the subset: the full parser decides.
struct Decline;

type Fast<T> = Result<T, Decline>;

/// What starts a node on a line: the key of a mapping entry (its text, where it starts), or a
/// whole value.
enum Inline {
    Key(String, (u32, u32)),
    Value(Node),
}

/// A key's `:` may be at most this many characters past the key's start, quotes and spaces
/// included (granit-parser's `simple_key_max_lookahead`; YAML 1.2, 7.4.2, says 1024). A little
/// below it, so the two never meet at the boundary.
const MAX_KEY_SPAN: usize = 1000;

struct Reader<'a> {
    text: &'a str,
    pos: usize,
    /// 1-based line of `pos`.
    line: u32,
    /// Where the line of `pos` starts: every byte before `pos` on it is ASCII, so the column is
    /// the byte offset (the full parser counts characters).
    line_start: usize,
    /// The indentation of the line `pos` is on, at its content; `None` at the end of the text.
    indent: Option<usize>,
    nodes: usize,
}

impl Reader<'_> {
    fn bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<u8> {
        self.bytes().get(self.pos + offset).copied()
    }

    fn position(&self) -> (u32, u32) {
        (self.line, u32::try_from(self.pos - self.line_start + 1).unwrap_or(u32::MAX))
    }

    /// [`Reader::position`] past a comment, which may hold characters of several bytes.
    fn position_past_comment(&self) -> (u32, u32) {
        let characters = self.text[self.line_start..self.pos].chars().count();
        (self.line, u32::try_from(characters + 1).unwrap_or(u32::MAX))
    }

    fn node(&mut self, at: (u32, u32), value: Value) -> Fast<Node> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(Decline);
        }
        Ok(Node { line: at.0, column: at.1, key_at: None, value })
    }

    fn skip_spaces(&mut self) -> usize {
        let start = self.pos;
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
        self.pos - start
    }

    /// Past the `\n` at `pos`.
    fn next_line(&mut self) {
        self.pos += 1;
        self.line = self.line.saturating_add(1);
        self.line_start = self.pos;
    }

    /// Moves from the start of a line to the content of the next line that has some (not
    /// blank, not a comment), and records its indentation in `indent`.
    fn content_line(&mut self) -> Fast<()> {
        loop {
            let indent = self.skip_spaces();
            match self.peek() {
                None => {
                    self.indent = None;
                    return Ok(());
                }
                Some(b'\n') => self.next_line(),
                Some(b'#') => self.skip_rest_of_line(),
                Some(b'\t') => return Err(Decline),
                Some(_) if indent == 0 && (self.text[self.pos..].starts_with("---") || self.text[self.pos..].starts_with("...")) => {
                    return Err(Decline);
                }
                Some(_) => {
                    self.indent = Some(indent);
                    return Ok(());
                }
            }
        }
    }

    /// Past the rest of the line (a comment, a literal's header) and its `\n`.
    fn skip_rest_of_line(&mut self) {
        self.skip_to_line_end();
        if self.pos < self.text.len() {
            self.next_line();
        }
    }

    /// After a value on its line: spaces and a comment, then the next content line.
    fn end_line(&mut self) -> Fast<()> {
        let spaces = self.skip_spaces();
        match self.peek() {
            None => {}
            Some(b'\n') => self.next_line(),
            Some(b'#') if spaces > 0 => self.skip_rest_of_line(),
            Some(_) => return Err(Decline),
        }
        self.content_line()
    }

    /// Whether `pos` is at a block sequence's `-` (followed by a space or the line's end).
    fn at_dash(&self) -> bool {
        self.peek() == Some(b'-') && matches!(self.peek_at(1), None | Some(b' ' | b'\n'))
    }

    /// The node whose content starts the current line, at `indent`.
    fn block_at(&mut self, indent: usize, depth: usize) -> Fast<Node> {
        if self.at_dash() {
            return self.block_sequence(indent, depth, false);
        }
        match self.inline(depth)? {
            Inline::Key(key, at) => self.block_mapping(indent, depth, key, at),
            Inline::Value(node) => {
                self.end_line()?;
                Ok(node)
            }
        }
    }

    /// The value after a mapping key's `:` (`in_mapping`) or a sequence's `-`, in a collection
    /// indented by `parent`.
    fn value(&mut self, parent: usize, depth: usize, in_mapping: bool) -> Fast<Node> {
        if depth > MAX_DEPTH {
            return Err(Decline);
        }
        let colon = in_mapping.then(|| (self.line, self.position().1 - 1));
        self.skip_spaces();
        match self.peek() {
            None | Some(b'\n' | b'#') => {
                // The full parser places an empty value at a key's `:`, or at the end of an
                // entry's line (past a comment).
                self.skip_to_line_end();
                let empty_at = colon.unwrap_or_else(|| self.position_past_comment());
                if self.peek() == Some(b'\n') {
                    self.next_line();
                }
                self.content_line()?;
                match self.indent {
                    Some(indent) if indent > parent => self.block_at(indent, depth),
                    Some(indent) if indent == parent && in_mapping && self.at_dash() => self.block_sequence(indent, depth, true),
                    _ => self.node(empty_at, Value::Null),
                }
            }
            Some(b'|') => self.literal(parent),
            _ if self.at_dash() => Err(Decline),
            _ => match (self.pos - self.line_start, self.inline(depth)?) {
                (indent, Inline::Key(key, at)) if !in_mapping => self.block_mapping(indent, depth, key, at),
                (_, Inline::Key(..)) => Err(Decline),
                (_, Inline::Value(node)) => {
                    self.end_line()?;
                    Ok(node)
                }
            },
        }
    }

    /// To the `\n` that ends the line, or the end of the text.
    fn skip_to_line_end(&mut self) {
        self.pos = find_byte(b'\n', &self.bytes()[self.pos..]).map_or(self.text.len(), |offset| self.pos + offset);
    }

    fn block_mapping(&mut self, indent: usize, depth: usize, mut key: String, mut key_at: (u32, u32)) -> Fast<Node> {
        let mut entries: Vec<(String, Node)> = Vec::new();
        let mut keys = Keys::default();
        loop {
            let mut value = self.value(indent, depth + 1, true)?;
            value.key_at = Some(key_at);
            if !keys.insert(&entries, &key) {
                return Err(Decline);
            }
            entries.push((key, value));
            match self.indent {
                Some(next) if next == indent => match self.inline(depth)? {
                    Inline::Key(next_key, at) => (key, key_at) = (next_key, at),
                    Inline::Value(_) => return Err(Decline),
                },
                Some(next) if next > indent => return Err(Decline),
                _ => break,
            }
        }
        let at = entries[0].1.key_at.unwrap_or_default();
        self.node(at, Value::Map(entries))
    }

    /// A sequence whose `-` are at `indent`; an indentless one (at its key's indentation) is
    /// placed where its first entry's content is, or at the end of that line.
    fn block_sequence(&mut self, indent: usize, depth: usize, indentless: bool) -> Fast<Node> {
        let at = if indentless {
            let dash = self.pos;
            self.pos += 1;
            self.skip_spaces();
            if self.peek() == Some(b'#') {
                self.skip_to_line_end();
            }
            let at = self.position_past_comment();
            self.pos = dash;
            at
        } else {
            self.position()
        };
        let mut items = Vec::new();
        loop {
            self.pos += 1;
            items.push(self.value(indent, depth + 1, false)?);
            match self.indent {
                Some(next) if next == indent && self.at_dash() => {}
                Some(next) if next > indent => return Err(Decline),
                _ => break,
            }
        }
        self.node(at, Value::Seq(items))
    }

    /// A scalar, `[...]` or `{}` on the current line, or a mapping key and its `:`.
    fn inline(&mut self, depth: usize) -> Fast<Inline> {
        let at = self.position();
        let start = self.pos;
        // `pos` is past the key's `:`.
        let key = |reader: &Self, text: String| {
            if reader.pos - 1 - start > MAX_KEY_SPAN {
                return Err(Decline);
            }
            Ok(Inline::Key(text, at))
        };
        match self.peek() {
            Some(b'[') => self.flow_sequence(depth).map(Inline::Value),
            Some(b'{') => {
                self.pos += 1;
                self.skip_spaces();
                if self.peek() != Some(b'}') {
                    return Err(Decline);
                }
                self.pos += 1;
                self.node(at, Value::Map(Vec::new())).map(Inline::Value)
            }
            Some(b'"' | b'\'') => {
                let text = self.quoted()?;
                let after = self.pos;
                self.skip_spaces();
                if self.peek() == Some(b':') && matches!(self.peek_at(1), None | Some(b' ' | b'\n')) {
                    self.pos += 1;
                    return key(self, text);
                }
                self.pos = after;
                self.node(at, Value::String(text)).map(Inline::Value)
            }
            _ => match self.plain()? {
                // A plain `<<` merges: the full parser's.
                ("<<", true) => Err(Decline),
                (text, true) => {
                    let text = text.to_owned();
                    key(self, text)
                }
                (text, false) => {
                    let value = resolve_plain(text);
                    self.node(at, value).map(Inline::Value)
                }
            },
        }
    }

    /// A plain scalar in block context, on one line, and whether a key's `:` ends it (`pos` is
    /// then past the `:`).
    fn plain(&mut self) -> Fast<(&str, bool)> {
        let start = self.pos;
        if !plain_starts(self.peek(), self.peek_at(1), false) {
            return Err(Decline);
        }
        let mut end = start;
        loop {
            match self.peek() {
                None | Some(b'\n') => break,
                Some(b':') if matches!(self.peek_at(1), None | Some(b' ' | b'\n')) => {
                    self.pos += 1;
                    return Ok((&self.text[start..end], true));
                }
                Some(b' ') if self.peek_at(1) == Some(b'#') => break,
                Some(b' ') => {}
                Some(b'\t') => return Err(Decline),
                Some(b) if b >= 0x80 => return Err(Decline),
                Some(_) => end = self.pos + 1,
            }
            self.pos += 1;
        }
        self.pos = end;
        Ok((&self.text[start..end], false))
    }

    /// A quoted scalar on one line, without escapes (but `''`).
    fn quoted(&mut self) -> Fast<String> {
        let quote = self.bytes()[self.pos];
        self.pos += 1;
        let mut text = String::new();
        let mut start = self.pos;
        loop {
            match self.peek() {
                None | Some(b'\n' | b'\\') => return Err(Decline),
                Some(b) if b >= 0x80 => return Err(Decline),
                Some(b) if b == quote => {
                    text.push_str(&self.text[start..self.pos]);
                    self.pos += 1;
                    if quote == b'\'' && self.peek() == Some(b'\'') {
                        start = self.pos;
                        self.pos += 1;
                        continue;
                    }
                    return Ok(text);
                }
                Some(_) => self.pos += 1,
            }
        }
    }

    /// `[a, "b", 'c']` on one line: scalars only (and not at the deepest level the full parser
    /// allows, which it then reads).
    fn flow_sequence(&mut self, depth: usize) -> Fast<Node> {
        if depth + 1 > MAX_DEPTH {
            return Err(Decline);
        }
        let at = self.position();
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_spaces();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return self.node(at, Value::Seq(items));
        }
        loop {
            self.skip_spaces();
            let item_at = self.position();
            let value = match self.peek() {
                Some(b'"' | b'\'') => Value::String(self.quoted()?),
                first if plain_starts(first, self.peek_at(1), true) => {
                    let start = self.pos;
                    while let Some(b) = self.peek() {
                        match b {
                            b' ' | b',' | b']' => break,
                            b':' | b'#' | b'[' | b'{' | b'}' | b'\n' | b'\t' | 0x80.. => return Err(Decline),
                            _ => self.pos += 1,
                        }
                    }
                    resolve_plain(&self.text[start..self.pos])
                }
                _ => return Err(Decline),
            };
            items.push(self.node(item_at, value)?);
            self.skip_spaces();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_spaces();
                    if self.peek() == Some(b']') {
                        return Err(Decline);
                    }
                }
                Some(b']') => {
                    self.pos += 1;
                    return self.node(at, Value::Seq(items));
                }
                _ => return Err(Decline),
            }
        }
    }

    /// A `|` or `|-` literal scalar whose lines are indented past `parent`.
    fn literal(&mut self, parent: usize) -> Fast<Node> {
        self.pos += 1;
        let strip = self.peek() == Some(b'-');
        if strip {
            self.pos += 1;
        }
        let spaces = self.skip_spaces();
        match self.peek() {
            Some(b'\n') => self.next_line(),
            Some(b'#') if spaces > 0 => {
                self.skip_rest_of_line();
                if self.pos == self.text.len() {
                    return Err(Decline);
                }
            }
            _ => return Err(Decline),
        }
        let mut text = String::new();
        // The first content line's indentation and line: the full parser places the scalar at
        // its text.
        let mut first: Option<(usize, u32)> = None;
        // Blank lines after the last content line, and the most spaces any blank line held.
        let (mut blank, mut widest_blank) = (0, 0);
        while self.pos < self.text.len() {
            let line_end = find_byte(b'\n', &self.bytes()[self.pos..]).map(|offset| self.pos + offset);
            let line = &self.text[self.pos..line_end.unwrap_or(self.text.len())];
            let spaces = line.bytes().take_while(|&b| b == b' ').count();
            if spaces == line.len() {
                widest_blank = widest_blank.max(spaces);
                blank += 1;
            } else {
                let (content, _) = *first.get_or_insert((spaces, self.line));
                if spaces < content {
                    break;
                }
                if content <= parent || line_end.is_none() {
                    return Err(Decline);
                }
                if !text.is_empty() {
                    text.push('\n');
                }
                text.extend(std::iter::repeat_n('\n', blank));
                text.push_str(&line[content..]);
                blank = 0;
            }
            match line_end {
                Some(end) => {
                    self.pos = end;
                    self.next_line();
                }
                None => self.pos = self.text.len(),
            }
        }
        // A blank line with more spaces than the content's indentation holds text (or is an
        // error, before the first content line); and an empty scalar is rare.
        let Some((content, line)) = first else { return Err(Decline) };
        if widest_blank > content {
            return Err(Decline);
        }
        let at = (line, u32::try_from(content + 1).unwrap_or(u32::MAX));
        if !strip {
            text.push('\n');
        }
        // The lines read are consumed; the state must name the next content line.
        self.content_line()?;
        self.node(at, Value::String(text))
    }
}

/// Whether a plain scalar may start with `first` (then `second`): `-` may when a character of
/// the scalar follows; `?x`, `:x` and the other indicators are left to the full parser.
fn plain_starts(first: Option<u8>, second: Option<u8>, flow: bool) -> bool {
    match first {
        None => false,
        Some(b'-') => match second {
            None | Some(b' ' | b'\n' | b'\t') => false,
            Some(b',' | b'[' | b']' | b'{' | b'}') => !flow,
            Some(_) => true,
        },
        Some(
            b'?' | b':' | b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>' | b'\'' | b'"' | b'%' | b'@' | b'`'
            | b' ' | b'\t' | b'\n',
        ) => false,
        Some(b) => b < 0x80,
    }
}

fn find_byte(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

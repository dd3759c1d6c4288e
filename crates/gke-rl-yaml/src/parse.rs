//! Building a [`Node`] tree from granit-parser's events (the YAML parser under serde-saphyr).
//!
//! Scalars resolve as serde-saphyr's defaults do (YAML 1.1 booleans, YAML 1.2 numbers), and so do
//! its guards: duplicate keys are errors, `<<` merges, nesting and alias expansion are bounded.
//! `tests/oracle.rs` checks the trees against serde-saphyr on every YAML file the project
//! reads and on edge cases.

use std::collections::{BTreeSet, HashMap};

use granit_parser::{Event, Parser, ScalarStyle, ScanError, Span, Tag};

use super::{Node, Value};

/// Deeper nesting is refused: it protects the stack (serde-saphyr's default budget).
pub(super) const MAX_DEPTH: usize = 64;
/// More nodes, counting each alias expansion, are refused ("billion laughs").
pub(super) const MAX_NODES: usize = 250_000;
/// More text copied for anchors and replayed through aliases is refused: one alias of a large
/// value, repeated, or anchors nested in anchors, must not take the memory a node count allows.
const MAX_ALIASED_BYTES: usize = 64 << 20;

/// A message and its 1-based line and column.
pub type Error = (String, (u32, u32));

/// The tree built from granit-parser's events, for any YAML.
pub(super) fn parse_events(text: &str) -> Result<Node, Error> {
    if let Some((at, said)) = super::ambiguous_line_end(text) {
        return Err((said.to_owned(), at));
    }
    let mut builder = Builder { events: Parser::new_from_str(text), anchors: HashMap::new(), nodes: 0, aliased_bytes: 0 };
    let mut root = None;
    loop {
        let (event, span) = builder.next()?;
        match event {
            Event::StreamEnd => {
                let (line, column) = at(&span);
                return Ok(root.unwrap_or(Node { line, column, key_at: None, value: Value::Null }));
            }
            Event::DocumentStart(..) if root.is_some() => {
                return Err(("this file holds more than one YAML document; keep one".to_owned(), at(&span)));
            }
            Event::DocumentStart(..) => {
                let (event, span) = builder.next()?;
                root = Some(builder.node(event, &span, 0)?);
            }
            _ => {}
        }
    }
}

struct Builder<'input> {
    events: Parser<'input, granit_parser::StrInput<'input>>,
    /// Anchored values by anchor id (an alias replays the value where it is written).
    anchors: HashMap<usize, Value>,
    nodes: usize,
    /// Text copied for anchors and replayed through aliases so far.
    aliased_bytes: usize,
}

impl<'input> Builder<'input> {
    fn next(&mut self) -> Result<(Event<'input>, Span), Error> {
        match self.events.next_event() {
            Some(Ok(event)) => Ok(event),
            Some(Err(error)) => Err(scan_error(&error)),
            None => Err(("unexpected end of the YAML stream".to_owned(), (1, 1))),
        }
    }

    /// The next event that is part of the data (comments and anchor names are presentation).
    fn next_data(&mut self) -> Result<(Event<'input>, Span), Error> {
        loop {
            let (event, span) = self.next()?;
            if matches!(
                event,
                Event::Scalar(..)
                    | Event::SequenceStart(..)
                    | Event::SequenceEnd
                    | Event::MappingStart(..)
                    | Event::MappingEnd
                    | Event::Alias(_)
            ) {
                return Ok((event, span));
            }
        }
    }

    /// Counts text an anchor copies or an alias replays against [`MAX_ALIASED_BYTES`].
    fn replay(&mut self, bytes: usize, at: (u32, u32)) -> Result<(), Error> {
        self.aliased_bytes += bytes;
        if self.aliased_bytes > MAX_ALIASED_BYTES {
            return Err((format!("aliases replay more than {} MiB of text", MAX_ALIASED_BYTES >> 20), at));
        }
        Ok(())
    }

    fn count(&mut self, added: usize, span: &Span) -> Result<(), Error> {
        self.nodes += added;
        if self.nodes > MAX_NODES {
            return Err((format!("the document expands to more than {MAX_NODES} nodes (through aliases?)"), at(span)));
        }
        Ok(())
    }

    fn node(&mut self, event: Event<'input>, span: &Span, depth: usize) -> Result<Node, Error> {
        if depth > MAX_DEPTH {
            return Err((format!("nesting deeper than {MAX_DEPTH} levels"), at(span)));
        }
        let (line, column) = at(span);
        let (value, anchor) = match event {
            Event::Scalar(text, style, anchor, tag) => {
                self.count(1, span)?;
                (resolve(&text, style, tag.as_deref()), anchor)
            }
            Event::Alias(id) => {
                let Some(target) = self.anchors.get(&id) else {
                    return Err(("an alias to an anchor that is not defined before it".to_owned(), (line, column)));
                };
                let (nodes, bytes) = size(target);
                self.replay(bytes, (line, column))?;
                self.count(nodes, span)?;
                let mut value = self.anchors[&id].clone();
                relocate(&mut value, (line, column));
                (value, 0)
            }
            Event::SequenceStart(_, anchor, _) => {
                self.count(1, span)?;
                let mut items = Vec::new();
                loop {
                    let (event, span) = self.next_data()?;
                    if matches!(event, Event::SequenceEnd) {
                        break;
                    }
                    items.push(self.node(event, &span, depth + 1)?);
                }
                (Value::Seq(items), anchor)
            }
            Event::MappingStart(_, anchor, _) => {
                self.count(1, span)?;
                (Value::Map(self.entries(depth)?), anchor)
            }
            _ => return Err(("unexpected YAML event".to_owned(), (line, column))),
        };
        let node = Node { line, column, key_at: None, value };
        if anchor != 0 {
            // The anchor keeps a copy: nested anchors must not hold more than aliases may replay.
            self.replay(size(&node.value).1, (line, column))?;
            self.anchors.insert(anchor, node.value.clone());
        }
        Ok(node)
    }

    /// A mapping's entries, then the entries of its `<<` merges whose keys it does not have
    /// (the first merged mapping wins), placed where each merged mapping is written.
    fn entries(&mut self, depth: usize) -> Result<Vec<(String, Node)>, Error> {
        let mut entries: Vec<(String, Node)> = Vec::new();
        let mut merged: Vec<(String, Node)> = Vec::new();
        let mut keys = Keys::default();
        loop {
            let (event, key_span) = self.next_data()?;
            let key_at = at(&key_span);
            let (key, is_merge) = match event {
                Event::MappingEnd => break,
                Event::Scalar(text, style, ..) => (text.into_owned(), style == ScalarStyle::Plain),
                Event::Alias(id) => match self.anchors.get(&id) {
                    Some(Value::String(text) | Value::Number(text)) => {
                        let text = text.clone();
                        self.replay(text.len(), key_at)?;
                        (text, false)
                    }
                    _ => return Err(("a mapping key must be a scalar".to_owned(), key_at)),
                },
                _ => return Err(("a mapping key must be a scalar, not a list or mapping".to_owned(), key_at)),
            };
            let (event, span) = self.next_data()?;
            let mut value = self.node(event, &span, depth + 1)?;
            if is_merge && key == "<<" {
                let sources = match value.value {
                    Value::Map(_) => vec![value],
                    Value::Seq(items) if items.iter().all(|item| matches!(item.value, Value::Map(_))) => items,
                    _ => return Err(("`<<` merges a mapping or a list of mappings".to_owned(), value.at())),
                };
                for source in sources {
                    let source_at = source.at();
                    let Value::Map(source_entries) = source.value else { continue };
                    for (key, mut node) in source_entries {
                        relocate(&mut node.value, source_at);
                        (node.line, node.column, node.key_at) = (source_at.0, source_at.1, Some(source_at));
                        merged.push((key, node));
                    }
                }
                continue;
            }
            if !keys.insert(&entries, &key) {
                return Err((format!("duplicate mapping key `{key}`"), key_at));
            }
            value.key_at = Some(key_at);
            entries.push((key, value));
        }
        for (key, node) in merged {
            if keys.insert(&entries, &key) {
                entries.push((key, node));
            }
        }
        Ok(entries)
    }
}

/// The keys of a mapping so far, to refuse a duplicate: the entries themselves while they are
/// few (most mappings), then a set, so a mapping of N keys costs O(N log N), not O(N²). A
/// BTreeSet, not a HashSet: wasm32 has no random hash keys, and a page must not be slowed by
/// keys chosen to collide.
#[derive(Default)]
pub(super) struct Keys(Option<BTreeSet<String>>);

impl Keys {
    /// Scanned, not indexed, up to this many entries.
    const SCANNED: usize = 16;

    /// Whether `key` is new to `entries` (the mapping's entries so far), recording it.
    pub(super) fn insert(&mut self, entries: &[(String, Node)], key: &str) -> bool {
        match &mut self.0 {
            Some(set) => set.insert(key.to_owned()),
            None if entries.len() < Self::SCANNED => !entries.iter().any(|(k, _)| k == key),
            None => {
                let mut set: BTreeSet<String> = entries.iter().map(|(k, _)| k.clone()).collect();
                let new = set.insert(key.to_owned());
                self.0 = Some(set);
                new
            }
        }
    }
}

/// Moves every node of a replayed value (an alias, a merge) to where it is replayed, as
/// serde-saphyr reports them.
fn relocate(value: &mut Value, to: (u32, u32)) {
    let children: Box<dyn Iterator<Item = &mut Node>> = match value {
        Value::Map(entries) => Box::new(entries.iter_mut().map(|(_, node)| node)),
        Value::Seq(items) => Box::new(items.iter_mut()),
        _ => return,
    };
    for node in children {
        (node.line, node.column) = to;
        if node.key_at.is_some() {
            node.key_at = Some(to);
        }
        relocate(&mut node.value, to);
    }
}

/// How many nodes, and bytes of text (keys and scalars), a value holds (for the alias budgets).
fn size(value: &Value) -> (usize, usize) {
    let add = |(nodes, bytes): (usize, usize), (n, b): (usize, usize)| (nodes + n, bytes + b);
    match value {
        Value::Map(entries) => entries.iter().map(|(key, node)| add((0, key.len()), size(&node.value))).fold((1, 0), add),
        Value::Seq(items) => items.iter().map(|node| size(&node.value)).fold((1, 0), add),
        Value::String(text) | Value::Number(text) => (1, text.len()),
        Value::Null => (1, 0),
    }
}

fn at(span: &Span) -> (u32, u32) {
    let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    (clamp(span.start.line()).max(1), clamp(span.start.col()).saturating_add(1))
}

fn scan_error(error: &ScanError) -> Error {
    let marker = error.marker();
    let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    (error.info(), (clamp(marker.line()).max(1), clamp(marker.col()).saturating_add(1)))
}

/// A scalar's value: quoted and block scalars and `!!str` are text; plain ones may be null,
/// a boolean or a number.
fn resolve(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Value {
    let is_core = |suffix| tag.is_some_and(|tag| tag.is_yaml_core_schema_tag(suffix));
    if is_core("null") {
        return Value::Null;
    }
    let typed = is_core("bool") || is_core("int") || is_core("float");
    if (style != ScalarStyle::Plain || is_core("str")) && !typed {
        return Value::String(text.to_owned());
    }
    resolve_plain(text)
}

/// A plain scalar's value: null, a boolean, a number, or else text.
pub(super) fn resolve_plain(text: &str) -> Value {
    if matches!(text, "" | "~" | "null" | "Null" | "NULL") {
        return Value::Null;
    }
    if let Some(b) = yaml11_bool(text) {
        return Value::Number(b.to_string());
    }
    if let Some(n) = integer(text) {
        return Value::Number(n.to_string());
    }
    // A float keeps its text, which Rust reads back; an integral one that an f64 holds exactly
    // (up to 2^53) reads as the integer, as Go's YAML-to-JSON conversion gives it (`1e3` is a
    // valid `replicas`).
    match float(text) {
        Some(f) if f.is_nan() => Value::Number("NaN".to_owned()),
        Some(f) if f.is_infinite() => Value::Number(if f > 0.0 { "inf" } else { "-inf" }.to_owned()),
        Some(f) if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0 => Value::Number((f as i64).to_string()),
        Some(_) => Value::Number(text.to_owned()),
        None => Value::String(text.to_owned()),
    }
}

fn yaml11_bool(text: &str) -> Option<bool> {
    let is = |words: &[&str]| words.iter().any(|word| text.eq_ignore_ascii_case(word));
    if is(&["true", "yes", "y", "on"]) {
        Some(true)
    } else if is(&["false", "no", "n", "off"]) {
        Some(false)
    } else {
        None
    }
}

/// YAML 1.2 integers: decimal without leading zeros, `0x`, `0o`, `0b`; `_` between digits.
fn integer(text: &str) -> Option<i128> {
    let (negative, unsigned) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (radix, digits) = match unsigned.get(..2) {
        Some("0x") => (16, &unsigned[2..]),
        Some("0o") => (8, &unsigned[2..]),
        Some("0b") => (2, &unsigned[2..]),
        _ if unsigned.len() > 1 && unsigned.starts_with('0') => return None,
        _ => (10, unsigned),
    };
    let well_formed = digits.split('_').all(|group| !group.is_empty() && group.chars().all(|c| c.is_digit(radix)));
    if !well_formed {
        return None;
    }
    let magnitude = i128::from_str_radix(&digits.replace('_', ""), radix).ok()?;
    let value = if negative { -magnitude } else { magnitude };
    (i128::from(i64::MIN)..=i128::from(u64::MAX)).contains(&value).then_some(value)
}

/// YAML 1.2 floats, including `.inf` and `.nan`.
fn float(text: &str) -> Option<f64> {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let negative = text.starts_with('-');
    match unsigned {
        ".inf" | ".Inf" | ".INF" => return Some(if negative { f64::NEG_INFINITY } else { f64::INFINITY }),
        ".nan" | ".NaN" | ".NAN" if unsigned.len() == text.len() => return Some(f64::NAN),
        _ => {}
    }
    let numeral = unsigned.bytes().next().is_some_and(|b| b.is_ascii_digit() || b == b'.')
        && unsigned.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    numeral.then(|| text.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree of `text` as the crate parses it (the fast path, else the events).
    fn parse(text: &str) -> Result<Node, Error> {
        Node::try_parse(text).map_err(|e| match e {
            crate::Error::Syntax { message, line, column } => (message, (line, column)),
            other => (other.to_string(), (0, 0)),
        })
    }

    /// serde-saphyr refuses non-finite floats by default; a validator should read them.
    #[test]
    fn non_finite_floats_are_numbers() {
        let root = parse("a: .inf\nb: -.Inf\nc: .nan\n").unwrap();
        let texts: Vec<_> = root.entries().iter().map(|(_, node)| node.value.clone()).collect();
        assert_eq!(texts, ["inf", "-inf", "NaN"].map(|n| Value::Number(n.to_owned())));
    }

    #[test]
    fn bombs_and_deep_nesting_are_refused() {
        let mut bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n".to_owned();
        for level in 1..8 {
            let previous = (b'a' + level - 1) as char;
            let name = (b'a' + level) as char;
            bomb.push_str(&format!("{name}: &{name} [*{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}]\n"));
        }
        assert!(parse(&bomb).unwrap_err().0.contains("more than 250000 nodes"));
        let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert_eq!(parse(&deep).unwrap_err().0, "nesting deeper than 64 levels");
    }
}

//! A YAML document as a tree of positioned nodes, for pointing at values that typed
//! deserialization accepted but a later check rejects.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

/// A YAML node with the 1-based line and column where its value starts.
#[derive(Debug)]
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

/// The value of a [`Node`].
#[derive(Debug)]
pub enum Value {
    /// A mapping, in document order.
    Map(Vec<(String, Node)>),
    /// A sequence.
    Seq(Vec<Node>),
    /// Any scalar, as text.
    Scalar(String),
    /// An empty value or `null`.
    Null,
}

impl Node {
    /// Parses `text`; `None` when it is not YAML.
    pub fn parse(text: &str) -> Option<Node> {
        serde_saphyr::from_str::<Spanned<Value>>(text).ok().map(Node::from)
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

fn position(location: &serde_saphyr::Location) -> (u32, u32) {
    let clamp = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
    (clamp(location.line()), clamp(location.column()))
}

impl From<Spanned<Value>> for Node {
    fn from(spanned: Spanned<Value>) -> Self {
        let (line, column) = position(&spanned.referenced);
        Node { line, column, key_at: None, value: spanned.value }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            let mut node = Node::from(map.next_value::<Spanned<Value>>()?);
            node.key_at = Some(position(&key.referenced));
            entries.push((key.value, node));
        }
        Ok(Value::Map(entries))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Value>>()? {
            items.push(Node::from(item));
        }
        Ok(Value::Seq(items))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::Scalar(s.to_owned()))
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Scalar(b.to_string()))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Scalar(n.to_string()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Scalar(n.to_string()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(Value::Scalar(n.to_string()))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
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
        assert!(matches!(&image.value, Value::Scalar(s) if s == "foo:1"));
        let cpu = root.get(&["ray", "head", "cpu"]).unwrap();
        assert_eq!((cpu.line, cpu.column), (4, 10));
        assert!(root.get(&["ray", "nope"]).is_none());
        assert_eq!(root.find_at(4, 5).map(|(path, _)| path), Some("ray.head.cpu".to_owned()), "by key");
        assert_eq!(root.find_at(2, 10).map(|(path, _)| path), Some("ray.image".to_owned()), "by value");
    }
}

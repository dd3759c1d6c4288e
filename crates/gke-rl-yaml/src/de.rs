//! Typed deserialization from a parsed [`Node`] tree.
//!
//! The config is parsed once into nodes, then the model's serde derives read the nodes. This
//! keeps one instantiation of serde-saphyr's deserializer (for nodes) instead of one per model
//! type, which is most of the browser build's size, and every error knows its node's path and
//! position without searching for it afterwards.

use std::fmt;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, EnumAccess, IntoDeserializer, MapAccess, SeqAccess, Unexpected, VariantAccess, Visitor,
};

use super::{Node, Value};

/// Reads a `T` from `node`; an error is [`crate::Error::Type`].
pub fn from_node<T: DeserializeOwned>(node: &Node) -> Result<T, crate::Error> {
    T::deserialize(NodeDeserializer(node)).map_err(|e| crate::Error::Type(e.at_node(node)))
}

/// Why a node did not fit the type, with the dotted path and position of the offending node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeError {
    message: String,
    at: Option<(u32, u32)>,
    found: Option<String>,
    /// Path segments, innermost first (pushed while unwinding).
    path: Vec<String>,
}

impl TypeError {
    /// The message, e.g. "unknown field `x`, expected one of a, b".
    pub fn message(&self) -> &str {
        &self.message
    }

    /// 1-based line and column of the offending key or value.
    pub fn at(&self) -> (u32, u32) {
        self.at.unwrap_or((1, 1))
    }

    /// The dotted key path of the offending node (`topology.node_count`); empty for the root.
    pub fn path(&self) -> String {
        self.path.iter().rev().fold(String::new(), |mut path, segment| {
            if !path.is_empty() && !segment.starts_with('[') {
                path.push('.');
            }
            path.push_str(segment);
            path
        })
    }

    /// What the offending node holds, for messages: "`eight`", "a mapping", "nothing".
    pub fn found(&self) -> &str {
        self.found.as_deref().unwrap_or("nothing")
    }

    /// Gives an error that does not know where it happened the position of `node`.
    fn at_node(mut self, node: &Node) -> Self {
        if self.at.is_none() {
            self.at = Some(node.at());
            self.found = Some(match &node.value {
                // A quoted number reads as text: say so, or "found `8`" names no problem.
                Value::String(s) if s.parse::<f64>().is_ok() || matches!(s.as_str(), "true" | "false") => {
                    format!("the text \"{s}\" (quoted, so not a number or boolean: remove the quotes)")
                }
                Value::String(s) | Value::Number(s) => format!("`{s}`"),
                Value::Null => "nothing".to_owned(),
                Value::Map(_) => "a mapping".to_owned(),
                Value::Seq(_) => "a list".to_owned(),
            });
        }
        self
    }

    /// The error of a value inside `segment`: positioned at `node`, with the segment on its path.
    #[inline(never)]
    fn inside(self, node: &Node, segment: &str) -> Self {
        self.at_node(node).within(segment.to_owned())
    }

    fn at_key(mut self, key_at: Option<(u32, u32)>) -> Self {
        self.at = self.at.or(key_at);
        self
    }

    fn within(mut self, segment: String) -> Self {
        self.path.push(segment);
        self
    }
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TypeError {}

impl de::Error for TypeError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        TypeError { message: message.to_string(), at: None, found: None, path: Vec::new() }
    }

    fn invalid_type(found: Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        de::Error::custom(format_args!("invalid type: {}, expected {expected}", Found(found)))
    }

    fn invalid_value(found: Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        de::Error::custom(format_args!("invalid value: {}, expected {expected}", Found(found)))
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        de::Error::custom(format_args!("unknown field `{field}`, {}", one_of(expected)))
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        de::Error::custom(format_args!("unknown variant `{variant}`, {}", one_of(expected)))
    }
}

/// serde's words for what was found (`serde::de::Unexpected`'s Display), but a float without
/// its value: `core`'s float formatting would cost the web page 7 KB gzip, and the error's
/// `found` holds the node's text as written.
struct Found<'a>(Unexpected<'a>);

impl fmt::Display for Found<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Unexpected::Bool(b) => write!(f, "boolean `{b}`"),
            Unexpected::Unsigned(n) => write!(f, "integer `{n}`"),
            Unexpected::Signed(n) => write!(f, "integer `{n}`"),
            Unexpected::Float(_) => f.write_str("floating point"),
            Unexpected::Char(c) => write!(f, "character `{c}`"),
            Unexpected::Str(s) => write!(f, "string {s:?}"),
            Unexpected::Bytes(_) => f.write_str("byte array"),
            Unexpected::Unit => f.write_str("unit value"),
            Unexpected::Option => f.write_str("Option value"),
            Unexpected::NewtypeStruct => f.write_str("newtype struct"),
            Unexpected::Seq => f.write_str("sequence"),
            Unexpected::Map => f.write_str("map"),
            Unexpected::Enum => f.write_str("enum"),
            Unexpected::UnitVariant => f.write_str("unit variant"),
            Unexpected::NewtypeVariant => f.write_str("newtype variant"),
            Unexpected::TupleVariant => f.write_str("tuple variant"),
            Unexpected::StructVariant => f.write_str("struct variant"),
            Unexpected::Other(other) => f.write_str(other),
        }
    }
}

fn one_of(expected: &[&str]) -> String {
    match expected {
        [] => "there are none".to_owned(),
        [only] => format!("expected {only}"),
        _ => format!("expected one of {}", expected.join(", ")),
    }
}

struct NodeDeserializer<'a>(&'a Node);

/// What a plain scalar reads as. Decided once, outside the generic deserializer, so each
/// visitor's instance holds only the dispatch (the browser build has one per model type).
enum Scalar {
    Bool(bool),
    U64(u64),
    I64(i64),
    F64(f64),
    Text,
}

impl Scalar {
    #[inline(never)]
    fn of(text: &str) -> Self {
        if let Ok(b) = text.parse() {
            Scalar::Bool(b)
        } else if let Ok(u) = text.parse() {
            Scalar::U64(u)
        } else if let Ok(i) = text.parse() {
            Scalar::I64(i)
        } else if let Ok(f) = text.parse() {
            Scalar::F64(f)
        } else {
            Scalar::Text
        }
    }
}

impl NodeDeserializer<'_> {
    /// An empty value where a value is required names itself, rather than serde's "unit value".
    fn refuse_null<'de, V: Visitor<'de>>(&self, visitor: &V) -> Result<(), TypeError> {
        match self.0.value {
            Value::Null => Err(de::Error::invalid_type(Unexpected::Other("an empty value"), visitor)),
            _ => Ok(()),
        }
    }
}

macro_rules! typed {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TypeError> {
            self.refuse_null(&visitor)?;
            self.deserialize_any(visitor)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for NodeDeserializer<'_> {
    type Error = TypeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TypeError> {
        match &self.0.value {
            Value::Map(entries) => visitor.visit_map(Entries { entries: entries.iter(), value: None }),
            Value::Seq(items) => visitor.visit_seq(Items { items: items.iter().enumerate() }),
            Value::String(s) => visitor.visit_str(s),
            Value::Number(n) => match Scalar::of(n) {
                Scalar::Bool(b) => visitor.visit_bool(b),
                Scalar::U64(u) => visitor.visit_u64(u),
                Scalar::I64(i) => visitor.visit_i64(i),
                Scalar::F64(f) => visitor.visit_f64(f),
                Scalar::Text => visitor.visit_str(n),
            },
            Value::Null => visitor.visit_unit(),
        }
    }

    typed!(deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_u8 deserialize_u16
        deserialize_u32 deserialize_u64 deserialize_f32 deserialize_f64 deserialize_char deserialize_bytes
        deserialize_byte_buf deserialize_seq deserialize_map deserialize_identifier);

    /// A plain scalar such as `3` or `true` is text where the type wants text.
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TypeError> {
        self.refuse_null(&visitor)?;
        match &self.0.value {
            Value::Number(n) => visitor.visit_str(n),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TypeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TypeError> {
        match self.0.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, TypeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TypeError> {
        self.deserialize_map(visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, TypeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(self, _name: &'static str, _len: usize, visitor: V) -> Result<V::Value, TypeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TypeError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, TypeError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TypeError> {
        visitor.visit_unit()
    }

    /// `variant` for a unit variant, `variant: value` (a one-key mapping) for the others.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TypeError> {
        match &self.0.value {
            Value::String(name) | Value::Number(name) => visitor.visit_enum(Variant { name, key_at: None, value: None }),
            Value::Map(entries) if entries.len() == 1 => {
                let (name, value) = &entries[0];
                visitor.visit_enum(Variant { name, key_at: value.key_at, value: Some(value) })
            }
            Value::Map(entries) => Err(de::Error::invalid_length(entries.len(), &"a mapping with exactly one key")),
            _ => Err(de::Error::invalid_type(Unexpected::Other("a list or an empty value"), &visitor)),
        }
    }
}

struct Entries<'a> {
    entries: std::slice::Iter<'a, (String, Node)>,
    value: Option<(&'a str, &'a Node)>,
}

impl<'de> MapAccess<'de> for Entries<'_> {
    type Error = TypeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, TypeError> {
        let Some((key, value)) = self.entries.next() else { return Ok(None) };
        self.value = Some((key, value));
        let key_deserializer: de::value::StrDeserializer<'_, TypeError> = key.as_str().into_deserializer();
        seed.deserialize(key_deserializer).map(Some).map_err(|e| e.at_key(value.key_at))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, TypeError> {
        let (key, value) = self.value.take().ok_or_else(|| de::Error::custom("a value was read before its key"))?;
        seed.deserialize(NodeDeserializer(value)).map_err(|e| e.inside(value, key))
    }
}

struct Items<'a> {
    items: std::iter::Enumerate<std::slice::Iter<'a, Node>>,
}

impl<'de> SeqAccess<'de> for Items<'_> {
    type Error = TypeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, TypeError> {
        let Some((index, item)) = self.items.next() else { return Ok(None) };
        seed.deserialize(NodeDeserializer(item)).map(Some).map_err(|e| e.inside(item, &format!("[{index}]")))
    }
}

struct Variant<'a> {
    name: &'a str,
    key_at: Option<(u32, u32)>,
    value: Option<&'a Node>,
}

impl<'de, 'a> EnumAccess<'de> for Variant<'a> {
    type Error = TypeError;
    type Variant = Self;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self), TypeError> {
        let name: de::value::StrDeserializer<'_, TypeError> = self.name.into_deserializer();
        let variant = seed.deserialize(name).map_err(|e| e.at_key(self.key_at))?;
        Ok((variant, self))
    }
}

impl<'de> VariantAccess<'de> for Variant<'_> {
    type Error = TypeError;

    fn unit_variant(self) -> Result<(), TypeError> {
        match self.value {
            None | Some(Node { value: Value::Null, .. }) => Ok(()),
            Some(value) => Err(TypeError::custom_at("this variant takes no value", value).within(self.name.to_owned())),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, TypeError> {
        let value = self.value.ok_or_else(|| de::Error::invalid_type(Unexpected::UnitVariant, &"a variant with a value"))?;
        seed.deserialize(NodeDeserializer(value)).map_err(|e| e.inside(value, self.name))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, TypeError> {
        self.struct_variant(&[], visitor)
    }

    fn struct_variant<V: Visitor<'de>>(self, _fields: &'static [&'static str], visitor: V) -> Result<V::Value, TypeError> {
        let value = self.value.ok_or_else(|| de::Error::invalid_type(Unexpected::UnitVariant, &visitor))?;
        de::Deserializer::deserialize_any(NodeDeserializer(value), visitor).map_err(|e| e.inside(value, self.name))
    }
}

impl TypeError {
    fn custom_at(message: &str, node: &Node) -> Self {
        <TypeError as de::Error>::custom(message).at_node(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        count: std::num::NonZeroU32,
        #[serde(default)]
        names: Vec<String>,
        choice: Choice,
        maybe: Option<bool>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Choice {
        Plain,
        Named(String),
    }

    fn read(text: &str) -> Result<Outer, TypeError> {
        match from_node(&Node::parse(text).unwrap()) {
            Ok(outer) => Ok(outer),
            Err(crate::Error::Type(e)) => Err(e),
            Err(e) => panic!("not a type error: {e}"),
        }
    }

    #[test]
    fn reads_scalars_lists_enums_and_options() {
        let outer = read("count: 3\nnames: [a, 7, true]\nchoice: {named: x}\nmaybe: ~\n").unwrap();
        assert_eq!(
            outer,
            Outer {
                count: 3.try_into().unwrap(),
                names: vec!["a".into(), "7".into(), "true".into()],
                choice: Choice::Named("x".into()),
                maybe: None
            }
        );
        assert_eq!(read("count: 1\nchoice: plain\nmaybe: false\n").unwrap().maybe, Some(false));
    }

    #[test]
    fn errors_name_the_path_position_and_found_value() {
        let e = read("count: 1\nchoice: plain\nmaybe: true\nnames:\n  - a\n  - [b]\n").unwrap_err();
        assert_eq!((e.path().as_str(), e.at(), e.found()), ("names[1]", (6, 5), "a list"), "{}", e.message());
        let e = read("count: 0\nchoice: plain\nmaybe: true\n").unwrap_err();
        assert_eq!((e.path().as_str(), e.at(), e.found()), ("count", (1, 8), "`0`"), "{}", e.message());
        let e = read("count: \"8\"\nchoice: plain\nmaybe: true\n").unwrap_err();
        assert!(e.found().starts_with("the text \"8\" (quoted"), "{}", e.found());
        let e = read("count: 1\nchoice: plian\nmaybe: true\n").unwrap_err();
        assert_eq!((e.path().as_str(), e.message()), ("choice", "unknown variant `plian`, expected one of plain, named"));
        let e = read("count: 1\nchoice:\n  named:\nmaybe: true\n").unwrap_err();
        assert_eq!((e.path().as_str(), e.at(), e.message()), ("choice.named", (3, 8), "invalid type: an empty value, expected a string"));
        let e = read("count: 1\nchoice: plain\nmaybe: true\nextra: 1\n").unwrap_err();
        assert_eq!((e.at(), e.message()), ((4, 1), "unknown field `extra`, expected one of count, names, choice, maybe"));
        let e = read("count: 1\nchoice: {plain: 1}\nmaybe: true\n").unwrap_err();
        assert_eq!((e.path().as_str(), e.message()), ("choice.plain", "this variant takes no value"));
    }
}

//! RayClusters and RayJobs against a KubeRay CRD's `openAPIV3Schema`, with no runtime schema
//! compiler: `cargo xtask codegen` compiles the CRDs of the KubeRay release gke-rl targets
//! (v1.7.0) into [`kuberay`]'s tables of [`Shape`]s, which [`check`] walks beside the YAML tree.
//! A CRD given at run time (`--crd`) is compiled into the same tables by [`compile`].
//!
//! What the checks mean is one JSON Schema ([`json_schema`]): the CRD's, with what KubeRay's API
//! server and its Go types enforce made explicit (strict objects, defaulted fields, `nullable`,
//! int-or-string, int32 and int64 ranges), applied after the nulls the API server drops are
//! dropped. The equivalence tests run the `jsonschema` crate on that schema and the tables on the
//! same documents, and want the same errors at the same paths.

mod check;
mod compile;
// Generated, one shape a line: rustfmt would fold it into thousands.
#[rustfmt::skip]
mod kuberay;
mod pattern;

use std::borrow::Cow;

pub use check::Violation;
pub use pattern::Pattern;

use super::rules::CRD_SCHEMA;
use super::{Sink, Tree};
use crate::CrdError;

/// A CRD's schema as a table: every distinct subschema once, children by index.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The shapes; the children of a shape come before it.
    pub shapes: Cow<'static, [Shape]>,
}

impl Table {
    /// Compiles a CRD's schema ([`CrdSchema::from_crd`] says which texts) into the table,
    /// sharing the shapes it already holds; returns the kind and the index of its root shape.
    pub fn add(&mut self, crd: &str, strict: bool) -> Result<(Kind, u16), CrdError> {
        let (schema, kind) = json_schema_of(crd, strict)?;
        Ok((kind, compile::compile(&schema, self)?))
    }
}

/// One subschema, with what it checks of a value.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// The JSON types allowed (`type`, with `null` where `nullable`); empty allows any.
    pub types: Types,
    /// `format`, where gke-rl checks it.
    pub format: Option<Format>,
    /// `pattern`, for strings.
    pub pattern: Option<Pattern>,
    /// `enum`; empty allows any.
    pub enumeration: Cow<'static, [Literal]>,
    /// `required` properties of an object.
    pub required: Cow<'static, [Cow<'static, str>]>,
    /// `properties`, sorted by name, each with the index of its shape.
    pub properties: Cow<'static, [(Cow<'static, str>, u16)]>,
    /// What other properties of an object may be (`additionalProperties`).
    pub additional: Additional,
    /// `items`: the shape of each item of an array.
    pub items: Option<u16>,
    /// Bounds on lengths, counts and numbers.
    pub limits: Cow<'static, [Limit]>,
    /// `anyOf`, `allOf`, `oneOf` and `not`.
    pub logic: Cow<'static, [Logic]>,
    /// `nullable`: a null here is kept, not dropped before the check.
    pub nullable: bool,
}

impl Shape {
    /// A shape that allows anything.
    pub const ANY: Shape = Shape {
        types: Types(0),
        format: None,
        pattern: None,
        enumeration: Cow::Borrowed(&[]),
        required: Cow::Borrowed(&[]),
        properties: Cow::Borrowed(&[]),
        additional: Additional::Any,
        items: None,
        limits: Cow::Borrowed(&[]),
        logic: Cow::Borrowed(&[]),
        nullable: false,
    };
}

/// A set of JSON types, one bit each ([`Types::OBJECT`]…).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Types(pub u8);

impl Types {
    /// `object`.
    pub const OBJECT: u8 = 1;
    /// `array`.
    pub const ARRAY: u8 = 2;
    /// `string`.
    pub const STRING: u8 = 4;
    /// `integer` (a number with no fraction).
    pub const INTEGER: u8 = 8;
    /// `number`.
    pub const NUMBER: u8 = 16;
    /// `boolean`.
    pub const BOOLEAN: u8 = 32;
    /// `null`.
    pub const NULL: u8 = 64;
    /// Each type's bit and its JSON Schema name.
    pub const NAMES: [(u8, &str); 7] = [
        (Self::OBJECT, "object"),
        (Self::ARRAY, "array"),
        (Self::STRING, "string"),
        (Self::INTEGER, "integer"),
        (Self::NUMBER, "number"),
        (Self::BOOLEAN, "boolean"),
        (Self::NULL, "null"),
    ];
}

/// A `format` gke-rl checks. Integer ranges are bounds ([`json_schema`] turns `int32` and
/// `int64` into `minimum` and `maximum`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// RFC 3339 `date-time`, as `metav1.Time` is written.
    DateTime,
}

/// What an object's properties beyond `properties` may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Additional {
    /// Anything (`x-kubernetes-preserve-unknown-fields`, or a schema that lists no properties).
    Any,
    /// Nothing: the API server would drop them.
    Closed,
    /// Values of this shape (a map's values).
    Shape(u16),
}

/// A number in a schema, kept exact: bounds such as int64's do not fit an `f64`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    /// A whole number.
    Int(i64),
    /// Any other.
    Float(f64),
}

/// A scalar value of an `enum`.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(Number),
    /// A string.
    Str(Cow<'static, str>),
}

/// A bound on a value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// `minLength`.
    MinLength(u64),
    /// `maxLength`.
    MaxLength(u64),
    /// `minItems`.
    MinItems(u64),
    /// `maxItems`.
    MaxItems(u64),
    /// `minProperties`.
    MinProperties(u64),
    /// `maxProperties`.
    MaxProperties(u64),
    /// `minimum`.
    Minimum(Number),
    /// `maximum`.
    Maximum(Number),
    /// `exclusiveMinimum`.
    ExclusiveMinimum(Number),
    /// `exclusiveMaximum`.
    ExclusiveMaximum(Number),
    /// `multipleOf`, a positive whole number an `f64` holds exactly.
    MultipleOf(u64),
}

impl Limit {
    /// The JSON Schema keyword it comes from.
    pub fn keyword(self) -> &'static str {
        match self {
            Limit::MinLength(_) => "minLength",
            Limit::MaxLength(_) => "maxLength",
            Limit::MinItems(_) => "minItems",
            Limit::MaxItems(_) => "maxItems",
            Limit::MinProperties(_) => "minProperties",
            Limit::MaxProperties(_) => "maxProperties",
            Limit::Minimum(_) => "minimum",
            Limit::Maximum(_) => "maximum",
            Limit::ExclusiveMinimum(_) => "exclusiveMinimum",
            Limit::ExclusiveMaximum(_) => "exclusiveMaximum",
            Limit::MultipleOf(_) => "multipleOf",
        }
    }
}

/// A combination of shapes.
#[derive(Clone, Debug, PartialEq)]
pub enum Logic {
    /// `anyOf`.
    AnyOf(Cow<'static, [u16]>),
    /// `allOf`.
    AllOf(Cow<'static, [u16]>),
    /// `oneOf`.
    OneOf(Cow<'static, [u16]>),
    /// `not`.
    Not(u16),
}

/// A compiled RayCluster or RayJob schema.
#[derive(Clone, Debug)]
pub struct CrdSchema {
    table: Cow<'static, Table>,
    root: u16,
    kind: Kind,
}

/// What a CRD describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `ray.io/v1` RayCluster.
    RayCluster,
    /// `ray.io/v1` RayJob.
    RayJob,
}

impl Kind {
    /// As in `spec.names.kind`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::RayCluster => "RayCluster",
            Kind::RayJob => "RayJob",
        }
    }
}

impl CrdSchema {
    /// KubeRay v1.7.0's schema for `kind`, compiled ahead of time.
    pub fn kuberay(kind: Kind) -> CrdSchema {
        let root = match kind {
            Kind::RayCluster => kuberay::RAY_CLUSTER,
            Kind::RayJob => kuberay::RAY_JOB,
        };
        CrdSchema { table: Cow::Borrowed(&kuberay::TABLE), root, kind }
    }

    /// Compiles the `v1` schema of a RayCluster or RayJob CRD (its YAML or JSON text, or a
    /// RayCluster's schema itself as JSON). `strict` also rejects fields the schema does not
    /// list, which the API server would silently drop.
    pub fn from_crd(text: &str, strict: bool) -> Result<Self, CrdError> {
        let mut table = Table { shapes: Cow::Owned(Vec::new()) };
        let (kind, root) = table.add(text, strict)?;
        Ok(CrdSchema { table: Cow::Owned(table), root, kind })
    }

    /// The kind whose objects it checks (`spec.names.kind`).
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Every way `document` breaks the schema (a caller sorts them by line).
    pub fn violations(&self, document: &gke_rl::yaml::Node) -> Vec<Violation> {
        check::violations(&self.table.shapes, self.root, document)
    }

    /// Reports each violation in `trees` as a finding at its line.
    pub(super) fn check(&self, trees: &[&Tree<'_>], sink: &mut Sink) {
        let explain = self.kind.name().to_lowercase();
        for tree in trees {
            for violation in self.violations(&tree.root) {
                let field = violation.explained();
                let explained = if field.is_empty() { explain.clone() } else { format!("{explain}.{field}") };
                let help = match &violation.suggestion {
                    Some(known) => format!("did you mean `{known}`? (kubectl explain {explained})"),
                    None => format!("fix the field to match the KubeRay CRD (kubectl explain {explained})"),
                };
                sink.emit(&CRD_SCHEMA, tree.file, violation.at, format!("{}: {}", violation.path(), violation.message), help);
            }
        }
    }
}

/// The plain JSON Schema of a RayCluster or RayJob CRD's `v1` version, from the CRD (YAML or
/// JSON) or from the schema itself (JSON), with what the API server and KubeRay's Go types
/// enforce made explicit:
/// - `strict` closes every object schema of the structure (not those inside `anyOf`, `allOf`,
///   `oneOf` or `not`, which only add checks) that lists its properties: the API server drops
///   unknown fields without a word;
/// - a field with a `default` is not `required`: the API server fills it in (gke-rl does not
///   fill defaults in, so a count of fields or a junctor does not see them);
/// - format names are read without dashes, as the API server reads them;
/// - `nullable: true` allows `null`;
/// - `x-kubernetes-int-or-string` is an `anyOf` of an integer and a string;
/// - `format: int32` and `int64` are the ranges Go decodes;
/// - OpenAPI v3's boolean `exclusiveMinimum`/`exclusiveMaximum` become JSON Schema's numbers.
///
/// [`CrdSchema`] checks a document against this after dropping each null the API server drops
/// (a field not `nullable`), as the API server does.
pub fn json_schema(text: &str, strict: bool) -> Result<serde_json::Value, CrdError> {
    json_schema_of(text, strict).map(|(schema, _)| schema)
}

fn json_schema_of(text: &str, strict: bool) -> Result<(serde_json::Value, Kind), CrdError> {
    // JSON first: it is also YAML, but serde_json reads it an order of magnitude faster.
    let document: serde_json::Value = match serde_json::from_str(text) {
        Ok(json) => json,
        Err(_) => gke_rl::yaml::Node::try_parse(text).map_err(CrdError::Syntax)?.to_json(),
    };
    let problem = |problem: &str| CrdError::Unusable { problem: problem.to_owned() };
    let kind = match document.pointer("/spec/names/kind").and_then(serde_json::Value::as_str).unwrap_or("RayCluster") {
        "RayCluster" => Kind::RayCluster,
        "RayJob" => Kind::RayJob,
        other => return Err(problem(&format!("is for {other}: gke-rl checks RayClusters and RayJobs"))),
    };
    let mut schema = match document.pointer("/spec/versions").and_then(serde_json::Value::as_array) {
        Some(versions) => {
            let v1 = versions.iter().find(|v| v["name"] == "v1").ok_or_else(|| problem("has no v1 version"))?;
            v1.pointer("/schema/openAPIV3Schema").cloned().ok_or_else(|| problem("has no openAPIV3Schema in its v1 version"))?
        }
        None if document.get("properties").is_some() => document,
        None => return Err(problem("file is neither a CRD (spec.versions) nor a JSON Schema (properties)")),
    };
    explicit(&mut schema, strict);
    Ok((schema, kind))
}

/// Rewrites each subschema as [`json_schema`] says.
fn explicit(schema: &mut serde_json::Value, strict: bool) {
    use serde_json::{Value, json};
    let Value::Object(map) = schema else { return };
    for (key, child) in map.iter_mut() {
        match key.as_str() {
            "properties" => child.as_object_mut().into_iter().flat_map(|p| p.values_mut()).for_each(|s| explicit(s, strict)),
            "items" | "additionalProperties" => explicit(child, strict),
            // What the API server keeps is the structure outside the junctors: a branch that
            // lists properties only adds checks to them, so nothing in it is closed.
            "not" => explicit(child, false),
            "anyOf" | "allOf" | "oneOf" => child.as_array_mut().into_iter().flatten().for_each(|s| explicit(s, false)),
            _ => {}
        }
    }
    let open = map.contains_key("additionalProperties") || map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if strict && map.contains_key("properties") && !open {
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    if map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) && !map.contains_key("anyOf") {
        map.insert("anyOf".into(), json!([{ "type": "integer" }, { "type": "string" }]));
    }
    // A field the API server defaults is there when it validates.
    let defaulted: Vec<String> = map
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties.iter().filter(|(_, s)| s.get("default").is_some_and(|d| !d.is_null())).map(|(name, _)| name.clone()).collect()
        })
        .unwrap_or_default();
    if let Some(Value::Array(required)) = map.get_mut("required") {
        required.retain(|name| !name.as_str().is_some_and(|name| defaulted.iter().any(|d| d == name)));
    }
    if map.get("nullable") == Some(&Value::Bool(true)) {
        if let Some(Value::String(single)) = map.get("type") {
            let both = json!([single, "null"]);
            map.insert("type".into(), both);
        }
        for (key, null) in [("enum", Value::Null), ("anyOf", json!({ "type": "null" }))] {
            if let Some(values) = map.get_mut(key).and_then(Value::as_array_mut)
                && !values.contains(&null)
            {
                values.push(null);
            }
        }
    }
    // The API server reads a format's name without its dashes (`datetime` is `date-time`).
    if let Some(Value::String(format)) = map.get_mut("format") {
        match format.replace('-', "").as_str() {
            "datetime" => *format = "date-time".into(),
            name @ ("int32" | "int64") => *format = name.into(),
            _ => {}
        }
    }
    for (exclusive, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
        if let Some(Value::Bool(is)) = map.get(exclusive).cloned() {
            map.remove(exclusive);
            if is && let Some(value) = map.remove(bound) {
                map.insert(exclusive.into(), value);
            }
        }
    }
    let range = match map.get("format").and_then(Value::as_str) {
        Some("int32") => Some((i64::from(i32::MIN), i64::from(i32::MAX))),
        Some("int64") => Some((i64::MIN, i64::MAX)),
        _ => None,
    };
    // The type's range, unless the schema's own bound is tighter (compared exactly: an int64
    // bound does not fit an f64).
    if let Some((min, max)) = range {
        let exact = |given: &Value| match given {
            Value::Number(n) => n.as_i64().map(i128::from).or(n.as_u64().map(i128::from)).map(Ok).or(n.as_f64().map(Err)),
            _ => None,
        };
        let tighter = |given: Option<&Value>, limit: i64, keep: fn(std::cmp::Ordering) -> bool| match given.and_then(exact) {
            Some(Ok(whole)) => keep(whole.cmp(&i128::from(limit))),
            Some(Err(float)) => float.partial_cmp(&(limit as f64)).is_some_and(|o| keep(o) && o != std::cmp::Ordering::Equal),
            None => false,
        };
        if !tighter(map.get("minimum"), min, std::cmp::Ordering::is_ge) {
            map.insert("minimum".into(), json!(min));
        }
        if !tighter(map.get("maximum"), max, std::cmp::Ordering::is_le) {
            map.insert("maximum".into(), json!(max));
        }
    }
}

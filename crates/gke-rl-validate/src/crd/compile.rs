//! A JSON Schema (as [`super::json_schema`] writes a CRD's) into a [`Table`]: each distinct
//! subschema becomes one [`Shape`], its children first.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::Value;

use super::{Additional, Format, Limit, Literal, Logic, Number, Pattern, Shape, Table, Types};
use crate::CrdError;

/// Keywords that say nothing about validity (documentation, defaults, the API server's merge
/// and CEL hints): they are read past.
const ANNOTATIONS: [&str; 6] = ["description", "default", "example", "title", "externalDocs", "$schema"];

/// The string formats the API server checks (kubernetes/kube-openapi `pkg/validation/strfmt`,
/// as apiextensions-apiserver registers them): gke-rl checks `date-time` and refuses a CRD with
/// one of the others rather than skip it.
const API_SERVER_FORMATS: [&str; 23] = [
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "date",
    "duration",
    "datetime",
];

/// 2^53: every whole number up to it is an exact `f64`.
const MAX_EXACT_STEP: u64 = 1 << 53;

/// Compiles `schema` into `table`, returning the index of its root shape.
pub fn compile(schema: &Value, table: &mut Table) -> Result<u16, CrdError> {
    // Shapes already there (the other CRD of a shared table) are reused.
    let mut known: HashMap<String, u16> = (0u16..).zip(table.shapes.iter()).map(|(index, shape)| (format!("{shape:?}"), index)).collect();
    let mut compiler = Compiler { shapes: table.shapes.to_mut(), known: &mut known };
    compiler.shape(schema, "")
}

struct Compiler<'t> {
    shapes: &'t mut Vec<Shape>,
    /// Each shape's `Debug` text (its children by index), to store equal shapes once.
    known: &'t mut HashMap<String, u16>,
}

impl Compiler<'_> {
    fn shape(&mut self, schema: &Value, at: &str) -> Result<u16, CrdError> {
        let unsupported = |what: String| CrdError::Unusable { problem: format!("has {what} at {}, which gke-rl cannot check", shown(at)) };
        let map = match schema {
            Value::Object(map) => map,
            Value::Bool(true) => return self.intern(Shape::ANY),
            _ => return Err(unsupported("a schema that is not an object".into())),
        };
        let mut shape = Shape::ANY;
        let mut limits = Vec::new();
        let mut logic = Vec::new();
        let mut properties: Vec<(Cow<'static, str>, u16)> = Vec::new();
        // A whole number, which JSON may write as `63.0`.
        let count = |value: &Value, keyword: &str| {
            let whole = value.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < u64::MAX as f64);
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // whole, and in range
            value.as_u64().or(whole.map(|f| f as u64)).ok_or_else(|| unsupported(format!("`{keyword}: {value}`")))
        };
        let number = |value: &Value, keyword: &str| match value {
            Value::Number(n) => Ok(number_of(n)),
            _ => Err(unsupported(format!("`{keyword}: {value}`"))),
        };
        for (keyword, value) in map {
            let here = |child: &str| format!("{at}.{child}");
            match keyword.as_str() {
                "type" => {
                    let names: Vec<&Value> = match value {
                        Value::Array(names) => names.iter().collect(),
                        single => vec![single],
                    };
                    for name in names {
                        let bit = Types::NAMES.iter().find(|(_, n)| Some(*n) == name.as_str()).map(|(bit, _)| *bit);
                        shape.types.0 |= bit.ok_or_else(|| unsupported(format!("`type: {name}`")))?;
                    }
                }
                // Names as `json_schema` writes them.
                "format" => match value.as_str().unwrap_or_default() {
                    "date-time" => shape.format = Some(Format::DateTime),
                    // Bounds by now (`json_schema`).
                    "int32" | "int64" => {}
                    // Formats the API server checks that gke-rl does not: refused, not skipped.
                    other if API_SERVER_FORMATS.contains(&other.replace('-', "").as_str()) => {
                        return Err(unsupported(format!("the format `{value}`")));
                    }
                    // The API server ignores the others (`int-or-string`, `float`, `double`…).
                    _ => {}
                },
                "pattern" => {
                    let text = value.as_str().unwrap_or_default();
                    shape.pattern = Some(Pattern::of(text).ok_or_else(|| unsupported(format!("the pattern `{text}`")))?);
                }
                "enum" => {
                    let values = value.as_array().ok_or_else(|| unsupported(format!("`enum: {value}`")))?;
                    let literals = values.iter().map(|v| match v {
                        Value::Null => Ok(Literal::Null),
                        Value::Bool(b) => Ok(Literal::Bool(*b)),
                        Value::Number(n) => Ok(Literal::Number(number_of(n))),
                        Value::String(s) => Ok(Literal::Str(Cow::Owned(s.clone()))),
                        _ => Err(unsupported(format!("an enum of objects or lists, `{value}`"))),
                    });
                    shape.enumeration = Cow::Owned(literals.collect::<Result<_, _>>()?);
                }
                "required" => {
                    let names = value.as_array().ok_or_else(|| unsupported(format!("`required: {value}`")))?;
                    let names: Option<Vec<_>> = names.iter().map(|n| n.as_str().map(|n| Cow::Owned(n.to_owned()))).collect();
                    shape.required = Cow::Owned(names.ok_or_else(|| unsupported(format!("`required: {value}`")))?);
                }
                "properties" => {
                    let entries = value.as_object().ok_or_else(|| unsupported(format!("`properties: {value}`")))?;
                    for (name, child) in entries {
                        properties.push((Cow::Owned(name.clone()), self.shape(child, &here(name))?));
                    }
                }
                "additionalProperties" => {
                    shape.additional = match value {
                        Value::Bool(false) => Additional::Closed,
                        Value::Bool(true) => Additional::Any,
                        child => Additional::Shape(self.shape(child, &here("*"))?),
                    }
                }
                "items" => shape.items = Some(self.shape(value, &here("*"))?),
                "anyOf" | "allOf" | "oneOf" => {
                    let branches = value.as_array().ok_or_else(|| unsupported(format!("`{keyword}: {value}`")))?;
                    let branches: Cow<'static, [u16]> = branches.iter().map(|b| self.shape(b, at)).collect::<Result<Vec<_>, _>>()?.into();
                    logic.push(match keyword.as_str() {
                        "anyOf" => Logic::AnyOf(branches),
                        "allOf" => Logic::AllOf(branches),
                        _ => Logic::OneOf(branches),
                    });
                }
                "not" => logic.push(Logic::Not(self.shape(value, at)?)),
                "minLength" => limits.push(Limit::MinLength(count(value, keyword)?)),
                "maxLength" => limits.push(Limit::MaxLength(count(value, keyword)?)),
                "minItems" => limits.push(Limit::MinItems(count(value, keyword)?)),
                "maxItems" => limits.push(Limit::MaxItems(count(value, keyword)?)),
                "minProperties" => limits.push(Limit::MinProperties(count(value, keyword)?)),
                "maxProperties" => limits.push(Limit::MaxProperties(count(value, keyword)?)),
                "minimum" => limits.push(Limit::Minimum(number(value, keyword)?)),
                "maximum" => limits.push(Limit::Maximum(number(value, keyword)?)),
                "exclusiveMinimum" => limits.push(Limit::ExclusiveMinimum(number(value, keyword)?)),
                "exclusiveMaximum" => limits.push(Limit::ExclusiveMaximum(number(value, keyword)?)),
                // A positive whole step an f64 holds exactly, so whole and float values agree.
                "multipleOf" => match count(value, keyword)? {
                    step @ 1..=MAX_EXACT_STEP => limits.push(Limit::MultipleOf(step)),
                    _ => return Err(unsupported(format!("`{keyword}: {value}`"))),
                },
                // The API server refuses a CRD with `uniqueItems: true` (its cost is quadratic).
                "uniqueItems" if value == &Value::Bool(true) => return Err(unsupported(format!("`{keyword}: true`"))),
                "uniqueItems" => {}
                "nullable" => shape.nullable = value == &Value::Bool(true),
                // Read by `json_schema` (preserve-unknown-fields, int-or-string), or enforced by
                // the API server alone (list and map types, CEL rules).
                name if name.starts_with("x-kubernetes-") || ANNOTATIONS.contains(&name) => {}
                other => return Err(unsupported(format!("the keyword `{other}`"))),
            }
        }
        properties.sort_by(|a, b| a.0.cmp(&b.0));
        shape.properties = Cow::Owned(properties);
        shape.limits = Cow::Owned(limits);
        shape.logic = Cow::Owned(logic);
        self.intern(shape)
    }

    fn intern(&mut self, shape: Shape) -> Result<u16, CrdError> {
        let key = format!("{shape:?}");
        if let Some(&index) = self.known.get(&key) {
            return Ok(index);
        }
        // A CRD has a few hundred distinct subschemas; u16 indices keep the tables small.
        let index = u16::try_from(self.shapes.len())
            .map_err(|_| CrdError::Unusable { problem: "has more than 65,535 distinct subschemas, more than gke-rl can hold".into() })?;
        self.shapes.push(shape);
        self.known.insert(key, index);
        Ok(index)
    }
}

fn shown(at: &str) -> String {
    if at.is_empty() { "the root".into() } else { at.trim_start_matches('.').to_owned() }
}

fn number_of(n: &serde_json::Number) -> Number {
    n.as_i64().map_or_else(|| Number::Float(n.as_f64().unwrap_or(f64::NAN)), Number::Int)
}

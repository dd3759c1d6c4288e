//! Walks a YAML tree beside a [`Table`](super::Table), keyword by keyword as JSON Schema
//! evaluates them, and reports each violation at its node.

use std::cmp::Ordering;

use super::{Additional, Format, Limit, Literal, Logic, Number, Shape, Types};
use gke_rl::yaml::{Node, Scalar, Value};

/// One way a document breaks its schema.
#[derive(Clone, Debug)]
pub struct Violation {
    /// Where: the value at fault, or the key of an unknown field.
    pub at: (u32, u32),
    /// The JSON Schema keyword that failed (`type`, `additionalProperties`…).
    pub keyword: &'static str,
    /// What is wrong, in words.
    pub message: String,
    /// For an unknown field, the known one closest to it.
    pub suggestion: Option<String>,
    path: Vec<Step>,
}

/// A step of a [`Violation`]'s path.
#[derive(Clone, Debug)]
enum Step {
    /// A field the schema lists.
    Field(String),
    /// A key of a map (`additionalProperties`), or an unknown field.
    Entry(String),
    Index(usize),
}

/// A step while walking, borrowed from the document.
#[derive(Clone, Copy, Debug)]
enum Segment<'n> {
    Field(&'n str),
    Entry(&'n str),
    Index(usize),
}

impl Segment<'_> {
    fn owned(self) -> Step {
        match self {
            Segment::Field(key) => Step::Field(key.to_owned()),
            Segment::Entry(key) => Step::Entry(key.to_owned()),
            Segment::Index(index) => Step::Index(index),
        }
    }
}

impl Violation {
    /// Where, as a JSON pointer (`/spec/workerGroupSpecs/0/replicas`).
    pub fn pointer(&self) -> String {
        self.path.iter().fold(String::new(), |pointer, step| match step {
            Step::Field(key) | Step::Entry(key) => format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1")),
            Step::Index(index) => format!("{pointer}/{index}"),
        })
    }

    /// Where, as kubectl writes it (`spec.workerGroupSpecs[0].replicas`).
    pub fn path(&self) -> String {
        if self.path.is_empty() {
            return "the manifest".into();
        }
        self.path.iter().fold(String::new(), |path, step| match step {
            Step::Field(key) | Step::Entry(key) if path.is_empty() => key.clone(),
            Step::Field(key) | Step::Entry(key) => format!("{path}.{key}"),
            Step::Index(index) => format!("{path}[{index}]"),
        })
    }

    /// The field `kubectl explain` documents (after the kind): the schema's fields down to
    /// the fault, up to the first map key or unknown field (`spec.workerGroupSpecs`).
    pub fn explained(&self) -> String {
        let fields = self.path.iter().map_while(|step| match step {
            Step::Field(key) => Some(Some(key.as_str())),
            Step::Index(_) => Some(None),
            Step::Entry(_) => None,
        });
        fields.flatten().collect::<Vec<_>>().join(".")
    }
}

/// Every violation of shape `root` of `shapes` by `document`, as the API server sees it: after
/// it drops each null that a field does not allow.
pub(super) fn violations(shapes: &[Shape], root: u16, document: &Node) -> Vec<Violation> {
    let pruned = if has_prunable_null(shapes, root, document) {
        let mut copy = document.clone();
        prune_nulls(shapes, root, &mut copy);
        Some(copy)
    } else {
        None
    };
    let mut walker = Walker { shapes, found: Some(Vec::new()), path: Vec::new() };
    walker.visit(root, pruned.as_ref().unwrap_or(document));
    walker.found.unwrap_or_default()
}

/// The shape of a field of an object of shape `shape`: listed, or a map's value.
fn field_shape(shape: &Shape, key: &str) -> Option<(u16, bool)> {
    match shape.properties.binary_search_by(|(name, _)| name.as_ref().cmp(key)) {
        Ok(at) => Some((shape.properties[at].1, true)),
        Err(_) => match shape.additional {
            Additional::Shape(child) => Some((child, false)),
            Additional::Any | Additional::Closed => None,
        },
    }
}

/// Whether a null here is dropped: the field's schema does not say `nullable` (the API server
/// fills a field with a `default` instead, which [`super::json_schema`] no longer requires).
fn is_prunable(shapes: &[Shape], child: u16, value: &Node) -> bool {
    matches!(value.value, Value::Null) && shapes.get(usize::from(child)).is_some_and(|s| !s.nullable)
}

/// Whether [`prune_nulls`] would drop anything: most documents have nothing to drop, and are
/// then checked as they are.
fn has_prunable_null(shapes: &[Shape], index: u16, node: &Node) -> bool {
    let Some(shape) = shapes.get(usize::from(index)) else { return false };
    match &node.value {
        Value::Map(entries) => entries.iter().any(|(key, value)| {
            field_shape(shape, key).is_some_and(|(child, _)| is_prunable(shapes, child, value) || has_prunable_null(shapes, child, value))
        }),
        Value::Seq(items) => shape.items.is_some_and(|child| items.iter().any(|item| has_prunable_null(shapes, child, item))),
        _ => false,
    }
}

/// Drops each null that the structural schema (fields, map values and items; not the junctors,
/// which only add checks) does not allow, as apiextensions-apiserver does before it validates
/// (`PruneNonNullableNullsWithoutDefaults`).
fn prune_nulls(shapes: &[Shape], index: u16, node: &mut Node) {
    let Some(shape) = shapes.get(usize::from(index)) else { return };
    match &mut node.value {
        Value::Map(entries) => {
            entries.retain(|(key, value)| !field_shape(shape, key).is_some_and(|(child, _)| is_prunable(shapes, child, value)));
            for (key, value) in entries.iter_mut() {
                if let Some((child, _)) = field_shape(shape, key) {
                    prune_nulls(shapes, child, value);
                }
            }
        }
        Value::Seq(items) => {
            if let Some(child) = shape.items {
                items.iter_mut().for_each(|item| prune_nulls(shapes, child, item));
            }
        }
        _ => {}
    }
}

/// A YAML scalar or collection as the JSON value [`Node::to_json`] makes of it (no JSON is
/// built: the page's build carries no JSON reader).
enum Instance<'n> {
    Object(&'n [(String, Node)]),
    Array(&'n [Node]),
    Scalar(Scalar<'n>),
}

impl<'n> Instance<'n> {
    fn of(node: &'n Node) -> Self {
        match (&node.value, node.scalar()) {
            (Value::Map(entries), _) => Instance::Object(entries),
            (Value::Seq(items), _) => Instance::Array(items),
            (_, scalar) => Instance::Scalar(scalar.unwrap_or(Scalar::Null)),
        }
    }

    fn type_bit(&self) -> u8 {
        match self {
            Instance::Object(_) => Types::OBJECT,
            Instance::Array(_) => Types::ARRAY,
            Instance::Scalar(Scalar::Str(_)) => Types::STRING,
            Instance::Scalar(Scalar::Int(_) | Scalar::UInt(_)) => Types::INTEGER | Types::NUMBER,
            Instance::Scalar(Scalar::Float(f)) if f.fract() == 0.0 => Types::INTEGER | Types::NUMBER,
            Instance::Scalar(Scalar::Float(_)) => Types::NUMBER,
            Instance::Scalar(Scalar::Bool(_)) => Types::BOOLEAN,
            Instance::Scalar(Scalar::Null) => Types::NULL,
        }
    }

    /// The value in words, numbers as the YAML writes them.
    fn described(&self, node: &Node) -> String {
        match self {
            Instance::Object(_) => "a mapping".into(),
            Instance::Array(_) => "a list".into(),
            Instance::Scalar(Scalar::Str(text)) => format!("the string {text:?}"),
            Instance::Scalar(Scalar::Null) => "empty (null)".into(),
            Instance::Scalar(_) => node.text().unwrap_or_default().to_owned(),
        }
    }
}

/// Walks shapes and nodes; with `found` set it collects every violation, without it it only
/// answers whether there is one (for `anyOf`, `oneOf` and `not`), stopping at the first.
struct Walker<'s, 'n> {
    shapes: &'s [Shape],
    found: Option<Vec<Violation>>,
    path: Vec<Segment<'n>>,
}

impl<'n> Walker<'_, 'n> {
    /// Whether `node` is valid; every violation is collected when collecting.
    fn visit(&mut self, index: u16, node: &'n Node) -> bool {
        let shapes = self.shapes;
        let Some(shape) = shapes.get(usize::from(index)) else { return true };
        let instance = Instance::of(node);
        let mut valid = true;
        // `descend!` checks a child node; an invalid one makes this one invalid, and when only
        // validity is asked, answers it.
        macro_rules! descend {
            ($segment:expr, $child:expr, $node:expr) => {{
                let segment: Option<Segment<'n>> = $segment;
                if let Some(segment) = segment {
                    self.path.push(segment);
                }
                let ok = self.visit($child, $node);
                if segment.is_some() {
                    self.path.pop();
                }
                if !ok {
                    valid = false;
                    if self.found.is_none() {
                        return false;
                    }
                }
            }};
        }
        // `fail!` records a violation at a node (or its key); when only validity is asked, the
        // first one answers it.
        macro_rules! fail {
            ($node:expr, $at_key:expr, $keyword:expr, $message:expr) => {{
                valid = false;
                match &mut self.found {
                    Some(found) => found.push(Violation {
                        at: $node.key_at.filter(|_| $at_key).unwrap_or($node.at()),
                        keyword: $keyword,
                        message: $message,
                        suggestion: None,
                        path: self.path.iter().map(|s| s.owned()).collect(),
                    }),
                    None => return false,
                }
            }};
        }
        if shape.types.0 != 0 && shape.types.0 & instance.type_bit() == 0 {
            fail!(node, false, "type", format!("{} is not {}", instance.described(node), a_type(shape.types.0)));
        }
        if !shape.enumeration.is_empty() && !shape.enumeration.iter().any(|allowed| literal_is(allowed, &instance)) {
            fail!(node, false, "enum", format!("{} is not one of {}", instance.described(node), allowed(&shape.enumeration)));
        }
        match &instance {
            Instance::Scalar(Scalar::Str(text)) => {
                if let Some(pattern) = shape.pattern
                    && !pattern.matches(text)
                {
                    fail!(node, false, "pattern", format!("{} is not {}", instance.described(node), pattern.described()));
                }
                if shape.format == Some(Format::DateTime) && !date_time(text) {
                    fail!(
                        node,
                        false,
                        "format",
                        format!("{} is not an RFC 3339 date-time such as 2026-12-04T16:00:00Z", instance.described(node))
                    );
                }
            }
            Instance::Object(entries) => {
                // Keys looked up in a set when a scan per required field would be long (a CRD
                // given at run time may require many).
                let keys: Option<std::collections::BTreeSet<&str>> =
                    (shape.required.len() * entries.len() > 256).then(|| entries.iter().map(|(key, _)| key.as_str()).collect());
                for name in shape.required.iter() {
                    let present = match &keys {
                        Some(keys) => keys.contains(name.as_ref()),
                        None => entries.iter().any(|(key, _)| key == name),
                    };
                    if !present {
                        fail!(node, false, "required", format!("the required field `{name}` is missing"));
                    }
                }
                for (key, value) in *entries {
                    match field_shape(shape, key) {
                        Some((child, listed)) => {
                            descend!(Some(if listed { Segment::Field(key) } else { Segment::Entry(key) }), child, value);
                        }
                        None if shape.additional == Additional::Closed => {
                            if self.found.is_none() {
                                return false;
                            }
                            self.path.push(Segment::Entry(key));
                            fail!(
                                value,
                                true,
                                "additionalProperties",
                                "unknown field: KubeRay's API server drops it without a word".into()
                            );
                            // A name near a listed one is a typo; a long one is no name (and would cost).
                            if let Some(last) = self.found.as_mut().and_then(|found| found.last_mut())
                                && key.len() <= 64
                            {
                                last.suggestion = gke_rl::suggest::closest(key, shape.properties.iter().map(|(name, _)| name.as_ref()))
                                    .map(str::to_owned);
                            }
                            self.path.pop();
                        }
                        None => {}
                    }
                }
            }
            Instance::Array(items) => {
                if let Some(child) = shape.items {
                    for (index, item) in items.iter().enumerate() {
                        descend!(Some(Segment::Index(index)), child, item);
                    }
                }
            }
            _ => {}
        }
        for limit in shape.limits.iter() {
            if let Some(message) = broken(*limit, &instance, node) {
                fail!(node, false, limit.keyword(), message);
            }
        }
        for logic in shape.logic.iter() {
            match logic {
                Logic::AllOf(branches) => {
                    for branch in branches.iter() {
                        descend!(None, *branch, node);
                    }
                }
                Logic::AnyOf(branches) => {
                    if !branches.iter().any(|branch| self.holds(*branch, node)) {
                        let wanted = branches.iter().map(|b| self.summary(*b)).collect::<Vec<_>>();
                        fail!(node, false, "anyOf", format!("{} is not {}", instance.described(node), wanted.join(" or ")));
                    }
                }
                Logic::OneOf(branches) => {
                    let holding = branches.iter().filter(|branch| self.holds(**branch, node)).count();
                    if holding != 1 {
                        fail!(
                            node,
                            false,
                            "oneOf",
                            format!(
                                "{} matches {holding} of the {} allowed forms, not exactly one",
                                instance.described(node),
                                branches.len()
                            )
                        );
                    }
                }
                Logic::Not(branch) => {
                    if self.holds(*branch, node) {
                        fail!(node, false, "not", format!("{} has a form the CRD forbids", instance.described(node)));
                    }
                }
            }
        }
        valid
    }

    /// Whether `node` is valid against shape `index`, collecting nothing.
    fn holds(&self, index: u16, node: &'n Node) -> bool {
        Walker { shapes: self.shapes, found: None, path: Vec::new() }.visit(index, node)
    }

    /// A shape in a few words, for the branches of an `anyOf`.
    fn summary(&self, index: u16) -> String {
        match self.shapes.get(usize::from(index)).map_or(0, |s| s.types.0) {
            0 => "of another allowed form".into(),
            types => a_type(types),
        }
    }
}

/// `an integer`, `a string or null`: the types of `bits`.
fn a_type(bits: u8) -> String {
    let article = |name: &str| if name.starts_with(['a', 'e', 'i', 'o', 'u']) { format!("an {name}") } else { format!("a {name}") };
    let names = Types::NAMES.iter().filter(|(bit, _)| bits & bit != 0).map(|(_, name)| article(name));
    names.collect::<Vec<_>>().join(" or ")
}

/// Whether the value is the `enum` entry `allowed`.
fn literal_is(allowed: &Literal, instance: &Instance<'_>) -> bool {
    match (allowed, instance) {
        (Literal::Str(allowed), Instance::Scalar(Scalar::Str(text))) => allowed == text,
        (Literal::Bool(allowed), Instance::Scalar(Scalar::Bool(b))) => allowed == b,
        (Literal::Null, Instance::Scalar(Scalar::Null)) => true,
        (Literal::Number(allowed), Instance::Scalar(scalar)) => {
            exact(*scalar).and_then(|value| ordering(value, bound(*allowed))) == Some(Ordering::Equal)
        }
        _ => false,
    }
}

/// An `enum`'s entries in words: the first few, as a CRD given by a user may list thousands.
fn allowed(entries: &[Literal]) -> String {
    const SHOWN: usize = 12;
    let shown = entries.iter().take(SHOWN).map(literal).collect::<Vec<_>>().join(", ");
    match entries.len().checked_sub(SHOWN) {
        Some(more) if more > 0 => format!("{shown} (and {more} more)"),
        _ => shown,
    }
}

/// An `enum` entry in words.
fn literal(literal: &Literal) -> String {
    match literal {
        Literal::Null => "null".into(),
        Literal::Bool(b) => b.to_string(),
        Literal::Number(n) => number_words(*n),
        Literal::Str(s) => s.to_string(),
    }
}

/// A schema's number in words, with no float formatting: the page's build carries none
/// (`gke_rl_yaml::decimal` instead).
fn number_words(number: Number) -> String {
    match number {
        Number::Int(i) => i.to_string(),
        Number::Float(f) => gke_rl::yaml::decimal::short(f, 9).to_string(),
    }
}

/// A number, exactly: whole numbers (every i64 and u64, and whole floats that fit) as an
/// `i128`, so that no comparison rounds (an int64 bound does not fit an `f64`).
#[derive(Clone, Copy)]
enum Exact {
    Whole(i128),
    Float(f64),
}

/// 2^127: a whole float under it fits an `i128`.
const WHOLE_LIMIT: f64 = 1.7014118346046923e38;

fn exact(scalar: Scalar<'_>) -> Option<Exact> {
    match scalar {
        Scalar::Int(i) => Some(Exact::Whole(i128::from(i))),
        Scalar::UInt(u) => Some(Exact::Whole(i128::from(u))),
        Scalar::Float(f) => Some(float(f)),
        _ => None,
    }
}

fn bound(number: Number) -> Exact {
    match number {
        Number::Int(i) => Exact::Whole(i128::from(i)),
        Number::Float(f) => float(f),
    }
}

fn float(f: f64) -> Exact {
    // In range and whole, so the conversion is exact.
    #[allow(clippy::cast_possible_truncation)]
    if f.fract() == 0.0 && f.abs() < WHOLE_LIMIT { Exact::Whole(f as i128) } else { Exact::Float(f) }
}

/// How `value` compares with `bound`; `None` for NaN.
fn ordering(value: Exact, bound: Exact) -> Option<Ordering> {
    match (value, bound) {
        (Exact::Whole(v), Exact::Whole(b)) => Some(v.cmp(&b)),
        (Exact::Float(v), Exact::Float(b)) => v.partial_cmp(&b),
        (Exact::Float(v), Exact::Whole(b)) => float_against_whole(v, b),
        (Exact::Whole(v), Exact::Float(b)) => float_against_whole(b, v).map(Ordering::reverse),
    }
}

/// How a float that is not a whole `i128` (a fraction, or past 2^127) compares with one.
fn float_against_whole(float: f64, whole: i128) -> Option<Ordering> {
    if float.is_nan() {
        return None;
    }
    if float.abs() >= WHOLE_LIMIT {
        return Some(if float > 0.0 { Ordering::Greater } else { Ordering::Less });
    }
    // In range, so exact; the fraction breaks a tie.
    #[allow(clippy::cast_possible_truncation)]
    let truncated = float.trunc() as i128;
    Some(truncated.cmp(&whole).then(if float > float.trunc() {
        Ordering::Greater
    } else if float < float.trunc() {
        Ordering::Less
    } else {
        Ordering::Equal
    }))
}

/// A broken bound, in words.
fn broken(limit: Limit, instance: &Instance<'_>, node: &Node) -> Option<String> {
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    let value = node.text().unwrap_or_default();
    let number = match instance {
        Instance::Scalar(scalar) => exact(*scalar),
        _ => None,
    };
    let against = |limit: Number| number.and_then(|n| ordering(n, bound(limit)));
    match (limit, instance) {
        (Limit::MinLength(min), Instance::Scalar(Scalar::Str(s))) => {
            (count(s.chars().count()) < min).then(|| format!("is shorter than {min} characters"))
        }
        (Limit::MaxLength(max), Instance::Scalar(Scalar::Str(s))) => {
            (count(s.chars().count()) > max).then(|| format!("is longer than {max} characters"))
        }
        (Limit::MinItems(min), Instance::Array(items)) => (count(items.len()) < min).then(|| format!("has fewer than {min} items")),
        (Limit::MaxItems(max), Instance::Array(items)) => (count(items.len()) > max).then(|| format!("has more than {max} items")),
        (Limit::MinProperties(min), Instance::Object(entries)) => {
            (count(entries.len()) < min).then(|| format!("has fewer than {min} fields"))
        }
        (Limit::MaxProperties(max), Instance::Object(entries)) => {
            (count(entries.len()) > max).then(|| format!("has more than {max} fields"))
        }
        (Limit::Minimum(min), _) => (against(min) == Some(Ordering::Less)).then(|| match min {
            Number::Int(i) if i == i64::from(i32::MIN) => format!("{value} is less than an int32 holds ({i})"),
            Number::Int(i64::MIN) => format!("{value} is less than an int64 holds ({})", i64::MIN),
            _ => format!("{value} is less than the minimum, {}", number_words(min)),
        }),
        (Limit::Maximum(max), _) => (against(max) == Some(Ordering::Greater)).then(|| match max {
            Number::Int(i) if i == i64::from(i32::MAX) => format!("{value} is more than an int32 holds ({i})"),
            Number::Int(i64::MAX) => format!("{value} is more than an int64 holds ({})", i64::MAX),
            _ => format!("{value} is more than the maximum, {}", number_words(max)),
        }),
        (Limit::ExclusiveMinimum(min), _) if number.is_some() => {
            (against(min) != Some(Ordering::Greater)).then(|| format!("{value} is not more than {}", number_words(min)))
        }
        (Limit::ExclusiveMaximum(max), _) if number.is_some() => {
            (against(max) != Some(Ordering::Less)).then(|| format!("{value} is not less than {}", number_words(max)))
        }
        (Limit::MultipleOf(step), _) => {
            let multiple = match number? {
                // `compile` keeps only positive steps, so the remainder cannot overflow.
                Exact::Whole(whole) => whole % i128::from(step) == 0,
                // Past 2^127 every float is whole, and a float's remainder is exact.
                Exact::Float(f) => f.abs() >= WHOLE_LIMIT && f % (step as f64) == 0.0,
            };
            (!multiple).then(|| format!("{value} is not a multiple of {step}"))
        }
        _ => None,
    }
}

/// RFC 3339 `date-time` (section 5.6): `2026-12-04T16:00:00.5+01:00`, `T` and `Z` in either
/// case, and a leap second only where the time in UTC is 23:59:60.
fn date_time(text: &str) -> bool {
    let Some((date, time)) = text.split_once(['T', 't']) else { return false };
    let digits = |s: &str| -> Option<u32> { s.bytes().all(|b| b.is_ascii_digit()).then(|| s.parse().ok()).flatten() };
    let field = |s: &str, at: std::ops::Range<usize>| s.get(at.clone()).filter(|f| f.len() == at.len()).and_then(digits);
    let date_ok = date.len() == 10 && date.as_bytes()[4] == b'-' && date.as_bytes()[7] == b'-' && {
        match (field(date, 0..4), field(date, 5..7), field(date, 8..10)) {
            (Some(year), Some(month), Some(day)) => {
                let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
                let days = match month {
                    1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
                    4 | 6 | 9 | 11 => 30,
                    2 if leap => 29,
                    2 => 28,
                    _ => 0,
                };
                (1..=days).contains(&day)
            }
            _ => false,
        }
    };
    if !date_ok || time.len() < 9 || time.as_bytes()[2] != b':' || time.as_bytes()[5] != b':' {
        return false;
    }
    let (Some(hour), Some(minute), Some(second)) = (field(time, 0..2), field(time, 3..5), field(time, 6..8)) else { return false };
    if hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let mut rest = &time[8..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let end = fraction.find(|c: char| !c.is_ascii_digit()).unwrap_or(fraction.len());
        if end == 0 {
            return false;
        }
        rest = &fraction[end..];
    }
    let offset_minutes: i64 = match rest.as_bytes() {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), ..] if rest.len() == 6 && rest.as_bytes()[3] == b':' => {
            let (Some(h), Some(m)) = (field(rest, 1..3), field(rest, 4..6)) else { return false };
            if h > 23 || m > 59 {
                return false;
            }
            let minutes = i64::from(h * 60 + m);
            if *sign == b'+' { minutes } else { -minutes }
        }
        _ => return false,
    };
    // A leap second is 23:59:60 in UTC: local time less the offset.
    second != 60 || (i64::from(hour * 60 + minute) - offset_minutes).rem_euclid(24 * 60) == 23 * 60 + 59
}

#[cfg(test)]
mod tests {
    #[test]
    fn date_times() {
        for good in ["2026-12-04T16:00:00Z", "2024-02-29t23:59:60z", "2026-12-04T16:00:00.123+01:00", "1990-12-31T15:59:60-08:00"] {
            assert!(super::date_time(good), "{good}");
        }
        for bad in [
            "2026-12-04",
            "2025-02-29T00:00:00Z",
            "2026-12-04T24:00:00Z",
            "2026-12-04T16:00:00",
            "2026-12-04T16:00:00.Z",
            "2026-12-04T16:00:60Z",
            "2026-12-04T16:00:00+1:00",
            "２026-12-04T16:00:00Z",
        ] {
            assert!(!super::date_time(bad), "{bad}");
        }
    }
}

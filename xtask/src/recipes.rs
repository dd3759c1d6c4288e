//! NeMo-RL's recipe loading, for codegen: a recipe's `defaults:` chain deep-merged (child wins,
//! lists replaced), then its OmegaConf interpolations resolved — `${a.b}` and the `${mul:x, y}`
//! resolver NeMo-RL registers — so that each release's key table is generated from its verbatim
//! recipes. The v0.4.0 result is tested against omegaconf's own resolution of the same chain.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::{Map, Value};

/// The longest `defaults:` chain followed: NeMo-RL's recipes are three deep.
const MAX_DEPTH: usize = 8;

/// `file` in `dir` with its `defaults:` parents merged under it.
pub fn load_chain(dir: &Path, file: &str) -> anyhow::Result<Value> {
    load(dir, file, 0)
}

fn load(dir: &Path, file: &str, depth: usize) -> anyhow::Result<Value> {
    if depth > MAX_DEPTH {
        bail!("{file}: the defaults chain is deeper than {MAX_DEPTH}");
    }
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut value: Value = serde_saphyr::from_str(&text).with_context(|| format!("cannot parse {}", path.display()))?;
    let Some(map) = value.as_object_mut() else { bail!("{}: not a mapping", path.display()) };
    let parents = match map.remove("defaults") {
        None => Vec::new(),
        Some(Value::String(parent)) => vec![parent],
        Some(Value::Array(parents)) => parents
            .into_iter()
            .map(|p| p.as_str().map(str::to_owned).context("a defaults entry is not a file name"))
            .collect::<Result<_, _>>()?,
        Some(other) => bail!("{}: defaults is {other}, not a file name", path.display()),
    };
    let mut merged = Value::Object(Map::new());
    for parent in parents {
        merge(&mut merged, load(dir, &parent, depth + 1)?);
    }
    merge(&mut merged, value);
    Ok(merged)
}

/// OmegaConf's merge: mappings merge key by key, anything else is replaced.
fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(&key) {
                    Some(existing) if existing.is_object() && value.is_object() => merge(existing, value),
                    _ => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, over) => *base = over,
    }
}

/// Every interpolation of `root` resolved.
pub fn resolve(root: &Value) -> anyhow::Result<Value> {
    resolve_value(root, root, 0)
}

fn resolve_value(value: &Value, root: &Value, depth: usize) -> anyhow::Result<Value> {
    Ok(match value {
        Value::String(text) if text.contains("${") => interpolate(text, root, depth)?,
        Value::Array(items) => Value::Array(items.iter().map(|v| resolve_value(v, root, depth)).collect::<Result<_, _>>()?),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| Ok((k.clone(), resolve_value(v, root, depth)?))).collect::<anyhow::Result<_>>()?)
        }
        other => other.clone(),
    })
}

/// A string holding interpolations: the referenced value itself when the string is one
/// interpolation, else the text with each replaced by its value's text.
fn interpolate(text: &str, root: &Value, depth: usize) -> anyhow::Result<Value> {
    if depth > MAX_DEPTH * 4 {
        bail!("`{text}`: interpolations nest too deep (a cycle?)");
    }
    let mut out = String::new();
    let mut rest = text;
    let mut whole = None;
    while let Some(start) = rest.find("${") {
        let end = closing(&rest[start..]).with_context(|| format!("`{text}`: an unclosed interpolation"))? + start;
        let value = expression(&rest[start + 2..end], root, depth)?;
        if start == 0 && end + 1 == rest.len() && out.is_empty() {
            whole = Some(value.clone());
        }
        out.push_str(&rest[..start]);
        out.push_str(&match value {
            Value::String(s) => s,
            other => other.to_string(),
        });
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(whole.unwrap_or(Value::String(out)))
}

/// The index of the `}` closing the `${` at the start of `text`.
fn closing(text: &str) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// What is inside `${…}`: a dotted path, or `resolver:arg, arg`.
fn expression(inner: &str, root: &Value, depth: usize) -> anyhow::Result<Value> {
    let inner = inner.trim();
    if let Some((resolver, args)) = inner.split_once(':').filter(|(name, _)| !name.contains('{') && !name.contains('.')) {
        let args: Vec<Value> = split_args(args).iter().map(|a| argument(a.trim(), root, depth)).collect::<Result<_, _>>()?;
        return match resolver {
            "mul" => multiply(&args).with_context(|| format!("`${{{inner}}}`: mul needs numbers")),
            other => bail!("`${{{inner}}}`: resolver `{other}` is not one NeMo-RL's recipes use"),
        };
    }
    let mut node = root;
    for part in inner.split('.') {
        node = node.get(part).with_context(|| format!("`${{{inner}}}`: no key `{inner}`"))?;
    }
    resolve_value(node, root, depth + 1)
}

/// A resolver's argument: an interpolation, or a YAML scalar.
fn argument(text: &str, root: &Value, depth: usize) -> anyhow::Result<Value> {
    if text.contains("${") {
        return interpolate(text, root, depth + 1);
    }
    Ok(serde_saphyr::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())))
}

/// Top-level comma-separated arguments (commas inside `${…}` belong to the inner call).
fn split_args(args: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in args.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&args[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&args[start..]);
    out
}

/// NeMo-RL's `mul` resolver: the product, whole when every factor is.
fn multiply(args: &[Value]) -> Option<Value> {
    if args.iter().all(|a| a.is_i64()) {
        let product = args.iter().try_fold(1i64, |acc, a| acc.checked_mul(a.as_i64()?))?;
        return Some(Value::from(product));
    }
    let product = args.iter().try_fold(1.0, |acc, a| Some(acc * a.as_f64()?))?;
    serde_json::Number::from_f64(product).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Value {
        serde_saphyr::from_str(text).unwrap()
    }

    #[test]
    fn the_v0_4_0_chain_resolves_as_omegaconf_resolves_it() {
        let upstream = crate::project_root().join(crate::codegen::UPSTREAM).join("nemo-rl");
        let ours = resolve(&load_chain(&upstream.join("v0.4.0/examples/configs"), "grpo_math_70B_megatron.yaml").unwrap()).unwrap();
        let omegaconf = yaml(&std::fs::read_to_string(upstream.join("derived/grpo_math_70B_megatron.resolved.yaml")).unwrap());
        assert_eq!(ours, omegaconf);
    }

    #[test]
    fn interpolations_take_the_referenced_value_and_mul_multiplies() {
        let root = yaml("a: {n: 4, s: x}\nb: ${a.n}\nc: pre-${a.s}-${a.n}\nd: ${mul:${a.n}, 3}\ne: ${mul:${a.n}, 0.5}\n");
        let resolved = resolve(&root).unwrap();
        assert_eq!(resolved["b"], 4);
        assert_eq!(resolved["c"], "pre-x-4");
        assert_eq!(resolved["d"], 12);
        assert_eq!(resolved["e"], 2.0);
        assert!(resolve(&yaml("a: ${b}\nb: ${a}\n")).is_err(), "a cycle is refused, not followed forever");
        assert!(resolve(&yaml("a: ${nope.x}\n")).unwrap_err().to_string().contains("no key `nope.x`"));
        assert!(resolve(&yaml("a: ${oc.env:HOME}\n")).is_err());
    }
}

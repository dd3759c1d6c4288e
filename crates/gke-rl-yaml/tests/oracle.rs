//! The trees (built on granit-parser's events) against serde-saphyr's reading of the same text:
//! every YAML file gke-rl reads or writes, the upstream files, and edge cases. Values,
//! positions and the accept/refuse decision must agree.

use std::path::{Path, PathBuf};

use gke_rl_yaml::{Node, Value};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

/// The tree serde-saphyr gives, in the SDK's node type.
fn oracle(text: &str) -> Result<Node, String> {
    serde_saphyr::from_str::<Spanned<Oracle>>(text).map(node).map_err(|e| e.to_string())
}

struct Oracle(Value);

fn node(spanned: Spanned<Oracle>) -> Node {
    let clamp = |n: u64| u32::try_from(n).unwrap();
    Node { line: clamp(spanned.referenced.line()), column: clamp(spanned.referenced.column()), key_at: None, value: spanned.value.0 }
}

impl<'de> Deserialize<'de> for Oracle {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(OracleVisitor).map(Oracle)
    }
}

struct OracleVisitor;

impl<'de> Visitor<'de> for OracleVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            let mut value = node(map.next_value::<Spanned<Oracle>>()?);
            let clamp = |n: u64| u32::try_from(n).unwrap();
            value.key_at = Some((clamp(key.referenced.line()), clamp(key.referenced.column())));
            entries.push((key.value, value));
        }
        Ok(Value::Map(entries))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Oracle>>()? {
            items.push(node(item));
        }
        Ok(Value::Seq(items))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Number(b.to_string()))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.to_string()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.to_string()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(Value::Number(n.to_string()))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

/// Agreement on one text; returns a description of the difference.
fn compare(name: &str, text: &str) -> Option<String> {
    match (Node::try_parse(text).map(floats_as_read), oracle(text)) {
        (Ok(ours), Ok(theirs)) if ours == theirs => None,
        (Ok(ours), Ok(theirs)) => Some(format!("{name}: trees differ\n  ours:   {ours:?}\n  theirs: {theirs:?}")),
        (Err(_), Err(_)) => None,
        (Ok(ours), Err(theirs)) => Some(format!("{name}: serde-saphyr refuses ({theirs}), we accept {ours:?}")),
        (Err(ours), Ok(_)) => Some(format!("{name}: we refuse ({ours:?}), serde-saphyr accepts")),
    }
}

/// Our tree keeps a float's text as written (`-.5`); the oracle writes the f64 it read. Reading
/// ours as an f64 and writing it the same way compares the values.
fn floats_as_read(mut node: Node) -> Node {
    node.value = match node.value {
        Value::Map(entries) => Value::Map(entries.into_iter().map(|(k, v)| (k, floats_as_read(v))).collect()),
        Value::Seq(items) => Value::Seq(items.into_iter().map(floats_as_read).collect()),
        Value::Number(text) if text.parse::<u64>().is_err() && text.parse::<i64>().is_err() && text.parse::<bool>().is_err() => {
            Value::Number(text.parse::<f64>().map_or(text, |f| f.to_string()))
        }
        value => value,
    };
    node
}

const EDGE_CASES: &[&str] = &[
    "",
    "# only a comment\n",
    "a: 1\nb: -2\nc: +3\nd: 0x1F\ne: 0o17\nf: 0b101\ng: 1_000\nh: 012\ni: 0\n",
    "a: 1.5\nb: -.5\nc: 1e3\ng: 1.\nh: 6.02e+23\n",
    "a: true\nb: False\nc: yes\nd: NO\ne: on\nf: Off\ng: y\nh: n\ni: TRUE\n",
    "a: ~\nb: null\nc: Null\nd:\ne: NULL\nf: nil\n",
    "a: '1'\nb: \"true\"\nc: !!str 3\nd: !!int 3\ne: |\n  text\nf: >-\n  folded\n  text\n",
    "a: 18446744073709551615\nb: 18446744073709551616\nc: -9223372036854775808\nd: -9223372036854775809\n",
    "a: inf\nb: NaN\nc: 1.2.3\nd: 0xZZ\ne: 0X1F\nf: -0\ng: 00\nh: 1__0\ni: _1\n",
    "list:\n  - a\n  - [b, {c: d}]\n  -\n  - - nested\nmap: {x: 1, y: [2, 3]}\n",
    "base: &base\n  a: 1\n  b: 2\nderived:\n  <<: *base\n  b: 3\nalias: *base\n",
    "a: &x 1\nb: *x\nc: &y [1, 2]\nd: *y\n",
    "m:\n  <<: [{a: 1}, {a: 2, b: 2}]\n  c: 3\n",
    "a: 1\na: 2\n",
    "a: b: c\n",
    "a: [1\n",
    "a: 'unterminated\n",
    "- 1\n- 2\n",
    "plain scalar\n",
    "---\na: 1\n...\n",
    "---\na: 1\n---\nb: 2\n",
    "? [a]\n: 1\n",
    "8: eight\ntrue: yes\n",
    "a: *undefined\n",
    "a:\n\tb: 1\n",
    "key: value # comment\n# trailing\n",
    "a: \"tab\\tnewline\\n\"\nb: 'it''s'\n",
    "spec:\n  containers:\n  - name: x\n    args: [\"--flag\", 'v']\n",
    "a: !custom tagged\nb: !!float 1\n",
];

#[test]
fn edge_cases_agree() {
    let differences: Vec<String> =
        EDGE_CASES.iter().enumerate().filter_map(|(i, text)| compare(&format!("case {i} {text:?}"), text)).collect();
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
}

/// Every YAML file under the project's fixtures (the upstream blueprint, CRDs and NeMo-RL
/// recipes among them), manifests and examples.
#[test]
fn project_and_upstream_files_agree() {
    let root = project_root();
    let files = yaml_files();
    let upstream = files.iter().filter(|p| p.starts_with(root.join("tests/fixtures/upstream"))).count();
    assert!(upstream >= 8 && files.len() >= 16, "found only {} YAML files, {upstream} of them upstream", files.len());
    let differences: Vec<String> =
        files.iter().filter_map(|path| compare(&path.display().to_string(), &std::fs::read_to_string(path).unwrap())).collect();
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
}

/// The YAML files of the project's fixtures, manifests, examples and snapshots.
fn yaml_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["tests/fixtures", "manifests", "examples", "crates/gke-rl/tests/it/snapshots"] {
        collect(&project_root().join(dir), &mut files);
    }
    files
}

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            files.push(path);
        }
    }
}

/// The fast path for block YAML builds granit-parser's tree or declines: on every corpus file,
/// on every one-character edit of samples that hold each construct it reads, and on chains of
/// edits of the corpus. It reads the manifests gke-rl renders (the point of it).
#[test]
fn block_fast_path_builds_the_events_tree_or_declines() {
    let mut corpus: Vec<(String, String)> =
        yaml_files().iter().map(|path| (path.display().to_string(), std::fs::read_to_string(path).unwrap())).collect();
    // The rendered manifests, without insta's header.
    for entry in std::fs::read_dir(project_root().join("crates/gke-rl/tests/it/snapshots")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.display().to_string();
        if name.ends_with(".yaml.snap") {
            let text = std::fs::read_to_string(&path).unwrap();
            let body = text.splitn(3, "---\n").nth(2).unwrap_or_else(|| panic!("{name}: an insta snapshot")).to_owned();
            corpus.push((name, body));
        }
    }
    let mut differences = Vec::new();
    let mut declined = Vec::new();
    let mut compare_fast = |name: &str, text: &str| {
        let Some(fast) = Node::parse_block(text) else { return false };
        match Node::try_parse_events(text) {
            Ok(full) if full == fast => {}
            Ok(full) => differences.push(format!("{name}: trees differ on {text:?}: {}", first_difference(&fast, &full))),
            Err(error) => differences.push(format!("{name}: the full parser refuses ({error}) {text:?}, the fast path accepts")),
        }
        true
    };
    for (name, text) in &corpus {
        if !compare_fast(name, text) {
            declined.push(name.clone());
        }
    }
    // Every edit of one character: each byte removed, and each of these put before it or in
    // its place.
    const CHARACTERS: &[char] = &[
        ' ', '\n', '\t', '\r', '-', ':', '#', '\'', '"', '[', ']', '{', '}', ',', '|', '>', '&', '*', '!', '?', '%', '@', '`', '\\', '~',
        '+', '.', '0', 'a', 'é', '\u{feff}', '\u{1}',
    ];
    let (mut edits, mut accepted_edits) = (0, 0);
    for (sample, at) in
        BLOCK_SAMPLES.iter().flat_map(|sample| (0..=sample.len()).filter(|&at| sample.is_char_boundary(at)).map(move |at| (sample, at)))
    {
        let (before, after) = sample.split_at(at);
        let rest = after.chars().next().map_or(after, |c| &after[c.len_utf8()..]);
        let mut edit = |text: String| {
            edits += 1;
            accepted_edits += usize::from(compare_fast(&format!("an edit at byte {at}"), &text));
        };
        edit(format!("{before}{rest}"));
        for c in CHARACTERS {
            edit(format!("{before}{c}{after}"));
            edit(format!("{before}{c}{rest}"));
        }
    }
    // Chains of one to three edits of each corpus file, spread over it by prime strides: a
    // character put in or taken out, or a copy of one of its lines put at a line start.
    let mut accepted_mutants = 0;
    for round in 0..600 {
        let (name, base) = &corpus[round % corpus.len()];
        let lines: Vec<&str> = base.lines().collect();
        let mut text = base.clone();
        for step in round * 3..round * 3 + 1 + round % 3 {
            let mut at = step * 7919 % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            match step % 3 {
                0 => text.insert(at, CHARACTERS[step % CHARACTERS.len()]),
                1 => {
                    let end = (at + 1..=text.len()).find(|&end| text.is_char_boundary(end)).unwrap_or(at);
                    text.replace_range(at..end, "");
                }
                _ => {
                    let line = format!(
                        "{}{}\n",
                        " ".repeat(step % 5),
                        lines.get(step * 31 % lines.len().max(1)).map_or("", |line| line.trim_start())
                    );
                    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
                    text.insert_str(start, &line);
                }
            }
        }
        accepted_mutants += usize::from(compare_fast(&format!("edit chain {round} of {name}"), &text));
    }
    // A key's `:` is at most 1024 characters past its start, quotes, `''` and spaces included.
    for length in 990..1030 {
        let k = "k".repeat(length);
        let keys =
            [k.clone(), format!("\"{k}\""), format!("'{k}'"), format!("'{}'", "''".repeat(length / 2)), format!("a{}", " ".repeat(length))];
        for key in keys {
            for text in [format!("{key}: 1\n"), format!("x: 1\n{key}: 1\n"), format!("- {key}: v\n")] {
                compare_fast("a long key", &text);
            }
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
    let rendered: Vec<&String> = declined.iter().filter(|name| name.ends_with("ray-cluster.yaml.snap")).collect();
    assert!(rendered.is_empty(), "the fast path must read the RayClusters gke-rl renders; it declines {rendered:?}");
    assert!(BLOCK_SAMPLES.iter().all(|sample| Node::parse_block(sample).is_some()), "the samples are in the subset");
    assert!(
        accepted_edits > 5_000 && accepted_mutants > 100,
        "the fast path read {accepted_edits} of {edits} edits and {accepted_mutants} edit chains"
    );
}

/// Each construct the fast path reads, for the one-character edits.
const BLOCK_SAMPLES: &[&str] = &[
    "# c
a: 1
b: \"two\" # c
'c': 'it''s'
d:
  - x y
  - \"y\"
  - [p, \"q\", 'r', -s, 1]
  - {}
  - |
    lit
      more

    end
  - |-
    strip
  -
  - k: v
    k2:
      - n
e:
- indentless
- f: g
  h:
i: []
j: ~
k: -1.5e3
l: yes
",
    "a:\n- |\n  x\n\n  y\n  # c\n- b:\n  - |-\n    z\n",
    "- a: |\n   x\n  b: 'y'\n-   |\n    z\n    \n",
    "a:\n- # c\n- x\nb:\n  - # d\n",
];

/// Where two trees first differ: the path, and the two nodes there without their children.
fn first_difference(fast: &Node, full: &Node) -> String {
    let shallow = |node: &Node| match &node.value {
        Value::Map(entries) => format!("map of {} at {:?} key {:?}", entries.len(), node.at(), node.key_at),
        Value::Seq(items) => format!("list of {} at {:?} key {:?}", items.len(), node.at(), node.key_at),
        _ => format!("{node:?}"),
    };
    let children = match (&fast.value, &full.value) {
        (Value::Map(a), Value::Map(b)) if a.len() == b.len() && a.iter().zip(b).all(|((ka, _), (kb, _))| ka == kb) => {
            a.iter().zip(b).map(|((key, a), (_, b))| (key.clone(), a, b)).collect()
        }
        (Value::Seq(a), Value::Seq(b)) if a.len() == b.len() => {
            a.iter().zip(b).enumerate().map(|(i, (a, b))| (i.to_string(), a, b)).collect()
        }
        _ => Vec::new(),
    };
    let same_here = (fast.at(), fast.key_at) == (full.at(), full.key_at);
    match children.into_iter().find(|(_, a, b)| a != b) {
        Some((step, a, b)) if same_here => format!("{step}/{}", first_difference(a, b)),
        _ => format!("\n  fast: {}\n  full: {}", shallow(fast), shallow(full)),
    }
}

/// Issue 51, class 7: NEL, LS and PS end a line for Kubernetes' YAML 1.1 reader (go-yaml) and
/// not for YAML 1.2: refused wherever they are, by both paths, at their line and column.
#[test]
fn unicode_line_ends_are_refused_where_they_are() {
    for end in ['\u{85}', '\u{2028}', '\u{2029}'] {
        for (text, at) in
            [(format!("a: 1\nb: x{end}y\n"), (2, 5)), (format!("a: |\n  one{end}two\n"), (2, 6)), (format!("a: 1 # note{end}\n"), (1, 12))]
        {
            let Err(gke_rl_yaml::Error::Syntax { message, line, column }) = Node::try_parse(&text) else { panic!("{text:?} was read") };
            assert!(message.contains("Unicode line end") && message.contains("escape"), "{message}");
            assert_eq!((line, column), at, "{text:?}");
        }
    }
}

//! `run_nemo_rl.sh`: its `export` lines and the NeMo-RL launch line, split into shell words
//! with positions, and each `key=value` override typed by Hydra's value rules
//! (NVIDIA-NeMo/RL `nemo_rl/utils/config.py` `parse_hydra_overrides`, v0.4.0).

use gke_rl::diagnostic::Diagnostic;
use gke_rl::envsh;

/// A word of the launch command, after shell quote removal.
#[derive(Clone, Debug, PartialEq)]
pub struct Word {
    /// The text the program receives (quotes removed, escapes applied).
    pub text: String,
    /// Whether it contains a `$` expansion, so its value is only known at run time.
    pub dynamic: bool,
    /// 1-based line and column where the word starts.
    pub at: (u32, u32),
}

/// What Hydra makes of an override value.
#[derive(Clone, Debug, PartialEq)]
pub enum HydraValue {
    /// `null`.
    Null,
    /// `true`/`false`, any case.
    Bool(bool),
    /// A whole number.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string; `quoted` when Hydra itself saw quotes (so `'20'` stays the text "20").
    Str {
        /// The string.
        text: String,
        /// Whether Hydra saw quotes around it.
        quoted: bool,
    },
    /// A `[…]` list or `{…}` mapping.
    Collection,
    /// Set by the shell at run time (`"$var"`).
    Dynamic,
}

/// One `[+|++|~]key=value` argument.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    /// `""`, `"+"`, `"++"` or `"~"`.
    pub prefix: String,
    /// Dotted key.
    pub key: String,
    /// The value as Hydra types it.
    pub value: HydraValue,
    /// Where the argument starts.
    pub at: (u32, u32),
    /// Where the value starts.
    pub value_at: (u32, u32),
}

/// The parts of the job script the rules read.
#[derive(Clone, Debug, Default)]
pub struct JobScript {
    /// `export NAME=value` statements, wherever they are.
    pub exports: Vec<envsh::Assignment>,
    /// The NeMo-RL launch command, when the script has one.
    pub launch: Option<Launch>,
}

/// `… python examples/run_grpo_math.py --config FILE overrides…`.
#[derive(Clone, Debug)]
pub struct Launch {
    /// Where the launch command starts.
    pub at: (u32, u32),
    /// The Python script it runs, as written (`examples/run_grpo_math.py`).
    pub script: String,
    /// Where that script is named.
    pub script_at: (u32, u32),
    /// The `--config` value.
    pub config: Option<Word>,
    /// The overrides, in order.
    pub overrides: Vec<Override>,
}

/// Reads the script. Never fails: what it cannot read is simply absent.
pub fn parse(text: &str) -> JobScript {
    let mut script = JobScript::default();
    for (index, line) in text.lines().enumerate() {
        let line_number = u32::try_from(index + 1).unwrap_or(u32::MAX);
        if line.trim_start().starts_with("export ")
            && let Ok(assignments) = envsh::parse(line)
        {
            script.exports.extend(assignments.into_iter().map(|mut a| {
                a.name_at.0 = line_number;
                a.value_at.0 = line_number;
                a
            }));
        }
        let is_launch = line.contains(".py") && (line.contains("python") || line.contains("uv run")) && !line.trim_start().starts_with('#');
        if script.launch.is_none() && is_launch {
            let offset = text.lines().take(index).map(|l| l.len() + 1).sum::<usize>();
            let words = split_words(text.get(offset..).unwrap_or_default(), line_number);
            script.launch = Some(launch(&words, (line_number, 1)));
        }
    }
    script
}

fn launch(words: &[Word], at: (u32, u32)) -> Launch {
    let script = words.iter().find(|w| w.text.ends_with(".py"));
    let (script_at, script) = script.map_or((at, String::new()), |w| (w.at, w.text.clone()));
    let mut rest = words.iter().skip_while(|w| !w.text.ends_with(".py")).skip(1).peekable();
    let mut config = None;
    let mut overrides = Vec::new();
    while let Some(word) = rest.next() {
        if word.text == "--config" {
            config = rest.next().cloned();
        } else if let Some(value) = word.text.strip_prefix("--config=") {
            let at = (word.at.0, word.at.1 + 9);
            config = Some(Word { text: value.to_owned(), dynamic: word.dynamic, at });
        } else if let Some((key, value)) = word.text.split_once('=') {
            let prefix_len = key.len() - key.trim_start_matches(['+', '~']).len();
            let value_column = word.at.1 + u32::try_from(key.chars().count() + 1).unwrap_or(0);
            overrides.push(Override {
                prefix: key[..prefix_len].to_owned(),
                key: key[prefix_len..].to_owned(),
                value: if word.dynamic { HydraValue::Dynamic } else { hydra_value(value) },
                at: word.at,
                value_at: (word.at.0, value_column),
            });
        }
    }
    Launch { at, script, script_at, config, overrides }
}

/// Hydra's typing of an override value (facebookresearch/hydra `hydra/grammar/OverrideParser.g4`, v1.3.2).
pub fn hydra_value(raw: &str) -> HydraValue {
    let value = raw.trim();
    let quoted =
        value.len() >= 2 && ((value.starts_with('\'') && value.ends_with('\'')) || (value.starts_with('"') && value.ends_with('"')));
    if quoted {
        return HydraValue::Str { text: value[1..value.len() - 1].to_owned(), quoted: true };
    }
    let lower = value.to_ascii_lowercase();
    if lower == "null" {
        return HydraValue::Null;
    }
    if lower == "true" || lower == "false" {
        return HydraValue::Bool(lower == "true");
    }
    if value.starts_with('[') || value.starts_with('{') {
        return HydraValue::Collection;
    }
    if let Ok(n) = value.parse::<i64>() {
        return HydraValue::Int(n);
    }
    let looks_float =
        value.chars().any(|c| matches!(c, '.' | 'e' | 'E')) && value.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c));
    if looks_float && let Ok(x) = value.parse::<f64>() {
        return HydraValue::Float(x);
    }
    HydraValue::Str { text: value.to_owned(), quoted: false }
}

/// The first thing bash would refuse or misread in a script: a CRLF line ending, or a quote,
/// `${`, `$(`, backquote or here-document still open at the end of the file.
pub fn syntax_error(text: &str) -> Option<Diagnostic> {
    if let Some(at) = envsh::crlf_at(text) {
        return Some(envsh::crlf(at));
    }
    let mut open: Vec<(char, (u32, u32))> = Vec::new();
    let mut heredoc: Option<(String, bool, (u32, u32))> = None;
    let mut lines = text.split('\n').enumerate();
    while let Some((index, line)) = lines.next() {
        let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
        let mut chars = line.chars().enumerate().peekable();
        let mut word_start = true;
        while let Some((column, c)) = chars.next() {
            let at = (number, u32::try_from(column + 1).unwrap_or(u32::MAX));
            let context = open.last().map(|(c, _)| *c);
            let was_word_start = std::mem::replace(&mut word_start, c.is_whitespace() || ";|&(".contains(c));
            match (context, c) {
                (Some('\''), '\'') | (Some('"'), '"') | (Some('`'), '`') | (Some('('), ')') | (Some('{'), '}') => {
                    open.pop();
                }
                (Some('\''), _) => {}
                (_, '\\') => {
                    chars.next();
                }
                (Some('"'), '\'') => {}
                (_, '$') if chars.peek().is_some_and(|(_, n)| *n == '(' || *n == '{') => {
                    let (_, bracket) = chars.next().expect("peeked");
                    open.push((bracket, at));
                }
                (_, '"' | '`') => open.push((c, at)),
                (Some('"'), _) => {}
                (_, '\'') => open.push((c, at)),
                (None | Some('('), '#') if was_word_start => break,
                (None | Some('('), '(') => open.push((c, at)),
                (None, '<') if chars.peek().is_some_and(|(_, n)| *n == '<') => {
                    chars.next();
                    if chars.peek().is_some_and(|(_, n)| *n == '<') {
                        chars.next();
                        continue;
                    }
                    let strip_tabs = chars.next_if(|(_, n)| *n == '-').is_some();
                    let rest: String = chars.by_ref().map(|(_, c)| c).collect();
                    let word = rest.trim_start().split(|c: char| c.is_whitespace() || ";|&<>)".contains(c)).next().unwrap_or("");
                    let word = word.trim_matches(['\'', '"', '\\']).to_owned();
                    if !word.is_empty() {
                        heredoc = Some((word, strip_tabs, at));
                    }
                }
                _ => {}
            }
        }
        if let Some((word, strip_tabs, at)) = heredoc.take() {
            let closed = lines.by_ref().any(|(_, body)| if strip_tabs { body.trim_start_matches('\t') } else { body } == word);
            if !closed {
                return Some(unclosed(at, &format!("here-document `<<{word}`"), &format!("end it with a line holding only `{word}`")));
            }
        }
    }
    let (opener, at) = open.pop()?;
    let (what, fix) = match opener {
        '\'' => ("single quote", "close it with `'`"),
        '"' => ("double quote", "close it with `\"`"),
        '`' => ("backquote", "close it with a backquote, or use `$(…)`"),
        '(' => ("`(`", "close it with `)`"),
        _ => ("`${`", "close it with `}`"),
    };
    Some(unclosed(at, what, fix))
}

fn unclosed(at: (u32, u32), what: &str, fix: &str) -> Diagnostic {
    Diagnostic::error(
        "shell-unclosed",
        at,
        format!("this {what} is never closed; bash stops with a syntax error at the end of the file"),
        fix,
    )
}

/// Splits one shell command (with `\` line continuations) into words, from the start of
/// `text`, which begins at `first_line`. Stops at an unquoted newline, `;`, `|`, `&` or `#`.
fn split_words(text: &str, first_line: u32) -> Vec<Word> {
    let mut words = Vec::new();
    let mut chars = text.chars().peekable();
    let (mut line, mut column) = (first_line, 1u32);
    let mut current: Option<Word> = None;
    let advance = |c: char, line: &mut u32, column: &mut u32| {
        if c == '\n' {
            *line += 1;
            *column = 1;
        } else {
            *column += 1;
        }
    };
    while let Some(c) = chars.next() {
        let at = (line, column);
        advance(c, &mut line, &mut column);
        match c {
            ' ' | '\t' | '\r' => words.extend(current.take()),
            '\n' | ';' | '|' | '&' => break,
            '#' if current.is_none() => break,
            '\\' => match chars.next() {
                Some('\n') => {
                    advance('\n', &mut line, &mut column);
                    words.extend(current.take());
                }
                Some(escaped) => {
                    advance(escaped, &mut line, &mut column);
                    current.get_or_insert_with(|| Word { text: String::new(), dynamic: false, at }).text.push(escaped);
                }
                None => break,
            },
            '\'' | '"' => {
                let word = current.get_or_insert_with(|| Word { text: String::new(), dynamic: false, at });
                while let Some(q) = chars.next() {
                    advance(q, &mut line, &mut column);
                    if q == c {
                        break;
                    }
                    if c == '"'
                        && q == '\\'
                        && let Some(escaped) = chars.next_if(|n| "$`\"\\\n".contains(*n))
                    {
                        advance(escaped, &mut line, &mut column);
                        word.text.push(escaped);
                        continue;
                    }
                    word.dynamic |= c == '"' && (q == '$' || q == '`');
                    word.text.push(q);
                }
            }
            _ => {
                let word = current.get_or_insert_with(|| Word { text: String::new(), dynamic: false, at });
                word.dynamic |= c == '$' || c == '`';
                word.text.push(c);
            }
        }
    }
    words.extend(current);
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODELAB: &str = "#!/bin/bash\nexport RAY_OVERRIDE_JOB_RUNTIME_ENV=1\ncd /opt/nemo-rl\n\
        uv run python examples/run_grpo_math.py --config examples/configs/grpo_math_70B_megatron.yaml \\\n  \
        policy.model_name='Qwen/Qwen2.5-72B-Instruct' policy.megatron_cfg.converter_type='Qwen2ForCausalLM' \\\n  \
        logger.wandb_enabled=\"$WANDB\" \"grpo.max_num_steps='20'\" +data.extra=1 checkpointing.metric_name=null\necho done\n";

    #[test]
    fn reads_exports_config_and_overrides_with_positions() {
        let script = parse(CODELAB);
        assert_eq!(script.exports[0].name, "RAY_OVERRIDE_JOB_RUNTIME_ENV");
        assert_eq!(script.exports[0].name_at, (2, 8));
        let launch = script.launch.unwrap();
        assert_eq!(launch.config.unwrap().text, "examples/configs/grpo_math_70B_megatron.yaml");
        let o = &launch.overrides;
        assert_eq!(o.len(), 6);
        assert_eq!((o[1].key.as_str(), o[1].at, o[1].value_at), ("policy.megatron_cfg.converter_type", (5, 49), (5, 84)));
        assert_eq!(o[0].value, HydraValue::Str { text: "Qwen/Qwen2.5-72B-Instruct".into(), quoted: false });
        assert_eq!(o[2].value, HydraValue::Dynamic);
        assert_eq!(o[3].value, HydraValue::Str { text: "20".into(), quoted: true }, "Hydra sees the inner quotes");
        assert_eq!((o[4].prefix.as_str(), o[4].key.as_str()), ("+", "data.extra"));
        assert_eq!(o[5].value, HydraValue::Null);
    }

    #[test]
    fn hydra_types_values_like_hydra() {
        assert_eq!(hydra_value("True"), HydraValue::Bool(true));
        assert_eq!(hydra_value("20"), HydraValue::Int(20));
        assert_eq!(hydra_value("1e3"), HydraValue::Float(1000.0));
        assert_eq!(hydra_value("NULL"), HydraValue::Null);
        assert_eq!(hydra_value("yes"), HydraValue::Str { text: "yes".into(), quoted: false });
        assert_eq!(hydra_value("[1,2]"), HydraValue::Collection);
        assert_eq!(hydra_value("0x10"), HydraValue::Str { text: "0x10".into(), quoted: false });
    }

    #[test]
    fn syntax_errors_point_at_what_bash_cannot_close() {
        assert_eq!(syntax_error(CODELAB), None);
        assert_eq!(syntax_error(include_str!("../../../manifests/run_nemo_rl.sh")), None);
        let fine =
            "cat <<'EOF' > x\nit's fine\nEOF\necho \"$(date) ${A:-x} `id`\" # it's a comment\ncase $x in a) ;; esac\necho $((1 + (2)))\n";
        assert_eq!(syntax_error(fine), None);
        let at = |text: &str| syntax_error(text).map(|d| (d.code, d.line, d.column));
        assert_eq!(at("echo hi\r\n"), Some(("shell-crlf", 1, 8)));
        assert_eq!(at("echo 'a\necho b\n"), Some(("shell-unclosed", 1, 6)));
        assert_eq!(at("python x.py \\\n  a.b=\"c \\\n  d=1\n"), Some(("shell-unclosed", 2, 7)));
        assert_eq!(at("echo ${A\n"), Some(("shell-unclosed", 1, 6)));
        assert_eq!(at("x=$(date\n"), Some(("shell-unclosed", 1, 3)));
        assert_eq!(at("cat <<EOF\nbody\n"), Some(("shell-unclosed", 1, 5)));
    }

    #[test]
    fn scripts_without_a_launch_line_have_none() {
        assert!(parse("echo hi\n").launch.is_none());
        assert!(parse("").exports.is_empty());
    }
}

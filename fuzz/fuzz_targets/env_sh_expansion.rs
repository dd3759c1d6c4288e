//! env.sh expansion: each input byte pair becomes a line that references earlier variables,
//! so chains like `export V9="$V8$V8"` come quickly; with the RSS limit `cargo xtask fuzz`
//! sets, any unbounded growth is a finding.
#![no_main]

use std::fmt::Write as _;

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    let mut text = String::from("export V0=0123456789abcdef\n");
    for (line, pair) in bytes.chunks(2).enumerate().take(200) {
        let line = line + 1;
        let reference = |byte: u8| format!("${{V{}}}", usize::from(byte) % line);
        let (first, second) = (pair[0], pair.get(1).copied().unwrap_or(pair[0]));
        let _ = writeln!(text, "export V{line}=\"{}{}/{}\"", reference(first), reference(second), reference(first ^ second));
    }
    let _ = gke_rl::envsh::import(&text);
    let _ = gke_rl_validate::validate(&[gke_rl_validate::SourceFile { name: "env.sh", text: &text }]);
});

//! Redaction, which every message from a credential plugin or a server passes through: any
//! text, and what it finds are whole tokens of the text.
#![no_main]

libfuzzer_sys::fuzz_target!(|text: &str| {
    for token in gke_rl::secrets::tokens(text) {
        assert!(text.get(token.range.clone()).is_some_and(|t| !t.is_empty()), "{:?} is a slice of the text", token.range);
    }
    let redacted = gke_rl::secrets::redact(text);
    assert!(redacted.len() <= text.len() + gke_rl::secrets::REDACTED.len() * text.len().max(1));
});

//! env.sh: the sh-subset parser and the import into a model must never panic or hang.
#![no_main]

libfuzzer_sys::fuzz_target!(|text: &str| {
    let _ = gke_rl::envsh::parse(text);
    let _ = gke_rl::envsh::import(text);
    let _ = gke_rl::validate::validate(&[gke_rl::validate::SourceFile { name: "env.sh", text }]);
});

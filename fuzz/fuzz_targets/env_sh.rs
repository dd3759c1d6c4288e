//! env.sh: the sh-subset parser, the import into a model, and the rules (see companions.rs).
#![no_main]

#[path = "companions.rs"]
mod companions;

libfuzzer_sys::fuzz_target!(|text: &str| {
    let _ = gke_rl::envsh::import(text);
    companions::check("env.sh", text);
});

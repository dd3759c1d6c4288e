//! ray-cluster.yaml: its view and every rule that reads it (see companions.rs).
#![no_main]

#[path = "companions.rs"]
mod companions;

libfuzzer_sys::fuzz_target!(|text: &str| companions::check("ray-cluster.yaml", text));

//! .rayignore: its view and every rule that reads it, alone and beside the default render.
#![no_main]

use gke_rl::validate::{SourceFile, validate};

libfuzzer_sys::fuzz_target!(|text: &str| {
    let _ = validate(&[SourceFile { name: ".rayignore", text }]);
    let rendered = gke_rl::render(&gke_rl::Deployment::default(), "fuzz").expect("the default renders");
    let mut files: Vec<SourceFile<'_>> = rendered.iter().filter(|a| a.name != ".rayignore").map(|a| SourceFile { name: a.name, text: &a.contents }).collect();
    files.push(SourceFile { name: ".rayignore", text });
    let _ = validate(&files);
});

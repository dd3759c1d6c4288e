//! Blueprints and gcluster deployment files: their views and the blueprint rules.
#![no_main]

use gke_rl::validate::{SourceFile, validate};

libfuzzer_sys::fuzz_target!(|text: &str| {
    let rendered = gke_rl::render(&gke_rl::Deployment::default(), "fuzz").expect("the default renders");
    let mut files: Vec<SourceFile<'_>> = rendered.iter().map(|a| SourceFile { name: a.name, text: &a.contents }).collect();
    files.push(SourceFile { name: "gke-a4.yaml", text });
    let _ = validate(&files);
    let _ = validate(&[SourceFile { name: "gke-a4-deployment.yaml", text }]);
});

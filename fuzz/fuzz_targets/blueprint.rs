//! Blueprints and gcluster deployment files: their views and the blueprint rules.
#![no_main]

use gke_rl_validate::{SourceFile, validate};

libfuzzer_sys::fuzz_target!(|text: &str| {
    let options = gke_rl::RenderOptions { source: "fuzz", regenerate: "fuzz" };
    let rendered = gke_rl::render(&gke_rl::Deployment::default(), &options).expect("the default renders");
    let mut files: Vec<SourceFile<'_>> = rendered.iter().map(SourceFile::from).collect();
    files.push(SourceFile { name: "gke-a4.yaml", text });
    let _ = validate(&files);
    let _ = validate(&[SourceFile { name: "gke-a4-deployment.yaml", text }]);
});

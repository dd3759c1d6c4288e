//! gke-rl.yaml: config loading (typed deserialization, positions, suggestions).
#![no_main]

libfuzzer_sys::fuzz_target!(|text: &str| {
    if let Ok(deployment) = gke_rl::config::from_yaml(text) {
        // Whatever loads must render.
        gke_rl::render(&deployment, "fuzz").expect("a loaded model renders");
    }
});

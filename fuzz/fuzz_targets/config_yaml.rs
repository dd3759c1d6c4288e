//! gke-rl.yaml: config loading (typed deserialization, positions, suggestions).
#![no_main]

libfuzzer_sys::fuzz_target!(|text: &str| {
    if let Ok(deployment) = gke_rl::config::from_yaml(text) {
        // Whatever loads must render.
        let options = gke_rl::RenderOptions { source: "fuzz", regenerate: "fuzz" };
        gke_rl::render(&deployment, &options).expect("a loaded model renders");
    }
});

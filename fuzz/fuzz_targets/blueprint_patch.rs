//! The blueprint patcher: any input is patched or refused with a diagnostic, never a panic;
//! whatever it patches, it patches again to the same text.
#![no_main]

libfuzzer_sys::fuzz_target!(|text: &str| {
    let deployment = gke_rl::Deployment::default();
    if let Ok(patched) = gke_rl::blueprint::patch(text, &deployment) {
        let again = gke_rl::blueprint::patch(&patched, &deployment).expect("a patched blueprint patches again");
        assert_eq!(again, patched, "patching is idempotent");
        let _ = gke_rl::blueprint::unified_diff(text, &patched, "gke-a4.yaml");
    }
});

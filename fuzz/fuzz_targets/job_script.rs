//! run_nemo_rl.sh: the launch-line parser and the NeMo-RL rules.
#![no_main]

libfuzzer_sys::fuzz_target!(|text: &str| {
    let _ = gke_rl::validate::job_script::parse(text);
    let _ = gke_rl::validate::validate(&[gke_rl::validate::SourceFile { name: "run_nemo_rl.sh", text }]);
});

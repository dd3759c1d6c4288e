//! run_nemo_rl.sh: the launch-line parser and the NeMo-RL rules (see companions.rs).
#![no_main]

#[path = "companions.rs"]
mod companions;

libfuzzer_sys::fuzz_target!(|text: &str| {
    let _ = gke_rl_validate::job_script::parse(text);
    companions::check("run_nemo_rl.sh", text);
});

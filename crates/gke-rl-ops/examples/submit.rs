//! Submits a folder to a Ray dashboard and follows the job to its end, printing its log.
//!
//! `cargo run -p gke-rl-ops --example submit -- http://127.0.0.1:8265 ./job bash run.sh`
//! uploads `./job` (its `.gitignore` and `.rayignore` apply, and no file may hold the value of
//! `HF_TOKEN`) and runs `bash run.sh` there. Exits 0 when the job succeeds.

use std::sync::Arc;

use gke_rl_ops::head::HeadOptions;
use gke_rl_ops::jobs::{self, Followed, SubmitOptions};
use gke_rl_ops::{Env, Event, JobEvent, Progress, Question};

/// Prints what a user wants to see, and answers no question (submitting asks none).
struct Printer;

impl Progress for Printer {
    fn event(&self, event: Event<'_>) {
        match event {
            Event::Jobs(JobEvent::Log(text)) => print!("{text}"),
            Event::Jobs(JobEvent::Submitted { id }) => eprintln!("submitted {id}"),
            Event::Jobs(JobEvent::Uploading { uri, bytes, .. }) => eprintln!("uploading {uri} ({bytes} bytes)"),
            Event::Jobs(JobEvent::JobState { status, .. }) => eprintln!("job is {status}"),
            other => eprintln!("{other:?}"),
        }
    }

    fn confirm(&self, _: &Question<'_>) -> Result<bool, gke_rl_ops::Unanswerable> {
        Err(gke_rl_ops::Unanswerable("this example asks nothing".into()))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(address), Some(folder)) = (args.next(), args.next()) else {
        return Err("usage: submit ADDRESS FOLDER [ENTRYPOINT…]".into());
    };
    gke_rl_ray::ensure_crypto_provider();
    let deployment = gke_rl::Deployment::default();
    let render = gke_rl::RenderOptions { source: "examples/submit.rs", regenerate: "cargo run --example submit" };
    let artifacts = gke_rl::render(&deployment, &render)?;
    let options = SubmitOptions { working_dir: Some(folder.into()), entrypoint: args.collect(), ..SubmitOptions::default() };
    let env = Env::real();
    let printer = Arc::new(Printer);

    // Every refusal (a secret in a file, a folder too large) happens before connecting.
    let prepared = jobs::prepare(&deployment, &artifacts, &options, &env, &*printer)?;
    let head =
        gke_rl_ops::mode::connect(&deployment, &HeadOptions { address: Some(address), ..HeadOptions::default() }, &env, printer.clone())
            .await?;
    let id = jobs::submit(&head.client, prepared, &*printer).await?;
    match jobs::follow(&head.client, &id, &env, &*printer).await? {
        Followed::Finished { job, log } => {
            eprint!("{}", log.checkpoint_report());
            eprintln!("{id}: {}", job.status);
            std::process::exit(i32::from(job.status != gke_rl_ray::JobStatus::Succeeded));
        }
        _ => eprintln!("detached from {id}; it keeps running"),
    }
    Ok(())
}

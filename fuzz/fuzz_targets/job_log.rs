//! A job's log as it arrives: cut into the same lines wherever the chunks split, each line free
//! of line ends and at most `MAX_LINE` bytes; the run log reads the same steps and saves however
//! the text is split, and the record reader takes any text.
#![no_main]

use gke_rl_in_cluster::log_lines::{LineBuffer, MAX_LINE};

libfuzzer_sys::fuzz_target!(|input: (&str, Vec<u16>)| {
    let (text, cuts) = input;
    let mut points: Vec<usize> = cuts.iter().map(|c| usize::from(*c) % (text.len() + 1)).filter(|p| text.is_char_boundary(*p)).collect();
    points.sort_unstable();
    points.dedup();
    let mut chunks = Vec::new();
    let mut from = 0;
    for point in points.into_iter().chain([text.len()]) {
        chunks.push(&text[from..point]);
        from = point;
    }
    let whole = LineBuffer::lines([text]);
    assert_eq!(LineBuffer::lines(chunks.iter().copied()), whole, "the same lines, however the text is split");
    assert!(whole.iter().all(|line| line.len() <= MAX_LINE && !line.contains(['\n', '\r'])));

    let mut run = gke_rl_in_cluster::run_log::RunLog::default();
    for chunk in &chunks {
        run.feed(chunk, None);
    }
    let once = gke_rl_in_cluster::run_log::RunLog::of(text);
    assert_eq!((run.steps(), run.saves()), (once.steps(), once.saves()), "the same run, however the text is split");
    let _ = run.checkpoint_report();
    let _ = gke_rl_in_cluster::records::Records::of(text).restarts_summary();
});

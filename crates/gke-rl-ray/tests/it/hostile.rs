//! A dashboard address that answers like an attacker, or a broken proxy, would: endless
//! bodies, huge error pages, redirects to another host, and versions that are not Ray's.
//! Every answer is read within a bound, nothing follows a redirect, and each ends in an error
//! that says what was found (issue 13, items 3, 5 and 19).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use gke_rl_ray::fake::{respond, serve as serve_heads, version_body};
use gke_rl_ray::{Client, ClientOptions, Error, SubmitRequest, Token, TokenSource};

/// [`serve_heads`] for answers that need only the path.
fn serve(answer: impl Fn(&str, &mut TcpStream) + Send + Sync + 'static) -> String {
    serve_heads(move |path, _, stream| answer(path, stream))
}

fn client(address: &str) -> Client {
    let token = Token::new("do-not-leak", TokenSource::Variable).unwrap();
    Client::new(address, ClientOptions { token, ..ClientOptions::default() }).unwrap()
}

#[tokio::test]
async fn an_endless_body_is_cut_off_at_the_bound() {
    let written = Arc::new(AtomicUsize::new(0));
    let counter = written.clone();
    let address = serve(move |_, stream| {
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        let chunk = format!("{:x}\r\n{}\r\n", 1 << 20, "7".repeat(1 << 20));
        while stream.write_all(chunk.as_bytes()).is_ok() {
            counter.fetch_add(1 << 20, Ordering::Relaxed);
        }
    });
    let error = client(&address).version().await.unwrap_err();
    assert!(matches!(error, Error::AnswerTooLarge { .. }), "{error}");
    let error = client(&address).jobs().await.unwrap_err();
    assert!(matches!(error, Error::AnswerTooLarge { limit, .. } if limit == 16 << 20), "{error}");
    // Stopped near the bound: kernel buffers hold a few MiB more than the client read.
    assert!(written.load(Ordering::Relaxed) < 64 << 20, "{} bytes were sent", written.load(Ordering::Relaxed));
}

#[tokio::test]
async fn a_huge_error_body_is_printed_cut_short() {
    let address = serve(|path, stream| match path {
        "/api/version" => respond(stream, "200 OK", "", &version_body("2.46.0")),
        _ => respond(stream, "500 Internal Server Error", "", &"E".repeat(10 << 20)),
    });
    let error = client(&address).jobs().await.unwrap_err().to_string();
    assert!(error.len() < 1000 && error.contains("more bytes"), "{}", &error[..error.len().min(2000)]);
}

#[tokio::test]
async fn redirects_to_another_host_are_refused_and_that_host_hears_nothing() {
    let heard = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = heard.clone();
    let elsewhere = serve(move |path, stream| {
        log.lock().unwrap().push(path.to_owned());
        respond(stream, "200 OK", "", &version_body("2.46.0"));
    });
    let target = elsewhere.clone();
    let address = serve(move |path, stream| {
        respond(stream, "307 Temporary Redirect", &format!("Location: {target}{path}\r\n"), "");
    });
    let client = client(&address);
    let error = client.version().await.unwrap_err();
    assert!(matches!(&error, Error::Redirected { status: 307, location, .. } if location.starts_with(&elsewhere)), "{error}");
    let request = SubmitRequest { entrypoint: "echo hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345".into(), ..SubmitRequest::default() };
    let server: gke_rl_ray::Version = serde_json::from_str(&version_body("2.46.0")).unwrap();
    assert!(matches!(client.submit(&request, &server, &mut |_| {}).await, Err(Error::Redirected { .. })));
    assert!(matches!(client.upload_package("gcs://_ray_pkg_0123456789abcdef.zip", vec![0; 1024]).await, Err(Error::Redirected { .. })));
    assert!(heard.lock().unwrap().is_empty(), "the other host got {:?}", heard.lock().unwrap());
}

#[tokio::test]
async fn versions_that_are_not_rays_are_refused_with_what_was_found() {
    for (body, expected) in [
        ("99".to_owned(), "answered /api/version with `99`"),
        ("garbage".to_owned(), "answered /api/version with `garbage`"),
        (version_body("not-a-version"), "answered /api/version with `not-a-version`"),
        (version_body("1.0.0"), "runs Ray 1.0.0; the Jobs API needs Ray 1.9.0 or newer"),
    ] {
        let address = serve(move |_, stream| respond(stream, "200 OK", "", &body));
        let error = client(&address).version().await.unwrap_err().to_string();
        assert!(error.contains(expected), "{error}");
    }
    let address = serve(|_, stream| respond(stream, "200 OK", "", &version_body("2.99.0")));
    let version = client(&address).version().await.unwrap();
    assert!(!version.is_tested(), "answered, and flagged as untested");
}

#[test]
fn bad_header_values_name_the_header() {
    let headers = BTreeMap::from([("X-Token".to_owned(), "line\nbreak".to_owned())]);
    let error = Client::new("localhost:8265", ClientOptions { headers, ..ClientOptions::default() }).unwrap_err().to_string();
    assert!(error.starts_with("header `X-Token`: its value holds a character") && !error.contains("dashboard address"), "{error}");
}

/// A dashboard that refuses the token, on the HTTP routes and on the log stream's upgrade:
/// each refusal names where the token came from, never the token.
#[tokio::test]
async fn refusals_of_the_token_name_its_source_on_every_route_and_the_log_stream() {
    // As Ray's dashboard answers: 401 without a token, 403 with one it does not know.
    let address = serve_heads(|_, head, stream| {
        let (status, body) = if head.to_ascii_lowercase().contains("\r\nauthorization: bearer s3cret-value\r\n") {
            ("403 Forbidden", "Forbidden: Invalid authentication token")
        } else {
            ("401 Unauthorized", "Unauthorized: Missing authentication token")
        };
        respond(stream, status, "", body);
    });
    let from_file = TokenSource::PathVariable("/run/ray-token".into());
    let token = Token::new("s3cret-value", from_file).unwrap();
    let client = Client::new(&address, ClientOptions { token, ..ClientOptions::default() }).unwrap();
    let errors = [client.version().await.unwrap_err(), client.jobs().await.unwrap_err(), client.tail("raysubmit_x").await.err().unwrap()];
    for error in errors {
        let text = error.to_string();
        assert!(matches!(error, Error::Unauthorized { status: 403, .. }), "{text}");
        assert!(
            text.contains("with the token from /run/ray-token (the file RAY_AUTH_TOKEN_PATH names), which is not this cluster's token"),
            "{text}"
        );
        assert!(!text.contains("s3cret"), "{text}");
    }
    let anonymous = Client::new(&address, ClientOptions::default()).unwrap();
    let text = anonymous.job("raysubmit_y").await.unwrap_err().to_string();
    assert!(
        text.contains("(401: Unauthorized: Missing authentication token): it needs the cluster's Ray token, and none was given"),
        "{text}"
    );
}

#[test]
fn a_token_in_the_headers_is_refused_before_any_request() {
    for name in ["Authorization", "x-ray-authorization"] {
        let headers = BTreeMap::from([(name.to_owned(), "Bearer s3cret".to_owned())]);
        let error = Client::new("localhost:8265", ClientOptions { headers, ..ClientOptions::default() }).unwrap_err().to_string();
        assert!(error.contains("would carry a token") && error.contains("RAY_AUTH_TOKEN") && !error.contains("s3cret"), "{error}");
    }
}

async fn follow_within(address: &str, idle: std::time::Duration) -> (Result<gke_rl_ray::JobDetails, Error>, String, Vec<String>) {
    let options = gke_rl_ray::FollowOptions { idle, ..gke_rl_ray::FollowOptions::default() };
    let (mut log, mut reconnects) = (String::new(), Vec::new());
    let client = client(address);
    let follow = gke_rl_ray::follow(&client, gke_rl_ray::fake::JOB, &options, |event| match event {
        gke_rl_ray::Event::Log(text) => log.push_str(text),
        gke_rl_ray::Event::Reconnecting(why) | gke_rl_ray::Event::Unread(why) => reconnects.push(why.to_owned()),
    });
    let job = tokio::time::timeout(std::time::Duration::from_secs(30), follow).await.expect("the follow ends");
    (job, log, reconnects)
}

/// Issue 31, item 1: the job ended, but its stream went silent instead of closing. The follow
/// asks the state after the idle time and ends with the rest of the log.
#[tokio::test]
async fn a_silent_stream_does_not_hold_the_follow_past_the_job() {
    let address = gke_rl_ray::fake::silent_head("step 1\n", "step 1\nstep 2\ndone\n", |_| "SUCCEEDED");
    let (job, log, reconnects) = follow_within(&address, std::time::Duration::from_millis(500)).await;
    assert_eq!(job.unwrap().status, gke_rl_ray::JobStatus::Succeeded);
    assert_eq!((log.as_str(), reconnects.len()), ("step 1\nstep 2\ndone\n", 0), "{reconnects:?}");
}

/// Issue 51, class 6: reading an ended job's log for a report, a stream that goes quiet before
/// its end (a half-open port-forward) is opened again and read to its end, never taken as the
/// whole log; a running job's quiet stream is its log so far.
#[tokio::test]
async fn an_ended_jobs_log_is_read_to_its_end_behind_a_quiet_stream() {
    let quiet = std::time::Duration::from_millis(300);
    let within = std::time::Duration::from_secs(30);
    for (status, read, log) in
        [("SUCCEEDED", gke_rl_ray::LogRead::Whole, "step 1\nstep 2\ndone\n"), ("RUNNING", gke_rl_ray::LogRead::SoFar, "step 1\n")]
    {
        let address = gke_rl_ray::fake::silent_head("step 1\n", "step 1\nstep 2\ndone\n", move |_| status);
        let mut text = String::new();
        let got = gke_rl_ray::read_log(&client(&address), gke_rl_ray::fake::JOB, quiet, within, |chunk| text.push_str(chunk)).await;
        assert_eq!((got.unwrap(), text.as_str()), (read, log), "{status}");
    }
}

/// Issue 65, class 1: a stream that gives nothing proves nothing (Ray 2.54 sends a short log
/// only after about 2 s): the whole log is read then, for an ended job as for a running one,
/// and a log that is empty there too is said to be empty, never whole.
#[tokio::test]
async fn a_stream_that_gives_nothing_is_no_answer() {
    let quiet = std::time::Duration::from_millis(300);
    let within = std::time::Duration::from_secs(30);
    let refused = "gke-rl: /lustre is not there, so the runs folder /lustre/gke-rl/runs is on storage this node does not have\n";
    for (whole, status, read) in [
        (refused, "FAILED", gke_rl_ray::LogRead::Whole),
        (refused, "RUNNING", gke_rl_ray::LogRead::SoFar),
        ("", "SUCCEEDED", gke_rl_ray::LogRead::Empty),
        ("", "RUNNING", gke_rl_ray::LogRead::Empty),
    ] {
        let address = gke_rl_ray::fake::stalled_head("", whole, status);
        let mut text = String::new();
        let got = gke_rl_ray::read_log(&client(&address), gke_rl_ray::fake::JOB, quiet, within, |chunk| text.push_str(chunk)).await;
        assert_eq!((got.unwrap(), text.as_str()), (read, whole), "{status}");
    }
}

/// Issue 65, class 1: an ended job's stream that stalls at the same place on every replay
/// proves no end: a short log's rest is read from the whole log.
#[tokio::test]
async fn a_replay_that_stalls_where_the_stream_did_proves_no_end() {
    let quiet = std::time::Duration::from_millis(300);
    let within = std::time::Duration::from_secs(30);
    let address = gke_rl_ray::fake::stalled_head("step 1\n", "step 1\nstep 2\ngke-rl: the run ended\n", "FAILED");
    let mut text = String::new();
    let got = gke_rl_ray::read_log(&client(&address), gke_rl_ray::fake::JOB, quiet, within, |chunk| text.push_str(chunk)).await;
    assert_eq!((got.unwrap(), text.as_str()), (gke_rl_ray::LogRead::Whole, "step 1\nstep 2\ngke-rl: the run ended\n"));
}

/// Issue 31, item 1: the job runs on while its stream is half-open, or merely quiet (Ray's
/// handler never answers a ping, so the two look alike). The follow waits on, asking the job's
/// state at each idle time, without reconnecting (which would download the whole log again),
/// and ends with the job and the rest of its log.
#[tokio::test]
async fn a_quiet_or_half_open_stream_waits_for_the_job_without_reconnecting() {
    let started = std::time::Instant::now();
    let status = move |_| if started.elapsed() > std::time::Duration::from_millis(1800) { "SUCCEEDED" } else { "RUNNING" };
    let address = gke_rl_ray::fake::silent_head("step 1\n", "step 1\nstep 2\ndone\n", status);
    let (job, log, reconnects) = follow_within(&address, std::time::Duration::from_millis(500)).await;
    assert_eq!(job.unwrap().status, gke_rl_ray::JobStatus::Succeeded);
    assert_eq!((log.as_str(), reconnects.len()), ("step 1\nstep 2\ndone\n", 0), "{reconnects:?}");
}

/// Issue 31, item 1: when the end of an ended job's log cannot be read, the follow says so and
/// still returns the job, so what waits for its end (`--then suspend`) runs.
#[tokio::test]
async fn an_unreadable_end_of_log_still_ends_the_follow_with_the_job() {
    let address = serve_heads(|path, head, stream| match path {
        "/api/version" => respond(stream, "200 OK", "", &version_body("2.46.0")),
        "/api/jobs/raysubmit_x" => respond(stream, "200 OK", "", &gke_rl_ray::fake::job_body("SUCCEEDED")),
        "/api/jobs/raysubmit_x/logs/tail" => {
            let mut socket = gke_rl_ray::fake::upgrade(head, stream);
            let _ = socket.send(tokio_tungstenite::tungstenite::Message::text("step 1\n"));
            std::thread::sleep(std::time::Duration::from_secs(600));
        }
        _ => respond(stream, "503 Service Unavailable", "", "busy"),
    });
    let options = gke_rl_ray::FollowOptions { idle: std::time::Duration::from_millis(500), ..gke_rl_ray::FollowOptions::default() };
    let (mut log, mut unread) = (String::new(), Vec::new());
    let client = client(&address);
    let follow = gke_rl_ray::follow(&client, gke_rl_ray::fake::JOB, &options, |event| match event {
        gke_rl_ray::Event::Log(text) => log.push_str(text),
        gke_rl_ray::Event::Unread(why) => unread.push(why.to_owned()),
        gke_rl_ray::Event::Reconnecting(_) => {}
    });
    let job = tokio::time::timeout(std::time::Duration::from_secs(30), follow).await.expect("the follow ends");
    assert_eq!(job.unwrap().status, gke_rl_ray::JobStatus::Succeeded);
    assert_eq!(log, "step 1\n");
    assert!(unread.len() == 1 && unread[0].contains("503"), "{unread:?}");
}

/// Issue 52: a head whose job agent is not up yet answers 500 "No available agent to submit
/// job, please try again later"; the submit asks again, within a bound, saying so each time.
#[tokio::test]
async fn a_head_without_its_job_agent_yet_is_asked_again() {
    let posts = Arc::new(AtomicUsize::new(0));
    let counted = posts.clone();
    let address = serve_heads(move |path, head, stream| match path {
        "/api/jobs/" if head.starts_with("POST") => {
            if counted.fetch_add(1, Ordering::SeqCst) < 2 {
                respond(stream, "500 Internal Server Error", "", "No available agent to submit job, please try again later.");
            } else {
                respond(stream, "200 OK", "", r#"{"job_id": "raysubmit_x", "submission_id": "raysubmit_x"}"#);
            }
        }
        _ => respond(stream, "404 Not Found", "", ""),
    });
    let request = SubmitRequest { entrypoint: "true".into(), submission_id: Some("raysubmit_x".into()), ..SubmitRequest::default() };
    let server: gke_rl_ray::Version = serde_json::from_str(&version_body("2.46.0")).unwrap();
    let mut heard = Vec::new();
    let id = client(&address).submit(&request, &server, &mut |e| heard.push(e.to_string())).await.unwrap();
    assert_eq!((id.as_str(), posts.load(Ordering::SeqCst)), ("raysubmit_x", 3));
    assert_eq!(heard.len(), 2, "{heard:?}");
    assert!(heard[0].contains("No available agent"), "{heard:?}");
}

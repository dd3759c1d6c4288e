//! A dashboard address that answers like an attacker, or a broken proxy, would: endless
//! bodies, huge error pages, redirects to another host, and versions that are not Ray's.
//! Every answer is read within a bound, nothing follows a redirect, and each ends in an error
//! that says what was found (issue 13, items 3, 5 and 19).

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use gke_rl_ray::{Client, ClientOptions, Error, SubmitRequest, Token, TokenSource};

/// A raw HTTP/1.1 server on a thread: each request's path goes to `answer`, which writes the
/// whole response (and may keep writing until the client hangs up). Returns its address.
fn serve(answer: impl Fn(&str, &mut TcpStream) + Send + Sync + 'static) -> String {
    serve_heads(move |path, _, stream| answer(path, stream))
}

/// [`serve`], with each request's head (its request line and headers) given to `answer` too.
fn serve_heads(answer: impl Fn(&str, &str, &mut TcpStream) + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let answer = answer.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head);
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                answer(&path, &head, &mut stream);
            });
        }
    });
    address
}

fn respond(stream: &mut TcpStream, status: &str, headers: &str, body: &str) {
    let response = format!("HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    let _ = stream.write_all(response.as_bytes());
}

fn version_body(ray: &str) -> String {
    format!(r#"{{"version": "4", "ray_version": "{ray}", "ray_commit": "x"}}"#)
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
    assert!(matches!(client.submit(&request, &server).await, Err(Error::Redirected { .. })));
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

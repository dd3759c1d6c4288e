//! A Ray head that misbehaves on purpose, for tests of this crate and of the `gke-rl` binary
//! (feature `fake`): raw HTTP/1.1 on a loopback port, one thread per connection.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio_tungstenite::tungstenite::{self, Message};

/// The submission id the fake heads know.
pub const JOB: &str = "raysubmit_x";

/// A raw HTTP/1.1 server on a thread: each request's path and head (request line and headers)
/// go to `answer`, which writes the whole response (and may keep writing, or go silent).
/// Returns its address, `http://127.0.0.1:<port>`.
pub fn serve(answer: impl Fn(&str, &str, &mut TcpStream) + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let address = format!("http://{}", listener.local_addr().expect("a bound address"));
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let answer = answer.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 && stream.read(&mut byte).is_ok_and(|n| n == 1) {
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

/// Writes a whole response with `Connection: close`.
pub fn respond(stream: &mut TcpStream, status: &str, headers: &str, body: &str) {
    let response = format!("HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    let _ = stream.write_all(response.as_bytes());
}

/// `/api/version`'s body for Ray `ray`.
pub fn version_body(ray: &str) -> String {
    format!(r#"{{"version": "4", "ray_version": "{ray}", "ray_commit": "x"}}"#)
}

/// `/api/jobs/<JOB>`'s body in state `status`.
pub fn job_body(status: &str) -> String {
    format!(r#"{{"type": "SUBMISSION", "job_id": null, "submission_id": "{JOB}", "status": "{status}", "entrypoint": "x"}}"#)
}

/// Answers the WebSocket upgrade whose request head is `head`, and gives the server's socket.
pub fn upgrade(head: &str, stream: &TcpStream) -> tungstenite::WebSocket<TcpStream> {
    let key = head
        .lines()
        .find_map(|line| line.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("sec-websocket-key")))
        .map(|(_, key)| key.trim().to_owned())
        .unwrap_or_default();
    let mut stream = stream.try_clone().expect("a second handle on the socket");
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    let response =
        format!("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n");
    let _ = stream.write_all(response.as_bytes());
    tungstenite::WebSocket::from_raw_socket(stream, tungstenite::protocol::Role::Server, None)
}

/// A Ray head whose log stream for [`JOB`] sends `first`, then goes silent without closing, as
/// a half-open port-forward does (and without reading, as Ray's handler never does). A later connection replays
/// `whole` and closes, as a head does for an ended job. `/logs` holds `whole`, and the job's
/// state is `status(n)`, where n counts the stream's connections so far.
pub fn silent_head(first: &'static str, whole: &'static str, status: impl Fn(usize) -> &'static str + Send + Sync + 'static) -> String {
    let connections = Arc::new(AtomicUsize::new(0));
    let job = format!("/api/jobs/{JOB}");
    serve(move |path, head, stream| match path.strip_prefix(job.as_str()) {
        _ if path == "/api/version" => respond(stream, "200 OK", "", &version_body("2.46.0")),
        _ if path == "/api/jobs/" => respond(stream, "200 OK", "", &format!("[{}]", job_body(status(connections.load(Ordering::SeqCst))))),
        Some("" | "/") => respond(stream, "200 OK", "", &job_body(status(connections.load(Ordering::SeqCst)))),
        Some("/logs") => respond(stream, "200 OK", "", &serde_json::json!({ "logs": whole }).to_string()),
        Some("/logs/tail") => {
            let mut socket = upgrade(head, stream);
            if connections.fetch_add(1, Ordering::SeqCst) > 0 {
                let _ = socket.send(Message::text(whole));
                let _ = socket.close(None);
                while socket.read().is_ok() {}
                return;
            }
            let _ = socket.send(Message::text(first));
            // Read nothing, and never close.
            std::thread::sleep(Duration::from_secs(600));
        }
        _ => respond(stream, "404 Not Found", "", ""),
    })
}

/// A Ray head whose log stream for [`JOB`] sends `first` on every connection (nothing, when it
/// is empty), then stalls without closing, as Ray 2.54's tail may with a log of a few lines;
/// `/logs` holds `whole`, and the job's state is `status`.
pub fn stalled_head(first: &'static str, whole: &'static str, status: &'static str) -> String {
    let job = format!("/api/jobs/{JOB}");
    serve(move |path, head, stream| match path.strip_prefix(job.as_str()) {
        _ if path == "/api/version" => respond(stream, "200 OK", "", &version_body("2.54.0")),
        Some("" | "/") => respond(stream, "200 OK", "", &job_body(status)),
        Some("/logs") => respond(stream, "200 OK", "", &serde_json::json!({ "logs": whole }).to_string()),
        Some("/logs/tail") => {
            let mut socket = upgrade(head, stream);
            if !first.is_empty() {
                let _ = socket.send(Message::text(first));
            }
            std::thread::sleep(Duration::from_secs(600));
        }
        _ => respond(stream, "404 Not Found", "", ""),
    })
}

/// A Ray head whose [`JOB`] has SUCCEEDED and whose log stream sends `bytes` bytes of a
/// progress bar drawn again and again with `\r`, never a `\n` (tqdm's way), in messages of about 1 MiB,
/// then closes.
pub fn progress_bar_head(bytes: usize) -> String {
    let job = format!("/api/jobs/{JOB}");
    serve(move |path, head, stream| match path.strip_prefix(job.as_str()) {
        _ if path == "/api/version" => respond(stream, "200 OK", "", &version_body("2.46.0")),
        _ if path == "/api/jobs/" => respond(stream, "200 OK", "", &format!("[{}]", job_body("SUCCEEDED"))),
        Some("" | "/") => respond(stream, "200 OK", "", &job_body("SUCCEEDED")),
        Some("/logs/tail") => {
            let mut socket = upgrade(head, stream);
            let bar: String = (0..1 << 16).map(|n| format!("\rloading {:>3}%", n % 100)).collect();
            let mut sent = 0;
            while sent < bytes && socket.send(Message::text(bar.as_str())).is_ok() {
                sent += bar.len();
            }
            let _ = socket.close(None);
            while socket.read().is_ok() {}
        }
        _ => respond(stream, "404 Not Found", "", ""),
    })
}

/// A Ray head whose [`JOB`] has SUCCEEDED with a log of more than `bytes` bytes: `blocks` of
/// text in order, then `filler` again and again, then `last`; sent on its log stream in
/// messages of about 1 MiB. `/logs` answers 500, as a head does for a log past what it sends
/// whole: only a streamed read gets through.
pub fn long_log_head(blocks: Vec<String>, filler: String, bytes: usize, last: String) -> String {
    let job = format!("/api/jobs/{JOB}");
    serve(move |path, head, stream| match path.strip_prefix(job.as_str()) {
        _ if path == "/api/version" => respond(stream, "200 OK", "", &version_body("2.54.0")),
        _ if path == "/api/jobs/" => respond(stream, "200 OK", "", &format!("[{}]", job_body("SUCCEEDED"))),
        Some("" | "/") => respond(stream, "200 OK", "", &job_body("SUCCEEDED")),
        Some("/logs") => respond(stream, "500 Internal Server Error", "", "the log is too large"),
        Some("/logs/tail") => {
            let mut socket = upgrade(head, stream);
            let batch = filler.repeat((1 << 20) / filler.len().max(1) + 1);
            let mut sent = 0;
            let mut ok = blocks.iter().all(|b| socket.send(Message::text(b.as_str())).is_ok());
            while ok && sent < bytes {
                ok = socket.send(Message::text(batch.as_str())).is_ok();
                sent += batch.len();
            }
            let _ = socket.send(Message::text(last.as_str()));
            let _ = socket.close(None);
            while socket.read().is_ok() {}
        }
        _ => respond(stream, "404 Not Found", "", ""),
    })
}

//! The Ray Jobs REST API (version "4", Ray 2.46 to 2.60), typed.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::StreamExt as _;
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use tokio_tungstenite::tungstenite::Message;

use crate::Error;
use crate::tested::{NEWEST_TESTED_RAY, OLDEST_TESTED_RAY};

/// Sent on every request: Ray 2.46's dashboard answers 500 to requests without one.
const USER_AGENT: &str = concat!("gke-rl/", env!("CARGO_PKG_VERSION"));

/// `GET /api/version`.
#[allow(missing_docs)] // fields as Ray's `VersionResponse` names them
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Version {
    pub version: String,
    pub ray_version: String,
    #[serde(default)]
    pub ray_commit: String,
    #[serde(default)]
    pub session_name: String,
}

/// The most gke-rl reads of one API answer or log-stream message: job lists and runtime envs
/// are kilobytes.
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// The most gke-rl reads of a whole job log in one answer (`logs` without `--follow`).
const MAX_LOG_BYTES: usize = 256 * 1024 * 1024;

impl Version {
    /// `[major, minor, patch]` of `ray_version` (`2.46.0`, `3.0.0.dev0`, `2.9.3rc1`); `None`
    /// when it is not a version at all.
    pub fn release(&self) -> Option<[u64; 3]> {
        let mut parts = self.ray_version.split('.');
        let mut release = [0u64; 3];
        for (index, slot) in release.iter_mut().enumerate() {
            let part = parts.next()?;
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            if digits.is_empty() || digits.len() > 9 || (index < 2 && digits.len() != part.len()) {
                return None;
            }
            *slot = digits.parse().ok()?;
        }
        Some(release)
    }

    /// Whether this Ray is within the releases gke-rl's tests run against
    /// ([`OLDEST_TESTED_RAY`] to [`NEWEST_TESTED_RAY`]).
    pub fn is_tested(&self) -> bool {
        let parse = |v: &str| Version { ray_version: v.to_owned(), ..self.clone() }.release();
        self.release()
            .is_some_and(|r| parse(OLDEST_TESTED_RAY).is_some_and(|lo| r >= lo) && parse(NEWEST_TESTED_RAY).is_some_and(|hi| r <= hi))
    }

    /// Whether the server's Ray is at least `major.minor.patch` (a dev build counts as new).
    pub fn at_least(&self, needs: &str) -> bool {
        gke_rl::knowledge::ray_at_least(&self.ray_version, needs)
    }
}

/// The most recently started submission (not a driver job) of `jobs`: what `status` and
/// `logs` without an id mean.
pub fn latest_submission(jobs: &[JobDetails]) -> Option<&JobDetails> {
    jobs.iter().filter(|j| j.kind == "SUBMISSION").max_by_key(|j| j.start_time.unwrap_or(0))
}

/// The words of an entrypoint joined into one command line as `ray job submit` joins the
/// words after `--` (Python's `subprocess.list2cmdline`).
pub fn entrypoint(words: &[String]) -> String {
    let mut out = String::new();
    for word in words {
        if !out.is_empty() {
            out.push(' ');
        }
        let quote = word.is_empty() || word.contains([' ', '\t']);
        if quote {
            out.push('"');
        }
        let mut backslashes = 0;
        for c in word.chars() {
            match c {
                '\\' => backslashes += 1,
                '"' => {
                    out.push_str(&"\\".repeat(backslashes * 2 + 1));
                    out.push('"');
                    backslashes = 0;
                }
                _ => {
                    out.push_str(&"\\".repeat(backslashes));
                    out.push(c);
                    backslashes = 0;
                }
            }
        }
        out.push_str(&"\\".repeat(if quote { backslashes * 2 } else { backslashes }));
        if quote {
            out.push('"');
        }
    }
    out
}

/// `POST /api/jobs/`. Absent fields are not sent: the server rejects keys it does not know.
#[allow(missing_docs)] // fields as Ray's `JobSubmitRequest` names them
#[derive(Debug, Clone, Default, Serialize)]
pub struct SubmitRequest {
    pub entrypoint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submission_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_env: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint_num_cpus: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint_num_gpus: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint_memory: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint_resources: Option<BTreeMap<String, f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint_label_selector: Option<BTreeMap<String, String>>,
}

impl SubmitRequest {
    /// The first field set here that `server` does not know, with the Ray version that added it.
    fn unsupported_by(&self, server: &Version) -> Option<(&'static str, &'static str)> {
        [
            ("entrypoint_num_cpus", "2.2.0", self.entrypoint_num_cpus.is_some()),
            ("entrypoint_num_gpus", "2.2.0", self.entrypoint_num_gpus.is_some()),
            ("entrypoint_resources", "2.2.0", self.entrypoint_resources.is_some()),
            ("entrypoint_memory", "2.8.0", self.entrypoint_memory.is_some()),
            // Absent in 2.46.0, present from 2.54.0 (the oldest and the next of the Rays the real-head trials run).
            ("entrypoint_label_selector", "2.54.0", self.entrypoint_label_selector.is_some()),
        ]
        .into_iter()
        .find(|(_, needs, set)| *set && !server.at_least(needs))
        .map(|(field, needs, _)| (field, needs))
    }
}

/// `JobStatus`; the last three are terminal.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobStatus {
    Pending,
    Running,
    Stopped,
    Succeeded,
    Failed,
}

impl JobStatus {
    /// STOPPED, SUCCEEDED or FAILED: the job will not change again.
    pub fn is_terminal(self) -> bool {
        matches!(self, JobStatus::Stopped | JobStatus::Succeeded | JobStatus::Failed)
    }
}

impl std::fmt::Display for JobStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            JobStatus::Pending => "PENDING",
            JobStatus::Running => "RUNNING",
            JobStatus::Stopped => "STOPPED",
            JobStatus::Succeeded => "SUCCEEDED",
            JobStatus::Failed => "FAILED",
        };
        f.write_str(name)
    }
}

/// `JobDetails`, as `GET /api/jobs/{id}` and `GET /api/jobs/` return it.
#[allow(missing_docs)] // fields as Ray's `JobDetails` names them
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct JobDetails {
    #[serde(rename = "type")]
    pub kind: String,
    pub job_id: Option<String>,
    pub submission_id: Option<String>,
    pub status: JobStatus,
    pub entrypoint: String,
    pub message: Option<String>,
    pub error_type: Option<String>,
    /// Unix milliseconds.
    pub start_time: Option<u64>,
    pub end_time: Option<u64>,
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
    /// The full runtime env, env_vars included: anyone who can reach the API can read it.
    #[serde(default)]
    pub runtime_env: Option<serde_json::Value>,
    #[serde(default)]
    pub driver_exit_code: Option<i32>,
}

impl JobDetails {
    /// The id to use in further calls: the submission id, else the Ray job id.
    pub fn id(&self) -> &str {
        self.submission_id.as_deref().or(self.job_id.as_deref()).unwrap_or("?")
    }
}

/// Timeouts and headers; the defaults suit a port-forwarded or local dashboard.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Establishing a TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// Every call but the upload.
    pub request_timeout: Duration,
    /// The package upload (up to 100 MiB).
    pub upload_timeout: Duration,
    /// Extra headers on every request (`RAY_JOB_HEADERS`); none may carry a token.
    pub headers: BTreeMap<String, String>,
    /// The Ray token, sent as `Authorization: Bearer` on every request.
    pub token: Option<crate::Token>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            upload_timeout: Duration::from_secs(600),
            headers: BTreeMap::new(),
            token: None,
        }
    }
}

/// A Ray Jobs API client for one dashboard address.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    address: String,
    /// The address as given when it had no scheme (`host:port`): maybe Ray's GCS address.
    bare: Option<String>,
    /// User-Agent and the caller's headers, parsed once: on every HTTP request and on the
    /// log WebSocket's handshake.
    headers: reqwest::header::HeaderMap,
    options: ClientOptions,
}

/// A node as Ray's state API lists it.
#[derive(Deserialize)]
struct NodeState {
    state: String,
    #[serde(default)]
    resources_total: BTreeMap<String, f64>,
}

/// A live log stream of one job (`/api/jobs/{id}/logs/tail`).
pub struct LogTail {
    socket: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
}

/// How a log stream ended, or paused.
#[derive(Debug)]
pub enum TailEnd {
    /// The server closed it normally: the job is terminal and its log was read to the end.
    Finished,
    /// The connection dropped; the job may still be running.
    Dropped(String),
    /// No log text came for the idle time given to [`LogTail::next`]. The stream is still
    /// open: a quiet job, or a job that ended behind a stream that no longer delivers (a
    /// half-open port-forward). Only the job's state tells them apart: Ray's handler never
    /// reads the socket, so a ping is never answered.
    Silent,
}

impl LogTail {
    /// The next chunk of log text (one or more whole lines), or how the stream ended;
    /// [`TailEnd::Silent`] after `idle` without log text (control frames do not count).
    pub async fn next(&mut self, idle: std::time::Duration) -> Result<String, TailEnd> {
        let deadline = tokio::time::Instant::now() + idle;
        loop {
            let Ok(frame) = tokio::time::timeout_at(deadline, self.socket.next()).await else {
                return Err(TailEnd::Silent);
            };
            match frame {
                Some(Ok(Message::Text(text))) => return Ok(text.as_str().to_owned()),
                Some(Ok(Message::Binary(bytes))) => return Ok(String::from_utf8_lossy(&bytes).into_owned()),
                Some(Ok(Message::Close(frame))) => {
                    return match frame {
                        Some(f) if f.code != tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode::Normal => {
                            Err(TailEnd::Dropped(format!("closed with code {}", u16::from(f.code))))
                        }
                        _ => Err(TailEnd::Finished),
                    };
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(TailEnd::Dropped(e.to_string())),
                None => return Err(TailEnd::Dropped("the connection closed without a close frame".into())),
            }
        }
    }
}

impl Client {
    /// `address` as Ray takes it: `host:port` means `http://host:port`; a trailing `/` is dropped.
    pub fn new(address: &str, options: ClientOptions) -> Result<Client, Error> {
        let trimmed = address.trim().trim_end_matches('/');
        let bare = (!trimmed.contains("://")).then(|| trimmed.to_owned());
        let address = if bare.is_none() { trimmed.to_owned() } else { format!("http://{trimmed}") };
        let url = reqwest::Url::parse(&address).map_err(|_| Error::Address(address.clone()))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(Error::Address(address));
        }
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::USER_AGENT, reqwest::header::HeaderValue::from_static(USER_AGENT));
        for (name, value) in &options.headers {
            if crate::auth::is_authorization(name) {
                return Err(Error::AuthorizationHeader { name: name.clone() });
            }
            let header = |reason| Error::Header { name: name.clone(), reason };
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| header("not a header name (letters, digits and `-`)"))?;
            let mut value = reqwest::header::HeaderValue::from_str(value)
                .map_err(|_| header("its value holds a character headers cannot carry (a control character or a line break)"))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        if let Some(token) = &options.token {
            let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {}", token.reveal()))
                .map_err(|_| Error::BadToken { from: token.source().to_string() })?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        crate::ensure_crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            // The upload, the submit body (which may carry tokens) and the caller's headers
            // must reach this address and no other.
            .redirect(reqwest::redirect::Policy::none())
            .default_headers(headers.clone())
            .build()
            .map_err(|e| Error::Unreachable { address: address.clone(), reason: e.to_string() })?;
        Ok(Client { http, address, bare, headers, options })
    }

    /// The Ray token this client sends, if any.
    pub fn token(&self) -> Option<&crate::Token> {
        self.options.token.as_ref()
    }

    /// The normalised dashboard address, e.g. `http://localhost:8265`.
    pub fn address(&self) -> &str {
        &self.address
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    /// Sends a request and returns the status and body (at most [`MAX_ANSWER_BYTES`]), mapping
    /// transport failures and refusing redirects.
    async fn send(&self, what: &str, request: reqwest::RequestBuilder, timeout: Duration) -> Result<(StatusCode, String), Error> {
        self.send_capped(what, request, timeout, MAX_ANSWER_BYTES).await
    }

    async fn send_capped(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
        timeout: Duration,
        limit: usize,
    ) -> Result<(StatusCode, String), Error> {
        let mut response = match request.timeout(timeout).send().await {
            Ok(response) => response,
            Err(e) => return Err(self.unanswered(what, &e, timeout).await),
        };
        let status = response.status();
        if status.is_redirection() {
            let location = response.headers().get(reqwest::header::LOCATION).and_then(|l| l.to_str().ok()).unwrap_or("nowhere");
            let location = location.chars().take(200).collect();
            return Err(Error::Redirected { address: self.address.clone(), what: what.to_owned(), status: status.as_u16(), location });
        }
        if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
            let body = response.chunk().await.ok().flatten().map(|c| String::from_utf8_lossy(&c).into_owned()).unwrap_or_default();
            return Err(self.unauthorized(what, status, &body));
        }
        let too_large = || Error::AnswerTooLarge { what: what.to_owned(), limit };
        if response.content_length().is_some_and(|length| length > limit as u64) {
            return Err(too_large());
        }
        let mut body = Vec::new();
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) => return Err(self.cut(what, &e, timeout)),
            };
            if body.len() + chunk.len() > limit {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    }

    /// A request that got no answer.
    async fn unanswered(&self, what: &str, e: &reqwest::Error, timeout: Duration) -> Error {
        if e.is_connect() && e.is_timeout() {
            let seconds = self.options.connect_timeout.as_secs();
            return Error::Timeout { address: self.address.clone(), what: format!("{what} (connecting)"), seconds };
        }
        if let Some(given) = self.bare.as_deref().filter(|_| !e.is_connect() && !e.is_timeout()) {
            // What `ray start` prints and KubeRay pods set as RAY_ADDRESS: a gRPC server. How
            // hyper words its failure depends on when the server's first frame lands ("unexpected
            // message from connection" or "connection was not ready"), so ask the server itself.
            // Ray's own client looks the dashboard up through it; gke-rl speaks no gRPC, so it
            // says what to give.
            if speaks_http2_first(given).await {
                return Error::GcsAddress { given: given.to_owned() };
            }
        }
        self.cut(what, e, timeout)
    }

    /// A request whose answer failed, or was cut after its head: an HTTP/1 server, so no probe.
    fn cut(&self, what: &str, e: &reqwest::Error, timeout: Duration) -> Error {
        if e.is_timeout() {
            return Error::Timeout { address: self.address.clone(), what: what.to_owned(), seconds: timeout.as_secs() };
        }
        Error::Unreachable { address: self.address.clone(), reason: root_cause(e) }
    }

    /// A 401 or 403: the token was missing or wrong.
    fn unauthorized(&self, what: &str, status: StatusCode, body: &str) -> Error {
        Error::Unauthorized {
            address: self.address.clone(),
            what: what.to_owned(),
            status: status.as_u16(),
            tried: self.options.token.as_ref().map(|t| Box::new(t.source().clone())),
            message: server_message(body),
        }
    }

    fn refused(what: &str, status: StatusCode, body: &str) -> Error {
        Error::Server { what: what.to_owned(), status: status.as_u16(), message: server_message(body) }
    }

    /// A JSON call; with a job `id`, a 404 means that job does not exist.
    async fn call<T: serde::de::DeserializeOwned>(&self, method: reqwest::Method, path: &str, id: Option<&str>) -> Result<T, Error> {
        self.call_capped(method, path, id, MAX_ANSWER_BYTES).await
    }

    async fn call_capped<T: serde::de::DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        id: Option<&str>,
        limit: usize,
    ) -> Result<T, Error> {
        let what = format!("{method} {path}");
        let request = self.http.request(method, self.url(path));
        let (status, body) = self.send_capped(&what, request, self.options.request_timeout, limit).await?;
        match (status, id) {
            (StatusCode::OK, _) => parse(&what, &body),
            (StatusCode::NOT_FOUND, Some(id)) => Err(Error::JobNotFound { id: id.to_owned() }),
            _ => Err(Self::refused(&what, status, &body)),
        }
    }

    /// `GET /api/version`: the first call, which also checks that this is a Ray dashboard
    /// whose Ray has the Jobs API (1.9 or newer).
    pub async fn version(&self) -> Result<Version, Error> {
        let what = "GET /api/version";
        let request = self.http.get(self.url("/api/version"));
        let (status, body) = self.send_capped(what, request, self.options.request_timeout, 64 * 1024).await?;
        match status {
            StatusCode::OK => {}
            StatusCode::NOT_FOUND => return Err(Error::NotADashboard { address: self.address.clone() }),
            _ => return Err(Self::refused(what, status, &body)),
        }
        let found = || first_line(&body).to_owned();
        let version: Version =
            serde_json::from_str(&body).map_err(|_| Error::NotAVersion { address: self.address.clone(), found: found() })?;
        let Some(release) = version.release() else {
            return Err(Error::NotAVersion { address: self.address.clone(), found: version.ray_version.chars().take(200).collect() });
        };
        if release < [1, 9, 0] {
            return Err(Error::RayTooOld { address: self.address.clone(), found: version.ray_version, needs: "1.9.0" });
        }
        Ok(version)
    }

    /// `GET /api/packages/gcs/{name}`: whether the cluster has the package. A hit also pins it
    /// for 10 minutes, so submit soon after.
    pub async fn package_exists(&self, uri: &str) -> Result<bool, Error> {
        let path = package_path(uri)?;
        let what = format!("GET {path}");
        let (status, body) = self.send(&what, self.http.get(self.url(&path)), self.options.request_timeout).await?;
        match status {
            StatusCode::OK => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(Self::refused(&what, status, &body)),
        }
    }

    /// `PUT /api/packages/gcs/{name}` with the zip as the body.
    pub async fn upload_package(&self, uri: &str, zip: Vec<u8>) -> Result<(), Error> {
        let path = package_path(uri)?;
        let what = format!("PUT {path}");
        let size = zip.len();
        let (status, body) = self.send(&what, self.http.put(self.url(&path)).body(zip), self.options.upload_timeout).await?;
        match status {
            StatusCode::OK => Ok(()),
            StatusCode::PAYLOAD_TOO_LARGE => Err(Error::PayloadTooLarge { size }),
            _ => Err(Self::refused(&what, status, &body)),
        }
    }

    /// `POST /api/jobs/`; returns the submission id. Fields `server` does not know are refused
    /// here rather than by the server. The head answers 500 "No available agent to submit job,
    /// please try again later" while its job agent is not up (just after start-up); with a
    /// submission id a retry is safe, since a second copy is refused as a duplicate, so such
    /// answers are retried for up to [`AGENT_WAIT`], each passed to `waiting` first.
    pub async fn submit(&self, request: &SubmitRequest, server: &Version, waiting: &mut dyn FnMut(&Error)) -> Result<String, Error> {
        if let Some((field, needs)) = request.unsupported_by(server) {
            return Err(Error::Unsupported { field, needs, server: server.ray_version.clone() });
        }
        let deadline = tokio::time::Instant::now() + AGENT_WAIT;
        let mut retried = false;
        loop {
            match self.submit_once(request).await {
                Err(Error::AlreadyExists { id }) if retried => return Ok(id),
                Err(e @ Error::Server { .. })
                    if request.submission_id.is_some() && agent_not_ready(&e) && tokio::time::Instant::now() < deadline =>
                {
                    waiting(&e);
                    retried = true;
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
                result => return result,
            }
        }
    }

    async fn submit_once(&self, request: &SubmitRequest) -> Result<String, Error> {
        let what = "POST /api/jobs/";
        let (status, body) = self.send(what, self.http.post(self.url("/api/jobs/")).json(request), self.options.request_timeout).await?;
        if status == StatusCode::OK {
            #[derive(Deserialize)]
            struct Submitted {
                submission_id: String,
            }
            // The id is printed in commands to paste and used in URLs: the server gets no say.
            let answered = parse::<Submitted>(what, &body)?.submission_id;
            return match &request.submission_id {
                Some(sent) if *sent != answered => Err(Error::Protocol {
                    what: what.to_owned(),
                    reason: format!("the server answered submission id {answered:?} for the {sent:?} sent"),
                }),
                _ => Ok(answered),
            };
        }
        // The head relays the agent's 400 as a 500 with a traceback: the text is what counts.
        if body.contains("already exists") {
            return Err(Error::AlreadyExists { id: request.submission_id.clone().unwrap_or_default() });
        }
        Err(Self::refused(what, status, &body))
    }

    /// `GET /api/jobs/{id}`.
    pub async fn job(&self, id: &str) -> Result<JobDetails, Error> {
        self.call(reqwest::Method::GET, &format!("/api/jobs/{}", segment(id)), Some(id)).await
    }

    /// `GET /api/jobs/`: submission jobs first, then driver jobs.
    pub async fn jobs(&self) -> Result<Vec<JobDetails>, Error> {
        self.call(reqwest::Method::GET, "/api/jobs/", None).await
    }

    /// How many Ray nodes are alive.
    pub async fn alive_nodes(&self) -> Result<usize, Error> {
        Ok(self.nodes().await?.iter().filter(|n| n.state == "ALIVE").count())
    }

    /// The GPUs of every node the cluster has had, alive or dead (a preempted node's count).
    pub async fn gpus(&self) -> Result<f64, Error> {
        Ok(self.nodes().await?.iter().filter_map(|n| n.resources_total.get("GPU")).sum())
    }

    /// `GET /api/v0/nodes`: the nodes Ray's state API (2.x) lists, dead ones included.
    async fn nodes(&self) -> Result<Vec<NodeState>, Error> {
        #[derive(Deserialize)]
        struct Answer {
            data: Data,
        }
        #[derive(Deserialize)]
        struct Data {
            result: Listing,
        }
        #[derive(Deserialize)]
        struct Listing {
            result: Vec<NodeState>,
        }
        let answer: Answer = self.call(reqwest::Method::GET, "/api/v0/nodes?limit=10000&detail=false", None).await?;
        Ok(answer.data.result.result)
    }

    /// `GET /api/jobs/{id}/logs`: the whole driver log so far.
    pub async fn logs(&self, id: &str) -> Result<String, Error> {
        #[derive(Deserialize)]
        struct Logs {
            logs: String,
        }
        let path = format!("/api/jobs/{}/logs", segment(id));
        let logs: Logs = self.call_capped(reqwest::Method::GET, &path, Some(id), MAX_LOG_BYTES).await?;
        Ok(logs.logs)
    }

    /// `POST /api/jobs/{id}/stop`; `false` when the job was no longer running.
    pub async fn stop(&self, id: &str) -> Result<bool, Error> {
        #[derive(Deserialize)]
        struct Stopped {
            stopped: bool,
        }
        let stopped: Stopped = self.call(reqwest::Method::POST, &format!("/api/jobs/{}/stop", segment(id)), Some(id)).await?;
        Ok(stopped.stopped)
    }

    /// `DELETE /api/jobs/{id}`: only for a terminal job.
    pub async fn delete(&self, id: &str) -> Result<bool, Error> {
        #[derive(Deserialize)]
        struct Deleted {
            deleted: bool,
        }
        let deleted: Deleted = self.call(reqwest::Method::DELETE, &format!("/api/jobs/{}", segment(id)), Some(id)).await?;
        Ok(deleted.deleted)
    }

    /// Opens `/api/jobs/{id}/logs/tail`. The server replays the log from its start, then
    /// streams new lines until the job is terminal.
    pub async fn tail(&self, id: &str) -> Result<LogTail, Error> {
        let what = format!("the log stream of {id}");
        let url = format!("{}/api/jobs/{}/logs/tail", self.address.replacen("http", "ws", 1), segment(id));
        let mut request = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(url.as_str())
            .map_err(|e| Error::Protocol { what: what.clone(), reason: e.to_string() })?;
        request.headers_mut().extend(self.headers.clone());
        let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(MAX_ANSWER_BYTES))
            .max_frame_size(Some(MAX_ANSWER_BYTES));
        let connect = tokio_tungstenite::connect_async_with_config(request, Some(config), false);
        let timeout = self.options.connect_timeout + self.options.request_timeout;
        match tokio::time::timeout(timeout, connect).await {
            Err(_) => Err(Error::Timeout { address: self.address.clone(), what, seconds: timeout.as_secs() }),
            Ok(Ok((socket, _))) => Ok(LogTail { socket }),
            Ok(Err(tokio_tungstenite::tungstenite::Error::Http(response))) => {
                let status = response.status();
                let body = response.body().as_deref().map(String::from_utf8_lossy).unwrap_or_default().into_owned();
                if status == StatusCode::NOT_FOUND {
                    Err(Error::JobNotFound { id: id.to_owned() })
                } else if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
                    Err(self.unauthorized(&what, status, &body))
                } else {
                    Err(Error::Server { what, status: status.as_u16(), message: server_message(&body) })
                }
            }
            Ok(Err(e)) => Err(Error::Unreachable { address: self.address.clone(), reason: e.to_string() }),
        }
    }
}

/// Whether a 500 says the head's job agent is missing or restarting rather than that the
/// job was refused.
/// How long a submit waits for a head's job agent to come up: Ray's head waits 10 s for one
/// per request (`WAIT_AVAILABLE_AGENT_TIMEOUT`, ray/dashboard/consts.py), and an agent starts
/// within a minute or two of its head.
pub const AGENT_WAIT: Duration = Duration::from_secs(120);

/// Whether the head's answer says its job agent is not up yet (or went away mid-request).
fn agent_not_ready(e: &Error) -> bool {
    let Error::Server { message, .. } = e else { return false };
    ["No available agent", "ServerDisconnectedError", "ClientConnectorError", "Connection reset"].iter().any(|m| message.contains(m))
}

/// A submission id in Ray's own format: `raysubmit_` and 16 characters from letters and
/// digits without the look-alikes `I l O 0 o`. Chosen by the client so a submit can be retried.
pub fn new_submission_id() -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz123456789";
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    let (mut a, mut b) =
        (hasher.finish(), u64::from(std::process::id()).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ hasher.finish().rotate_left(29));
    let mut id = String::from("raysubmit_");
    for i in 0..16 {
        let word = if i < 8 { &mut a } else { &mut b };
        id.push(char::from(ALPHABET[(*word % ALPHABET.len() as u64) as usize]));
        *word /= ALPHABET.len() as u64;
    }
    id
}

/// The API path of a `gcs://` package URI.
fn package_path(uri: &str) -> Result<String, Error> {
    let name = uri.strip_prefix("gcs://").filter(|n| !n.is_empty() && !n.contains('/'));
    name.map(|n| format!("/api/packages/gcs/{n}"))
        .ok_or_else(|| Error::Protocol { what: "a package upload".into(), reason: format!("{uri} is not a gcs:// package URI") })
}

/// A job id as one URL path segment.
fn segment(id: &str) -> String {
    id.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn parse<T: serde::de::DeserializeOwned>(what: &str, body: &str) -> Result<T, Error> {
    serde_json::from_str(body).map_err(|e| Error::Protocol { what: what.to_owned(), reason: format!("{e}: {}", first_line(body)) })
}

fn first_line(body: &str) -> &str {
    let line = body.lines().next().unwrap_or_default();
    &line[..line.floor_char_boundary(200)]
}

/// The useful part of an error body: the last line of a Python traceback (the exception),
/// else the first line.
/// At most 500 characters of it: bodies can be megabytes.
fn server_message(body: &str) -> String {
    let lines: Vec<&str> = body.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let exception = lines.iter().rev().find(|l| l.contains("Error: ") || l.contains("Exception: "));
    let Some(line) = exception.or(lines.first()) else { return "(empty response)".to_owned() };
    let shown = &line[..line.floor_char_boundary(500)];
    if shown.len() < line.len() { format!("{shown}… ({} more bytes)", line.len() - shown.len()) } else { shown.to_owned() }
}

/// Whether the server at `address` speaks first with an HTTP/2 frame, as a gRPC server (Ray's
/// GCS) does: the server preface is a SETTINGS frame (RFC 9113 §3.4), whose 9-byte header has
/// type 0x4 and stream 0. Bounded: one connection, 9 bytes, 2 s.
async fn speaks_http2_first(address: &str) -> bool {
    use tokio::io::AsyncReadExt;
    let probe = async {
        let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
        let mut header = [0u8; 9];
        stream.read_exact(&mut header).await.ok()?;
        Some(header[3] == 0x4 && header[5..9] == [0, 0, 0, 0])
    };
    tokio::time::timeout(Duration::from_secs(2), probe).await.ok().flatten().unwrap_or(false)
}

/// The innermost error's text: "Connection refused (os error 111)" rather than reqwest's
/// generic wrapper.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TESTED_RAY;

    fn version(v: &str) -> Version {
        Version { version: "4".into(), ray_version: v.into(), ray_commit: String::new(), session_name: String::new() }
    }

    #[test]
    fn entrypoints_are_joined_like_ray_job_submit() {
        let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(entrypoint(&words(&["bash", "run_nemo_rl.sh", "arg with space"])), r#"bash run_nemo_rl.sh "arg with space""#);
        assert_eq!(entrypoint(&words(&["a\"b", "", "c\\"])), r#"a\"b "" c\"#);
    }

    #[test]
    fn the_latest_submission_is_the_last_started_submission() {
        let job = |id: &str, kind: &str, start: u64| -> JobDetails {
            serde_json::from_value(serde_json::json!({"type": kind, "submission_id": id, "job_id": null, "status": "RUNNING",
                "entrypoint": "x", "start_time": start}))
            .unwrap()
        };
        let jobs = [job("a", "SUBMISSION", 10), job("driver", "DRIVER", 30), job("b", "SUBMISSION", 20)];
        assert_eq!(latest_submission(&jobs).map(JobDetails::id), Some("b"));
        assert!(latest_submission(&jobs[1..2]).is_none());
    }

    #[test]
    fn addresses_are_normalised_like_ray() {
        assert_eq!(Client::new("localhost:8265/", ClientOptions::default()).unwrap().address(), "http://localhost:8265");
        assert!(matches!(Client::new("ray://x:10001", ClientOptions::default()), Err(Error::Address(_))));
    }

    #[test]
    fn fields_are_gated_by_server_version() {
        let request = SubmitRequest { entrypoint_label_selector: Some(BTreeMap::new()), ..SubmitRequest::default() };
        assert_eq!(request.unsupported_by(&version("2.46.0")), Some(("entrypoint_label_selector", "2.54.0")));
        assert_eq!(request.unsupported_by(&version("2.54.0")), None);
        assert!(version("3.0.0.dev0").at_least("2.54.0") && !version("2.9.3").at_least("2.10.0"));
    }

    #[test]
    fn absent_fields_are_not_serialized() {
        let request = SubmitRequest { entrypoint: "echo".into(), ..SubmitRequest::default() };
        assert_eq!(serde_json::to_string(&request).unwrap(), r#"{"entrypoint":"echo"}"#);
    }

    #[test]
    fn submission_ids_look_like_rays() {
        let (a, b) = (new_submission_id(), new_submission_id());
        assert!(a.starts_with("raysubmit_") && a.len() == 26 && a != b, "{a} {b}");
        assert!(!a[10..].contains(['I', 'l', 'O', '0', 'o']));
    }

    #[test]
    fn versions_are_read_or_refused() {
        assert_eq!(version("2.46.0").release(), Some([2, 46, 0]));
        assert_eq!(version("3.0.0.dev0").release(), Some([3, 0, 0]));
        assert_eq!(version("2.9.3rc1").release(), Some([2, 9, 3]));
        for garbage in ["99", "garbage", "", "2.x.0", "1.2", "99999999999.0.0"] {
            assert_eq!(version(garbage).release(), None, "{garbage}");
        }
        for tested in TESTED_RAY.into_iter().chain(["2.50.0", "2.55.0"]) {
            assert!(version(tested).is_tested(), "{tested}");
        }
        for untested in ["2.45.9", "2.60.1", "2.61.0", "3.0.0.dev0", "garbage"] {
            assert!(!version(untested).is_tested(), "{untested}");
        }
    }

    #[test]
    fn the_tested_rays_are_distinct_releases_oldest_first() {
        let releases: Vec<[u64; 3]> = TESTED_RAY.iter().map(|v| version(v).release().unwrap()).collect();
        assert!(releases.windows(2).all(|pair| pair[0] < pair[1]), "{TESTED_RAY:?}");
    }

    #[test]
    fn long_error_bodies_are_cut() {
        let message = server_message(&"x".repeat(50_000_000));
        assert!(message.len() < 600 && message.ends_with("(49999500 more bytes)"), "{}", &message[message.len() - 40..]);
    }

    #[test]
    fn traceback_bodies_give_their_exception() {
        let body = "Traceback (most recent call last):\n  File \"x\", line 1\nRuntimeError: Request failed with status code 400: boom.\n";
        assert_eq!(server_message(body), "RuntimeError: Request failed with status code 400: boom.");
        assert_eq!(segment("raysubmit_a b"), "raysubmit_a%20b");
        assert!(package_path("gcs://_ray_pkg_0123.zip").unwrap().ends_with("/gcs/_ray_pkg_0123.zip"));
    }

    /// Only a server whose first bytes are an HTTP/2 SETTINGS frame on stream 0 is taken for a
    /// GCS; an HTTP/1 answer, another frame, or silence is not, and silence costs at most 2 s.
    #[tokio::test]
    async fn only_an_http2_server_preface_marks_a_gcs() {
        use tokio::io::AsyncWriteExt;
        let settings = [0, 0, 0, 0x4, 0, 0, 0, 0, 0];
        let ping = [0, 0, 8, 0x6, 0, 0, 0, 0, 0];
        let on_stream_1 = [0, 0, 0, 0x4, 0, 0, 0, 0, 1];
        for (first, expected) in
            [(&settings[..], true), (b"HTTP/1.1 400 Bad Request\r\n\r\n", false), (&ping, false), (&on_stream_1, false), (b"", false)]
        {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = listener.local_addr().unwrap().to_string();
            let bytes = first.to_vec();
            let server = tokio::spawn(async move {
                let (mut stream, _) = listener.accept().await.unwrap();
                stream.write_all(&bytes).await.unwrap();
                tokio::time::sleep(Duration::from_secs(5)).await;
            });
            let started = std::time::Instant::now();
            assert_eq!(speaks_http2_first(&address).await, expected, "{first:?}");
            assert!(started.elapsed() < Duration::from_secs(3));
            server.abort();
        }
    }
}

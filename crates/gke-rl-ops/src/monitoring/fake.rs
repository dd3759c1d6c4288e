//! A Cloud Monitoring API on loopback for tests (feature `fake`): `projects.timeSeries.list`
//! answering the documented `ListTimeSeriesResponse` shape, one series a page, from the series
//! it was given for each metric type, cut to the interval asked for. It refuses what Google
//! refuses: a request without the bearer token it was given (401), without a `metric.type` in
//! its filter or an alignment period for its aligner (400). It records each request.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use gke_rl_ray::fake::{respond, serve};

/// One request it received.
#[derive(Clone, Debug)]
pub struct Request {
    /// Its path, `/v3/projects/PROJECT/timeSeries`.
    pub path: String,
    /// Its query parameters, decoded.
    pub query: Vec<(String, String)>,
    /// Its `Authorization` header, if it had one.
    pub authorization: Option<String>,
}

impl Request {
    /// The value of the query parameter `name`, if given.
    pub fn parameter(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// One series to serve: its `metric.labels` and its points as (end time, value), the values
/// in the JSON form Google gives them (`{"doubleValue": 1.5}`, `{"int64Value": "42"}`).
#[derive(Clone, Debug)]
pub struct FakeSeries {
    /// `metric.labels`.
    pub labels: BTreeMap<String, String>,
    /// (endTime as seconds since the epoch, TypedValue).
    pub points: Vec<(i64, serde_json::Value)>,
}

/// The server.
pub struct FakeMonitoring {
    /// Where it listens: `http://127.0.0.1:PORT`.
    pub address: String,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl FakeMonitoring {
    /// Serves `series` by metric type to requests that carry `Bearer <token>`.
    pub fn serve(token: &str, series: BTreeMap<String, Vec<FakeSeries>>) -> FakeMonitoring {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        let expected = format!("Bearer {token}");
        let address = serve(move |target, head, stream| {
            let url = reqwest::Url::parse(&format!("http://fake{target}")).expect("a request target");
            let authorization = head.lines().find_map(|l| {
                l.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("authorization")).map(|(_, v)| v.trim().to_owned())
            });
            let request = Request {
                path: url.path().to_owned(),
                query: url.query_pairs().map(|(n, v)| (n.into_owned(), v.into_owned())).collect(),
                authorization,
            };
            recorded.lock().expect("the requests").push(request.clone());
            let (status, body) = answer(&request, &expected, &series);
            respond(stream, status, "Content-Type: application/json\r\n", &body);
        });
        FakeMonitoring { address, requests }
    }

    /// The requests so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("the requests").clone()
    }
}

fn error(code: u16, status: &str, message: &str) -> String {
    serde_json::json!({"error": {"code": code, "message": message, "status": status}}).to_string()
}

fn answer(request: &Request, expected: &str, series: &BTreeMap<String, Vec<FakeSeries>>) -> (&'static str, String) {
    if request.authorization.as_deref() != Some(expected) {
        let message = "Request had invalid authentication credentials. Expected OAuth 2 access token.";
        return ("401 Unauthorized", error(401, "UNAUTHENTICATED", message));
    }
    if !(request.path.starts_with("/v3/projects/") && request.path.ends_with("/timeSeries")) {
        return ("404 Not Found", error(404, "NOT_FOUND", "no such method"));
    }
    let Some(metric_type) =
        request.parameter("filter").and_then(|f| f.split("metric.type=\"").nth(1)).and_then(|rest| rest.split('"').next())
    else {
        return ("400 Bad Request", error(400, "INVALID_ARGUMENT", "Field filter had an invalid value: a filter must name a metric.type"));
    };
    let aligned = request.parameter("aggregation.perSeriesAligner").is_some_and(|a| a != "ALIGN_NONE");
    if aligned && request.parameter("aggregation.alignmentPeriod").is_none() {
        return ("400 Bad Request", error(400, "INVALID_ARGUMENT", "The alignment period must be specified with an aligner"));
    }
    let time = |name: &str| request.parameter(name).and_then(|t| t.parse::<jiff::Timestamp>().ok()).map(|t| t.as_second());
    let (Some(start), Some(end)) = (time("interval.startTime"), time("interval.endTime")) else {
        return ("400 Bad Request", error(400, "INVALID_ARGUMENT", "Field interval had an invalid value"));
    };
    let all = series.get(metric_type).cloned().unwrap_or_default();
    let page: usize = request.parameter("pageToken").and_then(|t| t.parse().ok()).unwrap_or(0);
    let time_series: Vec<serde_json::Value> = all
        .get(page)
        .map(|s| {
            // Newest first, as the API orders points.
            let mut points: Vec<&(i64, serde_json::Value)> = s.points.iter().filter(|(at, _)| (start..=end).contains(at)).collect();
            points.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
            let points: Vec<serde_json::Value> = points
                .into_iter()
                .map(|(at, value)| {
                    let end_time = jiff::Timestamp::from_second(*at).expect("a time").to_string();
                    serde_json::json!({"interval": {"startTime": end_time, "endTime": end_time}, "value": value})
                })
                .collect();
            serde_json::json!({
                "metric": {"type": metric_type, "labels": s.labels},
                "resource": {"type": gke_rl_in_cluster::lustre_usage::RESOURCE_TYPE, "labels": {"instance_id": "x", "location": "y"}},
                "metricKind": "GAUGE",
                "valueType": "DOUBLE",
                "points": points,
            })
        })
        .into_iter()
        .collect();
    let next = if page + 1 < all.len() { (page + 1).to_string() } else { String::new() };
    ("200 OK", serde_json::json!({"timeSeries": time_series, "nextPageToken": next, "unit": "By"}).to_string())
}

/// The bytes a busy instance moves per second: reading a model or a checkpoint, and writing one.
const READING_BYTES_PER_S: f64 = 6e9;
/// See [`READING_BYTES_PER_S`].
const WRITING_BYTES_PER_S: f64 = 9e9;

/// The series of an instance of `capacity_bytes` over `window` (seconds since the epoch), a
/// point a minute from a minute before it to a minute after: reading at 6 GB/s during the
/// `reading` spans and writing at 9 GB/s during the `writing` ones (each point the mean over its
/// minute), 20 MB/s otherwise; its OSTs fill with what it writes, from 1 TiB.
pub fn busy_instance(
    window: (f64, f64),
    capacity_bytes: u64,
    reading: &[(f64, f64)],
    writing: &[(f64, f64)],
) -> BTreeMap<String, Vec<FakeSeries>> {
    let minutes: Vec<i64> = ((window.0 / 60.0).floor() as i64 - 1..=(window.1 / 60.0).ceil() as i64 + 1).map(|m| m * 60).collect();
    // The mean rate over the minute ending at `end`.
    let rate = |spans: &[(f64, f64)], peak: f64, end: i64| {
        let (from, to) = ((end - 60) as f64, end as f64);
        let busy: f64 = spans.iter().map(|&(a, b)| (b.min(to) - a.max(from)).max(0.0)).sum();
        peak * busy.min(60.0) / 60.0 + 2e7
    };
    let double = |v: f64| serde_json::json!({ "doubleValue": v });
    let series = |component: Option<&str>, points: Vec<(i64, serde_json::Value)>| FakeSeries {
        labels: component.map(|c| ("component".to_owned(), c.to_owned())).into_iter().collect(),
        points,
    };
    let mut written = 1u64 << 40;
    let free: Vec<(i64, serde_json::Value)> = minutes
        .iter()
        .map(|&end| {
            written += (rate(writing, WRITING_BYTES_PER_S, end) * 60.0) as u64;
            (end, double(capacity_bytes.saturating_sub(written) as f64))
        })
        .collect();
    let constant = |value: f64| minutes.iter().map(|&end| (end, double(value))).collect::<Vec<_>>();
    BTreeMap::from([
        (
            "lustre.googleapis.com/instance/read_bytes_total".to_owned(),
            vec![series(None, minutes.iter().map(|&end| (end, double(rate(reading, READING_BYTES_PER_S, end)))).collect())],
        ),
        (
            "lustre.googleapis.com/instance/write_bytes_total".to_owned(),
            vec![series(None, minutes.iter().map(|&end| (end, double(rate(writing, WRITING_BYTES_PER_S, end)))).collect())],
        ),
        (
            "lustre.googleapis.com/instance/capacity_bytes".to_owned(),
            vec![series(Some("ost"), constant(capacity_bytes as f64)), series(Some("mdt"), constant((256u64 << 30) as f64))],
        ),
        (
            "lustre.googleapis.com/instance/free_bytes".to_owned(),
            vec![series(Some("ost"), free), series(Some("mdt"), constant((250u64 << 30) as f64))],
        ),
    ])
}

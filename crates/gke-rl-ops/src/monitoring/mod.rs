//! What a run's Lustre instance did, from Cloud Monitoring's API v3: `projects.timeSeries.list`
//! (docs.cloud.google.com/monitoring/api/ref_v3/rest/v3/projects.timeSeries/list) for each
//! metric of [`gke_rl_in_cluster::lustre_usage::METRICS`] over the run's window, page by page.
//!
//! The access token comes from `gcloud auth print-access-token`'s output, never an argument or a
//! file, and goes in one header, marked sensitive, to the endpoint alone: redirects are refused,
//! and an endpoint other than Google's is taken only on this machine's loopback (the tests' fake
//! server, [`fake`]).

use std::collections::BTreeMap;
use std::time::Duration;

use gke_rl::Deployment;
use gke_rl_in_cluster::lustre_usage::{self, METRICS, Metric, Point, Series, Usage};
use serde::Deserialize;

use crate::{Env, ReportError, RunError};

use gke_rl_in_cluster::lustre_usage::ENDPOINT;

/// The most bytes of one page: a page of a run's series is a few hundred KiB.
const MAX_PAGE_BYTES: usize = 8 << 20;
/// The most pages of one metric: it has one series per component.
const MAX_PAGES: usize = 20;
/// How long one page may take.
const PAGE_WITHIN: Duration = Duration::from_secs(60);
/// How long all of them may take together.
const ALL_WITHIN: Duration = Duration::from_secs(120);
/// The longest window asked for: Cloud Monitoring keeps these metrics for six weeks.
const MAX_WINDOW_S: f64 = 42.0 * 86400.0;

/// What the instance of `deployment`'s Lustre did from `window.0` to `window.1` (seconds since
/// the epoch; the end is cut at now), in the project the config, `PROJECT_ID` or gcloud names,
/// asked of `endpoint` ([`ENDPOINT`], or loopback for tests) with gcloud's access token.
pub async fn lustre_usage(deployment: &Deployment, window: (f64, f64), endpoint: &str, env: &Env) -> Result<Usage, ReportError> {
    let endpoint = checked_endpoint(endpoint)?;
    let now = env.clock.unix_millis() as f64 / 1000.0;
    let (from, to) = (window.0.floor(), window.1.min(now).ceil());
    if !(from.is_finite() && to.is_finite() && from >= 0.0 && to > from) {
        return Err(ReportError::NoRunWindow { why: "it ends before it starts, or starts in the future" });
    }
    if to - from > MAX_WINDOW_S {
        return Err(ReportError::NoRunWindow { why: "it spans more than the six weeks Cloud Monitoring keeps these metrics" });
    }
    let resolved = crate::SiteOptions::default().resolve(deployment, env, false)?;
    let token = access_token(env, &resolved.hidden)?;
    let project = resolved.site.project_id.as_str();
    let mut authorization = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| ReportError::AccessToken { reason: "gcloud printed something that is not a token".to_owned() })?;
    authorization.set_sensitive(true);
    gke_rl_ray::ensure_crypto_provider();
    let mut client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .default_headers([(reqwest::header::AUTHORIZATION, authorization)].into_iter().collect());
    // A proxy would see a loopback request whole, token and all; Google's endpoint is reached
    // through one (where set) by CONNECT, encrypted end to end.
    if endpoint != ENDPOINT {
        client = client.no_proxy();
    }
    let client = client.build().map_err(|e| ReportError::Monitoring { metric: "any metric".to_owned(), reason: e.to_string() })?;
    let period_s = lustre_usage::alignment_period_s(to - from);
    let (instance, location) = (deployment.lustre.instance_id.as_str(), deployment.project.zone.as_str());
    let url = format!("{endpoint}/v3/projects/{project}/timeSeries");
    let every_metric = async {
        let mut answers = Vec::with_capacity(METRICS.len());
        for metric in &METRICS {
            let query = Query { filter: lustre_usage::filter(metric, instance, location), from, to, period_s };
            answers.push((metric.measure, list(&client, &url, metric, &query).await?));
        }
        Ok::<_, ReportError>(answers)
    };
    let answers = tokio::time::timeout(ALL_WITHIN, every_metric).await.map_err(|_| ReportError::Monitoring {
        metric: "the Lustre metrics".to_owned(),
        reason: format!("no whole answer within {} s", ALL_WITHIN.as_secs()),
    })??;
    Ok(Usage::new(instance, location, (from, to), period_s, answers))
}

/// Google's endpoint, or an `http(s)://` address on loopback: nothing else gets the token.
fn checked_endpoint(given: &str) -> Result<String, ReportError> {
    let trimmed = given.trim_end_matches('/');
    if trimmed == ENDPOINT {
        return Ok(trimmed.to_owned());
    }
    // What it was, unless it holds a user (and a password).
    let refused = || ReportError::MonitoringEndpoint {
        given: if given.contains('@') { "an address with a user in it".to_owned() } else { given.chars().take(200).collect() },
    };
    let url = reqwest::Url::parse(trimmed).map_err(|_| refused())?;
    let host = url.host_str().unwrap_or_default();
    let loopback = host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    let bare =
        url.path() == "/" && url.query().is_none() && url.fragment().is_none() && url.username().is_empty() && url.password().is_none();
    if matches!(url.scheme(), "http" | "https") && loopback && bare {
        Ok(url.as_str().trim_end_matches('/').to_owned())
    } else {
        Err(refused())
    }
}

/// gcloud's access token for its logged-in account, from its output.
fn access_token(env: &Env, hidden: &[String]) -> Result<String, ReportError> {
    let printed = env.runner.read(&gke_rl::lifecycle::access_token(), hidden).map_err(|e| {
        let fix = match e {
            RunError::NotRun { .. } => "install the Google Cloud CLI",
            RunError::NoAnswer { .. } => "check that gcloud can reach Google",
            RunError::Failed { .. } => "log in with `gcloud auth login`",
        };
        ReportError::AccessToken { reason: format!("{e}; {fix}") }
    })?;
    let token = printed.trim();
    // An OAuth access token is one word of visible ASCII, about 200 characters.
    if token.is_empty() || token.len() > 4096 || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ReportError::AccessToken { reason: "gcloud printed something that is not a token".to_owned() });
    }
    Ok(token.to_owned())
}

/// One metric's request, less its page.
struct Query {
    filter: String,
    from: f64,
    to: f64,
    period_s: u64,
}

/// Every page of one metric's series.
async fn list(client: &reqwest::Client, url: &str, metric: &Metric, query: &Query) -> Result<Vec<Series>, ReportError> {
    let failed = |reason: String| ReportError::Monitoring { metric: metric.metric_type.to_owned(), reason };
    let (start, end) = (rfc3339(query.from).map_err(failed)?, rfc3339(query.to).map_err(failed)?);
    let period = format!("{}s", query.period_s);
    let mut series = Vec::new();
    let mut page_token: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut parameters = vec![
            ("filter", query.filter.as_str()),
            ("interval.startTime", start.as_str()),
            ("interval.endTime", end.as_str()),
            ("aggregation.alignmentPeriod", period.as_str()),
            ("aggregation.perSeriesAligner", metric.aligner),
            ("aggregation.crossSeriesReducer", "REDUCE_SUM"),
        ];
        parameters.extend(metric.group_by.map(|field| ("aggregation.groupByFields", field)));
        parameters.extend(page_token.as_deref().map(|token| ("pageToken", token)));
        let body = fetch(client, url, &parameters).await.map_err(failed)?;
        let page: ListTimeSeriesResponse =
            serde_json::from_slice(&body).map_err(|e| failed(format!("its answer is not a list of time series ({e})")))?;
        for s in page.time_series {
            let group = metric.group_by.and_then(|field| s.metric.labels.get(field.trim_start_matches("metric.label.")).cloned());
            let points = s.points.iter().map(Point::try_from).collect::<Result<Vec<_>, _>>().map_err(failed)?;
            series.push(Series { group, points });
        }
        match page.next_page_token.filter(|t| !t.is_empty()) {
            Some(next) => page_token = Some(next),
            None => return Ok(series),
        }
    }
    Err(failed(format!("it answered more than {MAX_PAGES} pages")))
}

/// One page's body, at most [`MAX_PAGE_BYTES`]; an error answer as Google words it.
async fn fetch(client: &reqwest::Client, url: &str, parameters: &[(&str, &str)]) -> Result<Vec<u8>, String> {
    let url = reqwest::Url::parse_with_params(url, parameters).map_err(|e| format!("cannot make its address ({e})"))?;
    let sent = client.get(url).timeout(PAGE_WITHIN).send().await;
    let mut response =
        sent.map_err(|e| if e.is_timeout() { format!("no answer within {} s", PAGE_WITHIN.as_secs()) } else { crate::root_cause(&e) })?;
    let status = response.status();
    if status.is_redirection() {
        return Err(format!("it answered {status}, a redirect, which gke-rl does not follow with a token"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| crate::root_cause(&e))? {
        if body.len() + chunk.len() > MAX_PAGE_BYTES {
            return Err(format!("its answer is over {} MiB", MAX_PAGE_BYTES >> 20));
        }
        body.extend_from_slice(&chunk);
    }
    if status.is_success() {
        return Ok(body);
    }
    let message = serde_json::from_slice::<ErrorResponse>(&body).map(|e| e.error.message).unwrap_or_default();
    let message: String = message.chars().take(500).collect();
    let help = match status.as_u16() {
        401 => "; log in again: `gcloud auth login`",
        403 => {
            "; the account needs the Monitoring Viewer role (roles/monitoring.viewer) on the project, and the project the Cloud Monitoring API"
        }
        _ => "",
    };
    Err(format!("it answered {status}{}{help}", if message.is_empty() { String::new() } else { format!(": {message}") }))
}

/// Seconds since the epoch as RFC 3339, as the API takes times.
fn rfc3339(seconds: f64) -> Result<String, String> {
    jiff::Timestamp::from_second(seconds as i64).map(|t| t.to_string()).map_err(|_| format!("{seconds} s is not a time it takes"))
}

/// `ListTimeSeriesResponse`, the parts read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListTimeSeriesResponse {
    #[serde(default)]
    time_series: Vec<TimeSeries>,
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
struct TimeSeries {
    #[serde(default)]
    metric: MetricLabels,
    #[serde(default)]
    points: Vec<PointJson>,
}

#[derive(Default, Deserialize)]
struct MetricLabels {
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct PointJson {
    interval: Interval,
    value: TypedValue,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Interval {
    end_time: String,
}

/// `TypedValue`: an aligned rate or mean is a double; an INT64 comes as a JSON string.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TypedValue {
    double_value: Option<f64>,
    int64_value: Option<String>,
}

impl TryFrom<&PointJson> for Point {
    type Error = String;

    fn try_from(point: &PointJson) -> Result<Point, String> {
        let at: jiff::Timestamp = point
            .interval
            .end_time
            .parse()
            .map_err(|_| format!("a point's endTime {:?} is not an RFC 3339 time", point.interval.end_time))?;
        let value = match (&point.value.double_value, &point.value.int64_value) {
            (Some(double), _) => *double,
            (None, Some(int64)) => int64.parse::<i64>().map_err(|_| format!("a point's int64Value {int64:?} is not a number"))? as f64,
            (None, None) => return Err("a point has neither a doubleValue nor an int64Value".to_owned()),
        };
        Ok(Point { at: at.as_millisecond() as f64 / 1000.0, value })
    }
}

/// Google's error body.
#[derive(Deserialize)]
struct ErrorResponse {
    error: ErrorDetail,
}

#[derive(Deserialize)]
struct ErrorDetail {
    #[serde(default)]
    message: String,
}

#[cfg(feature = "fake")]
pub mod fake;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_google_or_loopback_gets_the_token() {
        for ok in [ENDPOINT, "https://monitoring.googleapis.com/", "http://127.0.0.1:8080", "http://[::1]:9"] {
            assert!(checked_endpoint(ok).is_ok(), "{ok}");
        }
        for refused in [
            "http://monitoring.googleapis.com",
            "https://monitoring.googleapis.com.evil.example",
            "http://localhost.evil.example:80",
            "http://10.0.0.1",
            "http://127.0.0.1:8080/v3?x=1",
            "http://127.0.0.1#fragment",
            "http://127.0.0.1.evil.example",
            "http://[::ffff:127.0.0.1]:80",
            "http://user@127.0.0.1",
            "file:///etc/passwd",
            "not a url",
        ] {
            assert!(checked_endpoint(refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn points_are_read_from_doubles_and_int64_strings() {
        let page: ListTimeSeriesResponse = serde_json::from_str(
            r#"{"timeSeries": [{"metric": {"type": "t", "labels": {"component": "ost"}}, "resource": {}, "metricKind": "GAUGE",
                "valueType": "INT64", "points": [
                {"interval": {"startTime": "2026-12-03T10:00:00Z", "endTime": "2026-12-03T10:01:00Z"}, "value": {"int64Value": "9663676416000"}},
                {"interval": {"endTime": "2026-12-03T10:00:00.500Z"}, "value": {"doubleValue": 1.5}}]}],
                "nextPageToken": "", "unit": "By"}"#,
        )
        .unwrap();
        let points: Vec<Point> = page.time_series[0].points.iter().map(|p| Point::try_from(p).unwrap()).collect();
        assert_eq!(points, [Point { at: 1_796_292_060.0, value: 9_663_676_416_000.0 }, Point { at: 1_796_292_000.5, value: 1.5 }]);
        assert_eq!(rfc3339(1_796_292_060.0).unwrap(), "2026-12-03T10:01:00Z");
        assert!(rfc3339(1e300).is_err());
        let bad: PointJson = serde_json::from_str(r#"{"interval": {"endTime": "yesterday"}, "value": {"doubleValue": 1}}"#).unwrap();
        assert!(Point::try_from(&bad).unwrap_err().contains("not an RFC 3339 time"));
    }
}

//! The Lustre side of the run report where it lives: `monitoring::lustre_usage` against the fake
//! Cloud Monitoring API on loopback (`gke_rl_ops::monitoring::fake`), with gcloud answering
//! through the `Env`. Every metric is asked for over the run's window, page by page, with
//! gcloud's token in the header and nowhere else; what Google refuses comes back in its words.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gke_rl::lifecycle::Command;
use gke_rl_ops::monitoring::fake::{FakeMonitoring, FakeSeries};
use gke_rl_ops::monitoring::lustre_usage;
use gke_rl_ops::{Clock, Env, Interrupt, Kube, ReportError, RunError, Runner};

const TOKEN: &str = "ya29.a-monitoring-token";
/// The run: 15 minutes from 2026-12-03T10:00:00Z.
const START: f64 = 1_796_292_000.0;
const END: f64 = START + 900.0;

/// gcloud as far as the report asks it: a token (or a failure), and the commands it was given.
struct Gcloud {
    token: Result<&'static str, &'static str>,
    calls: Mutex<Vec<String>>,
}

impl Runner for Gcloud {
    fn read(&self, command: &Command, hidden: &[String]) -> Result<String, RunError> {
        self.calls.lock().unwrap().push(format!("{command} hidden={}", hidden.join(",")));
        match (command.args.as_slice(), self.token) {
            ([auth, print], Ok(token)) if auth == "auth" && print == "print-access-token" => Ok(format!("{token}\n")),
            (_, Err(stderr)) => Err(RunError::Failed { program: "gcloud".into(), status: "exit status: 1".into(), stderr: stderr.into() }),
            _ => Err(RunError::NotRun { program: command.program.clone(), reason: "not faked".into() }),
        }
    }

    fn stream(&self, _: &Command, _: &[String]) -> bool {
        false
    }

    fn var(&self, name: &str) -> Option<String> {
        (name == "PROJECT_ID").then(|| "fake-project".to_owned())
    }
}

/// An hour after the run started.
struct Later;

impl Clock for Later {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn unix_millis(&self) -> u64 {
        (START as u64 + 3600) * 1000
    }
}

fn gcloud_env(token: Result<&'static str, &'static str>) -> (Env, Arc<Gcloud>) {
    let gcloud = Arc::new(Gcloud { token, calls: Mutex::default() });
    let env = Env {
        runner: gcloud.clone(),
        kube: Kube::FromKubeconfig,
        clock: Arc::new(Later),
        interrupt: Interrupt::manual().1,
        poll: Duration::from_millis(50),
        reconnect: Duration::from_secs(30),
    };
    (env, gcloud)
}

/// A series every minute from 10 minutes before the run to 10 after it, `value` of the minute.
fn series(labels: &[(&str, &str)], value: impl Fn(i64) -> serde_json::Value) -> FakeSeries {
    let points = (-10..=25).map(|minute| (START as i64 + minute * 60, value(minute))).collect();
    FakeSeries { labels: labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(), points }
}

fn lustre() -> FakeMonitoring {
    let double = |v: f64| serde_json::json!({ "doubleValue": v });
    let int64 = |v: u64| serde_json::json!({ "int64Value": v.to_string() });
    let tib = 1u64 << 40;
    let answers = BTreeMap::from([
        ("lustre.googleapis.com/instance/read_bytes_total".to_owned(), vec![series(&[], |m| double(1e9 + m as f64))]),
        // A save in minutes 5 to 7 (the points ending at 6 and 7) writes at 8 GB/s.
        (
            "lustre.googleapis.com/instance/write_bytes_total".to_owned(),
            vec![series(&[], |m| double(if (6..=7).contains(&m) { 8e9 } else { 1e8 }))],
        ),
        (
            "lustre.googleapis.com/instance/capacity_bytes".to_owned(),
            vec![series(&[("component", "ost")], |_| int64(9 * tib)), series(&[("component", "mdt")], |_| int64(tib / 4))],
        ),
        (
            "lustre.googleapis.com/instance/free_bytes".to_owned(),
            vec![
                series(&[("component", "ost")], |m| int64(8 * tib - m.max(0) as u64 * (1 << 30))),
                series(&[("component", "mdt")], |_| int64(tib / 8)),
            ],
        ),
    ]);
    FakeMonitoring::serve(TOKEN, answers)
}

#[tokio::test]
async fn every_metric_is_read_page_by_page_over_the_runs_window_with_the_token_in_its_header_only() {
    let fake = lustre();
    let (env, gcloud) = gcloud_env(Ok(TOKEN));
    let deployment = gke_rl::Deployment::default();
    let usage = lustre_usage(&deployment, (START, END), &fake.address, &env).await.unwrap();

    assert_eq!((usage.from, usage.to, usage.period_s), (START, END, 60));
    assert_eq!(usage.instance_id, deployment.lustre.instance_id.as_str());
    let minutes: Vec<f64> = usage.read_bytes_per_s.iter().map(|p| (p.at - START) / 60.0).collect();
    assert_eq!(minutes, (0..=15).map(f64::from).collect::<Vec<_>>(), "the run's minutes only, oldest first");
    assert_eq!(usage.read_bytes_per_s[3].value, 1e9 + 3.0);
    let space: Vec<(&str, f64, Option<f64>)> =
        usage.space.iter().map(|s| (s.component.as_str(), s.used_bytes.last().unwrap().value, s.capacity_bytes)).collect();
    let tib = (1u64 << 40) as f64;
    assert_eq!(space, [("mdt", tib / 8.0, Some(tib / 4.0)), ("ost", tib + 15.0 * (1u64 << 30) as f64, Some(9.0 * tib))]);

    // The capacity and the free space came in two pages each.
    let requests = fake.requests();
    assert_eq!(requests.len(), 6, "{requests:#?}");
    for request in &requests {
        assert_eq!(request.path, "/v3/projects/fake-project/timeSeries");
        assert_eq!(request.authorization.as_deref(), Some(format!("Bearer {TOKEN}").as_str()));
        assert!(request.query.iter().all(|(n, v)| !n.contains(TOKEN) && !v.contains(TOKEN)), "the token is in no URL");
        let filter = request.parameter("filter").unwrap();
        assert!(
            filter.contains(r#"resource.type="lustre.googleapis.com/Instance" AND resource.labels.instance_id="rl-demo-gpu-lustre" AND resource.labels.location="#),
            "{filter}"
        );
        assert_eq!(request.parameter("interval.startTime"), Some("2026-12-03T10:00:00Z"));
        assert_eq!(request.parameter("interval.endTime"), Some("2026-12-03T10:15:00Z"));
        assert_eq!(request.parameter("aggregation.alignmentPeriod"), Some("60s"));
        assert_eq!(request.parameter("aggregation.crossSeriesReducer"), Some("REDUCE_SUM"));
    }
    let pages: Vec<Option<&str>> = requests.iter().map(|r| r.parameter("pageToken")).collect();
    assert_eq!(pages, [None, None, None, Some("1"), None, Some("1")]);
    assert_eq!(requests[0].parameter("aggregation.perSeriesAligner"), Some("ALIGN_RATE"));
    assert_eq!(requests[2].parameter("aggregation.groupByFields"), Some("metric.label.component"));
    // One call to gcloud, with the secrets' variables hidden from it.
    let calls = gcloud.calls.lock().unwrap().clone();
    assert_eq!(calls, ["gcloud auth print-access-token hidden=HF_TOKEN,WANDB_API_KEY,RAY_AUTH_TOKEN"]);

    // The save from minute 5 to 7 wrote at 8 GB/s: the points ending at 6 and 7 are its own,
    // and neither the one ending as it began (5) nor the one beginning as it ended (8) is.
    let step = gke_rl_in_cluster::run_report::StepRow {
        step: 10,
        reward: None,
        loss: None,
        step_time_s: Some(300.0),
        checkpoint_s: Some(120.0),
        saved_at: Some(START + 300.0),
        durable_s: None,
        generation_length: None,
        timers: BTreeMap::new(),
        redone: false,
    };
    let saves = gke_rl_in_cluster::run_report::save_windows(std::slice::from_ref(&step));
    assert_eq!(usage.write_during_saves(&saves), [(10, 8e9)]);
    assert_eq!(
        usage.summary(&saves),
        "lustre rl-demo-gpu-lustre: read peak 1.0 GB/s, mean 1.0 GB/s; write peak 8.0 GB/s, mean 1.1 GB/s; \
         8.0 GB/s while saving checkpoints; 128.0 GiB of 256.0 GiB used (mdt); 1.0 TiB of 9.0 TiB used (ost)"
    );
}

#[tokio::test]
async fn what_goes_wrong_is_said_and_the_token_goes_to_no_other_host() {
    let deployment = gke_rl::Deployment::default();
    let fake = lustre();

    // Google refuses another token, in its own words.
    let (env, _) = gcloud_env(Ok("ya29.someone-elses"));
    let error = lustre_usage(&deployment, (START, END), &fake.address, &env).await.unwrap_err();
    let text = gke_rl_ops::chain(&error);
    assert!(text.contains("401 Unauthorized: Request had invalid authentication credentials"), "{text}");
    assert!(text.contains("`gcloud auth login`") && !text.contains("someone-elses"), "{text}");

    // gcloud without an account.
    let (env, _) = gcloud_env(Err("ERROR: (gcloud.auth.print-access-token) You do not currently have an active account selected."));
    let error = lustre_usage(&deployment, (START, END), &fake.address, &env).await.unwrap_err();
    assert!(matches!(error, ReportError::AccessToken { .. }), "{error}");
    assert!(error.to_string().contains("You do not currently have an active account selected"), "{error}");

    // An endpoint elsewhere is refused before gcloud is asked.
    let (env, gcloud) = gcloud_env(Ok(TOKEN));
    let error = lustre_usage(&deployment, (START, END), "http://203.0.113.9:80", &env).await.unwrap_err();
    assert!(matches!(error, ReportError::MonitoringEndpoint { .. }), "{error}");
    assert!(gcloud.calls.lock().unwrap().is_empty());

    // A redirect is not followed with the token.
    let elsewhere = FakeMonitoring::serve(TOKEN, BTreeMap::new());
    let target = elsewhere.address.clone();
    let redirecting = gke_rl_ray::fake::serve(move |_, _, stream| {
        gke_rl_ray::fake::respond(stream, "302 Found", &format!("Location: {target}/v3/projects/x/timeSeries\r\n"), "")
    });
    let error = lustre_usage(&deployment, (START, END), &redirecting, &env).await.unwrap_err();
    assert!(gke_rl_ops::chain(&error).contains("a redirect"), "{error}");
    assert!(elsewhere.requests().is_empty(), "the redirect was followed");

    // A run that ends before it starts, or starts after now, has no window.
    for window in [(END, START), (START + 7200.0, START + 7300.0)] {
        let error = lustre_usage(&deployment, window, &fake.address, &env).await.unwrap_err();
        assert!(matches!(error, ReportError::NoRunWindow { .. }), "{error}");
    }
}

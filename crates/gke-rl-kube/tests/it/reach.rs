//! The real client stack against the fake API server over HTTPS: a kubeconfig with a CA and an
//! exec credential plugin, kube-rs's TLS and auth, the port-forward upgrade, and every way the
//! API can be out of reach.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gke_rl_kube::fake::{FakeApiServer, Pods};
use gke_rl_kube::{Error, Namespaced, Options, Unreachable, connect};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const TOKEN: &str = "ya29.fake-access-token";
fn quick() -> Options {
    Options { connect_timeout: Duration::from_millis(500), call_timeout: Duration::from_secs(2), hidden_env: vec!["HF_TOKEN".into()] }
}

/// A kubeconfig as `gcloud container clusters get-credentials` writes it, whose exec plugin is
/// `plugin` (a script printing an ExecCredential, or a program that does not exist).
fn kubeconfig(dir: &Path, server: &str, ca_pem: Option<&str>, plugin: &str) -> PathBuf {
    let ca = match ca_pem {
        Some(pem) => {
            std::fs::write(dir.join("ca.pem"), pem).unwrap();
            format!("\n    certificate-authority: {}", dir.join("ca.pem").display())
        }
        None => String::new(),
    };
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: gke_p_r_c\n  cluster:\n    server: {server}{ca}\n\
             contexts:\n- name: gke_p_r_c\n  context: {{cluster: gke_p_r_c, user: gke_p_r_c}}\ncurrent-context: gke_p_r_c\n\
             users:\n- name: gke_p_r_c\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: {plugin}\n      provideClusterInfo: true\n"
        ),
    )
    .unwrap();
    path
}

/// An exec plugin that prints a credential holding `token`, or fails with `fail` on stderr.
fn plugin(dir: &Path, token: &str, fail: Option<&str>) -> String {
    let path = dir.join("auth-plugin");
    let body = match fail {
        Some(message) => format!("echo '{message}' >&2; exit 1"),
        None => format!(
            "echo '{{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"status\":{{\"token\":\"{token}\"}}}}'"
        ),
    };
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// What listing the pods through `kubeconfig` gives, and how long it took.
async fn list_pods(kubeconfig: &Path) -> (Result<(), Error>, Duration) {
    let started = Instant::now();
    let result = async {
        let connected = connect(Some(kubeconfig), None, &quick()).await?;
        let clusters = Namespaced::new(connected.client, "default").with_call_timeout(quick().call_timeout);
        clusters.readiness("ray-a4-gpu-spot", 8).await.map(|_| ())
    }
    .await;
    (result, started.elapsed())
}

fn cause<T: std::fmt::Debug>(result: Result<T, Error>) -> Unreachable {
    match result {
        Err(Error::Unreachable { cause, .. }) => cause,
        other => panic!("expected an unreachable API, got {other:?}"),
    }
}

#[tokio::test]
async fn a_kubeconfig_with_a_ca_and_an_exec_plugin_reaches_the_api_and_its_pods() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeApiServer::new(Pods::ReadyAfter(0));
    let https = server.serve_https(TOKEN).await.unwrap();
    // A head pod's port behind the fake: a TCP echo server.
    let echo = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    server.forward_head_to(echo.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = echo.accept().await {
            tokio::spawn(async move {
                let mut buffer = [0u8; 1024];
                while let Ok(n @ 1..) = socket.read(&mut buffer).await {
                    let _ = socket.write_all(&buffer[..n]).await;
                }
            });
        }
    });
    let config = kubeconfig(dir.path(), &https.url, Some(&https.ca_pem), &plugin(dir.path(), TOKEN, None));
    let connected = connect(Some(&config), None, &quick()).await.unwrap();
    assert_eq!(connected.server, https.url);
    let clusters = Namespaced::new(connected.client, "default");
    clusters.apply_secret("gke-rl-secrets", &[("HF_TOKEN", "hf_value")]).await.unwrap();
    let options = gke_rl::RenderOptions { source: "a test", regenerate: "a test" };
    let manifest = gke_rl::render(&gke_rl::Deployment::default(), &options).unwrap().ray_cluster.expect("cluster mode").contents;
    let (name, _) = clusters.apply(&manifest).await.unwrap();
    assert_eq!(clusters.head_pod(&name).await.unwrap(), "ray-a4-gpu-spot-head");
    assert!(
        server.requests().iter().all(|r| r.authorization.as_deref() == Some(&format!("Bearer {TOKEN}"))),
        "every request carries the plugin's token"
    );

    let on_error: gke_rl_kube::portforward::OnError = std::sync::Arc::new(|e| panic!("port-forward: {e}"));
    let forwarding = gke_rl_kube::portforward::forward(
        "127.0.0.1:0".parse().unwrap(),
        clusters.head_port(&name, 8265),
        Duration::from_secs(5),
        on_error,
    )
    .await
    .unwrap();
    for round in 0..3 {
        let mut local = tokio::net::TcpStream::connect(forwarding.local).await.unwrap();
        let message = format!("hello through the upgrade, round {round}");
        local.write_all(message.as_bytes()).await.unwrap();
        let mut answer = vec![0u8; message.len()];
        local.read_exact(&mut answer).await.unwrap();
        assert_eq!(String::from_utf8(answer).unwrap(), message);
    }
    assert!(server.requests().iter().any(|r| r.uri.contains("/pods/ray-a4-gpu-spot-head/portforward?") && r.uri.contains("ports=8265")));
}

#[tokio::test]
async fn a_refused_connection_names_the_cause_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), "https://127.0.0.1:1", None, &plugin(dir.path(), TOKEN, None));
    let (result, took) = list_pods(&config).await;
    let cause = cause(result);
    assert!(matches!(&cause, Unreachable::Connect(detail) if detail.contains("refused")), "{cause}");
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[tokio::test]
async fn a_silent_server_times_out_within_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    // Accepts connections and never answers, not even the TLS handshake: dropped packets.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let config = kubeconfig(dir.path(), &format!("https://{}", silent.local_addr().unwrap()), None, &plugin(dir.path(), TOKEN, None));
    let (result, took) = list_pods(&config).await;
    let cause = cause(result);
    assert!(matches!(&cause, Unreachable::Connect(detail) if detail.contains("timed out")), "{cause}");
    assert!(took < quick().call_timeout + Duration::from_secs(1), "bounded: {took:?}");
    drop(silent);
}

#[tokio::test]
async fn refused_credentials_and_denied_access_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeApiServer::new(Pods::ReadyAfter(0));
    let https = server.serve_https(TOKEN).await.unwrap();
    let stale = kubeconfig(dir.path(), &https.url, Some(&https.ca_pem), &plugin(dir.path(), "ya29.expired", None));
    assert!(matches!(cause(list_pods(&stale).await.0), Unreachable::Unauthorized(_)));

    let fresh = kubeconfig(dir.path(), &https.url, Some(&https.ca_pem), &plugin(dir.path(), TOKEN, None));
    server.deny(Some(403));
    assert!(matches!(cause(list_pods(&fresh).await.0), Unreachable::Forbidden(_)));
    server.deny(None);
    assert!(list_pods(&fresh).await.0.is_ok());
}

#[tokio::test]
async fn an_untrusted_certificate_is_a_connection_failure_naming_tls() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeApiServer::new(Pods::ReadyAfter(0));
    let https = server.serve_https(TOKEN).await.unwrap();
    let config = kubeconfig(dir.path(), &https.url, None, &plugin(dir.path(), TOKEN, None));
    let cause = cause(list_pods(&config).await.0);
    assert!(matches!(&cause, Unreachable::Connect(detail) if detail.contains("certificate")), "{cause}");
}

#[tokio::test]
async fn a_missing_or_failing_credential_plugin_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeApiServer::new(Pods::ReadyAfter(0));
    let https = server.serve_https(TOKEN).await.unwrap();
    let missing = kubeconfig(dir.path(), &https.url, Some(&https.ca_pem), "gke-gcloud-auth-plugin-that-is-not-installed");
    assert!(matches!(cause(list_pods(&missing).await.0), Unreachable::CredentialPlugin { missing: true, .. }));

    let failing = plugin(dir.path(), TOKEN, Some("ERROR: gcloud crashed: reauthentication required"));
    let config = kubeconfig(dir.path(), &https.url, Some(&https.ca_pem), &failing);
    let cause = cause(list_pods(&config).await.0);
    // Its stderr is in the detail, or on the terminal when kube runs it interactively.
    assert!(matches!(&cause, Unreachable::CredentialPlugin { missing: false, detail } if detail.contains("exit status: 1")), "{cause}");
    assert!(server.requests().is_empty(), "nothing was sent without credentials");
}

#[tokio::test]
async fn a_missing_or_broken_kubeconfig_is_named_without_its_contents() {
    let error = connect(Some(Path::new("/nonexistent/kubeconfig")), None, &quick()).await.err().unwrap();
    assert!(matches!(error, Error::Kubeconfig(_)) && error.to_string().contains("/nonexistent/kubeconfig"), "{error}");

    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("kubeconfig");
    std::fs::write(&broken, "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: sekret-bearer-token\n    x: [1\n")
        .unwrap();
    let error = connect(Some(&broken), None, &quick()).await.err().unwrap().to_string();
    assert!(error.contains("line 7 column") && error.contains(&broken.display().to_string()), "{error}");
    assert!(!error.contains("sekret-bearer-token") && !error.contains('\n'), "no snippet of the file: {error}");
}

/// Issue 31, item 5: an endless answer ends in an error at the bound, long before the call's
/// time is up and without reading more than the bound; a huge error body is not printed whole.
#[tokio::test]
async fn answers_are_bounded_in_size_and_printed_messages_are_cut() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let written = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = written.clone();
    let endless = gke_rl_ray::fake::serve(move |_, _, stream| gke_rl_kube::fake::endless_list(stream, &counter));
    let config = kubeconfig(dir.path(), &endless, None, &plugin(dir.path(), TOKEN, None));
    let (result, took) = list_pods(&config).await;
    assert_eq!(cause(result), Unreachable::AnswerTooLarge);
    assert!(took < quick().call_timeout, "cut at the bound, not at the call's time: {took:?}");
    assert!(written.load(Ordering::Relaxed) < 64 << 20, "{} bytes were sent", written.load(Ordering::Relaxed));

    // A 1 MiB error message: the error names the call, and its printed chain holds at most a
    // cut of the message.
    let message = "E".repeat(1 << 20);
    let huge = gke_rl_ray::fake::serve(move |_, _, stream| {
        let body = serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "reason": "InternalError", "code": 500}).to_string();
        gke_rl_ray::fake::respond(stream, "500 Internal Server Error", "Content-Type: application/json\r\n", &body);
    });
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), &huge, None, &plugin(dir.path(), TOKEN, None));
    let (result, _) = list_pods(&config).await;
    let error = result.unwrap_err();
    let mut printed = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(e) = source {
        printed.push_str(&format!(": {e}"));
        source = e.source();
    }
    assert!(
        printed.len() < 4096 && printed.contains("bytes more"),
        "{} bytes printed: {}",
        printed.len(),
        &printed[..printed.len().min(300)]
    );
}

/// Issue 31, item 15: credentials never go to a plain-HTTP API server off this machine.
#[tokio::test]
async fn credentials_never_go_to_a_plain_http_server_off_this_machine() {
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("plugin-ran");
    let plugin_path = dir.path().join("auth-plugin");
    std::fs::write(&plugin_path, format!("#!/bin/sh\ntouch {}\nexit 1\n", ran.display())).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&plugin_path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = kubeconfig(dir.path(), "http://192.0.2.1:8080", None, &plugin_path.display().to_string());
    let refused = connect(Some(&config), None, &quick()).await.err().unwrap().to_string();
    assert!(refused.contains("plain http://") && refused.contains("use its https:// address"), "{refused}");
    assert!(!ran.exists(), "the credential plugin never ran");
}

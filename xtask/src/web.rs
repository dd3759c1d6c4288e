//! The web validator's local server (`cargo xtask serve-web`) and its browser test, which
//! `cargo xtask ci` runs: Debian's Chromium driven by playwright-core against the page served
//! on localhost, and the page's findings compared with the native SDK's on the same files.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;

use anyhow::{Context, bail};
use xshell::{Shell, cmd};

use crate::project_root;

/// Serves `web-validator/` on 127.0.0.1:`port` until interrupted.
pub fn serve(sh: &Shell, port: u16) -> anyhow::Result<()> {
    crate::wasm::run(sh)?;
    let listener = TcpListener::bind(("127.0.0.1", port)).with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?;
    eprintln!("serving the web validator at http://{}/ (Ctrl-C stops)", listener.local_addr()?);
    serve_on(&listener, &project_root().join("web-validator"));
    Ok(())
}

/// Answers GETs for files under `root`, one thread per connection.
fn serve_on(listener: &TcpListener, root: &Path) {
    for stream in listener.incoming().flatten() {
        let root = root.to_owned();
        std::thread::spawn(move || {
            let _ = answer(stream, &root);
        });
    }
}

fn answer(mut stream: TcpStream, root: &Path) -> std::io::Result<()> {
    let mut request_line = String::new();
    let mut reader = BufReader::new(stream.try_clone()?);
    reader.read_line(&mut request_line)?;
    // Drain the headers.
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear();
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("/").split('?').next().unwrap_or("/");
    let relative = if path == "/" { "index.html" } else { path.trim_start_matches('/') };
    let file = (!relative.split('/').any(|part| part == ".." || part.is_empty())).then(|| root.join(relative));
    let (status, body, kind) = match file.as_deref().map(std::fs::read) {
        Some(Ok(body)) => ("200 OK", body, content_type(relative)),
        _ => ("404 Not Found", b"not found\n".to_vec(), "text/plain"),
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(&body)
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

/// Debian's Chromium, and where it installs it.
pub const CHROMIUM: (&str, &str) = ("chromium", "/usr/bin/chromium");

/// Builds the wasm, installs Chromium and playwright-core when missing, runs the browser
/// test against the page on a free port, and compares its findings with the native ones.
/// Returns the median time the page's `validate` took on the default artifact set, in ms.
pub fn browser_test(sh: &Shell) -> anyhow::Result<f64> {
    let root = project_root();
    crate::wasm::run(sh)?;
    crate::install::debian_package(sh, CHROMIUM)?;
    let web = root.join("web-validator");
    crate::wasm::npm_ci(sh, &web)?;
    let out = root.join("target/web-test");
    std::fs::create_dir_all(&out)?;
    // A valid set: the render of the embedded default.
    let options = gke_rl::RenderOptions { source: "the browser test", regenerate: "gke-rl render" };
    let valid: serde_json::Map<String, serde_json::Value> =
        gke_rl::render(&gke_rl::Deployment::default(), &options)?.into_iter().map(|a| (a.name.to_owned(), a.contents.into())).collect();
    let valid_path = out.join("valid-files.json");
    std::fs::write(&valid_path, serde_json::Value::Object(valid.clone()).to_string())?;

    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/", listener.local_addr()?);
    let served = web.clone();
    std::thread::spawn(move || serve_on(&listener, &served));
    let script = web.join("test/browser.mjs");
    let file_url = format!("file://{}", web.join("index.html").display());
    let report = cmd!(sh, "node {script} {url} {out} {valid_path} {file_url}").read()?;
    let report: serde_json::Value = serde_json::from_str(&report).context("the browser test's report is not JSON")?;

    // The page and the native SDK must agree exactly on the same files.
    let codelab = crate::wasm::codelab_files(&root)?;
    let native = |files: serde_json::Map<String, serde_json::Value>| -> anyhow::Result<serde_json::Value> {
        let files: Vec<(String, String)> =
            files.into_iter().map(|(name, text)| (name, text.as_str().unwrap_or_default().to_owned())).collect();
        Ok(serde_json::from_str(&gke_rl_wasm::validate_files(&files))?)
    };
    let (native_codelab, native_valid) = (native(codelab)?, native(valid)?);
    if report["codelab"] != native_codelab || report["valid"] != native_valid {
        bail!("the browser's findings differ from the native ones:\nbrowser: {}\nnative:  {native_codelab}", report["codelab"]);
    }
    if !report["coverage_shown"].as_bool().unwrap_or(false) {
        bail!("the page does not say what it could not check");
    }
    let median_ms = report["validate_median_ms"].as_f64().context("the report has the validate time")?;
    eprintln!(
        "browser test: {} codelab findings and {} rules not checked, identical to native; valid render clean; validate in Chromium: median {median_ms:.2} ms; a typed value marked after {} ms; screenshot {}",
        native_codelab["findings"].as_array().map_or(0, Vec::len),
        native_codelab["skipped"].as_array().map_or(0, Vec::len),
        report["marked_after_ms"],
        out.join("codelab.png").display()
    );
    Ok(median_ms)
}

/// The run report's page in Chromium: the report of a restarted run (a log built from NeMo-RL's
/// own prints) with its Lustre instance's figures, as the CLI's test
/// `report::lustre_figures_come_from_cloud_monitoring_with_gclouds_token` writes it with the
/// real binary, the fake Cloud Monitoring API and the fake gcloud (run here as a child). Its
/// plots are drawn, it makes no request beyond its own file, and a screenshot is left beside it.
pub fn report_test(sh: &Shell) -> anyhow::Result<()> {
    let root = project_root();
    let out = root.join("target/report-test");
    let cargo = crate::cargo();
    let page = out.join("report.html");
    // Never an earlier run's page.
    if page.exists() {
        std::fs::remove_file(&page)?;
    }
    let test = "report::lustre_figures_come_from_cloud_monitoring_with_gclouds_token";
    // As the workspace's tests build it (the features of every crate's tests together), so that
    // after `cargo test --workspace` nothing is built again.
    cmd!(sh, "{cargo} test --quiet --workspace --test it -- --exact {test}").run()?;
    anyhow::ensure!(page.is_file(), "the CLI's test {test} left no {}", page.display());
    let script = root.join("web-validator/test/report.mjs");
    let seen: serde_json::Value =
        serde_json::from_str(&cmd!(sh, "node {script} {page} {out}").read()?).context("the report test's output is not JSON")?;
    let sections: Vec<&str> = seen["sections"].as_array().into_iter().flatten().filter_map(|s| s.as_str()).collect();
    if sections != ["goodput", "reward", "step-time", "checkpoints", "restarts", "lustre", "cost"] {
        bail!("the report's sections are {sections:?}");
    }
    let plots = seen["plots"].as_array().cloned().unwrap_or_default();
    let drawn = |plot: &serde_json::Value| {
        plot["width"].as_f64().unwrap_or(0.0) > 100.0
            && plot["shapes"].as_u64().unwrap_or(0) >= 4
            && plot["texts"].as_u64().unwrap_or(0) >= 2
    };
    if plots.len() != 7 || !plots.iter().all(drawn) {
        bail!("the report's seven plots are not all drawn: {plots:?}");
    }
    let requests: Vec<&str> = seen["requests"].as_array().into_iter().flatten().filter_map(|s| s.as_str()).collect();
    if requests != [seen["url"].as_str().unwrap_or_default()] || !seen["errors"].as_array().is_some_and(Vec::is_empty) {
        bail!("the report's page made requests beyond itself or failed: {requests:?} {}", seen["errors"]);
    }
    eprintln!(
        "report page: {} sections, 7 plots drawn, no request beyond itself; screenshot {}",
        sections.len(),
        out.join("report.png").display()
    );
    Ok(())
}

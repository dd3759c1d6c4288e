//! The job commands and the packager against real Ray heads: one of each Ray in
//! `gke_rl_ray::TESTED_RAY`, from PyPI in `target/ray/<version>/` (`cargo xtask ci` installs
//! them), each started here with `ray start --head` on its own ports and stopped at the end.
//! Every head runs the trials of its Jobs API; the trials of gke-rl's own side run on one.
//! Ray's own Python packaging code is the reference for package URIs and pattern matching.
//!
//! A custom harness (libtest-mimic) so that each head starts once for all its tests.

mod common;

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{project_root, stderr, stdout};
use gke_rl_ray::TESTED_RAY;
use gke_rl_test_support::nemo_rl_log::{Loop, Prints, block, figures};
use gke_rl_test_support::ray_head::{self, Head, Role};
use libtest_mimic::{Arguments, Failed, Trial};

const TOKEN: &str = "hf_gkerlTestSecretValue42";

fn main() {
    let args = Arguments::from_args();
    let mut trials = packaging_trials();
    let mut heads = Vec::new();
    for version in TESTED_RAY {
        let Some(bin) = venv(version) else {
            trials.push(Trial::test(format!("ray_{version}"), || Ok(())).with_ignored_flag(true));
            continue;
        };
        let head = Arc::new(Starting::default());
        trials.extend(head_trials(version, &head));
        heads.push((version, bin, head));
    }
    // The heads start one at a time (see `Head::start`) while the trials run: those of a head
    // wait for it, the first head's for less than the packaging trials take.
    let starting: Vec<Arc<Starting>> = heads.iter().map(|(_, _, head)| Arc::clone(head)).collect();
    let starter = std::thread::spawn(move || {
        for (version, bin, head) in heads {
            head.started(Head::start(version, &bin).map(Arc::new));
        }
    });
    let conclusion = libtest_mimic::run(&args, trials);
    let _ = starter.join();
    // Every head stops (dropped) before the process exits.
    for head in starting {
        if let Ok(mut started) = head.head.lock() {
            drop(started.take());
        }
    }
    conclusion.exit();
}

/// A head being started, which its trials wait for.
#[derive(Default)]
struct Starting {
    head: Mutex<Option<Result<Arc<Head>, String>>>,
    started: std::sync::Condvar,
}

impl Starting {
    fn started(&self, head: Result<Arc<Head>, String>) {
        if let Ok(mut slot) = self.head.lock() {
            *slot = Some(head);
        }
        self.started.notify_all();
    }

    /// The head once started (each start waits at most a few minutes), or why it did not.
    fn wait(&self) -> Result<Arc<Head>, Failed> {
        let slot = self.head.lock().map_err(|_| "a trial panicked holding the head")?;
        let slot = self.started.wait_while(slot, |slot| slot.is_none()).map_err(|_| "a trial panicked holding the head")?;
        match slot.as_ref() {
            Some(Ok(head)) => Ok(Arc::clone(head)),
            Some(Err(e)) => Err(format!("the head did not start: {e}").into()),
            None => Err("the head did not start".into()),
        }
    }
}

/// The venv's bin directory; missing fails under `CI` and skips elsewhere.
fn venv(version: &str) -> Option<PathBuf> {
    let bin = project_root().join("target/ray").join(version).join("bin");
    if bin.join("ray").is_file() {
        return Some(bin);
    }
    assert!(std::env::var_os("CI").is_none(), "{} is missing: `cargo xtask ci` installs ray[default]=={version} there", bin.display());
    eprintln!("skipping Ray {version}: {} is missing (run `cargo xtask ci` once)", bin.display());
    None
}

/// `N` distinct free ports (held open together while chosen, so none repeats).
fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: Vec<TcpListener> = (0..N).map(|_| TcpListener::bind("0.0.0.0:0").expect("a free port")).collect();
    std::array::from_fn(|i| listeners[i].local_addr().expect("bound").port())
}

/// Runs the gke-rl binary with `args` in `cwd`, with HF_TOKEN and the heads' Ray token set,
/// and returns its output.
fn gke_rl(cwd: &Path, args: &[&str]) -> Output {
    gke_rl_with(cwd, args, &[])
}

/// [`gke_rl`] with variables set (or, when `None`, removed) on top.
fn gke_rl_with(cwd: &Path, args: &[&str], vars: &[(&str, Option<&str>)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gke-rl"));
    command.args(args);
    run_gke_rl(command, cwd, vars)
}

/// [`gke_rl`] under a pseudo-terminal (util-linux's `script`), as at a person's terminal: the
/// output is what the terminal got, both streams together.
fn gke_rl_in_a_terminal(cwd: &Path, args: &[&str]) -> Output {
    let line: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_gke-rl")).chain(args.iter().copied()).map(gke_rl::quote::sh).collect();
    let mut command = Command::new("script");
    command.args(["--quiet", "--flush", "--return", "--command", &line.join(" "), "/dev/null"]);
    run_gke_rl(command, cwd, &[])
}

/// [`gke_rl`] with its stdout and stderr into one pipe, as `2>&1 | tee` gives them: the
/// output's stdout holds both, in the order written.
fn gke_rl_one_pipe(cwd: &Path, args: &[&str]) -> Output {
    let line: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_gke-rl")).chain(args.iter().copied()).map(gke_rl::quote::sh).collect();
    let mut command = Command::new("sh");
    command.args(["-c", &format!("exec {} 2>&1", line.join(" "))]);
    run_gke_rl(command, cwd, &[])
}

/// `command` (gke-rl, or what runs it) in `cwd`, with HF_TOKEN and the heads' Ray token set.
fn run_gke_rl(mut command: Command, cwd: &Path, vars: &[(&str, Option<&str>)]) -> Output {
    command
        .env("GKE_RL_RUNS_DIR", common::runs_dir())
        .current_dir(cwd)
        .env("HF_TOKEN", TOKEN)
        // The heads' Ray token (the 2.46 head has no token authentication and ignores it).
        .env("RAY_AUTH_TOKEN", ray_head::test_token())
        .env_remove("RAY_AUTH_TOKEN_PATH")
        .env_remove("RAY_ADDRESS")
        // No cluster to port-forward to unless a test says so.
        .env("KUBECONFIG", cwd.join("no-kubeconfig"));
    for (name, value) in vars {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    common::exited_cleanly(command.output().expect("gke-rl runs"))
}

/// The library's client options for `head`: its token, if it has one.
fn client_options(head: &Head) -> gke_rl_ray::ClientOptions {
    let token = head.token.as_deref().and_then(|t| gke_rl_ray::Token::new(t, gke_rl_ray::TokenSource::Variable).ok().flatten());
    gke_rl_ray::ClientOptions { token, ..gke_rl_ray::ClientOptions::default() }
}

/// `condition`, for a run that also ended cleanly (a documented exit code, no panic) and
/// printed no Ray token.
fn check(condition: bool, what: &str, out: &Output) -> Result<(), Failed> {
    common::clean_exit(out)?;
    if [stdout(out), stderr(out)].iter().any(|text| text.contains(ray_head::test_token())) {
        return Err(format!("{what}: the Ray token was printed").into());
    }
    if condition {
        return Ok(());
    }
    Err(format!("{what}\nexit: {:?}\nstdout:\n{}\nstderr:\n{}", out.status.code(), stdout(out), stderr(out)).into())
}

/// The submission id printed by `submit`.
fn submitted_id(out: &Output) -> Option<String> {
    let err = stderr(out);
    let line = err.lines().find(|l| l.starts_with("job ") && l.ends_with(" submitted"))?;
    line.split_whitespace().nth(1).map(str::to_owned)
}

/// A working dir with a job script, a runtime env, files to leave out and a .rayignore.
fn job_dir(script: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write");
    write("job.sh", script);
    write(".rayignore", "secret.env\n");
    write("secret.env", "export NOT_UPLOADED=1\n");
    write("skip.txt", "left out by the runtime env's excludes\n");
    write("runtime_env.json", "{\"env_vars\": {\"GREETING\": \"hello-from-runtime-env\"}, \"excludes\": [\"skip.txt\"]}\n");
    dir
}

/// Which heads a trial runs on.
enum On {
    /// Every head: the trial checks how that Ray's Jobs API answers.
    Every,
    /// Every head with token authentication.
    TokenHeads,
    /// The heads whose Ray a known NeMo-RL image ships: the trial deploys that image.
    KnownImages,
    /// The newest head only: the trial checks gke-rl's own side (what it refuses before
    /// connecting, sends, or does on a signal or a cut connection), which no Ray changes.
    Newest,
    /// The head whose Ray the newest NeMo-RL release ships: the trial deploys its image.
    NewestRelease,
    /// The head whose Ray the oldest NeMo-RL release ships: the trial deploys its image.
    OldestRelease,
}

impl On {
    fn includes(&self, version: &str) -> bool {
        match self {
            On::Every => true,
            On::TokenHeads => ray_head::has_token_auth(version),
            On::KnownImages => known_image(version).is_some(),
            On::Newest => version == gke_rl_ray::NEWEST_TESTED_RAY,
            On::NewestRelease => gke_rl::knowledge::NEMO_RL_RELEASES.last().is_some_and(|r| r.ray == version),
            On::OldestRelease => gke_rl::knowledge::NEMO_RL_RELEASES.first().is_some_and(|r| r.ray == version),
        }
    }
}

/// The newest NeMo-RL release's image that ships Ray `version`.
fn known_image(version: &str) -> Option<&'static str> {
    gke_rl::knowledge::NEMO_RL_RELEASES.iter().rev().find(|r| r.ray == version).map(|r| r.image)
}

fn head_trials(version: &'static str, head: &Arc<Starting>) -> Vec<Trial> {
    type Case = fn(&Head) -> Result<(), Failed>;
    let cases: [(&str, On, Case); 20] = [
        ("deploy_submit_status_destroy_through_a_tls_api_server", On::KnownImages, through_a_tls_api_server),
        (
            "an_xpk_cluster_and_its_lustre_go_from_deploy_to_a_submitted_run_and_back_as_they_were",
            On::OldestRelease,
            existing_cluster_through_a_tls_api_server,
        ),
        (
            "a_rayjob_is_deployed_submitted_followed_and_stopped_through_a_tls_api_server",
            On::NewestRelease,
            rayjob_through_a_tls_api_server,
        ),
        ("a_zip_file_is_uploaded_as_it_is", On::Newest, zip_file_working_dir),
        ("ctrl_c_detaches_and_the_job_keeps_running", On::Newest, ctrl_c_detaches),
        ("submit_working_dir_and_runtime_env_then_logs_and_status", On::Every, submit_and_inspect),
        ("failed_job_exits_1", On::Every, failed_job),
        ("duplicate_submission_id_is_reported", On::Every, duplicate_id),
        ("stop_a_running_job", On::Every, stop_job),
        ("unchanged_package_is_not_uploaded_again", On::Every, package_reuse),
        ("over_limit_folder_is_refused_before_upload", On::Newest, over_limit),
        ("follow_survives_a_dropped_stream", On::Every, dropped_stream),
        ("port_forward_carries_a_followed_job_across_a_cut", On::Newest, port_forward_across_a_cut),
        ("secrets_stay_out_of_package_request_and_processes", On::Newest, secrets),
        ("label_selector_is_gated_by_version", On::Every, label_selector),
        ("a_gcs_address_is_named_as_such_with_the_dashboards", On::Every, gcs_address),
        ("a_runs_folder_on_storage_that_is_not_mounted_is_refused_not_made_and_its_short_log_is_read", On::Every, runs_folder_not_mounted),
        ("an_unsupervised_job_runs_its_command_as_given", On::Newest, unsupervised),
        ("a_job_is_supervised_on_a_head_whose_python_has_no_ray", On::Newest, supervised_without_ray),
        ("a_token_protected_head_admits_its_token_from_each_source_and_refuses_others_clearly", On::TokenHeads, token_auth),
    ];
    cases
        .into_iter()
        .filter(|(_, on, _)| on.includes(version))
        .map(|(name, _, case)| {
            let head = Arc::clone(head);
            Trial::test(format!("ray_{version}::{name}"), move || case(&*head.wait()?))
        })
        .collect()
}

/// Issue 52: the GCS address (`host:port`, as `ray start` prints it and KubeRay pods set
/// RAY_ADDRESS) is not the dashboard's: gke-rl says which it was given and what to give.
fn gcs_address(head: &Head) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let gcs = format!("127.0.0.1:{}", head.gcs);
    for (args, vars) in [(vec!["jobs", "--address", gcs.as_str()], vec![]), (vec!["jobs"], vec![("RAY_ADDRESS", Some(gcs.as_str()))])] {
        let out = gke_rl_with(dir.path(), &args, &vars);
        let said = stderr(&out);
        check(
            out.status.code() == Some(2) && said.contains(&format!("{gcs} is Ray's GCS address")) && said.contains("http://127.0.0.1:8265"),
            "the GCS address is named, with the dashboard's to give",
            &out,
        )?;
    }
    Ok(())
}

/// The whole path as a user takes it, with only Google Cloud faked: deploy against the fake
/// API server over HTTPS (a GKE-style kubeconfig, exec credentials), submit without an
/// address through kube-rs's port-forward upgrade to this real head behind the fake head pod,
/// status the same way, then destroy.
///
/// The config takes the NeMo-RL image that ships this head's Ray. On a Ray with token
/// authentication the RayCluster asks for a token: deploy makes it, and a second head started
/// with that token (as KubeRay starts the pods) stands behind the head pod.
fn through_a_tls_api_server(head: &Head) -> Result<(), Failed> {
    let cloud = common::Cloud::new(gke_rl_kube::fake::Pods::ReadyAfter(0));
    let image = known_image(head.version).ok_or("no known image ships this Ray")?;
    std::fs::write(cloud.root.join("gke-rl.yaml"), format!("ray:\n  image: {image}\n"))?;
    let deploy = cloud.deploy(&["--authorized-cidr", "203.0.113.7/32"], &[]);
    check(deploy.status.success(), "deploy over TLS", &deploy)?;
    let secret = "ray-a4-gpu-spot-ray-token";
    let pods_head = match &head.token {
        None => {
            check(
                cloud.api.object("networkpolicies", "ray-a4-gpu-spot-ray-pods").is_some(),
                "a Ray without tokens gets the NetworkPolicy",
                &deploy,
            )?;
            None
        }
        Some(_) => {
            let token = cloud.api.secret_value(secret, "auth_token").ok_or("deploy made no Ray token")?;
            check(
                stderr(&deploy).contains(&format!("Secret default/{secret} holds a new cluster token"))
                    && token.len() == 64
                    && token.chars().all(|c| c.is_ascii_hexdigit())
                    && cloud.api.object("rayclusters", "ray-a4-gpu-spot").is_some_and(|c| c["spec"]["authOptions"]["secretName"] == secret),
                "deploy makes a random token and the RayCluster asks for it",
                &deploy,
            )?;
            let bin = venv(head.version).ok_or("no venv")?;
            Some(Head::start_as(Role::SecondHead, head.version, &bin, &[], Some(&token))?)
        }
    };
    let behind_the_pod = pods_head.as_ref().unwrap_or(head);
    let dashboard: std::net::SocketAddr = behind_the_pod.address.trim_start_matches("http://").parse()?;
    cloud.api.forward_head_to(dashboard);

    std::fs::write(cloud.root.join("count.sh"), "for i in $(seq 1 6); do echo tls-line-$i; sleep 0.2; done\n")?;
    let submit = cloud.gke_rl(&["submit", "--include", "count.sh", "--", "bash", "count.sh"], &[]);
    check(submit.status.success(), "submit through the port-forward exits 0", &submit)?;
    let log: Vec<String> = stdout(&submit).lines().filter(|l| l.starts_with("tls-line-")).map(str::to_owned).collect();
    check(log == (1..=6).map(|i| format!("tls-line-{i}")).collect::<Vec<_>>(), "the followed log, whole", &submit)?;
    check(
        stderr(&submit).contains(" -> default/ray-a4-gpu-spot-head:8265") && stderr(&submit).contains(&format!("Ray {}", head.version)),
        "it forwarded to the head pod and reached this head",
        &submit,
    )?;
    let id = submitted_id(&submit).ok_or("no submission id printed")?;
    let status = cloud.gke_rl(&["status", &id], &[]);
    check(status.status.success() && stdout(&status).contains("SUCCEEDED"), "status through the port-forward", &status)?;
    check(
        stderr(&status).contains("cluster ray-a4-gpu-spot: 9/9 pods Ready, ready")
            && stderr(&status).contains("costing at least $262.97/hour ($6,311.32/day)"),
        "status shows the cluster's state and what it costs",
        &status,
    )?;
    cloud.api.set_pods(gke_rl_kube::fake::Pods::Preempted { lost: 2, message: "0/9 nodes are available".into() });
    let preempted = cloud.gke_rl(&["status", &id], &[]);
    check(
        stderr(&preempted).contains("cluster ray-a4-gpu-spot: 7/9 pods Ready, preempted: KubeRay is recreating the lost pods")
            && stderr(&preempted).contains("! ray-a4-gpu-spot-worker-7: Unschedulable: 0/9 nodes are available"),
        "status tells a preempted cluster apart",
        &preempted,
    )?;
    let node = "gke-ray-a4-gpu-spot-a4-highgpu-8g-a4-pool-0c5f";
    cloud
        .api
        .set_pods(gke_rl_kube::fake::Pods::GpuHealthCheckFails { node: node.into(), output: "GPU 3: 2 uncorrected ECC errors\n".into() });
    let unhealthy = cloud.gke_rl(&["status", &id], &[]);
    check(
        stderr(&unhealthy).contains("cluster ray-a4-gpu-spot: 8/9 pods Ready, broken")
            && stderr(&unhealthy)
                .contains(&format!("! ray-a4-gpu-spot-worker-0: node {node}: GPU health check failed: GPU 3: 2 uncorrected ECC errors")),
        "status names the node that failed the GPU health check",
        &unhealthy,
    )?;
    cloud.api.set_pods(gke_rl_kube::fake::Pods::ReadyAfter(0));

    // --then suspend gives the pods back once the job is done; the next submit resumes first.
    let suspended = cloud.gke_rl(&["submit", "--then", "suspend", "--", "echo", "done"], &[]);
    check(
        suspended.status.success()
            && stderr(&suspended).contains("suspending RayCluster ray-a4-gpu-spot")
            && cloud.api.object("rayclusters", "ray-a4-gpu-spot").is_some_and(|c| c["spec"]["suspend"] == true),
        "submit --then suspend suspends the RayCluster after the job",
        &suspended,
    )?;
    let while_suspended = cloud.gke_rl(&["status"], &[]);
    check(
        while_suspended.status.success()
            && stdout(&while_suspended).contains("cluster ray-a4-gpu-spot: suspended: no pods until `resume`")
            && stdout(&while_suspended)
                .contains("still costing at least $262.97/hour ($6,311.32/day): its GPU pool does not scale to zero"),
        "status says the cluster is suspended, and that its static GPU pool still bills",
        &while_suspended,
    )?;
    let resumed = cloud.gke_rl(&["submit", "--", "echo", "again"], &[]);
    check(
        resumed.status.success() && stderr(&resumed).contains("resuming RayCluster ray-a4-gpu-spot") && stdout(&resumed).contains("again"),
        "submit on a suspended cluster resumes it first",
        &resumed,
    )?;
    let forwards = cloud.api.requests().iter().filter(|r| r.uri.contains("/pods/ray-a4-gpu-spot-head/portforward")).count();
    if forwards < 2 {
        return Err(format!("{forwards} port-forward upgrades reached the API server").into());
    }

    // `deploy --fabric-check --storage-check` on the Ready cluster runs both check jobs on this
    // head through the port-forward: a one-node Ray cluster is too few for an inter-node check,
    // and this machine has no /lustre (which the storage check never makes).
    let fabric = cloud.deploy(&["--fabric-check", "--storage-check"], &[]);
    check(
        fabric.status.code() == Some(1)
            && stderr(&fabric).contains("is Ready")
            && stderr(&fabric).contains("job gke-rl-fabric-check-")
            && stdout(&fabric).contains("1 node; an inter-node collective needs at least two"),
        "deploy --fabric-check checks the Ready cluster and fails on one node",
        &fabric,
    )?;
    check(
        stderr(&fabric).contains("job gke-rl-storage-check-")
            && stdout(&fabric).contains("the check job failed: /lustre does not exist here: the file system to check is not mounted there")
            && !std::path::Path::new("/lustre").exists(),
        "deploy --storage-check checks the Ready cluster and makes no mount point",
        &fabric,
    )?;
    // (A head without tokens is shared with the other trials: the newest run may be theirs.)
    let latest = cloud.gke_rl(&["status"], &[]);
    check(
        latest.status.success() && !stdout(&latest).contains("gke-rl-fabric-check-") && !stdout(&latest).contains("gke-rl-storage-check-"),
        "status without an id is of the newest run, not of gke-rl's own check jobs after it",
        &latest,
    )?;

    if let Some(token) = pods_head.as_ref().and_then(|h| h.token.as_deref()) {
        check(cloud.api.secret_value(secret, "auth_token").as_deref() == Some(token), "a second deploy keeps the token", &fabric)?;
    }

    // This machine has no /lustre: what the instance holds cannot be listed, which is no proof
    // that it holds nothing.
    let refused = cloud.destroy(&[]);
    check(
        !refused.status.success()
            && stderr(&refused).contains("destroy cannot tell what it would lose with Lustre instance rl-demo-gpu-lustre: ")
            && stderr(&refused).contains("/lustre is not there: the file system is not mounted on this node")
            && stderr(&refused).contains("--discard-checkpoints")
            && cloud.api.object("rayclusters", "ray-a4-gpu-spot").is_some(),
        "destroy refuses when the head cannot list what the instance holds",
        &refused,
    )?;
    let destroy = cloud.gke_rl(&["destroy", "--yes", "--discard-checkpoints", "--toolkit", "toolkit", "--folder", "deployment"], &[]);
    check(destroy.status.success() && stderr(&destroy).contains("deleted RayCluster default/ray-a4-gpu-spot"), "destroy", &destroy)?;
    check(cloud.api.object("rayclusters", "ray-a4-gpu-spot").is_none(), "the RayCluster is gone", &destroy)?;
    check(cloud.api.object("secrets", secret).is_none(), "the Ray token's Secret is gone", &destroy)?;
    let outputs = [&deploy, &submit, &status, &suspended, &resumed, &fabric, &latest, &refused, &destroy];
    cloud.assert_token_stays_secret(&outputs);
    if let Some(token) = pods_head.as_ref().and_then(|h| h.token.as_deref()) {
        let printed = outputs.iter().any(|out| stdout(out).contains(token) || stderr(out).contains(token));
        let in_uri = cloud.api.requests().iter().any(|r| r.uri.contains(token));
        let on_disk = common::files_under(&cloud.root)
            .into_iter()
            .filter(|path| std::fs::read(path).is_ok_and(|b| memchr_find(&b, token.as_bytes())))
            .collect::<Vec<_>>();
        if printed || in_uri || cloud.calls().contains(token) || !on_disk.is_empty() {
            return Err(format!("the Ray token leaked: printed {printed}, in a URI {in_uri}, in files {on_disk:?}").into());
        }
    }
    Ok(())
}

/// Issue 53's whole way, as a team with an xpk cluster and a Lustre instance of its own takes
/// it: deploy onto the cluster gcloud describes (`tests/fixtures/gcloud/`) to a Ready
/// RayCluster with the instance bound, submit through kube-rs's port-forward to this real head
/// behind the head pod and follow the run, status, logs and its report, suspend and resume
/// (the fabric and storage checks, the same calls there, are `through_a_tls_api_server`'s: two
/// at once on one shared head contend for it), then
/// destroy, which leaves the
/// cluster, its pools and the instance as they were. (A Ray without token authentication: the
/// token's way is the same on every cluster, and `through_a_tls_api_server` takes it.)
fn existing_cluster_through_a_tls_api_server(head: &Head) -> Result<(), Failed> {
    let image = known_image(head.version).ok_or("no known image ships this Ray")?;
    let cloud = common::Cloud::existing(
        "cluster-xpk-a4.json",
        true,
        &format!("{}ray:\n  image: {image}\njob:\n  idle_timeout_minutes: 30\n", common::EXISTING_XPK),
    );
    let deploy = cloud.gke_rl(&["deploy", "--yes", "--folder", "deployment", "--timeout", "20s"], &[]);
    check(
        deploy.status.success()
            && stderr(&deploy).contains("existing cluster ray-a4-gpu-spot (GKE ")
            && stderr(&deploy).contains("RayCluster ray-a4-gpu-spot is Ready"),
        "deploy onto the xpk cluster reaches a Ready RayCluster",
        &deploy,
    )?;
    let claim = cloud.api.object("persistentvolumeclaims", "lustre-pvc").ok_or("no claim")?;
    let cluster = cloud.api.object("rayclusters", "ray-a4-gpu-spot").ok_or("no RayCluster")?;
    check(
        claim["spec"]["volumeName"] == "default-lustre-pvc" && cluster.to_string().contains("\"claimName\":\"lustre-pvc\""),
        "the RayCluster mounts the claim bound to the team's instance",
        &deploy,
    )?;
    let dashboard: std::net::SocketAddr = head.address.trim_start_matches("http://").parse()?;
    cloud.api.forward_head_to(dashboard);

    std::fs::write(cloud.root.join("count.sh"), "for i in $(seq 1 4); do echo xpk-line-$i; done\n")?;
    let submit = cloud.gke_rl(&["submit", "--include", "count.sh", "--", "bash", "count.sh"], &[]);
    let printed = stdout(&submit);
    let log: Vec<&str> = printed.lines().filter(|l| l.starts_with("xpk-line-")).collect();
    check(
        submit.status.success()
            && log == ["xpk-line-1", "xpk-line-2", "xpk-line-3", "xpk-line-4"]
            && stderr(&submit).contains(" -> default/ray-a4-gpu-spot-head:8265")
            && stderr(&submit).contains(&format!("Ray {}", head.version)),
        "submit reaches this head through the port-forward and follows the whole log",
        &submit,
    )?;
    let id = submitted_id(&submit).ok_or("no submission id printed")?;
    let status = cloud.gke_rl(&["status", &id], &[]);
    check(
        status.status.success()
            && stdout(&status).contains("SUCCEEDED")
            && stderr(&status).contains("cluster ray-a4-gpu-spot: 9/9 pods Ready"),
        "status of the run and of the cluster",
        &status,
    )?;
    let logs = cloud.gke_rl(&["logs", &id], &[]);
    check(logs.status.success() && stdout(&logs).contains("xpk-line-4"), "logs of the run", &logs)?;
    let report = cloud.gke_rl(&["report", &id, "--format", "json"], &[]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&report)).unwrap_or_default();
    check(
        report.status.success()
            && json["goodput"]["wall_s"].as_f64().is_some_and(|s| s > 0.0)
            && json["cost"]["per_hour"].as_f64().is_some_and(|c| c > 0.0)
            && !stdout(&report).contains("-0.0"),
        "the run's report, priced",
        &report,
    )?;
    check(cloud.api.object("configmaps", "ray-a4-gpu-spot-idle-guard").is_some(), "deploy installed the idle guard there too", &deploy)?;
    let suspend = cloud.gke_rl(&["suspend"], &[]);
    let suspended = cloud.api.object("rayclusters", "ray-a4-gpu-spot").is_some_and(|c| c["spec"]["suspend"] == true);
    check(suspend.status.success() && suspended, "suspend", &suspend)?;
    let resume = cloud.gke_rl(&["resume"], &[]);
    let resumed = cloud.api.object("rayclusters", "ray-a4-gpu-spot").is_some_and(|c| c["spec"]["suspend"] != true);
    check(resume.status.success() && resumed, "resume", &resume)?;
    let destroy = cloud.gke_rl(&["destroy", "--yes", "--folder", "deployment"], &[]);
    check(
        destroy.status.success()
            && stderr(&destroy).contains("deleted RayCluster default/ray-a4-gpu-spot")
            && stderr(&destroy).contains("cluster ray-a4-gpu-spot and Lustre instance rl-demo-gpu-lustre stay as they were, but for the add-ons deploy turned on, which stay on; to turn them off:\n  $ gcloud container clusters update ray-a4-gpu-spot --location us-east1 --project fake-project --update-addons=RayOperator=DISABLED"),
        "destroy deletes what deploy made, and only that",
        &destroy,
    )?;
    let calls = cloud.calls();
    let changed = calls.lines().filter(|l| {
        l.starts_with("gcluster")
            || ["clusters delete", "node-pools", "lustre instances delete", "lustre instances create"].iter().any(|v| l.contains(v))
    });
    if let Some(call) = changed.into_iter().next() {
        return Err(format!("a call changed the team's cluster or instance: {call}").into());
    }
    check(
        cloud.root.join("cloud/cluster").exists()
            && cloud.root.join("cloud/lustre").exists()
            && cloud.api.object("rayclusters", "ray-a4-gpu-spot").is_none()
            && cloud.api.object("configmaps", "ray-a4-gpu-spot-idle-guard").is_none()
            && cloud.api.objects("cronjobs").is_empty(),
        "the cluster and the instance stay; the RayCluster and the helpers are gone",
        &destroy,
    )?;
    cloud.assert_token_stays_secret(&[&deploy, &submit, &status, &logs, &report, &suspend, &resume, &destroy]);
    Ok(())
}

/// RayJob mode as a user takes it, with only Google Cloud faked, over HTTPS with the GKE-style
/// kubeconfig: deploy makes no RayCluster; submit creates the RayJob, waits while the fake API
/// server advances it as KubeRay does (`Initializing` with a cluster of its own, `Waiting` once
/// its pods are Ready), submits to this real head behind that cluster's head pod, names the job
/// in `spec.jobId` (KubeRay then follows it: `Running`) and follows the run; status and logs
/// find it by the RayJob's name, through its TTL after the run too; a second submit replaces
/// the finished RayJob, a third is refused while that one runs, and stop deletes it; a run
/// whose cluster a queue preempts is told lost, and its RayJob deleted. The RayJob waits in
/// Kueue's queue first: submit and status tell Kueue's reason until it is admitted.
///
/// The RayJob's cluster asks for the Ray token in the Secret deploy keeps: put there first with
/// this head's token, as KubeRay would start the pods with it.
fn rayjob_through_a_tls_api_server(head: &Head) -> Result<(), Failed> {
    let token = head.token.as_deref().ok_or("RayJob mode needs a Ray with tokens")?;
    let cloud = common::Cloud::new(gke_rl_kube::fake::Pods::ReadyAfter(1));
    let image = known_image(head.version).ok_or("no known image ships this Ray")?;
    let config = format!(
        "project:\n  cluster_name: ray-a4-rayjob\nray:\n  image: {image}\njob:\n  name: grpo-rayjob\n  mode: rayjob\n  queue: a4\n"
    );
    std::fs::write(cloud.root.join("gke-rl.yaml"), config)?;
    cloud.api.put_secret("ray-a4-rayjob-ray-token", "auth_token", token);
    let deploy = cloud.deploy(&["--authorized-cidr", "203.0.113.7/32"], &[]);
    check(
        deploy.status.success() && !cloud.api.requests().iter().any(|r| r.uri.contains("/rayclusters")),
        "deploy in rayjob mode makes no RayCluster",
        &deploy,
    )?;
    let staged = std::fs::read_to_string(cloud.root.join("deployment/kueue-configuration.yaml.tftpl"))?;
    check(
        staged.contains("coveredResources: [cpu, memory, nvidia.com/gpu]") && staged.contains("name: ray-head"),
        "deploy stages gke-rl's Kueue configuration beside the blueprint",
        &deploy,
    )?;
    cloud.api.forward_head_to(head.address.trim_start_matches("http://").parse()?);

    // Kueue holds the RayJob back until its quota is free: status says why, then it is admitted.
    let why = "couldn't assign flavors to pod set workers: insufficient unused quota for nvidia.com/gpu in flavor a4";
    cloud.api.kueue_holds(Some(why));
    std::fs::write(cloud.root.join("count.sh"), "for i in $(seq 1 4); do echo rayjob-line-$i; done\n")?;
    let (submit, queued) = std::thread::scope(|scope| {
        let admitter = scope.spawn(|| {
            // Once submit has asked Kueue about its Workload.
            let deadline = Instant::now() + Duration::from_secs(120);
            while Instant::now() < deadline && !cloud.api.requests().iter().any(|r| r.uri.contains("/workloads")) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let status = cloud.gke_rl(&["status"], &[]);
            cloud.api.kueue_holds(None);
            cloud.api.kueue_admits("grpo-rayjob");
            status
        });
        let submit = cloud.gke_rl(&["submit", "--include", "count.sh", "--", "bash", "count.sh"], &[]);
        (submit, admitter.join().expect("the admitter"))
    });
    check(
        queued.status.success() && stderr(&queued).contains(&format!("queued by Kueue in LocalQueue a4, not admitted: Pending: {why}")),
        "status tells why Kueue holds the RayJob back",
        &queued,
    )?;
    let id = submitted_id(&submit).ok_or("no submission id printed")?;
    let printed = stdout(&submit);
    let log: Vec<&str> = printed.lines().filter(|l| l.starts_with("rayjob-line-")).collect();
    let told = [
        &format!("RayJob default/grpo-rayjob created: KubeRay makes its cluster, then job {id} is submitted to it"),
        &format!("queued by Kueue in LocalQueue a4, not admitted: Pending: {why}"),
        "  RayJob grpo-rayjob: Initializing\n",
        "  RayJob grpo-rayjob: Waiting\n",
        " -> default/grpo-rayjob-",
        "KubeRay deletes RayJob grpo-rayjob's cluster 300s after the run",
    ];
    check(
        submit.status.success()
            && log == ["rayjob-line-1", "rayjob-line-2", "rayjob-line-3", "rayjob-line-4"]
            && told.iter().all(|t| stderr(&submit).contains(t))
            && cloud.api.object("rayjobs", "grpo-rayjob").is_some_and(|j| j["spec"]["jobId"] == id.as_str()),
        "submit creates the RayJob, waits for its cluster, submits there, names the job and follows the run",
        &submit,
    )?;
    let status = cloud.gke_rl(&["status"], &[]);
    check(
        status.status.success()
            && stderr(&status).contains(&format!("RayJob grpo-rayjob: Running, job {id}"))
            && stderr(&status).contains("cluster grpo-rayjob-")
            && stdout(&status).contains(&format!("{id}  SUCCEEDED")),
        "status reaches the RayJob's cluster and its job",
        &status,
    )?;

    // KubeRay sees the job end; the cluster stays for its TTL, and logs still reach it.
    cloud.api.end_ray_job("grpo-rayjob", "SUCCEEDED");
    let logs = cloud.gke_rl(&["logs", "grpo-rayjob"], &[]);
    check(logs.status.success() && stdout(&logs).contains("rayjob-line-4"), "logs by the RayJob's name, during its TTL", &logs)?;
    cloud.api.expire_ray_job("grpo-rayjob");
    let complete = cloud.gke_rl(&["status", "grpo-rayjob"], &[]);
    check(
        complete.status.success() && stdout(&complete).contains(&format!("RayJob grpo-rayjob: Complete, job {id} SUCCEEDED")),
        "a finished RayJob whose cluster is gone is KubeRay's word",
        &complete,
    )?;
    let no_cluster = cloud.gke_rl(&["logs"], &[]);
    check(
        no_cluster.status.code() == Some(2)
            && stderr(&no_cluster).contains("RayJob default/grpo-rayjob is Complete: it has no RayCluster up"),
        "logs of a RayJob without a cluster says so",
        &no_cluster,
    )?;
    let by_address = cloud.gke_rl(&["status", "--address", &head.address], &[]);
    check(
        by_address.status.code() == Some(2) && stderr(&by_address).contains("drop --address and unset RAY_ADDRESS"),
        "rayjob mode reaches its cluster through Kubernetes only",
        &by_address,
    )?;
    let again = cloud.gke_rl(&["submit", "--no-wait", "--", "echo", "again"], &[]);
    let (deleted, applied) =
        (stderr(&again).find("deleted RayJob default/grpo-rayjob"), stderr(&again).find("RayJob default/grpo-rayjob created"));
    check(
        again.status.success() && deleted.zip(applied).is_some_and(|(d, a)| d < a) && stderr(&again).contains("logs grpo-rayjob --follow"),
        "a second submit replaces the finished RayJob, and says how to follow it by name",
        &again,
    )?;
    let busy = cloud.gke_rl(&["submit", "--no-wait", "--", "echo", "third"], &[]);
    check(
        busy.status.code() == Some(2)
            && stderr(&busy)
                .contains("RayJob default/grpo-rayjob is Running, not finished; to replace it, stop it with `gke-rl stop grpo-rayjob`"),
        "a RayJob that runs is not replaced",
        &busy,
    )?;
    let stop = cloud.gke_rl(&["stop", "grpo-rayjob"], &[]);
    check(
        stop.status.success()
            && stderr(&stop).contains("RayJob grpo-rayjob (Running) is deleted: KubeRay stops its job")
            && cloud.api.object("rayjobs", "grpo-rayjob").is_none(),
        "stop deletes the RayJob",
        &stop,
    )?;

    // Kueue preempts the RayJob while its run is followed: KubeRay takes the cluster away, and
    // the RayJob is deleted rather than left to wait for a job its new cluster will never have.
    let api = cloud.api.clone();
    let preempter = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            let job = api.object("rayjobs", "grpo-rayjob").unwrap_or_default();
            if job["status"]["jobDeploymentStatus"] == "Running" && job["spec"]["jobId"].is_string() {
                api.kueue_preempts("grpo-rayjob");
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    });
    let preempted = cloud.gke_rl(&["submit", "--", "sleep", "20"], &[]);
    check(
        preempter.join().is_ok_and(|p| p)
            && preempted.status.code() == Some(2)
            && stderr(&preempted)
                .contains("is Suspended: its cluster was taken away (preempted), and the run with it; the RayJob is deleted")
            && cloud.api.object("rayjobs", "grpo-rayjob").is_none_or(|j| j["metadata"]["deletionTimestamp"].is_string()),
        "a run whose cluster is preempted is told lost, and its RayJob deleted",
        &preempted,
    )?;
    cloud.assert_token_stays_secret(&[&deploy, &queued, &submit, &status, &logs, &complete, &again, &busy, &stop, &preempted]);
    Ok(())
}

/// Submits a job that prints two GRPO steps as NeMo-RL v0.7.0 does, the second saving a
/// checkpoint; then `logs`, `status`, `report` (through the Jobs API) and `jobs` on it.
fn submit_and_inspect(head: &Head) -> Result<(), Failed> {
    // The log comes in pieces: the first step's end and the second's start in one (the first
    // step's progress must come between them, not a step late), and the second step's timing
    // table cut after its first line, which gives the step (its progress must not cut the table).
    let script = "echo \"$GREETING\"\n\
                  test ! -e skip.txt && test ! -e secret.env && echo excluded-files-absent\n\
                  n=0\n\
                  while IFS= read -r line; do\n\
                    case \"$line\" in *Timing:*) n=$((n + 1)); if [ \"$n\" = 2 ]; then sleep 2; fi;; esac\n\
                    printf '%s\\n' \"$line\"\n\
                    case \"$line\" in *'Total step time'*) if [ \"$n\" = 2 ]; then sleep 2; fi;; esac\n\
                  done < grpo.log\n";
    let dir = job_dir(script);
    let prints = Prints::of("v0.7.0", Loop::Sync);
    let grpo: String = (1..=2).map(|n| block(&prints, &figures(n), 20, None)).collect();
    std::fs::write(dir.path().join("grpo.log"), grpo).map_err(|e| e.to_string())?;
    // Log and progress in one pipe (`2>&1 | tee`): each progress line between two steps, never
    // inside a step's timing table.
    let out = gke_rl_one_pipe(
        dir.path(),
        &["submit", "--address", &head.address, "--working-dir", ".", "--runtime-env", "runtime_env.json", "--", "bash", "job.sh"],
    );
    let both = stdout(&out);
    check(out.status.success(), "submit exits 0 on SUCCEEDED", &out)?;
    check(both.contains("hello-from-runtime-env") && both.contains("excluded-files-absent"), "the runtime env and excludes apply", &out)?;
    check(both.contains("checkpoints: 1 saves, 32.0 s in total"), "the checkpoint report", &out)?;
    let progress = ["step 1/20, reward 0.1000, median step 1 min 6 s", "step 2/20, reward 0.2000 ↑, median step 1 min 23 s"];
    check(progress.iter().all(|line| both.contains(line)), "off a terminal, a plain progress line a step", &out)?;
    let lines: Vec<&str> = both.lines().collect();
    let at = |text: &str| lines.iter().position(|l| l.contains(text));
    let second_step = at("========================= Step 2/20");
    let placed = at(progress[0]) < second_step
        && progress
            .iter()
            .all(|progress| at(progress).is_some_and(|i| !lines.get(i + 1).is_some_and(|next| next.trim_start().starts_with('•'))));
    check(placed, "in one pipe, each progress line is between two steps", &out)?;
    let id = both
        .lines()
        .find(|l| l.starts_with("job ") && l.ends_with(" submitted"))
        .and_then(|l| l.split_whitespace().nth(1))
        .ok_or("no submission id printed")?
        .to_owned();
    let logs = gke_rl(dir.path(), &["logs", &id, "--address", &head.address]);
    check(logs.status.success() && stdout(&logs).contains("excluded-files-absent"), "logs prints the driver log", &logs)?;
    // At a terminal: the log, and the progress line drawn under it; --quiet keeps only the line.
    let terminal = gke_rl_in_a_terminal(dir.path(), &["logs", &id, "--follow", "--address", &head.address]);
    let shown = stdout(&terminal);
    check(
        shown.contains("excluded-files-absent") && shown.contains(progress[1]),
        "a terminal gets the log and the progress line",
        &terminal,
    )?;
    let quiet = gke_rl_in_a_terminal(dir.path(), &["logs", &id, "--follow", "--quiet", "--address", &head.address]);
    let shown = stdout(&quiet);
    check(!shown.contains("excluded-files-absent") && shown.contains(progress[1]), "--quiet keeps only the progress line", &quiet)?;
    let status = gke_rl(dir.path(), &["status", &id, "--json", "--address", &head.address]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&status)).map_err(|e| format!("status --json: {e}"))?;
    check(
        json["status"] == "SUCCEEDED" && json["runtime_env"]["env_vars"]["GREETING"] == "hello-from-runtime-env",
        "status --json",
        &status,
    )?;
    let report = gke_rl(dir.path(), &["report", &id, "--address", &head.address, "--format", "json"]);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs_f64();
    let json: serde_json::Value = serde_json::from_str(&stdout(&report)).map_err(|e| format!("report --format json: {e}"))?;
    let steps: Vec<(u64, f64)> = json["steps"]
        .as_array()
        .map(|steps| steps.iter().filter_map(|s| Some((s["step"].as_u64()?, s["step_time_s"].as_f64()?))).collect())
        .unwrap_or_default();
    check(
        steps == [(1, figures(1).total), (2, figures(2).total)]
            && json["progress"]["of"] == 20
            && json["goodput"]["wall_s"].as_f64().is_some_and(|wall| wall > 0.0)
            && json["started_at"].as_f64().is_some_and(|at| (now - 600.0..now).contains(&at)),
        "report reads the steps through the Jobs API, and the wall time and start (Lustre's window) from Ray's",
        &report,
    )?;
    // Issue 52: the run reads the same from a saved log as through the Jobs API: its wall time
    // starts at Ray's start of the job in both.
    let saved = gke_rl(dir.path(), &["logs", &id, "--address", &head.address]);
    std::fs::write(dir.path().join("saved.log"), &saved.stdout)?;
    let offline = gke_rl(dir.path(), &["report", "--log", "saved.log", "--format", "json"]);
    let offline: serde_json::Value = serde_json::from_str(&stdout(&offline)).map_err(|e| format!("report --log: {e}"))?;
    let (live, kept) = (json["goodput"]["wall_s"].as_f64().unwrap_or(0.0), offline["goodput"]["wall_s"].as_f64().unwrap_or(-9.0));
    check((live - kept).abs() <= 3.0, &format!("the wall time is {live} s through the Jobs API and {kept} s from the saved log"), &report)?;
    // Issue 52: this head has no GPU, so the config's price for its GPU nodes is not applied.
    check(
        json["cost"].is_null() && json["unpriced"].as_str().is_some_and(|why| why.contains("has no GPU")),
        "a run on a head without GPUs is not priced at the config's rate",
        &report,
    )?;
    let jobs = gke_rl(dir.path(), &["jobs", "--address", &head.address]);
    let row = stdout(&jobs).lines().find(|l| l.starts_with(&id)).map(str::to_owned).unwrap_or_default();
    check(jobs.status.success() && row.ends_with("  bash job.sh"), "jobs lists it with the user's command", &jobs)?;
    check(!stdout(&jobs).contains("gke_rl_supervise"), "and no row of the supervisor's own", &jobs)
}

fn ctrl_c_detaches(head: &Head) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let mut child = Command::new(env!("CARGO_BIN_EXE_gke-rl"))
        .env("RAY_AUTH_TOKEN", ray_head::test_token())
        .env("GKE_RL_RUNS_DIR", common::runs_dir())
        .current_dir(dir.path())
        .args(["submit", "--address", &head.address, "--", "sleep", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // Interrupt once the job is submitted and being followed, as a person would.
    let mut stderr_pipe = std::io::BufReader::new(child.stderr.take().ok_or("stderr")?);
    let mut seen = String::new();
    while !seen.contains(" submitted\n") {
        if std::io::BufRead::read_line(&mut stderr_pipe, &mut seen)? == 0 {
            break;
        }
    }
    std::thread::sleep(Duration::from_secs(1));
    Command::new("kill").args(["-INT", &child.id().to_string()]).status()?;
    let mut out = child.wait_with_output()?;
    std::io::Read::read_to_string(&mut stderr_pipe, &mut seen)?;
    out.stderr = seen.into_bytes();
    check(out.status.code() == Some(130), "Ctrl-C exits 130", &out)?;
    let id = submitted_id(&out).ok_or("no submission id printed")?;
    check(stderr(&out).contains(&format!("gke-rl logs {id} --follow --address {}", head.address)), "with the re-attach command", &out)?;
    wait_for_status(head, &id, "RUNNING")?;
    let stop = gke_rl(dir.path(), &["stop", &id, "--address", &head.address]);
    check(stop.status.success(), "the job was still running", &stop)
}

fn failed_job(head: &Head) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let out = gke_rl(dir.path(), &["submit", "--address", &head.address, "--", "sh", "-c", "echo about-to-fail; exit 3"]);
    check(out.status.code() == Some(1), "a FAILED job exits 1", &out)?;
    check(stdout(&out).contains("about-to-fail") && stderr(&out).contains("FAILED"), "its log and state are shown", &out)?;
    // Issue 65, class 1: its log is a few lines, which Ray 2.54's stream sends only after about
    // 2 s: `logs`, `status` and `report` read them all the same.
    let id = submitted_id(&out).ok_or("no submission id printed")?;
    let logs = gke_rl(dir.path(), &["logs", &id, "--address", &head.address]);
    check(logs.status.code() == Some(0) && stdout(&logs).contains("about-to-fail"), "logs prints it", &logs)?;
    let status = gke_rl(dir.path(), &["status", &id, "--address", &head.address]);
    check(stderr(&status).contains("run FAILED: "), "status has the run's end, from its record", &status)?;
    let report = gke_rl(dir.path(), &["report", &id, "--address", &head.address, "--format", "json"]);
    check(report.status.code() == Some(0) && stdout(&report).contains("\"progress\""), "report reads it", &report)
}

/// Issue 52: a local head has no /lustre; the supervisor never makes a folder at the file
/// system's root for the runs folder, and says how to give another.
fn runs_folder_not_mounted(head: &Head) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let missing = format!("/gke-rl-no-mount-{}", std::process::id());
    let runs = format!("{missing}/gke-rl/runs");
    let out = gke_rl_with(dir.path(), &["submit", "--address", &head.address, "--", "true"], &[("GKE_RL_RUNS_DIR", Some(&runs))]);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    check(
        out.status.code() == Some(1) && said.contains(&format!("{missing} is not there")) && said.contains("--runs-dir DIR"),
        "refused",
        &out,
    )?;
    check(!Path::new(&missing).exists(), "and nothing was made at the root", &out)?;
    // Issue 65, class 1: the refusal is a log of one line, which Ray 2.54's stream sends only
    // after about 2 s: `logs` and `status` still read it.
    let id = submitted_id(&out).ok_or("no submission id printed")?;
    let logs = gke_rl(dir.path(), &["logs", &id, "--address", &head.address]);
    check(logs.status.code() == Some(0) && stdout(&logs).contains(&format!("{missing} is not there")), "logs prints the refusal", &logs)?;
    let status = gke_rl(dir.path(), &["status", &id, "--address", &head.address]);
    check(
        status.status.code() == Some(0) && stdout(&status).contains("FAILED") && !stderr(&status).contains("warning"),
        "status reads its log",
        &status,
    )
}

/// Issue 52: `--no-supervisor` runs the command as given (for a head whose jobs' `python` has
/// no Ray), and needs no runs folder.
fn unsupervised(head: &Head) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let vars = [("GKE_RL_RUNS_DIR", None)];
    let out = gke_rl_with(dir.path(), &["submit", "--address", &head.address, "--no-supervisor", "--", "echo", "plain"], &vars);
    check(out.status.code() == Some(0) && stdout(&out).contains("plain"), "it runs", &out)?;
    let id = submitted_id(&out).ok_or("no submission id printed")?;
    let jobs = gke_rl(dir.path(), &["jobs", "--address", &head.address, "--json"]);
    let listed: serde_json::Value = serde_json::from_str(&stdout(&jobs)).map_err(|e| format!("jobs --json: {e}"))?;
    let entrypoint =
        listed.as_array().and_then(|jobs| jobs.iter().find(|j| j["submission_id"] == id.as_str())).map(|j| j["entrypoint"].clone());
    check(entrypoint == Some("echo plain".into()), "as given, without the supervisor", &jobs)?;
    // Issue 65, class 7: a record whose number is past its type (a step folder past 64 bits,
    // as an older supervisor read it) is counted and said, never dropped in silence.
    let restart = r#"gke-rl-record: {"event": "restart", "number": 1, "kind": "node-lost", "cause": "c", "failed": "x", "resumed_from": 99999999999999999999, "steps_redone": 0, "waited_s": 1, "back_to_running_s": 1, "lost_s": 1}"#;
    let out = gke_rl_with(dir.path(), &["submit", "--address", &head.address, "--no-supervisor", "--", "echo", restart], &vars);
    let id = submitted_id(&out).ok_or("no submission id printed")?;
    let status = gke_rl(dir.path(), &["status", &id, "--address", &head.address]);
    check(stderr(&status).contains("1 of the run's records cannot be read"), "status says the record it cannot read", &status)?;
    let report = gke_rl(dir.path(), &["report", &id, "--address", &head.address]);
    check(stdout(&report).contains("1 supervisor records could not be read"), "and so does the report", &report)
}

/// Issue 52: a head started as many people start one, `/path/venv/bin/ray start --head` with
/// the venv's `bin` not on `PATH`, so the job's `python3` has no Ray. A supervised job runs
/// there all the same: the supervisor watches the nodes through the dashboard.
fn supervised_without_ray(head: &Head) -> Result<(), Failed> {
    let bin = venv(head.version).ok_or("no venv")?;
    let path: Vec<String> = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .filter(|dir| !dir.starts_with(project_root().join("target")))
        .map(|dir| dir.display().to_string())
        .collect();
    // Its python3 is the machine's, without site-packages (`-S`): no Ray there, wherever the
    // machine's python3 has one.
    let python = path.iter().map(|dir| Path::new(dir).join("python3")).find(|p| p.is_file()).ok_or("no python3 on PATH")?;
    let plain_bin = tempfile::tempdir()?;
    let wrapper = plain_bin.path().join("python3");
    std::fs::write(&wrapper, format!("#!/bin/sh\nexec {} -S \"$@\"\n", gke_rl::quote::sh(&python.display().to_string())))?;
    std::fs::set_permissions(&wrapper, <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755))?;
    let path = format!("{}:{}", plain_bin.path().display(), path.join(":"));
    let plain = Head::start_as(Role::SecondHead, head.version, &bin, &[("PATH", path)], head.token.as_deref())?;
    let dir = job_dir("python3 -c 'import ray' 2>/dev/null && echo ray-on-path || echo no-ray-on-path\n");
    let out = gke_rl(dir.path(), &["submit", "--address", &plain.address, "--working-dir", ".", "--", "bash", "job.sh"]);
    check(
        out.status.success() && stdout(&out).contains("no-ray-on-path") && stdout(&out).contains("gke-rl-record: {\"event\": \"started\""),
        "the job runs, supervised, where its python has no Ray",
        &out,
    )
}

fn duplicate_id(head: &Head) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let id = format!("gkerl-dup-{}", std::process::id());
    let args = ["submit", "--address", &head.address, "--submission-id", &id, "--no-wait", "--", "true"];
    let first = gke_rl(dir.path(), &args);
    check(first.status.success(), "the first submission is accepted", &first)?;
    let second = gke_rl(dir.path(), &args);
    check(second.status.code() == Some(2), "the second fails", &second)?;
    check(stderr(&second).contains(&format!("a job with submission id {id} already exists")), "and says why", &second)
}

fn stop_job(head: &Head) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let out = gke_rl(dir.path(), &["submit", "--address", &head.address, "--no-wait", "--", "sleep", "300"]);
    let id = submitted_id(&out).ok_or("no submission id printed")?;
    wait_for_status(head, &id, "RUNNING")?;
    let stop = gke_rl(dir.path(), &["stop", &id, "--address", &head.address]);
    check(stop.status.success() && stderr(&stop).contains(&format!("job {id} STOPPED")), "stop waits for STOPPED", &stop)?;
    let follow = gke_rl(dir.path(), &["logs", &id, "--follow", "--address", &head.address]);
    check(follow.status.code() == Some(1), "following a STOPPED job exits 1", &follow)?;
    // The library's delete, which the CLI does not expose: a terminal job goes, then 404s.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let client = gke_rl_ray::Client::new(&head.address, client_options(head))?;
        if !client.delete(&id).await? {
            return Err(Failed::from("delete answered false"));
        }
        match client.job(&id).await {
            Err(gke_rl_ray::Error::JobNotFound { id: gone }) if gone == id => Ok(()),
            other => Err(format!("after delete: {other:?}").into()),
        }
    })
}

fn wait_for_status(head: &Head, id: &str, wanted: &str) -> Result<(), Failed> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if head.get(&format!("/api/jobs/{id}")).is_some_and(|r| r.contains(&format!("\"status\": \"{wanted}\""))) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    Err(format!("job {id} did not reach {wanted} within 60 s").into())
}

fn zip_file_working_dir(head: &Head) -> Result<(), Failed> {
    // A zip made by our packager, then given as the working dir: uploaded as it is.
    let dir = job_dir(&format!("echo from-a-zip-{}\n", head.version));
    let package = gke_rl_ray::package::Plan::for_files(vec![("job.sh".into(), std::fs::read(dir.path().join("job.sh"))?, false)])
        .build(&[])
        .map_err(|e| e.to_string())?;
    std::fs::write(dir.path().join("job.zip"), &package.zip)?;
    let out = gke_rl(dir.path(), &["submit", "--address", &head.address, "--working-dir", "job.zip", "--", "bash", "job.sh"]);
    check(out.status.success() && stdout(&out).contains(&format!("from-a-zip-{}", head.version)), "a .zip working dir runs", &out)
}

fn package_reuse(head: &Head) -> Result<(), Failed> {
    let dir = job_dir(&format!("echo reuse-{}-{}\n", head.version, std::process::id()));
    let args = ["submit", "--address", &head.address, "--working-dir", ".", "--no-wait", "--", "bash", "job.sh"];
    let first = gke_rl(dir.path(), &args);
    check(first.status.success() && stderr(&first).contains("uploading gcs://_ray_pkg_"), "the first submit uploads", &first)?;
    let second = gke_rl(dir.path(), &args);
    check(second.status.success() && stderr(&second).contains("is already on the cluster: not uploading"), "the second does not", &second)
}

fn over_limit(head: &Head) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("job.sh"), "true\n")?;
    let big = std::fs::File::create(dir.path().join("weights.bin"))?;
    big.set_len(101 * 1024 * 1024)?; // sparse: no disk used
    let out = gke_rl(dir.path(), &["submit", "--address", &head.address, "--working-dir", ".", "--", "bash", "job.sh"]);
    let err = stderr(&out);
    check(out.status.code() == Some(2), "an over-limit folder is an error", &out)?;
    check(err.contains("101.0 MiB  weights.bin") && err.contains("/weights.bin"), "naming the file and the .rayignore line", &out)?;
    check(err.contains("warning: weights.bin is large (101.0 MiB)"), "after the per-file warning", &out)?;
    check(!err.contains("Ray 2.") && !err.contains("uploading"), "before connecting or uploading", &out)
}

/// Against a head started with `RAY_AUTH_MODE=token`: the token from each place Ray's CLI
/// looks, a missing and a wrong one refused in words that name where it came from, never what
/// it is; a token in `--headers` refused before any request. (The other trials of this head
/// submit, follow, stop and list with the token in `RAY_AUTH_TOKEN`.)
fn token_auth(head: &Head) -> Result<(), Failed> {
    let home = tempfile::tempdir()?;
    let dir = tempfile::tempdir()?;
    let token = head.token.as_deref().ok_or("the head has no token")?;
    let jobs = ["jobs", "--address", &head.address];
    let home_var = home.path().to_str().ok_or("utf-8")?;

    let missing = gke_rl_with(dir.path(), &jobs, &[("RAY_AUTH_TOKEN", None), ("HOME", Some(home_var))]);
    check(
        missing.status.code() == Some(2)
            && stderr(&missing).contains("refused GET /api/jobs/ (401: Unauthorized: Missing authentication token): it needs the cluster's Ray token, and none was given: set RAY_AUTH_TOKEN"),
        "no token: a 401 that says where to put one",
        &missing,
    )?;
    let wrong = gke_rl_with(dir.path(), &jobs, &[("RAY_AUTH_TOKEN", Some("0123456789abcdef-not-the-token"))]);
    check(
        wrong.status.code() == Some(2)
            && stderr(&wrong).contains(
                "(403: Forbidden: Invalid authentication token) with the token from RAY_AUTH_TOKEN, which is not this cluster's token",
            )
            && !stderr(&wrong).contains("0123456789abcdef-not-the-token"),
        "a wrong token: a 403 that names its source, not its value",
        &wrong,
    )?;

    let file = dir.path().join("ray-token");
    std::fs::write(
        &file,
        format!(
            "{token}
"
        ),
    )?;
    let path_var = file.to_str().ok_or("utf-8")?;
    let from_path = gke_rl_with(dir.path(), &jobs, &[("RAY_AUTH_TOKEN", None), ("RAY_AUTH_TOKEN_PATH", Some(path_var))]);
    check(from_path.status.success(), "the token from RAY_AUTH_TOKEN_PATH", &from_path)?;
    std::fs::create_dir(home.path().join(".ray"))?;
    std::fs::write(home.path().join(".ray/auth_token"), token)?;
    let from_home = gke_rl_with(dir.path(), &jobs, &[("RAY_AUTH_TOKEN", None), ("HOME", Some(home_var))]);
    check(from_home.status.success(), "the token from ~/.ray/auth_token", &from_home)?;
    let wrong_file = dir.path().join("wrong-token");
    std::fs::write(
        &wrong_file,
        "wrong
",
    )?;
    let refused =
        gke_rl_with(dir.path(), &jobs, &[("RAY_AUTH_TOKEN", None), ("RAY_AUTH_TOKEN_PATH", Some(wrong_file.to_str().ok_or("utf-8")?))]);
    check(
        refused.status.code() == Some(2)
            && stderr(&refused).contains(&format!("with the token from {} (the file RAY_AUTH_TOKEN_PATH names)", wrong_file.display())),
        "a wrong token file is named",
        &refused,
    )?;

    let header = format!("{{\"Authorization\": \"Bearer {token}\"}}");
    let in_argv = gke_rl(dir.path(), &["jobs", "--address", &head.address, "--headers", &header]);
    check(
        in_argv.status.code() == Some(2)
            && stderr(&in_argv).contains("header `Authorization` would carry a token, and headers given on the command line show in `ps`"),
        "a token in --headers is refused",
        &in_argv,
    )?;

    // A followed log (the WebSocket) and a stop, with the token from the file.
    std::fs::write(dir.path().join("job.sh"), "echo token-job-line\nsleep 30\n")?;
    let submit = gke_rl_with(
        dir.path(),
        &["submit", "--address", &head.address, "--include", "job.sh", "--no-wait", "--", "bash", "job.sh"],
        &[("RAY_AUTH_TOKEN", None), ("RAY_AUTH_TOKEN_PATH", Some(path_var))],
    );
    let id = submitted_id(&submit).ok_or("no submission id printed")?;
    wait_for_status(head, &id, "RUNNING")?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !head.get(&format!("/api/jobs/{id}/logs")).is_some_and(|r| r.contains("token-job-line")) {
        if Instant::now() > deadline {
            return Err("the job printed nothing within 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let stop = gke_rl_with(
        dir.path(),
        &["stop", &id, "--address", &head.address],
        &[("RAY_AUTH_TOKEN", None), ("RAY_AUTH_TOKEN_PATH", Some(path_var))],
    );
    check(stop.status.success(), "stop with the token", &stop)?;
    let logs = gke_rl(dir.path(), &["logs", &id, "--follow", "--address", &head.address]);
    check(stdout(&logs).contains("token-job-line"), "logs --follow with the token", &logs)?;
    let records = head.get("/api/jobs/").ok_or("the jobs")?;
    check(!records.contains(token), "the token is in none of the Jobs API's records", &logs)
}

fn label_selector(head: &Head) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let out =
        gke_rl(dir.path(), &["submit", "--address", &head.address, "--no-wait", "--entrypoint-label-selector", "pool=a4", "--", "true"]);
    if gke_rl::knowledge::ray_at_least(head.version, "2.54.0") {
        return check(out.status.success(), "Ray 2.54 and newer accept it", &out);
    }
    check(out.status.code() == Some(2), "an older Ray does not know entrypoint_label_selector", &out)?;
    let said = format!("entrypoint_label_selector needs Ray 2.54.0 or newer; the cluster runs Ray {}", head.version);
    check(stderr(&out).contains(&said), "said so", &out)
}

/// A TCP proxy to the head that records what clients send and can cut every connection.
struct Proxy {
    address: String,
    connections: Arc<Mutex<Vec<TcpStream>>>,
    sent: Arc<Mutex<Vec<u8>>>,
}

impl Proxy {
    fn start(target: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = format!("http://{}", listener.local_addr().expect("address"));
        let target = target.strip_prefix("http://").expect("http address").to_owned();
        let connections = Arc::new(Mutex::new(Vec::new()));
        let sent = Arc::new(Mutex::new(Vec::new()));
        let (conns, record) = (Arc::clone(&connections), Arc::clone(&sent));
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(&target) else { continue };
                let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else { continue };
                conns.lock().expect("lock").extend([client.try_clone().expect("clone"), server.try_clone().expect("clone")]);
                let record = Arc::clone(&record);
                std::thread::spawn(move || pump(client, server, Some(&record)));
                std::thread::spawn(move || pump(s2, c2, None));
            }
        });
        Proxy { address, connections, sent }
    }

    fn cut(&self) {
        for stream in self.connections.lock().expect("lock").drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, record: Option<&Mutex<Vec<u8>>>) {
    let mut buffer = [0u8; 16384];
    while let Ok(n) = from.read(&mut buffer) {
        if n == 0 || to.write_all(&buffer[..n]).is_err() {
            break;
        }
        if let Some(record) = record {
            record.lock().expect("lock").extend_from_slice(&buffer[..n]);
        }
    }
    let _ = to.shutdown(Shutdown::Both);
}

fn dropped_stream(head: &Head) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("count.sh"), "for i in $(seq 1 24); do echo numbered-line-$i; sleep 0.25; done\n")?;
    let out = gke_rl(dir.path(), &["submit", "--address", &head.address, "--include", "count.sh", "--no-wait", "--", "bash", "count.sh"]);
    let id = submitted_id(&out).ok_or("no submission id printed")?;
    wait_for_status(head, &id, "RUNNING")?;
    let proxy = Proxy::start(&head.address);
    let follower = Command::new(env!("CARGO_BIN_EXE_gke-rl"))
        .env("RAY_AUTH_TOKEN", ray_head::test_token())
        .env("GKE_RL_RUNS_DIR", common::runs_dir())
        .args(["logs", &id, "--follow", "--address", &proxy.address])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    std::thread::sleep(Duration::from_secs(3));
    proxy.cut();
    let out = follower.wait_with_output()?;
    check(out.status.success(), "the follower sees the job succeed", &out)?;
    check(stderr(&out).contains("reconnecting"), "after a reconnect", &out)?;
    let lines: Vec<String> = stdout(&out).lines().filter(|l| l.starts_with("numbered-line-")).map(str::to_owned).collect();
    let expected: Vec<String> = (1..=24).map(|i| format!("numbered-line-{i}")).collect();
    check(lines == expected, "every line exactly once, in order", &out)
}

/// The port-forward the job commands use when no address is given, with the Kubernetes
/// upgrade replaced by a TCP connection to a proxy in front of the head: cutting the proxy's
/// connections is the API server dropping the forward's stream.
struct ThroughProxy(String);

impl gke_rl_kube::portforward::Upstream for ThroughProxy {
    type Stream = tokio::net::TcpStream;

    async fn connect(&self) -> std::io::Result<tokio::net::TcpStream> {
        tokio::net::TcpStream::connect(&self.0).await
    }
}

fn port_forward_across_a_cut(head: &Head) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("count.sh"), "for i in $(seq 1 24); do echo numbered-line-$i; sleep 0.25; done\n")?;
    let out = gke_rl(dir.path(), &["submit", "--address", &head.address, "--include", "count.sh", "--no-wait", "--", "bash", "count.sh"]);
    let id = submitted_id(&out).ok_or("no submission id printed")?;
    let proxy = Proxy::start(&head.address);
    let upstream = ThroughProxy(proxy.address.trim_start_matches("http://").to_owned());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (lines, reconnects) = runtime.block_on(async {
        let local = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let forwarding = gke_rl_kube::portforward::forward(local, upstream, Duration::from_secs(5), Arc::new(|_| {})).await?;
        let client = gke_rl_ray::Client::new(&format!("http://{}", forwarding.local), client_options(head))?;
        let cutter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(3));
            proxy.cut();
        });
        let (mut text, mut reconnects, mut unread) = (String::new(), 0, None);
        let options = gke_rl_ray::FollowOptions { retry_every: Duration::from_millis(200), ..Default::default() };
        gke_rl_ray::follow(&client, &id, &options, |event| match event {
            gke_rl_ray::Event::Log(chunk) => text.push_str(chunk),
            gke_rl_ray::Event::Reconnecting(_) => reconnects += 1,
            gke_rl_ray::Event::Unread(why) => unread = Some(why.to_owned()),
        })
        .await?;
        cutter.join().map_err(|_| "the cutter panicked")?;
        if let Some(why) = unread {
            return Err(format!("the end of the log was not read: {why}").into());
        }
        Ok::<_, Failed>((text, reconnects))
    })?;
    let lines: Vec<&str> = lines.lines().filter(|l| l.starts_with("numbered-line-")).collect();
    let expected: Vec<String> = (1..=24).map(|i| format!("numbered-line-{i}")).collect();
    if lines != expected || reconnects == 0 {
        return Err(format!("through the port-forward: {reconnects} reconnects, lines {lines:?}").into());
    }
    Ok(())
}

fn secrets(head: &Head) -> Result<(), Failed> {
    // A working dir holding the token is refused before anything is sent.
    let dir = job_dir("true\n");
    std::fs::write(dir.path().join("notes.txt"), format!("token: {TOKEN}\n"))?;
    let out = gke_rl(dir.path(), &["submit", "--address", &head.address, "--working-dir", ".", "--", "bash", "job.sh"]);
    check(
        out.status.code() == Some(2) && stderr(&out).contains("notes.txt contains the value of HF_TOKEN"),
        "a secret in a file is refused",
        &out,
    )?;
    // The default job folder: record every byte sent (upload and submit) while the job runs,
    // and look at every process's arguments on the machine meanwhile.
    let proxy = Proxy::start(&head.address);
    let unique = dir.path().join("unique.txt"); // a package no other test uploaded
    std::fs::write(&unique, format!("{} {:?}", head.version, Instant::now()))?;
    let child = Command::new(env!("CARGO_BIN_EXE_gke-rl"))
        .env("GKE_RL_RUNS_DIR", common::runs_dir())
        .current_dir(dir.path())
        .args(["submit", "--address", &proxy.address, "--include", "unique.txt", "--", "sleep", "3"])
        .env("HF_TOKEN", TOKEN)
        .env("RAY_AUTH_TOKEN", ray_head::test_token())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut seen_in_ps = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(8);
    while Instant::now() < deadline {
        for entry in std::fs::read_dir("/proc")?.flatten() {
            if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
                && (memchr_find(&cmdline, TOKEN.as_bytes()) || memchr_find(&cmdline, ray_head::test_token().as_bytes()))
            {
                seen_in_ps.push(String::from_utf8_lossy(&cmdline).replace('\0', " "));
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = child.wait_with_output()?;
    check(out.status.success(), "the job runs", &out)?;
    let sent = proxy.sent.lock().map_err(|_| "lock")?.clone();
    check(memchr_find(&sent, b"PUT /api/packages/gcs/_ray_pkg_"), "the recording saw the upload", &out)?;
    check(!memchr_find(&sent, TOKEN.as_bytes()), "the token is in no request", &out)?;
    check(seen_in_ps.is_empty(), &format!("no token is in any process's arguments: {seen_in_ps:?}"), &out)?;
    // The Ray token goes in the Authorization header only (the head's own job records hold no copy).
    let sent = String::from_utf8_lossy(&sent);
    let carrying = sent.matches(ray_head::test_token()).count();
    let headers = sent.matches(&format!("authorization: Bearer {}", ray_head::test_token())).count();
    check(carrying == headers, &format!("the Ray token is only in Authorization headers ({carrying} copies, {headers} headers)"), &out)
}

fn memchr_find(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

// ---- Packaging against Ray's Python code (no head needed) ----

fn packaging_trials() -> Vec<Trial> {
    let python = venv("2.54.0").map(|bin| bin.join("python"));
    let Some(python) = python else {
        return vec![
            Trial::test("client::a_server_that_is_down_is_a_clear_error_without_a_hang", server_down),
            Trial::test("client::refusals_before_connecting", refusals_before_connecting),
            Trial::test("packaging::against_python", || Ok(())).with_ignored_flag(true),
        ];
    };
    let p = python.clone();
    vec![
        Trial::test("client::a_server_that_is_down_is_a_clear_error_without_a_hang", server_down),
        Trial::test("client::refusals_before_connecting", refusals_before_connecting),
        Trial::test("packaging::uri_and_zip_match_python_on_generated_trees", move || uri_matches_python(&python)),
        Trial::test("packaging::gitwildmatch_matches_pathspec", move || patterns_match_python(&p)),
    ]
}

fn server_down() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let [closed] = free_ports();
    let started = Instant::now();
    let out = gke_rl(dir.path(), &["status", "some-id", "--address", &format!("127.0.0.1:{closed}")]);
    check(out.status.code() == Some(2), "a closed port is an error", &out)?;
    check(stderr(&out).contains(&format!("cannot reach the Ray dashboard at http://127.0.0.1:{closed}")), "that names the address", &out)?;
    check(started.elapsed() < Duration::from_secs(5), "at once", &out)?;
    // A server that accepts connections and never answers.
    let silent = TcpListener::bind("127.0.0.1:0")?;
    let address = format!("127.0.0.1:{}", silent.local_addr()?.port());
    let started = Instant::now();
    let out = gke_rl(dir.path(), &["jobs", "--address", &address, "--request-timeout", "2"]);
    check(
        out.status.code() == Some(2) && stderr(&out).contains("did not answer GET /api/jobs/ within 2 s"),
        "a silent server times out",
        &out,
    )?;
    check(started.elapsed() < Duration::from_secs(10), "without hanging", &out)
}

/// Each of these fails before any connection: the address is a closed port, so reaching the
/// network would show up as "cannot reach".
fn refusals_before_connecting() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let out = gke_rl(dir.path(), &["jobs"]);
    check(out.status.code() == Some(2), "no address is an error", &out)?;
    check(stderr(&out).contains("kubectl port-forward service/ray-a4-gpu-spot-head-svc 8265:8265"), "that says how to get one", &out)?;
    let codelab = project_root().join("tests/fixtures/codelab/ray_runtime_env_nemo.json");
    let [closed] = free_ports();
    let address = format!("127.0.0.1:{closed}");
    let out = gke_rl(dir.path(), &["submit", "--address", &address, "--runtime-env", codelab.to_str().ok_or("utf-8")?]);
    let err = stderr(&out);
    check(out.status.code() == Some(2) && err.contains("error[secret-literal]"), "a runtime env holding a token is refused", &out)?;
    check(!err.contains("cannot reach"), "before connecting", &out)?;
    // A config that renames the token's variable: the upload is scanned for that variable's value.
    std::fs::write(dir.path().join("renamed.yaml"), "secrets:\n  hf_token_env: MY_HF\n")?;
    std::fs::write(dir.path().join("notes.txt"), "token: hf_renamedTokenValue1234\n")?;
    let out = common::exited_cleanly(
        Command::new(env!("CARGO_BIN_EXE_gke-rl"))
            .env("RAY_AUTH_TOKEN", ray_head::test_token())
            .env("GKE_RL_RUNS_DIR", common::runs_dir())
            .current_dir(dir.path())
            .args(["submit", "--config", "renamed.yaml", "--address", &address, "--include", "notes.txt"])
            .env("MY_HF", "hf_renamedTokenValue1234")
            .env_remove("HF_TOKEN")
            .output()?,
    );
    let err = stderr(&out);
    check(
        out.status.code() == Some(2) && err.contains("notes.txt: contains the value of MY_HF") && err.contains("leave it out of --include"),
        "the renamed variable is scanned",
        &out,
    )?;
    check(!err.contains("cannot reach"), "before connecting", &out)
}

fn oracle(python: &Path, args: &[&str], stdin: Option<&str>) -> Result<String, Failed> {
    let mut child = Command::new(python)
        .arg(project_root().join("crates/gke-rl-cli/tests/ray/oracle.py"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child.stdin.take().ok_or("stdin")?.write_all(stdin.unwrap_or_default().as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(format!("oracle {args:?} failed: {}", stderr(&out)).into());
    }
    Ok(stdout(&out).trim().to_owned())
}

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

fn uri_matches_python(python: &Path) -> Result<(), Failed> {
    use std::os::unix::fs::symlink;
    let names = ["a", "b.txt", "data", "ünï", "日本.md", "x.log", "venv", "__pycache__", ".git", "keep.log", "sp ace", "#h"];
    let ignores = ["*.log", "data/", "!keep.log", "/b.txt", "sub*/", "**/deep", "[a-c]", "# c", "ünï", "*", "\\#h"];
    for seed in 1..=12u64 {
        let dir = tempfile::tempdir()?;
        let root = dir.path();
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut dirs = vec![root.to_path_buf()];
        for i in 0..30 {
            let parent = dirs[rng.below(dirs.len())].clone();
            let name = format!("{}{}", rng.pick(&names), if rng.below(3) == 0 { i.to_string() } else { String::new() });
            let path = parent.join(&name);
            if path.exists() {
                continue;
            }
            match rng.below(6) {
                0 | 1 => {
                    std::fs::create_dir(&path)?;
                    dirs.push(path);
                }
                2 if seed % 3 != 0 => {
                    let file = if rng.below(2) == 0 { ".rayignore" } else { ".gitignore" };
                    let lines: Vec<&str> = (0..1 + rng.below(3)).map(|_| rng.pick(&ignores)).collect();
                    std::fs::write(parent.join(file), lines.join("\n") + "\n")?;
                }
                _ => std::fs::write(&path, format!("contents {seed} {i}\n"))?,
            }
        }
        // Symlinks are followed: one to a file, one to a directory.
        symlink(root.join("target-file"), root.join("link-to-file"))?;
        std::fs::write(root.join("target-file"), "linked\n")?;
        std::fs::create_dir(root.join("target-dir"))?;
        std::fs::write(root.join("target-dir/inside"), "in\n")?;
        symlink(root.join("target-dir"), root.join("link-to-dir"))?;
        std::fs::create_dir(root.join("empty-dir"))?;
        let excludes: Vec<String> = if seed % 2 == 0 { vec!["a*".into(), "data".into()] } else { Vec::new() };
        let options = gke_rl_ray::package::Options { excludes: excludes.clone(), ..Default::default() };
        let plan = gke_rl_ray::package::Plan::for_dir(root, &options, &[]).map_err(|e| e.to_string())?;
        let package = plan.build(&[]).map_err(|e| e.to_string())?;
        let root_str = root.to_str().ok_or("utf-8 temp dir")?;
        let mut args = vec!["uri", root_str];
        args.extend(excludes.iter().map(String::as_str));
        let expected = oracle(python, &args, None)?;
        if package.uri != expected {
            return Err(format!("seed {seed}: gke-rl {} but Ray {expected}; tree:\n{}", package.uri, tree(root)).into());
        }
        if excludes.is_empty() {
            let ours = root.join("../ours.zip");
            std::fs::write(&ours, &package.zip)?;
            let theirs = root.join("../theirs.zip");
            oracle(python, &["package", root_str, theirs.to_str().ok_or("utf-8")?], None)?;
            let (a, b) = (
                oracle(python, &["zipnames", ours.to_str().ok_or("utf-8")?], None)?,
                oracle(python, &["zipnames", theirs.to_str().ok_or("utf-8")?], None)?,
            );
            let _ = (std::fs::remove_file(&ours), std::fs::remove_file(&theirs));
            if a != b {
                return Err(format!("seed {seed}: zip entries differ\nours:\n{a}\nRay's:\n{b}").into());
            }
        }
    }
    leaving_out_keeps_rays_uri(python)?;
    zip64_matches_python(python)
}

/// Issue 31, item 7: a folder with the rendered `.rayignore` gets Ray's URI although it holds
/// credential files (Ray leaves them out too), and so does one with a link out of it when
/// `--follow-links-out` says to follow it as Ray does.
fn leaving_out_keeps_rays_uri(python: &Path) -> Result<(), Failed> {
    let outside = tempfile::tempdir()?;
    std::fs::write(outside.path().join("shared.txt"), "shared\n")?;
    let dir = tempfile::tempdir()?;
    let root = dir.path();
    let deployment = gke_rl::config::from_yaml("").map_err(|e| e.to_string())?;
    let rendered = gke_rl::render(&deployment, &gke_rl::RenderOptions { source: "test", regenerate: "test" }).map_err(|e| e.to_string())?;
    std::fs::write(root.join(".rayignore"), &rendered.rayignore.contents)?;
    for path in [".ssh/id_ed25519", "sub/.aws/credentials", "sub/.npmrc", "deploy/key.pem", "train.py"] {
        std::fs::create_dir_all(root.join(path).parent().ok_or("a parent")?)?;
        std::fs::write(root.join(path), "x\n")?;
    }
    std::os::unix::fs::symlink(outside.path().join("shared.txt"), root.join("shared.txt"))?;
    let options = gke_rl_ray::package::Options { follow_links_out: true, ..Default::default() };
    let plan = gke_rl_ray::package::Plan::for_dir(root, &options, &[]).map_err(|e| e.to_string())?;
    if !plan.credentials_left_out.is_empty() {
        return Err(format!("the rendered .rayignore leaves out {:?} already", plan.credentials_left_out).into());
    }
    let ours = plan.hash(&[]).map_err(|e| e.to_string())?.uri;
    let theirs = oracle(python, &["uri", root.to_str().ok_or("utf-8")?], None)?;
    if ours != theirs {
        return Err(format!("gke-rl {ours} but Ray {theirs}; tree:\n{}", tree(root)).into());
    }
    Ok(())
}

/// Issue 31, item 15: 66,000 files zip as ZIP64, which Python reads back entry for entry as it
/// reads Ray's own zip of the folder.
fn zip64_matches_python(python: &Path) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("many");
    for i in 0..66_000 {
        let folder = root.join(format!("d{}", i / 1000));
        if i % 1000 == 0 {
            std::fs::create_dir_all(&folder)?;
        }
        std::fs::write(folder.join(format!("f{i}")), i.to_string())?;
    }
    let plan = gke_rl_ray::package::Plan::for_dir(&root, &Default::default(), &[]).map_err(|e| e.to_string())?;
    let package = plan.build(&[]).map_err(|e| e.to_string())?;
    let (ours, theirs) = (dir.path().join("ours.zip"), dir.path().join("theirs.zip"));
    std::fs::write(&ours, &package.zip)?;
    let uri = oracle(python, &["package", root.to_str().ok_or("utf-8")?, theirs.to_str().ok_or("utf-8")?], None)?;
    let (a, b) = (
        oracle(python, &["zipnames", ours.to_str().ok_or("utf-8")?], None)?,
        oracle(python, &["zipnames", theirs.to_str().ok_or("utf-8")?], None)?,
    );
    if package.uri != uri || a != b || a.lines().count() != 66_000 {
        return Err(format!("gke-rl {} with {} entries, Ray {uri} with {}", package.uri, a.lines().count(), b.lines().count()).into());
    }
    Ok(())
}

fn tree(root: &Path) -> String {
    let out = Command::new("find").arg(root).output().map(|o| stdout(&o)).unwrap_or_default();
    out.replace(root.to_str().unwrap_or_default(), ".")
}

fn patterns_match_python(python: &Path) -> Result<(), Failed> {
    const CASES: usize = 2000;
    let pieces = ["a", "b", "*", "**", "?", "/", "[", "]", "!", "\\", "-", ".", "#", " ", "z", "é"];
    let path_pieces = ["a", "b", "/", ".", "z", "é", "-", "]", "[", "!", "#", " ", "ab", "a/b"];
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut cases = Vec::new();
    for _ in 0..CASES {
        let patterns: Vec<String> = (0..1 + rng.below(3)).map(|_| (0..1 + rng.below(6)).map(|_| rng.pick(&pieces)).collect()).collect();
        let paths: Vec<String> = (0..8).map(|_| (0..1 + rng.below(5)).map(|_| rng.pick(&path_pieces)).collect()).collect();
        cases.push(serde_json::json!({ "patterns": patterns, "paths": paths }));
    }
    let input = serde_json::to_string(&cases)?;
    let expected: Vec<serde_json::Value> = serde_json::from_str(&oracle(python, &["match"], Some(&input))?)?;
    let mut failures = Vec::new();
    for (case, expected) in cases.iter().zip(expected) {
        let patterns: Vec<&str> = case["patterns"].as_array().ok_or("array")?.iter().filter_map(|p| p.as_str()).collect();
        let ours = match gke_rl_gitwildmatch::PatternSet::from_lines(patterns.iter().copied()) {
            Ok(set) => serde_json::json!(
                case["paths"].as_array().ok_or("array")?.iter().map(|p| set.is_match(p.as_str().unwrap_or_default())).collect::<Vec<_>>()
            ),
            Err(_) => serde_json::json!("error"),
        };
        let same = match (&ours, &expected) {
            (serde_json::Value::String(_), serde_json::Value::String(_)) => true,
            _ => ours == expected,
        };
        if !same {
            failures.push(format!("patterns {patterns:?} paths {}: gke-rl {ours} pathspec {expected}", case["paths"]));
        }
    }
    if failures.is_empty() { Ok(()) } else { Err(format!("{} of {CASES} cases differ:\n{}", failures.len(), failures.join("\n")).into()) }
}

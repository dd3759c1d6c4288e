//! `gke-rl deploy` and `destroy` as a user runs them: the binary, fake gcloud and
//! gcluster on PATH (`tests/fixtures/fakes/fake.sh`), the fake API server over HTTPS behind a
//! GKE-style kubeconfig (so kube-rs's real TLS, exec credentials and error paths run), and a
//! real SIGINT to the process group while gcluster runs, as Ctrl-C in a terminal sends it.
//! The step logic is tested where it lives (`crates/gke-rl-ops/tests/it/deploy.rs`).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Cloud, HF_TOKEN, project_root, stderr, stdout, upstream};
use gke_rl_kube::fake::Pods;

#[test]
fn ctrl_c_while_gcluster_runs_saves_the_state_and_exits_130() {
    let blueprint = upstream("cluster-toolkit/gke-a4.yaml");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (bin, example, cloud) = (root.join("bin"), root.join("toolkit/examples/gke-a4"), root.join("cloud"));
    for path in [&bin, &example, &cloud] {
        std::fs::create_dir_all(path).unwrap();
    }
    for program in ["gcloud", "gcluster", "terraform", "packer", "gke-gcloud-auth-plugin"] {
        std::os::unix::fs::symlink(project_root().join("tests/fixtures/fakes/fake.sh"), bin.join(program)).unwrap();
    }
    std::fs::copy(blueprint, example.join("gke-a4.yaml")).unwrap();
    for template in ["kueue-configuration.yaml.tftpl", "nccl-installer.yaml.tftpl"] {
        std::fs::write(example.join(template), "# template\n").unwrap();
    }
    let folder = root.join("deployment");
    let child = {
        use std::os::unix::process::CommandExt as _;
        Command::new(env!("CARGO_BIN_EXE_gke-rl"))
            .current_dir(root)
            .args(["deploy", "--yes", "--project", "my-project", "--authorized-cidr", "203.0.113.7/32", "--toolkit", "toolkit", "--folder"])
            .arg(&folder)
            .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()))
            .env("FAKE_CLOUD", &cloud)
            .env("FAKE_SLEEP", "30")
            .env("HF_TOKEN", "hf_value")
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let started = Instant::now();
    while !calls(&cloud).contains("gcluster deploy") {
        assert!(started.elapsed() < Duration::from_secs(30), "gcluster never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let group = format!("-{}", child.id());
    assert!(Command::new("kill").args(["-INT", "--", &group]).status().unwrap().success());
    let out = crate::common::exited_cleanly(child.wait_with_output().unwrap());
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(20), "gcluster's 30 s sleep was cut short");
    assert!(stderr(&out).contains("interrupted during \"provision the cluster"), "{}", stderr(&out));
    let state = std::fs::read_to_string(folder.join("state.json")).unwrap();
    assert!(state.contains("\"render\"") && !state.contains("\"provision\""), "{state}");
}

fn calls(cloud: &Path) -> String {
    std::fs::read_to_string(cloud.join("calls")).unwrap_or_default()
}

/// A cloud with a completed deploy (CIDR 203.0.113.7/32).
fn deployed() -> Cloud {
    let cloud = Cloud::new(Pods::ReadyAfter(0));
    let out = cloud.deploy(&["--authorized-cidr", "203.0.113.7/32"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = cloud.api.requests();
    assert!(requests.iter().any(|r| r.method == "PATCH" && r.uri.contains("/rayclusters/")), "the RayCluster was applied over HTTPS");
    let bearer = format!("Bearer {}", crate::common::KUBE_TOKEN);
    assert!(requests.iter().all(|r| r.authorization.as_deref() == Some(bearer.as_str())), "with the plugin's token, every time");
    let calls = cloud.calls();
    let plugin_runs = calls.lines().filter(|l| l.starts_with("gke-gcloud-auth-plugin ") && !l.contains("--version")).count();
    assert!(plugin_runs > 0, "the kubeconfig's exec plugin ran:\n{calls}");
    cloud.assert_token_stays_secret(&[&out]);
    cloud
}

/// Issue 32: the codelab's env.sh imports with its placeholders as warnings, for a look; a
/// deploy of gke-rl's defaults in their place is refused before anything is called.
#[test]
fn deploy_refuses_an_env_sh_whose_placeholders_leave_defaults() {
    let cloud = Cloud::new(Pods::ReadyAfter(0));
    std::fs::write(cloud.root.join("env.sh"), "export ZONE=\"{{ZONE}}\"\nexport NUM_NODES=\"{{NUM_NODES}}\"\n").unwrap();
    let args = ["--env-file", "env.sh", "--project", "my-project", "--authorized-cidr", "203.0.113.7/32", "--toolkit", "toolkit"];
    let out = cloud.gke_rl(&[&["deploy", "--yes"][..], &args].concat(), &[("HF_TOKEN", HF_TOKEN)]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("env.sh still holds placeholders for ZONE, NUM_NODES, so deploy would create gke-rl's defaults"), "{err}");
    assert!(
        err.contains("NUM_NODES still holds the placeholder `{{NUM_NODES}}`; gke-rl's default `8` is used"),
        "the warning first: {err}"
    );
    assert_eq!(cloud.calls(), "", "nothing ran");
    let plan = cloud.gke_rl(&[&["deploy", "--dry-run"][..], &args].concat(), &[("HF_TOKEN", HF_TOKEN)]);
    assert_eq!(plan.status.code(), Some(0), "the plan is still shown: {}", stderr(&plan));
}

/// Issue 52: the deployment remembers the toolkit it was provisioned with; destroy plans and
/// runs that one unless told otherwise.
#[test]
fn destroy_uses_the_toolkit_deploy_used() {
    let cloud = deployed();
    let plan = cloud.gke_rl(&["destroy", "--dry-run", "--folder", "deployment"], &[]);
    let said = format!("{}{}", String::from_utf8_lossy(&plan.stdout), stderr(&plan));
    let toolkit = cloud.root.join("toolkit").display().to_string();
    assert!(said.contains(&format!("cd {toolkit} && gcluster destroy")) && !said.contains("cluster-toolkit"), "{said}");
}

/// Issue 64: without the cluster, destroy cannot list what the Lustre instance holds, so it
/// cannot know what it would lose: it says so and deletes nothing, unless told to discard.
#[test]
fn destroy_goes_on_without_the_kubernetes_api_only_when_told_to_discard_the_checkpoints() {
    let cloud = deployed();
    // The API refuses connections now (the address left the authorized networks, say).
    let unreachable = [("FAKE_KUBE_SERVER", "https://127.0.0.1:1")];
    let refused = cloud.destroy(&unreachable);
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("destroy cannot tell what it would lose with Lustre instance rl-demo-gpu-lustre: ")
            && err.contains("Connection refused")
            && err.contains("--discard-checkpoints"),
        "{err}"
    );
    assert!(!cloud.calls().contains("gcluster destroy") && !cloud.calls().contains("storage rm"), "nothing was deleted");
    let out = cloud.gke_rl(&["destroy", "--yes", "--toolkit", "toolkit", "--folder", "deployment", "--discard-checkpoints"], &unreachable);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("LOST: whatever the Lustre instance holds, which could not be listed"), "the question names the loss: {err}");
    assert!(err.contains("cannot use the cluster's Kubernetes API") && err.contains("Connection refused"), "{err}");
    assert!(err.contains("skipping the RayCluster and the Secret: deleting the cluster removes them"), "{err}");
    assert!(cloud.calls().contains("gcluster destroy") && err.contains("destroyed in"), "{err}");
    assert!(cloud.api.object("rayclusters", "ray-a4-gpu-spot").is_some(), "nothing reached the API");
}

#[test]
fn refused_credentials_and_denied_access_name_their_fix() {
    let cloud = deployed();
    cloud.api.deny(Some(401));
    let out = cloud.deploy(&[], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("the API server refused the credentials (401"), "{err}");
    assert!(
        err.contains("help: refresh the cluster's credentials: gcloud container clusters get-credentials ray-a4-gpu-spot --region us-east1 --project fake-project"),
        "{err}"
    );
    cloud.api.deny(Some(403));
    let err = stderr(&cloud.deploy(&[], &[]));
    assert!(err.contains("denied access (403)") && err.contains("roles/container.developer"), "{err}");
    cloud.api.deny(None);
    let out = cloud.deploy(&[], &[]);
    assert!(stderr(&out).contains("nothing to do: RayCluster ray-a4-gpu-spot is Ready"), "{}", stderr(&out));
}

#[test]
fn a_missing_or_failing_credential_plugin_is_named_with_its_fix() {
    let cloud = deployed();
    let status = cloud.gke_rl(&["status"], &[("FAKE_PLUGIN_FAILS", "1")]);
    let err = stderr(&status);
    assert_eq!(status.status.code(), Some(2), "{err}");
    assert!(err.contains("the kubeconfig's credential plugin failed") && err.contains("run `gcloud auth login`"), "{err}");

    std::fs::remove_file(cloud.root.join("bin/gke-gcloud-auth-plugin")).unwrap();
    let err = stderr(&cloud.gke_rl(&["jobs"], &[]));
    assert!(err.contains("credential plugin could not be started"), "{err}");
    assert!(err.contains("install it with gcloud components install gke-gcloud-auth-plugin"), "{err}");
    // deploy says so before anything else, with every other problem.
    let out = cloud.deploy(&[], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("gke-gcloud-auth-plugin is not on PATH") && err.contains("gcloud components install gke-gcloud-auth-plugin"),
        "{err}"
    );
}

#[test]
fn a_silent_api_server_is_a_bounded_wait_with_the_cause() {
    let cloud = deployed();
    // Accepts connections and never answers: packets dropped by the authorized networks.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let kubeconfig = std::fs::read_to_string(cloud.root.join("kubeconfig")).unwrap();
    let silent_config = kubeconfig.replace(&cloud.https.url, &format!("https://{}", silent.local_addr().unwrap()));
    std::fs::write(cloud.root.join("kubeconfig"), silent_config).unwrap();
    let started = Instant::now();
    let out = cloud.gke_rl(&["jobs"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the connection timed out") && err.contains("authorized networks"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(40), "bounded: {:?}", started.elapsed());
}

#[test]
fn a_changed_public_address_is_noticed_on_resume_and_fixed_with_the_flag() {
    let cloud = Cloud::new(Pods::ReadyAfter(0));
    let first = cloud.deploy(&[], &[]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert!(stderr(&first).contains("authorized CIDR: 203.0.113.7/32 (this machine's public address"), "{}", stderr(&first));

    cloud.set_public_address("198.51.100.9");
    let moved = cloud.deploy(&[], &[]);
    let err = stderr(&moved);
    assert_eq!(moved.status.code(), Some(1), "{err}");
    assert!(err.contains("public address 198.51.100.9 is outside the authorized CIDR 203.0.113.7/32"), "{err}");
    assert!(err.contains("gke-rl deploy --authorized-cidr 198.51.100.9/32"), "{err}");

    let fixed = cloud.deploy(&["--authorized-cidr", "198.51.100.9/32"], &[]);
    let err = stderr(&fixed);
    assert_eq!(fixed.status.code(), Some(0), "{err}");
    assert!(err.contains("the authorized CIDR changes from 203.0.113.7/32 to 198.51.100.9/32"), "{err}");
    let calls = cloud.calls();
    let deploys: Vec<&str> = calls.lines().filter(|l| l.starts_with("gcluster deploy")).collect();
    assert_eq!(deploys.len(), 2, "gcluster ran again");
    assert!(deploys[1].contains("authorized_cidr=198.51.100.9/32"), "{}", deploys[1]);
}

/// Every TLS client the binary builds (kube-rs, reqwest for the Jobs API and the address
/// echo, the log WebSocket) reaches an `https://` peer without a panic: one crypto provider.
#[test]
fn every_client_the_binary_builds_speaks_tls() {
    let cloud = Cloud::new(Pods::ReadyAfter(0));
    // An HTTPS peer whose CA none of them trusts: each must fail with words, not a panic.
    let https = cloud.https.url.clone();
    for args in [
        vec!["status", "raysubmit_x", "--address", &https],
        vec!["logs", "raysubmit_x", "--follow", "--address", &https], // the log WebSocket's client is covered in gke-rl-ray's tests/tls.rs
        vec!["submit", "--no-wait", "--address", &https, "--", "true"],
    ] {
        let out = cloud.gke_rl(&args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("certificate"), "{args:?}: {}", stderr(&out));
    }
    let out = cloud.deploy(&[], &[("GKE_RL_ADDRESS_ECHO", &https)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot detect this machine's public address"), "{}", stderr(&out));
    // kube-rs from a kubeconfig (the panic of issue 19 was here); the trusted path is in the
    // deploy tests above.
    let kubeconfig = cloud.root.join("refusing-kubeconfig");
    std::fs::write(&kubeconfig, format!("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: 'https://127.0.0.1:1'}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\nusers:\n- name: u\n  user: {{token: {HF_TOKEN}-not-this}}\n")).unwrap();
    let jobs = cloud.gke_rl(&["jobs"], &[("KUBECONFIG", kubeconfig.to_str().unwrap())]);
    assert_eq!(jobs.status.code(), Some(2), "{}", stderr(&jobs));
    assert!(stderr(&jobs).contains("Connection refused"), "{}", stderr(&jobs));
}

/// `--config` and `--env-file` choose the cluster the job commands reach: its head pod, through
/// its own kubeconfig context, whatever the current context is.
#[test]
fn job_commands_connect_to_the_cluster_of_their_config() {
    let cloud = Cloud::new(Pods::ReadyAfter(0));
    let (other, other_https) = cloud.another_api_server("other");
    let cluster = |name: &str, url: &str, ca: &str| {
        format!(
            "- name: gke_fake-project_us-east1_{name}\n  cluster: {{server: '{url}', certificate-authority: '{}'}}\n",
            cloud.root.join(ca).display()
        )
    };
    let context = |name: &str| {
        format!("- name: gke_fake-project_us-east1_{name}\n  context: {{cluster: gke_fake-project_us-east1_{name}, user: gke}}\n")
    };
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n{}{}contexts:\n{}{}current-context: gke_fake-project_us-east1_ray-a4-gpu-spot\n\
         users:\n- name: gke\n  user:\n    exec: {{apiVersion: client.authentication.k8s.io/v1beta1, command: gke-gcloud-auth-plugin}}\n",
        cluster("ray-a4-gpu-spot", &cloud.https.url, "ca.pem"),
        cluster("other-cluster", &other_https.url, "other-ca.pem"),
        context("ray-a4-gpu-spot"),
        context("other-cluster"),
    );
    std::fs::write(cloud.root.join("kubeconfig"), kubeconfig).unwrap();
    std::fs::write(cloud.root.join("other.yaml"), "project:\n  cluster_name: other-cluster\n").unwrap();
    let rendered = cloud.gke_rl(&["render", "--config", "other.yaml", "--out", "other-out"], &[]);
    assert_eq!(rendered.status.code(), Some(0), "{}", stderr(&rendered));

    for args in [["jobs", "--config", "other.yaml"], ["status", "--env-file", "other-out/env.sh"]] {
        let out = cloud.gke_rl(&args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}: no head pod there yet: {}", stderr(&out));
        assert!(stderr(&out).contains("RayCluster other-cluster has no running head pod"), "{args:?}: {}", stderr(&out));
    }
    let asked = other.requests();
    // Its head pod, and (status) whether its RayCluster is suspended: always other-cluster.
    let about_other = |uri: &str| uri.contains("ray.io%2Fcluster%3Dother-cluster") || uri.ends_with("/rayclusters/other-cluster");
    assert!(asked.len() >= 2 && asked.iter().all(|r| about_other(&r.uri)), "{asked:#?}");
    assert!(cloud.api.requests().is_empty(), "the current context's cluster was not asked: {:#?}", cloud.api.requests());
}

#[test]
fn a_node_that_fails_the_gpu_health_check_is_named_by_deploy() {
    let node = "gke-ray-a4-gpu-spot-a4-highgpu-8g-a4-pool-0c5f";
    let cloud = Cloud::new(Pods::GpuHealthCheckFails { node: node.into(), output: "only 7 GPUs, expected 8\n".into() });
    let deploy = ["deploy", "--yes", "--toolkit", "toolkit", "--folder", "deployment", "--timeout", "3s"];
    let out = cloud.gke_rl(&[&deploy[..], &["--authorized-cidr", "203.0.113.7/32"]].concat(), &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("! ray-a4-gpu-spot-worker-0: node {node}: GPU health check failed: only 7 GPUs, expected 8")),
        "the node by name, with the check's own words:\n{err}"
    );
    assert!(err.contains("broken: waiting will not help"), "{err}");
    assert!(!err.contains("CrashLoopBackOff"), "the back-off is the check's failure, told once:\n{err}");
}

/// Issue 31, item 15: Ctrl-C while preflight's `gcloud` query runs ends the deploy as an
/// interrupt (130, the step named), not as a failed check (1).
#[test]
fn ctrl_c_in_preflight_is_an_interrupt() {
    let cloud = Cloud::new(Pods::ReadyAfter(0));
    let child = {
        use std::os::unix::process::CommandExt as _;
        let args = ["deploy", "--yes", "--authorized-cidr", "203.0.113.7/32", "--toolkit", "toolkit"];
        let mut command = cloud.command(&args);
        command.args(["--folder", "deployment"]).env("FAKE_PREFLIGHT_SLEEP", "30").process_group(0);
        command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
    };
    let started = Instant::now();
    while !cloud.calls().contains("gcloud auth list") {
        assert!(started.elapsed() < Duration::from_secs(30), "preflight never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(Command::new("kill").args(["-INT", "--", &format!("-{}", child.id())]).status().unwrap().success());
    let out = crate::common::exited_cleanly(child.wait_with_output().unwrap());
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted during \"preflight"), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(20), "the query's 30 s sleep was cut short");
}

/// Issue 31, item 2: while a deploy is inside `gcluster deploy`, a destroy or a second deploy
/// of its folder is refused, naming the deploy's PID, instead of racing it. The hold ends with
/// the process, however it ends.
#[test]
fn a_deployment_folder_is_held_by_one_command_at_a_time() {
    let cloud = Cloud::new(Pods::ReadyAfter(0));
    let child = {
        use std::os::unix::process::CommandExt as _;
        let args = ["deploy", "--yes", "--authorized-cidr", "203.0.113.7/32", "--toolkit", "toolkit"];
        let mut command = cloud.command(&args);
        command.args(["--folder", "deployment"]).env("FAKE_SLEEP", "30").process_group(0).stdout(Stdio::piped()).stderr(Stdio::piped());
        command.spawn().unwrap()
    };
    let started = Instant::now();
    while !cloud.calls().contains("gcluster deploy") {
        assert!(started.elapsed() < Duration::from_secs(30), "gcluster never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let holder = format!("in use by pid {}: gke-rl deploy; wait for it to end, or stop that process", child.id());
    for out in [cloud.destroy(&[]), cloud.deploy(&[], &[])] {
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(&holder), "{}", stderr(&out));
    }
    assert!(!cloud.calls().contains("gcluster destroy"), "destroy never ran into the deploy");
    let group = format!("-{}", child.id());
    assert!(Command::new("kill").args(["-INT", "--", &group]).status().unwrap().success());
    let out = crate::common::exited_cleanly(child.wait_with_output().unwrap());
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let out = cloud.destroy(&[]);
    assert_eq!(out.status.code(), Some(0), "the deploy's hold ended with it: {}", stderr(&out));
}

/// Issue 31, item 3: a credential plugin that never answers is bounded like a call, and destroy
/// goes on to `gcluster destroy` and its check without the Kubernetes API.
#[test]
fn a_credential_plugin_that_hangs_cannot_hold_destroy() {
    let cloud = deployed();
    let started = Instant::now();
    let args = ["destroy", "--yes", "--toolkit", "toolkit", "--folder", "deployment", "--discard-checkpoints"];
    let out = cloud.gke_rl(&args, &[("FAKE_PLUGIN_HANGS", "1")]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("credential plugin failed: it did not answer within 30 s"), "{err}");
    assert!(cloud.calls().contains("gcluster destroy") && err.contains("destroyed in"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(60), "bounded: {:?}", started.elapsed());
}

/// Issue 31, item 6: nothing the credential plugin writes reaches the terminal with its token: not
/// a cut-off ExecCredential's parse error, not an error line that quotes the token.
#[test]
fn the_credential_plugins_token_never_reaches_the_terminal() {
    let cloud = deployed();
    for (mode, value, said) in [
        ("FAKE_PLUGIN_MALFORMED", "1", "its answer is not an ExecCredential"),
        ("FAKE_PLUGIN_FAILS", "loudly", "refreshing <redacted> failed: token expired"),
    ] {
        let out = cloud.gke_rl(&["status"], &[(mode, value)]);
        let both = format!("{}{}", crate::common::stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(2), "{both}");
        assert!(both.contains(said), "{mode}: {both}");
        assert!(
            !both.contains(crate::common::KUBE_TOKEN) && !both.contains("fake-gke-access-token"),
            "{mode}: the token was printed: {both}"
        );
    }
}

/// A program on this process's PATH (a [`Cloud`] command's PATH holds only the fakes).
fn tool(name: &str) -> String {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap()).map(|dir| dir.join(name)).find(|p| p.is_file());
    found.unwrap_or_else(|| panic!("{name} is not on PATH")).display().to_string()
}

/// Issue 31, item 4: SIGTERM or SIGHUP to gke-rl alone (a CI runner cancelling, a closed
/// terminal) reaches gcluster's whole process group, as Ctrl-C does: nothing is orphaned to run
/// on, the step is recorded, and the exit code is 128 + the signal's number.
#[test]
fn sigterm_and_sighup_stop_gcluster_too_and_record_the_step() {
    for (signal, code) in [("TERM", 143), ("HUP", 129)] {
        let cloud = Cloud::new(Pods::ReadyAfter(0));
        // With SIGHUP heard even where these tests run under nohup, which gke-rl would respect.
        let mut command = cloud.wrapper(&tool("env"));
        command.args(["--default-signal=HUP", env!("CARGO_BIN_EXE_gke-rl"), "deploy", "--yes", "--authorized-cidr", "203.0.113.7/32"]);
        command
            .args(["--toolkit", "toolkit", "--folder", "deployment"])
            .env("FAKE_SLEEP", "30")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = command.spawn().unwrap();
        let started = Instant::now();
        let pid_file = cloud.root.join("cloud/gcluster.pid");
        while !pid_file.exists() {
            assert!(started.elapsed() < Duration::from_secs(30), "gcluster never started");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
        let gcluster = std::fs::read_to_string(&pid_file).unwrap().trim().to_owned();
        // To gke-rl's PID alone, not its group: as `kill`, systemd or a CI runner sends it.
        assert!(Command::new("kill").args([format!("-{signal}"), child.id().to_string()]).status().unwrap().success());
        let out = crate::common::exited_cleanly(child.wait_with_output().unwrap());
        assert_eq!(out.status.code(), Some(code), "SIG{signal}: {}", stderr(&out));
        assert!(started.elapsed() < Duration::from_secs(20), "gcluster's 30 s sleep was cut short");
        assert!(stderr(&out).contains("interrupted during \"provision the cluster"), "{}", stderr(&out));
        let state = std::fs::read_to_string(cloud.root.join("deployment/state.json")).unwrap();
        assert!(state.contains("\"render\"") && !state.contains("\"provision\""), "{state}");
        let group_gone =
            || !Command::new("kill").args(["-0", "--", &format!("-{gcluster}")]).stderr(Stdio::null()).status().unwrap().success();
        let waited = Instant::now();
        while !group_gone() {
            assert!(waited.elapsed() < Duration::from_secs(5), "SIG{signal}: gcluster's process group {gcluster} outlived gke-rl");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A sibling of issue 31, item 4: a deploy started under `nohup` (SIGHUP ignored) keeps
/// ignoring SIGHUP, as the user asked, and runs to the end.
#[test]
fn a_deploy_under_nohup_ignores_sighup() {
    let cloud = Cloud::new(Pods::ReadyAfter(0));
    let mut command = cloud.wrapper("bash");
    command.args(["-c", "trap '' HUP; exec \"$0\" \"$@\"", env!("CARGO_BIN_EXE_gke-rl")]);
    command.args(["deploy", "--yes", "--authorized-cidr", "203.0.113.7/32", "--toolkit", "toolkit", "--folder", "deployment"]);
    let child = command.env("FAKE_SLEEP", "3").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    while !cloud.root.join("cloud/gcluster.pid").exists() {
        assert!(started.elapsed() < Duration::from_secs(30), "gcluster never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(Command::new("kill").args(["-HUP".to_owned(), child.id().to_string()]).status().unwrap().success());
    let out = crate::common::exited_cleanly(child.wait_with_output().unwrap());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// A sibling of issue 31, item 4: gcluster runs in a process group of its own, in the
/// background of the terminal; on a terminal set to `stty tostop` its output would stop it
/// (SIGTTOU) and hang the deploy, so gke-rl copies its output out instead.
#[test]
fn a_terminal_set_to_tostop_does_not_stop_gcluster() {
    let cloud = Cloud::new(Pods::ReadyAfter(0));
    let inner = format!(
        "{} tostop && exec '{}' deploy --yes --authorized-cidr 203.0.113.7/32 --toolkit toolkit --folder deployment",
        tool("stty"),
        env!("CARGO_BIN_EXE_gke-rl")
    );
    // `script` runs it on a terminal of its own (a pseudo-terminal), in the foreground.
    let mut command = cloud.wrapper(&tool("timeout"));
    command.args(["60".to_owned(), tool("script"), "--quiet".into(), "--return".into(), "--command".into(), inner, "/dev/null".into()]);
    command.stdin(Stdio::null());
    let out = command.output().unwrap();
    let shown = format!("{}{}", crate::common::stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("Apply complete!") && shown.contains("is Ready"), "{shown}");
}

/// Issue 31, item 5, through the binary under a 1 GiB address-space limit: an API server whose
/// answer never ends (it once took gke-rl past 11 GB within the call's 30 s) is cut at the
/// bound, and `status` ends with an error that says so.
#[test]
fn an_endless_kubernetes_answer_is_cut_within_a_memory_limit() {
    let cloud = deployed();
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let endless = gke_rl_ray::fake::serve(move |_, _, stream| gke_rl_kube::fake::endless_list(stream, &sent));
    let kubeconfig = cloud.root.join("kubeconfig");
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    std::fs::write(&kubeconfig, text.replace(&cloud.https.url, &endless)).unwrap();
    let mut limited = cloud.wrapper("bash");
    limited.args(["-c", "ulimit -v 1048576; exec \"$0\" \"$@\"", env!("CARGO_BIN_EXE_gke-rl"), "status"]);
    let out = crate::common::exited_cleanly(limited.output().unwrap());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("larger than") && stderr(&out).contains("MiB"), "{}", stderr(&out));
}

fn existing(cluster: &str, instance_exists: bool, config: &str) -> Cloud {
    Cloud::existing(cluster, instance_exists, config)
}

use crate::common::EXISTING_XPK;

fn deploy_existing(cloud: &Cloud) -> std::process::Output {
    cloud.gke_rl(&["deploy", "--yes", "--folder", "deployment", "--timeout", "20s"], &[])
}

/// `destroy --yes` of the deployment on a cluster gke-rl did not create, whose checkpoints (no
/// Ray head answers here to list them) are discarded.
fn destroy_existing(cloud: &Cloud, extra: &[&str]) -> std::process::Output {
    cloud.gke_rl(&[&["destroy", "--yes", "--folder", "deployment", "--discard-checkpoints"][..], extra].concat(), &[])
}

/// No call that creates or deletes a cluster, a node pool or (unless `lustre`) an instance.
fn assert_left_alone(calls: &str, lustre: bool) {
    for line in calls.lines() {
        assert!(!line.starts_with("gcluster"), "gcluster ran on a cluster gke-rl did not make: {line}");
        for verb in ["clusters create", "clusters delete", "node-pools create", "node-pools delete"] {
            assert!(!line.contains(verb), "{line}");
        }
        if !lustre {
            assert!(!line.contains("lustre instances create") && !line.contains("lustre instances delete"), "{line}");
        }
    }
}

#[test]
fn an_xpk_cluster_and_its_lustre_get_a_ray_cluster_and_destroy_leaves_them_as_they_were() {
    let cloud = existing("cluster-xpk-a4.json", true, EXISTING_XPK);
    let plan = cloud.gke_rl(&["deploy", "--dry-run", "--folder", "deployment"], &[]);
    let text = format!("{}{}", String::from_utf8_lossy(&plan.stdout), stderr(&plan));
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    assert!(
        text.contains("gcloud container clusters describe ray-a4-gpu-spot --location us-east1 --project fake-project --format=json"),
        "{text}"
    );
    assert!(text.contains("gcloud lustre instances describe rl-demo-gpu-lustre"), "{text}");
    assert!(!text.contains("gcluster") && text.contains("never creates or deletes cluster ray-a4-gpu-spot"), "{text}");
    assert_eq!(cloud.calls().lines().filter(|l| !l.starts_with("gcloud config")).count(), 0, "a dry run runs nothing:\n{}", cloud.calls());

    let out = deploy_existing(&cloud);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("existing cluster ray-a4-gpu-spot (GKE 1.35.2-gke.1842000): GPU workers on node pool ray-a4-gpu-spot-a4-pool, the head on node pool cpu-np"), "{err}");
    assert!(err.contains("fabric: GPUDirect RDMA over rdma-0, rdma-1"), "{err}");
    let calls = cloud.calls();
    assert!(calls.contains("gcloud container clusters update ray-a4-gpu-spot --location us-east1 --project fake-project --update-addons=RayOperator=ENABLED --quiet"), "{calls}");
    assert_left_alone(&calls, false);
    let cluster = cloud.api.object("rayclusters", "ray-a4-gpu-spot").expect("the RayCluster");
    let head = &cluster["spec"]["headGroupSpec"]["template"]["spec"];
    assert_eq!(head["nodeSelector"]["cloud.google.com/gke-nodepool"], "cpu-np", "{head}");
    let interfaces =
        cluster["spec"]["workerGroupSpecs"][0]["template"]["metadata"]["annotations"]["networking.gke.io/interfaces"].to_string();
    assert!(interfaces.contains("rdma-7") && !interfaces.contains("gvnic-1"), "{interfaces}");
    let volume = cloud.api.object("persistentvolumes", "default-lustre-pvc").expect("the PersistentVolume");
    assert_eq!(volume["spec"]["csi"]["volumeAttributes"]["ip"], "172.16.0.3");
    assert_eq!(volume["spec"]["csi"]["volumeHandle"], "fake-project/us-east1-b/rl-demo-gpu-lustre");
    assert_eq!(cloud.api.object("persistentvolumeclaims", "lustre-pvc").expect("the claim")["spec"]["volumeName"], "default-lustre-pvc");
    cloud.assert_token_stays_secret(&[&out]);

    // Again: nothing to do, and the add-on is not turned on twice.
    let again = deploy_existing(&cloud);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(cloud.calls().matches("--update-addons").count(), 1, "{}", cloud.calls());

    // An add-on that stays on is told, and the state kept for another try.
    let mut kept = cloud.command(&["destroy", "--yes", "--folder", "deployment", "--disable-addons"]);
    let out = crate::common::exited_cleanly(kept.env("FAKE_DESTROY_LEAVES", "addons").output().unwrap());
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("add-ons RayOperator of cluster ray-a4-gpu-spot (still on after gcloud was asked to turn them off)"),
        "{}",
        stderr(&out)
    );
    assert!(cloud.root.join("deployment/state.json").exists(), "the state stays for another try");

    let out = destroy_existing(&cloud, &["--disable-addons"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("kept: cluster ray-a4-gpu-spot and its node pools")
            && err.contains("kept: Managed Lustre instance rl-demo-gpu-lustre"),
        "{err}"
    );
    assert!(err.contains("cluster ray-a4-gpu-spot and Lustre instance rl-demo-gpu-lustre stay as they were"), "{err}");
    let calls = cloud.calls();
    assert_left_alone(&calls, false);
    assert!(calls.contains("--update-addons=RayOperator=DISABLED"), "only the add-on deploy turned on: {calls}");
    assert!(!calls.contains("LustreCsiDriver=DISABLED"), "{calls}");
    assert!(cloud.api.object("rayclusters", "ray-a4-gpu-spot").is_none());
    assert!(
        cloud.api.object("persistentvolumes", "default-lustre-pvc").is_none()
            && cloud.api.object("persistentvolumeclaims", "lustre-pvc").is_none()
    );
    assert!(cloud.root.join("cloud/cluster").exists() && cloud.root.join("cloud/lustre").exists(), "the cluster and the instance stay");

    // Without the state: nothing to delete, and nothing deleted.
    let out = destroy_existing(&cloud, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("nothing to destroy") || stderr(&out).contains("nothing to destroy"),
        "{}",
        stderr(&out)
    );
    assert_left_alone(&cloud.calls(), false);
}

#[test]
fn a_new_instance_on_a_cluster_without_rdma_is_created_like_the_codelabs_and_goes_with_destroy() {
    let config = "project:\n  cluster_name: ray-a4-gpu-spot\n  existing_cluster: true\nlustre:\n  capacity_gib: 18000\n";
    let cloud = existing("cluster-no-rdma.json", false, config);
    let out = deploy_existing(&cloud);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("fabric: TCP: node pool ray-a4-gpu-spot-a4-pool has no RDMA networks"), "{err}");
    let calls = cloud.calls();
    assert!(!calls.contains("--update-addons"), "both add-ons are on: {calls}");
    let order = [
        "compute addresses create google-managed-services-ray-a4-gpu-spot-net-0",
        "vpc-peerings connect",
        "lustre instances create rl-demo-gpu-lustre",
    ];
    let at: Vec<usize> = order.iter().map(|c| calls.find(c).unwrap_or_else(|| panic!("{c} did not run:\n{calls}"))).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{calls}");
    assert!(
        calls.contains("--network=projects/fake-project/global/networks/ray-a4-gpu-spot-net-0") && !calls.contains("--gke-support-enabled"),
        "{calls}"
    );
    assert_left_alone(&calls, true);
    let cluster = cloud.api.object("rayclusters", "ray-a4-gpu-spot").expect("the RayCluster");
    assert!(cluster["spec"]["workerGroupSpecs"][0]["template"]["metadata"]["annotations"]["networking.gke.io/interfaces"].is_null(), "TCP");

    let out = destroy_existing(&cloud, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(cloud.calls().contains("lustre instances delete rl-demo-gpu-lustre"), "{}", cloud.calls());
    assert!(!cloud.root.join("cloud/lustre").exists() && cloud.root.join("cloud/cluster").exists());
    assert!(err.contains("cluster ray-a4-gpu-spot stays as it was"), "{err}");
    assert_left_alone(&cloud.calls().replace("lustre instances create", "").replace("lustre instances delete", ""), false);
}

/// Issue 65, class 1: a refused gcloud (an expired login, a role without Lustre) proves nothing
/// gone: a delete and a describe that fail so leave the instance named as a remainder, the
/// state kept, and destroy failed, never "destroyed".
#[test]
fn a_refused_gcloud_never_proves_the_instance_gone() {
    let config = "project:\n  cluster_name: ray-a4-gpu-spot\n  existing_cluster: true\nlustre:\n  capacity_gib: 18000\n";
    let cloud = existing("cluster-no-rdma.json", false, config);
    assert_eq!(deploy_existing(&cloud).status.code(), Some(0));
    let args = ["destroy", "--yes", "--folder", "deployment", "--discard-checkpoints"];
    let out = cloud.gke_rl(&args, &[("FAKE_FAIL", "gcloud lustre instances")]);
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("Managed Lustre instance rl-demo-gpu-lustre (unknown: "), "{err}");
    assert!(cloud.root.join("cloud/lustre").exists() && cloud.root.join("deployment/state.json").exists(), "{err}");
    let out = destroy_existing(&cloud, &[]);
    assert_eq!(out.status.code(), Some(0), "once gcloud answers, it goes: {}", stderr(&out));
    assert!(!cloud.root.join("cloud/lustre").exists());
}

/// An instance of the configured name that does not carry the deployment's label is not the
/// one deploy created (a create that lost a race to another's of the same name): destroy keeps
/// it, and says why.
#[test]
fn destroy_keeps_an_instance_of_that_name_without_the_deployments_label() {
    let config = "project:\n  cluster_name: ray-a4-gpu-spot\n  existing_cluster: true\nlustre:\n  capacity_gib: 18000\n";
    let cloud = existing("cluster-no-rdma.json", false, config);
    assert_eq!(deploy_existing(&cloud).status.code(), Some(0));
    std::fs::remove_file(cloud.root.join("cloud/lustre-label")).unwrap();
    let out = destroy_existing(&cloud, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "kept: Lustre instance rl-demo-gpu-lustre: it lacks the label gke-rl-deployment=ray-a4-gpu-spot, so gke-rl did not create it"
        ),
        "{err}"
    );
    assert!(!cloud.calls().contains("lustre instances delete") && cloud.root.join("cloud/lustre").exists(), "{}", cloud.calls());
}

#[test]
fn a_cluster_that_cannot_hold_the_config_is_refused_with_every_fix_before_anything_changes() {
    let config =
        "project:\n  cluster_name: ray-a4-gpu-spot\n  existing_cluster: true\ntopology:\n  node_count: 16\nlustre:\n  existing: true\n";
    let cloud = existing("cluster-no-cpu-pool.json", true, config);
    let out = deploy_existing(&cloud);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("has 8 nodes, the config wants 16; fix: set topology.node_count: 8"), "{err}");
    assert!(err.contains("no on-demand CPU node pool for the Ray head") && err.contains("ray.head.node_pool: gpu"), "{err}");
    let calls = cloud.calls();
    assert!(!calls.contains("update") && !calls.contains("create"), "nothing changed:\n{calls}");
}

/// A fixed pool resized up since it was made has the Nodes listed: gcloud's
/// `initialNodeCount` stays as the pool was made. One with fewer Nodes than that is told, not
/// refused: preempted Spot nodes come back. Without the right to list Nodes, deploy goes on
/// with gcloud's figures.
#[test]
fn a_pool_resized_since_it_was_made_is_sized_by_its_nodes() {
    let sixteen = format!("{EXISTING_XPK}topology:\n  node_count: 16\n");
    let cloud = existing("cluster-xpk-a4.json", true, &sixteen);
    let out = deploy_existing(&cloud);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("node pool ray-a4-gpu-spot-a4-pool has 8 nodes, the config wants 16; fix: set topology.node_count: 8"), "{err}");
    assert!(!cloud.calls().contains("--update-addons"), "nothing changed:\n{}", cloud.calls());
    assert!(cloud.api.requests().iter().any(|r| r.uri.starts_with("/api/v1/nodes?")), "the Nodes were listed");
    for i in 8..16 {
        let name = format!("gke-ray-a4-gpu-spot-ray-a4-gpu-spot-a4-pool-{i:04x}");
        cloud.api.put("nodes", crate::common::node(&name, "ray-a4-gpu-spot-a4-pool", "a4-highgpu-8g"));
    }
    let out = deploy_existing(&cloud);
    assert_eq!(out.status.code(), Some(0), "resized up to 16: {}", stderr(&out));

    let cloud = existing("cluster-xpk-a4.json", true, EXISTING_XPK);
    for i in [6, 7] {
        cloud.api.remove("nodes", &format!("gke-ray-a4-gpu-spot-ray-a4-gpu-spot-a4-pool-{i:04x}"));
    }
    let out = deploy_existing(&cloud);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("warning: node pool ray-a4-gpu-spot-a4-pool has 6 of the 8 nodes it was made with"), "{err}");

    let cloud = existing("cluster-xpk-a4.json", true, EXISTING_XPK);
    cloud.api.forbid_listing("nodes");
    let out = deploy_existing(&cloud);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("cannot list the nodes of cluster ray-a4-gpu-spot (list the nodes: the API server denied access (403)")
            && err.contains("its pools are taken at the sizes they were made with, as gcloud describes them"),
        "{err}"
    );
}

#[test]
fn destroy_refuses_a_state_whose_cluster_gke_rl_did_not_create() {
    let cloud = existing("cluster-xpk-a4.json", true, EXISTING_XPK);
    assert_eq!(deploy_existing(&cloud).status.code(), Some(0));
    // The config now says gke-rl made it: destroy would run gcluster on someone else's cluster.
    std::fs::write(cloud.root.join("gke-rl.yaml"), "project:\n  cluster_name: ray-a4-gpu-spot\n").unwrap();
    let out = destroy_existing(&cloud, &[]);
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("records cluster ray-a4-gpu-spot as one gke-rl did not create") && err.contains("set project.existing_cluster: true"),
        "{err}"
    );
    assert_left_alone(&cloud.calls(), false);
    assert!(cloud.api.object("rayclusters", "ray-a4-gpu-spot").is_some(), "nothing was deleted");
}

#[test]
fn destroy_without_its_folder_leaves_a_cluster_of_the_same_name_that_xpk_made() {
    let cloud = Cloud::new(Pods::ReadyAfter(0));
    std::fs::write(cloud.root.join("cloud/cluster"), "").unwrap();
    let out = cloud.gke_rl(&["destroy", "--yes", "--folder", "nowhere"], &[("FAKE_CLUSTER_BLUEPRINT", "xpk-gke-a4")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_left_alone(&cloud.calls(), false);
    assert!(cloud.root.join("cloud/cluster").exists());
}

/// `cost` on a cluster gke-rl did not create prices the GPU pool and the head's pool as they
/// are, and says so when gcloud cannot tell.
#[test]
fn cost_prices_an_existing_clusters_pools_as_they_are() {
    let cloud = existing("cluster-xpk-a4.json", true, EXISTING_XPK);
    let out = cloud.gke_rl(&["cost"], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(text.contains("8 × a4-highgpu-8g (Spot)") && text.contains("1 × n2-standard-32 (Ray head, pool cpu-np, on-demand)"), "{text}");
    assert!(!text.contains("system pool") && text.contains("Lustre 18000 GiB at 500 MB/s per TiB"), "the instance as it is: {text}");

    let out = cloud.gke_rl(&["cost"], &[("FAKE_FAIL", "gcloud container clusters describe")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("note: priced from the config, not the cluster as it is: "), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 × n2-highmem-16 (Ray head, on-demand)"));
}

/// What gke-rl did not make stays someone else's: a RayCluster of the deployment's name that
/// gke-rl did not apply, an instance of the configured name that it did not create, an
/// instance the config attaches on a cluster gke-rl makes.
#[test]
fn what_another_team_made_under_the_same_names_is_never_taken_over() {
    let cloud = existing("cluster-xpk-a4.json", true, EXISTING_XPK);
    cloud.api.put(
        "rayclusters",
        serde_json::json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "ray-a4-gpu-spot", "namespace": "default"}}),
    );
    let out = deploy_existing(&cloud);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("RayCluster default/ray-a4-gpu-spot exists and gke-rl did not apply it"), "{}", stderr(&out));
    let out = destroy_existing(&cloud, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(cloud.api.object("rayclusters", "ray-a4-gpu-spot").is_some(), "theirs stays");

    // The claim the codelab's template makes, of the name gke-rl would give its own.
    let cloud = existing("cluster-xpk-a4.json", true, EXISTING_XPK);
    let claim = serde_json::json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "lustre-pvc", "namespace": "default"}, "spec": {"volumeName": "theirs"}});
    cloud.api.put("persistentvolumeclaims", claim.clone());
    let out = deploy_existing(&cloud);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("gke-rl did not apply PersistentVolumeClaim lustre-pvc (no app.kubernetes.io/managed-by: gke-rl label)")
            && stderr(&out).contains("set lustre.pvc_name to another claim name"),
        "{}",
        stderr(&out)
    );
    assert_eq!(cloud.api.object("persistentvolumeclaims", "lustre-pvc"), Some(claim.clone()), "theirs, untouched");
    assert!(cloud.api.object("persistentvolumes", "default-lustre-pvc").is_none());
    let out = destroy_existing(&cloud, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(cloud.api.object("persistentvolumeclaims", "lustre-pvc"), Some(claim), "theirs stays");

    // An instance of the name gke-rl would create, without gke-rl's label.
    let config = "project:\n  cluster_name: ray-a4-gpu-spot\n  existing_cluster: true\n";
    let cloud = existing("cluster-no-rdma.json", true, config);
    let out = deploy_existing(&cloud);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("an instance of that name exists in us-east1-b and gke-rl did not create it"), "{}", stderr(&out));
    assert!(!cloud.calls().contains("lustre instances create"), "{}", cloud.calls());
    let out = destroy_existing(&cloud, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!cloud.calls().contains("lustre instances delete") && cloud.root.join("cloud/lustre").exists(), "{}", cloud.calls());

    // `lustre.existing` where gke-rl makes the cluster: refused, and never deleted without a state.
    let cloud = Cloud::new(Pods::ReadyAfter(0));
    std::fs::write(cloud.root.join("gke-rl.yaml"), "lustre:\n  existing: true\n").unwrap();
    let out = cloud.deploy(&["--authorized-cidr", "203.0.113.7/32"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("lustre.existing: true attaches instance rl-demo-gpu-lustre"), "{}", stderr(&out));
    std::fs::write(cloud.root.join("cloud/lustre"), "").unwrap();
    let out = cloud.gke_rl(&["destroy", "--yes", "--folder", "nowhere"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!cloud.calls().contains("lustre instances delete"), "{}", cloud.calls());
}

/// Destroy deletes what the state names: after a change of the instance's name in the config,
/// it refuses rather than delete the instance the config names now.
#[test]
fn destroy_refuses_a_config_that_names_another_instance_than_deploy_made() {
    let config = "project:\n  cluster_name: ray-a4-gpu-spot\n  existing_cluster: true\n";
    let cloud = existing("cluster-no-rdma.json", false, config);
    assert_eq!(deploy_existing(&cloud).status.code(), Some(0));
    let renamed = format!("{config}lustre:\n  instance_id: team-lustre\n  existing: true\n");
    std::fs::write(cloud.root.join("gke-rl.yaml"), renamed).unwrap();
    let out = destroy_existing(&cloud, &[]);
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("records rl-demo-gpu-lustre made by deploy") && err.contains("lustre.instance_id names team-lustre"), "{err}");
    assert!(!cloud.calls().contains("lustre instances delete"), "{}", cloud.calls());
}

/// The other commands see the deployment as deploy fitted it: render writes the RayCluster
/// deploy applied, and validate checks that one.
#[test]
fn after_deploy_render_and_validate_see_the_cluster_as_deploy_found_it() {
    let config = "project:\n  cluster_name: ray-a4-gpu-spot\n  existing_cluster: true\nlustre:\n  existing: true\n";
    let cloud = existing("cluster-no-rdma.json", true, config);
    let out = cloud.gke_rl(&["deploy", "--yes", "--timeout", "20s"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = cloud.gke_rl(&["render", "--out", "out"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rendered = std::fs::read_to_string(cloud.root.join("out/ray-cluster.yaml")).unwrap();
    let applied = cloud.api.object("rayclusters", "ray-a4-gpu-spot").unwrap();
    assert!(
        rendered.contains("cloud.google.com/gke-nodepool: cpu-np")
            && rendered.contains("cloud.google.com/gke-nodepool: ray-a4-gpu-spot-a4-pool"),
        "{rendered}"
    );
    assert!(
        !rendered.contains("networking.gke.io/interfaces") && applied["spec"]["workerGroupSpecs"][0]["template"]["metadata"].is_null(),
        "TCP, as applied"
    );
    let out = cloud.gke_rl(&["validate"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // RayJob mode: deploy binds the volume and applies no RayCluster; the RayJob submit
    // applies runs its cluster on the pools deploy found.
    let rayjob = format!("{config}job:\n  mode: rayjob\nray:\n  image: nvcr.io/nvidia/nemo-rl:v0.7.0\n");
    let cloud = existing("cluster-xpk-a4.json", true, &rayjob);
    let out = cloud.gke_rl(&["deploy", "--yes", "--timeout", "20s"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        cloud.api.object("rayclusters", "ray-a4-gpu-spot").is_none() && cloud.api.object("persistentvolumeclaims", "lustre-pvc").is_some()
    );
    let out = cloud.gke_rl(&["render", "--out", "out"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rendered = std::fs::read_to_string(cloud.root.join("out/ray-job.yaml")).unwrap();
    assert!(
        rendered.contains("cloud.google.com/gke-nodepool: cpu-np")
            && rendered.contains("cloud.google.com/gke-nodepool: ray-a4-gpu-spot-a4-pool")
            && rendered.contains("rdma-7"),
        "{rendered}"
    );
    // A job command the API refuses names the fix, as deploy does.
    cloud.api.deny(Some(403));
    let out = cloud.gke_rl(&["status"], &[]);
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("denied access (403)") && err.contains("help: the account gcloud uses may not do this in the cluster"), "{err}");
}

/// Issue 65, class 3: an existing instance on the Dynamic tier states no throughput, only
/// `dynamicTierOptions`: it is read as the Dynamic tier (25 MB/s per TiB aggregate, its own
/// capacity steps), never as the config's 1000; a describe answer gke-rl cannot read (a
/// capacity past 32 bits, a negative tier, neither a tier nor its options) is refused by name
/// before anything changes.
#[test]
fn a_dynamic_tier_instance_is_read_as_such_and_an_unreadable_one_is_refused() {
    let config = "project:\n  cluster_name: ray-a4-gpu-spot\n  existing_cluster: true\nlustre:\n  existing: true\n";
    let instance = |fields: &str| {
        format!(
            r#"{{"name": "projects/fake-project/locations/us-east1-b/instances/rl-demo-gpu-lustre", "filesystem": "lustre",
            "network": "projects/fake-project/global/networks/ray-a4-gpu-spot-net-0", "state": "ACTIVE",
            "mountPoint": "172.16.0.3@tcp:/lustre", "gkeSupportEnabled": false, {fields}}}"#
        )
    };
    let cloud = existing("cluster-no-rdma.json", true, config);
    let dynamic = instance(r#""capacityGib": "472000", "dynamicTierOptions": {"mode": "DEFAULT_CACHE"}"#);
    std::fs::write(cloud.root.join("cloud/lustre.json"), dynamic).unwrap();
    let out = cloud.gke_rl(&["deploy", "--yes", "--timeout", "20s"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let found = std::fs::read_to_string(cloud.root.join(".gke-rl/ray-a4-gpu-spot/found.json")).unwrap();
    assert!(found.contains("\"lustre_throughput_mbps_per_tib\": 25") && found.contains("\"lustre_capacity_gib\": 472000"), "{found}");
    let out = cloud.gke_rl(&["cost"], &[]);
    assert!(stdout(&out).contains("Lustre 472000 GiB at 25 MB/s per TiB"), "{}{}", stdout(&out), stderr(&out));
    let out = cloud.gke_rl(&["validate"], &[]);
    assert_eq!(out.status.code(), Some(0), "no capacity step of another tier: {}{}", stdout(&out), stderr(&out));

    for (fields, said) in [
        (r#""capacityGib": "99999999999", "perUnitStorageThroughput": "500""#, "capacityGib \"99999999999\" is not a capacity"),
        (r#""capacityGib": "18000", "perUnitStorageThroughput": "-5""#, "perUnitStorageThroughput \"-5\" is not a throughput tier"),
        (r#""capacityGib": "18000""#, "neither perUnitStorageThroughput nor dynamicTierOptions"),
    ] {
        let cloud = existing("cluster-no-rdma.json", true, config);
        std::fs::write(cloud.root.join("cloud/lustre.json"), instance(fields)).unwrap();
        let out = deploy_existing(&cloud);
        assert_eq!(out.status.code(), Some(1), "{fields}: {}", stderr(&out));
        assert!(stderr(&out).contains(said) && stderr(&out).contains("nothing was changed"), "{fields}: {}", stderr(&out));
        assert!(cloud.api.object("rayclusters", "ray-a4-gpu-spot").is_none(), "nothing was applied");
    }
}

//! The deploy and destroy plans (what `--dry-run` prints) and the state file's rules.

use gke_rl::Deployment;
use gke_rl::lifecycle::{self, Site, State, Step};
use gke_rl_test_support::configs::configs;
use gke_rl_test_support::configs::render;

fn site(deployment: &Deployment) -> Site {
    Site {
        project_id: gke_rl::model::ProjectId::new("my-project").unwrap(),
        authorized_cidr: Some(gke_rl::model::Cidr::new("203.0.113.7/32").unwrap()),
        toolkit: "/opt/cluster-toolkit".into(),
        gcluster: "./gcluster".into(),
        folder: format!("/home/me/run/.gke-rl/{}", deployment.project.cluster_name).into(),
        download_dependencies: false,
        skip_gcsfuse_validator: true,
    }
}

fn config(name: &str) -> Deployment {
    configs().into_iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no config {name}")).1
}

fn plan(deployment: &Deployment) -> String {
    let artifacts = render(deployment);
    lifecycle::deploy_plan(
        deployment,
        &site(deployment),
        artifacts.ray_cluster.as_ref().map(|a| a.contents.as_str()),
        &gke_rl_in_cluster::helpers(deployment),
        "30m00s",
    )
}

#[test]
fn deploy_plan_default() {
    insta::assert_snapshot!(plan(&Deployment::default()));
}

/// RayJob mode: no RayCluster to apply or wait for, and a GPU pool that bills only while a
/// RayJob runs.
#[test]
fn deploy_plan_rayjob() {
    insta::assert_snapshot!(plan(&config("rayjob")));
}

#[test]
fn deploy_plan_reservation() {
    insta::assert_snapshot!(plan(&config("reservation-2-nodes")));
}

#[test]
fn destroy_plan_after_a_complete_deploy() {
    let deployment = Deployment::default();
    let mut state = State::new(&deployment, "my-project", "d");
    Step::ALL.into_iter().for_each(|s| state.complete(s));
    let plan = lifecycle::destroy_plan(&deployment, &site(&deployment), &state, None, false);
    insta::assert_snapshot!(plan.to_string());
    let buckets = [("training-ray-a4-gpu-spot-1a2b".to_owned(), 2)];
    let listed = lifecycle::destroy_plan(&deployment, &site(&deployment), &state, Some(&buckets), false);
    assert!(listed.preview().ends_with("\n  bucket training-ray-a4-gpu-spot-1a2b (2 objects, emptied first)"), "{}", listed.preview());
    assert_eq!(listed.steps, plan.steps, "the same commands either way");
}

#[test]
fn the_plan_never_holds_a_secret_value_and_names_its_source() {
    let text = plan(&Deployment::default());
    assert!(text.contains("HF_TOKEN: <the value of $HF_TOKEN>"), "{text}");
    assert!(text.contains("--auto-approve") && text.contains("--vars project_id=my-project,authorized_cidr=203.0.113.7/32"), "{text}");
}

#[test]
fn state_round_trips_and_refuses_another_deployment() {
    let deployment = Deployment::default();
    let mut state = State::new(&deployment, "my-project", "abc");
    state.complete(Step::Provision);
    state.complete(Step::Preflight);
    assert_eq!(state.completed, [Step::Preflight, Step::Provision], "kept in step order");
    assert_eq!(State::from_json(&state.to_json()).unwrap(), state);
    assert!(state.to_json().contains("\"provision\""));
    assert_eq!(state.mismatch(&deployment, "my-project"), None);
    let other = state.mismatch(&deployment, "other-project").unwrap();
    assert!(other.contains("belongs to deployment ray-a4-gpu-spot in project my-project"), "{other}");
    let renamed = gke_rl::config::from_yaml("project:\n  cluster_name: another\n").unwrap();
    assert!(state.mismatch(&renamed, "my-project").is_some());
    state.redo_from(Step::Render);
    assert_eq!(state.completed, [Step::Preflight]);
    assert!(matches!(State::from_json("{\"version\": \"x\"}"), Err(gke_rl::Error::State(_))));
}

#[test]
fn digest_changes_with_any_part() {
    let a = lifecycle::digest(&["x", "y"]);
    assert_eq!(a, lifecycle::digest(&["x", "y"]));
    assert_ne!(a, lifecycle::digest(&["xy", ""]), "parts are separated");
    assert_ne!(a, lifecycle::digest(&["x", "z"]));
}

#[test]
fn labelled_clusters_are_read_with_their_location() {
    let listed = "ray-a4-gpu-spot\tus-east1\nold-copy\tus-central1-b\n\n";
    assert_eq!(
        lifecycle::clusters_listed(listed),
        [("ray-a4-gpu-spot".to_owned(), "us-east1".to_owned()), ("old-copy".to_owned(), "us-central1-b".to_owned())]
    );
    assert!(lifecycle::clusters_listed("").is_empty());
}

/// Issue 53: deploy onto a cluster gke-rl did not create reads it, never makes or deletes it.
#[test]
fn deploy_plan_existing_cluster() {
    insta::assert_snapshot!(plan(&config("existing-xpk-cluster")));
}

/// On a cluster gke-rl did not create, destroy deletes what its deploy made and names what stays.
#[test]
fn destroy_plan_on_an_existing_cluster() {
    let mut deployment = config("existing-xpk-cluster");
    deployment.lustre.existing = false;
    let mut state = State::new(&deployment, "my-project", "digest");
    for step in Step::ALL {
        state.complete(step);
    }
    state.created.lustre_instance = Some("rl-demo-gpu-lustre".into());
    state.created.addons = vec!["RayOperator".into()];
    state.created.volume = Some("default-lustre-pvc".into());
    let kept = lifecycle::destroy_plan(&deployment, &site(&deployment), &state, None, false).to_string();
    let off = lifecycle::destroy_plan(&deployment, &site(&deployment), &state, None, true).to_string();
    insta::assert_snapshot!(off);
    assert!(
        !kept.contains("DISABLED") && kept.contains("kept: the add-ons deploy turned on (RayOperator; --disable-addons turns them off)"),
        "{kept}"
    );
    for plan in [&kept, &off] {
        assert!(!plan.contains("gcluster") && !plan.contains("clusters delete") && !plan.contains("buckets"), "{plan}");
    }
}

/// Every gcloud command deploy and destroy run, on both paths, and the commands their fixes
/// name, as the real gcloud's argument parser takes them: without an account gcloud parses
/// the command line, then stops before the network (exit 1); a command line it does not
/// accept exits 2. Needs the Google Cloud CLI (`gcloud`) on PATH, as the machines that build
/// gke-rl have it.
#[test]
fn every_gcloud_command_is_accepted_by_the_real_gcloud() {
    use gke_rl::lifecycle::existing::{self, Cluster};
    let mut commands: Vec<lifecycle::Command> = Vec::new();
    let gcluster_path = Deployment::default();
    let mut attach = config("existing-xpk-cluster");
    let mut create = attach.clone();
    create.lustre.existing = false;
    for d in [&gcluster_path, &attach, &create] {
        let site = site(d);
        commands.extend(lifecycle::Preflight::new(d, &site).all().into_iter().map(|(_, c)| c.clone()));
        commands.extend([
            lifecycle::access_token(),
            lifecycle::configured_project(),
            lifecycle::enable_apis(&lifecycle::required_apis(d), &site),
            lifecycle::create_gcsfuse_role(&site),
            lifecycle::credentials(d, "my-project"),
            lifecycle::describe_node_pool(d, "my-project"),
            lifecycle::list_buckets(d, &site),
            lifecycle::list_objects("bucket"),
            lifecycle::empty_bucket("bucket"),
            lifecycle::delete_cluster("name", "us-east1", &site),
            lifecycle::delete_lustre(d, &site),
            lifecycle::delete_bucket("bucket", &site),
            lifecycle::labelled_clusters(d, &site),
            lifecycle::describe_cluster(d, &site),
            lifecycle::describe_lustre(d, &site),
            lifecycle::update_addons(d, &site, &[existing::RAY_OPERATOR, existing::LUSTRE_CSI_DRIVER], true),
            lifecycle::update_addons(d, &site, &[existing::RAY_OPERATOR], false),
            lifecycle::describe_peering_range("vpc", "host-project"),
            lifecycle::create_peering_range("vpc", "host-project"),
            lifecycle::list_peerings("vpc", "host-project"),
            lifecycle::connect_peering("vpc", "host-project"),
            lifecycle::create_lustre(d, &site, "projects/host-project/global/networks/vpc", false),
            lifecycle::create_lustre(d, &site, "projects/host-project/global/networks/vpc", true),
        ]);
        // Issue 64: what export, destroy and deploy --resume-from run to keep a run's output.
        let folder = gke_rl::model::GcsPath::new("gs://my-bucket/runs/raysubmit_1/step_4/").unwrap();
        let request = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
        for direction in [lifecycle::Direction::Export, lifecycle::Direction::Import] {
            commands.push(lifecycle::transfer(d, &site, direction, "/ckpt/step_4", &folder, request));
        }
        let agent = gke_rl::durability::service_agent("123456789012");
        commands.extend([
            lifecycle::describe_operation("projects/my-project/locations/us-east1-b/operations/operation-1234"),
            lifecycle::list_folder(&folder),
            lifecycle::describe_bucket("my-bucket"),
            lifecycle::create_bucket("my-bucket", "us-east1", &site),
            lifecycle::bucket_policy("my-bucket"),
            lifecycle::grant_on_bucket("my-bucket", &format!("serviceAccount:{agent}"), gke_rl::durability::AGENT_ROLE),
            lifecycle::grant_on_bucket("my-bucket", "user:me@example.com", gke_rl::durability::BUCKET_ADMIN_ROLE),
            lifecycle::grant_account(&site, "me@example.com", gke_rl::durability::TRANSFER_ROLE),
            lifecycle::project_number(&site),
            lifecycle::create_service_agent(&site),
            lifecycle::upload("/tmp/gke-rl-export/gke-rl.json", "gs://my-bucket/runs/raysubmit_1/gke-rl/gke-rl.json"),
            lifecycle::read_object("gs://my-bucket/runs/raysubmit_1/gke-rl/kept/step_4.json"),
            // What destroy without its state tells people to run.
            lifecycle::transfer_by_hand(d, &site, lifecycle::Direction::Export, "/ckpt", "gs://my-bucket/runs/"),
        ]);
        commands.extend(lifecycle::leftovers(d, &site).into_iter().map(|(_, c)| c));
    }
    // The commands the refusals tell people to run.
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gcloud");
    let cluster = Cluster::from_json(&std::fs::read_to_string(fixtures.join("cluster-no-cpu-pool.json")).unwrap()).unwrap();
    let instance = existing::Instance::from_json(&std::fs::read_to_string(fixtures.join("lustre-instance.json")).unwrap()).unwrap();
    attach.ray.head.pool = None;
    let mut fixes: Vec<String> = existing::fit(&attach, &cluster).unwrap_err().into_iter().map(|m| m.fix).collect();
    let legacy = existing::Instance { gke_support: true, ..instance };
    fixes.extend(existing::check_instance(&attach, &cluster, &legacy).into_iter().map(|m| m.fix));
    let mut tainted = cluster.clone();
    tainted.pools[1].taints.push("user-workload=true:NO_SCHEDULE".to_owned());
    fixes.extend(existing::fit(&attach, &tainted).unwrap_err().into_iter().map(|m| m.fix));
    fixes.sort();
    fixes.dedup();
    let named: Vec<&str> = fixes.iter().filter_map(|fix| fix.find("gcloud ").map(|at| &fix[at..])).collect();
    assert_eq!(named.len(), 3, "{fixes:?}");
    for line in named {
        let line = line.split([')', '(']).next().unwrap().trim_end();
        let mut words = line.split_whitespace().map(str::to_owned);
        commands.push(lifecycle::Command { program: words.next().unwrap(), args: words.collect(), dir: None });
    }
    commands.retain(|c| c.program == "gcloud");
    let mut seen = std::collections::BTreeSet::new();
    commands.retain(|c| seen.insert(c.to_string()));
    assert!(commands.len() > 30, "{} commands", commands.len());

    let scratch = tempfile::tempdir().unwrap();
    let numbered: Vec<(usize, &lifecycle::Command)> = commands.iter().enumerate().collect();
    let refused: Vec<String> = std::thread::scope(|scope| {
        let runs: Vec<_> = numbered
            .chunks(numbered.len().div_ceil(4))
            .map(|chunk| {
                let scratch = scratch.path();
                scope.spawn(move || chunk.iter().filter_map(|(n, command)| refusal(command, scratch, *n)).collect::<Vec<_>>())
            })
            .collect();
        runs.into_iter().flat_map(|run| run.join().unwrap()).collect()
    });
    assert!(refused.is_empty(), "the real gcloud refuses:\n{}", refused.join("\n"));
}

/// The gcloud fixtures (`tests/fixtures/gcloud/`), written to Google's API references, are
/// what gcloud prints: the installed Google Cloud CLI's own generated API client decodes each
/// (GKE v1's `Cluster`, Managed Lustre v1's `Instance`) and knows every field, at every depth,
/// with its type. (A recorded answer needs a live project, which this machine cannot reach.)
#[test]
fn the_gcloud_fixtures_decode_as_the_real_gclouds_api_messages() {
    use std::process::Command;
    let scratch = tempfile::tempdir().unwrap();
    let info = Command::new("gcloud")
        .args(["info", "--format=value(installation.sdk_root,basic.python_location)"])
        .env("CLOUDSDK_CONFIG", scratch.path())
        .output()
        .unwrap_or_else(|e| panic!("the Google Cloud CLI (gcloud) must be on PATH for this test: {e}"));
    let info = String::from_utf8(info.stdout).unwrap();
    let (sdk_root, python) = info.trim().split_once('\t').unwrap_or_else(|| panic!("gcloud info said `{info}`"));
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixtures = here.join("../../tests/fixtures/gcloud");
    let mut args = vec![here.join("tests/gcloud_messages.py").display().to_string(), sdk_root.to_owned()];
    for (kind, file) in [
        ("cluster", "cluster-xpk-a4.json"),
        ("cluster", "cluster-no-rdma.json"),
        ("cluster", "cluster-no-cpu-pool.json"),
        ("instance", "lustre-instance.json"),
    ] {
        args.extend([kind.to_owned(), fixtures.join(file).display().to_string()]);
    }
    let out = Command::new(python).args(&args).env("PYTHONDONTWRITEBYTECODE", "1").output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "gcloud's client could not decode a fixture:\n{stderr}");
    assert!(stdout.is_empty(), "fields gcloud's API messages do not have:\n{stdout}");
}

/// Why the real gcloud does not take `command`'s arguments, if it does not; its own
/// configuration and stderr go into `scratch` (file names numbered `n`).
fn refusal(command: &lifecycle::Command, scratch: &std::path::Path, n: usize) -> Option<String> {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let stderr_path = scratch.join(format!("stderr-{n}"));
    let mut child = Command::new("gcloud")
        .args(&command.args)
        .env("CLOUDSDK_CONFIG", scratch.join("gcloud-config"))
        .env("CLOUDSDK_CORE_DISABLE_PROMPTS", "1")
        .env("CLOUDSDK_CORE_DISABLE_USAGE_REPORTING", "1")
        .env_remove("CLOUDSDK_CORE_PROJECT")
        .env_remove("GOOGLE_APPLICATION_CREDENTIALS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("the Google Cloud CLI (gcloud) must be on PATH for this test: {e}"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            return Some(format!("{command}: no answer in 120 s"));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    (status.code() == Some(2)).then(|| format!("{command}\n  {}", err.lines().next().unwrap_or_default()))
}

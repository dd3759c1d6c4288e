//! Helpers shared by the end-to-end tests: run the real `gke-rl` binary, find upstream files,
//! and a pretend Google Cloud with a real TLS API server behind it.

#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gke_rl_kube::fake::{FakeApiServer, Https, Pods};
#[allow(unused_imports)] // each test crate uses its own subset
pub use gke_rl_test_support::{files_under, project_root, stderr, stdout, upstream};

/// Runs `gke-rl ARGS…` (the built binary, as installed) in `cwd`.
pub fn gke_rl(cwd: &Path, args: &[&str]) -> Output {
    exited_cleanly(
        Command::new(env!("CARGO_BIN_EXE_gke-rl"))
            .env("GKE_RL_RUNS_DIR", runs_dir())
            .env_remove(gke_rl_cli::CALLED_AS)
            // This machine's gcloud (if any) is never asked: the report's Lustre side is refused
            // this endpoint before it is.
            .env("GKE_RL_MONITORING_ENDPOINT", NO_MONITORING)
            .current_dir(cwd)
            .args(args)
            .output()
            .expect("gke-rl runs"),
    )
}

/// A Cloud Monitoring endpoint that gke-rl refuses before it asks gcloud for a token.
pub const NO_MONITORING: &str = "none-in-tests";

/// The exit codes gke-rl documents: 0, 1 (findings, a failed job or step), 2 (errors), and
/// 128 + a signal's number for a stop by SIGHUP (129), Ctrl-C (130) or SIGTERM (143).
pub const EXIT_CODES: [i32; 6] = [0, 1, 2, 129, 130, 143];

/// Whether the run ended as gke-rl promises: a documented exit code, and no panic.
pub fn clean_exit(out: &Output) -> Result<(), String> {
    let code = out.status.code();
    if stderr(out).contains("panicked") || !code.is_some_and(|c| EXIT_CODES.contains(&c)) {
        return Err(format!("gke-rl panicked or exited with {code:?}\nstdout:\n{}\nstderr:\n{}", stdout(out), stderr(out)));
    }
    Ok(())
}

/// `out`, after asserting [`clean_exit`].
pub fn exited_cleanly(out: Output) -> Output {
    if let Err(e) = clean_exit(&out) {
        panic!("{e}");
    }
    out
}

/// What `tests/fixtures/fakes/fake.sh` runs, and `cp`, which the README's Quickstart runs.
const FAKE_TOOLS: [&str; 18] = [
    "bash", "base64", "basename", "cat", "cp", "dirname", "ls", "mkdir", "rm", "sed", "sleep", "touch", "kill", "find", "sort", "wc",
    "stat", "grep",
];

/// The token the fake gke-gcloud-auth-plugin hands out, and the API server accepts.
pub const KUBE_TOKEN: &str = "ya29.fake-gke-access-token";
/// A token the tests put in `HF_TOKEN`.
pub const HF_TOKEN: &str = "hf_fake_token_value_0123456789";

/// A pretend Google Cloud for the binary: fake gcloud, gcluster, terraform, packer and
/// gke-gcloud-auth-plugin on PATH (`tests/fixtures/fakes/fake.sh`), a Cluster Toolkit checkout
/// with the upstream blueprint, and the fake API server over HTTPS, which `get-credentials`
/// writes into a GKE-style kubeconfig. The binary then runs kube-rs's real code: the
/// kubeconfig, exec credentials, TLS and the port-forward upgrade.
pub struct Cloud {
    _dir: tempfile::TempDir,
    /// The scratch folder the binary runs in.
    pub root: PathBuf,
    /// The API server.
    pub api: FakeApiServer,
    /// Where it listens.
    pub https: Https,
    /// The address-echo service `deploy` asks for this machine's public address: it answers
    /// what [`Cloud::set_public_address`] set.
    echo: String,
    runtime: tokio::runtime::Runtime,
}

impl Cloud {
    /// A cloud whose RayCluster pods behave as `pods` says.
    pub fn new(pods: Pods) -> Cloud {
        let blueprint = upstream("cluster-toolkit/gke-a4.yaml");
        let dir = tempfile::tempdir().expect("a temp dir");
        let root = dir.path().to_path_buf();
        let example = root.join("toolkit/examples/gke-a4");
        for path in [&root.join("bin"), &example, &root.join("cloud")] {
            std::fs::create_dir_all(path).expect("a folder");
        }
        for program in ["gcloud", "gcluster", "terraform", "packer", "gke-gcloud-auth-plugin"] {
            std::os::unix::fs::symlink(project_root().join("tests/fixtures/fakes/fake.sh"), root.join("bin").join(program))
                .expect("a link");
        }
        // The fakes' own tools, and nothing else: this machine may have the real gcloud,
        // gke-gcloud-auth-plugin or kubectl on its PATH.
        std::fs::create_dir_all(root.join("tools")).expect("a folder");
        for tool in FAKE_TOOLS {
            let found =
                std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).map(|dir| dir.join(tool)).find(|p| p.is_file());
            let found = found.unwrap_or_else(|| panic!("{tool} is not on PATH; the fakes need it"));
            std::os::unix::fs::symlink(found, root.join("tools").join(tool)).expect("a link");
        }
        std::fs::copy(&blueprint, example.join("gke-a4.yaml")).expect("the blueprint");
        for template in gke_rl::knowledge::STAGED_TEMPLATES {
            std::fs::copy(blueprint.with_file_name(template), example.join(template)).expect("a template");
        }
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a runtime");
        let api = FakeApiServer::new(pods);
        let https = runtime.block_on(api.serve_https(KUBE_TOKEN)).expect("the HTTPS API server");
        std::fs::write(root.join("ca.pem"), &https.ca_pem).expect("the CA");
        let echo = runtime.block_on(address_echo(root.join("public-address"))).expect("the address echo");
        let cloud = Cloud { _dir: dir, root, api, https, echo, runtime };
        cloud.set_public_address("203.0.113.7");
        cloud
    }

    /// Issue 53: a cluster made with xpk and a Lustre instance of the team's own, as gcloud
    /// describes them (`tests/fixtures/gcloud/`), in the fake cloud. The API server holds the
    /// cluster's GKE networks and its Nodes, as many in each pool as gcloud's size says (an
    /// autoscaled pool's fewest). `config` is the deployment's YAML.
    pub fn existing(cluster: &str, instance_exists: bool, config: &str) -> Cloud {
        let cloud = Cloud::new(Pods::ReadyAfter(0));
        let fixtures = project_root().join("tests/fixtures/gcloud");
        let fake = cloud.root.join("cloud");
        std::fs::write(fake.join("cluster"), "").expect("the cluster");
        std::fs::copy(fixtures.join(cluster), fake.join("cluster.json")).expect("the cluster's description");
        std::fs::copy(fixtures.join("lustre-instance.json"), fake.join("lustre.json")).expect("the instance's description");
        if instance_exists {
            std::fs::write(fake.join("lustre"), "").expect("the instance");
        }
        let read = |name: &str| std::fs::read_to_string(fixtures.join(name)).expect("a fixture");
        let networks: serde_json::Value = serde_json::from_str(&read("gke-networks.json")).expect("JSON");
        for (plural, key) in [("gkenetworkparamsets", "paramSets"), ("networks", "networks")] {
            for object in networks[key].as_array().expect("a list") {
                cloud.api.put(plural, object.clone());
            }
        }
        let described = gke_rl::lifecycle::existing::Cluster::from_json(&read(cluster)).expect("a cluster");
        for pool in &described.pools {
            let count = match pool.size {
                gke_rl::lifecycle::existing::PoolSize::Fixed(n) => n,
                gke_rl::lifecycle::existing::PoolSize::Autoscaled { min, .. } => min,
            };
            for i in 0..count {
                cloud.api.put("nodes", node(&format!("gke-{}-{}-{i:04x}", described.name, pool.name), &pool.name, &pool.machine_type));
            }
        }
        std::fs::write(cloud.root.join("gke-rl.yaml"), config).expect("the config");
        cloud
    }

    /// Another API server, for a second cluster, with its CA written beside the first's.
    pub fn another_api_server(&self, name: &str) -> (FakeApiServer, Https) {
        let api = FakeApiServer::new(Pods::ReadyAfter(0));
        let https = self.runtime.block_on(api.serve_https(KUBE_TOKEN)).expect("the HTTPS API server");
        std::fs::write(self.root.join(format!("{name}-ca.pem")), &https.ca_pem).expect("the CA");
        (api, https)
    }

    /// What the address-echo service answers from now on.
    pub fn set_public_address(&self, address: &str) {
        std::fs::write(self.root.join("public-address"), address).expect("the address");
    }

    /// The binary in the scratch folder, with the fakes first on PATH, `HF_TOKEN` set and the
    /// kubeconfig in the folder; `env` adds or overrides variables. Asserts [`clean_exit`].
    pub fn gke_rl(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = self.command(args);
        for (name, value) in env {
            command.env(name, value);
        }
        exited_cleanly(command.output().expect("gke-rl runs"))
    }

    /// The binary as [`Cloud::gke_rl`] runs it, not started.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_gke-rl"));
        command
            .env("GKE_RL_RUNS_DIR", runs_dir())
            .env_remove(gke_rl_cli::CALLED_AS)
            .current_dir(&self.root)
            .args(args)
            .env("PATH", format!("{}:{}", self.root.join("bin").display(), self.root.join("tools").display()))
            .env("FAKE_CLOUD", self.root.join("cloud"))
            .env("FAKE_KUBE_SERVER", &self.https.url)
            .env("FAKE_KUBE_CA", self.root.join("ca.pem"))
            .env("FAKE_KUBE_TOKEN", KUBE_TOKEN)
            .env("KUBECONFIG", self.root.join("kubeconfig"))
            .env("HF_TOKEN", HF_TOKEN)
            .env("GKE_RL_ADDRESS_ECHO", &self.echo)
            .env("GKE_RL_MONITORING_ENDPOINT", NO_MONITORING)
            .env_remove("RAY_ADDRESS")
            .env_remove("RAY_API_SERVER_ADDRESS")
            // Through the port-forward the RayCluster's own token is used, from its Secret.
            .env_remove("RAY_AUTH_TOKEN")
            .env_remove("RAY_AUTH_TOKEN_PATH");
        command
    }

    /// `program` (a shell, `env`, `timeout`: a wrapper that starts the binary its own way) in the
    /// scratch folder, with [`Cloud::command`]'s environment.
    pub fn wrapper(&self, program: &str) -> Command {
        let template = self.command(&[]);
        let mut command = Command::new(program);
        command.current_dir(&self.root).envs(template.get_envs().filter_map(|(name, value)| Some((name, value?))));
        command
    }

    /// `deploy` of the default config into `./deployment`, with the toolkit checkout and a CIDR.
    pub fn deploy(&self, extra: &[&str], env: &[(&str, &str)]) -> Output {
        let mut args = vec!["deploy", "--yes", "--toolkit", "toolkit", "--folder", "deployment", "--timeout", "20s"];
        args.extend_from_slice(extra);
        self.gke_rl(&args, env)
    }

    /// `destroy --yes` of that deployment.
    pub fn destroy(&self, env: &[(&str, &str)]) -> Output {
        self.gke_rl(&["destroy", "--yes", "--toolkit", "toolkit", "--folder", "deployment"], env)
    }

    /// Every call the fakes recorded, one per line.
    pub fn calls(&self) -> String {
        std::fs::read_to_string(self.root.join("cloud/calls")).unwrap_or_default()
    }

    /// The token is in the Secret's body only: not in a call, a child's environment (the
    /// credential plugin's included), or a request's URI.
    pub fn assert_token_stays_secret(&self, outputs: &[&Output]) {
        let calls = self.calls();
        assert!(!calls.contains(HF_TOKEN) && calls.lines().all(|l| l.contains("HF_TOKEN=<unset>")), "a child saw the token:\n{calls}");
        for request in self.api.requests() {
            assert!(!request.uri.contains(HF_TOKEN), "{} holds the token", request.uri);
        }
        for out in outputs {
            assert!(!stdout(out).contains(HF_TOKEN) && !stderr(out).contains(HF_TOKEN), "the token was printed");
        }
    }
}

/// The config of a team's xpk cluster `ray-a4-gpu-spot` and its Lustre instance.
pub const EXISTING_XPK: &str = "project:\n  cluster_name: ray-a4-gpu-spot\n  existing_cluster: true\nlustre:\n  existing: true\n";

/// A Node of GKE's `pool`, labelled as GKE labels it.
pub fn node(name: &str, pool: &str, machine_type: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {gke_rl::knowledge::NODE_POOL_LABEL: pool, "node.kubernetes.io/instance-type": machine_type},
        },
    })
}

/// A plain-HTTP service that answers every request with the contents of `file`, as
/// api.ipify.org answers with the caller's address.
async fn address_echo(file: PathBuf) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = [0u8; 1024];
            let _ = socket.read(&mut request).await;
            let body = std::fs::read_to_string(&file).unwrap_or_default();
            let response = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
            let _ = socket.write_all(response.as_bytes()).await;
        }
    });
    Ok(url)
}

/// Where the supervisors of the tests' runs keep their records: the tests' Ray heads run on
/// this machine, which has no Lustre.
pub fn runs_dir() -> PathBuf {
    project_root().join("target/test-runs")
}

//! A local Ray head for tests and benchmarks: `ray start --head --block` from a venv, on
//! free ports, in its own process group so that dropping it stops every Ray process it made.
//! Shared by `cargo xtask bench submit`, `crates/gke-rl-cli/tests/ray_jobs.rs` and `crates/gke-rl-cli/tests/two_nodes.rs`. The
//! Rays are [`gke_rl_ray::TESTED_RAY`]'s, installed by `cargo xtask ci` under
//! `target/ray/<version>/`.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use gke_rl_ray::TESTED_RAY;

/// What a group of Ray processes of one version is: each takes ports of its own, so that the
/// heads of every tested Ray, a second head of each and a joined node of each can run at once.
#[derive(Debug, Clone, Copy)]
pub enum Role {
    /// The head the tests of one Ray share.
    Head = 0,
    /// Another head of the same Ray, started while the shared one runs.
    SecondHead = 1,
    /// A worker node joined to a head.
    Node = 2,
}

/// Ports of the process groups: a block of [`PORT_BLOCK`] for each role of each tested Ray,
/// from [`FIRST_PORT`]: above Ray's default worker ports (10002 to 19999) and below the
/// kernel's ephemeral range (32768 and up), so that no port another process picks at random
/// (another head starting at the same time, say) can take one between the check and Ray's bind.
const FIRST_PORT: u16 = 20_000;
const PORT_BLOCK: u16 = 1_000;
const _: () = assert!(FIRST_PORT as usize + 3 * TESTED_RAY.len() * PORT_BLOCK as usize <= 32_768);

/// The first port of the block of `role` of Ray `version`.
fn port_block(version: &str, role: Role) -> Result<u16, String> {
    let index = TESTED_RAY.iter().position(|v| *v == version).ok_or_else(|| format!("Ray {version} is not one of {TESTED_RAY:?}"))?;
    Ok(FIRST_PORT + (role as u16 * TESTED_RAY.len() as u16 + index as u16) * PORT_BLOCK)
}

/// Four fixed ports (dashboard, GCS, client server, agent) among the first 100 of the block at
/// `base`.
fn fixed_ports(base: u16) -> Result<[u16; 4], String> {
    for first in (base..base + 100).step_by(10) {
        let ports = [first, first + 1, first + 2, first + 3];
        if ports.iter().all(|p| TcpListener::bind(("0.0.0.0", *p)).is_ok()) {
            return Ok(ports);
        }
    }
    Err(format!("no 4 free ports between {base} and {}", base + 100))
}

/// The worker ports of the block at `base`: the rest of it (Ray's default range starts at
/// 10002 for every node, and the 2.54 agent binds there too).
fn worker_ports(base: u16) -> std::ops::Range<u16> {
    (base + 100)..(base + PORT_BLOCK - 1)
}

/// Whether Ray `version` has token authentication: heads of such a Ray start with a token, as
/// gke-rl renders their RayClusters.
pub fn has_token_auth(version: &str) -> bool {
    gke_rl::knowledge::supports_token(version)
}

/// The Ray token of this process's heads: random, made once, in memory (and in the
/// environment of the Ray processes and of the gke-rl runs that use it).
pub fn test_token() -> &'static str {
    static TOKEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TOKEN.get_or_init(random_token)
}

/// 32 random bytes in hex, as Ray makes tokens.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)).expect("/dev/urandom");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A Ray head in its own process group; dropping it stops every process of the group.
pub struct Head {
    /// Its Ray version, one of [`TESTED_RAY`].
    pub version: &'static str,
    /// Its dashboard's URL.
    pub address: String,
    /// The Ray token the head requires, if any.
    pub token: Option<String>,
    /// The GCS port, which other nodes join.
    pub gcs: u16,
    child: Mutex<Child>,
    temp_dir: PathBuf,
}

impl Head {
    /// Starts `ray start --head --block` from the venv `bin`, on the ports of Ray `version`'s
    /// [`Role::Head`], once no other head of this process is starting. On a loaded machine
    /// Ray's own start-up deadlines can pass (Ray 2.46: "Failed to start the dashboard"): a
    /// failed start is retried once, with its log shown.
    pub fn start(version: &'static str, bin: &Path) -> Result<Head, String> {
        Head::start_with(version, bin, &[])
    }

    /// [`Head::start`] with extra variables in the environment of every Ray process; a Ray
    /// with token authentication requires [`test_token`].
    pub fn start_with(version: &'static str, bin: &Path, env: &[(&str, String)]) -> Result<Head, String> {
        let token = has_token_auth(version).then(test_token);
        Head::start_as(Role::Head, version, bin, env, token)
    }

    /// [`Head::start_with`] on the ports of `role`, requiring `token` when one is given
    /// (`RAY_AUTH_MODE=token`).
    pub fn start_as(role: Role, version: &'static str, bin: &Path, env: &[(&str, String)], token: Option<&str>) -> Result<Head, String> {
        let mut env = env.to_vec();
        if let Some(token) = token {
            env.extend([("RAY_AUTH_MODE", "token".to_owned()), ("RAY_AUTH_TOKEN", token.to_owned())]);
        }
        let env = &env[..];
        let base = port_block(version, role)?;
        let log = std::env::temp_dir().join(format!("gkerl-head-{}-{base}.log", std::process::id()));
        // One head starts at a time: two starting at once on a loaded 2-core machine miss Ray's
        // own start-up deadlines.
        static STARTING: Mutex<()> = Mutex::new(());
        let _one_at_a_time = STARTING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match Head::start_once(version, bin, base, env, &log) {
            Ok(head) => Ok(head),
            Err(first) => {
                eprintln!("ray {version} did not start ({first}); retrying once. Its log:\n{}", tail(&log));
                Head::start_once(version, bin, base, env, &log)
                    .map_err(|second| format!("{second} (twice; the first time: {first}). Its log:\n{}", tail(&log)))
            }
        }
    }

    fn start_once(version: &'static str, bin: &Path, base: u16, env: &[(&str, String)], log_path: &Path) -> Result<Head, String> {
        // Unix socket paths must stay short, so not under target/.
        let temp_dir = PathBuf::from(format!("/tmp/gkerl-{}-{base}", std::process::id()));
        let [dashboard, gcs, client_server, agent] = fixed_ports(base)?;
        let args = [
            "--head".to_owned(),
            "--include-dashboard=true".to_owned(),
            "--num-cpus=4".to_owned(),
            "--dashboard-host=127.0.0.1".to_owned(),
            format!("--dashboard-port={dashboard}"),
            format!("--port={gcs}"),
            format!("--ray-client-server-port={client_server}"),
            format!("--dashboard-agent-listen-port={agent}"),
            format!("--temp-dir={}", temp_dir.display()),
        ];
        let child =
            ray_start(bin, &args, worker_ports(base), env, log_path, None).map_err(|e| format!("cannot start ray {version}: {e}"))?;
        let token = env.iter().find(|(k, _)| *k == "RAY_AUTH_TOKEN").map(|(_, v)| v.clone());
        let head = Head { version, address: format!("http://127.0.0.1:{dashboard}"), token, gcs, child: Mutex::new(child), temp_dir };
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            // The dashboard answers before its agent (which runs the jobs) listens: wait for both.
            if head.get("/api/version").is_some_and(|body| body.contains(version)) && TcpStream::connect(("127.0.0.1", agent)).is_ok() {
                return Ok(head);
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        Err(format!("ray {version} did not answer /api/version, or its agent did not listen on {agent}, within 120 s"))
    }
}

impl Drop for Head {
    fn drop(&mut self) {
        if let Ok(mut child) = self.child.lock() {
            stop_group(&mut child);
        }
        let _ = std::fs::remove_dir_all(&self.temp_dir);
    }
}

/// SIGTERM to the process group, SIGKILL after 15 s.
fn stop_group(child: &mut Child) {
    let group = format!("-{}", child.id());
    // The group may be gone already (stopped before): nothing to say then.
    let _ = Command::new("kill").args(["-TERM", "--", &group]).stderr(std::process::Stdio::null()).status();
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = Command::new("kill").args(["-KILL", "--", &group]).stderr(std::process::Stdio::null()).status();
    let _ = child.wait();
}

/// `ray start --block` from the venv `bin` with `args`, its own worker ports and `env`, logging
/// to `log`, in a process group of its own; `own_disk`: (a folder, the head's temp dir) for a
/// node that sees the folder in place of the head's temp dir ([`Node::join`]).
fn ray_start(
    bin: &Path,
    args: &[String],
    worker_ports: std::ops::Range<u16>,
    env: &[(&str, String)],
    log: &Path,
    own_disk: Option<(&Path, &Path)>,
) -> Result<Child, String> {
    use std::os::unix::process::CommandExt as _;
    let log = std::fs::File::create(log).map_err(|e| e.to_string())?;
    let ray = bin.join("ray");
    let mut command = match own_disk {
        // In a mount namespace of its own, where the folder is bind-mounted over the head's
        // temp dir, as a second machine's disk would be.
        Some((folder, head_temp)) => {
            let mut command = Command::new("unshare");
            command
                .args([
                    "--mount",
                    "--propagation",
                    "private",
                    "--",
                    "sh",
                    "-c",
                    r#"mount --bind "$1" "$2" || exit 1; shift 2; exec "$@""#,
                    "sh",
                ])
                .arg(folder)
                .arg(head_temp)
                .arg(&ray);
            command
        }
        None => Command::new(&ray),
    };
    command
        .args(["start", "--block", "--disable-usage-stats"])
        .args(args)
        .arg(format!("--min-worker-port={}", worker_ports.start))
        .arg(format!("--max-worker-port={}", worker_ports.end))
        .env("RAY_USAGE_STATS_ENABLED", "0")
        // A job's `python` is the venv's, as in an image whose Ray is on PATH.
        .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .map_err(|e| e.to_string())
}

/// A second Ray node on this machine, joined to a head (`ray start --address`), in its own
/// process group: dropping or [`Node::stop`]ping it takes the node away as a lost machine would.
///
/// Ray gives a joined node the head's temp dir (2.46 ignores `--temp-dir` without `--head`), so
/// on one machine both nodes' runtime-env agents would keep a job's `working_dir` in the same
/// folder; since ray-project/ray#49313 (Ray 2.41) each replaces a cached copy it sets up, and
/// the node's could delete the folder a driver on the head had just started in ("getcwd()
/// failed"). Where this machine allows a mount namespace, the node has a disk of its own.
pub struct Node {
    child: Mutex<Child>,
    /// The folder the node sees as the head's temp dir, removed with it.
    disk: Option<PathBuf>,
}

impl Node {
    /// Joins `head` with 2 CPUs, its own ports and `extra` arguments (`--resources=…`), and
    /// waits until the head counts `nodes` alive.
    pub fn join(head: &Head, bin: &Path, env: &[(&str, String)], extra: &[String], nodes: usize) -> Result<Node, String> {
        let base = port_block(head.version, Role::Node)?;
        let [agent, ..] = fixed_ports(base)?;
        // An address of its own, as a second machine would have: Ray tells nodes apart by
        // address when it finds the node a driver runs on.
        let mut args = vec![
            "--num-cpus=2".to_owned(),
            format!("--address=127.0.0.1:{}", head.gcs),
            "--node-ip-address=127.0.0.2".to_owned(),
            format!("--dashboard-agent-listen-port={agent}"),
        ];
        args.extend_from_slice(extra);
        let log = std::env::temp_dir().join(format!("gkerl-node-{}-{}.log", std::process::id(), head.version));
        // A node of a token-protected cluster holds the token, as KubeRay gives it to workers.
        let mut env = env.to_vec();
        if let Some(token) = &head.token {
            env.extend([("RAY_AUTH_MODE", "token".to_owned()), ("RAY_AUTH_TOKEN", token.clone())]);
        }
        // A folder per join: a node replaced by the next takes only its own away.
        static JOINS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let join = JOINS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let disk = own_disks().then(|| PathBuf::from(format!("{}-node-{join}", head.temp_dir.display())));
        if let Some(disk) = &disk {
            std::fs::create_dir_all(disk).map_err(|e| format!("cannot create {}: {e}", disk.display()))?;
            std::fs::create_dir_all(&head.temp_dir).map_err(|e| format!("cannot create {}: {e}", head.temp_dir.display()))?;
        }
        let own_disk = disk.as_deref().map(|disk| (disk, head.temp_dir.as_path()));
        let child = ray_start(bin, &args, worker_ports(base), &env, &log, own_disk)
            .map_err(|e| format!("cannot join ray {}: {e}", head.version))?;
        let node = Node { child: Mutex::new(child), disk };
        head.wait_for_nodes(nodes, Duration::from_secs(120))?;
        Ok(node)
    }

    /// Stops the node's processes; the head marks it dead.
    pub fn stop(&self) {
        if let Ok(mut child) = self.child.lock() {
            stop_group(&mut child);
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop();
        if let Some(disk) = &self.disk {
            let _ = std::fs::remove_dir_all(disk);
        }
    }
}

/// Whether a joined node can have a disk of its own: a private mount namespace with a bind
/// mount is allowed here (root, or a container that grants it).
fn own_disks() -> bool {
    static ALLOWED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ALLOWED.get_or_init(|| {
        let probe = std::env::temp_dir().join(format!("gkerl-mount-probe-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&probe);
        let allowed = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "--", "mount", "--bind"])
            .arg(&probe)
            .arg(&probe)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        let _ = std::fs::remove_dir(&probe);
        allowed
    })
}

impl Node {
    /// Slows the node down from outside Ray, as a noisy neighbour or a starved VM would: its
    /// processes are stopped for `stopped` of every 100 ms (SIGSTOP and SIGCONT, as cpulimit
    /// does) until the [`Throttle`] is dropped. Every descendant of the node's `ray start`,
    /// found again each period: Ray 2.60 starts its workers in process groups of their own.
    pub fn throttle(&self, stopped: f64) -> Throttle {
        let root = self.child.lock().map(|c| c.id()).unwrap_or_default();
        let running = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let period = Duration::from_millis(100);
        let off = period.mul_f64(stopped.clamp(0.0, 0.95));
        let thread = {
            let running = running.clone();
            std::thread::spawn(move || {
                let signal = |pids: &[u32], signal| {
                    for pid in pids.iter().filter_map(|p| rustix::process::Pid::from_raw(*p as i32)) {
                        let _ = rustix::process::kill_process(pid, signal);
                    }
                };
                while running.load(std::sync::atomic::Ordering::Relaxed) {
                    let pids = descendants(root);
                    signal(&pids, rustix::process::Signal::STOP);
                    std::thread::sleep(off);
                    signal(&pids, rustix::process::Signal::CONT);
                    std::thread::sleep(period - off);
                }
            })
        };
        Throttle { running, thread: Some(thread) }
    }
}

/// `root` and every process below it, from each process's parent in `/proc/<pid>/stat`.
fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                    let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
                    // After the command's `)` (which may itself hold `)`): state, then the parent.
                    let parent = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
                    Some((pid, parent))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut found = vec![root];
    let mut next = 0;
    while next < found.len() {
        let parent = found[next];
        found.extend(parents.iter().filter(|(_, p)| *p == parent).map(|(pid, _)| *pid));
        next += 1;
    }
    found
}

/// A node slowed down by [`Node::throttle`]; dropping it lets the node run freely again.
pub struct Throttle {
    running: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Throttle {
    fn drop(&mut self) {
        self.running.store(false, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Head {
    /// Waits until Ray's state API lists exactly `count` alive nodes.
    pub fn wait_for_nodes(&self, count: usize, within: Duration) -> Result<(), String> {
        let deadline = Instant::now() + within;
        let mut alive = None;
        while Instant::now() < deadline {
            alive = self.get("/api/v0/nodes?limit=100").map(|body| body.matches("\"ALIVE\"").count());
            if alive == Some(count) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        Err(format!("ray {} had {alive:?} alive nodes, not {count}, after {} s", self.version, within.as_secs()))
    }
}

/// The last 40 lines of a log.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

impl Head {
    /// [`http_get`] with the head's token.
    pub fn get(&self, path: &str) -> Option<String> {
        http_get(&self.address, path, self.token.as_deref())
    }
}

/// A plain HTTP/1.0 GET, to wait for the head without the code under test; with `token`, as
/// `Authorization: Bearer`.
pub fn http_get(address: &str, path: &str, token: Option<&str>) -> Option<String> {
    let host = address.strip_prefix("http://")?;
    let mut stream = TcpStream::connect(host).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let authorization = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {host}\r\nUser-Agent: test\r\n{authorization}\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.lines().next()?;
    status.split_whitespace().nth(1).is_some_and(|code| code == "200").then_some(response)
}

/// A plain HTTP/1.0 request with a JSON body (`POST`, `PUT`), with `token`: the status code and
/// the body, as another client of the Jobs API (not gke-rl) would send it.
pub fn http_send(address: &str, method: &str, path: &str, body: &str, token: Option<&str>) -> Option<(u16, String)> {
    let host = address.strip_prefix("http://")?;
    let mut stream = TcpStream::connect(host).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let authorization = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: {host}\r\nUser-Agent: test\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{authorization}\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let code = response.lines().next()?.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, response.split_once("\r\n\r\n").map_or_else(String::new, |(_, body)| body.to_owned())))
}

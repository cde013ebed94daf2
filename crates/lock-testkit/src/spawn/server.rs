//! A real `redis-server` for tests: spawned from PATH on a free loopback port, killed on
//! drop. `NXLOCK_REDIS_URL` points tests at an existing server instead.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Environment variable naming an existing server to test against instead of spawning one.
pub const URL_VAR: &str = "NXLOCK_REDIS_URL";
/// Environment variable that turns "no redis-server available" from a skip into a failure
/// when set to `1` (what CI sets); any other value, or none, lets such tests skip loudly.
pub const REQUIRE_VAR: &str = "NXLOCK_REQUIRE_REDIS";

/// The Redis version the `redis-server` on PATH answers as, from `redis-server
/// --version` (`Redis server v=7.0.15 …`, or `Valkey server v=8.0.1 …` where Valkey
/// stands in): what the harnesses of spawned servers are judged against. `None` without
/// a usable binary.
pub fn installed_version() -> Option<lock_core::RedisVersion> {
    version_of(installed_line()?)
}

/// The server on PATH as it names itself (`Redis 7.0.15`, `Valkey 8.0.1`), from
/// `redis-server --version`; `None` without a usable binary.
pub fn installed_server() -> Option<String> {
    let (product, number) = product_and_number(installed_line()?)?;
    Some(format!("{product} {number}"))
}

/// What `redis-server --version` prints, read once per process.
fn installed_line() -> Option<&'static str> {
    static LINE: OnceLock<Option<String>> = OnceLock::new();
    LINE.get_or_init(|| {
        let out = Command::new("redis-server")
            .arg("--version")
            .output()
            .ok()?;
        Some(String::from_utf8_lossy(&out.stdout).into_owned())
    })
    .as_deref()
}

/// The product and version number a `redis-server --version` line names.
fn product_and_number(line: &str) -> Option<(&str, &str)> {
    let product = line.split_whitespace().next()?;
    let number = line
        .split_whitespace()
        .find_map(|word| word.strip_prefix("v="))?;
    Some((product, number))
}

/// The version a `redis-server --version` line names.
fn version_of(line: &str) -> Option<lock_core::RedisVersion> {
    let (product, number) = product_and_number(line)?;
    let field = if product == "Valkey" {
        "valkey_version"
    } else {
        "redis_version"
    };
    lock_core::RedisVersion::from_info(&format!("{field}:{number}"))
}

/// Whether real-Redis tests must run: `NXLOCK_REQUIRE_REDIS=1`. The one place that reads
/// the variable.
pub fn redis_required() -> bool {
    std::env::var(REQUIRE_VAR).as_deref() == Ok("1")
}

/// A real-Redis test (`what`) cannot run (`why`): panics when Redis is required,
/// otherwise says so loudly and lets the caller skip.
pub fn skip_or_fail(what: &str, why: &str) {
    if redis_required() {
        panic!("{REQUIRE_VAR}=1 but {what} cannot run: {why}");
    }
    announce_skip(what, why);
}

/// A `redis-server` child process on `127.0.0.1:<port>`, without persistence, working in
/// a temporary directory of its own (removed when dropped), so that nothing it writes
/// (a replica's `dump.rdb`, an append-only file) lands in the checkout.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    /// Arguments after the defaults (`--replicaof …`, a config file…).
    extra: Vec<String>,
    dir: tempfile::TempDir,
    /// The server binary: `redis-server` from PATH unless told another.
    binary: std::path::PathBuf,
    /// The CPUs it is kept on, across restarts ([`RedisServer::keep_on_cpus`]).
    cpus: Option<Vec<usize>>,
}

/// Where real-Redis tests should run.
#[derive(Debug)]
pub enum RedisTarget {
    /// A server this process spawned (killed when this value is dropped).
    Spawned(RedisServer),
    /// An existing server from `NXLOCK_REDIS_URL`.
    External(String),
}

/// The server every test of this process may share (see [`RedisTarget::shared`]), and
/// the watchdog that stops it when the process ends.
struct ProcessServer {
    server: RedisServer,
    _watchdog: Child,
}

impl ProcessServer {
    /// Spawns the server and its watchdog: a shell reading a pipe from this process. A
    /// static is never dropped, so the server cannot be killed on drop; the pipe closes
    /// when this process ends, however it ends, and the shell then kills the server and
    /// removes its directory.
    fn spawn() -> Result<Self, String> {
        let server = RedisServer::spawn()?;
        let pid = child_id(&server.child).to_string();
        let watchdog = Command::new("sh")
            .args([
                "-c",
                r#"cat >/dev/null; kill -9 "$1"; rm -rf "$2""#,
                "watchdog",
                &pid,
            ])
            .arg(server.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run sh for the server's watchdog: {e}"))?;
        Ok(Self {
            server,
            _watchdog: watchdog,
        })
    }
}

impl RedisTarget {
    /// The URL of a `redis-server` shared by every caller in this process: `NXLOCK_REDIS_URL`
    /// if set, else one server spawned at the first call and stopped when the process ends.
    /// For tests that namespace their keys and leave the server as they found it (the
    /// conformance cases), which then run side by side on one server, as they do on an
    /// external one; a test that kills, restarts or flushes its server spawns its own.
    ///
    /// # Panics
    ///
    /// As [`RedisTarget::from_env`].
    pub fn shared() -> Result<String, String> {
        if let Ok(url) = std::env::var(URL_VAR) {
            return Ok(url);
        }
        static SHARED: OnceLock<Result<ProcessServer, String>> = OnceLock::new();
        match SHARED.get_or_init(ProcessServer::spawn) {
            Ok(process) => Ok(process.server.url()),
            Err(why) if redis_required() => {
                panic!("{REQUIRE_VAR}=1 but no Redis server is available: {why}")
            }
            Err(why) => Err(why.clone()),
        }
    }

    /// The server's URL.
    pub fn url(&self) -> String {
        match self {
            RedisTarget::Spawned(server) => server.url(),
            RedisTarget::External(url) => url.clone(),
        }
    }

    /// The target tests should use: `NXLOCK_REDIS_URL` if set, else a freshly spawned
    /// server. `Err` carries why neither is available (then tests skip, loudly).
    ///
    /// # Panics
    ///
    /// When no server is available and `NXLOCK_REQUIRE_REDIS=1`: CI must not pass
    /// without having run the real-Redis tests.
    pub fn from_env() -> Result<Self, String> {
        if let Ok(url) = std::env::var(URL_VAR) {
            return Ok(RedisTarget::External(url));
        }
        match RedisServer::spawn() {
            Ok(server) => Ok(RedisTarget::Spawned(server)),
            Err(why) if redis_required() => {
                panic!("{REQUIRE_VAR}=1 but no Redis server is available: {why}")
            }
            Err(why) => Err(why),
        }
    }
}

/// Prints a line the test runner does not capture, so a skipped real-Redis test is seen.
pub fn announce_skip(what: &str, why: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED {what}: {why}. Install redis-server (apt-get install redis-server) or set \
         {URL_VAR}; {REQUIRE_VAR}=1 makes this a failure. ***"
    );
}

pub(crate) fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// Whether the server answering on `port` is process `pid`: `INFO server` names its
/// `process_id`. A PING alone is not enough: two spawns may be given the same free port,
/// and the one that loses the race exits while the winner answers for it.
pub(crate) fn answers_as(port: u16, pid: u32) -> bool {
    let Ok(mut stream) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    if stream.write_all(b"INFO server\r\n").is_err() {
        return false;
    }
    // A bulk reply: `$<length>\r\n<text>\r\n`; read until the whole text is in.
    let mut reply = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return false,
            Ok(n) => reply.extend_from_slice(&chunk[..n]),
        }
        let Some(header_end) = reply.windows(2).position(|w| w == b"\r\n") else {
            continue;
        };
        let Some(length) = std::str::from_utf8(&reply[..header_end])
            .ok()
            .and_then(|header| header.strip_prefix('$')?.parse::<usize>().ok())
        else {
            return false;
        };
        if reply.len() >= header_end + 2 + length {
            let text = String::from_utf8_lossy(&reply[header_end + 2..header_end + 2 + length]);
            return text
                .lines()
                .any(|line| line.strip_prefix("process_id:") == Some(&pid.to_string()));
        }
    }
}

fn child_id(child: &Option<Child>) -> u32 {
    child.as_ref().map_or(0, Child::id)
}

/// A fresh temporary directory for one server.
fn working_dir() -> Result<tempfile::TempDir, String> {
    tempfile::Builder::new()
        .prefix("nxlock-redis-")
        .tempdir()
        .map_err(|e| format!("no temporary directory for redis-server: {e}"))
}

impl RedisServer {
    /// Spawns `redis-server` from PATH on a free port and waits until it answers as itself
    /// (not another process on that port).
    pub fn spawn() -> Result<Self, String> {
        Self::spawn_with(&[])
    }

    /// [`RedisServer::spawn`] with more arguments (`--replicaof 127.0.0.1 6380`,
    /// `--repl-diskless-sync-delay 0`…); they come after the defaults, so they win.
    pub fn spawn_with(extra: &[String]) -> Result<Self, String> {
        Self::spawn_from("redis-server", extra)
    }

    /// [`RedisServer::spawn_with`] from another binary: a `valkey-server`, say, beside the
    /// `redis-server` the other tests use.
    pub fn spawn_from(
        binary: impl Into<std::path::PathBuf>,
        extra: &[String],
    ) -> Result<Self, String> {
        let binary = binary.into();
        let mut last_error = String::new();
        // The port is free when we look and taken when redis binds it; rarely another
        // process takes it in between, so try a few.
        for _ in 0..3 {
            let port = free_port().map_err(|e| format!("no free loopback port: {e}"))?;
            let mut server = RedisServer {
                child: None,
                port,
                extra: extra.to_vec(),
                dir: working_dir()?,
                binary: binary.clone(),
                cpus: None,
            };
            match server.start() {
                Ok(()) => return Ok(server),
                Err(e) => last_error = e,
            }
        }
        Err(last_error)
    }

    /// [`RedisServer::spawn_with`] on `port` (one try: the caller chose the port).
    pub fn spawn_on(port: u16, extra: &[String]) -> Result<Self, String> {
        let mut server = RedisServer {
            child: None,
            port,
            extra: extra.to_vec(),
            dir: working_dir()?,
            binary: "redis-server".into(),
            cpus: None,
        };
        server.start()?;
        Ok(server)
    }

    fn start(&mut self) -> Result<(), String> {
        // A config file must come first on the command line.
        let (file, options): (Vec<&String>, Vec<&String>) =
            self.extra.iter().partition(|arg| arg.ends_with(".conf"));
        let child = Command::new(&self.binary)
            .args(file)
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .args(options)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.binary.display()))?;
        self.child = Some(child);
        if let Some(cpus) = &self.cpus {
            // Placed before it serves anything, so every command it answers ran there.
            if let Err(e) = super::cpus::keep_on(child_id(&self.child), cpus) {
                self.kill();
                return Err(e);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if answers_as(self.port, child_id(&self.child)) {
                return Ok(());
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(format!("redis-server exited at start: {status}"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill();
        Err("redis-server did not answer within 10 s".into())
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Keeps the server on `cpus` from now on, a restarted process included (Linux).
    pub fn keep_on_cpus(&mut self, cpus: &[usize]) -> Result<(), String> {
        if let Some(pid) = self.pid() {
            super::cpus::keep_on(pid, cpus)?;
        }
        self.cpus = Some(cpus.to_vec());
        Ok(())
    }

    /// Whether it runs: spawned and not killed since.
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Kills the server (SIGKILL: no shutdown, everything it held is lost).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts a new, empty server on the same port (after [`RedisServer::kill`]).
    pub fn restart(&mut self) -> Result<(), String> {
        self.kill();
        self.start()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod version_tests {
    use super::version_of;
    use lock_core::RedisVersion;

    #[test]
    fn version_lines_name_their_profile() {
        let redis =
            "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=4a8ab2f3";
        assert_eq!(version_of(redis), Some(RedisVersion::V7_0));
        let valkey = "Valkey server v=8.0.1 sha=00000000:0 malloc=libc bits=64 build=4b0c1e7d";
        assert_eq!(version_of(valkey), Some(RedisVersion::V7_4));
        assert_eq!(version_of("nonsense"), None);
    }
}

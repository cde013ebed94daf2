//! `nxlock serve` as its own process, for the tests that drive the binary or measure the
//! process (its memory, its CPU), and a blocking client for them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::Duration;

use super::raw::{reply_end, request};

/// A running `nxlock serve --port 0`, killed on drop.
pub struct Served {
    child: Child,
    /// The port it listens on.
    pub port: u16,
    stderr: BufReader<ChildStderr>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// `nxlock serve --port 0 EXTRA…`.
    pub fn start(extra: &[&str]) -> Served {
        let mut command = Command::new(env!("CARGO_BIN_EXE_nxlock"));
        command.args(["serve", "--port", "0"]).args(extra);
        Served::spawn(command).expect("start nxlock serve")
    }

    /// `WRAPPER… nxlock serve --port 0` (under `prlimit`, say); the error if the
    /// wrapper cannot run.
    pub fn start_under(wrapper: &[&str]) -> std::io::Result<Served> {
        let mut command = Command::new(wrapper[0]);
        command
            .args(&wrapper[1..])
            .args([env!("CARGO_BIN_EXE_nxlock"), "serve", "--port", "0"]);
        Served::spawn(command)
    }

    fn spawn(mut command: Command) -> std::io::Result<Served> {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line)?;
        let port = line
            .trim()
            .rsplit(':')
            .next()
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("nxlock serve printed no URL: {line:?}"));
        let stderr = BufReader::new(child.stderr.take().unwrap());
        Ok(Served {
            child,
            port,
            stderr,
        })
    }

    /// The first `lines` lines it printed on stderr: its start-up warnings come before
    /// the listening line, so they are there to read. (Reading more than it printed
    /// waits for it to print more.)
    pub fn warnings(&mut self, lines: usize) -> String {
        let mut text = String::new();
        for _ in 0..lines {
            if self.stderr.read_line(&mut text).unwrap_or(0) == 0 {
                break;
            }
        }
        text
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A blocking connection to it.
    pub fn connect(&self) -> TcpStream {
        connect(self.port)
    }
}

/// A blocking connection to `127.0.0.1:port`, patient for 20 s per reply.
pub fn connect(port: u16) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream
}

/// Sends `bytes` and reads one whole reply.
pub fn exchange(stream: &mut TcpStream, bytes: &[u8]) -> Vec<u8> {
    stream.write_all(bytes).unwrap();
    let mut reply = Vec::new();
    let mut chunk = [0; 4096];
    while reply_end(&reply, 0) != Some(reply.len()) {
        let n = stream.read(&mut chunk).unwrap();
        assert!(n > 0, "the server closed the connection");
        reply.extend_from_slice(&chunk[..n]);
    }
    reply
}

/// Sends the command `args` and reads its whole reply.
pub fn call(stream: &mut TcpStream, args: &[&[u8]]) -> Vec<u8> {
    exchange(stream, &request(args))
}

/// A field of `/proc/PID/status` given in kB (`VmRSS:`, `VmHWM:`), in MB.
pub fn status_mb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        / 1024
}

/// CPU seconds process `pid` has used (user and system), from `/proc/PID/stat`.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command's closing parenthesis; utime and stime are 14th and 15th.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

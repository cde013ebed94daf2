//! A large value in `nxlock serve`: read without a buffer that doubles as it grows, and
//! its memory handed back to the system once it is deleted, as redis-server hands it
//! back. Measured on the binary, whose allocator settings are part of what is tested.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Resident and peak memory of process `pid`, in MB.
fn memory_mb(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> u64 {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap();
        line.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
            / 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn reply(stream: &mut TcpStream) -> Vec<u8> {
    let mut buffer = vec![0; 64];
    let n = stream.read(&mut buffer).unwrap();
    buffer.truncate(n);
    buffer
}

#[test]
fn a_large_value_is_read_once_and_its_memory_goes_back_after_del() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nxlock"))
        .args(["serve", "--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start nxlock serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().rsplit(':').next().unwrap().parse().unwrap();
    let served = Served(child);
    let pid = served.0.id();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let size = 128 << 20;
    stream
        .write_all(format!("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n${size}\r\n").as_bytes())
        .unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..(size >> 20) {
        stream.write_all(&chunk).unwrap();
    }
    stream.write_all(b"\r\n").unwrap();
    assert_eq!(reply(&mut stream), b"+OK\r\n");
    let (stored, peak) = memory_mb(pid);
    assert!(stored >= 128, "the value is held: {stored} MB");
    // A read buffer that doubles while the value arrives peaked past three times it.
    assert!(peak <= 128 * 5 / 2, "peak {peak} MB for a 128 MB value");
    stream.write_all(b"DEL big\r\n").unwrap();
    assert_eq!(reply(&mut stream), b":1\r\n");
    let (after, _) = memory_mb(pid);
    assert!(after < 64, "{after} MB still held after DEL");
}

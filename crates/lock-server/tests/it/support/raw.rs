//! Raw RESP for tests that talk to a server byte by byte, and a client that knows when a
//! reply (or the server's state) is complete instead of waiting for time to pass.

#![allow(dead_code)]

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a test waits for a reply or a state the server must reach before it fails.
/// A correct server needs microseconds; this only bounds a broken one.
pub const PATIENCE: Duration = Duration::from_secs(5);

/// `args` as a RESP request (an array of bulk strings).
pub fn request<S: AsRef<[u8]>>(args: &[S]) -> Vec<u8> {
    let mut bytes = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        let arg = arg.as_ref();
        bytes.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        bytes.extend_from_slice(arg);
        bytes.extend_from_slice(b"\r\n");
    }
    bytes
}

/// Where the reply starting at `at` ends, once all of it is in `buffer` (RESP2 and the
/// RESP3 types a server sends here). Read without recursion: a script's reply may nest
/// thousands of arrays deep.
pub fn reply_end(buffer: &[u8], mut at: usize) -> Option<usize> {
    let mut pending: u64 = 1;
    while pending > 0 {
        pending -= 1;
        let line_end = at + buffer.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        // A line reply's text need not be UTF-8 (an error may quote a client's bytes).
        let header = std::str::from_utf8(&buffer[at + 1..line_end]);
        at = match buffer[at] {
            b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => line_end + 2,
            b'$' | b'=' => {
                let length: i64 = header.ok()?.parse().ok()?;
                if length < 0 {
                    line_end + 2
                } else {
                    let end = line_end + 2 + length as usize + 2;
                    if buffer.len() < end {
                        return None;
                    }
                    end
                }
            }
            b'*' | b'>' | b'%' | b'~' => {
                let count: i64 = header.ok()?.parse().ok()?;
                let per = if buffer[at] == b'%' { 2 } else { 1 };
                pending += count.max(0) as u64 * per;
                line_end + 2
            }
            _ => return None,
        };
    }
    Some(at)
}

/// A raw connection that sends requests and reads back whole replies.
pub struct Raw {
    pub stream: TcpStream,
    buffer: Vec<u8>,
}

impl Raw {
    pub async fn connect(addr: &str) -> Raw {
        Raw {
            stream: TcpStream::connect(addr).await.expect("connect"),
            buffer: Vec::new(),
        }
    }

    pub async fn send_bytes(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.stream.write_all(bytes).await.unwrap();
        self.read_reply().await
    }

    pub async fn command(&mut self, args: &[&str]) -> Vec<u8> {
        self.send_only(args).await;
        self.read_reply().await
    }

    /// Sends a command without waiting for its reply.
    pub async fn send_only(&mut self, args: &[&str]) {
        self.stream.write_all(&request(args)).await.unwrap();
    }

    /// One reply, or what arrived before the connection closed (then empty if nothing).
    pub async fn read_reply(&mut self) -> Vec<u8> {
        loop {
            if let Some(end) = reply_end(&self.buffer, 0) {
                return self.buffer.drain(..end).collect();
            }
            let read = tokio::time::timeout(PATIENCE, self.stream.read_buf(&mut self.buffer))
                .await
                .expect("a reply within the test's patience");
            if read.unwrap_or(0) == 0 {
                return std::mem::take(&mut self.buffer);
            }
        }
    }

    /// Every reply (and push) up to and including the first one that contains `marker`:
    /// send a request answered with the marker after the ones under test, and this reads
    /// exactly what they caused, however long the server takes.
    pub async fn read_through(&mut self, marker: &[u8]) -> Vec<u8> {
        let mut received = Vec::new();
        loop {
            let reply = self.read_reply().await;
            assert!(!reply.is_empty(), "the connection closed before {marker:?}");
            let done = reply.windows(marker.len()).any(|w| w == marker);
            received.extend_from_slice(&reply);
            if done {
                return received;
            }
        }
    }

    /// Ends the request stream and reads everything the server answers before it closes
    /// the connection: what a request alone gets, even when that is nothing.
    pub async fn finish(mut self) -> Vec<u8> {
        self.stream.shutdown().await.unwrap();
        let mut received = std::mem::take(&mut self.buffer);
        tokio::time::timeout(PATIENCE, self.stream.read_to_end(&mut received))
            .await
            .expect("the server closes a connection whose client has finished")
            .unwrap();
        received
    }

    /// Waits until `INFO clients` reports `count` clients blocked (in BLPOP), asking the
    /// server rather than guessing how long a request takes to arrive.
    pub async fn await_blocked(&mut self, count: usize) {
        self.await_clients_field("blocked_clients", count).await;
    }

    /// Waits until `INFO clients` reports `count` connected clients (this one included).
    pub async fn await_connected(&mut self, count: usize) {
        self.await_clients_field("connected_clients", count).await;
    }

    async fn await_clients_field(&mut self, field: &str, count: usize) {
        let wanted = format!("{field}:{count}\r\n");
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let info = self.command(&["INFO", "clients"]).await;
            if String::from_utf8_lossy(&info).contains(&wanted) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "never reached {wanted:?}: {}",
                String::from_utf8_lossy(&info)
            );
            tokio::task::yield_now().await;
        }
    }
}

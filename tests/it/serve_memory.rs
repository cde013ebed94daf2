//! A large value in `nxlock serve`: read without a buffer that doubles as it grows,
//! held once (not copied out of the read buffer, nor into the store), and its memory
//! handed back to the system once it is deleted, as redis-server hands it back. Measured on the binary, whose allocator settings are part of what is tested.

use std::io::Write;

use crate::support::served::{Served, exchange, status_mb};

/// Resident and peak memory of process `pid`, in MB.
fn memory_mb(pid: u32) -> (u64, u64) {
    (status_mb(pid, "VmRSS:"), status_mb(pid, "VmHWM:"))
}

/// Sends the head of a SET of `args` arguments whose third is `size` bytes of `x`, and
/// those bytes, 1 MB at a time: all but the value's CRLF (and what follows it).
fn send_set_of(stream: &mut std::net::TcpStream, args: usize, size: usize) {
    stream
        .write_all(format!("*{args}\r\n$3\r\nSET\r\n$3\r\nbig\r\n${size}\r\n").as_bytes())
        .unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..(size >> 20) {
        stream.write_all(&chunk).unwrap();
    }
}

#[test]
fn a_large_value_is_read_once_and_its_memory_goes_back_after_del() {
    let served = Served::start(&[]);
    let pid = served.pid();
    let mut stream = served.connect();
    let size = 128 << 20;
    send_set_of(&mut stream, 3, size);
    // The value's last bytes, then its reply.
    assert_eq!(exchange(&mut stream, b"\r\n"), b"+OK\r\n");
    let (stored, peak) = memory_mb(pid);
    assert!(stored >= 128, "the value is held: {stored} MB");
    // The value is held once, even at the peak: the read buffer becomes the argument,
    // and SET stores that argument. (A read buffer that doubled while the value arrived
    // peaked past three times it; a copy out of the buffer, and another into the store,
    // at twice.) Redis's goal: within 1.3 times, over a base of a few MB.
    assert!(
        peak <= 128 * 13 / 10 + 20,
        "peak {peak} MB for a 128 MB value"
    );
    // The value read back whole: the reply's buffer is let go once written.
    stream.write_all(b"GET big\r\n").unwrap();
    let header = format!("${size}\r\n");
    let mut reply = vec![0; header.len() + size + 2];
    std::io::Read::read_exact(&mut stream, &mut reply).unwrap();
    assert!(reply.starts_with(header.as_bytes()) && reply.ends_with(b"x\r\n"));
    drop(reply);
    assert_eq!(exchange(&mut stream, b"DEL big\r\n"), b":1\r\n");
    let (after, _) = memory_mb(pid);
    assert!(after < 64, "{after} MB still held after DEL");
}

#[test]
fn a_large_value_with_options_after_it_and_its_parts_cost_no_second_copy() {
    let served = Served::start(&[]);
    let pid = served.pid();
    let mut stream = served.connect();
    let size: usize = 128 << 20;
    // The value is not the request's last argument: it is handed over all the same.
    send_set_of(&mut stream, 5, size);
    assert_eq!(
        exchange(&mut stream, b"\r\n$2\r\nEX\r\n$3\r\n100\r\n"),
        b"+OK\r\n"
    );
    assert_eq!(exchange(&mut stream, b"TTL big\r\n"), b":100\r\n");
    // The commands on part of the string change it where it lies.
    let grown = format!(":{}\r\n", size + 1).into_bytes();
    assert_eq!(exchange(&mut stream, b"APPEND big y\r\n"), grown);
    assert_eq!(exchange(&mut stream, b"SETRANGE big 0 z\r\n"), grown);
    assert_eq!(
        exchange(&mut stream, b"GETRANGE big 0 0\r\n"),
        b"$1\r\nz\r\n"
    );
    assert_eq!(
        exchange(&mut stream, b"SUBSTR big -1 -1\r\n"),
        b"$1\r\ny\r\n"
    );
    assert_eq!(exchange(&mut stream, b"TTL big\r\n"), b":100\r\n");
    let (stored, peak) = memory_mb(pid);
    assert!(stored >= 128, "the value is held: {stored} MB");
    // Redis peaks at the value and a few MB; a copy for any of these would be twice.
    assert!(
        peak <= 128 * 11 / 10 + 20,
        "peak {peak} MB for a 128 MB value"
    );
}

/// `used_memory_lua` from `INFO memory`, in MB.
fn lua_heap_mb(stream: &mut std::net::TcpStream) -> u64 {
    let info = crate::support::served::call(stream, &[b"INFO", b"memory"]);
    let info = String::from_utf8_lossy(&info);
    let bytes: u64 = info
        .lines()
        .find_map(|line| line.trim_end().strip_prefix("used_memory_lua:"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no used_memory_lua in {info}"));
    bytes >> 20
}

#[test]
fn script_flush_and_function_flush_give_back_the_lua_heap() {
    let served = Served::start(&[]);
    let mut stream = served.connect();
    // Each script leaves 40 MB of garbage the incremental collector has not reached.
    let garbage = b"local t = {} for i = 1, 40 do t[i] = string.rep('x', 1048576) .. i .. ARGV[1] end return 1";
    let library = b"#!lua name=big\nredis.register_function('big', function() local t = {} for i = 1, 40 do t[i] = string.rep('y', 1048576) .. i end return 1 end)";
    use crate::support::served::call;
    assert_eq!(
        call(&mut stream, &[b"EVAL", garbage, b"0", b"a"]),
        b":1\r\n"
    );
    assert!(
        lua_heap_mb(&mut stream) >= 40,
        "the garbage is there to give back"
    );
    assert_eq!(call(&mut stream, &[b"SCRIPT", b"FLUSH"]), b"+OK\r\n");
    let after_scripts = lua_heap_mb(&mut stream);
    assert!(
        after_scripts < 5,
        "{after_scripts} MB of Lua heap after SCRIPT FLUSH"
    );
    assert_eq!(
        call(&mut stream, &[b"FUNCTION", b"LOAD", library]),
        b"$3\r\nbig\r\n"
    );
    assert_eq!(call(&mut stream, &[b"FCALL", b"big", b"0"]), b":1\r\n");
    assert!(lua_heap_mb(&mut stream) >= 40);
    assert_eq!(call(&mut stream, &[b"FUNCTION", b"FLUSH"]), b"+OK\r\n");
    let after_functions = lua_heap_mb(&mut stream);
    assert!(
        after_functions < 5,
        "{after_functions} MB after FUNCTION FLUSH"
    );
}

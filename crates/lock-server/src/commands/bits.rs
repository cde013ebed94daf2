//! GETBIT, SETBIT, BITCOUNT and BITPOS, as Redis 7's `bitops.c` answers them (the BYTE
//! and BIT units included). Like the other commands on part of a string they work on the
//! value where it lies: SETBIT in the time of the byte it sets (and of the zeros that
//! grow the string to reach it), BITCOUNT and BITPOS in the time of their range.

use lock_core::Value;
use lock_memory::{Data, Keyspace, KeyspaceEvents};

use super::strings::{grow_zeroed, string_in_place as string};
use crate::protocol::args::{NOT_AN_INTEGER, SYNTAX_ERROR, integer};
use crate::state::context::Context;

/// The largest string a bit command makes: `proto-max-bulk-len`, 512 MB.
const MAX_BYTES: i64 = crate::protocol::request::MAX_BULK_LEN;

const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const BAD_BIT: &str = "ERR bit is not an integer or out of range";
const BIT_NOT_0_OR_1: &str = "ERR The bit argument must be 1 or 0.";

/// `getBitOffsetFromArgument`: a bit offset within the largest string.
fn bit_offset(arg: &[u8]) -> Result<usize, String> {
    match integer(arg) {
        Some(offset) if offset >= 0 && (offset >> 3) < MAX_BYTES => Ok(offset as usize),
        _ => Err(BAD_OFFSET.into()),
    }
}

/// The bit at `offset` (bit 0 is the first byte's most significant), 0 past the end.
fn bit_at(bytes: &[u8], offset: usize) -> u8 {
    bytes
        .get(offset >> 3)
        .map_or(0, |byte| (byte >> (7 - (offset & 7))) & 1)
}

pub(crate) fn getbit(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let offset = bit_offset(args[2])?;
    let bit = string(store, args[1])?.map_or(0, |bytes| bit_at(bytes, offset));
    Ok(Value::Int(i64::from(bit)))
}

pub(crate) fn setbit(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let offset = bit_offset(args[2])?;
    let on = match integer(args[3]) {
        Some(0) => false,
        Some(1) => true,
        _ => return Err(BAD_BIT.into()),
    };
    let byte = offset >> 3;
    let (old, dirty) = match string(store, args[1])? {
        None => {
            let mut bytes = vec![0; byte + 1];
            set_bit(&mut bytes, offset, on);
            store.put(args[1], Data::String(bytes), None);
            (0, true)
        }
        Some(bytes) => {
            let grown = grow_zeroed(bytes, byte + 1);
            let old = bit_at(bytes, offset);
            set_bit(bytes, offset, on);
            (old, grown || (old == 1) != on)
        }
    };
    // Redis signals a change only when the string grew or the bit flipped: a SETBIT
    // that changes nothing leaves a WATCH on the key unbroken.
    if dirty {
        store.changed(args[1]);
        store.notify(KeyspaceEvents::STRING, "setbit", args[1]);
    }
    Ok(Value::Int(i64::from(old)))
}

fn set_bit(bytes: &mut [u8], offset: usize, on: bool) {
    let mask = 1 << (7 - (offset & 7));
    if on {
        bytes[offset >> 3] |= mask;
    } else {
        bytes[offset >> 3] &= !mask;
    }
}

/// A range of a string's bits, inclusive, once BITCOUNT's or BITPOS's indexes are
/// resolved: `None` for an empty one.
fn resolve(start: i64, end: i64, in_bits: bool, len: usize) -> Option<(usize, usize)> {
    let total = if in_bits {
        (len as i64) << 3
    } else {
        len as i64
    };
    let start = if start < 0 { total + start } else { start }.max(0);
    let end = if end < 0 { total + end } else { end }
        .max(0)
        .min(total - 1);
    if start > end {
        return None;
    }
    Some(if in_bits {
        (start as usize, end as usize)
    } else {
        (start as usize * 8, end as usize * 8 + 7)
    })
}

/// BYTE or BIT, case-insensitively.
fn unit(arg: &[u8]) -> Result<bool, String> {
    if arg.eq_ignore_ascii_case(b"bit") {
        Ok(true)
    } else if arg.eq_ignore_ascii_case(b"byte") {
        Ok(false)
    } else {
        Err(SYNTAX_ERROR.into())
    }
}

/// The bits of `byte` inside the inclusive bit range `first..=last` of the string, for
/// the byte at index `at`.
fn in_range(at: usize, first: usize, last: usize) -> u8 {
    let mut mask = 0xFF_u8;
    if at == first >> 3 {
        mask &= 0xFF >> (first & 7);
    }
    if at == last >> 3 {
        mask &= 0xFF << (7 - (last & 7));
    }
    mask
}

pub(crate) fn bitcount(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    // Redis looks the key up first: a missing key counts 0 whatever the arguments.
    let Some(bytes) = string(store, args[1])? else {
        return Ok(Value::Int(0));
    };
    let (first, last) = match args.len() {
        2 if bytes.is_empty() => return Ok(Value::Int(0)),
        2 => (0, bytes.len() * 8 - 1),
        4 | 5 => {
            let start = integer(args[2]).ok_or(NOT_AN_INTEGER)?;
            let end = integer(args[3]).ok_or(NOT_AN_INTEGER)?;
            let in_bits = match args.get(4) {
                Some(arg) => unit(arg)?,
                None => false,
            };
            if start < 0 && end < 0 && start > end {
                return Ok(Value::Int(0));
            }
            match resolve(start, end, in_bits, bytes.len()) {
                Some(range) => range,
                None => return Ok(Value::Int(0)),
            }
        }
        _ => return Err(SYNTAX_ERROR.into()),
    };
    let (from, to) = (first >> 3, last >> 3);
    let edges = |at: usize| (bytes[at] & in_range(at, first, last)).count_ones() as i64;
    let count = if from == to {
        edges(from)
    } else {
        let middle = &bytes[from + 1..to];
        let (words, rest) = middle.split_at(middle.len() / 8 * 8);
        let ones = words
            .chunks_exact(8)
            .map(|word| u64::from_ne_bytes(word.try_into().expect("8 bytes")).count_ones() as i64)
            .sum::<i64>()
            + rest.iter().map(|b| b.count_ones() as i64).sum::<i64>();
        edges(from) + ones + edges(to)
    };
    Ok(Value::Int(count))
}

pub(crate) fn bitpos(
    store: &mut dyn Keyspace,
    args: &[&[u8]],
    _: Context,
) -> Result<Value, String> {
    let bit = match integer(args[2]) {
        None => return Err(NOT_AN_INTEGER.into()),
        Some(0) => 0,
        Some(1) => 1,
        Some(_) => return Err(BIT_NOT_0_OR_1.into()),
    };
    // A missing key is an endless string of zeros.
    let Some(bytes) = string(store, args[1])? else {
        return Ok(Value::Int(if bit == 1 { -1 } else { 0 }));
    };
    let (range, end_given) = match args.len() {
        3 => (resolve(0, -1, false, bytes.len()), false),
        4..=6 => {
            let start = integer(args[3]).ok_or(NOT_AN_INTEGER)?;
            let in_bits = match args.get(5) {
                Some(arg) => unit(arg)?,
                None => false,
            };
            let end = match args.get(4) {
                Some(arg) => integer(arg).ok_or(NOT_AN_INTEGER)?,
                None => -1,
            };
            (resolve(start, end, in_bits, bytes.len()), args.len() >= 5)
        }
        _ => return Err(SYNTAX_ERROR.into()),
    };
    // An empty range holds neither a 0 nor a 1.
    let Some((first, last)) = range else {
        return Ok(Value::Int(-1));
    };
    if let Some(position) = first_bit(bytes, first, last, bit) {
        return Ok(Value::Int(position as i64));
    }
    // No 1 is -1; no 0 is the bit after the range, as if the string went on in zeros,
    // unless the caller gave the range's end.
    Ok(Value::Int(if bit == 1 || end_given {
        -1
    } else {
        (last + 1) as i64
    }))
}

/// The first bit equal to `bit` in the inclusive bit range `first..=last`.
fn first_bit(bytes: &[u8], first: usize, last: usize, bit: u8) -> Option<usize> {
    // The byte a search for `bit` passes over whole.
    let skip = if bit == 1 { 0x00 } else { 0xFF };
    let found = |at: usize| {
        let byte = if bit == 1 { bytes[at] } else { !bytes[at] };
        let hits = byte & in_range(at, first, last);
        (hits != 0).then(|| at * 8 + hits.leading_zeros() as usize)
    };
    let (from, to) = (first >> 3, last >> 3);
    if let Some(position) = found(from) {
        return Some(position);
    }
    if from == to {
        return None;
    }
    let mut at = from + 1;
    // Whole words at a time over what cannot hold the bit.
    let skip_word = u64::from_ne_bytes([skip; 8]);
    while at + 8 <= to {
        let word = u64::from_ne_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        if word != skip_word {
            break;
        }
        at += 8;
    }
    (at..=to).find_map(found)
}

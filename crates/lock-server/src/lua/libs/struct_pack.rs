//! `struct`: Roberto Ierusalimschy's struct library as Redis ships it: `pack`, `unpack`
//! and `size` over formats such as `>I4`, `<hh`, `!4 i d`, `c0`, `s`. Native byte order
//! is little-endian and `long`, `size_t` and the widest alignment are 8 bytes, as on
//! x86-64.

use mlua::{Lua, MultiValue, Table, Value as LuaValue, Variadic};

use super::{bad_argument, check_bytes, check_number, lib_error};

const MAX_INT_SIZE: usize = 32;
const MAX_ALIGN: usize = 8;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Endian {
    Little,
    Big,
}

struct Header {
    endian: Endian,
    align: usize,
}

impl Default for Header {
    fn default() -> Self {
        Header {
            endian: Endian::Little,
            align: 1,
        }
    }
}

/// A format string, read option by option.
struct Format<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Format<'_> {
    fn next(&mut self) -> Option<u8> {
        let byte = *self.bytes.get(self.at).filter(|b| **b != 0)?;
        self.at += 1;
        Some(byte)
    }

    fn number(&mut self, lua: &Lua, default: usize) -> mlua::Result<usize> {
        if !self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut value: usize = 0;
        while let Some(digit) = self.bytes.get(self.at).filter(|b| b.is_ascii_digit()) {
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(usize::from(digit - b'0')))
                .filter(|v| *v <= i32::MAX as usize)
                .ok_or_else(|| lib_error(lua, "integral size overflow"))?;
            self.at += 1;
        }
        Ok(value)
    }

    /// `optsize`: how many bytes option `option` takes.
    fn size(&mut self, lua: &Lua, option: u8) -> mlua::Result<usize> {
        Ok(match option {
            b'B' | b'b' | b'x' => 1,
            b'H' | b'h' => 2,
            b'L' | b'l' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.number(lua, 1)?,
            b'i' | b'I' => {
                let size = self.number(lua, 4)?;
                if size > MAX_INT_SIZE {
                    return Err(lib_error(
                        lua,
                        format!("integral size {size} is larger than limit of {MAX_INT_SIZE}"),
                    ));
                }
                size
            }
            _ => 0,
        })
    }

    /// `controloptions`: byte order, alignment and spaces; anything else is an error.
    fn control(
        &mut self,
        lua: &Lua,
        option: u8,
        header: &mut Header,
        function: &str,
    ) -> mlua::Result<()> {
        match option {
            b' ' => {}
            b'>' => header.endian = Endian::Big,
            b'<' => header.endian = Endian::Little,
            b'!' => {
                let align = self.number(lua, MAX_ALIGN)?;
                if !align.is_power_of_two() {
                    return Err(lib_error(
                        lua,
                        format!("alignment {align} is not a power of 2"),
                    ));
                }
                header.align = align;
            }
            other => {
                return Err(bad_argument(
                    lua,
                    1,
                    function,
                    &format!("invalid format option '{}'", other as char),
                ));
            }
        }
        Ok(())
    }
}

/// `gettoalign`: padding before an element of `size` at `position`.
fn padding(position: usize, header: &Header, option: u8, size: usize) -> usize {
    if size == 0 || option == b'c' {
        return 0;
    }
    let size = size.min(header.align);
    (size - (position & (size - 1))) & (size - 1)
}

fn integer_option(option: u8) -> bool {
    matches!(
        option,
        b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I'
    )
}

pub(crate) fn table(lua: &Lua) -> mlua::Result<Table> {
    let module = lua.create_table()?;
    module.raw_set("pack", lua.create_function(pack)?)?;
    module.raw_set("unpack", lua.create_function(unpack)?)?;
    module.raw_set("size", lua.create_function(size)?)?;
    Ok(module)
}

fn ordered(mut bytes: Vec<u8>, endian: Endian) -> Vec<u8> {
    if endian == Endian::Big {
        bytes.reverse();
    }
    bytes
}

fn pack(lua: &Lua, args: Variadic<LuaValue>) -> mlua::Result<mlua::LuaString> {
    let format = check_bytes(lua, &args, 1, "pack")?;
    let mut format = Format {
        bytes: &format,
        at: 0,
    };
    let mut header = Header::default();
    let mut out = Vec::new();
    let mut arg = 2;
    while let Some(option) = format.next() {
        let mut size = format.size(lua, option)?;
        out.resize(out.len() + padding(out.len(), &header, option, size), 0);
        match option {
            option if integer_option(option) => {
                let n = check_number(lua, &args, arg, "pack")?;
                arg += 1;
                // C's conversions: through a signed long for negatives.
                let value = if n < 0.0 { n as i64 as u64 } else { n as u64 };
                let little: Vec<u8> = (0..size)
                    .map(|i| if i < 8 { (value >> (8 * i)) as u8 } else { 0 })
                    .collect();
                out.extend(ordered(little, header.endian));
            }
            b'x' => out.push(0),
            b'f' => {
                let n = check_number(lua, &args, arg, "pack")? as f32;
                arg += 1;
                out.extend(ordered(n.to_le_bytes().to_vec(), header.endian));
            }
            b'd' => {
                let n = check_number(lua, &args, arg, "pack")?;
                arg += 1;
                out.extend(ordered(n.to_le_bytes().to_vec(), header.endian));
            }
            b'c' | b's' => {
                let text = check_bytes(lua, &args, arg, "pack")?;
                arg += 1;
                if size == 0 {
                    size = text.len();
                }
                if text.len() < size {
                    return Err(bad_argument(lua, arg, "pack", "string too short"));
                }
                out.extend_from_slice(&text[..size]);
                if option == b's' {
                    out.push(0);
                }
            }
            other => format.control(lua, other, &mut header, "pack")?,
        }
    }
    lua.create_string(out)
}

fn unpack(lua: &Lua, args: Variadic<LuaValue>) -> mlua::Result<MultiValue> {
    let format = check_bytes(lua, &args, 1, "unpack")?;
    let data = check_bytes(lua, &args, 2, "unpack")?;
    let start = match args.get(2) {
        None | Some(LuaValue::Nil) => 1.0,
        Some(_) => check_number(lua, &args, 3, "unpack")?,
    };
    if start < 1.0 || start as usize - 1 > data.len() {
        return Err(bad_argument(
            lua,
            3,
            "unpack",
            "offset must be 1 or greater",
        ));
    }
    let mut position = start as usize - 1;
    let mut format = Format {
        bytes: &format,
        at: 0,
    };
    let mut header = Header::default();
    let mut values: Vec<LuaValue> = Vec::new();
    while let Some(option) = format.next() {
        let mut size = format.size(lua, option)?;
        position += padding(position, &header, option, size);
        if position + size > data.len() {
            return Err(bad_argument(lua, 2, "unpack", "data string too short"));
        }
        let field = |size: usize| -> Vec<u8> {
            let mut bytes = data[position..position + size].to_vec();
            if header.endian == Endian::Big {
                bytes.reverse();
            }
            bytes
        };
        match option {
            option if integer_option(option) => {
                let little = field(size);
                let raw = little
                    .iter()
                    .rev()
                    .fold(0u64, |acc, b| acc.wrapping_shl(8) | u64::from(*b));
                let value = if option.is_ascii_lowercase() && size > 0 {
                    let bits = (size * 8).min(64) as u32;
                    let shift = 64 - bits;
                    (((raw << shift) as i64) >> shift) as f64
                } else {
                    raw as f64
                };
                values.push(LuaValue::Number(value));
            }
            b'x' => {}
            b'f' => {
                let bytes: [u8; 4] = field(4).try_into().expect("four bytes");
                values.push(LuaValue::Number(f64::from(f32::from_le_bytes(bytes))));
            }
            b'd' => {
                let bytes: [u8; 8] = field(8).try_into().expect("eight bytes");
                values.push(LuaValue::Number(f64::from_le_bytes(bytes)));
            }
            b'c' => {
                if size == 0 {
                    let previous = values.pop().and_then(|v| match v {
                        LuaValue::Number(n) => Some(n),
                        LuaValue::Integer(n) => Some(n as f64),
                        _ => None,
                    });
                    let Some(previous) = previous else {
                        return Err(lib_error(lua, "format 'c0' needs a previous size"));
                    };
                    size = previous as usize;
                    if size > data.len() || position > data.len() - size {
                        return Err(bad_argument(lua, 2, "unpack", "data string too short"));
                    }
                }
                values.push(LuaValue::String(
                    lua.create_string(&data[position..position + size])?,
                ));
            }
            b's' => {
                let Some(length) = memchr::memchr(0, &data[position..]) else {
                    return Err(lib_error(lua, "unfinished string in data"));
                };
                size = length + 1;
                values.push(LuaValue::String(
                    lua.create_string(&data[position..position + length])?,
                ));
            }
            other => format.control(lua, other, &mut header, "unpack")?,
        }
        position += size;
    }
    values.push(LuaValue::Integer(position as i64 + 1));
    Ok(MultiValue::from_vec(values))
}

fn size(lua: &Lua, args: Variadic<LuaValue>) -> mlua::Result<usize> {
    let format = check_bytes(lua, &args, 1, "size")?;
    let mut format = Format {
        bytes: &format,
        at: 0,
    };
    let mut header = Header::default();
    let mut position = 0;
    while let Some(option) = format.next() {
        let size = format.size(lua, option)?;
        position += padding(position, &header, option, size);
        if option == b's' {
            return Err(bad_argument(lua, 1, "size", "option 's' has no fixed size"));
        }
        if option == b'c' && size == 0 {
            return Err(bad_argument(
                lua,
                1,
                "size",
                "option 'c0' has no fixed size",
            ));
        }
        if !option.is_ascii_alphanumeric() {
            format.control(lua, option, &mut header, "size")?;
        }
        position += size;
    }
    Ok(position)
}
